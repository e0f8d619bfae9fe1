//! The assessor's analysis of one file: parse, walk the tree once
//! ([`walk`]), then run the checks of each behaviour family over what the
//! walk collected, and return raw findings (rule id, position, detail).
//!
//! Families, one file each: dynamic code ([`dynamic`]), processes and
//! command lines ([`process`], [`command`]), the file system ([`files`]),
//! capabilities such as sockets, deserialisers and native code
//! ([`capability`]), literal strings ([`strings`]), data leaving the machine
//! ([`exfil`]), pickle gadgets ([`gadget`]), covering tracks and switching
//! defences off ([`evasion`]), guessing passwords and spreading ([`lateral`]),
//! container escape and process injection ([`escape`]), the supply chain
//! ([`supply`]), collection reported out ([`recon`]) and cross-file
//! combinations ([`composite`]). Name resolution ([`resolve`]) and constant folding
//! ([`fold`]) serve them all.
//!
//! The walk is iterative (a cursor over the flat tree) and the helper
//! evaluators are bounded both in depth and in total steps, so hostile input
//! can neither overflow the stack nor make the assessor exponential.

use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;

// Maps keyed by node ids and scope numbers use FxHash: those keys are small
// dense integers the parser and the walk assign, not values the script
// chooses, so a fast unkeyed hash cannot be driven into collisions.
use rustc_hash::FxHashMap;

/// A map keyed by names from the script. The names are the script's choice, so
/// the hash is keyed with a per-process random seed (foldhash, hashbrown's
/// default hasher) rather than unkeyed; std's SipHash, keyed the same way, cost
/// 3% of an assessment (every binding and lookup hashes a name).
type NameMap<'t, V> = HashMap<&'t str, V, foldhash::fast::RandomState>;

use super::syntax::{self, Field as F, Kind as K, Node, Op};

mod abuse;
mod agents;
mod archive;
mod args;
mod bridge;
mod browser;
mod calls;
mod capability;
mod capture;
mod cloud;
mod cloudwipe;
mod command;
mod composite;
mod corrupt;
mod covert;
mod database;
mod defs;
mod dropped;
mod dropper;
mod dynamic;
mod effects;
mod escape;
mod evasion;
mod exfil;
mod fileless;
mod files;
mod firmware;
mod flow;
mod flows;
mod fold;
mod gadget;
mod harness;
mod harvest;
mod hidden;
mod hooks;
mod host;
mod indirect;
mod intercept;
mod io;
mod kernel;
mod kinds;
mod lateral;
mod literal;
mod mail;
mod names;
mod needles;
mod paths;
mod payment;
mod phishing;
mod plant;
mod process;
mod ransom;
mod reach;
mod recon;
mod remote;
mod resolve;
mod resource;
mod spam;
mod spread;
mod strings;
mod supply;
mod tabled;
mod tables;
mod taxonomy;
mod traffic;
mod walk;
mod windows;
mod xor;

pub(super) struct RawFinding {
    pub rule: &'static str,
    pub row: usize,
    pub col: usize,
    pub detail: String,
}

pub(super) struct Output {
    pub findings: Vec<RawFinding>,
    pub syntax_ok: bool,
}

/// Recursion limit of the expression evaluators (resolve, fold, ...).
const EVAL_DEPTH: usize = 48;

/// Step budget for one evaluator query, against alias chains that fan out.
const EVAL_BUDGET: u32 = 4_000;

/// Longest string the constant folder will build.
const MAX_FOLD_LEN: usize = 1 << 20;

/// Literals at least this long, in a base64/hex alphabet, count as blobs.
const BLOB_LEN: usize = 200;

