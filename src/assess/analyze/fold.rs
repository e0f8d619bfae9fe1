//! Constant folding: the string, list, integer or path value of an
//! expression through bindings and the usual disguises (concatenation,
//! join, reversal, chr, base64, hex, rot13).

use std::borrow::Cow;

use ruff_python_ast::Operator;

use super::calls::kwarg;
use super::literal::{b32decode, b64decode, hexdecode, int_value, join_path, rot13, stat_const};
use super::names::*;
use super::{Analyzer, Bind, Node, Op, Part, F, K};
use super::{EVAL_DEPTH, MAX_FOLD_LEN};

/// The functions that decode base64 text.
pub(super) const BASE64_DECODERS: &[&str] = &[
    "base64.b64decode",
    "base64.standard_b64decode",
    "base64.decodebytes",
    "base64.urlsafe_b64decode",
    "binascii.a2b_base64",
];

/// The functions that decode hexadecimal text.
pub(super) const HEX_DECODERS: &[&str] = &[
    "bytes.fromhex",
    "binascii.unhexlify",
    "binascii.a2b_hex",
    "base64.b16decode",
];

/// A text decoder: hex or base64 text to bytes.
pub(super) type Decode = fn(&str) -> Option<Vec<u8>>;

/// How the function `q` decodes text, when it is a base64 or hex decoder.
/// Whether `n` is an `a + b` (strings joined, lists concatenated).
pub(super) fn is_plus(n: Node<'_>) -> bool {
    n.kind() == K::BinaryOperator && n.operator() == Op::Bin(Operator::Add)
}

pub(super) fn text_decoder(q: &str) -> Option<Decode> {
    if BASE64_DECODERS.contains(&q) {
        Some(b64decode)
    } else if HEX_DECODERS.contains(&q) {
        Some(hexdecode)
    } else {
        None
    }
}

/// The character a literal code stands for, shifted by `shift` (a Caesar
/// disguise): what `chr` of it gives.
fn code_char(code: &str, shift: i64) -> Option<String> {
    let v = int_value(code)?.checked_add(shift)?;
    char::from_u32(u32::try_from(v).ok()?).map(String::from)
}

impl<'t> Analyzer<'t> {
    /// Constant string value of an expression, folding the usual disguises.
    /// Values longer than MAX_FOLD_LEN give up, so `a = a + a` chains cannot
    /// exhaust memory.
    pub(super) fn fold(&self, n: Node<'t>, scope: usize, depth: usize) -> Option<String> {
        self.fold_inner(n, scope, depth)
            .filter(|v| v.len() <= MAX_FOLD_LEN)
    }

    /// Whether `n` is a subscript that reverses its value (`v[::-1]`).
    pub(super) fn reversed_by_slice(&self, n: Node<'t>) -> bool {
        n.child(F::Subscript)
            .is_some_and(|s| s.kind() == K::Slice && self.text(s).replace(' ', "") == "::-1")
    }

    fn fold_inner(&self, n: Node<'t>, scope: usize, depth: usize) -> Option<String> {
        if depth > EVAL_DEPTH || !self.tick() {
            return None;
        }
        match n.kind() {
            K::String => self.string_value(n),
            K::ConcatenatedString => {
                let mut out = String::new();
                for k in n.children() {
                    out.push_str(&self.fold_part(k, scope, depth + 1)?);
                }
                Some(out)
            }
            K::BinaryOperator => {
                if n.operator() == Op::Bin(Operator::Mod) {
                    return self.fold_percent(n, scope, depth);
                }
                if n.operator() != Op::Bin(Operator::Add) {
                    return None;
                }
                let l = self.fold(n.child(F::Left)?, scope, depth + 1)?;
                let r = self.fold_part(n.child(F::Right)?, scope, depth + 1)?;
                Some(l + &r)
            }
            K::Identifier => {
                let binds = self.lookup(self.text(n), scope, n.start_byte())?;
                binds.iter().rev().find_map(|b| match *b {
                    Bind::Expr(v, s) => self.fold(v, s, depth + 1),
                    Bind::Param { func, index, param } => self
                        .param_override(func, index)
                        .or_else(|| self.fold_unpassed_default(param, func, index, depth))
                        .or_else(|| self.fold_passed_alike(param, func, index, depth)),
                    _ => None,
                })
            }
            K::Subscript => {
                // "metsys"[::-1]
                if self.reversed_by_slice(n) {
                    let v = self.fold(n.child(F::Value)?, scope, depth + 1)?;
                    return Some(v.chars().rev().collect());
                }
                self.fold_item(n, scope, depth)
                    .or_else(|| self.fold_index(n, scope, depth))
            }
            K::Call => self.fold_call(n, scope, depth),
            K::Attribute => self.fold_self_attr(n, depth),
            _ => None,
        }
    }

