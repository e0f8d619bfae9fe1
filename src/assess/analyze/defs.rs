//! The script's own functions as the data flow sees them: which calls reach
//! each function (direct calls, methods through `self`, constructors through
//! `__init__`, the callables handed to threads, processes and pools, and
//! calls through command tables, also kept as class attributes), so that a
//! parameter's value is what its callers pass, and a call's value is what the
//! function returns. Functions a stream server calls with each connection
//! are known too (their parameters are network data).

use std::borrow::Cow;

use super::calls::kwarg;
use super::{Analyzer, Bind, Node, F, K};

/// Callers of a function record at most this many call sites, which keeps
/// parameter queries bounded on generated code with huge fan-in.
const MAX_CALLERS: usize = 64;

/// One call of a script-defined function.
#[derive(Clone)]
pub(super) struct Caller<'t> {
    /// Positional arguments, in order (borrowed from the call's own when
    /// they are its positional arguments, which is nearly always).
    pub args: Cow<'t, [Node<'t>]>,
    pub kw: &'t [(&'t str, Node<'t>)],
    pub scope: usize,
    /// Parameters the call does not pass itself (`self` of a method).
    pub offset: usize,
    /// The call (or the library call handing the function over).
    pub node: Node<'t>,
    /// The call sits in a loop of its own function.
    pub in_loop: bool,
}

/// How a library call that runs a callable for the script lays out the
/// callable and its arguments.
#[derive(Clone, Copy)]
enum Runner {
    /// `Thread(target=f, args=(a,))`: the callable is `target=` (or the
    /// second positional), the arguments the tuple `args=`.
    TupleKw,
    /// `ex.submit(f, a, b)`, `asyncio.to_thread(f, a)`: the callable is the
    /// positional argument at this index, its arguments those after it
    /// (`loop.run_in_executor(None, f, a)` puts the executor first).
    Rest(usize),
    /// `pool.apply_async(f, (a, b))`: the arguments are one tuple after the
    /// callable.
    Tuple,
}

/// Callables started with their arguments by a library.
fn runner(q: Option<&str>, method: Option<&str>) -> Option<Runner> {
    match (q, method) {
        (Some("threading.Thread" | "multiprocessing.Process" | "threading.Timer"), _) => {
            Some(Runner::TupleKw)
        }
        (Some("builtins.map" | "asyncio.to_thread"), _) => Some(Runner::Rest(0)),
        (_, Some("run_in_executor")) => Some(Runner::Rest(1)),
        (_, Some("apply_async" | "apply" | "start_new_thread")) => Some(Runner::Tuple),
        (_, Some("map" | "imap" | "imap_unordered" | "starmap" | "submit" | "to_thread")) => {
            Some(Runner::Rest(0))
        }
        _ => None,
    }
}

/// `{"run": self.run, ...}`: a dict literal holding the instance's own
/// methods, a command table an object keeps on itself.
fn method_table(v: Node<'_>) -> bool {
    v.kind() == K::Dictionary
        && v.children().any(|p| {
            p.child(F::Value).is_some_and(|x| {
                x.kind() == K::Attribute
                    && x.child(F::Object)
                        .is_some_and(|o| o.kind() == K::Identifier)
            })
        })
}

/// A tuple or list of two or more bare names: functions kept in order
/// (stages, steps) when the names are the script's own functions.
fn names_only(v: Node<'_>) -> bool {
    v.kind().is_sequence()
        && v.children().count() >= 2
        && v.children().all(|x| x.kind() == K::Identifier)
}

/// Callers whose arguments a helper's parameter is read as, at most: a
/// few of them say what the helper is given.
pub(super) const MAX_PASSED: usize = 8;

