//! The one walk over the tree: scopes, bindings (imports, assignments,
//! parameters, loop targets) and the calls and strings the checks examine
//! afterwards, with the loop each call sits in.

use super::{gadget, Analyzer, Bind, CallSite, Node, Part, Scope, F, K};

/// Methods that put their arguments into the object they are called on.
const MUTATORS: &[&str] = &[
    "append",
    "extend",
    "insert",
    "add",
    "update",
    "appendleft",
    "setdefault",
    "write",
    "writelines",
    "writestr",
    "attach",
    "add_attachment",
    "set_content",
    "set_payload",
];

/// Decorators that make a function a web framework's route handler.
const ROUTE_DECORATORS: &[&str] = &[
    ".route(",
    ".get(",
    ".post(",
    ".put(",
    ".delete(",
    ".websocket(",
];

/// Where the value of an assignment target comes from.
#[derive(Clone, Copy)]
enum Src<'t> {
    /// `target = value` (`None`: nothing known).
    Value(Option<Node<'t>>),
    /// `for target in iterable`.
    Each(Node<'t>),
    /// `with ctx as target`.
    Context(Node<'t>),
    /// Part of a value, for the names of a nested target.
    Part(Node<'t>, Part),
}

impl<'t> Analyzer<'t> {
    pub(super) fn walk(&mut self, root: Node<'t>, max_depth: usize) {
        let mut cursor = root.walk();
        let mut st = WalkState {
            frames: Vec::new(),
            scope_stack: vec![0],
            loop_stack: vec![None],
            reported_depth: false,
        };
        loop {
            let node = cursor.node();
            self.enter(node, &mut st);
            let depth = st.frames.len();
            let descend = if depth >= max_depth && node.child_count() > 0 {
                if !st.reported_depth {
                    st.reported_depth = true;
                    self.add(
                        "MB002",
                        node,
                        format!("nesting deeper than {max_depth} levels was not examined"),
                    );
                }
                false
            } else {
                true
            };
            if descend && cursor.goto_first_child() {
                continue;
            }
            // Leave nodes until one has a next sibling.
            loop {
                self.leave(&mut st);
                if cursor.goto_next_sibling() {
                    break;
                }
                if !cursor.goto_parent() {
                    return;
                }
            }
        }
    }

    /// Visits a node and opens the scope or loop it starts.
    fn enter(&mut self, node: Node<'t>, st: &mut WalkState<'t>) {
        let scope = st.scope_stack.last().copied().unwrap_or(0);
        let mut frame = Frame {
            pushed_scope: false,
            loop_node: None,
        };
        self.visit(node, scope, st.loop_stack.last().copied().flatten());
        match node.kind() {
            k if k.opens_scope() => {
                let id = self.scopes.len();
                self.scopes.push(Scope {
                    parent: Some(scope),
                    is_class: node.kind() == K::ClassDefinition,
                    node: Some(node),
                    route: std::mem::take(&mut self.route_decorator),
                });
                if node.kind() == K::Lambda {
                    self.returns
                        .entry(id)
                        .or_default()
                        .extend(node.child(F::Body));
                }
                self.bind_params(node, id);
                if self.is_reduce_method(node, scope) {
                    self.reduce_defs.push((node, id));
                }
                st.scope_stack.push(id);
                st.loop_stack.push(None);
                frame.pushed_scope = true;
            }
            K::WhileStatement | K::ForStatement => {
                let infinite = node.kind() == K::WhileStatement
                    && node
                        .child(F::Condition)
                        .is_some_and(|c| self.is_truthy_const(c));
                // Remember what to restore on leaving.
                frame.loop_node = Some((node, infinite));
                // A loop that runs until a clock passes a deadline runs for
                // as long as it was told, however fast: a flood's shape.
                if infinite || self.runs_until_deadline(node, scope) {
                    self.endless_loops.push((node, scope));
                }
                if let Some(top) = st.loop_stack.last_mut() {
                    *top = Some((node, infinite || top.is_some_and(|t| t.1)));
                }
            }
            // What the respellings need (see `indirect`).
            K::GlobalStatement => self.declare_global(node, scope),
            K::List | K::Tuple => self.note_named_list(node),
            _ => {}
        }
        st.frames.push(frame);
    }

    /// `while time.time() < end:`: a while loop whose condition compares a
    /// clock reading.
    fn runs_until_deadline(&self, l: Node<'t>, scope: usize) -> bool {
        let Some(cond) = l
            .child(F::Condition)
            .filter(|_| l.kind() == K::WhileStatement)
        else {
            return false;
        };
        let mut stack = vec![cond];
        while let Some(n) = stack.pop() {
            if n.kind() == K::Call {
                let func = n.child(F::Function);
                let f = func.map(|f| self.text(f)).unwrap_or("");
                // `_call(time.monotonic)`: a pass-through helper (not yet
                // indexed while the walk runs) handed the clock.
                let handed = || {
                    let arg = self.arg_table.get(n).0.first().copied();
                    arg.is_some_and(|a| a.kind() == K::Attribute && is_clock(self.text(a)))
                };
                if is_clock(f) || handed() {
                    return true;
                }
                // The clock under another name (`now = time.time`,
                // `getattr(time, "time")`): what the callee resolves to,
                // from the bindings the walk has met so far.
                let saved = self.budget.get();
                self.reset_budget();
                let q = func.and_then(|f| self.resolve(f, scope, 0));
                self.budget.set(saved);
                if q.is_some_and(|q| is_clock(&q)) {
                    return true;
                }
            }
            stack.extend(n.children());
        }
        false
    }

    /// Closes the scope or loop the innermost open node started.
    fn leave(&self, st: &mut WalkState<'t>) {
        let Some(f) = st.frames.pop() else {
            return;
        };
        if f.pushed_scope {
            st.scope_stack.pop();
            st.loop_stack.pop();
        } else if f.loop_node.is_some() {
            // Restore the enclosing loop of this scope level.
            let outer = self.enclosing_loop(&st.frames);
            if let Some(top) = st.loop_stack.last_mut() {
                *top = outer;
            }
        }
    }

    /// A `def __reduce__` in a class body, or `__reduce__ = lambda ...` there.
    fn is_reduce_method(&self, def: Node<'t>, scope: usize) -> bool {
        if !self.scopes.get(scope).is_some_and(|s| s.is_class) {
            return false;
        }
        let name = match def.kind() {
            K::FunctionDefinition => def.child(F::Name),
            K::Lambda => def
                .parent()
                .filter(|p| p.kind() == K::Assignment)
                .and_then(|p| p.child(F::Left)),
            _ => None,
        };
        name.is_some_and(|n| gadget::REDUCE_METHODS.contains(&self.text(n)))
    }

    /// Innermost loop among the open frames since the last scope frame.
    fn enclosing_loop(&self, frames: &[Frame<'t>]) -> Option<(Node<'t>, bool)> {
        let mut innermost: Option<(Node<'t>, bool)> = None;
        let mut any_infinite = false;
        for f in frames.iter().rev() {
            if f.pushed_scope {
                break;
            }
            if let Some((n, inf)) = f.loop_node {
                if innermost.is_none() {
                    innermost = Some((n, inf));
                }
                any_infinite |= inf;
            }
        }
        innermost.map(|(n, _)| (n, any_infinite))
    }

    fn bind_params(&mut self, def: Node<'t>, scope: usize) {
        let parent = self.scopes[scope].parent.unwrap_or(0);
        if let Some(name) = def.child(F::Name) {
            let t = self.text(name);
            self.bind(parent, t, Bind::Def(def, scope));
        }
        let Some(params) = def.child(F::Parameters) else {
            return;
        };
        for (index, p) in params.children().enumerate() {
            let ident = match p.kind() {
                K::Identifier => Some(p),
                K::DefaultParameter | K::TypedDefaultParameter => p.child(F::Name),
                _ => p.children().find(|k| k.kind() == K::Identifier),
            };
            if let Some(id) = ident {
                let t = self.text(id);
                let b = Bind::Param {
                    param: p,
                    func: scope,
                    index,
                };
                self.bind(scope, t, b);
            }
        }
    }

    fn visit(&mut self, node: Node<'t>, scope: usize, loop_node: Option<(Node<'t>, bool)>) {
        self.last_pos = node.start_byte();
        match node.kind() {
            K::ImportStatement => self.visit_import(node, scope),
            K::ImportFromStatement => self.visit_import_from(node, scope),
            K::Assignment => {
                let (Some(l), r) = (node.child(F::Left), node.child(F::Right)) else {
                    return;
                };
                self.bind_target(l, Src::Value(r), scope);
            }
            K::Decorator => {
                let t = self.text(node);
                self.route_decorator |= ROUTE_DECORATORS.iter().any(|r| t.contains(r));
            }
            K::ReturnStatement | K::Yield => {
                if let Some(v) = node.nth_child(0) {
                    self.returns.entry(scope).or_default().push(v);
                }
            }
            K::AugmentedAssignment => {
                if let (Some(l), Some(r)) = (node.child(F::Left), node.child(F::Right)) {
                    self.store(l, r, scope);
                }
            }
            K::NamedExpression => {
                if let (Some(n), Some(v)) = (node.child(F::Name), node.child(F::Value)) {
                    let t = self.text(n);
                    self.bind(scope, t, Bind::Expr(v, scope));
                }
            }
            K::ForStatement | K::ForInClause => {
                if let (Some(l), Some(it)) = (node.child(F::Left), node.child(F::Right)) {
                    self.bind_target(l, Src::Each(it), scope);
                }
            }
            K::AsPattern => {
                if let (Some(ctx), Some(al)) = (node.nth_child(0), node.child(F::Alias)) {
                    self.bind_target(al, Src::Context(ctx), scope);
                }
            }
            K::Call => {
                self.note_mutator(node, scope);
                let method = self.method_name(node);
                self.calls.push(CallSite {
                    node,
                    scope,
                    loop_node,
                    index: self.calls.len(),
                    method,
                })
            }
            // A string standing alone as a statement (a docstring) does nothing,
            // so the paths and hosts it mentions are documentation, not behaviour.
            K::String if !is_bare_statement(node) => self.strings.push(node),
            K::Attribute => {
                if let Some(attr) = node.child(F::Attribute) {
                    self.note_name(self.text(attr), node);
                }
            }
            K::Identifier => self.note_name(self.text(node), node),
            _ => {}
        }
    }

    /// `import a.b` binds `a`; `import a.b as c` binds `c` to `a.b`.
    fn visit_import(&mut self, node: Node<'t>, scope: usize) {
        for k in node.children_in(F::Name) {
            if k.kind() == K::AliasedImport {
                let (Some(n), Some(al)) = (k.child(F::Name), k.child(F::Alias)) else {
                    continue;
                };
                let module = self.text(n);
                self.note_import(module, n);
                let alias = self.text(al);
                self.bind(scope, alias, Bind::Module(module, None));
            } else {
                let module = self.text(k);
                self.note_import(module, k);
                let head = module.split('.').next().unwrap_or(module);
                self.bind(scope, head, Bind::Module(head, None));
            }
        }
    }

    /// `from m import a as b` binds `b` to `m.a`; `from m import *` is
    /// remembered for names nothing else binds.
    fn visit_import_from(&mut self, node: Node<'t>, scope: usize) {
        let Some(m) = node.child(F::ModuleName) else {
            return;
        };
        if m.kind() == K::RelativeImport {
            return;
        }
        let module = self.text(m);
        self.note_import(module, m);
        if node.children().any(|k| k.kind() == K::WildcardImport) {
            self.star_imports.push((scope, module));
        }
        for k in node.children_in(F::Name) {
            let (name, alias) = if k.kind() == K::AliasedImport {
                (k.child(F::Name), k.child(F::Alias))
            } else {
                (Some(k), Some(k))
            };
            let (Some(n), Some(al)) = (name, alias) else {
                continue;
            };
            let (n, al) = (self.text(n), self.text(al));
            self.bind(scope, al, Bind::Module(module, Some(n)));
        }
    }

    fn bind_target(&mut self, target: Node<'t>, src: Src<'t>, scope: usize) {
        match target.kind() {
            K::Identifier => {
                let t = self.text(target);
                let b = match src {
                    Src::Value(Some(v)) => Bind::Expr(v, scope),
                    Src::Value(None) => Bind::Opaque,
                    Src::Each(of) => Bind::Part {
                        of,
                        scope,
                        how: Part::Each(None),
                    },
                    Src::Context(of) => Bind::Part {
                        of,
                        scope,
                        how: Part::Context,
                    },
                    Src::Part(of, how) => Bind::Part { of, scope, how },
                };
                self.bind(scope, t, b);
            }
            // `*rest` in an unpacking: the items it takes are parts of
            // the same value.
            K::AsPatternTarget | K::ListSplat => {
                for t in target.children() {
                    self.bind_target(t, src, scope);
                }
            }
            K::Tuple | K::List | K::ExpressionList => {
                let count = target.child_count();
                // A literal sequence's items, taken one a target when there
                // are as many (collected once, not again for each target).
                let items: Option<Vec<Node<'t>>> = match src {
                    Src::Value(Some(v)) if v.kind().is_sequence() => {
                        Some(v.children().collect::<Vec<_>>()).filter(|vs| vs.len() == count)
                    }
                    _ => None,
                };
                for (i, t) in target.children().enumerate() {
                    let part = match src {
                        Src::Value(Some(v)) if v.kind().is_sequence() => {
                            Src::Value(items.as_ref().and_then(|vs| vs.get(i).copied()))
                        }
                        Src::Value(Some(v)) => Src::Part(v, Part::Unpacked(i)),
                        Src::Value(None) => Src::Value(None),
                        Src::Each(of) => Src::Part(of, Part::Each(Some(i))),
                        Src::Context(of) => Src::Part(of, Part::Unpacked(i)),
                        Src::Part(of, how) => Src::Part(of, how),
                    };
                    self.bind_target(t, part, scope);
                }
            }
            K::Subscript | K::Attribute => {
                if let Src::Value(Some(v)) = src {
                    self.store(target, v, scope);
                    self.assigned.push((target, v, scope));
                }
            }
            _ => {}
        }
    }

    /// A value put into a container or attribute: `x[k] = v`, `x += v`,
    /// `obj.attr = v`.
    fn store(&mut self, target: Node<'t>, value: Node<'t>, scope: usize) {
        match target.kind() {
            K::Identifier => {
                let name = self.text(target);
                self.mutations.entry(name).or_default().push((scope, value));
            }
            K::Subscript => {
                if let Some(base) = target.child(F::Value) {
                    self.store(base, value, scope);
                }
            }
            K::Attribute => {
                if let Some(attr) = target.child(F::Attribute) {
                    let name = self.text(attr);
                    self.attr_stores
                        .entry(name)
                        .or_default()
                        .push((value, scope));
                }
            }
            _ => {}
        }
    }

    /// `x.append(v)`, `x.update(v)`, `msg.attach(v)`...: the arguments are
    /// stored into `x`.
    fn note_mutator(&mut self, call: Node<'t>, scope: usize) {
        let Some(func) = call.child(F::Function).filter(|f| f.kind() == K::Attribute) else {
            return;
        };
        let (Some(obj), Some(m)) = (func.child(F::Object), func.child(F::Attribute)) else {
            return;
        };
        if let (true, Some(args)) = (MUTATORS.contains(&self.text(m)), call.child(F::Arguments)) {
            self.store(obj, args, scope);
        }
    }

    fn note_import(&mut self, module: &str, n: Node<'t>) {
        let head = module.split('.').next().unwrap_or(module);
        match head {
            "subprocess" => self.add("MB404", n, "import subprocess"),
            "pickle" | "cPickle" | "_pickle" | "dill" | "shelve" => {
                self.add("MB403", n, format!("import {module}"))
            }
            _ => {}
        }
        if matches!(
            head,
            "requests"
                | "httpx"
                | "aiohttp"
                | "urllib3"
                | "urllib"
                | "http"
                | "socket"
                | "smtplib"
                | "ftplib"
                | "websocket"
                | "websockets"
                | "paramiko"
                | "boto3"
        ) {
            self.facts.net_import = true;
        }
    }

    fn note_name(&mut self, name: &str, n: Node<'t>) {
        match name {
            "__subclasses__" | "__globals__" | "f_globals" | "f_back" | "_getframe"
            | "currentframe" | "__builtins__" => {
                // A bare `__builtins__` name is only suspicious when indexed or
                // walked; as an attribute, or via the frame helpers, it always is.
                let is_bare_builtins = name == "__builtins__" && n.kind() == K::Identifier;
                if !is_bare_builtins || n.parent().is_some_and(|p| p.kind() == K::Subscript) {
                    self.add("MB415", n, format!("uses {name}"));
                }
            }
            "PROT_EXEC"
            | "PAGE_EXECUTE_READWRITE"
            | "VirtualAlloc"
            | "VirtualProtect"
            | "mprotect" => self.facts.exec_memory = true,
            _ => {}
        }
    }
}

/// What the walk keeps while it descends.
struct WalkState<'t> {
    frames: Vec<Frame<'t>>,
    scope_stack: Vec<usize>,
    /// Innermost loop per scope level; a def inside a loop starts afresh.
    loop_stack: Vec<Option<(Node<'t>, bool)>>,
    reported_depth: bool,
}

struct Frame<'t> {
    pushed_scope: bool,
    loop_node: Option<(Node<'t>, bool)>,
}

/// Is this string (or the implicit concatenation it is part of) a statement
/// of its own, like a docstring?
/// Whether a callee, as written or resolved, reads a clock (by its last
/// dotted part).
fn is_clock(f: &str) -> bool {
    let last = f.rsplit('.').next().unwrap_or(f);
    matches!(
        last,
        "time" | "monotonic" | "perf_counter" | "now" | "utcnow"
    )
}

fn is_bare_statement(string: Node) -> bool {
    let mut up = string.parent();
    if up.is_some_and(|p| p.kind() == K::ConcatenatedString) {
        up = up.and_then(|p| p.parent());
    }
    up.is_some_and(|p| p.kind() == K::ExpressionStatement)
}
