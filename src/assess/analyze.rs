//! Parsing and the syntax-tree walk: name resolution, constant folding and
//! the checks that map calls, strings and paths onto rule ids.
//!
//! The walk is iterative (tree-sitter cursor) and the helper evaluators are
//! bounded both in depth and in total steps, so hostile input can neither
//! overflow the stack nor make the assessor exponential.

use std::cell::Cell;
use std::collections::HashMap;

use super::syntax::{self, Node};

mod exfil;
mod gadget;

pub(super) struct RawFinding {
    pub rule: &'static str,
    pub row: usize,
    pub col: usize,
    pub detail: String,
}

pub(super) struct Output {
    pub findings: Vec<RawFinding>,
    pub syntax_ok: bool,
}

/// Recursion limit of the expression evaluators (resolve, fold, ...).
const EVAL_DEPTH: usize = 48;
/// Step budget for one evaluator query, against alias chains that fan out.
const EVAL_BUDGET: u32 = 4_000;
/// Longest string the constant folder will build.
const MAX_FOLD_LEN: usize = 1 << 20;
/// Literals at least this long, in a base64/hex alphabet, count as blobs.
const BLOB_LEN: usize = 200;

pub(super) fn analyze(source: &[u8], max_depth: usize) -> Result<Output, String> {
    let mut findings = Vec::new();
    if source.iter().all(|b| b.is_ascii_whitespace()) {
        return Ok(Output {
            findings,
            syntax_ok: true,
        });
    }
    if let Some(pos) = source.iter().position(|&b| b == 0) {
        let row = source[..pos].iter().filter(|&&b| b == b'\n').count();
        findings.push(RawFinding {
            rule: "MB004",
            row,
            col: 0,
            detail: format!("NUL byte at offset {pos}"),
        });
        return Ok(Output {
            findings,
            syntax_ok: false,
        });
    }
    let text: String = match std::str::from_utf8(source) {
        Ok(s) => s.to_string(),
        Err(e) => {
            let row = source[..e.valid_up_to()]
                .iter()
                .filter(|&&b| b == b'\n')
                .count();
            findings.push(RawFinding {
                rule: "MB003",
                row,
                col: 0,
                detail: format!("invalid UTF-8 at offset {}", e.valid_up_to()),
            });
            String::from_utf8_lossy(source).into_owned()
        }
    };
    let (mut found, syntax_ok) = analyze_text(&text, max_depth, 0)?;
    findings.append(&mut found);
    Ok(Output {
        findings,
        syntax_ok,
    })
}

/// How many levels of `exec("...literal code...")` are assessed in turn.
const MAX_NESTED_CODE: usize = 3;

fn analyze_text(
    text: &str,
    max_depth: usize,
    nesting: usize,
) -> Result<(Vec<RawFinding>, bool), String> {
    let tree = syntax::parse(text, max_depth);
    let syntax_ok = tree.errors.is_empty();
    let mut a = Analyzer::new(text, max_depth, nesting);
    if let Some((at, msg)) = tree.errors.first() {
        // "Unexpected EOF" points past the final newline, on a line the file
        // does not have: report it at the end of the last one.
        let at = (*at).min(text.trim_end().len());
        let p = tree.point(at);
        a.add_at("MB001", (p.row, p.column), msg.clone());
    }
    a.walk(tree.root(), max_depth);
    if let Some(at) = tree.truncated_at {
        if !a.findings.iter().any(|f| f.rule == "MB002") {
            let p = tree.point(at);
            a.add_at(
                "MB002",
                (p.row, p.column),
                format!("nesting deeper than {max_depth} levels was not examined"),
            );
        }
    }
    a.check_calls();
    a.check_gadgets();
    a.check_sends();
    a.check_strings();
    a.composites();
    Ok((a.findings, syntax_ok))
}

#[derive(Clone, Copy)]
enum Bind<'t> {
    /// `name = <expr>` (or walrus): resolved lazily in `scope`.
    Expr(Node<'t>, usize),
    /// `import a.b as name`, `from a import b as name`.
    Module(&'t str, Option<&'t str>),
    /// Parameters, loop targets, `with ... as`, def/class names: unknown value.
    Opaque,
}

struct Scope {
    parent: Option<usize>,
    is_class: bool,
}

#[derive(Clone, Copy)]
struct CallSite<'t> {
    node: Node<'t>,
    scope: usize,
    /// Innermost loop in the same function, and whether it is `while True`.
    loop_node: Option<(Node<'t>, bool)>,
}

#[derive(Default)]
struct Facts {
    socket: Option<(usize, usize)>,
    dup2: Option<(usize, usize)>,
    fileno_redirect: Option<(usize, usize)>,
    shell_spawn: Option<(usize, usize)>,
    creds: Option<(usize, usize)>,
    network: bool,
    ctypes: Option<(usize, usize)>,
    exec_memory: bool,
    /// A module that talks to the network is imported.
    net_import: bool,
}

