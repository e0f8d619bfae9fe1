//! Covering tracks and switching defences off, judged by what is touched:
//! logs, login records and histories emptied, deleted or pointed at
//! /dev/null (MB923); kernel and security-module settings written, security
//! agents killed (MB924). The command-line side is in [`super::command`].

use rustc_hash::FxHashMap;

use super::calls::Call;
use super::{taxonomy, Analyzer, Bind, Node, Part, F, K};

/// Operations that, aimed at a trace file, erase it: deletion, truncation,
/// replacement by a link or a copy (of /dev/null, typically).
const ERASING_OPS: &[&str] = &[
    "os.remove",
    "os.unlink",
    "shutil.rmtree",
    "os.truncate",
    "os.symlink",
    "os.link",
    "os.rename",
    "os.replace",
    "shutil.copy",
    "shutil.copyfile",
    "shutil.move",
    "Path.unlink",
    "Path.write_text",
    "Path.write_bytes",
    "Path.symlink_to",
    "Path.rename",
    "Path.replace",
];

impl<'t> Analyzer<'t> {
    /// Judges one written path for MB923/MB924; true when a finding was made.
    pub(super) fn judge_tamper(&mut self, p: &str, op: &str, node: Node<'t>) -> bool {
        if taxonomy::defence_setting(p) && !op.contains("remove") {
            self.add(
                "MB924",
                node,
                format!("{op} {p}: writes a kernel or security-module defence setting"),
            );
            return true;
        }
        if ERASING_OPS.contains(&op) && taxonomy::trace(p) {
            if p.ends_with('*') && self.under_rotated_test(node) {
                // Walked files removed only once a test picked rotated
                // archives (`name.endswith(".gz")`): rotation, as when the
                // path itself says so.
                return false;
            }
            self.judge_erased_trace(p, node, &format!("{op} {p}"), "erases");
            return true;
        }
        false
    }

    /// Whether the call at `node` runs only when an `if` around it tests a
    /// rotated archive's suffix (`.gz`, `.1`, `.old`...) in its condition.
    fn under_rotated_test(&self, node: Node<'t>) -> bool {
        let mut up = node.parent();
        for _ in 0..12 {
            let Some(n) = up else {
                return false;
            };
            let tests_suffix = n.kind() == K::IfStatement
                && n.child(F::Condition).is_some_and(|c| {
                    let t = self.text(c);
                    t.contains("endswith") && taxonomy::names_rotated(t)
                });
            if tests_suffix {
                return true;
            }
            up = n.parent();
        }
        false
    }

    /// A log, login record or history erased (`what`: the operation and
    /// the path; `verb`: what it does to the file) is MB923, covering
    /// tracks; the user's own history cleared or rewritten after the user
    /// said yes is MB227, a privacy cleaner.
    fn judge_erased_trace(&mut self, p: &str, node: Node<'t>, what: &str, verb: &str) {
        if p.starts_with("~/") && self.asked_before(node) {
            let detail = format!("{what}: the user's own history, after asking");
            self.add("MB227", node, detail);
        } else {
            let detail = format!("{what}: {verb} a log, login record or history");
            self.add("MB923", node, detail);
        }
    }

    /// Whether the function making the call at `node` asks the user
    /// (`input()`) before it, or every call of that function comes after
    /// its caller asked (a helper called once the user said yes): the
    /// deletion or the elevation waits for an answer.
    pub(super) fn asked_before(&self, node: Node<'t>) -> bool {
        let Some(scope) = self.call_scope(node) else {
            return false;
        };
        self.asked_before_in(node, scope)
    }

    /// [`Self::asked_before`] for a call whose scope is known.
    pub(super) fn asked_before_in(&self, node: Node<'t>, scope: usize) -> bool {
        if self.asks_in(scope, node.start_byte()) {
            return true;
        }
        self.callers.get(&scope).is_some_and(|cs| {
            !cs.is_empty()
                && cs
                    .iter()
                    .all(|c| self.asks_in(c.scope, c.node.start_byte()))
        })
    }

