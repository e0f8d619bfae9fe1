//! The OCI `cgroup` mount (`/sys/fs/cgroup` in the container): the container's
//! own groups, laid out as the host lays out its hierarchies.
//!
//! - the container's group in each host hierarchy is bound (as runc does
//!   without a cgroup namespace), so the container never sees the groups above
//!   its own. The groups are read before the cgroup namespace is made, so with
//!   one this is the namespace's root, as a fresh mount would show it (and a
//!   bind, unlike a fresh v1 mount, also works in a user namespace); a
//!   hierarchy whose group is unknown stays an empty directory;
//! - cgroup v1 and hybrid hosts get a tmpfs holding one mount per hierarchy and
//!   the host's alias links (`cpu -> cpu,cpuacct`); a pure v2 host gets the one
//!   hierarchy directly.
//!
//! The mount's flags (Docker's `ro,nosuid,nodev,noexec`) apply to all of it.

use super::mounts::{bind, change_attr, mkdir_p};
use super::mounts::{MOUNT_ATTR_NODEV, MOUNT_ATTR_NOEXEC, MOUNT_ATTR_NOSUID, MOUNT_ATTR_RDONLY};
use crate::error::{SetupError, Step, StepContext};
use nix::mount::{mount, MsFlags};
use std::path::{Path, PathBuf};

const HOST_ROOT: &str = "/sys/fs/cgroup";

/// A cgroup hierarchy mounted on the host under /sys/fs/cgroup.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Hierarchy {
    /// Where the host mounts it (`/sys/fs/cgroup/memory`, or the root itself).
    mount_point: PathBuf,
    v2: bool,
    /// v1: the controllers (and `name=` option) it carries, as mount options.
    options: String,
}

/// The cgroup mounts of `mountinfo` under /sys/fs/cgroup.
fn hierarchies(mountinfo: &str) -> Vec<Hierarchy> {
    let mut out = Vec::new();
    for line in mountinfo.lines() {
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let mount_point = left.split_whitespace().nth(4).unwrap_or("");
        let mut r = right.split_whitespace();
        let (fstype, super_opts) = (r.next().unwrap_or(""), r.nth(1).unwrap_or(""));
        if !(mount_point == HOST_ROOT || mount_point.starts_with("/sys/fs/cgroup/")) {
            continue;
        }
        let v2 = fstype == "cgroup2";
        if !v2 && fstype != "cgroup" {
            continue;
        }
        let options = super_opts
            .split(',')
            .filter(|o| !matches!(*o, "rw" | "ro") && !o.starts_with("release_agent"))
            .collect::<Vec<_>>()
            .join(",");
        out.push(Hierarchy {
            mount_point: PathBuf::from(mount_point),
            v2,
            options,
        });
    }
    out
}

/// This process's groups, for [`mount_cgroups`]: read before the cgroup
/// namespace is made.
pub fn current_groups() -> Result<Vec<(String, String)>, SetupError> {
    Ok(own_groups(
        &std::fs::read_to_string("/proc/self/cgroup")
            .step(Step::Cgroup, "read /proc/self/cgroup")?,
    ))
}

/// This process's group in each hierarchy, from /proc/self/cgroup:
/// "controllers" (or "" for v2) → path.
fn own_groups(proc_cgroup: &str) -> Vec<(String, String)> {
    proc_cgroup
        .lines()
        .filter_map(|l| {
            let mut p = l.splitn(3, ':');
            let (_, ctrl, path) = (p.next()?, p.next()?, p.next()?);
            Some((ctrl.to_string(), path.to_string()))
        })
        .collect()
}

/// The group path of a v1 hierarchy with `options` (or of v2).
fn own_path<'a>(groups: &'a [(String, String)], h: &Hierarchy) -> Option<&'a str> {
    groups
        .iter()
        .find(|(ctrl, _)| {
            if h.v2 {
                ctrl.is_empty()
            } else {
                // The hierarchy's options hold its controllers (or name=) and flags
                // such as xattr.
                let opts: Vec<&str> = h.options.split(',').collect();
                !ctrl.is_empty() && ctrl.split(',').all(|c| opts.contains(&c))
            }
        })
        .map(|(_, p)| p.as_str())
}

