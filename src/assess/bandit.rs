//! `--with bandit`: Bandit's findings merged into an assessment.
//!
//! Bandit runs as a separate program (`bandit -f json -q FILE`) on a private
//! copy of the exact bytes that were assessed, so what Bandit reads is what
//! maibox assessed and will run. A Bandit test with a maibox counterpart
//! (B602 and MB602) becomes that maibox rule, with maibox's severity, and is
//! dropped when maibox already reported it on the same line; any other test
//! is kept as `bandit:B###` with Bandit's severity on maibox's scale (Bandit
//! never says BLOCKED). The verdict is folded again over all findings.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde::Deserialize;

use super::{fold_verdict, rules, shorten, AssessConfig, Assessment, Finding, Verdict};

/// Environment variable naming the Bandit executable to use.
pub const BANDIT_ENV: &str = "MAIBOX_BANDIT";

/// Prefix of the ids of Bandit tests that maibox has no rule for.
pub const ID_PREFIX: &str = "bandit:";

#[derive(Debug, thiserror::Error)]
pub enum BanditError {
    #[error("Bandit is not installed: pip install bandit, or drop --with bandit")]
    NotInstalled,
    #[error("{BANDIT_ENV}={path} is not an executable file: point it at Bandit's `bandit` script, or unset it to look on PATH")]
    BadOverride { path: String },
    #[error("could not write the code for Bandit to a temporary file ({0}); check that $TMPDIR is writable")]
    TempFile(std::io::Error),
    #[error("could not run {program}: {source}")]
    Spawn {
        program: String,
        source: std::io::Error,
    },
    #[error("{program} failed ({status}) without a report: {stderr}")]
    Failed {
        program: String,
        status: String,
        stderr: String,
    },
    #[error("{program} printed something other than its JSON report ({reason}); is it Bandit?")]
    BadReport { program: String, reason: String },
}

/// One result of Bandit's JSON report (the fields maibox uses).
#[derive(Debug, Clone, Deserialize)]
pub struct BanditIssue {
    pub test_id: String,
    pub test_name: String,
    pub issue_severity: String,
    pub issue_confidence: String,
    pub issue_text: String,
    pub line_number: usize,
    #[serde(default)]
    pub col_offset: usize,
    #[serde(default)]
    pub issue_cwe: Option<BanditCwe>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct BanditCwe {
    pub id: u32,
}

#[derive(Deserialize)]
struct Report {
    results: Vec<BanditIssue>,
}

/// Runs Bandit over `source` and merges its findings into `a`.
pub fn with_bandit(
    a: &mut Assessment,
    source: &[u8],
    cfg: &AssessConfig,
) -> Result<(), BanditError> {
    let issues = run_bandit(source)?;
    merge(a, source, &issues, cfg);
    Ok(())
}

/// Where Bandit is: `$MAIBOX_BANDIT`, else `bandit` on PATH, else
/// `python3 -m bandit` (whose absence is told apart when it runs).
fn locate() -> Result<(PathBuf, Vec<&'static str>), BanditError> {
    if let Some(p) = std::env::var_os(BANDIT_ENV).filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        if !is_executable(&p) {
            return Err(BanditError::BadOverride {
                path: p.display().to_string(),
            });
        }
        return Ok((p, vec![]));
    }
    if let Some(p) = on_path("bandit") {
        return Ok((p, vec![]));
    }
    match on_path("python3") {
        Some(py) => Ok((py, vec!["-m", "bandit"])),
        None => Err(BanditError::NotInstalled),
    }
}

fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Runs Bandit on a private temporary copy of `source`.
pub fn run_bandit(source: &[u8]) -> Result<Vec<BanditIssue>, BanditError> {
    let (program, pre) = locate()?;
    let mut file = tempfile::Builder::new()
        .prefix("maibox-bandit-")
        .suffix(".py")
        .tempfile()
        .map_err(BanditError::TempFile)?;
    file.write_all(source).map_err(BanditError::TempFile)?;
    file.flush().map_err(BanditError::TempFile)?;
    let out = Command::new(&program)
        .args(&pre)
        .args(["-f", "json", "-q"])
        .arg(file.path())
        .stdin(Stdio::null())
        .output()
        .map_err(|source| BanditError::Spawn {
            program: program.display().to_string(),
            source,
        })?;
    parse_output(&program.display().to_string(), &out)
}

