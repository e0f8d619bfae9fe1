//! The OCI view's root: the spec's mounts on the bundle's root (binds opened by the
//! runtime where a user namespace needs it), default and spec devices, the runtime's
//! hooks before pivot_root, then masked and read-only paths, as runc orders them.

use crate::engine::mounts::{
    bind, mkdir_p, set_attr, touch, MOUNT_ATTR_NODEV, MOUNT_ATTR_NOEXEC, MOUNT_ATTR_NOSUID,
    MOUNT_ATTR_RDONLY,
};
use crate::engine::sync::{Channel, Msg};
use crate::error::{SetupError, Step, StepContext};
use crate::policy::oci::{OciMount, OciView};
use nix::mount::{mount, MsFlags};
use nix::unistd::{Gid, Uid};
use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

/// The container's root, whole: the runtime's bind sources received, every mount,
/// devices, hooks, pivot_root, masks. Returns the state for the init's own hooks, if
/// the spec has any.
pub(crate) fn build(
    v: &OciView,
    chan: &Channel,
    groups: &[(String, String)],
) -> Result<Option<serde_json::Value>, SetupError> {
    let sources = if v.bind_sources_from_runtime() {
        receive_bind_sources(chan)?
    } else {
        BTreeMap::new()
    };
    // The sources are bound by the time this returns: nothing of the host's stays
    // open in the container.
    build_root(v, chan, groups, &sources)
}

/// Resolves `dest` under `root` the way the container will see it: symlinks in the
/// path are followed relative to `root`, never to the host's `/` (runc's securejoin).
fn secure_join(root: &Path, dest: &str) -> Result<PathBuf, SetupError> {
    use crate::rootpath::{walk, WalkError};
    let step = Step::BindHost;
    // A destination that does not exist yet is made later, where it resolved to.
    match walk(root, Path::new(dest), false) {
        Ok(w) => Ok(root.join(w.path)),
        Err(WalkError::TooManyLinks) => Err(SetupError::new(
            step,
            format!("too many symlinks resolving {dest} in the container root"),
        )),
        Err(WalkError::ReadLink(at, e)) => Err(SetupError::new(
            step,
            format!(
                "readlink {}: {e}",
                root.join(at.strip_prefix("/").unwrap_or(&at)).display()
            ),
        )),
    }
}

fn ms(bits: libc::c_ulong) -> MsFlags {
    // Retain: flags newer than nix's table (MS_NOSYMFOLLOW) must reach mount(2).
    MsFlags::from_bits_retain(bits)
}

/// The bind sources the runtime opened for us, by mount index.
fn receive_bind_sources(chan: &Channel) -> Result<BTreeMap<usize, OwnedFd>, SetupError> {
    let mut out = BTreeMap::new();
    chan.recv_fds_until(
        |m| matches!(m, Msg::MountSourcesDone),
        Step::BindHost,
        "the bind sources from the runtime",
        |m, fd| match m {
            Msg::MountSource { index } => {
                out.insert(index, fd);
                Ok(())
            }
            other => Err(SetupError::new(
                Step::BindHost,
                format!("expected a bind source, got {other:?}"),
            )),
        },
    )?;
    Ok(out)
}

/// The spec's mounts in order, under the root (not yet pivoted). Returns the fresh
/// tmpfs asked read-only, which are mounted writable here and turned read-only once
/// the devices are in them.
fn mount_spec(
    v: &OciView,
    groups: &[(String, String)],
    sources: &BTreeMap<usize, OwnedFd>,
) -> Result<Vec<OciMount>, SetupError> {
    let root = &v.root;
    let mut read_only_later = Vec::new();
    for (i, m) in v.mounts.iter().enumerate() {
        if m.kind == "cgroup" {
            let target = secure_join(root, &m.destination)?;
            crate::engine::cgroupfs::mount_cgroups(&target, ms(m.flags), groups)?;
            continue;
        }
        // A fresh tmpfs asked read-only (`/dev` with "ro") still has to take
        // the mount points and device nodes that go in it: it is made
        // writable and turned read-only once they are there, as runc does.
        let mut m = std::borrow::Cow::Borrowed(m);
        if m.kind == "tmpfs" && !m.bind && m.flags & libc::MS_RDONLY != 0 {
            read_only_later.push(m.clone().into_owned());
            m.to_mut().flags &= !libc::MS_RDONLY;
        }
        mount_one(root, &m, sources.get(&i))?;
    }
    Ok(read_only_later)
}

