//! Lowering of ruff's statements into the flat tree (expressions are in
//! [`super::lower_expr`]): one uniform node per syntax element, children in
//! source order, each tagged with the [`Field`] it fills.

use ruff_python_ast::{self as ast, Expr, Parameters, Stmt};
use ruff_text_size::{Ranged, TextRange};

use super::{to_u32, Data, Field, Kind, Op, Tree, NONE};
use super::{Field as F, Kind as K};

/// Lowers a parsed module into `tree`; subtrees past `max_depth` are
/// dismantled iteratively afterwards.
pub(super) fn lower_module(tree: Tree, mut module: ast::Mod, len: usize, max_depth: usize) -> Tree {
    let mut lower = Lower {
        tree,
        open: Vec::new(),
        cap: max_depth.saturating_add(2),
        deep: Vec::new(),
    };
    lower.open(K::Module, F::None, 0, len);
    if let ast::Mod::Module(m) = &mut module {
        lower.block_items(&mut m.body);
    }
    lower.close();
    for e in std::mem::take(&mut lower.deep) {
        super::dismantle::dismantle(e);
    }
    drop(module);
    lower.tree
}

pub(super) struct Lower {
    pub(super) tree: Tree,
    pub(super) open: Vec<u32>,
    pub(super) cap: usize,
    /// Subtrees past the cap, moved out of the AST to be dropped iteratively.
    pub(super) deep: Vec<Expr>,
}

