//! A container's resource usage read from its cgroup directories, in the shape
//! `runc events` prints (`types.Stats` of runc's events API, which tools that
//! parse `events` output decode): cpu, cpuset, memory, pids. Block I/O and
//! hugetlb stay empty: maibox puts containers in neither controller.
//!
//! The directories are told apart by the files they hold, so one reader serves
//! v1 (one directory per controller) and v2 (one for all).

use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Debug, Default, Serialize)]
pub struct Stats {
    pub cpu: Cpu,
    pub cpuset: CpuSet,
    pub memory: Memory,
    pub pids: Pids,
    pub blkio: BTreeMap<String, ()>,
    pub hugetlb: BTreeMap<String, ()>,
}

#[derive(Debug, Default, Serialize)]
pub struct Cpu {
    pub usage: CpuUsage,
    pub throttling: Throttling,
}

/// Nanoseconds.
#[derive(Debug, Default, Serialize)]
pub struct CpuUsage {
    #[serde(skip_serializing_if = "is_zero")]
    pub total: u64,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub percpu: Vec<u64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub percpu_kernel: Vec<u64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub percpu_user: Vec<u64>,
    pub kernel: u64,
    pub user: u64,
}

#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Throttling {
    #[serde(skip_serializing_if = "is_zero")]
    pub periods: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub throttled_periods: u64,
    /// Nanoseconds.
    #[serde(skip_serializing_if = "is_zero")]
    pub throttled_time: u64,
}

#[derive(Debug, Default, Serialize)]
pub struct CpuSet {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cpus: Vec<u16>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mems: Vec<u16>,
}

#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Memory {
    #[serde(skip_serializing_if = "is_zero")]
    pub cache: u64,
    pub usage: MemoryEntry,
    pub swap: MemoryEntry,
    pub kernel: MemoryEntry,
    #[serde(rename = "kernelTCP")]
    pub kernel_tcp: MemoryEntry,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub raw: BTreeMap<String, u64>,
}

#[derive(Debug, Default, Serialize)]
pub struct MemoryEntry {
    /// `u64::MAX` when unlimited, as runc reports it.
    pub limit: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub usage: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub max: u64,
    pub failcnt: u64,
}

#[derive(Debug, Default, Serialize)]
pub struct Pids {
    #[serde(skip_serializing_if = "is_zero")]
    pub current: u64,
    /// 0 when unlimited.
    #[serde(skip_serializing_if = "is_zero")]
    pub limit: u64,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// v1's `cpuacct.stat` counts in USER_HZ ticks, 100 a second on Linux.
const NS_PER_TICK: u64 = 10_000_000;

/// The first of `dirs` that holds `file`.
fn holding<'a>(dirs: &'a [PathBuf], file: &str) -> Option<&'a Path> {
    dirs.iter()
        .map(PathBuf::as_path)
        .find(|d| d.join(file).exists())
}

fn read(dir: &Path, file: &str) -> Option<String> {
    std::fs::read_to_string(dir.join(file)).ok()
}

/// A number, or `u64::MAX` for "max" (v2's unlimited).
fn number(dir: &Path, file: &str) -> u64 {
    match read(dir, file).as_deref().map(str::trim) {
        Some("max") => u64::MAX,
        Some(s) => s.parse().unwrap_or(0),
        None => 0,
    }
}

/// A flat keyed file (`memory.stat`, `cpu.stat`, `cpuacct.stat`): key → value.
fn keyed(dir: &Path, file: &str) -> BTreeMap<String, u64> {
    read(dir, file)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(' ')?;
            Some((k.to_string(), v.trim().parse().ok()?))
        })
        .collect()
}

fn list(dir: &Path, file: &str) -> Vec<u64> {
    read(dir, file)
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|v| v.parse().ok())
        .collect()
}

/// "0-2,5" → [0, 1, 2, 5].
pub fn parse_cpu_list(s: &str) -> Vec<u16> {
    let mut out = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        if let (Ok(a), Ok(b)) = (a.trim().parse::<u16>(), b.trim().parse::<u16>()) {
            out.extend(a..=b);
        }
    }
    out
}

/// Reads the stats of the container whose cgroup directories are `dirs`.
pub fn read_stats(dirs: &[PathBuf]) -> Stats {
    Stats {
        cpu: cpu(dirs),
        cpuset: cpuset(dirs),
        memory: memory(dirs),
        pids: pids(dirs),
        ..Stats::default()
    }
}

fn cpu(dirs: &[PathBuf]) -> Cpu {
    let mut c = Cpu::default();
    if let Some(d) = holding(dirs, "cpuacct.usage") {
        c.usage.total = number(d, "cpuacct.usage");
        c.usage.percpu = list(d, "cpuacct.usage_percpu");
        c.usage.percpu_kernel = list(d, "cpuacct.usage_percpu_sys");
        c.usage.percpu_user = list(d, "cpuacct.usage_percpu_user");
        if d.join("cpuacct.usage_sys").exists() {
            c.usage.kernel = number(d, "cpuacct.usage_sys");
            c.usage.user = number(d, "cpuacct.usage_user");
        } else {
            let st = keyed(d, "cpuacct.stat");
            c.usage.kernel = st.get("system").copied().unwrap_or(0) * NS_PER_TICK;
            c.usage.user = st.get("user").copied().unwrap_or(0) * NS_PER_TICK;
        }
    }
    if let Some(d) = holding(dirs, "cpu.cfs_quota_us") {
        let st = keyed(d, "cpu.stat");
        c.throttling.periods = st.get("nr_periods").copied().unwrap_or(0);
        c.throttling.throttled_periods = st.get("nr_throttled").copied().unwrap_or(0);
        c.throttling.throttled_time = st.get("throttled_time").copied().unwrap_or(0);
    } else if let Some(d) = holding(dirs, "cpu.stat").filter(|d| d.join("cgroup.type").exists()) {
        // v2: microseconds.
        let st = keyed(d, "cpu.stat");
        let us = |k: &str| st.get(k).copied().unwrap_or(0) * 1000;
        c.usage.total = us("usage_usec");
        c.usage.kernel = us("system_usec");
        c.usage.user = us("user_usec");
        c.throttling.periods = st.get("nr_periods").copied().unwrap_or(0);
        c.throttling.throttled_periods = st.get("nr_throttled").copied().unwrap_or(0);
        c.throttling.throttled_time = us("throttled_usec");
    }
    c
}

