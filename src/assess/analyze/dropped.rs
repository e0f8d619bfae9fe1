//! Python kept in the script's strings and released (MB956): written to a
//! file, run with the interpreter's `-c`, or given to `exec`/`compile`.
//! The text is assessed as code of its own (f-string parts and `.format`
//! fields filled where they fold, a neutral `0` where they do not), and
//! when that code is BLOCKED on its own (a reverse shell, a loop running
//! commands fetched from a server), so is the script that carries it: the
//! dropped agent is what the script does, only one step later. Generated
//! modules and helpers that are harmless on their own are not this.

use super::literal::{shorten, unescape};
use super::names::{EXEC_FUNCS, SUBPROCESS};
use super::plant::blocked_code;
use super::{Analyzer, Bind, CallSite, Node, F, K, MAX_NESTED_CODE};

/// Levels of names, `+` and `.format` followed for the released text.
const TEXT_DEPTH: usize = 4;

/// What code needs to do anything BLOCKED: talk to the network, start
/// processes or shells, run code it builds, or touch secrets and devices.
const REACHES: &[&str] = &[
    "socket",
    "subprocess",
    "urllib",
    "requests",
    "http",
    "system",
    "popen",
    "pty",
    "exec",
    "eval",
    "ctypes",
    "pickle",
    "marshal",
    ".ssh",
    "environ",
];

impl<'t> Analyzer<'t> {
    /// MB956 over the calls that write, run or execute a text.
    pub(super) fn check_dropped_code(&mut self) {
        // Nested code is not searched again, and a script without
        // `import` in its text carries no code worth the parse.
        if self.nesting >= MAX_NESTED_CODE || !self.src.contains("import") {
            return;
        }
        // A script BLOCKED already gains nothing from the agent it carries
        // but a second analysis.
        let blocked = self.findings.iter().any(|f| {
            crate::assess::rules::rule(f.rule)
                .is_some_and(|r| r.severity == crate::assess::verdict::Verdict::Blocked)
        });
        if blocked {
            return;
        }
        let mut found = None;
        for site in &self.calls {
            let Some((data, how)) = self.released_text(site) else {
                continue;
            };
            self.reset_budget();
            let Some(code) = self.code_text(data, site.scope, 0) else {
                continue;
            };
            // Only text that imports something able to reach a BLOCKED
            // finding (a socket, a process, a fetch, dynamic code) is worth
            // a second analysis: most written text is data or a harmless
            // module, and the nested analysis is a whole assessment.
            if !code.contains("import") || !REACHES.iter().any(|r| code.contains(r)) {
                continue;
            }
            if !self.written_to_a_file(site.node, site.scope) {
                continue;
            }
            if let Some(why) = blocked_code(&code, self.max_depth) {
                found = Some((site.node, how, why));
                break;
            }
        }
        if let Some((at, how, why)) = found {
            let detail = format!(
                "Python kept in the script is {how}; on its own it is BLOCKED: {}",
                shorten(&why)
            );
            self.add("MB956", at, detail);
        }
    }

    /// The text a call hands on as code or as a file's contents, and how.
    fn released_text(&self, site: &CallSite<'t>) -> Option<(Node<'t>, &'static str)> {
        let (call, scope) = (site.node, site.scope);
        let (pos, _) = self.args(call);
        let first = *pos.first()?;
        match site.method {
            Some("write_text") => return Some((first, "written to a file")),
            // Whether the receiver is a file opened for writing is asked
            // only of text worth analysing (see `written_to_a_file`): it
            // evaluates the opened path.
            Some("write") => return Some((first, "written to a file")),
            _ => {}
        }
        match self.site_q(site)? {
            "builtins.exec" | "builtins.compile" | "builtins.eval" => Some((first, "executed")),
            q if SUBPROCESS.contains(&q) || EXEC_FUNCS.contains(&q) || q.starts_with("os.exec") => {
                self.inline_code(first, scope)
                    .map(|c| (c, "run with the interpreter's -c"))
            }
            _ => None,
        }
    }

    /// For `fh.write(..)`: whether `fh` was opened for writing (a socket's
    /// or a stream's `write` sends, it does not drop a file). Other calls
    /// pass.
    fn written_to_a_file(&self, call: Node<'t>, scope: usize) -> bool {
        if self.method_name(call) != Some("write") {
            return true;
        }
        let Some(obj) = call.child(F::Function).and_then(|f| f.child(F::Object)) else {
            return false;
        };
        self.opened(obj, scope, 0)
            .is_some_and(|(_, mode)| mode.contains(['w', 'a', '+']))
    }

