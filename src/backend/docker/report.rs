//! The Docker run's report: the native schema, with `backend: "docker"`, the layers the
//! engine applied, and a `docker` object naming the engine, image and container.

use super::Applied;
use crate::monitor::Outcome;
use crate::policy::{Layer, Policy};
use crate::report::{self, Layers, OutputReport, Report};
use crate::run::{Context, Run};
use serde::Serialize;

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

impl EngineInfo {
    pub fn of(e: &super::client::Engine, p: &Policy) -> EngineInfo {
        EngineInfo {
            host: e.host.clone(),
            engine_version: e.version.clone(),
            api_version: e.api_version.clone(),
            image: p.docker.image.clone(),
            runtime: p.docker.runtime.clone(),
            container_id: None,
            cgroup_version: e.cgroup_version.clone(),
        }
    }
}

/// The layers the policy asks the engine for (what the audit log records before the
/// run; the report has what the engine actually applied).
pub fn planned_layers(p: &Policy) -> Layers {
    Layers {
        user_ns: false,
        pid_ns: true,
        mount_ns: true,
        net_ns: p.has(Layer::NetNs),
        nested_userns_blocked: p.has(Layer::Seccomp) && p.has(Layer::Capabilities),
        ipc_ns: true,
        uts_ns: true,
        cgroup_ns: true,
        pivot_root: true,
        read_only_root: p.fs.read_only_root,
        overlay_root: false,
        proc_masks: true,
        capabilities_dropped: p.has(Layer::Capabilities),
        no_new_privs: p.has(Layer::NoNewPrivs),
        rlimits: p.has(Layer::Rlimits),
        seccomp: p.has(Layer::Seccomp),
        landlock: false,
        cgroup_limits: p.has(Layer::CgroupLimits),
        rootless: false,
    }
}

pub fn finish(policy: &Policy, outcome: Outcome, ctx: Context, applied: Applied) -> Run {
    // Nothing ran when the engine never got to apply anything.
    let layers = applied.layers.unwrap_or_else(none);
    let cgroup_version = applied
        .engine
        .as_ref()
        .and_then(|e| e.cgroup_version.clone());
    let report = Report {
        maibox_version: env!("CARGO_PKG_VERSION"),
        run_id: ctx.run_id,
        backend: crate::config::Backend::Docker,
        trust: policy.trust,
        exit_code: report::exit_code(&outcome),
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
        network: report::NetworkReport {
            mode: policy.network,
            proxy: None,
        },
        cgroup: report::CgroupReport {
            enforced: layers.cgroup_limits,
            layout: layers
                .cgroup_limits
                .then(|| cgroup_version.map(|v| format!("v{v}")))
                .flatten(),
            note: Some("limits enforced by the Docker engine".into()),
        },
        interpreter: policy.interpreter.path.display().to_string(),
        seccomp: report::SeccompReport {
            enforced: layers.seccomp,
            profile: "docker-default".into(),
            default_action: crate::confine::DenyAction::Errno,
            kill_on: Vec::new(),
            // The engine's profile is not listed through its API.
            syscalls_allowed: 0,
            audit_denials: false,
            denied: Vec::new(),
        },
        layers,
        landlock: None,
        assessment: ctx.assessment,
        decision: ctx.decision,
        setup_ms: applied.setup_ms,
        setup_steps_us: applied.steps,
        docker: applied.engine,
    };
    Run { outcome, report }
}

fn none() -> Layers {
    Layers {
        user_ns: false,
        pid_ns: false,
        mount_ns: false,
        net_ns: false,
        nested_userns_blocked: false,
        ipc_ns: false,
        uts_ns: false,
        cgroup_ns: false,
        pivot_root: false,
        read_only_root: false,
        overlay_root: false,
        proc_masks: false,
        capabilities_dropped: false,
        no_new_privs: false,
        rlimits: false,
        seccomp: false,
        landlock: false,
        cgroup_limits: false,
        rootless: false,
    }
}
