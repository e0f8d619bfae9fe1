//! Each run in the audit log: a record before the code starts (on disk, synced: a
//! crash mid-run still leaves a trace, and the code never starts without it) and one
//! after it ends.

use super::Code;
use crate::audit::{self, AuditConfig, AuditError, AuditLog, Opened};
use crate::gate::{AssessmentSummary, Decision};
use crate::policy::Policy;
use crate::report::{Layers, Report};
use crate::timeline::Timeline;
use std::sync::Mutex;

/// Environment variable that points the audit log elsewhere (tests, per-project logs).
pub const DIR_ENV: &str = "MAIBOX_AUDIT_DIR";

/// Opens the log. `Ok(Err(reason))` when the config makes the audit optional and the
/// log cannot be opened: the run goes on unrecorded, and the caller says why.
pub fn open(cfg: &AuditConfig) -> Result<Result<AuditLog, AuditError>, AuditError> {
    let mut cfg = cfg.clone();
    if let Some(d) = std::env::var_os(DIR_ENV).filter(|d| !d.is_empty()) {
        cfg.dir = Some(d.into());
    }
    match AuditLog::open_policy(&cfg)? {
        Opened::Log(l) => Ok(Ok(*l)),
        Opened::Disabled(e) => Ok(Err(e)),
    }
}

/// Who asked for a run, as the log records it.
#[derive(Debug, Clone)]
pub struct Caller {
    pub uid: u32,
    pub name: Option<String>,
    /// A server's name for how the run reached it (`served by PID ...`), if it did.
    pub via: Option<String>,
}

impl Caller {
    /// This process's user.
    pub fn this_process() -> Caller {
        let uid = nix::unistd::getuid();
        let name = nix::unistd::User::from_uid(uid)
            .ok()
            .flatten()
            .map(|u| u.name);
        Caller {
            uid: uid.as_raw(),
            name,
            via: None,
        }
    }
}

/// What the start record says.
pub struct Start<'a> {
    pub run_id: &'a str,
    pub policy: &'a Policy,
    pub layers: Layers,
    pub code: &'a Code,
    pub assessment: &'a AssessmentSummary,
    pub decision: &'a Decision,
    pub caller: &'a Caller,
}

pub fn start(log: &mut AuditLog, s: &Start) -> Result<(), AuditError> {
    let text = String::from_utf8_lossy(&s.code.bytes);
    let path = s.code.path.clone().or_else(|| {
        Code::names_file(&s.code.origin).then(|| {
            std::fs::canonicalize(&s.code.origin)
                .map(|p| p.display().to_string())
                .unwrap_or_else(|_| s.code.origin.clone())
        })
    });
    let info = log.code_info(path.as_deref(), &text)?;
    let override_reason = match s.decision {
        Decision::Overridden { reason, .. } => Some(reason.clone()),
        _ => None,
    };
    let start = audit::RunStart {
        run_id: s.run_id.to_string(),
        caller: audit::Caller {
            uid: s.caller.uid,
            name: s.caller.name.clone(),
            via: s.caller.via.clone(),
        },
        trust_level: s.policy.trust.to_string(),
        code: info,
        assessment: audit::Assessment {
            verdict: s.assessment.verdict.to_string(),
            findings: s.assessment.findings.clone(),
        },
        override_reason,
        limits: serde_json::to_value(&s.policy.limits).unwrap_or_default(),
        layers: serde_json::to_value(&s.layers).unwrap_or_default(),
    };
    log.append_run_start(&start)?;
    Ok(())
}

/// Records the run's end; with `defer_sync`, returns before the record is synced
/// (see [`AuditLog::append_unsynced`]).
pub fn end(
    log: &mut AuditLog,
    r: &Report,
    defer_sync: bool,
) -> Result<Option<audit::Unsynced>, AuditError> {
    let end = audit::RunEnd {
        run_id: r.run_id.clone(),
        // The network's verdicts ride along: in allowlist mode every request the proxy
        // allowed or refused becomes part of the signed record.
        // So do the layers the run had: the start record can only say what was asked.
        exit: serde_json::json!({"exit_code": r.exit_code, "ending": r.ending, "network": r.network, "layers": r.layers}),
        duration_ms: Some((r.usage.wall_time_s * 1000.0) as u64),
        usage: serde_json::to_value(&r.usage).unwrap_or_default(),
        violations: serde_json::to_value(&r.violations).unwrap_or_default(),
    };
    if defer_sync {
        return Ok(log.append_unsynced(audit::Event::run_end(&end)?)?.1);
    }
    log.append_run_end(&end)?;
    Ok(None)
}

