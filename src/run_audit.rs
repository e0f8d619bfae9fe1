//! Each `maibox exec` in the audit log: a record before the code starts (so a crash
//! mid-run still leaves a trace) and one after it ends.

use crate::audit::{self, AuditConfig, AuditError, AuditLog, Opened};
use crate::gate::{AssessmentSummary, Decision};
use crate::policy::Policy;
use crate::report::Report;
use crate::run::Code;

/// Environment variable that points the audit log elsewhere (tests, per-project logs).
pub const DIR_ENV: &str = "MAIBOX_AUDIT_DIR";

/// Opens the log. `Ok(None)` only when the config makes the audit optional and the
/// log cannot be opened (the reason is printed).
pub fn open(cfg: &AuditConfig) -> Result<Option<AuditLog>, AuditError> {
    let mut cfg = cfg.clone();
    if let Some(d) = std::env::var_os(DIR_ENV).filter(|d| !d.is_empty()) {
        cfg.dir = Some(d.into());
    }
    match AuditLog::open_policy(&cfg)? {
        Opened::Log(l) => Ok(Some(*l)),
        Opened::Disabled(e) => {
            eprintln!(
                "maibox: warning: audit log disabled for this run (audit.required is false): {e}"
            );
            Ok(None)
        }
    }
}

pub fn start(
    log: &mut AuditLog,
    run_id: &str,
    policy: &Policy,
    code: &Code,
    assessment: &AssessmentSummary,
    decision: &Decision,
) -> Result<(), AuditError> {
    let text = String::from_utf8_lossy(&code.bytes);
    let path = (code.origin != "-" && code.origin != "-c").then(|| {
        std::fs::canonicalize(&code.origin)
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| code.origin.clone())
    });
    let info = log.code_info(path.as_deref(), &text)?;
    let uid = nix::unistd::getuid();
    let name = nix::unistd::User::from_uid(uid)
        .ok()
        .flatten()
        .map(|u| u.name);
    let override_reason = match decision {
        Decision::Overridden { reason, .. } => Some(reason.clone()),
        _ => None,
    };
    let start = audit::RunStart {
        run_id: run_id.to_string(),
        caller: audit::Caller {
            uid: uid.as_raw(),
            name,
        },
        trust_level: policy.trust.to_string(),
        code: info,
        assessment: audit::Assessment {
            verdict: assessment.verdict.to_string(),
            findings: assessment.findings.clone(),
        },
        override_reason,
        limits: serde_json::to_value(&policy.limits).unwrap_or_default(),
        layers: serde_json::to_value(crate::report::Layers::for_policy(policy)).unwrap_or_default(),
    };
    log.append_run_start(&start)?;
    Ok(())
}

pub fn end(log: &mut AuditLog, r: &Report) -> Result<(), AuditError> {
    let end = audit::RunEnd {
        run_id: r.run_id.clone(),
        // The network's verdicts ride along: in allowlist mode every request the proxy
        // allowed or refused becomes part of the signed record.
        exit: serde_json::json!({"exit_code": r.exit_code, "ending": r.ending, "network": r.network}),
        duration_ms: Some((r.usage.wall_time_s * 1000.0) as u64),
        usage: serde_json::to_value(&r.usage).unwrap_or_default(),
        violations: serde_json::to_value(&r.violations).unwrap_or_default(),
    };
    log.append_run_end(&end)?;
    Ok(())
}
