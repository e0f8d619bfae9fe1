//! Thin, typed wrappers over mount(2), mount_setattr(2) and friends.

use crate::error::{SetupError, Step, StepContext};
use nix::fcntl::{open, OFlag};
use nix::mount::{mount, MsFlags};
use nix::sys::stat::Mode;
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::Path;

pub const MOUNT_ATTR_RDONLY: u64 = 0x0000_0001;
pub const MOUNT_ATTR_NOSUID: u64 = 0x0000_0002;
pub const MOUNT_ATTR_NODEV: u64 = 0x0000_0004;
pub const MOUNT_ATTR_NOEXEC: u64 = 0x0000_0008;
/// The atime mode is a 3-bit field: changing it clears the whole field.
pub const MOUNT_ATTR_ATIME_MASK: u64 = 0x0000_0070;
pub const MOUNT_ATTR_NOATIME: u64 = 0x0000_0010;
pub const MOUNT_ATTR_STRICTATIME: u64 = 0x0000_0020;
pub const MOUNT_ATTR_NODIRATIME: u64 = 0x0000_0080;
pub const MOUNT_ATTR_NOSYMFOLLOW: u64 = 0x0020_0000;
/// Linux 5.10; nix 0.29 has no name for it.
pub const MS_NOSYMFOLLOW: MsFlags = MsFlags::from_bits_retain(256);

/// `struct mount_attr` from <linux/mount.h>; the libc crate does not define it.
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// Sets mount attributes on `target` and, with `recursive`, on every mount below it.
///
/// mount_setattr (Linux 5.12) is used instead of MS_REMOUNT because it changes only
/// the flags asked for: a remount must restate every locked flag of the source
/// mount (atime, nodev…) or fail with EPERM inside a user namespace.
pub fn set_attr(step: Step, target: &Path, attrs: u64, recursive: bool) -> Result<(), SetupError> {
    change_attr(step, target, attrs, 0, recursive)
}

/// Sets `set` and clears `clear` (see [`set_attr`]).
pub fn change_attr(
    step: Step,
    target: &Path,
    set: u64,
    clear: u64,
    recursive: bool,
) -> Result<(), SetupError> {
    let c = std::ffi::CString::new(target.as_os_str().as_encoded_bytes())
        .step(step, format!("path {}", target.display()))?;
    let attr = MountAttr {
        attr_set: set,
        attr_clr: clear,
        propagation: 0,
        userns_fd: 0,
    };
    let flags = libc::AT_NO_AUTOMOUNT | if recursive { libc::AT_RECURSIVE } else { 0 };
    // SAFETY: valid C string and a properly sized, initialized mount_attr.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            c.as_ptr(),
            flags as libc::c_uint,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if rc != 0 {
        return Err(SetupError::new(
            step,
            format!(
                "mount_setattr {}: {}",
                target.display(),
                std::io::Error::last_os_error()
            ),
        ));
    }
    Ok(())
}

/// Sets `attrs` and the propagation type `propagation` (MS_PRIVATE...) on the
/// mount `fd` refers to (a detached one from open_tree, say).
pub fn set_attr_fd(
    step: Step,
    fd: &OwnedFd,
    attrs: u64,
    propagation: u64,
) -> Result<(), SetupError> {
    use std::os::fd::AsRawFd;
    let attr = MountAttr {
        attr_set: attrs,
        attr_clr: 0,
        propagation,
        userns_fd: 0,
    };
    // SAFETY: an empty C string, a valid descriptor and an initialized mount_attr.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            fd.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH as libc::c_uint,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if rc != 0 {
        return Err(SetupError::new(
            step,
            format!("mount_setattr: {}", std::io::Error::last_os_error()),
        ));
    }
    Ok(())
}

/// Attaches the detached mount `fd` (from open_tree) at `target`.
pub fn move_mount(step: Step, fd: &OwnedFd, target: &Path) -> Result<(), SetupError> {
    use std::os::fd::AsRawFd;
    let c = std::ffi::CString::new(target.as_os_str().as_encoded_bytes())
        .step(step, format!("path {}", target.display()))?;
    // SAFETY: valid C strings and descriptor; move_mount only reads them.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            fd.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_FDCWD,
            c.as_ptr(),
            libc::MOVE_MOUNT_F_EMPTY_PATH as libc::c_uint,
        )
    };
    if rc != 0 {
        return Err(SetupError::new(
            step,
            format!(
                "move_mount onto {}: {}",
                target.display(),
                std::io::Error::last_os_error()
            ),
        ));
    }
    Ok(())
}

/// Opens a host path as an O_PATH descriptor, before the host view is covered.
pub fn open_path(step: Step, p: &Path) -> Result<OwnedFd, SetupError> {
    let fd = open(p, OFlag::O_PATH | OFlag::O_CLOEXEC, Mode::empty())
        .step(step, format!("open {}", p.display()))?;
    // SAFETY: open returned a fresh descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The path through which a descriptor from [`open_path`] can be used as a mount source.
pub fn fd_path(fd: &OwnedFd) -> String {
    use std::os::fd::AsRawFd;
    format!("/proc/self/fd/{}", fd.as_raw_fd())
}

/// Nothing mounted from here on propagates back to the host, nor receives host mounts.
pub fn make_private() -> Result<(), SetupError> {
    nix::mount::mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None::<&str>,
    )
    .step(Step::MountPropagation, "make / recursively private")
}

pub fn bind(step: Step, src: &str, target: &Path, recursive: bool) -> Result<(), SetupError> {
    let mut flags = MsFlags::MS_BIND;
    if recursive {
        flags |= MsFlags::MS_REC;
    }
    mount(Some(src), target, None::<&str>, flags, None::<&str>)
        .step(step, format!("bind {src} on {}", target.display()))
}

/// One inode per this many bytes of a tmpfs's size. A tmpfs bounds its pages by
/// `size`, but its inodes, without `nr_inodes`, only by half the host's RAM: empty
/// files take no page, so a size-capped tmpfs would still hold hundreds of thousands
/// of them, each about 1 KiB of kernel memory that no limit charges when no cgroup
/// does (rootless). One inode per page keeps that memory near a quarter of the size.
pub const BYTES_PER_INODE: u64 = 4096;
/// Mount points, links and a few files: the smallest tmpfs still holds them.
const MIN_INODES: u64 = 256;

/// The inode bound of a tmpfs of `size` bytes.
pub fn inodes_for(size: u64) -> u64 {
    (size / BYTES_PER_INODE).max(MIN_INODES)
}

/// Mount options of a tmpfs of `size` bytes with its inode bound, and `mode`.
pub fn tmpfs_options(size: u64, mode: &str) -> String {
    format!("size={size},nr_inodes={},mode={mode}", inodes_for(size))
}

/// Mounts a tmpfs; `data` names its size and inode bound (see [`tmpfs_options`]).
pub fn tmpfs(step: Step, target: &Path, flags: MsFlags, data: &str) -> Result<(), SetupError> {
    mount(Some("tmpfs"), target, Some("tmpfs"), flags, Some(data)).step(
        step,
        format!("mount tmpfs ({data}) on {}", target.display()),
    )
}

pub fn mkdir_p(step: Step, p: &Path) -> Result<(), SetupError> {
    std::fs::create_dir_all(p).step(step, format!("create directory {}", p.display()))
}

/// Creates an empty file to serve as a bind-mount target.
pub fn touch(step: Step, p: &Path) -> Result<(), SetupError> {
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(p)
        .map(drop)
        .step(step, format!("create mount point {}", p.display()))
}
