//! Windows behaviours seen through its Python APIs: values written under
//! registry keys that Windows runs at logon (MB906, persistence), and
//! services created on another machine over its service manager, the
//! PsExec way (MB954, lateral movement). Their command-line spellings
//! (`reg add`, `schtasks`, `sc \\host create`, `wevtutil cl`) are judged
//! with the other commands in [`super::command`].

use super::calls::Call;
use super::command::autostart_key;
use super::literal::shorten;
use super::{line, taxonomy, Analyzer, Node};

impl<'t> Analyzer<'t> {
    /// Notes the registry keys opened or created (`winreg.OpenKey(root,
    /// path)`) and judges values set under autostart keys, and services
    /// created remotely.
    /// `CreateFileW(r"\\.\PhysicalDrive0", GENERIC_READ | GENERIC_WRITE,
    /// ...)`: a disk opened for writing through the Win32 API is judged
    /// like `open("/dev/sda", "r+b")`, by what the taxonomy says the path
    /// is. Opened only to read, it is left to the other rules.
    pub(super) fn check_raw_open(&mut self, call: &Call<'t>) {
        const GENERIC_WRITE: i64 = 0x4000_0000;
        const GENERIC_ALL: i64 = 0x1000_0000;
        let name = call.method.or_else(|| call.q_last());
        let Some(name @ ("CreateFileW" | "CreateFileA")) = name else {
            return;
        };
        let (Some(path), Some(access)) = (call.pos.first(), call.pos.get(1)) else {
            return;
        };
        self.reset_budget();
        let writes = self
            .fold_int(*access, call.scope, 0)
            .is_some_and(|a| a & (GENERIC_WRITE | GENERIC_ALL) != 0);
        if !writes {
            return;
        }
        if let Some(p) = self
            .paths(*path, call.scope)
            .into_iter()
            .find(|p| taxonomy::is_disk(p))
        {
            let detail = format!("{name} opens {p} for writing: overwrites a disk");
            self.add("MB907", call.node, detail);
        }
    }

    pub(super) fn check_windows_call(&mut self, q: &str, call: &Call<'t>) {
        // `q.rsplit_once('.')`, with memrchr (asked of every call).
        let Some(dot) = memchr::memrchr(b'.', q.as_bytes()) else {
            return;
        };
        let (module, f) = (&q[..dot], &q[dot + 1..]);
        let winreg = matches!(module, "winreg" | "_winreg");
        if winreg && matches!(f, "OpenKey" | "OpenKeyEx" | "CreateKey" | "CreateKeyEx") {
            let key = call
                .arg(1, "sub_key")
                .and_then(|k| self.key_prefix(k, call.scope));
            let lower = key
                .as_deref()
                .map(str::to_ascii_lowercase)
                .unwrap_or_default();
            // Opened to be written: created, or opened with write access
            // (listing the certificates is not trusting one).
            let writes = f.starts_with("Create")
                || ["KEY_SET_VALUE", "KEY_WRITE", "KEY_ALL_ACCESS"]
                    .iter()
                    .any(|a| self.text(call.node).contains(a));
            if writes
                && ["systemcertificates\\root", "systemcertificates\\authroot"]
                    .iter()
                    .any(|r| lower.contains(r))
            {
                // The certificate stores Windows trusts as roots, written
                // key by key: a root added without the confirmation prompt.
                let k = key.clone().unwrap_or_default();
                self.signs.root_store_key.get_or_insert((call.node, k));
            }
            if writes && elevating_handler(&lower) {
                let detail = format!(
                    "`{}` writes the open command of {}: Windows starts it elevated, without the UAC prompt",
                    shorten(self.text(call.node)),
                    shorten(key.as_deref().unwrap_or_default())
                );
                self.add("MB957", call.node, detail);
            }
            if let Some(k) = key.filter(|k| autostart_key(k)) {
                self.signs.autostart_key.get_or_insert((call.node, k));
            }
        } else if winreg && matches!(f, "SetValueEx" | "SetValue") {
            if let Some((opened, key)) = self.signs.autostart_key.clone() {
                self.autostart_value(call.node, opened, &key);
            }
        } else if matches!(f, "hRCreateServiceW" | "RCreateServiceW") {
            self.remote_service(call.node);
        }
    }

    /// A registry key path as far as it folds: the whole path, or the
    /// constant start of one joined with `+` to a computed part (a store's
    /// key and a certificate's thumbprint).
    fn key_prefix(&self, k: Node<'t>, scope: usize) -> Option<String> {
        let (mut n, mut scope, mut whole) = (k, scope, true);
        for _ in 0..6 {
            self.reset_budget();
            if let Some(v) = self.fold(n, scope, 0) {
                return Some(if whole { v } else { format!("{v}*") });
            }
            match n.kind() {
                super::K::BinaryOperator => {
                    n = n.child(super::F::Left)?;
                    whole = false;
                }
                super::K::Identifier => match self.lookup(self.text(n), scope, n.start_byte()) {
                    Some([super::Bind::Expr(v, s)]) => (n, scope) = (v, s),
                    // `key=KEY`: the default, where the `def` stands.
                    Some([super::Bind::Param { param, func, .. }]) => {
                        let outer = self.scopes.get(func).and_then(|sc| sc.parent)?;
                        (n, scope) = (param.child(super::F::Value)?, outer);
                    }
                    _ => return None,
                },
                _ => return None,
            }
        }
        None
    }

    fn autostart_value(&mut self, at: Node<'t>, opened: Node<'t>, key: &str) {
        let detail = format!(
            "`{}` sets a value under `{}` (opened at line {}): Windows runs it at every logon",
            shorten(self.text(at)),
            shorten(key),
            line(opened)
        );
        self.add("MB906", at, detail);
    }

    /// A service created through a remote service manager (impacket's
    /// `scmr`): the program it names runs on the other machine as SYSTEM.
    fn remote_service(&mut self, at: Node<'t>) {
        let detail = format!(
            "`{}` creates a service through another machine's service manager: a program of the script's choosing runs there as SYSTEM",
            shorten(self.text(at))
        );
        self.add("MB954", at, detail);
    }
}

/// A per-user class key (lower-cased) whose open command an auto-elevating
/// Windows program (fodhelper and computerdefaults: `ms-settings`;
/// eventvwr: `mscfile`; sdclt: `folder`; `exefile`'s runas) looks up
/// before the machine's: whatever is written there runs elevated.
fn elevating_handler(lower: &str) -> bool {
    const CLASSES: &[&str] = &[
        "classes\\ms-settings\\shell\\open\\command",
        "classes\\mscfile\\shell\\open\\command",
        "classes\\folder\\shell\\open\\command",
        "classes\\exefile\\shell\\runas\\command",
        "classes\\launcher.systemsettings\\shell\\open\\command",
    ];
    CLASSES.iter().any(|c| lower.contains(c))
}
