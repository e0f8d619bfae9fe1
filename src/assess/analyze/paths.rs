//! Abstract path values: what a path expression may name, when the folder
//! cannot give one exact string. Unknown parts become `*`, the home
//! directory `~`, a directory tree walked or globbed `**`; the script's own
//! temporary files and directories are `<tmp:N>` (N: where they were made),
//! site-packages is `<site-packages>` and the script itself `<self>`.
//! Values flow through bindings, loop targets over literal lists, parameters
//! (their defaults and what callers pass), returns, `os.path.join`, `/`,
//! f-strings and the usual path methods. The taxonomy that judges the values
//! is in [`super::taxonomy`].

use ruff_python_ast::Operator;

use super::calls::kwarg;
use super::fold::{text_decoder, Decode};
use super::{Analyzer, Bind, Node, Op, Part, EVAL_DEPTH, F, K};

/// Steps one path query may take: path expressions are short chains, and
/// the checks ask for many of them.
const PATH_BUDGET: u32 = 600;

/// Values kept per expression.
const MAX_VALUES: usize = 12;
/// Longest value built.
const MAX_LEN: usize = 1024;

/// Calls that name a path made of their arguments.
const JOINERS: &[&str] = &[
    "os.path.join",
    "pathlib.Path",
    "pathlib.PosixPath",
    "pathlib.PurePath",
    "pathlib.PurePosixPath",
];

/// Calls (and path methods) whose value is the path they are given.
const SAME_PATH: &[&str] = &[
    "os.path.expanduser",
    "os.path.expandvars",
    "os.path.abspath",
    "os.path.realpath",
    "os.path.normpath",
    "os.fspath",
    "os.fsdecode",
    "os.fsencode",
    "builtins.str",
    "builtins.sorted",
    "builtins.list",
    "builtins.set",
    "builtins.tuple",
    "builtins.reversed",
    "glob.glob",
    "glob.iglob",
    "shlex.quote",
    // A random pick of paths is some of those paths.
    "random.sample",
    "random.choice",
    "random.choices",
];

const SAME_PATH_METHODS: &[&str] = &[
    "expanduser",
    "resolve",
    "absolute",
    "as_posix",
    "strip",
    "rstrip",
    "lstrip",
    "__fspath__",
    "decode",
    // `d = stack.pop()` in a walk kept by hand (a list or deque of the
    // directories still to visit): one of the stack's paths, the root
    // pushed first or what the walk pushes.
    "pop",
    "popleft",
];

/// Calls that make a temporary file or directory of the script's own.
const TEMP_MAKERS: &[&str] = &[
    "tempfile.mkdtemp",
    "tempfile.mkstemp",
    "tempfile.TemporaryDirectory",
    "tempfile.NamedTemporaryFile",
    "tempfile.TemporaryFile",
    "tempfile.SpooledTemporaryFile",
];

/// The place a library function that takes no path names: the home, the
/// working and temporary directories, the interpreter's site directories.
fn known_place(q: &str) -> Option<String> {
    let place = match q {
        "pathlib.Path.home" => "~",
        "os.getcwd" | "pathlib.Path.cwd" => ".",
        "tempfile.gettempdir" => "/tmp",
        "site.getsitepackages"
        | "site.getusersitepackages"
        | "sysconfig.get_paths"
        | "sysconfig.get_path" => "<site-packages>",
        _ => return None,
    };
    Some(place.into())
}

fn capped(mut v: Vec<String>) -> Vec<String> {
    v.retain(|s| s.len() <= MAX_LEN);
    v.dedup();
    v.truncate(MAX_VALUES);
    v
}

/// Every combination of `a` and `b` joined by `f`; an unknown side is `*`.
fn product(a: &[String], b: &[String], f: impl Fn(&str, &str) -> String) -> Vec<String> {
    let mut out = Vec::new();
    for x in side(a) {
        for y in side(b) {
            if out.len() >= MAX_VALUES {
                return out;
            }
            out.push(f(x, y));
        }
    }
    out
}

/// `out` followed by `more`: `more` itself when `out` is empty (a name's
/// values are most often its one binding's, which were moved into a new
/// vector).
fn append(out: &mut Vec<String>, more: Vec<String>) {
    if out.is_empty() {
        *out = more;
    } else {
        out.extend(more);
    }
}

/// The values of one side of a [`product`], an unknown side being a
/// borrowed `*` (it was a `String` made at every product).
fn side(v: &[String]) -> impl Iterator<Item = &str> + Clone {
    let star = v.is_empty().then_some("*");
    v.iter().map(String::as_str).chain(star)
}

/// `join_path(&[a, b])`, without copying both into a vector first (and
/// the first again into the result): paths are joined at every `/`,
/// `os.path.join` and glob the evaluator meets.
fn join2(a: &str, b: &str) -> String {
    if b.starts_with('/') || a.is_empty() {
        return b.to_string();
    }
    let mut out = String::with_capacity(a.len() + 1 + b.len());
    out.push_str(a);
    if !a.ends_with('/') {
        out.push('/');
    }
    out.push_str(b);
    out
}

/// Each of `values` decoded, those that are not valid text left out.
fn decode_each(values: &[String], decode: Decode) -> Vec<String> {
    values
        .iter()
        .filter_map(|v| String::from_utf8(decode(v)?).ok())
        .collect()
}

