//! Record schema and canonical serialization.
//!
//! # Record (one JSON object per line, schema version `v` = 1)
//!
//! | field       | type            | meaning                                             |
//! |-------------|-----------------|-----------------------------------------------------|
//! | `v`         | integer         | schema version, 1                                   |
//! | `seq`       | integer         | position in the chain; 1 for the very first record, +1 per record, never reset across segments |
//! | `time`      | string          | RFC 3339 UTC with microseconds, `2025-01-31T12:00:00.000000Z` |
//! | `kind`      | string          | `run_start`, `run_end`, `security` (engine) or `segment_start`, `retention` (writer only) |
//! | `run_id`    | string, absent if none | run the record belongs to                    |
//! | `body`      | object          | kind-specific content ([`RunStart`], [`RunEnd`], ...) |
//! | `prev_hash` | string          | `hash` of record `seq - 1`, 64 hex digits; all zeros for `seq` 1 |
//! | `hash`      | string          | lowercase hex SHA-256 of the canonical serialization of the record **without** `hash` and `sig` (so `prev_hash` is covered) |
//! | `sig`       | string          | lowercase hex Ed25519 signature over the 32 raw bytes of `hash` |
//!
//! # Canonical serialization
//!
//! A JSON value is serialized canonically as follows:
//! * objects: `{`, members sorted by key in ascending order of the keys' UTF-8
//!   bytes, each as `"key":value`, separated by `,`, then `}`; no whitespace anywhere;
//! * arrays: `[`, elements in order separated by `,`, `]`;
//! * strings (keys too): `"`, the characters as UTF-8, except that `"` and `\`
//!   are written `\"` and `\\`, U+0008/U+000C/U+000A/U+000D/U+0009 as
//!   `\b \f \n \r \t`, other characters below U+0020 as `\u00XX` (lowercase hex);
//!   nothing else is escaped (not `/`, not non-ASCII), then `"`;
//! * integers in plain decimal (`-` for negatives, no leading zeros, no `+`);
//!   non-integer numbers as the shortest decimal that round-trips to the same
//!   IEEE-754 double (Rust's `ryu` form, e.g. `0.1`, `1e-7`); records written by
//!   maibox only contain integers;
//! * `true`, `false`, `null`.
//!
//! The line written to the segment is the canonical serialization of the whole
//! record (with `hash` and `sig`) followed by a single `\n`. `verify` insists
//! on this, so any byte change of a line is visible even if it would not alter
//! the parsed value.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::error::AuditError;

pub const SCHEMA_VERSION: u64 = 1;
/// `prev_hash` of the first record of a log.
pub const GENESIS_HASH: &str = "0000000000000000000000000000000000000000000000000000000000000000";
/// Upper bound on one line; bigger records would hold the writer lock for long
/// and make `verify`/`tail` buffer huge lines.
pub const MAX_RECORD_BYTES: usize = 4 * 1024 * 1024;

/// Record kinds. The writer-only kinds cannot be appended by callers, so a
/// caller cannot fake a rotation or a retention deletion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    RunStart,
    RunEnd,
    Security,
    SegmentStart,
    Retention,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::RunStart => "run_start",
            Kind::RunEnd => "run_end",
            Kind::Security => "security",
            Kind::SegmentStart => "segment_start",
            Kind::Retention => "retention",
        }
    }

    pub fn writer_only(self) -> bool {
        matches!(self, Kind::SegmentStart | Kind::Retention)
    }
}

/// A parsed record, as read back by `show`/`tail`. `verify` works on the raw
/// JSON value instead so that unknown fields are still covered by the hash.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub v: u64,
    pub seq: u64,
    pub time: String,
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    pub body: Value,
    pub prev_hash: String,
    pub hash: String,
    pub sig: String,
}

/// Who invoked maibox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Caller {
    pub uid: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// How the run reached maibox when not from the caller's own command: a server
    /// names itself here (`maibox serve` pid and socket).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
}

/// The code that was run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CodeInfo {
    /// Script path as given by the caller (`None` for code from stdin/-c).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    pub sha256: String,
    pub size: u64,
    /// SHA-256 of the previous version of the same path, if one was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_sha256: Option<String>,
    /// Unified diff against that previous version, capped at `max_diff_bytes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
}

/// Static assessment result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Assessment {
    pub verdict: String,
    #[serde(default)]
    pub findings: Vec<String>,
}

/// Body of a `run_start` record, written before the sandboxed code starts so
/// that a crash mid-run still leaves a trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunStart {
    pub run_id: String,
    pub caller: Caller,
    pub trust_level: String,
    pub code: CodeInfo,
    pub assessment: Assessment,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub override_reason: Option<String>,
    /// Effective limits, engine-defined shape.
    pub limits: Value,
    /// Isolation layers that were applied, engine-defined shape.
    pub layers: Value,
}

/// Body of a `run_end` record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunEnd {
    pub run_id: String,
    /// Exit status, engine-defined shape (e.g. `{"code":0}` or `{"signal":9}`).
    pub exit: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// Resource usage, engine-defined shape.
    pub usage: Value,
    /// Violations and their reasons, engine-defined shape (usually an array).
    pub violations: Value,
}

