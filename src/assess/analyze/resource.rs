//! Resource exhaustion (MB918): a loop that never ends by its condition,
//! never waits and never leaves (no `break`, `return`, `raise`, `yield`,
//! exit), and in each round grows a container, doubles a string, writes to
//! a file or starts a thread or process. Hashing in such a loop is mining
//! (MB905). Loops that wait (accept, recv, sleep, get, join...) are servers
//! and workers, not bombs.

use super::{Analyzer, Node, Op, F, K};
use ruff_python_ast::Operator;

/// Nodes a loop body is searched through before giving up (as "bounded").
const MAX_STEPS: u32 = 5_000;

/// Calls that create a file or directory each time.
const CREATORS: &[&str] = &[
    "os.mkdir",
    "os.makedirs",
    "os.open",
    "os.mknod",
    "os.mkfifo",
    "tempfile.mkstemp",
    "tempfile.mkdtemp",
];

/// Methods that grow the container they are called on.
const GROWERS: &[&str] = &["append", "extend", "insert", "add", "update", "appendleft"];

/// What a round of an endless loop does that exhausts the machine.
enum Exhausts {
    Grows,
    Writes,
    Starts,
    Hashes,
    /// Sends packets or requests (a flood, MB927).
    Floods,
}

impl<'t> Analyzer<'t> {
    pub(super) fn check_endless_loops(&mut self) {
        let loops = std::mem::take(&mut self.endless_loops);
        for (l, scope) in loops {
            if self.loop_blocks(l, scope) || self.ends_by_exception(l) {
                continue;
            }
            let Some(body) = l.child(F::Body) else {
                continue;
            };
            let Some((what, at)) = self.exhausting(body, scope) else {
                continue;
            };
            // A loop bounded by a deadline exhausts nothing but its target:
            // growing a list or writing until a time is a benchmark's shape.
            let until_deadline = !l
                .child(F::Condition)
                .is_some_and(|c| self.is_truthy_const(c));
            if until_deadline && !matches!(what, Exhausts::Floods) {
                continue;
            }
            let line = at.start_position().row + 1;
            match what {
                Exhausts::Hashes => self.add(
                    "MB905",
                    at,
                    format!("hashes in a loop that never waits or ends (line {line}): mining"),
                ),
                Exhausts::Grows => self.add(
                    "MB918",
                    at,
                    format!("grows memory in a loop that never ends (line {line})"),
                ),
                Exhausts::Writes => self.add(
                    "MB918",
                    at,
                    format!("writes in a loop that never ends (line {line})"),
                ),
                Exhausts::Starts => self.add(
                    "MB918",
                    at,
                    format!("starts threads or processes in a loop that never ends (line {line})"),
                ),
                Exhausts::Floods => self.add(
                    "MB927",
                    at,
                    format!(
                        "sends to the network in a loop that never waits and runs without end or until a deadline (line {line})"
                    ),
                ),
            }
        }
    }

    /// What the body does each round, unless it can leave the loop.
    fn exhausting(&self, body: Node<'t>, scope: usize) -> Option<(Exhausts, Node<'t>)> {
        let mut found = None;
        let mut stack = vec![body];
        let mut steps = 0;
        while let Some(n) = stack.pop() {
            steps += 1;
            if steps > MAX_STEPS {
                return None;
            }
            match n.kind() {
                K::BreakStatement | K::ReturnStatement | K::RaiseStatement | K::Yield => {
                    return None
                }
                k if k.opens_scope() => continue,
                K::Call => {
                    if self.exits(n, scope) {
                        return None;
                    }
                    // A send outranks what else the round does: written
                    // to a connection is a flood, whatever the deadline.
                    if !matches!(found, Some((Exhausts::Floods, _))) {
                        found = self
                            .exhausting_call(n, scope)
                            .filter(|w| found.is_none() || matches!(w, Exhausts::Floods))
                            .map(|w| (w, n))
                            .or(found);
                    }
                }
                K::AugmentedAssignment | K::Assignment if found.is_none() && self.doubles(n) => {
                    found = Some((Exhausts::Grows, n));
                }
                _ => {}
            }
            stack.extend(n.children());
        }
        found
    }

    fn exits(&self, call: Node<'t>, scope: usize) -> bool {
        let q = self.callee(call, scope);
        matches!(
            q.as_deref(),
            Some(
                "sys.exit"
                    | "os._exit"
                    | "builtins.exit"
                    | "builtins.quit"
                    | "os.abort"
                    | "builtins.next"
            )
        )
    }

