//! One `maibox exec`: read the code, build the sandbox, supervise, report.

use crate::engine::{self, Job, SetupError, StdinMode};
use crate::monitor::{self, Ending, Outcome};
use crate::policy::Policy;
use crate::report::{self, Layers, OutputReport, Report};
use std::cell::OnceCell;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::path::Path;

/// Largest script accepted; anything bigger is almost certainly not a script.
pub const MAX_SCRIPT_BYTES: usize = 8 << 20;

#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("cannot read script {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("script {path} is a directory, not a Python file")]
    IsDir { path: String },
    #[error("script {path} is {size} bytes; the limit is {MAX_SCRIPT_BYTES} bytes")]
    TooBig { path: String, size: usize },
    #[error(
        "script {path} is not valid UTF-8 (invalid byte at offset {offset}); save it as UTF-8"
    )]
    NotUtf8 { path: String, offset: usize },
}

/// Where the code comes from.
pub enum Source<'a> {
    File(&'a Path),
    Inline(&'a str),
    Stdin,
}

pub struct Code {
    pub bytes: Vec<u8>,
    /// How the code was named by the caller (a path, `-c` or `-`).
    pub origin: String,
}

/// Reads the code and checks that it is UTF-8 (what the sandbox will run).
pub fn read_code(src: Source) -> Result<Code, InputError> {
    let code = read_bytes(src)?;
    if let Err(e) = std::str::from_utf8(&code.bytes) {
        return Err(InputError::NotUtf8 {
            path: code.origin,
            offset: e.valid_up_to(),
        });
    }
    Ok(code)
}

/// Reads the code as bytes, within the size limit (what `maibox assess` examines).
pub fn read_bytes(src: Source) -> Result<Code, InputError> {
    let (origin, bytes) = match src {
        Source::Inline(s) => ("-c".to_string(), s.as_bytes().to_vec()),
        Source::Stdin => {
            let mut b = Vec::new();
            std::io::stdin()
                .take(MAX_SCRIPT_BYTES as u64 + 1)
                .read_to_end(&mut b)
                .map_err(|source| InputError::Read {
                    path: "-".into(),
                    source,
                })?;
            ("-".to_string(), b)
        }
        Source::File(p) => {
            let path = p.display().to_string();
            if p.is_dir() {
                return Err(InputError::IsDir { path });
            }
            let f = std::fs::File::open(p).map_err(|source| InputError::Read {
                path: path.clone(),
                source,
            })?;
            let mut b = Vec::new();
            f.take(MAX_SCRIPT_BYTES as u64 + 1)
                .read_to_end(&mut b)
                .map_err(|source| InputError::Read {
                    path: path.clone(),
                    source,
                })?;
            (path, b)
        }
    };
    if bytes.len() > MAX_SCRIPT_BYTES {
        return Err(InputError::TooBig {
            path: origin,
            size: bytes.len(),
        });
    }
    Ok(Code { bytes, origin })
}

pub fn new_run_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

pub struct Run {
    pub outcome: Outcome,
    pub report: Report,
}

/// Runs `code` under `policy`. Setup failures come back as an outcome with
/// [`Ending::SetupFailed`], so that they are reported like any other ending.
/// What the caller knows about the run before it starts, carried into the report.
/// Where `--stats` samples go.
pub enum StatsSink {
    Stderr,
    File(std::fs::File),
}

pub struct Context {
    /// The allowlist proxy of this run, stopped (and reported) at the end.
    pub proxy: Option<crate::net::RunningProxy>,
    pub stats: Option<StatsSink>,
    pub run_id: String,
    pub assessment: Option<crate::gate::AssessmentSummary>,
    pub decision: Option<crate::gate::Decision>,
    /// Leave init's exit and the cgroup's removal to a cleaner process
    /// ([`crate::teardown`]), for a caller that exits right after the run: the
    /// CLI. A caller that lives on (a library user) keeps them inline.
    pub defer_teardown: bool,
}

/// What must be done before the code runs but need not delay the sandbox (the audit
/// log's start record, with its fsync): it runs once, while the sandbox builds its
/// view, or, on a run that ends before that, before `run` returns. If it fails, the
/// code never starts.
#[derive(Default)]
pub struct BeforeCode<'a> {
    work: Option<Box<dyn FnOnce() -> Result<(), String> + 'a>>,
}

impl<'a> BeforeCode<'a> {
    pub fn new(work: impl FnOnce() -> Result<(), String> + 'a) -> Self {
        BeforeCode {
            work: Some(Box::new(work)),
        }
    }

    fn run(&mut self) -> Result<(), SetupError> {
        match self.work.take() {
            Some(w) => w().map_err(|e| SetupError::new(crate::error::Step::Audit, e)),
            None => Ok(()),
        }
    }
}

