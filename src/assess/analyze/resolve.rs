//! Name resolution: which binding a name sees, and the fully qualified
//! dotted name an expression refers to through imports, aliases,
//! `getattr`, `__import__`, `sys.modules` and `globals()`.

use std::rc::Rc;

use super::args::Args;
use super::literal::{int_value, string_value};
use super::names::*;
use super::{Analyzer, Bind, Binding, Node, F, K};
use super::{EVAL_BUDGET, EVAL_DEPTH};

/// A module's name as the start of a dotted name: with room for `attr`
/// and a further attribute or two, which the callers append (each append
/// to an exact-sized copy moved the whole name).
fn module_name(m: &str, attr: &str) -> String {
    let mut s = String::with_capacity(m.len() + attr.len() + 24);
    s.push_str(m);
    s
}

/// `base.attr`, grown in place: resolution builds one of these per level
/// of every dotted name it meets, and `format!` allocated anew each time.
/// (Names made from pieces elsewhere here are `concat`ed for the same
/// reason: `format!` cost about 500 instructions a name.)
fn dotted(mut base: String, attr: &str) -> String {
    base.reserve(attr.len() + 1);
    base.push('.');
    base.push_str(attr);
    base
}

impl<'t> Analyzer<'t> {
    /// `n` when it is a literal list, tuple or set, or the one value of that
    /// kind the name `n` is bound to (bound once, where `n` stands).
    pub(super) fn literal_sequence(&self, n: Node<'t>, scope: usize) -> Option<Node<'t>> {
        let v = match n.kind() {
            K::Identifier => match self.lookup(self.text(n), scope, n.start_byte()) {
                Some([Bind::Expr(v, _)]) => v,
                _ => return None,
            },
            _ => n,
        };
        v.kind().is_sequence().then_some(v)
    }

    /// The value the name `n` is bound to once, in `scope` itself rather
    /// than an enclosing one: what a local variable holds where it is used.
    pub(super) fn local_value(&self, n: Node<'t>, scope: usize) -> Option<Node<'t>> {
        if n.kind() != K::Identifier {
            return None;
        }
        match self.lookup(self.text(n), scope, n.start_byte()) {
            Some([Bind::Expr(v, s)]) if s == scope => Some(v),
            _ => None,
        }
    }

    pub(super) fn tick(&self) -> bool {
        let b = self.budget.get();
        if b == 0 {
            return false;
        }
        self.budget.set(b - 1);
        true
    }

    pub(super) fn reset_budget(&self) {
        self.budget.set(EVAL_BUDGET);
    }

    /// The binding a use of `name` at byte `at` sees: the nearest scope that
    /// binds it, and there the last binding before the use (or the last one
    /// at all, for functions that use names bound later in the module).
    /// Picking one binding keeps resolution linear instead of fanning out
    /// over every rebinding of common names. (An array, not a `Vec`: it is
    /// asked for at every name the evaluators meet, and needs no allocation.)
    pub(super) fn lookup(&self, name: &str, scope: usize, at: usize) -> Option<[Bind<'t>; 1]> {
        self.lookup_span(name, scope, at).map(|(b, _)| [b])
    }

    /// [`Self::lookup`], with the stretch of source where that binding is
    /// the name's latest one in its scope (from it to the next binding).
    pub(super) fn lookup_span(
        &self,
        name: &str,
        scope: usize,
        at: usize,
    ) -> Option<(Bind<'t>, std::ops::Range<usize>)> {
        let by_scope = self.binds.get(name)?;
        let mut s = Some(scope);
        let mut first = true;
        while let Some(id) = s {
            let sc = self.scopes.get(id)?;
            // Class bodies are not visible from methods nested in them.
            let here = (first || !sc.is_class)
                .then(|| scope_binds(by_scope, id))
                .flatten();
            if let Some(list) = here {
                let before = list.partition_point(|x| x.at < at);
                // `[Thread(args=(t,)) for t in roots]`: the element is
                // written before the clause that binds its variable.
                let i = if list.get(before).is_some_and(|x| binds_around(x.bind, at)) {
                    before
                } else if before > 0 {
                    before - 1
                } else {
                    list.len().saturating_sub(1)
                };
                if let Some(b) = list.get(i) {
                    let end = list.get(i + 1).map_or(usize::MAX, |x| x.at);
                    return Some((b.bind, b.at..end));
                }
            }
            first = false;
            s = sc.parent;
        }
        None
    }

    /// The qualified name `name` has through a star import (`from os import
    /// *` then `system(...)`) in `scope` or a scope around it, when that is
    /// a known target: modules tried innermost scope first. A module
    /// star-imported twice is tried twice, with the same answer. (Asked of
    /// every name that is not bound, builtins included: the modules were
    /// collected into a vector, and each candidate copied, every time.)
    fn star_target(&self, scope: usize, name: &str) -> Option<String> {
        if self.star_imports.is_empty() {
            return None;
        }
        let mut q = String::new();
        let mut s = Some(scope);
        while let Some(id) = s {
            for (_, m) in self.star_imports.iter().filter(|(sc, _)| *sc == id) {
                q.clear();
                q.push_str(m);
                q.push('.');
                q.push_str(name);
                if is_known_target(&q) {
                    return Some(q);
                }
            }
            s = self.scopes.get(id).and_then(|sc| sc.parent);
        }
        None
    }

    /// The qualified name a call's callee resolves to (with a budget of its
    /// own), computed once per call.
    /// (Shared, not cloned: it is asked for several times per call.)
    /// A parameter whose default names a function or module
    /// (`runner=subprocess.run`): what the body calls when the caller
    /// passes nothing, resolved where the `def` stands.
    fn resolve_default(&self, param: Node<'t>, func: usize, depth: usize) -> Option<String> {
        let default = param
            .child(F::Value)
            // `_run=getattr(subprocess, "check_" + "output")`: a default
            // fetched by name is the function it names.
            .filter(|v| matches!(v.kind(), K::Identifier | K::Attribute | K::Call))?;
        let outer = self.scopes.get(func)?.parent?;
        self.resolve(default, outer, depth + 1)
    }

    pub(super) fn callee(&self, call: Node<'t>, scope: usize) -> Option<Rc<str>> {
        if let Some(q) = self.callees.borrow().get(&call.id()) {
            return q.clone();
        }
        let saved = self.budget.get();
        self.reset_budget();
        let q: Option<Rc<str>> = self
            .call_function(call)
            .and_then(|f| self.resolve(f, scope, 0))
            .map(Rc::from);
        self.budget.set(saved);
        self.callees.borrow_mut().insert(call.id(), q.clone());
        q
    }

    /// Fully qualified dotted name an expression refers to, e.g. `o.system`
    /// after `import os as o` gives "os.system"; builtins give "builtins.x".
    pub(super) fn resolve(&self, n: Node<'t>, scope: usize, depth: usize) -> Option<String> {
        if depth > EVAL_DEPTH || !self.tick() {
            return None;
        }
        let q = match n.kind() {
            K::Identifier => {
                let name = self.text(n);
                match self.lookup(name, scope, n.start_byte()) {
                    Some(binds) => binds.iter().rev().find_map(|b| match *b {
                        Bind::Module(m, None) => Some(module_name(m, "")),
                        Bind::Module(m, Some(attr)) => Some(dotted(module_name(m, attr), attr)),
                        Bind::Expr(v, s) => self.resolve(v, s, depth + 1),
                        Bind::Param { param, func, .. } => self.resolve_default(param, func, depth),
                        _ => None,
                    }),
                    None => {
                        let star = self.star_target(scope, name);
                        star.or_else(|| is_builtin(name).then(|| ["builtins.", name].concat()))
                    }
                }
            }
            K::Attribute => {
                let obj = n.child(F::Object)?;
                let attr = n.child(F::Attribute)?;
                match self.resolve(obj, scope, depth + 1) {
                    Some(base) => Some(dotted(base, self.text(attr))),
                    None => self.resolve_self_attr(obj, self.text(attr), depth),
                }
            }
            K::Call => self.resolve_call(n, scope, depth),
            K::Subscript => self.resolve_subscript(n, scope, depth),
            K::NamedExpression => self.resolve(n.child(F::Value)?, scope, depth + 1),
            // `a if test else b`: the first branch that names something
            // (scripts pick between spellings of one object this way).
            // `a or b` likewise: `spawner or pty.spawn` is a default kept
            // beside an injectable one.
            K::ConditionalExpression | K::BooleanOperator => {
                n.children().find_map(|c| self.resolve(c, scope, depth + 1))
            }
            _ => None,
        }?;
        Some(normalize(q))
    }

    /// `self.run` where the class stored a function or module there
    /// (`self.run = runner or subprocess.run`): what the store names.
    /// Methods called through attributes set up in `__init__` reach the
    /// same functions as direct calls.
    ///
    /// The answer depends on the attribute's name alone, and class-heavy
    /// code asks it for most of its calls (`self.x.y()`): turtle.py asked it
    /// ~2,000 times, each exploring up to a whole budget, and spent 80% of
    /// its time here. So each name is answered once, with a budget
    /// of its own (at most one budget per distinct stored attribute: still
    /// linear; the depth goes on from the first asker's, which bounds the
    /// stack), and a name being answered counts as unresolved to the stores
    /// it reaches again (`self.a = self.b; self.b = self.a`).
    fn resolve_self_attr(&self, obj: Node<'t>, attr: &'t str, depth: usize) -> Option<String> {
        if obj.kind() != K::Identifier || self.text(obj) != "self" {
            return None;
        }
        let stores = self.attr_stores.get(attr)?;
        if let Some(known) = self.self_attrs.borrow().get(attr) {
            return known.clone();
        }
        self.self_attrs.borrow_mut().insert(attr, None);
        let saved = self.budget.get();
        self.reset_budget();
        let q = self.resolve_stores(stores, depth);
        self.budget.set(saved);
        self.self_attrs.borrow_mut().insert(attr, q.clone());
        q
    }

    /// The first of an attribute's stored values that names something.
    fn resolve_stores(&self, stores: &[(Node<'t>, usize)], depth: usize) -> Option<String> {
        stores
            .iter()
            .filter(|(v, _)| {
                matches!(
                    v.kind(),
                    K::Identifier
                        | K::Attribute
                        | K::BooleanOperator
                        | K::ConditionalExpression
                        | K::Call
                )
            })
            .find_map(|&(v, s)| self.resolve(v, s, depth + 1))
    }

    /// What a call returns, when that is a module or function: `getattr`,
    /// `__import__`, a loaded C library, `globals()`.
    fn resolve_call(&self, n: Node<'t>, scope: usize, depth: usize) -> Option<String> {
        let Some(f) = self.resolve(n.child(F::Function)?, scope, depth + 1) else {
            return self.resolve_own_import(n, scope, depth);
        };
        let (pos, _) = self.args(n);
        match f.as_str() {
            "builtins.getattr" if pos.len() >= 2 => {
                let base = self.resolve(pos[0], scope, depth + 1)?;
                let name = self.fold(pos[1], scope, depth + 1)?;
                Some(dotted(base, &name))
            }
            // `run = functools.partial(subprocess.run, capture_output=True)`:
            // calling the partial calls the function it wraps (with the
            // call's own arguments; those fixed in the partial are not
            // followed).
            "functools.partial" => self.resolve(*pos.first()?, scope, depth + 1),
            "builtins.__import__" | "importlib.import_module" | "importlib.__import__" => {
                self.fold(*pos.first()?, scope, depth + 1)
            }
            // `vars(module)` is the module's namespace, not the caller's.
            "builtins.vars" if pos.len() == 1 => {
                let m = self.resolve(pos[0], scope, depth + 1)?;
                Some(dotted(m, "__dict__"))
            }
            "ctypes.CDLL"
            | "ctypes.PyDLL"
            | "ctypes.cdll.LoadLibrary"
            | "ctypes.CDLL.LoadLibrary"
            | "ctypes.util.find_library" => Some("ctypes.CDLL()".into()),
            "builtins.globals" | "builtins.vars" | "builtins.locals" => {
                Some("builtins.globals()".into())
            }
            _ => None,
        }
    }

    /// `getattr(obj, name_expr)` returned by a one-parameter function,
    /// with the name folded from this call's argument.
    fn getattr_with_argument(
        &self,
        call: Node<'t>,
        ret: Node<'t>,
        def_scope: usize,
        scope: usize,
        depth: usize,
    ) -> Option<String> {
        let [obj, name] = self.args(ret).0[..] else {
            return None;
        };
        let attr = self.fold_with_argument(call, name, def_scope, scope, depth)?;
        let base = self.resolve(obj, def_scope, depth + 1)?;
        Some(dotted(base, &attr))
    }

    /// The module a function of the script's own imports and returns
    /// (`def _reg(): return importlib.import_module("".join(reversed("gerniw")))`,
    /// `def _mod(name): return importlib.import_module(name)` called with
    /// `"win" + "reg"`): loaders that keep a module's name out of the import
    /// statements name it here, and what is called on the result is that
    /// module's function. A name taken from a parameter folds from this call.
    fn resolve_own_import(&self, call: Node<'t>, scope: usize, depth: usize) -> Option<String> {
        let def_scope = self.own_function_scope(call.child(F::Function)?, scope)?;
        self.returns.get(&def_scope)?.iter().find_map(|&ret| {
            if ret.kind() != K::Call {
                // `def _shell(): return os.system`: a getter of a function.
                return matches!(ret.kind(), K::Attribute | K::Identifier)
                    .then(|| self.resolve(ret, def_scope, depth + 1))?;
            }
            let q = self.resolve(ret.child(F::Function)?, def_scope, depth + 1)?;
            if q == "builtins.getattr" {
                // `return getattr(os, "sys" + "tem")`: fetched by name;
                // `return getattr(kernel32, API[name])`: by the name this
                // call's argument picks.
                return self
                    .getattr_with_argument(call, ret, def_scope, scope, depth)
                    .or_else(|| self.resolve(ret, def_scope, depth + 1));
            }
            if !matches!(
                q.as_str(),
                "builtins.__import__" | "importlib.import_module" | "importlib.__import__"
            ) {
                return None;
            }
            let name = *self.args(ret).0.first()?;
            let param = (name.kind() == K::Identifier)
                .then(|| self.lookup(self.text(name), def_scope, name.start_byte()))
                .flatten();
            match param.as_ref().map(|b| &b[0]) {
                Some(&Bind::Param { index, func, .. }) if func == def_scope => {
                    let arg = *self.args(call).0.get(index)?;
                    self.fold(arg, scope, depth + 1)
                }
                // `_m = lambda n: __import__(n[::-1])`: the name built
                // from this call's argument.
                _ => self
                    .fold(name, def_scope, depth + 1)
                    .or_else(|| self.fold_with_argument(call, name, def_scope, scope, depth)),
            }
        })
    }

    /// `sys.modules[...]`, `__builtins__[...]` and `globals()[...]`.
    fn resolve_subscript(&self, n: Node<'t>, scope: usize, depth: usize) -> Option<String> {
        let key = self.fold(n.child(F::Subscript)?, scope, depth + 1)?;
        let Some(v) = self.resolve(n.child(F::Value)?, scope, depth + 1) else {
            return self.resolve_table_entry(n.child(F::Value)?, &key, scope, depth);
        };
        match v.as_str() {
            "sys.modules" => Some(key),
            "builtins" | "builtins.__dict__" => Some(["builtins.", &key].concat()),
            "builtins.globals()" if key == "__builtins__" => Some("builtins".into()),
            "builtins.globals()" => {
                let binds = self.lookup(&key, 0, usize::MAX)?;
                binds.iter().rev().find_map(|b| match *b {
                    Bind::Module(m, None) => Some(m.to_string()),
                    Bind::Module(m, Some(a)) => Some([m, ".", a].concat()),
                    _ => None,
                })
            }
            _ => None,
        }
    }

    /// `ops["set"]` of `ops = ops or {"set": getattr(reg, "SetValueEx")}`:
    /// the function a table of the script's own keeps at a constant key, so
    /// calls dispatched through the table reach what they name.
    fn resolve_table_entry(
        &self,
        table: Node<'t>,
        key: &str,
        scope: usize,
        depth: usize,
    ) -> Option<String> {
        let (v, s) = self.bound_value(table, scope, |v| {
            matches!(
                v.kind(),
                K::Dictionary | K::BooleanOperator | K::DictionaryComprehension
            )
        })?;
        if v.kind() == K::DictionaryComprehension {
            return self.resolve_comprehension_entry(v, key, s, depth);
        }
        let dicts = std::iter::once(v).chain(v.children());
        dicts
            .filter(|d| d.kind() == K::Dictionary)
            .find_map(|d| self.entry_at(d, key, s, depth))
            .and_then(|e| self.resolve(e, s, depth + 1))
    }

    /// `mods["shot"]` of `mods = {k: importlib.import_module(v) for k, v
    /// in {"shot": "mss", ...}.items()}` (or `{k: v for ...}` over a table
    /// of functions): the entry the key picks from the dict the
    /// comprehension maps, imported or as it is. Imports kept behind
    /// nicknames are still those modules.
    fn resolve_comprehension_entry(
        &self,
        comp: Node<'t>,
        key: &str,
        s: usize,
        depth: usize,
    ) -> Option<String> {
        let pair = comp.child(F::Body)?;
        let clause = comp.children().find(|c| c.kind() == K::ForInClause)?;
        let names: Vec<&str> = clause
            .child(F::Left)?
            .children()
            .filter(|t| t.kind() == K::Identifier)
            .map(|t| self.text(t))
            .collect();
        let [k, v] = names[..] else {
            return None;
        };
        let source = clause.child(F::Right)?;
        if self.text(pair.child(F::Key)?) != k || self.method_name(source) != Some("items") {
            return None;
        }
        let obj = self.receiver(source)?;
        let (dict, ds) = match obj.kind() {
            K::Dictionary => (obj, s),
            _ => self.dict_literal(obj, s)?,
        };
        let entry = self.entry_at(dict, key, ds, depth)?;
        let value = pair.child(F::Value)?;
        if value.kind() == K::Identifier && self.text(value) == v {
            return self.resolve(entry, ds, depth + 1);
        }
        let (pos, _) = self.args(value);
        let passes_v = pos.len() == 1 && pos[0].kind() == K::Identifier && self.text(pos[0]) == v;
        let func = value
            .child(F::Function)
            .filter(|_| value.kind() == K::Call && passes_v)?;
        match self.resolve(func, s, depth + 1)?.as_str() {
            "builtins.__import__" | "importlib.import_module" | "importlib.__import__" => {
                self.fold(entry, ds, depth + 1)
            }
            _ => None,
        }
    }

    /// A call's positional and keyword arguments (see [`super::args::ArgTable`]).
    pub(super) fn args(&self, call: Node<'t>) -> Args<'t> {
        let (pos, kw) = self.arg_table.get(call);
        // Through a pass-through helper or a runner: the arguments after
        // the function it calls.
        if let Some(at) = self.forwarded_at(call) {
            return (pos.get(at + 1..).unwrap_or_default(), kw);
        }
        (pos, kw)
    }

    pub(super) fn is_truthy_const(&self, n: Node<'t>) -> bool {
        match n.kind() {
            K::True => true,
            K::Integer => int_value(self.text(n)).is_some_and(|v| v != 0),
            K::String => string_value(self.src, n).is_some_and(|s| !s.is_empty()),
            K::NotOperator => n
                .child(F::Argument)
                .is_some_and(|a| matches!(a.kind(), K::False | K::None) || self.text(a) == "0"),
            _ => false,
        }
    }
}

/// The bindings of one name in scope `id` (in source order), from the
/// name's list sorted by scope; `None` when the scope binds it nowhere.
pub(super) fn scope_binds<'a, 't>(all: &'a [Binding<'t>], id: usize) -> Option<&'a [Binding<'t>]> {
    // Most names are bound in one scope only: the whole list is that
    // scope's, or no scope asked about but that one has any.
    let (first, last) = (all.first()?, all.last()?);
    if first.scope == last.scope {
        return (first.scope == id).then_some(all);
    }
    if id < first.scope || id > last.scope {
        return None;
    }
    let lo = all.partition_point(|x| x.scope < id);
    let hi = all.partition_point(|x| x.scope <= id);
    all.get(lo..hi).filter(|l| !l.is_empty())
}

/// Spellings of the builtins module, rewritten to `builtins`.
const BUILTIN_ALIASES: [&str; 4] = [
    "builtins.__builtins__",
    "__builtins__",
    "builtins.builtins",
    "__builtin__",
];

/// Modules reached under another name: `import os.path as p` and `from os
/// import path` both reach posixpath's functions under os.path; cPickle and
/// _pickle are pickle.
const RENAMED_MODULES: [(&str, &str); 6] = [
    ("posixpath.", "os.path."),
    ("cPickle.", "pickle."),
    ("_pickle.", "pickle."),
    ("urllib2.", "urllib.request."),
    ("nt.", "os."),
    ("posix.", "os."),
];

/// The first bytes of every spelling `normalize` rewrites (the test
/// `normalize_gate_covers_every_spelling` holds them to the lists).
const REWRITTEN_FIRST_BYTES: &[u8] = b"b_pcun";

fn normalize(q: String) -> String {
    // Most names (`os.`, `subprocess.`, `requests.`) need none of the
    // thirteen prefix tests, and every level of every name resolved comes
    // here.
    if !q
        .as_bytes()
        .first()
        .is_some_and(|b| REWRITTEN_FIRST_BYTES.contains(b))
    {
        return q;
    }
    for prefix in BUILTIN_ALIASES {
        if let Some(rest) = q.strip_prefix(prefix) {
            if rest.is_empty() || rest.starts_with('.') {
                return ["builtins", rest].concat();
            }
        }
    }
    // bytes.fromhex and str.maketrans are methods of builtin types.
    if q.starts_with("builtins.bytes.") || q.starts_with("builtins.str.") {
        return q["builtins.".len()..].to_string();
    }
    if let Some(rest) = q.strip_prefix("builtins.__dict__.") {
        return ["builtins.", rest].concat();
    }
    for (from, to) in RENAMED_MODULES {
        if let Some(rest) = q.strip_prefix(from) {
            return [to, rest].concat();
        }
    }
    q
}

fn is_known_target(q: &str) -> bool {
    SHELL_FUNCS.contains(&q)
        || SUBPROCESS.contains(&q)
        || EXEC_FUNCS.contains(&q)
        || DESERIALIZERS.contains(&q)
        || q.starts_with("os.exec")
        || q.starts_with("os.spawn")
        || q.starts_with("os.set")
        || q == "os.fork"
        || q == "os.dup2"
}

/// Whether `b` is the variable of a comprehension clause (`for t in xs`)
/// whose comprehension holds position `at`: the element that uses it.
fn binds_around(b: Bind<'_>, at: usize) -> bool {
    let Bind::Part { of, .. } = b else {
        return false;
    };
    of.parent()
        .filter(|c| c.kind() == K::ForInClause)
        .and_then(|c| c.parent())
        .is_some_and(|comp| comp.byte_range().contains(&at))
}

#[cfg(test)]
mod tests {
    use super::{normalize, BUILTIN_ALIASES, RENAMED_MODULES, REWRITTEN_FIRST_BYTES};

    /// The gate at the top of `normalize` lets through every spelling the
    /// function rewrites (the `builtins.` ones start with `b`).
    #[test]
    fn normalize_gate_covers_every_spelling() {
        let spellings = BUILTIN_ALIASES
            .iter()
            .chain(RENAMED_MODULES.iter().map(|(from, _)| from))
            .chain(&["builtins."]);
        for s in spellings {
            assert!(REWRITTEN_FIRST_BYTES.contains(&s.as_bytes()[0]), "{s}");
        }
    }

    #[test]
    fn qualified_names_are_normalised() {
        assert_eq!(normalize("__builtins__.exec".into()), "builtins.exec");
        assert_eq!(normalize("posixpath.join".into()), "os.path.join");
    }
}
