//! The appending side: one `AuditLog` per maibox process, any number of
//! processes at once.
//!
//! Every append takes an exclusive `flock` on `<dir>/.lock`, re-reads the end
//! of the active segment if another process wrote since, then issues a single
//! `write` of the whole line on an `O_APPEND` descriptor followed by
//! `fdatasync`. The lock is what keeps the chain linear: without it two
//! processes could both extend the same `prev_hash`.

use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::ErrorKind;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use ed25519_dalek::{SigningKey, VerifyingKey};
use nix::fcntl::FlockArg;

use super::config::AuditConfig;
use super::diff::unified_diff;
use super::error::AuditError;
use super::keys;
use super::lock::{lock, LOCK_FILE};
use super::record::{sha256_hex, CodeInfo, Event, RunEnd, RunStart};
use super::segments;
use super::sources::{self, PreviousSource};

mod segment;
mod tail;

/// What an append produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppendedRecord {
    pub seq: u64,
    pub hash: String,
    pub segment: u64,
}

/// A record written but not yet synced (see [`AuditLog::append_unsynced`]).
/// Dropping it syncs too, so a record is never left to the page cache alone.
#[derive(Debug)]
pub struct Unsynced {
    /// `None` once synced.
    file: Option<File>,
    path: PathBuf,
}

impl Unsynced {
    /// Makes the record durable (`fdatasync` of its segment).
    pub fn sync(mut self) -> Result<(), AuditError> {
        self.sync_now()
    }

    fn sync_now(&mut self) -> Result<(), AuditError> {
        match self.file.take() {
            Some(f) => f
                .sync_data()
                .map_err(AuditError::io("fsync record", &self.path)),
            None => Ok(()),
        }
    }
}

impl Drop for Unsynced {
    fn drop(&mut self) {
        if let Err(e) = self.sync_now() {
            // Nobody is left to tell but the operator; the line itself is written.
            eprintln!("maibox: audit log: {e}");
        }
    }
}

/// Result of [`AuditLog::open_policy`]: with `required = false`, a log that
/// cannot be opened yields `Disabled` so the caller can warn and run anyway.
#[derive(Debug)]
pub enum Opened {
    Log(Box<AuditLog>),
    Disabled(AuditError),
}

/// Cached view of the active segment, valid while its length is unchanged.
#[derive(Debug)]
struct Active {
    number: u64,
    path: PathBuf,
    file: File,
    len: u64,
    last_seq: u64,
    last_hash: String,
    first_day: Option<time::Date>,
}

#[derive(Debug)]
pub struct AuditLog {
    dir: PathBuf,
    cfg: AuditConfig,
    key: SigningKey,
    vk: VerifyingKey,
    fingerprint: String,
    lock_file: File,
    active: Option<Active>,
    sync: bool,
}

/// Creates the directory with mode 0700 if missing, then refuses one that
/// others could read or write, or that belongs to someone else: either would
/// let a sandboxed user tamper with or read the log.
fn prepare_dir(dir: &Path) -> Result<(), AuditError> {
    match fs::symlink_metadata(dir) {
        Err(e) if e.kind() == ErrorKind::NotFound => {
            if let Some(parent) = dir.parent() {
                fs::create_dir_all(parent)
                    .map_err(AuditError::io("create audit directory parent", parent))?;
            }
            match DirBuilder::new().mode(0o700).create(dir) {
                Ok(()) => {}
                Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
                Err(e) => return Err(AuditError::io("create audit directory", dir)(e)),
            }
        }
        Err(e) => return Err(AuditError::io("stat audit directory", dir)(e)),
        Ok(_) => {}
    }
    let meta = fs::symlink_metadata(dir).map_err(AuditError::io("stat audit directory", dir))?;
    if !meta.is_dir() {
        return Err(AuditError::NotADirectory {
            path: dir.to_path_buf(),
        });
    }
    let euid = nix::unistd::geteuid().as_raw();
    if meta.uid() != euid {
        return Err(AuditError::DirOwner {
            path: dir.to_path_buf(),
            owner: meta.uid(),
            euid,
        });
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(AuditError::DirPermissions {
            path: dir.to_path_buf(),
            mode,
        });
    }
    Ok(())
}

/// The log's signing key, made only for a fresh log, and its public half,
/// which must match `audit.pub` (written when missing).
fn signing_key(dir: &Path) -> Result<(SigningKey, VerifyingKey), AuditError> {
    let key = match keys::load_signing(dir) {
        Ok(k) => k,
        Err(AuditError::Io { source, .. }) if source.kind() == ErrorKind::NotFound => {
            // A fresh key is only legitimate for a fresh log; otherwise the
            // records signed by the lost key could be silently orphaned.
            if !segments::list(dir)?.is_empty() {
                return Err(AuditError::KeyMissing {
                    path: keys::key_path(dir),
                });
            }
            keys::create(dir)?
        }
        Err(e) => return Err(e),
    };
    let vk = key.verifying_key();
    match keys::load_public(dir) {
        Ok(p) if p == vk => {}
        Ok(_) => {
            return Err(AuditError::KeyMismatch {
                path: keys::pub_path(dir),
            })
        }
        Err(AuditError::Io { source, .. }) if source.kind() == ErrorKind::NotFound => {
            keys::write_public(dir, &vk)?
        }
        Err(e) => return Err(e),
    }
    Ok((key, vk))
}