    /// The head of an f-string: its text up to the first placeholder that
    /// does not fold, the placeholders before it folded (`f"{BASE}/{id}"`
    /// is `https://host/…` whatever `id` is). `None` when nothing folds.
    pub(super) fn fold_template_head(&self, n: Node<'t>, scope: usize) -> Option<String> {
        if n.kind() != K::String {
            return None;
        }
        let mut head = String::new();
        for (lit, part) in self.template_pieces(n)? {
            // The text after the last placeholder is no part of the head.
            let Some(part) = part else {
                break;
            };
            head.push_str(lit);
            let value = part
                .child(F::Expression)
                .and_then(|e| self.fold(e, scope, 1));
            match value {
                Some(v) => head.push_str(&v),
                None => break,
            }
        }
        (!head.is_empty()).then_some(head)
    }

    /// An f-string's pieces in order, as written: the text before each
    /// placeholder with that placeholder (an interpolation node), then the
    /// text after the last one with `None`.
    pub(super) fn template_pieces(&self, n: Node<'t>) -> Option<Vec<(&'t str, Option<Node<'t>>)>> {
        let text = self.text(n);
        let q = text.find(['\'', '"'])?;
        let quote = if text[q..].starts_with("\"\"\"") || text[q..].starts_with("'''") {
            3
        } else {
            1
        };
        let mut at = n.start_byte() + q + quote;
        let mut pieces = Vec::new();
        for part in n.children().filter(|k| k.kind() == K::Interpolation) {
            pieces.push((
                self.src.get(at..part.start_byte()).unwrap_or(""),
                Some(part),
            ));
            at = part.byte_range().end;
        }
        let end = n.byte_range().end.saturating_sub(quote).max(at);
        pieces.push((self.src.get(at..end).unwrap_or(""), None));
        Some(pieces)
    }

    /// `self.path` where a method stored a constant there (`self.path =
    /// d(_K)` in `__init__`): the value the store folds to.
    fn fold_self_attr(&self, n: Node<'t>, depth: usize) -> Option<String> {
        let stores = self.attr_stores.get(self.self_attribute(n)?)?;
        stores.iter().find_map(|&(v, s)| self.fold(v, s, depth + 1))
    }

    /// `"address=%s" % ip`: a format with one `%s` filled by a value that
    /// folds.
    fn fold_percent(&self, n: Node<'t>, scope: usize, depth: usize) -> Option<String> {
        let fmt = self.fold(n.child(F::Left)?, scope, depth + 1)?;
        if fmt.matches('%').count() != 1 || !fmt.contains("%s") {
            return None;
        }
        let v = self.fold(n.child(F::Right)?, scope, depth + 1)?;
        Some(fmt.replacen("%s", &v, 1))
    }

    /// `def set_dns(name, servers=FAST)` whose callers never pass
    /// `servers`: the default, read where the `def` stands.
    fn fold_unpassed_default(
        &self,
        param: Node<'t>,
        func: usize,
        index: usize,
        depth: usize,
    ) -> Option<String> {
        let (default, outer) = self.unpassed_default(param, func, index)?;
        self.fold(default, outer, depth + 1)
    }

    /// A parameter every caller passes the same folded value (`Session(host,
    /// PORT, _d(_S))` for `shell`): that value. Callers that disagree or do
    /// not fold leave it unknown.
    fn fold_passed_alike(
        &self,
        param: Node<'t>,
        func: usize,
        index: usize,
        depth: usize,
    ) -> Option<String> {
        let name = self.text(param.child(F::Name).unwrap_or(param));
        let passed = self.passed(func, index, name);
        let mut values = passed.iter().map(|&(a, s)| self.fold(a, s, depth + 1));
        let first = values.next()??;
        values
            .all(|v| v.as_deref() == Some(first.as_str()))
            .then_some(first)
    }