    /// The element after `"-c"` in a literal argument list.
    fn inline_code(&self, argv: Node<'t>, scope: usize) -> Option<Node<'t>> {
        let argv = self.literal_sequence(argv, scope)?;
        let mut items = argv.children();
        items.find(|k| self.text(*k).trim_matches(['"', '\'']) == "-c")?;
        items.next()
    }

    /// A text as the program will see it: constants folded, f-string
    /// parts and `.format` fields filled.
    pub(super) fn code_text(&self, n: Node<'t>, scope: usize, depth: usize) -> Option<String> {
        if depth > TEXT_DEPTH {
            return None;
        }
        match n.kind() {
            K::String if n.children().any(|k| k.kind() == K::Interpolation) => {
                self.filled_fstring(n, scope)
            }
            K::Identifier => match self.lookup(self.text(n), scope, n.start_byte()) {
                Some([Bind::Expr(v, s)]) => self.code_text(v, s, depth + 1),
                _ => None,
            },
            K::BinaryOperator => {
                let l = self.code_text(n.child(F::Left)?, scope, depth + 1)?;
                let r = self.code_text(n.child(F::Right)?, scope, depth + 1)?;
                Some(l + &r)
            }
            K::Call => self.formatted(n, scope, depth),
            _ => self.fold(n, scope, 0),
        }
    }

    /// `TEMPLATE.format(..)` with its fields filled; other calls folded.
    fn formatted(&self, call: Node<'t>, scope: usize, depth: usize) -> Option<String> {
        let func = call.child(F::Function)?;
        let is_format = func.kind() == K::Attribute
            && func
                .child(F::Attribute)
                .is_some_and(|a| self.text(a) == "format");
        if !is_format {
            return self.fold(call, scope, 0);
        }
        let template = self.code_text(func.child(F::Object)?, scope, depth + 1)?;
        let (pos, kw) = self.args(call);
        let value = |field: &str| {
            let arg = match field.parse::<usize>() {
                Ok(i) => pos.get(i).copied(),
                Err(_) => kw.iter().find(|(k, _)| *k == field).map(|(_, v)| *v),
            };
            arg.and_then(|a| self.fold(a, scope, 0))
        };
        Some(fill_fields(&template, value))
    }

    /// An f-string's body with each part folded, or `0` where it does not.
    fn filled_fstring(&self, n: Node<'t>, scope: usize) -> Option<String> {
        let text = self.src.get(n.byte_range())?;
        let quote_at = text.find(['\'', '"'])?;
        let raw = text[..quote_at].to_ascii_lowercase().contains('r');
        let q = if text[quote_at..].starts_with("\"\"\"") || text[quote_at..].starts_with("'''") {
            3
        } else {
            1
        };
        let (start, end) = (
            n.start_byte() + quote_at + q,
            n.byte_range().end.saturating_sub(q),
        );
        let mut out = String::new();
        let mut at = start;
        for part in n.children().filter(|k| k.kind() == K::Interpolation) {
            out.push_str(self.src.get(at..part.start_byte())?);
            let v = part
                .child(F::Expression)
                .and_then(|e| self.fold(e, scope, 0));
            out.push_str(v.as_deref().unwrap_or("0"));
            at = part.byte_range().end;
        }
        out.push_str(self.src.get(at..end.max(at))?);
        let out = out.replace("{{", "{").replace("}}", "}");
        Some(if raw { out } else { unescape(&out) })
    }
}

/// `str.format` fields filled: `{name}`, `{0}`, `{}` (numbered in order),
/// `!r` quoted, a format spec ignored; a field with no value is `0`.
fn fill_fields(template: &str, value: impl Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    let mut auto = 0usize;
    while let Some(i) = rest.find(['{', '}']) {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        if tail.starts_with("{{") || tail.starts_with("}}") {
            out.push_str(&tail[..1]);
            rest = &tail[2..];
            continue;
        }
        let Some(close) = tail.find('}').filter(|_| tail.starts_with('{')) else {
            out.push_str(&tail[..1]);
            rest = &tail[1..];
            continue;
        };
        let field = &tail[1..close];
        let (name, conv) = match field.split_once('!') {
            Some((n, c)) => (n, c),
            None => (field.split(':').next().unwrap_or(""), ""),
        };
        let name = if name.is_empty() {
            auto += 1;
            (auto - 1).to_string()
        } else {
            name.to_string()
        };
        match value(&name) {
            Some(v) if conv.starts_with('r') => out.push_str(&format!("{v:?}")),
            Some(v) => out.push_str(&v),
            None => out.push('0'),
        }
        rest = &tail[close + 1..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::fill_fields;

    #[test]
    fn fields_filled_by_name_number_and_order() {
        let v = |f: &str| match f {
            "host" => Some("h.example".to_string()),
            "0" => Some("a".to_string()),
            _ => None,
        };
        assert_eq!(
            fill_fields("c(({host!r}, {port}))", v),
            "c((\"h.example\", 0))"
        );
        assert_eq!(fill_fields("{} {{x}} {1}", v), "a {x} 0");
        assert_eq!(fill_fields("lone } and {", v), "lone } and {");
    }
}