/// What a caller hands to [`super::AuditLog::append`].
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub kind: Kind,
    pub run_id: Option<String>,
    pub body: Value,
}

impl Event {
    pub fn new(kind: Kind, run_id: Option<String>, body: Value) -> Event {
        Event { kind, run_id, body }
    }

    pub fn run_start(s: &RunStart) -> Result<Event, AuditError> {
        let body = serde_json::to_value(s).map_err(|source| AuditError::Json {
            step: "serialize run_start",
            source,
        })?;
        Ok(Event::new(Kind::RunStart, Some(s.run_id.clone()), body))
    }

    pub fn run_end(e: &RunEnd) -> Result<Event, AuditError> {
        let body = serde_json::to_value(e).map_err(|source| AuditError::Json {
            step: "serialize run_end",
            source,
        })?;
        Ok(Event::new(Kind::RunEnd, Some(e.run_id.clone()), body))
    }

    pub fn security(run_id: Option<String>, body: Value) -> Event {
        Event::new(Kind::Security, run_id, body)
    }
}

/// Appends the canonical serialization of `v` to `out` (see module docs).
pub fn canonical_into(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => {
            let _ = write!(out, "{n}");
        }
        Value::String(s) => canonical_string(s, out),
        Value::Array(a) => {
            out.push('[');
            for (i, e) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical_into(e, out);
            }
            out.push(']');
        }
        Value::Object(m) => {
            // Sort explicitly: serde_json's map is only sorted when the
            // `preserve_order` feature is off, and feature unification in the
            // final binary could turn it on behind our back.
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort_unstable_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical_string(k, out);
                out.push(':');
                if let Some(val) = m.get(k) {
                    canonical_into(val, out);
                }
            }
            out.push('}');
        }
    }
}

pub fn canonical(v: &Value) -> String {
    let mut s = String::new();
    canonical_into(v, &mut s);
    s
}

fn canonical_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// SHA-256 over the canonical serialization of `rec` minus `hash` and `sig`.
pub fn record_hash(rec: &Map<String, Value>) -> [u8; 32] {
    let mut m = rec.clone();
    m.remove("hash");
    m.remove("sig");
    let c = canonical(&Value::Object(m));
    Sha256::digest(c.as_bytes()).into()
}

pub fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

pub fn unhex(s: &str) -> Option<Vec<u8>> {
    // Only lowercase digits: `from_str_radix` alone would accept "+a" or "A",
    // letting someone change the bytes of an (unhashed) `sig` without
    // changing its meaning.
    if !s.len().is_multiple_of(2) || !s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

pub fn sha256_hex(data: &[u8]) -> String {
    hex(&Sha256::digest(data))
}

/// Current time in the record format (fixed width so that strings sort by time).
pub fn now_rfc3339() -> String {
    format_time(time::OffsetDateTime::now_utc())
}

pub fn format_time(t: time::OffsetDateTime) -> String {
    let t = t.to_offset(time::UtcOffset::UTC);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.microsecond()
    )
}

pub fn parse_time(s: &str) -> Result<time::OffsetDateTime, AuditError> {
    time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339).map_err(|e| {
        AuditError::BadTime {
            value: s.to_string(),
            reason: e.to_string(),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn canonical_sorts_and_escapes() {
        let v = json!({"b": 1, "a": [true, null, -3, 0.5], "é": "x\"y\\z\n\u{1}/é", "A": {}});
        assert_eq!(
            canonical(&v),
            "{\"A\":{},\"a\":[true,null,-3,0.5],\"b\":1,\"é\":\"x\\\"y\\\\z\\n\\u0001/é\"}"
        );
    }

    #[test]
    fn canonical_is_stable_through_parse() {
        let v = json!({"z": {"y": [1, 2, {"k": "v\u{7f}\t"}]}, "big": u64::MAX, "f": 1e-7});
        let c = canonical(&v);
        let back: Value = serde_json::from_str(&c).unwrap();
        assert_eq!(canonical(&back), c);
    }

    #[test]
    fn hash_ignores_hash_and_sig_only() {
        let v = json!({"seq": 1, "prev_hash": GENESIS_HASH, "hash": "aa", "sig": "bb"});
        let m = v.as_object().unwrap().clone();
        let mut m2 = m.clone();
        m2.insert("hash".into(), json!("cc"));
        assert_eq!(record_hash(&m), record_hash(&m2));
        m2.insert("prev_hash".into(), json!("11"));
        assert_ne!(record_hash(&m), record_hash(&m2));
    }

    #[test]
    fn time_format_roundtrips() {
        let s = now_rfc3339();
        assert_eq!(s.len(), 27, "{s}");
        let t = parse_time(&s).unwrap();
        assert_eq!(format_time(t), s);
        assert!(parse_time("yesterday").is_err());
    }

    #[test]
    fn hex_roundtrip() {
        assert_eq!(
            unhex(&hex(&[0, 1, 254, 255])).unwrap(),
            vec![0, 1, 254, 255]
        );
        assert!(unhex("abc").is_none());
        assert!(unhex("zz").is_none());
        assert!(unhex("+a").is_none());
        assert!(unhex("AB").is_none());
    }
}
