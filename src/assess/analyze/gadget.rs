//! Pickle gadgets: a class whose `__reduce__` hands the unpickler a callable
//! that runs commands or code (MB418), armed with a ready command or
//! serialised in the same script (MB912).

use super::names::{EXEC_FUNCS, SHELL_FUNCS, SUBPROCESS};
use super::{Analyzer, Bind, Node, Seen, EVAL_DEPTH, F, K};

/// Class names found instantiated by one query, and the values it followed.
#[derive(Default)]
struct Instances<'t> {
    names: Vec<&'t str>,
    seen: Seen,
}

/// Names under which the pickle protocol asks an object how to rebuild it.
pub(super) const REDUCE_METHODS: &[&str] = &["__reduce__", "__reduce_ex__"];

/// Calls that serialise with pickle (or a pickle-based format).
pub(super) const PICKLERS: &[&str] = &[
    "pickle.dumps",
    "pickle.dump",
    "pickle.Pickler",
    "dill.dumps",
    "dill.dump",
    "cloudpickle.dumps",
    "cloudpickle.dump",
    "joblib.dump",
    "torch.save",
];

/// A callable that runs a command or code when the unpickler calls it.
/// `getattr`, `operator.getitem` and the class itself are what honest
/// `__reduce__` methods return (the standard library's enum, typing...).
fn runs_code(q: &str) -> bool {
    SHELL_FUNCS.contains(&q)
        || SUBPROCESS.contains(&q)
        || EXEC_FUNCS.contains(&q)
        || q.starts_with("os.exec")
        || q.starts_with("os.spawn")
        || matches!(
            q,
            "builtins.exec"
                | "builtins.eval"
                | "builtins.compile"
                | "builtins.execfile"
                | "runpy.run_path"
                | "runpy.run_module"
        )
}

fn runs_python(q: &str) -> bool {
    matches!(q, "builtins.exec" | "builtins.eval" | "builtins.execfile")
}

/// The class whose body defines `def` (a method, or a lambda assigned there).
fn enclosing_class(def: Node) -> Option<Node> {
    let mut n = def.parent();
    while let Some(p) = n {
        match p.kind() {
            K::ClassDefinition => return Some(p),
            K::FunctionDefinition | K::Lambda | K::Module => return None,
            _ => n = p.parent(),
        }
    }
    None
}

/// The elements of a tuple or list literal.
fn elements<'t>(n: Node<'t>) -> Option<Vec<Node<'t>>> {
    n.kind().is_sequence().then(|| n.children().collect())
}

impl<'t> Analyzer<'t> {
    pub(super) fn check_gadgets(&mut self) {
        let defs = std::mem::take(&mut self.reduce_defs);
        if defs.is_empty() {
            return;
        }
        let pickled = self.pickled_classes();
        for (def, scope) in defs {
            let class = enclosing_class(def)
                .and_then(|c| c.child(F::Name))
                .map(|n| self.text(n))
                .unwrap_or("?");
            let returns = self.returned_values(def);
            for value in returns {
                self.check_gadget(class, value, scope, &pickled);
            }
        }
    }

    /// Values of the `return` statements of a function, not of functions
    /// nested in it; a lambda's body is its value.
    fn returned_values(&self, def: Node<'t>) -> Vec<Node<'t>> {
        if def.kind() == K::Lambda {
            return def.child(F::Body).into_iter().collect();
        }
        let Some(body) = def.child(F::Body) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let mut stack = vec![body];
        while let Some(n) = stack.pop() {
            match n.kind() {
                k if k.opens_scope() => continue,
                K::ReturnStatement => out.extend(n.nth_child(0)),
                _ => {}
            }
            stack.extend(n.children());
        }
        out
    }

    /// The `(callable, args, ...)` tuple a value is, through one binding.
    fn reduce_tuple(&self, value: Node<'t>, scope: usize) -> Option<Vec<Node<'t>>> {
        if let Some(e) = elements(value) {
            return Some(e);
        }
        if value.kind() != K::Identifier {
            return None;
        }
        let binds = self.lookup(self.text(value), scope, value.start_byte())?;
        binds.into_iter().find_map(|b| match b {
            Bind::Expr(v, _) => elements(v),
            _ => None,
        })
    }

    fn check_gadget(
        &mut self,
        class: &str,
        value: Node<'t>,
        scope: usize,
        pickled: &[(&'t str, (usize, usize))],
    ) {
        let Some(parts) = self.reduce_tuple(value, scope) else {
            return;
        };
        let Some(callable) = parts.first().copied() else {
            return;
        };
        self.reset_budget();
        let Some(q) = self.resolve(callable, scope, 0).filter(|q| runs_code(q)) else {
            return;
        };
        self.add(
            "MB418",
            value,
            format!("{class}.__reduce__ returns {q}: unpickling an instance calls it"),
        );
        let arg0 = parts
            .get(1)
            .and_then(|a| self.reduce_tuple(*a, scope))
            .and_then(|a| a.first().copied());
        if let Some(cmd) = arg0.and_then(|a| self.fold_command(a, scope)) {
            if runs_python(&q) {
                self.assess_nested(&q, &cmd, value);
            } else {
                self.check_command(&cmd, value);
            }
            self.add(
                "MB912",
                value,
                format!(
                    "{class}.__reduce__ carries the payload {:?}",
                    super::literal::shorten(&cmd)
                ),
            );
            return;
        }
        if let Some(&(_, at)) = pickled.iter().find(|(c, _)| *c == class) {
            self.add_at(
                "MB912",
                at,
                format!("an instance of {class}, whose __reduce__ returns {q}, is pickled"),
            );
        }
    }

    /// Classes instantiated in what each pickling call serialises (`C()`,
    /// `[C()]`, or a name bound to one), with the call's position. Computed
    /// once per call, so many gadgets and many calls stay linear.
    fn pickled_classes(&self) -> Vec<(&'t str, (usize, usize))> {
        let mut out = Vec::new();
        for &(call, scope) in &self.pickle_dumps {
            let (pos, _) = self.args(call);
            let Some(obj) = pos.first().copied() else {
                continue;
            };
            let mut found = Instances::default();
            self.reset_budget();
            self.instantiated(obj, scope, 0, &mut found);
            out.extend(found.names.into_iter().map(|n| (n, super::pos(call))));
        }
        out
    }

    /// Names called (`C()`) in `n` or in the values of the names it uses,
    /// each bound value followed once.
    fn instantiated(&self, n: Node<'t>, scope: usize, depth: usize, out: &mut Instances<'t>) {
        if depth > EVAL_DEPTH || !self.tick() {
            return;
        }
        match n.kind() {
            K::Call => {
                if let Some(f) = n.child(F::Function).filter(|f| f.kind() == K::Identifier) {
                    out.names.push(self.text(f));
                }
            }
            K::Identifier => {
                for b in self
                    .lookup(self.text(n), scope, n.start_byte())
                    .into_iter()
                    .flatten()
                {
                    if let Bind::Expr(v, s) = b {
                        if !out.seen.first(v, depth) {
                            continue;
                        }
                        self.instantiated(v, s, depth + 1, out);
                    }
                }
                return;
            }
            _ => {}
        }
        let kids: Vec<Node<'t>> = n.children().collect();
        for k in kids {
            self.instantiated(k, scope, depth + 1, out);
        }
    }
}