impl<'t> Analyzer<'t> {
    /// Records, for each function, the calls that reach it.
    pub(super) fn index_callers(&mut self) {
        // Every call's callee is resolved below, into the memo: sized once
        // rather than grown (nine rehashes for 1,000 lines).
        let calls = self.calls.len();
        self.callees.get_mut().reserve(calls);
        // Most scripts bind no dict holding names: calls through tables are
        // looked for only when one does.
        let tables = self.binds.values().flatten().any(|b| match b.bind {
            Bind::Expr(v, _) if v.kind() == K::Dictionary => {
                method_table(v)
                    || v.children()
                        .any(|p| p.child(F::Value).is_some_and(|x| x.kind() == K::Identifier))
            }
            Bind::Expr(v, _) => names_only(v),
            Bind::Param { param, .. } => param.child(F::Value).is_some_and(names_only),
            _ => false,
        }) || self
            .attr_stores
            .values()
            .flatten()
            .any(|(v, _)| method_table(*v));
        self.has_tables = tables;
        let sites: Vec<(Node<'t>, usize, bool)> = self
            .calls
            .iter()
            .map(|c| (c.node, c.scope, c.loop_node.is_some()))
            .collect();
        for (call, scope, in_loop) in sites {
            self.reset_budget();
            let (pos, kw) = self.args(call);
            let Some(func) = self.call_function(call) else {
                continue;
            };
            let site = Caller {
                args: Cow::Borrowed(pos),
                kw,
                scope,
                offset: 0,
                node: call,
                in_loop,
            };
            for (def_scope, offset) in self.reached_defs(func, scope, tables) {
                self.add_caller(
                    def_scope,
                    Caller {
                        offset,
                        ..site.clone()
                    },
                );
            }
            self.index_runner(site, func);
        }
    }

    /// The functions of the script's own a callee reaches, with how many
    /// parameters a call leaves out: the one it names, those a name picks
    /// between, the methods a name prefix picks, or a table's entries (only
    /// looked for when the script binds a table).
    fn reached_defs(&self, func: Node<'t>, scope: usize, tables: bool) -> Vec<(usize, usize)> {
        if let Some(found) = self.callee_def(func, scope) {
            return vec![found];
        }
        let picked = self.picked_functions(func, scope);
        if !picked.is_empty() {
            return picked.into_iter().map(|d| (d, 0)).collect();
        }
        let by_name = self.prefixed_methods(func, scope);
        if !by_name.is_empty() {
            return by_name.into_iter().map(|d| (d, 1)).collect();
        }
        if tables {
            return self.dispatched(func, scope);
        }
        Vec::new()
    }

    fn add_caller(&mut self, def_scope: usize, caller: Caller<'t>) {
        let list = self.callers.entry(def_scope).or_default();
        if list.len() < MAX_CALLERS {
            list.push(caller);
        }
    }

    /// `Thread(target=f, args=(a,))`, `pool.map(f, xs)`, `ex.submit(f, a)`.
    fn index_runner(&mut self, site: Caller<'t>, func: Node<'t>) {
        let (call, scope, kw) = (site.node, site.scope, site.kw);
        let Cow::Borrowed(pos) = site.args else {
            return;
        };
        let q = self.callee(call, scope);
        let method = (func.kind() == K::Attribute)
            .then(|| func.child(F::Attribute).map(|a| self.text(a)))
            .flatten();
        let Some(shape) = runner(q.as_deref(), method) else {
            return;
        };
        // The items of a tuple (or list) of arguments, each a parameter.
        let unpack = |a: Option<Node<'t>>| {
            a.filter(|a| a.kind().is_sequence())
                .map(|a| Cow::Owned(a.children().collect()))
                .unwrap_or_default()
        };
        let (target, args) = match shape {
            Runner::TupleKw => (
                kwarg(kw, "target").or_else(|| pos.get(1).copied()),
                unpack(kwarg(kw, "args")),
            ),
            // A tuple held by a name stays whole, as before: its paths
            // still reach the first parameter.
            Runner::Tuple if pos.get(1).is_some_and(|a| a.kind().is_sequence()) => {
                (pos.first().copied(), unpack(pos.get(1).copied()))
            }
            Runner::Tuple => (
                pos.first().copied(),
                Cow::Borrowed(pos.get(1..).unwrap_or_default()),
            ),
            Runner::Rest(at) => (
                pos.get(at).copied(),
                Cow::Borrowed(pos.get(at + 1..).unwrap_or_default()),
            ),
        };
        let Some(target) = target else { return };
        if let Some((def_scope, offset)) = self.callee_def(target, scope) {
            let caller = Caller {
                args,
                kw: &[],
                offset,
                ..site
            };
            self.add_caller(def_scope, caller);
        }
    }

