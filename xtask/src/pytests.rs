//! The Python package's tests: `pip install ./python` into a fresh virtual environment
//! (offline: the package builds with its own in-tree backend, `--no-index` proves it),
//! then pytest (pinned, from PyPI) against a real server and the CLI fallback.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The pytest the tests are written against.
pub const PYTEST: &str = "pytest==9.2.0";

fn target(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"))
}

fn run(c: &mut Command, what: &str) -> Result<()> {
    let st = c.status().with_context(|| format!("running {what}"))?;
    if !st.success() {
        bail!("{what} failed ({st})");
    }
    Ok(())
}

pub fn test(root: &Path) -> Result<()> {
    let venv = target(root).join("python-tests-venv");
    eprintln!(
        "==> pip install ./python into a fresh venv ({})",
        venv.display()
    );
    crate::bandit::make_venv(&venv)?;
    let pip = venv.join("bin/pip");
    run(
        Command::new(&pip)
            .args(["install", "--quiet", "--no-index", "--no-cache-dir"])
            .arg(root.join("python")),
        "pip install --no-index ./python (must work offline)",
    )?;
    run(
        Command::new(&pip).args(["install", "--quiet", PYTEST]),
        "pip install pytest",
    )?;
    let maibox = target(root).join("debug/maibox");
    eprintln!("==> pytest python/tests");
    run(
        Command::new(venv.join("bin/python"))
            .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"])
            .current_dir(root.join("python"))
            .env("MAIBOX_BIN", &maibox)
            .env_remove("MAIBOX_SOCKET")
            .env_remove("MAIBOX_CONFIG"),
        "pytest python/tests",
    )
}
