//! Processes: shells, subprocesses, exec/spawn, forks and fork bombs.

use super::calls::Call;
use super::kinds::{EXEC, PROCESS, SHELL};

use super::{pos, Analyzer, Bind, Node, Part, F, K};

/// Values of a computed command checked, at most.
const MAX_COMMANDS: usize = 4;

/// Calls whose last name shows a loop waiting for something.
const BLOCKING_CALLS: &[&str] = &[
    "accept", "recv", "recvfrom", "wait", "waitpid", "join", "sleep", "input", "readline", "get",
    "select", "poll",
];

impl<'t> Analyzer<'t> {
    pub(super) fn check_process(&mut self, q: &str, call: &Call<'t>) {
        let (node, scope) = (call.node, call.scope);
        if call.is(PROCESS) {
            self.note_piped_shell(call);
        }
        let command = || {
            call.pos
                .first()
                .map(|a| self.command_values(*a, scope))
                .unwrap_or_default()
        };
        if call.is(SHELL) {
            let cmds = command();
            self.check_capture_commands(call, &cmds);
            self.add("MB605", node, call.via());
            for c in cmds {
                self.check_command(&c, node);
            }
        } else if call.is(PROCESS) {
            // `create_subprocess_exec("ssh", host, "sudo", ..)`: the
            // program and its arguments are the positional arguments.
            let spread = (q == "asyncio.create_subprocess_exec")
                .then(|| self.leading_splat(node))
                .flatten();
            let cmds = if let Some(argv) = spread {
                // `create_subprocess_exec(*cmd)` in `async def run(*cmd)`:
                // the words each caller gives the helper.
                self.splat_commands(argv, scope).unwrap_or_default()
            } else if q == "asyncio.create_subprocess_exec" && call.pos.len() > 1 {
                vec![self.words(call.pos.iter().copied(), scope)]
            } else {
                command()
            };
            self.check_capture_commands(call, &cmds);
            if call.shell_kw.is_some() || q == "asyncio.create_subprocess_shell" {
                self.add("MB602", node, format!("{} with shell=True", call.via()));
            } else {
                self.add("MB603", node, call.via());
            }
            self.check_fed_script(&cmds, call);
            for c in cmds {
                self.check_command(&c, node);
            }
        } else if call.is(EXEC) || q.starts_with("os.exec") || q.starts_with("os.spawn") {
            self.add("MB606", node, call.via());
            let parts: Vec<String> = call
                .pos
                .iter()
                .filter_map(|a| self.fold_command(*a, scope))
                .collect();
            if q == "pty.spawn" {
                self.facts.shell_spawn.get_or_insert(pos(node));
            }
            if !parts.is_empty() {
                self.check_command(&parts.join(" "), node);
            }
        }
        self.check_fork(q, call);
    }

    /// `run(["at", "now"], input=job)`, `run("sh", input=script)`: programs
    /// that run the script fed to their standard input; the script is judged
    /// as commands, and handing it to `at`/`batch` schedules it (MB208).
    fn check_fed_script(&mut self, cmds: &[String], call: &Call<'t>) {
        let Some(input) = call.kwarg("input") else {
            return;
        };
        let head = |c: &String| {
            let w = c.split_whitespace().next().unwrap_or("");
            w.rsplit('/').next().unwrap_or(w).to_string()
        };
        let heads: Vec<String> = cmds.iter().map(head).collect();
        let runs = |h: &String| {
            matches!(
                h.as_str(),
                "at" | "batch" | "sh" | "bash" | "dash" | "zsh" | "ksh"
            )
        };
        let Some(h) = heads.iter().find(|h| runs(h)) else {
            return;
        };
        if matches!(h.as_str(), "at" | "batch") {
            self.add("MB208", call.node, format!("schedules a job with `{h}`"));
        }
        for script in self.command_values(input, call.scope) {
            self.check_command(&script, call.node);
        }
    }

