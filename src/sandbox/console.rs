//! `terminal: true`: a pty made inside the container (its own devpts), the slave as
//! the process's controlling terminal and stdio, the master sent to the caller's
//! `--console-socket` (SCM_RIGHTS), as containerd's shim and runc expect.

use super::error::{SetupError, Step, StepContext};
use nix::fcntl::OFlag;
use nix::sys::socket::{sendmsg, ControlMessage, MsgFlags};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

/// Makes the pty, hands the master over `console` and makes the slave this process's
/// controlling terminal and fds 0-2 (owned by `uid`/`gid`, the process's user). Call
/// after setsid, in the container's mount namespace, before dropping privileges.
pub fn attach(console: BorrowedFd, uid: u32, gid: u32) -> Result<(), SetupError> {
    let step = Step::Pipes;
    let master = nix::pty::posix_openpt(OFlag::O_RDWR | OFlag::O_NOCTTY | OFlag::O_CLOEXEC)
        .step(step, "open /dev/ptmx in the container")?;
    nix::pty::grantpt(&master).step(step, "grantpt")?;
    nix::pty::unlockpt(&master).step(step, "unlockpt")?;
    let name = nix::pty::ptsname_r(&master).step(step, "ptsname")?;
    let slave = nix::fcntl::open(
        name.as_str(),
        OFlag::O_RDWR | OFlag::O_NOCTTY | OFlag::O_CLOEXEC,
        nix::sys::stat::Mode::empty(),
    )
    .step(step, format!("open the pty slave {name}"))?;
    // SAFETY: a fresh descriptor owned by nothing else.
    let slave = unsafe { OwnedFd::from_raw_fd(slave) };
    nix::unistd::fchown(
        slave.as_raw_fd(),
        Some(nix::unistd::Uid::from_raw(uid)),
        Some(nix::unistd::Gid::from_raw(gid)),
    )
    .step(
        step,
        format!("chown the pty slave {name} to the process's user"),
    )?;
    let fds = [master.as_raw_fd()];
    let cmsg = [ControlMessage::ScmRights(&fds)];
    let iov = [std::io::IoSlice::new(name.as_bytes())];
    sendmsg::<()>(console.as_raw_fd(), &iov, &cmsg, MsgFlags::empty(), None)
        .step(step, "send the pty master to the console socket")?;
    drop(master);
    // SAFETY: TIOCSCTTY with argument 0 on a terminal we just opened.
    if unsafe { libc::ioctl(slave.as_raw_fd(), libc::TIOCSCTTY, 0) } != 0 {
        return Err(SetupError::new(
            step,
            format!(
                "make {name} the controlling terminal: {}",
                std::io::Error::last_os_error()
            ),
        ));
    }
    for target in 0..3 {
        nix::unistd::dup2(slave.as_raw_fd(), target).step(step, "dup2 the pty slave to stdio")?;
    }
    Ok(())
}

/// Connects to the caller's console socket (a unix socket path on the host).
pub fn connect(path: &std::path::Path) -> Result<OwnedFd, SetupError> {
    let s = std::os::unix::net::UnixStream::connect(path).step(
        Step::Pipes,
        format!("connect to the console socket {}", path.display()),
    )?;
    Ok(OwnedFd::from(s))
}
