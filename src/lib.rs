//! maibox: a native Linux sandbox for running untrusted Python code.
//!
//! The entry point is [`Sandbox`]: a configuration, a trust level and the caller's
//! overrides; each [`Sandbox::run`] builds a fresh sandbox, runs the code once under
//! every layer of its level (namespaces, a read-only root, cgroup limits, no
//! capabilities, seccomp, Landlock), after the static assessment and the gate, with a
//! signed audit record, and returns a [`Run`] with the code's output and the
//! [`Report`].
//!
//! ```
//! use maibox::{Config, Sandbox, TrustLevel};
//!
//! let (config, _) = Config::load(None)?;
//! let run = Sandbox::new(config)
//!     .trust(TrustLevel::Untrusted)
//!     .run_code("print(sum(range(10)))")?;
//! assert_eq!(run.stdout, b"45\n");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Output, stdin, usage samples and maibox's notices go where the caller says
//! ([`Io`]); many runs may go on at once from several threads. [`warm`] prepares
//! sandboxes ahead of their code, [`serve`] is the server that keeps them, and [`oci`]
//! is the OCI runtime's front door. `docs/architecture.md` shows how the pieces fit.

// Functions fit a screen (clippy.toml sets the limit); a test reads as one scenario.
#![warn(clippy::too_many_lines)]
#![cfg_attr(test, allow(clippy::too_many_lines))]

pub mod assess;
pub mod audit;
pub mod config;
pub mod doctor;
pub mod image;
pub mod oci;
pub mod policy;
pub mod report;
pub mod serve;
pub mod session;
pub mod units;
pub mod warm;

// Below the API: reached by this crate's own command line, integration tests and
// xtask, never documented as the library's.
#[doc(hidden)]
pub mod confine;
#[doc(hidden)]
pub mod interpreter;
#[doc(hidden)]
pub mod net;

pub(crate) mod backend;
pub(crate) mod cgroup;
pub(crate) mod code;
pub(crate) mod engine;
pub(crate) mod error;
pub(crate) mod gate;
pub(crate) mod io;
pub(crate) mod mountinfo;
pub(crate) mod outcome;
pub(crate) mod output;
pub(crate) mod rootpath;
pub(crate) mod supervise;
pub(crate) mod teardown;
pub(crate) mod timeline;

pub use assess::{Assessment, Verdict};
pub use cgroup::Usage as CgroupUsage;
pub use config::{Backend, Config, NetworkMode, TrustLevel};
pub use error::{SetupError, Step};
pub use gate::{AssessmentSummary, Decision};
pub use io::{Io, Level, Notice, Sample, Sink, Stdin};
pub use outcome::{DeniedCall, Ending, Usage, Violation};
pub use policy::{Layer, Policy};
pub use report::Report;
pub use session::{Code, Error, Run, Sandbox};
pub use timeline::Timeline;
pub use warm::Warm;