    /// A loop inside a `try` that catches the end of an iteration or of
    /// input (`except StopIteration`, `EOFError`), or that a full buffer
    /// ends (`except BlockingIOError`: filling a non-blocking socket or pipe
    /// until it would block); also inside a test's `with
    /// self.assertRaises(...)` or `pytest.raises(...)` naming one of them.
    /// It ends when that comes. (A loop expected to end in `MemoryError` is
    /// still a bomb.)
    fn ends_by_exception(&self, l: Node<'t>) -> bool {
        let mut n = l.parent();
        while let Some(p) = n {
            match p.kind() {
                k if k.opens_scope() => return false,
                K::TryStatement => {
                    let catches = p
                        .children()
                        .filter(|c| c.kind() == K::ExceptClause)
                        .any(|c| names_loop_end(self.text(c)));
                    if catches {
                        return true;
                    }
                }
                K::WithStatement => {
                    let expects = p.children().filter(|c| c.field() != F::Body).any(|c| {
                        let t = self.text(c);
                        (t.contains("assertRaises") || t.contains("raises(")) && names_loop_end(t)
                    });
                    if expects {
                        return true;
                    }
                }
                _ => {}
            }
            n = p.parent();
        }
        false
    }

    fn exhausting_call(&self, call: Node<'t>, scope: usize) -> Option<Exhausts> {
        let func = call.child(F::Function)?;
        let q = self.callee(call, scope);
        if let Some(q) = q.as_deref() {
            if q.starts_with("hashlib.") {
                return Some(Exhausts::Hashes);
            }
            if matches!(
                q,
                "threading.Thread" | "multiprocessing.Process" | "subprocess.Popen"
            ) {
                return Some(Exhausts::Starts);
            }
            if CREATORS.contains(&q) {
                return Some(Exhausts::Writes);
            }
            // A connection opened each round (the requests then written
            // on it by hand).
            if matches!(q, "asyncio.open_connection" | "socket.create_connection") {
                return Some(Exhausts::Floods);
            }
        }
        let method = (func.kind() == K::Attribute)
            .then(|| func.child(F::Attribute).map(|a| self.text(a)))
            .flatten();
        // Network clients, and the socket methods; `put` or `write` on an
        // object of unknown type may be a queue or a file.
        let sends = matches!(
            super::exfil::send_kind(q.as_deref(), method),
            Some(super::exfil::SendKind::Client)
        ) || matches!(method, Some("send" | "sendall" | "sendto" | "sendmsg"))
            || (matches!(
                method,
                Some("get" | "post" | "head" | "request" | "connect")
            ) && self.on_network_object(call, scope));
        if sends {
            return Some(Exhausts::Floods);
        }
        let m = method?;
        let obj = func.child(F::Object)?;
        match m {
            m if GROWERS.contains(&m) && obj.kind() == K::Identifier => Some(Exhausts::Grows),
            "write" | "writelines" | "sendfile" | "mkdir" | "touch" | "write_text"
            | "write_bytes" => Some(Exhausts::Writes),
            "start" if obj.kind() == K::Call => self.exhausting_call(obj, scope),
            _ => None,
        }
    }

    /// `s = s + s`, `s += s` (doubling each round), `s += "..."`.
    fn doubles(&self, n: Node<'t>) -> bool {
        let (Some(l), Some(r)) = (n.child(F::Left), n.child(F::Right)) else {
            return false;
        };
        let name = self.text(l);
        if l.kind() != K::Identifier {
            return false;
        }
        match (n.kind(), r.kind()) {
            (K::AugmentedAssignment, K::Identifier) => self.text(r) == name,
            (K::AugmentedAssignment, K::String | K::List | K::BinaryOperator) => {
                n.operator() == Op::Bin(Operator::Add)
            }
            (K::Assignment, K::BinaryOperator) => {
                let is = |f: F| r.child(f).is_some_and(|k| self.text(k) == name);
                matches!(r.operator(), Op::Bin(Operator::Add | Operator::Mult))
                    && is(F::Left)
                    && is(F::Right)
            }
            _ => false,
        }
    }
}

/// An exception that ends a loop by design: the end of an iteration or of
/// input, or a non-blocking write that would block (`ssl`'s want-read and
/// want-write are its TLS forms).
fn names_loop_end(text: &str) -> bool {
    [
        "StopIteration",
        "EOFError",
        "BlockingIOError",
        "SSLWantWriteError",
        "SSLWantReadError",
    ]
    .iter()
    .any(|e| text.contains(e))
}
