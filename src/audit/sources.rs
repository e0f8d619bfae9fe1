//! Side store of script sources, so the next run of the same script path can
//! be diffed against the previous version.
//!
//! `sources/blobs/<sha256>` holds the code (only if at most
//! `max_source_bytes`), `sources/paths/<sha256 of the path>` holds the sha256
//! of the last version run under that path. Both are written via rename, so
//! readers never see half a file. The store is *not* part of the hash chain:
//! it only feeds the diff, and each run-start record carries the code's
//! sha256, so a blob that was tampered with no longer matches its name
//! ([`load`] checks this and ignores it). Files older than the retention
//! period are pruned together with segments.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::error::AuditError;
use super::record::sha256_hex;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreviousSource {
    pub sha256: String,
    /// `None` when that version was larger than `max_source_bytes`.
    pub code: Option<String>,
}

fn root(dir: &Path) -> PathBuf {
    dir.join("sources")
}

fn path_key(script_path: &str) -> String {
    sha256_hex(script_path.as_bytes())
}

pub fn load(dir: &Path, script_path: &str) -> Option<PreviousSource> {
    let r = root(dir);
    let sha = fs::read_to_string(r.join("paths").join(path_key(script_path))).ok()?;
    let sha = sha.trim().to_string();
    if sha.len() != 64 || !sha.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let code = fs::read(r.join("blobs").join(&sha))
        .ok()
        .filter(|c| sha256_hex(c) == sha)
        .and_then(|c| String::from_utf8(c).ok());
    Some(PreviousSource { sha256: sha, code })
}

fn write_replace(dir: &Path, name: &str, data: &[u8]) -> Result<(), AuditError> {
    fs::create_dir_all(dir).map_err(AuditError::io("create source store", dir))?;
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let dst = dir.join(name);
    let mut f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(AuditError::io("create source file", &tmp))?;
    f.write_all(data)
        .map_err(AuditError::io("write source file", &tmp))?;
    fs::rename(&tmp, &dst).map_err(AuditError::io("install source file", &dst))
}

/// Stores `code` as the latest version of `script_path`. `named` is the version
/// the path named before (from [`load`]).
pub fn remember(
    dir: &Path,
    script_path: &str,
    code: &str,
    max_bytes: usize,
    named: Option<&str>,
) -> Result<String, AuditError> {
    let r = root(dir);
    let sha = sha256_hex(code.as_bytes());
    // A blob still in use is kept fresh, or the sweep would take it from under a
    // path that still names it.
    if code.len() <= max_bytes && !touch(&r.join("blobs").join(&sha)) {
        write_replace(&r.join("blobs"), &sha, code.as_bytes())?;
    }
    let paths = r.join("paths");
    let key = path_key(script_path);
    // The same script run again (an agent's retries, a server's client): the path
    // already names this version, and refreshing its time is enough. Replacing it
    // is a rename, a journalled change of the directory, on the way to the code.
    if named == Some(sha.as_str()) && touch(&paths.join(&key)) {
        return Ok(sha);
    }
    write_replace(&paths, &key, sha.as_bytes())?;
    Ok(sha)
}

/// Sets `path`'s modification time to now; false when it cannot (it is gone).
fn touch(path: &Path) -> bool {
    fs::File::open(path)
        .and_then(|f| f.set_modified(SystemTime::now()))
        .is_ok()
}

/// How often [`prune`] lists the store. The `paths` side gains a file for every
/// distinct script path (agents often run each snippet from a fresh temporary
/// file), so listing it on every run would make each run's cost grow with the
/// store; with a retention measured in days, an hourly sweep keeps it as tight.
const PRUNE_EVERY: Duration = Duration::from_secs(3600);

/// Marks the last sweep; its mtime is the only state [`prune`] keeps.
const PRUNE_STAMP: &str = ".pruned";

pub fn prune(dir: &Path, older_than: Duration) -> Result<(), AuditError> {
    let Some(cutoff) = SystemTime::now().checked_sub(older_than) else {
        return Ok(());
    };
    let stamp = root(dir).join(PRUNE_STAMP);
    if swept_lately(&stamp) {
        return Ok(());
    }
    for sub in ["paths", "blobs"] {
        let d = root(dir).join(sub);
        let Ok(rd) = fs::read_dir(&d) else { continue };
        for ent in rd.flatten() {
            let old = ent
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|m| m < cutoff);
            if old {
                fs::remove_file(ent.path())
                    .map_err(AuditError::io("prune source store", ent.path()))?;
            }
        }
    }
    mark_swept(&stamp)
}

/// A stamp from the future (the clock was set back) counts as stale, so a
/// wrong clock can delay a sweep by at most [`PRUNE_EVERY`].
fn swept_lately(stamp: &Path) -> bool {
    fs::metadata(stamp)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|m| SystemTime::now().duration_since(m).ok())
        .is_some_and(|age| age < PRUNE_EVERY)
}