    /// A parameter's default and the scope it is read in (where the `def`
    /// stands), when no caller passes that parameter.
    pub(super) fn unpassed_default(
        &self,
        param: Node<'t>,
        func: usize,
        index: usize,
    ) -> Option<(Node<'t>, usize)> {
        let default = param.child(F::Value)?;
        let name = self.text(param.child(F::Name).unwrap_or(param));
        if !self.passed(func, index, name).is_empty() {
            return None;
        }
        Some((default, self.scopes.get(func)?.parent?))
    }

    /// `SERVERS[0]`: the item a list or tuple literal keeps at a constant
    /// index.
    fn fold_index(&self, n: Node<'t>, scope: usize, depth: usize) -> Option<String> {
        let i = usize::try_from(self.fold_int(n.child(F::Subscript)?, scope, depth + 1)?).ok()?;
        let (seq, s) = self.seq_of(n.child(F::Value)?, scope, depth)?;
        self.fold(seq.children().nth(i)?, s, depth + 1)
    }

    /// The list or tuple literal a name holds, also as a parameter's
    /// default that no caller overrides.
    fn seq_of(&self, n: Node<'t>, scope: usize, depth: usize) -> Option<(Node<'t>, usize)> {
        let seq = |v: Node<'t>| v.kind().is_sequence();
        if let Some(found) = self.bound_value(n, scope, seq) {
            return Some(found);
        }
        if n.kind() != K::Identifier || depth > EVAL_DEPTH {
            return None;
        }
        let [Bind::Param { param, func, index }] =
            self.lookup(self.text(n), scope, n.start_byte())?
        else {
            return None;
        };
        let (default, outer) = self.unpassed_default(param, func, index)?;
        self.bound_value(default, outer, seq)
    }

    /// `TOOLS["rec"]`: the value a dictionary literal keeps at a constant
    /// key, so program names kept in a table (each one disguised) fold as
    /// they would kept in variables of their own.
    fn fold_item(&self, n: Node<'t>, scope: usize, depth: usize) -> Option<String> {
        let key = self.fold(n.child(F::Subscript)?, scope, depth + 1)?;
        let (dict, s) = self.bound_value(n.child(F::Value)?, scope, |v| {
            v.kind() == K::Dictionary || self.dict_call(v, scope)
        })?;
        if dict.kind() == K::Call {
            // `dict(mirror=..., cache=...)`: the keyword is the key.
            return self.fold(kwarg(self.args(dict).1, &key)?, s, depth + 1);
        }
        let value = self.entry_at(dict, &key, s, depth)?;
        self.fold(value, s, depth + 1)
    }

