//! Offline verification of a whole log directory.
//!
//! Checked, in file order: every line is canonical JSON whose `hash` matches
//! its content and whose `sig` verifies with `audit.pub`; every record links
//! to the one before (`seq` + 1, `prev_hash` = previous `hash`), across
//! segment boundaries too; segment numbers have no gaps and each segment
//! starts with a `segment_start` naming its own number; a torn last line is
//! only accepted in a closed segment whose successor records the break; the
//! first surviving segment is either segment 1 starting from the genesis
//! hash or is preceded by segments that a `retention` record lists as
//! deleted, with the matching last hash.
//!
//! Limitation inherent to a hash chain without an outside anchor: removing
//! records from the very end (or the whole active segment) leaves a shorter
//! but consistent chain. Compare `last_seq`/`last_hash` with a copy kept
//! elsewhere to detect that.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::fs::File;
use std::path::Path;

use ed25519_dalek::VerifyingKey;
use nix::fcntl::FlockArg;
use serde_json::{Map, Value};

use super::error::AuditError;
use super::keys;
use super::record::{canonical, hex, record_hash, GENESIS_HASH};
use super::segments;
use super::writer::{lock, LOCK_FILE};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProblemKind {
    /// A record's bytes changed (hash mismatch, not canonical, not JSON).
    Edited,
    /// Records are missing between two records.
    Deleted,
    /// A record that does not belong at this place (a copy, or an unsigned forgery between intact neighbours).
    Inserted,
    /// Records are present but out of order.
    Reordered,
    /// Content and hash agree but the signature is not from the log's key (a re-hashed forgery).
    BadSignature,
    /// The last line is incomplete: a crash during a write, not tampering.
    TruncatedTail,
    /// A whole segment file is missing (and no retention record explains it).
    MissingSegment,
    /// `audit.pub` is not the key that was pinned by the caller.
    WrongKey,
}

impl ProblemKind {
    /// Everything but a torn tail means someone changed the log.
    pub fn is_tampering(self) -> bool {
        self != ProblemKind::TruncatedTail
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ProblemKind::Edited => "edited",
            ProblemKind::Deleted => "deleted",
            ProblemKind::Inserted => "inserted",
            ProblemKind::Reordered => "reordered",
            ProblemKind::BadSignature => "bad signature",
            ProblemKind::TruncatedTail => "truncated tail",
            ProblemKind::MissingSegment => "missing segment",
            ProblemKind::WrongKey => "wrong key",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub segment: u64,
    /// 1-based line in the segment; 0 when the problem is the segment itself.
    pub line: u64,
    pub seq: Option<u64>,
    pub kind: ProblemKind,
    pub detail: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyReport {
    /// True only if no problem at all was found.
    pub ok: bool,
    /// Records fully checked (hash, signature, link).
    pub records: u64,
    pub segments: usize,
    pub first_seq: Option<u64>,
    pub last_seq: Option<u64>,
    pub last_hash: Option<String>,
    pub key_fingerprint: String,
    pub problem: Option<Problem>,
}

impl fmt::Display for VerifyReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.problem {
            None => write!(
                f,
                "audit log intact: {} records in {} segments (seq {}..{}), key {}",
                self.records,
                self.segments,
                self.first_seq.unwrap_or(0),
                self.last_seq.unwrap_or(0),
                self.key_fingerprint
            ),
            Some(p) => {
                write!(
                    f,
                    "audit log BROKEN: {} at segment {}",
                    p.kind.as_str(),
                    p.segment
                )?;
                if p.line > 0 {
                    write!(f, " line {}", p.line)?;
                }
                if let Some(s) = p.seq {
                    write!(f, " (seq {s})")?;
                }
                write!(
                    f,
                    ": {} [{} records checked before]",
                    p.detail, self.records
                )
            }
        }
    }
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

/// Verifies with `audit.pub` from `dir`.
pub fn verify(dir: &Path) -> Result<VerifyReport, AuditError> {
    verify_pinned(dir, None)
}

/// Verifies, and also requires `audit.pub` to have `fingerprint` (as printed
/// by `maibox audit key`) when given; this defeats an attacker who replaced
/// the public key and re-signed the whole log.
pub fn verify_pinned(dir: &Path, fingerprint: Option<&str>) -> Result<VerifyReport, AuditError> {
    let vk = keys::load_public(dir)?;
    let fp = keys::fingerprint_of(&vk);
    // A shared lock gives a consistent snapshot against concurrent writers;
    // an auditor with read-only access and no lock file just goes without.
    let lock_path = dir.join(LOCK_FILE);
    let _guard = match File::open(&lock_path) {
        Ok(f) => Some(lock(&f, &lock_path, FlockArg::LockShared)?),
        Err(_) => None,
    };
    let mut v = Verifier::new(vk, fp.clone());
    if let Some(want) = fingerprint {
        if want != fp {
            v.problem = Some(Problem {
                segment: 0,
                line: 0,
                seq: None,
                kind: ProblemKind::WrongKey,
                detail: format!("audit.pub has fingerprint {fp}, expected {want}"),
            });
            return Ok(v.report());
        }
    }
    let segs = segments::list(dir)?;
    v.segments = segs.len();
    if segs.is_empty() {
        v.fail(
            1,
            0,
            None,
            ProblemKind::MissingSegment,
            "the log has a key but no segments".into(),
        );
        return Ok(v.report());
    }
    for (i, seg) in segs.iter().enumerate() {
        let data = segments::read_all(seg)?;
        if !v.segment(seg.number, &data, i + 1 == segs.len()) {
            return Ok(v.report());
        }
    }
    v.check_head();
    Ok(v.report())
}

struct Verifier {
    vk: VerifyingKey,
    fingerprint: String,
    segments: usize,
    records: u64,
    first_seq: Option<u64>,
    prev: Option<(u64, String)>,
    prev_segment: Option<u64>,
    /// Torn tail of the previous segment: (segment, offset, torn bytes).
    pending_torn: Option<(u64, u64, u64, u64)>,
    seen: HashSet<[u8; 32]>,
    /// Segment number -> (last_seq, last_hash) from retention records.
    expired: HashMap<u64, (u64, String)>,
    head: Option<(u64, u64, String)>,
    problem: Option<Problem>,
}

fn body_u64(obj: &Map<String, Value>, path: &[&str]) -> Option<u64> {
    let mut v = obj.get("body")?;
    for k in path {
        v = v.get(k)?;
    }
    v.as_u64()
}

impl Verifier {
    fn new(vk: VerifyingKey, fingerprint: String) -> Verifier {
        Verifier {
            vk,
            fingerprint,
            segments: 0,
            records: 0,
            first_seq: None,
            prev: None,
            prev_segment: None,
            pending_torn: None,
            seen: HashSet::new(),
            expired: HashMap::new(),
            head: None,
            problem: None,
        }
    }

