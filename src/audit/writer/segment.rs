//! Writing records into segments: a new segment (with its `segment_start`),
//! rotation by size or day, one signed record, and retention.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::time::{Duration, SystemTime};

use serde_json::{json, Value};

use super::tail::last_of_segment;
use super::{Active, AppendedRecord, AuditLog, Unsynced};
use crate::audit::error::AuditError;
use crate::audit::line::build_line;
use crate::audit::record::Kind;
use crate::audit::segments::{self, SegmentFile};
use crate::audit::sources;

impl AuditLog {
    /// Creates segment `number` whose first record is a `segment_start`
    /// linking to (`last_seq`, `last_hash`); `extra` carries the reason.
    pub(super) fn start_segment(
        &mut self,
        number: u64,
        last_seq: u64,
        last_hash: String,
        extra: Value,
    ) -> Result<(), AuditError> {
        let mut body = json!({
            "segment": number,
            "key": self.fingerprint,
            "previous": {"segment": number - 1, "last_seq": last_seq, "last_hash": last_hash},
        });
        if let (Some(b), Value::Object(e)) = (body.as_object_mut(), extra) {
            b.extend(e);
        }
        let (line, hash) = build_line(
            &self.key,
            last_seq + 1,
            &last_hash,
            Kind::SegmentStart,
            None,
            body,
        )?;
        let path = segments::create_complete(&self.dir, &segments::plain_name(number), &line)?;
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .open(&path)
            .map_err(AuditError::io("open active segment", &path))?;
        self.active = Some(Active {
            number,
            path,
            file,
            len: line.len() as u64,
            last_seq: last_seq + 1,
            last_hash: hash,
            first_day: Some(time::OffsetDateTime::now_utc().date()),
        });
        Ok(())
    }

    pub(super) fn rotate_if_due(&mut self) -> Result<(), AuditError> {
        let Some(a) = &self.active else { return Ok(()) };
        let today = time::OffsetDateTime::now_utc().date();
        let reason = if self.cfg.rotate_bytes > 0 && a.len >= self.cfg.rotate_bytes {
            "size"
        } else if self.cfg.rotate_daily && a.first_day.is_some_and(|d| d != today) {
            "day"
        } else {
            return Ok(());
        };
        let old = SegmentFile {
            number: a.number,
            path: a.path.clone(),
            compressed: false,
            duplicate_gz: None,
        };
        let (n, seq, hash) = (a.number + 1, a.last_seq, a.last_hash.clone());
        self.start_segment(n, seq, hash, json!({ "reason": reason }))?;
        if self.cfg.compress {
            // Best effort: the chain is already intact in the new segment, and
            // the next `open` retries compressing any plain closed segment.
            let _ = segments::compress(&self.dir, &old);
        }
        Ok(())
    }

    /// Writes one line; syncs it unless `defer_sync`, which hands the caller a
    /// handle on the segment to sync instead (the line is already in the file).
    pub(super) fn write_record(
        &mut self,
        kind: Kind,
        run_id: Option<&str>,
        body: Value,
        defer_sync: bool,
    ) -> Result<(AppendedRecord, Option<Unsynced>), AuditError> {
        let Some(a) = self.active.as_mut() else {
            return Err(AuditError::TailCorrupt {
                segment: 0,
                reason: "no active segment".into(),
            });
        };
        let seq = a.last_seq + 1;
        let (line, hash) = build_line(&self.key, seq, &a.last_hash, kind, run_id, body)?;
        if let Err(e) = a.file.write_all(&line) {
            // Undo a partial line so the next record does not follow garbage;
            // if even that fails the next writer sees a torn tail and repairs.
            let _ = a.file.set_len(a.len);
            let path = a.path.clone();
            self.active = None;
            return Err(AuditError::io("write record", path)(e));
        }
        // A handle that cannot be made (no descriptor left) means syncing here.
        let unsynced = match self.sync && defer_sync {
            true => a.file.try_clone().ok().map(|file| Unsynced {
                file: Some(file),
                path: a.path.clone(),
            }),
            false => None,
        };
        if self.sync && unsynced.is_none() {
            if let Err(e) = a.file.sync_data() {
                let path = a.path.clone();
                self.active = None;
                return Err(AuditError::io("fsync record", path)(e));
            }
        }
        a.len += line.len() as u64;
        a.last_seq = seq;
        a.last_hash = hash.clone();
        let record = AppendedRecord {
            seq,
            hash,
            segment: a.number,
        };
        Ok((record, unsynced))
    }

    /// Deletes the oldest closed segments whose mtime is past the retention
    /// period. The deletion is recorded first (segment numbers with their last
    /// seq and hash), so `verify` can tell expiry from tampering; the files
    /// go only after that record is on disk.
    pub(super) fn apply_retention(&mut self) -> Result<(), AuditError> {
        if self.cfg.retention_days == 0 {
            return Ok(());
        }
        let max_age = Duration::from_secs(u64::from(self.cfg.retention_days) * 86_400);
        let Some(cutoff) = SystemTime::now().checked_sub(max_age) else {
            return Ok(());
        };
        let segs = segments::list(&self.dir)?;
        let active = self.active.as_ref().map(|a| a.number);
        let mut doomed = Vec::new();
        for s in &segs {
            let mtime = fs::metadata(&s.path)
                .and_then(|m| m.modified())
                .map_err(AuditError::io("stat segment", &s.path))?;
            // Only a prefix may go, so the surviving log stays one chain.
            if Some(s.number) == active || mtime >= cutoff {
                break;
            }
            doomed.push(s.clone());
        }
        if doomed.is_empty() {
            return sources::prune(&self.dir, max_age);
        }
        let mut entries = Vec::new();
        for s in &doomed {
            let (last_seq, last_hash) = last_of_segment(s)?.ok_or(AuditError::TailCorrupt {
                segment: s.number,
                reason: "expired segment has no complete record".into(),
            })?;
            entries
                .push(json!({"segment": s.number, "last_seq": last_seq, "last_hash": last_hash}));
        }
        self.rotate_if_due()?;
        self.write_record(
            Kind::Retention,
            None,
            json!({"retention_days": self.cfg.retention_days, "deleted": entries}),
            false,
        )?;
        for s in &doomed {
            fs::remove_file(&s.path).map_err(AuditError::io("delete expired segment", &s.path))?;
            if let Some(gz) = &s.duplicate_gz {
                fs::remove_file(gz).map_err(AuditError::io("delete expired segment", gz))?;
            }
        }
        segments::sync_dir(&self.dir)?;
        sources::prune(&self.dir, max_age)
    }
}
