//! The memory settings of [`super::Changes`]: the limit, the reservation and
//! memory+swap, under one of two rules ([`Swap`]).
//!
//! The OCI `swap` (and runc's `--memory-swap`) is memory **plus** swap, as cgroup
//! v1's `memory.memsw.limit_in_bytes` takes it. cgroup v2 keeps swap apart
//! (`memory.swap.max`), so there it becomes swap − memory, runc's conversion
//! ([`v2_swap`]). On v1 memory+swap may never be below the memory limit, so the
//! two are written in the order the kernel accepts (see [`super::write_pair`]).

use std::path::{Path, PathBuf};

use super::{described, holding, v1_value, v2_value, write, write_pair, Changes};

/// How a container's memory+swap limit is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Swap {
    /// runc 1.1's reading (the plain runtime): the swap given is written, -1
    /// "unlimited"; none given leaves it as it is, except that a memory limit
    /// lifted (-1) lifts swap with it.
    AsGiven,
    /// No swap (`maibox --hardened`): memory+swap follows the memory limit (v2:
    /// `memory.swap.max` 0 under a memory limit); a swap asked for is not written.
    Withheld,
}

impl Swap {
    /// The rule of a runtime: runc's, or none for a strict one (`--hardened`).
    pub fn of(hardened: bool) -> Swap {
        match hardened {
            true => Swap::Withheld,
            false => Swap::AsGiven,
        }
    }

    /// The warning for a memory+swap `swap` (`what` names where it was asked; 0 or
    /// `None`: not asked) that this rule does not apply: under the strict rule,
    /// anything but memory+swap equal to the memory limit. `None` under runc's.
    pub fn not_applied(self, what: &str, memory: Option<i64>, swap: Option<i64>) -> Option<String> {
        let s = swap.filter(|s| *s != 0 && Some(*s) != memory)?;
        (self == Swap::Withheld).then(|| {
            format!(
                "{what} {s} not applied: maibox --hardened gives containers no swap (their \
                 memory+swap limit follows the memory limit)"
            )
        })
    }
}

/// Whether an update asks for nothing of the memory controller.
fn untouched(c: &Changes) -> bool {
    c.memory.is_none() && c.reservation.is_none() && c.swap.is_none()
}

/// Writes the memory settings of `c` to the container's groups `dirs`.
pub fn apply(dirs: &[PathBuf], c: &Changes, rule: Swap) -> Result<(), String> {
    if untouched(c) {
        return Ok(());
    }
    if let (Swap::AsGiven, Some(m), Some(s)) = (rule, c.memory, c.swap) {
        // Refused before anything is written (v1's kernel would take the limit
        // and then refuse memory+swap).
        if m > 0 && (0..m).contains(&s) {
            return Err(below(s, m));
        }
        if m < 0 && s >= 0 {
            return Err(format!(
                "memory+swap {s} needs a memory limit, and the change lifts it (-1): give a \
                 memory limit, or -1 for unlimited swap"
            ));
        }
    }
    if let Some(d) = holding(dirs, "memory.limit_in_bytes") {
        return v1(d, c, rule);
    }
    let d = holding(dirs, "memory.max").ok_or("the container has no memory cgroup")?;
    // As runc: swap first (v2 sets no order between the two), then the limits.
    let swap = match rule {
        Swap::AsGiven => v2_swap(c.swap, c.memory)?,
        Swap::Withheld => c.memory.filter(|m| *m > 0).map(|_| 0),
    };
    if let Some(s) = swap {
        let (f, v) = (d.join("memory.swap.max"), v2_value(s));
        if f.exists() {
            write(&f, &v).map_err(described(&f, &v))?;
        } else if rule == Swap::AsGiven && s >= 0 {
            // No swap accounting: nothing to lift, and no amount can be set.
            return Err(unaccounted(c.swap.unwrap_or(s), &f));
        }
    }
    if let Some(m) = c.memory {
        let (f, v) = (d.join("memory.max"), v2_value(m));
        write(&f, &v).map_err(described(&f, &v))?;
    }
    if let Some(r) = c.reservation {
        let (f, v) = (d.join("memory.low"), v2_value(r));
        write(&f, &v).map_err(described(&f, &v))?;
    }
    Ok(())
}