    fn report(self) -> VerifyReport {
        VerifyReport {
            ok: self.problem.is_none(),
            records: self.records,
            segments: self.segments,
            first_seq: self.first_seq,
            last_seq: self.prev.as_ref().map(|p| p.0),
            last_hash: self.prev.map(|p| p.1),
            key_fingerprint: self.fingerprint,
            problem: self.problem,
        }
    }

    fn fail(
        &mut self,
        segment: u64,
        line: u64,
        seq: Option<u64>,
        kind: ProblemKind,
        detail: String,
    ) {
        self.problem = Some(Problem {
            segment,
            line,
            seq,
            kind,
            detail,
        });
    }

    /// Checks one segment; false once a problem is found.
    fn segment(&mut self, number: u64, data: &[u8], is_last: bool) -> bool {
        if let Some(p) = self.prev_segment {
            if number != p + 1 {
                let missing = if number > p + 2 {
                    format!("segments {}..{} are missing", p + 1, number - 1)
                } else {
                    format!("segment {} is missing", p + 1)
                };
                self.fail(p + 1, 0, None, ProblemKind::MissingSegment, missing);
                return false;
            }
        }
        self.prev_segment = Some(number);
        let (lines, torn) = segments::split_lines(data);
        if lines.is_empty() {
            let kind = if torn.is_some() {
                ProblemKind::TruncatedTail
            } else {
                ProblemKind::Deleted
            };
            self.fail(
                number,
                1,
                None,
                kind,
                "segment has no complete record".into(),
            );
            return false;
        }
        let checked: Vec<CheckedLine> =
            lines.iter().map(|(_, l)| check_line(l, &self.vk)).collect();
        for (i, c) in checked.iter().enumerate() {
            let line_no = i as u64 + 1;
            let seq = c.parsed.as_ref().map(|p| p.seq);
            if let Some(fault) = &c.fault {
                // Would the chain be intact if this line were not there?
                let skippable = match (
                    &self.prev,
                    checked.get(i + 1).and_then(|n| n.parsed.as_ref()),
                ) {
                    (Some((ps, ph)), Some(n)) => n.seq == ps + 1 && &n.prev_hash == ph,
                    _ => false,
                };
                let kind = if skippable {
                    ProblemKind::Inserted
                } else if *fault == LineFault::BadSignature {
                    ProblemKind::BadSignature
                } else {
                    ProblemKind::Edited
                };
                self.fail(number, line_no, seq, kind, fault.describe());
                return false;
            }
            let Some(p) = c.parsed.as_ref() else {
                self.fail(
                    number,
                    line_no,
                    None,
                    ProblemKind::Edited,
                    "unparsed".into(),
                );
                return false;
            };
            // Segment identity first: a renamed or cut segment would otherwise
            // surface as a vaguer broken link.
            if i == 0 && !self.segment_start(number, p) {
                return false;
            }
            if !self.link(number, line_no, p, &checked[i + 1..]) {
                return false;
            }
            if p.kind == "retention" {
                if let Some(Value::Array(del)) = p.obj.get("body").and_then(|b| b.get("deleted")) {
                    for d in del {
                        let (Some(s), Some(ls), Some(lh)) = (
                            d.get("segment").and_then(Value::as_u64),
                            d.get("last_seq").and_then(Value::as_u64),
                            d.get("last_hash").and_then(Value::as_str),
                        ) else {
                            continue;
                        };
                        self.expired.insert(s, (ls, lh.to_string()));
                    }
                }
            }
            if let Ok(h) =
                <[u8; 32]>::try_from(super::record::unhex(&p.hash).unwrap_or_default().as_slice())
            {
                self.seen.insert(h);
            }
            self.records += 1;
            self.prev = Some((p.seq, p.hash.clone()));
        }
        if let Some((off, t)) = torn {
            if is_last {
                self.fail(
                    number,
                    lines.len() as u64 + 1,
                    None,
                    ProblemKind::TruncatedTail,
                    format!(
                        "last line is incomplete ({} bytes without newline): interrupted write",
                        t.len()
                    ),
                );
                return false;
            }
            self.pending_torn = Some((number, lines.len() as u64 + 1, off as u64, t.len() as u64));
        }
        true
    }

