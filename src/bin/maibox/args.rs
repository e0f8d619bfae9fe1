//! Value parsers for the command line's flags: each error says what is expected.

use maibox::assess::Verdict;
use maibox::config::TrustLevel;
use maibox::units::{ByteSize, Seconds};

/// External analysers that `--with` adds to the static assessment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum WithTool {
    Bandit,
}

pub fn parse_verdict(s: &str) -> Result<Verdict, String> {
    s.parse().map_err(|e| format!("{e}"))
}

pub fn parse_reason(s: &str) -> Result<String, String> {
    let t = s.trim();
    if t.len() < 3 {
        return Err("give a reason of a few words, e.g. --override \"reviewed: fork test\"".into());
    }
    Ok(t.to_string())
}

pub fn parse_trust(s: &str) -> Result<TrustLevel, String> {
    s.parse()
}

pub fn parse_timeout(s: &str) -> Result<Seconds, String> {
    s.parse()
}

pub fn parse_network(s: &str) -> Result<maibox::config::NetworkMode, String> {
    match s {
        "none" => Ok(maibox::config::NetworkMode::None),
        "allowlist" => Ok(maibox::config::NetworkMode::Allowlist),
        other => Err(format!(
            "unknown network mode {other:?} (use none or allowlist)"
        )),
    }
}

pub fn parse_image(s: &str) -> Result<String, String> {
    if s.is_empty() || s.starts_with('-') {
        return Err("give an image reference, e.g. python:3-slim".into());
    }
    Ok(s.to_string())
}

pub fn parse_cpus(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .parse()
        .map_err(|_| format!("{s:?} is not a number of CPUs (e.g. 0.5 or 2)"))?;
    if !(v.is_finite() && v > 0.0) {
        return Err("must be a positive number of CPUs".into());
    }
    Ok(v)
}

pub fn parse_pids(s: &str) -> Result<u64, String> {
    let v: u64 = s
        .parse()
        .map_err(|_| format!("{s:?} is not a whole number"))?;
    if v == 0 {
        return Err("must be at least 1".into());
    }
    Ok(v)
}

pub fn parse_size(s: &str) -> Result<ByteSize, String> {
    let b: ByteSize = s.parse()?;
    if b.0 == 0 {
        return Err("must be greater than 0".into());
    }
    Ok(b)
}
