//! String literals: credential paths, metadata hosts, miner markers,
//! linker hijacks, /dev/tcp and shell paths, wherever they appear.

use super::literal::shorten;
use super::names::METADATA_HOSTS;
use super::needles::{CREDENTIAL, DEV_TCP, DOCKER, KUBE_API, METADATA, MINER, PRELOAD};

use super::fold::is_plus;
use super::{pos, Analyzer, Node, F, K};

impl<'t> Analyzer<'t> {
    pub(super) fn check_strings(&mut self) {
        // The last reader of the literals: their decoded values (made now if no
        // family asked before) are taken with them, not decoded again, and
        // their lower-cased forms and needles are the ones the configuration
        // families read.
        let lowered = self.lowered();
        let built = self.built_strings();
        let strings = std::mem::take(&mut self.strings);
        let values = self.decoded.take().unwrap_or_default();
        let each = strings.into_iter().zip(values).zip(lowered.texts.iter());
        for (((s, v), (_, lower)), found) in each.zip(lowered.found.iter()) {
            match v {
                Some(v) => {
                    if v.trim_start().starts_with("#!") {
                        // A script kept in a string is written somewhere to be
                        // run: judge the shapes whose meaning does not depend
                        // on where.
                        self.check_command_line(lower, s);
                    }
                    self.check_string(&v, lower, *found, s);
                }
                None => {
                    self.check_template_script(s);
                    self.check_template(s, *found);
                }
            }
        }
        for (node, v) in built {
            let lower = v.to_ascii_lowercase();
            let found = super::needles::needles_in(&lower);
            self.check_string(&v, &lower, found, node);
        }
    }

    /// Strings the script builds from pieces rather than writes whole, with
    /// their values: `"Privi" + "leged"`, `"/" + ":" + "/h"` (the outermost
    /// `+` over a literal), `"".join(map(chr, [47, 118, ...]))`. Read like
    /// literals, so that a name split to hide it is the name.
    fn built_strings(&self) -> Vec<(Node<'t>, String)> {
        let mut nodes: Vec<Node<'t>> = Vec::new();
        for s in &self.strings {
            let mut top = None;
            let mut at = *s;
            while let Some(p) = at.parent().filter(|p| is_plus(*p)) {
                top = Some(p);
                at = p;
            }
            nodes.extend(top);
        }
        nodes.extend(self.calls.iter().filter_map(|c| {
            let obj = c.node.child(F::Function)?.child(F::Object)?;
            (c.method == Some("join") && obj.kind() == K::String).then_some(c.node)
        }));
        nodes.sort_unstable_by_key(|n| n.id());
        nodes.dedup_by_key(|n| n.id());
        nodes
            .into_iter()
            .filter_map(|n| {
                let scope = self.scope_of(n);
                self.reset_budget();
                self.fold(n, scope, 0).map(|v| (n, v))
            })
            .collect()
    }

    /// An f-string's text, placeholders as written, judged like a literal's:
    /// `f"cat /etc/shadow > {out}"` names the shadow file as plainly as the
    /// literal does (its words were read only as a shell script's).
    fn check_template(&mut self, s: Node<'t>, found: u32) {
        let Some(v) = super::literal::template_cow(self.src, s) else {
            return;
        };
        let lower = v.to_ascii_lowercase();
        self.check_string(&v, &lower, found, s);
    }

    /// An f-string holding a shell script (`f"#!/bin/sh\ncurl {url} | sh"`,
    /// a hook's template): its text, placeholders and all, judged like a
    /// literal script's (see `check_string`), since a download piped into a
    /// shell is that whatever fills the placeholders.
    fn check_template_script(&mut self, s: Node<'t>) {
        // A template split over adjacent literals (`"#!/bin/sh\n" f"curl
        // {url} | sh"`) is read whole, once: from its first f-string.
        let interpolated = |n: Node<'t>| n.children().any(|k| k.kind() == K::Interpolation);
        let whole = match s.parent().filter(|p| p.kind() == K::ConcatenatedString) {
            Some(p) if p.children().find(|k| interpolated(*k)) != Some(s) => return,
            Some(p) => p,
            None => s,
        };
        let text = self.text(whole);
        let body = text
            .trim_start_matches(|c: char| c.is_ascii_alphabetic())
            .trim_start_matches(['"', '\''])
            .trim_start_matches('\\')
            .trim_start();
        if body.starts_with("#!") {
            self.check_command_line(&text.to_ascii_lowercase(), whole);
        }
    }

