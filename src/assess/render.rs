//! Human-readable output of an assessment.

use std::fmt::Write as _;

use super::Assessment;

/// One finding per line (`path:line:col [SEVERITY] RULE title — snippet`),
/// then a summary line with the verdict.
pub fn render_text(a: &Assessment) -> String {
    let mut out = String::new();
    for f in &a.findings {
        // Writing to a String cannot fail; the Result is ignored on purpose.
        let _ = write!(
            out,
            "{}:{}:{} [{}] {} {}",
            a.path, f.line, f.column, f.severity, f.rule, f.title
        );
        // A `bandit:B###` rule already names its Bandit test.
        if let Some(b) = f.bandit.as_ref().filter(|_| !f.rule.starts_with("bandit:")) {
            let _ = write!(out, " ({b})");
        }
        let _ = write!(out, " — {}", f.snippet);
        if !f.detail.is_empty() {
            let _ = write!(out, "  [{}]", f.detail);
        }
        out.push('\n');
    }
    let _ = writeln!(
        out,
        "{}: verdict {} ({} finding{}, {} lines, {}{} µs{})",
        a.path,
        a.verdict,
        a.findings.len(),
        if a.findings.len() == 1 { "" } else { "s" },
        a.lines,
        if a.syntax_ok { "" } else { "syntax errors, " },
        a.elapsed_us,
        a.tools
            .iter()
            .map(|t| format!(", with {t}"))
            .collect::<String>()
    );
    out
}

#[cfg(test)]
mod tests {
    use crate::assess::{assess, render_text, AssessConfig};

    #[test]
    fn renders_one_line_per_finding() {
        let a = assess(
            "x.py",
            b"import os as o\no.system('id')\n",
            &AssessConfig::default(),
        )
        .unwrap();
        let text = render_text(&a);
        let first = text.lines().find(|l| l.contains("MB605")).unwrap();
        assert!(first.starts_with("x.py:2:1 [MEDIUM] MB605 "), "{first}");
        assert!(first.contains("(B605) — o.system('id')"), "{first}");
        assert!(
            text.lines().last().unwrap().contains("verdict MEDIUM"),
            "{text}"
        );
    }
}
