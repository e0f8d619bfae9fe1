//! The file system: writes, deletions and mode changes on system,
//! persistence and root paths; setuid bits; self-deletion; identity changes.

use super::calls::Call;
use super::names::*;
use super::needles::Grams;
use ruff_python_ast::Operator;
use rustc_hash::FxHashMap;

use super::{pos, taxonomy, Analyzer, Bind, Node, Op, F, K};

/// Operations that delete what they are given.
const DELETES: &[&str] = &[
    "os.remove",
    "os.unlink",
    "os.rmdir",
    "os.removedirs",
    "shutil.rmtree",
    "Path.unlink",
    "Path.rmdir",
];

/// Calls that change the process's user or group identity.
pub(super) const IDENTITY_CHANGES: &[&str] = &[
    "os.setuid",
    "os.setgid",
    "os.seteuid",
    "os.setegid",
    "os.setreuid",
    "os.setregid",
    "os.setresuid",
    "os.setresgid",
    "os.setgroups",
    "os.initgroups",
];

impl<'t> Analyzer<'t> {
    pub(super) fn check_files(&mut self, q: &str, call: &Call<'t>) {
        let node = call.node;
        let (targets, op) = self.written_paths(q, call);
        for t in targets {
            self.judge_target(t, call.scope, op, node);
            self.check_self_delete(q, t, node);
        }
        if matches!(q, "os.chmod" | "os.lchmod" | "os.fchmod") {
            if let Some(m) = call.arg(1, "mode") {
                let target = call.arg(0, "path");
                self.check_mode(m, target, call.scope, node);
            }
        }
        if q.starts_with("shutil.copy") {
            self.note_shell_copy(call);
        }
        if q == "atexit.register" {
            self.check_deferred_delete(call);
        }
        self.check_truncating_open(q, call);
        if call.is(super::kinds::IDENTITY) {
            let arg = call.pos.first().map(|a| self.text(*a)).unwrap_or("");
            if self.drops_privilege(q, call) {
                if matches!(q, "os.setuid" | "os.setreuid" | "os.setresuid") {
                    self.facts.dropped_for_good.push(call.scope);
                }
                self.add("MB213", node, format!("{q}({arg})"));
            } else if self.facts.dropped_for_good.contains(&call.scope) {
                // Root asked back after the uid was given up for good: it
                // cannot succeed, so it is the test that the drop holds.
                let detail = format!("{q}({arg}) after giving root up: checks the drop holds");
                self.add("MB213", node, detail);
            } else {
                self.add("MB202", node, format!("{q}({arg})"));
            }
        }
        if q == "os.dup2" {
            self.facts.dup2.get_or_insert(pos(node));
        }
    }

