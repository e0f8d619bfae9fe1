//! Interpreter start-up hooks of the user's own (MB224 rather than MB906):
//! a `.pth` or `sitecustomize` whose written text, assessed on its own, does
//! nothing worth a look (a path entry for a project's `src/`, a guarded
//! `import coverage; coverage.process_startup()`), in a script that fetches,
//! decodes and hides nothing (see `own_setup_script`). The hook runs in every
//! interpreter of that environment, so it is judged by what it runs, not by
//! where it goes: a hook that execs decoded text or switches certificate
//! checks off stays MB906.

use super::{Analyzer, Node, MAX_NESTED_CODE};
use crate::assess::verdict::Verdict;

impl<'t> Analyzer<'t> {
    /// Whether `p` is a start-up hook that `call` writes with text that is
    /// harmless on its own.
    pub(super) fn harmless_start_hook(&self, p: &str, call: Node<'t>) -> bool {
        let name = p.rsplit('/').next().unwrap_or(p);
        let hook =
            name.ends_with(".pth") || matches!(name, "sitecustomize.py" | "usercustomize.py");
        if !hook || self.nesting >= MAX_NESTED_CODE {
            return false;
        }
        let Some(text) = self.hook_text(p, call) else {
            return false;
        };
        // A `.pth` runs only its lines that start with `import`; the others
        // are directories put on `sys.path`.
        let runs_code =
            !name.ends_with(".pth") || text.lines().any(|l| l.trim_start().starts_with("import"));
        if !runs_code {
            return true;
        }
        let Ok((inner, syntax_ok)) = super::analyze_text(&text, self.max_depth, MAX_NESTED_CODE)
        else {
            return false;
        };
        syntax_ok
            && inner.iter().all(|f| {
                crate::assess::rules::rule(f.rule).is_some_and(|r| r.severity == Verdict::Low)
            })
    }

    /// The constant text a call writes into `p`: its own data argument
    /// (`write_text`), or what `write` calls put into the file it opens.
    fn hook_text(&self, p: &str, call: Node<'t>) -> Option<String> {
        let scope = self.call_scope(call)?;
        let mut pieces = Vec::new();
        match self.method_name(call) {
            Some("write_text" | "write_bytes") => {
                let data = *self.args(call).0.first()?;
                self.text_pieces(data, scope, 0, &mut pieces);
            }
            _ => {
                for site in &self.calls {
                    if site.method != Some("write") {
                        continue;
                    }
                    let (pos, _) = self.args(site.node);
                    let func = site.node.child(super::F::Function);
                    let Some((data, obj)) = pos
                        .first()
                        .zip(func.and_then(|f| f.child(super::F::Object)))
                    else {
                        continue;
                    };
                    self.reset_budget();
                    if self
                        .opened(obj, site.scope, 0)
                        .is_some_and(|(ps, _)| ps.iter().any(|x| x == p))
                    {
                        self.text_pieces(*data, site.scope, 0, &mut pieces);
                    }
                }
            }
        }
        (!pieces.is_empty()).then(|| pieces.concat())
    }
}
