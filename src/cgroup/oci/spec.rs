//! `linux.cgroupsPath` and `linux.resources` → the container's cgroup, made with
//! maibox's own cgroup code ([`crate::cgroup`]) on v1/hybrid and v2 alike.
//!
//! The path is always absolute under each hierarchy's root (`/docker/<id>` as Docker
//! sends it; `/maibox/<id>` when the spec gives none), never relative to the
//! runtime's own cgroup, which may belong to someone else. Limits that maibox
//! cannot apply are refused, never dropped: a spec asks for them for a reason.

use std::path::{Component, Path, PathBuf};

use oci_spec::runtime::{Linux, LinuxDeviceCgroup, LinuxResources};

use crate::cgroup::{Layout, Limits};
use crate::error::SpecError;
use crate::oci::bundle::BundleError;

/// What the container's cgroup must be.
#[derive(Debug, Clone, PartialEq)]
pub struct OciCgroup {
    /// Relative to each hierarchy's root.
    pub rel: PathBuf,
    pub limits: Limits,
    /// Device rules in the v1 `devices.allow`/`devices.deny` syntax: (allow, rule).
    pub devices: Vec<(bool, String)>,
    /// `cpu.cpus` and `cpu.mems` (an empty one is inherited).
    pub cpuset: Option<(String, String)>,
    /// `blockIO`, for the blkio (v1) or io (v2) controller.
    pub blkio: crate::cgroup::resources::blkio::BlockIo,
}

fn err(field: &str, message: impl Into<String>) -> BundleError {
    SpecError::Invalid {
        field: format!("linux.{field}"),
        message: message.into(),
    }
    .into()
}

fn unenforced(field: &str, hint: &str) -> BundleError {
    SpecError::Unenforced {
        field: format!("linux.resources.{field}"),
        hint: hint.into(),
    }
    .into()
}

/// null, zero, full, random, urandom, tty, ptmx and the pty slaves.
const DEFAULT_DEVICES: &[&str] = &[
    "c 1:3 rwm",
    "c 1:5 rwm",
    "c 1:7 rwm",
    "c 1:8 rwm",
    "c 1:9 rwm",
    "c 5:0 rwm",
    "c 5:2 rwm",
    "c 136:* rwm",
];

/// The group's path for container `id`.
pub fn path_for(cgroups_path: Option<&Path>, id: &str) -> Result<PathBuf, BundleError> {
    let Some(p) = cgroups_path else {
        return Ok(PathBuf::from("maibox").join(id));
    };
    let s = p.to_string_lossy();
    if s.contains(':') {
        return Err(err(
            "cgroupsPath",
            format!("{s:?} is a systemd slice path; maibox manages cgroupfs paths only (use the cgroupfs driver)"),
        ));
    }
    if p.components().any(|c| c == Component::ParentDir) {
        return Err(err("cgroupsPath", format!("{s:?} must not contain ..")));
    }
    // A relative path would be relative to the runtime's own cgroup (runc's reading),
    // which is not ours to fill: such paths go under /maibox instead.
    let rel: PathBuf = p
        .components()
        .filter(|c| matches!(c, Component::Normal(_)))
        .collect();
    if rel.as_os_str().is_empty() {
        return Err(err(
            "cgroupsPath",
            "the root cgroup cannot hold a container",
        ));
    }
    Ok(if p.is_absolute() {
        rel
    } else {
        PathBuf::from("maibox").join(rel)
    })
}

fn device_rule(d: &LinuxDeviceCgroup) -> String {
    let kind = match d.typ() {
        Some(t) => serde_json::to_value(t)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_else(|| "a".into()),
        None => "a".into(),
    };
    let num = |n: Option<i64>| n.map(|v| v.to_string()).unwrap_or_else(|| "*".into());
    let access = device_access(d.allow(), d.access().as_deref());
    format!("{kind} {}:{} {access}", num(d.major()), num(d.minor()))
}

/// A rule's access in the letters the kernel takes (r, w, m); none given means
/// all three. The spec allows no other letter, and runc drops any other it
/// meets; maibox reads one the way that grants least: ignored in an allow rule,
/// and in a deny rule taken to deny all three.
fn device_access(allow: bool, access: Option<&str>) -> String {
    let given = access.unwrap_or("");
    let known: String = "rwm".chars().filter(|c| given.contains(*c)).collect();
    let stray = given.chars().any(|c| !"rwm".contains(c));
    if given.is_empty() || (stray && !allow) {
        "rwm".into()
    } else {
        known
    }
}

