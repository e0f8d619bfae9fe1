//! Data flow: which sources a value may carry. A value read from the
//! network, from an HTTP request, from the user, from a secret file or from
//! any file is followed through assignments, tuple unpacking, loop targets,
//! `with` targets, containers and the values put into them (`x.append(v)`,
//! `x[k] = v`, `x += v`), attributes (`r.text`, `self.key = key`), function
//! parameters (what callers pass, what threads and pools are given),
//! returns, string building and library calls, to the sinks the behaviour
//! checks ([`super::flows`]) look at. Each source keeps the node where it
//! entered, so a finding names both ends.
//!
//! Queries are bounded like the other evaluators (depth and step budget).

use ruff_python_ast::Operator;

use super::calls::kwarg;
use super::names::is_network_client;
use super::{taxonomy, Analyzer, Bind, NameMap, Node, Op, EVAL_DEPTH, F, K};

/// Where data comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Source {
    /// Received from a network peer: sockets, HTTP responses, downloads.
    Network,
    /// The request a server handles: query strings, bodies, headers.
    Request,
    /// The person running the script: `input()`, `sys.argv`, stdin.
    User,
    /// Credentials, keys, browser stores, histories, keystrokes.
    Secret,
    /// The contents of a file.
    FileData,
    /// Passed through a cipher, XOR or byte arithmetic.
    Scrambled,
    /// The script's own source (its file read back): what a worm copies.
    OwnCode,
    /// Environment variables (`os.environ`, `os.getenv`).
    Environment,
    /// Bytes turned into text fit for a name, a header or a URL: base64,
    /// base32, hex. Alone it marks nothing; with data it marks data made to
    /// travel where data does not belong (covert channels).
    Encoded,
    /// The current date or time.
    Clock,
    /// Who and where the script runs: the host's and the user's names and
    /// ids, the account database.
    Identity,
    /// Random numbers and bytes.
    Random,
    /// Messages read from a mailbox (IMAP, POP3).
    Mail,
    /// Bytes unpacked from a long encoded literal of the script's own
    /// (base64, hex, compressed): a payload carried inside the script.
    Embedded,
}

const SOURCES: usize = 14;

/// Shortest encoded literal counted as a carried payload: longer than keys,
/// hashes and tokens a script decodes as configuration.
const EMBEDDED_MIN: usize = 160;

/// Levels of names and parameters followed from a decoder to its literal.
const EMBEDDED_DEPTH: usize = 4;

/// Steps a file read inside a flow query may spend finding its path.
const PATH_STEPS: u32 = 400;

impl Source {
    pub fn describe(self) -> &'static str {
        match self {
            Source::Network => "network data",
            Source::Request => "request data",
            Source::User => "user input",
            Source::Secret => "secret data",
            Source::FileData => "file contents",
            Source::Scrambled => "scrambled data",
            Source::OwnCode => "the script's own code",
            Source::Environment => "environment variables",
            Source::Encoded => "encoded data",
            Source::Clock => "the clock",
            Source::Identity => "the host's or user's identity",
            Source::Random => "random values",
            Source::Mail => "mailbox contents",
            Source::Embedded => "a payload unpacked from the script's own encoded literal",
        }
    }
}

/// No node: a source the value does not carry.
const ABSENT: u32 = u32::MAX;

/// The sources a value carries, each with the node where it entered. Kept
/// as node numbers beside one node of the tree (every node of a query is
/// of the one tree): 72 bytes instead of 224 for an `Option<Node>` per
/// source, and every flow query creates, copies and merges these.
#[derive(Clone, Copy)]
pub(super) struct Taint<'t> {
    tree: Option<Node<'t>>,
    at: [u32; SOURCES],
}

impl Default for Taint<'_> {
    fn default() -> Self {
        Taint {
            tree: None,
            at: [ABSENT; SOURCES],
        }
    }
}

impl<'t> Taint<'t> {
    fn note_tree(&mut self, n: Node<'t>) {
        debug_assert!(self.tree.is_none_or(|t| t.with_id(n.id()) == n));
        self.tree.get_or_insert(n);
    }

    pub fn add(&mut self, s: Source, n: Node<'t>) {
        let slot = &mut self.at[s as usize];
        if *slot == ABSENT {
            *slot = n.id();
            self.note_tree(n);
        }
    }

