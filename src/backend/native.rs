//! The native backend: maibox's own engine. It makes the run's allowlist proxy and
//! cgroup, has the engine build the sandbox ([`crate::engine::prepare`]), supervises the
//! code ([`crate::supervise`]) and hands the end of the sandbox to a cleaner
//! ([`crate::teardown`]) or does it inline. The cleaner is forked first, before the
//! run makes anything on the host, so that nothing of the run outlives a supervisor
//! killed at any point.

use super::{BeforeCode, Job};
use crate::cgroup::{self, CgroupError, Layout, RunCgroup};
use crate::config::NetworkMode;
use crate::engine::{self, StdinMode};
use crate::error::{SetupError, Step};
use crate::io::{Io, Notices, Stdin};
use crate::outcome::Outcome;
use crate::policy::{IdMapping, Layer, Policy};
use crate::report::{Bound, CgroupReport, Facts, Layers, SeccompReport};
use crate::supervise::signals::Forwarder;
use std::cell::{Cell, OnceCell};

/// The run's cgroup as the engine's callback leaves it: made while the sandbox builds
/// its root (see [`engine::prepare`]), so set once from inside the engine.
#[derive(Default)]
pub(crate) struct Group {
    pub made: OnceCell<Option<RunCgroup>>,
    pub note: OnceCell<Option<String>>,
    pub init: Cell<Option<nix::unistd::Pid>>,
    /// Where the run's groups go, detected before the cleaner is armed (or, when
    /// `None`, as the group is made).
    pub layout: Option<Layout>,
}

pub(crate) fn run(
    job: &Job,
    io: Io,
    notices: &mut Notices,
    before_code: &mut BeforeCode,
) -> (Outcome, Facts) {
    let signals = match io.forward_signals.then(Forwarder::install).transpose() {
        Ok(s) => s,
        Err(e) => return failed(job.policy, e),
    };
    let mut group = Group {
        layout: job.policy.has(Layer::CgroupLimits).then(cgroup::detect),
        ..Group::default()
    };
    let cleaner = crate::teardown::arm(&plan(job, group.layout.as_ref()));
    // Allowlist mode: the proxy's socket is bound before the sandbox is cloned (the
    // supervisor must still be single-threaded then); its thread starts after.
    let (with_proxy, proxy) = match allowlist_proxy(job) {
        Ok(p) => p,
        Err(e) => {
            if let Some(c) = cleaner {
                c.finish();
            }
            return failed(job.policy, e);
        }
    };
    let policy = with_proxy.as_ref().unwrap_or(job.policy);
    let ejob = engine_job(job, policy, &io.stdin);
    let mut make_group = |pid| {
        if let Some(c) = &cleaner {
            c.watch(pid);
        }
        make_group(policy, job, &group, notices, pid)
    };
    let mut meanwhile = || before_code.run();
    let prepared = engine::prepare(&ejob, &mut make_group, &mut meanwhile);
    let (outcome, setup, running) = match prepared {
        Ok(p) => supervise(policy, job, p, proxy, &group, io, signals),
        Err(e) => (Outcome::setup_failed(e), None, None),
    };
    let layout = group
        .made
        .get()
        .and_then(Option::as_ref)
        .map(|g| g.layout().name().to_string());
    let handed_off = cleaner.is_some() && job.defer_teardown;
    let outcome = end_sandbox(job, outcome, &mut group, handed_off, notices);
    let proxy = running.map(|p| p.stop());
    match cleaner {
        Some(c) if handed_off => c.release(),
        Some(c) => c.finish(),
        None => {}
    }
    let note = group.note.into_inner().flatten();
    let facts = facts(policy, &outcome, layout, note, proxy, setup);
    (outcome, facts)
}

/// In allowlist mode, the run's proxy (bound, not yet serving) and the policy that
/// points the sandbox at its socket; in the other modes, neither.
fn allowlist_proxy(
    job: &Job,
) -> Result<(Option<Policy>, Option<crate::net::PreparedProxy>), SetupError> {
    if job.policy.network != NetworkMode::Allowlist {
        return Ok((None, None));
    }
    let p = prepare_proxy(job)?;
    let mut with_proxy = job.policy.clone();
    with_proxy.proxy_socket = Some(p.socket_path().to_path_buf());
    Ok((Some(with_proxy), Some(p)))
}

/// What the engine builds from: the policy (with the proxy's socket, if any), the
/// code, and how its stdin is fed.
fn engine_job<'a>(job: &'a Job, policy: &'a Policy, stdin: &Stdin) -> engine::Job<'a> {
    let stdin = match stdin {
        Stdin::Null => StdinMode::Null,
        _ => StdinMode::Pump,
    };
    engine::Job {
        policy,
        script: &job.code.bytes,
        args: job.args,
        stdin,
        extra_fds: Vec::new(),
        adopt: false,
        spawner: job.spawner,
    }
}