    /// The path arguments a call writes, deletes or changes, and how.
    fn written_paths<'q>(&self, q: &'q str, call: &Call<'t>) -> (Vec<Node<'t>>, &'q str) {
        let one = |i: usize, name: &str| call.arg(i, name).into_iter().collect::<Vec<_>>();
        match q {
            "builtins.open" | "io.open" | "codecs.open" | "gzip.open" | "bz2.open"
            | "lzma.open" => {
                let mode = call.arg(1, "mode").and_then(|m| {
                    self.reset_budget();
                    self.fold(m, call.scope, 0)
                });
                let writes = mode.is_some_and(|m| m.contains(['w', 'a', 'x', '+']));
                let targets = if writes { one(0, "file") } else { vec![] };
                (targets, "open for writing")
            }
            "os.open" => {
                let writes = call
                    .arg(1, "flags")
                    .is_some_and(|f| self.writing_flags(f, call.scope));
                let targets = if writes { one(0, "path") } else { vec![] };
                (targets, "os.open for writing")
            }
            "os.remove" | "os.unlink" | "os.rmdir" | "os.removedirs" | "shutil.rmtree"
            | "os.truncate" | "os.chown" | "os.lchown" | "os.chmod" | "os.lchmod" | "os.mkdir"
            | "os.makedirs" | "os.mknod" | "os.mkfifo" | "os.utime" | "shutil.chown" => {
                (one(0, "path"), q)
            }
            "os.rename" | "os.replace" | "os.renames" | "shutil.move" => {
                (call.pos.iter().take(2).copied().collect(), q)
            }
            "os.symlink" | "os.link" | "shutil.copy" | "shutil.copy2" | "shutil.copyfile"
            | "shutil.copytree" | "shutil.copymode" | "shutil.copystat" => (one(1, "dst"), q),
            _ => (vec![], ""),
        }
    }

    fn check_self_delete(&mut self, q: &str, target: Node<'t>, node: Node<'t>) {
        let t = self.text(target).replace(' ', "");
        if matches!(q, "os.remove" | "os.unlink" | "shutil.rmtree" | "unlink")
            && (t == "__file__" || t == "sys.argv[0]" || t.ends_with("(__file__)"))
        {
            self.add("MB211", node, format!("deletes {t}"));
        }
    }

    /// Mode changes: setuid bits (MB203, MB928 on a shell, an interpreter
    /// or a temporary file) and world-writable files (MB103).
    fn check_mode(&mut self, m: Node<'t>, target: Option<Node<'t>>, scope: usize, node: Node<'t>) {
        self.reset_budget();
        let folded = self.fold_int(m, scope, 0);
        let named_bit = {
            let t = self.text(m);
            t.contains("S_ISUID") || t.contains("S_ISGID")
        };
        let setuid = folded.is_some_and(|mode| mode & 0o6000 != 0) || named_bit;
        if setuid {
            let how = folded.map_or_else(|| self.text(m).to_string(), |v| format!("{v:#o}"));
            let targets = target.map(|t| self.paths(t, scope)).unwrap_or_default();
            let shell = targets
                .iter()
                .find(|p| taxonomy::root_shell_target(p) || self.signs.shell_copies.contains(p));
            match shell {
                Some(p) => {
                    let detail = format!("setuid mode {how} on {p}: a root shell for anyone");
                    self.add("MB928", node, detail)
                }
                None => self.add("MB203", node, format!("mode {how}")),
            }
        } else if let Some(mode) = folded.filter(|m| m & 0o002 != 0) {
            self.add("MB103", node, format!("mode {mode:#o}"));
        }
    }

    /// `shutil.copy(SHELL, dst)`: `dst` is a shell too (for MB928).
    fn note_shell_copy(&mut self, call: &Call<'t>) {
        let (Some(src), Some(dst)) = (call.arg(0, "src"), call.arg(1, "dst")) else {
            return;
        };
        self.reset_budget();
        if self
            .paths(src, call.scope)
            .iter()
            .any(|p| taxonomy::root_shell_target(p) && !p.starts_with("<tmp"))
        {
            let dsts = self.paths(dst, call.scope);
            self.signs.shell_copies.extend(dsts);
        }
    }

    /// `atexit.register(os.remove, __file__)`: the script deletes itself
    /// when it ends.
    fn check_deferred_delete(&mut self, call: &Call<'t>) {
        let Some(f) = call.pos.first() else { return };
        self.reset_budget();
        let Some(q) = self.resolve(*f, call.scope, 0) else {
            return;
        };
        if let Some(target) = call.pos.get(1) {
            self.check_self_delete(&q, *target, call.node);
        }
    }

    /// An identity change that gives root up: to a named account, a fixed
    /// non-zero id, the real ids, or no supplementary groups at all.
    fn drops_privilege(&self, q: &str, call: &Call<'t>) -> bool {
        let Some(arg) = call.pos.first() else {
            return false;
        };
        if q == "os.setgroups" {
            return arg.kind().is_sequence() && arg.children().next().is_none();
        }
        self.reset_budget();
        if let Some(id) = self.fold_int(*arg, call.scope, 0) {
            return id != 0;
        }
        // An account's ids, read from the password or group database.
        let account_id = |t: &str| ["pw_uid", "pw_gid", "gr_gid"].iter().any(|k| t.contains(k));
        let t = self.text(*arg);
        account_id(t)
            || t.contains("getuid()")
            || t.contains("getgid()")
            || self
                .lookup(t, call.scope, arg.start_byte())
                .is_some_and(|bs| {
                    bs.iter()
                        .any(|b| matches!(*b, Bind::Expr(v, _) if account_id(self.text(v))))
                })
    }

    /// Judges a path a call writes or deletes: the exact path when it folds,
    /// else each value it may have, until one is found wanting.
    fn judge_target(&mut self, t: Node<'t>, scope: usize, op: &str, node: Node<'t>) {
        self.reset_budget();
        let values = match self.fold_path(t, scope, 0) {
            Some(p) => vec![p],
            None => self.paths(t, scope),
        };
        // One finding per target, unless a later value of it is worse: a
        // helper writing `/proc/sys/...` and `/proc/sysrq-trigger` is judged
        // by the trigger.
        let mut judged = false;
        for p in values {
            let before = self.findings.len();
            if !self.judge_path(&p, op, node) {
                continue;
            }
            if self.findings[before..]
                .iter()
                .any(|f| f.rule.starts_with("MB9"))
            {
                break;
            }
            if judged {
                self.findings.truncate(before);
            }
            judged = true;
        }
    }

    /// MB201 becomes MB959 in a script that re-runs itself as root only
    /// after the user said yes (MB229): the system path is written by the
    /// run the user asked to elevate (a font or a driver installed
    /// system-wide on request). Run after every call is judged, as the
    /// relaunch and the write are judged at different calls in either order.
    pub(super) fn consented_system_writes(&mut self) {
        if !self.findings.iter().any(|f| f.rule == "MB229") {
            self.confirmed_local_system_writes();
            return;
        }
        for f in self.findings.iter_mut().filter(|f| f.rule == "MB201") {
            f.rule = "MB959";
            f.detail
                .push_str(": the script re-runs itself as root after asking");
        }
    }

    /// MB201 becomes MB959 where the write's function first asks the user,
    /// in a script of the user's own setup whose literals name nothing
    /// remote and no address but the loopback: a hosts entry or a setting
    /// for this machine, shown and confirmed before it is written.
    fn confirmed_local_system_writes(&mut self) {
        let asked = self.asked_in_own_setup("MB201");
        if asked.is_empty() || self.names_foreign_address() {
            return;
        }
        for f in self.findings.iter_mut().filter(|f| f.rule == "MB201") {
            if asked.binary_search(&(f.row, f.col)).is_ok() {
                f.rule = "MB959";
                f.detail.push_str(": after the user confirmed the change");
            }
        }
    }

    /// Does some literal hold an IPv4 address that is not the loopback
    /// (where a hosts entry would send a name elsewhere)?
    fn names_foreign_address(&self) -> bool {
        self.lowered().texts.iter().any(|(_, v)| {
            v.split(|c: char| !(c.is_ascii_digit() || c == '.'))
                .filter_map(|w| w.parse::<std::net::Ipv4Addr>().ok())
                .any(|ip| !ip.is_loopback() && !ip.is_unspecified())
        })
    }

    /// A command run through sudo (MB204, with the MB208 its command
    /// earns) from a function that first asks the user, in a script of the
    /// user's own setup whose literals name nothing remote: the change is
    /// shown and confirmed, and sudo asks for the password again (MB231).
    /// Persistence, privilege gains and the like at the same call are
    /// judged on their own and stay.
    pub(super) fn confirmed_sudo_commands(&mut self) {
        let asked = self.asked_in_own_setup("MB204");
        for f in self.findings.iter_mut() {
            if matches!(f.rule, "MB204" | "MB208") && asked.binary_search(&(f.row, f.col)).is_ok() {
                f.rule = "MB231";
                f.detail.push_str(": after asking the user");
            }
        }
    }

    /// Where `rule` was found at a call whose function (or every caller)
    /// asks the user first, in a script of the user's own setup whose
    /// literals name nothing remote; empty otherwise. What MB959 and MB231
    /// are made from.
    fn asked_in_own_setup(&self, rule: &str) -> Vec<(usize, usize)> {
        if !self.findings.iter().any(|f| f.rule == rule)
            || !self.own_setup_script()
            || self.names_remote_literal()
        {
            return Vec::new();
        }
        // The first call at each position, with its scope (what
        // `call_scope` finds, the first call of a node being the first at
        // its position): each finding searched every call for both,
        // quadratic in a setup script that asks before each command.
        let mut at_pos: FxHashMap<(usize, usize), (Node<'t>, usize)> = FxHashMap::default();
        for c in &self.calls {
            at_pos.entry(pos(c.node)).or_insert((c.node, c.scope));
        }
        let mut asked: Vec<(usize, usize)> = self
            .findings
            .iter()
            .filter(|f| f.rule == rule)
            .map(|f| (f.row, f.col))
            .filter(|at| {
                at_pos
                    .get(at)
                    .is_some_and(|&(n, s)| self.asked_before_in(n, s))
            })
            .collect();
        // Sorted, for the callers' search at every finding.
        asked.sort_unstable();
        asked
    }

    /// Destruction, persistence, disks, then the system paths; true when
    /// a finding was made.
    pub(super) fn judge_path(&mut self, p: &str, op: &str, node: Node<'t>) -> bool {
        let deletes = DELETES.contains(&op);
        if self.judge_escape(p, op, node)
            || self.judge_tamper(p, op, node)
            || (!deletes && self.judge_harness(p, op, node))
            || (!deletes && self.judge_kernel(p, op, node))
        {
            return true;
        }
        let before = self.findings.len();
        let recursive = matches!(op, "shutil.rmtree" | "os.removedirs");
        if deletes && taxonomy::precious_tree(p, recursive) {
            self.add(
                "MB907",
                node,
                format!("{op} {p}: deletes a system or home tree"),
            );
        } else if let Some(what) = taxonomy::persistence(p).filter(|_| !deletes && !makes_dir(op)) {
            if self.moved_away(p, op, node) {
                // A start-up file moved aside (a backup before linking or
                // writing a new one): what replaces it is judged itself.
                return false;
            }
            if self.own_user_setup(p, op, node) {
                let detail = format!("{op} {p}: sets up {what} of the user's own");
                self.add("MB224", node, detail);
            } else {
                self.add("MB906", node, format!("{op} {p}: writes {what}"));
            }
        } else if !deletes && taxonomy::installed_package(p) && p.contains('*') {
            // Package files found by listing site-packages: the code every
            // later import of those packages runs.
            let detail = format!("{op} {p}: rewrites installed packages' code");
            self.add("MB932", node, detail);
        } else if !deletes && taxonomy::is_disk(p) {
            self.add("MB907", node, format!("{op} {p}: overwrites a disk"));
        } else if !deletes && self.listed_disk(p) {
            let detail = format!("{op} {p}: overwrites the disks the script lists from /sys/block");
            self.add("MB907", node, detail);
        } else if !p.contains(['*', '<']) {
            // System paths are judged exactly: `/dev/pty` + a letter is a
            // terminal opened, not a system file changed.
            self.classify_write(p, op, node);
        }
        self.findings.len() > before
    }

    fn classify_write(&mut self, path: &str, op: &str, node: Node<'t>) {
        let p = path.trim();
        let lower = p.to_ascii_lowercase();
        if matches!(p, "/" | "/*" | "~" | "~/")
            && matches!(op, "shutil.rmtree" | "os.removedirs" | "os.rmdir")
        {
            self.add("MB907", node, format!("{op} {p}"));
            return;
        }
        let taken_away = (DELETES.contains(&op) || makes_dir(op)) && taxonomy::entry_taken_away(p);
        let grams = Grams::of(&lower);
        if !taken_away
            && PERSISTENCE
                .iter()
                .any(|s| taxonomy::names_entry(&lower, &grams, s))
        {
            self.add("MB906", node, format!("{op} {p}"));
            return;
        }
        // `p` is `prefix` or a path below it (no `format!` per prefix).
        let under = |prefix: &str| {
            p.strip_prefix(prefix)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        };
        let harmless_dev = [
            "/dev/null",
            "/dev/zero",
            "/dev/stdout",
            "/dev/stderr",
            "/dev/stdin",
            "/dev/tty",
            "/dev/urandom",
            "/dev/random",
            "/dev/full",
        ];
        // `/usr/tmp` is the old name of a temporary directory (a link to
        // `/var/tmp` where it exists; `tempfile` still lists it).
        if harmless_dev.contains(&p) || under("/dev/shm") || under("/dev/fd") || under("/usr/tmp") {
            return;
        }
        if SYSTEM_PREFIXES.iter().any(|s| under(s)) {
            self.add("MB201", node, format!("{op} {p}"));
        }
    }

    /// `/dev/` + a name, in a script that lists the kernel's block devices
    /// (`os.listdir("/sys/block")`): the devices written are the disks it
    /// found, every one of them.
    fn listed_disk(&self, p: &str) -> bool {
        p == "/dev/*"
            && self.lowered().texts.iter().any(|(_, t)| {
                let t = t.trim_end_matches('/');
                t == "/sys/block" || t == "/sys/class/block"
            })
    }

    /// A shell script written from a text the script decodes or builds
    /// (`write_bytes(b64decode(HOOK))`): judged like a literal script is
    /// (see `check_string`), since no literal shows it. Plain literals are
    /// judged there already.
    fn check_written_script(&mut self, m: &str, call: &Call<'t>) {
        if !matches!(m, "write" | "write_text" | "write_bytes") {
            return;
        }
        let Some(data) = call.pos.first().filter(|d| d.kind() != K::String) else {
            return;
        };
        self.reset_budget();
        let Some(text) = self.fold(*data, call.scope, 0) else {
            return;
        };
        if text.trim_start().starts_with("#!") {
            self.check_command_line(&text.to_ascii_lowercase(), call.node);
        }
    }

    pub(super) fn check_method(&mut self, m: &'t str, call: &Call<'t>) {
        self.check_written_script(m, call);
        let (node, scope) = (call.node, call.scope);
        let Some(obj) = call.func.child(F::Object) else {
            return;
        };
        // Methods only paths have; `rename` and `replace` are also string
        // methods, so their receiver must be recognisably a path.
        let path_only = matches!(
            m,
            "write_text"
                | "write_bytes"
                | "touch"
                | "unlink"
                | "rmdir"
                | "mkdir"
                | "chmod"
                | "symlink_to"
                | "hardlink_to"
                | "open"
        );
        let writes = match m {
            "write_text" | "write_bytes" | "touch" | "unlink" | "rmdir" | "mkdir" | "chmod"
            | "symlink_to" | "hardlink_to" | "rename" | "replace" => true,
            "open" => {
                let mode = call.arg(0, "mode");
                self.reset_budget();
                mode.and_then(|md| self.fold(md, scope, 0))
                    .is_some_and(|md| md.contains(['w', 'a', 'x', '+']))
            }
            _ => false,
        };
        if m == "write" {
            // `tree.write(dir / "report.xml")`: a serialiser writing a file
            // it is given a path for (a file's `write` takes data).
            if let Some(arg) = call.pos.first().filter(|a| self.divided_path(**a)) {
                self.judge_target(*arg, scope, "write", node);
            }
        }
        if !writes {
            return;
        }
        // Only receivers that are recognisably paths, so `s.replace(a, b)` on
        // an ordinary string is not taken for a file operation.
        self.reset_budget();
        let is_pathish = obj.kind() == K::BinaryOperator || self.path_call(obj, scope);
        if is_pathish || path_only {
            self.judge_target(obj, scope, &format!("Path.{m}"), node);
        }
        if is_pathish {
            self.check_self_delete("unlink", obj, node);
        }
        if m == "chmod" && is_pathish {
            if let Some(md) = call.pos.first() {
                self.check_mode(*md, Some(obj), scope, node);
            }
        }
    }

    fn path_call(&self, n: Node<'t>, scope: usize) -> bool {
        match n.kind() {
            K::Call => n
                .child(F::Function)
                .and_then(|f| self.resolve(f, scope, 0))
                .is_some_and(|q| PATH_TYPES.contains(&q.as_str())),
            K::Identifier => self
                .lookup(self.text(n), scope, n.start_byte())
                .is_some_and(|bs| {
                    bs.iter().any(|b| match *b {
                        Bind::Expr(v, s) => {
                            v.kind() == K::BinaryOperator
                                || (v.kind() == K::Call && self.path_call(v, s))
                        }
                        _ => false,
                    })
                }),
            _ => false,
        }
    }

    /// A path built with pathlib's `/` operator.
    fn divided_path(&self, n: Node<'t>) -> bool {
        n.kind() == K::BinaryOperator && n.operator() == Op::Bin(Operator::Div)
    }
}

