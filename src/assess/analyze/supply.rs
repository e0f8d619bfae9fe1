//! The software supply chain, judged by what is changed: packages installed
//! over unauthenticated channels (MB432) and then imported (MB931);
//! installed packages' source or the dependency manifests of projects found
//! by walking rewritten (MB932); modification times copied onto system or
//! installed files to hide a change (MB933).

use super::calls::Call;
use super::literal::shorten;
use super::names::SYSTEM_PREFIXES;
use super::needles::{INDEX_OPTION, MANIFEST};
use super::{Analyzer, Bind, Node, F, K};

/// Calls that locate an installed module's file.
const MODULE_LOCATORS: &[&str] = &[
    "importlib.util.find_spec",
    "importlib.machinery.PathFinder.find_spec",
    "inspect.getsourcefile",
    "inspect.getfile",
    "pkgutil.get_loader",
];

/// Files that list a project's dependencies or pip's configuration.
pub(super) const MANIFESTS: &[&str] = &[
    "requirements",
    "pyproject.toml",
    "setup.cfg",
    "pipfile",
    "constraints.txt",
    "pip.conf",
    "pip.ini",
];

/// Widely installed packages, by distribution name: the names a
/// typosquatter's look-alikes imitate.
const POPULAR_PACKAGES: &[&str] = &[
    "requests",
    "urllib3",
    "numpy",
    "pandas",
    "cryptography",
    "python-dateutil",
    "colorama",
    "setuptools",
    "six",
    "pyyaml",
    "boto3",
    "botocore",
    "django",
    "flask",
    "certifi",
    "idna",
    "charset-normalizer",
    "typing-extensions",
    "packaging",
    "wheel",
    "attrs",
    "jinja2",
    "markupsafe",
    "click",
    "pytest",
    "protobuf",
    "grpcio",
    "pillow",
    "scipy",
    "matplotlib",
    "scikit-learn",
    "tensorflow",
    "torch",
    "aiohttp",
    "sqlalchemy",
    "psutil",
    "paramiko",
    "pycryptodome",
    "beautifulsoup4",
    "lxml",
    "selenium",
    "openai",
    "pydantic",
    "fastapi",
    "uvicorn",
    "httpx",
    "pyjwt",
    "redis",
    "pymongo",
    "psycopg2",
    "docker",
    "kubernetes",
    "tqdm",
    "toml",
    "simplejson",
    "python-dotenv",
    "websocket-client",
];

/// Look-alike names a mapping must give before it reads as a swap.
const LOOKALIKES_MIN: usize = 2;

/// Whether `alike` is one edit from the popular package `name` (a letter
/// doubled, dropped, swapped or replaced: `requestss`, `urlib3`,
/// `crypt0graphy`), and not `name` with its last letter dropped (`attrs`
/// to its import name `attr`).
fn lookalike(name: &str, alike: &str) -> bool {
    POPULAR_PACKAGES.contains(&name)
        && !POPULAR_PACKAGES.contains(&alike)
        && alike.len() >= 4
        && alike
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-_.".contains(&b))
        && strsim::damerau_levenshtein(name, alike) == 1
        && !name.starts_with(alike)
}

/// Options that point pip at another package index.
pub(super) const INDEX_OPTIONS: &[&str] = &[
    "--extra-index-url",
    "--index-url",
    "index-url",
    "--trusted-host",
];

/// A pip command installing from an unauthenticated source: TLS checks
/// switched off for a host, or an index, link page or package given by a
/// plain-http URL. The source is returned.
pub(super) fn untrusted_pip_source(words: &[&str]) -> Option<String> {
    let pip = words
        .iter()
        .position(|w| matches!(w.rsplit('/').next(), Some("pip" | "pip3")))?;
    if words.get(pip + 1) != Some(&"install") {
        return None;
    }
    let rest = &words[pip + 2..];
    if let Some(i) = rest.iter().position(|w| *w == "--trusted-host") {
        return Some(format!("--trusted-host {}", rest.get(i + 1).unwrap_or(&"")));
    }
    rest.iter()
        .find(|w| w.starts_with("http://") || w.contains("=http://"))
        .map(|w| w.to_string())
}

/// Whether a path is under one of the system trees.
fn system_path(p: &str) -> bool {
    SYSTEM_PREFIXES
        .iter()
        .any(|s| p == *s || p.strip_prefix(s).is_some_and(|r| r.starts_with('/')))
}