    /// One decoded literal `v`, with its lower-cased form and the needle
    /// lists found in that (see [`super::needles`]).
    fn check_string(&mut self, v: &str, lower: &str, found: u32, node: Node<'t>) {
        if found & KUBE_API != 0 && kube_workloads(lower) {
            // The Kubernetes API's workloads are the container runtime too,
            // one level up.
            self.signs.docker.get_or_insert(node);
        }
        self.check_runtime_string(v, found & DOCKER != 0, node);
        if self.signs.defence_named.is_none() && super::taxonomy::is_defence(lower) {
            self.signs.defence_named = Some((node, lower.to_string()));
        }
        if found & METADATA != 0 {
            let id = if self.metadata_without_credentials() {
                "MB228"
            } else {
                "MB206"
            };
            self.add(id, node, format!("{:?}", shorten(v)));
        }
        // The sudo policy is no secret: a script that writes and sends
        // nothing only reports on it (an audit; the commands it runs, a
        // `visudo -c`, are judged on their own).
        let policy_audit = || lower.contains("/etc/sudoers") && self.sends_and_writes_nothing();
        if found & CREDENTIAL != 0 && !self.deny_listed(node) && !policy_audit() {
            // The user's own login file is MEDIUM (the seeds keep HIGH for
            // privileged access); sending what it holds is still MB916/MB948.
            let id = if super::taxonomy::own_login_file(lower) {
                "MB222"
            } else {
                "MB205"
            };
            self.add(id, node, format!("{:?}", shorten(v)));
            self.facts.creds.get_or_insert(pos(node));
            self.signs.credential_strings.push(lower.to_string());
        }
        if found & DEV_TCP != 0 {
            self.add("MB901", node, "bash /dev/tcp redirection");
        }
        if found & MINER != 0 {
            self.add("MB905", node, format!("{:?}", shorten(v)));
        }
        if found & PRELOAD != 0 {
            self.check_preload(v, node);
        }
        if v == "0.0.0.0" {
            self.add("MB104", node, "0.0.0.0");
        }
        let t = v.trim();
        let base = t
            .split_whitespace()
            .next()
            .unwrap_or("")
            .rsplit('/')
            .next()
            .unwrap_or("");
        if (t.starts_with("/bin/") || t.starts_with("/usr/bin/"))
            && matches!(base, "sh" | "bash" | "zsh" | "dash" | "ksh")
        {
            self.facts.shell_spawn.get_or_insert(pos(node));
        }
    }

