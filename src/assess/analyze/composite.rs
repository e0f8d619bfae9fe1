//! Facts gathered across the file that together make one behaviour: a
//! socket wired to a shell, credentials with network use, ctypes with
//! executable memory, a privileged container asked of the container runtime;
//! and distinct attack steps that each alone are only HIGH (MB922).

use super::{pos, Analyzer, RawFinding};

/// Keyword arguments through which client libraries take the key or
/// certificate file they authenticate with (paramiko, ssl, requests,
/// fabric, asyncssh).
const KEY_FILE_KEYWORDS: &[&str] = &[
    "key_filename",
    "keyfile",
    "key_file",
    "certfile",
    "cert_file",
    "client_keys",
    "identity_file",
];

impl<'t> Analyzer<'t> {
    pub(super) fn composites(&mut self) {
        let f = &self.facts;
        if let (Some(sock), Some(shell)) = (f.socket, f.shell_spawn) {
            if f.dup2.is_some() || f.fileno_redirect.is_some() {
                let at = f.dup2.or(f.fileno_redirect).unwrap_or(shell);
                self.add_at(
                    "MB901",
                    at,
                    format!(
                        "socket (line {}) wired to a shell (line {})",
                        sock.0 + 1,
                        shell.0 + 1
                    ),
                );
            }
        }
        let f = &self.facts;
        if let (Some(c), true) = (f.creds, f.network) {
            if !self.credentials_only_authenticate() {
                self.add_at(
                    "MB904",
                    c,
                    "credential path in a script that uses the network",
                );
            }
        }
        let f = &self.facts;
        if let (Some(c), true) = (f.ctypes, f.exec_memory) {
            self.add_at("MB909", c, "ctypes with executable memory");
        }
        self.combined_signs();
        self.check_shell_bridge();
        self.check_capture_shipped(self.signs.network_send);
        self.check_abuse();
        self.check_spam();
        self.check_defence_kills();
        self.chained_steps();
    }

    /// Two HIGH findings from different steps of an attack escalate to
    /// MB922. Each step alone has honest uses (an installer runs sudo, a
    /// backup reads ~/.ssh), which is why each is HIGH and not BLOCKED; a
    /// script that both gains privilege and erases itself, or collects
    /// secrets and runs hidden code, has no such reading. Two findings of
    /// the same step (sudo and a system write) stay HIGH: that is what an
    /// administration script looks like.
    fn chained_steps(&mut self) {
        if self.findings.iter().any(|f| f.rule.starts_with("MB9")) {
            return;
        }
        let mut seen: Vec<(Step, &RawFinding)> = Vec::new();
        for f in &self.findings {
            if let Some(step) = step_of(f.rule) {
                if !seen.iter().any(|(s, _)| *s == step) {
                    seen.push((step, f));
                }
            }
        }
        let [(a, fa), (b, fb), ..] = seen[..] else {
            return;
        };
        let detail = format!(
            "{} ({}, line {}) and {} ({}, line {})",
            a.describe(),
            fa.rule,
            fa.row + 1,
            b.describe(),
            fb.rule,
            fb.row + 1
        );
        let at = (fb.row, fb.col);
        self.add_at("MB922", at, detail);
    }

    /// Every credential path the script names is handed to a client library
    /// as the key or certificate it logs in with (`key_filename=`,
    /// `keyfile=`...): the file is used where it belongs, and the script
    /// never reads it. The path alone still gives MB205 (HIGH); a read whose
    /// contents reach a send is MB916 whatever this says.
    fn credentials_only_authenticate(&self) -> bool {
        let mut used = Vec::new();
        for c in &self.calls {
            let (_, kw) = self.args(c.node);
            for (k, v) in kw {
                if KEY_FILE_KEYWORDS.contains(k) {
                    self.reset_budget();
                    used.extend(self.path_values(*v, c.scope));
                }
            }
        }
        // The key offered as a command-line option's default: the value
        // reaches the login through the parsed options, which the folder
        // does not follow; the key-file keyword must still be passed.
        let key_passed = self.calls.iter().any(|c| {
            let (_, kw) = self.args(c.node);
            kw.iter().any(|(k, _)| KEY_FILE_KEYWORDS.contains(k))
        });
        let option_default = |lit: &str| {
            key_passed
                && self.calls.iter().any(|c| {
                    c.method == Some("add_argument")
                        && self.args(c.node).1.iter().any(|(k, v)| {
                            *k == "default" && self.text(*v).contains(lit.trim_start_matches('~'))
                        })
                })
        };
        let named = &self.signs.credential_strings;
        !named.is_empty()
            && named.iter().all(|lit| {
                option_default(lit)
                    || used.iter().any(|p| {
                        p.to_ascii_lowercase()
                            .ends_with(lit.trim_start_matches('~'))
                    })
            })
    }

    fn combined_signs(&mut self) {
        let already = |rule: &str| self.findings.iter().any(|f| f.rule == rule);
        if let (Some((read, path)), true) = (&self.signs.secret_read, self.facts.network) {
            if !already("MB904") && !already("MB916") {
                let detail = format!("reads {path} in a script that uses the network");
                self.add_at("MB904", pos(*read), detail);
            }
        }
        if let (Some(docker), Some(p)) = (self.signs.docker, self.signs.privileged) {
            let detail = format!(
                "the container runtime (line {}) is asked for a privileged container or the host's /",
                docker.start_position().row + 1
            );
            self.add("MB921", p, detail);
        }
    }
}

/// A step of an attack that HIGH findings stand for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Becoming root or another user: setuid calls and bits, sudo, ctypes.
    Privilege,
    /// Credentials, keystrokes, cloud instance credentials.
    Collection,
    /// Code that static review cannot see.
    HiddenCode,
    /// The script deleting itself.
    Concealment,
}

impl Step {
    fn describe(self) -> &'static str {
        match self {
            Step::Privilege => "privilege gain",
            Step::Collection => "secret collection",
            Step::HiddenCode => "hidden code",
            Step::Concealment => "self-erasure",
        }
    }
}

fn step_of(rule: &str) -> Option<Step> {
    match rule {
        "MB202" | "MB203" | "MB204" | "MB210" => Some(Step::Privilege),
        "MB205" | "MB206" | "MB212" | "MB222" => Some(Step::Collection),
        "MB102" | "MB307" | "MB110" | "MB415" => Some(Step::HiddenCode),
        "MB211" => Some(Step::Concealment),
        _ => None,
    }
}
