//! The host directories the Python view binds (`/usr`, ...) as detached copies of
//! their mounts alone, made by the supervisor before clone.
//!
//! In the sandbox's mount namespace, which its user namespace owns, every mount
//! copied from the host is locked to the mount above it: a bind of `/usr` there must
//! be recursive (the kernel refuses a plain one, which would uncover what a submount
//! hides), so it carries every host mount below `/usr` into the sandbox, with its
//! host path in mountinfo (a VM's `/usr/lib/modules/<version>`, say). The host's root
//! is not bound by that lock: open_tree(OPEN_TREE_CLONE) of `/usr` in the host's
//! namespace copies that one mount, detached; the sandbox attaches the copy with
//! move_mount. A rootless caller has no privilege over the host's mounts: its binds
//! stay recursive (see docs/security-model.md).
//!
//! Submounts the view needs are copied the same way and attached after their parent:
//! one that holds the interpreter's prefix, one under `/usr/local` (where pip puts
//! system-wide packages on Debian-like systems), or one under the prefix's
//! `lib*/python*` directories. Every other submount is left out, and its mount point
//! shows the directory beneath it.

use super::mounts::{MOUNT_ATTR_NODEV, MOUNT_ATTR_NOSUID, MOUNT_ATTR_RDONLY};
use crate::error::{SetupError, Step};
use crate::policy::{IdMapping, Policy, View};
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};

/// A detached copy of the host mount at `at`, read-only, nosuid, nodev and private.
pub struct Tree {
    pub at: PathBuf,
    pub fd: OwnedFd,
}

/// The trees of `policy`'s view, parents before their submounts; none for a rootless
/// caller, an image root or an OCI view.
pub fn for_view(policy: &Policy) -> Result<Vec<Tree>, SetupError> {
    let rooted = matches!(policy.identity.mapping, IdMapping::Range { .. });
    if !rooted || policy.fs.rootfs.is_some() || !matches!(policy.view, View::Python) {
        return Ok(Vec::new());
    }
    let dirs = super::rootfs::host_dirs(policy);
    let mounts = mount_points();
    let mut trees = Vec::new();
    for d in &dirs {
        trees.push(clone(d)?);
    }
    let prefix = &policy.interpreter.prefix;
    let mut kept: Vec<&PathBuf> = mounts
        .iter()
        .filter(|m| {
            dirs.iter()
                .any(|d| m.starts_with(d) && m.as_path() != d.as_path())
        })
        .filter(|m| needed(m, prefix))
        .collect();
    kept.sort();
    for m in kept {
        trees.push(clone(m)?);
    }
    Ok(trees)
}

/// Whether the view needs the submount at `m` (see the module's header).
fn needed(m: &Path, prefix: &Path) -> bool {
    let python_lib = ["lib", "lib64", "local/lib"].iter().any(|l| {
        m.strip_prefix(prefix.join(l))
            .ok()
            .and_then(|rest| rest.components().next())
            .is_some_and(|c| c.as_os_str().to_string_lossy().starts_with("python"))
    });
    prefix.starts_with(m) || m.starts_with("/usr/local") || python_lib
}

/// Every mount point of this (the host's) mount namespace.
fn mount_points() -> Vec<PathBuf> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    info.lines()
        .filter_map(|l| l.split(' ').nth(4))
        .map(|p| PathBuf::from(crate::mountinfo::unescape(p)))
        .collect()
}

/// open_tree(OPEN_TREE_CLONE) of the mount at `at` alone, made read-only, nosuid,
/// nodev and private (no mount event crosses between it and the host's).
fn clone(at: &Path) -> Result<Tree, SetupError> {
    let step = Step::OpenSources;
    let err = |what: &str| {
        SetupError::new(
            step,
            format!(
                "{what} {}: {}",
                at.display(),
                std::io::Error::last_os_error()
            ),
        )
    };
    let c = std::ffi::CString::new(at.as_os_str().as_encoded_bytes())
        .map_err(|_| SetupError::new(step, format!("{} contains a NUL byte", at.display())))?;
    // SAFETY: a valid C string; open_tree returns a new descriptor or -1.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_open_tree,
            libc::AT_FDCWD,
            c.as_ptr(),
            (libc::OPEN_TREE_CLONE | libc::OPEN_TREE_CLOEXEC) as libc::c_uint,
        )
    };
    if fd < 0 {
        return Err(err("open_tree (clone)"));
    }
    // SAFETY: a fresh descriptor that nothing else owns.
    let low = unsafe { OwnedFd::from_raw_fd(fd as i32) };
    // The child's chain dup2s the run's pipes over descriptors 0 to 2 and its extra
    // descriptors over 3 and up before it attaches the trees by number. In a
    // multithreaded caller the lowest free numbers, which open_tree returns, can be
    // exactly those (another thread has just closed its own): the tree was then
    // replaced by a pipe and move_mount failed with EINVAL. Numbered from 100, as
    // the extra descriptors and the channel are, it is out of their way.
    let fd = super::sync::high_copy(std::os::fd::AsFd::as_fd(&low))
        .map_err(|e| SetupError::new(step, format!("{} ({})", e.message, at.display())))?;
    drop(low);
    super::mounts::set_attr_fd(
        step,
        &fd,
        MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
        libc::MS_PRIVATE,
    )
    .map_err(|e| SetupError::new(step, format!("{} ({})", e.message, at.display())))?;
    Ok(Tree {
        at: at.to_path_buf(),
        fd,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Frees the lowest descriptor numbers above stdio, as another thread of a
    /// server does when its run ends, then makes the trees: none may land where the
    /// child's chain dup2s its pipes (0 to 3 + extras).
    #[test]
    fn trees_are_numbered_out_of_the_childs_dup2_range() {
        if !nix::unistd::geteuid().is_root() {
            eprintln!("skipped: trees are made only for a root caller (run as root)");
            return;
        }
        let cfg = crate::config::Config::builtin().unwrap();
        let ov = crate::policy::Overrides::default();
        let policy = Policy::build(&cfg, crate::config::TrustLevel::Untrusted, &ov).unwrap();
        let mut held: Vec<OwnedFd> = Vec::new();
        loop {
            let f: OwnedFd = std::fs::File::open("/dev/null").unwrap().into();
            let n = std::os::fd::AsRawFd::as_raw_fd(&f);
            held.push(f);
            if n >= 8 {
                break;
            }
        }
        drop(held);
        let trees = for_view(&policy).unwrap();
        assert!(!trees.is_empty(), "a root caller's Python view has trees");
        for t in &trees {
            let n = std::os::fd::AsRawFd::as_raw_fd(&t.fd);
            assert!(n >= 100, "the tree of {} is descriptor {n}", t.at.display());
        }
    }

    #[test]
    fn submounts_the_view_needs() {
        let usr = Path::new("/usr");
        for (m, prefix, want) in [
            ("/usr/lib/modules/6.1.0", usr, false),
            ("/usr/share/doc", usr, false),
            ("/usr/local", usr, true),
            ("/usr/local/lib/python3.11/dist-packages", usr, true),
            ("/usr/lib/python3/dist-packages", usr, true),
            ("/usr/lib64/python3.12", usr, true),
            ("/usr/libexec", usr, false),
            ("/opt", Path::new("/opt/py/3.12"), true),
            (
                "/opt/py/3.12/lib/python3.12",
                Path::new("/opt/py/3.12"),
                true,
            ),
            ("/opt/py/3.12/share", Path::new("/opt/py/3.12"), false),
        ] {
            assert_eq!(
                needed(Path::new(m), prefix),
                want,
                "{m} with prefix {prefix:?}"
            );
        }
    }
}