/// How recording a run's end went.
#[derive(Default)]
pub(crate) struct Ended {
    /// Why the end could not be recorded, if it could not (the run did happen).
    pub problem: Option<String>,
    /// The end record, written but not yet synced.
    pub unsynced: Option<audit::Unsynced>,
}

/// The audit side of one run: the log, once opened, why recording the run's start
/// failed, if it did (then nothing ran), and why the log is off, if it is.
#[derive(Default)]
pub(crate) struct RunAudit {
    /// A log kept open by the caller (a server), used instead of opening one.
    shared: Option<std::sync::Arc<Mutex<AuditLog>>>,
    log: Mutex<Option<AuditLog>>,
    failed: Mutex<Option<(&'static str, AuditError)>>,
    pub disabled: Mutex<Option<AuditError>>,
}

impl RunAudit {
    pub fn with_log(shared: Option<std::sync::Arc<Mutex<AuditLog>>>) -> RunAudit {
        RunAudit {
            shared,
            ..Default::default()
        }
    }

    /// The work the backend does while the sandbox sets up: open the log, record the
    /// start.
    pub fn before_code<'a>(
        &'a self,
        cfg: &'a AuditConfig,
        s: Start<'a>,
        timeline: &'a Timeline,
    ) -> crate::backend::BeforeCode<'a> {
        crate::backend::BeforeCode::new(move || {
            if let Some(shared) = &self.shared {
                let r = start(&mut lock(shared), &s)
                    .map_err(|e| ("recording the run in the audit log (nothing ran)", e));
                timeline.mark("audit-start");
                return r.map_err(|(context, e)| {
                    let msg = format!("{context}: {e}");
                    *lock(&self.failed) = Some((context, e));
                    msg
                });
            }
            let r = match open(cfg) {
                Err(e) => Err(("opening the audit log", e)),
                Ok(Err(why)) => {
                    *lock(&self.disabled) = Some(why);
                    Ok(())
                }
                Ok(Ok(mut log)) => {
                    timeline.mark("audit-open");
                    let r = start(&mut log, &s)
                        .map_err(|e| ("recording the run in the audit log (nothing ran)", e));
                    *lock(&self.log) = Some(log);
                    r
                }
            };
            timeline.mark("audit-start");
            r.map_err(|(context, e)| {
                let msg = format!("{context}: {e}");
                *lock(&self.failed) = Some((context, e));
                msg
            })
        })
    }

    /// Records the run's end. An error when its start could not be recorded; `Ok`
    /// with a reason when the end could not be (the run did happen). In a log kept
    /// open by the caller (a server), the record is written but its sync is left to
    /// the returned handle, so the caller can answer its client first.
    pub fn end(
        &self,
        r: &Report,
        timeline: &Timeline,
    ) -> Result<Ended, (&'static str, AuditError)> {
        if let Some(e) = lock(&self.failed).take() {
            return Err(e);
        }
        let mut ended = Ended::default();
        let mut own = lock(&self.log);
        let mut shared = self.shared.as_ref().map(|s| lock(s));
        let defer_sync = shared.is_some();
        if let Some(log) = shared.as_deref_mut().or(own.as_mut()) {
            match end(log, r, defer_sync) {
                Ok(unsynced) => ended.unsynced = unsynced,
                Err(e) => {
                    ended.problem = Some(format!(
                        "the end of run {} could not be recorded in the audit log: {e}",
                        r.run_id
                    ))
                }
            }
        }
        timeline.mark("audit-end");
        Ok(ended)
    }
}

/// A poisoned lock only means another thread panicked while holding it; the record
/// it guards is still the one to use.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
