//! The supervisor of a native run, as a state machine over the sandbox's descriptors.
//!
//! One loop polls them and hands each ready one to its handler: the output pipes
//! ([`output`]), the code's stdin ([`stdin`]), init's channel (one place, [`State::apply`],
//! turns its messages into the run's state), the seccomp listener ([`seccomp`]), the
//! caller's signals ([`signals`]) and init's exit (a pidfd). The clock drives the
//! timeout and the cgroup's samples ([`cgroup`]). [`Supervisor::finish`] turns the state
//! into an [`Outcome`]. Nothing here touches the process's own descriptors or signal
//! handlers: output goes to the caller's sinks, so a process may supervise many runs.

mod cgroup;
pub(crate) mod done;
mod output;
mod seccomp;
pub(crate) mod signals;
mod stdin;

pub(crate) use cgroup::Cgroup;

use crate::confine::notify::Classifier;
use crate::engine::sync::{Channel, ChildUsage, Msg};
use crate::engine::Prepared;
use crate::io::{Io, Out, Samples};
use crate::outcome::{Confined, Ending, Outcome, Usage, Violation};
use crate::output::Stream;
use crate::timeline::Timeline;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::os::fd::{AsFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

pub(crate) struct Limits {
    pub timeout: Duration,
    pub output_bytes: u64,
    /// How to answer the seccomp filter's notifications (the run's profile).
    pub seccomp: Option<Classifier>,
}

/// A payload that was started before the run (a warm sandbox's): how it was
/// confined, and its seccomp listener.
pub(crate) struct Started {
    pub confined: Confined,
    pub listener: Option<OwnedFd>,
}

/// How a run is supervised, besides its descriptors.
pub(crate) struct Options<'a> {
    pub limits: &'a Limits,
    pub cgroup: Option<Cgroup<'a>>,
    pub signals: Option<signals::Forwarder>,
    /// Already started: no `Start` is sent, and the clock starts now.
    pub started: Option<Started>,
    /// A warm runner's status pipe (see [`done`]) and the sandbox's CPU accounts
    /// when the code was handed over; acted on only with a cgroup, whose processes
    /// the code's usage is then read from.
    pub done: Option<(OwnedFd, done::Accounts)>,
    pub timeline: &'a Timeline,
}

/// What is known of the run so far.
#[derive(Default)]
struct State {
    ending: Option<Ending>,
    violations: Vec<Violation>,
    /// Init's word that the payload ended: with it and end-of-file on both pipes the
    /// run is over, whether or not init has finished exiting.
    payload_done: bool,
    payload_usage: Option<ChildUsage>,
    reaped: Option<(i32, libc::rusage)>,
    killed: bool,
    interrupted_by: Option<i32>,
    confined: Option<Confined>,
}

impl State {
    /// The one place a message from init changes the run's state.
    fn apply(&mut self, m: Msg, timeline: &Timeline) {
        match m {
            Msg::PayloadExit {
                code,
                signal,
                usage,
            } => {
                timeline.mark("payload-exit");
                self.payload_done = true;
                self.payload_usage = usage;
                self.ending = Some(match signal {
                    Some(s) => Ending::signaled(s),
                    None => Ending::Exited {
                        code: code.unwrap_or(0),
                    },
                });
            }
            Msg::ExecFailed { errno, message } => {
                self.ending = Some(Ending::ExecFailed { errno, message })
            }
            Msg::Failed(e) => self.ending = Some(Ending::SetupFailed(e)),
            Msg::Started(c) => {
                timeline.mark("payload-exec");
                self.confined = Some(c)
            }
            _ => {}
        }
    }