/// v1: the limit and memory+swap, in the order the kernel takes them.
fn v1(d: &Path, c: &Changes, rule: Swap) -> Result<(), String> {
    let memsw = d.join("memory.memsw.limit_in_bytes");
    let accounted = memsw.exists();
    let swap = match rule {
        Swap::AsGiven => {
            v1_swap(c.memory, c.swap, accounted).map_err(|s| unaccounted(s, &memsw))?
        }
        Swap::Withheld => c.memory.filter(|_| accounted),
    };
    if let (None, Some(s @ 0..)) = (c.memory, swap) {
        // Alone, memory+swap goes against the limit in place: said so rather
        // than the kernel's EINVAL.
        let f = d.join("memory.limit_in_bytes");
        let now = std::fs::read_to_string(&f).map_err(|e| format!("read {}: {e}", f.display()))?;
        if let Ok(m) = now.trim().parse::<i64>() {
            if s < m {
                return Err(below(s, m));
            }
        }
    }
    if let Some(r) = c.reservation {
        let (f, v) = (d.join("memory.soft_limit_in_bytes"), v1_value(r));
        write(&f, &v).map_err(described(&f, &v))?;
    }
    write_pair(
        c.memory
            .map(|m| (d.join("memory.limit_in_bytes"), v1_value(m))),
        swap.map(|s| (memsw, v1_value(s))),
    )
}

/// The memory+swap value runc 1.1 writes on v1 for a change of `memory` and
/// `swap` (`setMemoryAndSwap`): the one given, or -1 when the memory limit is
/// lifted without one. Without swap accounting (`accounted` false) there is
/// nothing to write, and an amount cannot be set (the `Err` holds it).
pub fn v1_swap(
    memory: Option<i64>,
    swap: Option<i64>,
    accounted: bool,
) -> Result<Option<i64>, i64> {
    let swap = match (memory, swap) {
        (Some(-1), None) => Some(-1),
        (_, s) => s,
    };
    match swap {
        Some(s) if !accounted && s >= 0 => Err(s),
        s if accounted => Ok(s),
        _ => Ok(None),
    }
}

/// runc's conversion of an OCI memory+swap to cgroup v2's `memory.swap.max`
/// (`ConvertMemorySwapToCgroupV2Value`), -1 meaning "max": swap − memory, -1
/// for -1, and -1 when the memory limit is lifted without a swap given. v2
/// cannot set memory+swap without knowing the memory limit: both must come
/// together, as runc requires.
pub fn v2_swap(swap: Option<i64>, memory: Option<i64>) -> Result<Option<i64>, String> {
    let s = match (swap, memory) {
        (None, Some(-1)) | (Some(-1), _) => return Ok(Some(-1)),
        (None, _) => return Ok(None),
        (Some(s), _) => s,
    };
    match memory {
        Some(m) if m > 0 && s >= m => Ok(Some(s - m)),
        Some(m) if m > 0 => Err(below(s, m)),
        _ => Err(format!(
            "memory+swap {s} needs the memory limit with it on cgroup v2 (memory.swap.max is \
             memory+swap minus the memory limit): give --memory too, or -1 for unlimited swap"
        )),
    }
}

fn below(swap: i64, memory: i64) -> String {
    format!(
        "memory+swap {swap} is below the memory limit {memory}: it counts memory plus swap \
         and must be at least the memory limit"
    )
}