    /// A request whose URL names the metadata service only once folded
    /// (`".".join(str(x) for x in (0xA9, 0xFE, 0xA9, 0xFE))`): judged like
    /// the literal address (MB206, or MB228 for a script asking only what
    /// the instance is), since no literal shows it to `check_string`.
    pub(super) fn check_metadata_request(
        &mut self,
        call: Node<'t>,
        pos: &[Node<'t>],
        scope: usize,
    ) {
        let Some(url) = pos.first() else {
            return;
        };
        // A literal naming the host is judged by `check_string`; the needle
        // bits say so without scanning the literals again.
        if self.lowered().found.iter().any(|f| f & METADATA != 0) {
            return;
        }
        let named = |t: &str| METADATA_HOSTS.iter().find(|h| t.contains(*h));
        let Some(host) = self.texts_in(*url, scope).iter().find_map(|t| named(t)) else {
            return;
        };
        let id = if self.metadata_without_credentials() {
            "MB228"
        } else {
            "MB206"
        };
        let detail = format!(
            "`{}` asks the metadata service at {host}, an address the script spells out only once folded",
            shorten(self.text(call))
        );
        self.add(id, call, detail);
    }

    /// A preload variable named: MB230 for the project's own library, else MB209.
    fn check_preload(&mut self, v: &str, node: Node<'t>) {
        match self.own_build_preloaded(node) {
            Some(lib) => self.add(
                "MB230",
                node,
                format!(
                    "{:?} set to {lib}, a library of the project beside the script",
                    shorten(v)
                ),
            ),
            None => self.add("MB209", node, format!("{:?}", shorten(v))),
        }
    }

    /// `env["LD_PRELOAD"] = lib` where every path `lib` can be is relative
    /// to the script's own project (a sanitizer runtime it built for the
    /// children it starts): the library, else `None`. A system path, a
    /// home, a temporary directory or `/etc/ld.so.preload` stay MB209.
    fn own_build_preloaded(&self, key: Node<'t>) -> Option<String> {
        let target = key.parent().filter(|p| p.kind() == K::Subscript)?;
        let &(_, value, scope) = self.assigned.iter().find(|(t, _, _)| *t == target)?;
        self.reset_budget();
        let paths = self.paths(value, scope);
        let relative = |p: &String| {
            (p.starts_with("./") || !p.starts_with(['/', '~', '<', '*', '$', '.']))
                && !p.is_empty()
                && !p.contains("..")
        };
        // A library the script downloaded or unpacked is a payload.
        let fetched = |p: &String| self.downloads.iter().any(|d| &d.path == p);
        let inside = !paths.is_empty() && paths.iter().all(|p| relative(p) && !fetched(p));
        inside.then(|| paths[0].clone())
    }

    /// Whether the script asks the Docker socket only to read: it names the
    /// GET method and no other (every call that creates, starts or changes
    /// a container is a POST, PUT or DELETE), calls no writing method of
    /// an HTTP client, and does not use the Docker SDK.
    fn docker_reads_only(&self) -> bool {
        const WRITES: &[&str] = &["post", "put", "delete", "patch"];
        let lowered = self.lowered();
        let names = |m: &str| lowered.texts.iter().any(|(_, t)| t == m);
        let writing_call = self.calls.iter().any(|c| {
            c.method.is_some_and(|m| WRITES.contains(&m))
                || self.site_q(c).is_some_and(|q| q.starts_with("docker."))
        });
        names("get") && !WRITES.iter().any(|m| names(m)) && !writing_call
    }

    /// The Docker socket named, and the parts of a container spec that give
    /// it the host: `"Privileged": True`, a bind of `/` (`"/:/host"`).
    fn check_runtime_string(&mut self, v: &str, docker_sock: bool, node: Node<'t>) {
        if docker_sock {
            self.signs.docker.get_or_insert(node);
            let (rule, how) = match self.docker_reads_only() {
                true => ("MB232", "queried with GET requests only"),
                false => ("MB423", "the Docker socket"),
            };
            self.add(rule, node, format!("{:?}: {how}", shorten(v)));
        }
        // `"Privileged": True` (Docker), `"privileged": True` (a Kubernetes
        // securityContext).
        let privileged_key = matches!(v, "Privileged" | "privileged")
            && node.field() == F::Key
            && node
                .parent()
                .and_then(|p| p.child(F::Value))
                .is_some_and(|val| val.kind() == K::True);
        if privileged_key || v.starts_with("/:") || self.host_root_volume(v, node) {
            self.signs.privileged.get_or_insert(node);
        }
    }

    /// `"hostPath": {"path": "/"}`: a Kubernetes volume that is the node's
    /// whole file system.
    fn host_root_volume(&self, v: &str, node: Node<'t>) -> bool {
        let key_of = |pair: Node<'t>| {
            pair.child(F::Key)
                .map(|k| self.text(k).trim_matches(['"', '\'']))
        };
        if v != "/" || node.field() != F::Value {
            return false;
        }
        let Some(pair) = node.parent().filter(|p| p.kind() == K::Pair) else {
            return false;
        };
        let outer = pair
            .parent()
            .filter(|d| d.field() == F::Value)
            .and_then(|d| d.parent());
        key_of(pair) == Some("path") && outer.is_some_and(|o| key_of(o) == Some("hostPath"))
    }
}