type Supervised = (
    Outcome,
    Option<(f64, Vec<(String, u64)>)>,
    Option<crate::net::RunningProxy>,
);

/// The sandbox is ready: the proxy's thread starts, then the code, supervised.
fn supervise(
    policy: &Policy,
    job: &Job,
    prepared: engine::Prepared,
    proxy: Option<crate::net::PreparedProxy>,
    group: &Group,
    io: Io,
    signals: Option<Forwarder>,
) -> Supervised {
    job.timeline.mark("sandbox-setup");
    let running = match proxy.map(|p| p.start()).transpose() {
        Ok(r) => r,
        Err(e) => {
            // Fail closed: dropping `prepared` ends the waiting init, which the
            // caller then reaps.
            let init = prepared.pid;
            drop(prepared);
            let mut o = Outcome::setup_failed(SetupError::new(Step::Network, e.to_string()));
            o.unreaped_init = Some(init);
            return (o, None, None);
        }
    };
    let setup = (
        prepared.setup_time.as_secs_f64() * 1000.0,
        prepared.timings_us.clone(),
    );
    let limits = crate::supervise::Limits {
        timeout: policy.limits.timeout,
        output_bytes: policy.limits.output_bytes,
        seccomp: Some(crate::confine::notify::Classifier::new(&policy.seccomp)),
    };
    let cg = group
        .made
        .get()
        .and_then(Option::as_ref)
        .map(|g| crate::supervise::Cgroup {
            group: g,
            sample: std::time::Duration::from_millis(policy.cgroup.sample_ms),
            cpu_time: policy.limits.cpu_time,
        });
    let opts = crate::supervise::Options {
        limits: &limits,
        cgroup: cg,
        signals,
        started: None,
        done: None,
        timeline: job.timeline,
    };
    let outcome = crate::supervise::run(prepared, opts, io, &mut || {});
    job.timeline.mark("code");
    (outcome, Some(setup), running)
}

/// What the run will make on the host, named for the cleaner before any of it exists.
fn plan(job: &Job, layout: Option<&Layout>) -> crate::teardown::Plan {
    let groups = layout
        .map(|l| {
            let cfg = cgroup::delegation::for_caller(l, &job.policy.cgroup);
            RunCgroup::planned_dirs(l, &cfg, job.run_id)
        })
        .unwrap_or_default();
    let mut plan = crate::teardown::Plan {
        groups,
        ..Default::default()
    };
    if job.policy.network == NetworkMode::Allowlist {
        let dir = crate::net::run_socket_dir(&std::env::temp_dir(), job.run_id);
        plan.files.push(dir.join(crate::net::SOCKET_FILE));
        plan.dirs.push(dir);
    }
    plan
}

fn prepare_proxy(job: &Job) -> Result<crate::net::PreparedProxy, SetupError> {
    let tmp = std::env::temp_dir();
    crate::net::cleanup_stale(&tmp);
    let p = crate::net::prepare_for_run(job.net, &tmp, job.run_id)
        .map_err(|e| SetupError::new(Step::Network, e.to_string()))?;
    // The sandbox binds the socket as its namespace's root, an unprivileged host id:
    // it must be able to traverse (not list) the private directory.
    if let Some(dir) = p.socket_path().parent() {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o711));
    }
    Ok(p)
}

/// The engine's callback with the sandbox's host pid: makes the run's cgroup and
/// either moves the sandbox into it or returns the v1 `tasks` files through which the
/// sandbox joins it itself.
pub(crate) fn make_group(
    policy: &Policy,
    job: &Job,
    group: &Group,
    notices: &mut Notices,
    pid: nix::unistd::Pid,
) -> Result<engine::Joined, SetupError> {
    job.timeline.mark("clone");
    group.init.set(Some(pid));
    let (g, note) = make_cgroup(policy, group.layout.as_ref(), job.run_id, notices)?;
    let _ = group.note.set(note);
    let cg_err = |e: CgroupError| SetupError::new(Step::Cgroup, e.to_string());
    let tasks = match &g {
        Some(g) => {
            let f = g.self_attach_files().map_err(cg_err)?;
            if f.is_empty() {
                g.attach(pid.as_raw()).map_err(cg_err)?;
            }
            f
        }
        None => Vec::new(),
    };
    let limited = g.is_some();
    let _ = group.made.set(g);
    job.timeline.mark("cgroup");
    Ok(engine::Joined { tasks, limited })
}

