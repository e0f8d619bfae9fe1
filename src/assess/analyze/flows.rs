//! Sources reaching sinks ([`super::flow`] follows the data): network or
//! request data run as a command (MB913, remote control, web shells) or as
//! code and deserialised objects (MB914, code from data), user input pasted
//! into a shell command (MB422). Calls through dispatch tables (`{"run":
//! os.system}[op](arg)`, `handlers[i](data)`) are sinks like direct ones.

use super::calls::Call;
use super::command::program_name;
use super::flow::{Source, Taint};
use super::kinds;
use super::literal::shorten;
use super::{Analyzer, Bind, Node, F, K};

/// Levels of indirection followed to find what a dispatch table holds.
const DISPATCH_DEPTH: usize = 4;

/// What a call does with its first argument.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Sink {
    /// A command line for a shell.
    Shell,
    /// An argument vector (its first element, the program, matters).
    Argv,
    /// Python code or a code object.
    Code,
    /// Bytes an unpickler or similar turns into live objects.
    Deserialise,
}

/// The sink a call of `q` is, `k` being the callee lists `q` is in
/// ([`kinds::of`], which a call's facts hold already).
fn sink_of(q: &str, k: u32, shell_kw: bool) -> Option<Sink> {
    if k & kinds::SHELL != 0 || q == "asyncio.create_subprocess_shell" {
        Some(Sink::Shell)
    } else if k & kinds::PROCESS != 0 {
        Some(if shell_kw { Sink::Shell } else { Sink::Argv })
    } else if k & kinds::EXEC != 0 || q.starts_with("os.exec") || q.starts_with("os.spawn") {
        Some(Sink::Argv)
    } else if matches!(
        q,
        "builtins.exec"
            | "builtins.eval"
            | "builtins.compile"
            | "builtins.execfile"
            | "types.FunctionType"
    ) {
        Some(Sink::Code)
    } else if k & kinds::DESERIALIZER != 0
        || matches!(
            q,
            "marshal.loads"
                | "marshal.load"
                | "yaml.unsafe_load"
                | "yaml.full_load"
                | "cloudpickle.loads"
        )
    {
        Some(Sink::Deserialise)
    } else {
        None
    }
}

/// Programs whose arguments are themselves code or a command.
/// Windows shells count too (`powershell -Enc`, `cmd /c`): their
/// arguments are a script, whether spelled plainly or base64-encoded.
fn runs_its_arguments(program: &str) -> bool {
    let base = program_name(program);
    let base = base.as_str();
    matches!(
        base,
        "sh" | "bash" | "zsh" | "dash" | "ksh" | "<python>" | "powershell" | "pwsh" | "cmd"
    ) || base.starts_with("python")
        || base.starts_with("perl")
        || base.starts_with("ruby")
}

impl<'t> Analyzer<'t> {
    /// Checks a call as a sink of network, request and user data.
    pub(super) fn check_flows(&mut self, call: &Call<'t>) {
        // The callee, with the callee lists the call's facts hold; or, for
        // a callee that does not resolve, the functions a table it is
        // taken from holds. (The callee alone was put in a vector of its
        // own at every call.)
        let direct = call.q.clone().map(|q| (q, call.kinds, false));
        let tabled: Vec<_> = match direct {
            Some(_) => Vec::new(),
            None => self
                .dispatch_targets(call.func, call.scope, 0)
                .into_iter()
                .map(|q| {
                    let k = kinds::of(&q);
                    (std::rc::Rc::from(q), k, true)
                })
                .collect(),
        };
        for (q, k, dispatched) in direct.into_iter().chain(tabled) {
            let Some(sink) = sink_of(&q, k, call.shell_kw.is_some()) else {
                continue;
            };
            let Some(arg) = call
                .arg(0, "args")
                .or_else(|| call.kwarg("source"))
                .or_else(|| call.kwarg("cmd"))
            else {
                continue;
            };
            let taint = if sink == Sink::Argv {
                self.program_taint(arg, call.scope)
            } else {
                self.taint(arg, call.scope)
            };
            self.report_flow(&q, sink, dispatched, &taint, call);
        }
    }

