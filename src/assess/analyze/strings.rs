//! String literals: credential paths, metadata hosts, miner markers,
//! linker hijacks, /dev/tcp and shell paths, wherever they appear.

use super::literal::{shorten, string_value};
use super::names::*;
use super::{pos, Analyzer, Node, F, K};

impl<'t> Analyzer<'t> {
    pub(super) fn check_strings(&mut self) {
        let strings = std::mem::take(&mut self.strings);
        for s in strings {
            let Some(v) = string_value(self.src, s) else {
                continue;
            };
            self.check_string(&v, s);
        }
    }

    fn check_string(&mut self, v: &str, node: Node<'t>) {
        let lower = v.to_ascii_lowercase();
        self.check_runtime_string(v, &lower, node);
        if self.signs.defence_named.is_none() && super::taxonomy::is_defence(&lower) {
            self.signs.defence_named = Some((node, lower.clone()));
        }
        if METADATA_HOSTS.iter().any(|h| lower.contains(h)) {
            self.add("MB206", node, format!("{:?}", shorten(v)));
        }
        if CREDENTIAL_PATHS.iter().any(|c| lower.contains(c)) {
            self.add("MB205", node, format!("{:?}", shorten(v)));
            self.facts.creds.get_or_insert(pos(node));
            self.signs.credential_strings.push(lower.clone());
        }
        if lower.contains("/dev/tcp/") || lower.contains("/dev/udp/") {
            self.add("MB901", node, "bash /dev/tcp redirection");
        }
        if MINER_MARKERS.iter().any(|m| lower.contains(m)) {
            self.add("MB905", node, format!("{:?}", shorten(v)));
        }
        if lower.contains("ld_preload") || lower.contains("/etc/ld.so.preload") {
            self.add("MB209", node, format!("{:?}", shorten(v)));
        }
        if v.starts_with("#!") {
            // A script kept in a string is written somewhere to be run:
            // judge the shapes whose meaning does not depend on where.
            self.check_command_line(&lower, node);
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

    /// The Docker socket named, and the parts of a container spec that give
    /// it the host: `"Privileged": True`, a bind of `/` (`"/:/host"`).
    fn check_runtime_string(&mut self, v: &str, lower: &str, node: Node<'t>) {
        if lower.contains("docker.sock") {
            self.signs.docker.get_or_insert(node);
            self.add(
                "MB423",
                node,
                format!("{:?}: the Docker socket", shorten(v)),
            );
        }
        let privileged_key = v == "Privileged"
            && node.field() == F::Key
            && node
                .parent()
                .and_then(|p| p.child(F::Value))
                .is_some_and(|val| val.kind() == K::True);
        if privileged_key || v.starts_with("/:") {
            self.signs.privileged.get_or_insert(node);
        }
    }
}
