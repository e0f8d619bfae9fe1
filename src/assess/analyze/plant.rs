//! Code planted into other programs' Python files (MB952): a piece of
//! Python the script keeps in its strings, which assessed on its own is
//! BLOCKED (it fetches and runs code, sends secrets...), written or
//! appended into `.py` files the script found by listing or walking (a
//! model hub's cached `hubconf.py`, a project's modules): whoever imports
//! them runs it. Generated modules that are harmless on their own, and
//! code written to one file the script names, are not this.

use super::literal::shorten;
use super::{Analyzer, Bind, Node, F, K, MAX_NESTED_CODE};

/// Levels of `+` and names followed for the pieces of written text.
const PIECE_DEPTH: usize = 4;

impl<'t> Analyzer<'t> {
    /// MB952 over the writes of text into Python files found by searching.
    pub(super) fn check_planted_code(&mut self) {
        if self.nesting >= MAX_NESTED_CODE {
            return;
        }
        let mut found = None;
        for site in &self.calls {
            // The method first: only writes are read further, and most
            // calls are not one.
            let method = site.method;
            if !matches!(method, Some("write_text" | "write")) {
                continue;
            }
            let (pos, _) = self.args(site.node);
            let (Some(data), Some(func)) = (pos.first(), site.node.child(F::Function)) else {
                continue;
            };
            let Some(obj) = func.child(F::Object) else {
                continue;
            };
            self.reset_budget();
            let paths = match method {
                Some("write_text") => self.paths(obj, site.scope),
                Some("write") => match self.opened(obj, site.scope, 0) {
                    Some((p, mode)) if mode.contains(['w', 'a', '+']) => p,
                    _ => continue,
                },
                _ => continue,
            };
            let Some(path) = paths.iter().find(|p| p.ends_with(".py") && p.contains('*')) else {
                continue;
            };
            let mut pieces = Vec::new();
            self.text_pieces(*data, site.scope, 0, &mut pieces);
            if let Some(why) = pieces.iter().find_map(|c| blocked_code(c, self.max_depth)) {
                found = Some((site.node, path.clone(), why));
                break;
            }
        }
        if let Some((at, path, why)) = found {
            let detail = format!(
                "code kept in the script is written into Python files found by searching ({path}); on its own it is BLOCKED: {}",
                shorten(&why)
            );
            self.add("MB952", at, detail);
        }
    }

    /// The constant pieces of a text built with `+` and names.
    pub(super) fn text_pieces(
        &self,
        n: Node<'t>,
        scope: usize,
        depth: usize,
        out: &mut Vec<String>,
    ) {
        if depth > PIECE_DEPTH {
            return;
        }
        match n.kind() {
            K::String | K::ConcatenatedString => {
                if let Some(t) = self.fold(n, scope, 0) {
                    out.push(t);
                }
            }
            K::BinaryOperator => {
                for k in n.children() {
                    self.text_pieces(k, scope, depth + 1, out);
                }
            }
            K::Identifier => {
                if let Some(Bind::Expr(v, s)) = self
                    .lookup(self.text(n), scope, n.start_byte())
                    .and_then(|b| b.first().copied())
                {
                    self.text_pieces(v, s, depth + 1, out);
                }
            }
            _ => {}
        }
    }
}

/// The first BLOCKED finding of a piece of Python, assessed on its own.
pub(super) fn blocked_code(code: &str, max_depth: usize) -> Option<String> {
    // One statement alone, unless joined by `;` (a `-c` one-liner).
    if !code.contains(['\n', ';']) {
        return None;
    }
    let (inner, syntax_ok) = super::analyze_text(code, max_depth, MAX_NESTED_CODE).ok()?;
    if !syntax_ok {
        return None;
    }
    inner
        .into_iter()
        .find(|f| {
            crate::assess::rules::rule(f.rule)
                .is_some_and(|r| r.severity == crate::assess::verdict::Verdict::Blocked)
        })
        .map(|f| format!("{} {}", f.rule, f.detail))
}
