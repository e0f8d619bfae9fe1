//! One record line of a segment: built and signed by the writer
//! ([`build_line`]), checked on its own (well-formed, canonical, hash,
//! signature) by the verifier and by the writer when it reopens a tail
//! ([`check_line`]).

use ed25519_dalek::{SigningKey, VerifyingKey};
use serde_json::{json, Map, Value};

use super::error::AuditError;
use super::keys;
use super::record::{self, canonical, hex, record_hash, Kind, MAX_RECORD_BYTES, SCHEMA_VERSION};

/// Builds a complete record line (canonical JSON + `\n`).
pub(crate) fn build_line(
    key: &SigningKey,
    seq: u64,
    prev_hash: &str,
    kind: Kind,
    run_id: Option<&str>,
    body: Value,
) -> Result<(Vec<u8>, String), AuditError> {
    let mut m = Map::new();
    m.insert("v".into(), json!(SCHEMA_VERSION));
    m.insert("seq".into(), json!(seq));
    m.insert("time".into(), json!(record::now_rfc3339()));
    m.insert("kind".into(), json!(kind.as_str()));
    if let Some(r) = run_id {
        m.insert("run_id".into(), json!(r));
    }
    m.insert("body".into(), body);
    m.insert("prev_hash".into(), json!(prev_hash));
    let h = record_hash(&m);
    let hash = hex(&h);
    m.insert("hash".into(), json!(hash));
    m.insert("sig".into(), json!(keys::sign_hash(key, &h)));
    let mut line = canonical(&Value::Object(m)).into_bytes();
    line.push(b'\n');
    if line.len() > MAX_RECORD_BYTES {
        return Err(AuditError::RecordTooLarge {
            size: line.len(),
            max: MAX_RECORD_BYTES,
        });
    }
    Ok((line, hash))
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LineFault {
    Malformed(String),
    NotCanonical,
    HashMismatch,
    BadSignature,
}

impl LineFault {
    pub(crate) fn describe(&self) -> String {
        match self {
            LineFault::Malformed(m) => format!("not a valid record: {m}"),
            LineFault::NotCanonical => "bytes differ from the canonical serialization".into(),
            LineFault::HashMismatch => "content does not match its hash".into(),
            LineFault::BadSignature => "signature does not verify with the log's public key".into(),
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Parsed {
    pub seq: u64,
    pub prev_hash: String,
    pub hash: String,
    pub kind: String,
    pub obj: Map<String, Value>,
}

#[derive(Debug, Clone)]
pub(crate) struct CheckedLine {
    pub parsed: Option<Parsed>,
    pub fault: Option<LineFault>,
}

fn parse_line(line: &[u8]) -> Result<Parsed, LineFault> {
    let v: Value = serde_json::from_slice(line).map_err(|e| LineFault::Malformed(e.to_string()))?;
    let Value::Object(obj) = v else {
        return Err(LineFault::Malformed("not a JSON object".into()));
    };
    let s = |k: &str| obj.get(k).and_then(Value::as_str).map(str::to_string);
    let (Some(seq), Some(prev_hash), Some(hash), Some(kind)) = (
        obj.get("seq").and_then(Value::as_u64),
        s("prev_hash"),
        s("hash"),
        s("kind"),
    ) else {
        return Err(LineFault::Malformed(
            "missing seq, prev_hash, hash or kind".into(),
        ));
    };
    Ok(Parsed {
        seq,
        prev_hash,
        hash,
        kind,
        obj,
    })
}

/// Checks one line on its own: well-formed, canonical, hash, signature.
pub(crate) fn check_line(line: &[u8], vk: &VerifyingKey) -> CheckedLine {
    let p = match parse_line(line) {
        Ok(p) => p,
        Err(f) => {
            return CheckedLine {
                parsed: None,
                fault: Some(f),
            }
        }
    };
    let fault = if canonical(&Value::Object(p.obj.clone())).as_bytes() != line {
        Some(LineFault::NotCanonical)
    } else {
        let h = record_hash(&p.obj);
        if hex(&h) != p.hash {
            Some(LineFault::HashMismatch)
        } else {
            let sig = p.obj.get("sig").and_then(Value::as_str).unwrap_or("");
            (!keys::check_sig(vk, &h, sig)).then_some(LineFault::BadSignature)
        }
    };
    CheckedLine {
        parsed: Some(p),
        fault,
    }
}
