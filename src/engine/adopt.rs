//! Init's side of a sandbox whose payload is not executed but forked: a warm sandbox
//! of a server with `warm_mode: fork`, whose interpreter is a fork of a zygote that
//! imported the level's modules once (see `warm::zygote`).
//!
//! Such a sandbox is built by the same chain as any other. Then, where init would
//! fork and execute the payload, it hands the supervisor what the forked interpreter
//! needs from inside the sandbox, all as descriptors: its namespaces (opened by init
//! itself, so no ptrace check on init stands in the way), the run's pipes, the
//! Landlock ruleset (built here by the same module as for any payload, in the
//! sandbox's own view), and the write end of a status pipe.
//!
//! The interpreter's parent is the zygote's child that forked it into the sandbox's
//! pid namespace: it stays outside the sandbox (the kernel gives an orphan to the
//! reaper of its parent's namespace, not of its own, so init could never wait for
//! it), waits for it, and writes its exit status and usage on that pipe. Init reads
//! them there instead of from `waitpid`; everything else is as for an executed
//! payload: init reaps the other processes, forwards signals to the interpreter, and
//! when it ends kills the rest and tells the supervisor.

use super::init::{self, Payload};
use super::sync::{Channel, ChildUsage, Msg};
use crate::confine::LandlockSpec;
use crate::error::{SetupError, Step, StepContext};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::signal::{kill, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;
use serde::Deserialize;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

/// What init needs for a forked payload.
pub struct Adopt {
    /// The Landlock ruleset to build (the payload applies it to itself).
    pub landlock: Option<LandlockSpec>,
}

/// The namespaces a forked interpreter joins, in the order it must join them: the
/// user namespace first, which gives it the capabilities to join the others.
pub const NAMESPACES: [&str; 7] = ["user", "mnt", "pid", "net", "ipc", "uts", "cgroup"];

/// What the interpreter's parent writes on the status pipe (one JSON line).
#[derive(Debug, Deserialize)]
struct Status {
    code: Option<i32>,
    signal: Option<i32>,
    user_us: u64,
    system_us: u64,
    maxrss_kb: u64,
}

/// Runs as PID 1 after setup, in place of [`init::run`]'s fork and exec.
pub(super) fn run(chan: &Channel, adopt: &Adopt, payload: &Payload) -> i32 {
    let status = match offer(chan, adopt, payload.extra_fds) {
        Ok(r) => r,
        Err(e) => return init::fail(chan, e),
    };
    // As in `init::run`: init keeps no copy of the run's output, so that the
    // supervisor sees end-of-file once the payload and its children are gone.
    for fd in 0..3 + payload.extra_fds {
        let _ = nix::unistd::close(fd);
    }
    match chan.recv() {
        Ok(Some(Msg::Adopt { pid })) if pid > 1 => watch(chan, Pid::from_raw(pid), &status),
        _ => 125,
    }
}

/// Sends the namespaces, the run's descriptors, the ruleset and the status pipe's
/// write end, then `Adoptable`. Returns the status pipe's read end.
fn offer(chan: &Channel, adopt: &Adopt, extra_fds: i32) -> Result<OwnedFd, SetupError> {
    for kind in NAMESPACES {
        let f = std::fs::File::open(format!("/proc/self/ns/{kind}"))
            .step(Step::Namespaces, format!("open /proc/self/ns/{kind}"))?;
        send(chan, &format!("ns:{kind}"), f.as_fd())?;
    }
    for fd in 0..3 + extra_fds {
        // SAFETY: init's stdio and the payload's pipes, which the chain placed at
        // these numbers and which stay open until after this loop.
        send(chan, &format!("fd:{fd}"), unsafe {
            BorrowedFd::borrow_raw(fd)
        })?;
    }
    let (status_r, status_w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)
        .step(Step::Pipes, "pipe for the payload's status")?;
    send(chan, "status", status_w.as_fd())?;
    let landlock = match &adopt.landlock {
        Some(spec) => {
            let (fd, outcome) = crate::confine::build_ruleset(spec)
                .step(Step::Landlock, "build the Landlock ruleset")?;
            if let Some(fd) = fd {
                send(chan, "landlock", fd.as_fd())?;
            }
            Some(outcome)
        }
        None => None,
    };
    chan.send(&Msg::Adoptable { landlock })?;
    Ok(status_r)
}

fn send(chan: &Channel, what: &str, fd: BorrowedFd) -> Result<(), SetupError> {
    chan.send_fd(&Msg::AdoptFd { what: what.into() }, fd)
}

/// Init's loop for an adopted payload: forwarded signals go to it, orphans are
/// reaped, and its status comes on the pipe (end-of-file without one: its parent is
/// gone, and so is any way to know how it ended; the sandbox is ended as killed).
fn watch(chan: &Channel, payload: Pid, status: &OwnedFd) -> i32 {
    // The handled signals are blocked since the chain's start (`init_signals`).
    let Ok(signals) = SignalFd::with_flags(&init::handled_set(), SfdFlags::SFD_CLOEXEC) else {
        return init::finish(chan, None, Some(Signal::SIGKILL as i32), None);
    };
    let mut line = Vec::new();
    loop {
        let mut fds = [
            PollFd::new(signals.as_fd(), PollFlags::POLLIN),
            PollFd::new(status.as_fd(), PollFlags::POLLIN),
        ];
        if poll(&mut fds, PollTimeout::NONE).is_err() {
            continue;
        }
        if fds[0].any().unwrap_or(false) {
            if let Ok(Some(info)) = signals.read_signal() {
                match Signal::try_from(info.ssi_signo as i32) {
                    Ok(Signal::SIGCHLD) => reap_orphans(),
                    Ok(s) => drop(kill(payload, s)),
                    Err(_) => {}
                }
            }
        }
        if fds[1].any().unwrap_or(false) {
            let mut buf = [0u8; 512];
            match nix::unistd::read(status.as_raw_fd(), &mut buf) {
                Ok(0) | Err(_) => return ended(chan, &line),
                Ok(n) => line.extend_from_slice(&buf[..n]),
            }
        }
    }
}

/// The payload's end, from its parent's line.
fn ended(chan: &Channel, line: &[u8]) -> i32 {
    match serde_json::from_slice::<Status>(line) {
        Ok(s) => {
            let usage = ChildUsage {
                user_us: s.user_us,
                system_us: s.system_us,
                maxrss_kb: s.maxrss_kb,
            };
            init::finish(chan, s.code, s.signal, Some(usage))
        }
        Err(_) => init::finish(chan, None, Some(Signal::SIGKILL as i32), None),
    }
}

fn reap_orphans() {
    while let Ok(st) = waitpid(None, Some(WaitPidFlag::WNOHANG)) {
        if st == WaitStatus::StillAlive {
            break;
        }
    }
}