/// Whether the source names its own file other than to find its
/// directory: `__file__` not taken through `dirname(..)` or `.parent` (a
/// project's root found beside the script is not the script copied).
fn names_own_file(src: &str) -> bool {
    const NAME: &str = "__file__";
    src.match_indices(NAME)
        .any(|(i, _)| !directory_of_script(&src[..i], &src[i + NAME.len()..]))
}

/// The callee whose opening parenthesis ends `s`.
/// Folder creation: it adds no entry, whatever folder it makes.
fn makes_dir(op: &str) -> bool {
    matches!(op, "os.mkdir" | "os.makedirs" | "Path.mkdir")
}

fn opened_call(s: &str) -> Option<&str> {
    s.trim_end().strip_suffix('(').map(str::trim_end)
}

/// `dirname(__file__)`, `dirname(abspath(__file__))`, `Path(__file__).parent`
/// (also after `.resolve()`/`.absolute()`), given the text around `__file__`.
fn directory_of_script(before: &str, after: &str) -> bool {
    let Some(callee) = opened_call(before) else {
        return false;
    };
    if callee.ends_with("dirname") {
        return true;
    }
    if callee.ends_with("abspath") || callee.ends_with("realpath") {
        let outer = callee.trim_end_matches(|c: char| c.is_alphanumeric() || c == '_' || c == '.');
        return opened_call(outer).is_some_and(|c| c.ends_with("dirname"));
    }
    let mut rest = after.trim_start().strip_prefix(')').unwrap_or("");
    while let Some(r) = [".resolve()", ".absolute()"]
        .iter()
        .find_map(|m| rest.strip_prefix(m))
    {
        rest = r;
    }
    callee.ends_with("Path") && rest.starts_with(".parent")
}