pub(super) fn analyze(source: &[u8], max_depth: usize) -> Result<Output, String> {
    let mut findings = Vec::new();
    if source.iter().all(|b| b.is_ascii_whitespace()) {
        return Ok(Output {
            findings,
            syntax_ok: true,
        });
    }
    if let Some(pos) = memchr::memchr(0, source) {
        let row = memchr::memchr_iter(b'\n', &source[..pos]).count();
        findings.push(RawFinding {
            rule: "MB004",
            row,
            col: 0,
            detail: format!("NUL byte at offset {pos}"),
        });
        return Ok(Output {
            findings,
            syntax_ok: false,
        });
    }
    // Valid UTF-8, the usual case, is analysed where it lies: a copy of the
    // source was a fresh allocation the size of the file.
    let text: Cow<'_, str> = match std::str::from_utf8(source) {
        Ok(s) => Cow::Borrowed(s),
        Err(e) => {
            let row = source[..e.valid_up_to()]
                .iter()
                .filter(|&&b| b == b'\n')
                .count();
            findings.push(RawFinding {
                rule: "MB003",
                row,
                col: 0,
                detail: format!("invalid UTF-8 at offset {}", e.valid_up_to()),
            });
            String::from_utf8_lossy(source)
        }
    };
    let (mut found, syntax_ok) = analyze_text(&text, max_depth, 0)?;
    // Most files have no finding of their own: the analysis's list is kept
    // as it is rather than copied into an empty one.
    if findings.is_empty() {
        findings = found;
    } else {
        findings.append(&mut found);
    }
    Ok(Output {
        findings,
        syntax_ok,
    })
}

/// How many levels of `exec("...literal code...")` are assessed in turn.
const MAX_NESTED_CODE: usize = 3;

fn analyze_text(
    text: &str,
    max_depth: usize,
    nesting: usize,
) -> Result<(Vec<RawFinding>, bool), String> {
    let tree = syntax::parse(text, max_depth);
    let syntax_ok = tree.errors.is_empty();
    let arg_table = args::ArgTable::build(&tree, text);
    let mut a = Analyzer::new(text, &arg_table, max_depth, nesting);
    if let Some((at, msg)) = tree.errors.first() {
        // "Unexpected EOF" points past the final newline, on a line the file
        // does not have: report it at the end of the last one.
        let at = (*at).min(text.trim_end().len());
        let p = tree.point(at);
        a.add_at("MB001", (p.row, p.column), msg.clone());
    }
    a.walk(tree.root(), max_depth);
    if let Some(at) = tree.truncated_at {
        if !a.findings.iter().any(|f| f.rule == "MB002") {
            let p = tree.point(at);
            a.add_at(
                "MB002",
                (p.row, p.column),
                format!("nesting deeper than {max_depth} levels was not examined"),
            );
        }
    }
    // Before anything resolves a callee: calls through a pass-through
    // helper are the calls it makes.
    a.index_forwarding_calls();
    a.index_callers();
    a.index_archives();
    a.index_writes();
    a.check_calls();
    a.consented_system_writes();
    a.confirmed_sudo_commands();
    a.check_gadgets();
    a.check_recon();
    a.check_patched();
    a.check_supply_chain();
    a.check_sends();
    a.check_hidden_destination();
    a.check_metadata_to_hidden_host();
    a.check_configs();
    a.check_planted_code();
    a.check_tabled_commands();
    a.check_remote_reach();
    a.check_cloud_wipe();
    a.check_intercepted_client();
    a.check_corruption();
    a.check_fileless();
    // Before the literals are handed to their own check, which takes them.
    a.check_ransom_note();
    a.check_strings();
    a.check_ransomware();
    a.check_document_harvest();
    a.check_endless_loops();
    // Last of the families: it costs a nested analysis, and is skipped
    // when the verdict is BLOCKED already.
    a.check_dropped_code();
    a.composites();
    Ok((a.findings, syntax_ok))
}

#[derive(Clone, Copy)]
enum Bind<'t> {
    /// `name = <expr>` (or walrus): resolved lazily in `scope`.
    Expr(Node<'t>, usize),
    /// `import a.b as name`, `from a import b as name`.
    Module(&'t str, Option<&'t str>),
    /// A `def` or `class` statement, and the scope its body opens.
    Def(Node<'t>, usize),
    /// Parameter number `index` (node `param`) of the function whose body
    /// opens scope `func`.
    Param {
        param: Node<'t>,
        func: usize,
        index: usize,
    },
    /// A value derived from `of`, evaluated in `scope`: a loop target, a
    /// `with ... as` target or one name of a tuple unpacking.
    Part {
        of: Node<'t>,
        scope: usize,
        how: Part,
    },
    /// Names whose value nothing tells (mismatched unpacking, `global`...).
    Opaque,
}

/// How a [`Bind::Part`] name derives from its expression.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Part {
    /// `a, b = f()`: position `i` of the value.
    Unpacked(usize),
    /// `for x in it` (`None`) or `for a, b in it` (position).
    Each(Option<usize>),
    /// `with ctx as x`.
    Context,
}

struct Scope<'t> {
    parent: Option<usize>,
    is_class: bool,
    /// The def, lambda or class that opens it (`None` for the module).
    node: Option<Node<'t>>,
    /// A function decorated as a web route (`@app.route(...)`).
    route: bool,
}

