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

use std::fmt;
use std::fs::File;
use std::path::Path;

use nix::fcntl::FlockArg;

use super::error::AuditError;
use super::keys;
use super::lock::{lock, LOCK_FILE};
use super::segments;

mod chain;
use chain::Verifier;

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

#[cfg(test)]
mod tests;
