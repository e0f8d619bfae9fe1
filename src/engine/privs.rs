//! Identity switch, capability sets, no_new_privs, session and file descriptors.

use super::sync::Channel;
use crate::error::{SetupError, Step, StepContext};
use crate::policy::{IdMapping, Layer, Policy};
use caps::CapSet;
use nix::unistd::{setresgid, setresuid, Gid, Uid};

/// Right after the maps are written: as root, become the namespace's root (a mapped,
/// unprivileged host id) so that files created during setup have a valid owner.
pub fn become_ns_root(policy: &Policy) -> Result<(), SetupError> {
    if let IdMapping::Range { .. } = policy.identity.mapping {
        let (u, g) = (Uid::from_raw(0), Gid::from_raw(0));
        setresgid(g, g, g).step(Step::Identity, "setresgid(0) in the user namespace")?;
        setresuid(u, u, u).step(Step::Identity, "setresuid(0) in the user namespace")?;
        // The host root's supplementary groups would otherwise still grant access.
        nix::unistd::setgroups(&[]).step(Step::Identity, "clear supplementary groups")?;
    }
    Ok(())
}

/// Drops to the sandbox user with no capabilities and no way to regain any.
pub fn drop_privileges(policy: &Policy) -> Result<(), SetupError> {
    let step = Step::Capabilities;
    let drop_caps = policy.has(Layer::Capabilities);
    if drop_caps {
        // The bounding set can only be cleared while CAP_SETPCAP is still held.
        caps::clear(None, CapSet::Bounding).step(step, "clear the bounding set")?;
        caps::clear(None, CapSet::Ambient).step(step, "clear the ambient set")?;
        caps::clear(None, CapSet::Inheritable).step(step, "clear the inheritable set")?;
    } else {
        // Control runs only: keep the namespace's capabilities across setresuid.
        nix::sys::prctl::set_keepcaps(true).step(step, "prctl(PR_SET_KEEPCAPS)")?;
    }
    let (u, g) = (
        Uid::from_raw(policy.identity.uid),
        Gid::from_raw(policy.identity.gid),
    );
    setresgid(g, g, g).step(Step::Identity, format!("setresgid({g})"))?;
    setresuid(u, u, u).step(Step::Identity, format!("setresuid({u})"))?;
    // Rootless runs keep their capabilities across setresuid (the ids did not change
    // from the kernel's point of view), so clear them explicitly in every case.
    if drop_caps {
        caps::clear(None, CapSet::Effective).step(step, "clear the effective set")?;
        caps::clear(None, CapSet::Permitted).step(step, "clear the permitted set")?;
    } else {
        let all = caps::read(None, CapSet::Permitted).step(step, "read the permitted set")?;
        caps::set(None, CapSet::Effective, &all).step(step, "restore the effective set")?;
    }
    if policy.has(Layer::NoNewPrivs) {
        nix::sys::prctl::set_no_new_privs().step(Step::NoNewPrivs, "prctl(PR_SET_NO_NEW_PRIVS)")?;
    }
    // Keep the payload from reading init's memory or /proc/1/exe (CVE-2019-5736).
    nix::sys::prctl::set_dumpable(false).step(step, "prctl(PR_SET_DUMPABLE, 0)")?;
    Ok(())
}

/// A new session: the code has no controlling terminal, so TIOCSTI cannot inject
/// input into the caller's shell (CVE-2017-5226).
pub fn new_session() -> Result<(), SetupError> {
    nix::unistd::setsid()
        .map(drop)
        .step(Step::Session, "setsid")
}

/// Closes every descriptor except stdio and those in `keep`.
pub fn close_fds_except(keep: &[i32]) -> Result<(), SetupError> {
    let mut keep: Vec<i32> = keep.to_vec();
    keep.sort_unstable();
    let mut lo = 3u32;
    for k in keep
        .iter()
        .map(|k| *k as u32)
        .chain(std::iter::once(u32::MAX))
    {
        if k > lo {
            let hi = if k == u32::MAX { u32::MAX } else { k - 1 };
            // SAFETY: plain syscall on integers; closing unknown fds is its purpose.
            let rc = unsafe { libc::syscall(libc::SYS_close_range, lo, hi, 0u32) };
            if rc != 0 {
                return Err(SetupError::new(
                    Step::CloseFds,
                    format!(
                        "close_range({lo}, {hi}): {}",
                        std::io::Error::last_os_error()
                    ),
                ));
            }
        }
        lo = lo.max(k.saturating_add(1));
    }
    Ok(())
}

/// SIGKILL when the supervisor dies. A supervisor that died before the signal was set
/// sends none, so its side of the channel is checked after: a hang-up there means it is
/// gone, and the child ends itself. (getppid cannot tell: in its own pid namespace the
/// child sees 0 for its parent, alive or not.)
pub(crate) fn die_with(chan: &Channel) -> Result<(), SetupError> {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    use std::os::fd::AsFd;
    nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
        .step(Step::Session, "prctl(PR_SET_PDEATHSIG, SIGKILL)")?;
    let mut fds = [PollFd::new(chan.as_fd(), PollFlags::empty())];
    let hung_up = poll(&mut fds, PollTimeout::ZERO).is_ok_and(|n| n > 0)
        && fds[0]
            .revents()
            .is_some_and(|r| r.intersects(PollFlags::POLLHUP | PollFlags::POLLERR));
    if hung_up {
        // SAFETY: _exit in the cloned child: nothing of the supervisor's may run here.
        unsafe { libc::_exit(125) }
    }
    Ok(())
}
