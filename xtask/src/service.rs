//! A lane's background service (dockerd, containerd): started by the lane's script, or
//! reused when it already answers, and stopped on drop only when this run started it.

use anyhow::{bail, Context, Result};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::vm::{in_ci, is_root};

/// A lane's running service.
pub struct Service {
    script: PathBuf,
    started_here: bool,
}

impl Drop for Service {
    fn drop(&mut self) {
        if self.started_here {
            let _ = Command::new(&self.script).arg("down").status();
        }
    }
}

/// What a lane needs to bring its service up.
pub struct Lane<'a> {
    /// As the messages name it: "Docker lane".
    pub name: &'a str,
    /// The lane's script, relative to the checkout; it takes `up` and `down`.
    pub script: &'a str,
    /// What else skips with the lane on a user's machine, for the skip message.
    pub also_skipped: &'a str,
    /// Whether the service already answers (then it is left running afterwards).
    pub answers: fn(&Path) -> bool,
    pub env: Vec<(&'a str, OsString)>,
}

/// Starts (or reuses) the lane's service. `None` means the lane is skipped here, which
/// it says; in CI a lane that cannot start is an error, never a skip.
pub fn up(root: &Path, lane: Lane) -> Result<Option<Service>> {
    let script = root.join(lane.script);
    if !is_root() {
        if in_ci() {
            bail!("the {} needs root in CI", lane.name);
        }
        eprintln!(
            "SKIP {}: needs root to install and start its service ({} skip too)",
            lane.name, lane.also_skipped
        );
        return Ok(None);
    }
    let was_up = (lane.answers)(&script);
    let st = Command::new(&script)
        .arg("up")
        .envs(lane.env)
        .current_dir(root)
        .status()
        .with_context(|| format!("running {} up", lane.script))?;
    if !st.success() {
        if in_ci() {
            bail!("the {} could not start its service ({st})", lane.name);
        }
        eprintln!(
            "SKIP {}: its service could not be started here ({st})",
            lane.name
        );
        return Ok(None);
    }
    Ok(Some(Service {
        script,
        started_here: !was_up,
    }))
}
