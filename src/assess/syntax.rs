//! The syntax tree the assessor walks.
//!
//! Parsing is ruff's parser (`ruff_python_parser`): hand-written, error
//! recovering, maintained with Ruff, and about 15x faster here than
//! tree-sitter-python, which made the assessor's time budget unreachable.
//! Its typed AST is lowered into a flat arena of uniform nodes (a kind, a
//! byte range, the field it fills in its parent), so the rules walk one
//! small, iterative, parser-independent shape instead of some sixty node
//! types. Kind and field names follow tree-sitter-python's grammar, which the
//! rules were first written against.
//!
//! Hostile nesting: ruff's parser grows its own stack (stacker), but its AST is
//! dropped recursively. Lowering stops at a depth cap and moves whatever lies
//! deeper out of the AST, to be taken apart iteratively ([`dismantle`]), so
//! neither the lowering nor the drop can overflow the stack.

use ruff_python_ast::{
    self as ast, Expr, ExprNoneLiteral, FStringPart, InterpolatedStringElement, Number, Parameters,
    Stmt, UnaryOp,
};
use ruff_python_parser::{parse_unchecked, Mode, ParseOptions};
use ruff_text_size::{Ranged, TextRange};

const NONE: u32 = u32::MAX;

struct Data {
    kind: &'static str,
    /// The field this node fills in its parent ("" for none).
    field: &'static str,
    /// Operator of binary/unary/augmented operations.
    op: &'static str,
    start: u32,
    end: u32,
    parent: u32,
    first_child: u32,
    last_child: u32,
    next_sibling: u32,
}

pub(super) struct Tree {
    nodes: Vec<Data>,
    line_starts: Vec<u32>,
    /// Parse errors: byte offset and the parser's message.
    pub errors: Vec<(usize, String)>,
    /// Byte offset of the first expression nested past the depth cap.
    pub truncated_at: Option<usize>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Point {
    pub row: usize,
    pub column: usize,
}

/// Parse `text` and lower it; expressions nested deeper than `max_depth`
/// arena levels are left out (see `truncated_at`).
pub(super) fn parse(text: &str, max_depth: usize) -> Tree {
    let parsed = parse_unchecked(text, ParseOptions::from(Mode::Module));
    let errors = parsed
        .errors()
        .iter()
        .map(|e| (e.location.start().to_usize(), e.error.to_string()))
        .collect();
    let mut module = parsed.into_syntax();
    let mut lower = Lower {
        tree: Tree {
            nodes: Vec::with_capacity(text.len() / 4),
            line_starts: line_starts(text),
            errors,
            truncated_at: None,
        },
        open: Vec::new(),
        cap: max_depth.saturating_add(2),
        deep: Vec::new(),
    };
    lower.open("module", "", 0, text.len());
    if let ast::Mod::Module(m) = &mut module {
        lower.block_items(&mut m.body);
    }
    lower.close();
    for e in std::mem::take(&mut lower.deep) {
        dismantle(e);
    }
    lower.tree
}

fn line_starts(text: &str) -> Vec<u32> {
    std::iter::once(0)
        .chain(
            text.bytes()
                .enumerate()
                .filter(|(_, b)| *b == b'\n')
                .map(|(i, _)| to_u32(i + 1)),
        )
        .collect()
}

fn to_u32(v: usize) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX - 1)
}

impl Tree {
    pub fn root(&self) -> Node<'_> {
        Node { tree: self, id: 0 }
    }

    pub fn point(&self, byte: usize) -> Point {
        let b = to_u32(byte);
        let row = self
            .line_starts
            .partition_point(|&s| s <= b)
            .saturating_sub(1);
        let start = self.line_starts.get(row).copied().unwrap_or(0);
        Point {
            row,
            column: (b - start) as usize,
        }
    }
}

#[derive(Clone, Copy)]
pub(super) struct Node<'t> {
    tree: &'t Tree,
    id: u32,
}

impl PartialEq for Node<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id && std::ptr::eq(self.tree, other.tree)
    }
}

