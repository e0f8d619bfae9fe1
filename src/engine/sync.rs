//! Typed messages between the supervisor and the sandbox init over a socketpair.
//!
//! SOCK_SEQPACKET keeps message boundaries, so each message is one JSON datagram:
//! no framing code, and a peer that dies shows up as end-of-file.

use crate::error::{SetupError, Step, StepContext};
use nix::sys::socket::{
    recvmsg, sendmsg, socketpair, AddressFamily, ControlMessage, ControlMessageOwned, MsgFlags,
    SockFlag, SockType,
};
use serde::{Deserialize, Serialize};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Msg {
    /// Supervisor → init: uid/gid maps are written, setup may begin.
    MapsWritten,
    /// Supervisor → init: start the payload (OCI `start`).
    Start,
    /// Supervisor → init, with the fd attached: a v1 `tasks` file of the run's
    /// cgroup, opened by the supervisor, through which init joins it.
    CgroupTasks,
    /// Supervisor → init: the run's cgroup is ready (every `tasks` file is sent, or
    /// the supervisor moved init itself, or there is none). `limited`: a group
    /// bounds the sandbox's memory and CPU as a whole; without one, init bounds each
    /// process instead.
    CgroupDone { limited: bool },
    /// Init → supervisor: the sandbox is fully set up and waits for `Start`.
    Ready { timings_us: Vec<(String, u64)> },
    /// Init → supervisor: a setup step failed; nothing of the payload ran.
    Failed(SetupError),
    /// Init → supervisor: the payload runs, confined as described.
    Started(crate::outcome::Confined),
    /// Init → supervisor: the payload could not be executed.
    ExecFailed { errno: i32, message: String },
    /// Payload → supervisor, with the fd attached: the seccomp filter's listener.
    SeccompListener,
    /// OCI init → runtime: mounted, stopped before pivot_root for the runtime's
    /// `prestart`/`createRuntime` hooks.
    HooksPoint,
    /// OCI runtime → init: those hooks ran; the container's state (JSON) for
    /// the init's own `createContainer`/`startContainer` hooks.
    HooksDone { state: String },
    /// OCI runtime → init, with the fd attached: the source of the spec's
    /// mount number `index`, opened by the host's root (user namespaces).
    MountSource { index: usize },
    /// OCI runtime → init: every such source is sent.
    MountSourcesDone,
    /// Init → supervisor, with the fd attached, in a sandbox whose interpreter is
    /// forked from a zygote (see `engine::adopt`): one thing that interpreter needs
    /// from inside the sandbox, named by `what`: a namespace (`ns:user`, ...), one of
    /// the run's descriptors (`fd:0`, ...) or the Landlock ruleset (`landlock`).
    AdoptFd { what: String },
    /// Init → supervisor: every `AdoptFd` is sent; what the ruleset enforces.
    Adoptable {
        landlock: Option<crate::confine::LandlockOutcome>,
    },
    /// Supervisor → init: the forked interpreter is in the sandbox with this pid (in
    /// the sandbox's pid namespace); init supervises it as its payload.
    Adopt { pid: i32 },
    /// Init → supervisor: the payload ended, and everything else in the sandbox
    /// was sent SIGKILL. The supervisor need not wait for init itself to be reaped.
    PayloadExit {
        code: Option<i32>,
        signal: Option<i32>,
        /// What the payload and every process init reaped used.
        usage: Option<ChildUsage>,
    },
}

/// CPU time and peak resident set of init's reaped children (getrusage).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ChildUsage {
    pub user_us: u64,
    pub system_us: u64,
    pub maxrss_kb: u64,
}

pub struct Channel {
    fd: OwnedFd,
}

pub fn pair() -> Result<(Channel, Channel), SetupError> {
    let (a, b) = seqpacket_pair().step(Step::Pipes, "socketpair for the sync channel")?;
    Ok((Channel { fd: a }, Channel { fd: b }))
}