/// What marks a script's setup as more than the user's own: code fetched,
/// run from strings or kept hidden in temporary places, the script's own
/// file (see [`names_own_file`]), a shell reached over the network.
const NOT_OWN_SETUP: &[&str] = &[
    "argv[0]",
    "exec(",
    "eval(",
    "urlopen",
    "curl ",
    "wget ",
    "b64decode",
    "/tmp/",
    "/dev/shm",
    "/dev/tcp",
];

impl<'t> Analyzer<'t> {
    /// Whether a write at a start-up location is the user setting up their
    /// own machine (MB224): a start-up file linked to a file the script
    /// does not write (a dotfiles checkout), or a directory or unit of the
    /// user's own service manager; in a script that imports no network
    /// module and carries none of [`NOT_OWN_SETUP`].
    fn own_user_setup(&self, p: &str, op: &str, node: Node<'t>) -> bool {
        let link = matches!(op, "Path.symlink_to" | "os.symlink");
        // Per-user units and login items: they run as the user, like a
        // command typed at login.
        let user_unit = [
            "~/.config/systemd/user",
            "~/.config/autostart/",
            "~/Library/LaunchAgents/",
        ]
        .iter()
        .any(|d| p.starts_with(d));
        if !self.own_setup_script() {
            return false;
        }
        if !(link || user_unit) {
            return self.harmless_start_hook(p, node);
        }
        if link {
            return self.links_to_unwritten(node);
        }
        true
    }

