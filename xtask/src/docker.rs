//! The Docker lane: a local dockerd (xtask/docker/docker-engine.sh, no internet: it imports a
//! Python image made from the host's interpreter) with this checkout's `maibox` registered as
//! the OCI runtime `maibox`, for the integration tests in `tests/docker_*.rs`.

use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::service::{Lane, Service};

fn engine_answers(_script: &Path) -> bool {
    Command::new("docker")
        .args(["info", "--format", "{{.ServerVersion}}"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// Starts (or reuses) the engine, with this checkout's `maibox` as its runtimes `maibox`
/// and `maibox-strict`; stopped on drop when this run started it.
pub fn up(root: &Path) -> Result<Option<Service>> {
    let runtime = root.join("target/debug/maibox");
    crate::service::up(
        root,
        Lane {
            name: "Docker lane",
            script: "xtask/docker/docker-engine.sh",
            also_skipped: "the tests in tests/docker_*.rs",
            answers: engine_answers,
            env: vec![(
                "EXTRA_RUNTIMES",
                format!("maibox={0} maibox-strict={0},--hardened", runtime.display()).into(),
            )],
        },
    )
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
