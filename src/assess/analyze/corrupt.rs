//! Data corrupted in place (MB953), what logic bombs and saboteurs leave
//! behind: files found by searching (walks, globs) written back with random
//! bytes, with a fill of one repeated byte, or with their own values
//! altered by random numbers (figures skewed). Unlike deletion (MB907) the
//! files stay and look intact until they are used. Writing random test
//! data to new files, or files in the script's own temporary directories,
//! is not this.

use ruff_python_ast::Operator;

use super::flow::Source;
use super::literal::shorten;
use super::{line, Analyzer, Node, Op, F, K};

/// The methods that write data back: file objects, CSV writers, paths.
const WRITES: &[&str] = &[
    "write",
    "writelines",
    "writerow",
    "writerows",
    "write_bytes",
    "write_text",
];

/// Writers of tabular data built over a file object (their first argument).
const TABLE_WRITERS: &[&str] = &["csv.writer", "csv.DictWriter"];

impl<'t> Analyzer<'t> {
    /// MB953 over the writes into files found by searching.
    pub(super) fn check_corruption(&mut self) {
        let mut found = None;
        // What the script reads, made at the first candidate: a file
        // written whole (`"w"`) is one the script found only if it read it
        // too; otherwise it is a new file with a computed name.
        let mut read: Option<Vec<String>> = None;
        for site in &self.calls {
            // The method first: a write of some kind is all this family
            // reads, and most calls are not one.
            let Some(m) = site.method.filter(|m| WRITES.contains(m)) else {
                continue;
            };
            let (pos, _) = self.args(site.node);
            let (Some(data), Some(obj)) = (
                pos.first().copied(),
                site.node
                    .child(F::Function)
                    .and_then(|f| f.child(F::Object)),
            ) else {
                continue;
            };
            self.reset_budget();
            let Some((paths, update)) = self.corrupted_paths(m, obj, site.scope) else {
                continue;
            };
            let mut searched = paths
                .into_iter()
                .filter(|p| p.contains('*') && !p.starts_with("<tmp:"))
                .peekable();
            if searched.peek().is_none() {
                continue;
            }
            // The junk first: reading every call's paths costs more.
            let Some(junk) = self.junk(data, site.scope) else {
                continue;
            };
            let found_file = searched
                .find(|p| update || read.get_or_insert_with(|| self.paths_read()).contains(p))
                .filter(|p| !self.unlinked_in(site.scope, p))
                .filter(|p| !self.created_if_missing(site.node, site.scope, p));
            if let Some(path) = found_file {
                found = Some((site.node, path, junk));
                break;
            }
        }
        if let Some((at, path, junk)) = found {
            let detail = format!(
                "files found by searching ({path}) are written back with {junk}: their contents are destroyed or falsified while the files stay"
            );
            self.add("MB953", at, detail);
        }
    }

    /// Whether the function `scope` also deletes the file `p` it writes:
    /// overwritten then unlinked is a file shredded (judged as a deletion,
    /// by where it is), not data falsified while the file stays.
    fn unlinked_in(&self, scope: usize, p: &str) -> bool {
        self.calls.iter().filter(|c| c.scope == scope).any(|c| {
            let os_call = || {
                self.callee(c.node, scope)
                    .is_some_and(|q| matches!(&*q, "os.remove" | "os.unlink"))
            };
            let target = match c.method {
                Some("unlink" | "remove") if os_call() => self.args(c.node).0.first().copied(),
                Some("unlink") => c.node.child(F::Function).and_then(|f| f.child(F::Object)),
                _ => None,
            };
            target.is_some_and(|t| {
                self.reset_budget();
                self.paths(t, scope).iter().any(|x| x == p)
            })
        })
    }