    /// First record of a segment: a `segment_start` naming this segment, and
    /// acknowledging the previous segment's torn tail if there was one.
    fn segment_start(&mut self, number: u64, p: &Parsed) -> bool {
        if p.kind != "segment_start" {
            self.fail(
                number,
                1,
                Some(p.seq),
                ProblemKind::Deleted,
                "segment does not begin with its segment_start record".into(),
            );
            return false;
        }
        if body_u64(&p.obj, &["segment"]) != Some(number) {
            self.fail(
                number,
                0,
                Some(p.seq),
                ProblemKind::MissingSegment,
                format!(
                    "file of segment {number} holds segment {:?}: files were renamed",
                    body_u64(&p.obj, &["segment"])
                ),
            );
            return false;
        }
        if let Some((seg, line, off, len)) = self.pending_torn.take() {
            let ack = body_u64(&p.obj, &["break", "segment"]) == Some(seg)
                && body_u64(&p.obj, &["break", "offset"]) == Some(off)
                && body_u64(&p.obj, &["break", "torn_bytes"]) == Some(len);
            if !ack {
                // A crash only tears the active segment, and the next writer
                // records that break; an unexplained cut in a closed segment
                // means records were removed.
                self.fail(seg, line, None, ProblemKind::Deleted, format!("closed segment ends with {len} bytes of an incomplete line that the next segment does not record as a crash break"));
                return false;
            }
        }
        true
    }

    /// Chain link from the previous record to `p`; `rest` is what follows `p`
    /// in the same segment (to tell reordering from deletion).
    fn link(&mut self, segment: u64, line: u64, p: &Parsed, rest: &[CheckedLine]) -> bool {
        let Some((ps, ph)) = self.prev.clone() else {
            self.first_seq = Some(p.seq);
            self.head = Some((segment, p.seq, p.prev_hash.clone()));
            return true;
        };
        let expect = ps + 1;
        if p.seq == expect && p.prev_hash == ph {
            return true;
        }
        let dup = super::record::unhex(&p.hash)
            .and_then(|h| <[u8; 32]>::try_from(h.as_slice()).ok())
            .is_some_and(|h| self.seen.contains(&h));
        let (kind, detail) = if dup {
            (
                ProblemKind::Inserted,
                format!("copy of an earlier record (seq {})", p.seq),
            )
        } else if p.seq > expect {
            let later = rest.iter().any(|c| {
                c.parsed
                    .as_ref()
                    .is_some_and(|n| n.seq >= expect && n.seq < p.seq)
            });
            if later {
                (
                    ProblemKind::Reordered,
                    format!(
                        "expected seq {expect}, found {}; the missing records appear later",
                        p.seq
                    ),
                )
            } else {
                (
                    ProblemKind::Deleted,
                    format!("records {expect}..{} are missing", p.seq - 1),
                )
            }
        } else {
            (
                ProblemKind::Inserted,
                format!(
                    "expected seq {expect} linking to {}, found seq {} linking elsewhere",
                    &ph[..ph.len().min(12)],
                    p.seq
                ),
            )
        };
        self.fail(segment, line, Some(p.seq), kind, detail);
        false
    }

