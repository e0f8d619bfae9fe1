//! The supervisor's loop: streams output within its cap, pumps stdin, enforces the
//! wall-clock timeout, forwards the caller's signals, and collects the exit status.

use crate::confine::notify::{self, Classifier, Decision};
use crate::confine::syscalls;
use crate::engine::sync::{ChildUsage, Msg};
use crate::engine::{Prepared, SetupError, Step};
use crate::output::{CappedOutput, Stream};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::signal::{kill, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use serde::Serialize;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Violation {
    Timeout {
        limit_s: f64,
    },
    Output {
        limit_bytes: u64,
    },
    /// A syscall the seccomp filter ends the run for: the kill list, or anything
    /// outside the allowlist under `default_action: kill`. The supervisor names the
    /// call (from the filter's user notification) and kills the sandbox; a kill in
    /// the kernel itself (a foreign architecture or x32 call) shows as SIGSYS with
    /// no name.
    Seccomp {
        syscall: Option<String>,
        nr: Option<i64>,
        signal: Option<String>,
    },
    /// The kernel's OOM killer acted inside the run's cgroup.
    Memory {
        limit_bytes: u64,
        peak_bytes: u64,
    },
    /// A fork or thread creation failed at the run's pids limit.
    Pids {
        limit: u64,
    },
    /// The run used up its CPU time.
    Cpu {
        limit_s: f64,
        used_s: f64,
    },
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Ending {
    Exited { code: i32 },
    Signaled { signal: i32, name: String },
    ExecFailed { errno: i32, message: String },
    SetupFailed(SetupError),
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Usage {
    pub wall_time_s: f64,
    pub cpu_user_s: f64,
    pub cpu_system_s: f64,
    /// Largest resident set of any single process of the sandbox (getrusage).
    pub peak_rss_bytes: u64,
    /// Peak memory of the whole sandbox, from its cgroup (tmpfs pages included).
    pub peak_memory_bytes: Option<u64>,
    /// Most processes and threads seen at once (sampled from the cgroup).
    pub max_pids: Option<u64>,
    /// CPU time of the whole sandbox from its cgroup, in seconds.
    pub cgroup_cpu_s: Option<f64>,
}

#[derive(Debug, Clone)]
pub struct Outcome {
    pub ending: Ending,
    pub violations: Vec<Violation>,
    pub usage: Usage,
    pub stdout_bytes: u64,
    pub stderr_bytes: u64,
    pub truncated: bool,
    pub stdout_ended_with_newline: bool,
    pub interrupted_by: Option<i32>,
    /// What the payload was confined with, as init reported it.
    pub confined: Option<crate::engine::init::Confined>,
    /// Calls the filter denied with EPERM, when they were routed to the supervisor
    /// (`--audit-syscalls`).
    pub denied_syscalls: Vec<DeniedCall>,
    /// The sandbox's init when the run ended before it was reaped: its payload is
    /// gone and everything else was sent SIGKILL, but it may still be tearing down
    /// the namespaces. The caller reaps it (see [`crate::teardown`]).
    pub unreaped_init: Option<nix::unistd::Pid>,
}

/// A syscall denied (EPERM) during the run, and how often.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct DeniedCall {
    pub syscall: String,
    pub nr: i64,
    pub count: u64,
}

pub struct Limits {
    pub timeout: Duration,
    pub output_bytes: u64,
    /// How to answer the seccomp filter's notifications (the run's profile).
    pub seccomp: Option<Classifier>,
}

/// The seccomp filter's notifications, once the payload has handed over the listener.
#[derive(Default)]
struct SeccompWatch {
    listener: Option<OwnedFd>,
    denied: std::collections::BTreeMap<i64, u64>,
}

impl SeccompWatch {
    /// Answers every pending notification. Returns the violation when a call ends
    /// the run; the caller then kills the sandbox.
    fn serve(&mut self, classifier: Option<&Classifier>) -> Option<Violation> {
        let listener = self.listener.as_ref()?;
        let n = match notify::receive(listener.as_fd()) {
            Ok(Some(n)) => n,
            Ok(None) => return None,
            Err(e) => {
                tracing::debug!(%e, "seccomp listener gone");
                self.listener = None;
                return None;
            }
        };
        let decision = classifier.map(|c| c.decide(n.nr)).unwrap_or(Decision::Kill);
        match decision {
            // Never answered: the caller stays blocked in the call until the sandbox's
            // SIGKILL ends it, so the code never runs another instruction (an answer
            // would race with the kill).
            Decision::Kill => Some(Violation::Seccomp {
                syscall: Some(n.name()),
                nr: Some(n.nr),
                signal: None,
            }),
            Decision::Deny => {
                *self.denied.entry(n.nr).or_default() += 1;
                if let Err(e) = notify::fail_call(listener.as_fd(), n.id, libc::EPERM) {
                    tracing::debug!(%e, "answering a seccomp notification");
                }
                None
            }
        }
    }

    fn denied(&self) -> Vec<DeniedCall> {
        self.denied
            .iter()
            .map(|(nr, count)| DeniedCall {
                syscall: syscalls::name(*nr)
                    .map(str::to_string)
                    .unwrap_or_else(|| format!("syscall_{nr}")),
                nr: *nr,
                count: *count,
            })
            .collect()
    }
}

/// The run's cgroup, sampled while it runs.
pub struct Cgroup<'a> {
    pub group: &'a crate::cgroup::RunCgroup,
    pub sample: Duration,
    pub cpu_time: Option<Duration>,
    pub stats: Option<crate::run::StatsSink>,
}

struct StdinPump {
    to_child: Option<OwnedFd>,
    buf: Vec<u8>,
    eof: bool,
}

/// Starts the payload and supervises it until the sandbox is gone.
/// `after_start` is called once the payload may start, for work that can overlap it.
pub fn run(
    p: Prepared,
    limits: &Limits,
    mut cg: Option<Cgroup>,
    after_start: &mut dyn FnMut(),
) -> Outcome {
    let started = Instant::now();
    let deadline = started + limits.timeout;
    let mut out = CappedOutput::new(limits.output_bytes);
    let mut violations = Vec::new();
    let mut ending: Option<Ending> = None;
    let mut reaped: Option<(i32, libc::rusage)> = None;
    // Init's word that the payload ended: with it and end-of-file on both pipes the
    // run is over, whether or not init has finished exiting.
    let mut payload_usage: Option<ChildUsage> = None;
    let mut payload_done = false;
    let mut killed = false;
    let mut interrupted_by = None;
    let mut confined = None;
    let mut watch = SeccompWatch::default();
    let mut usage_cg = crate::cgroup::Usage::default();
    let mut max_pids = 0u64;
    let (mut out_open, mut err_open, mut chan_open) = (true, true, true);
    let mut next_sample = started;

    let sigfd = SignalFd::with_flags(
        &crate::engine::init::handled_set(),
        SfdFlags::SFD_CLOEXEC | SfdFlags::SFD_NONBLOCK,
    )
    .ok();
    if let Some(w) = &p.stdin {
        let _ = nix::fcntl::fcntl(
            w.as_raw_fd(),
            nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_NONBLOCK),
        );
    }
    let mut pump = StdinPump {
        eof: p.stdin.is_none(),
        to_child: p.stdin,
        buf: Vec::new(),
    };
    if let Err(e) = p.chan.send(&Msg::Start) {
        ending = Some(Ending::SetupFailed(e));
        let _ = kill(p.pid, Signal::SIGKILL);
        killed = true;
    }
    after_start();
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    let kill_sandbox = |killed: &mut bool| {
        if !*killed {
            let _ = kill(p.pid, Signal::SIGKILL);
            *killed = true;
        }
    };

    loop {
        if (reaped.is_some() || payload_done) && !out_open && !err_open {
            break;
        }
        let now = Instant::now();
        if now >= deadline && reaped.is_none() && !payload_done && !killed {
            violations.push(Violation::Timeout {
                limit_s: limits.timeout.as_secs_f64(),
            });
            kill_sandbox(&mut killed);
        }
        let wait_ms = if reaped.is_some() {
            // Init is gone, so every writer is gone: the pipes only hold leftovers.
            100
        } else if killed || payload_done {
            50
        } else {
            let until = deadline.saturating_duration_since(now);
            let to_sample = |c: &Cgroup| match next_sample.checked_duration_since(now) {
                Some(d) if !d.is_zero() => d,
                _ => c.sample,
            };
            let until = cg
                .as_ref()
                .map(|c| until.min(to_sample(c)))
                .unwrap_or(until);
            until.as_millis().min(60_000) as i32 + 1
        };
        // Sampled on the clock, not on every wake-up: a chatty program wakes the loop
        // for each chunk of output, and a sample reads half a dozen cgroup files.
        let sample_due = now >= next_sample;
        if let Some(c) = cg.as_mut().filter(|_| sample_due) {
            next_sample = now + c.sample;
            let u = c.group.stats();
            max_pids = max_pids.max(u.pids_current);
            write_sample(&mut c.stats, started.elapsed(), &u);
            if reaped.is_none() && !killed {
                if u.oom_kills > usage_cg.oom_kills {
                    violations.push(Violation::Memory {
                        limit_bytes: c.group.limits.memory_bytes,
                        peak_bytes: u.memory_peak_bytes,
                    });
                    kill_sandbox(&mut killed);
                } else if u.pids_limit_hits > usage_cg.pids_limit_hits {
                    violations.push(Violation::Pids {
                        limit: c.group.limits.pids,
                    });
                    kill_sandbox(&mut killed);
                } else if let Some((limit, used_us)) = c
                    .cpu_time
                    .zip(u.cpu_usage_usec)
                    .filter(|(l, used)| *used as u128 > l.as_micros())
                {
                    violations.push(Violation::Cpu {
                        limit_s: limit.as_secs_f64(),
                        used_s: used_us as f64 / 1e6,
                    });
                    kill_sandbox(&mut killed);
                }
            }
            usage_cg = u;
        }

        let stdin0 = std::io::stdin();
        let mut fds: Vec<(Src, PollFd)> = Vec::with_capacity(6);
        if out_open {
            fds.push((Src::Out, PollFd::new(p.stdout.as_fd(), PollFlags::POLLIN)));
        }
        if err_open {
            fds.push((Src::Err, PollFd::new(p.stderr.as_fd(), PollFlags::POLLIN)));
        }
        if chan_open {
            fds.push((Src::Chan, PollFd::new(p.chan.as_fd(), PollFlags::POLLIN)));
        }
        if let Some(sfd) = &sigfd {
            fds.push((Src::Sig, PollFd::new(sfd.as_fd(), PollFlags::POLLIN)));
        }
        if let Some(l) = &watch.listener {
            fds.push((Src::Notify, PollFd::new(l.as_fd(), PollFlags::POLLIN)));
        }
        if !pump.eof && pump.buf.is_empty() && pump.to_child.is_some() {
            fds.push((Src::In, PollFd::new(stdin0.as_fd(), PollFlags::POLLIN)));
        }
        if let Some(w) = pump.to_child.as_ref().filter(|_| !pump.buf.is_empty()) {
            fds.push((Src::InW, PollFd::new(w.as_fd(), PollFlags::POLLOUT)));
        }
        let mut pfds: Vec<PollFd> = fds.iter().map(|(_, f)| *f).collect();
        let n = match poll(
            &mut pfds,
            PollTimeout::try_from(wait_ms).unwrap_or(PollTimeout::MAX),
        ) {
            Ok(n) => n,
            Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => 0,
        };
        if n == 0 && reaped.is_some() {
            break;
        }
        let ready: Vec<(Src, PollFlags)> = fds
            .iter()
            .zip(pfds.iter())
            .filter_map(|((s, _), f)| f.revents().filter(|r| !r.is_empty()).map(|r| (*s, r)))
            .collect();
        drop(pfds);
        for (src, rev) in ready {
            match src {
                Src::Out | Src::Err => {
                    let (fd, stream, target): (BorrowedFd, Stream, BorrowedFd) = if src == Src::Out
                    {
                        (p.stdout.as_fd(), Stream::Stdout, stdout.as_fd())
                    } else {
                        (p.stderr.as_fd(), Stream::Stderr, stderr.as_fd())
                    };
                    let mut buf = [0u8; 65536];
                    match nix::unistd::read(fd.as_raw_fd(), &mut buf) {
                        Ok(0) | Err(_) => {
                            if src == Src::Out {
                                out_open = false
                            } else {
                                err_open = false
                            }
                        }
                        Ok(k) => {
                            if out.forward(stream, &buf[..k], target) {
                                violations.push(Violation::Output {
                                    limit_bytes: limits.output_bytes,
                                });
                                kill_sandbox(&mut killed);
                            }
                        }
                    }
                }
                // Receive only on POLLIN: once every task under the filter is gone the
                // listener reports POLLHUP, and a receive would then block for good.
                Src::Notify if !rev.contains(PollFlags::POLLIN) => watch.listener = None,
                Src::Notify => {
                    if let Some(v) = watch.serve(limits.seccomp.as_ref()) {
                        if reaped.is_none() && !killed {
                            violations.push(v);
                        }
                        kill_sandbox(&mut killed);
                    }
                }
                Src::Chan => match p.chan.recv_with_fd().map(|m| {
                    m.map(|(m, fd)| {
                        if let (Msg::SeccompListener, Some(fd)) = (&m, fd) {
                            watch.listener = Some(fd);
                        }
                        m
                    })
                }) {
                    Ok(Some(Msg::PayloadExit {
                        code,
                        signal,
                        usage,
                    })) => {
                        crate::timeline::mark("payload-exit");
                        payload_done = true;
                        payload_usage = usage;
                        tracing::debug!(
                            elapsed_us = started.elapsed().as_micros() as u64,
                            "payload exited"
                        );
                        ending = Some(match (code, signal) {
                            (_, Some(s)) => Ending::Signaled {
                                signal: s,
                                name: signal_name(s),
                            },
                            (Some(c), None) => Ending::Exited { code: c },
                            (None, None) => Ending::Exited { code: 0 },
                        })
                    }
                    Ok(Some(Msg::ExecFailed { errno, message })) => {
                        ending = Some(Ending::ExecFailed { errno, message })
                    }
                    Ok(Some(Msg::Failed(e))) => ending = Some(Ending::SetupFailed(e)),
                    Ok(Some(Msg::Started(c))) => {
                        crate::timeline::mark("payload-exec");
                        confined = Some(c)
                    }
                    Ok(Some(_)) => {}
                    Ok(None) | Err(_) => chan_open = false,
                },
                Src::Sig => {
                    while let Some(sfd) = &sigfd {
                        match sfd.read_signal() {
                            Ok(Some(info)) => {
                                let signo = info.ssi_signo as i32;
                                if signo == libc::SIGCHLD {
                                    tracing::debug!(
                                        elapsed_us = started.elapsed().as_micros() as u64,
                                        "SIGCHLD"
                                    );
                                    if let Some(r) = try_reap(p.pid) {
                                        crate::timeline::mark("init-reaped");
                                        reaped = Some(r);
                                    }
                                } else if let Ok(sig) = Signal::try_from(signo) {
                                    // First Ctrl-C goes to the code; a second one ends the sandbox.
                                    tracing::debug!(signo, "caller signal");
                                    if interrupted_by.is_some() {
                                        kill_sandbox(&mut killed);
                                    } else {
                                        interrupted_by = Some(signo);
                                        let r = kill(p.pid, sig);
                                        tracing::debug!(?r, "forwarded to init");
                                    }
                                }
                            }
                            _ => break,
                        }
                    }
                }
                Src::In => {
                    let mut buf = [0u8; 65536];
                    match nix::unistd::read(0, &mut buf) {
                        Ok(0) | Err(_) => {
                            pump.eof = true;
                            pump.to_child = None;
                        }
                        Ok(k) => pump.buf.extend_from_slice(&buf[..k]),
                    }
                }
                Src::InW => {
                    if let Some(w) = &pump.to_child {
                        match nix::unistd::write(w, &pump.buf) {
                            Ok(k) => {
                                pump.buf.drain(..k);
                            }
                            Err(nix::errno::Errno::EAGAIN) => {}
                            Err(_) => {
                                pump.buf.clear();
                                pump.eof = true;
                                pump.to_child = None;
                            }
                        }
                    }
                }
            }
        }
        if pump.eof && pump.buf.is_empty() {
            pump.to_child = None;
        }
        if reaped.is_none() {
            if let Some(r) = try_reap(p.pid) {
                crate::timeline::mark("init-reaped");
                reaped = Some(r);
            }
        }
    }
    // Messages sent just before init exited may still be queued.
    while chan_open && ending.is_none() {
        match p.chan.recv() {
            Ok(Some(Msg::PayloadExit {
                code,
                signal,
                usage,
            })) => {
                payload_usage = usage;
                ending = Some(match signal {
                    Some(s) => Ending::Signaled {
                        signal: s,
                        name: signal_name(s),
                    },
                    None => Ending::Exited {
                        code: code.unwrap_or(0),
                    },
                })
            }
            Ok(Some(Msg::ExecFailed { errno, message })) => {
                ending = Some(Ending::ExecFailed { errno, message })
            }
            Ok(Some(Msg::Failed(e))) => ending = Some(Ending::SetupFailed(e)),
            Ok(Some(Msg::Started(c))) => confined = Some(c),
            Ok(Some(_)) => {}
            _ => chan_open = false,
        }
    }
    tracing::debug!(
        elapsed_us = started.elapsed().as_micros() as u64,
        "sandbox gone"
    );
    if let Some(c) = &cg {
        let u = c.group.stats();
        // An OOM kill that ended the run before the next sample is still a violation.
        if u.oom_kills > 0
            && !violations
                .iter()
                .any(|v| matches!(v, Violation::Memory { .. }))
        {
            violations.push(Violation::Memory {
                limit_bytes: c.group.limits.memory_bytes,
                peak_bytes: u.memory_peak_bytes,
            });
        }
        if u.pids_limit_hits > 0
            && !violations
                .iter()
                .any(|v| matches!(v, Violation::Pids { .. }))
        {
            violations.push(Violation::Pids {
                limit: c.group.limits.pids,
            });
        }
        usage_cg = u;
    }

    let _ = p.old_sigmask.thread_set_mask();
    let unreaped_init = reaped.is_none().then_some(p.pid);
    let (status, ru) = match (reaped, payload_usage) {
        (Some(r), _) => r,
        (None, Some(u)) => (0, rusage_of(u)),
        (None, None) => (0, zero_rusage()),
    };
    let ending = ending.unwrap_or_else(|| from_wait_status(status));
    if let Ending::Signaled { signal, name } = &ending {
        // RLIMIT_CPU, the per-process fallback when there is no cgroup.
        if *signal == libc::SIGXCPU
            && !violations
                .iter()
                .any(|v| matches!(v, Violation::Cpu { .. }))
        {
            violations.push(Violation::Cpu {
                limit_s: cg
                    .as_ref()
                    .and_then(|c| c.cpu_time)
                    .map(|d| d.as_secs_f64())
                    .unwrap_or(0.0),
                used_s: usage_cg.cpu_usage_usec.unwrap_or(0) as f64 / 1e6,
            });
        }
        if *signal == libc::SIGSYS {
            violations.push(Violation::Seccomp {
                syscall: None,
                nr: None,
                signal: Some(name.clone()),
            });
        }
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Outcome {
        ending,
        violations,
        usage: Usage {
            wall_time_s: started.elapsed().as_secs_f64(),
            cpu_user_s: tv(ru.ru_utime),
            cpu_system_s: tv(ru.ru_stime),
            peak_rss_bytes: (ru.ru_maxrss.max(0) as u64) * 1024,
            peak_memory_bytes: cg.as_ref().map(|_| usage_cg.memory_peak_bytes),
            max_pids: cg.as_ref().map(|_| max_pids),
            cgroup_cpu_s: cg
                .as_ref()
                .and(usage_cg.cpu_usage_usec)
                .map(|us| us as f64 / 1e6),
        },
        stdout_bytes: out.stdout.bytes,
        stderr_bytes: out.stderr.bytes,
        truncated: out.truncated,
        stdout_ended_with_newline: out.stdout.ended_with_newline,
        interrupted_by,
        confined,
        denied_syscalls: watch.denied(),
        unreaped_init,
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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Src {
    Out,
    Err,
    Chan,
    Sig,
    Notify,
    In,
    InW,
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

fn from_wait_status(status: i32) -> Ending {
    if libc::WIFSIGNALED(status) {
        let s = libc::WTERMSIG(status);
        Ending::Signaled {
            signal: s,
            name: signal_name(s),
        }
    } else {
        let code = libc::WEXITSTATUS(status);
        if code == 125 {
            Ending::SetupFailed(SetupError::new(
                Step::Wait,
                "the sandbox init ended before reporting a status",
            ))
        } else {
            Ending::Exited { code }
        }
    }
}

pub fn signal_name(s: i32) -> String {
    Signal::try_from(s)
        .map(|x| x.as_str().to_string())
        .unwrap_or_else(|_| format!("SIG{s}"))
}

/// One `--stats` line: a sample of the run's cgroup.
fn write_sample(sink: &mut Option<crate::run::StatsSink>, t: Duration, u: &crate::cgroup::Usage) {
    use std::io::Write;
    let Some(sink) = sink.as_mut() else { return };
    let line = serde_json::json!({"t_s": t.as_secs_f64(), "usage": u}).to_string() + "\n";
    let _ = match sink {
        crate::run::StatsSink::Stderr => std::io::stderr().write_all(line.as_bytes()),
        crate::run::StatsSink::File(f) => f.write_all(line.as_bytes()),
    };
}
