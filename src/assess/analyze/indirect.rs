//! Indirections a script adds between itself and what it calls, seen
//! through so that a behaviour is recognised however it is spelled:
//!
//! - calls through a pass-through helper of the script's own (`def
//!   _call(fn, *args, **kwargs): return fn(*args, **kwargs)`): the call
//!   `_call(subprocess.run, cmd)` is a call of `subprocess.run` with `cmd`;
//! - literals hoisted into named constants (`OSA = "osascript"` ...
//!   `run([OSA, "-e", script])`): a search of a call's text for a word,
//!   the cheap test several checks make before folding, also reads the
//!   strings the call's names are bound to;
//! - names a function declares `global` (module code moved into a `main()`
//!   that assigns the module's names): their bindings are the module's, so
//!   that the other functions reading them find them.
//!
//! The metamorphic test (`metamorphic_tests.rs`) measures what such
//! respellings cost; `respelling_tests.rs` holds the unit tests.

use super::{Analyzer, Bind, Node, F, K};

/// How many nodes of a call [`Analyzer::text_holds_any`] looks through for
/// names: calls are short, and a bound keeps a huge one linear.
const NAMES_LOOKED_AT: usize = 64;

impl<'t> Analyzer<'t> {
    /// The function a call calls, as the families should see it: the callee
    /// as written, or the argument naming the function a pass-through
    /// helper or a runner calls (see [`Self::index_forwarding_calls`]).
    pub(super) fn call_function(&self, call: Node<'t>) -> Option<Node<'t>> {
        if let Some(at) = self.forwarded_at(call) {
            return self.arg_table.get(call).0.get(at).copied();
        }
        call.child(F::Function)
    }

    /// Whether `call` goes through a pass-through helper or a runner (see
    /// [`Self::index_forwarding_calls`]).
    pub(super) fn is_forwarded(&self, call: Node<'t>) -> bool {
        self.forwarded_at(call).is_some()
    }

    /// The position, among a forwarded call's arguments, of the function
    /// it has called.
    pub(super) fn forwarded_at(&self, call: Node<'t>) -> Option<usize> {
        if self.forwarded.is_empty() {
            return None;
        }
        self.forwarded.get(&call.id()).copied()
    }

    /// Finds the calls made through the script's own pass-through helpers,
    /// and the library functions handed to a runner with their arguments
    /// (`asyncio.to_thread(requests.post, url, data=d)`,
    /// `pool.submit(os.remove, p)`, `loop.run_in_executor(None,
    /// shutil.rmtree, d)`), and records them, with the method the function
    /// argument names, so that the callee and the arguments the families
    /// read are those of the call made. Run once after the walk, before
    /// anything resolves a callee.
    pub(super) fn index_forwarding_calls(&mut self) {
        // Most scripts have no helper: a look at each function's return
        // values, and nothing more.
        let helpers: Vec<usize> = self
            .returns
            .iter()
            .filter(|(s, rets)| rets.iter().any(|r| self.forwards_params(*r, **s)))
            .map(|(s, _)| *s)
            .collect();
        for i in 0..self.calls.len() {
            let site = self.calls[i];
            let Some(func) = site.node.child(F::Function) else {
                continue;
            };
            let at = match site.method {
                Some("to_thread" | "submit") => 0,
                Some("run_in_executor") => 1,
                _ if helpers.is_empty() => continue,
                _ => 0,
            };
            let Some(first) = self.arg_table.get(site.node).0.get(at).copied() else {
                continue;
            };
            self.reset_budget();
            let forwards = match site.method {
                Some("to_thread" | "submit" | "run_in_executor") => {
                    self.library_function(first, site.scope)
                }
                _ => self
                    .own_function_scope(func, site.scope)
                    .is_some_and(|s| helpers.contains(&s)),
            };
            if forwards {
                self.forwarded.insert(site.node.id(), at);
                let method = (first.kind() == K::Attribute)
                    .then(|| first.child(F::Attribute).map(|a| self.text(a)))
                    .flatten();
                self.calls[i].method = method;
            }
        }
    }

    /// Whether `f`, handed to a runner, names a function of a library (a
    /// module's, not the script's own, whose calls the runner's caller
    /// tracks already: see `defs::runner`).
    fn library_function(&self, f: Node<'t>, scope: usize) -> bool {
        let named = matches!(f.kind(), K::Attribute | K::Identifier);
        let own_method = f.child(F::Object).is_some_and(|o| self.text(o) == "self");
        named
            && !own_method
            && self.own_function_scope(f, scope).is_none()
            && self.resolve(f, scope, 0).is_some_and(|q| q.contains('.'))
    }

    /// Whether `ret`, a value the function whose body opens `func` returns,
    /// is a call of its first parameter with its other parameters passed
    /// on as they came (`fn(*args, **kwargs)`, `fn(*a)`, `fn()`): what the
    /// helper returns is what its first argument returns when given the
    /// call's other arguments.
    fn forwards_params(&self, ret: Node<'t>, func: usize) -> bool {
        if ret.kind() != K::Call {
            return false;
        }
        let own_param = |n: Node<'t>, first: bool| {
            n.kind() == K::Identifier
                && matches!(
                    self.lookup(self.text(n), func, n.start_byte()),
                    Some([Bind::Param { func: f, index, .. }]) if f == func && (index == 0) == first
                )
        };
        let Some(callee) = ret.child(F::Function) else {
            return false;
        };
        if !own_param(callee, true) {
            return false;
        }
        let Some(list) = ret.child(F::Arguments) else {
            return true;
        };
        // Only splats of the helper's own star parameters: an argument
        // added, dropped or reordered would make the call another one.
        list.kind() == K::ArgumentList
            && list.children().all(|a| {
                matches!(a.kind(), K::ListSplat | K::DictionarySplat)
                    && a.nth_child(0).is_some_and(|v| own_param(v, false))
            })
    }