impl<'t> Node<'t> {
    fn data(&self) -> &'t Data {
        &self.tree.nodes[self.id as usize]
    }

    fn at(&self, id: u32) -> Option<Node<'t>> {
        (id != NONE).then_some(Node {
            tree: self.tree,
            id,
        })
    }

    pub fn kind(&self) -> &'static str {
        self.data().kind
    }

    pub fn operator(&self) -> &'static str {
        self.data().op
    }

    pub fn start_byte(&self) -> usize {
        self.data().start as usize
    }

    pub fn byte_range(&self) -> std::ops::Range<usize> {
        self.data().start as usize..self.data().end as usize
    }

    pub fn start_position(&self) -> Point {
        self.tree.point(self.start_byte())
    }

    pub fn parent(&self) -> Option<Node<'t>> {
        self.at(self.data().parent)
    }

    fn children(&self) -> impl Iterator<Item = Node<'t>> + 't {
        let tree = self.tree;
        let mut next = self.data().first_child;
        std::iter::from_fn(move || {
            let id = next;
            if id == NONE {
                return None;
            }
            next = tree.nodes[id as usize].next_sibling;
            Some(Node { tree, id })
        })
    }

    pub fn child_count(&self) -> usize {
        self.children().count()
    }

    pub fn named_child(&self, i: usize) -> Option<Node<'t>> {
        self.children().nth(i)
    }

    /// Every child (all nodes of this tree are named); the cursor argument
    /// keeps the call sites' tree-sitter shape and is not needed.
    pub fn named_children(&self, _c: &mut Cursor<'t>) -> impl Iterator<Item = Node<'t>> + 't {
        self.children()
    }

    pub fn child_by_field_name(&self, field: &str) -> Option<Node<'t>> {
        self.children().find(|c| c.data().field == field)
    }

    pub fn children_by_field_name(
        &self,
        field: &'static str,
        _c: &mut Cursor<'t>,
    ) -> impl Iterator<Item = Node<'t>> + 't {
        self.children().filter(move |c| c.data().field == field)
    }

    /// A cursor confined to this node's subtree.
    pub fn walk(&self) -> Cursor<'t> {
        Cursor {
            root: self.id,
            node: *self,
        }
    }
}

pub(super) struct Cursor<'t> {
    root: u32,
    node: Node<'t>,
}

impl<'t> Cursor<'t> {
    pub fn node(&self) -> Node<'t> {
        self.node
    }

    fn goto(&mut self, id: u32) -> bool {
        match self.node.at(id) {
            Some(n) => {
                self.node = n;
                true
            }
            None => false,
        }
    }

    pub fn goto_first_child(&mut self) -> bool {
        self.goto(self.node.data().first_child)
    }

    pub fn goto_next_sibling(&mut self) -> bool {
        self.node.id != self.root && self.goto(self.node.data().next_sibling)
    }

    pub fn goto_parent(&mut self) -> bool {
        self.node.id != self.root && self.goto(self.node.data().parent)
    }
}

// ------------------------------------------------------------- lowering --

struct Lower {
    tree: Tree,
    open: Vec<u32>,
    cap: usize,
    /// Subtrees past the cap, moved out of the AST to be dropped iteratively.
    deep: Vec<Expr>,
}

impl Lower {
    fn push(&mut self, kind: &'static str, field: &'static str, start: usize, end: usize) -> u32 {
        let id = to_u32(self.tree.nodes.len());
        let parent = self.open.last().copied().unwrap_or(NONE);
        self.tree.nodes.push(Data {
            kind,
            field,
            op: "",
            start: to_u32(start),
            end: to_u32(end),
            parent,
            first_child: NONE,
            last_child: NONE,
            next_sibling: NONE,
        });
        if parent != NONE {
            let p = &mut self.tree.nodes[parent as usize];
            let prev = p.last_child;
            p.last_child = id;
            if prev == NONE {
                p.first_child = id;
            } else {
                self.tree.nodes[prev as usize].next_sibling = id;
            }
        }
        id
    }

    fn open(&mut self, kind: &'static str, field: &'static str, start: usize, end: usize) -> u32 {
        let id = self.push(kind, field, start, end);
        self.open.push(id);
        id
    }

    fn open_r(&mut self, kind: &'static str, field: &'static str, r: TextRange) -> u32 {
        self.open(kind, field, r.start().to_usize(), r.end().to_usize())
    }

    fn close(&mut self) {
        self.open.pop();
    }

    fn leaf(&mut self, kind: &'static str, field: &'static str, r: TextRange) -> u32 {
        self.push(kind, field, r.start().to_usize(), r.end().to_usize())
    }

    fn set_op(&mut self, id: u32, op: &'static str) {
        self.tree.nodes[id as usize].op = op;
    }

    // ----------------------------------------------------------- statements

    fn block_items(&mut self, body: &mut [Stmt]) {
        for s in body {
            self.stmt(s);
        }
    }

    fn block(&mut self, field: &'static str, body: &mut [Stmt], fallback: TextRange) {
        let start = body.first().map_or(fallback.end(), |s| s.start());
        let end = body.last().map_or(fallback.end(), |s| s.end());
        self.open_r(field_kind(field), field, TextRange::new(start, end));
        self.block_items(body);
        self.close();
    }

