//! Per-run cgroups, one interface over cgroup v2 and v1/hybrid hosts.
//!
//! The files are written directly rather than through cgroups-rs: that crate places
//! new groups relative to the caller's own cgroup by default (on a managed host that
//! is someone else's subtree) and a run needs only a dozen plain text files. Every
//! path here is absolute, under a configurable parent (default `/maibox`) at the root
//! of each hierarchy; nothing relative to maibox's own cgroup is ever touched.

pub mod delegation;
pub mod freezer;
pub mod hierarchy;
pub mod oci;
pub mod resources;
pub mod stats;
mod v1;
mod v2;

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum CgroupError {
    #[error("cgroup: {step}: {path}: {source}")]
    Io {
        step: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cgroup: {0}")]
    Invalid(String),
}

fn io(step: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> CgroupError {
    let path = path.to_path_buf();
    move |source| CgroupError::Io { step, path, source }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CgroupConfig {
    /// Absolute parent of the per-run groups in every hierarchy.
    pub parent: String,
    /// When the caller cannot create cgroups (rootless without a delegated
    /// subtree), run with rlimits only and say so in the report (true), or refuse.
    pub allow_degraded: bool,
    /// How often the supervisor samples usage, in milliseconds.
    pub sample_ms: u64,
}

impl Default for CgroupConfig {
    fn default() -> Self {
        CgroupConfig {
            parent: "/maibox".into(),
            allow_degraded: true,
            sample_ms: 100,
        }
    }
}

impl CgroupConfig {
    pub fn validate(&self) -> Result<(), String> {
        let p = Path::new(&self.parent);
        if !p.is_absolute() {
            return Err(format!(
                "cgroup.parent {:?} must be absolute (e.g. /maibox)",
                self.parent
            ));
        }
        if p.components()
            .any(|c| matches!(c, std::path::Component::ParentDir))
            || p == Path::new("/")
        {
            return Err(format!(
                "cgroup.parent {:?} must not contain .. or be the root",
                self.parent
            ));
        }
        if !(10..=10_000).contains(&self.sample_ms) {
            return Err("cgroup.sample_ms must be between 10 and 10000".into());
        }
        Ok(())
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Layout {
    V2 {
        root: PathBuf,
    },
    /// v1 (or hybrid with controllers on v1): controller name → mount point.
    V1 {
        controllers: BTreeMap<String, PathBuf>,
    },
    None,
}

impl Layout {
    pub fn name(&self) -> &'static str {
        match self {
            Layout::V2 { .. } => "v2",
            Layout::V1 { .. } => "v1",
            Layout::None => "none",
        }
    }
}

/// Reads /proc/self/mountinfo: cgroup2 with controllers wins, else the v1 hierarchies.
pub fn detect() -> Layout {
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return Layout::None;
    };
    let mut v2 = None;
    let mut v1 = BTreeMap::new();
    for line in info.lines() {
        let Some((pre, post)) = line.split_once(" - ") else {
            continue;
        };
        let mount_point = pre.split_whitespace().nth(4).unwrap_or_default();
        let mut post = post.split_whitespace();
        let fstype = post.next().unwrap_or_default();
        let super_opts = post.nth(1).unwrap_or_default();
        match fstype {
            "cgroup2" => {
                let ctl = Path::new(mount_point).join("cgroup.controllers");
                let has = std::fs::read_to_string(&ctl)
                    .map(|c| c.contains("memory"))
                    .unwrap_or(false);
                if has {
                    v2 = Some(PathBuf::from(mount_point));
                }
            }
            "cgroup" => {
                for opt in super_opts.split(',') {
                    // Only controllers that enforce something: every hierarchy a run
                    // joins costs an RCU grace period when the sandbox is attached.
                    // CPU usage comes from cpuacct only where it shares cpu's mount.
                    if ["memory", "pids", "cpu"].contains(&opt)
                        || (opt == "cpuacct" && super_opts.split(',').any(|o| o == "cpu"))
                    {
                        v1.entry(opt.to_string())
                            .or_insert_with(|| PathBuf::from(mount_point));
                    }
                }
            }
            _ => {}
        }
    }
    match (v2, v1.contains_key("memory")) {
        (Some(root), _) => Layout::V2 { root },
        (None, true) => Layout::V1 { controllers: v1 },
        _ => Layout::None,
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Limits {
    pub memory_bytes: u64,
    pub cpus: f64,
    pub pids: u64,
}

#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Usage {
    pub memory_current_bytes: u64,
    pub memory_peak_bytes: u64,
    pub oom_kills: u64,
    pub pids_current: u64,
    /// How often a fork failed at pids.max.
    pub pids_limit_hits: u64,
    /// `None` where no CPU accounting is at hand: a v1 host whose cpuacct
    /// controller is mounted apart from cpu.
    pub cpu_usage_usec: Option<u64>,
}

/// The cgroup(s) of one run.
pub struct RunCgroup {
    layout: Layout,
    /// One directory per hierarchy (one on v2).
    dirs: BTreeMap<String, PathBuf>,
    /// Those of `dirs` that existed before (an OCI cgroupsPath someone
    /// prepared): emptied but never removed when this value is dropped.
    joined: Vec<PathBuf>,
    pub limits: Limits,
    removed: bool,
    /// The group held someone else's processes when it was joined: they are
    /// never killed by this value's drop (a failed `create` kills its own
    /// init by pid).
    shared: bool,
}

/// Name of a run's group: the owner's pid and start time let the next maibox tell a
/// group whose supervisor died (and clean it up) from one still in use.
fn group_name(run_id: &str) -> String {
    format!("run-{}-{run_id}", owner_tag())
}

/// `<pid>-<start time>` of this process: names that carry it let a later maibox tell
/// leftovers of a dead supervisor from things still in use (pids get reused, start
/// times with them do not).
pub fn owner_tag() -> String {
    let pid = std::process::id();
    format!("{pid}-{}", own_start_time(pid))
}

/// This process's start time, read once per pid: a server names, and checks the
/// owner of, several cgroups and directories for every sandbox it prepares, and
/// each read of /proc/PID/stat costs tens of microseconds. Keyed by the pid, since
/// a forked child is another process with another start time; atomics rather than
/// a lock, which a child forked while another thread held it could never take.
fn own_start_time(pid: u32) -> u64 {
    use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
    static PID: AtomicU32 = AtomicU32::new(0);
    static START: AtomicU64 = AtomicU64::new(0);
    if PID.load(Ordering::Acquire) == pid {
        return START.load(Ordering::Relaxed);
    }
    let start = process_start_time(pid).unwrap_or(0);
    // The start first: a reader that sees this pid sees its start.
    START.store(start, Ordering::Relaxed);
    PID.store(pid, Ordering::Release);
    start
}

/// Whether the owner named by an `owner_tag()` at the start of `rest` still runs.
/// Anything that does not parse counts as alive: never remove what is not ours.
pub fn tag_owner_alive(rest: &str) -> bool {
    let mut parts = rest.splitn(3, '-');
    let (Some(pid), Some(start)) = (parts.next(), parts.next()) else {
        return true;
    };
    let (Ok(pid), Ok(start)) = (pid.parse::<u32>(), start.parse::<u64>()) else {
        return true;
    };
    if pid == std::process::id() {
        // The server's own sandboxes, most of what a sweep finds: no /proc read.
        return own_start_time(pid) == start;
    }
    process_start_time(pid) == Some(start)
}

fn process_start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Field 22, counted after the ")" that ends the command name.
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(19)?
        .parse()
        .ok()
}

fn owner_alive(name: &str) -> bool {
    match name.strip_prefix("run-") {
        Some(rest) => tag_owner_alive(rest),
        None => true, // not ours: never touch it
    }
}

/// How many processes the groups at `dirs` already hold (each counted once):
/// another container's, when an OCI `cgroupsPath` names a group in use.
/// `rel` under every hierarchy's root: one directory on v2, one a controller on v1.
fn dirs_at(layout: &Layout, rel: &Path) -> Vec<PathBuf> {
    match layout {
        Layout::V2 { root } => vec![root.join(rel)],
        Layout::V1 { controllers } => controllers.values().map(|m| m.join(rel)).collect(),
        Layout::None => Vec::new(),
    }
}

/// Makes (or, with `join_existing`, joins) the group `rel` with `limits` under
/// every hierarchy; `parent` is where v2 enables the controllers it needs.
fn make_dirs(
    layout: &Layout,
    parent: &Path,
    rel: &Path,
    limits: &Limits,
    join_existing: bool,
) -> Result<BTreeMap<String, PathBuf>, CgroupError> {
    match layout {
        Layout::V2 { root } => v2::create(root, parent, rel, limits, join_existing),
        Layout::V1 { controllers } => v1::create(controllers, rel, limits, join_existing),
        Layout::None => Err(CgroupError::Invalid(
            "no cgroup hierarchy with a memory controller is mounted".into(),
        )),
    }
}

pub fn processes_in(dirs: &[PathBuf]) -> usize {
    pids_in(dirs.iter()).len()
}

/// The processes in the groups at `dirs`, each once (host pids).
fn pids_in<'d>(dirs: impl Iterator<Item = &'d PathBuf>) -> Vec<i32> {
    let mut pids: Vec<i32> = dirs.flat_map(|d| procs(d)).collect();
    pids.sort_unstable();
    pids.dedup();
    pids
}

/// Where a run's group goes under `cfg.parent`, relative to a hierarchy's root.
fn run_rel(cfg: &CgroupConfig, run_id: &str) -> PathBuf {
    Path::new(cfg.parent.trim_start_matches('/')).join(group_name(run_id))
}

impl RunCgroup {
    /// The directories [`RunCgroup::create`] would make for `run_id`, known before
    /// they exist (a cleaner armed before them removes them, see [`crate::teardown`]).
    pub fn planned_dirs(layout: &Layout, cfg: &CgroupConfig, run_id: &str) -> Vec<PathBuf> {
        let mut dirs = dirs_at(layout, &run_rel(cfg, run_id));
        dirs.sort();
        dirs.dedup();
        dirs
    }

    pub fn create(
        layout: &Layout,
        cfg: &CgroupConfig,
        run_id: &str,
        limits: Limits,
    ) -> Result<RunCgroup, CgroupError> {
        let rel = run_rel(cfg, run_id);
        let parent = Path::new(cfg.parent.trim_start_matches('/'));
        let dirs = make_dirs(layout, parent, &rel, &limits, false)?;
        Ok(RunCgroup {
            layout: layout.clone(),
            dirs,
            joined: Vec::new(),
            limits,
            removed: false,
            shared: false,
        })
    }

    /// A group at `rel` under every hierarchy's root, as an OCI `cgroupsPath` names it
    /// (never relative to maibox's own cgroup). Unlike a run's group, an existing
    /// empty group is joined, as runc does (a caller may prepare it, or freeze it to
    /// be refused). One that already holds processes is joined too, as runc 1.1
    /// does (the caller warns): its processes are never killed here, and only
    /// the groups this call made are removed when the value is dropped.
    pub fn create_at(
        layout: &Layout,
        rel: &Path,
        limits: Limits,
    ) -> Result<RunCgroup, CgroupError> {
        let parent = rel.parent().unwrap_or(Path::new(""));
        let joined: Vec<PathBuf> = dirs_at(layout, rel)
            .into_iter()
            .filter(|d| d.is_dir())
            .collect();
        let shared = processes_in(&joined) > 0;
        let dirs = make_dirs(layout, parent, rel, &limits, true)?;
        Ok(RunCgroup {
            layout: layout.clone(),
            dirs,
            joined,
            limits,
            removed: false,
            shared,
        })
    }

    /// Keeps the group when this value is dropped (an OCI container outlives the
    /// `create` command; `delete` removes it with [`remove_dirs`]).
    pub fn persist(mut self) -> Vec<PathBuf> {
        self.removed = true;
        self.paths()
    }

    pub fn attach(&self, pid: i32) -> Result<(), CgroupError> {
        for dir in self.dirs.values() {
            let f = dir.join("cgroup.procs");
            std::fs::write(&f, pid.to_string()).map_err(io("attach the sandbox", &f))?;
        }
        Ok(())
    }

    /// On v1, the `tasks` files through which the sandbox joins its groups itself
    /// (see `engine::spawn::join_cgroup`); empty on v2, where the supervisor
    /// attaches it with [`RunCgroup::attach`].
    pub fn self_attach_files(&self) -> Result<Vec<std::os::fd::OwnedFd>, CgroupError> {
        if let Layout::V2 { .. } = self.layout {
            return Ok(Vec::new());
        }
        self.join_files()
    }

    /// The files through which a process moves itself into every hierarchy of the
    /// group by writing "0": `tasks` on v1, `cgroup.procs` on v2. An interpreter
    /// forked from a zygote joins through them (see `warm::zygote`).
    pub fn join_files(&self) -> Result<Vec<std::os::fd::OwnedFd>, CgroupError> {
        let name = match self.layout {
            Layout::V2 { .. } => "cgroup.procs",
            _ => "tasks",
        };
        self.dirs
            .values()
            .map(|d| {
                let f = d.join(name);
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(&f)
                    .map(std::os::fd::OwnedFd::from)
                    .map_err(io("open the run's tasks file", &f))
            })
            .collect()
    }

    /// Lowers the group's memory, CPU and pids limits (a warm sandbox's, to a
    /// request's). On v1 the memory limit goes before its memsw twin, which may not
    /// be below it: lowering keeps that order right.
    pub fn lower(&self, l: Limits) -> Result<(), CgroupError> {
        match &self.layout {
            Layout::V2 { .. } => self.dirs.values().try_for_each(|d| v2::set_limits(d, &l)),
            _ => v1::set_limits(&self.dirs, &l),
        }
    }

    /// The group's share of contended CPU: the least while a warm sandbox prepares (a
    /// run in progress comes first), the default once it serves. Best effort: a host
    /// without the file keeps its default.
    pub fn cpu_share(&self, least: bool) {
        let (file, low, normal) = match &self.layout {
            Layout::V2 { .. } => ("cpu.weight", "1", "100"),
            _ => ("cpu.shares", "2", "1024"),
        };
        for d in self.dirs.values() {
            let p = d.join(file);
            if p.exists() {
                let _ = write("set the CPU share", &p, if least { low } else { normal });
            }
        }
    }

    pub fn stats(&self) -> Usage {
        match &self.layout {
            Layout::V2 { .. } => v2::stats(&self.dirs),
            _ => v1::stats(&self.dirs),
        }
    }

    /// The processes in the group now (host pids, each once).
    pub fn pids(&self) -> Vec<i32> {
        pids_in(self.dirs.values())
    }

    /// Kills every process in the group, however it got there.
    pub fn kill_all(&self) {
        match &self.layout {
            Layout::V2 { .. } => v2::kill_all(&self.dirs),
            _ => v1::kill_all(&self.dirs),
        }
    }

    /// Kills what is left and removes the group from every hierarchy.
    pub fn remove(mut self) -> Result<(), CgroupError> {
        self.remove_inner()
    }

    fn remove_inner(&mut self) -> Result<(), CgroupError> {
        if self.removed {
            return Ok(());
        }
        if !self.shared {
            self.kill_all();
        }
        let mut last = Ok(());
        for dir in self.dirs.values().filter(|d| !self.joined.contains(d)) {
            last = last.and(rmdir_retry(dir));
        }
        self.removed = true;
        last
    }

    pub fn paths(&self) -> Vec<PathBuf> {
        self.dirs.values().cloned().collect()
    }

    /// Leaves the removal to a [`crate::teardown::Cleaner`] armed with
    /// [`RunCgroup::planned_dirs`].
    pub fn hand_off(mut self) {
        self.removed = true;
    }

    pub fn layout(&self) -> &Layout {
        &self.layout
    }
}

impl Drop for RunCgroup {
    fn drop(&mut self) {
        let _ = self.remove_inner();
    }
}

/// Kills every process in the groups at `dirs` and removes them (OCI `delete`),
/// with the groups the container made below its own (a container may manage
/// its cgroup, or `exec --cgroup` use one): deepest first, as rmdir needs.
pub fn remove_dirs(dirs: &[PathBuf]) -> Result<(), CgroupError> {
    let all: Vec<PathBuf> = dirs.iter().flat_map(|d| deepest_first(d)).collect();
    for d in &all {
        v1::kill_all_one(d, None);
    }
    let mut last = Ok(());
    for d in &all {
        last = last.and(rmdir_retry(d));
    }
    last
}

/// `dir` and the groups below it, children before their parents. cgroupfs
/// holds no symlinks, and a directory entry is a group.
fn deepest_first(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                out.extend(deepest_first(&e.path()));
            }
        }
    }
    out.push(dir.to_path_buf());
    out
}

