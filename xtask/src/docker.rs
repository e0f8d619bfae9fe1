//! The Docker lane: a local dockerd (xtask/docker/docker-engine.sh, no internet: it imports a
//! Python image made from the host's interpreter) with this checkout's `maibox` registered as
//! the OCI runtime `maibox`, for the integration tests in `tests/docker_*.rs`.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::vm::{in_ci, is_root};

/// A running engine for the lane, stopped on drop when this lane started it.
pub struct Engine {
    script: PathBuf,
    started_here: bool,
}

impl Drop for Engine {
    fn drop(&mut self) {
        if self.started_here {
            let _ = Command::new(&self.script).arg("down").status();
        }
    }
}

fn engine_answers() -> bool {
    Command::new("docker")
        .args(["info", "--format", "{{.ServerVersion}}"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// Starts (or reuses) the engine. `None` means the lane is skipped here, which it says;
/// in CI a lane that cannot start is an error, never a skip.
pub fn up(root: &Path) -> Result<Option<Engine>> {
    let script = root.join("xtask/docker/docker-engine.sh");
    if !is_root() {
        if in_ci() {
            bail!("the Docker lane needs root in CI");
        }
        eprintln!("SKIP docker lane: needs root to install and start dockerd (the tests in tests/docker_*.rs skip too)");
        return Ok(None);
    }
    let was_up = engine_answers();
    let runtime = root.join("target/debug/maibox");
    let st = Command::new(&script)
        .arg("up")
        .env(
            "EXTRA_RUNTIMES",
            format!("maibox={0} maibox-strict={0},--hardened", runtime.display()),
        )
        .current_dir(root)
        .status()
        .context("running xtask/docker/docker-engine.sh up")?;
    if !st.success() {
        if in_ci() {
            bail!("the Docker lane could not start a Docker engine ({st})");
        }
        eprintln!("SKIP docker lane: no Docker engine could be started here ({st})");
        return Ok(None);
    }
    Ok(Some(Engine {
        script,
        started_here: !was_up,
    }))
}

/// The lane's test targets: every `tests/docker_*.rs`.
pub fn test_targets(root: &Path) -> Result<Vec<String>> {
    let mut names = Vec::new();
    for e in std::fs::read_dir(root.join("tests")).context("listing tests/")? {
        let name = e?.file_name().to_string_lossy().into_owned();
        if let Some(stem) = name.strip_suffix(".rs") {
            if stem.starts_with("docker_") {
                names.push(stem.to_string());
            }
        }
    }
    names.sort();
    Ok(names)
}

/// `cargo xtask test-docker`: only the Docker lane.
pub fn test_docker(root: PathBuf) -> Result<()> {
    let targets = test_targets(&root)?;
    if targets.is_empty() {
        eprintln!("docker lane: no tests/docker_*.rs yet");
        return Ok(());
    }
    crate::cargo(&["build", "-p", "maibox"])?;
    let Some(_engine) = up(&root)? else {
        return Ok(());
    };
    let mut args = vec!["test", "-p", "maibox"];
    for t in &targets {
        args.push("--test");
        args.push(t);
    }
    crate::cargo(&args)
}