    fn stmt(&mut self, s: &mut Stmt) {
        let r = s.range();
        match s {
            Stmt::FunctionDef(f) => {
                self.decorators(&mut f.decorator_list);
                self.open_r("function_definition", "", r);
                self.leaf("identifier", "name", f.name.range);
                self.parameters("parameters", "parameters", &mut f.parameters);
                self.opt_expr(f.returns.as_deref_mut(), "return_type");
                self.block("body", &mut f.body, r);
                self.close();
            }
            Stmt::ClassDef(c) => {
                self.decorators(&mut c.decorator_list);
                self.open_r("class_definition", "", r);
                self.leaf("identifier", "name", c.name.range);
                if let Some(a) = c.arguments.as_deref_mut() {
                    self.arguments(a, "superclasses");
                }
                self.block("body", &mut c.body, r);
                self.close();
            }
            Stmt::Return(x) => self.with_exprs("return_statement", r, [x.value.as_deref_mut()]),
            Stmt::Delete(x) => {
                self.open_r("delete_statement", "", r);
                self.exprs(&mut x.targets, "");
                self.close();
            }
            Stmt::TypeAlias(x) => {
                self.open_r("type_alias_statement", "", r);
                self.expr(&mut x.name, "left");
                self.expr(&mut x.value, "right");
                self.close();
            }
            Stmt::Assign(a) => self.assign(a, r),
            Stmt::AugAssign(a) => {
                let id = self.open_r("augmented_assignment", "", r);
                self.set_op(id, a.op.as_str());
                self.expr(&mut a.target, "left");
                self.expr(&mut a.value, "right");
                self.close();
            }
            Stmt::AnnAssign(a) => {
                self.open_r("assignment", "", r);
                self.expr(&mut a.target, "left");
                self.expr(&mut a.annotation, "type");
                self.opt_expr(a.value.as_deref_mut(), "right");
                self.close();
            }
            Stmt::For(f) => {
                self.open_r("for_statement", "", r);
                self.expr(&mut f.target, "left");
                self.expr(&mut f.iter, "right");
                self.block("body", &mut f.body, r);
                self.else_block(&mut f.orelse, r);
                self.close();
            }
            Stmt::While(w) => {
                self.open_r("while_statement", "", r);
                self.expr(&mut w.test, "condition");
                self.block("body", &mut w.body, r);
                self.else_block(&mut w.orelse, r);
                self.close();
            }
            Stmt::If(i) => {
                self.open_r("if_statement", "", r);
                self.expr(&mut i.test, "condition");
                self.block("consequence", &mut i.body, r);
                for c in &mut i.elif_else_clauses {
                    let kind = if c.test.is_some() {
                        "elif_clause"
                    } else {
                        "else_clause"
                    };
                    self.open_r(kind, "alternative", c.range);
                    self.opt_expr(c.test.as_mut(), "condition");
                    self.block("consequence", &mut c.body, c.range);
                    self.close();
                }
                self.close();
            }
            Stmt::With(w) => {
                self.open_r("with_statement", "", r);
                for item in &mut w.items {
                    match item.optional_vars.as_deref_mut() {
                        Some(vars) => {
                            self.open_r("as_pattern", "", item.range);
                            self.expr(&mut item.context_expr, "");
                            self.open_r("as_pattern_target", "alias", vars.range());
                            self.expr(vars, "");
                            self.close();
                            self.close();
                        }
                        None => self.expr(&mut item.context_expr, ""),
                    }
                }
                self.block("body", &mut w.body, r);
                self.close();
            }
            Stmt::Match(m) => {
                self.open_r("match_statement", "", r);
                self.expr(&mut m.subject, "subject");
                for c in &mut m.cases {
                    self.open_r("case_clause", "", c.range);
                    self.opt_expr(c.guard.as_deref_mut(), "guard");
                    self.block("consequence", &mut c.body, c.range);
                    self.close();
                }
                self.close();
            }
            Stmt::Raise(x) => self.with_exprs(
                "raise_statement",
                r,
                [x.exc.as_deref_mut(), x.cause.as_deref_mut()],
            ),
            Stmt::Try(t) => {
                self.open_r("try_statement", "", r);
                self.block("body", &mut t.body, r);
                for ast::ExceptHandler::ExceptHandler(h) in &mut t.handlers {
                    self.open_r("except_clause", "", h.range);
                    match (&h.name, h.type_.as_deref_mut()) {
                        (Some(name), Some(ty)) => {
                            self.open_r("as_pattern", "", TextRange::new(ty.start(), name.end()));
                            self.expr(ty, "");
                            self.open_r("as_pattern_target", "alias", name.range);
                            self.leaf("identifier", "", name.range);
                            self.close();
                            self.close();
                        }
                        (_, ty) => self.opt_expr(ty, ""),
                    }
                    self.block("body", &mut h.body, h.range);
                    self.close();
                }
                self.else_block(&mut t.orelse, r);
                if !t.finalbody.is_empty() {
                    self.block("finally_clause", &mut t.finalbody, r);
                }
                self.close();
            }
            Stmt::Assert(x) => self.with_exprs(
                "assert_statement",
                r,
                [Some(&mut *x.test), x.msg.as_deref_mut()],
            ),
            Stmt::Import(i) => {
                self.open_r("import_statement", "", r);
                for a in &i.names {
                    self.import_name(a);
                }
                self.close();
            }
            Stmt::ImportFrom(i) => {
                self.open_r("import_from_statement", "", r);
                match &i.module {
                    _ if i.level > 0 => {
                        self.leaf("relative_import", "module_name", r);
                    }
                    Some(m) => {
                        self.leaf("dotted_name", "module_name", m.range);
                    }
                    None => {}
                }
                for a in &i.names {
                    if a.name.as_str() == "*" {
                        self.leaf("wildcard_import", "", a.range);
                    } else {
                        self.import_name(a);
                    }
                }
                self.close();
            }
            Stmt::Global(g) => {
                self.open_r("global_statement", "", r);
                for n in &g.names {
                    self.leaf("identifier", "", n.range);
                }
                self.close();
            }
            Stmt::Nonlocal(g) => {
                self.open_r("nonlocal_statement", "", r);
                for n in &g.names {
                    self.leaf("identifier", "", n.range);
                }
                self.close();
            }
            Stmt::Expr(e) => self.with_exprs("expression_statement", r, [Some(&mut *e.value)]),
            Stmt::Pass(_) => {
                self.leaf("pass_statement", "", r);
            }
            Stmt::Break(_) => {
                self.leaf("break_statement", "", r);
            }
            Stmt::Continue(_) => {
                self.leaf("continue_statement", "", r);
            }
            Stmt::IpyEscapeCommand(_) => {
                self.leaf("ipython_command", "", r);
            }
        }
    }

