//! Lowering of ruff's expressions into the flat tree, with the depth cap
//! that keeps hostile nesting out of it.

use ruff_python_ast::{
    self as ast, Expr, ExprNoneLiteral, FStringPart, InterpolatedStringElement, Number, UnaryOp,
};
use ruff_text_size::{Ranged, TextRange};

use super::lower::Lower;
use super::{Field as F, Kind as K};
use super::{Field, Kind, Op};

impl Lower {
    pub(super) fn exprs(&mut self, list: &mut [Expr], field: Field) {
        for e in list {
            self.expr(e, field);
        }
    }

    pub(super) fn opt_expr(&mut self, e: Option<&mut Expr>, field: Field) {
        if let Some(e) = e {
            self.expr(e, field);
        }
    }

    pub(super) fn expr(&mut self, e: &mut Expr, field: Field) {
        let r = e.range();
        if self.open.len() >= self.cap {
            self.tree.truncated_at.get_or_insert(r.start().to_usize());
            let placeholder = Expr::NoneLiteral(ExprNoneLiteral {
                range: r,
                ..Default::default()
            });
            self.deep.push(std::mem::replace(e, placeholder));
            self.leaf(K::Truncated, field, r);
            return;
        }
        match e {
            Expr::BoolOp(b) => {
                let id = self.open_r(K::BooleanOperator, field, r);
                self.set_op(id, Op::Bool(b.op));
                self.exprs(&mut b.values, F::None);
                self.close();
            }
            Expr::Named(n) => {
                self.open_r(K::NamedExpression, field, r);
                self.expr(&mut n.target, F::Name);
                self.expr(&mut n.value, F::Value);
                self.close();
            }
            Expr::BinOp(b) => {
                let id = self.open_r(K::BinaryOperator, field, r);
                self.set_op(id, Op::Bin(b.op));
                self.expr(&mut b.left, F::Left);
                self.expr(&mut b.right, F::Right);
                self.close();
            }
            Expr::UnaryOp(u) => {
                let kind = if u.op == UnaryOp::Not {
                    K::NotOperator
                } else {
                    K::UnaryOperator
                };
                let id = self.open_r(kind, field, r);
                self.set_op(id, Op::Unary(u.op));
                self.expr(&mut u.operand, F::Argument);
                self.close();
            }
            Expr::Lambda(l) => {
                self.open_r(K::Lambda, field, r);
                if let Some(p) = l.parameters.as_deref_mut() {
                    self.parameters(K::LambdaParameters, F::Parameters, p);
                }
                self.expr(&mut l.body, F::Body);
                self.close();
            }
            Expr::If(i) => {
                self.open_r(K::ConditionalExpression, field, r);
                self.expr(&mut i.body, F::None);
                self.expr(&mut i.test, F::None);
                self.expr(&mut i.orelse, F::None);
                self.close();
            }
            _ => self.collection(e, field, r),
        }
    }

    /// Containers, comprehensions and the expressions that wrap one value.
    fn collection(&mut self, e: &mut Expr, field: Field, r: TextRange) {
        match e {
            Expr::Dict(d) => self.dictionary(d, field, r),
            Expr::Set(s) => self.sequence(K::Set, field, r, &mut s.elts),
            Expr::List(l) => self.sequence(K::List, field, r, &mut l.elts),
            Expr::Tuple(t) => {
                let kind = if t.parenthesized {
                    K::Tuple
                } else {
                    K::ExpressionList
                };
                self.sequence(kind, field, r, &mut t.elts);
            }
            Expr::ListComp(c) => self.comprehension(
                K::ListComprehension,
                field,
                r,
                &mut c.elt,
                &mut c.generators,
            ),
            Expr::SetComp(c) => {
                self.comprehension(K::SetComprehension, field, r, &mut c.elt, &mut c.generators)
            }
            Expr::Generator(c) => self.comprehension(
                K::GeneratorExpression,
                field,
                r,
                &mut c.elt,
                &mut c.generators,
            ),
            Expr::DictComp(c) => {
                self.open_r(K::DictionaryComprehension, field, r);
                self.open_r(K::Pair, F::Body, r);
                self.opt_expr(c.key.as_deref_mut(), F::Key);
                self.expr(&mut c.value, F::Value);
                self.close();
                self.for_in_clauses(&mut c.generators);
                self.close();
            }
            Expr::Await(a) => self.wrap(K::Await, field, r, Some(&mut a.value)),
            Expr::Yield(y) => self.wrap(K::Yield, field, r, y.value.as_deref_mut()),
            Expr::YieldFrom(y) => self.wrap(K::Yield, field, r, Some(&mut y.value)),
            Expr::Starred(s) => self.wrap(K::ListSplat, field, r, Some(&mut s.value)),
            Expr::Compare(c) => {
                self.open_r(K::ComparisonOperator, field, r);
                self.expr(&mut c.left, F::None);
                self.exprs(&mut c.comparators, F::None);
                self.close();
            }
            Expr::Call(c) => {
                self.tree.calls += 1;
                self.open_r(K::Call, field, r);
                self.expr(&mut c.func, F::Function);
                self.arguments(&mut c.arguments, F::Arguments);
                self.close();
            }
            _ => self.atom(e, field, r),
        }
    }