pub fn limits(r: &LinuxResources) -> Result<Limits, BundleError> {
    let mut l = Limits::default();
    if let Some(m) = r.memory() {
        if let Some(limit) = m.limit().filter(|v| *v > 0) {
            // Swap is never given (memsw/swap.max = the limit): stricter than any
            // `swap` the spec allows, and what maibox's runs get too.
            l.memory_bytes = limit as u64;
        }
        if m.kernel().is_some_and(|v| v > 0) || m.kernel_tcp().is_some_and(|v| v > 0) {
            return Err(unenforced(
                "memory.kernel",
                "kernel memory limits are not supported",
            ));
        }
    }
    if let Some(c) = r.cpu() {
        if let Some(q) = c.quota().filter(|q| *q > 0) {
            let period = c.period().filter(|p| *p > 0).unwrap_or(100_000);
            l.cpus = q as f64 / period as f64;
        }
        if c.cpus().as_ref().is_some_and(|s| !s.is_empty())
            || c.mems().as_ref().is_some_and(|s| !s.is_empty())
        {
            return Err(unenforced("cpu.cpus", "cpusets are not supported"));
        }
    }
    if let Some(p) = r.pids() {
        if p.limit() > 0 {
            l.pids = p.limit() as u64;
        }
    }
    if let Some(b) = r.block_io() {
        crate::cgroup::resources::blkio::from_spec(b)
            .map_err(|hint| unenforced("blockIO", &hint))?;
    }
    if r.hugepage_limits().as_ref().is_some_and(|v| !v.is_empty()) {
        return Err(unenforced(
            "hugepageLimits",
            "hugepage limits are not supported",
        ));
    }
    if r.unified().as_ref().is_some_and(|v| !v.is_empty()) {
        // On a host whose controllers are on v1 the spec cannot be met by any
        // runtime: it is wrong for this host, not merely unsupported.
        if !matches!(crate::cgroup::detect(), crate::cgroup::Layout::V2 { .. }) {
            return Err(err(
                "resources.unified",
                "invalid configuration: raw cgroup v2 settings need a cgroup v2 host, \
                 and this host's controllers are on cgroup v1",
            ));
        }
        return Err(unenforced(
            "unified",
            "raw cgroup v2 settings are not supported",
        ));
    }
    Ok(l)
}

/// The container's cgroup, or `None` when the spec neither names one nor asks for
/// any limit or device rule.
pub fn from_spec(linux: &Linux, id: &str) -> Result<Option<OciCgroup>, BundleError> {
    let mut resources = linux.resources().clone().unwrap_or_default();
    // The cpuset goes to its own group (below); `limits` refuses it, for `update`.
    let mut cpuset = None;
    if let Some(mut c) = resources.cpu().clone() {
        let cpus = c.cpus().clone().unwrap_or_default();
        let mems = c.mems().clone().unwrap_or_default();
        if !cpus.is_empty() || !mems.is_empty() {
            for (name, v) in [("cpu.cpus", &cpus), ("cpu.mems", &mems)] {
                check_cpu_list(name, v).map_err(|e| err(&format!("resources.{name}"), e))?;
            }
            cpuset = Some((cpus, mems));
        }
        c.set_cpus(None);
        c.set_mems(None);
        resources.set_cpu(Some(c));
    }
    let limits = limits(&resources)?;
    let blkio = match resources.block_io() {
        Some(b) => crate::cgroup::resources::blkio::from_spec(b)
            .map_err(|hint| unenforced("blockIO", &hint))?,
        None => crate::cgroup::resources::blkio::BlockIo::default(),
    };
    let mut devices: Vec<(bool, String)> = resources
        .devices()
        .iter()
        .flatten()
        // An allow rule left with no access letter grants nothing.
        .filter(|d| !(d.allow() && device_access(true, d.access().as_deref()).is_empty()))
        .map(|d| (d.allow(), device_rule(d)))
        .collect();
    if !devices.is_empty() {
        // The devices every container gets (the spec's default devices, which maibox
        // creates itself), whatever the rules before say: runc allows them too.
        devices.extend(DEFAULT_DEVICES.iter().map(|r| (true, r.to_string())));
    }
    // As root, every container gets its group (as with runc), so that `pause`,
    // `ps` and `events` work on any of them; an unprivileged caller gets one only
    // when the spec asks for it.
    let wanted = nix::unistd::geteuid().is_root()
        || linux.cgroups_path().is_some()
        || limits != Limits::default()
        || !devices.is_empty()
        || cpuset.is_some()
        || !blkio.is_empty();
    if !wanted {
        return Ok(None);
    }
    Ok(Some(OciCgroup {
        rel: path_for(linux.cgroups_path().as_deref(), id)?,
        limits,
        devices,
        cpuset,
        blkio,
    }))
}

