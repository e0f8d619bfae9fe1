//! Windows behaviours seen through its Python APIs: values written under
//! registry keys that Windows runs at logon (MB906, persistence), and
//! services created on another machine over its service manager, the
//! PsExec way (MB954, lateral movement). Their command-line spellings
//! (`reg add`, `schtasks`, `sc \\host create`, `wevtutil cl`) are judged
//! with the other commands in [`super::command`].

use super::calls::Call;
use super::command::autostart_key;
use super::literal::shorten;
use super::{line, Analyzer, Node};

impl<'t> Analyzer<'t> {
    /// Notes the registry keys opened or created (`winreg.OpenKey(root,
    /// path)`) and judges values set under autostart keys, and services
    /// created remotely.
    pub(super) fn check_windows_call(&mut self, q: &str, call: &Call<'t>) {
        let Some((module, f)) = q.rsplit_once('.') else {
            return;
        };
        let winreg = matches!(module, "winreg" | "_winreg");
        if winreg && matches!(f, "OpenKey" | "OpenKeyEx" | "CreateKey" | "CreateKeyEx") {
            let key = call.arg(1, "sub_key").and_then(|k| {
                self.reset_budget();
                self.fold(k, call.scope, 0)
            });
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
