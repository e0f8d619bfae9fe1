//! The Docker lane's side of the tests: `cargo xtask test` (as root) starts a local engine
//! with this checkout's maibox registered as the runtime `maibox` before the tests run.

use std::process::Command;

/// The image the lane imports (xtask/docker/docker-engine.sh): the host's Python, /bin/sh,
/// and a passwd with `sandbox` (1000:1000).
pub const IMAGE: &str = "maibox-python:test";

fn engine_answers() -> bool {
    Command::new("docker")
        .args(["info", "--format", "{{.ServerVersion}}"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// Returns false (and says why) when no Docker engine answers; in CI it fails instead,
/// because `cargo xtask test` starts one there.
pub fn require_engine(test: &str) -> bool {
    if engine_answers() {
        return true;
    }
    assert!(
        !super::in_ci(),
        "{test} needs a Docker engine; in CI `cargo xtask test` starts one (xtask/docker/docker-engine.sh up)"
    );
    eprintln!("SKIP {test}: no Docker engine answers (start one as root: xtask/docker/docker-engine.sh up)");
    false
}