/// A CPU or memory-node list as cpuset files take it ("0-3,6"); `what` names
/// the setting in the error.
pub fn check_cpu_list(what: &str, v: &str) -> Result<(), String> {
    if v.chars()
        .all(|ch| ch.is_ascii_digit() || matches!(ch, ',' | '-'))
    {
        Ok(())
    } else {
        Err(format!("{what}: {v:?} is not a list like \"0-3,6\""))
    }
}

/// runc's conversion of v1 CPU shares [2, 262144] to a v2 weight [1, 10000].
pub fn shares_to_weight(shares: u64) -> u64 {
    1 + ((shares.clamp(2, 262_144) - 2) * 9999) / 262_142
}

/// Creates the container's group in the v1 devices hierarchy. Returns its
/// directory, or `None` when the host has no v1 devices hierarchy.
pub fn devices_group(rel: &Path) -> Result<Option<PathBuf>, String> {
    let Some(mount) = devices_mount() else {
        return Ok(None);
    };
    let dir = mount.join(rel);
    std::fs::create_dir_all(&dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
    Ok(Some(dir))
}

/// Writes device rules to a v1 devices group.
pub fn write_device_rules(dir: &Path, rules: &[(bool, String)]) -> Result<(), String> {
    for (allow, rule) in rules {
        let file = dir.join(if *allow {
            "devices.allow"
        } else {
            "devices.deny"
        });
        std::fs::write(&file, rule)
            .map_err(|e| format!("write {rule:?} to {}: {e}", file.display()))?;
    }
    Ok(())
}

fn devices_mount() -> Option<PathBuf> {
    v1_mount("devices")
}

/// Whether the host has a v1 hierarchy carrying `controller`.
pub fn has_v1(controller: &str) -> bool {
    v1_mount(controller).is_some()
}

/// The mount point of the v1 hierarchy that carries `controller`.
fn v1_mount(controller: &str) -> Option<PathBuf> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    info.lines().find_map(|line| {
        let (pre, post) = line.split_once(" - ")?;
        let mut post = post.split_whitespace();
        let fstype = post.next()?;
        let opts = post.nth(1)?;
        (fstype == "cgroup" && opts.split(',').any(|o| o == controller))
            .then(|| PathBuf::from(pre.split_whitespace().nth(4).unwrap_or_default()))
    })
}

/// The groups at `rel` that exist already, in every hierarchy the host mounts:
/// a failed `create` empties but leaves those, which are someone else's.
pub fn existing_groups(rel: &Path) -> Vec<PathBuf> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    info.lines()
        .filter_map(|line| {
            let (pre, post) = line.split_once(" - ")?;
            matches!(post.split_whitespace().next()?, "cgroup" | "cgroup2")
                .then(|| Path::new(pre.split_whitespace().nth(4).unwrap_or("/")).join(rel))
        })
        .filter(|d| d.is_dir())
        .collect()
}

/// The mount point of the host's cgroup2 hierarchy, if it has one.
fn v2_mount() -> Option<PathBuf> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    info.lines().find_map(|line| {
        let (pre, post) = line.split_once(" - ")?;
        (post.split_whitespace().next()? == "cgroup2")
            .then(|| PathBuf::from(pre.split_whitespace().nth(4).unwrap_or_default()))
    })
}

