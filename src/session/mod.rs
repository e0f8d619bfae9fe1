//! One run, whole, in the order every front door needs it:
//!
//! ```text
//! assessment → gate → policy → audit start record (on disk, synced) → backend → audit end
//! ```
//!
//! [`Sandbox`] is the library's entry point: built from a [`Config`] and a trust level,
//! with the overrides the command line offers, it runs code and returns a [`Run`]. The
//! CLI's `exec`, the server and embedding programs all go through it, so none of them
//! can skip the gate or the audit.

pub mod audit;

pub use crate::code::{read_bytes, read_code, Code, InputError, Source, MAX_SCRIPT_BYTES};

use crate::assess::{AssessError, Assessment};
use crate::audit::AuditError;
use crate::backend::{Backend, Job};
use crate::config::{Config, NetworkMode, TrustLevel};
use crate::gate::{AssessmentSummary, Decision};
use crate::io::{Io, Notice, Notices};
use crate::policy::{Layer, Overrides, Policy, PolicyError};
use crate::report::{Report, RunInfo};
use crate::timeline::Timeline;
use crate::units::{ByteSize, Seconds};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Why a run did not happen. A run that started and then failed (a setup step, the
/// interpreter, a limit) is not an error: it comes back as a [`Run`] whose report says
/// how it ended.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Code(#[from] InputError),
    #[error(transparent)]
    Assess(#[from] AssessError),
    #[error(transparent)]
    Bandit(#[from] crate::assess::bandit::BanditError),
    /// The assessment reached the level's `refuse_at` and no override reason was given.
    #[error("refused: the assessment of {} says {} (this level refuses at {}): {}", .0.origin, .0.verdict, .0.refuse_at, .0.worst)]
    Refused(Box<Refusal>),
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// The audit log could not record the run's start: nothing ran.
    #[error("{context}: {source}")]
    Audit {
        context: &'static str,
        source: AuditError,
    },
    /// Options that cannot go together.
    #[error("{0}")]
    Invalid(String),
}

/// A refusal by the gate, with what the assessment found.
#[derive(Debug, Clone)]
pub struct Refusal {
    pub origin: String,
    pub verdict: crate::assess::Verdict,
    pub refuse_at: crate::assess::Verdict,
    /// The worst findings in one line (rule, title, line).
    pub worst: String,
    pub assessment: AssessmentSummary,
}

/// A finished run: its report (the JSON of `maibox exec --json`), the output where the
/// caller asked for it to be captured, and what maibox noted along the way.
#[derive(Debug)]
pub struct Run {
    pub report: Report,
    /// The code's stdout, where [`crate::io::Sink::Capture`] was asked for.
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// Whether the code's stdout ended with a newline (or was empty).
    pub stdout_ended_with_newline: bool,
    pub notices: Vec<Notice>,
    /// The whole assessment (the report carries its summary).
    pub assessment: Assessment,
    /// The audit end record, written but not yet synced, in a log kept open by the
    /// caller ([`Sandbox::audit_log`]); synced by [`Run::sync_audit`] or on drop.
    audit_unsynced: Option<crate::audit::Unsynced>,
}

impl Run {
    /// Makes the run's audit end record durable, where it was left unsynced so
    /// that the caller could answer first (a log kept open by the caller).
    pub fn sync_audit(&mut self) -> Result<(), crate::audit::AuditError> {
        self.audit_unsynced.take().map_or(Ok(()), |u| u.sync())
    }
}

/// What the gate decided for a run, and the policy it runs under.
pub(crate) struct Decided {
    pub assessment: Assessment,
    pub decision: Decision,
    pub policy: Policy,
}

/// One run once decided: its id, code and arguments, and its timeline.
pub(crate) struct Execution<'a> {
    pub decided: Decided,
    pub run_id: String,
    pub code: &'a Code,
    pub args: &'a [String],
    pub timeline: &'a Timeline,
}

/// A sandbox to run code in: a configuration, a trust level and the caller's
/// overrides. Reusable: each [`Sandbox::run`] builds a fresh sandbox, runs the code
/// once, and destroys it.
///
/// ```
/// use maibox::{Config, Sandbox, TrustLevel};
///
/// let config = Config::load(None)?.0;
/// let run = Sandbox::new(config)
///     .trust(TrustLevel::Untrusted)
///     .timeout(std::time::Duration::from_secs(5))
///     .run_code("print(6 * 7)")?;
/// assert_eq!(String::from_utf8_lossy(&run.stdout), "42\n");
/// assert_eq!(run.report.exit_code, 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct Sandbox {
    config: Arc<Config>,
    trust: TrustLevel,
    overrides: Overrides,
    override_reason: Option<String>,
    audit_syscalls: bool,
    bandit: bool,
    defer_teardown: bool,
    caller: Option<audit::Caller>,
    audit_log: Option<Arc<std::sync::Mutex<crate::audit::AuditLog>>>,
    spawner: Option<Arc<crate::engine::spawner::Spawner>>,
}

