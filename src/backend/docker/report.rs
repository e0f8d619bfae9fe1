//! The Docker run's report: the native schema, with `backend: "docker"`, the layers the
//! engine applied, and a `docker` object naming the engine, image and container.

use super::Applied;
use crate::policy::{Layer, Policy};
use crate::report::{CgroupReport, EngineInfo, Facts, Layers, SeccompReport};

pub fn engine_info(e: &super::client::Engine, p: &Policy) -> EngineInfo {
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

/// What the engine applied, as the report tells it.
pub fn facts(applied: Applied) -> Facts {
    // Nothing ran when the engine never got to apply anything.
    let layers = applied.layers.unwrap_or_else(none);
    let cgroup_version = applied
        .engine
        .as_ref()
        .and_then(|e| e.cgroup_version.clone());
    Facts {
        backend: crate::config::Backend::Docker,
        cgroup: CgroupReport {
            enforced: layers.cgroup_limits,
            layout: layers
                .cgroup_limits
                .then(|| cgroup_version.map(|v| format!("v{v}")))
                .flatten(),
            note: Some("limits enforced by the Docker engine".into()),
            // The engine's cgroup; the supervisor reads the CPU time from its stats.
            memory_bound: crate::report::Bound::of(layers.cgroup_limits, false),
            cpu_time_bound: crate::report::Bound::of(layers.cgroup_limits, false),
        },
        seccomp: SeccompReport {
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
        proxy: None,
        setup_ms: applied.setup_ms,
        setup_steps_us: applied.steps,
        docker: applied.engine,
    }
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
