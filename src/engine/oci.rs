//! The engine's steps for an OCI bundle's view ([`View::Oci`](crate::policy::View)):
//! the bundle's root instead of maibox's Python view, the spec's mounts, identity,
//! capabilities and process.
//!
//! Runs in the cloned child, in the order runc uses: namespaces, sysctls, mounts on
//! the bundle's root, pivot_root, masked/read-only paths, hostname, rlimits, identity
//! and capabilities, cwd, then `Ready` and the wait for `start`.

use super::mounts::{
    bind, mkdir_p, set_attr, touch, MOUNT_ATTR_NODEV, MOUNT_ATTR_NOEXEC, MOUNT_ATTR_NOSUID,
    MOUNT_ATTR_RDONLY,
};
use super::sync::{Channel, Msg};
use crate::error::{SetupError, Step, StepContext};
use crate::oci::view::{CapabilitySets, IdMaps, OciMount, OciProcess, OciView};
use nix::mount::{mount, MsFlags};
use nix::sched::CloneFlags;
use nix::unistd::{Gid, Pid, Uid};
use std::collections::BTreeMap;
use std::ffi::CString;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};

pub fn clone_flags(v: &OciView) -> CloneFlags {
    let n = &v.namespaces;
    let mut f = CloneFlags::empty();
    for (on, flag) in [
        (n.mount, CloneFlags::CLONE_NEWNS),
        (n.pid, CloneFlags::CLONE_NEWPID),
        (n.network, CloneFlags::CLONE_NEWNET),
        (n.ipc, CloneFlags::CLONE_NEWIPC),
        (n.uts, CloneFlags::CLONE_NEWUTS),
        (n.user.is_some(), CloneFlags::CLONE_NEWUSER),
    ] {
        if on {
            f |= flag;
        }
    }
    f
}

/// Writes the spec's uid/gid maps for a container with its own user namespace.
pub fn write_maps(pid: Pid, maps: &IdMaps) -> Result<(), SetupError> {
    let dir = format!("/proc/{}", pid.as_raw());
    let text = |m: &[(u32, u32, u32)]| {
        m.iter()
            .map(|(c, h, n)| format!("{c} {h} {n}\n"))
            .collect::<String>()
    };
    // Only a privileged writer may allow setgroups; an unprivileged one must deny it
    // before writing gid_map.
    let setgroups = if nix::unistd::geteuid().is_root() {
        "allow"
    } else {
        "deny"
    };
    for (file, content) in [
        ("setgroups", setgroups.to_string()),
        ("uid_map", text(&maps.uid)),
        ("gid_map", text(&maps.gid)),
    ] {
        std::fs::write(format!("{dir}/{file}"), &content).step(
            Step::UserNsMap,
            format!("write {dir}/{file} ({})", content.trim()),
        )?;
    }
    Ok(())
}