    /// Is the function whose body opens `func` handed to a stream server
    /// (`asyncio.start_server(handle, ..)`), which calls it with the reader
    /// and writer of each connection it accepts? Its parameters are then
    /// network data, as a web route's are request data.
    pub(super) fn stream_callback(&self, func: usize) -> bool {
        const SERVERS: &[&str] = &["asyncio.start_server", "asyncio.start_unix_server"];
        self.stream_callbacks
            .get_or_init(|| {
                // Asked in the middle of a flow query: resolving the servers
                // must not spend that query's steps.
                let saved = self.budget.get();
                let mut found = Vec::new();
                for c in &self.calls {
                    // By what the callee resolves to (kept for every call),
                    // not by how it is written: an alias of the server
                    // function is the server function.
                    if !self.site_q(c).is_some_and(|q| SERVERS.contains(&q)) {
                        continue;
                    }
                    let (pos, kw) = self.args(c.node);
                    let cb = pos
                        .first()
                        .copied()
                        .or_else(|| kwarg(kw, "client_connected_cb"));
                    if let Some((s, _)) = cb.and_then(|cb| self.callee_def(cb, c.scope)) {
                        found.push(s);
                    }
                }
                self.budget.set(saved);
                found
            })
            .contains(&func)
    }

    /// The functions a call through a dispatch table may reach:
    /// `TABLE[k](..)`, `TABLE.get(k)(..)`, or a name bound to either, where
    /// `TABLE` is a dict literal of the script's functions (a bot's or an
    /// agent's command table: the argument reaches each handler), with how
    /// many parameters a call leaves out (1 for `self.run`, a bound method).
    pub(super) fn dispatched(&self, func: Node<'t>, scope: usize) -> Vec<(usize, usize)> {
        if let Some(stages) = self.looped_functions(func, scope) {
            return stages.into_iter().map(|s| (s, 0)).collect();
        }
        let Some((pick, s)) = self.held_callee(func, scope) else {
            return Vec::new();
        };
        let Some((dict, s)) = self
            .looked_up_in(pick)
            .and_then(|t| self.dict_literal(t, s))
        else {
            return Vec::new();
        };
        dict.children()
            .filter(|p| p.kind() == K::Pair)
            .filter_map(|p| p.child(F::Value))
            .filter_map(|v| match (self.callee_def(v, s), v.kind()) {
                (Some((def_scope, 0)), _) => Some((def_scope, 0)),
                (Some((def_scope, 1)), K::Attribute) => Some((def_scope, 1)),
                // `{"audio": lambda out: [...]}`: a lambda kept in the table.
                (None, K::Lambda) => Some((self.scope_of(v.child(F::Body)?), 0)),
                _ => None,
            })
            .collect()
    }

    /// What a called name holds (`handler = TABLE[k]`: `TABLE[k]`), or the
    /// callee itself when it is no name; `None` for a name bound otherwise
    /// (a def, a parameter).
    pub(super) fn held_callee(&self, func: Node<'t>, scope: usize) -> Option<(Node<'t>, usize)> {
        if func.kind() != K::Identifier {
            return Some((func, scope));
        }
        match *self
            .lookup(self.text(func), scope, func.start_byte())?
            .last()?
        {
            Bind::Expr(v, vs) => Some((v, vs)),
            _ => None,
        }
    }

    /// `getattr(self, "do_" + task["type"])(arg)`, or a name bound to it: a
    /// command dispatched by name to the methods of the script's own class
    /// (a beacon's `do_shell`, `do_get`...): the argument reaches each
    /// method whose name starts with the literal prefix.
    pub(super) fn prefixed_methods(&self, func: Node<'t>, scope: usize) -> Vec<usize> {
        let Some((pick, s)) = self.held_callee(func, scope) else {
            return Vec::new();
        };
        if pick.kind() != K::Call {
            return Vec::new();
        }
        let is_getattr = pick
            .child(F::Function)
            .and_then(|f| self.resolve(f, s, 0))
            .is_some_and(|q| q == "builtins.getattr");
        let (&[obj, name, ..], true) = (self.args(pick).0, is_getattr) else {
            return Vec::new();
        };
        let Some(prefix) = self.name_prefix(name, s).filter(|p| !p.is_empty()) else {
            return Vec::new();
        };
        let class = match obj.kind() {
            K::Identifier if matches!(self.text(obj), "self" | "cls") => {
                self.enclosing_class_scope(s)
            }
            K::Identifier => self.instance_class(obj, s),
            // `getattr(self.ops, "op_" + verb)` with `self.ops = Ops()`.
            K::Attribute => self.stored_instance_class(obj),
            _ => None,
        };
        let Some(class) = class else {
            return Vec::new();
        };
        let mut found: Vec<usize> = self
            .binds
            .iter()
            .filter(|(n, _)| n.len() > prefix.len() && n.starts_with(prefix.as_str()))
            .filter_map(|(_, list)| {
                super::resolve::scope_binds(list, class)?
                    .iter()
                    .find_map(|b| match b.bind {
                        Bind::Def(_, inner) => Some(inner),
                        _ => None,
                    })
            })
            .collect();
        // The map's order is random: callers are kept in the methods' order.
        found.sort_unstable();
        found.truncate(MAX_PASSED);
        found
    }

