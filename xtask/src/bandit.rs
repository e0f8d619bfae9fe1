//! Bandit for the `--with bandit` tests: a virtual environment under the target
//! directory, installed once from PyPI at a pinned version and reused after that
//! (one stat when it is there).

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::vm::{in_ci, is_root};

/// The Bandit the tests are written against.
pub const VERSION: &str = "1.9.4";

fn venv_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"))
        .join("tools/bandit")
}

/// The `bandit` to export to the tests as MAIBOX_BANDIT, installing it if needed.
/// `None` (said on stderr) when it cannot be installed outside CI, where the
/// test then skips; in CI that is an error.
pub fn ensure(root: &Path) -> Result<Option<PathBuf>> {
    let venv = venv_dir(root);
    let bandit = venv.join("bin/bandit");
    // Written after a successful install, so a half-done one is redone.
    let stamp = venv.join(format!("installed-bandit-{VERSION}"));
    // The venv's scripts name its interpreter by absolute path: a target directory
    // that was moved or copied holds a venv that no longer runs.
    let runs = || {
        Command::new(&bandit)
            .arg("--version")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if stamp.is_file() && runs() {
        return Ok(Some(bandit));
    }
    match install(&venv) {
        Ok(()) => {
            std::fs::write(&stamp, VERSION)
                .with_context(|| format!("writing {}", stamp.display()))?;
            Ok(Some(bandit))
        }
        Err(e) if !in_ci() => {
            eprintln!("SKIP --with bandit tests: Bandit could not be installed ({e:#})");
            Ok(None)
        }
        Err(e) => {
            Err(e.context("installing Bandit for the --with bandit tests (CI must run them)"))
        }
    }
}

fn install(venv: &Path) -> Result<()> {
    eprintln!("==> installing Bandit {VERSION} into {}", venv.display());
    make_venv(venv)?;
    let st = Command::new(venv.join("bin/pip"))
        .args(["install", "--quiet", "--disable-pip-version-check"])
        .arg(format!("bandit=={VERSION}"))
        .status()
        .context("running pip install bandit")?;
    if !st.success() {
        bail!("pip install bandit=={VERSION} failed ({st}); PyPI must be reachable");
    }
    Ok(())
}

/// A fresh virtual environment at `venv` (emptied if it was there), with Debian's
/// python3-venv installed first where the interpreter lacks ensurepip.
pub fn make_venv(venv: &Path) -> Result<()> {
    // Debian's own interpreter: the one apt's python3-venv completes.
    let python = if Path::new("/usr/bin/python3").exists() {
        "/usr/bin/python3"
    } else {
        "python3"
    };
    let make_venv = || {
        Command::new(python)
            .args(["-m", "venv", "--clear"])
            .arg(venv)
            .status()
            .with_context(|| format!("running {python} -m venv"))
    };
    if !make_venv()?.success() {
        // Debian splits ensurepip out of the interpreter.
        apt_install_venv()?;
        let st = make_venv()?;
        if !st.success() {
            bail!(
                "{python} -m venv {} failed ({st}); install python3-venv",
                venv.display()
            );
        }
    }
    Ok(())
}

fn apt_install_venv() -> Result<()> {
    if !is_root() {
        bail!("python3 -m venv failed and only root can apt-get install python3-venv");
    }
    let apt = |args: &[&str]| {
        // Other lanes may be installing packages at the same time: wait for
        // dpkg's lock instead of failing on it.
        Command::new("apt-get")
            .args(["-o", "DPkg::Lock::Timeout=600"])
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status()
            .map(|s| s.success())
            .unwrap_or(false)
    };
    if apt(&["install", "-y", "-q", "python3-venv"])
        || (apt(&["update", "-q"]) && apt(&["install", "-y", "-q", "python3-venv"]))
    {
        return Ok(());
    }
    bail!("apt-get install python3-venv failed")
}
