//! Small bounded questions the sixth round's families ask of expressions:
//! the literal text an argument can carry (through names, containers and
//! constant folding), the key and value pairs of a dictionary argument,
//! what a name is bound to, and whether a call runs again and again.

use super::{Analyzer, Bind, CallSite, Node, Seen, F, K};

/// Levels of names and containers followed for an argument's texts.
const TEXT_DEPTH: usize = 10;

/// Texts collected per argument: enough for a policy document or a body.
const MAX_TEXTS: usize = 48;

/// Levels of names followed to find the container a name holds.
const BIND_DEPTH: usize = 4;

/// Module-level values folded for [`Analyzer::first_constant_text`].
const MAX_CONSTANTS: usize = 256;

impl<'t> Analyzer<'t> {
    /// The string literals an expression may carry, lower-cased: its own,
    /// those of the names it uses (their bound values, then what was put
    /// into them) and of the containers they hold. A name whose value folds
    /// to one string (`"a" + "@" + "b"`, a join of parts) gives that string.
    pub(super) fn texts_in(&self, n: Node<'t>, scope: usize) -> Vec<String> {
        let mut out = Vec::new();
        let mut seen = Seen::default();
        self.reset_budget();
        self.collect_texts(n, scope, 0, &mut seen, &mut out);
        out
    }

    fn collect_texts(
        &self,
        n: Node<'t>,
        scope: usize,
        depth: usize,
        seen: &mut Seen,
        out: &mut Vec<String>,
    ) {
        if depth > TEXT_DEPTH || out.len() >= MAX_TEXTS || !self.tick() {
            return;
        }
        match n.kind() {
            K::String | K::ConcatenatedString | K::BinaryOperator | K::Call => {
                if let Some(v) = self.fold(n, scope, depth) {
                    out.push(v.to_ascii_lowercase());
                    return;
                }
            }
            K::Identifier => {
                let name = self.text(n);
                for b in self
                    .lookup(name, scope, n.start_byte())
                    .into_iter()
                    .flatten()
                {
                    // A loop or `with` target, or one name of an unpacking,
                    // can carry any text of what it is taken from.
                    let (Bind::Expr(v, s)
                    | Bind::Part {
                        of: v, scope: s, ..
                    }) = b
                    else {
                        continue;
                    };
                    if seen.first(v, depth) {
                        self.collect_texts(v, s, depth + 1, seen, out);
                    }
                }
                for (s, v) in self.mutations_near(name, scope) {
                    self.collect_texts(v, s, depth + 1, seen, out);
                }
                return;
            }
            k if k.opens_scope() => return,
            _ => {}
        }
        for k in n.children() {
            self.collect_texts(k, scope, depth + 1, seen, out);
        }
    }

    /// The first of the script's constant texts, in source order, that
    /// `want` accepts: its string literals (decoded) and the module-level
    /// names whose values fold to one string (`"a" + "@" + "b"`,
    /// `"".join(parts)`): what fixed addresses or account numbers a script
    /// carries, however it spells them. Only the match is copied: the mail
    /// and payment families each copied every literal of the file.
    pub(super) fn first_constant_text(
        &self,
        want: impl Fn(&str) -> bool,
    ) -> Option<(Node<'t>, String)> {
        // On a tie a literal wins, then the binding met first: the order of
        // the sorted list this replaces (literals, then bindings, stable).
        let mut best: Option<(Node<'t>, String)> = self
            .literals()
            .filter_map(|(n, v)| v.filter(|v| want(v)).map(|v| (n, v)))
            .min_by_key(|(n, _)| n.start_byte())
            .map(|(n, v)| (n, v.to_string()));
        let mut folded = 0;
        for per_name in self.binds.values() {
            // The module's own bindings: scope 0, first in each name's list.
            for b in per_name.iter().take_while(|b| b.scope == 0) {
                let Bind::Expr(v, s) = b.bind else { continue };
                let composite = matches!(v.kind(), K::BinaryOperator | K::Call);
                if !composite || folded >= MAX_CONSTANTS {
                    continue;
                }
                folded += 1;
                let earlier = best
                    .as_ref()
                    .is_none_or(|(n, _)| v.start_byte() < n.start_byte());
                if !earlier {
                    continue;
                }
                self.reset_budget();
                if let Some(t) = self.fold(v, s, 0).filter(|t| want(t)) {
                    best = Some((v, t));
                }
            }
        }
        best
    }

    /// The dictionary literal an expression is, or a name is bound to.
    pub(super) fn dict_of(&self, n: Node<'t>, scope: usize) -> Option<(Node<'t>, usize)> {
        self.bound_value(n, scope, |v| v.kind() == K::Dictionary)
    }

    /// The value a name is bound to (through names, up to a few levels)
    /// that `want` accepts; the expression itself when it does.
    pub(super) fn bound_value(
        &self,
        n: Node<'t>,
        scope: usize,
        want: impl Fn(Node<'t>) -> bool,
    ) -> Option<(Node<'t>, usize)> {
        let (mut n, mut scope) = (n, scope);
        for _ in 0..BIND_DEPTH {
            if want(n) {
                return Some((n, scope));
            }
            if n.kind() != K::Identifier {
                return None;
            }
            let binds = self.lookup(self.text(n), scope, n.start_byte())?;
            (n, scope) = match binds[0] {
                Bind::Expr(v, s) => (v, s),
                // `def _d(key, cfg=_CFG)` whose callers never pass `cfg`:
                // the table is the default, read where the `def` stands.
                Bind::Param { func, index, param } => self.unpassed_default(param, func, index)?,
                _ => return None,
            };
        }
        None
    }

    /// A dictionary's pairs: the key folded (when constant) and the value.
    pub(super) fn dict_pairs(
        &self,
        dict: Node<'t>,
        scope: usize,
    ) -> Vec<(Option<String>, Node<'t>)> {
        dict.children()
            .filter(|p| p.kind() == K::Pair)
            .filter_map(|p| {
                let value = p.child(F::Value)?;
                self.reset_budget();
                let key = p
                    .child(F::Key)
                    .and_then(|k| self.fold(k, scope, 0))
                    .map(|k| k.to_ascii_lowercase());
                Some((key, value))
            })
            .collect()
    }

    /// Whether a call runs repeatedly: it sits in a loop, or its function
    /// is called from one (one level up).
    pub(super) fn repeated(&self, site: &CallSite<'t>) -> bool {
        if site.loop_node.is_some() {
            return true;
        }
        self.callers
            .get(&site.scope)
            .is_some_and(|callers| callers.iter().any(|c| c.in_loop))
    }

    /// The object a method is called on (`d` of `d.items()`).
    pub(super) fn receiver(&self, call: Node<'t>) -> Option<Node<'t>> {
        call.child(F::Function)?.child(F::Object)
    }

    /// The method name of a call `obj.m(...)`.
    pub(super) fn method_name(&self, call: Node<'t>) -> Option<&'t str> {
        call.child(F::Function)
            .filter(|f| f.kind() == K::Attribute)
            .and_then(|f| f.child(F::Attribute))
            .map(|a| self.text(a))
    }
}
