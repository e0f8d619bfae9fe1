//! Cheating the harness that runs and grades the script: tests, expected
//! outputs, test configuration or reports written, the test framework or
//! the interpreter's exit patched at run time (MB937); the parent process
//! (the runner or grader) killed or stopped (MB938); clocks faked and time
//! limit signals ignored (MB214); the grader's hidden files read (MB215).

use super::calls::Call;
use super::literal::shorten;
use super::{taxonomy, Analyzer, Bind, Node, F, K};

/// Modules whose objects decide whether tests pass.
const TEST_FRAMEWORKS: &[&str] = &[
    "unittest",
    "pytest",
    "_pytest",
    "doctest",
    "nose",
    "numpy.testing",
    "hypothesis",
];

/// Functions that end the interpreter with a status.
const EXITS: &[&str] = &["sys.exit", "os._exit", "builtins.exit", "builtins.quit"];

/// Clocks a harness measures time limits with.
const CLOCKS: &[&str] = &[
    "time.time",
    "time.monotonic",
    "time.perf_counter",
    "time.process_time",
    "time.time_ns",
    "time.monotonic_ns",
    "time.perf_counter_ns",
];

/// Signals that enforce time and CPU limits.
const LIMIT_SIGNALS: &[&str] = &["SIGALRM", "SIGXCPU", "SIGVTALRM", "SIGPROF"];

/// What replacing `full` (an object `owner`'s attribute) defeats.
fn patched(owner: &str, full: &str) -> Option<(&'static str, &'static str)> {
    let under = |m: &str| owner == m || owner.starts_with(&format!("{m}."));
    if TEST_FRAMEWORKS.iter().any(|m| under(m)) {
        Some(("MB937", "the test framework"))
    } else if EXITS.contains(&full) {
        Some(("MB937", "the interpreter's exit status"))
    } else if CLOCKS.contains(&full) {
        Some(("MB214", "the clock time limits are measured with"))
    } else {
        None
    }
}

impl<'t> Analyzer<'t> {
    /// `module.attr = v` and `sys.modules[name] = fake` on the modules a
    /// harness relies on.
    pub(super) fn check_patched(&mut self) {
        // Borrowed back afterwards: the pixel and payment checks read it too.
        let assigned = std::mem::take(&mut self.assigned);
        for &(target, value, scope) in &assigned {
            self.reset_budget();
            let (Some(obj), true) = (target.nth_child(0), target.kind() == K::Attribute) else {
                self.check_planted_module(target, scope);
                continue;
            };
            if !self.is_function(value, scope) {
                continue;
            }
            let Some(owner) = self.resolve(obj, scope, 0) else {
                continue;
            };
            let attr = target
                .child(F::Attribute)
                .map(|a| self.text(a))
                .unwrap_or("");
            let full = format!("{owner}.{attr}");
            if let Some((rule, what)) = patched(&owner, &full) {
                let detail = format!("`{}` replaces {full}: {what}", shorten(self.text(target)));
                self.add(rule, target, detail);
            }
        }
        self.assigned = assigned;
    }

    /// `sys.modules["pytest"] = stand_in`: a fake test module planted.
    fn check_planted_module(&mut self, target: Node<'t>, scope: usize) {
        let (Some(base), Some(key)) = (target.child(F::Value), target.child(F::Subscript)) else {
            return;
        };
        if self.resolve(base, scope, 0).as_deref() != Some("sys.modules") {
            return;
        }
        let Some(name) = self.fold(key, scope, 0) else {
            return;
        };
        if let Some((rule, what)) = patched(&name, "") {
            let detail = format!("sys.modules[{name:?}] replaced: {what}");
            self.add(rule, target, detail);
        }
    }

    /// `setattr(module, name, v)`, the parent killed, limit signals ignored,
    /// the grader's files read.
    pub(super) fn check_harness_call(&mut self, call: &Call<'t>, read: &[String]) {
        match call.q.as_deref() {
            Some("builtins.setattr") => self.check_setattr(call),
            Some("os.kill" | "os.killpg") => self.check_parent_kill(call),
            Some("signal.signal") => self.check_limit_signal(call),
            _ => {}
        }
        if let Some(p) = read.iter().find(|p| taxonomy::grader_file(p)) {
            let detail = format!("reads {p}: the grader's own files (answers, hidden tests)");
            self.add("MB215", call.node, detail);
        }
    }

    fn check_setattr(&mut self, call: &Call<'t>) {
        let Some(obj) = call.pos.first() else { return };
        self.reset_budget();
        let Some(owner) = self.resolve(*obj, call.scope, 0) else {
            return;
        };
        let attr = call
            .pos
            .get(1)
            .and_then(|a| self.fold(*a, call.scope, 0))
            .unwrap_or_else(|| "*".into());
        let full = format!("{owner}.{attr}");
        let replaced_by_function = call
            .pos
            .get(2)
            .is_some_and(|v| self.is_function(*v, call.scope));
        if let (Some((rule, what)), true) = (patched(&owner, &full), replaced_by_function) {
            let detail = format!("setattr replaces {full}: {what}");
            self.add(rule, call.node, detail);
        }
    }