/// On v1 and hybrid hosts, the groups at `rel` an OCI container joins besides
/// maibox's limit controllers (`layout`), each for a verb that needs it: the
/// freezer (`pause`), blkio (block I/O limits, also for `update`), cpuacct
/// when it is mounted apart from cpu (CPU usage for
/// `events`), and on a hybrid host the unified (v2) hierarchy, where runc puts
/// its containers too and tools look for them. v2 groups do all of this
/// themselves: nothing on a v2 host.
pub fn create_side_groups(rel: &Path, layout: &Layout) -> Result<Vec<PathBuf>, String> {
    let Layout::V1 { controllers } = layout else {
        return Ok(Vec::new());
    };
    let mut mounts: Vec<PathBuf> = Vec::new();
    mounts.extend(v1_mount("freezer"));
    mounts.extend(v1_mount("blkio"));
    if !controllers.contains_key("cpuacct") {
        mounts.extend(v1_mount("cpuacct"));
    }
    mounts.extend(v2_mount());
    let mut dirs = Vec::new();
    for m in mounts {
        let dir = m.join(rel);
        if let Err(e) = std::fs::create_dir_all(&dir) {
            let _ = crate::cgroup::remove_dirs(&dirs);
            return Err(format!("create {}: {e}", dir.display()));
        }
        dirs.push(dir);
    }
    Ok(dirs)
}

/// The settings of `r` that maibox's own limits round or leave out, written as
/// the spec gives them to the container's groups `dirs`: the CPU quota with its
/// own period (maibox's limits keep only their ratio), CPU shares, the
/// realtime budget (v1) and the memory reservation (a soft limit).
pub fn apply_exact(dirs: &[PathBuf], r: &LinuxResources) -> Result<(), String> {
    let mut c = crate::oci::update::Changes::default();
    if let Some(cpu) = r.cpu() {
        c.shares = cpu.shares().filter(|s| *s > 0);
        c.quota = cpu.quota().filter(|q| *q > 0);
        c.period = cpu.period().filter(|p| *p > 0);
        c.rt_period = cpu.realtime_period().filter(|p| *p > 0);
        c.rt_runtime = cpu.realtime_runtime().filter(|r| *r > 0);
    }
    c.reservation = r
        .memory()
        .as_ref()
        .and_then(|m| m.reservation())
        .filter(|v| *v > 0);
    crate::oci::update::apply(dirs, &c)
}

