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
//! Which hierarchies the host has, and the groups in them, come from
//! [`crate::cgroup::hierarchy`]; this module only mounts.

use super::mounts::{bind, change_attr, mkdir_p};
use super::mounts::{MOUNT_ATTR_NODEV, MOUNT_ATTR_NOEXEC, MOUNT_ATTR_NOSUID, MOUNT_ATTR_RDONLY};
use crate::cgroup::hierarchy::{host_hierarchies, own_groups, Hierarchy, HOST_ROOT};
use crate::error::{SetupError, Step, StepContext};
use nix::mount::{mount, MsFlags};
use std::path::Path;

/// This process's groups, for [`mount_cgroups`]: read before the cgroup
/// namespace is made.
pub fn current_groups() -> Result<Vec<(String, String)>, SetupError> {
    Ok(own_groups(
        &std::fs::read_to_string("/proc/self/cgroup")
            .step(Step::Cgroup, "read /proc/self/cgroup")?,
    ))
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
    let all = host_hierarchies(&mountinfo);
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
        mount_hybrid(target, &all, groups)?;
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

/// A v1 or hybrid host: a small tmpfs on `target` with each host hierarchy mounted
/// under its own name, and the host's aliases (cpu -> cpu,cpuacct) beside them.
fn mount_hybrid(
    target: &Path,
    all: &[Hierarchy],
    groups: &[(String, String)],
) -> Result<(), SetupError> {
    let step = Step::Cgroup;
    mount(
        Some("tmpfs"),
        target,
        Some("tmpfs"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
        Some("mode=755,size=64k"),
    )
    .step(step, format!("mount a tmpfs on {}", target.display()))?;
    for h in all {
        let Some(name) = h.mount_point.file_name() else {
            continue;
        };
        let sub = target.join(name);
        mkdir_p(step, &sub)?;
        one(&sub, h, groups)?;
    }
    if let Ok(rd) = std::fs::read_dir(HOST_ROOT) {
        for e in rd.flatten() {
            if let Ok(link) = std::fs::read_link(e.path()) {
                let _ = std::os::unix::fs::symlink(link, target.join(e.file_name()));
            }
        }
    }
    Ok(())
}

fn one(target: &Path, h: &Hierarchy, groups: &[(String, String)]) -> Result<(), SetupError> {
    let Some(src) = h.group_dir(groups) else {
        return Ok(());
    };
    bind(Step::Cgroup, &src.display().to_string(), target, false)
}