    fn report_flow(
        &mut self,
        q: &str,
        sink: Sink,
        dispatched: bool,
        t: &Taint<'t>,
        call: &Call<'t>,
    ) {
        let via = if dispatched {
            format!(
                "`{}` (a table entry that is {q})",
                shorten(self.text(call.node))
            )
        } else {
            format!("`{}`", shorten(self.text(call.node)))
        };
        let remote = t.first(&[Source::Network, Source::Request]);
        let (rule, what) = match (sink, remote) {
            (Sink::Shell | Sink::Argv, Some(_)) => ("MB913", "runs as a command in"),
            (Sink::Code, Some(_)) => ("MB914", "runs as code in"),
            (Sink::Deserialise, Some(_)) => ("MB914", "is deserialised by"),
            (Sink::Shell, None) if t.has(Source::User) => {
                ("MB422", "is pasted into the shell command")
            }
            _ => return,
        };
        let (source, at) = remote
            .or_else(|| t.first(&[Source::User]))
            .unwrap_or((Source::User, call.node));
        let detail = format!(
            "{} from `{}` (line {}) {what} {via}",
            source.describe(),
            shorten(self.text(at)),
            at.start_position().row + 1
        );
        self.add(rule, call.node, detail);
    }

    /// The sources in the program position of an argument vector: element 0
    /// of a literal list (every element when the program is a shell or an
    /// interpreter), or the whole vector when it is computed.
    fn program_taint(&self, argv: Node<'t>, scope: usize) -> Taint<'t> {
        if !argv.kind().is_sequence() {
            return self.taint(argv, scope);
        }
        let elems: Vec<Node<'t>> = argv.children().collect();
        let Some(first) = elems.first() else {
            return Taint::default();
        };
        let program = self.paths(*first, scope);
        // A program name spelled in code (`b64decode(..).decode()`) has no
        // path but folds to its name.
        let folded = || {
            let saved = self.budget.get();
            self.reset_budget();
            let runs = self
                .fold(*first, scope, 0)
                .is_some_and(|p| runs_its_arguments(&p));
            self.budget.set(saved);
            runs
        };
        if program.iter().any(|p| runs_its_arguments(p)) || folded() {
            let mut t = Taint::default();
            for e in &elems[1..] {
                t.merge(&self.taint(*e, scope));
            }
            return t;
        }
        self.taint(*first, scope)
    }

    /// The table a value is looked up in: `table` in `table[key]` and in
    /// `table.get(key)`.
    pub(super) fn looked_up_in(&self, n: Node<'t>) -> Option<Node<'t>> {
        match n.kind() {
            K::Subscript => n.child(F::Value),
            K::Call => n
                .child(F::Function)
                .filter(|f| f.kind() == K::Attribute)
                .filter(|f| f.child(F::Attribute).is_some_and(|a| self.text(a) == "get"))
                .and_then(|f| f.child(F::Object)),
            _ => None,
        }
    }

    /// The sinks a computed callee may be: the values of the dict, list or
    /// tuple it is looked up in (`table[key]`, `table.get(key)`), through names.
    fn dispatch_targets(&self, func: Node<'t>, scope: usize, depth: usize) -> Vec<String> {
        if depth > DISPATCH_DEPTH {
            return Vec::new();
        }
        let table = match func.kind() {
            K::Subscript | K::Call => self.looked_up_in(func),
            K::Identifier => {
                let binds = self.lookup(self.text(func), scope, func.start_byte());
                return binds
                    .into_iter()
                    .flatten()
                    .flat_map(|b| match b {
                        Bind::Expr(v, s) => self.dispatch_targets(v, s, depth + 1),
                        _ => Vec::new(),
                    })
                    .collect();
            }
            _ => None,
        };
        let Some(table) = table else {
            return Vec::new();
        };
        self.table_values(table, scope, depth)
            .into_iter()
            .filter_map(|(v, s)| {
                self.reset_budget();
                self.resolve(v, s, 0)
            })
            .filter(|q| sink_of(q, kinds::of(q), false).is_some())
            .collect()
    }

    /// The values a container literal (through its name) holds.
    fn table_values(&self, table: Node<'t>, scope: usize, depth: usize) -> Vec<(Node<'t>, usize)> {
        if depth > DISPATCH_DEPTH {
            return Vec::new();
        }
        match table.kind() {
            K::Dictionary => table
                .children()
                .filter_map(|p| p.child(F::Value))
                .map(|v| (v, scope))
                .collect(),
            K::List | K::Tuple => table.children().map(|v| (v, scope)).collect(),
            K::Identifier => {
                let name = self.text(table);
                let mut out: Vec<(Node<'t>, usize)> = self
                    .lookup(name, scope, table.start_byte())
                    .into_iter()
                    .flatten()
                    .flat_map(|b| match b {
                        Bind::Expr(v, s) => self.table_values(v, s, depth + 1),
                        _ => Vec::new(),
                    })
                    .collect();
                if let Some(stores) = self.mutations.get(name) {
                    out.extend(stores.iter().map(|(s, v)| (*v, *s)));
                }
                out
            }
            _ => Vec::new(),
        }
    }
}
