//! SCMP_ACT_NOTIFY: a seccomp listener goes to the agent at the spec's
//! `listenerPath`, with the container process state the runtime spec defines
//! (`fds: ["seccompFd"]`, pid, metadata, state) as the message. The container's
//! own process hands its listener over at create, each exec'd one at exec.

use std::os::fd::{AsRawFd, OwnedFd};

use nix::sys::socket::{sendmsg, ControlMessage, MsgFlags};

use super::error::OciError;
use super::state::OCI_VERSION;
use crate::confine::seccomp::oci::Notify;

/// The process the listener belongs to, and its container.
pub struct Owner<'a> {
    pub id: &'a str,
    /// The process whose calls the listener reports.
    pub pid: i32,
    /// "creating" for the container's own process, "running" for an exec.
    pub status: &'a str,
    pub bundle: &'a std::path::Path,
    pub annotations: serde_json::Value,
}

/// Sends `listener` to the agent of `n`.
pub fn hand_over(n: &Notify, owner: &Owner, listener: &OwnedFd) -> Result<(), OciError> {
    let message = serde_json::json!({
        "ociVersion": OCI_VERSION,
        "fds": ["seccompFd"],
        "pid": owner.pid,
        "metadata": n.listener_metadata,
        "state": {
            "ociVersion": OCI_VERSION,
            "id": owner.id,
            "status": owner.status,
            "pid": owner.pid,
            "bundle": owner.bundle,
            "annotations": owner.annotations,
            // Not in the runtime spec's state, but youki's agents parse its own
            // State type, in which this field is required.
            "useSystemd": false,
        },
    })
    .to_string();
    let agent = std::os::unix::net::UnixStream::connect(&n.listener_path).map_err(|e| {
        OciError::Refused(format!(
            "linux.seccomp.listenerPath: failed to connect with seccomp agent at {}: {e}",
            n.listener_path.display()
        ))
    })?;
    let fds = [listener.as_raw_fd()];
    sendmsg::<()>(
        agent.as_raw_fd(),
        &[std::io::IoSlice::new(message.as_bytes())],
        &[ControlMessage::ScmRights(&fds)],
        MsgFlags::empty(),
        None,
    )
    .map_err(|e| {
        OciError::Refused(format!(
            "send the seccomp listener to {}: {e}",
            n.listener_path.display()
        ))
    })?;
    Ok(())
}

/// In an exec'd process: passes its new listener to the runtime over `sock`.
pub fn send_listener(sock: &OwnedFd, listener: &OwnedFd) -> Result<(), String> {
    let fds = [listener.as_raw_fd()];
    sendmsg::<()>(
        sock.as_raw_fd(),
        &[std::io::IoSlice::new(b"l")],
        &[ControlMessage::ScmRights(&fds)],
        MsgFlags::empty(),
        None,
    )
    .map(drop)
    .map_err(|e| format!("pass the seccomp listener to the runtime: {e}"))
}

/// In the runtime: the listener an exec'd process passed, or `None` when it
/// ended (or failed) before installing its filter.
pub fn receive_listener(sock: &OwnedFd) -> Result<Option<OwnedFd>, OciError> {
    let mut buf = [0u8; 1];
    crate::engine::sync::recv_fd(std::os::fd::AsFd::as_fd(sock), &mut buf)
        .map(|(_, fd)| fd)
        .map_err(|e| {
            OciError::Refused(format!(
                "receive the exec'd process's seccomp listener: {e}"
            ))
        })
}