    /// The literal start of a name built at run time: `"do_" + verb`,
    /// `f"do_{verb}"`.
    fn name_prefix(&self, name: Node<'t>, scope: usize) -> Option<String> {
        match name.kind() {
            _ if super::fold::is_plus(name) => self.fold(name.child(F::Left)?, scope, 0),
            K::String if name.children().any(|k| k.kind() == K::Interpolation) => {
                Some(self.template_pieces(name)?.first()?.0.to_string())
            }
            _ => None,
        }
    }

    /// `for stage in (fetch, unpack, run): value = stage(value)`: a loop
    /// variable taking the script's own functions from a tuple or list (a
    /// parameter's default too) calls each of them.
    fn looped_functions(&self, func: Node<'t>, scope: usize) -> Option<Vec<usize>> {
        let (list, s) = self.looped_sequence(func, scope)?;
        if !names_only(list) {
            return None;
        }
        let stages: Vec<usize> = list
            .children()
            .filter_map(|f| match self.callee_def(f, s) {
                Some((def_scope, 0)) => Some(def_scope),
                _ => None,
            })
            .collect();
        (!stages.is_empty()).then_some(stages)
    }

    /// The tuple or list literal a loop variable takes its items from
    /// (bound to a name, or a parameter's default: `def main(stages=(fetch,
    /// run))`, `stages=STAGES`), with the scope its items are read in.
    pub(super) fn looped_sequence(&self, var: Node<'t>, scope: usize) -> Option<(Node<'t>, usize)> {
        if var.kind() != K::Identifier {
            return None;
        }
        let [Bind::Part {
            of,
            scope: s,
            how: super::Part::Each(None),
        }] = self.lookup(self.text(var), scope, var.start_byte())?
        else {
            return None;
        };
        let sequence = |v: Node<'t>| v.kind().is_sequence();
        if let Some(found) = self.bound_value(of, s, sequence) {
            return Some(found);
        }
        match self.lookup(self.text(of), s, of.start_byte())? {
            [Bind::Param { param, .. }] => self.bound_value(param.child(F::Value)?, s, sequence),
            _ => None,
        }
    }

    /// The dict literal a name (or the expression itself) holds, with the
    /// scope its entries are read in. `self.TABLE` and `cls.TABLE` are the
    /// class body's `TABLE` (a command table kept as a class attribute).
    pub(super) fn dict_literal(&self, n: Node<'t>, scope: usize) -> Option<(Node<'t>, usize)> {
        let (name, scope, at) = match n.kind() {
            K::Dictionary => return Some((n, scope)),
            K::Identifier => (self.text(n), scope, n.start_byte()),
            K::Attribute => {
                let obj = n.child(F::Object).filter(|o| o.kind() == K::Identifier)?;
                if !matches!(self.text(obj), "self" | "cls") {
                    return None;
                }
                let class = self.enclosing_class_scope(scope)?;
                (self.text(n.child(F::Attribute)?), class, usize::MAX)
            }
            _ => return None,
        };
        let found = self.lookup(name, scope, at).and_then(|b| match *b.last()? {
            Bind::Expr(v, s) if v.kind() == K::Dictionary => Some((v, s)),
            _ => None,
        });
        // `self.handlers = {...}` in `__init__`: the table the instance
        // keeps, when the class body keeps none of that name.
        found.or_else(|| {
            (n.kind() == K::Attribute)
                .then(|| self.attr_stores.get(name))??
                .iter()
                // `self.ops = {}` then filled by a later store: the table
                // that holds something.
                .find(|(v, _)| v.kind() == K::Dictionary && v.children().next().is_some())
                .copied()
        })
    }