impl Sandbox {
    /// A sandbox at the configuration's default trust level.
    pub fn new(config: impl Into<Arc<Config>>) -> Sandbox {
        let config = config.into();
        Sandbox {
            trust: config.default_trust,
            config,
            overrides: Overrides::default(),
            override_reason: None,
            audit_syscalls: false,
            bandit: false,
            defer_teardown: false,
            caller: None,
            audit_log: None,
            spawner: None,
        }
    }

    pub fn trust(mut self, t: TrustLevel) -> Self {
        self.trust = t;
        self
    }

    /// Wall-clock limit (at most the level's, unless [`Sandbox::allow_raise`]).
    pub fn timeout(mut self, d: Duration) -> Self {
        self.overrides.timeout = Some(Seconds(d));
        self
    }

    /// CPU cores, e.g. 0.5.
    pub fn cpus(mut self, cpus: f64) -> Self {
        self.overrides.cpus = Some(cpus);
        self
    }

    /// Memory in bytes.
    pub fn memory(mut self, bytes: u64) -> Self {
        self.overrides.memory = Some(ByteSize(bytes));
        self
    }

    /// Processes and threads.
    pub fn pids(mut self, pids: u64) -> Self {
        self.overrides.pids = Some(pids);
        self
    }

    /// Cap on stdout and stderr together, in bytes.
    pub fn output_limit(mut self, bytes: u64) -> Self {
        self.overrides.output = Some(ByteSize(bytes));
        self
    }

    /// Let the limits above exceed the level's quota (recorded in the report).
    pub fn allow_raise(mut self, yes: bool) -> Self {
        self.overrides.allow_raise = yes;
        self
    }

    pub fn network(mut self, mode: NetworkMode) -> Self {
        self.overrides.network = Some(mode);
        self
    }

    /// Run on an overlay of this root image instead of the host's `/usr`.
    pub fn rootfs(mut self, dir: impl Into<PathBuf>) -> Self {
        self.overrides.rootfs = Some(dir.into());
        self
    }

    /// The Python interpreter (an ELF binary).
    pub fn interpreter(mut self, path: impl Into<PathBuf>) -> Self {
        self.overrides.interpreter = Some(path.into());
        self
    }

    /// Who isolates the code: the native engine (default) or a Docker engine.
    pub fn backend(mut self, b: Backend) -> Self {
        self.overrides.backend = Some(b);
        self
    }

    /// Docker backend: the image, whether to pull it, and the engine's OCI runtime.
    pub fn docker(mut self, image: Option<String>, pull: bool, runtime: Option<String>) -> Self {
        self.overrides.image = image;
        self.overrides.pull = pull;
        self.overrides.docker_runtime = runtime;
        self
    }

    /// Run even if the assessment refuses the code; the reason is recorded.
    pub fn override_reason(mut self, reason: impl Into<String>) -> Self {
        self.override_reason = Some(reason.into());
        self
    }

    /// Route the calls the seccomp filter denies through the supervisor and list them
    /// in the report (a diagnostic; each denial costs a round trip).
    pub fn audit_syscalls(mut self, yes: bool) -> Self {
        self.audit_syscalls = yes;
        self
    }

    /// Clone warm sandboxes through this spawner process (a server's; see
    /// [`crate::engine::spawner`]) rather than from the calling thread.
    pub fn spawner(mut self, s: Arc<crate::engine::spawner::Spawner>) -> Self {
        self.spawner = Some(s);
        self
    }