impl Lower {
    fn push(&mut self, kind: Kind, field: Field, start: usize, end: usize) -> u32 {
        let id = to_u32(self.tree.nodes.len());
        let parent = self.open.last().copied().unwrap_or(NONE);
        self.tree.nodes.push(Data {
            kind,
            field,
            op: Op::None,
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

    pub(super) fn open(&mut self, kind: Kind, field: Field, start: usize, end: usize) -> u32 {
        let id = self.push(kind, field, start, end);
        self.open.push(id);
        id
    }

    pub(super) fn open_r(&mut self, kind: Kind, field: Field, r: TextRange) -> u32 {
        self.open(kind, field, r.start().to_usize(), r.end().to_usize())
    }

    pub(super) fn close(&mut self) {
        self.open.pop();
    }

    pub(super) fn leaf(&mut self, kind: Kind, field: Field, r: TextRange) -> u32 {
        self.push(kind, field, r.start().to_usize(), r.end().to_usize())
    }

    pub(super) fn set_op(&mut self, id: u32, op: Op) {
        self.tree.nodes[id as usize].op = op;
    }

    // ----------------------------------------------------------- statements

    fn block_items(&mut self, body: &mut [Stmt]) {
        for s in body {
            self.stmt(s);
        }
    }

    fn block(&mut self, field: Field, body: &mut [Stmt], fallback: TextRange) {
        let start = body.first().map_or(fallback.end(), |s| s.start());
        let end = body.last().map_or(fallback.end(), |s| s.end());
        self.open_r(field_kind(field), field, TextRange::new(start, end));
        self.block_items(body);
        self.close();
    }

    fn stmt(&mut self, s: &mut Stmt) {
        let r = s.range();
        match s {
            Stmt::FunctionDef(f) => self.function_def(f, r),
            Stmt::ClassDef(c) => self.class_def(c, r),
            Stmt::Return(x) => self.with_exprs(K::ReturnStatement, r, [x.value.as_deref_mut()]),
            Stmt::Delete(x) => {
                self.open_r(K::DeleteStatement, F::None, r);
                self.exprs(&mut x.targets, F::None);
                self.close();
            }
            Stmt::TypeAlias(x) => {
                self.open_r(K::TypeAliasStatement, F::None, r);
                self.expr(&mut x.name, F::Left);
                self.expr(&mut x.value, F::Right);
                self.close();
            }
            Stmt::Assign(a) => self.assign(a, r),
            Stmt::AugAssign(a) => {
                let id = self.open_r(K::AugmentedAssignment, F::None, r);
                self.set_op(id, Op::Bin(a.op));
                self.expr(&mut a.target, F::Left);
                self.expr(&mut a.value, F::Right);
                self.close();
            }
            Stmt::AnnAssign(a) => {
                self.open_r(K::Assignment, F::None, r);
                self.expr(&mut a.target, F::Left);
                self.expr(&mut a.annotation, F::Type);
                self.opt_expr(a.value.as_deref_mut(), F::Right);
                self.close();
            }
            _ => self.control_stmt(s, r),
        }
    }

    /// Loops, branches, `with`, `match`, `try`, imports and the one-word statements.
    fn control_stmt(&mut self, s: &mut Stmt, r: TextRange) {
        match s {
            Stmt::For(f) => self.for_stmt(f, r),
            Stmt::While(w) => self.while_stmt(w, r),
            Stmt::If(i) => self.if_stmt(i, r),
            Stmt::With(w) => self.with_stmt(w, r),
            Stmt::Match(m) => self.match_stmt(m, r),
            Stmt::Raise(x) => self.with_exprs(
                K::RaiseStatement,
                r,
                [x.exc.as_deref_mut(), x.cause.as_deref_mut()],
            ),
            Stmt::Try(t) => self.try_stmt(t, r),
            Stmt::Assert(x) => self.with_exprs(
                K::AssertStatement,
                r,
                [Some(&mut *x.test), x.msg.as_deref_mut()],
            ),
            Stmt::Import(i) => {
                self.open_r(K::ImportStatement, F::None, r);
                for a in &i.names {
                    self.import_name(a);
                }
                self.close();
            }
            Stmt::ImportFrom(i) => self.import_from(i, r),
            Stmt::Global(g) => self.names(K::GlobalStatement, &g.names, r),
            Stmt::Nonlocal(g) => self.names(K::NonlocalStatement, &g.names, r),
            Stmt::Expr(e) => self.with_exprs(K::ExpressionStatement, r, [Some(&mut *e.value)]),
            Stmt::Pass(_) => {
                self.leaf(K::PassStatement, F::None, r);
            }
            Stmt::Break(_) => {
                self.leaf(K::BreakStatement, F::None, r);
            }
            Stmt::Continue(_) => {
                self.leaf(K::ContinueStatement, F::None, r);
            }
            Stmt::IpyEscapeCommand(_) => {
                self.leaf(K::IpythonCommand, F::None, r);
            }
            // Handled by `stmt`.
            Stmt::FunctionDef(_)
            | Stmt::ClassDef(_)
            | Stmt::Return(_)
            | Stmt::Delete(_)
            | Stmt::TypeAlias(_)
            | Stmt::Assign(_)
            | Stmt::AugAssign(_)
            | Stmt::AnnAssign(_) => {}
        }
    }

    fn for_stmt(&mut self, f: &mut ast::StmtFor, r: TextRange) {
        self.open_r(K::ForStatement, F::None, r);
        self.expr(&mut f.target, F::Left);
        self.expr(&mut f.iter, F::Right);
        self.block(F::Body, &mut f.body, r);
        self.else_block(&mut f.orelse, r);
        self.close();
    }

    fn while_stmt(&mut self, w: &mut ast::StmtWhile, r: TextRange) {
        self.open_r(K::WhileStatement, F::None, r);
        self.expr(&mut w.test, F::Condition);
        self.block(F::Body, &mut w.body, r);
        self.else_block(&mut w.orelse, r);
        self.close();
    }

    fn function_def(&mut self, f: &mut ast::StmtFunctionDef, r: TextRange) {
        self.decorators(&mut f.decorator_list);
        self.open_r(K::FunctionDefinition, F::None, r);
        self.leaf(K::Identifier, F::Name, f.name.range);
        self.parameters(K::Parameters, F::Parameters, &mut f.parameters);
        self.opt_expr(f.returns.as_deref_mut(), F::ReturnType);
        self.block(F::Body, &mut f.body, r);
        self.close();
    }

    fn class_def(&mut self, c: &mut ast::StmtClassDef, r: TextRange) {
        self.decorators(&mut c.decorator_list);
        self.open_r(K::ClassDefinition, F::None, r);
        self.leaf(K::Identifier, F::Name, c.name.range);
        if let Some(a) = c.arguments.as_deref_mut() {
            self.arguments(a, F::Superclasses);
        }
        self.block(F::Body, &mut c.body, r);
        self.close();
    }

    fn if_stmt(&mut self, i: &mut ast::StmtIf, r: TextRange) {
        self.open_r(K::IfStatement, F::None, r);
        self.expr(&mut i.test, F::Condition);
        self.block(F::Consequence, &mut i.body, r);
        for c in &mut i.elif_else_clauses {
            let kind = if c.test.is_some() {
                K::ElifClause
            } else {
                K::ElseClause
            };
            self.open_r(kind, F::Alternative, c.range);
            self.opt_expr(c.test.as_mut(), F::Condition);
            self.block(F::Consequence, &mut c.body, c.range);
            self.close();
        }
        self.close();
    }

    fn with_stmt(&mut self, w: &mut ast::StmtWith, r: TextRange) {
        self.open_r(K::WithStatement, F::None, r);
        for item in &mut w.items {
            match item.optional_vars.as_deref_mut() {
                Some(vars) => {
                    self.open_r(K::AsPattern, F::None, item.range);
                    self.expr(&mut item.context_expr, F::None);
                    self.open_r(K::AsPatternTarget, F::Alias, vars.range());
                    self.expr(vars, F::None);
                    self.close();
                    self.close();
                }
                None => self.expr(&mut item.context_expr, F::None),
            }
        }
        self.block(F::Body, &mut w.body, r);
        self.close();
    }

    fn match_stmt(&mut self, m: &mut ast::StmtMatch, r: TextRange) {
        self.open_r(K::MatchStatement, F::None, r);
        self.expr(&mut m.subject, F::Subject);
        for c in &mut m.cases {
            self.open_r(K::CaseClause, F::None, c.range);
            self.opt_expr(c.guard.as_deref_mut(), F::Guard);
            self.block(F::Consequence, &mut c.body, c.range);
            self.close();
        }
        self.close();
    }

    fn try_stmt(&mut self, t: &mut ast::StmtTry, r: TextRange) {
        self.open_r(K::TryStatement, F::None, r);
        self.block(F::Body, &mut t.body, r);
        for ast::ExceptHandler::ExceptHandler(h) in &mut t.handlers {
            self.open_r(K::ExceptClause, F::None, h.range);
            match (&h.name, h.type_.as_deref_mut()) {
                (Some(name), Some(ty)) => {
                    self.open_r(
                        K::AsPattern,
                        F::None,
                        TextRange::new(ty.start(), name.end()),
                    );
                    self.expr(ty, F::None);
                    self.open_r(K::AsPatternTarget, F::Alias, name.range);
                    self.leaf(K::Identifier, F::None, name.range);
                    self.close();
                    self.close();
                }
                (_, ty) => self.opt_expr(ty, F::None),
            }
            self.block(F::Body, &mut h.body, h.range);
            self.close();
        }
        self.else_block(&mut t.orelse, r);
        if !t.finalbody.is_empty() {
            self.block(F::FinallyClause, &mut t.finalbody, r);
        }
        self.close();
    }

    fn import_from(&mut self, i: &ast::StmtImportFrom, r: TextRange) {
        self.open_r(K::ImportFromStatement, F::None, r);
        match &i.module {
            _ if i.level > 0 => {
                self.leaf(K::RelativeImport, F::ModuleName, r);
            }
            Some(m) => {
                self.leaf(K::DottedName, F::ModuleName, m.range);
            }
            None => {}
        }
        for a in &i.names {
            if a.name.as_str() == "*" {
                self.leaf(K::WildcardImport, F::None, a.range);
            } else {
                self.import_name(a);
            }
        }
        self.close();
    }

    fn names(&mut self, kind: Kind, names: &[ast::Identifier], r: TextRange) {
        self.open_r(kind, F::None, r);
        for n in names {
            self.leaf(K::Identifier, F::None, n.range);
        }
        self.close();
    }

    fn with_exprs<const N: usize>(
        &mut self,
        kind: Kind,
        r: TextRange,
        exprs: [Option<&mut Expr>; N],
    ) {
        self.open_r(kind, F::None, r);
        for e in exprs.into_iter().flatten() {
            self.expr(e, F::None);
        }
        self.close();
    }

    fn else_block(&mut self, body: &mut [Stmt], r: TextRange) {
        if !body.is_empty() {
            self.block(F::Alternative, body, r);
        }
    }

    fn decorators(&mut self, list: &mut [ast::Decorator]) {
        for d in list {
            self.open_r(K::Decorator, F::None, d.range);
            self.expr(&mut d.expression, F::None);
            self.close();
        }
    }

    fn import_name(&mut self, a: &ast::Alias) {
        match &a.asname {
            Some(alias) => {
                self.open_r(K::AliasedImport, F::Name, a.range);
                self.leaf(K::DottedName, F::Name, a.name.range);
                self.leaf(K::Identifier, F::Alias, alias.range);
                self.close();
            }
            None => {
                self.leaf(K::DottedName, F::Name, a.name.range);
            }
        }
    }

    /// `a = b = v` as tree-sitter shapes it: assignment(a, assignment(b, v)).
    fn assign(&mut self, a: &mut ast::StmtAssign, r: TextRange) {
        let value_end = a.value.end();
        let mut opened = 0;
        for (i, t) in a.targets.iter_mut().enumerate() {
            let field = if i == 0 { F::None } else { F::Right };
            self.open_r(
                K::Assignment,
                field,
                TextRange::new(t.start(), value_end.max(r.start())),
            );
            self.expr(t, F::Left);
            opened += 1;
        }
        self.expr(&mut a.value, F::Right);
        for _ in 0..opened {
            self.close();
        }
    }

    pub(super) fn parameters(&mut self, kind: Kind, field: Field, p: &mut Parameters) {
        self.open_r(kind, field, p.range);
        let (posonly, args, kwonly) = (&mut p.posonlyargs, &mut p.args, &mut p.kwonlyargs);
        for pw in posonly.iter_mut().chain(args.iter_mut()) {
            self.parameter(pw);
        }
        if let Some(v) = p.vararg.as_deref_mut() {
            self.splat_param(K::ListSplatPattern, v);
        }
        for pw in kwonly.iter_mut() {
            self.parameter(pw);
        }
        if let Some(k) = p.kwarg.as_deref_mut() {
            self.splat_param(K::DictionarySplatPattern, k);
        }
        self.close();
    }

    fn parameter(&mut self, pw: &mut ast::ParameterWithDefault) {
        let prm = &mut pw.parameter;
        match (pw.default.as_deref_mut(), prm.annotation.as_deref_mut()) {
            (Some(d), ann) => {
                let kind = if ann.is_some() {
                    K::TypedDefaultParameter
                } else {
                    K::DefaultParameter
                };
                self.open_r(kind, F::None, pw.range);
                self.leaf(K::Identifier, F::Name, prm.name.range);
                self.opt_expr(ann, F::Type);
                self.expr(d, F::Value);
                self.close();
            }
            (None, Some(ann)) => {
                self.open_r(K::TypedParameter, F::None, pw.range);
                self.leaf(K::Identifier, F::None, prm.name.range);
                self.expr(ann, F::Type);
                self.close();
            }
            (None, None) => {
                self.leaf(K::Identifier, F::None, prm.name.range);
            }
        }
    }

    fn splat_param(&mut self, kind: Kind, p: &mut ast::Parameter) {
        self.open_r(kind, F::None, p.range);
        self.leaf(K::Identifier, F::None, p.name.range);
        self.opt_expr(p.annotation.as_deref_mut(), F::Type);
        self.close();
    }

    /// Call arguments in source order (ruff keeps positional and keyword
    /// arguments apart).
    pub(super) fn arguments(&mut self, a: &mut ast::Arguments, field: Field) {
        self.open_r(K::ArgumentList, field, a.range);
        // Usually every positional argument comes before every keyword, and
        // the two lists are lowered as they are; otherwise (`f(k=1, *a)`)
        // they are merged into source order first.
        let in_order = match (a.args.last(), a.keywords.first()) {
            (Some(p), Some(k)) => p.start() < k.range.start(),
            _ => true,
        };
        if in_order {
            for e in a.args.iter_mut() {
                self.expr(e, F::None);
            }
            for k in a.keywords.iter_mut() {
                self.keyword(k);
            }
        } else {
            let mut items: Vec<ArgItem> = Vec::with_capacity(a.args.len() + a.keywords.len());
            items.extend(a.args.iter_mut().map(ArgItem::Pos));
            items.extend(a.keywords.iter_mut().map(ArgItem::Kw));
            items.sort_by_key(|i| match i {
                ArgItem::Pos(e) => e.start(),
                ArgItem::Kw(k) => k.range.start(),
            });
            for item in items {
                match item {
                    ArgItem::Pos(e) => self.expr(e, F::None),
                    ArgItem::Kw(k) => self.keyword(k),
                }
            }
        }
        self.close();
    }

    fn keyword(&mut self, k: &mut ast::Keyword) {
        match &k.arg {
            Some(name) => {
                self.open_r(K::KeywordArgument, F::None, k.range);
                self.leaf(K::Identifier, F::Name, name.range);
                self.expr(&mut k.value, F::Value);
                self.close();
            }
            None => {
                self.open_r(K::DictionarySplat, F::None, k.range);
                self.expr(&mut k.value, F::None);
                self.close();
            }
        }
    }
}

enum ArgItem<'a> {
    Pos(&'a mut Expr),
    Kw(&'a mut ast::Keyword),
}

/// Node kind of a statement block filling `field`.
fn field_kind(field: Field) -> Kind {
    match field {
        F::Alternative => K::ElseClause,
        F::FinallyClause => K::FinallyClause,
        _ => K::Block,
    }
}