struct Analyzer<'t> {
    src: &'t str,
    scopes: Vec<Scope>,
    binds: HashMap<&'t str, Vec<(usize, usize, Bind<'t>)>>,
    star_imports: Vec<(usize, &'t str)>,
    calls: Vec<CallSite<'t>>,
    strings: Vec<Node<'t>>,
    /// `__reduce__`-style methods of classes: the def (or lambda) and its scope.
    reduce_defs: Vec<(Node<'t>, usize)>,
    /// Calls that pickle something, and their scopes.
    pickle_dumps: Vec<(Node<'t>, usize)>,
    /// Calls that may send data off the machine.
    sends: Vec<exfil::Send<'t>>,
    findings: Vec<RawFinding>,
    facts: Facts,
    budget: Cell<u32>,
    max_depth: usize,
    nesting: usize,
    /// Start byte of the node being visited, the position of non-expression bindings.
    last_pos: usize,
}

struct Frame<'t> {
    pushed_scope: bool,
    loop_node: Option<(Node<'t>, bool)>,
}

fn pos(n: Node) -> (usize, usize) {
    let p = n.start_position();
    (p.row, p.column)
}

impl<'t> Analyzer<'t> {
    fn new(src: &'t str, max_depth: usize, nesting: usize) -> Self {
        Analyzer {
            src,
            scopes: vec![Scope {
                parent: None,
                is_class: false,
            }],
            binds: HashMap::new(),
            star_imports: Vec::new(),
            calls: Vec::new(),
            strings: Vec::new(),
            reduce_defs: Vec::new(),
            pickle_dumps: Vec::new(),
            sends: Vec::new(),
            findings: Vec::new(),
            facts: Facts::default(),
            budget: Cell::new(EVAL_BUDGET),
            max_depth,
            nesting,
            last_pos: 0,
        }
    }

    fn text(&self, n: Node) -> &'t str {
        self.src.get(n.byte_range()).unwrap_or("")
    }

    fn add(&mut self, rule: &'static str, n: Node, detail: impl Into<String>) {
        let (row, col) = pos(n);
        self.findings.push(RawFinding {
            rule,
            row,
            col,
            detail: detail.into(),
        });
    }

    fn add_at(&mut self, rule: &'static str, at: (usize, usize), detail: impl Into<String>) {
        self.findings.push(RawFinding {
            rule,
            row: at.0,
            col: at.1,
            detail: detail.into(),
        });
    }

    fn bind(&mut self, scope: usize, name: &'t str, b: Bind<'t>) {
        let at = match b {
            Bind::Expr(v, _) => v.start_byte(),
            _ => self.last_pos,
        };
        self.binds.entry(name).or_default().push((scope, at, b));
    }

    // ---------------------------------------------------------------- walk --

    fn walk(&mut self, root: Node<'t>, max_depth: usize) {
        let mut cursor = root.walk();
        let mut frames: Vec<Frame<'t>> = Vec::new();
        let mut scope_stack: Vec<usize> = vec![0];
        // Innermost loop per scope level; a def inside a loop starts afresh.
        let mut loop_stack: Vec<Option<(Node<'t>, bool)>> = vec![None];
        let mut reported_depth = false;
        loop {
            let node = cursor.node();
            let scope = scope_stack.last().copied().unwrap_or(0);
            let mut frame = Frame {
                pushed_scope: false,
                loop_node: None,
            };
            self.visit(node, scope, loop_stack.last().copied().flatten());
            match node.kind() {
                "function_definition" | "lambda" | "class_definition" => {
                    let id = self.scopes.len();
                    self.scopes.push(Scope {
                        parent: Some(scope),
                        is_class: node.kind() == "class_definition",
                    });
                    self.bind_params(node, id);
                    if self.is_reduce_method(node, scope) {
                        self.reduce_defs.push((node, id));
                    }
                    scope_stack.push(id);
                    loop_stack.push(None);
                    frame.pushed_scope = true;
                }
                "while_statement" | "for_statement" => {
                    let infinite = node.kind() == "while_statement"
                        && node
                            .child_by_field_name("condition")
                            .is_some_and(|c| self.is_truthy_const(c));
                    frame.loop_node = Some((node, infinite));
                    if let Some(top) = loop_stack.last_mut() {
                        *top = Some((node, infinite || top.is_some_and(|t| t.1)));
                        // Remember what to restore on leaving.
                        frame.loop_node = Some((node, infinite));
                    }
                }
                _ => {}
            }
            let prev_loop = loop_stack.last().copied().flatten();
            frames.push(frame);
            let depth = frames.len();
            let descend = if depth >= max_depth && node.child_count() > 0 {
                if !reported_depth {
                    reported_depth = true;
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
            let _ = prev_loop;
            if descend && cursor.goto_first_child() {
                continue;
            }
            // Leave nodes until one has a next sibling.
            loop {
                if let Some(f) = frames.pop() {
                    if f.pushed_scope {
                        scope_stack.pop();
                        loop_stack.pop();
                    } else if f.loop_node.is_some() {
                        // Restore the enclosing loop of this scope level.
                        let outer = self.enclosing_loop(&frames);
                        if let Some(top) = loop_stack.last_mut() {
                            *top = outer;
                        }
                    }
                }
                if cursor.goto_next_sibling() {
                    break;
                }
                if !cursor.goto_parent() {
                    return;
                }
            }
        }
    }

    /// A `def __reduce__` in a class body, or `__reduce__ = lambda ...` there.
    fn is_reduce_method(&self, def: Node<'t>, scope: usize) -> bool {
        if !self.scopes.get(scope).is_some_and(|s| s.is_class) {
            return false;
        }
        let name = match def.kind() {
            "function_definition" => def.child_by_field_name("name"),
            "lambda" => def
                .parent()
                .filter(|p| p.kind() == "assignment")
                .and_then(|p| p.child_by_field_name("left")),
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
        if let Some(name) = def.child_by_field_name("name") {
            let t = self.text(name);
            self.bind(parent, t, Bind::Opaque);
        }
        let Some(params) = def.child_by_field_name("parameters") else {
            return;
        };
        let mut c = params.walk();
        let kids: Vec<Node<'t>> = params.named_children(&mut c).collect();
        for p in kids {
            let ident = match p.kind() {
                "identifier" => Some(p),
                "default_parameter" | "typed_default_parameter" => p.child_by_field_name("name"),
                _ => {
                    let mut c2 = p.walk();
                    let first = p.named_children(&mut c2).find(|k| k.kind() == "identifier");
                    first
                }
            };
            if let Some(id) = ident {
                let t = self.text(id);
                self.bind(scope, t, Bind::Opaque);
            }
        }
    }

    fn visit(&mut self, node: Node<'t>, scope: usize, loop_node: Option<(Node<'t>, bool)>) {
        self.last_pos = node.start_byte();
        match node.kind() {
            "import_statement" => {
                let mut c = node.walk();
                let kids: Vec<Node<'t>> = node.children_by_field_name("name", &mut c).collect();
                for k in kids {
                    if k.kind() == "aliased_import" {
                        let (Some(n), Some(al)) = (
                            k.child_by_field_name("name"),
                            k.child_by_field_name("alias"),
                        ) else {
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
            "import_from_statement" => {
                let Some(m) = node.child_by_field_name("module_name") else {
                    return;
                };
                if m.kind() == "relative_import" {
                    return;
                }
                let module = self.text(m);
                self.note_import(module, m);
                let mut c = node.walk();
                if node
                    .named_children(&mut c)
                    .any(|k| k.kind() == "wildcard_import")
                {
                    self.star_imports.push((scope, module));
                }
                let mut c = node.walk();
                let kids: Vec<Node<'t>> = node.children_by_field_name("name", &mut c).collect();
                for k in kids {
                    let (name, alias) = if k.kind() == "aliased_import" {
                        (
                            k.child_by_field_name("name"),
                            k.child_by_field_name("alias"),
                        )
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
            "assignment" => {
                let (Some(l), r) = (
                    node.child_by_field_name("left"),
                    node.child_by_field_name("right"),
                ) else {
                    return;
                };
                self.bind_target(l, r, scope);
            }
            "named_expression" => {
                if let (Some(n), Some(v)) = (
                    node.child_by_field_name("name"),
                    node.child_by_field_name("value"),
                ) {
                    let t = self.text(n);
                    self.bind(scope, t, Bind::Expr(v, scope));
                }
            }
            "for_statement" | "for_in_clause" => {
                if let Some(l) = node.child_by_field_name("left") {
                    self.bind_target(l, None, scope);
                }
            }
            "as_pattern" => {
                if let Some(al) = node.child_by_field_name("alias") {
                    self.bind_target(al, None, scope);
                }
            }
            "call" => self.calls.push(CallSite {
                node,
                scope,
                loop_node,
            }),
            // A string standing alone as a statement (a docstring) does nothing,
            // so the paths and hosts it mentions are documentation, not behaviour.
            "string" if !is_bare_statement(node) => self.strings.push(node),
            "attribute" => {
                if let Some(attr) = node.child_by_field_name("attribute") {
                    self.note_name(self.text(attr), node);
                }
            }
            "identifier" => self.note_name(self.text(node), node),
            _ => {}
        }
    }

    fn bind_target(&mut self, target: Node<'t>, value: Option<Node<'t>>, scope: usize) {
        match target.kind() {
            "identifier" => {
                let t = self.text(target);
                let b = match value {
                    Some(v) => Bind::Expr(v, scope),
                    None => Bind::Opaque,
                };
                self.bind(scope, t, b);
            }
            "pattern_list"
            | "tuple_pattern"
            | "list_pattern"
            | "tuple"
            | "list"
            | "parenthesized_expression"
            | "as_pattern_target" => {
                let mut c = target.walk();
                let targets: Vec<Node<'t>> = target.named_children(&mut c).collect();
                let values: Option<Vec<Node<'t>>> = value.and_then(|v| {
                    matches!(v.kind(), "expression_list" | "tuple" | "list").then(|| {
                        let mut c = v.walk();
                        v.named_children(&mut c).collect()
                    })
                });
                for (i, t) in targets.iter().enumerate() {
                    let v = values
                        .as_ref()
                        .and_then(|vs| (vs.len() == targets.len()).then(|| vs[i]));
                    self.bind_target(*t, v, scope);
                }
            }
            _ => {}
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
                let is_bare_builtins = name == "__builtins__" && n.kind() == "identifier";
                if !is_bare_builtins || n.parent().is_some_and(|p| p.kind() == "subscript") {
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

    // ---------------------------------------------------------- evaluation --

    fn tick(&self) -> bool {
        let b = self.budget.get();
        if b == 0 {
            return false;
        }
        self.budget.set(b - 1);
        true
    }

    fn reset_budget(&self) {
        self.budget.set(EVAL_BUDGET);
    }

    /// The binding a use of `name` at byte `at` sees: the nearest scope that
    /// binds it, and there the last binding before the use (or the last one
    /// at all, for functions that use names bound later in the module).
    /// Picking one binding keeps resolution linear instead of fanning out
    /// over every rebinding of common names.
    fn lookup(&self, name: &str, scope: usize, at: usize) -> Option<Vec<Bind<'t>>> {
        let all = self.binds.get(name)?;
        let mut s = Some(scope);
        let mut first = true;
        while let Some(id) = s {
            let sc = self.scopes.get(id)?;
            // Class bodies are not visible from methods nested in them.
            if first || !sc.is_class {
                let mut before = None;
                let mut last = None;
                for (bs, pos, b) in all {
                    if *bs == id {
                        last = Some(*b);
                        if *pos < at {
                            before = Some(*b);
                        }
                    }
                }
                if let Some(b) = before.or(last) {
                    return Some(vec![b]);
                }
            }
            first = false;
            s = sc.parent;
        }
        None
    }

    fn scope_chain_stars(&self, scope: usize) -> Vec<&'t str> {
        let mut out = Vec::new();
        let mut s = Some(scope);
        while let Some(id) = s {
            out.extend(
                self.star_imports
                    .iter()
                    .filter(|(sc, _)| *sc == id)
                    .map(|(_, m)| *m),
            );
            s = self.scopes.get(id).and_then(|sc| sc.parent);
        }
        out
    }

    /// Fully qualified dotted name an expression refers to, e.g. `o.system`
    /// after `import os as o` gives "os.system"; builtins give "builtins.x".
    fn resolve(&self, n: Node<'t>, scope: usize, depth: usize) -> Option<String> {
        if depth > EVAL_DEPTH || !self.tick() {
            return None;
        }
        let q = match n.kind() {
            "identifier" => {
                let name = self.text(n);
                match self.lookup(name, scope, n.start_byte()) {
                    Some(binds) => binds.iter().rev().find_map(|b| match *b {
                        Bind::Module(m, None) => Some(m.to_string()),
                        Bind::Module(m, Some(attr)) => Some(format!("{m}.{attr}")),
                        Bind::Expr(v, s) => self.resolve(v, s, depth + 1),
                        Bind::Opaque => None,
                    }),
                    None => {
                        let star = self
                            .scope_chain_stars(scope)
                            .into_iter()
                            .map(|m| format!("{m}.{name}"))
                            .find(|q| is_known_target(q));
                        star.or_else(|| {
                            BUILTINS.contains(&name).then(|| format!("builtins.{name}"))
                        })
                    }
                }
            }
            "attribute" => {
                let obj = n.child_by_field_name("object")?;
                let attr = n.child_by_field_name("attribute")?;
                let base = self.resolve(obj, scope, depth + 1)?;
                Some(format!("{base}.{}", self.text(attr)))
            }
            "call" => {
                let f = self.resolve(n.child_by_field_name("function")?, scope, depth + 1)?;
                let (pos, _) = self.args(n);
                match f.as_str() {
                    "builtins.getattr" if pos.len() >= 2 => {
                        let base = self.resolve(pos[0], scope, depth + 1)?;
                        let name = self.fold(pos[1], scope, depth + 1)?;
                        Some(format!("{base}.{name}"))
                    }
                    "builtins.__import__" | "importlib.import_module" | "importlib.__import__" => {
                        self.fold(*pos.first()?, scope, depth + 1)
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
            "subscript" => {
                let v = self.resolve(n.child_by_field_name("value")?, scope, depth + 1)?;
                let key = self.fold(n.child_by_field_name("subscript")?, scope, depth + 1)?;
                match v.as_str() {
                    "sys.modules" => Some(key),
                    "builtins" | "builtins.__dict__" => Some(format!("builtins.{key}")),
                    "builtins.globals()" if key == "__builtins__" => Some("builtins".into()),
                    "builtins.globals()" => {
                        let binds = self.lookup(&key, 0, usize::MAX)?;
                        binds.iter().rev().find_map(|b| match *b {
                            Bind::Module(m, None) => Some(m.to_string()),
                            Bind::Module(m, Some(a)) => Some(format!("{m}.{a}")),
                            _ => None,
                        })
                    }
                    _ => None,
                }
            }
            "parenthesized_expression" => self.resolve(n.named_child(0)?, scope, depth + 1),
            "named_expression" => self.resolve(n.child_by_field_name("value")?, scope, depth + 1),
            _ => None,
        }?;
        Some(normalize(q))
    }

    /// Constant string value of an expression, folding the usual disguises.
    /// Values longer than MAX_FOLD_LEN give up, so `a = a + a` chains cannot
    /// exhaust memory.
    fn fold(&self, n: Node<'t>, scope: usize, depth: usize) -> Option<String> {
        self.fold_inner(n, scope, depth)
            .filter(|v| v.len() <= MAX_FOLD_LEN)
    }

    fn fold_inner(&self, n: Node<'t>, scope: usize, depth: usize) -> Option<String> {
        if depth > EVAL_DEPTH || !self.tick() {
            return None;
        }
        match n.kind() {
            "string" => string_value(self.src, n),
            "concatenated_string" => {
                let mut out = String::new();
                let mut c = n.walk();
                for k in n.named_children(&mut c) {
                    out.push_str(&self.fold(k, scope, depth + 1)?);
                }
                Some(out)
            }
            "binary_operator" => {
                if n.operator() != "+" {
                    return None;
                }
                let l = self.fold(n.child_by_field_name("left")?, scope, depth + 1)?;
                let r = self.fold(n.child_by_field_name("right")?, scope, depth + 1)?;
                Some(l + &r)
            }
            "identifier" => {
                let binds = self.lookup(self.text(n), scope, n.start_byte())?;
                binds.iter().rev().find_map(|b| match *b {
                    Bind::Expr(v, s) => self.fold(v, s, depth + 1),
                    _ => None,
                })
            }
            "parenthesized_expression" => self.fold(n.named_child(0)?, scope, depth + 1),
            "subscript" => {
                // "metsys"[::-1]
                let sub = n.child_by_field_name("subscript")?;
                if sub.kind() == "slice" && self.text(sub).replace(' ', "") == "::-1" {
                    let v = self.fold(n.child_by_field_name("value")?, scope, depth + 1)?;
                    return Some(v.chars().rev().collect());
                }
                None
            }
            "call" => self.fold_call(n, scope, depth),
            _ => None,
        }
    }

    fn fold_call(&self, n: Node<'t>, scope: usize, depth: usize) -> Option<String> {
        let func = n.child_by_field_name("function")?;
        let (pos, kw) = self.args(n);
        if func.kind() == "attribute" {
            let method = self.text(func.child_by_field_name("attribute")?);
            let obj = func.child_by_field_name("object")?;
            let recv = || self.fold(obj, scope, depth + 1);
            match method {
                "join" if pos.len() == 1 => {
                    let sep = recv()?;
                    let parts = self.fold_list(pos[0], scope, depth + 1)?;
                    let total = parts.iter().map(|p| p.len() + sep.len()).sum::<usize>();
                    return (total <= MAX_FOLD_LEN).then(|| parts.join(&sep));
                }
                "decode" | "encode" | "lower" | "upper" | "strip" => {
                    let v = recv()?;
                    let codec = pos
                        .first()
                        .and_then(|a| self.fold(*a, scope, depth + 1))
                        .unwrap_or_default();
                    return match (method, codec.to_ascii_lowercase().as_str()) {
                        ("decode" | "encode", "rot13" | "rot_13") => Some(rot13(&v)),
                        ("decode" | "encode", _) => Some(v),
                        ("lower", _) => Some(v.to_lowercase()),
                        ("upper", _) => Some(v.to_uppercase()),
                        _ => Some(v.trim().to_string()),
                    };
                }
                "replace" if pos.len() >= 2 => {
                    let v = recv()?;
                    let a = self.fold(pos[0], scope, depth + 1)?;
                    let b = self.fold(pos[1], scope, depth + 1)?;
                    let worst = if a.is_empty() {
                        v.len() * b.len() + v.len()
                    } else {
                        v.len() / a.len() * b.len() + v.len()
                    };
                    return (worst <= MAX_FOLD_LEN).then(|| v.replace(&a, &b));
                }
                _ => {}
            }
        }
        let q = self.resolve(func, scope, depth + 1)?;
        let arg0 = || pos.first().and_then(|a| self.fold(*a, scope, depth + 1));
        match q.as_str() {
            "builtins.chr" => {
                let v = int_value(self.text(*pos.first()?))?;
                char::from_u32(u32::try_from(v).ok()?).map(String::from)
            }
            "builtins.str" | "builtins.bytes" | "os.path.expanduser" | "os.fsdecode"
            | "os.fsencode" => arg0(),
            "os.path.join" | "posixpath.join" => {
                let parts: Option<Vec<String>> = pos
                    .iter()
                    .map(|a| self.fold(*a, scope, depth + 1))
                    .collect();
                Some(join_path(&parts?))
            }
            "base64.b64decode"
            | "base64.standard_b64decode"
            | "base64.decodebytes"
            | "base64.urlsafe_b64decode"
            | "binascii.a2b_base64" => {
                let raw = b64decode(&arg0()?)?;
                String::from_utf8(raw).ok()
            }
            "bytes.fromhex" | "binascii.unhexlify" | "binascii.a2b_hex" | "base64.b16decode" => {
                String::from_utf8(hexdecode(&arg0()?)?).ok()
            }
            "codecs.decode" | "codecs.encode" => {
                let codec = pos
                    .get(1)
                    .copied()
                    .or_else(|| kw.iter().find(|(k, _)| *k == "encoding").map(|(_, v)| *v));
                let codec = codec
                    .and_then(|c| self.fold(c, scope, depth + 1))
                    .unwrap_or_default();
                match codec.to_ascii_lowercase().as_str() {
                    "rot13" | "rot_13" => Some(rot13(&arg0()?)),
                    "hex" => String::from_utf8(hexdecode(&arg0()?)?).ok(),
                    "base64" => String::from_utf8(b64decode(&arg0()?)?).ok(),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// Constant list of strings: list/tuple literal, generator of chr(), ...
    fn fold_list(&self, n: Node<'t>, scope: usize, depth: usize) -> Option<Vec<String>> {
        if depth > EVAL_DEPTH || !self.tick() {
            return None;
        }
        match n.kind() {
            "list" | "tuple" | "set" => {
                let mut c = n.walk();
                let kids: Vec<Node<'t>> = n.named_children(&mut c).collect();
                kids.into_iter()
                    .map(|k| self.fold(k, scope, depth + 1))
                    .collect()
            }
            "identifier" => {
                let binds = self.lookup(self.text(n), scope, n.start_byte())?;
                binds.iter().rev().find_map(|b| match *b {
                    Bind::Expr(v, s) => self.fold_list(v, s, depth + 1),
                    _ => None,
                })
            }
            "parenthesized_expression" => self.fold_list(n.named_child(0)?, scope, depth + 1),
            _ => None,
        }
    }

    /// Constant argv or command string as one text, for command checks.
    fn fold_command(&self, n: Node<'t>, scope: usize) -> Option<String> {
        self.reset_budget();
        self.fold(n, scope, 0)
            .or_else(|| self.fold_list(n, scope, 0).map(|v| v.join(" ")))
    }

    fn fold_int(&self, n: Node<'t>, scope: usize, depth: usize) -> Option<i64> {
        if depth > EVAL_DEPTH || !self.tick() {
            return None;
        }
        match n.kind() {
            "integer" => int_value(self.text(n)),
            "binary_operator" => {
                let op = n.operator();
                let l = self.fold_int(n.child_by_field_name("left")?, scope, depth + 1)?;
                let r = self.fold_int(n.child_by_field_name("right")?, scope, depth + 1)?;
                match op {
                    "|" | "+" => Some(l | r),
                    "&" => Some(l & r),
                    _ => None,
                }
            }
            "attribute" | "identifier" => {
                let last = self.text(n).rsplit('.').next().unwrap_or("");
                if let Some(v) = stat_const(last) {
                    return Some(v);
                }
                if n.kind() == "identifier" {
                    let binds = self.lookup(self.text(n), scope, n.start_byte())?;
                    return binds.iter().rev().find_map(|b| match *b {
                        Bind::Expr(v, s) => self.fold_int(v, s, depth + 1),
                        _ => None,
                    });
                }
                None
            }
            "parenthesized_expression" => self.fold_int(n.named_child(0)?, scope, depth + 1),
            _ => None,
        }
    }

    /// Constant path of `Path("/etc") / "x"`, `os.path.join(...)`, literals.
    fn fold_path(&self, n: Node<'t>, scope: usize, depth: usize) -> Option<String> {
        if depth > EVAL_DEPTH || !self.tick() {
            return None;
        }
        match n.kind() {
            "call" => {
                let q = self.resolve(n.child_by_field_name("function")?, scope, depth + 1);
                if q.as_deref().is_some_and(|q| PATH_TYPES.contains(&q)) {
                    let (pos, _) = self.args(n);
                    let parts: Option<Vec<String>> = pos
                        .iter()
                        .map(|a| self.fold_path(*a, scope, depth + 1))
                        .collect();
                    return Some(join_path(&parts?));
                }
                self.fold(n, scope, depth + 1)
            }
            "binary_operator" if n.operator() == "/" => {
                let l = self.fold_path(n.child_by_field_name("left")?, scope, depth + 1)?;
                let r = self.fold_path(n.child_by_field_name("right")?, scope, depth + 1)?;
                Some(join_path(&[l, r]))
            }
            "identifier" => {
                let binds = self.lookup(self.text(n), scope, n.start_byte())?;
                binds.iter().rev().find_map(|b| match *b {
                    Bind::Expr(v, s) => self.fold_path(v, s, depth + 1),
                    _ => None,
                })
            }
            "parenthesized_expression" => self.fold_path(n.named_child(0)?, scope, depth + 1),
            _ => self.fold(n, scope, depth + 1),
        }
    }

    /// Does the expression decode, decompress or unmarshal something?
    fn contains_decoder(&self, n: Node<'t>, scope: usize, depth: usize) -> Option<String> {
        if depth > EVAL_DEPTH || !self.tick() {
            return None;
        }
        match n.kind() {
            "call" => {
                if let Some(func) = n.child_by_field_name("function") {
                    if let Some(q) = self.resolve(func, scope, depth + 1) {
                        if DECODERS.contains(&q.as_str())
                            || (q == "builtins.chr" && self.chr_spells(n))
                        {
                            return Some(q);
                        }
                    }
                    if func.kind() == "attribute" {
                        let m = func
                            .child_by_field_name("attribute")
                            .map(|a| self.text(a))
                            .unwrap_or("");
                        if m == "decode" || m == "decompress" || m == "translate" {
                            let (pos, _) = self.args(n);
                            let codec = pos
                                .first()
                                .and_then(|c| self.fold(*c, scope, depth + 1))
                                .unwrap_or_default()
                                .to_ascii_lowercase();
                            if m != "decode"
                                || ["rot13", "rot_13", "base64", "hex", "zlib", "bz2"]
                                    .contains(&codec.as_str())
                            {
                                return Some(format!(".{m}({codec})"));
                            }
                        }
                    }
                }
            }
            // Reversing a list (`'.'.join(ids[::-1])`) hides nothing; reversing
            // a constant string is the disguise.
            "subscript"
                if n.child_by_field_name("subscript").is_some_and(|s| {
                    s.kind() == "slice" && self.text(s).replace(' ', "") == "::-1"
                }) && n
                    .child_by_field_name("value")
                    .is_some_and(|v| self.fold(v, scope, depth + 1).is_some()) =>
            {
                return Some("string reversal".into());
            }
            "identifier" => {
                let binds = self.lookup(self.text(n), scope, n.start_byte())?;
                return binds.iter().rev().find_map(|b| match *b {
                    Bind::Expr(v, s) => self.contains_decoder(v, s, depth + 1),
                    _ => None,
                });
            }
            _ => {}
        }
        let mut c = n.walk();
        let kids: Vec<Node<'t>> = n.named_children(&mut c).collect();
        kids.into_iter()
            .find_map(|k| self.contains_decoder(k, scope, depth + 1))
    }

    /// Is this `chr(...)` call spelling text out: a computed code point
    /// (`chr(c) for c in codes`), or one piece of a concatenation or list of
    /// characters? A lone `chr(0x4000)` is just a character.
    fn chr_spells(&self, call: Node<'t>) -> bool {
        let (pos, _) = self.args(call);
        let literal = pos.first().is_some_and(|a| a.kind() == "integer");
        !literal
            || call
                .parent()
                .is_some_and(|p| matches!(p.kind(), "binary_operator" | "list" | "tuple"))
    }

    /// Does the expression fetch something from the network?
    fn contains_download(&self, n: Node<'t>, scope: usize, depth: usize) -> Option<String> {
        if depth > EVAL_DEPTH || !self.tick() {
            return None;
        }
        match n.kind() {
            "call" => {
                if let Some(q) = n
                    .child_by_field_name("function")
                    .and_then(|f| self.resolve(f, scope, depth + 1))
                {
                    if is_network_client(&q) {
                        return Some(q);
                    }
                }
            }
            "identifier" => {
                let binds = self.lookup(self.text(n), scope, n.start_byte())?;
                return binds.iter().rev().find_map(|b| match *b {
                    Bind::Expr(v, s) => self.contains_download(v, s, depth + 1),
                    _ => None,
                });
            }
            _ => {}
        }
        let mut c = n.walk();
        let kids: Vec<Node<'t>> = n.named_children(&mut c).collect();
        kids.into_iter()
            .find_map(|k| self.contains_download(k, scope, depth + 1))
    }

    fn args(&self, call: Node<'t>) -> (Vec<Node<'t>>, Vec<(&'t str, Node<'t>)>) {
        let mut pos = Vec::new();
        let mut kw = Vec::new();
        if let Some(al) = call.child_by_field_name("arguments") {
            if al.kind() != "argument_list" {
                pos.push(al);
                return (pos, kw);
            }
            let mut c = al.walk();
            for a in al.named_children(&mut c) {
                match a.kind() {
                    "keyword_argument" => {
                        if let (Some(k), Some(v)) = (
                            a.child_by_field_name("name"),
                            a.child_by_field_name("value"),
                        ) {
                            kw.push((self.text(k), v));
                        }
                    }
                    "comment" | "list_splat" | "dictionary_splat" => {}
                    _ => pos.push(a),
                }
            }
        }
        (pos, kw)
    }

    fn is_truthy_const(&self, n: Node<'t>) -> bool {
        match n.kind() {
            "true" => true,
            "integer" => int_value(self.text(n)).is_some_and(|v| v != 0),
            "string" => string_value(self.src, n).is_some_and(|s| !s.is_empty()),
            "parenthesized_expression" => n.named_child(0).is_some_and(|k| self.is_truthy_const(k)),
            "not_operator" => n
                .child_by_field_name("argument")
                .is_some_and(|a| matches!(a.kind(), "false" | "none") || self.text(a) == "0"),
            _ => false,
        }
    }

    // -------------------------------------------------------------- checks --

    fn check_calls(&mut self) {
        let calls = std::mem::take(&mut self.calls);
        for site in &calls {
            self.check_call(*site);
        }
    }

    fn check_call(&mut self, site: CallSite<'t>) {
        let CallSite {
            node,
            scope,
            loop_node,
        } = site;
        let Some(func) = node.child_by_field_name("function") else {
            return;
        };
        self.reset_budget();
        let q = self.resolve(func, scope, 0);
        let (pos, kw) = self.args(node);
        let kwarg = |name: &str| kw.iter().find(|(k, _)| *k == name).map(|(_, v)| *v);
        let shell_kw = kwarg("shell")
            .filter(|v| !matches!(v.kind(), "false" | "none") && self.text(*v) != "0");
        let method = if func.kind() == "attribute" {
            func.child_by_field_name("attribute").map(|a| self.text(a))
        } else {
            None
        };
        let written = self.text(func);
        let via = |q: &str| {
            if written == q || format!("builtins.{written}") == q {
                q.to_string()
            } else {
                format!("`{written}` resolves to {q}")
            }
        };

        for (k, v) in &kw {
            if matches!(*k, "stdin" | "stdout" | "stderr") && self.text(*v).contains("fileno") {
                self.facts.fileno_redirect.get_or_insert(pos_of(node));
            }
        }

        if let Some(q) = q.as_deref() {
            match q {
                "builtins.exec" | "builtins.eval" | "builtins.compile" | "builtins.execfile" => {
                    if let Some(arg) = pos.first().copied().or_else(|| kwarg("source")) {
                        self.check_exec(q, arg, node, scope);
                    }
                }
                "builtins.__import__" | "importlib.import_module" | "importlib.__import__" => {
                    self.reset_budget();
                    let name = pos.first().and_then(|a| self.fold(*a, scope, 0));
                    match name {
                        None => self.add("MB411", node, format!("{q} of a computed name")),
                        Some(m) if q == "builtins.__import__" => {
                            self.add("MB412", node, format!("__import__({m:?})"))
                        }
                        Some(m) if pos.first().is_none_or(|a| a.kind() != "string") => {
                            self.add("MB414", node, format!("module name assembled as {m:?}"))
                        }
                        Some(_) => {}
                    }
                }
                "builtins.getattr" if pos.len() >= 2 => {
                    self.reset_budget();
                    if let Some(base) = self.resolve(pos[0], scope, 0) {
                        self.reset_budget();
                        match self.fold(pos[1], scope, 0) {
                            None => self.add("MB413", node, format!("getattr({base}, <computed>)")),
                            Some(name) if pos[1].kind() != "string" => {
                                self.add("MB414", node, format!("getattr({base}, {name:?})"))
                            }
                            Some(_) => {}
                        }
                    }
                }
                _ => {}
            }
            self.check_process(q, &via(q), node, scope, &pos, shell_kw, loop_node);
            self.check_files(q, node, scope, &pos, &kw);
            self.check_misc(q, &via(q), node, scope, &pos, &kw);
        }
        if let Some(m) = method {
            self.check_method(m, func, node, scope, &pos, &kw);
        }
        if let Some(kind) = exfil::send_kind(q.as_deref(), method) {
            self.sends.push(exfil::Send { node, scope, kind });
        }
        let is_subprocess = q.as_deref().is_some_and(|q| SUBPROCESS.contains(&q));
        if shell_kw.is_some() && !is_subprocess {
            self.add("MB604", node, format!("{written}(..., shell=True)"));
            if let Some(cmd) = pos.first().and_then(|a| self.fold_command(*a, scope)) {
                self.check_command(&cmd, node);
            }
        }
    }

    fn check_exec(&mut self, q: &str, arg: Node<'t>, node: Node<'t>, scope: usize) {
        self.reset_budget();
        if let Some(d) = self.contains_decoder(arg, scope, 0) {
            self.add("MB903", node, format!("{q} of data decoded by {d}"));
            return;
        }
        self.reset_budget();
        if let Some(d) = self.contains_download(arg, scope, 0) {
            self.add("MB908", node, format!("{q} of data fetched by {d}"));
            return;
        }
        self.reset_budget();
        let code = self.fold(arg, scope, 0);
        if let Some(code) = &code {
            self.assess_nested(q, code, node);
        }
        let literal = code.is_some() || self.is_compile_of_literal(arg, scope);
        let rule = match (literal, q) {
            (true, _) => "MB101",
            (false, "builtins.eval") => "MB307",
            (false, "builtins.compile") => "MB110",
            (false, _) => "MB102",
        };
        self.add(
            rule,
            node,
            format!("{q}({})", if literal { "<literal>" } else { "<computed>" }),
        );
    }

    /// Code passed to exec/eval as a (folded) constant is assessed as well,
    /// its findings pinned to the exec call.
    fn assess_nested(&mut self, q: &str, code: &str, node: Node<'t>) {
        if self.nesting >= MAX_NESTED_CODE {
            return;
        }
        // Parser failures here only lose the nested findings; the outer
        // exec finding still stands.
        if let Ok((inner, _)) = analyze_text(code, self.max_depth, self.nesting + 1) {
            for f in inner.into_iter().filter(|f| f.rule != "MB001") {
                let detail = format!("inside the code given to {q}: {}", f.detail);
                self.add(f.rule, node, detail);
            }
        }
    }

    fn is_compile_of_literal(&self, n: Node<'t>, scope: usize) -> bool {
        if n.kind() != "call" {
            return false;
        }
        self.reset_budget();
        let q = n
            .child_by_field_name("function")
            .and_then(|f| self.resolve(f, scope, 0));
        if q.as_deref() != Some("builtins.compile") {
            return false;
        }
        let (pos, _) = self.args(n);
        self.reset_budget();
        pos.first()
            .is_some_and(|a| self.fold(*a, scope, 0).is_some())
    }

    #[allow(clippy::too_many_arguments)]
    fn check_process(
        &mut self,
        q: &str,
        via: &str,
        node: Node<'t>,
        scope: usize,
        pos: &[Node<'t>],
        shell_kw: Option<Node<'t>>,
        loop_node: Option<(Node<'t>, bool)>,
    ) {
        if SHELL_FUNCS.contains(&q) {
            self.add("MB605", node, via.to_string());
            if let Some(c) = pos.first().and_then(|a| self.fold_command(*a, scope)) {
                self.check_command(&c, node);
            }
        } else if SUBPROCESS.contains(&q) {
            if shell_kw.is_some() || q == "asyncio.create_subprocess_shell" {
                self.add("MB602", node, format!("{via} with shell=True"));
            } else {
                self.add("MB603", node, via.to_string());
            }
            if let Some(c) = pos.first().and_then(|a| self.fold_command(*a, scope)) {
                self.check_command(&c, node);
            }
        } else if EXEC_FUNCS.contains(&q) || q.starts_with("os.exec") || q.starts_with("os.spawn") {
            self.add("MB606", node, via.to_string());
            let parts: Vec<String> = pos
                .iter()
                .filter_map(|a| self.fold_command(*a, scope))
                .collect();
            if q == "pty.spawn" {
                self.facts.shell_spawn.get_or_insert(pos_of(node));
            }
            if !parts.is_empty() {
                self.check_command(&parts.join(" "), node);
            }
        }
        let forkish = matches!(
            q,
            "os.fork" | "os.forkpty" | "pty.fork" | "multiprocessing.Process"
        );
        if forkish {
            match loop_node {
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
        if spawns_self {
            if let Some((l, true)) = loop_node {
                let arg_text = pos.first().map(|a| self.text(*a)).unwrap_or("");
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
    }

    /// A `while True` that waits for something (accept, recv, sleep, join...)
    /// is a server or worker loop, not a bomb.
    fn loop_blocks(&self, l: Node<'t>) -> bool {
        let Some(body) = l.child_by_field_name("body") else {
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
            if n.kind() == "call" {
                let f = n
                    .child_by_field_name("function")
                    .map(|f| self.text(f))
                    .unwrap_or("");
                let last = f.rsplit('.').next().unwrap_or(f);
                if matches!(
                    last,
                    "accept"
                        | "recv"
                        | "recvfrom"
                        | "wait"
                        | "waitpid"
                        | "join"
                        | "sleep"
                        | "input"
                        | "readline"
                        | "get"
                        | "select"
                        | "poll"
                ) {
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

    fn check_command(&mut self, cmd: &str, node: Node<'t>) {
        let lower = cmd.to_ascii_lowercase();
        let segments = lower.split(['&', '|', ';', '\n', '`', '(', ')']);
        for seg in segments {
            let words: Vec<&str> = seg.split_whitespace().collect();
            let Some(head) = words.first() else { continue };
            let head = head.rsplit('/').next().unwrap_or(head);
            let rest = words[1..].join(" ");
            match head {
                "sudo" | "su" | "pkexec" | "doas" => {
                    self.add("MB204", node, format!("runs `{}`", shorten(seg.trim())))
                }
                "useradd" | "adduser" | "usermod" | "passwd" | "chpasswd" | "visudo"
                | "iptables" | "ip6tables" | "nft" | "ufw" | "setenforce" | "insmod" | "rmmod"
                | "modprobe" | "sysctl" | "crontab" | "systemctl" | "mount" | "umount"
                | "chattr" | "setcap" => {
                    self.add("MB208", node, format!("runs `{}`", shorten(seg.trim())))
                }
                "chmod"
                    if rest.contains("+s")
                        || words.get(1).is_some_and(|m| {
                            m.len() == 4
                                && (m.starts_with('4') || m.starts_with('2') || m.starts_with('6'))
                        }) =>
                {
                    self.add("MB203", node, format!("runs `{}`", shorten(seg.trim())))
                }
                "sh" | "bash" | "zsh" | "dash" | "ksh" | "csh" | "tcsh" | "fish" | "cmd.exe"
                | "powershell" | "pwsh" => {
                    self.facts.shell_spawn.get_or_insert(pos_of(node));
                }
                "rm" if words.iter().any(|w| w.starts_with('-') && w.contains('r'))
                    && words.iter().any(|w| {
                        matches!(*w, "/" | "/*" | "~" | "~/" | "$home" | "--no-preserve-root")
                    }) =>
                {
                    self.add("MB907", node, format!("runs `{}`", shorten(seg.trim())))
                }
                "mkfs" | "wipefs" | "shred" => {
                    self.add("MB907", node, format!("runs `{}`", shorten(seg.trim())))
                }
                h if h.starts_with("mkfs.") => {
                    self.add("MB907", node, format!("runs `{}`", shorten(seg.trim())))
                }
                "dd" if words
                    .iter()
                    .any(|w| w.starts_with("of=/dev/") && !w.starts_with("of=/dev/null")) =>
                {
                    self.add("MB907", node, format!("runs `{}`", shorten(seg.trim())))
                }
                "nc" | "ncat" | "netcat" | "nc.traditional"
                    if words.iter().any(|w| *w == "-e" || *w == "-c") =>
                {
                    self.add("MB901", node, format!("runs `{}`", shorten(seg.trim())))
                }
                "socat" if rest.contains("exec:") => {
                    self.add("MB901", node, format!("runs `{}`", shorten(seg.trim())))
                }
                _ => {}
            }
        }
        if lower.contains("/dev/tcp/")
            || lower.contains("/dev/udp/")
            || (lower.contains("mkfifo") && lower.contains("nc "))
        {
            self.add("MB901", node, "shell redirection to a network socket");
        }
        if (lower.contains("curl") || lower.contains("wget"))
            && ["| sh", "|sh", "| bash", "|bash", "| python", "|python"]
                .iter()
                .any(|p| lower.contains(p))
        {
            self.add("MB908", node, "remote script piped into an interpreter");
        }
        self.check_exfil_command(&lower, node);
        if lower.contains(":(){") || lower.contains(":() {") {
            self.add("MB902", node, "shell fork bomb");
        }
        if lower.contains("xmrig") || lower.contains("stratum+") {
            self.add("MB905", node, "miner in a command");
        }
    }

    fn check_files(
        &mut self,
        q: &str,
        node: Node<'t>,
        scope: usize,
        pos: &[Node<'t>],
        kw: &[(&'t str, Node<'t>)],
    ) {
        let kwarg = |name: &str| kw.iter().find(|(k, _)| *k == name).map(|(_, v)| *v);
        let path_arg = |i: usize, name: &str| pos.get(i).copied().or_else(|| kwarg(name));
        let (targets, op): (Vec<Node<'t>>, &str) = match q {
            "builtins.open" | "io.open" | "codecs.open" | "gzip.open" | "bz2.open"
            | "lzma.open" => {
                let mode = path_arg(1, "mode").and_then(|m| {
                    self.reset_budget();
                    self.fold(m, scope, 0)
                });
                let writes = mode.is_some_and(|m| m.contains(['w', 'a', 'x', '+']));
                (
                    if writes {
                        path_arg(0, "file").into_iter().collect()
                    } else {
                        vec![]
                    },
                    "open for writing",
                )
            }
            "os.open" => {
                let writes = path_arg(1, "flags").is_some_and(|f| {
                    let t = self.text(f);
                    ["O_WRONLY", "O_RDWR", "O_APPEND", "O_CREAT", "O_TRUNC"]
                        .iter()
                        .any(|o| t.contains(o))
                });
                (
                    if writes {
                        path_arg(0, "path").into_iter().collect()
                    } else {
                        vec![]
                    },
                    "os.open for writing",
                )
            }
            "os.remove" | "os.unlink" | "os.rmdir" | "os.removedirs" | "shutil.rmtree"
            | "os.truncate" | "os.chown" | "os.lchown" | "os.chmod" | "os.lchmod" | "os.mkdir"
            | "os.makedirs" | "os.mknod" | "os.mkfifo" | "os.utime" | "shutil.chown" => {
                (path_arg(0, "path").into_iter().collect(), q)
            }
            "os.rename" | "os.replace" | "os.renames" | "shutil.move" => {
                (pos.iter().take(2).copied().collect(), q)
            }
            "os.symlink" | "os.link" | "shutil.copy" | "shutil.copy2" | "shutil.copyfile"
            | "shutil.copytree" | "shutil.copymode" | "shutil.copystat" => {
                (path_arg(1, "dst").into_iter().collect(), q)
            }
            _ => (vec![], ""),
        };
        for t in targets {
            self.reset_budget();
            if let Some(p) = self.fold_path(t, scope, 0) {
                self.classify_write(&p, op, node);
            }
            self.check_self_delete(q, t, node);
        }
        if matches!(q, "os.chmod" | "os.lchmod" | "os.fchmod") {
            if let Some(m) = path_arg(1, "mode") {
                self.check_mode(m, scope, node);
            }
        }
        if matches!(
            q,
            "os.setuid"
                | "os.setgid"
                | "os.seteuid"
                | "os.setegid"
                | "os.setreuid"
                | "os.setregid"
                | "os.setresuid"
                | "os.setresgid"
                | "os.setgroups"
                | "os.initgroups"
        ) {
            let arg = pos.first().map(|a| self.text(*a)).unwrap_or("");
            self.add("MB202", node, format!("{q}({arg})"));
        }
        if q == "os.dup2" {
            self.facts.dup2.get_or_insert(pos_of(node));
        }
    }

    fn check_self_delete(&mut self, q: &str, target: Node<'t>, node: Node<'t>) {
        let t = self.text(target).replace(' ', "");
        if matches!(q, "os.remove" | "os.unlink" | "shutil.rmtree" | "unlink")
            && (t == "__file__" || t == "sys.argv[0]" || t.ends_with("(__file__)"))
        {
            self.add("MB211", node, format!("deletes {t}"));
        }
    }

    fn check_mode(&mut self, m: Node<'t>, scope: usize, node: Node<'t>) {
        self.reset_budget();
        if let Some(mode) = self.fold_int(m, scope, 0) {
            if mode & 0o6000 != 0 {
                self.add("MB203", node, format!("mode {mode:#o}"));
            } else if mode & 0o002 != 0 {
                self.add("MB103", node, format!("mode {mode:#o}"));
            }
        }
    }

    fn classify_write(&mut self, path: &str, op: &str, node: Node<'t>) {
        let p = path.trim();
        let lower = p.to_ascii_lowercase();
        if matches!(p, "/" | "/*" | "~" | "~/")
            && matches!(op, "shutil.rmtree" | "os.removedirs" | "os.rmdir")
        {
            self.add("MB907", node, format!("{op} {p}"));
            return;
        }
        if PERSISTENCE.iter().any(|s| lower.contains(s)) {
            self.add("MB906", node, format!("{op} {p}"));
            return;
        }
        let under = |prefix: &str| p == prefix || p.starts_with(&format!("{prefix}/"));
        let harmless_dev = [
            "/dev/null",
            "/dev/zero",
            "/dev/stdout",
            "/dev/stderr",
            "/dev/stdin",
            "/dev/tty",
            "/dev/urandom",
            "/dev/random",
            "/dev/full",
        ];
        if harmless_dev.contains(&p) || under("/dev/shm") || under("/dev/fd") {
            return;
        }
        if SYSTEM_PREFIXES.iter().any(|s| under(s)) {
            self.add("MB201", node, format!("{op} {p}"));
        }
    }

    fn check_misc(
        &mut self,
        q: &str,
        via: &str,
        node: Node<'t>,
        scope: usize,
        pos: &[Node<'t>],
        kw: &[(&'t str, Node<'t>)],
    ) {
        if gadget::PICKLERS.contains(&q) {
            self.pickle_dumps.push((node, scope));
        }
        if DESERIALIZERS.contains(&q) {
            self.add("MB301", node, via.to_string());
        } else if matches!(q, "marshal.loads" | "marshal.load") {
            self.add("MB302", node, via.to_string());
        } else if q == "yaml.load" || q == "yaml.load_all" {
            let loader = kw
                .iter()
                .find(|(k, _)| *k == "Loader")
                .map(|(_, v)| *v)
                .or_else(|| pos.get(1).copied());
            let safe = loader.is_some_and(|l| {
                let t = self.text(l);
                t.contains("SafeLoader") || t.contains("BaseLoader") || t.contains("CSafeLoader")
            });
            if !safe {
                self.add("MB506", node, via.to_string());
            }
        } else if q == "yaml.unsafe_load" || q == "yaml.full_load" {
            self.add("MB506", node, via.to_string());
        }
        if matches!(
            q,
            "socket.socket"
                | "socket.create_connection"
                | "socket.fromfd"
                | "socket.create_server"
                | "socket.socketpair"
        ) {
            self.add("MB401", node, via.to_string());
            if q != "socket.socketpair" {
                self.facts.socket.get_or_insert(pos_of(node));
                self.facts.network = true;
            }
            let raw = pos.iter().chain(kw.iter().map(|(_, v)| v)).any(|a| {
                let t = self.text(*a);
                ["SOCK_RAW", "AF_PACKET", "IPPROTO_RAW", "ETH_P_ALL"]
                    .iter()
                    .any(|r| t.contains(r))
            });
            if raw {
                self.add("MB207", node, "raw socket");
            }
        }
        if is_network_client(q) {
            self.add("MB310", node, via.to_string());
            self.facts.network = true;
        }
        if q.starts_with("ctypes.") {
            self.add("MB410", node, via.to_string());
            self.facts.ctypes.get_or_insert(pos_of(node));
            if let Some(f) = q.strip_prefix("ctypes.CDLL().") {
                let f = f.split('.').next().unwrap_or(f);
                if PRIV_LIBC.contains(&f) {
                    self.add("MB210", node, format!("libc {f}() through ctypes"));
                }
                if matches!(f, "mprotect" | "mmap") {
                    self.facts.exec_memory = true;
                }
            }
        }
        if KEYLOGGERS.contains(&q) {
            self.add("MB212", node, via.to_string());
        }
        if q == "sys._getframe" || q == "inspect.currentframe" {
            self.add("MB415", node, via.to_string());
        }
        if DECODERS.contains(&q) {
            let blob = pos.first().and_then(|a| {
                self.reset_budget();
                self.fold(*a, scope, 0)
            });
            if blob.is_some_and(|b| is_blob(&b)) {
                self.add("MB420", node, format!("{q} of a long encoded literal"));
            }
        }
    }

    fn check_method(
        &mut self,
        m: &'t str,
        func: Node<'t>,
        node: Node<'t>,
        scope: usize,
        pos: &[Node<'t>],
        kw: &[(&'t str, Node<'t>)],
    ) {
        let Some(obj) = func.child_by_field_name("object") else {
            return;
        };
        let writes = match m {
            "write_text" | "write_bytes" | "touch" | "unlink" | "rmdir" | "mkdir" | "chmod"
            | "symlink_to" | "hardlink_to" | "rename" | "replace" => true,
            "open" => {
                let mode = pos
                    .first()
                    .copied()
                    .or_else(|| kw.iter().find(|(k, _)| *k == "mode").map(|(_, v)| *v));
                self.reset_budget();
                mode.and_then(|md| self.fold(md, scope, 0))
                    .is_some_and(|md| md.contains(['w', 'a', 'x', '+']))
            }
            _ => false,
        };
        if !writes {
            return;
        }
        // Only receivers that are recognisably paths, so `s.replace(a, b)` on
        // an ordinary string is not taken for a file operation.
        self.reset_budget();
        let is_pathish = obj.kind() == "binary_operator" || self.path_call(obj, scope);
        if is_pathish {
            self.reset_budget();
            if let Some(p) = self.fold_path(obj, scope, 0) {
                self.classify_write(&p, &format!("Path.{m}"), node);
            }
            self.check_self_delete("unlink", obj, node);
        }
        if m == "chmod" && is_pathish {
            if let Some(md) = pos.first() {
                self.check_mode(*md, scope, node);
            }
        }
    }

    fn path_call(&self, n: Node<'t>, scope: usize) -> bool {
        match n.kind() {
            "call" => n
                .child_by_field_name("function")
                .and_then(|f| self.resolve(f, scope, 0))
                .is_some_and(|q| PATH_TYPES.contains(&q.as_str())),
            "identifier" => self
                .lookup(self.text(n), scope, n.start_byte())
                .is_some_and(|bs| {
                    bs.iter().any(|b| match *b {
                        Bind::Expr(v, s) => {
                            v.kind() == "binary_operator"
                                || (v.kind() == "call" && self.path_call(v, s))
                        }
                        _ => false,
                    })
                }),
            "parenthesized_expression" => {
                n.named_child(0).is_some_and(|k| self.path_call(k, scope))
            }
            _ => false,
        }
    }

    fn check_strings(&mut self) {
        let strings = std::mem::take(&mut self.strings);
        for s in strings {
            let Some(v) = string_value(self.src, s) else {
                continue;
            };
            self.check_string(&v, s);
        }
    }

    fn check_string(&mut self, v: &str, node: Node<'t>) {
        let lower = v.to_ascii_lowercase();
        if METADATA_HOSTS.iter().any(|h| lower.contains(h)) {
            self.add("MB206", node, format!("{:?}", shorten(v)));
        }
        if CREDENTIAL_PATHS.iter().any(|c| lower.contains(c)) {
            self.add("MB205", node, format!("{:?}", shorten(v)));
            self.facts.creds.get_or_insert(pos_of(node));
        }
        if lower.contains("/dev/tcp/") || lower.contains("/dev/udp/") {
            self.add("MB901", node, "bash /dev/tcp redirection");
        }
        if MINER_MARKERS.iter().any(|m| lower.contains(m)) {
            self.add("MB905", node, format!("{:?}", shorten(v)));
        }
        if lower.contains("ld_preload") || lower.contains("/etc/ld.so.preload") {
            self.add("MB209", node, format!("{:?}", shorten(v)));
        }
        if v == "0.0.0.0" {
            self.add("MB104", node, "0.0.0.0");
        }
        let t = v.trim();
        let base = t
            .split_whitespace()
            .next()
            .unwrap_or("")
            .rsplit('/')
            .next()
            .unwrap_or("");
        if (t.starts_with("/bin/") || t.starts_with("/usr/bin/"))
            && matches!(base, "sh" | "bash" | "zsh" | "dash" | "ksh")
        {
            self.facts.shell_spawn.get_or_insert(pos_of(node));
        }
    }

    fn composites(&mut self) {
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

/// Is this string (or the implicit concatenation it is part of) a statement
/// of its own, like a docstring?
fn is_bare_statement(string: Node) -> bool {
    let mut up = string.parent();
    if up.is_some_and(|p| p.kind() == "concatenated_string") {
        up = up.and_then(|p| p.parent());
    }
    up.is_some_and(|p| p.kind() == "expression_statement")
}

fn pos_of(n: Node) -> (usize, usize) {
    pos(n)
}

fn normalize(q: String) -> String {
    for prefix in [
        "builtins.__builtins__",
        "__builtins__",
        "builtins.builtins",
        "__builtin__",
    ] {
        if let Some(rest) = q.strip_prefix(prefix) {
            if rest.is_empty() || rest.starts_with('.') {
                return format!("builtins{rest}");
            }
        }
    }
    // bytes.fromhex and str.maketrans are methods of builtin types.
    if q.starts_with("builtins.bytes.") || q.starts_with("builtins.str.") {
        return q["builtins.".len()..].to_string();
    }
    if let Some(rest) = q.strip_prefix("builtins.__dict__.") {
        return format!("builtins.{rest}");
    }
    // `import os.path as p` and `from os import path` both reach posixpath's
    // functions under os.path; cPickle and _pickle are pickle.
    for (from, to) in [
        ("posixpath.", "os.path."),
        ("cPickle.", "pickle."),
        ("_pickle.", "pickle."),
        ("urllib2.", "urllib.request."),
        ("nt.", "os."),
        ("posix.", "os."),
    ] {
        if let Some(rest) = q.strip_prefix(from) {
            return format!("{to}{rest}");
        }
    }
    q
}

fn shorten(s: &str) -> String {
    if s.chars().count() <= 60 {
        s.to_string()
    } else {
        let mut o: String = s.chars().take(59).collect();
        o.push('…');
        o
    }
}

/// The value of a string literal without interpolations, escapes decoded.
fn string_value(src: &str, n: Node) -> Option<String> {
    let mut c = n.walk();
    if n.named_children(&mut c)
        .any(|k| k.kind() == "interpolation")
    {
        return None;
    }
    let text = src.get(n.byte_range())?;
    let quote_at = text.find(['\'', '"'])?;
    let prefix = text[..quote_at].to_ascii_lowercase();
    let body = &text[quote_at..];
    let q = if body.starts_with("\"\"\"") || body.starts_with("'''") {
        3
    } else {
        1
    };
    if body.len() < 2 * q {
        return Some(String::new());
    }
    let inner = body.get(q..body.len() - q)?;
    if prefix.contains('r') {
        return Some(inner.to_string());
    }
    Some(unescape(inner))
}

fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars().peekable();
    while let Some(ch) = it.next() {
        if ch != '\\' {
            out.push(ch);
            continue;
        }
        match it.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('0') => out.push('\0'),
            Some('\\') => out.push('\\'),
            Some('\'') => out.push('\''),
            Some('"') => out.push('"'),
            Some('\n') => {}
            Some('x') => {
                let h: String = [it.next(), it.next()].into_iter().flatten().collect();
                match u32::from_str_radix(&h, 16).ok().and_then(char::from_u32) {
                    Some(c) => out.push(c),
                    None => {
                        out.push_str("\\x");
                        out.push_str(&h);
                    }
                }
            }
            Some(o) => {
                out.push('\\');
                out.push(o);
            }
            None => out.push('\\'),
        }
    }
    out
}

fn int_value(t: &str) -> Option<i64> {
    let t = t.replace('_', "").to_ascii_lowercase();
    if let Some(h) = t.strip_prefix("0x") {
        i64::from_str_radix(h, 16).ok()
    } else if let Some(o) = t.strip_prefix("0o") {
        i64::from_str_radix(o, 8).ok()
    } else if let Some(b) = t.strip_prefix("0b") {
        i64::from_str_radix(b, 2).ok()
    } else {
        t.parse().ok()
    }
}

fn stat_const(name: &str) -> Option<i64> {
    Some(match name {
        "S_ISUID" => 0o4000,
        "S_ISGID" => 0o2000,
        "S_ISVTX" => 0o1000,
        "S_IRWXU" => 0o700,
        "S_IRWXG" => 0o070,
        "S_IRWXO" => 0o007,
        "S_IWOTH" => 0o002,
        "S_IROTH" => 0o004,
        "S_IXOTH" => 0o001,
        "S_IRUSR" => 0o400,
        "S_IWUSR" => 0o200,
        "S_IXUSR" => 0o100,
        "S_IRGRP" => 0o040,
        "S_IWGRP" => 0o020,
        "S_IXGRP" => 0o010,
        _ => return None,
    })
}

fn join_path(parts: &[String]) -> String {
    let mut out = String::new();
    for p in parts {
        if p.starts_with('/') || out.is_empty() {
            out = p.clone();
        } else {
            if !out.ends_with('/') {
                out.push('/');
            }
            out.push_str(p);
        }
    }
    out
}

fn rot13(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            'a'..='m' | 'A'..='M' => char::from(c as u8 + 13),
            'n'..='z' | 'N'..='Z' => char::from(c as u8 - 13),
            _ => c,
        })
        .collect()
}

fn hexdecode(s: &str) -> Option<Vec<u8>> {
    let clean: Vec<u8> = s.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    if !clean.len().is_multiple_of(2) {
        return None;
    }
    clean
        .chunks(2)
        .map(|p| {
            let h = std::str::from_utf8(p).ok()?;
            u8::from_str_radix(h, 16).ok()
        })
        .collect()
}

fn b64decode(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let mut acc: u32 = 0;
    let mut bits = 0u32;
    for b in s.bytes() {
        let v = match b {
            b'A'..=b'Z' => b - b'A',
            b'a'..=b'z' => b - b'a' + 26,
            b'0'..=b'9' => b - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            b'=' => break,
            b if b.is_ascii_whitespace() => continue,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push(((acc >> bits) & 0xff) as u8);
        }
    }
    Some(out)
}

fn is_blob(s: &str) -> bool {
    s.len() >= BLOB_LEN
        && s.bytes().all(|b| {
            b.is_ascii_alphanumeric()
                || matches!(b, b'+' | b'/' | b'=' | b'-' | b'_' | b'\n' | b'\r' | b' ')
        })
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

fn is_network_client(q: &str) -> bool {
    NETWORK_CLIENTS.contains(&q)
        || ["requests.", "httpx.", "aiohttp.", "urllib3."]
            .iter()
            .any(|p| {
                q.starts_with(p)
                    && q[p.len()..]
                        .chars()
                        .next()
                        .is_some_and(|c| c.is_ascii_lowercase())
                    && !q.ends_with(".exceptions")
            })
}

const BUILTINS: &[&str] = &[
    "exec",
    "eval",
    "compile",
    "execfile",
    "open",
    "getattr",
    "__import__",
    "globals",
    "vars",
    "locals",
    "chr",
    "str",
    "bytes",
    "input",
    "__builtins__",
];

const SHELL_FUNCS: &[&str] = &[
    "os.system",
    "os.popen",
    "os.popen2",
    "os.popen3",
    "os.popen4",
    "commands.getoutput",
    "commands.getstatusoutput",
    "subprocess.getoutput",
    "subprocess.getstatusoutput",
    "popen2.popen2",
    "popen2.popen3",
    "popen2.popen4",
];

const SUBPROCESS: &[&str] = &[
    "subprocess.Popen",
    "subprocess.run",
    "subprocess.call",
    "subprocess.check_call",
    "subprocess.check_output",
    "asyncio.create_subprocess_shell",
    "asyncio.create_subprocess_exec",
];

const EXEC_FUNCS: &[&str] = &[
    "os.posix_spawn",
    "os.posix_spawnp",
    "os.startfile",
    "pty.spawn",
];

const DESERIALIZERS: &[&str] = &[
    "pickle.load",
    "pickle.loads",
    "pickle.Unpickler",
    "dill.load",
    "dill.loads",
    "shelve.open",
    "joblib.load",
    "pandas.read_pickle",
    "jsonpickle.decode",
    "torch.load",
];

const DECODERS: &[&str] = &[
    "base64.b64decode",
    "base64.standard_b64decode",
    "base64.urlsafe_b64decode",
    "base64.b32decode",
    "base64.b16decode",
    "base64.a85decode",
    "base64.b85decode",
    "base64.decodebytes",
    "base64.decodestring",
    "binascii.unhexlify",
    "binascii.a2b_base64",
    "binascii.a2b_hex",
    "bytes.fromhex",
    "codecs.decode",
    "zlib.decompress",
    "gzip.decompress",
    "bz2.decompress",
    "lzma.decompress",
    "marshal.loads",
    "marshal.load",
];

const NETWORK_CLIENTS: &[&str] = &[
    "urllib.request.urlopen",
    "urllib.request.urlretrieve",
    "urllib.urlopen",
    "urllib.urlretrieve",
    "http.client.HTTPConnection",
    "http.client.HTTPSConnection",
    "smtplib.SMTP",
    "smtplib.SMTP_SSL",
    "ftplib.FTP",
    "ftplib.FTP_TLS",
    "telnetlib.Telnet",
    "paramiko.SSHClient",
    "socket.create_connection",
];

const PATH_TYPES: &[&str] = &[
    "pathlib.Path",
    "pathlib.PosixPath",
    "pathlib.PurePath",
    "pathlib.PurePosixPath",
    "os.path.join",
    "os.path.expanduser",
];

const PRIV_LIBC: &[&str] = &[
    "setuid",
    "setgid",
    "seteuid",
    "setegid",
    "setresuid",
    "setresgid",
    "setreuid",
    "setregid",
    "ptrace",
    "mount",
    "umount",
    "umount2",
    "unshare",
    "setns",
    "mprotect",
    "mmap",
    "prctl",
    "syscall",
    "init_module",
    "finit_module",
    "delete_module",
    "chroot",
    "pivot_root",
    "capset",
    "execve",
    "system",
    "kill",
];

const KEYLOGGERS: &[&str] = &[
    "pynput.keyboard.Listener",
    "keyboard.on_press",
    "keyboard.hook",
    "keyboard.record",
    "pyHook.HookManager",
];

const SYSTEM_PREFIXES: &[&str] = &[
    "/etc",
    "/usr",
    "/boot",
    "/proc/sys",
    "/proc/sysrq-trigger",
    "/sys",
    "/dev",
    "/bin",
    "/sbin",
    "/lib",
    "/lib64",
    "/root",
    "/var/spool/cron",
    "/var/lib",
];

const PERSISTENCE: &[&str] = &[
    "authorized_keys",
    "/etc/sudoers",
    "/etc/passwd",
    "/etc/shadow",
    "/etc/group",
    "/etc/crontab",
    "/etc/cron.",
    "/var/spool/cron",
    "/etc/ld.so.preload",
    "/etc/rc.local",
    "/etc/init.d/",
    "/etc/systemd/system",
    "/lib/systemd/system",
    "/etc/profile",
    "/etc/bash.bashrc",
    "/.bashrc",
    "/.bash_profile",
    "/.profile",
    "/.config/autostart",
];

const CREDENTIAL_PATHS: &[&str] = &[
    "/etc/shadow",
    "/etc/gshadow",
    ".ssh/id_",
    "id_rsa",
    "id_ed25519",
    "id_ecdsa",
    "id_dsa",
    ".aws/credentials",
    ".netrc",
    ".docker/config.json",
    ".kube/config",
    ".git-credentials",
    ".pgpass",
    ".gnupg",
    "login data",
    "cookies.sqlite",
    "logins.json",
    "key4.db",
    ".config/gcloud",
    ".azure/",
    "/etc/sudoers",
];

const METADATA_HOSTS: &[&str] = &[
    "169.254.169.254",
    "metadata.google.internal",
    "169.254.170.2",
    "fd00:ec2::254",
    "100.100.100.200",
];

const MINER_MARKERS: &[&str] = &[
    "stratum+tcp",
    "stratum+ssl",
    "xmrig",
    "minerd",
    "cryptonight",
    "coinhive",
    "nicehash",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_unescape_and_prefixes() {
        assert_eq!(unescape(r"a\x41\n\\"), "aA\n\\");
        assert_eq!(rot13("flfgrz"), "system");
        assert_eq!(
            b64decode("b3Muc3lzdGVt").as_deref(),
            Some(&b"os.system"[..])
        );
        assert_eq!(hexdecode("73797374656d").as_deref(), Some(&b"system"[..]));
        assert_eq!(int_value("0o4755"), Some(0o4755));
        assert_eq!(int_value("0x1_0"), Some(16));
        assert_eq!(
            join_path(&["/etc".into(), "cron.d".into(), "x".into()]),
            "/etc/cron.d/x"
        );
        assert_eq!(normalize("__builtins__.exec".into()), "builtins.exec");
        assert_eq!(normalize("posixpath.join".into()), "os.path.join");
    }
}
