//! Tamper-evident audit log of every sandboxed run (issue 6).
//!
//! Layout of the audit directory (mode 0700, owned by the writer):
//!
//! ```text
//! audit.key               Ed25519 seed, hex, mode 0600 (only the writer reads it)
//! audit.pub               Ed25519 public key, hex, mode 0644 (what `verify` uses)
//! .lock                   flock(2) target serialising every writer
//! seg-00000001.jsonl.gz   rotated segments, gzip-compressed
//! seg-00000002.jsonl      the active segment (always the highest number)
//! sources/                capped copies of previously run scripts (see [`sources`])
//! ```
//!
//! Every line of a segment is one [`record::Record`]; the records form one hash
//! chain across all segments (see [`record`] for the canonical serialization and
//! [`verify`](mod@verify) for what is checked).

pub mod config;
pub mod diff;
pub mod error;
pub mod keys;
pub(crate) mod line;
pub(crate) mod lock;
pub mod record;
pub mod render;
pub mod segments;
pub mod sources;
pub mod verify;
pub mod writer;

pub use config::AuditConfig;
pub use diff::unified_diff;
pub use error::AuditError;
pub use keys::key_fingerprint;
pub use record::{Assessment, Caller, CodeInfo, Event, Kind, Record, RunEnd, RunStart};
pub use render::{show, tail, tail_with, ShowFilter, TailOptions};
pub use sources::PreviousSource;
pub use verify::{verify, verify_pinned, Problem, ProblemKind, VerifyReport};
pub use writer::{AppendedRecord, AuditLog, Opened, Unsynced};

#[cfg(test)]
pub(crate) mod testutil;