#[derive(Clone, Copy)]
struct CallSite<'t> {
    node: Node<'t>,
    scope: usize,
    /// Innermost loop in the same function, and whether it is `while True`.
    loop_node: Option<(Node<'t>, bool)>,
    /// Its place in `Analyzer::calls`, where `call_qs` keeps its callee.
    index: usize,
    /// The attribute name when the callee is `obj.method`: a dozen families
    /// filter the calls by method, and each found it in the tree again.
    method: Option<&'t str>,
}

#[derive(Default)]
struct Facts {
    socket: Option<(usize, usize)>,
    dup2: Option<(usize, usize)>,
    fileno_redirect: Option<(usize, usize)>,
    shell_spawn: Option<(usize, usize)>,
    /// A shell started with its standard input piped.
    piped_shell: Option<(usize, usize)>,
    creds: Option<(usize, usize)>,
    network: bool,
    ctypes: Option<(usize, usize)>,
    exec_memory: bool,
    /// A module that talks to the network is imported.
    net_import: bool,
    /// Scopes where the process gave root up for good (`setuid` and
    /// `setresuid`/`setreuid` to an account): a later change back to 0
    /// there checks that the drop holds.
    dropped_for_good: Vec<usize>,
}

/// Bound values one evaluator query has already followed, with the least
/// depth it reached them at. A value reached again no shallower adds nothing,
/// so chains that name one binding twice (`b = [a, a]`) stay linear instead
/// of doubling at every link until the step budget runs out.
#[derive(Default)]
struct Seen(FxHashMap<u32, usize>);

impl Seen {
    /// Whether `n` is new at `depth` (and now recorded).
    fn first(&mut self, n: Node<'_>, depth: usize) -> bool {
        match self.0.get(&n.id()) {
            Some(&d) if d <= depth => false,
            _ => {
                self.0.insert(n.id(), depth);
                true
            }
        }
    }
}

