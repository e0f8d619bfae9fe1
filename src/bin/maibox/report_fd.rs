//! `maibox exec --report-fd N`: the machine-readable form of `exec` for programs that
//! wrap maibox (the Python package's fallback). stdout and stderr carry only the code's
//! output; the report, with maibox's notices, or the error that kept the code from
//! running, is one JSON line on descriptor N.

use crate::exec::{ExecArgs, OwnStdio};
use maibox::session::Error;
use maibox::{Config, Sample, Timeline};
use std::io::Write;
use std::os::fd::OwnedFd;

pub fn exec(a: ExecArgs, fd: OwnedFd, timeline: &Timeline) -> anyhow::Result<i32> {
    let mut out = std::fs::File::from(fd);
    let line = match run(&a, timeline) {
        Ok((report, code)) => (report, code),
        Err(e) => (error_json(&e), 125),
    };
    writeln!(out, "{}", line.0)?;
    Ok(line.1)
}

fn run(a: &ExecArgs, timeline: &Timeline) -> Result<(serde_json::Value, i32), anyhow::Error> {
    let (cfg, _) = Config::load(a.config.as_deref())?;
    let (code, from_stdin) = a.code()?;
    let sandbox = a.sandbox(cfg);
    let mut samples = Vec::new();
    let mut on_sample = |s: &Sample| samples.push(serde_json::to_value(s).unwrap_or_default());
    let own = OwnStdio::new();
    let mut io = own.io(from_stdin);
    io.samples = a.stats.is_some().then_some(&mut on_sample as _);
    let r = sandbox.run_timed(&code, &a.args, io, timeline)?;
    let mut report = serde_json::to_value(&r.report)?;
    report["notices"] = serde_json::to_value(&r.notices)?;
    report["stdout_ended_with_newline"] = r.stdout_ended_with_newline.into();
    if a.stats.is_some() {
        report["samples"] = samples.into();
    }
    Ok((report, r.report.exit_code))
}

/// `{"error": {"kind", "message", ...}}`, as the server's protocol says it.
fn error_json(e: &anyhow::Error) -> serde_json::Value {
    let (kind, extra) = match e.downcast_ref::<Error>() {
        Some(Error::Refused(r)) => (
            "refused",
            serde_json::json!({"verdict": r.verdict, "findings": r.assessment.findings}),
        ),
        Some(Error::Audit { .. }) => ("audit", serde_json::json!({})),
        _ => ("invalid", serde_json::json!({})),
    };
    let mut err = serde_json::json!({"kind": kind, "message": format!("{e:#}")});
    if let (Some(o), Some(x)) = (err.as_object_mut(), extra.as_object()) {
        o.extend(x.clone());
    }
    serde_json::json!({ "error": err })
}