pub fn run(
    policy: &Policy,
    code: &Code,
    args: &[String],
    stdin: StdinMode,
    ctx: Context,
    net: &crate::net::NetConfig,
    mut before_code: BeforeCode,
) -> Run {
    if policy.backend == crate::config::Backend::Docker {
        if let Err(e) = before_code.run() {
            return finish(policy, setup_failed(e), ctx, 0.0, Vec::new(), None, None);
        }
        return crate::backend::docker::run(policy, code, args, stdin, ctx);
    }
    let r = run_native(policy, code, args, stdin, ctx, net, &mut before_code);
    // A run that failed before the sandbox was far along still gets its start
    // recorded (ahead of the end the caller records).
    let _ = before_code.run();
    r
}

fn run_native(
    policy: &Policy,
    code: &Code,
    args: &[String],
    stdin: StdinMode,
    mut ctx: Context,
    net: &crate::net::NetConfig,
    before_code: &mut BeforeCode,
) -> Run {
    let run_id = ctx.run_id.clone();
    // Allowlist mode: the proxy's socket is bound before the sandbox is cloned (the
    // supervisor must still be single-threaded then); its thread starts after.
    let mut with_proxy;
    let mut proxy = None;
    let policy = if policy.network == crate::config::NetworkMode::Allowlist {
        crate::net::cleanup_stale(&std::env::temp_dir());
        match crate::net::prepare(net, &std::env::temp_dir()) {
            Ok(p) => {
                // The sandbox binds the socket as its namespace's root, an unprivileged
                // host id: it must be able to traverse (not list) the private directory.
                if let Some(dir) = p.socket_path().parent() {
                    use std::os::unix::fs::PermissionsExt;
                    let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o711));
                }
                with_proxy = policy.clone();
                with_proxy.proxy_socket = Some(p.socket_path().to_path_buf());
                proxy = Some(p);
                &with_proxy
            }
            Err(e) => {
                let e = SetupError::new(crate::error::Step::Network, e.to_string());
                return finish(policy, setup_failed(e), ctx, 0.0, Vec::new(), None, None);
            }
        }
    } else {
        policy
    };
    let job = Job {
        policy,
        script: &code.bytes,
        args,
        stdin,
    };
    let cg_err =
        |e: crate::cgroup::CgroupError| SetupError::new(crate::error::Step::Cgroup, e.to_string());
    // Made while the sandbox builds its root (see `engine::prepare`), so set once
    // from inside the engine.
    let group: OnceCell<Option<crate::cgroup::RunCgroup>> = OnceCell::new();
    let cgroup_note: OnceCell<Option<String>> = OnceCell::new();
    let init_pid = std::cell::Cell::new(None);
    let mut make_group = |pid: nix::unistd::Pid| -> Result<Vec<OwnedFd>, SetupError> {
        crate::timeline::mark("clone");
        init_pid.set(Some(pid));
        let (g, note) = make_cgroup(policy, &run_id)?;
        let _ = cgroup_note.set(note);
        let fds = match &g {
            Some(g) => {
                let f = g.self_attach_files().map_err(cg_err)?;
                if f.is_empty() {
                    g.attach(pid.as_raw()).map_err(cg_err)?;
                }
                f
            }
            None => Vec::new(),
        };
        let _ = group.set(g);
        crate::timeline::mark("cgroup");
        Ok(fds)
    };
    let mut cleaner = None;
    let defer = ctx.defer_teardown;
    // Forked while the code runs: the supervisor is idle then, where during setup it
    // is the longer of the two branches.
    let mut arm_cleaner = || {
        if let (true, Some(Some(g)), Some(pid)) = (defer, group.get(), init_pid.get()) {
            cleaner = crate::teardown::arm(pid, g.own_dirs());
        }
    };
    let mut meanwhile = || before_code.run();
    let (outcome, setup_ms, steps) = match engine::prepare(&job, &mut make_group, &mut meanwhile) {
        Ok(prepared) => {
            crate::timeline::mark("sandbox-setup");
            let running = match proxy.take().map(|p| p.start()).transpose() {
                Ok(r) => r,
                Err(e) => {
                    // Fail closed: dropping `prepared` ends the waiting init.
                    drop(prepared);
                    let e = SetupError::new(crate::error::Step::Network, e.to_string());
                    return finish(policy, setup_failed(e), ctx, 0.0, Vec::new(), None, None);
                }
            };
            ctx.proxy = running;
            let setup_ms = prepared.setup_time.as_secs_f64() * 1000.0;
            let steps = prepared.timings_us.clone();
            let limits = monitor::Limits {
                timeout: policy.limits.timeout,
                output_bytes: policy.limits.output_bytes,
                seccomp: Some(crate::confine::notify::Classifier::new(&policy.seccomp)),
            };
            let cg = group
                .get()
                .and_then(Option::as_ref)
                .map(|g| monitor::Cgroup {
                    group: g,
                    sample: std::time::Duration::from_millis(policy.cgroup.sample_ms),
                    cpu_time: policy.limits.cpu_time,
                    stats: ctx.stats.take(),
                });
            let outcome = monitor::run(prepared, &limits, cg, &mut arm_cleaner);
            crate::timeline::mark("code");
            (outcome, setup_ms, steps)
        }
        Err(e) => (setup_failed(e), 0.0, Vec::new()),
    };
    let mut outcome = outcome;
    let group = group.into_inner().flatten();
    let cgroup_note = cgroup_note.into_inner().flatten();
    let layout = group.as_ref().map(|g| g.layout().name().to_string());
    let unreaped = outcome.unreaped_init.take();
    match (group, cleaner) {
        (Some(g), Some(c)) => {
            g.hand_off();
            c.release();
            crate::timeline::mark("teardown-handed-off");
        }
        (group, _) => {
            if let Some(pid) = unreaped.filter(|_| !defer || group.is_some()) {
                let _ = nix::sys::wait::waitpid(pid, None);
                crate::timeline::mark("init-reaped");
            }
            if let Some(g) = group {
                if let Err(e) = g.remove() {
                    eprintln!("maibox: warning: {e}");
                }
                crate::timeline::mark("cgroup-remove");
            }
        }
    }
    finish(policy, outcome, ctx, setup_ms, steps, layout, cgroup_note)
}

