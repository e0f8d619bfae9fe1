//! What a script changes outside itself, gathered once for the families
//! that judge configuration and traffic (agents, databases, phishing,
//! traffic hijacking): the paths it writes, the command lines it runs, and
//! the text of its string literals (f-strings included, as written).

use std::borrow::Cow;
use std::rc::Rc;

use super::kinds;
use super::needles::Lowered;
use super::{Analyzer, Node, F, K};

/// Calls that serialise their first argument into the file object given
/// second.
const DUMPS: &[&str] = &[
    "json.dump",
    "yaml.dump",
    "yaml.safe_dump",
    "toml.dump",
    "tomli_w.dump",
    "plistlib.dump",
];

/// A file the script writes, creates or replaces.
pub(super) struct Written<'t> {
    pub call: Node<'t>,
    pub paths: Vec<String>,
}

/// A command line the script runs, lower-cased, unknown words as `*`.
pub(super) struct Command<'t> {
    pub call: Node<'t>,
    pub scope: usize,
    pub line: String,
}

pub(super) struct Effects<'t> {
    pub writes: Vec<Written<'t>>,
    pub commands: Vec<Command<'t>>,
    /// String literals, lower-cased, with their needles.
    literals: Rc<Lowered<'t>>,
}

impl<'t> Effects<'t> {
    /// String literals, lower-cased (decoded when constant, else as written).
    pub fn texts(&self) -> &[(Node<'t>, Cow<'t, str>)] {
        &self.literals.texts
    }

    /// Whether literal `i` of [`Self::texts`] holds a needle of list `bit`
    /// (see [`super::needles`]).
    pub fn holds(&self, i: usize, bit: u32) -> bool {
        self.found(i) & bit != 0
    }

    /// The first literal that `pred` accepts.
    pub fn text_where(&self, pred: impl Fn(&str) -> bool) -> Option<(Node<'t>, &str)> {
        self.texts()
            .iter()
            .find(|(_, t)| pred(t))
            .map(|(n, t)| (*n, &**t))
    }

    /// The needle lists literal `i` of [`Self::texts`] holds, as bits.
    pub fn found(&self, i: usize) -> u32 {
        self.literals.found.get(i).copied().unwrap_or(0)
    }

    /// The first literal holding a needle of list `bit`.
    pub fn text_holding(&self, bit: u32) -> Option<(Node<'t>, &str)> {
        let i = self.literals.found.iter().position(|f| f & bit != 0)?;
        self.texts().get(i).map(|(n, t)| (*n, &**t))
    }
}

