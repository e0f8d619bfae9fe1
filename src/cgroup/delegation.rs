//! A cgroup v2 subtree delegated to a rootless caller: where its run groups go
//! when the configured parent (default `/maibox`, at the hierarchy's root) is not
//! the caller's to write.
//!
//! Delegation on cgroup v2 is ownership: systemd gives a logged-in user
//! `user@UID.service` (and a unit with `Delegate=yes` its own group) by chowning
//! the directory and its `cgroup.procs`, `cgroup.subtree_control` and
//! `cgroup.threads` to the user. So the delegated subtree holding the caller is the
//! highest ancestor of the caller's own group that the caller owns, found by walking
//! up from `/proc/self/cgroup`. Run groups go into `<that subtree>/maibox`, beside
//! the caller's own group and never inside it: cgroup v2 lets only groups without
//! processes of their own hand controllers to children, and moving the sandbox
//! there needs write access to the common ancestor's `cgroup.procs`, which the
//! subtree's top has.

use super::{CgroupConfig, Layout};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The configuration a run of this caller uses: `cfg` itself, unless the caller is
/// not root, the host is on cgroup v2, the configured parent is not the caller's
/// to write and a subtree is delegated to it: then the parent is `maibox` at the
/// top of that subtree.
pub fn for_caller(layout: &Layout, cfg: &CgroupConfig) -> CgroupConfig {
    let uid = nix::unistd::geteuid().as_raw();
    let Layout::V2 { root } = layout else {
        return cfg.clone();
    };
    if uid == 0 || writable_parent(root, &cfg.parent, uid) {
        return cfg.clone();
    }
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    match own_group(&own).and_then(|g| delegated_top(root, g, uid)) {
        Some(top) => CgroupConfig {
            parent: format!("{}/maibox", top.trim_end_matches('/')),
            ..cfg.clone()
        },
        None => cfg.clone(),
    }
}

/// Whether a run group under `parent` is the caller's to make: the parent, or the
/// nearest of its ancestors that exists, belongs to `uid`.
fn writable_parent(root: &Path, parent: &str, uid: u32) -> bool {
    let mut dir = root.join(parent.trim_start_matches('/'));
    loop {
        if let Ok(m) = std::fs::metadata(&dir) {
            return m.uid() == uid;
        }
        if !dir.pop() || !dir.starts_with(root) {
            return false;
        }
    }
}

/// The caller's group in the unified hierarchy, from `/proc/self/cgroup` (the
/// `0::` line).
fn own_group(proc_cgroup: &str) -> Option<&str> {
    proc_cgroup
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .map(str::trim)
        .filter(|g| g.starts_with('/'))
}

/// The highest ancestor of `group` that `uid` owns, with the `cgroup.procs`
/// through which it moves processes: the top of the subtree delegated to it. The
/// walk starts at the parent of the caller's group: a group holding the caller
/// cannot hand controllers to children (cgroup v2's no-internal-process rule), so
/// a delegation of that group alone is of no use. `None` when the parent is not
/// the caller's; the hierarchy's root is never taken.
fn delegated_top(root: &Path, group: &str, uid: u32) -> Option<String> {
    let owned = |rel: &Path| {
        let dir = root.join(rel);
        let of_uid = |p: PathBuf| std::fs::metadata(p).is_ok_and(|m| m.uid() == uid);
        of_uid(dir.join("cgroup.procs")) && of_uid(dir)
    };
    let mut cur = PathBuf::from(group.trim_start_matches('/'));
    cur.pop();
    let mut top = None;
    while cur.parent().is_some() && owned(&cur) {
        top = Some(cur.clone());
        cur.pop();
    }
    top.map(|t| format!("/{}", t.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_group_is_the_unified_line() {
        let text =
            "12:memory:/x\n0::/user.slice/user-1000.slice/user@1000.service/app.slice/a.scope\n";
        assert_eq!(
            own_group(text),
            Some("/user.slice/user-1000.slice/user@1000.service/app.slice/a.scope")
        );
        assert_eq!(own_group("12:memory:/x\n"), None);
    }

    /// A fake hierarchy in a temporary directory: the walk stops at the first
    /// ancestor the caller does not own, and never takes the root.
    #[test]
    fn the_top_is_the_highest_owned_ancestor() {
        let uid = nix::unistd::geteuid().as_raw();
        let root = tempfile::tempdir().unwrap();
        let deep = root.path().join("user.slice/u.service/app.slice/a.scope");
        std::fs::create_dir_all(&deep).unwrap();
        for d in [
            "",
            "user.slice",
            "user.slice/u.service",
            "user.slice/u.service/app.slice",
            "user.slice/u.service/app.slice/a.scope",
        ] {
            std::fs::write(root.path().join(d).join("cgroup.procs"), "").unwrap();
        }
        // Everything is the caller's: the walk stops below the root.
        let top = delegated_top(root.path(), "/user.slice/u.service/app.slice/a.scope", uid);
        assert_eq!(top.as_deref(), Some("/user.slice"));
        // Another uid owns nothing here.
        assert_eq!(
            delegated_top(
                root.path(),
                "/user.slice/u.service/app.slice/a.scope",
                uid + 1
            ),
            None
        );
        // A group without its cgroup.procs is not a delegation boundary.
        std::fs::remove_file(root.path().join("user.slice/cgroup.procs")).unwrap();
        let top = delegated_top(root.path(), "/user.slice/u.service/app.slice/a.scope", uid);
        assert_eq!(top.as_deref(), Some("/user.slice/u.service"));
        // A group directly below the root: only itself could be delegated.
        assert_eq!(delegated_top(root.path(), "/user.slice", uid), None);
    }

    #[test]
    fn writable_parent_looks_at_the_nearest_existing_ancestor() {
        let uid = nix::unistd::geteuid().as_raw();
        let root = tempfile::tempdir().unwrap();
        assert!(writable_parent(root.path(), "/maibox/deeper", uid));
        assert!(!writable_parent(root.path(), "/maibox", uid + 1));
    }
}
