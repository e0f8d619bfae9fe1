//! Device rules on cgroup v1: the container's group in the devices hierarchy
//! and its `devices.allow` / `devices.deny` files (v2 takes a BPF program
//! instead, see [`super::devfilter`]).

use std::path::{Path, PathBuf};

use crate::cgroup::hierarchy::v1_mount;

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
