//! Every call's arguments, split once into positional and keyword ones.
//!
//! The families ask for a call's arguments several times each (about four
//! times per call site on dense code), and splitting them afresh allocated
//! two vectors every time. The table is built once per tree, before the
//! analyzer exists, so the slices it hands out live as long as the tree and
//! can be held across calls that mutate the analyzer.

use super::syntax::Tree;
use super::{Node, F, K};

/// No entry: the node is not a call.
const NONE: u32 = u32::MAX;

pub(super) struct ArgTable<'t> {
    /// For each node id, its call's index in `starts` (or `NONE`).
    at: Vec<u32>,
    /// For each call, where its positional and keyword arguments start in
    /// `pos` and `kw`; the next entry says where they end (the last entry
    /// is an end marker).
    starts: Vec<(u32, u32)>,
    pos: Vec<Node<'t>>,
    kw: Vec<(&'t str, Node<'t>)>,
}

/// A call's positional arguments and its `name=value` keyword arguments
/// (splats are left out of both).
pub(super) type Args<'t> = (&'t [Node<'t>], &'t [(&'t str, Node<'t>)]);

impl<'t> ArgTable<'t> {
    pub(super) fn build(tree: &'t Tree, src: &'t str) -> Self {
        // One start per call and an end marker; about as many positional
        // arguments as calls (a guess: the vector still grows past it).
        let mut t = ArgTable {
            at: vec![NONE; tree.len()],
            starts: Vec::with_capacity(tree.calls + 1),
            pos: Vec::with_capacity(tree.calls),
            kw: Vec::new(),
        };
        for n in tree.nodes().filter(|n| n.kind() == K::Call) {
            if let Some(slot) = t.at.get_mut(n.id() as usize) {
                *slot = u32::try_from(t.starts.len()).unwrap_or(NONE);
            }
            t.starts.push((len32(&t.pos), len32(&t.kw)));
            t.split(n, src);
        }
        t.starts.push((len32(&t.pos), len32(&t.kw)));
        t
    }

    fn split(&mut self, call: Node<'t>, src: &'t str) {
        let Some(al) = call.child(F::Arguments) else {
            return;
        };
        if al.kind() != K::ArgumentList {
            self.pos.push(al);
            return;
        }
        for a in al.children() {
            match a.kind() {
                K::KeywordArgument => {
                    if let (Some(k), Some(v)) = (a.child(F::Name), a.child(F::Value)) {
                        self.kw.push((src.get(k.byte_range()).unwrap_or(""), v));
                    }
                }
                K::ListSplat | K::DictionarySplat => {}
                _ => self.pos.push(a),
            }
        }
    }

    /// How many calls the table holds: every call of the tree.
    pub(super) fn calls(&self) -> usize {
        self.starts.len().saturating_sub(1)
    }

    /// The arguments of `call` (none for a node that is not a call).
    pub(super) fn get(&'t self, call: Node<'t>) -> Args<'t> {
        let i = self.at.get(call.id() as usize).copied().unwrap_or(NONE) as usize;
        match (self.starts.get(i), self.starts.get(i + 1)) {
            (Some(&(p0, k0)), Some(&(p1, k1))) => (
                self.pos.get(p0 as usize..p1 as usize).unwrap_or_default(),
                self.kw.get(k0 as usize..k1 as usize).unwrap_or_default(),
            ),
            _ => (&[], &[]),
        }
    }
}

fn len32<T>(v: &[T]) -> u32 {
    u32::try_from(v.len()).unwrap_or(NONE)
}
