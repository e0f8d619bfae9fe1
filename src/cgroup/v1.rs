//! cgroup v1 and hybrid hosts: memory, pids, cpu (CFS quota), cpuacct, freezer.

use super::{keyed, procs, read_u64, write, CgroupError, Limits, Usage};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const PERIOD_US: u64 = 100_000;

pub fn create(
    controllers: &BTreeMap<String, PathBuf>,
    rel: &Path,
    l: &Limits,
    join_existing: bool,
) -> Result<BTreeMap<String, PathBuf>, CgroupError> {
    // Groups this call made: only these are removed when a limit cannot be set.
    let (dirs, made) = create_dirs(controllers, rel, join_existing)?;
    if let Err(e) = set_limits(&dirs, l) {
        for d in &made {
            let _ = std::fs::remove_dir(d);
        }
        return Err(e);
    }
    if !dirs.contains_key("memory") {
        return Err(CgroupError::Invalid(
            "the v1 memory controller is not mounted".into(),
        ));
    }
    Ok(dirs)
}

/// The run's group in each controller's hierarchy: controller → directory,
/// and the directories this call made.
fn create_dirs(
    controllers: &BTreeMap<String, PathBuf>,
    rel: &Path,
    join_existing: bool,
) -> Result<(BTreeMap<String, PathBuf>, Vec<PathBuf>), CgroupError> {
    let mut dirs = BTreeMap::new();
    let mut made = Vec::new();
    // cpu and cpuacct are often co-mounted: one directory serves both.
    let mut seen = std::collections::BTreeSet::new();
    for (name, mount) in controllers {
        if !seen.insert(mount.clone()) {
            continue;
        }
        let dir = mount.join(rel);
        if let Some(parent) = dir.parent() {
            std::fs::create_dir_all(parent)
                .map_err(super::io("create the parent cgroup", parent))?;
        }
        if !(join_existing && dir.is_dir()) {
            std::fs::create_dir(&dir).map_err(super::io("create the run's cgroup", &dir))?;
            made.push(dir.clone());
        }
        dirs.insert(name.clone(), dir);
    }
    Ok((dirs, made))
}

/// Writes the limits of `l`; a zero limit is "not limited" (an OCI spec may
/// leave any of them out).
pub fn set_limits(dirs: &BTreeMap<String, PathBuf>, l: &Limits) -> Result<(), CgroupError> {
    let set = |ctl: &str, file: &str, v: String, step: &'static str| -> Result<(), CgroupError> {
        match dirs.get(ctl) {
            Some(d) if d.join(file).exists() => write(step, &d.join(file), &v),
            _ => Ok(()),
        }
    };
    if l.memory_bytes > 0 {
        set(
            "memory",
            "memory.limit_in_bytes",
            l.memory_bytes.to_string(),
            "set memory.limit_in_bytes",
        )?;
        // No swap: memsw equal to the memory limit (only where swap accounting exists).
        set(
            "memory",
            "memory.memsw.limit_in_bytes",
            l.memory_bytes.to_string(),
            "set memory.memsw.limit_in_bytes",
        )?;
    }
    if l.pids > 0 {
        set("pids", "pids.max", l.pids.to_string(), "set pids.max")?;
    }
    if l.cpus <= 0.0 {
        return Ok(());
    }
    let quota = ((l.cpus * PERIOD_US as f64).round() as u64).max(1000);
    let cpu = if dirs.contains_key("cpu") {
        "cpu"
    } else {
        "cpuacct"
    };
    set(
        cpu,
        "cpu.cfs_period_us",
        PERIOD_US.to_string(),
        "set cpu.cfs_period_us",
    )?;
    set(
        cpu,
        "cpu.cfs_quota_us",
        quota.to_string(),
        "set cpu.cfs_quota_us",
    )
}

fn dir_of<'a>(dirs: &'a BTreeMap<String, PathBuf>, ctl: &str) -> Option<&'a PathBuf> {
    dirs.get(ctl)
}

pub fn stats(dirs: &BTreeMap<String, PathBuf>) -> Usage {
    let mem = dir_of(dirs, "memory");
    let pids = dir_of(dirs, "pids");
    let acct = dir_of(dirs, "cpuacct").or_else(|| dir_of(dirs, "cpu"));
    Usage {
        memory_current_bytes: mem
            .map(|d| read_u64(&d.join("memory.usage_in_bytes")))
            .unwrap_or(0),
        memory_peak_bytes: mem
            .map(|d| read_u64(&d.join("memory.max_usage_in_bytes")))
            .unwrap_or(0),
        oom_kills: mem
            .map(|d| keyed(&d.join("memory.oom_control"), "oom_kill"))
            .unwrap_or(0),
        pids_current: pids.map(|d| read_u64(&d.join("pids.current"))).unwrap_or(0),
        pids_limit_hits: pids
            .map(|d| keyed(&d.join("pids.events"), "max"))
            .unwrap_or(0),
        cpu_usage_usec: acct
            .and_then(|d| super::read_opt(&d.join("cpuacct.usage")))
            .map(|ns| ns / 1000),
    }
}

pub fn kill_all(dirs: &BTreeMap<String, PathBuf>) {
    let freezer = dir_of(dirs, "freezer");
    let Some(mem) = dir_of(dirs, "memory") else {
        return;
    };
    kill_all_one(mem, freezer.map(PathBuf::as_path));
}

/// Freezes the group so nothing can fork while we kill, SIGKILLs every task, thaws.
pub fn kill_all_one(dir: &Path, freezer: Option<&Path>) {
    for _ in 0..50 {
        let pids = procs(dir);
        if pids.is_empty() {
            break;
        }
        if let Some(f) = freezer {
            let _ = std::fs::write(f.join("freezer.state"), "FROZEN");
        }
        for p in pids {
            let _ = kill(Pid::from_raw(p), Signal::SIGKILL);
        }
        if let Some(f) = freezer {
            let _ = std::fs::write(f.join("freezer.state"), "THAWED");
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}