fn parse_output(program: &str, out: &Output) -> Result<Vec<BanditIssue>, BanditError> {
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.contains("No module named bandit") {
        return Err(BanditError::NotInstalled);
    }
    // Bandit exits 1 when it found issues: the report, not the status, says
    // whether it worked.
    let text = String::from_utf8_lossy(&out.stdout);
    if text.trim().is_empty() {
        return Err(BanditError::Failed {
            program: program.to_string(),
            status: out.status.to_string(),
            stderr: shorten(stderr.trim(), 400),
        });
    }
    serde_json::from_str::<Report>(&text)
        .map(|r| r.results)
        .map_err(|e| BanditError::BadReport {
            program: program.to_string(),
            reason: e.to_string(),
        })
}

/// Bandit's severity on maibox's scale.
fn severity(bandit: &str) -> Verdict {
    match bandit.to_ascii_uppercase().as_str() {
        "HIGH" => Verdict::High,
        "MEDIUM" => Verdict::Medium,
        _ => Verdict::Low,
    }
}

/// Adds Bandit's issues to `a` (see the module doc) and folds the verdict again.
pub fn merge(a: &mut Assessment, source: &[u8], issues: &[BanditIssue], cfg: &AssessConfig) {
    let text = String::from_utf8_lossy(source);
    let lines: Vec<&str> = text.lines().collect();
    for issue in issues {
        let Some(f) = finding_of(issue, &lines, cfg) else {
            continue;
        };
        let seen = a
            .findings
            .iter()
            .any(|g| g.rule == f.rule && g.line == f.line);
        if !seen {
            a.findings.push(f);
        }
    }
    a.findings
        .sort_by(|x, y| (x.line, x.column, &x.rule).cmp(&(y.line, y.column, &y.rule)));
    if !a.tools.iter().any(|t| t == "bandit") {
        a.tools.push("bandit".to_string());
    }
    a.verdict = fold_verdict(&a.findings, cfg);
}

