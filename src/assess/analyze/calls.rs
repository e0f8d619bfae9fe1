//! Every call site, resolved once ([`Call`]) and handed to the behaviour
//! families.

use std::rc::Rc;

use super::{exfil, kinds, pos, Analyzer, CallSite, Node, K};

/// What the families ask of every call site before anything else, worked
/// out once when the walk is done, by the site's place in
/// `Analyzer::calls`: each family that goes over the calls resolved the
/// callee, compared it with its lists and worked out how the call sends,
/// for every call.
pub(super) struct SiteFacts {
    /// The qualified name the callee resolves to.
    pub q: Option<Rc<str>>,
    /// The callee lists `q` is in ([`kinds::of`]).
    pub kinds: u32,
    /// How the call sends data, if it does ([`exfil::send_kind`]).
    pub send: Option<exfil::SendKind>,
}

/// A call site with what every family asks of it, computed once.
pub(super) struct Call<'t> {
    pub node: Node<'t>,
    /// The callee expression.
    pub func: Node<'t>,
    pub scope: usize,
    /// Innermost loop in the same function, and whether it is unbounded.
    pub loop_node: Option<(Node<'t>, bool)>,
    /// The qualified name the callee resolves to, e.g. "os.system".
    pub q: Option<Rc<str>>,
    pub pos: &'t [Node<'t>],
    pub kw: &'t [(&'t str, Node<'t>)],
    /// The attribute name when the callee is `obj.method`.
    pub method: Option<&'t str>,
    /// The callee as written.
    pub written: &'t str,
    /// A `shell=` argument that is not false.
    pub shell_kw: Option<Node<'t>>,
    /// The callee lists `q` is in ([`kinds::of`]), looked up once for the
    /// families, which each compared `q` with their lists.
    pub kinds: u32,
    /// How the call sends data, if it does (see [`SiteFacts`]).
    pub send: Option<exfil::SendKind>,
    /// See [`Call::via`].
    via: std::cell::OnceCell<String>,
}

/// The part of a dotted name after its last dot (all of it without one).
pub(super) fn last_part(q: &str) -> &str {
    match memchr::memrchr(b'.', q.as_bytes()) {
        Some(i) => q.get(i + 1..).unwrap_or(""),
        None => q,
    }
}

/// The keyword argument `name` of a call's keyword arguments `kw`.
pub(super) fn kwarg<'t>(kw: &[(&'t str, Node<'t>)], name: &str) -> Option<Node<'t>> {
    kw.iter().find(|(k, _)| *k == name).map(|(_, v)| *v)
}

/// Every argument value of a call: the positional ones, then the keyword
/// ones' values.
pub(super) fn arg_values<'a, 't>(
    pos: &'a [Node<'t>],
    kw: &'a [(&'t str, Node<'t>)],
) -> impl Iterator<Item = Node<'t>> + 'a {
    pos.iter().copied().chain(kw.iter().map(|(_, v)| *v))
}

impl<'t> Call<'t> {
    /// Every argument value (see [`arg_values`]).
    pub fn arg_values(&self) -> impl Iterator<Item = Node<'t>> + 't {
        arg_values(self.pos, self.kw)
    }

    pub fn kwarg(&self, name: &str) -> Option<Node<'t>> {
        kwarg(self.kw, name)
    }

    /// The `i`th positional argument, or the keyword argument `name`.
    pub fn arg(&self, i: usize, name: &str) -> Option<Node<'t>> {
        self.pos.get(i).copied().or_else(|| self.kwarg(name))
    }

    /// Whether `q` is in the callee list of `bit` (see [`kinds`]).
    pub fn is(&self, bit: u32) -> bool {
        self.kinds & bit != 0
    }

    /// The last dotted part of `q` (`os.path.join` gives `join`), as
    /// `q.rsplit('.').next()` gives it: found with memrchr, which several
    /// per-call checks each asked `rsplit` for at every call.
    pub fn q_last(&self) -> Option<&str> {
        self.q.as_deref().map(last_part)
    }

    /// How the call reached its callee `q`: its name, or the alias that
    /// resolved to it. Made at the first finding that shows it, once: three
    /// families asked for it at every resolved call, each making a string.
    pub fn via(&self) -> &str {
        self.via.get_or_init(|| {
            let (written, q) = (self.written, self.q.as_deref().unwrap_or(""));
            if written == q || q.strip_prefix("builtins.") == Some(written) {
                q.to_string()
            } else {
                ["`", written, "` resolves to ", q].concat()
            }
        })
    }
}

impl<'t> Analyzer<'t> {
    /// The scope the call at `node` is made in, from the index of calls.
    pub(super) fn call_scope(&self, node: Node<'t>) -> Option<usize> {
        self.calls
            .iter()
            .find(|c| c.node.id() == node.id())
            .map(|c| c.scope)
    }

    /// What the callee of `site` (one of `calls`) resolves to: the same as
    /// `callee`, kept by the call's place once the walk is done.
    pub(super) fn site_q(&self, site: &CallSite<'t>) -> Option<&str> {
        self.facts_of(site).and_then(|f| f.q.as_deref())
    }

    /// The callee lists the callee of `site` is in (see [`SiteFacts`]).
    pub(super) fn site_kinds(&self, site: &CallSite<'t>) -> u32 {
        self.facts_of(site).map_or(0, |f| f.kinds)
    }