    /// The first surviving record must be the genesis or follow segments
    /// that a retention record declared deleted.
    fn check_head(&mut self) {
        let Some((segment, seq, prev_hash)) = self.head.clone() else {
            return;
        };
        if segment == 1 && seq == 1 && prev_hash == GENESIS_HASH {
            return;
        }
        let covered = segment > 1
            && self
                .expired
                .get(&(segment - 1))
                .is_some_and(|(ls, lh)| ls + 1 == seq && *lh == prev_hash);
        if !covered {
            let detail = if segment > 1 {
                format!(
                    "segments before {segment} are gone and no retention record accounts for them"
                )
            } else {
                format!("log starts at seq {seq}, not at the genesis record")
            };
            let kind = if segment > 1 {
                ProblemKind::MissingSegment
            } else {
                ProblemKind::Deleted
            };
            self.fail(
                segment.saturating_sub(1).max(1),
                if segment > 1 { 0 } else { 1 },
                Some(seq),
                kind,
                detail,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{cfg, make_log, sample_start};
    use super::super::{AuditConfig, AuditLog};
    use super::*;
    use std::fs;
    use std::path::PathBuf;

    /// A log of several plain segments (~5 records each).
    fn log_with_segments(dir: &Path) -> AuditConfig {
        let mut c = cfg(dir);
        c.rotate_bytes = 4000;
        c.compress = false;
        drop(make_log(&c, 30));
        c
    }

    fn active(dir: &Path) -> PathBuf {
        segments::list(dir).unwrap().last().unwrap().path.clone()
    }

    fn lines(p: &Path) -> Vec<String> {
        fs::read_to_string(p)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect()
    }

    fn write_lines(p: &Path, l: &[String]) {
        fs::write(p, l.iter().map(|s| format!("{s}\n")).collect::<String>()).unwrap();
    }

    fn problem(dir: &Path) -> Problem {
        let r = verify(dir).unwrap();
        assert!(!r.ok, "verify passed a tampered log: {r}");
        r.problem.unwrap()
    }

    /// Run reports carry floats such as wall times; a float whose shortest form has
    /// 17 digits once broke canonical re-serialization (serde_json's default
    /// float parser is not exact; maibox enables `float_roundtrip`).
    #[test]
    fn floats_survive_canonical_round_trip() {
        let d = tempfile::tempdir().unwrap();
        let c = crate::audit::testutil::cfg(d.path());
        let mut log = AuditLog::open(&c).unwrap();
        for x in [
            1.5216985680000001f64,
            0.1 + 0.2,
            1e-7,
            123456.78901234568,
            f64::MIN_POSITIVE,
        ] {
            let body = serde_json::json!({"wall_time_s": x});
            log.append(crate::audit::Event::security(Some("r".into()), body))
                .unwrap();
        }
        let r = verify(d.path()).unwrap();
        assert!(r.ok, "{r}");
    }

    #[test]
    fn untouched_log_passes() {
        let d = tempfile::tempdir().unwrap();
        log_with_segments(d.path());
        let r = verify(d.path()).unwrap();
        assert!(r.ok, "{r}");
        let segs = segments::list(d.path()).unwrap().len();
        assert!(segs >= 4, "{segs}");
        assert_eq!(r.segments, segs);
        // 30 run records + one segment_start per segment.
        assert_eq!(r.records, 30 + segs as u64);
        assert_eq!(r.last_seq, Some(r.records));
    }

    #[test]
    fn edited_byte_is_caught() {
        let d = tempfile::tempdir().unwrap();
        log_with_segments(d.path());
        let p = active(d.path());
        let mut l = lines(&p);
        l[2] = l[2].replacen("untrusted", "untrustee", 1);
        write_lines(&p, &l);
        let pr = problem(d.path());
        assert_eq!((pr.kind, pr.line), (ProblemKind::Edited, 3), "{pr:?}");
    }

    #[test]
    fn every_single_byte_edit_is_caught() {
        let d = tempfile::tempdir().unwrap();
        log_with_segments(d.path());
        let p = active(d.path());
        let orig = fs::read(&p).unwrap();
        let start = orig.iter().position(|b| *b == b'\n').unwrap() + 1;
        let end = start + orig[start..].iter().position(|b| *b == b'\n').unwrap();
        for i in (start..end).step_by(3) {
            let mut m = orig.clone();
            m[i] = if m[i] == b'1' { b'2' } else { b'1' };
            fs::write(&p, &m).unwrap();
            let r = verify(d.path()).unwrap();
            assert!(!r.ok, "edit at byte {} went unnoticed", i - start);
            assert_ne!(r.problem.unwrap().kind, ProblemKind::TruncatedTail);
        }
    }

    #[test]
    fn deleted_record_is_caught() {
        let d = tempfile::tempdir().unwrap();
        log_with_segments(d.path());
        let p = active(d.path());
        let mut l = lines(&p);
        l.remove(2);
        write_lines(&p, &l);
        let pr = problem(d.path());
        assert_eq!((pr.kind, pr.line), (ProblemKind::Deleted, 3), "{pr:?}");
    }

    #[test]
    fn inserted_copy_is_caught() {
        let d = tempfile::tempdir().unwrap();
        log_with_segments(d.path());
        let p = active(d.path());
        let mut l = lines(&p);
        let copy = l[1].clone();
        l.insert(3, copy);
        write_lines(&p, &l);
        let pr = problem(d.path());
        assert_eq!((pr.kind, pr.line), (ProblemKind::Inserted, 4), "{pr:?}");
    }

    #[test]
    fn inserted_forgery_is_caught() {
        let d = tempfile::tempdir().unwrap();
        log_with_segments(d.path());
        let p = active(d.path());
        let mut l = lines(&p);
        // A well-formed record that links perfectly, signed with another key.
        let prev: Value = serde_json::from_str(&l[1]).unwrap();
        let mut m = prev.as_object().unwrap().clone();
        m.insert("seq".into(), (prev["seq"].as_u64().unwrap() + 1).into());
        m.insert("prev_hash".into(), prev["hash"].clone());
        let h = record_hash(&m);
        m.insert("hash".into(), hex(&h).into());
        let other = ed25519_dalek::SigningKey::from_bytes(&[9u8; 32]);
        m.insert("sig".into(), keys::sign_hash(&other, &h).into());
        l.insert(2, canonical(&Value::Object(m)));
        write_lines(&p, &l);
        let pr = problem(d.path());
        assert_eq!((pr.kind, pr.line), (ProblemKind::Inserted, 3), "{pr:?}");
    }

    #[test]
    fn swapped_records_are_caught() {
        let d = tempfile::tempdir().unwrap();
        log_with_segments(d.path());
        let p = active(d.path());
        let mut l = lines(&p);
        l.swap(2, 3);
        write_lines(&p, &l);
        let pr = problem(d.path());
        assert_eq!((pr.kind, pr.line), (ProblemKind::Reordered, 3), "{pr:?}");
    }

    #[test]
    fn rehashed_forgery_of_last_record_is_caught() {
        let d = tempfile::tempdir().unwrap();
        log_with_segments(d.path());
        let p = active(d.path());
        let mut l = lines(&p);
        let last = l.len() - 1;
        let v: Value = serde_json::from_str(&l[last]).unwrap();
        let mut m = v.as_object().unwrap().clone();
        m.insert("body".into(), serde_json::json!({"forged": true}));
        let h = record_hash(&m);
        m.insert("hash".into(), hex(&h).into());
        l[last] = canonical(&Value::Object(m));
        write_lines(&p, &l);
        let pr = problem(d.path());
        assert_eq!(
            (pr.kind, pr.line),
            (ProblemKind::BadSignature, last as u64 + 1),
            "{pr:?}"
        );
    }

    #[test]
    fn truncated_tail_is_named_and_repaired() {
        let d = tempfile::tempdir().unwrap();
        let c = log_with_segments(d.path());
        let p = active(d.path());
        let data = fs::read(&p).unwrap();
        fs::write(&p, &data[..data.len() - 40]).unwrap();
        let pr = problem(d.path());
        assert_eq!(pr.kind, ProblemKind::TruncatedTail, "{pr:?}");
        assert!(!pr.kind.is_tampering());
        // The next writer starts a new segment recording the break.
        let mut log = AuditLog::open(&c).unwrap();
        log.append_run_start(&sample_start("after-crash")).unwrap();
        let r = verify(d.path()).unwrap();
        assert!(r.ok, "{r}");
        // ... and the torn bytes are still there as evidence.
        assert_eq!(fs::read(&p).unwrap(), &data[..data.len() - 40]);
    }

    #[test]
    fn torn_closed_segment_without_break_record_is_caught() {
        let d = tempfile::tempdir().unwrap();
        log_with_segments(d.path());
        let segs = segments::list(d.path()).unwrap();
        let p = &segs[1].path;
        let data = fs::read(p).unwrap();
        fs::write(p, &data[..data.len() - 10]).unwrap();
        let pr = problem(d.path());
        assert_eq!((pr.kind, pr.segment), (ProblemKind::Deleted, 2), "{pr:?}");
    }

    #[test]
    fn deleted_middle_segment_is_caught() {
        let d = tempfile::tempdir().unwrap();
        log_with_segments(d.path());
        fs::remove_file(d.path().join(segments::plain_name(3))).unwrap();
        let pr = problem(d.path());
        assert_eq!(
            (pr.kind, pr.segment),
            (ProblemKind::MissingSegment, 3),
            "{pr:?}"
        );
    }

    #[test]
    fn deleted_compressed_segment_and_renames_are_caught() {
        let d = tempfile::tempdir().unwrap();
        let mut c = cfg(d.path());
        c.rotate_bytes = 4000;
        drop(make_log(&c, 30));
        let segs = segments::list(d.path()).unwrap();
        assert!(segs[..segs.len() - 1].iter().all(|s| s.compressed));
        assert!(verify(d.path()).unwrap().ok);
        // Delete segment 2 and renumber 3 -> 2 to close the gap.
        fs::remove_file(&segs[1].path).unwrap();
        fs::rename(&segs[2].path, &segs[1].path).unwrap();
        let pr = problem(d.path());
        assert_eq!(pr.kind, ProblemKind::MissingSegment, "{pr:?}");
    }

    #[test]
    fn deleted_first_segment_needs_a_retention_record() {
        let d = tempfile::tempdir().unwrap();
        log_with_segments(d.path());
        fs::remove_file(d.path().join(segments::plain_name(1))).unwrap();
        let pr = problem(d.path());
        assert_eq!(pr.kind, ProblemKind::MissingSegment, "{pr:?}");
    }

    #[test]
    fn retention_deletes_old_segments_without_breaking_verify() {
        let d = tempfile::tempdir().unwrap();
        let mut c = log_with_segments(d.path());
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(40 * 86_400);
        let segs = segments::list(d.path()).unwrap();
        for s in &segs[..2] {
            fs::File::options()
                .write(true)
                .open(&s.path)
                .unwrap()
                .set_modified(old)
                .unwrap();
        }
        c.retention_days = 30;
        drop(AuditLog::open(&c).unwrap());
        let left = segments::list(d.path()).unwrap();
        assert_eq!(left.first().unwrap().number, 3);
        let r = verify(d.path()).unwrap();
        assert!(r.ok, "{r}");
        // A second expiry, which deletes the segment holding nothing special.
        for s in &left[..1] {
            fs::File::options()
                .write(true)
                .open(&s.path)
                .unwrap()
                .set_modified(old)
                .unwrap();
        }
        drop(AuditLog::open(&c).unwrap());
        assert_eq!(segments::list(d.path()).unwrap().first().unwrap().number, 4);
        let r = verify(d.path()).unwrap();
        assert!(r.ok, "{r}");
        // But deleting the next one by hand is still caught.
        fs::remove_file(d.path().join(segments::plain_name(4))).unwrap();
        assert_eq!(problem(d.path()).kind, ProblemKind::MissingSegment);
    }

    #[test]
    fn pinned_fingerprint() {
        let d = tempfile::tempdir().unwrap();
        log_with_segments(d.path());
        let fp = keys::key_fingerprint(d.path()).unwrap();
        assert!(verify_pinned(d.path(), Some(&fp)).unwrap().ok);
        let r = verify_pinned(d.path(), Some("SHA256:00")).unwrap();
        assert_eq!(r.problem.unwrap().kind, ProblemKind::WrongKey);
    }
}