    fn with_exprs<const N: usize>(
        &mut self,
        kind: &'static str,
        r: TextRange,
        exprs: [Option<&mut Expr>; N],
    ) {
        self.open_r(kind, "", r);
        for e in exprs.into_iter().flatten() {
            self.expr(e, "");
        }
        self.close();
    }

    fn else_block(&mut self, body: &mut [Stmt], r: TextRange) {
        if !body.is_empty() {
            self.block("alternative", body, r);
        }
    }

    fn decorators(&mut self, list: &mut [ast::Decorator]) {
        for d in list {
            self.open_r("decorator", "", d.range);
            self.expr(&mut d.expression, "");
            self.close();
        }
    }

    fn import_name(&mut self, a: &ast::Alias) {
        match &a.asname {
            Some(alias) => {
                self.open_r("aliased_import", "name", a.range);
                self.leaf("dotted_name", "name", a.name.range);
                self.leaf("identifier", "alias", alias.range);
                self.close();
            }
            None => {
                self.leaf("dotted_name", "name", a.name.range);
            }
        }
    }

    /// `a = b = v` as tree-sitter shapes it: assignment(a, assignment(b, v)).
    fn assign(&mut self, a: &mut ast::StmtAssign, r: TextRange) {
        let value_end = a.value.end();
        let mut opened = 0;
        for (i, t) in a.targets.iter_mut().enumerate() {
            let field = if i == 0 { "" } else { "right" };
            self.open_r(
                "assignment",
                field,
                TextRange::new(t.start(), value_end.max(r.start())),
            );
            self.expr(t, "left");
            opened += 1;
        }
        self.expr(&mut a.value, "right");
        for _ in 0..opened {
            self.close();
        }
    }

    fn parameters(&mut self, kind: &'static str, field: &'static str, p: &mut Parameters) {
        self.open_r(kind, field, p.range);
        let (posonly, args, kwonly) = (&mut p.posonlyargs, &mut p.args, &mut p.kwonlyargs);
        for pw in posonly.iter_mut().chain(args.iter_mut()) {
            self.parameter(pw);
        }
        if let Some(v) = p.vararg.as_deref_mut() {
            self.splat_param("list_splat_pattern", v);
        }
        for pw in kwonly.iter_mut() {
            self.parameter(pw);
        }
        if let Some(k) = p.kwarg.as_deref_mut() {
            self.splat_param("dictionary_splat_pattern", k);
        }
        self.close();
    }