fn dirname(p: &str) -> String {
    match p.trim_end_matches('/').rsplit_once('/') {
        Some(("", _)) => "/".into(),
        Some((d, _)) => d.into(),
        None => ".".into(),
    }
}

/// `a/b.txt` with its last extension replaced by `suffix`. A leading dot
/// is no extension (`.cache-1` becomes `.cache-1.part`), as in pathlib.
fn with_suffix(p: &str, suffix: &str) -> String {
    let (dir, name) = p.rsplit_once('/').map_or(("", p), |(d, n)| (d, n));
    let stem = name
        .rsplit_once('.')
        .filter(|(s, _)| !s.is_empty())
        .map_or(name, |(s, _)| s);
    let name = format!("{stem}{suffix}");
    if dir.is_empty() {
        name
    } else {
        format!("{dir}/{name}")
    }
}

/// A `%`-format (`%d`, `%s`, `%05x`...) with its conversions filled in
/// order by `values` (those past the end, and named ones, `*`).
fn percent_fill(format: &str, values: &[String]) -> String {
    let mut next = values.iter();
    let mut out = String::with_capacity(format.len());
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        if chars.peek() == Some(&'%') {
            chars.next();
            out.push('%');
            continue;
        }
        let named = chars.next_if_eq(&'(').is_some();
        if named {
            while chars.next().is_some_and(|k| k != ')') {}
        }
        while chars.next_if(|k| !k.is_ascii_alphabetic()).is_some() {}
        chars.next();
        match next.next().filter(|_| !named) {
            Some(v) => out.push_str(v),
            None => out.push('*'),
        }
    }
    out
}

impl<'t> Analyzer<'t> {
    /// The values a path expression may have (exact or abstract).
    pub(super) fn paths(&self, n: Node<'t>, scope: usize) -> Vec<String> {
        self.budget.set(PATH_BUDGET);
        self.path_values(n, scope)
    }

    /// [`Self::paths`] within the step budget left.
    pub(super) fn path_values(&self, n: Node<'t>, scope: usize) -> Vec<String> {
        capped(self.pv(n, scope, 0))
    }

    pub(super) fn pv(&self, n: Node<'t>, scope: usize, depth: usize) -> Vec<String> {
        if depth > EVAL_DEPTH || !self.tick() {
            return Vec::new();
        }
        let d = depth + 1;
        let v = match n.kind() {
            K::String => self.pv_string(n, scope, d),
            K::ConcatenatedString => n.children().fold(vec![String::new()], |acc, k| {
                product(&acc, &self.pv(k, scope, d), |a, b| format!("{a}{b}"))
            }),
            K::BinaryOperator => {
                let (Some(l), Some(r)) = (n.child(F::Left), n.child(F::Right)) else {
                    return Vec::new();
                };
                // `paths_a + [p, q]` joins two lists of paths, not two strings.
                let lists = [l, r]
                    .iter()
                    .any(|k| matches!(k.kind(), K::List | K::Tuple));
                let (l, r) = (self.pv(l, scope, d), self.pv(r, scope, d));
                match n.operator() {
                    Op::Bin(Operator::Add) if lists => l.into_iter().chain(r).collect(),
                    Op::Bin(Operator::Add) => product(&l, &r, |a, b| format!("{a}{b}")),
                    Op::Bin(Operator::Div) => product(&l, &r, join2),
                    Op::Bin(Operator::Mod) => self.pv_percent(n, &l, scope, d),
                    _ => Vec::new(),
                }
            }
            K::Identifier => self.pv_name(n, scope, d),
            K::Attribute => self.pv_attribute(n, scope, d),
            K::Call => self.pv_call(n, scope, d),
            K::Subscript => self.pv_subscript(n, scope, d),
            // `os.environ.get("USERPROFILE") or os.path.expanduser("~")`:
            // either side may be the value.
            K::List
            | K::Tuple
            | K::Set
            | K::ExpressionList
            | K::ConditionalExpression
            | K::BooleanOperator => n.children().flat_map(|k| self.pv(k, scope, d)).collect(),
            K::ListComprehension | K::GeneratorExpression | K::SetComprehension => {
                self.pv_comprehension(n, scope, d)
            }
            K::ListSplat | K::Await => n
                .nth_child(0)
                .map(|k| self.pv(k, scope, d))
                .unwrap_or_default(),
            _ => Vec::new(),
        };
        capped(v)
    }

