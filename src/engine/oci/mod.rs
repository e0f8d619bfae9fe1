//! The engine's steps for an OCI bundle's view ([`View::Oci`](crate::policy::View)):
//! the bundle's root instead of maibox's Python view, the spec's mounts, identity,
//! capabilities and process. The chain ([`super::chain`]) calls them in the order runc
//! uses: namespaces, sysctls, mounts on the bundle's root, pivot_root, masked and
//! read-only paths, hostname, rlimits, identity and capabilities, cwd, then `Ready`
//! and the wait for `start`.

pub(crate) mod hooks;
mod process;
pub(crate) mod root;

pub(crate) use process::{check_cwd, enter_cwd, install_seccomp, resolve_in_path, switch_identity};

use super::sync::{Channel, Msg};
use crate::error::{SetupError, Step, StepContext};
use crate::policy::oci::{IdMaps, OciView};
use nix::sched::CloneFlags;
use nix::unistd::{Gid, Pid, Uid};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};

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

/// As root in the container's user namespace, when it has one.
pub(super) fn become_root(v: &OciView) -> Result<(), SetupError> {
    if v.namespaces.user.is_some() {
        let (u, g) = (Uid::from_raw(0), Gid::from_raw(0));
        nix::unistd::setresgid(g, g, g)
            .step(Step::Identity, "setresgid(0) in the user namespace")?;
        nix::unistd::setresuid(u, u, u)
            .step(Step::Identity, "setresuid(0) in the user namespace")?;
    }
    Ok(())
}

/// The namespaces the spec names by path, opened by the runtime and inherited.
pub(super) fn join_namespaces(v: &OciView) -> Result<(), SetupError> {
    for j in &v.namespaces.join {
        // A PID namespace is joined by the clone itself (see spawn): setns here
        // would move only this process's children.
        if j.flag == libc::CLONE_NEWPID {
            continue;
        }
        let Some(fd) = j.fd else { continue };
        // SAFETY: the namespace file the runtime opened; inherited, open until
        // the inherited descriptors are closed.
        let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
        nix::sched::setns(fd, CloneFlags::from_bits_truncate(j.flag)).step(
            Step::Namespaces,
            format!("join the {} namespace {}", j.kind, j.path.display()),
        )?;
    }
    Ok(())
}

/// Leaked descriptors are how CVE-2024-21626 reached the host: all are closed (but
/// those the caller preserved) before anything resolves a path the spec chose.
/// Returns the start gate (the FIFO `start` writes to), if any.
pub(super) fn close_inherited_fds(
    v: &OciView,
    chan: &Channel,
) -> Result<Option<OwnedFd>, SetupError> {
    // SAFETY: the runtime opened the FIFO for us and the clone gave us our own
    // copy of that descriptor, which nothing else in this process owns.
    let gate = v.start_fifo.map(|fd| unsafe { OwnedFd::from_raw_fd(fd) });
    let mut keep = vec![chan.raw_fd()];
    if let Some(g) = &gate {
        keep.push(g.as_raw_fd());
    }
    keep.extend(v.console);
    keep.extend_from_slice(&v.preserve_fds);
    super::privs::close_fds_except(&keep)?;
    Ok(gate)
}

/// The container's own cgroup namespace, made before its root so that a cgroup
/// mount in it shows the container's groups. Returns those groups, read before the
/// namespace hides their paths (see cgroupfs).
pub(super) fn cgroup_namespace(v: &OciView) -> Result<Vec<(String, String)>, SetupError> {
    let groups = if v.mounts.iter().any(|m| m.kind == "cgroup") {
        super::cgroupfs::current_groups()?
    } else {
        Vec::new()
    };
    if v.namespaces.cgroup {
        nix::sched::unshare(CloneFlags::CLONE_NEWCGROUP)
            .step(Step::Cgroup, "unshare the cgroup namespace")?;
    }
    Ok(groups)
}

/// `lo` up in the container's own network namespace, and the spec's sysctls.
pub(super) fn network_settings(v: &OciView) -> Result<(), SetupError> {
    if v.namespaces.network {
        super::net::loopback_up()?;
    }
    for (k, val) in &v.sysctls {
        let p = format!("/proc/sys/{}", k.replace('.', "/"));
        std::fs::write(&p, val).step(Step::Namespaces, format!("sysctl {k}={val}"))?;
    }
    Ok(())
}

/// The spec's hostname and domain name.
pub(super) fn names(v: &OciView) -> Result<(), SetupError> {
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
    Ok(())
}

/// The spec's rlimits and OOM score.
pub(super) fn limits(v: &OciView) -> Result<(), SetupError> {
    for (res, soft, hard) in &v.process.rlimits {
        super::rlimit::set_raw(*res, *soft, *hard)?;
    }
    if let Some(adj) = v.process.oom_score_adj {
        std::fs::write("/proc/self/oom_score_adj", adj.to_string())
            .step(Step::Rlimits, "write /proc/self/oom_score_adj")?;
    }
    Ok(())
}

/// The pty, on the console socket, as the session's controlling terminal.
pub(super) fn console(v: &OciView) -> Result<(), SetupError> {
    if let Some(fd) = v.console.filter(|_| v.process.terminal) {
        // SAFETY: the connected console socket, inherited from the runtime; we own
        // our copy and close it once the master is sent.
        let console = unsafe { OwnedFd::from_raw_fd(fd) };
        super::console::attach(console.as_fd(), v.process.uid, v.process.console_size)?;
    }
    Ok(())
}

/// `--hardened`: Landlock on the container's root, from its mount table (see
/// [`crate::oci::harden`]).
pub(super) fn harden(v: &OciView) -> Result<(), SetupError> {
    if let Some(h) = &v.hardening {
        crate::confine::landlock_mounts::apply(&h.exec_tmpfs)
            .step(Step::Landlock, "Landlock on the container's root")?;
    }
    Ok(())
}

/// The container's user, capabilities and cwd; and the spec's seccomp programs where
/// they must go on before the identity switch.
pub(super) fn identity(v: &OciView, chan: &Channel) -> Result<(), SetupError> {
    // As runc: the cwd is entered as root first, so that a directory the
    // container's user may not search still works; only if that fails is it
    // tried again as the user. The check that it lies inside the root follows
    // either way, and before any filter: a profile may send getcwd to an agent
    // that has not answered yet (youki's contest `seccomp_notify` does).
    let entered = std::env::set_current_dir(&v.process.cwd).is_ok();
    if entered {
        check_cwd(&v.process.cwd)?;
    }
    // Without no_new_privs the kernel takes a filter only from a holder of
    // CAP_SYS_ADMIN, so it goes on before the identity switch drops it (as runc
    // does); the profile must then allow the calls left in setup. A notifying
    // profile goes on here in any case (as runc does): its listener must reach the
    // runtime, which is gone once the container starts.
    if !v.process.no_new_privileges || process::notifies(v) {
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
    Ok(())
}

pub(super) use process::start;
