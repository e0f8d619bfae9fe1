//! cpusets: the CPUs and memory nodes a container may use, in its own v1
//! cpuset group or in its v2 group's cpuset files.

use std::path::{Path, PathBuf};

use super::{described, enable_v2_controller, holding, write, Changes};
use crate::cgroup::hierarchy::v1_mount;

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
            // Another container may make the same parent at the same moment (a pod's
            // containers start together): its group is as good as ours.
            match std::fs::create_dir(&dir) {
                Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
                    return Err(format!("create {}: {e}", dir.display()));
                }
                _ => {}
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

/// The cpuset settings of an update.
pub(super) fn update(dirs: &[PathBuf], c: &Changes) -> Result<(), String> {
    if c.cpus.is_none() && c.mems.is_none() {
        return Ok(());
    }
    let d = match holding(dirs, "cpuset.cpus") {
        Some(d) => d.to_path_buf(),
        None => v2_cpuset(dirs)?,
    };
    for (file, v) in [("cpuset.cpus", &c.cpus), ("cpuset.mems", &c.mems)] {
        if let Some(v) = v {
            check_cpu_list(file, v)?;
            let f = d.join(file);
            write(&f, v).map_err(described(&f, v))?;
        }
    }
    Ok(())
}

/// On cgroup v2 a container that was created without cpusets has no cpuset files:
/// the controller is enabled down to its group on the first update that asks.
fn v2_cpuset(dirs: &[PathBuf]) -> Result<PathBuf, String> {
    let no_cpuset = || {
        "the container has no cpuset cgroup (the host has no cpuset controller for it)".to_string()
    };
    let leaf = dirs
        .iter()
        .find(|d| d.join("cgroup.controllers").exists())
        .ok_or_else(no_cpuset)?;
    enable_v2_controller(leaf, "cpuset").map_err(|e| format!("{}: {e}", no_cpuset()))?;
    if !leaf.join("cpuset.cpus").exists() {
        return Err(no_cpuset());
    }
    Ok(leaf.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Barrier};

    /// A pod's containers start together and make their common parent group at the same
    /// moment: none of them may fail because another made it first (seen in the CRI
    /// lane as "create .../maibox-cri-lane: File exists").
    #[test]
    fn containers_making_one_parent_at_once_all_get_their_group() {
        let Some(mount) = v1_mount("cpuset") else {
            eprintln!("skipped: this host has no v1 cpuset hierarchy (the v2 path needs none)");
            return;
        };
        if !nix::unistd::Uid::effective().is_root() {
            eprintln!("skipped: making cpuset groups needs root (CI runs this as root)");
            return;
        }
        for round in 0..30 {
            let parent = format!("maibox-test-cpuset-{}-{round}", std::process::id());
            let barrier = Arc::new(Barrier::new(4));
            let handles: Vec<_> = (0..4)
                .map(|i| {
                    let (b, rel) = (
                        barrier.clone(),
                        PathBuf::from(&parent).join(format!("c{i}")),
                    );
                    std::thread::spawn(move || {
                        b.wait();
                        apply_cpuset(&rel, "", "", None)
                    })
                })
                .collect();
            let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
            for i in 0..4 {
                let _ = std::fs::remove_dir(mount.join(&parent).join(format!("c{i}")));
            }
            let _ = std::fs::remove_dir(mount.join(&parent));
            for r in results {
                let dir = r.unwrap().unwrap();
                assert!(dir.starts_with(mount.join(&parent)), "{}", dir.display());
            }
        }
    }
}
