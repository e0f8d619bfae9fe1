//! Text hidden by XOR with a one-byte key, the commonest disguise after
//! base64: `bytes(b ^ 0x5A for b in bytes.fromhex(h)).decode()`, also as a
//! list comprehension in `bytes([...])`/`bytearray(...)`, the key written
//! first, and over a bytes literal or a base64 text. What it hides is read
//! like any other constant: the folder, device or command it names. Keys
//! that repeat over several bytes (`key[i % len(key)]`) are not followed.

use ruff_python_ast::Operator;

use super::fold::{text_decoder, Decode};
use super::{Analyzer, Node, Op, F, K};

impl<'t> Analyzer<'t> {
    /// What `bytes(...)`/`bytearray(...)` of an XOR generator decodes to,
    /// when its source and key fold; `None` for any other argument.
    pub(super) fn fold_xor(&self, arg: Node<'t>, scope: usize, depth: usize) -> Option<String> {
        let (src, key) = self.xor_generator(arg, scope, depth)?;
        let raw = self.fold_raw_bytes(src, scope, depth + 1)?;
        String::from_utf8(raw.iter().map(|b| b ^ key).collect()).ok()
    }

    /// Each value `bytes(...)` of an XOR generator may have: its source
    /// may be a parameter or loop variable (`for h in T["devs"]: _x(h)`).
    /// Empty when `arg` is no XOR generator.
    pub(super) fn pv_xor(&self, arg: Node<'t>, scope: usize, depth: usize) -> Vec<String> {
        let Some((src, key)) = self.xor_generator(arg, scope, depth) else {
            return Vec::new();
        };
        // The encoded text's values, decoded here: a decoded value that is
        // not UTF-8 (most XOR-ed bytes) would be lost as a path value.
        let decoded = |texts: Vec<String>, decode: Decode| {
            texts.iter().filter_map(|t| decode(t)).collect::<Vec<_>>()
        };
        let raws: Vec<Vec<u8>> = match self.decoder_of(src, scope, depth) {
            Some((inner, decode)) => decoded(self.pv(inner, scope, depth + 1), decode),
            None => self
                .pv(src, scope, depth + 1)
                .into_iter()
                .map(String::into_bytes)
                .collect(),
        };
        raws.into_iter()
            .filter_map(|raw| String::from_utf8(raw.iter().map(|b| b ^ key).collect()).ok())
            .collect()
    }

    /// `b ^ K for b in SRC` (or `K ^ b`), as a generator or a list
    /// comprehension: its source and its key.
    fn xor_generator(&self, n: Node<'t>, scope: usize, depth: usize) -> Option<(Node<'t>, u8)> {
        if !matches!(n.kind(), K::GeneratorExpression | K::ListComprehension) {
            return None;
        }
        let body = n.child(F::Body)?;
        let clause = n.children().find(|c| c.kind() == K::ForInClause)?;
        let var = self.text(clause.child(F::Left)?);
        if body.kind() != K::BinaryOperator || body.operator() != Op::Bin(Operator::BitXor) {
            return None;
        }
        let (l, r) = (body.child(F::Left)?, body.child(F::Right)?);
        let key = match (self.text(l) == var, self.text(r) == var) {
            (true, false) => r,
            (false, true) => l,
            _ => return None,
        };
        let key = u8::try_from(self.fold_int(key, scope, depth + 1)?).ok()?;
        Some((clause.child(F::Right)?, key))
    }

    /// The bytes `n` is: a hex or base64 text decoded, a bytes literal
    /// (each character a byte), a folded text's UTF-8.
    fn fold_raw_bytes(&self, n: Node<'t>, scope: usize, depth: usize) -> Option<Vec<u8>> {
        if let Some((inner, decode)) = self.decoder_of(n, scope, depth) {
            return decode(&self.fold(inner, scope, depth + 1)?);
        }
        let text = self.fold(n, scope, depth + 1)?;
        if n.kind() == K::String && self.text(n).trim_start().starts_with(['b', 'B']) {
            // `b"\x86..."`: the literal's characters are its bytes.
            return text
                .chars()
                .map(|c| u8::try_from(u32::from(c)).ok())
                .collect();
        }
        Some(text.into_bytes())
    }

    /// `bytes.fromhex(x)`, `b64decode(x)`: what is decoded, and how.
    fn decoder_of(&self, n: Node<'t>, scope: usize, depth: usize) -> Option<(Node<'t>, Decode)> {
        if n.kind() != K::Call {
            return None;
        }
        let [inner] = self.args(n).0[..] else {
            return None;
        };
        let q = self.resolve(n.child(F::Function)?, scope, depth + 1)?;
        Some((inner, text_decoder(&q)?))
    }
}