fn unaccounted(swap: i64, file: &Path) -> String {
    format!(
        "memory+swap {swap} cannot be set: this host has no swap accounting ({} is missing; \
         boot with swapaccount=1), so leave swap out or give -1",
        file.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v2_swap_is_runcs_conversion() {
        const M: i64 = 52428800;
        // The bats figures: 96468992 - 52428800 of swap.
        assert_eq!(v2_swap(Some(96468992), Some(M)), Ok(Some(44040192)));
        // Equal: no swap at all.
        assert_eq!(v2_swap(Some(M), Some(M)), Ok(Some(0)));
        assert_eq!(v2_swap(Some(-1), Some(M)), Ok(Some(-1)));
        assert_eq!(v2_swap(Some(-1), None), Ok(Some(-1)));
        // Memory lifted without a swap: swap lifted with it.
        assert_eq!(v2_swap(None, Some(-1)), Ok(Some(-1)));
        // No swap given: left alone.
        assert_eq!(v2_swap(None, Some(M)), Ok(None));
        assert_eq!(v2_swap(None, None), Ok(None));
        let below = v2_swap(Some(M - 1), Some(M)).unwrap_err();
        assert!(below.contains("at least the memory limit"), "{below}");
        for memory in [None, Some(-1)] {
            let alone = v2_swap(Some(M), memory).unwrap_err();
            assert!(alone.contains("needs the memory limit"), "{alone}");
        }
    }

    #[test]
    fn v1_swap_follows_setmemoryandswap() {
        assert_eq!(
            v1_swap(Some(50 << 20), Some(80 << 20), true),
            Ok(Some(80 << 20))
        );
        assert_eq!(v1_swap(None, Some(96468992), true), Ok(Some(96468992)));
        assert_eq!(v1_swap(Some(-1), None, true), Ok(Some(-1)));
        assert_eq!(v1_swap(Some(-1), Some(64 << 20), true), Ok(Some(64 << 20)));
        // A memory limit alone leaves memory+swap as it is.
        assert_eq!(v1_swap(Some(50 << 20), None, true), Ok(None));
        // Without swap accounting: lifting is a no-op, an amount an error.
        assert_eq!(v1_swap(Some(-1), None, false), Ok(None));
        assert_eq!(v1_swap(None, Some(-1), false), Ok(None));
        assert_eq!(v1_swap(Some(1 << 20), Some(2 << 20), false), Err(2 << 20));
    }

    /// The v1 writes on files standing in for a group: the rule decides what
    /// memory+swap gets (the kernel's ordering is tested in tests/oci.rs).
    #[test]
    fn the_rule_decides_what_memory_and_swap_get() {
        let d = tempfile::tempdir().unwrap();
        let (limit, memsw) = (
            d.path().join("memory.limit_in_bytes"),
            d.path().join("memory.memsw.limit_in_bytes"),
        );
        let read = |p: &Path| std::fs::read_to_string(p).unwrap();
        let dirs = [d.path().to_path_buf()];
        let c = Changes {
            memory: Some(30 << 20),
            swap: Some(50 << 20),
            ..Changes::default()
        };
        for f in [&limit, &memsw] {
            std::fs::write(f, "-1").unwrap();
        }
        apply(&dirs, &c, Swap::AsGiven).unwrap();
        assert_eq!(
            (read(&limit), read(&memsw)),
            ("31457280".into(), "52428800".into())
        );
        // Below the memory limit: refused before anything is written.
        let below = Changes {
            memory: Some(40 << 20),
            swap: Some(35 << 20),
            ..Changes::default()
        };
        let e = apply(&dirs, &below, Swap::AsGiven).unwrap_err();
        assert!(e.contains("at least the memory limit"), "{e}");
        assert_eq!(read(&limit), "31457280");
        // Alone, against the limit in place (30M), or with the limit lifted: refused.
        let alone = Changes {
            swap: Some(20 << 20),
            ..Changes::default()
        };
        let e = apply(&dirs, &alone, Swap::AsGiven).unwrap_err();
        assert!(e.contains("below the memory limit 31457280"), "{e}");
        let lifted = Changes {
            memory: Some(-1),
            swap: Some(64 << 20),
            ..Changes::default()
        };
        let e = apply(&dirs, &lifted, Swap::AsGiven).unwrap_err();
        assert!(e.contains("needs a memory limit"), "{e}");
        assert_eq!(
            (read(&limit), read(&memsw)),
            ("31457280".into(), "52428800".into())
        );
        // Control: the strict rule gives no swap whatever is asked.
        apply(&dirs, &c, Swap::Withheld).unwrap();
        assert_eq!(read(&memsw), "31457280");
        let lift = Changes {
            swap: Some(-1),
            ..Changes::default()
        };
        apply(&dirs, &lift, Swap::Withheld).unwrap();
        assert_eq!(read(&memsw), "31457280");
        apply(&dirs, &lift, Swap::AsGiven).unwrap();
        assert_eq!(read(&memsw), "-1");
        // A memory limit alone: runc leaves memory+swap; the strict rule follows it.
        let memory = Changes {
            memory: Some(20 << 20),
            ..Changes::default()
        };
        apply(&dirs, &memory, Swap::AsGiven).unwrap();
        assert_eq!(read(&memsw), "-1");
        apply(&dirs, &memory, Swap::Withheld).unwrap();
        assert_eq!(read(&memsw), "20971520");
    }

    #[test]
    fn v2_files_get_the_converted_swap() {
        let d = tempfile::tempdir().unwrap();
        let (max, swap) = (
            d.path().join("memory.max"),
            d.path().join("memory.swap.max"),
        );
        let read = |p: &Path| std::fs::read_to_string(p).unwrap();
        std::fs::write(&max, "max").unwrap();
        std::fs::write(&swap, "max").unwrap();
        let dirs = [d.path().to_path_buf()];
        let c = Changes {
            memory: Some(30 << 20),
            swap: Some(50 << 20),
            ..Changes::default()
        };
        apply(&dirs, &c, Swap::AsGiven).unwrap();
        assert_eq!(
            (read(&max), read(&swap)),
            ("31457280".into(), "20971520".into())
        );
        apply(&dirs, &c, Swap::Withheld).unwrap();
        assert_eq!(read(&swap), "0");
        let lift = Changes {
            memory: Some(-1),
            ..Changes::default()
        };
        apply(&dirs, &lift, Swap::AsGiven).unwrap();
        assert_eq!((read(&max), read(&swap)), ("max".into(), "max".into()));
        // Without swap accounting: lifting is a no-op, an amount refused (the
        // strict rule has nothing to withhold then).
        std::fs::remove_file(&swap).unwrap();
        apply(&dirs, &lift, Swap::AsGiven).unwrap();
        let e = apply(&dirs, &c, Swap::AsGiven).unwrap_err();
        assert!(e.contains("no swap accounting"), "{e}");
        apply(&dirs, &c, Swap::Withheld).unwrap();
        assert!(!swap.exists());
    }
}
