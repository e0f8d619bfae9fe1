//! String literals: credential paths, metadata hosts, miner markers,
//! linker hijacks, /dev/tcp and shell paths, wherever they appear.

use std::sync::OnceLock;

use aho_corasick::{AhoCorasick, AhoCorasickKind};

use super::literal::shorten;
use super::names::*;
use super::{pos, Analyzer, Node, F, K};

/// The needle lists a string literal is checked against, one bit each.
const METADATA: u8 = 1;
const CREDENTIAL: u8 = 1 << 1;
const DEV_TCP: u8 = 1 << 2;
const MINER: u8 = 1 << 3;
const PRELOAD: u8 = 1 << 4;
const DOCKER: u8 = 1 << 5;

/// Every needle of [`needles_in`], with its list's bit.
fn needle_table() -> Vec<(&'static str, u8)> {
    let lists: [(&[&'static str], u8); 6] = [
        (METADATA_HOSTS, METADATA),
        (CREDENTIAL_PATHS, CREDENTIAL),
        (&["/dev/tcp/", "/dev/udp/"], DEV_TCP),
        (MINER_MARKERS, MINER),
        (&["ld_preload", "/etc/ld.so.preload"], PRELOAD),
        (&["docker.sock"], DOCKER),
    ];
    lists
        .iter()
        .flat_map(|(l, bit)| l.iter().map(move |n| (*n, *bit)))
        .collect()
}

/// Which needle lists occur in `lower` (already lower-cased), as bits. One
/// pass of one automaton (built once per process) instead of a `contains`
/// per needle: a file has hundreds of literals and the lists ~45 needles.
/// Overlapping matches, so a needle inside another list's match still counts.
fn needles_in(lower: &str) -> u8 {
    static SCAN: OnceLock<Option<(AhoCorasick, Vec<u8>)>> = OnceLock::new();
    let scan = SCAN.get_or_init(|| {
        let table = needle_table();
        // A contiguous NFA: a DFA scans no faster on strings this short and
        // takes far longer to build, which every fresh process pays.
        let ac = AhoCorasick::builder()
            .kind(Some(AhoCorasickKind::ContiguousNFA))
            .build(table.iter().map(|(n, _)| n))
            .ok()?;
        Some((ac, table.iter().map(|(_, bit)| *bit).collect()))
    });
    match scan {
        Some((ac, bits)) => ac.find_overlapping_iter(lower).fold(0, |acc, m| {
            acc | bits.get(m.pattern().as_usize()).copied().unwrap_or(0)
        }),
        // The automaton cannot fail to build from these few short needles;
        // should it, the plain search gives the same answer.
        None => needle_table()
            .iter()
            .filter(|(n, _)| lower.contains(n))
            .fold(0, |acc, (_, bit)| acc | bit),
    }
}

impl<'t> Analyzer<'t> {
    pub(super) fn check_strings(&mut self) {
        // The last reader of the literals: their decoded values (made now if no
        // family asked before) are taken with them, not decoded again.
        let _ = self.literals();
        let strings = std::mem::take(&mut self.strings);
        let values = self.decoded.take().unwrap_or_default();
        for (s, v) in strings.into_iter().zip(values) {
            let Some(v) = v else {
                continue;
            };
            self.check_string(&v, s);
        }
    }

    fn check_string(&mut self, v: &str, node: Node<'t>) {
        let lower = v.to_ascii_lowercase();
        let found = needles_in(&lower);
        self.check_runtime_string(v, found & DOCKER != 0, node);
        if self.signs.defence_named.is_none() && super::taxonomy::is_defence(&lower) {
            self.signs.defence_named = Some((node, lower.clone()));
        }
        if found & METADATA != 0 {
            self.add("MB206", node, format!("{:?}", shorten(v)));
        }
        if found & CREDENTIAL != 0 {
            self.add("MB205", node, format!("{:?}", shorten(v)));
            self.facts.creds.get_or_insert(pos(node));
            self.signs.credential_strings.push(lower.clone());
        }
        if found & DEV_TCP != 0 {
            self.add("MB901", node, "bash /dev/tcp redirection");
        }
        if found & MINER != 0 {
            self.add("MB905", node, format!("{:?}", shorten(v)));
        }
        if found & PRELOAD != 0 {
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
    fn check_runtime_string(&mut self, v: &str, docker_sock: bool, node: Node<'t>) {
        if docker_sock {
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
