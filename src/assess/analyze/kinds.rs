//! Which of the callee lists a qualified name is in, as bits: one look-up
//! per call, made once, instead of a `contains` of each list in each family
//! (a call was compared with some twenty lists, a hundred and more names,
//! by the per-call checks). The table is made from the lists themselves,
//! once per process, so a name added to a list is in the table.
//!
//! The table is open addressing over a hash of a name's length and three of
//! its bytes: a general hasher (FxHash with hashbrown) cost about 150
//! instructions a look-up, more than the comparisons it replaced. Its keys
//! are fixed: a name from the script is only looked up, never inserted, so
//! no input can lengthen a probe beyond the longest the lists themselves
//! make.

use std::sync::OnceLock;

use super::names::{
    DECODERS, DESERIALIZERS, EXEC_FUNCS, KEYLOGGERS, NETWORK_CLIENTS, SHELL_FUNCS, SUBPROCESS,
};

/// [`SHELL_FUNCS`].
pub(super) const SHELL: u32 = 1;
/// [`SUBPROCESS`].
pub(super) const PROCESS: u32 = 1 << 1;
/// [`EXEC_FUNCS`].
pub(super) const EXEC: u32 = 1 << 2;
/// [`DESERIALIZERS`].
pub(super) const DESERIALIZER: u32 = 1 << 3;
/// [`DECODERS`].
pub(super) const DECODER: u32 = 1 << 4;
/// [`NETWORK_CLIENTS`] (the list only: `names::is_network_client` also
/// takes the methods of some client modules).
pub(super) const NETWORK: u32 = 1 << 5;
/// [`KEYLOGGERS`].
pub(super) const KEYLOGGER: u32 = 1 << 6;
/// [`super::gadget::PICKLERS`].
pub(super) const PICKLER: u32 = 1 << 7;
/// [`super::files::IDENTITY_CHANGES`].
pub(super) const IDENTITY: u32 = 1 << 8;
/// [`super::dropper::LOADERS`].
pub(super) const LOADER: u32 = 1 << 9;
/// [`super::ransom::ENUMERATORS`].
pub(super) const ENUMERATOR: u32 = 1 << 10;
/// [`super::ransom::REMOVERS`].
pub(super) const REMOVER: u32 = 1 << 11;
/// [`super::exfil::DNS_LOOKUPS`].
pub(super) const DNS_LOOKUP: u32 = 1 << 12;

/// The calls that run a command: [`SHELL_FUNCS`] and [`SUBPROCESS`] (see
/// `names::runs_command`).
pub(super) const COMMAND: u32 = SHELL | PROCESS;

/// Every list, with its bit.
fn lists() -> [(&'static [&'static str], u32); 13] {
    [
        (SHELL_FUNCS, SHELL),
        (SUBPROCESS, PROCESS),
        (EXEC_FUNCS, EXEC),
        (DESERIALIZERS, DESERIALIZER),
        (DECODERS, DECODER),
        (NETWORK_CLIENTS, NETWORK),
        (KEYLOGGERS, KEYLOGGER),
        (super::gadget::PICKLERS, PICKLER),
        (super::files::IDENTITY_CHANGES, IDENTITY),
        (super::dropper::LOADERS, LOADER),
        (super::ransom::ENUMERATORS, ENUMERATOR),
        (super::ransom::REMOVERS, REMOVER),
        (super::exfil::DNS_LOOKUPS, DNS_LOOKUP),
    ]
}

/// Slots of a table: a power of two, three or more times its names.
const SLOTS: usize = 512;

/// Every listed name once, with the bits of its lists, and by [`slot`] the
/// place of each in `names` plus one (0 is a free slot): small, so that a
/// fresh process touches little memory to make it. Other fixed name lists
/// asked of many strings use it too (`taxonomy::is_defence`).
pub(super) struct Table {
    names: Vec<(&'static str, u32)>,
    slots: [u8; SLOTS],
}

/// Where the probe for `q` starts.
fn slot(q: &[u8]) -> usize {
    let n = q.len();
    let (first, mid, last) = match q {
        [] => (0, 0, 0),
        [a, ..] => (*a, q.get(n / 2).copied().unwrap_or(0), q[n - 1]),
    };
    let h = n
        .wrapping_mul(0x9e37)
        .wrapping_add(usize::from(last).wrapping_mul(0x2f1))
        .wrapping_add(usize::from(mid).wrapping_mul(0x61))
        .wrapping_add(usize::from(first));
    (h ^ (h >> 9)) & (SLOTS - 1)
}

impl Table {
    /// Where `q` is in `names`, or the free slot where it would go.
    fn find(&self, q: &str) -> Result<usize, usize> {
        let mut i = slot(q.as_bytes());
        // Fewer names than slots: a free slot ends every probe.
        loop {
            let at = match self.slots[i] {
                0 => return Err(i),
                k => usize::from(k - 1),
            };
            if self.names.get(at).is_some_and(|(name, _)| *name == q) {
                return Ok(at);
            }
            i = (i + 1) & (SLOTS - 1);
        }
    }

    /// The table of `lists`, each with its bit. At most a third of
    /// [`SLOTS`] names in all, and under 255 (each list's tests check).
    pub(super) fn new(lists: &[(&[&'static str], u32)]) -> Self {
        let mut t = Table {
            names: Vec::new(),
            slots: [0; SLOTS],
        };
        for (list, bit) in lists {
            for name in *list {
                match t.find(name) {
                    Ok(at) => t.names[at].1 |= bit,
                    Err(free) => {
                        t.names.push((name, *bit));
                        t.slots[free] = u8::try_from(t.names.len()).unwrap_or(0);
                    }
                }
            }
        }
        t
    }

    /// The bits of the lists `q` is in (0 for none).
    pub(super) fn bits(&self, q: &str) -> u32 {
        self.find(q)
            .ok()
            .and_then(|at| self.names.get(at))
            .map_or(0, |e| e.1)
    }

    /// How many names it holds.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.names.len()
    }
}

fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| Table::new(&lists()))
}

/// The lists `q` is in, as bits (0 for none).
pub(super) fn of(q: &str) -> u32 {
    table().bits(q)
}

/// Whether `q` is in the list of `bit`: `LIST.contains(&q)`.
pub(super) fn is(q: &str, bit: u32) -> bool {
    of(q) & bit != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each bit is set exactly for the names of its list.
    #[test]
    fn bits_match_the_lists() {
        let mut names: Vec<&str> = lists()
            .iter()
            .flat_map(|(l, _)| l.iter().copied())
            .collect();
        names.extend([
            "os.systemx",
            "",
            "subprocess",
            "builtins.open.x",
            "os.system ",
        ]);
        for q in names {
            for (list, bit) in lists() {
                assert_eq!(is(q, bit), list.contains(&q), "{q} {bit}");
            }
        }
        let names: usize = lists().iter().map(|(l, _)| l.len()).sum();
        assert!(names * 3 <= SLOTS, "the table stays a third full at most");
        assert!(table().len() < 255, "a slot holds a name's place");
        let all = lists().iter().fold(0, |acc, (_, b)| acc | b);
        assert_eq!(all.count_ones() as usize, lists().len(), "one bit per list");
    }
}
