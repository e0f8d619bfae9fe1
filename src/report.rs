//! The run report printed with `--json`, and maibox's exit codes.
//!
//! One builder ([`build`]) for every backend: the parts a run's policy, outcome and
//! front door decide are filled in here; what only the backend knows (the layers it
//! applied, its cgroup, seccomp and network facts) comes in as [`Facts`].

use crate::config::TrustLevel;
use crate::outcome::{DeniedCall, Ending, Outcome, Usage, Violation};
use crate::policy::Policy;
use serde::Serialize;

/// maibox's own exit codes (following `env`, `timeout` and `docker run`).
pub mod exit {
    /// The run hit its wall-clock limit.
    pub const TIMEOUT: i32 = 124;
    /// maibox refused or failed before the code ran: bad input, config, or setup.
    pub const MAIBOX_FAILED: i32 = 125;
    /// The interpreter exists but could not be executed.
    pub const CANNOT_EXECUTE: i32 = 126;
    /// The interpreter was not found inside the sandbox.
    pub const NOT_FOUND: i32 = 127;
}

#[derive(Debug, Serialize)]
pub struct Report {
    pub maibox_version: &'static str,
    pub run_id: String,
    /// Who isolated the run: `native` or `docker`.
    pub backend: crate::config::Backend,
    pub trust: TrustLevel,
    /// The exit code maibox itself returns.
    pub exit_code: i32,
    /// How the code ended.
    pub ending: Ending,
    pub violations: Vec<Violation>,
    pub usage: Usage,
    pub output: OutputReport,
    pub limits: crate::policy::Limits,
    /// Where the limits differ from the trust level's (host too small, overrides).
    pub adjustments: Vec<String>,
    pub network: NetworkReport,
    /// Whether the memory, CPU and pids limits were enforced by a cgroup.
    pub cgroup: CgroupReport,
    pub layers: Layers,
    pub interpreter: String,
    /// The static assessment of the code, and what it decided for the run.
    pub assessment: Option<crate::gate::AssessmentSummary>,
    pub decision: Option<crate::gate::Decision>,
    pub seccomp: SeccompReport,
    pub landlock: Option<crate::confine::LandlockOutcome>,
    pub setup_ms: f64,
    pub setup_steps_us: Vec<(String, u64)>,
    /// Docker backend: the engine, image, runtime and container of the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub docker: Option<EngineInfo>,
}

/// The Docker engine a run went to, and what it made of it.
#[derive(Debug, Clone, Serialize)]
pub struct EngineInfo {
    pub host: String,
    pub engine_version: String,
    pub api_version: String,
    pub image: String,
    /// The OCI runtime asked for; none: the engine's default.
    pub runtime: Option<String>,
    pub container_id: Option<String>,
    /// The engine's cgroup version ("1" or "2").
    pub cgroup_version: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct NetworkReport {
    pub mode: crate::config::NetworkMode,
    /// Allowlist mode: every request the proxy saw, allowed or refused, and why.
    pub proxy: Option<crate::net::ProxyReport>,
}

#[derive(Debug, Serialize)]
pub struct CgroupReport {
    pub enforced: bool,
    /// "v1" or "v2" when enforced.
    pub layout: Option<String>,
    /// Why limits are not enforced by a cgroup, when they are not.
    pub note: Option<String>,
    /// What bounded the run's memory.
    pub memory_bound: Bound,
    /// What bounded the run's CPU time (`none` when the level sets no `cpu_time`).
    pub cpu_time_bound: Bound,
}

/// What bounds one resource of a run.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    /// The run's cgroup: the sandbox as a whole.
    Cgroup,
    /// An rlimit on each process, without a cgroup: RLIMIT_DATA for memory,
    /// RLIMIT_CPU for CPU time. Each of the sandbox's processes may use it.
    PerProcess,
    /// Nothing (a layer switched off for a control run).
    None,
}

impl Bound {
    /// `cgroup` when a group enforced the run's limits, else `per_process` when the
    /// rlimits layer ran, else `none`.
    pub fn of(grouped: bool, rlimits: bool) -> Bound {
        match (grouped, rlimits) {
            (true, _) => Bound::Cgroup,
            (false, true) => Bound::PerProcess,
            (false, false) => Bound::None,
        }
    }
}

#[derive(Debug, Serialize)]
pub struct SeccompReport {
    pub enforced: bool,
    /// The trust level whose profile was used.
    pub profile: String,
    pub default_action: crate::confine::DenyAction,
    pub kill_on: Vec<String>,
    pub syscalls_allowed: usize,
    /// `--audit-syscalls`: denied calls went through the supervisor and are listed.
    pub audit_denials: bool,
    /// The calls denied with EPERM and how often (only with `audit_denials`).
    pub denied: Vec<DeniedCall>,
}

#[derive(Debug, Serialize)]
pub struct OutputReport {
    pub stdout_bytes: u64,
    pub stderr_bytes: u64,
    pub truncated: bool,
    pub limit_bytes: u64,
}

/// Which isolation layers this run had. Each is true only when it was applied.
#[derive(Debug, Clone, Serialize)]
pub struct Layers {
    pub user_ns: bool,
    pub pid_ns: bool,
    pub mount_ns: bool,
    pub net_ns: bool,
    pub nested_userns_blocked: bool,
    pub ipc_ns: bool,
    pub uts_ns: bool,
    pub cgroup_ns: bool,
    pub pivot_root: bool,
    pub read_only_root: bool,
    pub overlay_root: bool,
    pub proc_masks: bool,
    pub capabilities_dropped: bool,
    pub no_new_privs: bool,
    pub rlimits: bool,
    pub seccomp: bool,
    pub landlock: bool,
    pub cgroup_limits: bool,
    pub rootless: bool,
}