impl<'t> Analyzer<'t> {
    /// Collects the writes, commands and literals of the whole file.
    pub(super) fn effects(&self) -> Effects<'t> {
        let mut fx = Effects {
            writes: Vec::new(),
            commands: Vec::new(),
            literals: self.lowered(),
        };
        for site in &self.calls {
            let (call, scope) = (site.node, site.scope);
            let q = self.site_q(site);
            if let Some(paths) = self.written_by(call, scope, q) {
                fx.writes.push(Written { call, paths });
            }
            let runs = self.site_kinds(site) & kinds::COMMAND != 0;
            if runs {
                let (pos, _) = self.args(call);
                for line in pos
                    .first()
                    .map(|a| self.command_lines(*a, scope))
                    .unwrap_or_default()
                {
                    fx.commands.push(Command {
                        call,
                        scope,
                        line: line.to_ascii_lowercase(),
                    });
                }
            }
        }
        fx
    }

    /// The paths a call writes: files opened for writing, `write_text`,
    /// serialisers given such a file, copies and links made.
    fn written_by(&self, call: Node<'t>, scope: usize, q: Option<&str>) -> Option<Vec<String>> {
        let (pos, _) = self.args(call);
        let writing = |mode: &str| mode.contains(['w', 'a', 'x', '+']);
        let opened_for_writing = |n: Node<'t>| {
            self.reset_budget();
            self.opened(n, scope, 0)
                .filter(|(_, mode)| writing(mode))
                .map(|(p, _)| p)
        };
        match q {
            Some("builtins.open" | "io.open" | "codecs.open" | "os.open") => {
                return self
                    .opening_call(call, scope)
                    .filter(|(_, mode)| writing(mode))
                    .map(|(p, _)| p);
            }
            Some(q) if DUMPS.contains(&q) => return opened_for_writing(*pos.get(1)?),
            Some(
                "shutil.copy" | "shutil.copy2" | "shutil.copyfile" | "shutil.move" | "os.symlink"
                | "os.rename" | "os.replace",
            ) => {
                self.reset_budget();
                return Some(self.paths(*pos.get(1)?, scope));
            }
            _ => {}
        }
        let func = call.child(F::Function)?;
        if func.kind() != K::Attribute {
            return None;
        }
        let obj = func.child(F::Object)?;
        match self.text(func.child(F::Attribute)?) {
            "write_text" | "write_bytes" | "touch" | "symlink_to" => {
                self.reset_budget();
                Some(self.paths(obj, scope))
            }
            "open" => self
                .opening_call(call, scope)
                .filter(|(_, mode)| writing(mode))
                .map(|(p, _)| p),
            // `config.write(fh)`: a config parser saving into a file.
            "write" => opened_for_writing(*pos.first()?),
            _ => None,
        }
    }

    /// A command as words: a folded string, or an argument list whose
    /// unknown items are `*`.
    /// [`Self::command_words`] of a command, or, for a helper's parameter
    /// (`def quiet(cmd): subprocess.run(cmd)`), of what each caller passes
    /// (a few of them): the lines the helper runs.
    fn command_lines(&self, n: Node<'t>, scope: usize) -> Vec<String> {
        if let Some(passed) = self.passed_to_name(n, scope) {
            return passed
                .into_iter()
                .filter_map(|(a, s)| self.command_words(a, s))
                .collect();
        }
        let lines = self.caller_lines(n, scope);
        if !lines.is_empty() {
            return lines;
        }
        // A loop variable over command lists, a parameter, or one name of
        // `get, refresh = tools()`: the commands it takes.
        match self.command_words(n, scope) {
            Some(c) => vec![c],
            None => self.looped_commands(n, scope).unwrap_or_default(),
        }
    }

    /// `run(cmd + [key, value])` in `def git_global(key, value)`: one line
    /// per caller, each parameter read as what that caller passes, so a
    /// helper's commands are the words its callers give it rather than
    /// `*` wherever they disagree.
    fn caller_lines(&self, n: Node<'t>, scope: usize) -> Vec<String> {
        let parts: Vec<Node<'t>> = match n.kind() {
            K::BinaryOperator => n.children().collect(),
            _ => vec![n],
        };
        let lists: Vec<(Node<'t>, usize)> = parts
            .iter()
            .filter_map(|&p| self.bound_value(p, scope, |v| v.kind().is_sequence()))
            .collect();
        let param_of = |k: Node<'t>, s: usize| match self.lookup(self.text(k), s, k.start_byte()) {
            Some([super::Bind::Param { func, index, .. }]) if k.kind() == K::Identifier => {
                Some((func, index))
            }
            _ => None,
        };
        let Some(func) = lists
            .iter()
            .flat_map(|&(l, s)| l.children().map(move |k| (k, s)))
            .find_map(|(k, s)| param_of(k, s).map(|(f, _)| f))
        else {
            return Vec::new();
        };
        let callers = self
            .callers
            .get(&func)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let mut out = Vec::new();
        for c in callers.iter().take(super::defs::MAX_PASSED) {
            let words: Vec<String> = lists
                .iter()
                .flat_map(|&(l, s)| l.children().map(move |k| (k, s)))
                .map(|(k, s)| {
                    self.reset_budget();
                    let passed = param_of(k, s)
                        .filter(|&(f, _)| f == func)
                        .and_then(|(_, i)| c.args.get(i.checked_sub(c.offset)?).copied());
                    match passed {
                        Some(a) => self.fold(a, c.scope, 0),
                        None => self.fold(k, s, 0),
                    }
                    .unwrap_or_else(|| "*".to_string())
                })
                .collect();
            out.push(words.join(" "));
        }
        out
    }

    pub(super) fn command_words(&self, n: Node<'t>, scope: usize) -> Option<String> {
        if let Some(c) = self.fold_command(n, scope) {
            return Some(c);
        }
        let list = if n.kind() == K::Identifier {
            match self.lookup(self.text(n), scope, n.start_byte()) {
                Some([super::Bind::Expr(v, _)]) => v,
                _ => n,
            }
        } else {
            n
        };
        if !list.kind().is_sequence() {
            return None;
        }
        let words: Vec<String> = list
            .children()
            .map(|k| {
                self.reset_budget();
                self.fold(k, scope, 0).unwrap_or_else(|| "*".to_string())
            })
            .collect();
        (!words.is_empty()).then(|| words.join(" "))
    }
}

impl<'t> Analyzer<'t> {
    /// The fifth round's configuration and traffic families, over one
    /// gathering of the file's effects.
    pub(super) fn check_configs(&mut self) {
        let fx = self.effects();
        self.check_agent_config(&fx);
        self.check_database(&fx);
        self.check_phishing(&fx);
        self.check_traffic(&fx);
        self.check_browser(&fx);
        self.check_covert(&fx.commands);
        self.check_cloud(&fx);
        self.check_mail(&fx);
        self.check_payment(&fx);
        self.check_firmware(&fx);
    }
}