    /// Whether an `input()` call of `scope` starts before byte `before`.
    /// (From the first such call of each scope, found once: each question
    /// went over every call, which made a setup script that asks before
    /// each of its commands quadratic.)
    fn asks_in(&self, scope: usize, before: usize) -> bool {
        let first = self.first_asks.get_or_init(|| {
            let mut first: FxHashMap<usize, usize> = FxHashMap::default();
            for c in &self.calls {
                if self.site_q(c) == Some("builtins.input") {
                    let at = first.entry(c.scope).or_insert(usize::MAX);
                    *at = (*at).min(c.node.start_byte());
                }
            }
            first
        });
        first.get(&scope).is_some_and(|&at| at < before)
    }

    /// `open(TRACE, "w")` and `os.open(TRACE, O_TRUNC)` empty a trace file;
    /// appending to a log is logging, not erasing.
    pub(super) fn check_truncating_open(&mut self, q: &str, call: &Call<'t>) {
        let truncates = match q {
            "builtins.open" | "io.open" => call.arg(1, "mode").is_some_and(|m| {
                self.reset_budget();
                self.fold(m, call.scope, 0).is_some_and(|m| m.contains('w'))
            }),
            "os.open" => call
                .arg(1, "flags")
                .is_some_and(|f| self.text(f).contains("O_TRUNC")),
            _ => false,
        };
        let Some(target) = call.arg(0, "file").filter(|_| truncates) else {
            return;
        };
        self.reset_budget();
        if let Some(p) = self
            .paths(target, call.scope)
            .into_iter()
            .find(|p| taxonomy::trace(p))
        {
            // Rewritten after asking: lines with a leaked password taken
            // out of the user's own history.
            self.judge_erased_trace(&p, call.node, &format!("{q} {p} for writing"), "empties");
        }
    }

    /// `fh.truncate(...)` on a file opened from a trace path.
    pub(super) fn check_truncate_method(&mut self, call: &Call<'t>) {
        if call.method != Some("truncate") {
            return;
        }
        let Some(obj) = call.func.child(F::Object) else {
            return;
        };
        let Some(binds) = self.lookup(self.text(obj), call.scope, obj.start_byte()) else {
            return;
        };
        for b in binds {
            let (opener, scope) = match b {
                Bind::Expr(v, s) => (v, s),
                Bind::Part {
                    of,
                    scope,
                    how: Part::Context,
                } => (of, scope),
                _ => continue,
            };
            self.reset_budget();
            let Some((paths, _)) = self.opening_call(opener, scope) else {
                continue;
            };
            if let Some(p) = paths.into_iter().find(|p| taxonomy::trace(p)) {
                self.add(
                    "MB923",
                    call.node,
                    format!("truncates {p}: empties a log, login record or history"),
                );
                return;
            }
        }
    }

    /// Killing processes in a script that names a security agent or
    /// defence service.
    pub(super) fn check_defence_kills(&mut self) {
        let (Some(kill), Some((named, what))) =
            (self.signs.kills, self.signs.defence_named.clone())
        else {
            return;
        };
        if self.findings.iter().any(|f| f.rule == "MB924") {
            return;
        }
        let detail = format!(
            "kills processes (line {}) in a script that names the defence {what:?} (line {})",
            kill.start_position().row + 1,
            named.start_position().row + 1
        );
        self.add("MB924", kill, detail);
    }

    /// Records process kills (for [`Self::check_defence_kills`]).
    pub(super) fn note_kill(&mut self, call: &Call<'t>) {
        let kills = matches!(
            call.q.as_deref(),
            Some("os.kill" | "os.killpg" | "signal.pthread_kill")
        ) || matches!(call.method, Some("kill" | "terminate" | "send_signal"));
        if kills {
            self.signs.kills.get_or_insert(call.node);
        }
    }
}