    /// Whether `p` is what a move (`os.rename`, `os.replace`,
    /// `shutil.move`) takes away, and not where it puts it.
    fn moved_away(&self, p: &str, op: &str, call: Node<'t>) -> bool {
        if !matches!(
            op,
            "os.rename" | "os.replace" | "shutil.move" | "os.renames"
        ) {
            return false;
        }
        let Some(scope) = self.call_scope(call) else {
            return false;
        };
        let (pos, _) = self.args(call);
        let [from, to] = pos[..] else {
            return false;
        };
        self.reset_budget();
        let from = self.paths(from, scope);
        self.reset_budget();
        let to = self.paths(to, scope);
        from.iter().any(|f| f == p) && !to.iter().any(|t| t == p)
    }

    /// A script that imports no network module and carries none of
    /// [`NOT_OWN_SETUP`]: what it sets up, it sets up from the machine.
    pub(super) fn own_setup_script(&self) -> bool {
        // Asked once the walk is done (the imports are all seen), at each
        // command and finding that may be the user's own.
        *self.own_setup.get_or_init(|| {
            !self.facts.net_import
                && !NOT_OWN_SETUP.iter().any(|m| self.src.contains(m))
                && !names_own_file(self.src)
        })
    }

    /// A symlink in a script that writes no file contents and whose
    /// target is none of its temporary files: the link points at content
    /// someone else keeps.
    fn links_to_unwritten(&self, call: Node<'t>) -> bool {
        let writes = self.calls.iter().any(|c| {
            matches!(
                c.method,
                Some("write" | "write_text" | "write_bytes" | "writelines" | "copy" | "copyfile")
            )
        });
        if writes {
            return false;
        }
        let Some(scope) = self.call_scope(call) else {
            return false;
        };
        let method = self.method_name(call) == Some("symlink_to");
        let (pos, kw) = self.args(call);
        let target = pos
            .first()
            .copied()
            .or_else(|| super::calls::kwarg(kw, if method { "target" } else { "src" }));
        let Some(target) = target else {
            return false;
        };
        self.reset_budget();
        !self
            .paths(target, scope)
            .iter()
            .any(|t| t.contains("<tmp") || t.contains("<self>"))
    }
}
