//! Processes: shells, subprocesses, exec/spawn, forks and fork bombs.

use super::calls::Call;
use super::names::{EXEC_FUNCS, SHELL_FUNCS, SUBPROCESS};
use super::{pos, Analyzer, Node, F, K};

/// Values of a computed command checked, at most.
const MAX_COMMANDS: usize = 4;

/// Calls whose last name shows a loop waiting for something.
const BLOCKING_CALLS: &[&str] = &[
    "accept", "recv", "recvfrom", "wait", "waitpid", "join", "sleep", "input", "readline", "get",
    "select", "poll",
];

impl<'t> Analyzer<'t> {
    pub(super) fn check_process(&mut self, q: &str, call: &Call<'t>) {
        let (node, scope, via) = (call.node, call.scope, call.via(q));
        let command = || {
            call.pos
                .first()
                .map(|a| self.command_values(*a, scope))
                .unwrap_or_default()
        };
        if SHELL_FUNCS.contains(&q) {
            let cmds = command();
            self.add("MB605", node, via);
            for c in cmds {
                self.check_command(&c, node);
            }
        } else if SUBPROCESS.contains(&q) {
            let cmds = command();
            if call.shell_kw.is_some() || q == "asyncio.create_subprocess_shell" {
                self.add("MB602", node, format!("{via} with shell=True"));
            } else {
                self.add("MB603", node, via);
            }
            for c in cmds {
                self.check_command(&c, node);
            }
        } else if EXEC_FUNCS.contains(&q) || q.starts_with("os.exec") || q.starts_with("os.spawn") {
            self.add("MB606", node, via);
            let parts: Vec<String> = call
                .pos
                .iter()
                .filter_map(|a| self.fold_command(*a, scope))
                .collect();
            if q == "pty.spawn" {
                self.facts.shell_spawn.get_or_insert(pos(node));
            }
            if !parts.is_empty() {
                self.check_command(&parts.join(" "), node);
            }
        }
        self.check_fork(q, call);
    }

    /// The command a shell string or argument list gives: exact when it
    /// folds, else the values it may have (unknown parts `*`).
    pub(super) fn command_values(&self, arg: Node<'t>, scope: usize) -> Vec<String> {
        if let Some(c) = self.fold_command(arg, scope) {
            return vec![c];
        }
        if arg.kind().is_sequence() {
            let words: Vec<String> = arg
                .children()
                .map(|w| {
                    self.paths(w, scope)
                        .into_iter()
                        .next()
                        .unwrap_or_else(|| "*".into())
                })
                .collect();
            return vec![words.join(" ")];
        }
        self.paths(arg, scope)
            .into_iter()
            .filter(|c| c.as_str() != "*")
            .take(MAX_COMMANDS)
            .collect()
    }

    /// Forks, and scripts re-launching themselves, in unbounded loops.
    fn check_fork(&mut self, q: &str, call: &Call<'t>) {
        let node = call.node;
        let forkish = matches!(
            q,
            "os.fork" | "os.forkpty" | "pty.fork" | "multiprocessing.Process"
        );
        if forkish {
            match call.loop_node {
                Some((l, true)) if !self.loop_blocks(l) => {
                    self.add("MB902", node, format!("{q} in an unbounded loop"))
                }
                Some(_) if q != "multiprocessing.Process" => {
                    self.add("MB417", node, format!("{q} in a loop"))
                }
                None if q != "multiprocessing.Process" => self.add("MB416", node, q.to_string()),
                _ => {}
            }
        }
        let spawns_self =
            SUBPROCESS.contains(&q) || SHELL_FUNCS.contains(&q) || q.starts_with("os.spawn");
        if let (true, Some((l, true))) = (spawns_self, call.loop_node) {
            let arg_text = call.pos.first().map(|a| self.text(*a)).unwrap_or("");
            if (arg_text.contains("__file__")
                || arg_text.contains("sys.argv")
                || arg_text.contains("sys.executable"))
                && !self.loop_blocks(l)
            {
                self.add(
                    "MB902",
                    node,
                    "the script re-launches itself in an unbounded loop",
                );
            }
        }
    }

    /// A `while True` that waits for something (accept, recv, sleep, join...)
    /// is a server or worker loop, not a bomb.
    pub(super) fn loop_blocks(&self, l: Node<'t>) -> bool {
        let Some(body) = l.child(F::Body) else {
            return false;
        };
        let mut cursor = body.walk();
        let mut steps = 0u32;
        loop {
            let n = cursor.node();
            steps += 1;
            if steps > 20_000 {
                return true;
            }
            if n.kind() == K::Call {
                let f = n.child(F::Function).map(|f| self.text(f)).unwrap_or("");
                let last = f.rsplit('.').next().unwrap_or(f);
                if BLOCKING_CALLS.contains(&last) {
                    return true;
                }
            }
            if cursor.goto_first_child() {
                continue;
            }
            loop {
                if cursor.goto_next_sibling() {
                    break;
                }
                if !cursor.goto_parent() || cursor.node() == body {
                    return false;
                }
            }
        }
    }
}