fn finding_of(issue: &BanditIssue, lines: &[&str], cfg: &AssessConfig) -> Option<Finding> {
    let own = rules::rules()
        .iter()
        .find(|r| r.bandit == Some(issue.test_id.as_str()));
    let (rule, default, title, cwe) = match own {
        Some(r) => (
            r.id.to_string(),
            r.severity,
            r.title.to_string(),
            r.cwe.map(str::to_string),
        ),
        None => (
            format!("{ID_PREFIX}{}", issue.test_id),
            severity(&issue.issue_severity),
            issue.test_name.replace('_', " "),
            issue.issue_cwe.as_ref().map(|c| format!("CWE-{}", c.id)),
        ),
    };
    if cfg.is_disabled(&rule) {
        return None;
    }
    let line = issue.line_number.max(1);
    Some(Finding {
        severity: cfg.severity_of(&rule, default),
        title,
        line,
        column: issue.col_offset + 1,
        snippet: lines
            .get(line - 1)
            .map(|l| shorten(l.trim(), 120))
            .unwrap_or_default(),
        detail: format!(
            "Bandit {} ({} severity, {} confidence): {}",
            issue.test_id,
            issue.issue_severity.to_ascii_lowercase(),
            issue.issue_confidence.to_ascii_lowercase(),
            issue.issue_text
        ),
        cwe,
        bandit: Some(issue.test_id.clone()),
        rule,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assess::assess;

    fn issue(id: &str, sev: &str, line: usize) -> BanditIssue {
        BanditIssue {
            test_id: id.into(),
            test_name: "some_test".into(),
            issue_severity: sev.into(),
            issue_confidence: "HIGH".into(),
            issue_text: "text".into(),
            line_number: line,
            col_offset: 0,
            issue_cwe: Some(BanditCwe { id: 327 }),
        }
    }

    #[test]
    fn merge_maps_dedups_and_refolds() {
        let src = b"import os, hashlib\nos.system('ls')\nhashlib.md5(b'x')\n";
        let cfg = AssessConfig::default();
        let mut a = assess("t.py", src, &cfg).unwrap();
        assert_eq!(a.verdict, Verdict::Medium);
        let before = a.findings.len();
        merge(
            &mut a,
            src,
            &[
                // Same as maibox's MB605 on line 2: not added twice.
                issue("B605", "LOW", 2),
                // maibox has MB602 but did not see it here: added as MB602.
                issue("B602", "LOW", 1),
                // No maibox rule: kept as bandit:B324, HIGH.
                issue("B324", "HIGH", 3),
            ],
            &cfg,
        );
        assert_eq!(a.findings.len(), before + 2, "{:?}", a.findings);
        let b324 = a.findings.iter().find(|f| f.rule == "bandit:B324").unwrap();
        assert_eq!(b324.severity, Verdict::High);
        assert_eq!(b324.cwe.as_deref(), Some("CWE-327"));
        assert_eq!(b324.snippet, "hashlib.md5(b'x')");
        let mb602 = a.findings.iter().find(|f| f.rule == "MB602").unwrap();
        assert_eq!(mb602.severity, Verdict::Medium, "maibox's severity");
        assert_eq!(a.verdict, Verdict::High);
        assert_eq!(a.tools, vec!["bandit".to_string()]);
        let lines: Vec<usize> = a.findings.iter().map(|f| f.line).collect();
        assert!(lines.windows(2).all(|w| w[0] <= w[1]), "{lines:?}");
    }

    #[test]
    fn config_applies_to_bandit_ids() {
        let src = b"import hashlib\nhashlib.md5(b'x')\n";
        let mut cfg = AssessConfig::default();
        cfg.severity.insert("bandit:B324".into(), Verdict::Low);
        let mut a = assess("t.py", src, &cfg).unwrap();
        merge(&mut a, src, &[issue("B324", "HIGH", 2)], &cfg);
        assert_eq!(a.verdict, Verdict::Low);
        cfg.disabled.push("bandit:B324".into());
        let mut a = assess("t.py", src, &cfg).unwrap();
        merge(&mut a, src, &[issue("B324", "HIGH", 2)], &cfg);
        assert!(a.findings.is_empty());
        assert!(cfg.unknown_rule_ids().is_empty());
    }

    #[test]
    fn output_errors_are_told_apart() {
        use std::os::unix::process::ExitStatusExt;
        let out = |code: i32, stdout: &str, stderr: &str| Output {
            status: std::process::ExitStatus::from_raw(code << 8),
            stdout: stdout.as_bytes().to_vec(),
            stderr: stderr.as_bytes().to_vec(),
        };
        let missing = out(1, "", "/usr/bin/python3: No module named bandit\n");
        assert!(matches!(
            parse_output("python3", &missing),
            Err(BanditError::NotInstalled)
        ));
        assert!(matches!(
            parse_output("bandit", &out(2, "", "usage: bandit ...")),
            Err(BanditError::Failed { .. })
        ));
        assert!(matches!(
            parse_output("bandit", &out(0, "hello", "")),
            Err(BanditError::BadReport { .. })
        ));
        let ok = r#"{"errors": [], "results": [{"test_id": "B101", "test_name": "assert_used", "issue_severity": "LOW", "issue_confidence": "HIGH", "issue_text": "assert", "line_number": 1, "col_offset": 0, "issue_cwe": {"id": 703, "link": "x"}, "code": "1 assert x\n"}]}"#;
        let issues = parse_output("bandit", &out(1, ok, "")).unwrap();
        assert_eq!(issues.len(), 1);
        assert_eq!(issues[0].test_id, "B101");
        assert_eq!(
            BanditError::NotInstalled.to_string(),
            "Bandit is not installed: pip install bandit, or drop --with bandit"
        );
    }
}