    /// The value a dict literal keeps under the key that folds to `key`.
    pub(super) fn entry_at(
        &self,
        dict: Node<'t>,
        key: &str,
        scope: usize,
        depth: usize,
    ) -> Option<Node<'t>> {
        dict.children()
            .filter(|p| p.kind() == K::Pair)
            .find(|p| {
                p.child(F::Key)
                    .and_then(|k| self.fold(k, scope, depth + 1))
                    .is_some_and(|k| k == key)
            })?
            .child(F::Value)
    }

    /// Whether `v` is a call of the builtin `dict` (`dict(a=1, b=2)`): a
    /// table spelled with keywords, the keys being their names.
    fn dict_call(&self, v: Node<'t>, scope: usize) -> bool {
        v.kind() == K::Call
            && v.child(F::Function).is_some_and(|f| {
                f.kind() == K::Identifier
                    && self.text(f) == "dict"
                    && self.lookup("dict", scope, f.start_byte()).is_none()
            })
    }

    /// Whether `m.decode`/`m.encode` is the `codecs` module's function
    /// (`import codecs as c`, `__import__("codecs")`).
    fn codecs_function(&self, func: Node<'t>, scope: usize, depth: usize) -> bool {
        let method = func.child(F::Attribute).map(|a| self.text(a));
        matches!(method, Some("decode" | "encode"))
            && self
                .resolve(func, scope, depth + 1)
                .is_some_and(|q| q.starts_with("codecs."))
    }

    fn fold_call(&self, n: Node<'t>, scope: usize, depth: usize) -> Option<String> {
        let func = n.child(F::Function)?;
        let (pos, kw) = self.args(n);
        if func.kind() == K::Attribute {
            match self.fold_str_method(func, pos, scope, depth) {
                // `codecs.decode(s, "rot13")` looks like `b.decode()` but
                // is the module's function: it is folded below.
                Some(None) if self.codecs_function(func, scope, depth) => {}
                Some(v) => return v,
                None => {}
            }
        }
        let Some(q) = self.resolve(func, scope, depth + 1) else {
            return self.fold_own_decoder(n, scope, depth);
        };
        let arg0 = || pos.first().and_then(|a| self.fold(*a, scope, depth + 1));
        if let Some(decode) = text_decoder(&q) {
            return String::from_utf8(decode(&arg0()?)?).ok();
        }
        match q.as_str() {
            "builtins.chr" => code_char(self.text(*pos.first()?), 0),
            "builtins.bytes" | "builtins.bytearray" => {
                let a = *pos.first()?;
                self.fold_xor(a, scope, depth).or_else(arg0)
            }
            "builtins.str" | "os.path.expanduser" | "os.fsdecode" | "os.fsencode" => arg0(),
            "os.path.join" | "posixpath.join" => {
                let parts: Option<Vec<String>> = pos
                    .iter()
                    .map(|a| self.fold(*a, scope, depth + 1))
                    .collect();
                Some(join_path(&parts?))
            }
            "base64.b32decode" => String::from_utf8(b32decode(&arg0()?)?).ok(),
            "codecs.decode" | "codecs.encode" => {
                let codec = pos.get(1).copied().or_else(|| kwarg(kw, "encoding"));
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

    /// `sep.join(parts)`, `.decode()`, `.lower()`, `.replace()`... on a
    /// constant receiver. `None` when `func` is no such method, so the call
    /// is resolved as a function instead.
    fn fold_str_method(
        &self,
        func: Node<'t>,
        pos: &[Node<'t>],
        scope: usize,
        depth: usize,
    ) -> Option<Option<String>> {
        let method = self.text(func.child(F::Attribute)?);
        let obj = func.child(F::Object)?;
        let recv = || self.fold(obj, scope, depth + 1);
        let arg = |i: usize| self.fold(pos[i], scope, depth + 1);
        let folded = match method {
            "join" if pos.len() == 1 => (|| {
                let sep = recv()?;
                let parts = self.fold_list(pos[0], scope, depth + 1)?;
                let total = parts.iter().map(|p| p.len() + sep.len()).sum::<usize>();
                (total <= MAX_FOLD_LEN).then(|| parts.join(&sep))
            })(),
            "decode" | "encode" | "lower" | "upper" | "strip" => (|| {
                let v = recv()?;
                let codec = if pos.is_empty() { None } else { arg(0) };
                Some(
                    match (
                        method,
                        codec.unwrap_or_default().to_ascii_lowercase().as_str(),
                    ) {
                        ("decode" | "encode", "rot13" | "rot_13") => rot13(&v),
                        ("decode" | "encode", _) => v,
                        ("lower", _) => v.to_lowercase(),
                        ("upper", _) => v.to_uppercase(),
                        _ => v.trim().to_string(),
                    },
                )
            })(),
            "replace" if pos.len() >= 2 => (|| {
                let v = recv()?;
                let (a, b) = (arg(0)?, arg(1)?);
                let worst = if a.is_empty() {
                    v.len() * b.len() + v.len()
                } else {
                    v.len() / a.len() * b.len() + v.len()
                };
                (worst <= MAX_FOLD_LEN).then(|| v.replace(&a, &b))
            })(),
            _ => return None,
        };
        Some(folded)
    }

    /// Constant list of strings: list/tuple literal, generator of chr(), ...
    pub(super) fn fold_list(&self, n: Node<'t>, scope: usize, depth: usize) -> Option<Vec<String>> {
        if depth > EVAL_DEPTH || !self.tick() {
            return None;
        }
        match n.kind() {
            K::List | K::Tuple | K::Set => {
                let kids: Vec<Node<'t>> = n.children().collect();
                kids.into_iter()
                    .map(|k| self.fold(k, scope, depth + 1))
                    .collect()
            }
            K::Identifier => {
                let binds = self.lookup(self.text(n), scope, n.start_byte())?;
                binds.iter().rev().find_map(|b| match *b {
                    Bind::Expr(v, s) => self.fold_list(v, s, depth + 1),
                    _ => None,
                })
            }
            K::Call => self
                .fold_mapped(n, scope, depth)
                .or_else(|| self.fold_split(n, scope, depth))
                .or_else(|| self.fold_reversed(n, scope, depth)),
            K::GeneratorExpression | K::ListComprehension => {
                self.fold_chr_codes(n, scope, depth, None)
            }
            _ => None,
        }
    }

    /// `reversed("gerniw")`: the characters of a constant string, last
    /// first, so `"".join(reversed(s))` folds like `s[::-1]`; of a constant
    /// list (`reversed(["c", "e", "x", "e"])`), its items last first.
    fn fold_reversed(&self, n: Node<'t>, scope: usize, depth: usize) -> Option<Vec<String>> {
        let [arg] = self.args(n).0[..] else {
            return None;
        };
        if self.resolve(n.child(F::Function)?, scope, depth + 1)? != "builtins.reversed" {
            return None;
        }
        if let Some(v) = self.fold(arg, scope, depth + 1) {
            return Some(v.chars().rev().map(String::from).collect());
        }
        let mut items = self.fold_list(arg, scope, depth + 1)?;
        items.reverse();
        Some(items)
    }

    /// `_s(118, 115)` of `def _s(*codes): return "".join(chr(c) for c in
    /// codes)`, `_R("hss.")` of `_R = lambda s: s[::-1]`: a helper of the
    /// script's own that decodes what it is called with, folded with this
    /// call's arguments.
    fn fold_own_decoder(&self, call: Node<'t>, scope: usize, depth: usize) -> Option<String> {
        let def_scope = self.own_function_scope(call.child(F::Function)?, scope)?;
        let [ret] = self.returns.get(&def_scope)?[..] else {
            return None;
        };
        // `_R = lambda s: s[::-1]`: the call's text reversed.
        if self.reversed_by_slice(ret) {
            let param = ret.child(F::Value).filter(|v| v.kind() == K::Identifier)?;
            let [Bind::Param { index: 0, .. }] =
                self.lookup(self.text(param), def_scope, param.start_byte())?
            else {
                return None;
            };
            let [arg] = self.args(call).0[..] else {
                return None;
            };
            return Some(self.fold(arg, scope, depth + 1)?.chars().rev().collect());
        }
        // `def _key_path(): return base64.b64decode(K).decode()`: a getter
        // of a disguised constant is the constant.
        if let Some(v) = self.fold(ret, def_scope, depth + 1) {
            return Some(v);
        }
        if let Some(v) = self.fold_with_argument(call, ret, def_scope, scope, depth) {
            return Some(v);
        }
        let func = ret
            .child(F::Function)
            .filter(|f| f.kind() == K::Attribute)?;
        if ret.kind() != K::Call || self.text(func.child(F::Attribute)?) != "join" {
            return None;
        }
        let sep = self.fold(func.child(F::Object)?, def_scope, depth + 1)?;
        let [gen] = self.args(ret).0[..] else {
            return None;
        };
        let codes = self.args(call).0;
        let parts = self.fold_chr_codes(gen, def_scope, depth + 1, Some(codes))?;
        Some(parts.join(&sep))
    }

    /// `_d = lambda s: base64.b64decode(s).decode()` called as `_d(K)`: the
    /// body folded with its one parameter taken as this call's argument,
    /// so a decoder kept in a helper decodes what each call hands it. One
    /// such substitution at a time (a decoder folded inside another is
    /// not followed).
    pub(super) fn fold_with_argument(
        &self,
        call: Node<'t>,
        ret: Node<'t>,
        def_scope: usize,
        scope: usize,
        depth: usize,
    ) -> Option<String> {
        let [arg] = self.args(call).0[..] else {
            return None;
        };
        if self.param_value.try_borrow().map_or(true, |p| p.is_some()) {
            return None;
        }
        let v = self.fold(arg, scope, depth + 1)?;
        // No borrow of the cell is held across folding (see
        // `param_override`), so these cannot fail; if one did, the
        // substitution is skipped rather than the assessment stopped.
        let Ok(mut slot) = self.param_value.try_borrow_mut() else {
            return None;
        };
        *slot = Some((def_scope, v));
        drop(slot);
        let out = self.fold(ret, def_scope, depth + 1);
        if let Ok(mut slot) = self.param_value.try_borrow_mut() {
            *slot = None;
        }
        out
    }

    /// The value [`Self::fold_with_argument`] gives parameter `index` of
    /// the function whose body opens `func`, copied out so that no borrow
    /// of the cell outlives this call.
    fn param_override(&self, func: usize, index: usize) -> Option<String> {
        let slot = self.param_value.try_borrow().ok()?;
        slot.as_ref()
            .filter(|(s, _)| *s == func && index == 0)
            .map(|(_, v)| v.clone())
    }

    /// The scope of the script's own function (a `def`, or a lambda bound
    /// to a name) that `func` names, when a call passes all its parameters.
    pub(super) fn own_function_scope(&self, func: Node<'t>, scope: usize) -> Option<usize> {
        if let Some((def_scope, offset)) = self.callee_def(func, scope) {
            return (offset == 0).then_some(def_scope);
        }
        let (lambda, _) = self.bound_value(func, scope, |v| v.kind() == K::Lambda)?;
        Some(self.scope_of(lambda.child(F::Body)?))
    }

    /// `chr(c) for c in (114, 109)`, also shifted (`chr(c - 3)`, a Caesar
    /// disguise): the characters of literal character codes, or the numbers
    /// of `str(c) for c in ...` written out. With `codes`, a generator over
    /// the function's star parameter takes them instead (see
    /// `fold_own_decoder`).
    fn fold_chr_codes(
        &self,
        n: Node<'t>,
        scope: usize,
        depth: usize,
        codes: Option<&[Node<'t>]>,
    ) -> Option<Vec<String>> {
        let (iter, shift, decimal) = self.code_generator(n, scope, depth)?;
        let items: Vec<Node<'t>> = match codes {
            Some(codes) => {
                let [Bind::Param { param, .. }] =
                    self.lookup(self.text(iter), scope, iter.start_byte())?
                else {
                    return None;
                };
                if param.kind() != K::ListSplatPattern {
                    return None;
                }
                codes.to_vec()
            }
            None => self
                .bound_value(iter, scope, |v| v.kind().is_sequence())?
                .0
                .children()
                .collect(),
        };
        items
            .into_iter()
            .map(|k| {
                if decimal {
                    return Some(int_value(self.text(k))?.checked_add(shift)?.to_string());
                }
                code_char(self.text(k), shift)
            })
            .collect()
    }

    /// `chr(c ± k) for c in xs` or `str(c) for c in xs`: what it goes over,
    /// the shift, and whether it writes the numbers out (`str`: an address
    /// spelled in hex, `str(x) for x in (0xA9, 0xFE)`) rather than
    /// characters.
    fn code_generator(
        &self,
        n: Node<'t>,
        scope: usize,
        depth: usize,
    ) -> Option<(Node<'t>, i64, bool)> {
        let body = n.child(F::Body).filter(|b| b.kind() == K::Call)?;
        let clause = n.children().find(|c| c.kind() == K::ForInClause)?;
        let decimal = match self
            .resolve(body.child(F::Function)?, scope, depth + 1)?
            .as_str()
        {
            "builtins.chr" => false,
            "builtins.str" => true,
            _ => return None,
        };
        let [code] = self.args(body).0[..] else {
            return None;
        };
        let shift = self.code_shift(code, self.text(clause.child(F::Left)?))?;
        Some((clause.child(F::Right)?, shift, decimal))
    }

    /// How a generator's element is made from its variable `var`: the
    /// variable itself (0), or it plus or minus a literal.
    fn code_shift(&self, code: Node<'t>, var: &str) -> Option<i64> {
        match code.kind() {
            K::Identifier if self.text(code) == var => Some(0),
            K::BinaryOperator if code.child(F::Left).is_some_and(|l| self.text(l) == var) => {
                let k = int_value(self.text(code.child(F::Right)?))?;
                match code.operator() {
                    Op::Bin(Operator::Add) => Some(k),
                    Op::Bin(Operator::Sub) => Some(-k),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// `"".join(map(chr, codes))` or `"".join(chr(c) for c in codes)` where
    /// `codes` is not written at the join: a helper's parameter, a loop's
    /// variable. Each literal list of character codes it may be, decoded:
    /// folders named as code lists in a table and decoded by a helper in a
    /// loop are paths all the same.
    pub(super) fn pv_chr_join(
        &self,
        sep: Node<'t>,
        codes: Node<'t>,
        scope: usize,
        depth: usize,
    ) -> Vec<String> {
        let Some(sep) = self.fold(sep, scope, depth + 1) else {
            return Vec::new();
        };
        let Some((iter, shift)) = self.chr_source(codes, scope, depth) else {
            return Vec::new();
        };
        self.int_lists(iter, scope, depth + 1)
            .into_iter()
            .filter_map(|list| {
                list.children()
                    .map(|k| code_char(self.text(k), shift))
                    .collect::<Option<Vec<String>>>()
                    .map(|chars| chars.join(&sep))
            })
            .collect()
    }

    /// What `map(chr, xs)` or `chr(c ± k) for c in xs` maps, and the shift.
    fn chr_source(&self, n: Node<'t>, scope: usize, depth: usize) -> Option<(Node<'t>, i64)> {
        if n.kind() == K::Call {
            let [f, items] = self.args(n).0[..] else {
                return None;
            };
            let is = |x: Node<'t>, q: &str| self.resolve(x, scope, depth + 1).as_deref() == Some(q);
            return (is(n.child(F::Function)?, "builtins.map") && is(f, "builtins.chr"))
                .then_some((items, 0));
        }
        if n.kind() != K::GeneratorExpression {
            return None;
        }
        match self.code_generator(n, scope, depth)? {
            (iter, shift, false) => Some((iter, shift)),
            _ => None,
        }
    }

    /// The literal lists of integers `n` may be: itself, what a name is
    /// bound to, what each call passes a parameter, the elements of what a
    /// loop variable iterates.
    fn int_lists(&self, n: Node<'t>, scope: usize, depth: usize) -> Vec<Node<'t>> {
        if depth > EVAL_DEPTH || !self.tick() {
            return Vec::new();
        }
        let d = depth + 1;
        if n.kind().is_sequence() {
            let ints = n.children().all(|k| int_value(self.text(k)).is_some());
            return if ints { vec![n] } else { Vec::new() };
        }
        if n.kind() != K::Identifier {
            return Vec::new();
        }
        let name = self.text(n);
        let Some(binds) = self.lookup(name, scope, n.start_byte()) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for b in binds {
            match b {
                Bind::Expr(v, s) => out.extend(self.int_lists(v, s, d)),
                Bind::Param { func, index, .. } => {
                    for (arg, s) in self.passed(func, index, name) {
                        out.extend(self.int_lists(arg, s, d));
                    }
                }
                Bind::Part {
                    of,
                    scope: s,
                    how: Part::Each(None),
                } => {
                    if let Some((table, ts)) = self.bound_value(of, s, |v| v.kind().is_sequence()) {
                        out.extend(table.children().flat_map(|e| self.int_lists(e, ts, d)));
                    }
                }
                _ => {}
            }
        }
        out
    }

    /// `"process call create".split()`, also of a decoded text: the words
    /// (split at whitespace, or at the literal separator given).
    fn fold_split(&self, n: Node<'t>, scope: usize, depth: usize) -> Option<Vec<String>> {
        let func = n.child(F::Function).filter(|f| f.kind() == K::Attribute)?;
        if self.text(func.child(F::Attribute)?) != "split" {
            return None;
        }
        let text = self.fold(func.child(F::Object)?, scope, depth + 1)?;
        match self.args(n).0 {
            [] => Some(text.split_whitespace().map(String::from).collect()),
            [sep] => {
                let sep = self
                    .fold(*sep, scope, depth + 1)
                    .filter(|s| !s.is_empty())?;
                Some(text.split(sep.as_str()).map(String::from).collect())
            }
            _ => None,
        }
    }

    /// `map(chr, (101, 120, ...))` and `map(str, [...])` over literals.
    fn fold_mapped(&self, n: Node<'t>, scope: usize, depth: usize) -> Option<Vec<String>> {
        let (pos, _) = self.args(n);
        let [f, items] = pos[..] else { return None };
        if self.resolve(n.child(F::Function)?, scope, depth + 1)? != "builtins.map" {
            return None;
        }
        if !items.kind().is_sequence() {
            return None;
        }
        match self.resolve(f, scope, depth + 1)?.as_str() {
            "builtins.chr" => items
                .children()
                .map(|k| code_char(self.text(k), 0))
                .collect(),
            // Numbers written out too: `".".join(map(str, (10, 0, 0, 1)))`
            // is an address.
            "builtins.str" => items
                .children()
                .map(|k| {
                    self.fold(k, scope, depth + 1)
                        .or_else(|| int_value(self.text(k)).map(|v| v.to_string()))
                })
                .collect(),
            _ => None,
        }
    }

    /// Constant argv or command string as one text, for command checks.
    /// Remembered by node and scope, with the budget it leaves: several
    /// families fold the command of the same call, each from a fresh
    /// budget and once the walk is done, so the answer and what is left of
    /// the budget are the same each time (and the caller goes on with the
    /// same budget as before).
    pub(super) fn fold_command(&self, n: Node<'t>, scope: usize) -> Option<String> {
        let key = (n.id(), scope);
        if let Some((v, left)) = self.command_memo.borrow().get(&key) {
            self.budget.set(*left);
            return v.clone();
        }
        self.reset_budget();
        let v = self
            .fold(n, scope, 0)
            .or_else(|| self.fold_list_joined(n, scope));
        self.command_memo
            .borrow_mut()
            .insert(key, (v.clone(), self.budget.get()));
        v
    }

    /// `fold_list(n, scope, 0)` joined by spaces; a list, tuple or set
    /// literal's items are appended as they fold (literals without a copy),
    /// not collected into a vector of copies first. The same checks, in the
    /// same order, as `fold_list` and `fold`.
    fn fold_list_joined(&self, n: Node<'t>, scope: usize) -> Option<String> {
        if !matches!(n.kind(), K::List | K::Tuple | K::Set) {
            return self.fold_list(n, scope, 0).map(|v| v.join(" "));
        }
        if !self.tick() {
            return None;
        }
        let mut out = String::new();
        for (i, k) in n.children().enumerate() {
            let part = self.fold_part(k, scope, 1)?;
            if i > 0 {
                out.push(' ');
            }
            out.push_str(&part);
        }
        Some(out)
    }

    /// [`Self::fold`], borrowing a string literal's value instead of
    /// copying it, for callers that append what they fold to a text of
    /// their own. The same depth, budget and length checks as `fold`.
    fn fold_part(&self, n: Node<'t>, scope: usize, depth: usize) -> Option<Cow<'_, str>> {
        if n.kind() != K::String {
            return self.fold(n, scope, depth).map(Cow::Owned);
        }
        if depth > EVAL_DEPTH || !self.tick() {
            return None;
        }
        self.string_ref(n).filter(|v| v.len() <= MAX_FOLD_LEN)
    }

    pub(super) fn fold_int(&self, n: Node<'t>, scope: usize, depth: usize) -> Option<i64> {
        if depth > EVAL_DEPTH || !self.tick() {
            return None;
        }
        match n.kind() {
            K::Integer => int_value(self.text(n)),
            K::BinaryOperator => {
                let op = n.operator();
                let l = self.fold_int(n.child(F::Left)?, scope, depth + 1)?;
                let r = self.fold_int(n.child(F::Right)?, scope, depth + 1)?;
                match op {
                    Op::Bin(Operator::BitOr | Operator::Add) => Some(l | r),
                    Op::Bin(Operator::BitAnd) => Some(l & r),
                    _ => None,
                }
            }
            K::Attribute | K::Identifier => {
                let last = self.text(n).rsplit('.').next().unwrap_or("");
                if let Some(v) = stat_const(last) {
                    return Some(v);
                }
                if n.kind() == K::Identifier {
                    let binds = self.lookup(self.text(n), scope, n.start_byte())?;
                    return binds.iter().rev().find_map(|b| match *b {
                        Bind::Expr(v, s) => self.fold_int(v, s, depth + 1),
                        _ => None,
                    });
                }
                None
            }
            _ => None,
        }
    }

    /// Constant path of `Path("/etc") / "x"`, `os.path.join(...)`, literals.
    pub(super) fn fold_path(&self, n: Node<'t>, scope: usize, depth: usize) -> Option<String> {
        if depth > EVAL_DEPTH || !self.tick() {
            return None;
        }
        match n.kind() {
            K::Call => {
                let q = self.resolve(n.child(F::Function)?, scope, depth + 1);
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
            K::BinaryOperator if n.operator() == Op::Bin(Operator::Div) => {
                let l = self.fold_path(n.child(F::Left)?, scope, depth + 1)?;
                let r = self.fold_path(n.child(F::Right)?, scope, depth + 1)?;
                Some(join_path(&[l, r]))
            }
            K::Identifier => {
                let binds = self.lookup(self.text(n), scope, n.start_byte())?;
                binds.iter().rev().find_map(|b| match *b {
                    Bind::Expr(v, s) => self.fold_path(v, s, depth + 1),
                    _ => None,
                })
            }
            _ => self.fold(n, scope, depth + 1),
        }
    }
}