    /// `'nohup "%s" "%s" &' % (sys.executable, path)`: each format `l`
    /// may be, each conversion filled by the first value of its item.
    fn pv_percent(&self, n: Node<'t>, l: &[String], scope: usize, d: usize) -> Vec<String> {
        let Some(items) = n.child(F::Right) else {
            return Vec::new();
        };
        let items: Vec<Node<'t>> = match items.kind() {
            K::Tuple => items.children().collect(),
            _ => vec![items],
        };
        let values: Vec<String> = items
            .iter()
            .map(|k| {
                self.pv(*k, scope, d)
                    .into_iter()
                    .next()
                    .unwrap_or_else(|| "*".into())
            })
            .collect();
        l.iter().map(|f| percent_fill(f, &values)).collect()
    }

    /// A literal, or an f-string whose interpolations take their values.
    fn pv_string(&self, n: Node<'t>, scope: usize, depth: usize) -> Vec<String> {
        if let Some(v) = self.string_value(n) {
            return vec![v];
        }
        let Some(pieces) = self.template_pieces(n) else {
            return Vec::new();
        };
        let mut acc = vec![String::new()];
        for (lit, part) in pieces {
            acc = product(&acc, &[lit.to_string()], |a, b| format!("{a}{b}"));
            let Some(part) = part else {
                break;
            };
            let vals = part
                .child(F::Expression)
                .map(|e| self.pv(e, scope, depth))
                .unwrap_or_default();
            acc = product(&acc, &vals, |a, b| format!("{a}{b}"));
        }
        acc
    }

    fn pv_name(&self, n: Node<'t>, scope: usize, depth: usize) -> Vec<String> {
        let name = self.text(n);
        let Some(binds) = self.lookup(name, scope, n.start_byte()) else {
            return if name == "__file__" {
                vec!["<self>".into()]
            } else {
                Vec::new()
            };
        };
        let mut out = Vec::new();
        for b in binds {
            match b {
                Bind::Expr(v, s) => append(&mut out, self.pv(v, s, depth)),
                Bind::Param { param, func, index } => {
                    if let Some(default) = param.child(F::Value) {
                        append(&mut out, self.pv(default, func, depth));
                    }
                    for (arg, s) in self.passed(func, index, name) {
                        append(&mut out, self.pv(arg, s, depth));
                    }
                }
                Bind::Part { of, scope: s, how } => {
                    append(&mut out, self.pv_part(of, s, how, depth));
                }
                _ => {}
            }
        }
        // Paths put into a list without rebinding it (`found.append(p)`,
        // `found += [...]`) are its values too.
        for (s, v) in self.mutations_near(name, scope) {
            out.extend(
                v.children()
                    .filter(|_| v.kind() == K::ArgumentList)
                    .flat_map(|a| self.pv(a, s, depth)),
            );
            if v.kind() != K::ArgumentList {
                append(&mut out, self.pv(v, s, depth));
            }
        }
        out
    }

    /// `[p for p in found if ..]`: a filter keeps elements of what it
    /// iterates, whose paths are those. Its variable is looked up before the
    /// clause that binds it (the element is written first), so a later
    /// loop reusing the name (`for p in kept:`) would loop back on itself.
    fn pv_comprehension(&self, n: Node<'t>, scope: usize, depth: usize) -> Vec<String> {
        let Some(body) = n.child(F::Body) else {
            return Vec::new();
        };
        let own = n
            .children()
            .filter(|c| c.kind() == K::ForInClause)
            .find_map(|c| {
                let target = c.child(F::Left)?;
                (body.kind() == K::Identifier
                    && target.kind() == K::Identifier
                    && self.text(target) == self.text(body))
                .then(|| c.child(F::Right))
                .flatten()
            });
        match own {
            Some(iter) => self.pv_part(iter, scope, Part::Each(None), depth),
            None => self.pv(body, scope, depth),
        }
    }

    /// Loop targets: the elements of what is iterated (a walk's directories
    /// are the tree under its root); `with tempfile...() as d`.
    fn pv_part(&self, of: Node<'t>, scope: usize, how: Part, depth: usize) -> Vec<String> {
        let q = (of.kind() == K::Call)
            .then(|| self.callee(of, scope))
            .flatten();
        match (q.as_deref(), how) {
            (Some("os.walk"), Part::Each(Some(0))) => self.first_arg_paths(of, scope, depth, "/**"),
            (Some("os.walk"), _) => vec!["*".into()],
            (Some("os.listdir"), _) => vec!["*".into()],
            (Some("os.scandir"), _) => self.first_arg_paths(of, scope, depth, "/*"),
            (Some(q), _) if TEMP_MAKERS.contains(&q) => vec![format!("<tmp:{}>", of.start_byte())],
            (Some("builtins.enumerate" | "builtins.zip"), _) => Vec::new(),
            // The characters of a string are no paths of their own.
            (_, Part::Each(_)) if of.kind() == K::String => vec!["*".into()],
            (None, Part::Each(Some(1))) if self.method_name(of) == Some("items") => {
                self.dict_value_paths(of, scope, depth)
            }
            (_, Part::Each(_)) => self.pv(of, scope, depth),
            (_, Part::Unpacked(i)) => self.pv_element(of, scope, i, depth),
            _ => Vec::new(),
        }
    }

    /// Position `i` of the tuples `of` may be: a tuple or list literal, a
    /// name bound to one, what the script's own function returns, or an
    /// entry of a dict literal of them
    /// (`name, target = PACKAGES[platform.system()]`: any entry's second
    /// item when nothing tells the key), so a path kept in a table of
    /// per-platform pairs is still that path once unpacked.
    fn pv_element(&self, of: Node<'t>, scope: usize, i: usize, depth: usize) -> Vec<String> {
        if depth > EVAL_DEPTH || !self.tick() {
            return Vec::new();
        }
        let d = depth + 1;
        match of.kind() {
            // `return url, path` is a tuple without parentheses.
            k if k.is_sequence() => of
                .children()
                .nth(i)
                .map(|v| self.pv(v, scope, d))
                .unwrap_or_default(),
            K::Identifier => match self.lookup(self.text(of), scope, of.start_byte()) {
                Some([Bind::Expr(v, s)]) => self.pv_element(v, s, i, d),
                _ => Vec::new(),
            },
            // `dst, refresh = store()`: what the script's own function returns.
            K::Call => {
                let (def, values) = self.own_returns(of, scope);
                let mut out = Vec::new();
                for v in values {
                    append(&mut out, self.pv_element(v, def, i, d));
                }
                out
            }
            K::Subscript => {
                let (Some(table), Some(key)) = (of.child(F::Value), of.child(F::Subscript)) else {
                    return Vec::new();
                };
                let keys = self.key_choices(key, scope, d);
                // A parameter's key is each caller's (see `pv_looked_up`).
                if keys.is_empty() && self.is_parameter(key, scope) {
                    return Vec::new();
                }
                let dicts = match self.dict_literal(table, scope) {
                    Some(found) => vec![found],
                    None => self.dicts_of(table, scope, d),
                };
                dicts
                    .into_iter()
                    .flat_map(|(dict, s)| self.dict_entries(dict, &keys, s))
                    .flat_map(|(v, s)| self.pv_element(v, s, i, d))
                    .collect()
            }
            _ => Vec::new(),
        }
    }

    /// The values of the literal dicts whose `items()` a loop unpacks
    /// (`for tag, src in SOURCES.items()`, `for app, paths in
    /// locations().items()`: see `dicts_of`).
    fn dict_value_paths(&self, items: Node<'t>, scope: usize, depth: usize) -> Vec<String> {
        let Some(obj) = self.receiver(items) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (dict, s) in self.dicts_of(obj, scope, depth) {
            for v in dict.children().filter_map(|pair| pair.child(F::Value)) {
                append(&mut out, self.pv(v, s, depth));
            }
        }
        out
    }

    fn first_arg_paths(
        &self,
        call: Node<'t>,
        scope: usize,
        depth: usize,
        suffix: &str,
    ) -> Vec<String> {
        let (pos, _) = self.args(call);
        let base = pos
            .first()
            .map(|a| self.pv(*a, scope, depth))
            .unwrap_or_default();
        product(&base, &[suffix.to_string()], |a, b| {
            format!("{}{b}", a.trim_end_matches('/'))
        })
    }

    fn pv_attribute(&self, n: Node<'t>, scope: usize, depth: usize) -> Vec<String> {
        match self.resolve(n, scope, depth).as_deref() {
            Some("os.sep") => return vec!["/".into()],
            Some("os.curdir") => return vec![".".into()],
            Some("site.USER_SITE") => return vec!["<site-packages>".into()],
            Some("sys.executable") => return vec!["<python>".into()],
            _ => {}
        }
        let (Some(obj), Some(attr)) = (n.child(F::Object), n.child(F::Attribute)) else {
            return Vec::new();
        };
        match self.text(attr) {
            "name" | "path" => self.pv(obj, scope, depth),
            "parent" => self
                .pv(obj, scope, depth)
                .iter()
                .map(|p| dirname(p))
                .collect(),
            a => self.pv_instance_attr(obj, a, scope, depth),
        }
    }

    /// `policy.roots` on an instance of the script's own class (made
    /// here, or handed in by a caller), `self.home` in its methods: what
    /// its methods store there (`self.roots = roots or ROOTS`), so a tree
    /// kept in a settings object is still that tree. Through `self`, only
    /// values with a known start: a file object's own path built from an
    /// unknown base (`self._datfile = base + ".dat"`) would read as files
    /// found by searching.
    fn pv_instance_attr(
        &self,
        obj: Node<'t>,
        attr: &str,
        scope: usize,
        depth: usize,
    ) -> Vec<String> {
        if obj.kind() != K::Identifier {
            return Vec::new();
        }
        let inside = self.text(obj) == "self";
        let class = match inside {
            true => self.enclosing_class_scope(scope),
            false => self.instance_class(obj, scope),
        };
        if !inside && class.is_none() {
            return Vec::new();
        }
        let stores = self.attr_stores.get(attr).map(Vec::as_slice);
        let mut out: Vec<String> = stores
            .unwrap_or_default()
            .iter()
            .flat_map(|&(v, s)| self.pv(v, s, depth))
            .filter(|p| !(inside && p.starts_with('*')))
            .collect();
        // What the class body gives it (`root = "/srv"`, a dataclass
        // field's default): an instance that never sets it reads that.
        for (v, s) in class
            .map(|c| self.class_values(c, attr))
            .unwrap_or_default()
        {
            append(&mut out, self.pv(v, s, depth));
        }
        out
    }

    /// The values the class body `class` binds to `attr`.
    fn class_values(&self, class: usize, attr: &str) -> Vec<(Node<'t>, usize)> {
        let list = self
            .binds
            .get(attr)
            .and_then(|all| super::resolve::scope_binds(all, class));
        list.unwrap_or_default()
            .iter()
            .filter_map(|b| match b.bind {
                Bind::Expr(v, s) => Some((v, s)),
                _ => None,
            })
            .collect()
    }

    fn pv_subscript(&self, n: Node<'t>, scope: usize, depth: usize) -> Vec<String> {
        let Some(base) = n.child(F::Value) else {
            return Vec::new();
        };
        let q = self.resolve(base, scope, depth);
        let key = n.child(F::Subscript).and_then(|k| {
            self.fold(k, scope, depth)
                .or_else(|| self.fold_int(k, scope, depth).map(|i| i.to_string()))
        });
        match (q.as_deref(), key.as_deref()) {
            (Some("os.environ"), Some(k)) => return env_path(k).into_iter().collect(),
            (Some("sys.argv"), Some("0")) => return vec!["<self>".into()],
            _ => {}
        }
        if base.kind() == K::Call {
            let callee = self.callee(base, scope);
            if callee.as_deref() == Some("os.path.splitext") {
                let (pos, _) = self.args(base);
                let p = pos
                    .first()
                    .map(|a| self.pv(*a, scope, depth))
                    .unwrap_or_default();
                return p.iter().map(|p| with_suffix(p, "")).collect();
            }
        }
        // `"emoh/"[::-1]`: each value the base may have, reversed.
        if self.reversed_by_slice(n) {
            let values = self.pv(base, scope, depth);
            return values.iter().map(|v| v.chars().rev().collect()).collect();
        }
        let key = n.child(F::Subscript);
        if let Some(v) = self.pv_looked_up(base, key, scope, depth) {
            return v;
        }
        self.pv(base, scope, depth)
    }

    /// `TABLE[key]` or `TABLE.get(key)` of the dict literals `table` may be:
    /// the entries the key may name, or, when nothing tells the key
    /// (`ROOTS[platform.system()]`), any entry, since the lookup may give
    /// any of them. `None` when `table` is no dict literal.
    fn pv_looked_up(
        &self,
        table: Node<'t>,
        key: Option<Node<'t>>,
        scope: usize,
        depth: usize,
    ) -> Option<Vec<String>> {
        let dicts = match self.dict_literal(table, scope) {
            Some(found) => vec![found],
            None => self.dicts_of(table, scope, depth),
        };
        if dicts.is_empty() {
            return None;
        }
        let keys = key
            .map(|k| self.key_choices(k, scope, depth))
            .unwrap_or_default();
        // A parameter's key is what each call passes (`def _b(k): TABLE[k]`
        // called as `_b("ep")`), which the folder reads per call: every
        // entry would be a guess where the call says which.
        if keys.is_empty() && key.is_some_and(|k| self.is_parameter(k, scope)) {
            return None;
        }
        let values = dicts
            .into_iter()
            .flat_map(|(dict, s)| self.pv_dict_entry(dict, s, &keys, depth))
            .collect();
        Some(values)
    }

    /// The dict literals a settings value may be: a parameter's default and
    /// what its callers pass (`def housekeeping(cfg)` called with `{**hk,
    /// "targets": [t]}`), and an entry of another one (`hk =
    /// policy["housekeeping"]`), so a tree named deep in a configuration
    /// handed from function to function is still that tree.
    fn dicts_of(&self, n: Node<'t>, scope: usize, depth: usize) -> Vec<(Node<'t>, usize)> {
        if depth > EVAL_DEPTH || !self.tick() {
            return Vec::new();
        }
        let d = depth + 1;
        match n.kind() {
            K::Dictionary => vec![(n, scope)],
            K::Identifier => match self.lookup(self.text(n), scope, n.start_byte()) {
                Some([Bind::Expr(v, s)]) => self.dicts_of(v, s, d),
                Some([Bind::Param { param, func, index }]) => {
                    let name = self.text(param.child(F::Name).unwrap_or(param));
                    let outer = self.scopes.get(func).and_then(|f| f.parent);
                    let default = param.child(F::Value).zip(outer);
                    let passed = self.passed(func, index, name);
                    default
                        .into_iter()
                        .chain(passed)
                        .flat_map(|(a, s)| self.dicts_of(a, s, d))
                        .collect()
                }
                _ => Vec::new(),
            },
            // `locations().items()`: what the script's own function returns.
            K::Call => {
                let (def, values) = self.own_returns(n, scope);
                values
                    .into_iter()
                    .flat_map(|v| self.dicts_of(v, def, d))
                    .collect()
            }
            K::Subscript => {
                let Some(k) = n.child(F::Subscript) else {
                    return Vec::new();
                };
                let keys = self.key_choices(k, scope, d);
                let Some(base) = n.child(F::Value).filter(|_| !keys.is_empty()) else {
                    return Vec::new();
                };
                self.dicts_of(base, scope, d)
                    .into_iter()
                    .flat_map(|(dict, s)| self.dict_entries(dict, &keys, s))
                    .flat_map(|(v, s)| self.dicts_of(v, s, d))
                    .collect()
            }
            _ => Vec::new(),
        }
    }

    /// The values a dict literal keeps under any of `keys`.
    fn dict_entries(
        &self,
        dict: Node<'t>,
        keys: &[String],
        scope: usize,
    ) -> Vec<(Node<'t>, usize)> {
        dict.children()
            .filter(|p| p.kind() == K::Pair)
            .filter(|p| {
                keys.is_empty()
                    || p.child(F::Key)
                        .and_then(|c| self.fold(c, scope, 0))
                        .is_some_and(|v| keys.contains(&v))
            })
            .filter_map(|p| Some((p.child(F::Value)?, scope)))
            .collect()
    }

    /// Whether `n` is a name bound to a function's parameter.
    fn is_parameter(&self, n: Node<'t>, scope: usize) -> bool {
        n.kind() == K::Identifier
            && matches!(
                self.lookup(self.text(n), scope, n.start_byte()),
                Some([.., Bind::Param { .. }])
            )
    }

    /// The constants a key may be: `"darwin" if mac else "linux"`, itself
    /// or bound to a name. A key nothing tells (`sys.platform`) gives none.
    fn key_choices(&self, k: Node<'t>, scope: usize, depth: usize) -> Vec<String> {
        let (k, scope) = match k.kind() {
            K::Identifier => match self
                .lookup(self.text(k), scope, k.start_byte())
                .and_then(|b| b.last().copied())
            {
                Some(Bind::Expr(v, s)) => (v, s),
                _ => return Vec::new(),
            },
            _ => (k, scope),
        };
        if k.kind() != K::ConditionalExpression {
            // One constant key, as the comment above says; a constant key
            // used to give nothing.
            return self.fold(k, scope, depth).into_iter().collect();
        }
        k.children()
            .filter_map(|c| self.fold(c, scope, depth))
            .collect()
    }

    /// `TABLE[key]` of a dict literal: the entries the key may name (one
    /// constant, or each branch of `a if test else b`; every entry when
    /// `keys` is empty), rather than nothing, which later joins would widen
    /// to `*`.
    fn pv_dict_entry(
        &self,
        dict: Node<'t>,
        scope: usize,
        keys: &[String],
        depth: usize,
    ) -> Vec<String> {
        self.dict_entries(dict, keys, scope)
            .into_iter()
            .flat_map(|(v, s)| self.pv(v, s, depth))
            .collect()
    }

    fn pv_call(&self, n: Node<'t>, scope: usize, depth: usize) -> Vec<String> {
        let Some(func) = n.child(F::Function) else {
            return Vec::new();
        };
        let (pos, kw) = self.args(n);
        let arg = |i: usize| {
            pos.get(i)
                .map(|a| self.pv(*a, scope, depth))
                .unwrap_or_default()
        };
        if let Some(q) = self.callee(n, scope) {
            if let Some(place) = known_place(&q) {
                return vec![place];
            }
            // `b64decode(s)`, `bytes.fromhex(s)` of a parameter or loop
            // variable: each value it takes, decoded (a folded one is
            // decoded below).
            if let Some(decode) = text_decoder(&q) {
                return decode_each(&arg(0), decode);
            }
            match &*q {
                q if JOINERS.contains(&q) => return self.pv_join(n, pos, scope, depth),
                q if SAME_PATH.contains(&q) => return arg(0),
                // `filter(pred, paths)`: the paths are the second argument.
                "builtins.filter" => return arg(1),
                // `map(Path, roots)`: each root made a path is that root.
                "builtins.map" if self.maps_same_path(pos.first(), scope) => return arg(1),
                // A dataclass field: its default, or what its factory makes.
                "dataclasses.field" => return self.pv_field_default(kw, depth),
                "os.path.dirname" => return arg(0).iter().map(|p| dirname(p)).collect(),
                "os.path.basename" => return vec!["*".into()],
                "builtins.bytes" | "builtins.bytearray" => {
                    let xored = pos.first().map(|a| self.pv_xor(*a, scope, depth));
                    if let Some(v @ [_, ..]) = xored.as_deref() {
                        return v.to_vec();
                    }
                }
                q if TEMP_MAKERS.contains(&q) => return vec![format!("<tmp:{}>", n.start_byte())],
                "os.getenv" | "os.environ.get" => {
                    let key = pos.first().and_then(|k| self.fold(*k, scope, depth));
                    let mut out: Vec<String> =
                        key.as_deref().and_then(env_path).into_iter().collect();
                    out.extend(arg(1));
                    return out;
                }
                _ => {}
            }
        }
        if let Some(v) = self.pv_called_lambdas(func, scope, depth) {
            return v;
        }
        if let Some((def_scope, _)) = self.callee_def(func, scope) {
            return self.returned_paths(def_scope, depth);
        }
        if let picked @ [_, ..] = &self.picked_functions(func, scope)[..] {
            return picked
                .iter()
                .flat_map(|&d| self.returned_paths(d, depth))
                .collect();
        }
        let v = self.pv_method(func, pos, scope, depth);
        if !v.is_empty() {
            return v;
        }
        // `"".join(map(chr, codes))`, `b64decode(s).decode()`: a disguised
        // constant is its value, here as where it is folded.
        self.fold(n, scope, depth).into_iter().collect()
    }

    /// Whether `f` (a function mapped over paths) keeps each path: a
    /// path constructor or a call that returns the path it is given.
    fn maps_same_path(&self, f: Option<&Node<'t>>, scope: usize) -> bool {
        let q = f.and_then(|f| self.resolve(*f, scope, 0));
        q.is_some_and(|q| SAME_PATH.contains(&&*q) || JOINERS.contains(&&*q))
    }

    /// `field(default=...)`, `field(default_factory=lambda: [...])`.
    fn pv_field_default(&self, kw: &[(&'t str, Node<'t>)], depth: usize) -> Vec<String> {
        if let Some(v) = kwarg(kw, "default") {
            return self.pv(v, self.scope_of(v), depth);
        }
        let factory = kwarg(kw, "default_factory").filter(|f| f.kind() == K::Lambda);
        match factory.and_then(|f| f.child(F::Body)) {
            Some(body) => self.pv(body, self.scope_of(body), depth),
            None => Vec::new(),
        }
    }

    /// What the script's own function that `call` calls returns, with the
    /// scope of its body: nothing when the callee is no such function.
    pub(super) fn own_returns(&self, call: Node<'t>, scope: usize) -> (usize, Vec<Node<'t>>) {
        let func = call.child(F::Function);
        match func.and_then(|f| self.own_function_scope(f, scope)) {
            Some(def) => (def, self.returns.get(&def).cloned().unwrap_or_default()),
            None => (scope, Vec::new()),
        }
    }

    /// The paths the function whose body opens `def_scope` returns or yields.
    fn returned_paths(&self, def_scope: usize, depth: usize) -> Vec<String> {
        let values = self.returns.get(&def_scope).cloned().unwrap_or_default();
        values
            .into_iter()
            .flat_map(|v| self.pv(v, def_scope, depth))
            .collect()
    }

    /// `for get in [lambda: "~", lambda: "/srv"]: get()`: a loop variable
    /// taking lambdas (or functions naming a known place) from a list,
    /// called, is each one's value. Paths kept behind lambdas are paths
    /// all the same.
    fn pv_called_lambdas(&self, func: Node<'t>, scope: usize, depth: usize) -> Option<Vec<String>> {
        let (list, s) = self.looped_sequence(func, scope)?;
        let mut out = Vec::new();
        for f in list.children() {
            match f.kind() {
                K::Lambda => {
                    let Some(body) = f.child(F::Body) else {
                        continue;
                    };
                    out.extend(self.pv(body, self.scope_of(body), depth));
                }
                // `site.getsitepackages` named, not called, beside them.
                _ => out.extend(self.resolve(f, s, depth).and_then(|q| known_place(&q))),
            }
        }
        (!out.is_empty()).then_some(out)
    }

    /// Path methods: `p.with_suffix(s)`, `p.rglob(pat)`, `p.joinpath(...)`.
    fn pv_method(
        &self,
        func: Node<'t>,
        pos: &[Node<'t>],
        scope: usize,
        depth: usize,
    ) -> Vec<String> {
        if func.kind() != K::Attribute {
            return Vec::new();
        }
        let (Some(obj), Some(m)) = (func.child(F::Object), func.child(F::Attribute)) else {
            return Vec::new();
        };
        let m = self.text(m);
        let arg = |i: usize| {
            pos.get(i)
                .map(|a| self.pv(*a, scope, depth))
                .unwrap_or_default()
        };
        let base = || self.pv(obj, scope, depth);
        // `sysconfig.get_paths().get("purelib")`: one of the site paths.
        let site_paths = || {
            obj.kind() == K::Call
                && self.callee(obj, scope).as_deref() == Some("sysconfig.get_paths")
        };
        match m {
            "get" if site_paths() => vec!["<site-packages>".into()],
            // `path = q.get()` in a worker: what the script puts on its
            // queues.
            "get" | "get_nowait" if pos.is_empty() => self
                .queued()
                .iter()
                .flat_map(|&(v, s)| self.pv(v, s, depth))
                .collect(),
            // `ROOTS.get(platform.system(), "/")`: an entry, or the default.
            "get" => {
                let found = self.pv_looked_up(obj, pos.first().copied(), scope, depth);
                found.into_iter().flatten().chain(arg(1)).collect()
            }
            // `dict.fromkeys(paths)`: the paths, without repeats.
            "fromkeys" if self.text(obj) == "dict" => arg(0),
            m if SAME_PATH_METHODS.contains(&m) => base(),
            "joinpath" => pos.iter().fold(base(), |acc, a| {
                product(&acc, &self.pv(*a, scope, depth), join2)
            }),
            "with_name" => product(
                &base().iter().map(|p| dirname(p)).collect::<Vec<_>>(),
                &arg(0),
                join2,
            ),
            "with_suffix" => product(&base(), &arg(0), with_suffix),
            "rglob" => product(&base(), &arg(0), |b, p| join2(b, &format!("**/{p}"))),
            "glob" => product(&base(), &arg(0), join2),
            "iterdir" => product(&base(), &["*".to_string()], join2),
            "format" => base().iter().map(|t| blank_fields(t)).collect(),
            "join" if obj.kind() == K::String => match pos {
                [codes] => self.pv_chr_join(obj, *codes, scope, depth),
                _ => Vec::new(),
            },
            _ => Vec::new(),
        }
    }
}