/// linux.readonlyPaths, in the pivoted root: each that exists is bound onto itself
/// read-only, nosuid, nodev and noexec.
fn read_only_paths(paths: &[String]) -> Result<(), SetupError> {
    for p in paths {
        let path = Path::new(p);
        if std::fs::symlink_metadata(path).is_err() {
            continue;
        }
        bind(Step::ReadOnlyRoot, p, path, true)?;
        set_attr(
            Step::ReadOnlyRoot,
            path,
            MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC,
            true,
        )?;
    }
    Ok(())
}

pub(crate) fn build_root(
    v: &OciView,
    chan: &Channel,
    groups: &[(String, String)],
    sources: &BTreeMap<usize, OwnedFd>,
) -> Result<Option<serde_json::Value>, SetupError> {
    crate::engine::mounts::make_private()?;
    let root = &v.root;
    // pivot_root needs the new root to be a mount point.
    bind(Step::RootTmpfs, &root.display().to_string(), root, true)?;
    let read_only_later = mount_spec(v, groups, sources)?;
    default_devices(root, v.namespaces.user.is_some())?;
    spec_devices(root, &v.devices, v.namespaces.user.is_some())?;
    for m in &read_only_later {
        remount_read_only(root, m)?;
    }
    let hook_state = if v.hooks_sync {
        let state = runtime_hooks(chan)?;
        // Mounted but not yet pivoted: the hook's path resolves as the runtime sees
        // it; it runs in the container's root directory (as with runc).
        std::env::set_current_dir(root)
            .step(Step::Hooks, format!("chdir to {}", root.display()))?;
        run_hooks(v, "createContainer", &state)?;
        Some(state)
    } else {
        None
    };
    crate::engine::rootfs::pivot(root)?;
    if let Some(p) = v.root_propagation {
        mount(None::<&str>, "/", None::<&str>, ms(p), None::<&str>)
            .step(Step::MountPropagation, "set linux.rootfsPropagation on /")?;
    }
    if v.hardening.is_some() {
        own_boot_id()?;
    }
    // Read-only paths first, then masks (runc's order): a mask inside a read-only
    // path must not take its nodev.
    read_only_paths(&v.readonly_paths)?;
    for p in &v.masked_paths {
        mask(p)?;
    }
    if v.root_readonly {
        set_attr(Step::ReadOnlyRoot, Path::new("/"), MOUNT_ATTR_RDONLY, false)?;
    }
    Ok(hook_state)
}

/// `--hardened`: a random boot id of the container's own over the host's (read-only,
/// and with /proc/sys once that is). It is written to a small tmpfs mounted for the
/// moment on /proc/sys/fs, which the bind alone keeps once it is detached again.
fn own_boot_id() -> Result<(), SetupError> {
    let step = Step::Proc;
    let scratch = Path::new("/proc/sys/fs");
    if !Path::new("/proc/sys/kernel/random/boot_id").exists() {
        return Ok(()); // nothing of the host's to hide
    }
    crate::engine::mounts::tmpfs(
        step,
        scratch,
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
        "size=4k,nr_inodes=4,mode=0700",
    )?;
    let made = crate::engine::procfs::own_boot_id(Path::new("/proc"), scratch);
    nix::mount::umount2(scratch, nix::mount::MntFlags::MNT_DETACH)
        .step(step, "detach the boot id's tmpfs from /proc/sys/fs")?;
    made
}

