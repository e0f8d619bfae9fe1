//! `linux.cgroupsPath` and `linux.resources` → what the container's cgroup must
//! be ([`OciCgroup`]), made by [`super::container`] with maibox's own cgroup
//! code on v1/hybrid and v2 alike.
//!
//! The path is always absolute under each hierarchy's root (`/docker/<id>` as Docker
//! sends it; `/maibox/<id>` when the spec gives none), never relative to the
//! runtime's own cgroup, which may belong to someone else. Limits that maibox
//! cannot apply are refused, never dropped: a spec asks for them for a reason.

use std::path::{Component, Path, PathBuf};

use oci_spec::runtime::{Linux, LinuxDeviceCgroup, LinuxResources};

use crate::cgroup::resources::{blkio, cpuset::check_cpu_list};
use crate::cgroup::Limits;
use crate::error::SpecError;

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
    pub blkio: blkio::BlockIo,
}

fn err(field: &str, message: impl Into<String>) -> SpecError {
    SpecError::Invalid {
        field: format!("linux.{field}"),
        message: message.into(),
    }
}

fn unenforced(field: &str, hint: &str) -> SpecError {
    SpecError::Unenforced {
        field: format!("linux.resources.{field}"),
        hint: hint.into(),
    }
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
pub fn path_for(cgroups_path: Option<&Path>, id: &str) -> Result<PathBuf, SpecError> {
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

pub fn limits(r: &LinuxResources) -> Result<Limits, SpecError> {
    let mut l = Limits::default();
    if let Some(m) = r.memory() {
        if let Some(limit) = m.limit().filter(|v| *v > 0) {
            // The swap goes with it at create (crate::cgroup::resources::memory).
            l.memory_bytes = limit as u64;
        }
        check_swap(m.limit(), m.swap())?;
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
        blkio::from_spec(b).map_err(|hint| unenforced("blockIO", &hint))?;
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

/// `memory.swap` is memory plus swap (runc's reading): -1 or at least the
/// memory limit, which it needs (a memory+swap below the memory limit, or
/// without one, is refused by the kernel on v1 and by runc on v2).
fn check_swap(limit: Option<i64>, swap: Option<i64>) -> Result<(), SpecError> {
    let Some(s) = swap.filter(|s| *s != 0 && *s != -1) else {
        return Ok(());
    };
    let field = "resources.memory.swap";
    match limit.filter(|l| *l > 0) {
        _ if s < 0 => Err(err(
            field,
            format!("{s}: give a size in bytes, or -1 for unlimited"),
        )),
        None => Err(err(
            field,
            format!("{s} is memory plus swap and needs memory.limit with it (or -1: unlimited)"),
        )),
        Some(l) if s < l => Err(err(
            field,
            format!("{s} is memory plus swap and must be at least memory.limit ({l})"),
        )),
        Some(_) => Ok(()),
    }
}

/// The container's cgroup, or `None` when the spec neither names one nor asks for
/// any limit or device rule.
pub fn from_spec(linux: &Linux, id: &str) -> Result<Option<OciCgroup>, SpecError> {
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
        Some(b) => blkio::from_spec(b).map_err(|hint| unenforced("blockIO", &hint))?,
        None => blkio::BlockIo::default(),
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
    fn swap_is_memory_plus_swap_and_needs_the_limit() {
        const L: i64 = 64 << 20;
        for (limit, swap) in [
            (Some(L), Some(L)),
            (Some(L), Some(2 * L)),
            (Some(L), Some(-1)),
        ] {
            assert!(check_swap(limit, swap).is_ok(), "{limit:?} {swap:?}");
        }
        for ok in [
            (None, None),
            (None, Some(-1)),
            (None, Some(0)),
            (Some(-1), Some(-1)),
        ] {
            assert!(check_swap(ok.0, ok.1).is_ok(), "{ok:?}");
        }
        let below = check_swap(Some(L), Some(L - 1)).unwrap_err().to_string();
        assert!(below.contains("at least memory.limit"), "{below}");
        for limit in [None, Some(-1)] {
            let alone = check_swap(limit, Some(L)).unwrap_err().to_string();
            assert!(alone.contains("needs memory.limit"), "{alone}");
        }
        let bad = check_swap(Some(L), Some(-2)).unwrap_err().to_string();
        assert!(bad.contains("linux.resources.memory.swap"), "{bad}");
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