    pub fn get(&self, s: Source) -> Option<Node<'t>> {
        let id = self.at[s as usize];
        self.tree.filter(|_| id != ABSENT).map(|t| t.with_id(id))
    }

    pub fn has(&self, s: Source) -> bool {
        self.at[s as usize] != ABSENT
    }

    /// The first of `sources` carried, with where it entered.
    pub fn first(&self, sources: &[Source]) -> Option<(Source, Node<'t>)> {
        sources.iter().find_map(|s| self.get(*s).map(|n| (*s, n)))
    }

    /// Every source `o` carries, entering at `n` (a read names the source
    /// at the read, not where its object was made).
    pub fn add_all_at(&mut self, o: &Taint<'t>, n: Node<'t>) {
        let mut added = false;
        for (a, b) in self.at.iter_mut().zip(o.at) {
            if b != ABSENT && *a == ABSENT {
                *a = n.id();
                added = true;
            }
        }
        if added {
            self.note_tree(n);
        }
    }

    /// Forgets `s` (a source that does not reach the value after all).
    pub fn without(&mut self, s: Source) {
        self.at[s as usize] = ABSENT;
    }

    pub fn merge(&mut self, o: &Taint<'t>) {
        let Some(t) = o.tree else {
            return;
        };
        for (a, b) in self.at.iter_mut().zip(o.at) {
            if *a == ABSENT {
                *a = b;
            }
        }
        self.note_tree(t);
    }
}

/// Calls whose value is untainted whatever they are given: numbers,
/// lengths, digests, quoting and escaping.
const SANITIZERS: &[&str] = &[
    "builtins.int",
    "builtins.float",
    "builtins.len",
    "builtins.bool",
    "builtins.hash",
    "builtins.isinstance",
    "shlex.quote",
    "pipes.quote",
    "re.escape",
    "html.escape",
    "ast.literal_eval",
    "os.path.exists",
    "os.path.isfile",
    "os.path.isdir",
    "os.path.getsize",
    "ipaddress.ip_address",
];

/// Method names that encrypt or otherwise scramble what they are given.
const SCRAMBLERS: &[&str] = &["encrypt", "encrypt_and_digest", "seal", "update"];

/// Methods that read what an object received (a socket, a response, a file).
const READS: &[&str] = &[
    "recv",
    "recvfrom",
    "recv_into",
    "recvmsg",
    "read",
    "read1",
    "readline",
    "readlines",
    "makefile",
    "json",
    "getresponse",
    "accept",
    "iter_content",
    "iter_lines",
    "exec_command",
];

/// Attributes of `self` in a request handler class that hold the request.
const HANDLER_ATTRS: &[&str] = &[
    "path",
    "rfile",
    "headers",
    "request",
    "requestline",
    "raw_requestline",
];

/// Methods whose value is the command line, parsed (`argparse`): user input.
pub(super) fn parses_arguments(method: &str) -> bool {
    matches!(method, "parse_args" | "parse_known_args")
}

pub(super) fn source_of(q: &str) -> Option<Source> {
    if is_network_client(q)
        || matches!(
            q,
            "socket.socket"
                | "socket.create_connection"
                | "socket.create_server"
                | "socket.fromfd"
                | "ssl.wrap_socket"
                | "urllib.request.Request"
                | "websocket.create_connection"
                | "asyncio.open_connection"
        )
    {
        return Some(Source::Network);
    }
    if q == "flask.request" || q.starts_with("flask.request.") || q.starts_with("bottle.request") {
        return Some(Source::Request);
    }
    if matches!(
        q,
        "builtins.input"
            | "builtins.raw_input"
            | "sys.argv"
            | "fileinput.input"
            | "getpass.getpass"
    ) || q.starts_with("sys.stdin")
    {
        return Some(Source::User);
    }
    sixth_round_source(q)
}

/// The sources the sixth round's families follow: the environment, the
/// clock, the machine's and user's identity, randomness, encoders and
/// mailboxes. Split by module first, as most names asked are of none.
fn sixth_round_source(q: &str) -> Option<Source> {
    let (module, rest) = q.split_once('.')?;
    match module {
        "os" => match rest {
            "getenv" | "getenvb" | "environ" | "environb" => Some(Source::Environment),
            _ if rest.starts_with("environ.") || rest.starts_with("environb.") => {
                Some(Source::Environment)
            }
            "uname" | "getlogin" | "getuid" | "geteuid" => Some(Source::Identity),
            "urandom" | "getrandom" => Some(Source::Random),
            _ => None,
        },
        "datetime" => matches!(
            rest,
            "datetime.now" | "datetime.today" | "datetime.utcnow" | "date.today"
        )
        .then_some(Source::Clock),
        "time" => matches!(
            rest,
            "time" | "time_ns" | "localtime" | "gmtime" | "strftime" | "ctime"
        )
        .then_some(Source::Clock),
        "socket" => matches!(rest, "gethostname" | "getfqdn").then_some(Source::Identity),
        "platform" => matches!(rest, "node" | "uname").then_some(Source::Identity),
        "getpass" => (rest == "getuser").then_some(Source::Identity),
        "pwd" | "grp" => Some(Source::Identity),
        "random" | "secrets" => Some(Source::Random),
        "numpy" => rest.starts_with("random.").then_some(Source::Random),
        "base64" => rest.contains("encode").then_some(Source::Encoded),
        "binascii" => {
            matches!(rest, "hexlify" | "b2a_hex" | "b2a_base64").then_some(Source::Encoded)
        }
        "codecs" => (rest == "encode").then_some(Source::Encoded),
        "imaplib" | "poplib" => Some(Source::Mail),
        _ => None,
    }
}