    fn check_parent_kill(&mut self, call: &Call<'t>) {
        let Some(pid) = call.pos.first() else { return };
        if self.is_parent_pid(*pid, call.scope, 0) {
            let sig = call.pos.get(1).map(|s| self.text(*s)).unwrap_or("");
            let detail = format!(
                "{}: signal {sig} to the process that started this one (the runner or grader)",
                call.written
            );
            self.add("MB938", call.node, detail);
        }
    }

    /// Is `n` the parent's pid: `os.getppid()`, through names and the
    /// arguments a function or thread is given?
    fn is_parent_pid(&self, n: Node<'t>, scope: usize, depth: usize) -> bool {
        if depth > 4 {
            return false;
        }
        match n.kind() {
            K::Call => match self.callee(n, scope).as_deref() {
                Some("os.getppid") => true,
                // The parent's process group: `killpg(getpgid(ppid))`.
                Some("os.getpgid") => self
                    .args(n)
                    .0
                    .first()
                    .is_some_and(|a| self.is_parent_pid(*a, scope, depth + 1)),
                _ => false,
            },
            K::Identifier => {
                let name = self.text(n);
                let Some(binds) = self.lookup(name, scope, n.start_byte()) else {
                    return false;
                };
                binds.iter().any(|b| match *b {
                    Bind::Expr(v, s) => self.is_parent_pid(v, s, depth + 1),
                    Bind::Param { func, index, param } => {
                        param
                            .child(F::Value)
                            .is_some_and(|d| self.is_parent_pid(d, func, depth + 1))
                            || self
                                .passed(func, index, name)
                                .into_iter()
                                .any(|(a, s)| self.is_parent_pid(a, s, depth + 1))
                    }
                    _ => false,
                })
            }
            _ => false,
        }
    }

    /// `signal.signal(SIGXCPU, SIG_IGN)`: the limit a harness enforces
    /// ignored. Handlers that do something are how programs clean up.
    fn check_limit_signal(&mut self, call: &Call<'t>) {
        let (Some(sig), Some(handler)) = (call.pos.first(), call.pos.get(1)) else {
            return;
        };
        let ignored = self.text(*handler).ends_with("SIG_IGN");
        let sig_text = self.value_text(*sig, call.scope);
        let limit = LIMIT_SIGNALS.iter().find(|s| sig_text.contains(*s));
        if let (true, Some(s)) = (ignored, limit) {
            let detail = format!("{s} ignored: the time or CPU limit it enforces is defeated");
            self.add("MB214", call.node, detail);
        }
    }

    /// Is `v` a function of the script's own (a lambda, or a name bound to
    /// a `def`)? Patching means putting code in place of a framework's or
    /// the interpreter's; setting a flag (`doctest.master = None`) or
    /// installing an object (`builtins.exit = Quitter(...)`, as site.py
    /// does) is configuration.
    fn is_function(&self, v: Node<'t>, scope: usize) -> bool {
        match v.kind() {
            K::Lambda => true,
            K::Identifier => matches!(
                self.lookup(self.text(v), scope, v.start_byte()),
                Some([Bind::Def(d, _)]) if d.kind() == K::FunctionDefinition
            ),
            _ => false,
        }
    }

    /// The text of `n`, or of what the name `n` is bound to or loops over.
    fn value_text(&self, n: Node<'t>, scope: usize) -> &'t str {
        if n.kind() != K::Identifier {
            return self.text(n);
        }
        match self.lookup(self.text(n), scope, n.start_byte()) {
            Some([Bind::Expr(v, _)]) => self.text(v),
            Some([Bind::Part { of, .. }]) => self.text(of),
            _ => self.text(n),
        }
    }

    /// Writing `p`: a test, expected output, test configuration or report.
    pub(super) fn judge_harness(&mut self, p: &str, op: &str, node: Node<'t>) -> bool {
        // Making a directory writes no verdict into it.
        if op.ends_with("mkdir") || op.ends_with("makedirs") {
            return false;
        }
        // A directory the script has just made for itself (`mkdtemp`) holds
        // its own scratch files, never the suite a grader runs: py_compile's
        // and compileall's own tests write `_test.py` there.
        if p.starts_with("<tmp:") {
            return false;
        }
        let Some(what) = taxonomy::harness_file(p) else {
            return false;
        };
        let detail = format!("{op} {p}: writes {what}, which decide whether the checks pass");
        self.add("MB937", node, detail);
        true
    }
}