    /// The command a shell string or argument list gives: exact when it
    /// folds, else the values it may have (unknown parts `*`).
    pub(super) fn command_values(&self, arg: Node<'t>, scope: usize) -> Vec<String> {
        if let Some(c) = self.fold_command(arg, scope) {
            return vec![c];
        }
        if let Some(cmds) = self.looped_commands(arg, scope) {
            return cmds;
        }
        if let Some(cmds) = self.splat_commands(arg, scope) {
            return cmds;
        }
        // `cmd = ["systemctl", "--user", *args]`: the list's words, with
        // the parts that cannot be folded as `*`.
        if arg.kind() == K::Identifier {
            let list = self
                .lookup(self.text(arg), scope, arg.start_byte())
                .and_then(|b| match *b.last()? {
                    Bind::Expr(v, s) if v.kind().is_sequence() => Some((v, s)),
                    _ => None,
                });
            if let Some((v, s)) = list {
                return self.command_values(v, s);
            }
        }
        if let Some(cmds) = self.returned_command_lists(arg, scope) {
            return cmds;
        }
        if arg.kind().is_sequence() {
            return vec![self.sequence_words(arg, scope)];
        }
        // `BASE + argv`, `base + ["logger", msg]`: the words of each side
        // that is a list, `*` for one that is not (the user's words).
        if super::fold::is_plus(arg) {
            let side = |n: Option<Node<'t>>| {
                n.and_then(|n| self.bound_value(n, scope, |v| v.kind().is_sequence()))
                    .map_or_else(|| "*".to_string(), |(v, s)| self.sequence_words(v, s))
            };
            let (l, r) = (side(arg.child(F::Left)), side(arg.child(F::Right)));
            if l != "*" || r != "*" {
                return vec![format!("{l} {r}")];
            }
        }
        self.paths(arg, scope)
            .into_iter()
            .filter(|c| c.as_str() != "*")
            .take(MAX_COMMANDS)
            .collect()
    }

    /// `subprocess.call(build_command(image))`, `cmd = build(); run(cmd)`:
    /// the command lists a helper of the script's own returns (a list
    /// literal, or a name bound to one), read in the helper, with the words
    /// that cannot be folded `*`. One level: a helper returning another
    /// call is not followed.
    fn returned_command_lists(&self, arg: Node<'t>, scope: usize) -> Option<Vec<String>> {
        let (call, s) = self
            .held_callee(arg, scope)
            .filter(|(v, _)| v.kind() == K::Call)?;
        let func = call.child(F::Function)?;
        // `builder(path)` with `builder` a parameter: each function of the
        // script's own its callers hand it (`pool.submit(capture, mic_cmd)`).
        // `builder = TOOLS[kind]`: each function or lambda of the table.
        let defs: Vec<usize> = match self.own_function_scope(func, s) {
            Some(d) => vec![d],
            None => match self.passed_to_name(func, s) {
                Some(passed) => passed
                    .into_iter()
                    .filter_map(|(f, fs)| self.own_function_scope(f, fs))
                    .collect(),
                None => self
                    .dispatched(func, s)
                    .into_iter()
                    .map(|(d, _)| d)
                    .collect(),
            },
        };
        let returned = defs.into_iter().flat_map(|def| {
            let values = self
                .returns
                .get(&def)
                .map(Vec::as_slice)
                .unwrap_or_default();
            values.iter().map(move |&v| (v, def))
        });
        let cmds: Vec<String> = returned
            .filter_map(|(v, def)| match v.kind() {
                k if k.is_sequence() => Some((v, def)),
                K::Identifier => self.bound_value(v, def, |x| x.kind().is_sequence()),
                _ => None,
            })
            .map(|(list, ls)| {
                self.fold_command(list, ls)
                    .unwrap_or_else(|| self.sequence_words(list, ls))
            })
            .take(MAX_COMMANDS)
            .collect();
        (!cmds.is_empty()).then_some(cmds)
    }

    /// A call named like a wait that is not one: a network request
    /// (`get` on a client), a string or path join.
    fn only_looks_blocking(&self, call: Node<'t>, last: &str, scope: usize) -> bool {
        let q = self.callee(call, scope);
        match last {
            "get" => {
                q.as_deref().is_some_and(super::names::is_network_client)
                    || self.on_network_object(call, scope)
            }
            "join" => {
                let on_string = call
                    .child(F::Function)
                    .and_then(|f| f.child(F::Object))
                    .is_some_and(|o| matches!(o.kind(), K::String | K::ConcatenatedString));
                on_string || matches!(q.as_deref(), Some("os.path.join" | "posixpath.join"))
            }
            _ => false,
        }
    }

    /// `obj.method(...)` where `obj` is bound to a network client object
    /// (`requests.Session()`, `http.client.HTTPConnection(...)`, a socket).
    pub(super) fn on_network_object(&self, call: Node<'t>, scope: usize) -> bool {
        const CLIENTS: &[&str] = &[
            "requests.Session",
            "requests.session",
            "httpx.Client",
            "httpx.AsyncClient",
            "aiohttp.ClientSession",
            "urllib3.PoolManager",
            "http.client.HTTPConnection",
            "http.client.HTTPSConnection",
            "socket.socket",
            "socket.create_connection",
            "telnetlib.Telnet",
        ];
        let Some(obj) = call
            .child(F::Function)
            .filter(|f| f.kind() == K::Attribute)
            .and_then(|f| f.child(F::Object))
            .filter(|o| o.kind() == K::Identifier)
        else {
            return false;
        };
        let Some(binds) = self.lookup(self.text(obj), scope, obj.start_byte()) else {
            return false;
        };
        binds.iter().any(|b| match *b {
            Bind::Expr(v, s) if v.kind() == K::Call => {
                self.callee(v, s).is_some_and(|q| CLIENTS.contains(&&*q))
            }
            _ => false,
        })
    }

    /// A literal argument list's words, those that cannot be folded `*`.
    fn sequence_words(&self, list: Node<'t>, scope: usize) -> String {
        self.words(list.children(), scope)
    }

    /// Expressions taken as the words of one command, those that cannot be
    /// folded `*`.
    fn words(&self, items: impl Iterator<Item = Node<'t>>, scope: usize) -> String {
        let words: Vec<String> = items
            .map(|w| {
                // `[*verb, target]` with `verb = "process call create".split()`:
                // the words the splat spreads.
                let spread = (w.kind() == K::ListSplat)
                    .then(|| self.fold_list(w.nth_child(0)?, scope, 0))
                    .flatten();
                if let Some(spread) = spread {
                    return spread.join(" ");
                }
                self.paths(w, scope)
                    .into_iter()
                    .next()
                    // A name kept disguised (`chr` codes, a table of them)
                    // is no path, but folds.
                    .or_else(|| self.fold_command(w, scope))
                    .unwrap_or_else(|| "*".into())
            })
            .collect();
        words.join(" ")
    }

    /// `def q(*argv): run(list(argv))`: a helper that runs whatever words
    /// it is called with. Its command is each caller's arguments from the
    /// star parameter on, so `q("auditpol", "/clear")` is judged like the
    /// same list written at the call; without this the helper hides every
    /// command it runs.
    fn splat_commands(&self, arg: Node<'t>, scope: usize) -> Option<Vec<String>> {
        let name = match arg.kind() {
            K::Call => {
                let q = self.callee(arg, scope)?;
                if !matches!(&*q, "builtins.list" | "builtins.tuple") {
                    return None;
                }
                *self.args(arg).0.first()?
            }
            // `[*argv]`
            K::List | K::Tuple => arg
                .nth_child(0)
                .filter(|k| k.kind() == K::ListSplat && arg.children().count() == 1)?
                .nth_child(0)?,
            _ => arg,
        };
        if name.kind() != K::Identifier {
            return None;
        }
        let [Bind::Param { param, func, index }] =
            self.lookup(self.text(name), scope, name.start_byte())?
        else {
            return None;
        };
        if param.kind() != K::ListSplatPattern {
            return None;
        }
        let cmds: Vec<String> = self
            .callers
            .get(&func)?
            .iter()
            .filter_map(|c| {
                let rest = c.args.get(index.checked_sub(c.offset)?..)?;
                (!rest.is_empty()).then(|| self.words(rest.iter().copied(), c.scope))
            })
            .take(MAX_COMMANDS * 4)
            .collect();
        (!cmds.is_empty()).then_some(cmds)
    }

    /// The commands a loop variable takes: `for argv in [[...], [...]]`,
    /// `for name, argv in [("a", [...]), ...]` (the element at the
    /// variable's position), also when the variable reaches the call as a
    /// helper's parameter. Each list is folded whole, so `["ufw", "status"]`
    /// stays one command instead of its words being judged alone.
    pub(super) fn looped_commands(&self, arg: Node<'t>, scope: usize) -> Option<Vec<String>> {
        self.looped_commands_at(arg, scope, 0)
    }

    fn looped_commands_at(&self, arg: Node<'t>, scope: usize, depth: usize) -> Option<Vec<String>> {
        if arg.kind() != K::Identifier || depth > 2 {
            return None;
        }
        let name = self.text(arg);
        let binds = self.lookup(name, scope, arg.start_byte())?;
        let (of, s, at) = match binds[..] {
            [Bind::Part {
                of,
                scope: s,
                how: Part::Each(at),
            }] => (of, s, at),
            [Bind::Param { func, index, .. }] => {
                let mut cmds = Vec::new();
                for (a, s) in self.passed(func, index, name) {
                    let found = match a.kind() {
                        // `run(["wevtutil", "cl", name])`: the list's words.
                        K::List | K::Tuple => Some(vec![self
                            .fold_command(a, s)
                            .unwrap_or_else(|| self.sequence_words(a, s))]),
                        _ => self.looped_commands_at(a, s, depth + 1),
                    };
                    cmds.extend(found?);
                }
                return (!cmds.is_empty()).then_some(cmds);
            }
            [Bind::Part {
                of,
                scope: s,
                how: Part::Unpacked(i),
            }] => return self.returned_commands(of, s, i, depth),
            _ => return None,
        };
        let list = match of.kind() {
            K::Identifier => match self.lookup(self.text(of), s, of.start_byte())?[..] {
                [Bind::Expr(v, _)] => v,
                _ => return None,
            },
            _ => of,
        };
        if !list.kind().is_sequence() {
            return None;
        }
        let cmds: Vec<String> = list
            .children()
            .filter_map(|c| match at {
                None => Some(c),
                Some(i) => c.children().nth(i).filter(|_| c.kind().is_sequence()),
            })
            .filter(|c| c.kind().is_sequence())
            .filter_map(|c| self.fold_command(c, s))
            .take(MAX_COMMANDS * 4)
            .collect();
        (!cmds.is_empty()).then_some(cmds)
    }

    /// `get, put = tools()`: element `i` of each tuple the helper returns,
    /// when it is a literal command, or a name the helper takes from a
    /// list of commands (`for anchors, refresh in LAYOUTS: return anchors,
    /// refresh`).
    fn returned_commands(
        &self,
        call: Node<'t>,
        scope: usize,
        i: usize,
        depth: usize,
    ) -> Option<Vec<String>> {
        let func = call.child(F::Function).filter(|_| call.kind() == K::Call)?;
        let (def_scope, _) = self.callee_def(func, scope)?;
        let mut cmds = Vec::new();
        for v in self.returns.get(&def_scope)? {
            let Some(c) = v.children().nth(i).filter(|_| v.kind().is_sequence()) else {
                continue;
            };
            if c.kind().is_sequence() {
                cmds.extend(self.fold_command(c, def_scope));
            } else if let Some(found) = self.looped_commands_at(c, def_scope, depth + 1) {
                cmds.extend(found);
            }
            if cmds.len() >= MAX_COMMANDS * 4 {
                break;
            }
        }
        (!cmds.is_empty()).then_some(cmds)
    }

    /// Forks, and scripts re-launching themselves, in unbounded loops.
    fn check_fork(&mut self, q: &str, call: &Call<'t>) {
        let node = call.node;
        let forkish = matches!(
            q,
            "os.fork" | "os.forkpty" | "pty.fork" | "multiprocessing.Process"
        );
        if forkish {
            match call.loop_node {
                Some((l, true)) if !self.loop_blocks(l, call.scope) => {
                    self.add("MB902", node, format!("{q} in an unbounded loop"))
                }
                Some(_) if q != "multiprocessing.Process" => {
                    self.add("MB417", node, format!("{q} in a loop"))
                }
                None if q != "multiprocessing.Process" => self.add("MB416", node, q.to_string()),
                _ => {}
            }
        }
        let spawns_self = call.is(PROCESS | SHELL) || q.starts_with("os.spawn");
        if let (true, Some((l, true))) = (spawns_self, call.loop_node) {
            let arg_text = call.pos.first().map(|a| self.text(*a)).unwrap_or("");
            if (arg_text.contains("__file__")
                || arg_text.contains("sys.argv")
                || arg_text.contains("sys.executable"))
                && !self.loop_blocks(l, call.scope)
            {
                self.add(
                    "MB902",
                    node,
                    "the script re-launches itself in an unbounded loop",
                );
            }
        }
    }

    /// The name a call's first argument spreads (`f(*cmd, ...)`), which
    /// the positional arguments leave out.
    fn leading_splat(&self, call: Node<'t>) -> Option<Node<'t>> {
        let first = call.child(F::Arguments)?.nth_child(0)?;
        (first.kind() == K::ListSplat).then(|| first.nth_child(0))?
    }

    /// A call that waits under another name (`pause = time.sleep`, a
    /// pass-through helper given `sock.recv`): what its callee resolves to.
    fn resolves_to_blocking(&self, call: Node<'t>, written: &str, scope: usize) -> bool {
        // `obj.method(...)` resolves to a name ending in the method it
        // names: nothing new to learn (and most calls in a loop are these).
        let plain_method = call
            .child(F::Function)
            .is_some_and(|f| f.kind() == K::Attribute);
        if plain_method && !self.is_forwarded(call) {
            return false;
        }
        let Some(q) = self.callee(call, scope) else {
            return false;
        };
        let last = super::calls::last_part(&q);
        last != written
            && BLOCKING_CALLS.contains(&last)
            && !self.only_looks_blocking(call, last, scope)
    }

    /// A `while True` that waits for something (accept, recv, sleep, join...)
    /// is a server or worker loop, not a bomb. `requests.get` and
    /// `session.get` send rather than wait, and `os.path.join` or
    /// `"".join` join strings, not threads.
    pub(super) fn loop_blocks(&self, l: Node<'t>, scope: usize) -> bool {
        let Some(body) = l.child(F::Body) else {
            return false;
        };
        let mut cursor = body.walk();
        let mut steps = 0u32;
        loop {
            let n = cursor.node();
            steps += 1;
            if steps > 20_000 {
                return true;
            }
            if n.kind() == K::Call {
                let f = n.child(F::Function).map(|f| self.text(f)).unwrap_or("");
                let last = f.rsplit('.').next().unwrap_or(f);
                if BLOCKING_CALLS.contains(&last) && !self.only_looks_blocking(n, last, scope) {
                    return true;
                }
                if self.resolves_to_blocking(n, last, scope) {
                    return true;
                }
            }
            // A wait in an `except` runs only when the step fails (`try:
            // os.fork() except OSError: sleep(0.01)`): while it succeeds,
            // the loop never waits.
            if n.kind() != K::ExceptClause && cursor.goto_first_child() {
                continue;
            }
            loop {
                if cursor.goto_next_sibling() {
                    break;
                }
                if !cursor.goto_parent() || cursor.node() == body {
                    return false;
                }
            }
        }
    }
}