/// rmdir fails with EBUSY until the last task has really exited: retry briefly.
fn rmdir_retry(dir: &Path) -> Result<(), CgroupError> {
    for _ in 0..200 {
        match std::fs::remove_dir(dir) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                std::thread::sleep(std::time::Duration::from_millis(5))
            }
            Err(e) => {
                return Err(CgroupError::Io {
                    step: "remove the run's cgroup",
                    path: dir.to_path_buf(),
                    source: e,
                })
            }
        }
    }
    std::fs::remove_dir(dir).map_err(io("remove the run's cgroup", dir))
}

/// Removes per-run groups under the parent whose supervisor is gone (killed with
/// SIGKILL, say). Never touches anything that is not named like ours.
pub fn cleanup_stale(layout: &Layout, cfg: &CgroupConfig) -> usize {
    let parents: Vec<PathBuf> = match layout {
        Layout::V2 { root } => vec![root.join(cfg.parent.trim_start_matches('/'))],
        Layout::V1 { controllers } => controllers
            .values()
            .map(|m| m.join(cfg.parent.trim_start_matches('/')))
            .collect(),
        Layout::None => vec![],
    };
    let mut removed = 0;
    for parent in parents {
        let Ok(rd) = std::fs::read_dir(&parent) else {
            continue;
        };
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            // The entry's type comes with the listing: no stat per group.
            let dir = e.file_type().is_ok_and(|t| t.is_dir());
            if name.starts_with("run-") && dir && !owner_alive(&name) {
                let dirs = BTreeMap::from([("stale".to_string(), e.path())]);
                match layout {
                    Layout::V2 { .. } => v2::kill_all(&dirs),
                    _ => v1::kill_all_one(&e.path(), None),
                }
                if rmdir_retry(&e.path()).is_ok() {
                    removed += 1;
                }
            }
        }
    }
    removed
}