fn mark_swept(stamp: &Path) -> Result<(), AuditError> {
    let Some(parent) = stamp.parent() else {
        return Ok(());
    };
    if !parent.is_dir() {
        // Nothing stored yet: nothing to sweep next time either.
        return Ok(());
    }
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(stamp)
        .and_then(|f| f.set_modified(SystemTime::now()))
        .map_err(AuditError::io("mark the source store swept", stamp))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remember_and_load() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(load(d.path(), "/a.py"), None);
        remember(d.path(), "/a.py", "print(1)\n", 100, None).unwrap();
        let p = load(d.path(), "/a.py").unwrap();
        assert_eq!(p.code.as_deref(), Some("print(1)\n"));
        assert_eq!(p.sha256, sha256_hex(b"print(1)\n"));
        // Too large: hash remembered, code not.
        remember(d.path(), "/a.py", "x = 'long'\n", 5, None).unwrap();
        let p = load(d.path(), "/a.py").unwrap();
        assert_eq!(p.code, None);
        // A blob edited on disk is ignored rather than diffed against.
        remember(d.path(), "/b.py", "good\n", 100, None).unwrap();
        let sha = sha256_hex(b"good\n");
        fs::write(d.path().join("sources/blobs").join(&sha), "evil\n").unwrap();
        assert_eq!(load(d.path(), "/b.py").unwrap().code, None);
    }

    #[test]
    fn a_path_run_again_with_the_same_code_is_refreshed_in_place() {
        use std::os::unix::fs::MetadataExt;
        let d = tempfile::tempdir().unwrap();
        let day = Duration::from_secs(86_400);
        let sha = remember(d.path(), "/a.py", "same\n", 100, None).unwrap();
        let path = root(d.path()).join("paths").join(path_key("/a.py"));
        let before = fs::metadata(&path).unwrap().ino();
        age(&path, 3 * day);
        remember(d.path(), "/a.py", "same\n", 100, Some(&sha)).unwrap();
        let after = fs::metadata(&path).unwrap();
        // Not replaced (the same inode), but fresh for the sweep.
        assert_eq!(after.ino(), before);
        assert!(after.modified().unwrap().elapsed().unwrap() < day);
        // Another version is written anew, and named.
        remember(d.path(), "/a.py", "other\n", 100, Some(&sha)).unwrap();
        assert_eq!(
            load(d.path(), "/a.py").unwrap().code.as_deref(),
            Some("other\n")
        );
    }

    fn age(path: &Path, by: Duration) {
        let f = fs::File::options().write(true).open(path).unwrap();
        f.set_modified(SystemTime::now() - by).unwrap();
    }

    #[test]
    fn prune_removes_what_is_past_retention_at_most_hourly() {
        let d = tempfile::tempdir().unwrap();
        let day = Duration::from_secs(86_400);
        remember(d.path(), "/old.py", "old\n", 100, None).unwrap();
        remember(d.path(), "/new.py", "new\n", 100, None).unwrap();
        let old_path = root(d.path()).join("paths").join(path_key("/old.py"));
        let old_blob = root(d.path()).join("blobs").join(sha256_hex(b"old\n"));
        age(&old_path, 3 * day);
        age(&old_blob, 3 * day);

        prune(d.path(), 2 * day).unwrap();
        assert!(!old_path.exists() && !old_blob.exists());
        assert!(load(d.path(), "/new.py").unwrap().code.is_some());

        // Within the hour, the store is not listed again: an expired entry stays.
        remember(d.path(), "/old.py", "old\n", 100, None).unwrap();
        age(&old_path, 3 * day);
        prune(d.path(), 2 * day).unwrap();
        assert!(old_path.exists());

        // Once the last sweep is an hour old, it goes.
        age(
            &root(d.path()).join(PRUNE_STAMP),
            PRUNE_EVERY + Duration::from_secs(60),
        );
        prune(d.path(), 2 * day).unwrap();
        assert!(!old_path.exists());
        assert!(load(d.path(), "/new.py").is_some());
    }

    #[test]
    fn a_blob_run_again_is_not_swept_from_under_its_path() {
        let d = tempfile::tempdir().unwrap();
        let day = Duration::from_secs(86_400);
        remember(d.path(), "/a.py", "same\n", 100, None).unwrap();
        let blob = root(d.path()).join("blobs").join(sha256_hex(b"same\n"));
        age(&blob, 3 * day);
        remember(d.path(), "/a.py", "same\n", 100, None).unwrap();
        prune(d.path(), 2 * day).unwrap();
        assert_eq!(
            load(d.path(), "/a.py").unwrap().code.as_deref(),
            Some("same\n")
        );
    }

    #[test]
    fn a_stamp_from_the_future_does_not_stop_the_sweep() {
        let d = tempfile::tempdir().unwrap();
        let day = Duration::from_secs(86_400);
        remember(d.path(), "/old.py", "old\n", 100, None).unwrap();
        let old_path = root(d.path()).join("paths").join(path_key("/old.py"));
        age(&old_path, 3 * day);
        let stamp = root(d.path()).join(PRUNE_STAMP);
        fs::write(&stamp, "").unwrap();
        let f = fs::File::options().write(true).open(&stamp).unwrap();
        f.set_modified(SystemTime::now() + day).unwrap();
        prune(d.path(), 2 * day).unwrap();
        assert!(!old_path.exists());
    }
}
