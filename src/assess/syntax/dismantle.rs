//! Dropping expressions past the depth cap without recursion: ruff's AST
//! drops recursively, which hostile nesting would turn into a stack overflow.

use ruff_python_ast::{self as ast, Expr, ExprNoneLiteral, FStringPart, InterpolatedStringElement};
use ruff_text_size::Ranged;

/// Drop an expression without recursion: children are moved onto a heap
/// stack before their parent is dropped, so each drop is shallow.
pub(super) fn dismantle(root: Expr) {
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
        take_children(&mut e, &mut take);
        drop(e);
    }
}

/// Hands every direct child expression of `e` to `take`.
fn take_children(e: &mut Expr, take: &mut impl FnMut(&mut Expr)) {
    match e {
        Expr::BoolOp(b) => b.values.iter_mut().for_each(&mut *take),
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
                    .for_each(&mut *take);
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
        Expr::Set(s) => s.elts.iter_mut().for_each(&mut *take),
        Expr::List(l) => l.elts.iter_mut().for_each(&mut *take),
        Expr::Tuple(t) => t.elts.iter_mut().for_each(&mut *take),
        Expr::ListComp(c) => {
            take(&mut c.elt);
            generators(&mut c.generators, take);
        }
        Expr::SetComp(c) => {
            take(&mut c.elt);
            generators(&mut c.generators, take);
        }
        Expr::Generator(c) => {
            take(&mut c.elt);
            generators(&mut c.generators, take);
        }
        Expr::DictComp(c) => {
            if let Some(k) = c.key.as_deref_mut() {
                take(k);
            }
            take(&mut c.value);
            generators(&mut c.generators, take);
        }
        _ => take_more_children(e, take),
    }
}

fn take_more_children(e: &mut Expr, take: &mut impl FnMut(&mut Expr)) {
    match e {
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
            c.comparators.iter_mut().for_each(&mut *take);
        }
        Expr::Call(c) => {
            take(&mut c.func);
            c.arguments.args.iter_mut().for_each(&mut *take);
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
        // Literals and names have no children; the rest is `take_children`'s.
        _ => {}
    }
}

fn generators(gens: &mut [ast::Comprehension], take: &mut impl FnMut(&mut Expr)) {
    for g in gens {
        take(&mut g.target);
        take(&mut g.iter);
        g.ifs.iter_mut().for_each(&mut *take);
    }
}