/// Steps of the multi-step behaviours, where they were seen.
#[derive(Default)]
struct Signs<'t> {
    /// File contents written back scrambled, and whether in place.
    scrambled_write: Option<(Node<'t>, bool)>,
    /// Directory trees walked, listed or globbed, with the scope of each
    /// call, in the order met.
    walks: Vec<(Node<'t>, usize)>,
    /// Files deleted, renamed or moved.
    deletes: Option<Node<'t>>,
    /// A secret file read, and its path.
    secret_read: Option<(Node<'t>, String)>,
    /// The Docker socket, SDK or CLI used.
    docker: Option<Node<'t>>,
    /// A container asked to be privileged or to mount the host's root.
    privileged: Option<Node<'t>>,
    /// Credential paths named in string literals (lower-cased).
    credential_strings: Vec<String>,
    /// Where copies of a shell or interpreter were put (for MB928).
    shell_copies: Vec<String>,
    /// A process killed.
    kills: Option<Node<'t>>,
    /// The screen, camera, microphone, keyboard or clipboard captured.
    capture: Option<(Node<'t>, capture::Captured)>,
    /// A send of data to a network peer (not a command).
    network_send: Option<Node<'t>>,
    /// A registry key Windows runs values of at logon, opened or created,
    /// and its path.
    autostart_key: Option<(Node<'t>, String)>,
    /// A registry key of the Windows root certificate stores opened or
    /// created, and its path.
    root_store_key: Option<(Node<'t>, String)>,
    /// A raw socket that carries the script's own IP header.
    own_ip_header: Option<Node<'t>>,
    /// `sendto` in a loop.
    looped_sendto: Option<Node<'t>>,
    /// An SMTP client made in a loop for a server that is not a constant.
    rotating_relay: Option<Node<'t>>,
    /// An HTTP request written by hand onto a socket.
    hand_made_http: Option<Node<'t>>,
    /// Mail sent in a loop to each address of a list read from data.
    mass_mail: Option<(Node<'t>, Node<'t>)>,
    /// A string literal naming a defence (a security agent or service).
    defence_named: Option<(Node<'t>, String)>,
}

impl<'t> Signs<'t> {
    /// The first directory tree walked, listed or globbed.
    fn enumerates(&self) -> Option<Node<'t>> {
        self.walks.first().map(|&(n, _)| n)
    }
}

/// One binding of a name: the scope that makes it, where it takes effect,
/// and what it binds.
#[derive(Clone, Copy)]
struct Binding<'t> {
    scope: usize,
    at: usize,
    bind: Bind<'t>,
}

/// `fold_command`'s answers by node id and scope, each with the budget it
/// left.
type CommandMemo = FxHashMap<(u32, usize), (Option<String>, u32)>;

struct Analyzer<'t> {
    src: &'t str,
    /// Every call's arguments, split once.
    arg_table: &'t args::ArgTable<'t>,
    scopes: Vec<Scope<'t>>,
    /// Bindings by name, sorted by scope number and then by where they take
    /// effect. (One vector per name: a vector per scope inside a vector per
    /// name made two allocations for most names, which are bound once.)
    binds: NameMap<'t, Vec<Binding<'t>>>,
    star_imports: Vec<(usize, &'t str)>,
    calls: Vec<CallSite<'t>>,
    strings: Vec<Node<'t>>,
    /// The decoded value of each of `strings` (`None` for f-strings and
    /// what does not decode), made at the first family that reads them:
    /// four do, and each decoded every literal again. (Borrowed from the
    /// source when nothing is unescaped.)
    decoded: std::cell::OnceCell<Vec<Option<Cow<'t, str>>>>,
    /// The literals lower-cased, with the needles in each (see [`needles`]).
    lowered: std::cell::OnceCell<std::rc::Rc<needles::Lowered<'t>>>,
    /// `__reduce__`-style methods of classes: the def (or lambda) and its scope.
    reduce_defs: Vec<(Node<'t>, usize)>,
    /// Calls that pickle something, and their scopes.
    pickle_dumps: Vec<(Node<'t>, usize)>,
    /// Calls that may send data off the machine.
    sends: Vec<exfil::Send<'t>>,
    findings: Vec<RawFinding>,
    facts: Facts,
    budget: Cell<u32>,
    max_depth: usize,
    nesting: usize,
    /// Start byte of the node being visited, the position of non-expression bindings.
    last_pos: usize,
    /// Values put into a name without rebinding it (`x += v`, `x[k] = v`,
    /// `x.append(v)`): the scope of the statement and the value or call.
    mutations: NameMap<'t, Vec<(usize, Node<'t>)>>,
    /// Members put into archives written into a named buffer (see
    /// [`archive`]): the buffer's name, the member call and its scope.
    archive_members: NameMap<'t, Vec<(usize, Node<'t>)>>,
    /// The same for buffers kept on `self`, by attribute name.
    archive_attr_members: NameMap<'t, Vec<(usize, Node<'t>)>>,
    /// `obj.attr = v`, by attribute name: the value and its scope.
    attr_stores: NameMap<'t, Vec<(Node<'t>, usize)>>,
    /// What `self.ATTR` names, by attribute, once asked (see
    /// `resolve_self_attr`).
    self_attrs: RefCell<NameMap<'t, Option<String>>>,
    /// Targets of `obj.attr = v` and `obj[k] = v`, the values and their
    /// scopes: what the script replaces in modules it did not write
    /// (monkeypatching).
    assigned: Vec<(Node<'t>, Node<'t>, usize)>,
    /// Values a function returns or yields, by the scope its body opens.
    returns: FxHashMap<usize, Vec<Node<'t>>>,
    /// While a decoder of the script's own is folded for one call: the
    /// scope of its body and the value of its one parameter (see
    /// `fold_own_decoder`).
    param_value: RefCell<Option<(usize, String)>>,
    /// The calls of each function, by the scope its body opens.
    callers: FxHashMap<usize, Vec<defs::Caller<'t>>>,
    /// Files the script writes tainted data to (downloads, copies of
    /// secrets): the path and what it then holds.
    file_store: Vec<(String, flow::Taint<'t>)>,
    /// Files written with downloaded data.
    downloads: Vec<io::Download<'t>>,
    signs: Signs<'t>,
    /// What each call's callee resolves to, by the call's node id.
    callees: RefCell<FxHashMap<u32, Option<std::rc::Rc<str>>>>,
    /// The same for each of `calls`, by its place there, with the other
    /// facts every family asks first (see [`calls::SiteFacts`]): the
    /// families that go over every call asked the map above for each, a
    /// dozen times per call.
    site_facts: std::cell::OnceCell<Vec<calls::SiteFacts>>,
    /// The top-level modules the script imports (see
    /// `Analyzer::imports_any_module`), gathered once the walk is done.
    imported: std::cell::OnceCell<Vec<&'t str>>,
    /// The sources of bound values, by the value's node id.
    taint_memo: RefCell<FxHashMap<u32, flow::Taint<'t>>>,
    /// What `fold_command` gave for a node in a scope, and the budget it
    /// left (see there).
    command_memo: RefCell<CommandMemo>,
    /// Functions a stream server calls with each connection (see
    /// `stream_callback`), found at the first question.
    stream_callbacks: std::cell::OnceCell<Vec<usize>>,
    /// A web-route decorator was seen and awaits its function.
    route_decorator: bool,
    /// Loops that never end by their condition, with their scopes.
    endless_loops: Vec<(Node<'t>, usize)>,
    /// A dict literal holds names (a dispatch table may be called).
    has_tables: bool,
    /// Whether the script asks the metadata service only what the
    /// instance is (see `strings::metadata_without_credentials`).
    metadata_only: std::cell::OnceCell<bool>,
    /// The scope each def, lambda or class opens, by its node id, and how
    /// many of `scopes` are indexed so far (see `tabled::scope_of`).
    scope_openers: RefCell<(usize, FxHashMap<u32, usize>)>,
    /// Where the first `input()` call of each scope starts (see
    /// `Analyzer::asks_in`), found at the first question once the walk is
    /// done.
    first_asks: std::cell::OnceCell<FxHashMap<usize, usize>>,
    /// Whether the script sets up the user's own machine (see
    /// `Analyzer::own_setup_script`), and whether a literal names something
    /// remote (`Analyzer::names_remote_literal`): asked at each command
    /// and finding that may be the user's own, and each searched the whole
    /// source or every literal.
    own_setup: std::cell::OnceCell<bool>,
    remote_literal: std::cell::OnceCell<bool>,
    /// What the script puts on its queues (`q.put(path)`), when it makes
    /// one: what a worker's `q.get()` takes (see `paths::queued`).
    queue_puts: std::cell::OnceCell<Vec<(Node<'t>, usize)>>,
    /// Calls made through a pass-through helper of the script's own or a
    /// library runner, by node id, with the position of the function they
    /// call among their arguments (see [`indirect`]).
    forwarded: FxHashMap<u32, usize>,
    /// Names functions declare `global`, with those functions' scopes,
    /// sorted (see [`indirect`]).
    declared_global: NameMap<'t, Vec<usize>>,
    /// Needles searched for in the whole source, and whether it holds
    /// each (see `indirect::source_holds`).
    sources_held: RefCell<Vec<(&'static str, bool)>>,
    /// Lists and tuples of two or more items holding a name: where a
    /// command's words kept in constants may be (see `tabled`).
    named_lists: Vec<Node<'t>>,
}

impl<'t> Analyzer<'t> {
    fn new(
        src: &'t str,
        arg_table: &'t args::ArgTable<'t>,
        max_depth: usize,
        nesting: usize,
    ) -> Self {
        Analyzer {
            src,
            arg_table,
            scopes: vec![Scope {
                parent: None,
                is_class: false,
                node: None,
                route: false,
            }],
            binds: NameMap::default(),
            star_imports: Vec::new(),
            // Every call the walk meets is one of the table's.
            calls: Vec::with_capacity(arg_table.calls()),
            strings: Vec::new(),
            decoded: std::cell::OnceCell::new(),
            lowered: std::cell::OnceCell::new(),
            reduce_defs: Vec::new(),
            pickle_dumps: Vec::new(),
            sends: Vec::new(),
            findings: Vec::new(),
            facts: Facts::default(),
            budget: Cell::new(EVAL_BUDGET),
            max_depth,
            nesting,
            last_pos: 0,
            mutations: NameMap::default(),
            archive_members: NameMap::default(),
            archive_attr_members: NameMap::default(),
            attr_stores: NameMap::default(),
            self_attrs: RefCell::default(),
            assigned: Vec::new(),
            returns: FxHashMap::default(),
            param_value: RefCell::new(None),
            callers: FxHashMap::default(),
            file_store: Vec::new(),
            downloads: Vec::new(),
            signs: Signs::default(),
            callees: RefCell::new(FxHashMap::default()),
            site_facts: std::cell::OnceCell::new(),
            imported: std::cell::OnceCell::new(),
            taint_memo: RefCell::new(FxHashMap::default()),
            command_memo: RefCell::new(FxHashMap::default()),
            stream_callbacks: std::cell::OnceCell::new(),
            endless_loops: Vec::new(),
            has_tables: false,
            route_decorator: false,
            metadata_only: std::cell::OnceCell::new(),
            scope_openers: RefCell::new((0, FxHashMap::default())),
            first_asks: std::cell::OnceCell::new(),
            own_setup: std::cell::OnceCell::new(),
            remote_literal: std::cell::OnceCell::new(),
            queue_puts: std::cell::OnceCell::new(),
            forwarded: FxHashMap::default(),
            declared_global: NameMap::default(),
            sources_held: RefCell::new(Vec::new()),
            named_lists: Vec::new(),
        }
    }

    /// The string literals with their decoded values (see `decoded`).
    fn literals(&self) -> impl Iterator<Item = (Node<'t>, Option<&str>)> + '_ {
        self.strings
            .iter()
            .zip(self.decoded_values())
            .map(|(n, v)| (*n, v.as_deref()))
    }

    /// The decoded value of each of `strings` (see `decoded`).
    fn decoded_values(&self) -> &[Option<Cow<'t, str>>] {
        self.decoded.get_or_init(|| {
            self.strings
                .iter()
                .map(|s| literal::string_cow(self.src, *s))
                .collect()
        })
    }

    /// The value of the string literal `n` ([`literal::string_value`]):
    /// a copy of the one `literals` keeps when `n` is one of `strings`,
    /// which the folder and the path evaluator decoded again at every
    /// visit. (Found by node number, the order the walk records them in; a
    /// literal the search does not find, such as a docstring, is decoded.)
    fn string_value(&self, n: Node<'t>) -> Option<String> {
        self.string_ref(n).map(Cow::into_owned)
    }

    /// [`Self::string_value`], borrowed where no copy is needed: the kept
    /// value, or the source's text when there is nothing to unescape.
    fn string_ref(&self, n: Node<'t>) -> Option<Cow<'_, str>> {
        let kept = self.strings.binary_search_by_key(&n.id(), |s| s.id()).ok();
        match kept {
            Some(i) => self.decoded_values().get(i)?.as_deref().map(Cow::Borrowed),
            None => literal::string_cow(self.src, n),
        }
    }

    fn text(&self, n: Node) -> &'t str {
        self.src.get(n.byte_range()).unwrap_or("")
    }

    fn add(&mut self, rule: &'static str, n: Node, detail: impl Into<String>) {
        let (row, col) = pos(n);
        self.findings.push(RawFinding {
            rule,
            row,
            col,
            detail: detail.into(),
        });
    }

    fn add_at(&mut self, rule: &'static str, at: (usize, usize), detail: impl Into<String>) {
        self.findings.push(RawFinding {
            rule,
            row: at.0,
            col: at.1,
            detail: detail.into(),
        });
    }

    fn bind(&mut self, scope: usize, name: &'t str, b: Bind<'t>) {
        // A name the function declared `global` is the module's.
        let scope = self.binding_scope(scope, name);
        let at = match b {
            // After its value: a name used in its own value (`p = expand(p)`)
            // is the binding before, not this one.
            Bind::Expr(v, _) => v.byte_range().end,
            // Likewise a part of one (`line, buf = buf.split(b"\n", 1)`):
            // the buffer split is the one bound before.
            Bind::Part { of, .. } => of.byte_range().end.max(self.last_pos),
            _ => self.last_pos,
        };
        // Kept sorted by scope: a common name (`self`, `path`) is bound in
        // hundreds of functions, and a linear scan per lookup made long files
        // quadratic.
        let list = self.binds.entry(name).or_default();
        let i = list.partition_point(|x| x.scope < scope || (x.scope == scope && x.at <= at));
        // `except ImportError: mod = None` right after `import mod`: the
        // fallback of an optional import names nothing, so the import
        // keeps naming the module (checked here, once per binding, rather
        // than at every lookup).
        let fallback = matches!(b, Bind::Expr(v, _) if v.kind() == K::None)
            && i.checked_sub(1)
                .and_then(|j| list.get(j))
                .is_some_and(|prev| prev.scope == scope && matches!(prev.bind, Bind::Module(..)));
        if !fallback {
            list.insert(i, Binding { scope, at, bind: b });
        }
    }
}

/// The 1-based line a node starts on, as findings and details name it.
fn line(n: Node<'_>) -> usize {
    n.start_position().row + 1
}

fn pos(n: Node) -> (usize, usize) {
    let p = n.start_position();
    (p.row, p.column)
}