impl<'t> Analyzer<'t> {
    /// The values the script puts on queues (`q.put(v)`, `q.put_nowait(v)`,
    /// one argument), when it makes a queue (`queue.Queue()`,
    /// `multiprocessing.Queue()`, `asyncio.Queue()`...): a producer walks,
    /// workers take from the queue, and what they take is what was put.
    pub(super) fn queued(&self) -> &[(Node<'t>, usize)] {
        if let Some(found) = self.queue_puts.get() {
            return found;
        }
        // Computed outside the cell: resolving callees must never find the
        // cell half made (`get_or_init` panics when re-entered).
        let makes_queue = self.calls.iter().any(|c| {
            c.method.is_none_or(|m| m.ends_with("Queue"))
                && self
                    .callee(c.node, c.scope)
                    .is_some_and(|q| is_queue_maker(&q))
        });
        let puts = self
            .calls
            .iter()
            .filter(|_| makes_queue)
            .filter(|c| matches!(c.method, Some("put" | "put_nowait")))
            .filter_map(|c| match self.args(c.node).0 {
                [v] => Some((*v, c.scope)),
                _ => None,
            })
            .take(QUEUED_MAX)
            .collect();
        // Set by a nested call meanwhile: the same list, kept.
        let _ = self.queue_puts.set(puts);
        self.queue_puts.get().map_or(&[], Vec::as_slice)
    }
}

/// Values put on queues read at most (see `Analyzer::queued`).
const QUEUED_MAX: usize = 16;

/// `queue.Queue`, `multiprocessing.JoinableQueue`, `asyncio.PriorityQueue`...
fn is_queue_maker(q: &str) -> bool {
    ["queue.", "multiprocessing.", "asyncio.", "gevent.queue."]
        .iter()
        .any(|m| {
            q.strip_prefix(m)
                .is_some_and(|rest| rest.ends_with("Queue"))
        })
        || q == "multiprocessing.Manager.Queue"
}

/// `HOME` and friends as paths.
fn env_path(key: &str) -> Option<String> {
    match key {
        "HOME" | "USERPROFILE" => Some("~".into()),
        "TMPDIR" | "TMP" | "TEMP" => Some("/tmp".into()),
        "XDG_CONFIG_HOME" => Some("~/.config".into()),
        "XDG_DATA_HOME" => Some("~/.local/share".into()),
        "XDG_CACHE_HOME" => Some("~/.cache".into()),
        _ => None,
    }
}

/// `"{}/x".format(...)` with its fields unknown.
fn blank_fields(t: &str) -> String {
    let mut out = String::with_capacity(t.len());
    let mut depth = 0;
    for c in t.chars() {
        match c {
            '{' => {
                depth += 1;
                if depth == 1 {
                    out.push('*');
                }
            }
            '}' if depth > 0 => depth -= 1,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
}

impl<'t> Analyzer<'t> {
    /// `os.path.join(a, b, *parts)` and the like: the parts joined, with
    /// `*parts` kept in place (`args` leaves splats out) and taken from
    /// each caller when it is the helper's own `*args`.
    fn pv_join(&self, n: Node<'t>, pos: &[Node<'t>], scope: usize, depth: usize) -> Vec<String> {
        if pos.is_empty() {
            return vec![".".into()];
        }
        let parts: Vec<Node<'t>> = n
            .child(F::Arguments)
            .filter(|al| al.kind() == K::ArgumentList)
            .map(|al| {
                al.children()
                    .filter(|a| !matches!(a.kind(), K::KeywordArgument | K::DictionarySplat))
                    .collect()
            })
            .unwrap_or_else(|| pos.to_vec());
        parts.iter().fold(vec![String::new()], |acc, a| {
            let v = self
                .splat_parts(*a, scope, depth)
                .unwrap_or_else(|| self.pv(*a, scope, depth));
            // Parts nothing tells are left out, as before splats were
            // followed: the known prefix is still judged.
            if v.is_empty() && a.kind() == K::ListSplat {
                return acc;
            }
            product(
                &acc,
                &v,
                |x, y| if x.is_empty() { y.into() } else { join2(x, y) },
            )
        })
    }

    /// `join(base, *parts)` inside `def f(*parts)`: every caller's remaining
    /// positional arguments, joined as path components (one value per call).
    fn splat_parts(&self, a: Node<'t>, scope: usize, depth: usize) -> Option<Vec<String>> {
        let name = a.nth_child(0).filter(|_| a.kind() == K::ListSplat)?;
        // `*rel.split("/")`: the parts joined back are `rel` itself.
        if name.kind() == K::Call && self.method_name(name) == Some("split") {
            let sep = self.args(name).0.first().copied()?;
            let slash = self.fold(sep, scope, depth + 1).is_some_and(|s| s == "/")
                || self.resolve(sep, scope, depth + 1).as_deref() == Some("os.sep");
            let obj = name.child(F::Function).and_then(|f| f.child(F::Object))?;
            return slash.then(|| self.pv(obj, scope, depth + 1));
        }
        let binds = self.lookup(self.text(name), scope, name.start_byte())?;
        let [Bind::Param { param, func, index }] = binds else {
            return None;
        };
        if param.kind() != K::ListSplatPattern {
            return None;
        }
        let callers = self.callers.get(&func)?;
        let mut out = Vec::new();
        for c in callers {
            let rest = c
                .args
                .get(index.checked_sub(c.offset)?..)
                .unwrap_or_default();
            let joined = rest.iter().fold(vec![String::new()], |acc, r| {
                let v = self.pv(*r, c.scope, depth + 1);
                product(
                    &acc,
                    &v,
                    |x, y| if x.is_empty() { y.into() } else { join2(x, y) },
                )
            });
            out.extend(joined);
        }
        Some(capped(out))
    }
}

#[cfg(test)]
mod tests {
    use super::super::literal::join_path;
    use super::{blank_fields, dirname, join2, with_suffix};

    /// `join2` joins two paths as `join_path` does.
    #[test]
    fn join2_is_join_path() {
        let parts = [
            "", "/", "a", "a/", "/etc", "/etc/", "x/y", "~", "*", "/tmp/z",
        ];
        for a in parts {
            for b in parts {
                let whole = join_path(&[a.to_string(), b.to_string()]);
                assert_eq!(join2(a, b), whole, "{a:?} {b:?}");
            }
        }
    }

    #[test]
    fn path_helpers() {
        assert_eq!(dirname("/etc/x"), "/etc");
        assert_eq!(dirname("/etc"), "/");
        assert_eq!(dirname("x"), ".");
        assert_eq!(with_suffix("a/b.txt", ".enc"), "a/b.enc");
        assert_eq!(with_suffix("~/.cache-1", ".part"), "~/.cache-1.part");
        assert_eq!(blank_fields("{}/.bashrc{0}"), "*/.bashrc*");
    }
}
