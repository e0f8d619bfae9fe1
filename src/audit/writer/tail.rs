//! Finding the real end of the log before an append: another process may have
//! written, rotated or crashed since this one last looked.

use std::fs::{self, OpenOptions};
use std::path::Path;

use serde_json::{json, Value};

use super::{Active, AuditLog};
use crate::audit::error::AuditError;
use crate::audit::line::{check_line, LineFault};
use crate::audit::record::{self, GENESIS_HASH};
use crate::audit::segments::{self, SegmentFile};

impl AuditLog {
    /// Makes `self.active` describe the real end of the log. Cheap when this
    /// process wrote last (two stats and an fstat); otherwise re-reads the
    /// tail. `full` also finishes interrupted compressions.
    pub(super) fn refresh(&mut self, full: bool) -> Result<(), AuditError> {
        if !full && self.active_is_current() {
            return Ok(());
        }
        self.active = None;
        let segs = segments::list(&self.dir)?;
        let Some(last) = segs.last().cloned() else {
            return self.start_segment(
                1,
                0,
                GENESIS_HASH.to_string(),
                json!({"reason": "genesis"}),
            );
        };
        remove_duplicates(&segs, &last)?;
        if full && self.cfg.compress {
            self.finish_compressions(&segs, &last)?;
        }
        if last.compressed {
            // The active segment is gone (only possible if removed by hand):
            // continue the chain in a new one rather than reopen a .gz.
            let (seq, hash) = last_of_segment(&last)?.ok_or(AuditError::TailCorrupt {
                segment: last.number,
                reason: "compressed last segment has no complete record".into(),
            })?;
            return self.start_segment(last.number + 1, seq, hash, json!({"reason": "resume"}));
        }
        self.reopen_tail(last)
    }

    /// Whether no other process wrote or rotated since this one last did.
    fn active_is_current(&self) -> bool {
        let Some(a) = &self.active else {
            return false;
        };
        let next = self.dir.join(segments::plain_name(a.number + 1));
        let len = a.file.metadata().map(|m| m.len()).ok();
        len == Some(a.len) && a.path.exists() && !next.exists()
    }

    /// Compresses the closed segments a crash left plain.
    fn finish_compressions(
        &self,
        segs: &[SegmentFile],
        last: &SegmentFile,
    ) -> Result<(), AuditError> {
        for s in segs
            .iter()
            .filter(|s| s.number != last.number && !s.compressed)
        {
            let s = SegmentFile {
                duplicate_gz: None,
                ..s.clone()
            };
            if s.path.exists() {
                segments::compress(&self.dir, &s)?;
            }
        }
        Ok(())
    }

    /// Opens the plain last segment and checks its last record; a torn line
    /// after it starts a new segment that records the break.
    fn reopen_tail(&mut self, last: SegmentFile) -> Result<(), AuditError> {
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .open(&last.path)
            .map_err(AuditError::io("open active segment", &last.path))?;
        let len = file
            .metadata()
            .map_err(AuditError::io("stat active segment", &last.path))?
            .len();
        let tail = segments::read_tail(&file, len)
            .map_err(AuditError::io("read segment tail", &last.path))?;
        let Some(line) = tail.last_line.as_deref() else {
            return Err(AuditError::TailCorrupt {
                segment: last.number,
                reason: "no complete record".into(),
            });
        };
        let (seq, hash) = self.last_link(last.number, line)?;
        if tail.torn_bytes > 0 {
            let brk = json!({
                "reason": "tail_repair",
                "break": {"segment": last.number, "offset": tail.good_len, "torn_bytes": tail.torn_bytes},
            });
            return self.start_segment(last.number + 1, seq, hash, brk);
        }
        self.active = Some(Active {
            number: last.number,
            first_day: first_day(&last.path),
            path: last.path,
            file,
            len,
            last_seq: seq,
            last_hash: hash,
        });
        Ok(())
    }

    /// The seq and hash of the segment's last complete line, which must check
    /// out: a writer never extends a chain it cannot trust.
    fn last_link(&self, segment: u64, line: &[u8]) -> Result<(u64, String), AuditError> {
        let checked = check_line(line, &self.vk);
        match (&checked.fault, &checked.parsed) {
            (None, Some(p)) => Ok((p.seq, p.hash.clone())),
            (fault, _) => Err(AuditError::TailCorrupt {
                segment,
                reason: fault
                    .as_ref()
                    .map_or_else(|| "unreadable".into(), LineFault::describe),
            }),
        }
    }
}

/// Drops the copy a crash during compression left twice.
fn remove_duplicates(segs: &[SegmentFile], last: &SegmentFile) -> Result<(), AuditError> {
    for s in segs {
        if let Some(gz) = &s.duplicate_gz {
            // The .gz twin was fsynced before being renamed into place, so
            // it is complete; the plain copy is the one to drop. For the
            // last segment the plain file is the live one.
            let victim = if s.number == last.number { gz } else { &s.path };
            fs::remove_file(victim).map_err(AuditError::io("remove duplicate segment", victim))?;
        }
    }
    Ok(())
}

fn first_day(path: &Path) -> Option<time::Date> {
    let line = segments::read_first_line(path).ok()??;
    let v: Value = serde_json::from_slice(&line).ok()?;
    record::parse_time(v.get("time")?.as_str()?)
        .ok()
        .map(|t| t.date())
}

pub(super) fn last_of_segment(seg: &SegmentFile) -> Result<Option<(u64, String)>, AuditError> {
    let data = segments::read_all(seg)?;
    let (lines, _) = segments::split_lines(&data);
    Ok(lines.last().and_then(|(_, l)| {
        let v: Value = serde_json::from_slice(l).ok()?;
        Some((
            v.get("seq")?.as_u64()?,
            v.get("hash")?.as_str()?.to_string(),
        ))
    }))
}