    /// Literals, names, attribute access, subscripts and slices.
    fn atom(&mut self, e: &mut Expr, field: Field, r: TextRange) {
        match e {
            Expr::Attribute(a) => {
                self.open_r(K::Attribute, field, r);
                self.expr(&mut a.value, F::Object);
                self.leaf(K::Identifier, F::Attribute, a.attr.range);
                self.close();
            }
            Expr::Subscript(s) => {
                self.open_r(K::Subscript, field, r);
                self.expr(&mut s.value, F::Value);
                self.expr(&mut s.slice, F::Subscript);
                self.close();
            }
            Expr::Name(_) => {
                self.leaf(K::Identifier, field, r);
            }
            Expr::Slice(s) => {
                self.open_r(K::Slice, field, r);
                self.opt_expr(s.lower.as_deref_mut(), F::None);
                self.opt_expr(s.upper.as_deref_mut(), F::None);
                self.opt_expr(s.step.as_deref_mut(), F::None);
                self.close();
            }
            Expr::IpyEscapeCommand(_) => {
                self.leaf(K::IpythonCommand, field, r);
            }
            _ => self.literal(e, field, r),
        }
    }

    /// Strings (f-strings and t-strings with their parts), bytes, numbers and the
    /// constants.
    fn literal(&mut self, e: &mut Expr, field: Field, r: TextRange) {
        match e {
            Expr::FString(f) => self.fstring(f, field, r),
            Expr::TString(t) => {
                let concatenated = t.value.is_implicit_concatenated();
                if concatenated {
                    self.open_r(K::ConcatenatedString, field, r);
                }
                let part_field = if concatenated { F::None } else { field };
                for ts in t.value.iter_mut() {
                    self.interpolated(part_field, ts.range, &mut ts.elements);
                }
                if concatenated {
                    self.close();
                }
            }
            Expr::StringLiteral(s) => {
                self.string_parts(field, r, s.value.iter().map(|p| p.range));
            }
            Expr::BytesLiteral(b) => {
                self.string_parts(field, r, b.value.iter().map(|p| p.range));
            }
            Expr::NumberLiteral(n) => {
                let kind = match n.value {
                    Number::Int(_) => K::Integer,
                    Number::Float(_) => K::Float,
                    Number::Complex { .. } => K::Complex,
                };
                self.leaf(kind, field, r);
            }
            Expr::BooleanLiteral(b) => {
                self.leaf(if b.value { K::True } else { K::False }, field, r);
            }
            Expr::NoneLiteral(_) => {
                self.leaf(K::None, field, r);
            }
            Expr::EllipsisLiteral(_) => {
                self.leaf(K::Ellipsis, field, r);
            }
            // Handled by `expr` and `collection`.
            _ => {}
        }
    }

    fn dictionary(&mut self, d: &mut ast::ExprDict, field: Field, r: TextRange) {
        self.open_r(K::Dictionary, field, r);
        for item in &mut d.items {
            match &mut item.key {
                Some(k) => {
                    self.open_r(
                        K::Pair,
                        F::None,
                        TextRange::new(k.start(), item.value.end()),
                    );
                    self.expr(k, F::Key);
                    self.expr(&mut item.value, F::Value);
                    self.close();
                }
                None => {
                    self.open_r(K::DictionarySplat, F::None, item.value.range());
                    self.expr(&mut item.value, F::None);
                    self.close();
                }
            }
        }
        self.close();
    }

    fn fstring(&mut self, f: &mut ast::ExprFString, field: Field, r: TextRange) {
        let concatenated = f.value.is_implicit_concatenated();
        if concatenated {
            self.open_r(K::ConcatenatedString, field, r);
        }
        let part_field = if concatenated { F::None } else { field };
        for part in f.value.iter_mut() {
            match part {
                FStringPart::Literal(s) => {
                    self.leaf(K::String, part_field, s.range);
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

    fn wrap(&mut self, kind: Kind, field: Field, r: TextRange, e: Option<&mut Expr>) {
        self.open_r(kind, field, r);
        self.opt_expr(e, F::None);
        self.close();
    }

    fn sequence(&mut self, kind: Kind, field: Field, r: TextRange, elts: &mut [Expr]) {
        self.open_r(kind, field, r);
        self.exprs(elts, F::None);
        self.close();
    }

    fn comprehension(
        &mut self,
        kind: Kind,
        field: Field,
        r: TextRange,
        elt: &mut Expr,
        generators: &mut [ast::Comprehension],
    ) {
        self.open_r(kind, field, r);
        self.expr(elt, F::Body);
        self.for_in_clauses(generators);
        self.close();
    }

    fn for_in_clauses(&mut self, generators: &mut [ast::Comprehension]) {
        for g in generators {
            self.open_r(K::ForInClause, F::None, g.range);
            self.expr(&mut g.target, F::Left);
            self.expr(&mut g.iter, F::Right);
            self.close();
            for cond in &mut g.ifs {
                self.open_r(K::IfClause, F::None, cond.range());
                self.expr(cond, F::None);
                self.close();
            }
        }
    }

    /// A literal of one part, or the parts of an implicit concatenation.
    /// (Read from ruff's parts as they are: they were collected into a
    /// vector for every literal.)
    fn string_parts(
        &mut self,
        field: Field,
        r: TextRange,
        parts: impl Iterator<Item = TextRange> + Clone,
    ) {
        if parts.clone().nth(1).is_some() {
            self.open_r(K::ConcatenatedString, field, r);
            for p in parts {
                self.leaf(K::String, F::None, p);
            }
            self.close();
        } else {
            self.leaf(K::String, field, r);
        }
    }

    fn interpolated(
        &mut self,
        field: Field,
        r: TextRange,
        elements: &mut [InterpolatedStringElement],
    ) {
        self.open_r(K::String, field, r);
        for el in elements {
            if let InterpolatedStringElement::Interpolation(i) = el {
                self.open_r(K::Interpolation, F::None, i.range);
                self.expr(&mut i.expression, F::Expression);
                self.close();
            }
        }
        self.close();
    }
}