pub(crate) fn read_u64(p: &Path) -> u64 {
    read_opt(p).unwrap_or(0)
}

pub(crate) fn read_opt(p: &Path) -> Option<u64> {
    std::fs::read_to_string(p)
        .ok()
        .and_then(|s| s.trim().parse().ok())
}

/// A `key value` line of a flat keyed file (memory.events, cpu.stat…).
pub(crate) fn keyed(p: &Path, key: &str) -> u64 {
    std::fs::read_to_string(p)
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| {
                let (k, v) = l.split_once(' ')?;
                (k == key).then(|| v.trim().parse().ok()).flatten()
            })
        })
        .unwrap_or(0)
}

pub(crate) fn write(step: &'static str, p: &Path, v: &str) -> Result<(), CgroupError> {
    std::fs::write(p, v).map_err(io(step, p))
}

pub(crate) fn procs(dir: &Path) -> Vec<i32> {
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The owner check tells a live owner from a dead one, and this process's own
    /// tag (answered without reading /proc) from the same pid with another start
    /// time (a reused pid: a dead owner).
    #[test]
    fn owner_tags_tell_the_living_from_the_dead() {
        let own = owner_tag();
        assert!(tag_owner_alive(&format!("{own}-run")), "{own}");
        let pid = std::process::id();
        let start = process_start_time(pid).expect("own /proc/PID/stat");
        assert_eq!(own, format!("{pid}-{start}"));
        assert!(!tag_owner_alive(&format!("{pid}-{}-run", start + 1)));
        // A process that has exited and been reaped: its tag names a dead owner.
        let mut child = std::process::Command::new("true")
            .spawn()
            .expect("spawn true");
        let gone = child.id();
        child.wait().expect("wait true");
        assert!(!tag_owner_alive(&format!("{gone}-1-run")));
        // Not a tag: counted alive, never removed.
        assert!(tag_owner_alive("not-a-tag"));
    }
}