/// A Kubernetes API path that creates or lists workloads: pods, or the
/// controllers that make them (`/api/v1/namespaces/x/pods`,
/// `/apis/apps/v1/.../daemonsets`).
fn kube_workloads(lower: &str) -> bool {
    ["/pods", "/daemonsets", "/deployments", "/jobs"]
        .iter()
        .any(|w| lower.contains(w))
}

impl<'t> Analyzer<'t> {
    /// Whether the script's text names only what an instance is (its
    /// region, zone, identity document, id or type) of the metadata
    /// service, names none of its credentials, tokens of identity or user
    /// data, and decodes no hidden text (which could name them unseen).
    pub(super) fn metadata_without_credentials(&self) -> bool {
        // The answer is the file's, not the literal's: asked for each literal
        // naming the metadata host, it scanned every literal each time.
        *self
            .metadata_only
            .get_or_init(|| self.scan_metadata_without_credentials())
    }

    fn scan_metadata_without_credentials(&self) -> bool {
        const CREDENTIALS: &[&str] = &[
            "credentials",
            "iam/",
            "service-accounts",
            "oauth2",
            "metadata/identity",
            "user-data",
        ];
        const DECODERS: &[&str] = &["b64decode", "fromhex", "unhexlify", "chr(", "codecs"];
        // The literals the script uses (docstrings are not among them), and
        // its code for the decoders.
        let lowered = self.lowered();
        let literals = || lowered.texts.iter().map(|(_, t)| &**t);
        // Whether a literal holds one of `METADATA_DESCRIBES` is in its
        // needle bits: six searches of every literal before.
        let describes = super::needles::DESCRIBES;
        lowered.found.iter().any(|f| f & describes != 0)
            && !literals().any(|t| CREDENTIALS.iter().any(|c| t.contains(c)))
            && !DECODERS.iter().any(|d| self.src.contains(d))
    }

    /// Whether a literal is an element of a collection used only to leave
    /// things out: tested with `in`/`not in` or taken away with `&`, `-`,
    /// `isdisjoint`, directly or through the one name it is bound to (a
    /// backup's `NEVER = {".ssh", ".gnupg"}`). A deny list names secrets
    /// so as not to touch them.
    fn deny_listed(&self, lit: Node<'t>) -> bool {
        let Some(coll) = lit
            .parent()
            .filter(|c| matches!(c.kind(), K::Set | K::List | K::Tuple))
        else {
            return false;
        };
        let Some(parent) = coll.parent() else {
            return false;
        };
        match parent.kind() {
            K::ComparisonOperator => self.text(parent).contains(" in "),
            K::Assignment => parent
                .child(F::Left)
                .filter(|l| l.kind() == K::Identifier)
                .is_some_and(|l| only_excludes(self.src, self.text(l), l.start_byte())),
            _ => false,
        }
    }
}

/// Whether every use of `name` in `src` but its binding at `bound` is a
/// membership test or a set taken away.
fn only_excludes(src: &str, name: &str, bound: usize) -> bool {
    let word = |c: char| c.is_alphanumeric() || c == '_';
    let mut uses = src.match_indices(name).filter(|(i, _)| {
        *i != bound
            && !src[..*i].ends_with(word)
            && !src[i + name.len()..].starts_with(word)
            && !src[..*i].ends_with('.')
    });
    let mut any = false;
    let all = uses.all(|(i, _)| {
        any = true;
        let before = src[..i].trim_end();
        let line = &before[before.rfind('\n').map_or(0, |n| n + 1)..];
        let test = ["&", "-", "isdisjoint(", "difference(", "intersection("]
            .iter()
            .any(|w| before.ends_with(w));
        test || (before.ends_with(" in") && !iterates(line))
    });
    any && all
}

/// Whether the `in` ending `line` belongs to a `for` (a loop or a
/// comprehension) rather than a membership test: a `for` after the last
/// keyword that opens a test.
fn iterates(line: &str) -> bool {
    let words: Vec<&str> = line
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .collect();
    let last = |ws: &[&str]| words.iter().rposition(|w| ws.contains(w));
    let test = last(&["if", "while", "and", "or", "not", "return", "assert"]);
    last(&["for"]).is_some_and(|f| test.is_none_or(|t| f > t))
}
