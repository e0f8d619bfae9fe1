//! How a run ended and what it used: what a supervisor (the native one or the Docker
//! backend's) hands back, and what the report is built from.

use crate::error::{SetupError, Step};
use nix::sys::signal::Signal;
use serde::{Deserialize, Serialize};

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
    /// The caller went away before the run ended (a server's client disconnected):
    /// the sandbox was ended.
    Cancelled,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Ending {
    Exited { code: i32 },
    Signaled { signal: i32, name: String },
    ExecFailed { errno: i32, message: String },
    SetupFailed(SetupError),
}

impl Ending {
    /// How a process ended, from its wait status. Init's own 125 means it died before
    /// it could say why (its reasons otherwise come over the channel).
    pub fn from_wait_status(status: i32) -> Ending {
        if libc::WIFSIGNALED(status) {
            return Ending::signaled(libc::WTERMSIG(status));
        }
        match libc::WEXITSTATUS(status) {
            125 => Ending::SetupFailed(SetupError::new(
                Step::Wait,
                "the sandbox init ended before reporting a status",
            )),
            code => Ending::Exited { code },
        }
    }

    pub fn signaled(signal: i32) -> Ending {
        Ending::Signaled {
            signal,
            name: signal_name(signal),
        }
    }
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

/// What the payload was confined with, as the sandbox reported it.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Confined {
    pub landlock: Option<crate::confine::LandlockOutcome>,
    pub seccomp: bool,
    /// The seccomp filter's notification listener, which the payload hands to the
    /// supervisor (never across exec: see `install_filter_listening`).
    #[serde(skip)]
    pub listener: Option<std::sync::Arc<std::os::fd::OwnedFd>>,
}

/// A syscall denied (EPERM) during the run, and how often.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct DeniedCall {
    pub syscall: String,
    pub nr: i64,
    pub count: u64,
}

#[derive(Debug, Clone)]
pub struct Outcome {
    pub ending: Ending,
    pub violations: Vec<Violation>,
    pub usage: Usage,
    pub stdout_bytes: u64,
    pub stderr_bytes: u64,
    /// The output itself, where the caller's sink was [`crate::io::Sink::Capture`].
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub truncated: bool,
    pub stdout_ended_with_newline: bool,
    pub interrupted_by: Option<i32>,
    /// What the payload was confined with, as init reported it.
    pub confined: Option<Confined>,
    /// Calls the filter denied with EPERM, when they were routed to the supervisor
    /// (`--audit-syscalls`).
    pub denied_syscalls: Vec<DeniedCall>,
    /// The sandbox's init when the run ended before it was reaped: its payload is
    /// gone and everything else was sent SIGKILL, but it may still be tearing down
    /// the namespaces. The caller reaps it (see [`crate::teardown`]).
    pub unreaped_init: Option<nix::unistd::Pid>,
}

impl Outcome {
    /// A run that ended before any code ran.
    pub fn setup_failed(e: SetupError) -> Outcome {
        Outcome::ended(Ending::SetupFailed(e))
    }

    /// A run that ended so, with nothing else to tell.
    pub fn ended(ending: Ending) -> Outcome {
        Outcome {
            ending,
            violations: Vec::new(),
            usage: Usage::default(),
            stdout_bytes: 0,
            stderr_bytes: 0,
            stdout: Vec::new(),
            stderr: Vec::new(),
            truncated: false,
            stdout_ended_with_newline: true,
            interrupted_by: None,
            confined: None,
            denied_syscalls: Vec::new(),
            unreaped_init: None,
        }
    }

    pub fn has(&self, pred: impl Fn(&Violation) -> bool) -> bool {
        self.violations.iter().any(pred)
    }

    /// The violations an ending by signal implies, where no other path reported
    /// them: SIGXCPU is RLIMIT_CPU (the per-process fallback when there is no
    /// cgroup), SIGSYS a kill by the seccomp filter in the kernel.
    pub fn signal_violations(&mut self, cpu_limit_s: f64, cpu_used_s: f64) {
        let Ending::Signaled { signal, name } = &self.ending else {
            return;
        };
        if *signal == libc::SIGXCPU && !self.has(|v| matches!(v, Violation::Cpu { .. })) {
            self.violations.push(Violation::Cpu {
                limit_s: cpu_limit_s,
                used_s: cpu_used_s,
            });
        }
        if *signal == libc::SIGSYS {
            self.violations.push(Violation::Seccomp {
                syscall: None,
                nr: None,
                signal: Some(name.clone()),
            });
        }
    }
}

pub fn signal_name(s: i32) -> String {
    Signal::try_from(s)
        .map(|x| x.as_str().to_string())
        .unwrap_or_else(|_| format!("SIG{s}"))
}