/// Hands over to the runtime for its `prestart`/`createRuntime` hooks, which the
/// spec orders before `createContainer`; returns the state it sends back.
fn runtime_hooks(chan: &Channel) -> Result<serde_json::Value, SetupError> {
    chan.send(&Msg::HooksPoint)?;
    match chan.recv()? {
        Some(Msg::HooksDone { state }) => serde_json::from_str(&state)
            .map_err(|e| SetupError::new(Step::Hooks, format!("state from the runtime: {e}"))),
        other => Err(SetupError::new(
            Step::Hooks,
            format!("expected HooksDone from the runtime, got {other:?}"),
        )),
    }
}

pub(crate) fn run_hooks(
    v: &OciView,
    stage: &str,
    state: &serde_json::Value,
) -> Result<(), SetupError> {
    crate::engine::oci::hooks::run(v.hooks.as_ref(), stage, state)
        .map_err(|e| SetupError::new(Step::Hooks, e.to_string()))
}

/// Turns a tmpfs mounted writable for setup read-only, with its other flags
/// and options as the spec gives them.
fn remount_read_only(root: &Path, m: &OciMount) -> Result<(), SetupError> {
    let target = secure_join(root, &m.destination)?;
    let data = (!m.data.is_empty()).then_some(m.data.as_str());
    mount(
        None::<&str>,
        &target,
        None::<&str>,
        ms(m.flags) | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY,
        data,
    )
    .step(
        Step::BindHost,
        format!("remount {} read-only", m.destination),
    )
}

/// mount_setattr's view of a bind mount's flags: (set, clear).
fn bind_attrs(f: MsFlags) -> (u64, u64) {
    use crate::engine::mounts::MOUNT_ATTR_STRICTATIME;
    use crate::engine::mounts::{MOUNT_ATTR_ATIME_MASK, MOUNT_ATTR_NOATIME, MOUNT_ATTR_NODIRATIME};
    let mut set = 0;
    let mut clear = 0;
    for (flag, attr) in [
        (MsFlags::MS_RDONLY, MOUNT_ATTR_RDONLY),
        (MsFlags::MS_NOSUID, MOUNT_ATTR_NOSUID),
        (MsFlags::MS_NODEV, MOUNT_ATTR_NODEV),
        (MsFlags::MS_NOEXEC, MOUNT_ATTR_NOEXEC),
        (MsFlags::MS_NODIRATIME, MOUNT_ATTR_NODIRATIME),
        (
            crate::engine::mounts::MS_NOSYMFOLLOW,
            crate::engine::mounts::MOUNT_ATTR_NOSYMFOLLOW,
        ),
    ] {
        if f.contains(flag) {
            set |= attr;
        }
    }
    if f.contains(MsFlags::MS_NOATIME) {
        set |= MOUNT_ATTR_NOATIME;
        clear |= MOUNT_ATTR_ATIME_MASK;
    } else if f.contains(MsFlags::MS_STRICTATIME) {
        set |= MOUNT_ATTR_STRICTATIME;
        clear |= MOUNT_ATTR_ATIME_MASK;
    } else if f.contains(MsFlags::MS_RELATIME) {
        clear |= MOUNT_ATTR_ATIME_MASK;
    }
    (set, clear)
}

