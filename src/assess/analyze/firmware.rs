//! Firmware tampering (MB968): the flash chip rewritten, UEFI variables or
//! the boot order changed, Secure Boot's validation switched off, or an
//! administrator planted in the baseboard management controller, in
//! combinations no inventory or update tool makes. Firmware outlives the
//! disk and the operating system, and a BMC answers on the network while
//! the machine is off: changes there survive every reinstall.
//!
//! Judged on the command lines the script runs (a helper's lines are read
//! from what its callers pass, `ipmi("sel", "clear")`, and from the tuples
//! a loop hands it) and on its writes; only scripts that run one of the
//! firmware tools or write the UEFI variable store pay for more than a
//! look at each command's first word.

use std::borrow::Cow;

use super::command::program_word;
use super::effects::Effects;
use super::literal::shorten;
use super::{Analyzer, Bind, Node, Part, F, K};

/// The tools whose command lines are read here.
const FIRMWARE_TOOLS: &[&str] = &["flashrom", "efibootmgr", "mokutil", "ipmitool"];

/// Where Linux keeps the UEFI variables as files.
const EFIVARS: &str = "/sys/firmware/efi/efivars/";

/// Lines a helper's callers hand it, at most.
const MAX_CALLERS: usize = 16;

/// What the script does to firmware, each with where and how it was seen.
#[derive(Default)]
struct Tamper<'t> {
    /// The flash chip or UEFI variables written, the boot order changed.
    written: Option<(Node<'t>, String)>,
    /// Secure Boot's validation or the flash write's verification off.
    unprotected: Option<(Node<'t>, String)>,
    /// A BMC account given a password and administrator rights.
    bmc_admin: Option<(Node<'t>, String)>,
    /// The BMC's event log cleared.
    log_cleared: Option<(Node<'t>, String)>,
}

/// The command's program, without its directory or `.exe`.
fn head(line: &str) -> Cow<'_, str> {
    program_word(line.split_whitespace().next().unwrap_or(""))
}

/// Whether the words hold `a` directly followed by `b`.
fn pair(words: &[&str], a: &str, b: &str) -> bool {
    words.windows(2).any(|w| w[0] == a && w[1] == b)
}

impl<'t> Tamper<'t> {
    /// Notes what one command line (lower-cased) does.
    fn judge(&mut self, at: Node<'t>, line: &str) {
        let words: Vec<&str> = line.split_whitespace().collect();
        let has = |w: &str| words.contains(&w);
        let what = || format!("runs `{}`", shorten(line));
        match head(line).as_ref() {
            "flashrom" => {
                if has("-w") || has("--write") || has("-e") || has("--erase") {
                    self.written.get_or_insert((at, what()));
                }
                if words.iter().any(|w| w.starts_with("--noverify")) {
                    self.unprotected.get_or_insert((at, what()));
                }
            }
            "mokutil" if has("--disable-validation") => {
                self.unprotected.get_or_insert((at, what()));
            }
            "efibootmgr"
                if ["-c", "--create", "-o", "--bootorder", "-n", "--bootnext"]
                    .iter()
                    .any(|w| has(w)) =>
            {
                self.written.get_or_insert((at, what()));
            }
            "ipmitool" => {
                if pair(&words, "sel", "clear") {
                    self.log_cleared.get_or_insert((at, what()));
                }
                // `ipmitool user priv ID 4`: level 4 is the administrator.
                let admin = (pair(&words, "user", "priv") && words.get(4) == Some(&"4"))
                    || has("privilege=4");
                if admin || (pair(&words, "set", "password") && has("user")) {
                    self.bmc_admin.get_or_insert((at, what()));
                }
            }
            _ => {}
        }
    }

    /// Why the combination is tampering, if it is. Each step alone is
    /// what updaters and provisioning tools do (a flash written, a boot
    /// entry made, an operator account added, a full log cleared); with
    /// the checks switched off, or the log of the new account wiped, it is
    /// not.
    fn verdict(&self) -> Option<(Node<'t>, String)> {
        if let (Some((at, w)), Some((_, u))) = (&self.written, &self.unprotected) {
            let what = format!("{w}, and {u}: firmware changed with its checks off");
            return Some((*at, what));
        }
        let ((at, admin), (_, c)) = (self.bmc_admin.as_ref()?, self.log_cleared.as_ref()?);
        let what = format!("{admin}, and {c}: a BMC administrator added and the event log wiped");
        Some((*at, what))
    }
}

impl<'t> Analyzer<'t> {
    /// MB968 over the commands and writes gathered for the configuration
    /// families.
    pub(super) fn check_firmware(&mut self, fx: &Effects<'t>) {
        let tools = fx
            .commands
            .iter()
            .any(|c| FIRMWARE_TOOLS.contains(&head(&c.line).as_ref()));
        let efivars = fx
            .writes
            .iter()
            .find(|w| w.paths.iter().any(|p| p.starts_with(EFIVARS)));
        if !tools && efivars.is_none() {
            return;
        }
        let mut t = Tamper::default();
        if let Some(w) = efivars {
            t.written.get_or_insert((
                w.call,
                format!("writes the UEFI variable store ({EFIVARS})"),
            ));
        }
        for c in fx
            .commands
            .iter()
            .filter(|c| FIRMWARE_TOOLS.contains(&head(&c.line).as_ref()))
        {
            t.judge(c.call, &c.line);
            if c.line.contains('*') {
                for line in self.helper_lines(c.scope, &head(&c.line)) {
                    t.judge(c.call, &line);
                }
            }
        }
        if let Some((at, what)) = t.verdict() {
            self.add("MB968", at, what);
        }
    }

    /// The lines a helper that runs `tool` with its callers' words runs:
    /// `tool` and each caller's arguments, a splatted loop item (`for s in
    /// steps: ipmi(*s)`) read as each tuple of the list looped over.
    fn helper_lines(&self, scope: usize, tool: &str) -> Vec<String> {
        let Some(callers) = self.callers.get(&scope) else {
            return Vec::new();
        };
        let mut lines = Vec::new();
        for c in callers.iter().take(MAX_CALLERS) {
            // A splatted argument is not among the parameters' values.
            if let (true, Some(one)) = (c.args.is_empty(), self.splat_arg(c.node)) {
                if let Some(items) = self.splatted_items(one, c.scope) {
                    lines.extend(items.into_iter().map(|w| format!("{tool} {w}")));
                    continue;
                }
            }
            let words: Vec<String> = c.args.iter().map(|a| self.word(*a, c.scope)).collect();
            lines.push(format!("{tool} {}", words.join(" ")).to_ascii_lowercase());
        }
        lines
    }

    /// The `*item` argument of a call that has no other.
    fn splat_arg(&self, call: Node<'t>) -> Option<Node<'t>> {
        let args = call.child(F::Arguments)?;
        let mut it = args.children();
        let one = it.next().filter(|a| a.kind() == K::ListSplat)?;
        it.next().is_none().then_some(one)
    }

    /// For `*item`, `item` a loop's name over a list of tuples, each tuple
    /// as words.
    fn splatted_items(&self, arg: Node<'t>, scope: usize) -> Option<Vec<String>> {
        if arg.kind() != K::ListSplat {
            return None;
        }
        let name = arg.children().next()?;
        let Some(
            [Bind::Part {
                of,
                scope: s,
                how: Part::Each(None),
            }],
        ) = self.lookup(self.text(name), scope, name.start_byte())
        else {
            return None;
        };
        let list = self.literal_sequence(of, s)?;
        let rows = list.children().filter(|r| r.kind().is_sequence()).map(|r| {
            let words: Vec<String> = r.children().map(|w| self.word(w, s)).collect();
            words.join(" ").to_ascii_lowercase()
        });
        Some(rows.collect())
    }

    /// A word of a command: folded, else `*`.
    fn word(&self, n: Node<'t>, scope: usize) -> String {
        self.reset_budget();
        self.fold(n, scope, 0).unwrap_or_else(|| "*".to_string())
    }
}
