//! The syntax tree the assessor walks.
//!
//! Parsing is ruff's parser (`ruff_python_parser`): hand-written, error
//! recovering, maintained with Ruff, and about 15x faster here than
//! tree-sitter-python, which made the assessor's time budget unreachable.
//! Its typed AST is lowered ([`lower`]) into a flat arena of uniform nodes (a
//! [`Kind`], a byte range, the [`Field`] it fills in its parent), so the
//! rules walk one small, iterative, parser-independent shape instead of some
//! sixty node types.
//!
//! Hostile nesting: ruff's parser grows its own stack (stacker), but its AST is
//! dropped recursively. Lowering stops at a depth cap and moves whatever lies
//! deeper out of the AST, to be taken apart iteratively ([`dismantle`]), so
//! neither the lowering nor the drop can overflow the stack.

mod dismantle;
mod kind;
mod lower;
mod lower_expr;

use ruff_python_parser::{parse_unchecked, Mode, ParseOptions};

pub(super) use kind::{Field, Kind, Op};

const NONE: u32 = u32::MAX;

struct Data {
    kind: Kind,
    /// The field this node fills in its parent.
    field: Field,
    /// Operator of binary/unary/boolean/augmented operations.
    op: Op,
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
    /// How many calls the tree holds, counted as they are lowered: the
    /// tables made of every call are sized once from it (they grew by
    /// doubling, each step a copy).
    pub calls: usize,
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
    let module = parsed.into_syntax();
    let tree = Tree {
        nodes: Vec::with_capacity(text.len() / 4),
        line_starts: line_starts(text),
        errors,
        truncated_at: None,
        calls: 0,
    };
    lower::lower_module(tree, module, text.len(), max_depth)
}

/// Where each line starts. `memchr` finds the breaks a vector at a time; a
/// filter over the bytes took about three instructions a byte.
fn line_starts(text: &str) -> Vec<u32> {
    std::iter::once(0)
        .chain(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| to_u32(i + 1)))
        .collect()
}

fn to_u32(v: usize) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX - 1)
}

impl Tree {
    pub fn root(&self) -> Node<'_> {
        Node { tree: self, id: 0 }
    }

    /// How many nodes the tree has; ids run from 0 to this, exclusive.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Every node, in id order (a pre-order of the tree).
    pub fn nodes(&self) -> impl Iterator<Item = Node<'_>> {
        (0..to_u32(self.nodes.len())).map(move |id| Node { tree: self, id })
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

    pub fn kind(&self) -> Kind {
        self.data().kind
    }

    /// The slot this node fills in its parent.
    pub fn field(&self) -> Field {
        self.data().field
    }

    pub fn operator(&self) -> Op {
        self.data().op
    }

    /// A number unique to this node within its tree.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// The node numbered `id` (see [`Node::id`]) in this node's tree: lets a
    /// compact record keep one node and the others' numbers.
    pub fn with_id(&self, id: u32) -> Node<'t> {
        Node {
            tree: self.tree,
            id,
        }
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

    /// Every child in source order (all nodes of this tree are named).
    pub fn children(&self) -> impl Iterator<Item = Node<'t>> + 't {
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

    pub fn nth_child(&self, i: usize) -> Option<Node<'t>> {
        self.children().nth(i)
    }

    /// The first child filling `field`.
    pub fn child(&self, field: Field) -> Option<Node<'t>> {
        self.children().find(|c| c.data().field == field)
    }

    /// Every child filling `field`.
    pub fn children_in(&self, field: Field) -> impl Iterator<Item = Node<'t>> + 't {
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

/// An iterative depth-first walker confined to one subtree.
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

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<String> {
        let t = parse(text, 200);
        let mut out = Vec::new();
        let mut c = t.root().walk();
        'outer: loop {
            let n = c.node();
            let f = n.field().name();
            out.push(if f.is_empty() {
                n.kind().name().to_string()
            } else {
                format!("{f}:{}", n.kind().name())
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