    /// The script's own functions a name picked by a test holds (`ask =
    /// ask_mac if mac else ask_linux`, `pick = fast or slow`): a call of
    /// the name calls either.
    pub(super) fn picked_functions(&self, func: Node<'t>, scope: usize) -> Vec<usize> {
        if func.kind() != K::Identifier {
            return Vec::new();
        }
        let Some(Bind::Expr(v, vs)) = self
            .lookup(self.text(func), scope, func.start_byte())
            .and_then(|b| b.last().copied())
        else {
            return Vec::new();
        };
        if !matches!(v.kind(), K::ConditionalExpression | K::BooleanOperator) {
            return Vec::new();
        }
        v.children()
            .filter(|c| c.kind() == K::Identifier)
            .filter_map(|branch| match self.callee_def(branch, vs) {
                Some((def_scope, 0)) => Some(def_scope),
                _ => None,
            })
            .collect()
    }

    /// The function a callee expression names: the scope its body opens and
    /// how many parameters the call leaves out (`self`).
    pub(super) fn callee_def(&self, func: Node<'t>, scope: usize) -> Option<(usize, usize)> {
        match func.kind() {
            K::Identifier => {
                let binds = self.lookup(self.text(func), scope, func.start_byte())?;
                let (def, inner) = match *binds.last()? {
                    Bind::Def(def, inner) => (def, inner),
                    // `def install(blob, run=_launch): run(path)`: a
                    // parameter whose default is a function of the
                    // script's own calls it when the caller passes none.
                    Bind::Param { param, func: f, .. } => {
                        let default = param
                            .child(F::Value)
                            .filter(|d| d.kind() == K::Identifier)?;
                        let outer = self.scopes.get(f)?.parent?;
                        return self.callee_def(default, outer);
                    }
                    // `_m = lambda n: ...`: a lambda bound to a name.
                    Bind::Expr(v, _) if v.kind() == K::Lambda => {
                        return Some((self.scope_of(v.child(F::Body)?), 0));
                    }
                    // `fn = self.do_shell`: a method held by a name.
                    Bind::Expr(v, s) if v.kind() == K::Attribute => return self.callee_def(v, s),
                    // `run = _launch`: a function held by another name (one
                    // hop, so that names bound to each other end).
                    Bind::Expr(v, s) if v.kind() == K::Identifier => {
                        match *self.lookup(self.text(v), s, v.start_byte())?.last()? {
                            Bind::Def(def, inner) if def.kind() != K::ClassDefinition => {
                                (def, inner)
                            }
                            _ => return None,
                        }
                    }
                    _ => return None,
                };
                if def.kind() == K::ClassDefinition {
                    return self.method_of(inner, "__init__").map(|s| (s, 1));
                }
                Some((inner, 0))
            }
            K::Attribute => {
                let obj = func.child(F::Object)?;
                let name = self.text(func.child(F::Attribute)?);
                if obj.kind() == K::Attribute {
                    // `self.engine.evaluate(x)` with `self.engine = Engine()`.
                    let class = self.stored_instance_class(obj)?;
                    return self.method_of(class, name).map(|s| (s, 1));
                }
                if obj.kind() != K::Identifier {
                    return None;
                }
                let class = if matches!(self.text(obj), "self" | "cls") {
                    self.enclosing_class_scope(scope)?
                } else {
                    self.instance_class(obj, scope)?
                };
                self.method_of(class, name).map(|s| (s, 1))
            }
            _ => None,
        }
    }

    /// The class body of the script's own class a name holds an instance
    /// of (`client = Client(url)`), so `client.send(x)` reaches its method.
    pub(super) fn instance_class(&self, obj: Node<'t>, scope: usize) -> Option<usize> {
        let binds = self.lookup(self.text(obj), scope, obj.start_byte())?;
        let (v, s) = match binds[0] {
            Bind::Expr(v, s) => (v, s),
            // An instance handed in: the class its annotation names
            // (`def reclaim(t: Target)`), or what a caller passes, made
            // there or one assignment before (`t = Target(); reclaim(t)`).
            Bind::Param { param, func, index } => {
                if let Some(class) = self.annotated_class(param, scope) {
                    return Some(class);
                }
                self.callers.get(&func)?.iter().find_map(|c| {
                    let a = *index.checked_sub(c.offset).and_then(|i| c.args.get(i))?;
                    match a.kind() {
                        K::Call => Some((a, c.scope)),
                        K::Identifier => {
                            match self.lookup(self.text(a), c.scope, a.start_byte())?[0] {
                                Bind::Expr(v, s) if v.kind() == K::Call => Some((v, s)),
                                _ => None,
                            }
                        }
                        _ => None,
                    }
                })?
            }
            _ => return None,
        };
        self.constructed_class(v, s)
    }