/// Mounts `m` under `root`; a bind takes its source from `opened` when the
/// runtime opened it for us.
fn mount_one(root: &Path, m: &OciMount, opened: Option<&OwnedFd>) -> Result<(), SetupError> {
    let step = Step::BindHost;
    let target = secure_join(root, &m.destination)?;
    if m.bind {
        bind_one(&target, m, opened)?;
    } else {
        mkdir_p(step, &target)?;
        let data = (!m.data.is_empty()).then_some(m.data.as_str());
        let source = if m.source.is_empty() {
            m.kind.as_str()
        } else {
            m.source.as_str()
        };
        mount(
            Some(source),
            &target,
            Some(m.kind.as_str()),
            ms(m.flags),
            data,
        )
        .step(
            step,
            format!("mount {} on {} ({})", m.kind, m.destination, m.data),
        )?;
    }
    if m.propagation != 0 {
        mount(
            None::<&str>,
            &target,
            None::<&str>,
            ms(m.propagation),
            None::<&str>,
        )
        .step(step, format!("set propagation of {}", m.destination))?;
    }
    if m.rec_set != 0 || m.rec_clear != 0 {
        crate::engine::mounts::change_attr(step, &target, m.rec_set, m.rec_clear, true)?;
    }
    Ok(())
}

/// A bind mount: its mount point made as the source's kind (directory or file), the
/// source taken from the descriptor the runtime opened where it had to (a user
/// namespace's root cannot reach it), then mount(2)'s flags applied as attributes,
/// which a bind ignores.
fn bind_one(target: &Path, m: &OciMount, opened: Option<&OwnedFd>) -> Result<(), SetupError> {
    let step = Step::BindHost;
    let source = opened.map_or_else(
        || m.source.clone(),
        |fd| format!("/proc/self/fd/{}", fd.as_raw_fd()),
    );
    let meta = std::fs::metadata(&source).step(step, format!("bind source {}", m.source))?;
    if meta.is_dir() {
        mkdir_p(step, target)?;
    } else {
        if let Some(parent) = target.parent() {
            mkdir_p(step, parent)?;
        }
        if std::fs::symlink_metadata(target).is_err() {
            touch(step, target)?;
        }
    }
    if opened.is_some() {
        let mut flags = MsFlags::MS_BIND;
        if m.recursive {
            flags |= MsFlags::MS_REC;
        }
        mount(
            Some(source.as_str()),
            target,
            None::<&str>,
            flags,
            None::<&str>,
        )
        .step(
            step,
            format!(
                "bind {} (opened by the runtime) on {}",
                m.source,
                target.display()
            ),
        )?;
    } else {
        bind(step, &m.source, target, m.recursive)?;
    }
    let (set, clear) = bind_attrs(ms(m.flags));
    if set != 0 || clear != 0 {
        crate::engine::mounts::change_attr(step, target, set, clear, false)?;
    }
    Ok(())
}

/// `linux.devices`: made with mknod (mode and owner as the spec says), or inside
/// a user namespace, where mknod is refused, bound from the same path on the
/// host, as runc does.
fn spec_devices(
    root: &Path,
    devices: &[crate::policy::oci::OciDevice],
    in_userns: bool,
) -> Result<(), SetupError> {
    use nix::sys::stat::{Mode, SFlag};
    let step = Step::Dev;
    for d in devices {
        let p = secure_join(root, &d.path)?;
        if let Some(parent) = p.parent() {
            mkdir_p(step, parent)?;
        }
        // As runc: a node already there (a default device, a bind) stays; and
        // nothing of the image is ever removed.
        if std::fs::symlink_metadata(&p).is_ok() {
            continue;
        }
        if in_userns {
            touch(step, &p)?;
            bind(step, &d.path, &p, false)?;
            continue;
        }
        nix::sys::stat::mknod(
            &p,
            SFlag::from_bits_truncate(d.kind),
            Mode::from_bits_truncate(d.mode),
            nix::sys::stat::makedev(d.major, d.minor),
        )
        .step(step, format!("mknod {}", d.path))?;
        // mknod is subject to the umask.
        nix::sys::stat::fchmodat(
            None,
            &p,
            Mode::from_bits_truncate(d.mode),
            nix::sys::stat::FchmodatFlags::NoFollowSymlink,
        )
        .step(step, format!("chmod {}", d.path))?;
        nix::unistd::chown(&p, Some(Uid::from_raw(d.uid)), Some(Gid::from_raw(d.gid)))
            .step(step, format!("chown {}", d.path))?;
    }
    Ok(())
}

