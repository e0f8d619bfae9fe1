//! Typed errors. Every variant names the step that failed so that an operator
//! reading "audit: ..." on stderr knows what to fix without a debugger.

use std::io;
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    #[error("audit: cannot determine the audit directory: {0}")]
    NoDir(String),

    #[error("audit: {step} ({path}): {source}")]
    Io {
        step: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },

    #[error("audit: directory {path} has mode {mode:04o}; it must not be accessible to group or others (expected 0700)")]
    DirPermissions { path: PathBuf, mode: u32 },

    #[error("audit: directory {path} is owned by uid {owner}, but the writer runs as uid {euid}")]
    DirOwner {
        path: PathBuf,
        owner: u32,
        euid: u32,
    },

    #[error("audit: {path} is not a directory")]
    NotADirectory { path: PathBuf },

    #[error("audit: signing key {path} is missing but the log already has segments; refusing to create a new key (restore the key, or point the config at a new directory)")]
    KeyMissing { path: PathBuf },

    #[error("audit: signing key {path} has mode {mode:04o}; it must be readable by its owner only (expected 0600)")]
    KeyPermissions { path: PathBuf, mode: u32 },

    #[error(
        "audit: signing key {path} is owned by uid {owner}, but the writer runs as uid {euid}"
    )]
    KeyOwner {
        path: PathBuf,
        owner: u32,
        euid: u32,
    },

    #[error("audit: key file {path} is invalid: {reason}")]
    KeyInvalid { path: PathBuf, reason: String },

    #[error("audit: public key {path} does not match the signing key audit.key")]
    KeyMismatch { path: PathBuf },

    #[error("audit: last record of segment {segment} is corrupt ({reason}); refusing to extend a damaged chain, run `maibox audit verify`")]
    TailCorrupt { segment: u64, reason: String },

    #[error("audit: {step}: {source}")]
    Json {
        step: &'static str,
        #[source]
        source: serde_json::Error,
    },

    #[error("audit: record kind `{0}` is reserved for the audit writer itself")]
    ReservedKind(String),

    #[error("audit: record of {size} bytes exceeds the limit of {max} bytes")]
    RecordTooLarge { size: usize, max: usize },

    #[error("audit: invalid time {value:?}: {reason}")]
    BadTime { value: String, reason: String },
}

impl AuditError {
    pub(crate) fn io(
        step: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(io::Error) -> AuditError {
        let path = path.into();
        move |source| AuditError::Io { step, path, source }
    }
}