impl Layers {
    /// seccomp and Landlock are true only when the payload reported them enforced.
    pub fn confined(mut self, c: Option<&crate::outcome::Confined>) -> Layers {
        self.seccomp = c.map(|c| c.seccomp).unwrap_or(false);
        self.landlock = c
            .and_then(|c| c.landlock.as_ref())
            .map(|l| l.abi > 0)
            .unwrap_or(false);
        self
    }

    /// The layers the native engine applies for `p` (seccomp and Landlock once the
    /// payload confirms them: see [`Layers::confined`]).
    pub fn native(p: &Policy) -> Layers {
        use crate::policy::Layer;
        Layers {
            user_ns: true,
            pid_ns: true,
            mount_ns: true,
            net_ns: p.has(Layer::NetNs),
            nested_userns_blocked: p.has(Layer::NestedUserns),
            ipc_ns: p.has(Layer::IpcNs),
            uts_ns: p.has(Layer::UtsNs),
            cgroup_ns: p.has(Layer::CgroupNs),
            pivot_root: true,
            read_only_root: p.fs.read_only_root,
            overlay_root: p.fs.rootfs.is_some(),
            proc_masks: p.has(Layer::ProcMasks),
            capabilities_dropped: p.has(Layer::Capabilities),
            no_new_privs: p.has(Layer::NoNewPrivs),
            rlimits: p.has(Layer::Rlimits),
            seccomp: false,
            landlock: false,
            cgroup_limits: false,
            rootless: matches!(
                p.identity.mapping,
                crate::policy::IdMapping::Rootless { .. }
            ),
        }
    }
}

/// What the front door knows of a run before it starts, carried into its report.
#[derive(Debug, Clone, Default)]
pub struct RunInfo {
    pub run_id: String,
    pub assessment: Option<crate::gate::AssessmentSummary>,
    pub decision: Option<crate::gate::Decision>,
}

/// What only the backend knows of a run.
pub struct Facts {
    pub backend: crate::config::Backend,
    pub layers: Layers,
    pub cgroup: CgroupReport,
    pub seccomp: SeccompReport,
    pub landlock: Option<crate::confine::LandlockOutcome>,
    pub proxy: Option<crate::net::ProxyReport>,
    pub setup_ms: f64,
    pub setup_steps_us: Vec<(String, u64)>,
    pub docker: Option<EngineInfo>,
}

/// The report of a run.
pub fn build(policy: &Policy, outcome: &Outcome, info: RunInfo, facts: Facts) -> Report {
    Report {
        maibox_version: env!("CARGO_PKG_VERSION"),
        run_id: info.run_id,
        backend: facts.backend,
        trust: policy.trust,
        exit_code: exit_code(outcome),
        ending: outcome.ending.clone(),
        violations: outcome.violations.clone(),
        usage: outcome.usage.clone(),
        output: OutputReport {
            stdout_bytes: outcome.stdout_bytes,
            stderr_bytes: outcome.stderr_bytes,
            truncated: outcome.truncated,
            limit_bytes: policy.limits.output_bytes,
        },
        limits: policy.limits.clone(),
        adjustments: policy.adjustments.clone(),
        network: NetworkReport {
            mode: policy.network,
            proxy: facts.proxy,
        },
        cgroup: facts.cgroup,
        layers: facts.layers,
        interpreter: policy.interpreter.path.display().to_string(),
        assessment: info.assessment,
        decision: info.decision,
        seccomp: facts.seccomp,
        landlock: facts.landlock,
        setup_ms: facts.setup_ms,
        setup_steps_us: facts.setup_steps_us,
        docker: facts.docker,
    }
}

/// maibox's exit code for an outcome.
pub fn exit_code(o: &Outcome) -> i32 {
    if o.violations
        .iter()
        .any(|v| matches!(v, Violation::Timeout { .. }))
    {
        return exit::TIMEOUT;
    }
    match &o.ending {
        Ending::Exited { code } => *code,
        Ending::Signaled { signal, .. } => 128 + signal,
        Ending::ExecFailed { errno, .. } if *errno == libc::ENOENT => exit::NOT_FOUND,
        Ending::ExecFailed { .. } => exit::CANNOT_EXECUTE,
        Ending::SetupFailed(_) => exit::MAIBOX_FAILED,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(ending: Ending, violations: Vec<Violation>) -> Outcome {
        Outcome {
            violations,
            ..Outcome::ended(ending)
        }
    }

    #[test]
    fn exit_codes_follow_conventions() {
        assert_eq!(exit_code(&outcome(Ending::Exited { code: 3 }, vec![])), 3);
        let sig = Ending::Signaled {
            signal: 9,
            name: "SIGKILL".into(),
        };
        assert_eq!(exit_code(&outcome(sig.clone(), vec![])), 137);
        assert_eq!(
            exit_code(&outcome(sig, vec![Violation::Timeout { limit_s: 1.0 }])),
            124
        );
        let nf = Ending::ExecFailed {
            errno: libc::ENOENT,
            message: String::new(),
        };
        assert_eq!(exit_code(&outcome(nf, vec![])), 127);
    }
}