/// The run's cgroup, or why there is none. As root a cgroup that cannot be made is
/// a refusal; a rootless caller without a delegated subtree runs with rlimits only
/// when `cgroup.allow_degraded` says so, and the report says it.
fn make_cgroup(
    policy: &Policy,
    run_id: &str,
) -> Result<(Option<crate::cgroup::RunCgroup>, Option<String>), SetupError> {
    use crate::cgroup::{self, Layout, RunCgroup};
    if !policy.has(crate::policy::Layer::CgroupLimits) {
        return Ok((None, Some("switched off".into())));
    }
    let layout = cgroup::detect();
    if layout != Layout::None {
        cgroup::cleanup_stale(&layout, &policy.cgroup);
    }
    let limits = cgroup::Limits {
        memory_bytes: policy.limits.memory_bytes,
        cpus: policy.limits.cpus,
        pids: policy.limits.pids,
    };
    let rootless = matches!(
        policy.identity.mapping,
        crate::policy::IdMapping::Rootless { .. }
    );
    match RunCgroup::create(&layout, &policy.cgroup, run_id, limits) {
        Ok(g) => Ok((Some(g), None)),
        Err(e) if rootless && policy.cgroup.allow_degraded => {
            let note = format!("degraded to rlimits (no writable cgroup for this user: {e})");
            eprintln!("maibox: warning: memory and CPU limits are not enforced: {note}");
            Ok((None, Some(note)))
        }
        Err(e) => Err(SetupError::new(
            crate::error::Step::Cgroup,
            format!(
                "cannot create the run's cgroup under cgroup.parent {:?}: {e} (run as root, delegate that subtree to this user, or set cgroup.allow_degraded: true)",
                policy.cgroup.parent
            ),
        )),
    }
}

fn finish(
    policy: &Policy,
    outcome: Outcome,
    mut ctx: Context,
    setup_ms: f64,
    steps: Vec<(String, u64)>,
    cgroup_layout: Option<String>,
    cgroup_note: Option<String>,
) -> Run {
    let run_id = ctx.run_id.clone();
    let proxy_report = ctx.proxy.take().map(|p| p.stop());
    let report = Report {
        maibox_version: env!("CARGO_PKG_VERSION"),
        run_id,
        backend: crate::config::Backend::Native,
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
        network: crate::report::NetworkReport {
            mode: policy.network,
            proxy: proxy_report,
        },
        cgroup: crate::report::CgroupReport {
            enforced: cgroup_layout.is_some(),
            layout: cgroup_layout.clone(),
            note: cgroup_note,
        },
        layers: Layers {
            cgroup_limits: cgroup_layout.is_some(),
            ..Layers::for_policy(policy).confined(outcome.confined.as_ref())
        },
        interpreter: policy.interpreter.path.display().to_string(),
        seccomp: crate::report::SeccompReport {
            enforced: outcome
                .confined
                .as_ref()
                .map(|c| c.seccomp)
                .unwrap_or(false),
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
        landlock: outcome.confined.as_ref().and_then(|c| c.landlock.clone()),
        assessment: ctx.assessment,
        decision: ctx.decision,
        setup_ms,
        setup_steps_us: steps,
        docker: None,
    };
    Run { outcome, report }
}

fn setup_failed(e: SetupError) -> Outcome {
    Outcome {
        ending: Ending::SetupFailed(e),
        violations: Vec::new(),
        usage: Default::default(),
        stdout_bytes: 0,
        stderr_bytes: 0,
        truncated: false,
        stdout_ended_with_newline: true,
        interrupted_by: None,
        confined: None,
        denied_syscalls: Vec::new(),
        unreaped_init: None,
    }
}
