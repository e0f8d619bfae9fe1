//! What the static assessment means for a run: go ahead, drop to `untrusted`, or
//! refuse unless the caller overrides with a reason.
//!
//! The assessment is triage; the sandbox is the boundary. A refusal saves the user
//! from running what looks malicious; it never replaces a layer.

use crate::assess::{Assessment, Verdict};
use crate::config::{Config, TrustLevel};
use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum Decision {
    Run {
        trust: TrustLevel,
    },
    /// The verdict reached the level's `escalate_at`: run with untrusted's settings.
    Escalated {
        from: TrustLevel,
        trust: TrustLevel,
    },
    /// The verdict reached `refuse_at` and an override reason was given.
    Overridden {
        trust: TrustLevel,
        reason: String,
    },
    Refused {
        verdict: Verdict,
        refuse_at: Verdict,
    },
}

pub fn decide(
    cfg: &Config,
    trust: TrustLevel,
    a: &Assessment,
    override_reason: Option<&str>,
) -> Decision {
    let level = cfg.level(trust);
    if a.verdict >= level.refuse_at {
        return match override_reason {
            Some(r) => Decision::Overridden {
                trust,
                reason: r.to_string(),
            },
            None => Decision::Refused {
                verdict: a.verdict,
                refuse_at: level.refuse_at,
            },
        };
    }
    match level.escalate_at {
        Some(at) if a.verdict >= at && trust != TrustLevel::Untrusted => Decision::Escalated {
            from: trust,
            trust: TrustLevel::Untrusted,
        },
        _ => Decision::Run { trust },
    }
}

impl Decision {
    /// The trust level the run uses, or None when refused.
    pub fn trust(&self) -> Option<TrustLevel> {
        match self {
            Decision::Run { trust }
            | Decision::Escalated { trust, .. }
            | Decision::Overridden { trust, .. } => Some(*trust),
            Decision::Refused { .. } => None,
        }
    }
}

/// The part of an assessment that goes into the run report and the audit log.
#[derive(Debug, Clone, Serialize)]
pub struct AssessmentSummary {
    pub verdict: Verdict,
    pub findings: Vec<String>,
    pub syntax_ok: bool,
    pub elapsed_us: u64,
    /// External analysers merged in (`--with bandit`); absent when none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
}

impl AssessmentSummary {
    pub fn of(a: &Assessment) -> Self {
        let mut ids: Vec<String> = a.findings.iter().map(|f| f.rule.clone()).collect();
        ids.dedup();
        AssessmentSummary {
            verdict: a.verdict,
            findings: ids,
            syntax_ok: a.syntax_ok,
            elapsed_us: a.elapsed_us,
            tools: a.tools.clone(),
        }
    }
}

/// One line naming the worst findings, for the refusal message.
pub fn worst_findings(a: &Assessment, n: usize) -> String {
    let mut f: Vec<_> = a.findings.iter().collect();
    f.sort_by_key(|x| std::cmp::Reverse(x.severity));
    f.iter()
        .take(n)
        .map(|f| format!("{} {} at line {}", f.rule, f.title, f.line))
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::BUILTIN;

    fn assessed(code: &str) -> Assessment {
        crate::assess::assess("t.py", code.as_bytes(), &Default::default()).unwrap()
    }

    #[test]
    fn blocked_code_is_refused_without_override() {
        let cfg = Config::parse(BUILTIN, "builtin").unwrap();
        let a = assessed("import os\nwhile True:\n    os.fork()\n");
        assert_eq!(a.verdict, Verdict::Blocked);
        assert!(matches!(
            decide(&cfg, TrustLevel::Trusted, &a, None),
            Decision::Refused { .. }
        ));
        let d = decide(&cfg, TrustLevel::Trusted, &a, Some("testing the limits"));
        assert_eq!(d.trust(), Some(TrustLevel::Trusted));
    }

    #[test]
    fn high_code_escalates_under_unknown_only() {
        let cfg = Config::parse(BUILTIN, "builtin").unwrap();
        let a = assessed(
            "import subprocess\nsubprocess.run(input(), shell=True)\nopen('/etc/shadow').read()\n",
        );
        assert!(a.verdict >= Verdict::High, "{:?}", a.verdict);
        assert_eq!(
            decide(&cfg, TrustLevel::Unknown, &a, None).trust(),
            Some(TrustLevel::Untrusted)
        );
        assert_eq!(
            decide(&cfg, TrustLevel::Trusted, &a, None).trust(),
            Some(TrustLevel::Trusted)
        );
        let low = assessed("print(sum(range(10)))\n");
        assert_eq!(
            decide(&cfg, TrustLevel::Unknown, &low, None),
            Decision::Run {
                trust: TrustLevel::Unknown
            }
        );
    }
}