/// Mounts the container's cgroups on `target` (already joined under the new
/// root). Call in the container's mount namespace, before pivot_root.
pub fn mount_cgroups(
    target: &Path,
    flags: MsFlags,
    groups: &[(String, String)],
) -> Result<(), SetupError> {
    let step = Step::Cgroup;
    let mountinfo =
        std::fs::read_to_string("/proc/self/mountinfo").step(step, "read /proc/self/mountinfo")?;
    let all = hierarchies(&mountinfo);
    if all.is_empty() {
        return Err(SetupError::new(
            step,
            "the spec mounts cgroups but the host has no cgroup hierarchy under /sys/fs/cgroup",
        ));
    }
    mkdir_p(step, target)?;
    let pure_v2 = all
        .iter()
        .any(|h| h.v2 && h.mount_point == Path::new(HOST_ROOT));
    if pure_v2 {
        let h = all
            .iter()
            .find(|h| h.v2)
            .ok_or_else(|| SetupError::new(step, "no cgroup2 mount"))?;
        one(target, h, groups)?;
    } else {
        mount(
            Some("tmpfs"),
            target,
            Some("tmpfs"),
            MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
            Some("mode=755,size=64k"),
        )
        .step(step, format!("mount a tmpfs on {}", target.display()))?;
        for h in &all {
            let Some(name) = h.mount_point.file_name() else {
                continue;
            };
            let sub = target.join(name);
            mkdir_p(step, &sub)?;
            one(&sub, h, groups)?;
        }
        // The host's aliases (cpu -> cpu,cpuacct).
        if let Ok(rd) = std::fs::read_dir(HOST_ROOT) {
            for e in rd.flatten() {
                if let Ok(link) = std::fs::read_link(e.path()) {
                    let _ = std::os::unix::fs::symlink(link, target.join(e.file_name()));
                }
            }
        }
    }
    let mut attrs = 0;
    for (f, a) in [
        (MsFlags::MS_RDONLY, MOUNT_ATTR_RDONLY),
        (MsFlags::MS_NOSUID, MOUNT_ATTR_NOSUID),
        (MsFlags::MS_NODEV, MOUNT_ATTR_NODEV),
        (MsFlags::MS_NOEXEC, MOUNT_ATTR_NOEXEC),
    ] {
        if flags.contains(f) {
            attrs |= a;
        }
    }
    if attrs != 0 {
        change_attr(step, target, attrs, 0, true)?;
    }
    Ok(())
}

fn one(target: &Path, h: &Hierarchy, groups: &[(String, String)]) -> Result<(), SetupError> {
    let Some(path) = own_path(groups, h) else {
        return Ok(());
    };
    let src = h.mount_point.join(path.trim_start_matches('/'));
    bind(Step::Cgroup, &src.display().to_string(), target, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HYBRID: &str = "\
35 24 0:30 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755
36 35 0:31 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:10 - cgroup2 cgroup2 rw,nsdelegate
38 35 0:33 / /sys/fs/cgroup/memory rw,nosuid,nodev,noexec,relatime shared:14 - cgroup cgroup rw,memory
39 35 0:34 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid,nodev,noexec,relatime shared:15 - cgroup cgroup rw,cpu,cpuacct
40 35 0:35 / /sys/fs/cgroup/systemd rw,nosuid,nodev,noexec,relatime shared:11 - cgroup cgroup rw,xattr,name=systemd
26 1 8:1 / / rw,relatime shared:1 - ext4 /dev/vda rw
";

    #[test]
    fn hierarchies_and_own_groups_of_a_hybrid_host() {
        let hs = hierarchies(HYBRID);
        assert_eq!(hs.len(), 4);
        assert!(hs[0].v2);
        assert_eq!(hs[1].options, "memory");
        assert_eq!(hs[2].options, "cpu,cpuacct");
        assert_eq!(hs[3].options, "xattr,name=systemd");
        let groups = own_groups("12:memory:/maibox/c1\n4:cpuacct,cpu:/maibox/c1\n0::/init.scope\n");
        assert_eq!(own_path(&groups, &hs[1]), Some("/maibox/c1"));
        assert_eq!(own_path(&groups, &hs[2]), Some("/maibox/c1"));
        assert_eq!(own_path(&groups, &hs[0]), Some("/init.scope"));
        assert_eq!(own_path(&groups, &hs[3]), None);
    }
}
