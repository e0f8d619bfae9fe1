//! Reaching other machines: passwords guessed in a loop against a login
//! (MB925: login methods, password keywords, a web sign-in's posted body,
//! password options of remote-administration commands; the loop found
//! through assignments, unpacking, parameters and queues), the script's own
//! file copied to another host (MB926). Floods (MB927) are endless loops,
//! judged in [`super::resource`].

use super::calls::Call;
use super::{Analyzer, Bind, Node, Part, F, K};

/// How deep the search for the loop a password comes from goes (through
/// assignments and parameters).
const ORIGIN_DEPTH: usize = 6;

/// Methods that log in with a user name and a password (ftplib, smtplib,
/// imaplib, poplib, ldap, paramiko's transport).
const LOGIN_METHODS: &[&str] = &["login", "auth_password", "simple_bind_s", "bind_s", "pass_"];

impl<'t> Analyzer<'t> {
    pub(super) fn check_lateral(&mut self, call: &Call<'t>) {
        self.check_guessing(call);
        if call.method == Some("put") && call.q.is_none() {
            self.reset_budget();
            let own = call
                .pos
                .first()
                .is_some_and(|a| self.paths(*a, call.scope).iter().any(|p| p == "<self>"));
            if own {
                self.add(
                    "MB926",
                    call.node,
                    format!(
                        "{}: copies the script's own file to another machine",
                        call.written
                    ),
                );
            }
        }
    }

    /// The password a call logs in with, and the host it logs in to.
    fn login_password(&self, call: &Call<'t>) -> Option<(Node<'t>, Option<Node<'t>>)> {
        let host = || call.arg(0, "hostname").or_else(|| call.kwarg("host"));
        if let Some(m) = call.method.filter(|m| LOGIN_METHODS.contains(m)) {
            let pw = if m == "pass_" {
                call.arg(0, "pswd")
            } else {
                call.arg(1, "password")
            };
            return pw.or_else(|| call.kwarg("passwd")).map(|p| (p, None));
        }
        if let Some("ftplib.FTP" | "ftplib.FTP_TLS") = call.q.as_deref() {
            return call.arg(2, "passwd").map(|p| (p, host()));
        }
        if let Some(pw) = ["password", "passwd", "pwd"]
            .iter()
            .find_map(|k| call.kwarg(k))
        {
            return Some((pw, host()));
        }
        if let Some(pw) = self.posted_password(call) {
            return Some((pw, call.arg(0, "url")));
        }
        if let Some(auth) = call.kwarg("auth") {
            let pw = if auth.kind().is_sequence() {
                auth.children().nth(1)?
            } else {
                auth
            };
            return Some((pw, call.arg(0, "url")));
        }
        if let Some(pw) = self.sent_password(call) {
            return Some((pw, None));
        }
        // Any call given such a list: the script's own helper that runs it.
        if let Some(found) = self.argv_password(call) {
            return Some(found);
        }
        if call.is(super::kinds::PROCESS) {
            let input = call.kwarg("input")?;
            let first = *call.pos.first()?;
            // A list's words read through the names of constants too.
            let cmd = if first.kind().is_sequence() {
                let words: Vec<&str> = first
                    .children()
                    .map(|w| self.const_text(w, call.scope))
                    .collect();
                words.join(", ").to_ascii_lowercase()
            } else {
                self.text(first).to_ascii_lowercase()
            };
            let asks = (cmd.contains("sudo") && (cmd.contains("-s") || cmd.contains("--stdin")))
                || cmd.contains("\"su\"")
                || cmd.contains("'su'");
            return asks.then_some((input, None));
        }
        None
    }

