//! maibox: a native Linux sandbox for running untrusted Python code.
//!
//! One engine ([`engine`]) takes one input ([`policy::Policy`]); the CLI, the OCI
//! runtime verbs and embedding programs are front doors that build that policy. The
//! entry point for a program is [`Sandbox`].

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
pub mod io;
pub mod net;
pub mod oci;
pub mod outcome;
pub mod output;
pub mod policy;
pub mod report;
pub mod rootpath;
pub mod serve;
pub mod session;
pub mod supervise;
pub mod teardown;
pub mod timeline;
pub mod units;
pub mod warm;

pub use config::{Config, NetworkMode, TrustLevel};
pub use io::{Io, Notice, Sample, Sink, Stdin};
pub use outcome::{Ending, Usage, Violation};
pub use report::Report;
pub use session::{Code, Error, Run, Sandbox};
pub use timeline::Timeline;