/// The run's cgroup, or why there is none. As root a cgroup that cannot be made is
/// a refusal; a rootless caller without a delegated subtree runs with rlimits only
/// when `cgroup.allow_degraded` says so, and the report says it.
fn make_cgroup(
    policy: &Policy,
    layout: Option<&Layout>,
    run_id: &str,
    notices: &mut Notices,
) -> Result<(Option<RunCgroup>, Option<String>), SetupError> {
    if !policy.has(Layer::CgroupLimits) {
        return Ok((None, Some("switched off".into())));
    }
    let detected;
    let layout = match layout {
        Some(l) => l,
        None => {
            detected = cgroup::detect();
            &detected
        }
    };
    let cfg = cgroup::delegation::for_caller(layout, &policy.cgroup);
    if *layout != Layout::None {
        cgroup::cleanup_stale(layout, &cfg);
    }
    let limits = cgroup::Limits {
        memory_bytes: policy.limits.memory_bytes,
        cpus: policy.limits.cpus,
        pids: policy.limits.pids,
    };
    let rootless = matches!(policy.identity.mapping, IdMapping::Rootless { .. });
    match RunCgroup::create(layout, &cfg, run_id, limits) {
        // A rootless run in the subtree delegated to its caller says where it went.
        Ok(g) if cfg.parent != policy.cgroup.parent => {
            let note = format!("in the cgroup subtree delegated to this user: {}", cfg.parent);
            Ok((Some(g), Some(note)))
        }
        Ok(g) => Ok((Some(g), None)),
        Err(e) if rootless && policy.cgroup.allow_degraded => {
            let note = format!("degraded to rlimits (no writable cgroup for this user: {e})");
            notices.warn(format!(
                "memory and CPU limits are not enforced for the sandbox as a whole: {note}; each process is bounded instead (memory by RLIMIT_DATA, CPU time by RLIMIT_CPU), and there is no CPU quota"
            ));
            Ok((None, Some(note)))
        }
        Err(e) => Err(SetupError::new(
            Step::Cgroup,
            format!(
                "cannot create the run's cgroup under cgroup.parent {:?}: {e} (run as root, delegate that subtree to this user, or set cgroup.allow_degraded: true)",
                cfg.parent
            ),
        )),
    }
}

/// The sandbox's end once the code is gone: `handed_off` to the cleaner, or init
/// reaped and the cgroup removed here.
fn end_sandbox(
    job: &Job,
    mut outcome: Outcome,
    group: &mut Group,
    handed_off: bool,
    notices: &mut Notices,
) -> Outcome {
    let unreaped = outcome.unreaped_init.take();
    match (group.made.take().flatten(), handed_off) {
        (Some(g), true) => {
            g.hand_off();
            job.timeline.mark("teardown-handed-off");
        }
        (g, _) => {
            if let Some(pid) = unreaped.filter(|_| !job.defer_teardown || g.is_some()) {
                let _ = nix::sys::wait::waitpid(pid, None);
                job.timeline.mark("init-reaped");
            }
            if let Some(g) = g {
                if let Err(e) = g.remove() {
                    notices.warn(e.to_string());
                }
                job.timeline.mark("cgroup-remove");
            }
        }
    }
    outcome
}

fn failed(policy: &Policy, e: SetupError) -> (Outcome, Facts) {
    let outcome = Outcome::setup_failed(e);
    let facts = facts(policy, &outcome, None, None, None, None);
    (outcome, facts)
}

/// What the native engine applied, as the report tells it.
pub(crate) fn facts(
    policy: &Policy,
    outcome: &Outcome,
    layout: Option<String>,
    note: Option<String>,
    proxy: Option<crate::net::ProxyReport>,
    setup: Option<(f64, Vec<(String, u64)>)>,
) -> Facts {
    let (setup_ms, setup_steps_us) = setup.unwrap_or_default();
    let confined = outcome.confined.as_ref();
    Facts {
        backend: crate::config::Backend::Native,
        layers: Layers {
            cgroup_limits: layout.is_some(),
            ..Layers::native(policy).confined(confined)
        },
        cgroup: CgroupReport {
            enforced: layout.is_some(),
            memory_bound: Bound::of(layout.is_some(), policy.has(Layer::Rlimits)),
            cpu_time_bound: match policy.limits.cpu_time {
                Some(_) => Bound::of(layout.is_some(), policy.has(Layer::Rlimits)),
                None => Bound::None,
            },
            layout,
            note,
        },
        seccomp: SeccompReport {
            enforced: confined.map(|c| c.seccomp).unwrap_or(false),
            profile: policy.trust.to_string(),
            default_action: policy.seccomp.default_action,
            kill_on: policy.seccomp.kill_on.clone(),
            syscalls_allowed: crate::confine::allowed_syscalls(
                &policy.seccomp,
                crate::confine::NetAccess::Loopback,
            )
            .len(),
            audit_denials: policy.seccomp.audit_denials,
            denied: outcome.denied_syscalls.clone(),
        },
        landlock: confined.and_then(|c| c.landlock.clone()),
        proxy,
        setup_ms,
        setup_steps_us,
        docker: None,
    }
}