impl<'t> Analyzer<'t> {
    /// What the path argument `t` of a write names when it is an installed
    /// module's own file: `find_spec(m).origin`, `module.__file__`,
    /// `inspect.getsourcefile(module)`.
    fn installed_source(&self, t: Node<'t>, scope: usize, depth: usize) -> Option<String> {
        if depth > 4 {
            return None;
        }
        match t.kind() {
            K::Identifier => {
                let binds = self.lookup(self.text(t), scope, t.start_byte())?;
                binds.iter().rev().find_map(|b| match *b {
                    Bind::Expr(v, s) => self.installed_source(v, s, depth + 1),
                    _ => None,
                })
            }
            K::Attribute => {
                let obj = t.child(F::Object)?;
                match self.text(t.child(F::Attribute)?) {
                    "origin" => self.located(obj, scope),
                    "__file__" => {
                        self.reset_budget();
                        let m = self.resolve(obj, scope, 0)?;
                        (!m.starts_with("builtins")).then(|| format!("{m}.__file__"))
                    }
                    _ => None,
                }
            }
            K::Call => self.located(t, scope),
            _ => None,
        }
    }

    /// A call (or a name bound to one) of a module locator.
    fn located(&self, n: Node<'t>, scope: usize) -> Option<String> {
        let (call, s) = match n.kind() {
            K::Call => (n, scope),
            K::Identifier => {
                let binds = self.lookup(self.text(n), scope, n.start_byte())?;
                binds.iter().rev().find_map(|b| match *b {
                    Bind::Expr(v, s) if v.kind() == K::Call => Some((v, s)),
                    _ => None,
                })?
            }
            _ => return None,
        };
        let q = self.callee(call, s)?;
        MODULE_LOCATORS
            .contains(&&*q)
            .then(|| format!("the file {q} locates"))
    }

    /// Writes into an installed module's file (MB932) and times copied onto
    /// system or installed files (MB933).
    pub(super) fn check_supply_call(&mut self, q: &str, call: &Call<'t>) {
        let writes = match q {
            "builtins.open" | "io.open" => call.arg(1, "mode").is_some_and(|m| {
                self.reset_budget();
                self.fold(m, call.scope, 0)
                    .is_some_and(|m| m.contains(['w', 'a', '+']))
            }),
            "os.utime" | "shutil.copystat" | "shutil.copy2" | "shutil.copyfile" => true,
            _ => false,
        };
        let target_index = usize::from(q.starts_with("shutil."));
        let Some(t) = call.pos.get(target_index).copied().filter(|_| writes) else {
            return;
        };
        let installed = self.installed_source(t, call.scope, 0);
        if let (Some(what), false) = (&installed, q == "os.utime" || q == "shutil.copystat") {
            let detail = format!("{q} {what}: rewrites an installed package's code");
            return self.add("MB932", call.node, detail);
        }
        if q == "os.utime" || q == "shutil.copystat" {
            self.check_timestomp(q, call, t, installed);
        }
    }

    /// `os.utime(target, (st.st_atime, st.st_mtime))` or `copystat(ref,
    /// target)` onto a system file or an installed module.
    fn check_timestomp(
        &mut self,
        q: &str,
        call: &Call<'t>,
        t: Node<'t>,
        installed: Option<String>,
    ) {
        let times = call
            .pos
            .get(1)
            .copied()
            .or_else(|| call.kwarg("times"))
            .or_else(|| call.kwarg("ns"));
        let copied =
            q == "shutil.copystat" || times.is_some_and(|times| self.text(times).contains("st_"));
        if !copied {
            return;
        }
        let target = installed.or_else(|| {
            self.reset_budget();
            self.paths(t, call.scope)
                .into_iter()
                .find(|p| system_path(p))
        });
        if let Some(p) = target {
            let detail = format!("{q} {p}: copies another file's times onto it, hiding a change");
            self.add("MB933", call.node, detail);
        } else if let Some(stat) = times.and_then(|tm| self.own_times(tm, t, call.scope)) {
            let detail = format!(
                "{q} {}: puts back the times the file had before (line {}), so its change goes unnoticed",
                shorten(self.text(t)),
                stat.start_position().row + 1
            );
            self.add("MB933", call.node, detail);
        }
    }

