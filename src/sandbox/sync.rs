//! Typed messages between the supervisor and the sandbox init over a socketpair.
//!
//! SOCK_SEQPACKET keeps message boundaries, so each message is one JSON datagram:
//! no framing code, and a peer that dies shows up as end-of-file.

use super::error::{SetupError, Step, StepContext};
use nix::sys::socket::{socketpair, AddressFamily, SockFlag, SockType};
use serde::{Deserialize, Serialize};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Msg {
    /// Supervisor → init: uid/gid maps are written, setup may begin.
    MapsWritten,
    /// Supervisor → init: start the payload (OCI `start`).
    Start,
    /// Init → supervisor: the sandbox is fully set up and waits for `Start`.
    Ready { timings_us: Vec<(String, u64)> },
    /// Init → supervisor: a setup step failed; nothing of the payload ran.
    Failed(SetupError),
    /// Init → supervisor: the payload runs, confined as described.
    Started(super::init::Confined),
    /// Init → supervisor: the payload could not be executed.
    ExecFailed { errno: i32, message: String },
    /// Init → supervisor: the payload ended.
    PayloadExit {
        code: Option<i32>,
        signal: Option<i32>,
    },
}

pub struct Channel {
    fd: OwnedFd,
}

pub fn pair() -> Result<(Channel, Channel), SetupError> {
    let (a, b) = socketpair(
        AddressFamily::Unix,
        SockType::SeqPacket,
        None,
        SockFlag::SOCK_CLOEXEC,
    )
    .step(Step::Pipes, "socketpair for the sync channel")?;
    Ok((Channel { fd: a }, Channel { fd: b }))
}

const MAX_MSG: usize = 64 * 1024;

impl Channel {
    pub fn send(&self, msg: &Msg) -> Result<(), SetupError> {
        let buf = serde_json::to_vec(msg).step(Step::Sync, "encode message")?;
        loop {
            match nix::unistd::write(self.fd.as_fd(), &buf) {
                Err(nix::errno::Errno::EINTR) => continue,
                r => return r.map(|_| ()).step(Step::Sync, "send to peer"),
            }
        }
    }

    /// Blocks until a message arrives; `Ok(None)` when the peer is gone.
    pub fn recv(&self) -> Result<Option<Msg>, SetupError> {
        let mut buf = vec![0u8; MAX_MSG];
        let n = loop {
            match nix::unistd::read(self.fd.as_raw_fd(), &mut buf) {
                Err(nix::errno::Errno::EINTR) => continue,
                r => break r.step(Step::Sync, "receive from peer")?,
            }
        };
        if n == 0 {
            return Ok(None);
        }
        serde_json::from_slice(&buf[..n])
            .map(Some)
            .step(Step::Sync, "decode message")
    }

    pub fn raw_fd(&self) -> i32 {
        self.fd.as_raw_fd()
    }
}

impl AsFd for Channel {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.fd.as_fd()
    }
}