/// The container's cpuset: on v1 its own group in the cpuset hierarchy (every
/// new level first inherits its parent's CPUs and memory nodes, which v1 leaves
/// empty), returned for attaching and removal; on v2 the files of the
/// container's group `v2_dir`, with the controller enabled down to it.
pub fn apply_cpuset(
    rel: &Path,
    cpus: &str,
    mems: &str,
    v2_dir: Option<&Path>,
) -> Result<Option<PathBuf>, String> {
    let write = |f: PathBuf, v: &str| {
        std::fs::write(&f, v).map_err(|e| format!("write {v:?} to {}: {e}", f.display()))
    };
    if let Some(mount) = v1_mount("cpuset") {
        let mut dir = mount.clone();
        for part in rel.components() {
            let parent = dir.clone();
            dir = dir.join(part);
            if !dir.exists() {
                std::fs::create_dir(&dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
            }
            for f in ["cpuset.cpus", "cpuset.mems"] {
                let mine = std::fs::read_to_string(dir.join(f)).unwrap_or_default();
                if mine.trim().is_empty() {
                    let theirs = std::fs::read_to_string(parent.join(f))
                        .map_err(|e| format!("read {}: {e}", parent.join(f).display()))?;
                    write(dir.join(f), theirs.trim())?;
                }
            }
        }
        if !cpus.is_empty() {
            write(dir.join("cpuset.cpus"), cpus)?;
        }
        if !mems.is_empty() {
            write(dir.join("cpuset.mems"), mems)?;
        }
        return Ok(Some(dir));
    }
    let Some(leaf) = v2_dir else {
        return Err("the host has no cpuset controller".into());
    };
    enable_v2_controller(leaf, "cpuset")?;
    if !cpus.is_empty() {
        write(leaf.join("cpuset.cpus"), cpus)?;
    }
    if !mems.is_empty() {
        write(leaf.join("cpuset.mems"), mems)?;
    }
    Ok(None)
}

/// Enables `controller` in the subtree_control of every ancestor of the v2 group
/// `leaf`, from the root down, so that `leaf` gets its files.
pub fn enable_v2_controller(leaf: &Path, controller: &str) -> Result<(), String> {
    let root = Path::new("/sys/fs/cgroup");
    let mut chain: Vec<&Path> = leaf
        .ancestors()
        .skip(1)
        .take_while(|a| a.starts_with(root))
        .collect();
    chain.reverse();
    for a in chain {
        let sub = a.join("cgroup.subtree_control");
        let have = std::fs::read_to_string(&sub).unwrap_or_default();
        if !have.split_whitespace().any(|c| c == controller) {
            std::fs::write(&sub, format!("+{controller}"))
                .map_err(|e| format!("write +{controller} to {}: {e}", sub.display()))?;
        }
    }
    Ok(())
}

/// The file that freezes the container and the values for frozen / thawed.
/// The v1 freezer wins over a v2 group's `cgroup.freeze`: on a hybrid host the
/// container has both, and v1 is where `pause` freezes it.
fn freezer_of(dirs: &[PathBuf]) -> Option<(PathBuf, &'static str, &'static str)> {
    let v1 = dirs
        .iter()
        .find(|d| d.join("freezer.state").exists())
        .map(|d| (d.join("freezer.state"), "FROZEN", "THAWED"));
    v1.or_else(|| {
        dirs.iter()
            .find(|d| d.join("cgroup.freeze").exists())
            .map(|d| (d.join("cgroup.freeze"), "1", "0"))
    })
}

pub fn frozen(dirs: &[PathBuf]) -> bool {
    freezer_of(dirs)
        .is_some_and(|(f, on, _)| std::fs::read_to_string(f).is_ok_and(|s| s.trim() == on))
}

/// Freezes (`pause`) or thaws (`resume`) every process of the container, waiting
/// until the kernel reports it done.
pub fn set_frozen(dirs: &[PathBuf], freeze: bool) -> Result<(), String> {
    let (file, on, off) = freezer_of(dirs).ok_or("the container has no freezer cgroup")?;
    let want = if freeze { on } else { off };
    std::fs::write(&file, want).map_err(|e| format!("write {want} to {}: {e}", file.display()))?;
    // v1 passes through FREEZING; v2 reports completion in cgroup.events.
    let done = || match file.file_name().and_then(|n| n.to_str()) {
        Some("cgroup.freeze") => std::fs::read_to_string(file.with_file_name("cgroup.events"))
            .is_ok_and(|e| {
                e.lines()
                    .any(|l| l == format!("frozen {}", u8::from(freeze)))
            }),
        _ => std::fs::read_to_string(&file).is_ok_and(|s| s.trim() == want),
    };
    for _ in 0..1000 {
        if done() {
            return Ok(());
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    Err(format!("{} did not reach {want} in 5 s", file.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_absolute_under_each_root() {
        assert_eq!(path_for(None, "c1").unwrap(), PathBuf::from("maibox/c1"));
        assert_eq!(
            path_for(Some(Path::new("/docker/abc")), "c1").unwrap(),
            PathBuf::from("docker/abc")
        );
        assert_eq!(
            path_for(Some(Path::new("mine/x")), "c1").unwrap(),
            PathBuf::from("maibox/mine/x")
        );
        assert!(path_for(Some(Path::new("system.slice:docker:abc")), "c1")
            .unwrap_err()
            .to_string()
            .contains("systemd"));
        assert!(path_for(Some(Path::new("/a/../b")), "c1").is_err());
        assert!(path_for(Some(Path::new("/")), "c1").is_err());
    }

    #[test]
    fn stray_access_letters_never_grant_more() {
        assert_eq!(device_access(false, Some("rwa")), "rwm");
        assert_eq!(device_access(true, Some("rwa")), "rw");
        assert_eq!(device_access(true, Some("mr")), "rm");
        assert_eq!(device_access(true, None), "rwm");
        assert_eq!(device_access(false, Some("")), "rwm");
        assert_eq!(device_access(true, Some("a")), "");
    }

    #[test]
    fn dockers_resources_map_to_limits_and_device_rules() {
        let text = include_str!("../../../tests/data/docker-config.json");
        let spec: oci_spec::runtime::Spec = serde_json::from_str(text).unwrap();
        let cg = from_spec(spec.linux().as_ref().unwrap(), "x")
            .unwrap()
            .unwrap();
        assert_eq!(cg.limits.memory_bytes, 1 << 30);
        assert_eq!(cg.limits.pids, 100);
        assert!((cg.limits.cpus - 2.0).abs() < 1e-9);
        assert!(cg.rel.starts_with("docker"));
        assert_eq!(cg.devices[0], (false, "a *:* rwm".to_string()));
        assert!(cg.blkio.is_empty());
        assert!(cg.devices.contains(&(true, "c 1:3 rwm".to_string())));
    }
}
