//! The `assessment:` section of maibox's `config/sandbox.yaml`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::verdict::{Severity, Verdict};

/// Configuration of the static assessment.
///
/// Fields (all optional in YAML; unknown keys are rejected so typos surface):
/// - `max_bytes`: files larger than this are refused with
///   [`AssessError::TooLarge`](super::AssessError::TooLarge) (default 5 MiB).
/// - `max_depth`: syntax-tree depth beyond which nodes are not examined; going
///   past it yields finding MB002 instead of a stack overflow (default 200,
///   which is also about CPython's own parser limit).
/// - `severity`: map of rule id to severity (`LOW`/`MEDIUM`/`HIGH`/`BLOCKED`)
///   replacing the rule table's default.
/// - `disabled`: rule ids whose findings are dropped.
///
/// Both also take `bandit:B###` ids, the Bandit tests without a maibox rule
/// that `--with bandit` reports.
/// - `thresholds.medium_to_high`: this many *distinct* MEDIUM rules raise the
///   verdict to HIGH (default 4; `null` disables).
/// - `thresholds.high_to_blocked`: this many *distinct* HIGH rules raise the
///   verdict to BLOCKED (default 4; `null` disables).
///
/// Distinct means distinct behaviours: the rules for exec, eval and compile
/// of computed code, computed imports and computed getattr count as one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AssessConfig {
    pub max_bytes: usize,
    pub max_depth: usize,
    pub severity: BTreeMap<String, Severity>,
    pub disabled: Vec<String>,
    pub thresholds: Thresholds,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Thresholds {
    pub medium_to_high: Option<usize>,
    pub high_to_blocked: Option<usize>,
}

impl Default for Thresholds {
    fn default() -> Self {
        // Several independent privileged or risky behaviours together are a
        // stronger signal than any one; counts are of distinct rules so that
        // one call repeated in a loop does not escalate.
        Thresholds {
            medium_to_high: Some(4),
            high_to_blocked: Some(4),
        }
    }
}

pub const DEFAULT_MAX_BYTES: usize = 5 * 1024 * 1024;
pub const DEFAULT_MAX_DEPTH: usize = 200;

impl Default for AssessConfig {
    fn default() -> Self {
        AssessConfig {
            max_bytes: DEFAULT_MAX_BYTES,
            max_depth: DEFAULT_MAX_DEPTH,
            severity: BTreeMap::new(),
            disabled: Vec::new(),
            thresholds: Thresholds::default(),
        }
    }
}

/// `bandit:B324` and the like: Bandit tests without a maibox rule, which
/// `--with bandit` reports under these ids.
fn is_bandit_id(id: &str) -> bool {
    id.strip_prefix(super::bandit::ID_PREFIX)
        .and_then(|t| t.strip_prefix('B'))
        .is_some_and(|n| n.len() == 3 && n.bytes().all(|b| b.is_ascii_digit()))
}

impl AssessConfig {
    /// Rule ids in `severity`/`disabled` that are not in the rule table, so the
    /// CLI can warn about typos (serde cannot check map keys against the table).
    pub fn unknown_rule_ids(&self) -> Vec<String> {
        self.severity
            .keys()
            .chain(self.disabled.iter())
            .filter(|id| super::rules::rule(id).is_none() && !is_bandit_id(id))
            .cloned()
            .collect()
    }

    pub(crate) fn severity_of(&self, id: &str, default: Severity) -> Severity {
        self.severity.get(id).copied().unwrap_or(default)
    }

    pub(crate) fn is_disabled(&self, id: &str) -> bool {
        self.disabled.iter().any(|d| d == id)
    }

    pub(crate) fn escalate(
        &self,
        distinct_medium: usize,
        distinct_high: usize,
        v: Verdict,
    ) -> Verdict {
        let mut v = v;
        if let Some(n) = self.thresholds.medium_to_high {
            if n > 0 && distinct_medium >= n && v < Verdict::High {
                v = Verdict::High;
            }
        }
        if let Some(n) = self.thresholds.high_to_blocked {
            if n > 0 && distinct_high >= n && v < Verdict::Blocked {
                v = Verdict::Blocked;
            }
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_roundtrip_and_unknown_fields() {
        let yaml = "max_bytes: 1024\nseverity:\n  MB602: HIGH\ndisabled: [MB310]\nthresholds:\n  medium_to_high: null\n";
        let cfg: AssessConfig = serde_yaml::from_str(yaml).unwrap();
        assert_eq!(cfg.max_bytes, 1024);
        assert_eq!(cfg.max_depth, DEFAULT_MAX_DEPTH);
        assert_eq!(cfg.severity.get("MB602"), Some(&Verdict::High));
        assert_eq!(cfg.thresholds.medium_to_high, None);
        assert_eq!(cfg.thresholds.high_to_blocked, Some(4));
        assert!(cfg.unknown_rule_ids().is_empty());
        assert!(serde_yaml::from_str::<AssessConfig>("max_byte: 3\n").is_err());
        assert!(serde_yaml::from_str::<AssessConfig>("severity: {MB602: SEVERE}\n").is_err());
        let typo: AssessConfig = serde_yaml::from_str("disabled: [MB60]\n").unwrap();
        assert_eq!(typo.unknown_rule_ids(), vec!["MB60".to_string()]);
    }

    #[test]
    fn escalation_counts() {
        let cfg = AssessConfig::default();
        assert_eq!(cfg.escalate(3, 0, Verdict::Medium), Verdict::Medium);
        assert_eq!(cfg.escalate(4, 0, Verdict::Medium), Verdict::High);
        assert_eq!(cfg.escalate(0, 4, Verdict::High), Verdict::Blocked);
        assert_eq!(cfg.escalate(9, 0, Verdict::Blocked), Verdict::Blocked);
    }
}
