//! Bind sources for a container with its own user namespace. Its init is root
//! in that namespace only, and may not reach a source the host's root can (a
//! directory only its owner may enter). As runc does, the runtime opens each
//! source for it: as the host's root, but inside the container's mount
//! namespace, where the init's bind must find the mount (the kernel binds only
//! from mounts of the caller's own namespace). That takes a setns, so a forked
//! helper does it and hands the descriptors (O_PATH) to the init over its
//! channel; the init binds from them and closes them before anything of the
//! container runs.

use std::io::BufRead;
use std::os::fd::{AsFd, OwnedFd};

use nix::fcntl::OFlag;
use nix::sched::CloneFlags;
use nix::unistd::{fork, ForkResult};

use super::error::OciError;
use crate::engine::spawn::Spawned;
use crate::engine::sync::Msg;
use crate::policy::oci::OciMount;

fn refused(m: impl Into<String>) -> OciError {
    OciError::Refused(m.into())
}

/// Opens the bind sources of `mounts` in the container's mount namespace and
/// sends them to its init, then tells it they are all there.
pub fn send(spawned: &Spawned, mounts: &[OciMount]) -> Result<(), OciError> {
    let ns_path = format!("/proc/{}/ns/mnt", spawned.pid);
    let ns = std::fs::File::open(&ns_path).map_err(|e| {
        refused(format!(
            "open the container's mount namespace {ns_path}: {e}"
        ))
    })?;
    let (r, w) = nix::unistd::pipe2(OFlag::O_CLOEXEC)
        .map_err(|e| refused(format!("pipe for the bind-source helper: {e}")))?;
    // SAFETY: the runtime is single-threaded at create; the child only calls
    // setns, open and sendmsg, then _exit.
    let child = match unsafe { fork() } {
        Ok(ForkResult::Child) => {
            drop(r);
            helper(spawned, mounts, ns.into(), w)
        }
        Ok(ForkResult::Parent { child }) => child,
        Err(e) => return Err(refused(format!("fork the bind-source helper: {e}"))),
    };
    drop(w);
    let error = std::io::BufReader::new(std::fs::File::from(r))
        .lines()
        .map_while(Result::ok)
        .next();
    let _ = nix::sys::wait::waitpid(child, None);
    if let Some(e) = error {
        return Err(refused(e));
    }
    spawned.chan.send(&Msg::MountSourcesDone)?;
    Ok(())
}

/// In the forked helper: join the container's mount namespace, open and send
/// each bind source. Reports the first failure on `w`.
fn helper(spawned: &Spawned, mounts: &[OciMount], ns: OwnedFd, w: OwnedFd) -> ! {
    let fail = |e: String| -> ! {
        let _ = nix::unistd::write(&w, format!("{e}\n").as_bytes());
        // SAFETY: _exit in a forked child.
        unsafe { libc::_exit(1) }
    };
    if let Err(e) = nix::sched::setns(ns.as_fd(), CloneFlags::CLONE_NEWNS) {
        fail(format!("join the container's mount namespace: {e}"));
    }
    for (index, m) in mounts.iter().enumerate().filter(|(_, m)| m.bind) {
        let fd = match nix::fcntl::open(
            m.source.as_str(),
            OFlag::O_PATH | OFlag::O_CLOEXEC,
            nix::sys::stat::Mode::empty(),
        ) {
            // SAFETY: a fresh descriptor owned by nothing else.
            Ok(fd) => unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) },
            Err(e) => fail(format!(
                "mounts: bind source {} for {}: {e}",
                m.source, m.destination
            )),
        };
        if let Err(e) = spawned
            .chan
            .send_fd(&Msg::MountSource { index }, fd.as_fd())
        {
            fail(format!(
                "send the bind source {} to the init: {e}",
                m.source
            ));
        }
    }
    // SAFETY: _exit in a forked child.
    unsafe { libc::_exit(0) }
}
