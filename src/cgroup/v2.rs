//! cgroup v2 (unified hierarchy).

use super::{keyed, read_u64, write, CgroupError, Limits, Usage};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const PERIOD_US: u64 = 100_000;

pub fn create(
    root: &Path,
    parent_rel: &Path,
    rel: &Path,
    l: &Limits,
    join_existing: bool,
) -> Result<BTreeMap<String, PathBuf>, CgroupError> {
    // Controllers must be enabled in every ancestor's subtree_control, from the root down.
    let mut cur = root.to_path_buf();
    enable_controllers(&cur)?;
    for comp in parent_rel.components() {
        cur.push(comp);
        // create_dir_all, as on v1: another run may make the same parent meanwhile
        // (checking first and then creating lost that race: EEXIST).
        std::fs::create_dir_all(&cur).map_err(super::io("create the parent cgroup", &cur))?;
        enable_controllers(&cur)?;
    }
    let dir = root.join(rel);
    let guard = if join_existing && dir.is_dir() {
        RemoveOnError(None)
    } else {
        std::fs::create_dir(&dir).map_err(super::io("create the run's cgroup", &dir))?;
        RemoveOnError(Some(dir.clone()))
    };
    set_limits(&dir, l)?;
    std::mem::forget(guard);
    Ok(BTreeMap::from([("unified".to_string(), dir)]))
}

/// Writes the limits of `l` into the group at `dir`; a zero limit is "not limited"
/// (an OCI spec may leave any of them out).
pub fn set_limits(dir: &Path, l: &Limits) -> Result<(), CgroupError> {
    if l.memory_bytes > 0 {
        write(
            "set memory.max",
            &dir.join("memory.max"),
            &l.memory_bytes.to_string(),
        )?;
        if dir.join("memory.swap.max").exists() {
            write("set memory.swap.max", &dir.join("memory.swap.max"), "0")?;
        }
    }
    if l.pids > 0 {
        write("set pids.max", &dir.join("pids.max"), &l.pids.to_string())?;
    }
    if l.cpus > 0.0 {
        let quota = ((l.cpus * PERIOD_US as f64).round() as u64).max(1000);
        write(
            "set cpu.max",
            &dir.join("cpu.max"),
            &format!("{quota} {PERIOD_US}"),
        )?;
    }
    Ok(())
}

struct RemoveOnError(Option<PathBuf>);
impl Drop for RemoveOnError {
    fn drop(&mut self) {
        if let Some(d) = self.0.take() {
            let _ = std::fs::remove_dir(d);
        }
    }
}

fn enable_controllers(dir: &Path) -> Result<(), CgroupError> {
    let sub = dir.join("cgroup.subtree_control");
    let have = std::fs::read_to_string(&sub).unwrap_or_default();
    let want: Vec<&str> = ["memory", "pids", "cpu"]
        .into_iter()
        .filter(|c| !have.split_whitespace().any(|h| h == *c))
        .collect();
    if want.is_empty() {
        return Ok(());
    }
    let line = want
        .iter()
        .map(|c| format!("+{c}"))
        .collect::<Vec<_>>()
        .join(" ");
    write("enable controllers", &sub, &line)
}

pub fn stats(dirs: &BTreeMap<String, PathBuf>) -> Usage {
    let Some(d) = dirs.values().next() else {
        return Usage::default();
    };
    let current = read_u64(&d.join("memory.current"));
    let peak = read_u64(&d.join("memory.peak")).max(current);
    Usage {
        memory_current_bytes: current,
        memory_peak_bytes: peak,
        oom_kills: keyed(&d.join("memory.events"), "oom_kill"),
        pids_current: read_u64(&d.join("pids.current")),
        pids_limit_hits: keyed(&d.join("pids.events"), "max"),
        cpu_usage_usec: Some(keyed(&d.join("cpu.stat"), "usage_usec")),
    }
}

pub fn kill_all(dirs: &BTreeMap<String, PathBuf>) {
    for d in dirs.values() {
        // cgroup.kill (Linux 5.14) kills every process atomically, forks included.
        if std::fs::write(d.join("cgroup.kill"), "1").is_err() {
            super::v1::kill_all_one(d, None);
        }
    }
}