fn cpuset(dirs: &[PathBuf]) -> CpuSet {
    let Some(d) = holding(dirs, "cpuset.cpus") else {
        return CpuSet::default();
    };
    // v2 leaves cpuset.cpus empty when inherited: the effective set is what applies.
    let pick = |f: &str| {
        let own = read(d, f).unwrap_or_default();
        if own.trim().is_empty() {
            read(d, &format!("{f}.effective")).unwrap_or_default()
        } else {
            own
        }
    };
    CpuSet {
        cpus: parse_cpu_list(&pick("cpuset.cpus")),
        mems: parse_cpu_list(&pick("cpuset.mems")),
    }
}

fn memory(dirs: &[PathBuf]) -> Memory {
    let mut m = Memory::default();
    if let Some(d) = holding(dirs, "memory.usage_in_bytes") {
        let entry = |prefix: &str| MemoryEntry {
            limit: number(d, &format!("{prefix}.limit_in_bytes")),
            usage: number(d, &format!("{prefix}.usage_in_bytes")),
            max: number(d, &format!("{prefix}.max_usage_in_bytes")),
            failcnt: number(d, &format!("{prefix}.failcnt")),
        };
        m.usage = entry("memory");
        m.swap = entry("memory.memsw");
        m.kernel = entry("memory.kmem");
        m.kernel_tcp = entry("memory.kmem.tcp");
        m.raw = keyed(d, "memory.stat");
        m.cache = m.raw.get("cache").copied().unwrap_or(0);
    } else if let Some(d) = holding(dirs, "memory.current") {
        let events = keyed(d, "memory.events");
        m.usage = MemoryEntry {
            limit: number(d, "memory.max"),
            usage: number(d, "memory.current"),
            max: number(d, "memory.peak"),
            failcnt: events.get("max").copied().unwrap_or(0),
        };
        if d.join("memory.swap.current").exists() {
            m.swap = MemoryEntry {
                limit: number(d, "memory.swap.max"),
                usage: number(d, "memory.swap.current"),
                max: number(d, "memory.swap.peak"),
                failcnt: 0,
            };
        }
        m.raw = keyed(d, "memory.stat");
        m.cache = m.raw.get("file").copied().unwrap_or(0);
    }
    m
}

fn pids(dirs: &[PathBuf]) -> Pids {
    let Some(d) = holding(dirs, "pids.current") else {
        return Pids::default();
    };
    let limit = number(d, "pids.max");
    Pids {
        current: number(d, "pids.current"),
        limit: if limit == u64::MAX { 0 } else { limit },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_expand() {
        assert_eq!(parse_cpu_list("0-2,5\n"), vec![0, 1, 2, 5]);
        assert_eq!(parse_cpu_list(""), Vec::<u16>::new());
        assert_eq!(parse_cpu_list("3"), vec![3]);
    }

    #[test]
    fn v1_files_are_read_by_what_they_hold() {
        let d = tempfile::tempdir().unwrap();
        let (mem, acct, pids) = (d.path().join("m"), d.path().join("a"), d.path().join("p"));
        for x in [&mem, &acct, &pids] {
            std::fs::create_dir(x).unwrap();
        }
        std::fs::write(mem.join("memory.usage_in_bytes"), "4096\n").unwrap();
        std::fs::write(mem.join("memory.limit_in_bytes"), "33554432\n").unwrap();
        std::fs::write(mem.join("memory.failcnt"), "3\n").unwrap();
        std::fs::write(mem.join("memory.stat"), "cache 8192\nrss 4096\n").unwrap();
        std::fs::write(acct.join("cpuacct.usage"), "1500\n").unwrap();
        std::fs::write(acct.join("cpuacct.usage_percpu"), "1000 500 \n").unwrap();
        std::fs::write(acct.join("cpuacct.stat"), "user 2\nsystem 1\n").unwrap();
        std::fs::write(pids.join("pids.current"), "2\n").unwrap();
        std::fs::write(pids.join("pids.max"), "max\n").unwrap();
        let s = read_stats(&[mem, acct, pids]);
        assert_eq!(s.memory.usage.usage, 4096);
        assert_eq!(s.memory.usage.limit, 33554432);
        assert_eq!(s.memory.usage.failcnt, 3);
        assert_eq!(s.memory.cache, 8192);
        assert_eq!(s.cpu.usage.total, 1500);
        assert_eq!(s.cpu.usage.percpu, vec![1000, 500]);
        assert_eq!(s.cpu.usage.user, 2 * NS_PER_TICK);
        assert_eq!(s.pids.current, 2);
        assert_eq!(s.pids.limit, 0);
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(v["memory"]["usage"]["limit"], 33554432);
        assert_eq!(v["cpu"]["usage"]["kernel"], NS_PER_TICK);
        assert!(v["pids"].get("limit").is_none());
    }
}
