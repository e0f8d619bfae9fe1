//! maibox: a native Linux sandbox for running untrusted Python code.
//!
//! One engine ([`sandbox`]) takes one input ([`policy::Policy`]); the CLI, and later
//! the OCI runtime verbs, are front doors that build that policy.

pub mod assess;
pub mod audit;
pub mod backend;
pub mod cgroup;
pub mod config;
pub mod confine;
pub mod doctor;
pub mod engine;
pub mod error;
pub mod gate;
pub mod image;
pub mod interpreter;
pub mod monitor;
pub mod net;
pub mod oci;
pub mod output;
pub mod policy;
pub mod report;
pub mod rootpath;
pub mod run;
pub mod run_audit;
pub mod teardown;
pub mod timeline;
pub mod units;