    /// Records the names a `global` statement in a function declares, so
    /// that the function's assignments to them bind them in the module.
    pub(super) fn declare_global(&mut self, stmt: Node<'t>, scope: usize) {
        if scope == 0 {
            return;
        }
        for n in stmt.children().filter(|n| n.kind() == K::Identifier) {
            // Sorted, so that each binding's question is a binary search
            // however many functions declare the name.
            let scopes = self.declared_global.entry(self.text(n)).or_default();
            if let Err(i) = scopes.binary_search(&scope) {
                scopes.insert(i, scope);
            }
        }
    }

    /// The scope a binding of `name` made in `scope` belongs to: the
    /// module's when the function declared the name `global`.
    pub(super) fn binding_scope(&self, scope: usize, name: &str) -> usize {
        if scope == 0 || self.declared_global.is_empty() {
            return scope;
        }
        match self.declared_global.get(name) {
            Some(scopes) if scopes.binary_search(&scope).is_ok() => 0,
            _ => scope,
        }
    }

    /// Whether the text of `n`, or a string constant one of its names is
    /// bound to, holds one of `needles` (as bytes). Checks that search a
    /// call's text for a program's name before folding its arguments
    /// missed the name once a literal moved into a constant.
    pub(super) fn text_holds_any(
        &self,
        n: Node<'t>,
        scope: usize,
        needles: &[&'static str],
    ) -> bool {
        let holds = |t: &str| {
            needles
                .iter()
                .any(|p| memchr::memmem::find(t.as_bytes(), p.as_bytes()).is_some())
        };
        if holds(self.text(n)) {
            return true;
        }
        // Most calls name none of the needles, and most scripts hold none
        // anywhere: the names are looked up only when the source does.
        if !needles.iter().any(|p| self.source_holds(p)) {
            return false;
        }
        let mut stack = vec![n];
        let mut seen = 0;
        while let Some(x) = stack.pop() {
            seen += 1;
            if seen > NAMES_LOOKED_AT {
                return false;
            }
            if x.kind() == K::Identifier {
                let bound = self.lookup(self.text(x), scope, x.start_byte());
                if let Some([Bind::Expr(v, _)]) = bound {
                    if v.kind() == K::String && holds(self.text(v)) {
                        return true;
                    }
                }
                continue;
            }
            if !x.kind().opens_scope() {
                stack.extend(x.children());
            }
        }
        false
    }

    /// The attribute name a call's callee has when written plainly
    /// (`module.function`), for a callee that reaches `q` under another
    /// name: a name bound to the attribute (`grab = clip.GetClipboardData`)
    /// or `getattr(module, "function")`. Checks that read a call's method
    /// name then read the same one. `None` unless it is `q`'s last part.
    pub(super) fn respelled_method(
        &self,
        func: Node<'t>,
        scope: usize,
        q: Option<&str>,
    ) -> Option<&'t str> {
        let q = q?;
        let last = super::calls::last_part(q);
        let name: &'t str = match func.kind() {
            // A builtin, or a function imported under its own name
            // (`from os import system`), is no alias of an attribute: no
            // lookup for the commonest calls.
            K::Identifier if q.starts_with("builtins.") || self.text(func) == last => return None,
            K::Identifier => {
                let (v, _) = self.bound_value(func, scope, |v| v.kind() == K::Attribute)?;
                self.text(v.child(F::Attribute)?)
            }
            K::Call => {
                let lit = *self.args(func).0.get(1)?;
                if lit.kind() != K::String {
                    return None;
                }
                self.text(lit).trim_matches(['"', '\''])
            }
            _ => return None,
        };
        (name == last).then_some(name)
    }

    /// Whether a string bound to a name (`OSA = "osascript"`) holds
    /// `needle`, searched once per needle (a handful of program names);
    /// the whole source once the literals are gone (the strings family
    /// takes them last).
    fn source_holds(&self, needle: &'static str) -> bool {
        if let Some(&(_, found)) = self
            .sources_held
            .borrow()
            .iter()
            .find(|(n, _)| *n == needle)
        {
            return found;
        }
        let holds = |t: &str| memchr::memmem::find(t.as_bytes(), needle.as_bytes()).is_some();
        let found = if self.strings.is_empty() {
            holds(self.src)
        } else {
            self.strings.iter().any(|s| {
                s.parent().is_some_and(|p| p.kind() == K::Assignment) && holds(self.text(*s))
            })
        };
        self.sources_held.borrow_mut().push((needle, found));
        found
    }

    /// The source text of `n`, or of the string literal the name `n` is
    /// bound to once (a literal hoisted into a constant): for checks that
    /// read a literal argument as written (`open(p, "w")`, a `/password:`
    /// word) rather than folding it.
    pub(super) fn const_text(&self, n: Node<'t>, scope: usize) -> &'t str {
        if n.kind() == K::Identifier {
            if let Some([Bind::Expr(v, _)]) = self.lookup(self.text(n), scope, n.start_byte()) {
                if matches!(v.kind(), K::String | K::ConcatenatedString) {
                    return self.text(v);
                }
            }
        }
        self.text(n)
    }

    /// Records a list or tuple of two or more items whose first is a name
    /// (`[WEVTUTIL, "cl", ch]`), for the checks that read command words
    /// kept in tables: the literals' own search does not reach a list
    /// whose words are constants.
    pub(super) fn note_named_list(&mut self, list: Node<'t>) {
        // A command's first word, its program, is the one that names it.
        let mut items = list.children();
        let first_named = items.next().is_some_and(|c| c.kind() == K::Identifier);
        if first_named && items.next().is_some() {
            self.named_lists.push(list);
        }
    }

    /// The recorded lists (see [`Self::note_named_list`]) with a word
    /// that is a name bound to a string literal.
    pub(super) fn constant_word_lists(&self) -> Vec<Node<'t>> {
        self.named_lists
            .iter()
            .copied()
            .filter(|l| {
                let scope = self.scope_of(*l);
                l.children().any(|c| {
                    c.kind() == K::Identifier
                        && !std::ptr::eq(self.const_text(c, scope), self.text(c))
                })
            })
            .collect()
    }
}