    fn parameter(&mut self, pw: &mut ast::ParameterWithDefault) {
        let prm = &mut pw.parameter;
        match (pw.default.as_deref_mut(), prm.annotation.as_deref_mut()) {
            (Some(d), ann) => {
                let kind = if ann.is_some() {
                    "typed_default_parameter"
                } else {
                    "default_parameter"
                };
                self.open_r(kind, "", pw.range);
                self.leaf("identifier", "name", prm.name.range);
                self.opt_expr(ann, "type");
                self.expr(d, "value");
                self.close();
            }
            (None, Some(ann)) => {
                self.open_r("typed_parameter", "", pw.range);
                self.leaf("identifier", "", prm.name.range);
                self.expr(ann, "type");
                self.close();
            }
            (None, None) => {
                self.leaf("identifier", "", prm.name.range);
            }
        }
    }

    fn splat_param(&mut self, kind: &'static str, p: &mut ast::Parameter) {
        self.open_r(kind, "", p.range);
        self.leaf("identifier", "", p.name.range);
        self.opt_expr(p.annotation.as_deref_mut(), "type");
        self.close();
    }

    /// Call arguments in source order (ruff keeps positional and keyword
    /// arguments apart).
    fn arguments(&mut self, a: &mut ast::Arguments, field: &'static str) {
        self.open_r("argument_list", field, a.range);
        let mut items: Vec<ArgItem> = a.args.iter_mut().map(ArgItem::Pos).collect();
        items.extend(a.keywords.iter_mut().map(ArgItem::Kw));
        items.sort_by_key(|i| match i {
            ArgItem::Pos(e) => e.start(),
            ArgItem::Kw(k) => k.range.start(),
        });
        for item in items {
            match item {
                ArgItem::Pos(e) => self.expr(e, ""),
                ArgItem::Kw(k) => match &k.arg {
                    Some(name) => {
                        self.open_r("keyword_argument", "", k.range);
                        self.leaf("identifier", "name", name.range);
                        self.expr(&mut k.value, "value");
                        self.close();
                    }
                    None => {
                        self.open_r("dictionary_splat", "", k.range);
                        self.expr(&mut k.value, "");
                        self.close();
                    }
                },
            }
        }
        self.close();
    }

    // ---------------------------------------------------------- expressions

    fn exprs(&mut self, list: &mut [Expr], field: &'static str) {
        for e in list {
            self.expr(e, field);
        }
    }

    fn opt_expr(&mut self, e: Option<&mut Expr>, field: &'static str) {
        if let Some(e) = e {
            self.expr(e, field);
        }
    }