/// Environment variables that name the user or the host.
const IDENTITY_VARIABLES: &[&str] = &["USER", "LOGNAME", "USERNAME", "HOSTNAME"];

impl<'t> Analyzer<'t> {
    /// The sources `n` may carry (a fresh step budget).
    pub(super) fn taint(&self, n: Node<'t>, scope: usize) -> Taint<'t> {
        self.reset_budget();
        let mut acc = Taint::default();
        self.tv(n, scope, 0, &mut acc);
        acc
    }

    fn tv(&self, n: Node<'t>, scope: usize, depth: usize, acc: &mut Taint<'t>) {
        if depth > EVAL_DEPTH || !self.tick() {
            return;
        }
        let d = depth + 1;
        match n.kind() {
            K::Identifier => self.tv_name(n, scope, d, acc),
            K::Attribute => self.tv_attribute(n, scope, d, acc),
            K::Subscript => {
                // `data[::-1]`: the bytes reversed.
                if self.reversed_by_slice(n) {
                    acc.add(Source::Scrambled, n);
                }
                if let Some(v) = n.child(F::Value) {
                    self.tv(v, scope, d, acc);
                }
            }
            K::Call => self.tv_call(n, scope, d, acc),
            K::BinaryOperator => {
                // XOR, and byte arithmetic modulo a number (`(b + 13) % 256`).
                let modulo = n.operator() == Op::Bin(Operator::Mod)
                    && n.child(F::Right).is_some_and(|r| r.kind() == K::Integer);
                if n.operator() == Op::Bin(Operator::BitXor) || modulo {
                    acc.add(Source::Scrambled, n);
                }
                self.tv_children(n, scope, d, acc);
            }
            K::Dictionary if self.headers_of_request(n) => {
                // `headers={"Authorization": "Bearer " + token}`: a
                // credential shown to the service it belongs to is a
                // login, not data sent; the other headers still are.
                for pair in n.children() {
                    let login = pair.child(F::Key).is_some_and(|k| {
                        self.string_value(k)
                            .is_some_and(|v| v.eq_ignore_ascii_case("authorization"))
                    });
                    if !login {
                        self.tv(pair, scope, d, acc);
                    }
                }
            }
            // The condition of a branch or a filter decides, it is not the value.
            K::IfClause | K::ComparisonOperator | K::NotOperator => {}
            k if k.opens_scope() => {}
            _ => self.tv_children(n, scope, d, acc),
        }
    }

    /// Whether the dict literal `n` is written as a call's `headers=`.
    fn headers_of_request(&self, n: Node<'t>) -> bool {
        n.parent().is_some_and(|k| {
            k.kind() == K::KeywordArgument
                && k.child(F::Name)
                    .is_some_and(|name| self.text(name) == "headers")
        })
    }

    fn tv_children(&self, n: Node<'t>, scope: usize, depth: usize, acc: &mut Taint<'t>) {
        for k in n.children() {
            self.tv(k, scope, depth, acc);
        }
    }

    fn tv_name(&self, n: Node<'t>, scope: usize, depth: usize, acc: &mut Taint<'t>) {
        let name = self.text(n);
        if let Some(s) = self
            .resolve_rooted(n, scope, depth)
            .as_deref()
            .and_then(source_of)
        {
            acc.add(s, n);
        }
        let Some((b, span)) = self.lookup_span(name, scope, n.start_byte()) else {
            return;
        };
        {
            match b {
                Bind::Expr(v, s) => self.tv_value(v, s, depth, acc),
                Bind::Part { of, scope: s, .. } => self.tv(of, s, depth, acc),
                Bind::Param { param, func, index } => {
                    if self.is_route_handler(func) {
                        acc.add(Source::Request, param);
                    }
                    if self.stream_callback(func) {
                        acc.add(Source::Network, param);
                    }
                    for (arg, s) in self.passed(func, index, name) {
                        self.tv(arg, s, depth, acc);
                    }
                }
                _ => {}
            }
        }
        if let Some((Bind::Expr(v, s), _)) = self.rebound_later_in_loop(n, scope) {
            self.tv_value(v, s, depth, acc);
        }
        // What was put into the value while this binding held it.
        for (s, v) in self.mutations_near(name, scope) {
            if span.contains(&v.start_byte()) {
                self.tv(v, s, depth, acc);
            }
        }
        // What was packed into an archive written into the value.
        for (s, call) in self.archive_members_near(name, scope) {
            if span.contains(&call.start_byte()) {
                self.tv_member(call, s, depth, acc);
            }
        }
    }

    /// `for stage in stages: value = stage(value)`: a use of a name that
    /// the enclosing loop's body binds again after the use sees, from the
    /// second turn on, what that later binding gave it. (`lookup` gives
    /// the binding before the use, the value of the first turn.)
    fn rebound_later_in_loop(
        &self,
        n: Node<'t>,
        scope: usize,
    ) -> Option<(Bind<'t>, std::ops::Range<usize>)> {
        let at = n.start_byte();
        let list = super::resolve::scope_binds(self.binds.get(self.text(n))?, scope)?;
        let after = list.partition_point(|x| x.at <= at);
        let later = list.get(after)?.at;
        // The innermost loop around the use, within its function.
        let mut cur = n.parent();
        while let Some(p) = cur {
            if p.kind().opens_scope() {
                return None;
            }
            if matches!(p.kind(), K::ForStatement | K::WhileStatement) {
                // A binding is placed at the end of its value, which the
                // loop's last statement shares with the loop.
                return (later <= p.byte_range().end)
                    .then(|| self.lookup_span(self.text(n), scope, later + 1))
                    .flatten();
            }
            cur = p.parent();
        }
        None
    }

    /// An archive member: `writestr(name, data)` carries its data, `write`
    /// and `add` the contents of the file they are given.
    fn tv_member(&self, call: Node<'t>, scope: usize, depth: usize, acc: &mut Taint<'t>) {
        let pos = self.args(call).0;
        if self.method_name(call) == Some("writestr") {
            if let Some(data) = pos.get(1) {
                self.tv(*data, scope, depth, acc);
            }
        } else {
            self.file_read(pos.first().copied(), scope, call, acc);
            // `add(folder)` packs what the script copied into the folder.
            if let Some(dir) = pos.first().filter(|_| !self.file_store.is_empty()) {
                let dirs = self.path_values(*dir, scope);
                for (stored, t) in &self.file_store {
                    let inside = |d: &String| {
                        stored.len() > d.len()
                            && stored.starts_with(d.as_str())
                            && stored.as_bytes()[d.len()] == b'/'
                    };
                    if dirs.iter().any(inside) {
                        acc.merge(t);
                    }
                }
            }
        }
    }

    /// [`Self::resolve`] for names and attribute chains that start at a
    /// module, a builtin or a computed import; `None` for those that start
    /// at a local value, which the flow follows itself (resolving those too
    /// would walk every binding chain twice).
    fn resolve_rooted(&self, n: Node<'t>, scope: usize, depth: usize) -> Option<String> {
        let mut root = n;
        while root.kind() == K::Attribute {
            root = root.child(F::Object)?;
        }
        if root.kind() == K::Identifier {
            let local = self
                .lookup(self.text(root), scope, root.start_byte())
                .is_some_and(|b| !matches!(b.first(), Some(Bind::Module(..))));
            if local {
                return None;
            }
        }
        self.resolve(n, scope, depth)
    }

    /// The sources of a name's bound value, memoised: however many uses
    /// reach a value, it is followed once per analysis (a chain of names
    /// that fans out, `a2 = [a1, a1]`, stays linear). A value first reached
    /// near the depth or step limit keeps what was found then.
    fn tv_value(&self, v: Node<'t>, scope: usize, depth: usize, acc: &mut Taint<'t>) {
        if let Some(t) = self.taint_memo.borrow().get(&v.id()) {
            acc.merge(t);
            return;
        }
        // Marked before it is followed: a value that reaches itself (`px`
        // whose pixels are computed from `px`) stops there, instead of
        // going round until the depth limit cuts off everything else.
        self.taint_memo
            .borrow_mut()
            .insert(v.id(), Taint::default());
        let mut t = Taint::default();
        self.tv(v, scope, depth, &mut t);
        self.taint_memo.borrow_mut().insert(v.id(), t);
        acc.merge(&t);
    }

    /// The calls packing members into an archive written into `name` (see
    /// `index_archives`), near `scope` (see `entries_near`).
    pub(super) fn archive_members_near(
        &self,
        name: &str,
        scope: usize,
    ) -> impl Iterator<Item = (usize, Node<'t>)> + '_ {
        self.entries_near(&self.archive_members, name, scope)
    }

    /// What `name` had put into it without being rebound (`found.append(p)`,
    /// `found += [...]`, `d[k] = v`), near `scope` (see `entries_near`).
    pub(super) fn mutations_near(
        &self,
        name: &str,
        scope: usize,
    ) -> impl Iterator<Item = (usize, Node<'t>)> + '_ {
        self.entries_near(&self.mutations, name, scope)
    }

    /// The entries `map` keeps for `name` that sit in a scope `scope` is in
    /// or that is in `scope`: (the entry's scope, its node).
    fn entries_near<'a>(
        &'a self,
        map: &'a NameMap<'t, Vec<(usize, Node<'t>)>>,
        name: &str,
        scope: usize,
    ) -> impl Iterator<Item = (usize, Node<'t>)> + 'a {
        map.get(name)
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .copied()
            .filter(move |&(s, _)| self.encloses(s, scope) || self.encloses(scope, s))
    }

    /// Is `inner` the scope `outer` or nested in it?
    pub(super) fn encloses(&self, outer: usize, inner: usize) -> bool {
        let mut s = Some(inner);
        while let Some(id) = s {
            if id == outer {
                return true;
            }
            s = self.scopes.get(id).and_then(|sc| sc.parent);
        }
        false
    }

    fn tv_attribute(&self, n: Node<'t>, scope: usize, depth: usize, acc: &mut Taint<'t>) {
        if let Some(s) = self
            .resolve_rooted(n, scope, depth)
            .as_deref()
            .and_then(source_of)
        {
            acc.add(s, n);
            return;
        }
        let (Some(obj), Some(attr)) = (n.child(F::Object), n.child(F::Attribute)) else {
            return;
        };
        let attr = self.text(attr);
        let on_self = obj.kind() == K::Identifier && self.text(obj) == "self";
        if on_self && HANDLER_ATTRS.contains(&attr) && self.in_handler_class(scope) {
            acc.add(Source::Request, n);
        }
        // `self.token`, or `k.token` on an instance of the script's own
        // class (`k = Kube()`): what its methods stored there.
        if on_self || (obj.kind() == K::Identifier && self.instance_class(obj, scope).is_some()) {
            for &(v, s) in self
                .attr_stores
                .get(attr)
                .map(Vec::as_slice)
                .unwrap_or_default()
            {
                self.tv(v, s, depth, acc);
            }
        }
        if on_self {
            // What was packed into an archive written into the attribute.
            for &(s, call) in self
                .archive_attr_members
                .get(attr)
                .map(Vec::as_slice)
                .unwrap_or_default()
            {
                self.tv_member(call, s, depth, acc);
            }
            return;
        }
        self.tv(obj, scope, depth, acc);
    }

    fn tv_call(&self, n: Node<'t>, scope: usize, depth: usize, acc: &mut Taint<'t>) {
        // Through a pass-through helper, the function it calls.
        let Some(func) = self.call_function(n) else {
            return;
        };
        let q = self.callee(n, scope);
        if let Some(q) = q.as_deref() {
            if SANITIZERS.contains(&q) {
                return;
            }
            self.unpacked_or_dumped(q, n, scope, acc);
            if let Some(s) = source_of(q) {
                acc.add(s, n);
                if s == Source::Environment && self.names_identity_variable(n) {
                    acc.add(Source::Identity, n);
                }
            }
            if self.reads_file(q, n, scope, acc) {
                return;
            }
        }
        if let Some((def_scope, _)) = self.callee_def(func, scope) {
            self.tv_returns(def_scope, depth, acc);
            return;
        }
        if self.run_for_its_value(n, func, q.as_deref(), scope, depth, acc) {
            return;
        }
        if self.tv_dispatched(func, scope, depth, acc) || self.tv_picked(func, scope, depth, acc) {
            return;
        }
        if self.tv_made_function(n, func, scope, depth, acc) {
            return;
        }
        if func.kind() == K::Attribute {
            if self.fixed_table_get(n, func, scope) {
                // The key only chooses among constants; a default still
                // carries its own sources.
                for default in self.args(n).0.iter().skip(1) {
                    self.tv(*default, scope, depth, acc);
                }
                return;
            }
            self.tv_method(n, func, scope, depth, acc);
        }
        if self.is_forwarded(n) {
            // The helper's arguments after the function it calls (a plain
            // call's arguments: the callee was read above).
            for a in self.arg_values(n) {
                self.tv(a, scope, depth, acc);
            }
            return;
        }
        if let Some(args) = n.child(F::Arguments) {
            self.tv_children(args, scope, depth, acc);
        }
    }

    /// A function picked from a table of the script's own (`ask =
    /// ASKERS.get(os_name); ask()`) returns what any of them returns; false
    /// when `func` is no such pick.
    fn tv_dispatched(
        &self,
        func: Node<'t>,
        scope: usize,
        depth: usize,
        acc: &mut Taint<'t>,
    ) -> bool {
        if !self.has_tables || func.kind() != K::Identifier {
            return false;
        }
        let picked = self.dispatched(func, scope);
        for (def_scope, _) in &picked {
            self.tv_returns(*def_scope, depth, acc);
        }
        !picked.is_empty()
    }

    /// A function a factory of the script's own made (`enc = make(key);
    /// enc(data)`, the factory returning a lambda or an inner `def`):
    /// what those return, and what the call hands them (their parameters
    /// have no callers of their own to read). False when `func` is no such
    /// function.
    fn tv_made_function(
        &self,
        n: Node<'t>,
        func: Node<'t>,
        scope: usize,
        depth: usize,
        acc: &mut Taint<'t>,
    ) -> bool {
        if func.kind() != K::Identifier {
            return false;
        }
        let Some((made, s)) = self.bound_value(func, scope, |v| v.kind() == K::Call) else {
            return false;
        };
        let Some((factory, _)) = made.child(F::Function).and_then(|f| self.callee_def(f, s)) else {
            return false;
        };
        let mut found = false;
        for &r in self
            .returns
            .get(&factory)
            .map(Vec::as_slice)
            .unwrap_or_default()
        {
            if let Some(body) = r.child(F::Body).filter(|_| r.kind() == K::Lambda) {
                self.tv(body, self.scope_of(body), depth, acc);
                found = true;
            } else if let Some((inner, _)) = self.callee_def(r, factory) {
                self.tv_returns(inner, depth, acc);
                found = true;
            }
        }
        if found {
            for a in self.arg_values(n) {
                self.tv(a, scope, depth, acc);
            }
        }
        found
    }

    /// A function of the script's own picked by a test (`ask = ask_mac if
    /// mac else ask_linux; ask(user)`) returns what either returns; false
    /// when `func` is no such pick.
    fn tv_picked(&self, func: Node<'t>, scope: usize, depth: usize, acc: &mut Taint<'t>) -> bool {
        let picked = self.picked_functions(func, scope);
        for def_scope in &picked {
            self.tv_returns(*def_scope, depth, acc);
        }
        !picked.is_empty()
    }

    /// What the function whose body opens `def_scope` returns or yields.
    fn tv_returns(&self, def_scope: usize, depth: usize, acc: &mut Taint<'t>) {
        for &v in self
            .returns
            .get(&def_scope)
            .map(Vec::as_slice)
            .unwrap_or_default()
        {
            self.tv(v, def_scope, depth, acc);
        }
    }

    /// `await loop.run_in_executor(None, f, a)` and `asyncio.to_thread(f,
    /// a)` are worth what `f` returns: an agent that fetches its orders in
    /// a worker thread gets them back through these. (The arguments reach
    /// `f`'s parameters through its callers, see `defs`.)
    fn run_for_its_value(
        &self,
        n: Node<'t>,
        func: Node<'t>,
        q: Option<&str>,
        scope: usize,
        depth: usize,
        acc: &mut Taint<'t>,
    ) -> bool {
        let method = func.child(F::Attribute).map(|a| self.text(a));
        let at = match (method, self.text(func)) {
            (Some("run_in_executor"), _) => 1,
            (Some("to_thread"), _) | (None, "to_thread") => 0,
            // The function under another name (`run = asyncio.to_thread`).
            _ if q == Some("asyncio.to_thread") => 0,
            _ => return false,
        };
        let Some(target) = self.args(n).0.get(at).copied() else {
            return false;
        };
        let Some((def_scope, _)) = self.callee_def(target, scope) else {
            return false;
        };
        self.tv_returns(def_scope, depth, acc);
        true
    }

    /// A method call `obj.m(...)`: what the method's name says of its value
    /// (scrambling, parsed arguments, a file or request read), and the
    /// receiver's sources.
    fn tv_method(
        &self,
        n: Node<'t>,
        func: Node<'t>,
        scope: usize,
        depth: usize,
        acc: &mut Taint<'t>,
    ) {
        let m = func.child(F::Attribute).map(|a| self.text(a)).unwrap_or("");
        if SCRAMBLERS.contains(&m) {
            acc.add(Source::Scrambled, n);
        }
        if parses_arguments(m) {
            acc.add(Source::User, n);
        }
        if m == "hex" {
            acc.add(Source::Encoded, n);
        }
        if matches!(m, "read_bytes" | "read_text") || self.path_opened_to_read(m, n, scope) {
            self.file_read(func.child(F::Object), scope, n, acc);
        }
        if self.http_verb_call(m, n) {
            acc.add(Source::Network, n);
        }
        if matches!(
            m,
            "get_argument" | "get_body_argument" | "get_query_argument"
        ) && self.in_handler_class(scope)
        {
            acc.add(Source::Request, n);
        }
        // What a method returns comes from its receiver; a read names
        // the source at the read (`s.recv(1024)`, not `socket.socket()`).
        if let Some(obj) = func.child(F::Object) {
            // A mailbox's messages enter where they are fetched.
            if READS.contains(&m) || matches!(m, "fetch" | "retr") {
                let mut from = Taint::default();
                self.tv(obj, scope, depth, &mut from);
                acc.add_all_at(&from, n);
            } else if SCRAMBLERS.contains(&m) {
                // A cipher's file data is its key, read from a key file:
                // what it encrypts is its argument, not that file.
                let mut cipher = Taint::default();
                self.tv(obj, scope, depth, &mut cipher);
                cipher.without(Source::FileData);
                acc.merge(&cipher);
            } else {
                self.tv(obj, scope, depth, acc);
            }
        }
    }

    /// `p.open()`, `p.open("rb")`: a path object opened for reading. The
    /// mode must be one (`webbrowser.open(url)` opens no file).
    fn path_opened_to_read(&self, method: &str, call: Node<'t>, scope: usize) -> bool {
        if method != "open" {
            return false;
        }
        let (pos, kw) = self.args(call);
        let mode = pos.first().copied().or_else(|| kwarg(kw, "mode"));
        let Some(mode) = mode else {
            return true;
        };
        self.fold(mode, scope, 0).is_some_and(|m| {
            !m.is_empty() && m.len() <= 3 && m.contains('r') && m.chars().all(|c| "rbt".contains(c))
        })
    }

    /// `sess.post(url, json=..)` on a receiver that resolves to nothing (a
    /// session handed in as a parameter or kept in an attribute): an HTTP
    /// verb given a keyword only HTTP clients take is a request, and its
    /// answer network data. `dict.get` and `Queue.get` take none of them.
    fn http_verb_call(&self, method: &str, call: Node<'t>) -> bool {
        const VERBS: &[&str] = &["get", "post", "put", "patch", "delete", "request"];
        const REQUEST_KEYWORDS: &[&str] = &[
            "json",
            "data",
            "params",
            "headers",
            "cookies",
            "auth",
            "verify",
            "files",
            "allow_redirects",
        ];
        VERBS.contains(&method)
            && self
                .args(call)
                .1
                .iter()
                .any(|(k, _)| REQUEST_KEYWORDS.contains(k))
    }

    /// A payload decoded from the script's own literal, or stored secrets
    /// printed by a command. Gated by module first: this runs at every call
    /// a flow query meets, and most are of neither kind.
    fn unpacked_or_dumped(&self, q: &str, n: Node<'t>, scope: usize, acc: &mut Taint<'t>) {
        use super::names::{runs_command, DECODERS};
        let module = q.split_once('.').map_or(q, |(m, _)| m);
        match module {
            "base64" | "binascii" | "bytes" | "codecs" | "zlib" | "gzip" | "bz2" | "lzma"
                if DECODERS.contains(&q) && self.decodes_blob(n, scope, 0) =>
            {
                acc.add(Source::Embedded, n);
            }
            "subprocess" | "os" | "asyncio" | "commands" | "popen2"
                if runs_command(q)
                    && (self.runs_secret_dump(n, scope) || self.runs_password_dialog(n, scope)) =>
            {
                acc.add(Source::Secret, n);
            }
            _ => {}
        }
    }

    /// Does the process call `n` run a command that prints stored secrets
    /// (see [`super::command::prints_secrets`])? Its output is then secret
    /// data. Folded inside this query's budget.
    fn runs_secret_dump(&self, n: Node<'t>, scope: usize) -> bool {
        // A word that does not fold is kept as written (`f"{app} Safe
        // Storage"` still names the store).
        let lines = self.command_lines_run(n, scope, &["security", "secret-tool"], |w, _| {
            self.text(w).to_string()
        });
        lines.iter().any(|t| super::command::prints_secrets(t))
    }

    /// Does the process call `n` show a password dialog (`zenity
    /// --password`, `kdialog --password`, an AppleScript dialog with a
    /// hidden answer)? What it prints is the password typed: secret data.
    fn runs_password_dialog(&self, n: Node<'t>, scope: usize) -> bool {
        // A word that does not fold is read as written, or as the value
        // its name is bound to (a dialog script formatted with `%`).
        let as_written = |w: Node<'t>, s: usize| match self.lookup(self.text(w), s, w.start_byte())
        {
            Some([Bind::Expr(v, _)]) if w.kind() == K::Identifier => self.text(v).to_string(),
            _ => self.text(w).to_string(),
        };
        let programs = ["osascript", "zenity", "kdialog"];
        let lines = self.command_lines_run(n, scope, &programs, as_written);
        lines.iter().any(|line| {
            (line.contains("osascript") && line.contains("hidden answer"))
                || ((line.contains("zenity") || line.contains("kdialog"))
                    && line.contains("--password"))
        })
    }

    /// The commands the process call `n` runs, lower-cased, when they name
    /// one of `programs` (most commands name none: looked for before
    /// folding): its own, or, when it runs a helper's parameter (`def
    /// _run(args): subprocess.run(args)`), what each caller passes. An
    /// argument list is folded word by word, a word that does not fold read
    /// by `unfolded`; folded inside this query's budget.
    fn command_lines_run(
        &self,
        n: Node<'t>,
        scope: usize,
        programs: &[&'static str],
        unfolded: impl Fn(Node<'t>, usize) -> String,
    ) -> Vec<String> {
        let Some(cmd) = self.args(n).0.first().copied() else {
            return Vec::new();
        };
        let commands: Vec<(Node<'t>, usize)> = match self.passed_to_name(cmd, scope) {
            Some(passed) => passed
                .into_iter()
                .filter(|&(a, s)| self.text_holds_any(a, s, programs))
                .collect(),
            None if self.text_holds_any(n, scope, programs) => vec![(cmd, scope)],
            None => Vec::new(),
        };
        let saved = self.budget.get();
        let lines = commands
            .into_iter()
            .filter_map(|(cmd, scope)| {
                let line = if cmd.kind().is_sequence() {
                    let words: Vec<String> = cmd
                        .children()
                        .map(|w| self.fold(w, scope, 0).unwrap_or_else(|| unfolded(w, scope)))
                        .collect();
                    Some(words.join(" "))
                } else {
                    self.fold(cmd, scope, 0)
                };
                line.map(|l| l.to_ascii_lowercase())
            })
            .collect();
        self.budget.set(self.budget.get().min(saved));
        lines
    }

    /// Does the decoder call `n` decode a long literal of the script's own,
    /// through names and the parameters of its functions?
    fn decodes_blob(&self, n: Node<'t>, scope: usize, depth: usize) -> bool {
        let arg = self.args(n).0.first().copied();
        arg.is_some_and(|a| self.blob_literal(a, scope, depth))
    }

    fn blob_literal(&self, n: Node<'t>, scope: usize, depth: usize) -> bool {
        if depth > EMBEDDED_DEPTH || !self.tick() {
            return false;
        }
        match n.kind() {
            K::String | K::ConcatenatedString => n.byte_range().len() >= EMBEDDED_MIN,
            // `blob.encode()`, `b64decode(unhexlify(blob))`.
            K::Call => {
                let obj = n
                    .child(F::Function)
                    .filter(|f| f.kind() == K::Attribute)
                    .and_then(|f| f.child(F::Object));
                let arg = self.args(n).0.first().copied();
                [obj, arg]
                    .into_iter()
                    .flatten()
                    .any(|i| self.blob_literal(i, scope, depth + 1))
            }
            K::Identifier => {
                let name = self.text(n);
                match self.lookup(name, scope, n.start_byte()).map(|b| b[0]) {
                    Some(Bind::Expr(v, s)) => self.blob_literal(v, s, depth + 1),
                    Some(Bind::Param { func, index, .. }) => self
                        .passed(func, index, name)
                        .into_iter()
                        .any(|(a, s)| self.blob_literal(a, s, depth + 1)),
                    _ => false,
                }
            }
            _ => false,
        }
    }

    /// `os.environ.get("USER")` and the like: a variable naming who or
    /// where the script runs.
    fn names_identity_variable(&self, call: Node<'t>) -> bool {
        let (pos, _) = self.args(call);
        pos.first().is_some_and(|k| {
            k.kind() == K::String
                && IDENTITY_VARIABLES.contains(&self.text(*k).trim_matches(['"', '\'']))
        })
    }

    /// `open(path)` for reading and the like: file contents, secret when the
    /// path is. Returns true when the call was such a read.
    fn reads_file(&self, q: &str, call: Node<'t>, scope: usize, acc: &mut Taint<'t>) -> bool {
        if !matches!(q, "builtins.open" | "io.open" | "codecs.open" | "os.open") {
            return false;
        }
        let (pos, _) = self.args(call);
        let mode = pos.get(1).and_then(|m| self.fold(*m, scope, 0));
        if mode.as_deref().is_some_and(|m| m.contains(['w', 'a', 'x'])) {
            return false;
        }
        self.file_read(pos.first().copied(), scope, call, acc);
        true
    }

    pub(super) fn file_read(
        &self,
        path: Option<Node<'t>>,
        scope: usize,
        at: Node<'t>,
        acc: &mut Taint<'t>,
    ) {
        acc.add(Source::FileData, at);
        let Some(path) = path else { return };
        // A path query of its own, small, inside this query's budget.
        let saved = self.budget.get();
        self.budget.set(saved.min(PATH_STEPS));
        let values = self.path_values(path, scope);
        self.budget.set(saved.saturating_sub(PATH_STEPS));
        if values.iter().any(|p| taxonomy::secret(p)) {
            acc.add(Source::Secret, at);
        }
        if values.iter().any(|p| p == "<self>") {
            acc.add(Source::OwnCode, at);
        }
        for (stored, t) in &self.file_store {
            if values.iter().any(|p| p == stored) {
                acc.merge(t);
            }
        }
    }

    /// Is the function whose body opens `func` a web route (`@app.route`,
    /// `@app.get`...), whose parameters come from the request?
    fn is_route_handler(&self, func: usize) -> bool {
        self.scopes.get(func).is_some_and(|s| s.route)
    }

    /// Is `scope` inside a class derived from a request handler?
    fn in_handler_class(&self, scope: usize) -> bool {
        let mut s = Some(scope);
        while let Some(id) = s {
            let Some(sc) = self.scopes.get(id) else { break };
            if let Some(node) = sc.node.filter(|_| sc.is_class) {
                let bases = node
                    .child(F::Superclasses)
                    .map(|b| self.text(b))
                    .unwrap_or("");
                return bases.contains("RequestHandler") || bases.contains("Handler");
            }
            s = sc.parent;
        }
        false
    }
}
