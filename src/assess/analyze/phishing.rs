//! Credential phishing (MB946): a password prompt dressed as another
//! program's (sudo, ssh, a keyring, PyPI, a single sign-on page) whose
//! answer is sent away or written to a file; a login form served by a
//! script that writes or forwards what is posted to it; a program named
//! like sudo planted on the user's own PATH. A tool asking for the
//! password of its own service, or a login page checking a test user, does
//! none of these.

use super::calls::kwarg;
use super::effects::Effects;
use super::exfil::SendKind;
use super::flow::{parses_arguments, source_of, Source};
use super::literal::shorten;
use super::{line, Analyzer, Node, F};

/// Words of prompts that imitate another program or service.
const IMPERSONATED: &[&str] = &[
    "[sudo]",
    "sudo password",
    "'s password",
    "passphrase for",
    "keyring",
    "pypi",
    "single sign-on",
    "okta",
    "session has expired",
    "session expired",
    "re-enter your",
    "verify your",
    "authentication is required",
    "apple id",
    "administrator password",
    "password for root",
];

/// Programs that ask for the user's password, which a copy earlier on the
/// PATH can record.
const PASSWORD_PROGRAMS: &[&str] = &["sudo", "su", "doas", "pkexec", "passwd", "ssh"];

/// Calls that write what they are given into a file.
const FILE_SINKS: &[&str] = &["write", "writelines", "write_text", "write_bytes"];

fn impersonates(prompt: &str) -> bool {
    let lower = prompt.to_ascii_lowercase();
    IMPERSONATED.iter().any(|w| lower.contains(w))
        || lower
            .split(|c: char| !c.is_ascii_alphanumeric())
            .any(|w| matches!(w, "sso" | "vpn" | "icloud"))
}

/// A path on a user's own PATH where a program named like sudo shadows
/// the real one.
fn shadows_program(p: &str) -> Option<&str> {
    let (dir, name) = p.rsplit_once('/')?;
    let own = p.starts_with('~')
        || p.starts_with("/home/")
        || dir.contains("/.local/bin")
        || p.starts_with("<tmp")
        || p.starts_with("/tmp/");
    (own && dir.ends_with("bin") && PASSWORD_PROGRAMS.contains(&name)).then_some(name)
}

/// The arguments and the expressions inside them, a few levels down: each
/// part's sources are asked separately, because a flow keeps only the first
/// place each kind of source entered (`f"{host} {password}"` carries the
/// host's `sys.argv` first).
fn parts<'t>(args: &[Node<'t>]) -> Vec<Node<'t>> {
    let mut out = Vec::new();
    let mut level: Vec<Node<'t>> = args.to_vec();
    for _ in 0..4 {
        let mut next = Vec::new();
        for n in level {
            if out.len() >= 64 {
                return out;
            }
            out.push(n);
            next.extend(n.children());
        }
        level = next;
    }
    out
}

impl<'t> Analyzer<'t> {
    /// MB946 over prompts, login forms and planted programs.
    pub(super) fn check_phishing(&mut self, fx: &Effects<'t>) {
        if self.planted_program(fx) {
            return;
        }
        let form = fx.text_holding(super::needles::PASSWORD_FORM);
        // A finding needs a login form or a prompt (the only user input
        // `prompt_impersonates` accepts is a call): without either, the
        // taint of every send's arguments is not worth following.
        if form.is_none() && !self.asks_user() {
            return;
        }
        let net = self.facts.network || self.facts.net_import;
        // By place, not over a copy of the list (see `check_calls`).
        for i in 0..self.calls.len() {
            let site = self.calls[i];
            let method = site.method;
            let sink = match self.site_send(&site) {
                Some(SendKind::Client) => "sent",
                Some(SendKind::Method) if net => "sent",
                // The page sent back to whoever posted (`self.wfile`) is
                // the server's answer, not a record of what was posted.
                _ if self.answers_request(site.node) => continue,
                _ if method.is_some_and(|m| FILE_SINKS.contains(&m)) => "written",
                _ if self.site_q(&site) == Some("json.dump") => "written",
                _ => continue,
            };
            let args: Vec<Node<'t>> = self.arg_values(site.node).collect();
            let mut t = super::flow::Taint::default();
            let mut prompted = None;
            for part in parts(&args) {
                let pt = self.taint(part, site.scope);
                if prompted.is_none() {
                    prompted = pt
                        .get(Source::User)
                        .filter(|s| self.prompt_impersonates(*s));
                }
                t.merge(&pt);
            }
            if let Some(src) = prompted {
                let detail = format!(
                    "the answer to `{}` (line {}), a prompt imitating another program, is {sink} by `{}`",
                    shorten(self.text(src)),
                    line(src),
                    shorten(self.text(site.node))
                );
                return self.add("MB946", site.node, detail);
            }
            if let (Some(src), Some((f, _))) = (t.get(Source::Request), form) {
                let detail = format!(
                    "what is posted to the login form (line {}) is {sink} by `{}` (request read at line {})",
                    line(f),
                    shorten(self.text(site.node)),
                    line(src)
                );
                return self.add("MB946", site.node, detail);
            }
        }
    }

    /// Whether some call reads user input (a prompt, the command line): the
    /// calls the taint marks as [`Source::User`], by the same tests.
    fn asks_user(&self) -> bool {
        self.calls.iter().any(|c| {
            c.method.is_some_and(parses_arguments)
                || self.site_q(c).and_then(source_of) == Some(Source::User)
        })
    }

    /// Whether a call writes into an HTTP handler's response stream
    /// (`self.wfile.write(page)`), which goes back to the client that sent
    /// the request.
    fn answers_request(&self, call: Node<'t>) -> bool {
        call.child(F::Function)
            .and_then(|f| f.child(F::Object))
            .and_then(|o| o.child(F::Attribute))
            .is_some_and(|a| self.text(a) == "wfile")
    }

    /// A program named like sudo written into a `bin` directory of the
    /// user's own; true when found.
    fn planted_program(&mut self, fx: &Effects<'t>) -> bool {
        for w in &fx.writes {
            if let Some(p) = w.paths.iter().find(|p| shadows_program(p).is_some()) {
                let name = shadows_program(p).unwrap_or("sudo");
                let detail = format!(
                    "writes {p}: a {name} on the user's own PATH, which sees the password typed to it"
                );
                self.add("MB946", w.call, detail);
                return true;
            }
        }
        false
    }

    /// Whether a prompt call (`getpass`, `input`) asks in another
    /// program's name: its prompt folded, or, when it does not fold,
    /// the script's literals that read as such a prompt.
    fn prompt_impersonates(&self, call: Node<'t>) -> bool {
        let Some(scope) = self.call_scope(call) else {
            return false;
        };
        // An argument parser prints no prompt: its argument is the
        // command line, and the script's literals say nothing of it.
        let method = call.child(F::Function).and_then(|f| f.child(F::Attribute));
        if method.is_some_and(|m| parses_arguments(self.text(m))) {
            return false;
        }
        let (pos, kw) = self.args(call);
        let Some(prompt) = pos.first().copied().or_else(|| kwarg(kw, "prompt")) else {
            return false;
        };
        self.reset_budget();
        if let Some(text) = self.fold(prompt, scope, 0) {
            return impersonates(&text);
        }
        impersonates(self.text(prompt))
            || self.strings.iter().any(|s| {
                let t = self.text(*s);
                impersonates(t) && t.contains(':')
            })
    }
}
