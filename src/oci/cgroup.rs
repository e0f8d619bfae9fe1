//! `linux.cgroupsPath` and `linux.resources` → the container's cgroup, made with
//! maibox's own cgroup code ([`crate::cgroup`]) on v1/hybrid and v2 alike.
//!
//! The path is always absolute under each hierarchy's root (`/docker/<id>` as Docker
//! sends it; `/maibox/<id>` when the spec gives none), never relative to the
//! runtime's own cgroup, which may belong to someone else. Limits that maibox
//! cannot apply are refused, never dropped: a spec asks for them for a reason.

use std::path::{Component, Path, PathBuf};

use oci_spec::runtime::{Linux, LinuxDeviceCgroup, LinuxResources};

use super::bundle::BundleError;
use crate::cgroup::Limits;

/// What the container's cgroup must be.
#[derive(Debug, Clone, PartialEq)]
pub struct OciCgroup {
    /// Relative to each hierarchy's root.
    pub rel: PathBuf,
    pub limits: Limits,
    /// Device rules in the v1 `devices.allow`/`devices.deny` syntax: (allow, rule).
    pub devices: Vec<(bool, String)>,
}

fn err(field: &str, message: impl Into<String>) -> BundleError {
    BundleError::Invalid {
        field: format!("linux.{field}"),
        message: message.into(),
    }
}

