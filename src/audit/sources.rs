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

pub fn remember(
    dir: &Path,
    script_path: &str,
    code: &str,
    max_bytes: usize,
) -> Result<String, AuditError> {
    let r = root(dir);
    let sha = sha256_hex(code.as_bytes());
    if code.len() <= max_bytes {
        let blobs = r.join("blobs");
        if !blobs.join(&sha).exists() {
            write_replace(&blobs, &sha, code.as_bytes())?;
        }
    }
    write_replace(&r.join("paths"), &path_key(script_path), sha.as_bytes())?;
    Ok(sha)
}

pub fn prune(dir: &Path, older_than: Duration) -> Result<(), AuditError> {
    let Some(cutoff) = SystemTime::now().checked_sub(older_than) else {
        return Ok(());
    };
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
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remember_and_load() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(load(d.path(), "/a.py"), None);
        remember(d.path(), "/a.py", "print(1)\n", 100).unwrap();
        let p = load(d.path(), "/a.py").unwrap();
        assert_eq!(p.code.as_deref(), Some("print(1)\n"));
        assert_eq!(p.sha256, sha256_hex(b"print(1)\n"));
        // Too large: hash remembered, code not.
        remember(d.path(), "/a.py", "x = 'long'\n", 5).unwrap();
        let p = load(d.path(), "/a.py").unwrap();
        assert_eq!(p.code, None);
        // A blob edited on disk is ignored rather than diffed against.
        remember(d.path(), "/b.py", "good\n", 100).unwrap();
        let sha = sha256_hex(b"good\n");
        fs::write(d.path().join("sources/blobs").join(&sha), "evil\n").unwrap();
        assert_eq!(load(d.path(), "/b.py").unwrap().code, None);
    }
}
