//! PID 1 of the sandbox: starts the payload, reaps every zombie, forwards signals,
//! and when the payload ends kills whatever it left behind.

use super::sync::{Channel, ChildUsage, Msg};
use crate::error::{SetupError, Step, StepContext};
use crate::outcome::Confined;
use nix::sys::signal::{kill, sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::{fork, ForkResult, Pid};
use serde::{Deserialize, Serialize};
use std::ffi::CString;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};

/// The signals a caller may send the code: the supervisor forwards them to init,
/// which passes them on to the code.
pub const FORWARDED: &[Signal] = &[
    Signal::SIGINT,
    Signal::SIGTERM,
    Signal::SIGHUP,
    Signal::SIGQUIT,
    Signal::SIGUSR1,
    Signal::SIGUSR2,
];

/// Signals the supervisor blocks before clone and init waits for synchronously: the
/// forwarded ones and SIGCHLD.
fn handled() -> impl Iterator<Item = Signal> {
    FORWARDED.iter().copied().chain([Signal::SIGCHLD])
}

pub fn handled_set() -> SigSet {
    let mut s = SigSet::empty();
    for sig in handled() {
        s.add(sig);
    }
    s
}

/// What init needs to start the payload, prepared before the fork.
pub struct Payload {
    pub program: CString,
    pub argv: Vec<CString>,
    pub envp: Vec<CString>,
    /// Applied in the payload right before execve (Landlock, then seccomp last).
    pub confine: Box<dyn Fn() -> Result<Confined, SetupError>>,
    /// Allowlist mode: a bridge from 127.0.0.1:PORT to the proxy's socket, forked
    /// by init before the payload and confined like it.
    pub bridge: Option<(u16, std::path::PathBuf)>,
    /// Descriptors 3, 4, ... that the payload inherits (a warm sandbox's pipes).
    pub extra_fds: i32,
    /// The payload is forked from a zygote outside and adopted, not executed here
    /// (see [`super::adopt`]).
    pub adopt: Option<super::adopt::Adopt>,
}

/// Messages from the payload to init over a close-on-exec pipe, one JSON line each.
/// A successful execve closes the pipe, so end-of-file means the program runs.
#[derive(Debug, Serialize, Deserialize)]
enum PayloadMsg {
    Confined(Confined),
    ConfineFailed(SetupError),
    ExecErrno(i32),
}

extern "C" fn noop(_: libc::c_int) {}

/// Runs as PID 1 after setup. Returns the exit code of init.
pub fn run(chan: &Channel, payload: &Payload) -> i32 {
    // PID 1 only receives signals it has a handler for; a no-op handler plus a
    // blocked mask lets sigwait pick them up in order.
    if let Err(e) = install_handlers() {
        return fail(chan, e);
    }
    if let Some(adopt) = &payload.adopt {
        return super::adopt::run(chan, adopt, payload);
    }
    if let Err(e) = start_bridge(payload) {
        return fail(chan, e);
    }
    let (err_r, err_w) = match nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC) {
        Ok(p) => p,
        Err(e) => return fail(chan, SetupError::new(Step::Exec, format!("pipe: {e}"))),
    };
    // SAFETY: the sandbox init is single-threaded; the child only execs or _exits.
    let child = match unsafe { fork() } {
        Ok(ForkResult::Child) => {
            drop(err_r);
            exec_payload(payload, err_w, chan)
        }
        Ok(ForkResult::Parent { child }) => child,
        Err(e) => return fail(chan, SetupError::new(Step::Exec, format!("fork: {e}"))),
    };
    drop(err_w);
    let mut confined = Confined::default();
    for msg in read_payload_msgs(&err_r) {
        match msg {
            PayloadMsg::Confined(c) => confined = c,
            PayloadMsg::ConfineFailed(e) => {
                let _ = waitpid(child, None);
                return fail(chan, e);
            }
            PayloadMsg::ExecErrno(errno) => {
                let message = nix::errno::Errno::from_raw(errno).desc().to_string();
                let _ = chan.send(&Msg::ExecFailed { errno, message });
                let _ = waitpid(child, None);
                return if errno == libc::ENOENT { 127 } else { 126 };
            }
        }
    }
    let _ = chan.send(&Msg::Started(confined));
    drop(err_r);
    // Init never writes to the run's output: without its copies, the supervisor sees
    // end-of-file once the payload and whatever it started are gone, and need not
    // wait for init's own exit (the namespaces' teardown) to finish the run.
    for fd in 0..3 + payload.extra_fds {
        let _ = nix::unistd::close(fd);
    }
    supervise(chan, child)
}

fn install_handlers() -> Result<(), SetupError> {
    for sig in handled() {
        let sa = SigAction::new(
            SigHandler::Handler(noop),
            SaFlags::SA_NOCLDSTOP,
            SigSet::empty(),
        );
        // SAFETY: installing a trivial async-signal-safe handler.
        if unsafe { sigaction(sig, &sa) }.is_err() {
            return Err(SetupError::new(Step::Exec, "install signal handlers"));
        }
    }
    Ok(())
}

/// Allowlist mode: forks the process that bridges the sandbox's loopback port to the
/// proxy's socket; it lives until the namespace ends.
fn start_bridge(payload: &Payload) -> Result<(), SetupError> {
    let Some((port, sock)) = &payload.bridge else {
        return Ok(());
    };
    // SAFETY: init is single-threaded; the child never returns here.
    match unsafe { fork() } {
        Ok(ForkResult::Child) => run_bridge(payload, *port, sock),
        Ok(ForkResult::Parent { .. }) => Ok(()),
        Err(e) => Err(SetupError::new(
            Step::Network,
            format!("fork the network bridge: {e}"),
        )),
    }
}

