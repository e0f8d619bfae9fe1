//! The OCI verbs' errors: each names what failed; the verbs log them to
//! `--log` and stderr (see [`super::cli`]).

use super::bundle::BundleError;
use super::state::StateError;
use crate::engine::oci::hooks::HookError;
use crate::error::SetupError;

#[derive(Debug, thiserror::Error)]
pub enum OciError {
    #[error(transparent)]
    Bundle(#[from] BundleError),
    #[error(transparent)]
    State(#[from] StateError),
    #[error(transparent)]
    Setup(#[from] SetupError),
    #[error(transparent)]
    Hook(#[from] HookError),
    #[error("{0}")]
    Refused(String),
    /// A runc verb maibox does not implement (`checkpoint`, `restore`).
    #[error("{verb} of container {id} is not supported by maibox: {why}")]
    Unsupported {
        verb: &'static str,
        id: String,
        why: &'static str,
    },
    #[error("{what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
}

pub(crate) fn io_err(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> OciError {
    let what = what.into();
    move |source| OciError::Io { what, source }
}
