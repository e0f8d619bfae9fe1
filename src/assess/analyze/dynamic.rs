//! Dynamic code: exec/eval/compile of computed, decoded or downloaded
//! code, code given as a literal (assessed in turn), computed imports and
//! computed `getattr`.

use super::calls::Call;
use super::names::*;
use super::{Analyzer, Bind, Node, Part, F, K};
use super::{EVAL_DEPTH, MAX_NESTED_CODE};

impl<'t> Analyzer<'t> {
    /// exec/eval/compile, `__import__`/`import_module` and `getattr` calls.
    pub(super) fn check_dynamic(&mut self, q: &str, call: &Call<'t>) {
        let (node, scope, pos) = (call.node, call.scope, &call.pos);
        match q {
            "builtins.exec" | "builtins.eval" | "builtins.compile" | "builtins.execfile" => {
                if let Some(arg) = pos.first().copied().or_else(|| call.kwarg("source")) {
                    self.check_exec(q, arg, node, scope);
                }
            }
            "builtins.__import__" | "importlib.import_module" | "importlib.__import__" => {
                self.reset_budget();
                let name = pos.first().and_then(|a| self.fold(*a, scope, 0));
                match name {
                    // One of a literal list of names (`for m in ("json", "csv")`).
                    None if pos.first().is_some_and(|a| self.literal_choice(*a, scope)) => {}
                    None => self.add("MB411", node, format!("{q} of a computed name")),
                    // A name kept encoded (base64, hex, rot13) is hidden as
                    // much as a computed one: only the decoder shows it.
                    Some(m) if pos.first().is_some_and(|a| decoded_in_place(self.text(*a))) => {
                        self.add("MB411", node, format!("{q} of a name decoded to {m:?}"))
                    }
                    Some(m) if q == "builtins.__import__" => {
                        self.add("MB412", node, format!("__import__({m:?})"))
                    }
                    Some(m) if pos.first().is_none_or(|a| a.kind() != K::String) => {
                        self.add("MB414", node, format!("module name assembled as {m:?}"))
                    }
                    Some(_) => {}
                }
            }
            "builtins.getattr" if pos.len() >= 2 => {
                self.reset_budget();
                if let Some(base) = self.resolve(pos[0], scope, 0) {
                    self.reset_budget();
                    match self.fold(pos[1], scope, 0) {
                        // One of a literal list of names (`for n in ("sqrt", "sin")`).
                        None if self.literal_choice(pos[1], scope) => {}
                        None => self.add("MB413", node, format!("getattr({base}, <computed>)")),
                        Some(name) if pos[1].kind() != K::String => {
                            self.add("MB414", node, format!("getattr({base}, {name:?})"))
                        }
                        Some(_) => {}
                    }
                }
            }
            _ => {}
        }
    }

