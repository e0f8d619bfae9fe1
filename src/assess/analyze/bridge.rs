//! A shell whose input and output are piped to a network connection
//! (MB901): a reverse shell spelled with pipes instead of `dup2`, as
//! asyncio streams, threads copying bytes both ways or a relay function.
//! The shell is started interactively with its standard input piped, and
//! some call hands the connection's data and the shell's pipe over
//! together, or writes what the connection sent into the shell's input.

use super::calls::Call;
use super::command::{program_name, SHELLS};
use super::flow::Source;
use super::literal::shorten;
use super::{line, pos, Analyzer, Node, F, K};

impl<'t> Analyzer<'t> {
    /// Notes a shell started with its standard input piped (`stdin=PIPE`):
    /// a shell named, or the user's own (`$SHELL`, `%COMSPEC%`).
    pub(super) fn note_piped_shell(&mut self, call: &Call<'t>) {
        if !call
            .kwarg("stdin")
            .is_some_and(|v| self.text(v).contains("PIPE"))
        {
            return;
        }
        let names_shell = |t: &str| {
            t.contains("SHELL")
                || t.contains("COMSPEC")
                || t.split_whitespace()
                    .next()
                    .is_some_and(|w| SHELLS.contains(&program_name(w).as_str()))
        };
        // The program and the strings it is made of (`$SHELL` or a default).
        let shell = call.pos.iter().any(|a| {
            names_shell(self.text(*a))
                || self
                    .fold_command(*a, call.scope)
                    .is_some_and(|c| names_shell(&c))
                || self.texts_in(*a, call.scope).iter().any(|t| names_shell(t))
        });
        if shell {
            self.facts.piped_shell.get_or_insert(pos(call.node));
        }
    }

    /// MB901 when a piped shell's pipe and network data meet in one call.
    pub(super) fn check_shell_bridge(&mut self) {
        let Some(shell) = self.facts.piped_shell else {
            return;
        };
        let found = self.calls.iter().find_map(|c| {
            let args: Vec<Node<'t>> = self.arg_values(c.node).collect();
            let into_pipe = c
                .method
                .is_some_and(|m| m == "write")
                .then(|| c.node.child(F::Function).and_then(|f| f.child(F::Object)))
                .flatten()
                .is_some_and(|o| self.is_pipe(o));
            if !into_pipe && !args.iter().any(|a| self.is_pipe(*a)) {
                return None;
            }
            let net = args
                .iter()
                .find_map(|a| self.taint(*a, c.scope).get(Source::Network))?;
            Some((c.node, net))
        });
        let Some((at, net)) = found else {
            return;
        };
        let detail = format!(
            "`{}` joins the shell's pipe (shell started at line {}) with network data from `{}` (line {}): a remote party types into the shell",
            shorten(self.text(at)),
            shell.0 + 1,
            shorten(self.text(net)),
            line(net)
        );
        self.add("MB901", at, detail);
    }

    /// A process's standard stream, or one of its read or write methods
    /// (`p.stdin`, `p.stdout.read`).
    fn is_pipe(&self, n: Node<'t>) -> bool {
        if n.kind() != K::Attribute {
            return false;
        }
        let t = self.text(n);
        let last = t.rsplit('.').next().unwrap_or("");
        let stream = |s: &str| matches!(s.rsplit('.').next(), Some("stdin" | "stdout"));
        stream(t)
            || (matches!(last, "write" | "read" | "readline" | "read1")
                && t.rsplit_once('.').is_some_and(|(o, _)| stream(o)))
    }
}
