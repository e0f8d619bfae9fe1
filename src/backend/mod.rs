//! Who isolates a run. The native engine lives in `crate::engine`; the Docker backend
//! hands the same [`crate::policy::Policy`] to a Docker engine through its API.

pub mod docker;

pub use crate::config::Backend;
