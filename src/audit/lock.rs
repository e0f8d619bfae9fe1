//! The log's lock: every writer takes `<dir>/.lock` exclusively for an append,
//! and a verifier takes it shared for a consistent snapshot.

use std::fs::File;
use std::path::Path;

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};

use super::error::AuditError;

pub const LOCK_FILE: &str = ".lock";

/// Takes `arg` on `file` (at `path`, for the error), retrying on EINTR.
pub(crate) fn lock(file: &File, path: &Path, arg: FlockArg) -> Result<Flock<File>, AuditError> {
    let mut f = file
        .try_clone()
        .map_err(AuditError::io("duplicate lock descriptor", path))?;
    loop {
        match Flock::lock(f, arg) {
            Ok(g) => return Ok(g),
            Err((back, Errno::EINTR)) => f = back,
            Err((_, e)) => {
                return Err(AuditError::Io {
                    step: "lock audit log",
                    path: path.to_path_buf(),
                    source: e.into(),
                })
            }
        }
    }
}