    pub(crate) fn spawner_ref(&self) -> Option<&crate::engine::spawner::Spawner> {
        self.spawner.as_deref()
    }

    /// Also run Bandit and merge its findings into the assessment.
    pub fn with_bandit(mut self, yes: bool) -> Self {
        self.bandit = yes;
        self
    }

    /// Switch a layer off: for controls in tests and the per-layer benchmark only. The
    /// run is weaker than its trust level says, and the report shows it.
    #[doc(hidden)]
    pub fn unsafe_disable_layer(mut self, l: Layer) -> Self {
        self.overrides.disable.push(l);
        self
    }

    /// Leave the sandbox's teardown to a cleaner process after `run` returns: for a
    /// caller that exits right after the run (the command line).
    #[doc(hidden)]
    pub fn defer_teardown(mut self, yes: bool) -> Self {
        self.defer_teardown = yes;
        self
    }

    /// Who the audit log names as the run's caller (default: this process's user).
    pub fn caller(mut self, c: audit::Caller) -> Self {
        self.caller = Some(c);
        self
    }

    /// Records runs in this log, kept open by the caller (a process that runs many
    /// sandboxes, such as a server), instead of opening the configured one per run.
    /// A run's end record is then written before [`Sandbox::run`] returns but synced
    /// by [`Run::sync_audit`] or when the [`Run`] is dropped, so that the caller can
    /// answer first.
    pub fn audit_log(mut self, log: Arc<std::sync::Mutex<crate::audit::AuditLog>>) -> Self {
        self.audit_log = Some(log);
        self
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Runs `code` with output captured in memory.
    pub fn run_code(&self, code: &str) -> Result<Run, Error> {
        self.run(&Code::inline(code)?, &[], Io::capture())
    }

    /// Runs `code` once in a fresh sandbox, with `args` as its `sys.argv[1:]`.
    pub fn run(&self, code: &Code, args: &[String], io: Io) -> Result<Run, Error> {
        self.run_timed(code, args, io, &Timeline::new())
    }

    /// As [`Sandbox::run`], marking the run's phases on `timeline` (`--timings`).
    pub fn run_timed(
        &self,
        code: &Code,
        args: &[String],
        mut io: Io,
        timeline: &Timeline,
    ) -> Result<Run, Error> {
        let mut notices = Notices::new(io.notices.take());
        let decided = self.decide(code, &mut notices, timeline)?;
        let run = Execution {
            decided,
            run_id: new_run_id(),
            code,
            args,
            timeline,
        };
        self.execute(run, io, notices, &crate::backend::run)
    }

    /// Everything before a sandbox is needed: the assessment, the gate and the
    /// policy of the level the gate decided.
    pub(crate) fn decide(
        &self,
        code: &Code,
        notices: &mut Notices,
        timeline: &Timeline,
    ) -> Result<Decided, Error> {
        crate::code::check_utf8(code)?;
        let assessment = self.assess(code)?;
        timeline.mark("assess");
        let decision = self.gate(code, &assessment, notices)?;
        let policy = self.policy(&decision, notices)?;
        timeline.mark("policy");
        Ok(Decided {
            assessment,
            decision,
            policy,
        })
    }

    /// The rest: the audit's start record on disk before the code starts (written
    /// while the backend builds the sandbox), the backend, the report, the end record.
    pub(crate) fn execute(
        &self,
        x: Execution,
        io: Io,
        mut notices: Notices,
        backend: &crate::backend::Runner<'_>,
    ) -> Result<Run, Error> {
        let Decided {
            assessment,
            decision,
            policy,
        } = x.decided;
        let summary = AssessmentSummary::of(&assessment);
        let info = RunInfo {
            run_id: x.run_id,
            assessment: Some(summary.clone()),
            decision: Some(decision.clone()),
        };
        let caller = self
            .caller
            .clone()
            .unwrap_or_else(audit::Caller::this_process);
        let start = audit::Start {
            run_id: &info.run_id,
            policy: &policy,
            layers: crate::backend::planned_layers(&policy),
            code: x.code,
            assessment: &summary,
            decision: &decision,
            caller: &caller,
        };
        let run_audit = audit::RunAudit::with_log(self.audit_log.clone());
        let before_code = run_audit.before_code(&self.config.audit, start, x.timeline);
        let job = Job {
            policy: &policy,
            code: x.code,
            args: x.args,
            run_id: &info.run_id,
            net: &self.config.network,
            defer_teardown: self.defer_teardown,
            timeline: x.timeline,
            spawner: self.spawner_ref(),
        };
        let (outcome, facts) = backend(&job, io, &mut notices, before_code);
        let report = crate::report::build(&policy, &outcome, info, facts);
        x.timeline.mark("report");
        let audit_unsynced = self.end(run_audit, &report, x.timeline, &mut notices)?;
        Ok(Run {
            audit_unsynced,
            report,
            stdout: outcome.stdout,
            stderr: outcome.stderr,
            stdout_ended_with_newline: outcome.stdout_ended_with_newline,
            notices: notices.all,
            assessment,
        })
    }

    /// The static assessment, with Bandit's findings merged in when asked for.
    pub fn assess(&self, code: &Code) -> Result<Assessment, Error> {
        let cfg = &self.config.assessment;
        let mut a = crate::assess::assess(&code.origin, &code.bytes, cfg)?;
        if self.bandit {
            crate::assess::bandit::with_bandit(&mut a, &code.bytes, cfg)?;
        }
        Ok(a)
    }

    /// What the assessment means for this run: a refusal is an error.
    fn gate(&self, code: &Code, a: &Assessment, n: &mut Notices) -> Result<Decision, Error> {
        let reason = self.override_reason.as_deref();
        let decision = crate::gate::decide(&self.config, self.trust, a, reason);
        match &decision {
            Decision::Refused { verdict, refuse_at } => {
                return Err(Error::Refused(Box::new(Refusal {
                    origin: code.origin.clone(),
                    verdict: *verdict,
                    refuse_at: *refuse_at,
                    worst: crate::gate::worst_findings(a, 3),
                    assessment: AssessmentSummary::of(a),
                })))
            }
            Decision::Overridden { reason, .. } => n.warn(format!(
                "running {} despite its {} verdict; override: {reason}",
                code.origin, a.verdict
            )),
            Decision::Escalated { from, trust } => n.note(format!(
                "the assessment says {}: running with {trust} settings instead of {from}",
                a.verdict
            )),
            Decision::Run { .. } => {}
        }
        Ok(decision)
    }

    fn policy(&self, decision: &Decision, n: &mut Notices) -> Result<Policy, Error> {
        self.policy_for(decision.trust().unwrap_or(self.trust), n)
    }

    /// The trust level this sandbox runs code at (before the gate's say).
    pub fn level(&self) -> TrustLevel {
        self.trust
    }

    /// The policy of a run at `trust` with this sandbox's overrides.
    pub(crate) fn policy_for(&self, trust: TrustLevel, n: &mut Notices) -> Result<Policy, Error> {
        if !self.overrides.disable.is_empty() {
            n.warn(format!(
                "layers switched off for this run: {:?}",
                self.overrides.disable
            ));
        }
        let mut policy = Policy::build(&self.config, trust, &self.overrides)?;
        if self.audit_syscalls {
            if policy.backend != Backend::Native {
                return Err(Error::Invalid(
                    "--audit-syscalls needs maibox's own seccomp filter: use it with --backend native (the docker backend applies the engine's profile)".into(),
                ));
            }
            policy.seccomp.audit_denials = true;
        }
        for note in &policy.adjustments {
            n.note(note.clone());
        }
        Ok(policy)
    }

    fn end(
        &self,
        run_audit: audit::RunAudit,
        report: &Report,
        timeline: &Timeline,
        n: &mut Notices,
    ) -> Result<Option<crate::audit::Unsynced>, Error> {
        if let Some(why) = run_audit.disabled.lock().ok().and_then(|mut d| d.take()) {
            n.warn(format!(
                "audit log disabled for this run (audit.required is false): {why}"
            ));
        }
        match run_audit.end(report, timeline) {
            Ok(ended) => {
                if let Some(problem) = ended.problem {
                    n.warn(problem);
                }
                Ok(ended.unsynced)
            }
            Err((context, source)) => Err(Error::Audit { context, source }),
        }
    }
}

pub fn new_run_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}