    /// Whether the write `call` sits in the body of `if not
    /// os.path.exists(p):` (or `not path.exists()`) for the path it writes:
    /// a file made only when there is none (a salt, a default settings
    /// file) destroys nothing that was there.
    fn created_if_missing(&self, call: Node<'t>, scope: usize, p: &str) -> bool {
        let mut up = call.parent();
        for _ in 0..16 {
            let Some(n) = up else {
                return false;
            };
            if n.kind() == K::IfStatement
                && n.child(F::Consequence)
                    .is_some_and(|b| b.byte_range().contains(&call.start_byte()))
            {
                let tested = n
                    .child(F::Condition)
                    .filter(|c| c.kind() == K::NotOperator)
                    .and_then(|c| c.child(F::Argument))
                    .and_then(|c| self.existence_test(c, scope));
                if tested.is_some_and(|t| {
                    self.reset_budget();
                    self.paths(t, scope).iter().any(|x| x == p)
                }) {
                    return true;
                }
            }
            up = n.parent();
        }
        false
    }

    /// The path a call asks the existence of: `os.path.exists(x)`,
    /// `os.path.isfile(x)`, `x.exists()`, `x.is_file()`.
    fn existence_test(&self, c: Node<'t>, scope: usize) -> Option<Node<'t>> {
        if c.kind() != K::Call {
            return None;
        }
        let func = c.child(F::Function)?;
        let q = self.callee(c, scope);
        if q.is_some_and(|q| matches!(&*q, "os.path.exists" | "os.path.isfile")) {
            return self.args(c).0.first().copied();
        }
        let method = self.text(func.child(F::Attribute)?);
        matches!(method, "exists" | "is_file")
            .then(|| func.child(F::Object))
            .flatten()
    }

    /// The paths a write method `m` on `obj` writes, and whether they were
    /// opened for update (`"r+"`: the file must exist already).
    fn corrupted_paths(&self, m: &str, obj: Node<'t>, scope: usize) -> Option<(Vec<String>, bool)> {
        match m {
            "write" | "writelines" => self.opened_for_writing(obj, scope),
            "writerow" | "writerows" => self
                .bound_value(obj, scope, |v| {
                    v.kind() == K::Call
                        && self
                            .callee(v, scope)
                            .is_some_and(|q| TABLE_WRITERS.contains(&&*q))
                })
                .and_then(|(w, s)| {
                    let file = *self.args(w).0.first()?;
                    self.opened_for_writing(file, s)
                }),
            "write_bytes" | "write_text" => Some((self.paths(obj, scope), false)),
            _ => None,
        }
    }

    /// The paths of a file object opened for writing or update, and whether
    /// for update.
    fn opened_for_writing(&self, f: Node<'t>, scope: usize) -> Option<(Vec<String>, bool)> {
        self.opened(f, scope, 0)
            .filter(|(_, mode)| mode.contains(['w', '+']))
            .map(|(p, mode)| (p, mode.contains('+')))
    }

    /// What makes written data junk: random bytes or values, one byte
    /// repeated, or random values stored into the rows its function writes.
    fn junk(&self, data: Node<'t>, scope: usize) -> Option<String> {
        let t = self.taint(data, scope);
        // Random bytes beside ciphertext are a salt or a nonce: encryption
        // output, which the ransomware check judges, not a random fill.
        if let Some(at) = t.get(Source::Random).filter(|_| !t.has(Source::Scrambled)) {
            return Some(format!("random data (`{}`)", shorten(self.text(at))));
        }
        let fill = self.bound_value(data, scope, |v| {
            v.kind() == K::BinaryOperator
                && v.operator() == Op::Bin(Operator::Mult)
                && v.children().any(|k| k.kind() == K::String)
        });
        if let Some((v, _)) = fill {
            return Some(format!("a fill of one value (`{}`)", shorten(self.text(v))));
        }
        self.assigned.iter().find_map(|&(target, value, s)| {
            if s != scope || target.kind() != K::Subscript {
                return None;
            }
            let at = self.taint(value, s).get(Source::Random)?;
            Some(format!(
                "values altered by random numbers (`{}`, line {})",
                shorten(self.text(at)),
                line(at)
            ))
        })
    }
}