const DEVICES: &[(&str, u64, u64)] = &[
    ("null", 1, 3),
    ("zero", 1, 5),
    ("full", 1, 7),
    ("random", 1, 8),
    ("urandom", 1, 9),
    ("tty", 5, 0),
];

/// The devices and links every OCI container gets (runtime-spec "Default Devices").
/// Nodes are created with mknod when the runtime owns the host user namespace, and
/// bound from the host inside a user namespace, where mknod is not allowed.
fn default_devices(root: &Path, in_userns: bool) -> Result<(), SetupError> {
    let step = Step::Dev;
    let dev = secure_join(root, "/dev")?;
    mkdir_p(step, &dev)?;
    for (name, major, minor) in DEVICES {
        let p = dev.join(name);
        if std::fs::symlink_metadata(&p).is_ok() {
            continue;
        }
        if in_userns {
            touch(step, &p)?;
            bind(step, &format!("/dev/{name}"), &p, false)?;
        } else {
            nix::sys::stat::mknod(
                &p,
                nix::sys::stat::SFlag::S_IFCHR,
                nix::sys::stat::Mode::from_bits_truncate(0o666),
                nix::sys::stat::makedev(*major, *minor),
            )
            .step(step, format!("mknod /dev/{name}"))?;
            // mknod is subject to the umask; the spec wants 0666.
            nix::sys::stat::fchmodat(
                None,
                &p,
                nix::sys::stat::Mode::from_bits_truncate(0o666),
                nix::sys::stat::FchmodatFlags::NoFollowSymlink,
            )
            .step(step, format!("chmod /dev/{name}"))?;
        }
    }
    for (name, target) in [
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
        ("ptmx", "pts/ptmx"),
    ] {
        let p = dev.join(name);
        if std::fs::symlink_metadata(&p).is_err() {
            std::os::unix::fs::symlink(target, &p).step(step, format!("symlink /dev/{name}"))?;
        }
    }
    Ok(())
}

/// Hides a path: /dev/null over a file, an empty read-only tmpfs over a directory.
/// The /dev/null used must be the real device, not something swapped in for it
/// (the CVE-2025-31133 family).
fn mask(p: &str) -> Result<(), SetupError> {
    use std::os::unix::fs::FileTypeExt;
    use std::os::unix::fs::MetadataExt;
    let step = Step::Proc;
    let path = Path::new(p);
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(());
    };
    if meta.is_dir() {
        return mount(
            Some("tmpfs"),
            path,
            Some("tmpfs"),
            MsFlags::MS_RDONLY | MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
            Some("size=0,mode=0555"),
        )
        .step(step, format!("mask {p}"));
    }
    let null = std::fs::symlink_metadata("/dev/null").step(step, "stat /dev/null")?;
    let rdev = null.rdev();
    if !null.file_type().is_char_device()
        || nix::sys::stat::major(rdev) != 1
        || nix::sys::stat::minor(rdev) != 3
    {
        return Err(SetupError::new(
            step,
            "/dev/null in the container is not the null device; refusing to mask with it",
        ));
    }
    bind(step, "/dev/null", path, false)?;
    set_attr(
        step,
        path,
        MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC,
        false,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secure_join_stays_in_root() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::os::unix::fs::symlink("/etc", root.join("a/abs")).unwrap();
        std::os::unix::fs::symlink("../../../../..", root.join("a/up")).unwrap();
        assert_eq!(secure_join(root, "/a/b").unwrap(), root.join("a/b"));
        assert_eq!(secure_join(root, "/a/abs/x").unwrap(), root.join("etc/x"));
        assert_eq!(secure_join(root, "/a/up/etc").unwrap(), root.join("etc"));
        assert_eq!(secure_join(root, "/../../x").unwrap(), root.join("x"));
    }
}
