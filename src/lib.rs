//! maibox: a native Linux sandbox for running untrusted Python code.
//!
//! One engine ([`sandbox`]) takes one input ([`policy::Policy`]); the CLI, and later
//! the OCI runtime verbs, are front doors that build that policy.

pub mod config;
pub mod doctor;
pub mod image;
pub mod interpreter;
pub mod monitor;
pub mod oci;
pub mod output;
pub mod policy;
pub mod report;
pub mod run;
pub mod sandbox;
pub mod units;