    /// How the call at `site` sends data, if it does (see [`SiteFacts`]).
    pub(super) fn site_send(&self, site: &CallSite<'t>) -> Option<exfil::SendKind> {
        self.facts_of(site).and_then(|f| f.send)
    }

    pub(super) fn facts_of(&self, site: &CallSite<'t>) -> Option<&SiteFacts> {
        self.site_facts().get(site.index)
    }

    /// The facts of each of `calls` (see [`SiteFacts`]).
    fn site_facts(&self) -> &[SiteFacts] {
        self.site_facts.get_or_init(|| {
            self.calls
                .iter()
                .map(|c| {
                    let q = self.callee(c.node, c.scope);
                    let kinds = q.as_deref().map_or(0, kinds::of);
                    let send = exfil::send_kind_of(q.as_deref(), kinds, c.method);
                    SiteFacts { q, kinds, send }
                })
                .collect()
        })
    }

    /// Every argument value of the call at `call` (see [`arg_values`]).
    pub(super) fn arg_values(&self, call: Node<'t>) -> impl Iterator<Item = Node<'t>> + 't {
        let (pos, kw) = self.args(call);
        arg_values(pos, kw)
    }

    /// Whether the text of some call holds one of `needles`. Only calls
    /// not inside another call are read: a nested call's text is part of
    /// its outer call's, and reading it again made the search quadratic in
    /// the nesting.
    pub(super) fn call_text_has(&self, needles: &[&str]) -> bool {
        let mut spans: Vec<std::ops::Range<usize>> =
            self.calls.iter().map(|c| c.node.byte_range()).collect();
        spans.sort_by_key(|r| (r.start, std::cmp::Reverse(r.end)));
        // The outer calls' texts, in order and apart (calls nest or are
        // disjoint).
        let mut covered = 0;
        spans.retain(|r| {
            let outer = r.end > covered;
            covered = covered.max(r.end);
            outer
        });
        // Each needle is searched once in the whole source, and a match
        // counts when it lies within an outer call's text: one scan, where
        // searching each call's text set the search up again per call.
        let src = self.src.as_bytes();
        needles.iter().any(|n| {
            memchr::memmem::find_iter(src, n).any(|at| {
                let i = spans.partition_point(|r| r.start <= at);
                i > 0 && spans[i - 1].end >= at + n.len()
            })
        })
    }

    pub(super) fn check_calls(&mut self) {
        // By place, not over a copy of the list: the checks add findings,
        // never calls (the walk made them all).
        for i in 0..self.calls.len() {
            if let Some(call) = self.call(self.calls[i]) {
                self.check_call(&call);
            }
        }
    }

    fn call(&self, site: CallSite<'t>) -> Option<Call<'t>> {
        let node = site.node;
        let func = self.call_function(node)?;
        let facts = self.facts_of(&site)?;
        let (q, kinds, send) = (facts.q.clone(), facts.kinds, facts.send);
        self.reset_budget();
        let (pos, kw) = self.args(node);
        let shell_kw = kw
            .iter()
            .find(|(k, _)| *k == "shell")
            .map(|(_, v)| *v)
            .filter(|v| !matches!(v.kind(), K::False | K::None) && self.text(*v) != "0");
        // A module function called under another name is read as it
        // would be written plainly (`module.function(...)`).
        let method = site
            .method
            .or_else(|| self.respelled_method(func, site.scope, q.as_deref()));
        Some(Call {
            node,
            func,
            scope: site.scope,
            loop_node: site.loop_node,
            q,
            pos,
            kw,
            method,
            written: self.text(func),
            shell_kw,
            kinds,
            send,
            via: std::cell::OnceCell::new(),
        })
    }

    fn check_call(&mut self, call: &Call<'t>) {
        let node = call.node;
        for (k, v) in call.kw {
            if matches!(*k, "stdin" | "stdout" | "stderr") && self.text(*v).contains("fileno") {
                self.facts.fileno_redirect.get_or_insert(pos(node));
            }
        }
        if let Some(q) = call.q.as_deref() {
            self.check_dynamic(q, call);
            self.check_process(q, call);
            self.check_files(q, call);
            self.check_capabilities(q, call);
            self.check_supply_call(q, call);
            self.check_windows_call(q, call);
        }
        self.check_escape_call(call);
        self.check_raw_open(call);
        if let Some(m) = call.method {
            self.check_method(m, call);
        }
        self.check_flows(call);
        self.check_dropper(call);
        self.check_lateral(call);
        self.check_truncate_method(call);
        self.note_kill(call);
        let read = self.read_paths(call.q.as_deref(), call.method, call.node, call.scope);
        self.check_host(call, &read);
        self.check_harness_call(call, &read);
        self.check_kernel_call(call);
        self.check_capture(call, &read);
        self.check_abuse_call(call);
        self.note_file_steps(call);
        self.note_secret_read(call, &read);
        if let Some(kind) = call.send {
            self.sends.push(exfil::Send {
                node,
                scope: call.scope,
                kind,
            });
        }
        let is_subprocess = call.is(kinds::PROCESS);
        if call.shell_kw.is_some() && !is_subprocess {
            self.add("MB604", node, format!("{}(..., shell=True)", call.written));
            if let Some(cmd) = call
                .pos
                .first()
                .and_then(|a| self.fold_command(*a, call.scope))
            {
                self.check_command(&cmd, node);
            }
        }
    }
}
