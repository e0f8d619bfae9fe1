//! The walk over every segment in order: each line checked on its own
//! ([`check_line`]), linked to the one before, each segment starting with its
//! `segment_start`, and the head of the log accounted for; the first problem
//! found is the report's.

use std::collections::{HashMap, HashSet};

use ed25519_dalek::VerifyingKey;
use serde_json::{Map, Value};

use super::{Problem, ProblemKind, VerifyReport};
use crate::audit::line::{check_line, CheckedLine, LineFault, Parsed};
use crate::audit::record::{self, GENESIS_HASH};
use crate::audit::segments;

pub(super) struct Verifier {
    vk: VerifyingKey,
    fingerprint: String,
    pub(super) segments: usize,
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
    pub(super) problem: Option<Problem>,
}

fn body_u64(obj: &Map<String, Value>, path: &[&str]) -> Option<u64> {
    let mut v = obj.get("body")?;
    for k in path {
        v = v.get(k)?;
    }
    v.as_u64()
}

impl Verifier {
    pub(super) fn new(vk: VerifyingKey, fingerprint: String) -> Verifier {
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

    pub(super) fn report(self) -> VerifyReport {
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

    pub(super) fn fail(
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
    pub(super) fn segment(&mut self, number: u64, data: &[u8], is_last: bool) -> bool {
        if !self.follows_previous(number) {
            return false;
        }
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
        for i in 0..checked.len() {
            if !self.record(number, i, &checked) {
                return false;
            }
        }
        match torn {
            Some((_, t)) if is_last => {
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
                false
            }
            Some((off, t)) => {
                self.pending_torn =
                    Some((number, lines.len() as u64 + 1, off as u64, t.len() as u64));
                true
            }
            None => true,
        }
    }

    /// Segment numbers have no gaps.
    fn follows_previous(&mut self, number: u64) -> bool {
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
        true
    }

    /// The `i`th line of segment `number`: sound on its own, the segment's
    /// `segment_start` if first, linked to the record before.
    fn record(&mut self, number: u64, i: usize, checked: &[CheckedLine]) -> bool {
        let c = &checked[i];
        let line_no = i as u64 + 1;
        if let Some(fault) = &c.fault {
            let seq = c.parsed.as_ref().map(|p| p.seq);
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
            self.note_expired(p);
        }
        if let Ok(h) = <[u8; 32]>::try_from(record::unhex(&p.hash).unwrap_or_default().as_slice()) {
            self.seen.insert(h);
        }
        self.records += 1;
        self.prev = Some((p.seq, p.hash.clone()));
        true
    }

    /// The segments a retention record lists as deleted, for [`Self::check_head`].
    fn note_expired(&mut self, p: &Parsed) {
        let Some(Value::Array(del)) = p.obj.get("body").and_then(|b| b.get("deleted")) else {
            return;
        };
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
        let dup = record::unhex(&p.hash)
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
    pub(super) fn check_head(&mut self) {
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