fn unenforced(field: &str, hint: &str) -> BundleError {
    BundleError::Unenforced {
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
    let access = d.access().clone().unwrap_or_else(|| "rwm".into());
    format!("{kind} {}:{} {access}", num(d.major()), num(d.minor()))
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
        if c.realtime_runtime().is_some_and(|v| v > 0) {
            return Err(unenforced(
                "cpu.realtimeRuntime",
                "realtime CPU limits are not supported",
            ));
        }
    }
    if let Some(p) = r.pids() {
        if p.limit() > 0 {
            l.pids = p.limit() as u64;
        }
    }
    if let Some(b) = r.block_io() {
        let limited = b.weight().is_some_and(|w| w > 0)
            || [
                b.throttle_read_bps_device(),
                b.throttle_write_bps_device(),
                b.throttle_read_iops_device(),
                b.throttle_write_iops_device(),
            ]
            .iter()
            .any(|t| t.as_ref().is_some_and(|v| !v.is_empty()));
        if limited {
            return Err(unenforced("blockIO", "block I/O limits are not supported"));
        }
    }
    if r.hugepage_limits().as_ref().is_some_and(|v| !v.is_empty()) {
        return Err(unenforced(
            "hugepageLimits",
            "hugepage limits are not supported",
        ));
    }
    if r.unified().as_ref().is_some_and(|v| !v.is_empty()) {
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
    let resources = linux.resources().clone().unwrap_or_default();
    let limits = limits(&resources)?;
    let mut devices: Vec<(bool, String)> = resources
        .devices()
        .iter()
        .flatten()
        .map(|d| (d.allow(), device_rule(d)))
        .collect();
    if !devices.is_empty() {
        // The devices every container gets (the spec's default devices, which maibox
        // creates itself), whatever the rules before say: runc allows them too.
        devices.extend(DEFAULT_DEVICES.iter().map(|r| (true, r.to_string())));
    }
    let wanted =
        linux.cgroups_path().is_some() || limits != Limits::default() || !devices.is_empty();
    if !wanted {
        return Ok(None);
    }
    Ok(Some(OciCgroup {
        rel: path_for(linux.cgroups_path().as_deref(), id)?,
        limits,
        devices,
    }))
}

/// `update --resources`: new limits for a running container's groups. A zero limit
/// leaves that setting as it is.
pub fn update(dirs: &[PathBuf], l: &Limits) -> Result<(), String> {
    let write = |f: PathBuf, v: String| {
        std::fs::write(&f, &v).map_err(|e| format!("write {v} to {}: {e}", f.display()))
    };
    for d in dirs {
        if l.memory_bytes > 0 {
            let m = l.memory_bytes.to_string();
            if d.join("memory.max").exists() {
                write(d.join("memory.max"), m)?;
            } else if d.join("memory.limit_in_bytes").exists() {
                // memsw may never be below the limit: lower the limit first when
                // shrinking, raise memsw first when growing.
                let memsw = d.join("memory.memsw.limit_in_bytes");
                if write(d.join("memory.limit_in_bytes"), m.clone()).is_err() {
                    if memsw.exists() {
                        write(memsw.clone(), m.clone())?;
                    }
                    write(d.join("memory.limit_in_bytes"), m.clone())?;
                }
                if memsw.exists() {
                    write(memsw, m)?;
                }
            }
        }
        if l.pids > 0 && d.join("pids.max").exists() {
            write(d.join("pids.max"), l.pids.to_string())?;
        }
        if l.cpus > 0.0 {
            let quota = ((l.cpus * 100_000.0).round() as u64).max(1000);
            if d.join("cpu.max").exists() {
                write(d.join("cpu.max"), format!("{quota} 100000"))?;
            } else if d.join("cpu.cfs_quota_us").exists() {
                write(d.join("cpu.cfs_period_us"), "100000".into())?;
                write(d.join("cpu.cfs_quota_us"), quota.to_string())?;
            }
        }
    }
    Ok(())
}

/// Applies device rules through the v1 devices controller at `rel`. Returns the
/// group's directory, or `None` when the host has no v1 devices hierarchy.
pub fn apply_devices(rel: &Path, rules: &[(bool, String)]) -> Result<Option<PathBuf>, String> {
    let Some(mount) = devices_mount() else {
        return Ok(None);
    };
    let dir = mount.join(rel);
    std::fs::create_dir_all(&dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
    for (allow, rule) in rules {
        let file = dir.join(if *allow {
            "devices.allow"
        } else {
            "devices.deny"
        });
        std::fs::write(&file, rule)
            .map_err(|e| format!("write {rule:?} to {}: {e}", file.display()))?;
    }
    Ok(Some(dir))
}

fn devices_mount() -> Option<PathBuf> {
    v1_mount("devices")
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

/// On v1, a freezer group at `rel` for `pause`/`resume` (v2 groups freeze through
/// their own `cgroup.freeze`). `None` when the host has no v1 freezer hierarchy.
pub fn create_freezer(rel: &Path) -> Result<Option<PathBuf>, String> {
    let Some(mount) = v1_mount("freezer") else {
        return Ok(None);
    };
    let dir = mount.join(rel);
    std::fs::create_dir_all(&dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
    Ok(Some(dir))
}

/// The file that freezes the container and the values for frozen / thawed.
fn freezer_of(dirs: &[PathBuf]) -> Option<(PathBuf, &'static str, &'static str)> {
    dirs.iter().find_map(|d| {
        if d.join("freezer.state").exists() {
            Some((d.join("freezer.state"), "FROZEN", "THAWED"))
        } else if d.join("cgroup.freeze").exists() {
            Some((d.join("cgroup.freeze"), "1", "0"))
        } else {
            None
        }
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
    fn dockers_resources_map_to_limits_and_device_rules() {
        let text = include_str!("../../tests/data/docker-config.json");
        let spec: oci_spec::runtime::Spec = serde_json::from_str(text).unwrap();
        let cg = from_spec(spec.linux().as_ref().unwrap(), "x")
            .unwrap()
            .unwrap();
        assert_eq!(cg.limits.memory_bytes, 1 << 30);
        assert_eq!(cg.limits.pids, 100);
        assert!((cg.limits.cpus - 2.0).abs() < 1e-9);
        assert!(cg.rel.starts_with("docker"));
        assert_eq!(cg.devices[0], (false, "a *:* rwm".to_string()));
        assert!(cg.devices.contains(&(true, "c 1:3 rwm".to_string())));
    }
}