/// Everything the child does for an OCI view, up to `Ready`. Returns the start gate
/// (the FIFO `start` writes to), if any.
/// Returns the start gate and, with hooks, the container's state for them.
pub fn setup(
    v: &OciView,
    chan: &Channel,
) -> Result<(Option<OwnedFd>, Option<serde_json::Value>), SetupError> {
    if v.die_with_parent {
        nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
            .step(Step::Session, "prctl(PR_SET_PDEATHSIG, SIGKILL)")?;
    }
    match chan.recv()? {
        Some(Msg::MapsWritten) => {}
        other => {
            return Err(SetupError::new(
                Step::Sync,
                format!("expected MapsWritten from the runtime, got {other:?}"),
            ))
        }
    }
    if v.namespaces.user.is_some() {
        let (u, g) = (Uid::from_raw(0), Gid::from_raw(0));
        nix::unistd::setresgid(g, g, g)
            .step(Step::Identity, "setresgid(0) in the user namespace")?;
        nix::unistd::setresuid(u, u, u)
            .step(Step::Identity, "setresuid(0) in the user namespace")?;
    }
    for j in &v.namespaces.join {
        let Some(fd) = j.fd else { continue };
        // SAFETY: the namespace file the runtime opened; inherited, open until
        // close_fds_except below.
        let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
        nix::sched::setns(fd, CloneFlags::from_bits_truncate(j.flag)).step(
            Step::Namespaces,
            format!("join the {} namespace {}", j.kind, j.path.display()),
        )?;
    }
    // SAFETY: the runtime opened the FIFO for us and the clone gave us our own
    // copy of that descriptor, which nothing else in this process owns.
    let gate = v.start_fifo.map(|fd| unsafe { OwnedFd::from_raw_fd(fd) });
    // Leaked descriptors are how CVE-2024-21626 reached the host: close them all
    // (but those the caller preserved) before anything resolves a path the spec
    // chose.
    let mut keep = vec![chan.raw_fd()];
    if let Some(g) = &gate {
        keep.push(g.as_raw_fd());
    }
    keep.extend(v.console);
    keep.extend_from_slice(&v.preserve_fds);
    super::privs::close_fds_except(&keep)?;
    // Read before the cgroup namespace hides the paths (see cgroupfs).
    let groups = if v.mounts.iter().any(|m| m.kind == "cgroup") {
        super::cgroupfs::current_groups()?
    } else {
        Vec::new()
    };
    if v.namespaces.cgroup {
        nix::sched::unshare(CloneFlags::CLONE_NEWCGROUP)
            .step(Step::Cgroup, "unshare the cgroup namespace")?;
    }
    if v.namespaces.network {
        super::net::loopback_up()?;
    }
    for (k, val) in &v.sysctls {
        let p = format!("/proc/sys/{}", k.replace('.', "/"));
        std::fs::write(&p, val).step(Step::Namespaces, format!("sysctl {k}={val}"))?;
    }
    let sources = if v.bind_sources_from_runtime() {
        receive_bind_sources(chan)?
    } else {
        BTreeMap::new()
    };
    let hook_state = build_root(v, chan, &groups, &sources)?;
    // The sources are bound: nothing of the host's stays open in the container.
    drop(sources);
    if let Some(h) = &v.hostname {
        nix::unistd::sethostname(h).step(Step::Hostname, "sethostname")?;
    }
    if let Some(d) = &v.domainname {
        // SAFETY: a valid buffer and its length; nix has no wrapper.
        let rc = unsafe { libc::setdomainname(d.as_ptr().cast(), d.len()) };
        if rc != 0 {
            return Err(SetupError::new(
                Step::Hostname,
                format!("setdomainname: {}", std::io::Error::last_os_error()),
            ));
        }
    }
    for (res, soft, hard) in &v.process.rlimits {
        let lim = libc::rlimit {
            rlim_cur: *soft,
            rlim_max: *hard,
        };
        // SAFETY: a valid rlimit struct; the resource number was checked at parse time.
        if unsafe { libc::setrlimit(*res as _, &lim) } != 0 {
            return Err(SetupError::new(
                Step::Rlimits,
                format!(
                    "setrlimit({res}, {soft}, {hard}): {}",
                    std::io::Error::last_os_error()
                ),
            ));
        }
    }
    if let Some(adj) = v.process.oom_score_adj {
        std::fs::write("/proc/self/oom_score_adj", adj.to_string())
            .step(Step::Rlimits, "write /proc/self/oom_score_adj")?;
    }
    nix::unistd::setsid()
        .map(drop)
        .step(Step::Session, "setsid")?;
    // Without no_new_privs the kernel takes a filter only from a holder of
    // CAP_SYS_ADMIN, so it goes on before the identity switch drops it (as runc
    // does); the profile must then allow the calls left in setup.
    if let Some(fd) = v.console.filter(|_| v.process.terminal) {
        // SAFETY: the connected console socket, inherited from the runtime; we own
        // our copy and close it once the master is sent.
        let console = unsafe { OwnedFd::from_raw_fd(fd) };
        super::console::attach(console.as_fd(), v.process.uid, v.process.console_size)?;
    }
    // As runc: the cwd is entered as root first, so that a directory the
    // container's user may not search still works; only if that fails is it
    // tried again as the user. The check that it lies inside the root follows
    // either way, and before any filter: a profile may send getcwd to an agent
    // that has not answered yet (youki's contest `seccomp_notify` does).
    let entered = std::env::set_current_dir(&v.process.cwd).is_ok();
    if entered {
        check_cwd(&v.process.cwd)?;
    }
    // A notifying profile goes on here in any case (as runc does): its listener
    // must reach the runtime, which is gone once the container starts.
    if !v.process.no_new_privileges || notifies(v) {
        if v.process.no_new_privileges {
            nix::sys::prctl::set_no_new_privs()
                .step(Step::NoNewPrivs, "prctl(PR_SET_NO_NEW_PRIVS)")?;
        }
        if let Some(listener) = install_seccomp(v.seccomp.as_ref())? {
            chan.send_fd(&Msg::SeccompListener, listener.as_fd())?;
        }
    }
    switch_identity(&v.process, v.namespaces.user.is_some())?;
    if !entered {
        enter_cwd(&v.process.cwd)?;
    }
    Ok((gate, hook_state))
}

