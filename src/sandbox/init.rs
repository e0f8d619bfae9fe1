//! PID 1 of the sandbox: starts the payload, reaps every zombie, forwards signals,
//! and when the payload ends kills whatever it left behind.

use super::error::{SetupError, Step, StepContext};
use super::sync::{Channel, Msg};
use nix::sys::signal::{kill, sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::{fork, ForkResult, Pid};
use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};

/// Signals the supervisor blocks before clone and init waits for synchronously.
pub const HANDLED: &[Signal] = &[
    Signal::SIGCHLD,
    Signal::SIGINT,
    Signal::SIGTERM,
    Signal::SIGHUP,
    Signal::SIGQUIT,
    Signal::SIGUSR1,
    Signal::SIGUSR2,
];

pub fn handled_set() -> SigSet {
    let mut s = SigSet::empty();
    for sig in HANDLED {
        s.add(*sig);
    }
    s
}

/// What init needs to start the payload, prepared before the fork.
pub struct Payload {
    pub program: CString,
    pub argv: Vec<CString>,
    pub envp: Vec<CString>,
    /// Applied in the payload right before execve (Landlock, seccomp).
    pub confine: Box<dyn Fn() -> Result<(), SetupError>>,
}

extern "C" fn noop(_: libc::c_int) {}

/// Runs as PID 1 after setup. Returns the exit code of init.
pub fn run(chan: &Channel, payload: &Payload) -> i32 {
    // PID 1 only receives signals it has a handler for; a no-op handler plus a
    // blocked mask lets sigwait pick them up in order.
    for sig in HANDLED {
        let sa = SigAction::new(
            SigHandler::Handler(noop),
            SaFlags::SA_NOCLDSTOP,
            SigSet::empty(),
        );
        // SAFETY: installing a trivial async-signal-safe handler.
        if unsafe { sigaction(*sig, &sa) }.is_err() {
            return fail(chan, SetupError::new(Step::Exec, "install signal handlers"));
        }
    }
    let (err_r, err_w) = match nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC) {
        Ok(p) => p,
        Err(e) => return fail(chan, SetupError::new(Step::Exec, format!("pipe: {e}"))),
    };
    // SAFETY: the sandbox init is single-threaded; the child only execs or _exits.
    let child = match unsafe { fork() } {
        Ok(ForkResult::Child) => {
            drop(err_r);
            exec_payload(payload, err_w)
        }
        Ok(ForkResult::Parent { child }) => child,
        Err(e) => return fail(chan, SetupError::new(Step::Exec, format!("fork: {e}"))),
    };
    drop(err_w);
    match read_exec_error(&err_r) {
        Some(ExecError::Confine(e)) => {
            let _ = waitpid(child, None);
            return fail(chan, e);
        }
        Some(ExecError::Exec(errno)) => {
            let message = nix::errno::Errno::from_raw(errno).desc().to_string();
            let _ = chan.send(&Msg::ExecFailed { errno, message });
            let _ = waitpid(child, None);
            return if errno == libc::ENOENT { 127 } else { 126 };
        }
        None => {}
    }
    drop(err_r);
    supervise(chan, child)
}

fn fail(chan: &Channel, e: SetupError) -> i32 {
    let _ = chan.send(&Msg::Failed(e));
    125
}

fn supervise(chan: &Channel, child: Pid) -> i32 {
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
                    return finish(chan, Some(code), None, code)
                }
                Ok(WaitStatus::Signaled(pid, s, _)) if pid == child => {
                    return finish(chan, None, Some(s as i32), 128 + s as i32)
                }
                Ok(WaitStatus::StillAlive) | Err(_) => break,
                Ok(_) => continue,
            }
        }
    }
}

fn finish(chan: &Channel, code: Option<i32>, signal: Option<i32>, rc: i32) -> i32 {
    // Everything else in the PID namespace dies with init anyway; killing it first
    // means no process observes a half-torn-down sandbox.
    let _ = kill(Pid::from_raw(-1), Signal::SIGKILL);
    let _ = chan.send(&Msg::PayloadExit { code, signal });
    rc
}

enum ExecError {
    Exec(i32),
    Confine(SetupError),
}

/// The payload reports a failure before execve over a close-on-exec pipe: a
/// successful execve closes it, so end-of-file means the program is running.
fn read_exec_error(r: &OwnedFd) -> Option<ExecError> {
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
    match buf.split_first() {
        Some((b'E', rest)) if rest.len() >= 4 => {
            let mut n = [0u8; 4];
            n.copy_from_slice(&rest[..4]);
            Some(ExecError::Exec(i32::from_ne_bytes(n)))
        }
        Some((b'C', rest)) => Some(ExecError::Confine(
            serde_json::from_slice(rest)
                .unwrap_or_else(|_| SetupError::new(Step::Exec, "confinement failed")),
        )),
        _ => None,
    }
}

/// In the forked payload process: restore signals, confine, execve.
fn exec_payload(p: &Payload, err_w: OwnedFd) -> ! {
    let report = |errno: i32| -> ! {
        let mut msg = vec![b'E'];
        msg.extend_from_slice(&errno.to_ne_bytes());
        let _ = nix::unistd::write(&err_w, &msg);
        // SAFETY: _exit is always safe; no destructors may run in this child.
        unsafe { libc::_exit(127) }
    };
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
    if SigSet::empty().thread_set_mask().is_err() {
        report(libc::EINVAL);
    }
    if let Err(e) = (p.confine)() {
        let mut msg = vec![b'C'];
        msg.extend_from_slice(&serde_json::to_vec(&e).unwrap_or_default());
        let _ = nix::unistd::write(&err_w, &msg);
        // SAFETY: as above.
        unsafe { libc::_exit(125) }
    }
    let e = nix::unistd::execve(&p.program, &p.argv, &p.envp);
    report(e.map(|_| 0).unwrap_or_else(|e| e as i32))
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