    /// The stat `times` are taken from when it is of the very path `target`
    /// names (`st = os.stat(p)` ... `os.utime(p, (st.st_atime,
    /// st.st_mtime))`), in a script that writes files. Copying a source's
    /// times onto a copy (`cp -p`) names two paths.
    fn own_times(&self, times: Node<'t>, target: Node<'t>, scope: usize) -> Option<Node<'t>> {
        let mut stack = vec![times];
        let mut roots = Vec::new();
        while let Some(n) = stack.pop() {
            if n.kind() == K::Attribute && self.text(n).contains("st_") {
                roots.extend(n.child(F::Object));
            } else {
                stack.extend(n.children());
            }
        }
        let writes = !self.file_store.is_empty()
            || self.signs.scrambled_write.is_some()
            || self.writes_files();
        if !writes {
            return None;
        }
        roots.into_iter().find_map(|r| {
            let binds = self.lookup(self.text(r), scope, r.start_byte());
            let Some([Bind::Expr(v, s)]) = binds else {
                return None;
            };
            let stat = v.kind() == K::Call
                && matches!(self.callee(v, s).as_deref(), Some("os.stat" | "os.lstat"))
                && self
                    .args(v)
                    .0
                    .first()
                    .is_some_and(|a| self.text(*a) == self.text(target));
            stat.then_some(v)
        })
    }

    /// Does any call open a file for writing?
    fn writes_files(&self) -> bool {
        self.calls.iter().any(|c| {
            let (pos, _) = self.args(c.node);
            self.callee(c.node, c.scope).as_deref() == Some("builtins.open")
                && pos
                    .get(1)
                    .is_some_and(|m| self.const_text(*m, c.scope).contains(['w', 'a']))
        })
    }

    /// Projects found by walking whose dependency manifests are written by
    /// a script that carries an index option (MB932); untrusted installs
    /// followed by an import of a computed module name (MB931).
    pub(super) fn check_supply_chain(&mut self) {
        self.check_manifest_poison();
        self.check_lookalike_swap();
        let install = self.findings.iter().find(|f| f.rule == "MB432");
        let import = self.findings.iter().find(|f| f.rule == "MB411");
        if let (Some(i), Some(m)) = (install, import) {
            let detail = format!(
                "installs a package from an unauthenticated source (line {}) and imports a module by computed name (line {})",
                i.row + 1,
                m.row + 1
            );
            self.add_at("MB931", (i.row, i.col), detail);
        }
    }

    /// A literal mapping from popular packages to names one letter off
    /// (`{"requests": "requestss", "urllib3": "urlib3"}`), in a script that
    /// names a dependency manifest or installs: dependencies swapped for
    /// typosquatted look-alikes (MB932). Maps from import names to
    /// distribution names (`yaml` to `pyyaml`) are more than one edit apart.
    fn check_lookalike_swap(&mut self) {
        let mut swaps: Vec<(Node<'t>, String)> = Vec::new();
        for &s in &self.strings {
            let pair = s.parent().filter(|p| p.kind() == K::Pair);
            let Some(value) = pair
                .filter(|p| p.child(F::Key) == Some(s))
                .and_then(|p| p.child(F::Value))
            else {
                continue;
            };
            let (Some(k), Some(v)) = (self.string_value(s), self.string_value(value)) else {
                continue;
            };
            if lookalike(&k.to_ascii_lowercase(), &v.to_ascii_lowercase()) {
                swaps.push((s, format!("{k} -> {v}")));
            }
        }
        if swaps.len() < LOOKALIKES_MIN {
            return;
        }
        let lowered = self.lowered();
        let installs = lowered.found.iter().any(|f| f & MANIFEST != 0)
            || lowered.texts.iter().any(|(_, t)| t == "install");
        if installs {
            let shown: Vec<&str> = swaps.iter().map(|(_, d)| d.as_str()).take(3).collect();
            let detail = format!(
                "popular packages mapped to look-alike names ({}) in a script that names dependency manifests or installs",
                shown.join(", ")
            );
            self.add("MB932", swaps[0].0, detail);
        }
    }

    fn check_manifest_poison(&mut self) {
        let Some(walk) = self.signs.enumerates() else {
            return;
        };
        // The writes first: without one nothing is poisoned, and no literal
        // needs lower-casing.
        let writes = self
            .calls
            .iter()
            .any(|c| matches!(c.method, Some("write_text" | "write" | "writelines")));
        if !writes {
            return;
        }
        let (mut option, mut manifest) = (None, None);
        // A decoded literal's lower-cased form is already made (`lowered`,
        // in the same order): it was lower-cased again here, one copy each.
        // Its needle bits tell which of the two lists it holds: eleven
        // searches of every literal before.
        let lowered = self.lowered();
        let forms = lowered.texts.iter().zip(&lowered.found);
        for ((s, v), ((_, l), found)) in self.literals().zip(forms) {
            let Some(v) = v else {
                continue;
            };
            if found & INDEX_OPTION != 0 && l.contains("://") {
                option.get_or_insert((s, v.to_string()));
            } else if found & MANIFEST != 0 {
                manifest.get_or_insert(s);
            }
        }
        if let (Some((at, v)), Some(m)) = (option, manifest) {
            let detail = format!(
                "walks files (line {}), names dependency manifests (line {}) and writes files with the index option {:?}",
                walk.start_position().row + 1,
                m.start_position().row + 1,
                shorten(&v)
            );
            self.add("MB932", at, detail);
        }
    }
}