pub(super) fn fail(chan: &Channel, e: SetupError) -> i32 {
    let _ = chan.send(&Msg::Failed(e));
    125
}

pub(super) fn supervise(chan: &Channel, child: Pid) -> i32 {
    let set = handled_set();
    loop {
        let sig = match set.wait() {
            Ok(s) => s,
            Err(_) => continue,
        };
        if sig != Signal::SIGCHLD {
            let _ = kill(child, sig);
            continue;
        }
        loop {
            match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::Exited(pid, code)) if pid == child => {
                    return finish(chan, Some(code), None, children_usage())
                }
                Ok(WaitStatus::Signaled(pid, s, _)) if pid == child => {
                    return finish(chan, None, Some(s as i32), children_usage())
                }
                Ok(WaitStatus::StillAlive) | Err(_) => break,
                Ok(_) => continue,
            }
        }
    }
}

/// The payload ended: everything else is killed, the supervisor told. Returns init's
/// exit code, the payload's status.
pub(super) fn finish(
    chan: &Channel,
    code: Option<i32>,
    signal: Option<i32>,
    usage: Option<ChildUsage>,
) -> i32 {
    // Everything else in the PID namespace dies with init anyway; killing it first
    // means no process observes a half-torn-down sandbox.
    let _ = kill(Pid::from_raw(-1), Signal::SIGKILL);
    let rc = match (code, signal) {
        (_, Some(s)) => 128 + s,
        (c, None) => c.unwrap_or(0),
    };
    let _ = chan.send(&Msg::PayloadExit {
        code,
        signal,
        usage,
    });
    rc
}

fn children_usage() -> Option<ChildUsage> {
    let ru = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN).ok()?;
    let us = |t: nix::sys::time::TimeVal| (t.tv_sec() as u64) * 1_000_000 + t.tv_usec() as u64;
    Some(ChildUsage {
        user_us: us(ru.user_time()),
        system_us: us(ru.system_time()),
        maxrss_kb: ru.max_rss().max(0) as u64,
    })
}

fn read_payload_msgs(r: &OwnedFd) -> Vec<PayloadMsg> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        match nix::unistd::read(r.as_raw_fd(), &mut chunk) {
            Ok(0) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => break,
        }
    }
    buf.split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| {
            serde_json::from_slice(l).unwrap_or_else(|_| {
                PayloadMsg::ConfineFailed(SetupError::new(
                    Step::Exec,
                    "garbled message from the payload",
                ))
            })
        })
        .collect()
}

fn send_payload_msg(w: &OwnedFd, m: &PayloadMsg) {
    let mut line = serde_json::to_vec(m).unwrap_or_default();
    line.push(b'\n');
    let _ = nix::unistd::write(w, &line);
}

/// In the forked payload process: restore signals, confine, execve.
fn exec_payload(p: &Payload, err_w: OwnedFd, chan: &Channel) -> ! {
    let report = |errno: i32| -> ! {
        send_payload_msg(&err_w, &PayloadMsg::ExecErrno(errno));
        // SAFETY: _exit is always safe; no destructors may run in this child.
        unsafe { libc::_exit(127) }
    };
    if reset_signals().is_err() {
        report(libc::EINVAL);
    }
    match (p.confine)() {
        Ok(mut c) => {
            // Straight to the supervisor (the channel is close-on-exec); then our
            // copy is closed, so the code never holds the listener.
            if let Some(l) = c.listener.take() {
                if let Err(e) = chan.send_fd(&Msg::SeccompListener, l.as_fd()) {
                    send_payload_msg(&err_w, &PayloadMsg::ConfineFailed(e));
                    // SAFETY: as above.
                    unsafe { libc::_exit(125) }
                }
            }
            send_payload_msg(&err_w, &PayloadMsg::Confined(c))
        }
        Err(e) => {
            send_payload_msg(&err_w, &PayloadMsg::ConfineFailed(e));
            // SAFETY: as above.
            unsafe { libc::_exit(125) }
        }
    }
    let e = nix::unistd::execve(&p.program, &p.argv, &p.envp);
    report(e.map(|_| 0).unwrap_or_else(|e| e as i32))
}

fn run_bridge(p: &Payload, port: u16, sock: &std::path::Path) -> ! {
    // Nothing of init's: not the sync channel, not its pipes.
    let _ = super::privs::close_fds_except(&[]);
    let _ = reset_signals();
    if (p.confine)().is_err() {
        // SAFETY: _exit in a forked child.
        unsafe { libc::_exit(125) }
    }
    crate::net::run_bridge(port, sock)
}

/// Signal dispositions and mask back to their defaults, as a program expects them at
/// exec (SIG_IGN would otherwise be inherited, e.g. Rust's SIGPIPE).
pub(crate) fn reset_signals() -> nix::Result<()> {
    for sig in Signal::iterator() {
        if sig == Signal::SIGKILL || sig == Signal::SIGSTOP {
            continue;
        }
        // SAFETY: resetting dispositions to their defaults before exec.
        let _ = unsafe {
            sigaction(
                sig,
                &SigAction::new(SigHandler::SigDfl, SaFlags::empty(), SigSet::empty()),
            )
        };
    }
    SigSet::empty().thread_set_mask()
}

/// Blocks the handled signals in the calling (supervisor) thread. Returns the old mask.
pub fn block_handled() -> Result<SigSet, SetupError> {
    let mut old = SigSet::empty();
    nix::sys::signal::sigprocmask(
        nix::sys::signal::SigmaskHow::SIG_BLOCK,
        Some(&handled_set()),
        Some(&mut old),
    )
    .step(Step::Signals, "block signals")?;
    Ok(old)
}