    fn expr(&mut self, e: &mut Expr, field: &'static str) {
        let r = e.range();
        if self.open.len() >= self.cap {
            self.tree.truncated_at.get_or_insert(r.start().to_usize());
            let placeholder = Expr::NoneLiteral(ExprNoneLiteral {
                range: r,
                ..Default::default()
            });
            self.deep.push(std::mem::replace(e, placeholder));
            self.leaf("truncated", field, r);
            return;
        }
        match e {
            Expr::BoolOp(b) => {
                let id = self.open_r("boolean_operator", field, r);
                self.set_op(id, b.op.as_str());
                self.exprs(&mut b.values, "");
                self.close();
            }
            Expr::Named(n) => {
                self.open_r("named_expression", field, r);
                self.expr(&mut n.target, "name");
                self.expr(&mut n.value, "value");
                self.close();
            }
            Expr::BinOp(b) => {
                let id = self.open_r("binary_operator", field, r);
                self.set_op(id, b.op.as_str());
                self.expr(&mut b.left, "left");
                self.expr(&mut b.right, "right");
                self.close();
            }
            Expr::UnaryOp(u) => {
                let kind = if u.op == UnaryOp::Not {
                    "not_operator"
                } else {
                    "unary_operator"
                };
                let id = self.open_r(kind, field, r);
                self.set_op(id, u.op.as_str());
                self.expr(&mut u.operand, "argument");
                self.close();
            }
            Expr::Lambda(l) => {
                self.open_r("lambda", field, r);
                if let Some(p) = l.parameters.as_deref_mut() {
                    self.parameters("lambda_parameters", "parameters", p);
                }
                self.expr(&mut l.body, "body");
                self.close();
            }
            Expr::If(i) => {
                self.open_r("conditional_expression", field, r);
                self.expr(&mut i.body, "");
                self.expr(&mut i.test, "");
                self.expr(&mut i.orelse, "");
                self.close();
            }
            Expr::Dict(d) => {
                self.open_r("dictionary", field, r);
                for item in &mut d.items {
                    match &mut item.key {
                        Some(k) => {
                            self.open_r("pair", "", TextRange::new(k.start(), item.value.end()));
                            self.expr(k, "key");
                            self.expr(&mut item.value, "value");
                            self.close();
                        }
                        None => {
                            self.open_r("dictionary_splat", "", item.value.range());
                            self.expr(&mut item.value, "");
                            self.close();
                        }
                    }
                }
                self.close();
            }
            Expr::Set(s) => self.sequence("set", field, r, &mut s.elts),
            Expr::List(l) => self.sequence("list", field, r, &mut l.elts),
            Expr::Tuple(t) => {
                let kind = if t.parenthesized {
                    "tuple"
                } else {
                    "expression_list"
                };
                self.sequence(kind, field, r, &mut t.elts);
            }
            Expr::ListComp(c) => self.comprehension(
                "list_comprehension",
                field,
                r,
                &mut c.elt,
                &mut c.generators,
            ),
            Expr::SetComp(c) => {
                self.comprehension("set_comprehension", field, r, &mut c.elt, &mut c.generators)
            }
            Expr::Generator(c) => self.comprehension(
                "generator_expression",
                field,
                r,
                &mut c.elt,
                &mut c.generators,
            ),
            Expr::DictComp(c) => {
                self.open_r("dictionary_comprehension", field, r);
                self.open_r("pair", "body", r);
                self.opt_expr(c.key.as_deref_mut(), "key");
                self.expr(&mut c.value, "value");
                self.close();
                self.for_in_clauses(&mut c.generators);
                self.close();
            }
            Expr::Await(a) => self.wrap("await", field, r, Some(&mut a.value)),
            Expr::Yield(y) => self.wrap("yield", field, r, y.value.as_deref_mut()),
            Expr::YieldFrom(y) => self.wrap("yield", field, r, Some(&mut y.value)),
            Expr::Starred(s) => self.wrap("list_splat", field, r, Some(&mut s.value)),
            Expr::Compare(c) => {
                self.open_r("comparison_operator", field, r);
                self.expr(&mut c.left, "");
                self.exprs(&mut c.comparators, "");
                self.close();
            }
            Expr::Call(c) => {
                self.open_r("call", field, r);
                self.expr(&mut c.func, "function");
                self.arguments(&mut c.arguments, "arguments");
                self.close();
            }
            Expr::FString(f) => {
                let concatenated = f.value.is_implicit_concatenated();
                if concatenated {
                    self.open_r("concatenated_string", field, r);
                }
                let part_field = if concatenated { "" } else { field };
                for part in f.value.iter_mut() {
                    match part {
                        FStringPart::Literal(s) => {
                            self.leaf("string", part_field, s.range);
                        }
                        FStringPart::FString(fs) => {
                            self.interpolated(part_field, fs.range, &mut fs.elements);
                        }
                    }
                }
                if concatenated {
                    self.close();
                }
            }
            Expr::TString(t) => {
                let concatenated = t.value.is_implicit_concatenated();
                if concatenated {
                    self.open_r("concatenated_string", field, r);
                }
                let part_field = if concatenated { "" } else { field };
                for ts in t.value.iter_mut() {
                    self.interpolated(part_field, ts.range, &mut ts.elements);
                }
                if concatenated {
                    self.close();
                }
            }
            Expr::StringLiteral(s) => {
                let parts: Vec<TextRange> = s.value.iter().map(|p| p.range).collect();
                self.string_parts(field, r, &parts);
            }
            Expr::BytesLiteral(b) => {
                let parts: Vec<TextRange> = b.value.iter().map(|p| p.range).collect();
                self.string_parts(field, r, &parts);
            }
            Expr::NumberLiteral(n) => {
                let kind = match n.value {
                    Number::Int(_) => "integer",
                    Number::Float(_) => "float",
                    Number::Complex { .. } => "complex",
                };
                self.leaf(kind, field, r);
            }
            Expr::BooleanLiteral(b) => {
                self.leaf(if b.value { "true" } else { "false" }, field, r);
            }
            Expr::NoneLiteral(_) => {
                self.leaf("none", field, r);
            }
            Expr::EllipsisLiteral(_) => {
                self.leaf("ellipsis", field, r);
            }
            Expr::Attribute(a) => {
                self.open_r("attribute", field, r);
                self.expr(&mut a.value, "object");
                self.leaf("identifier", "attribute", a.attr.range);
                self.close();
            }
            Expr::Subscript(s) => {
                self.open_r("subscript", field, r);
                self.expr(&mut s.value, "value");
                self.expr(&mut s.slice, "subscript");
                self.close();
            }
            Expr::Name(_) => {
                self.leaf("identifier", field, r);
            }
            Expr::Slice(s) => {
                self.open_r("slice", field, r);
                self.opt_expr(s.lower.as_deref_mut(), "");
                self.opt_expr(s.upper.as_deref_mut(), "");
                self.opt_expr(s.step.as_deref_mut(), "");
                self.close();
            }
            Expr::IpyEscapeCommand(_) => {
                self.leaf("ipython_command", field, r);
            }
        }
    }

