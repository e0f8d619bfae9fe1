//! `spec`: writes a template config.json, as runc's.

use std::path::Path;

use crate::oci::error::{io_err, OciError};

fn deny_all_devices() -> oci_spec::runtime::LinuxResources {
    let mut deny = oci_spec::runtime::LinuxDeviceCgroup::default();
    deny.set_allow(false);
    deny.set_access(Some("rwm".into()));
    let mut r = oci_spec::runtime::LinuxResources::default();
    r.set_devices(Some(vec![deny]));
    r
}

/// Whether `/sys/fs/cgroup` is a cgroup2 mount (a "unified" host), the test
/// runc 1.1 makes (`cgroups.IsCgroup2UnifiedMode`) to decide its template.
fn cgroup2_unified() -> bool {
    nix::sys::statfs::statfs("/sys/fs/cgroup")
        .map(|s| s.filesystem_type() == nix::sys::statfs::CGROUP2_SUPER_MAGIC)
        .unwrap_or(false)
}

/// runc 1.1's template has a cgroup namespace only on unified hosts. On a v1
/// or hybrid host its containers see their own paths in `/proc/self/cgroup`
/// (`/docker/<id>`, not `/`), which tools and runc's own tests read to find a
/// container's group; maibox's template matches it. A spec may still ask for
/// the namespace.
fn drop_cgroup_namespace(l: &mut oci_spec::runtime::Linux) {
    if let Some(ns) = l.namespaces().clone() {
        let kept = ns
            .into_iter()
            .filter(|n| n.typ() != oci_spec::runtime::LinuxNamespaceType::Cgroup)
            .collect();
        l.set_namespaces(Some(kept));
    }
}

/// Runs `spec`.
pub fn spec(rootless: bool, dir: Option<&Path>) -> Result<(), OciError> {
    let dir = dir.unwrap_or(Path::new("."));
    let path = dir.join("config.json");
    if path.exists() {
        return Err(OciError::Refused(format!(
            "{} exists; remove it first",
            path.display()
        )));
    }
    let mut s = if rootless {
        oci_spec::runtime::Spec::rootless(
            nix::unistd::geteuid().as_raw(),
            nix::unistd::getegid().as_raw(),
        )
    } else {
        oci_spec::runtime::Spec::default()
    };
    // As runc's template: every device denied but the default ones (which the
    // device rules always allow). A rootless container has no cgroup to
    // enforce that with, so its template asks for no resources at all.
    if let Some(l) = s.linux_mut() {
        l.set_resources(if rootless {
            None
        } else {
            Some(deny_all_devices())
        });
        if !cgroup2_unified() {
            drop_cgroup_namespace(l);
        }
    }
    // As runc's template: an interactive shell on a pty, and no inheritable
    // capabilities (CVE-2022-29162: inheritable capabilities reach programs
    // the container executes with file capabilities).
    s.set_hostname(Some("maibox".into()));
    if let Some(p) = s.process_mut() {
        p.set_terminal(Some(true));
        if let Some(mut c) = p.capabilities().clone() {
            c.set_inheritable(None);
            p.set_capabilities(Some(c));
        }
    }
    let text = serde_json::to_string_pretty(&s)
        .map_err(|e| OciError::Refused(format!("encode the spec: {e}")))?;
    std::fs::write(&path, text + "\n").map_err(io_err(format!("write {}", path.display())))
}
