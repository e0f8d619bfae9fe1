//! `start`: releases a created container's init (blocked on the start FIFO)
//! and runs the `poststart` hooks.

use std::os::fd::OwnedFd;

use crate::engine::oci::hooks;
use crate::oci::cli::{log_error, Global};
use crate::oci::error::{io_err, OciError};
use crate::oci::state::{state_json, Container, Status};

/// Runs `start`.
pub fn start(g: &Global, id: &str) -> Result<(), OciError> {
    let c = Container::open(&g.root, id, true)?;
    let s = c.load()?;
    let status = c.status(&s);
    if status != Status::Created {
        return Err(OciError::Refused(format!(
            "cannot start container {id}: it is {status}, not created"
        )));
    }
    let fifo = c.fifo();
    // Non-blocking: the init holds the FIFO open, so ENXIO means it is gone.
    let fd = nix::fcntl::open(
        &fifo,
        nix::fcntl::OFlag::O_WRONLY | nix::fcntl::OFlag::O_NONBLOCK | nix::fcntl::OFlag::O_CLOEXEC,
        nix::sys::stat::Mode::empty(),
    )
    .map_err(|e| {
        OciError::Refused(format!(
            "cannot start container {id}: init not waiting ({e})"
        ))
    })?;
    // SAFETY: a fresh descriptor owned by nothing else.
    let fd = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    nix::unistd::write(&fd, b"0").map_err(|e| io_err("write the start FIFO")(e.into()))?;
    drop(fd);
    std::fs::remove_file(&fifo).map_err(io_err("remove the start FIFO"))?;
    let st = state_json(&s, Status::Running);
    if let Err(e) = hooks::run(s.hooks.as_ref(), "poststart", &st) {
        // The container runs already; the spec says to log and go on.
        log_error(g, &e.to_string());
    }
    Ok(())
}