    fn wrap(
        &mut self,
        kind: &'static str,
        field: &'static str,
        r: TextRange,
        e: Option<&mut Expr>,
    ) {
        self.open_r(kind, field, r);
        self.opt_expr(e, "");
        self.close();
    }

    fn sequence(
        &mut self,
        kind: &'static str,
        field: &'static str,
        r: TextRange,
        elts: &mut [Expr],
    ) {
        self.open_r(kind, field, r);
        self.exprs(elts, "");
        self.close();
    }

    fn comprehension(
        &mut self,
        kind: &'static str,
        field: &'static str,
        r: TextRange,
        elt: &mut Expr,
        generators: &mut [ast::Comprehension],
    ) {
        self.open_r(kind, field, r);
        self.expr(elt, "body");
        self.for_in_clauses(generators);
        self.close();
    }

    fn for_in_clauses(&mut self, generators: &mut [ast::Comprehension]) {
        for g in generators {
            self.open_r("for_in_clause", "", g.range);
            self.expr(&mut g.target, "left");
            self.expr(&mut g.iter, "right");
            self.close();
            for cond in &mut g.ifs {
                self.open_r("if_clause", "", cond.range());
                self.expr(cond, "");
                self.close();
            }
        }
    }

    fn string_parts(&mut self, field: &'static str, r: TextRange, parts: &[TextRange]) {
        if parts.len() > 1 {
            self.open_r("concatenated_string", field, r);
            for p in parts {
                self.leaf("string", "", *p);
            }
            self.close();
        } else {
            self.leaf("string", field, r);
        }
    }

    fn interpolated(
        &mut self,
        field: &'static str,
        r: TextRange,
        elements: &mut [InterpolatedStringElement],
    ) {
        self.open_r("string", field, r);
        for el in elements {
            if let InterpolatedStringElement::Interpolation(i) = el {
                self.open_r("interpolation", "", i.range);
                self.expr(&mut i.expression, "expression");
                self.close();
            }
        }
        self.close();
    }
}