    /// The value a web login posts as its password: the `password` (or
    /// `passwd`, `pwd`, `pass`) entry of a dict literal given as the body
    /// (`json=`, `data=`) of an HTTP verb. Credential stuffing and password
    /// spraying against a web sign-in are this login in a loop.
    fn posted_password(&self, call: &Call<'t>) -> Option<Node<'t>> {
        const VERBS: &[&str] = &["post", "put", "patch", "request", "fetch"];
        let verb = call.method.or_else(|| call.q_last())?;
        if !VERBS.contains(&verb) {
            return None;
        }
        let body = call.kwarg("json").or_else(|| call.kwarg("data"))?;
        let body = self.dict_literal(body, call.scope)?.0;
        body.children()
            .filter(|p| p.kind() == K::Pair)
            .find_map(|p| {
                // Folded, so that a key kept in a constant is read too.
                self.reset_budget();
                let key = self.fold(p.child(F::Key)?, call.scope, 0)?;
                let key = key.to_ascii_lowercase();
                matches!(key.as_str(), "password" | "passwd" | "pwd" | "pass")
                    .then(|| p.child(F::Value))?
            })
    }

    /// A password written to a socket by hand (`s.sendall(pw.encode() +
    /// b"\r\n")`, a telnet or POP3 login typed into the connection): a
    /// name for a password (`pw`, `passwd`, `password`) in what a socket's
    /// `send`/`sendall` sends.
    fn sent_password(&self, call: &Call<'t>) -> Option<Node<'t>> {
        if !matches!(call.method, Some("send" | "sendall")) || call.q.is_some() {
            return None;
        }
        // A few levels down (`b"PASS " + pw.encode() + b"\r\n"` puts the
        // name five below the argument), a bounded number of nodes each.
        let mut level: Vec<Node<'t>> = call.pos.first().copied().into_iter().collect();
        for _ in 0..6 {
            level.truncate(32);
            if let Some(pw) = level.iter().copied().find(|n| {
                n.kind() == K::Identifier
                    && matches!(self.text(*n), "pw" | "pwd" | "passwd" | "password")
            }) {
                return Some(pw);
            }
            level = level.iter().flat_map(|n| n.children()).collect();
        }
        None
    }

    /// A password handed to a remote-administration program on its command
    /// line as an option (`/password:{pw}`, `--password={pw}`), with the
    /// host it names (`/node:{h}`, `\\{h}\share`), in a literal argument
    /// list given to any call (a subprocess, or the script's helper that
    /// runs one).
    fn argv_password(&self, call: &Call<'t>) -> Option<(Node<'t>, Option<Node<'t>>)> {
        let argv = call.arg(0, "args").filter(|a| a.kind().is_sequence())?;
        let starts = |e: &Node<'t>, prefixes: &[&str]| {
            let t = self
                .const_text(*e, call.scope)
                .trim_start_matches(['f', 'r', 'F', 'R', '"', '\'']);
            prefixes.iter().any(|p| {
                t.get(..p.len())
                    .is_some_and(|head| head.eq_ignore_ascii_case(p))
            })
        };
        let pw = argv
            .children()
            .find(|e| starts(e, &["/password:", "--password=", "-password="]))?;
        let host = argv.children().find(|e| starts(e, &["/node:", "\\\\"]));
        Some((pw, host))
    }

    /// MB925: a login whose password comes from a loop variable, in a
    /// loop that does not also change the host.
    fn check_guessing(&mut self, call: &Call<'t>) {
        let Some((pw, host)) = self.login_password(call) else {
            return;
        };
        self.reset_budget();
        let Some(list) = self.loop_origin(pw, call.scope, 0) else {
            return;
        };
        if let Some(h) = host {
            self.reset_budget();
            if self.loop_origin(h, call.scope, 0).map(|o| o.id()) == Some(list.id()) {
                return;
            }
        }
        let detail = format!(
            "{} logs in with each password of `{}` (line {}) in turn",
            call.written,
            super::literal::shorten(self.text(list)),
            list.start_position().row + 1
        );
        self.add("MB925", call.node, detail);
    }

    /// The iterable of the loop whose variable `n` is, or is derived from
    /// directly (methods on it, operators, f-strings, subscripts; not
    /// lookups that take it as an argument), through assignments and the
    /// parameters of the script's functions.
    pub(super) fn loop_origin(&self, n: Node<'t>, scope: usize, depth: usize) -> Option<Node<'t>> {
        if depth > ORIGIN_DEPTH || !self.tick() {
            return None;
        }
        match n.kind() {
            K::Identifier => self.name_origin(n, scope, depth),
            K::Call => {
                let f = n.child(F::Function)?;
                if f.kind() == K::Attribute {
                    if let Some(o) = self.queued_origin(f, scope, depth) {
                        return Some(o);
                    }
                    return self.loop_origin(f.child(F::Object)?, scope, depth + 1);
                }
                let conv = matches!(self.text(f), "str" | "bytes" | "tuple" | "list");
                let arg = n.child(F::Arguments).and_then(|a| a.children().next());
                arg.filter(|_| conv)
                    .and_then(|a| self.loop_origin(a, scope, depth + 1))
            }
            K::Subscript => self.loop_origin(n.child(F::Value)?, scope, depth + 1),
            K::BinaryOperator | K::String | K::ConcatenatedString | K::Interpolation => n
                .children()
                .find_map(|c| self.loop_origin(c, scope, depth + 1)),
            _ => None,
        }
    }

    /// `q.get()` of a queue that a loop fills (`for c in combos:
    /// q.put(c)`): the workers take the loop's values one by one, so the
    /// origin is that loop's. The queue is matched by the value it was made
    /// from, through parameters (`Thread(target=worker, args=(q,))`).
    fn queued_origin(&self, f: Node<'t>, scope: usize, depth: usize) -> Option<Node<'t>> {
        let m = self.text(f.child(F::Attribute)?);
        if !matches!(m, "get" | "get_nowait") {
            return None;
        }
        let queue = self.made_from(f.child(F::Object)?, scope, depth)?;
        self.calls.iter().find_map(|c| {
            let put = c
                .node
                .child(F::Function)
                .filter(|p| p.kind() == K::Attribute)?;
            let pm = self.text(put.child(F::Attribute)?);
            if !matches!(pm, "put" | "put_nowait") {
                return None;
            }
            let target = self.made_from(put.child(F::Object)?, c.scope, depth)?;
            if target.id() != queue.id() {
                return None;
            }
            let item = *self.args(c.node).0.first()?;
            self.loop_origin(item, c.scope, depth + 1)
        })
    }

    /// The value a name was made from, through assignments and what
    /// callers pass for a parameter.
    fn made_from(&self, n: Node<'t>, scope: usize, depth: usize) -> Option<Node<'t>> {
        if depth > ORIGIN_DEPTH || n.kind() != K::Identifier || !self.tick() {
            return None;
        }
        let name = self.text(n);
        match self.lookup(name, scope, n.start_byte())?[0] {
            Bind::Expr(v, s) if v.kind() == K::Identifier => self.made_from(v, s, depth + 1),
            Bind::Expr(v, _) => Some(v),
            Bind::Param { func, index, .. } => self
                .passed(func, index, name)
                .into_iter()
                .find_map(|(a, s)| self.made_from(a, s, depth + 1)),
            _ => None,
        }
    }

    fn name_origin(&self, n: Node<'t>, scope: usize, depth: usize) -> Option<Node<'t>> {
        let name = self.text(n);
        for b in self.lookup(name, scope, n.start_byte())? {
            match b {
                Bind::Part {
                    of,
                    how: Part::Each(_),
                    ..
                } => return Some(of),
                // `user, pw = line.split(":")`, `user, pw = q.get()`.
                Bind::Part {
                    of,
                    scope: s,
                    how: Part::Unpacked(_),
                } => {
                    if let Some(o) = self.loop_origin(of, s, depth + 1) {
                        return Some(o);
                    }
                }
                Bind::Expr(v, s) => {
                    if let Some(o) = self.loop_origin(v, s, depth + 1) {
                        return Some(o);
                    }
                }
                Bind::Param { func, index, .. } => {
                    for (arg, s) in self.passed(func, index, name) {
                        if let Some(o) = self.loop_origin(arg, s, depth + 1) {
                            return Some(o);
                        }
                    }
                }
                _ => {}
            }
        }
        None
    }
}