impl AuditLog {
    /// Opens (creating on first use) the log described by `cfg`: directory
    /// 0700, key 0600, first segment; repairs a torn tail left by a crash by
    /// starting a new segment that records the break; finishes interrupted
    /// compressions; applies retention.
    pub fn open(cfg: &AuditConfig) -> Result<AuditLog, AuditError> {
        let dir = cfg.resolved_dir()?;
        prepare_dir(&dir)?;
        let lock_path = dir.join(LOCK_FILE);
        let lock_file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&lock_path)
            .map_err(AuditError::io("open lock file", &lock_path))?;
        let guard = lock(&lock_file, &lock_path, FlockArg::LockExclusive)?;
        segments::remove_tmp_files(&dir)?;
        let (key, vk) = signing_key(&dir)?;
        let mut log = AuditLog {
            fingerprint: keys::fingerprint_of(&vk),
            dir,
            cfg: cfg.clone(),
            key,
            vk,
            lock_file,
            active: None,
            sync: true,
        };
        log.refresh(true)?;
        log.apply_retention()?;
        drop(guard);
        Ok(log)
    }

    /// Like [`AuditLog::open`], but when `cfg.required` is false an error is
    /// handed back as `Opened::Disabled` instead of failing.
    pub fn open_policy(cfg: &AuditConfig) -> Result<Opened, AuditError> {
        match AuditLog::open(cfg) {
            Ok(l) => Ok(Opened::Log(Box::new(l))),
            Err(e) if !cfg.required => Ok(Opened::Disabled(e)),
            Err(e) => Err(e),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn key_fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// Appends one record. Returns only after the line is on disk (fdatasync);
    /// any failure is returned, never swallowed.
    pub fn append(&mut self, event: Event) -> Result<AppendedRecord, AuditError> {
        self.append_with(event, false).map(|(r, _)| r)
    }

    /// Appends one record and returns before it is synced: the line is in the
    /// file (a reader, a later append or a killed process sees it), and the
    /// returned [`Unsynced`] makes it durable when synced or dropped. For a
    /// server that answers its client first: only a machine crash in between
    /// could lose the line.
    pub fn append_unsynced(
        &mut self,
        event: Event,
    ) -> Result<(AppendedRecord, Option<Unsynced>), AuditError> {
        self.append_with(event, true)
    }

    fn append_with(
        &mut self,
        event: Event,
        defer_sync: bool,
    ) -> Result<(AppendedRecord, Option<Unsynced>), AuditError> {
        if event.kind.writer_only() {
            return Err(AuditError::ReservedKind(event.kind.as_str().into()));
        }
        let lock_path = self.dir.join(LOCK_FILE);
        let _guard = lock(&self.lock_file, &lock_path, FlockArg::LockExclusive)?;
        self.refresh(false)?;
        self.rotate_if_due()?;
        self.write_record(event.kind, event.run_id.as_deref(), event.body, defer_sync)
    }

    pub fn append_run_start(&mut self, s: &RunStart) -> Result<AppendedRecord, AuditError> {
        self.append(Event::run_start(s)?)
    }

    pub fn append_run_end(&mut self, e: &RunEnd) -> Result<AppendedRecord, AuditError> {
        self.append(Event::run_end(e)?)
    }

    /// The previous version of the script last run under `script_path`.
    pub fn previous_source(&self, script_path: &str) -> Option<PreviousSource> {
        sources::load(&self.dir, script_path)
    }

    /// Stores `code` as the latest version of `script_path` (the code itself
    /// only up to `max_source_bytes`); `named` is the version the path named
    /// before ([`Self::previous_source`]). Returns its sha256.
    pub fn remember_source(
        &self,
        script_path: &str,
        code: &str,
        named: Option<&str>,
    ) -> Result<String, AuditError> {
        let max = self.cfg.max_source_bytes;
        sources::remember(&self.dir, script_path, code, max, named)
    }

    /// Fills the `code` part of a run-start record: hash, size and, for a
    /// script path seen before, the capped diff against the previous version;
    /// then remembers this version for the next run.
    pub fn code_info(&self, script_path: Option<&str>, code: &str) -> Result<CodeInfo, AuditError> {
        let sha256 = sha256_hex(code.as_bytes());
        let mut info = CodeInfo {
            path: script_path.map(str::to_string),
            sha256,
            size: code.len() as u64,
            previous_sha256: None,
            diff: None,
        };
        if let Some(p) = script_path {
            if let Some(prev) = self.previous_source(p) {
                if prev.sha256 != info.sha256 {
                    info.diff = prev
                        .code
                        .as_deref()
                        .map(|old| unified_diff(old, code, self.cfg.max_diff_bytes));
                }
                info.previous_sha256 = Some(prev.sha256);
            }
            self.remember_source(p, code, info.previous_sha256.as_deref())?;
        }
        Ok(info)
    }

    #[cfg(test)]
    pub(crate) fn set_sync(&mut self, sync: bool) {
        self.sync = sync;
    }
}

#[cfg(test)]
mod tests;