enum ArgItem<'a> {
    Pos(&'a mut Expr),
    Kw(&'a mut ast::Keyword),
}

/// Node kind of a statement block filling `field`.
fn field_kind(field: &'static str) -> &'static str {
    match field {
        "alternative" => "else_clause",
        "finally_clause" => "finally_clause",
        _ => "block",
    }
}

/// Drop an expression without recursion: children are moved onto a heap
/// stack before their parent is dropped, so each drop is shallow.
fn dismantle(root: Expr) {
    let mut stack = vec![root];
    while let Some(mut e) = stack.pop() {
        let mut take = |x: &mut Expr| {
            let r = x.range();
            stack.push(std::mem::replace(
                x,
                Expr::NoneLiteral(ExprNoneLiteral {
                    range: r,
                    ..Default::default()
                }),
            ));
        };
        match &mut e {
            Expr::BoolOp(b) => b.values.iter_mut().for_each(&mut take),
            Expr::Named(n) => {
                take(&mut n.target);
                take(&mut n.value);
            }
            Expr::BinOp(b) => {
                take(&mut b.left);
                take(&mut b.right);
            }
            Expr::UnaryOp(u) => take(&mut u.operand),
            Expr::Lambda(l) => {
                take(&mut l.body);
                if let Some(p) = l.parameters.as_deref_mut() {
                    p.posonlyargs
                        .iter_mut()
                        .chain(p.args.iter_mut())
                        .chain(p.kwonlyargs.iter_mut())
                        .filter_map(|a| a.default.as_deref_mut())
                        .for_each(&mut take);
                }
            }
            Expr::If(i) => {
                take(&mut i.test);
                take(&mut i.body);
                take(&mut i.orelse);
            }
            Expr::Dict(d) => d.items.iter_mut().for_each(|item| {
                if let Some(k) = item.key.as_mut() {
                    take(k);
                }
                take(&mut item.value);
            }),
            Expr::Set(s) => s.elts.iter_mut().for_each(&mut take),
            Expr::List(l) => l.elts.iter_mut().for_each(&mut take),
            Expr::Tuple(t) => t.elts.iter_mut().for_each(&mut take),
            Expr::ListComp(c) => {
                take(&mut c.elt);
                generators(&mut c.generators, &mut take);
            }
            Expr::SetComp(c) => {
                take(&mut c.elt);
                generators(&mut c.generators, &mut take);
            }
            Expr::Generator(c) => {
                take(&mut c.elt);
                generators(&mut c.generators, &mut take);
            }
            Expr::DictComp(c) => {
                if let Some(k) = c.key.as_deref_mut() {
                    take(k);
                }
                take(&mut c.value);
                generators(&mut c.generators, &mut take);
            }
            Expr::Await(a) => take(&mut a.value),
            Expr::Yield(y) => {
                if let Some(v) = y.value.as_deref_mut() {
                    take(v);
                }
            }
            Expr::YieldFrom(y) => take(&mut y.value),
            Expr::Starred(s) => take(&mut s.value),
            Expr::Compare(c) => {
                take(&mut c.left);
                c.comparators.iter_mut().for_each(&mut take);
            }
            Expr::Call(c) => {
                take(&mut c.func);
                c.arguments.args.iter_mut().for_each(&mut take);
                c.arguments
                    .keywords
                    .iter_mut()
                    .for_each(|k| take(&mut k.value));
            }
            Expr::FString(f) => {
                for part in f.value.iter_mut() {
                    if let FStringPart::FString(fs) = part {
                        for el in fs.elements.iter_mut() {
                            if let InterpolatedStringElement::Interpolation(i) = el {
                                take(&mut i.expression);
                            }
                        }
                    }
                }
            }
            Expr::TString(t) => {
                for ts in t.value.iter_mut() {
                    for el in ts.elements.iter_mut() {
                        if let InterpolatedStringElement::Interpolation(i) = el {
                            take(&mut i.expression);
                        }
                    }
                }
            }
            Expr::Attribute(a) => take(&mut a.value),
            Expr::Subscript(s) => {
                take(&mut s.value);
                take(&mut s.slice);
            }
            Expr::Slice(s) => {
                for x in [&mut s.lower, &mut s.upper, &mut s.step] {
                    if let Some(x) = x.as_deref_mut() {
                        take(x);
                    }
                }
            }
            Expr::StringLiteral(_)
            | Expr::BytesLiteral(_)
            | Expr::NumberLiteral(_)
            | Expr::BooleanLiteral(_)
            | Expr::NoneLiteral(_)
            | Expr::EllipsisLiteral(_)
            | Expr::Name(_)
            | Expr::IpyEscapeCommand(_) => {}
        }
        drop(e);
    }
}

fn generators(gens: &mut [ast::Comprehension], take: &mut impl FnMut(&mut Expr)) {
    for g in gens {
        take(&mut g.target);
        take(&mut g.iter);
        g.ifs.iter_mut().for_each(&mut *take);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<String> {
        let t = parse(text, 200);
        let mut out = Vec::new();
        let mut c = t.root().walk();
        'outer: loop {
            let n = c.node();
            let f = n.data().field;
            out.push(if f.is_empty() {
                n.kind().to_string()
            } else {
                format!("{f}:{}", n.kind())
            });
            if c.goto_first_child() {
                continue;
            }
            loop {
                if c.goto_next_sibling() {
                    break;
                }
                if !c.goto_parent() {
                    break 'outer;
                }
            }
        }
        out
    }

    #[test]
    fn call_shape_keeps_source_order_and_fields() {
        let k = kinds("f(a, k=1, *b, **c)\n").join(" ");
        assert_eq!(
            k,
            "module expression_statement call function:identifier arguments:argument_list \
             identifier keyword_argument name:identifier value:integer list_splat identifier \
             dictionary_splat identifier"
        );
    }

    #[test]
    fn imports_and_assignments() {
        let k = kinds("import os.path as p, sys\nfrom . import x\na = b = 1\n").join(" ");
        assert_eq!(
            k,
            "module import_statement name:aliased_import name:dotted_name alias:identifier \
             name:dotted_name import_from_statement module_name:relative_import name:dotted_name \
             assignment left:identifier right:assignment left:identifier right:integer"
        );
    }

    #[test]
    fn positions_are_rows_and_byte_columns() {
        let t = parse("x = 1\n  \nif y:\n    z()\n", 200);
        assert_eq!(t.point(0), Point { row: 0, column: 0 });
        assert_eq!(t.point(19), Point { row: 3, column: 4 });
        assert!(t.errors.is_empty());
    }

    #[test]
    fn syntax_errors_are_reported_with_offsets() {
        let t = parse("def f(:\n    pass\n", 200);
        assert!(!t.errors.is_empty());
    }

    #[test]
    fn deep_nesting_is_cut_and_dropped_without_recursion() {
        for src in [
            format!("x = {}1\n", "-".repeat(2_000_000)),
            format!("x = a{}\n", "[0]".repeat(1_000_000)),
            format!("x = f{}\n", "()".repeat(1_000_000)),
        ] {
            let t = parse(&src, 200);
            assert!(t.truncated_at.is_some());
            assert!(t.nodes.len() < 1_000);
        }
    }
}
