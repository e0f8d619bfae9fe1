//! The host's cgroup hierarchies as /proc/self/mountinfo lists them, and this
//! process's group in each (/proc/self/cgroup): where a controller is mounted,
//! which groups exist at a path, and what the OCI `cgroup` mount binds.

use std::path::{Path, PathBuf};

/// Where the host mounts its cgroup hierarchies.
pub const HOST_ROOT: &str = "/sys/fs/cgroup";

/// One cgroup mount of mountinfo.
struct CgroupMount<'a> {
    point: &'a str,
    v2: bool,
    /// The super options: a v1 hierarchy's controllers (or `name=`) and flags.
    opts: &'a str,
}

/// The cgroup and cgroup2 mounts of `mountinfo`, in its order.
fn cgroup_mounts(mountinfo: &str) -> impl Iterator<Item = CgroupMount<'_>> {
    mountinfo.lines().filter_map(|line| {
        let (pre, post) = line.split_once(" - ")?;
        let point = pre.split_whitespace().nth(4)?;
        let mut post = post.split_whitespace();
        let v2 = match post.next()? {
            "cgroup2" => true,
            "cgroup" => false,
            _ => return None,
        };
        let opts = post.nth(1)?;
        Some(CgroupMount { point, v2, opts })
    })
}

fn mountinfo() -> String {
    std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default()
}

/// The mount point of the v1 hierarchy that carries `controller`.
pub fn v1_mount(controller: &str) -> Option<PathBuf> {
    cgroup_mounts(&mountinfo())
        .find(|m| !m.v2 && m.opts.split(',').any(|o| o == controller))
        .map(|m| PathBuf::from(m.point))
}

/// Whether the host has a v1 hierarchy carrying `controller`.
pub fn has_v1(controller: &str) -> bool {
    v1_mount(controller).is_some()
}

/// The mount point of the host's cgroup2 hierarchy, if it has one.
pub fn v2_mount() -> Option<PathBuf> {
    cgroup_mounts(&mountinfo())
        .find(|m| m.v2)
        .map(|m| PathBuf::from(m.point))
}

/// The groups at `rel` that exist already, in every hierarchy the host mounts.
pub fn existing_groups(rel: &Path) -> Vec<PathBuf> {
    cgroup_mounts(&mountinfo())
        .map(|m| Path::new(m.point).join(rel))
        .filter(|d| d.is_dir())
        .collect()
}

/// Each cgroup mount: (mount point, controllers; none for cgroup2).
pub fn controllers_by_mount() -> Vec<(PathBuf, Vec<String>)> {
    cgroup_mounts(&mountinfo())
        .map(|m| {
            let controllers = if m.v2 {
                Vec::new()
            } else {
                m.opts
                    .split(',')
                    .filter(|o| !matches!(*o, "rw" | "ro" | "xattr") && !o.contains('='))
                    .map(str::to_string)
                    .collect()
            };
            (PathBuf::from(m.point), controllers)
        })
        .collect()
}

/// A cgroup hierarchy mounted on the host under /sys/fs/cgroup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hierarchy {
    /// Where the host mounts it (`/sys/fs/cgroup/memory`, or the root itself).
    pub mount_point: PathBuf,
    pub v2: bool,
    /// v1: the controllers (and `name=` option) it carries, as mount options.
    pub options: String,
}

/// The cgroup mounts of `mountinfo` under /sys/fs/cgroup.
pub fn host_hierarchies(mountinfo: &str) -> Vec<Hierarchy> {
    cgroup_mounts(mountinfo)
        .filter(|m| m.point == HOST_ROOT || m.point.starts_with("/sys/fs/cgroup/"))
        .map(|m| Hierarchy {
            mount_point: PathBuf::from(m.point),
            v2: m.v2,
            options: m
                .opts
                .split(',')
                .filter(|o| !matches!(*o, "rw" | "ro") && !o.starts_with("release_agent"))
                .collect::<Vec<_>>()
                .join(","),
        })
        .collect()
}

/// A process's group in each hierarchy, from /proc/PID/cgroup:
/// "controllers" (or "" for v2) → path.
pub fn own_groups(proc_cgroup: &str) -> Vec<(String, String)> {
    proc_cgroup
        .lines()
        .filter_map(|l| {
            let mut p = l.splitn(3, ':');
            let (_, ctrl, path) = (p.next()?, p.next()?, p.next()?);
            Some((ctrl.to_string(), path.to_string()))
        })
        .collect()
}

impl Hierarchy {
    /// The group path in this hierarchy among `groups` (see [`own_groups`]).
    pub fn own_path<'a>(&self, groups: &'a [(String, String)]) -> Option<&'a str> {
        groups
            .iter()
            .find(|(ctrl, _)| {
                if self.v2 {
                    ctrl.is_empty()
                } else {
                    // The hierarchy's options hold its controllers (or name=) and
                    // flags such as xattr.
                    let opts: Vec<&str> = self.options.split(',').collect();
                    !ctrl.is_empty() && ctrl.split(',').all(|c| opts.contains(&c))
                }
            })
            .map(|(_, p)| p.as_str())
    }

    /// The directory of that group on the host.
    pub fn group_dir(&self, groups: &[(String, String)]) -> Option<PathBuf> {
        self.own_path(groups)
            .map(|p| self.mount_point.join(p.trim_start_matches('/')))
    }
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
        let hs = host_hierarchies(HYBRID);
        assert_eq!(hs.len(), 4);
        assert!(hs[0].v2);
        assert_eq!(hs[1].options, "memory");
        assert_eq!(hs[2].options, "cpu,cpuacct");
        assert_eq!(hs[3].options, "xattr,name=systemd");
        let groups = own_groups("12:memory:/maibox/c1\n4:cpuacct,cpu:/maibox/c1\n0::/init.scope\n");
        assert_eq!(hs[1].own_path(&groups), Some("/maibox/c1"));
        assert_eq!(hs[2].own_path(&groups), Some("/maibox/c1"));
        assert_eq!(hs[0].own_path(&groups), Some("/init.scope"));
        assert_eq!(hs[3].own_path(&groups), None);
        assert_eq!(
            hs[1].group_dir(&groups),
            Some(PathBuf::from("/sys/fs/cgroup/memory/maibox/c1"))
        );
    }
}