    /// Whether a limit may still be called crossed: not once the sandbox is gone or
    /// being killed.
    fn judging(&self) -> bool {
        self.reaped.is_none() && !self.killed
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Src {
    Output(Stream),
    Chan,
    Exit,
    Signals,
    Notify,
    StdinRead,
    StdinWrite,
    Cancel,
    Done,
}

struct Supervisor<'a, 'io> {
    pid: Pid,
    chan: Channel,
    /// Readable once init has exited; `None` on kernels without pidfd_open, where the
    /// loop's other wake-ups (end-of-file, the channel) and a short poll suffice.
    pidfd: Option<OwnedFd>,
    chan_open: bool,
    started: Instant,
    deadline: Instant,
    limits: &'a Limits,
    st: State,
    out: output::Output<'io>,
    stdin: stdin::Pump<'io>,
    signals: Option<signals::Forwarder>,
    seccomp: seccomp::Watch,
    cg: Option<cgroup::Watch<'a, 'io>>,
    /// Readable (or hung up) when the caller gives up on the run.
    cancel: Option<std::os::fd::BorrowedFd<'io>>,
    /// The warm runner's status pipe and the accounts at the hand-over.
    done: Option<(OwnedFd, done::Accounts)>,
    timeline: &'a Timeline,
}

/// Starts the payload and supervises it until the sandbox is gone. `after_start` is
/// called once the payload may start, for work that can overlap it.
pub(crate) fn run<'a, 'io>(
    p: Prepared,
    opts: Options<'a>,
    io: Io<'io>,
    after_start: &mut dyn FnMut(),
) -> Outcome {
    let Options {
        limits,
        cgroup: cg,
        signals,
        started: warm,
        done,
        timeline,
    } = opts;
    let started = Instant::now();
    let out = output::Output::new(
        p.stdout,
        p.stderr,
        [Out::new(io.stdout), Out::new(io.stderr)],
        limits.output_bytes,
    );
    let pump = stdin::Pump::new(io.stdin, p.stdin);
    let done = done.filter(|_| cg.is_some());
    let samples = Samples::new(io.samples);
    let mut s = Supervisor {
        pidfd: pidfd_open(p.pid),
        pid: p.pid,
        chan: p.chan,
        chan_open: true,
        started,
        deadline: started + limits.timeout,
        limits,
        st: State::default(),
        out,
        stdin: pump,
        signals,
        seccomp: seccomp::Watch::default(),
        cg: cg.map(|c| cgroup::Watch::new(c, samples, started)),
        cancel: io.cancel,
        done,
        timeline,
    };
    match warm {
        Some(w) => {
            s.st.confined = Some(w.confined);
            s.seccomp.listener = w.listener;
        }
        None => {
            if let Err(e) = s.chan.send(&Msg::Start) {
                s.st.ending = Some(Ending::SetupFailed(e));
                s.kill_sandbox();
            }
        }
    }
    after_start();
    while !s.over() {
        if !s.step() {
            break;
        }
    }
    s.finish()
}

impl Supervisor<'_, '_> {
    fn over(&self) -> bool {
        (self.st.reaped.is_some() || self.st.payload_done) && self.out.done()
    }

    fn kill_sandbox(&mut self) {
        if !self.st.killed {
            let _ = kill(self.pid, Signal::SIGKILL);
            self.st.killed = true;
        }
    }

    /// A limit was crossed: record it (unless the sandbox is already gone) and end
    /// the run.
    fn violated(&mut self, v: Violation) {
        if self.st.judging() {
            self.st.violations.push(v);
        }
        self.kill_sandbox();
    }

    /// One round: the clock's work, one poll, the handlers of what is ready. Returns
    /// false when the loop should end though the run is not `over` (init is gone and
    /// nothing more arrives).
    fn step(&mut self) -> bool {
        let now = Instant::now();
        self.on_clock(now);
        let wait = self.wait_ms(now);
        let ready = match self.poll_once(wait) {
            Some(r) => r,
            None => return true,
        };
        if ready.is_empty() && self.st.reaped.is_some() {
            return false;
        }
        for (src, rev) in ready {
            self.dispatch(src, rev);
        }
        if self.st.reaped.is_none() {
            self.reap();
        }
        true
    }

    fn on_clock(&mut self, now: Instant) {
        let running = self.st.reaped.is_none() && !self.st.payload_done;
        if now >= self.deadline && running && !self.st.killed {
            self.st.violations.push(Violation::Timeout {
                limit_s: self.limits.timeout.as_secs_f64(),
            });
            self.kill_sandbox();
        }
        let judging = self.st.judging();
        let crossed = self
            .cg
            .as_mut()
            .and_then(|c| c.tick(now, self.started, judging));
        if let Some(v) = crossed {
            self.violated(v);
        }
    }

    fn wait_ms(&self, now: Instant) -> i32 {
        if self.st.reaped.is_some() {
            // Init is gone, so every writer is gone: the pipes only hold leftovers.
            return 100;
        }
        if self.st.killed || self.st.payload_done || self.pidfd.is_none() {
            return 50;
        }
        let mut until = self.deadline.saturating_duration_since(now);
        if let Some(c) = &self.cg {
            until = until.min(c.until_next(now));
        }
        until.as_millis().min(60_000) as i32 + 1
    }

    /// Polls every live source once. `None` when interrupted.
    fn poll_once(&self, wait_ms: i32) -> Option<Vec<(Src, PollFlags)>> {
        let mut fds: Vec<(Src, PollFd)> = Vec::with_capacity(8);
        let pin = PollFlags::POLLIN;
        for (stream, fd) in self.out.open() {
            fds.push((Src::Output(stream), PollFd::new(fd, pin)));
        }
        if self.chan_open {
            fds.push((Src::Chan, PollFd::new(self.chan.as_fd(), pin)));
        }
        if let Some(fd) = &self.pidfd {
            fds.push((Src::Exit, PollFd::new(fd.as_fd(), pin)));
        }
        if let Some(sig) = &self.signals {
            fds.push((Src::Signals, PollFd::new(sig.fd(), pin)));
        }
        if let Some(l) = self.seccomp.fd() {
            fds.push((Src::Notify, PollFd::new(l, pin)));
        }
        if let Some(fd) = self.stdin.source() {
            fds.push((Src::StdinRead, PollFd::new(fd, pin)));
        }
        if let Some(fd) = self.stdin.sink() {
            fds.push((Src::StdinWrite, PollFd::new(fd, PollFlags::POLLOUT)));
        }
        if let Some(fd) = self.cancel {
            fds.push((Src::Cancel, PollFd::new(fd, pin)));
        }
        if let Some((fd, _)) = &self.done {
            fds.push((Src::Done, PollFd::new(fd.as_fd(), pin)));
        }
        let mut pfds: Vec<PollFd> = fds.iter().map(|(_, f)| *f).collect();
        let timeout = PollTimeout::try_from(wait_ms).unwrap_or(PollTimeout::MAX);
        match poll(&mut pfds, timeout) {
            Ok(_) => {}
            Err(nix::errno::Errno::EINTR) => return None,
            Err(_) => return Some(Vec::new()),
        }
        Some(
            fds.iter()
                .zip(pfds.iter())
                .filter_map(|((s, _), f)| f.revents().filter(|r| !r.is_empty()).map(|r| (*s, r)))
                .collect(),
        )
    }

    fn dispatch(&mut self, src: Src, rev: PollFlags) {
        match src {
            Src::Output(stream) => {
                if self.out.on_readable(stream) {
                    self.violated(Violation::Output {
                        limit_bytes: self.limits.output_bytes,
                    });
                }
            }
            // Receive only on POLLIN: once every task under the filter is gone the
            // listener reports POLLHUP, and a receive would then block for good.
            Src::Notify if !rev.contains(PollFlags::POLLIN) => self.seccomp.listener = None,
            Src::Notify => {
                if let Some(v) = self.seccomp.serve(self.limits.seccomp.as_ref()) {
                    self.violated(v);
                }
            }
            Src::Chan => self.on_channel(),
            Src::Exit => {
                self.reap();
                // A pidfd stays readable: once reaped, stop polling it.
                self.pidfd = None;
            }
            Src::Signals => self.on_signals(),
            Src::StdinRead => self.stdin.on_readable(),
            Src::StdinWrite => self.stdin.on_writable(),
            Src::Cancel => {
                // Once: the descriptor stays readable.
                self.cancel = None;
                self.violated(Violation::Cancelled);
            }
            Src::Done => self.on_done(),
        }
    }

    /// The warm runner says the code ended with this status: the run is over once
    /// the output is drained. Its usage is read now, then the sandbox is killed.
    fn on_done(&mut self) {
        let Some((fd, base)) = self.done.take() else {
            return;
        };
        let (Some(code), Some(c)) = (done::read_status(&fd), self.cg.as_ref()) else {
            return;
        };
        if self.st.ending.is_some() || self.st.killed {
            return;
        }
        self.timeline.mark("code-ended");
        self.st.payload_usage = Some(done::Accounts::read(c.group(), true).since(&base));
        self.st.payload_done = true;
        self.st.ending = Some(Ending::Exited { code });
        self.kill_sandbox();
    }

    fn on_channel(&mut self) {
        match self.chan.recv_with_fd() {
            Ok(Some((m, fd))) => {
                if let (Msg::SeccompListener, Some(fd)) = (&m, fd) {
                    self.seccomp.listener = Some(fd);
                }
                self.st.apply(m, self.timeline);
            }
            Ok(None) | Err(_) => self.chan_open = false,
        }
    }

    fn on_signals(&mut self) {
        let Some(sigs) = self.signals.as_ref().map(|s| s.pending()) else {
            return;
        };
        for sig in sigs {
            tracing::debug!(?sig, "caller signal");
            if self.st.interrupted_by.is_some() {
                self.kill_sandbox();
            } else {
                self.st.interrupted_by = Some(sig as i32);
                let r = kill(self.pid, sig);
                tracing::debug!(?r, "forwarded to init");
            }
        }
    }

    fn reap(&mut self) {
        if self.st.reaped.is_none() {
            if let Some(r) = try_reap(self.pid) {
                self.timeline.mark("init-reaped");
                self.st.reaped = Some(r);
            }
        }
    }

    /// The outcome, once the sandbox is gone: messages init sent just before it
    /// exited, the cgroup's last reading, and the usage.
    fn finish(mut self) -> Outcome {
        while self.chan_open && self.st.ending.is_none() {
            match self.chan.recv() {
                Ok(Some(m)) => self.st.apply(m, self.timeline),
                _ => self.chan_open = false,
            }
        }
        if let Some(c) = self.cg.as_mut() {
            c.last_reading(&mut self.st.violations);
        }
        drop(self.signals.take());
        let st = std::mem::take(&mut self.st);
        let unreaped_init = st.reaped.is_none().then_some(self.pid);
        let (status, ru) = match (st.reaped, st.payload_usage) {
            (Some(r), _) => r,
            (None, Some(u)) => (0, rusage_of(u)),
            (None, None) => (0, zero_rusage()),
        };
        let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        let cg = self.cg.as_ref();
        let usage = Usage {
            wall_time_s: self.started.elapsed().as_secs_f64(),
            cpu_user_s: tv(ru.ru_utime),
            cpu_system_s: tv(ru.ru_stime),
            peak_rss_bytes: (ru.ru_maxrss.max(0) as u64) * 1024,
            peak_memory_bytes: cg.map(|c| c.last.memory_peak_bytes),
            max_pids: cg.map(|c| c.max_pids),
            cgroup_cpu_s: cg
                .and_then(|c| c.last.cpu_usage_usec)
                .map(|us| us as f64 / 1e6),
        };
        let cpu_limit_s = cg.map(|c| c.cpu_limit_s()).unwrap_or(0.0);
        let cpu_used_s = cg
            .map(|c| c.last.cpu_usage_usec.unwrap_or(0) as f64 / 1e6)
            .unwrap_or(0.0);
        let seccomp_denied = self.seccomp.denied();
        let capped = self.out.capped.clone();
        let (stdout, stderr) = self.out.into_captured();
        let mut o = Outcome {
            ending: st
                .ending
                .unwrap_or_else(|| Ending::from_wait_status(status)),
            violations: st.violations,
            usage,
            stdout_bytes: capped.stdout.bytes,
            stderr_bytes: capped.stderr.bytes,
            stdout,
            stderr,
            truncated: capped.truncated,
            stdout_ended_with_newline: capped.stdout.ended_with_newline,
            interrupted_by: st.interrupted_by,
            confined: st.confined,
            denied_syscalls: seccomp_denied,
            unreaped_init,
        };
        o.signal_violations(cpu_limit_s, cpu_used_s);
        o
    }
}

fn rusage_of(u: ChildUsage) -> libc::rusage {
    let tv = |us: u64| libc::timeval {
        tv_sec: (us / 1_000_000) as libc::time_t,
        tv_usec: (us % 1_000_000) as libc::suseconds_t,
    };
    let mut ru = zero_rusage();
    ru.ru_utime = tv(u.user_us);
    ru.ru_stime = tv(u.system_us);
    ru.ru_maxrss = u.maxrss_kb as libc::c_long;
    ru
}

fn zero_rusage() -> libc::rusage {
    // SAFETY: rusage is plain old data; all-zero is valid.
    unsafe { std::mem::zeroed() }
}

/// wait4 instead of waitpid: its rusage covers init and every descendant it reaped.
fn try_reap(pid: nix::unistd::Pid) -> Option<(i32, libc::rusage)> {
    let mut status = 0;
    let mut ru = zero_rusage();
    // SAFETY: valid pointers to locals.
    let r = unsafe { libc::wait4(pid.as_raw(), &mut status, libc::WNOHANG, &mut ru) };
    (r == pid.as_raw()).then_some((status, ru))
}

/// A descriptor that becomes readable when `pid` exits (nix 0.29 has no wrapper).
/// `None` on kernels before 5.3.
pub(crate) fn pidfd_open(pid: nix::unistd::Pid) -> Option<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid.as_raw(), 0) };
    // SAFETY: a fresh descriptor that nothing else owns.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as i32) })
}
