//! Facts gathered across the file that together make one behaviour: a
//! socket wired to a shell, credentials with network use, ctypes with
//! executable memory.

use super::Analyzer;

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
    }
}