/// A close-on-exec SOCK_SEQPACKET socketpair: every message one datagram, and a peer
/// that is gone an end-of-file (the channel, the spawner's and the zygote's sockets).
pub fn seqpacket_pair() -> nix::Result<(OwnedFd, OwnedFd)> {
    socketpair(
        AddressFamily::Unix,
        SockType::SeqPacket,
        None,
        SockFlag::SOCK_CLOEXEC,
    )
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

    /// Sends `msg` with `fd` attached (SCM_RIGHTS).
    pub fn send_fd(&self, msg: &Msg, fd: BorrowedFd) -> Result<(), SetupError> {
        let buf = serde_json::to_vec(msg).step(Step::Sync, "encode message")?;
        send_fds(self.fd.as_fd(), &buf, &[fd]).step(Step::Sync, "send an fd to peer")
    }

    /// Blocks until a message arrives; `Ok(None)` when the peer is gone. Any fd that
    /// came with the message is closed: use [`Channel::recv_with_fd`] to keep it.
    pub fn recv(&self) -> Result<Option<Msg>, SetupError> {
        Ok(self.recv_with_fd()?.map(|(m, _)| m))
    }

    /// Like [`Channel::recv`], also returning the fd attached to the message, if any.
    pub fn recv_with_fd(&self) -> Result<Option<(Msg, Option<OwnedFd>)>, SetupError> {
        // One buffer per thread, not a zeroed 64 KiB per message: in a server whose
        // memory live sandboxes still share copy-on-write, clearing it faulted in
        // its 16 pages again for each of the dozen messages a sandbox sends.
        thread_local! {
            static BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        BUF.with(|b| {
            let mut buf = b.borrow_mut();
            buf.resize(MAX_MSG, 0);
            let (n, fd) =
                recv_fd(self.fd.as_fd(), &mut buf).step(Step::Sync, "receive from peer")?;
            if n == 0 {
                return Ok(None);
            }
            let msg = serde_json::from_slice(&buf[..n]).step(Step::Sync, "decode message")?;
            Ok(Some((msg, fd)))
        })
    }

    /// Receives a series of messages that each carry an fd, handing them to `each`,
    /// up to the message `done` says ends it. Anything else is a `step` failure
    /// that names what was `expected`.
    pub fn recv_fds_until(
        &self,
        mut done: impl FnMut(&Msg) -> bool,
        step: Step,
        expected: &str,
        mut each: impl FnMut(Msg, OwnedFd) -> Result<(), SetupError>,
    ) -> Result<(), SetupError> {
        loop {
            match self.recv_with_fd()? {
                Some((m, _)) if done(&m) => return Ok(()),
                Some((m, Some(fd))) => each(m, fd)?,
                other => {
                    return Err(SetupError::new(
                        step,
                        format!("expected {expected}, got {:?}", other.map(|(m, _)| m)),
                    ))
                }
            }
        }
    }

    /// A channel on a descriptor received from the process that made the pair.
    pub(crate) fn from_fd(fd: OwnedFd) -> Channel {
        Channel { fd }
    }

    pub fn raw_fd(&self) -> i32 {
        self.fd.as_raw_fd()
    }

    /// The same channel on a descriptor above the low numbers a child places its
    /// inherited pipes at.
    pub fn raised(self) -> Result<Channel, SetupError> {
        Ok(Channel {
            fd: high_copy(self.fd.as_fd())?,
        })
    }
}

/// A close-on-exec copy of `fd` numbered 100 or above.
pub fn high_copy(fd: BorrowedFd) -> Result<OwnedFd, SetupError> {
    nix::fcntl::fcntl(fd.as_raw_fd(), nix::fcntl::FcntlArg::F_DUPFD_CLOEXEC(100))
        // SAFETY: a fresh descriptor owned by nothing else.
        .map(|n| unsafe { OwnedFd::from_raw_fd(n) })
        .step(Step::Pipes, "move a descriptor above 100")
}

impl AsFd for Channel {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// One message from a unix socket, with the first descriptor it carries (SCM_RIGHTS,
/// close-on-exec); any further ones are closed. `Ok((0, None))` at end-of-file.
pub fn recv_fd(sock: BorrowedFd, buf: &mut [u8]) -> nix::Result<(usize, Option<OwnedFd>)> {
    recv_fds::<1>(sock, buf).map(|(n, fds)| (n, fds.into_iter().next()))
}

/// One message from a unix socket, with the descriptors it carries, at most `N`
/// (SCM_RIGHTS, close-on-exec; the kernel closes any beyond `N`).
pub fn recv_fds<const N: usize>(
    sock: BorrowedFd,
    buf: &mut [u8],
) -> nix::Result<(usize, Vec<OwnedFd>)> {
    let mut space = nix::cmsg_space!([std::os::fd::RawFd; N]);
    loop {
        let mut iov = [std::io::IoSliceMut::new(buf)];
        match recvmsg::<()>(
            sock.as_raw_fd(),
            &mut iov,
            Some(&mut space),
            MsgFlags::MSG_CMSG_CLOEXEC,
        ) {
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(e),
            Ok(m) => {
                let mut fds = Vec::new();
                for c in m.cmsgs()? {
                    if let ControlMessageOwned::ScmRights(raw) = c {
                        // SAFETY: SCM_RIGHTS gave us new fds that nothing else owns.
                        fds.extend(raw.into_iter().map(|r| unsafe { OwnedFd::from_raw_fd(r) }));
                    }
                }
                return Ok((m.bytes, fds));
            }
        }
    }
}

/// Sends one message with `fds` attached (SCM_RIGHTS; none when empty).
pub fn send_fds(sock: BorrowedFd, buf: &[u8], fds: &[BorrowedFd]) -> nix::Result<()> {
    let raw: Vec<i32> = fds.iter().map(|f| f.as_raw_fd()).collect();
    let cmsg = [ControlMessage::ScmRights(&raw)];
    let cmsgs: &[ControlMessage] = if raw.is_empty() { &[] } else { &cmsg };
    let iov = [std::io::IoSlice::new(buf)];
    loop {
        // MSG_NOSIGNAL: a peer that is gone is an error here, never a SIGPIPE.
        match sendmsg::<()>(sock.as_raw_fd(), &iov, cmsgs, MsgFlags::MSG_NOSIGNAL, None) {
            Err(nix::errno::Errno::EINTR) => continue,
            r => return r.map(|_| ()),
        }
    }
}

/// The next whole message on a SOCK_SEQPACKET socket, in a buffer of its size (see
/// [`next_len`]), with the descriptors it carries (at most `N`). Empty when the peer
/// is gone: no protocol here sends an empty message.
pub fn recv_message<const N: usize>(fd: BorrowedFd) -> nix::Result<(Vec<u8>, Vec<OwnedFd>)> {
    let len = next_len(fd)?;
    if len == 0 {
        return Ok((Vec::new(), Vec::new()));
    }
    let mut buf = vec![0u8; len];
    let (n, fds) = recv_fds::<N>(fd, &mut buf)?;
    buf.truncate(n);
    Ok((buf, fds))
}

/// The length of the next message on a SOCK_SEQPACKET socket, left unread
/// (MSG_TRUNC makes a peek return the whole length; 0 when the peer is gone).
///
/// Buffers sized to the message, not a zeroed 64 KiB each: in a server that
/// forks while earlier sandboxes (copies of its memory) live, clearing 16 pages
/// for each fork's two answers cost as many copy-on-write faults (perf of a
/// fork-mode server's refill threads: a fifth of their page faults).
fn next_len(fd: BorrowedFd) -> nix::Result<usize> {
    let flags = MsgFlags::MSG_PEEK | MsgFlags::MSG_TRUNC;
    loop {
        match nix::sys::socket::recv(fd.as_raw_fd(), &mut [], flags) {
            Err(nix::errno::Errno::EINTR) => continue,
            r => return r,
        }
    }
}
