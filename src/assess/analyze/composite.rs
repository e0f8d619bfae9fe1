//! Facts gathered across the file that together make one behaviour: a
//! socket wired to a shell, credentials with network use, ctypes with
//! executable memory, a privileged container asked of the container runtime.

use super::{pos, Analyzer};

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
            self.add_at(
                "MB904",
                c,
                "credential path in a script that uses the network",
            );
        }
        let f = &self.facts;
        if let (Some(c), true) = (f.ctypes, f.exec_memory) {
            self.add_at("MB909", c, "ctypes with executable memory");
        }
        self.combined_signs();
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
