//! Commands kept in tables: a script that runs its programs through a
//! helper (`run(argv)`, `self.run(...)`, a runner passed as a default)
//! often writes the command lines as lists in a plan, a dict of lambdas or
//! a method per step, where the data flow from the list to the process call
//! is lost. Those that erase traces, switch a defence off or take recovery
//! away (MB923, MB924, MB907) need no more context than their words: a list
//! `["fsutil", "usn", "deletejournal", ...]` or a line `"auditpol /clear
//! /y"` handed to a call means the same wherever the call goes.

use rustc_hash::FxHashSet;

use super::command::covering_tracks;
use super::literal::shorten;
use super::names::runs_command;
use super::{Analyzer, Node, K};

/// Calls whose first argument is text shown or logged, not run.
const SHOWN: &[&str] = &[
    "print", "info", "debug", "warning", "warn", "error", "write", "echo", "log",
];

impl<'t> Analyzer<'t> {
    /// Judges the command lists and lines the script keeps away from its
    /// process calls, when it runs some command it does not spell at the
    /// call (only then can a table be what it runs).
    pub(super) fn check_tabled_commands(&mut self) {
        if !self.runs_commands_indirectly() {
            return;
        }
        let mut seen: FxHashSet<u32> = FxHashSet::default();
        // Lists of words kept in constants have no literal of their own:
        // each is visited as the parent of its first item.
        let constant_lists: Vec<Node<'t>> = self
            .constant_word_lists()
            .into_iter()
            .filter_map(|l| l.children().next())
            .collect();
        // By place, not over a copy of the list: the walk made them all.
        let literals = self.strings.len();
        for i in 0..literals + constant_lists.len() {
            let s = match i.checked_sub(literals) {
                None => self.strings[i],
                Some(j) => constant_lists[j],
            };
            let Some(parent) = s.parent() else { continue };
            let words = match parent.kind() {
                K::List | K::Tuple if seen.insert(parent.id()) => self.table_words(parent),
                K::ArgumentList if self.handed_to_a_runner(s, parent) => {
                    let scope = self.scope_of(s);
                    self.fold_command(s, scope)
                }
                _ => None,
            };
            let Some(line) = words.map(|w| w.to_ascii_lowercase()) else {
                continue;
            };
            for seg in line.split(['&', '|', ';', '\n']) {
                let words: Vec<&str> = seg.split_whitespace().collect();
                if let Some(rule) = covering_tracks(&words) {
                    let at = if parent.kind() == K::ArgumentList {
                        s
                    } else {
                        parent
                    };
                    let detail = format!(
                        "keeps the command `{}` for a helper that runs commands",
                        shorten(seg.trim())
                    );
                    self.add(rule, at, detail);
                    break;
                }
            }
        }
    }

    /// Does some process call run a command that is not a literal at the
    /// call (a name, a parameter, a list built elsewhere)?
    fn runs_commands_indirectly(&self) -> bool {
        self.calls.iter().any(|c| {
            let runs = self.site_q(c).is_some_and(runs_command);
            runs && self.args(c.node).0.first().is_some_and(|a| {
                !matches!(
                    a.kind(),
                    K::String | K::List | K::Tuple | K::ConcatenatedString
                )
            })
        })
    }

    /// The words of a list or tuple, each folded where it folds and `*`
    /// where it does not (a channel name a loop supplies).
    fn table_words(&self, list: Node<'t>) -> Option<String> {
        let scope = self.scope_of(list);
        self.reset_budget();
        let words: Vec<String> = list
            .children()
            .map(|w| self.fold(w, scope, 0).unwrap_or_else(|| "*".into()))
            .collect();
        (words.len() >= 2).then(|| words.join(" "))
    }

    /// Is the string `s` the first argument of a call that is not one of
    /// [`SHOWN`] (a message printed or logged is not run)?
    fn handed_to_a_runner(&self, s: Node<'t>, args: Node<'t>) -> bool {
        let first = args.children().next().is_some_and(|a| a.id() == s.id());
        let Some(call) = args.parent().filter(|c| c.kind() == K::Call) else {
            return false;
        };
        let name = self.method_name(call).or_else(|| {
            call.child(super::F::Function)
                .filter(|f| f.kind() == K::Identifier)
                .map(|f| self.text(f))
        });
        first && !name.is_some_and(|n| SHOWN.contains(&n))
    }

    /// The scope a node is evaluated in: that of the innermost def, lambda
    /// or class around it (the module's when none).
    pub(super) fn scope_of(&self, n: Node<'t>) -> usize {
        // Each ancestor was looked for among all the scopes, for each
        // literal of a table: the scopes are indexed by the node opening
        // them instead, as far as the walk has made them (it only adds).
        let mut opening = self.scope_openers.borrow_mut();
        let (done, map) = &mut *opening;
        for (i, s) in self.scopes.iter().enumerate().skip(*done) {
            if let Some(d) = s.node {
                // The first scope a node opens, as the scan found it.
                map.entry(d.id()).or_insert(i);
            }
        }
        *done = self.scopes.len();
        let mut cur = n.parent();
        while let Some(p) = cur {
            if let Some(&i) = map.get(&p.id()) {
                return i;
            }
            cur = p.parent();
        }
        0
    }
}
