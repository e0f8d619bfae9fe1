//! Fixed tables: a dictionary literal whose values are all constants
//! (strings, numbers, lists of them), bound once and never filled later.
//! A key looked up in one only chooses among values the script spells
//! out, so whatever sent the key (a request, a socket) does not reach the
//! value: `TASKS.get(name)` handing a fixed argv to `subprocess.run` is a
//! menu, not remote command execution. A default given to `.get` still
//! carries its own sources (`ALIASES.get(word, word)`).

use super::{Analyzer, Bind, Node, F, K};

/// How deep constant values may nest (`{"a": [["x", "y"]]}`).
const CONSTANT_DEPTH: usize = 3;

impl<'t> Analyzer<'t> {
    /// Whether `call` is `TABLE.get(key, ...)` on a fixed table.
    pub(super) fn fixed_table_get(&self, call: Node<'t>, func: Node<'t>, scope: usize) -> bool {
        let is_get = func
            .child(F::Attribute)
            .is_some_and(|a| self.text(a) == "get");
        if !is_get {
            return false;
        }
        let Some(obj) = func.child(F::Object).filter(|o| o.kind() == K::Identifier) else {
            return false;
        };
        let name = self.text(obj);
        // Filled after it was written (`TABLE[k] = v`, `TABLE.update(..)`
        // is a call the flow follows itself): not fixed.
        if self.mutations.get(name).is_some_and(|m| !m.is_empty()) {
            return false;
        }
        match self.lookup(name, scope, call.start_byte()) {
            Some([Bind::Expr(v, _)]) => v.kind() == K::Dictionary && self.constant_values(v),
            _ => false,
        }
    }

    /// Whether every value of a dictionary literal is a constant.
    fn constant_values(&self, dict: Node<'t>) -> bool {
        dict.children().all(|pair| {
            pair.kind() == K::Pair && pair.child(F::Value).is_some_and(|v| constant(v, 0))
        })
    }
}

/// A literal with no name, call or interpolation in it.
fn constant(n: Node<'_>, depth: usize) -> bool {
    match n.kind() {
        K::String => !n.children().any(|k| k.kind() == K::Interpolation),
        K::ConcatenatedString => n.children().all(|k| constant(k, depth)),
        K::Integer | K::Float | K::True | K::False | K::None => true,
        K::List | K::Tuple => {
            depth < CONSTANT_DEPTH && n.children().all(|k| constant(k, depth + 1))
        }
        _ => false,
    }
}