/// After `Ready`: blocks until `start` (or, without a FIFO, the `Start` message).
pub fn wait_start(gate: Option<OwnedFd>, chan: &Channel) -> Result<(), SetupError> {
    match gate {
        Some(fd) => {
            let mut b = [0u8; 1];
            loop {
                match nix::unistd::read(fd.as_raw_fd(), &mut b) {
                    Ok(1) => return Ok(()),
                    Err(nix::errno::Errno::EINTR) => continue,
                    other => {
                        return Err(SetupError::new(
                            Step::Sync,
                            format!("waiting on the start FIFO: {other:?}"),
                        ))
                    }
                }
            }
        }
        None => match chan.recv()? {
            Some(Msg::Start) => Ok(()),
            other => Err(SetupError::new(
                Step::Sync,
                format!("expected Start, got {other:?}"),
            )),
        },
    }
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

fn build_root(
    v: &OciView,
    chan: &Channel,
    groups: &[(String, String)],
    sources: &BTreeMap<usize, OwnedFd>,
) -> Result<Option<serde_json::Value>, SetupError> {
    super::mounts::make_private()?;
    let root = &v.root;
    // pivot_root needs the new root to be a mount point.
    bind(Step::RootTmpfs, &root.display().to_string(), root, true)?;
    let mut read_only_later = Vec::new();
    for (i, m) in v.mounts.iter().enumerate() {
        if m.kind == "cgroup" {
            let target = secure_join(root, &m.destination)?;
            super::cgroupfs::mount_cgroups(&target, ms(m.flags), groups)?;
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
    super::rootfs::pivot(root)?;
    if let Some(p) = v.root_propagation {
        mount(None::<&str>, "/", None::<&str>, ms(p), None::<&str>)
            .step(Step::MountPropagation, "set linux.rootfsPropagation on /")?;
    }
    for p in &v.masked_paths {
        mask(p)?;
    }
    for p in &v.readonly_paths {
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
    if v.root_readonly {
        set_attr(Step::ReadOnlyRoot, Path::new("/"), MOUNT_ATTR_RDONLY, false)?;
    }
    Ok(hook_state)
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

fn run_hooks(v: &OciView, stage: &str, state: &serde_json::Value) -> Result<(), SetupError> {
    crate::oci::hooks::run(v.hooks.as_ref(), stage, state)
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
    use super::mounts::MOUNT_ATTR_STRICTATIME;
    use super::mounts::{MOUNT_ATTR_ATIME_MASK, MOUNT_ATTR_NOATIME, MOUNT_ATTR_NODIRATIME};
    let mut set = 0;
    let mut clear = 0;
    for (flag, attr) in [
        (MsFlags::MS_RDONLY, MOUNT_ATTR_RDONLY),
        (MsFlags::MS_NOSUID, MOUNT_ATTR_NOSUID),
        (MsFlags::MS_NODEV, MOUNT_ATTR_NODEV),
        (MsFlags::MS_NOEXEC, MOUNT_ATTR_NOEXEC),
        (MsFlags::MS_NODIRATIME, MOUNT_ATTR_NODIRATIME),
        (
            super::mounts::MS_NOSYMFOLLOW,
            super::mounts::MOUNT_ATTR_NOSYMFOLLOW,
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
        let source = opened.map_or_else(
            || m.source.clone(),
            |fd| format!("/proc/self/fd/{}", fd.as_raw_fd()),
        );
        let src = Path::new(&source);
        let meta = std::fs::metadata(src).step(step, format!("bind source {}", m.source))?;
        if meta.is_dir() {
            mkdir_p(step, &target)?;
        } else {
            if let Some(parent) = target.parent() {
                mkdir_p(step, parent)?;
            }
            if std::fs::symlink_metadata(&target).is_err() {
                touch(step, &target)?;
            }
        }
        if opened.is_some() {
            let mut flags = MsFlags::MS_BIND;
            if m.recursive {
                flags |= MsFlags::MS_REC;
            }
            mount(
                Some(source.as_str()),
                &target,
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
            bind(step, &m.source, &target, m.recursive)?;
        }
        // A bind mount ignores mount(2)'s flags: each one is applied as an attribute.
        let (set, clear) = bind_attrs(ms(m.flags));
        if set != 0 || clear != 0 {
            super::mounts::change_attr(step, &target, set, clear, false)?;
        }
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
        super::mounts::change_attr(step, &target, m.rec_set, m.rec_clear, true)?;
    }
    Ok(())
}

/// `linux.devices`: made with mknod (mode and owner as the spec says), or inside
/// a user namespace, where mknod is refused, bound from the same path on the
/// host, as runc does.
fn spec_devices(
    root: &Path,
    devices: &[crate::oci::view::OciDevice],
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

fn cap_set(step: Step, names: &[String]) -> Result<caps::CapsHashSet, SetupError> {
    names
        .iter()
        .map(|n| {
            n.parse::<caps::Capability>()
                .step(step, format!("capability {n}"))
        })
        .collect()
}

/// setgroups/setresgid/setresuid to the spec's user, keeping exactly the spec's
/// capability sets (an empty or absent set keeps nothing).
pub(crate) fn switch_identity(p: &OciProcess, in_userns: bool) -> Result<(), SetupError> {
    use caps::CapSet;
    let step = Step::Capabilities;
    let c: &CapabilitySets = &p.capabilities;
    let bounding = cap_set(step, &c.bounding)?;
    // The bounding set can only shrink while CAP_SETPCAP is held: first.
    for cap in caps::all() {
        if !bounding.contains(&cap) && caps::has_cap(None, CapSet::Bounding, cap).unwrap_or(false) {
            caps::drop(None, CapSet::Bounding, cap)
                .step(step, format!("drop {cap} from the bounding set"))?;
        }
    }
    nix::sys::prctl::set_keepcaps(true).step(step, "prctl(PR_SET_KEEPCAPS, 1)")?;
    let groups: Vec<Gid> = p
        .additional_gids
        .iter()
        .map(|g| Gid::from_raw(*g))
        .collect();
    let in_userns_without_groups = in_userns && !nix::unistd::geteuid().is_root();
    if !in_userns_without_groups {
        nix::unistd::setgroups(&groups).step(Step::Identity, "setgroups")?;
    }
    let (u, g) = (Uid::from_raw(p.uid), Gid::from_raw(p.gid));
    nix::unistd::setresgid(g, g, g).step(Step::Identity, format!("setresgid({g})"))?;
    nix::unistd::setresuid(u, u, u).step(Step::Identity, format!("setresuid({u})"))?;
    nix::sys::prctl::set_keepcaps(false).step(step, "prctl(PR_SET_KEEPCAPS, 0)")?;
    let effective = cap_set(step, &c.effective)?;
    let permitted = cap_set(step, &c.permitted)?;
    if !effective.is_subset(&permitted) {
        return Err(SetupError::new(
            step,
            "process.capabilities: effective is not a subset of permitted",
        ));
    }
    caps::set(None, CapSet::Effective, &effective).step(step, "set the effective set")?;
    caps::set(None, CapSet::Inheritable, &cap_set(step, &c.inheritable)?)
        .step(step, "set the inheritable set")?;
    caps::set(None, CapSet::Permitted, &permitted).step(step, "set the permitted set")?;
    caps::clear(None, CapSet::Ambient).step(step, "clear the ambient set")?;
    // The kernel raises an ambient capability only if it is also permitted and
    // inheritable; runc's own template lists ambient capabilities without
    // inheritable ones. As runc does, such a request is skipped (silently: this
    // process's stderr is the container's): the process gets fewer
    // capabilities than asked, never more.
    for cap in cap_set(step, &c.ambient)? {
        let _ = caps::raise(None, CapSet::Ambient, cap);
    }
    if p.no_new_privileges {
        nix::sys::prctl::set_no_new_privs().step(Step::NoNewPrivs, "prctl(PR_SET_NO_NEW_PRIVS)")?;
    }
    // Until execve replaces this image, nothing in the container may read our memory.
    nix::sys::prctl::set_dumpable(false).step(step, "prctl(PR_SET_DUMPABLE, 0)")?;
    Ok(())
}

/// chdir to the spec's cwd, as the container's user, and check that it lies inside
/// the container's root: a cwd reached through a leaked descriptor
/// (`/proc/self/fd/N`, CVE-2024-21626) shows up as an unreachable directory.
pub(crate) fn enter_cwd(cwd: &str) -> Result<(), SetupError> {
    std::env::set_current_dir(cwd).step(Step::PivotRoot, format!("chdir to process.cwd {cwd}"))?;
    check_cwd(cwd)
}

/// The current directory, entered for `cwd`, must lie inside the container's root.
pub(crate) fn check_cwd(cwd: &str) -> Result<(), SetupError> {
    let step = Step::PivotRoot;
    let here = nix::unistd::getcwd().step(
        step,
        format!("process.cwd {cwd} is outside the container's root"),
    )?;
    if !here.is_absolute() || here.as_os_str().as_encoded_bytes().starts_with(b"(") {
        return Err(SetupError::new(
            step,
            format!("process.cwd {cwd} is outside the container's root"),
        ));
    }
    Ok(())
}

/// Finds the program the way execvp would, in the container's root and PATH, so
/// that a missing program fails `create` rather than the container.
pub fn resolve_program(v: &OciView) -> Result<CString, SetupError> {
    resolve_in_path(&v.process)
}

/// execvp's search for the process's program, in the current root.
pub(crate) fn resolve_in_path(process: &OciProcess) -> Result<CString, SetupError> {
    let step = Step::Exec;
    let arg0 = &process.args[0];
    let cstr = |s: &str| CString::new(s).step(step, format!("{s:?} contains a NUL byte"));
    let executable = |p: &Path| {
        nix::unistd::access(p, nix::unistd::AccessFlags::X_OK).is_ok()
            && std::fs::metadata(p).map(|m| m.is_file()).unwrap_or(false)
    };
    if arg0.contains('/') {
        if executable(Path::new(arg0)) {
            return cstr(arg0);
        }
        return Err(SetupError::new(
            step,
            format!("{arg0}: not an executable file in the container"),
        ));
    }
    let path = process
        .env
        .iter()
        .find_map(|e| e.strip_prefix("PATH="))
        .unwrap_or("/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
    for dir in path.split(':').filter(|d| !d.is_empty()) {
        let cand = Path::new(dir).join(arg0);
        if executable(&cand) {
            return cstr(&cand.display().to_string());
        }
    }
    Err(SetupError::new(
        step,
        format!("{arg0}: executable file not found in $PATH ({path})"),
    ))
}

/// The payload for an OCI view: the spec's argv and environment, verbatim.
pub fn payload(v: &OciView, program: CString) -> Result<super::init::Payload, SetupError> {
    let cstr = |s: &str| CString::new(s).step(Step::Exec, format!("{s:?} contains a NUL byte"));
    Ok(super::init::Payload {
        program,
        argv: v
            .process
            .args
            .iter()
            .map(|a| cstr(a))
            .collect::<Result<_, _>>()?,
        envp: v
            .process
            .env
            .iter()
            .map(|a| cstr(a))
            .collect::<Result<_, _>>()?,
        confine: Box::new(|| Ok(Default::default())),
        bridge: None,
    })
}

/// The cloned child's whole life for an OCI view: set up, report `Ready`, wait
/// for `start`, then become the container's process (PID 1 of its namespace: no
/// maibox init stays in between, so the shim sees the process the spec asked for).
pub fn child_run(v: &OciView, stdio: &super::spawn::ChildStdio, chan: &Channel) -> i32 {
    let fail = |e: SetupError| {
        let _ = chan.send(&Msg::Failed(e));
        125
    };
    for (fd, target) in [(&stdio.stdin, 0), (&stdio.stdout, 1), (&stdio.stderr, 2)] {
        if fd.as_raw_fd() != target {
            if let Err(e) =
                nix::unistd::dup2(fd.as_raw_fd(), target).step(Step::Pipes, "dup2 stdio")
            {
                return fail(e);
            }
        }
    }
    let (gate, hook_state) = match setup(v, chan) {
        Ok(g) => g,
        Err(e) => return fail(e),
    };
    let payload = match resolve_program(v).and_then(|p| payload(v, p)) {
        Ok(p) => p,
        Err(e) => return fail(e),
    };
    if chan
        .send(&Msg::Ready {
            timings_us: Vec::new(),
        })
        .is_err()
    {
        return 125;
    }
    if let Err(e) = wait_start(gate, chan) {
        eprintln!("maibox: {e}");
        return 125;
    }
    // As runc: the spec's umask, or 022 rather than whatever the runtime had.
    nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(
        v.process.umask.unwrap_or(0o022),
    ));
    // With no_new_privs, as late as possible: only the startContainer hooks and
    // execve are left.
    if v.process.no_new_privileges && !notifies(v) {
        if let Err(e) = install_seccomp(v.seccomp.as_ref()) {
            eprintln!("maibox: {e}");
            return 125;
        }
    }
    // In the container, as its user and under its seccomp filter, before the
    // program (runtime spec; runc runs them the same way). The state says
    // `created`, with the pid this process has here.
    if let Some(mut state) = hook_state {
        state["status"] = "created".into();
        state["pid"] = std::process::id().into();
        if let Err(e) = run_hooks(v, "startContainer", &state) {
            eprintln!("maibox: {e}");
            return 125;
        }
    }
    exec(&payload)
}

/// The spec's seccomp programs, in order (see [`crate::confine::seccomp::oci`]).
fn notifies(v: &OciView) -> bool {
    v.seccomp.as_ref().is_some_and(|c| c.notify.is_some())
}

/// Returns the listener of the notifying program (SCMP_ACT_NOTIFY), if any.
pub(crate) fn install_seccomp(
    c: Option<&crate::confine::seccomp::oci::Compiled>,
) -> Result<Option<OwnedFd>, SetupError> {
    let Some(c) = c else {
        return Ok(None);
    };
    let mut listener = None;
    for (i, p) in c.programs.iter().enumerate() {
        if c.notify.as_ref().is_some_and(|n| n.program == i) {
            listener = Some(
                crate::confine::seccomp::install_filter_flags_listening(p, c.flags)
                    .step(Step::Seccomp, "install the spec's notifying seccomp filter")?,
            );
        } else {
            crate::confine::seccomp::install_filter_flags(p, c.flags)
                .step(Step::Seccomp, "install the spec's seccomp filter")?;
        }
    }
    Ok(listener)
}

/// Signal dispositions and mask back to defaults, then execve. Returns only on failure.
fn exec(p: &super::init::Payload) -> i32 {
    let _ = super::init::reset_signals();
    let e = nix::unistd::execve(&p.program, &p.argv, &p.envp)
        .map(|_| nix::errno::Errno::UnknownErrno)
        .unwrap_or_else(|e| e);
    eprintln!("maibox: exec {:?}: {e}", p.program);
    if e == nix::errno::Errno::ENOENT {
        127
    } else {
        126
    }
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