    /// The class body of the script's own class a parameter's annotation
    /// names (`t: Target`).
    fn annotated_class(&self, param: Node<'t>, scope: usize) -> Option<usize> {
        self.class_named(param.child(F::Type)?, scope)
    }

    /// The class body of the script's own class whose instance `v` makes
    /// (`Client(url)`).
    fn constructed_class(&self, v: Node<'t>, s: usize) -> Option<usize> {
        self.class_named(v.child(F::Function)?, s)
    }

    /// The class body of the script's own class the identifier `name`
    /// stands for in `scope`.
    fn class_named(&self, name: Node<'t>, scope: usize) -> Option<usize> {
        if name.kind() != K::Identifier {
            return None;
        }
        match self.lookup(self.text(name), scope, name.start_byte())?[0] {
            Bind::Def(def, inner) if def.kind() == K::ClassDefinition => Some(inner),
            _ => None,
        }
    }

    /// The class of the instance an attribute of `self` holds, from what
    /// the methods store there (`self.engine = Engine()`).
    fn stored_instance_class(&self, attr: Node<'t>) -> Option<usize> {
        let stores = self.attr_stores.get(self.self_attribute(attr)?)?;
        stores
            .iter()
            .filter(|(v, _)| v.kind() == K::Call)
            .find_map(|&(v, s)| self.constructed_class(v, s))
    }

    /// The scope of method `name` defined in the class body `class`.
    fn method_of(&self, class: usize, name: &str) -> Option<usize> {
        let list = super::resolve::scope_binds(self.binds.get(name)?, class)?;
        list.iter().find_map(|b| match b.bind {
            Bind::Def(_, inner) => Some(inner),
            _ => None,
        })
    }

    /// The class body a method's scope sits in.
    pub(super) fn enclosing_class_scope(&self, scope: usize) -> Option<usize> {
        let mut s = Some(scope);
        while let Some(id) = s {
            let sc = self.scopes.get(id)?;
            if sc.is_class {
                return Some(id);
            }
            s = sc.parent;
        }
        None
    }

    /// `attr` of `self.attr`.
    pub(super) fn self_attribute(&self, n: Node<'t>) -> Option<&'t str> {
        let obj = n.child(F::Object)?;
        (obj.kind() == K::Identifier && self.text(obj) == "self")
            .then(|| n.child(F::Attribute).map(|a| self.text(a)))
            .flatten()
    }

    /// When `n` is a name bound to one parameter (`def quiet(cmd):
    /// run(cmd)`), what the first [`MAX_PASSED`] callers pass for it.
    pub(super) fn passed_to_name(
        &self,
        n: Node<'t>,
        scope: usize,
    ) -> Option<Vec<(Node<'t>, usize)>> {
        if n.kind() != K::Identifier {
            return None;
        }
        let [Bind::Param { func, index, .. }] = self.lookup(self.text(n), scope, n.start_byte())?
        else {
            return None;
        };
        let mut passed = self.passed(func, index, self.text(n));
        passed.truncate(MAX_PASSED);
        Some(passed)
    }

    /// What callers pass for parameter `index` (named `name`) of the
    /// function whose body opens `def_scope`, with the callers' scopes.
    pub(super) fn passed(
        &self,
        def_scope: usize,
        index: usize,
        name: &str,
    ) -> Vec<(Node<'t>, usize)> {
        let Some(callers) = self.callers.get(&def_scope) else {
            return Vec::new();
        };
        callers
            .iter()
            .filter_map(|c| {
                let by_name = kwarg(c.kw, name);
                let by_pos = index
                    .checked_sub(c.offset)
                    .and_then(|i| c.args.get(i).copied());
                by_name.or(by_pos).map(|a| (a, c.scope))
            })
            .collect()
    }
}