    /// Is `n` a loop variable over a literal list of strings (`for m in
    /// ("json", "csv")`, or a name bound to such a list, or the values or
    /// keys of a literal dict), or an entry of a literal dict of strings
    /// picked by an unknown key (`PLUGINS[key]`, `PLUGINS.get(key)`)?
    fn literal_choice(&self, n: Node<'t>, scope: usize) -> bool {
        let literal = |e: Node<'t>| self.constant(e);
        if let Some(table) = self.looked_up_in(n) {
            // `.get(key, default)`: the default is a choice too.
            let default = (n.kind() == K::Call)
                .then(|| self.args(n).0.get(1).copied())
                .flatten();
            if default.is_some_and(|d| !literal(d)) {
                return false;
            }
            return self.dict_literal(table, scope).is_some_and(|(d, _)| {
                d.child_count() > 0 && d.children().all(|p| p.child(F::Value).is_some_and(literal))
            });
        }
        if n.kind() != K::Identifier {
            return false;
        }
        let first = |name: Node<'t>, s: usize| {
            self.lookup(self.text(name), s, name.start_byte())
                .and_then(|b| b.first().copied())
        };
        let Some(Bind::Part {
            of,
            scope: s,
            how: Part::Each(at),
        }) = first(n, scope)
        else {
            return false;
        };
        // `for k, v in {"shot": "mss", ...}.items()`: the dict's values.
        let (of, pick) = match (at, self.method_name(of)) {
            (None, None) => (Some(of), None),
            (None, Some("values")) | (Some(1), Some("items")) => {
                (self.receiver(of), Some(F::Value))
            }
            (None, Some("keys")) | (Some(0), Some("items")) => (self.receiver(of), Some(F::Key)),
            _ => return false,
        };
        let Some(of) = of else {
            return false;
        };
        let list = match (of.kind(), first(of, s)) {
            (K::Identifier, Some(Bind::Expr(v, _))) => v,
            (K::Identifier, _) => return false,
            _ => of,
        };
        match pick {
            None => {
                matches!(list.kind(), K::List | K::Tuple | K::Set)
                    && list.child_count() > 0
                    && list.children().all(literal)
            }
            Some(side) => {
                list.kind() == K::Dictionary
                    && list.child_count() > 0
                    && list.children().all(|p| p.child(side).is_some_and(literal))
            }
        }
    }

    /// Whether `e` is a constant text: a literal, or a name bound to one
    /// (a literal list hoisted into named constants is the same list).
    fn constant(&self, e: Node<'t>) -> bool {
        self.reset_budget();
        self.fold(e, self.scope_of(e), 0).is_some()
    }

    /// Code that is a syntax tree from `ast.parse`, walked by the same
    /// function (`ast.walk(tree)`, a visitor) with `isinstance` checks before
    /// it is compiled: an expression checked against a whitelist.
    fn validated_tree(&self, arg: Node<'t>, scope: usize) -> Option<Node<'t>> {
        let (pos, _) = self.args(arg);
        // What the calls resolve to, through aliases, tables and
        // pass-through helpers.
        let callee = (arg.kind() == K::Call)
            .then(|| self.callee(arg, scope))
            .flatten();
        let tree = match callee.as_deref() {
            Some("builtins.compile") => *pos.first()?,
            _ => arg,
        };
        if tree.kind() != K::Identifier {
            return None;
        }
        let name = self.text(tree);
        let binds = self.lookup(name, scope, tree.start_byte())?;
        let Bind::Expr(parsed, s) = *binds.first()? else {
            return None;
        };
        let q = (parsed.kind() == K::Call)
            .then(|| self.callee(parsed, s))
            .flatten();
        if q.as_deref() != Some("ast.parse") {
            return None;
        }
        // Checked here, or by a function of the script's own given the tree
        // (`validate(tree)` walking its parameter).
        let by_helper = || {
            self.calls.iter().filter(|c| c.scope == scope).any(|c| {
                let passes = self.args(c.node).0.first().map(|a| self.text(*a)) == Some(name);
                let helper = c.node.child(F::Function).filter(|_| passes);
                let def = helper.and_then(|f| self.own_function_scope(f, scope));
                def.and_then(|d| Some((d, self.first_param_name(d)?)))
                    .is_some_and(|(d, p)| self.walks_with_checks(d, p))
            })
        };
        (self.walks_with_checks(scope, name) || by_helper()).then_some(parsed)
    }

    /// Whether scope `scope` walks or visits the tree named `name` and
    /// checks node types with `isinstance`.
    fn walks_with_checks(&self, scope: usize, name: &str) -> bool {
        let in_scope = |c: &&super::CallSite<'t>| c.scope == scope;
        // By the name written or what it resolves to: `_w = ast.walk`,
        // `OPS["walk"](tree)` and `_call(ast.walk, tree)` walk the tree too.
        let callee = |c: &super::CallSite<'t>| self.callee(c.node, c.scope);
        let walked = self.calls.iter().filter(in_scope).any(|c| {
            let t = c
                .node
                .child(F::Function)
                .map(|f| self.text(f))
                .unwrap_or("");
            let arg0 = self.args(c.node).0.first().map(|a| self.text(*a));
            let walks = t.ends_with("walk")
                || t.ends_with("visit")
                || callee(c).is_some_and(|q| matches!(&*q, "ast.walk" | "ast.iter_child_nodes"));
            walks && arg0 == Some(name)
        });
        walked
            && self.calls.iter().filter(in_scope).any(|c| {
                c.node
                    .child(F::Function)
                    .is_some_and(|f| self.text(f) == "isinstance")
                    || callee(c).is_some_and(|q| &*q == "builtins.isinstance")
            })
    }

    /// The name of the first parameter of the function whose body opens
    /// `def_scope`.
    fn first_param_name(&self, def_scope: usize) -> Option<&'t str> {
        let def = self.scopes.get(def_scope)?.node?;
        let p = def.child(F::Parameters)?.children().next()?;
        let id = match p.kind() {
            K::Identifier => p,
            _ => p
                .child(F::Name)
                .or_else(|| p.children().find(|k| k.kind() == K::Identifier))?,
        };
        Some(self.text(id))
    }

    fn check_exec(&mut self, q: &str, arg: Node<'t>, node: Node<'t>, scope: usize) {
        self.reset_budget();
        // Decoded data reached through parameters and stored attributes
        // counts when it is run; compiled only (an importer's code object
        // handed back, zipimport), it is read where it stands.
        let hops = q != "builtins.compile";
        if let Some(d) = self.contains_decoder(arg, scope, 0, hops) {
            self.add("MB903", node, format!("{q} of data decoded by {d}"));
            return;
        }
        self.reset_budget();
        if let Some(d) = self.contains_download(arg, scope, 0) {
            self.add("MB908", node, format!("{q} of data fetched by {d}"));
            return;
        }
        self.reset_budget();
        let code = self.fold(arg, scope, 0);
        if let Some(code) = &code {
            self.assess_nested(q, code, node);
        }
        if let Some(parsed) = self.validated_tree(arg, scope) {
            let line = parsed.start_position().row + 1;
            self.add(
                "MB111",
                node,
                format!("{q} of the tree parsed at line {line}, walked and checked with isinstance first"),
            );
            return;
        }
        let literal = code.is_some() || self.is_compile_of_literal(arg, scope);
        let rule = match (literal, q) {
            (true, _) => "MB101",
            (false, "builtins.eval") => "MB307",
            (false, "builtins.compile") => "MB110",
            (false, _) => "MB102",
        };
        self.add(
            rule,
            node,
            format!("{q}({})", if literal { "<literal>" } else { "<computed>" }),
        );
    }

    /// Code passed to exec/eval as a (folded) constant is assessed as well,
    /// its findings pinned to the exec call.
    pub(super) fn assess_nested(&mut self, q: &str, code: &str, node: Node<'t>) {
        if self.nesting >= MAX_NESTED_CODE {
            return;
        }
        // Parser failures here only lose the nested findings; the outer
        // exec finding still stands.
        if let Ok((inner, _)) = super::analyze_text(code, self.max_depth, self.nesting + 1) {
            for f in inner.into_iter().filter(|f| f.rule != "MB001") {
                let detail = format!("inside the code given to {q}: {}", f.detail);
                self.add(f.rule, node, detail);
            }
        }
    }

    fn is_compile_of_literal(&self, n: Node<'t>, scope: usize) -> bool {
        if n.kind() != K::Call {
            return false;
        }
        self.reset_budget();
        let q = n.child(F::Function).and_then(|f| self.resolve(f, scope, 0));
        if q.as_deref() != Some("builtins.compile") {
            return false;
        }
        let (pos, _) = self.args(n);
        self.reset_budget();
        pos.first()
            .is_some_and(|a| self.fold(*a, scope, 0).is_some())
    }

    /// Does the expression decode, decompress or unmarshal something?
    fn contains_decoder(
        &self,
        n: Node<'t>,
        scope: usize,
        depth: usize,
        hops: bool,
    ) -> Option<String> {
        if depth > EVAL_DEPTH || !self.tick() {
            return None;
        }
        match n.kind() {
            K::Call => {
                // Through a pass-through helper, the function it calls.
                if let Some(func) = self.call_function(n) {
                    if let Some(q) = self.resolve(func, scope, depth + 1) {
                        if DECODERS.contains(&q.as_str())
                            || (q == "builtins.chr" && self.chr_spells(n))
                        {
                            return Some(q);
                        }
                    }
                    if func.kind() == K::Attribute {
                        let m = func.child(F::Attribute).map(|a| self.text(a)).unwrap_or("");
                        if m == "decode" || m == "decompress" || m == "translate" {
                            let (pos, _) = self.args(n);
                            let codec = pos
                                .first()
                                .and_then(|c| self.fold(*c, scope, depth + 1))
                                .unwrap_or_default()
                                .to_ascii_lowercase();
                            if m != "decode"
                                || ["rot13", "rot_13", "base64", "hex", "zlib", "bz2"]
                                    .contains(&codec.as_str())
                            {
                                return Some(format!(".{m}({codec})"));
                            }
                        }
                    }
                    // A helper of the script's own that returns decoded data.
                    if let Some((def_scope, _)) = self.callee_def(func, scope) {
                        let returned = self.returns.get(&def_scope).cloned().unwrap_or_default();
                        if let Some(d) = returned
                            .into_iter()
                            .find_map(|v| self.contains_decoder(v, def_scope, depth + 1, hops))
                        {
                            return Some(d);
                        }
                    }
                }
            }
            // Reversing a list (`'.'.join(ids[::-1])`) hides nothing; reversing
            // a constant string is the disguise.
            K::Subscript
                if self.reversed_by_slice(n)
                    && n.child(F::Value)
                        .is_some_and(|v| self.fold(v, scope, depth + 1).is_some()) =>
            {
                return Some("string reversal".into());
            }
            K::Identifier | K::Attribute => {
                if let Some(found) = self.bound_decoder(n, scope, depth, hops) {
                    return found;
                }
            }
            _ => {}
        }
        let kids: Vec<Node<'t>> = n.children().collect();
        kids.into_iter()
            .find_map(|k| self.contains_decoder(k, scope, depth + 1, hops))
    }

    /// [`Self::contains_decoder`] of what a name is bound to (and, with
    /// `hops`, what callers pass a parameter, or methods store in
    /// `self.NAME`); `None` for an attribute it does not follow.
    fn bound_decoder(
        &self,
        n: Node<'t>,
        scope: usize,
        depth: usize,
        hops: bool,
    ) -> Option<Option<String>> {
        if n.kind() == K::Identifier {
            let Some(binds) = self.lookup(self.text(n), scope, n.start_byte()) else {
                return Some(None);
            };
            return Some(binds.iter().rev().find_map(|b| {
                match *b {
                    Bind::Expr(v, s) => self.contains_decoder(v, s, depth + 1, hops),
                    // A parameter: what the callers pass (`def install(src):
                    // exec(src)` called with decompressed bytes).
                    Bind::Param { func, index, .. } if hops => self
                        .passed(func, index, self.text(n))
                        .into_iter()
                        .take(super::defs::MAX_PASSED)
                        .find_map(|(a, s)| self.contains_decoder(a, s, depth + 1, hops)),
                    _ => None,
                }
            }));
        }
        // `self.source`: what the methods store there.
        if !hops {
            return None;
        }
        let stores = self.attr_stores.get(self.self_attribute(n)?)?;
        Some(
            stores
                .iter()
                .take(super::defs::MAX_PASSED)
                .find_map(|&(v, s)| self.contains_decoder(v, s, depth + 1, hops)),
        )
    }

    /// Is this `chr(...)` call spelling text out: a computed code point
    /// (`chr(c) for c in codes`), or one piece of a concatenation or list of
    /// characters? A lone `chr(0x4000)` is just a character.
    fn chr_spells(&self, call: Node<'t>) -> bool {
        let (pos, _) = self.args(call);
        let literal = pos.first().is_some_and(|a| a.kind() == K::Integer);
        !literal
            || call
                .parent()
                .is_some_and(|p| matches!(p.kind(), K::BinaryOperator | K::List | K::Tuple))
    }

    /// Does the expression fetch something from the network?
    fn contains_download(&self, n: Node<'t>, scope: usize, depth: usize) -> Option<String> {
        if depth > EVAL_DEPTH || !self.tick() {
            return None;
        }
        match n.kind() {
            K::Call => {
                if let Some(q) = n
                    .child(F::Function)
                    .and_then(|f| self.resolve(f, scope, depth + 1))
                {
                    if is_network_client(&q) {
                        return Some(q);
                    }
                }
            }
            K::Identifier => {
                let binds = self.lookup(self.text(n), scope, n.start_byte())?;
                return binds.iter().rev().find_map(|b| match *b {
                    Bind::Expr(v, s) => self.contains_download(v, s, depth + 1),
                    _ => None,
                });
            }
            _ => {}
        }
        let kids: Vec<Node<'t>> = n.children().collect();
        kids.into_iter()
            .find_map(|k| self.contains_download(k, scope, depth + 1))
    }
}

/// Whether an expression's text decodes something where it stands
/// (`b64decode(..)`, `codecs.decode(.., "rot13")`, `bytes.fromhex(..)`).
fn decoded_in_place(text: &str) -> bool {
    ["decode(", "fromhex(", "unhexlify("]
        .iter()
        .any(|d| text.contains(d))
}
