//! The four-level verdict, also used as the severity of a single rule.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Ordered so that `max()` over findings gives the overall verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Verdict {
    Low,
    Medium,
    High,
    Blocked,
}

/// A rule's severity is expressed on the same scale as the verdict, so a
/// finding's severity can be compared with the verdict directly.
pub type Severity = Verdict;

impl Verdict {
    pub const ALL: [Verdict; 4] = [
        Verdict::Low,
        Verdict::Medium,
        Verdict::High,
        Verdict::Blocked,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Low => "LOW",
            Verdict::Medium => "MEDIUM",
            Verdict::High => "HIGH",
            Verdict::Blocked => "BLOCKED",
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown verdict {0:?} (expected LOW, MEDIUM, HIGH or BLOCKED)")]
pub struct ParseVerdictError(pub String);

impl FromStr for Verdict {
    type Err = ParseVerdictError;

    // Case-insensitive because users type these on the command line and in YAML.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_uppercase().as_str() {
            "LOW" => Ok(Verdict::Low),
            "MEDIUM" => Ok(Verdict::Medium),
            "HIGH" => Ok(Verdict::High),
            "BLOCKED" => Ok(Verdict::Blocked),
            _ => Err(ParseVerdictError(s.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_display_parse_serde_roundtrip() {
        assert!(Verdict::Low < Verdict::Medium);
        assert!(Verdict::Medium < Verdict::High);
        assert!(Verdict::High < Verdict::Blocked);
        for v in Verdict::ALL {
            assert_eq!(v.to_string().parse::<Verdict>(), Ok(v));
            let json = serde_json::to_string(&v).unwrap();
            assert_eq!(json, format!("\"{}\"", v));
            assert_eq!(serde_json::from_str::<Verdict>(&json).unwrap(), v);
        }
        assert_eq!("blocked".parse::<Verdict>(), Ok(Verdict::Blocked));
        assert!("CRITICAL".parse::<Verdict>().is_err());
    }
}
