//! Typed setup errors: every failure names the setup step it happened in.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The ordered setup steps of a sandbox. A failure in any of them aborts the run
/// before user code starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Step {
    Pipes,
    Signals,
    Clone,
    UserNsMap,
    Sync,
    Identity,
    Namespaces,
    MountPropagation,
    OpenSources,
    RootTmpfs,
    Overlay,
    BindHost,
    Etc,
    Proc,
    Dev,
    Tmp,
    Script,
    PivotRoot,
    ReadOnlyRoot,
    Hostname,
    Rlimits,
    Session,
    CloseFds,
    Capabilities,
    NoNewPrivs,
    Landlock,
    Seccomp,
    Cgroup,
    Network,
    Exec,
    Wait,
    /// Docker backend: reaching the engine.
    Engine,
    /// Docker backend: finding (or pulling) the image.
    Image,
    /// Docker backend: creating, filling or starting the container.
    Container,
    /// OCI: the spec's hooks.
    Hooks,
    /// Recording the run's start in the audit log, done while the sandbox sets up.
    Audit,
    /// `warm_mode: fork`: starting the zygote or forking an interpreter from it.
    Zygote,
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = serde_json::to_value(self)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_else(|| format!("{self:?}"));
        f.write_str(&s)
    }
}

#[derive(Debug, Clone, thiserror::Error, Serialize, Deserialize)]
#[error("sandbox setup failed at step `{step}`: {message}")]
pub struct SetupError {
    pub step: Step,
    pub message: String,
}

impl SetupError {
    pub fn new(step: Step, message: impl Into<String>) -> Self {
        SetupError {
            step,
            message: message.into(),
        }
    }
}

/// Attaches a step to any displayable error.
pub trait StepContext<T> {
    fn step(self, step: Step, what: impl fmt::Display) -> Result<T, SetupError>;
}

impl<T, E: fmt::Display> StepContext<T> for Result<T, E> {
    fn step(self, step: Step, what: impl fmt::Display) -> Result<T, SetupError> {
        self.map_err(|e| SetupError::new(step, format!("{what}: {e}")))
    }
}

/// A setting of an OCI spec that maibox refuses, named by its field: invalid,
/// or valid but not enforced (a container never runs weaker than its spec).
/// The readers of the spec below the OCI front door (seccomp, cgroups) return
/// it; the front door reports it as one of its bundle errors.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    #[error("config.json: {field}: {message}")]
    Invalid { field: String, message: String },
    #[error(
        "config.json: {field} is not enforced by maibox yet; refusing to run with less \
         confinement than the spec asks ({hint})"
    )]
    Unenforced { field: String, hint: String },
}
