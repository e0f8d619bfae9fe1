//! The CRI lane: containerd's CRI plugin (xtask/cri/containerd-cri.sh, no registry: it builds
//! its pause and busybox images here) with this checkout's `maibox` registered as the runtime
//! handler `maibox`, for the tests in `xtask/cri/tests` (a small CRI client of the project's
//! own, the `cri-lane` crate).

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::vm::{in_ci, is_root};

/// The lane's containerd, stopped on drop when this lane started it.
pub struct Lane {
    script: PathBuf,
    started_here: bool,
}

impl Drop for Lane {
    fn drop(&mut self) {
        if self.started_here {
            let _ = Command::new(&self.script).arg("down").status();
        }
    }
}

/// `protoc`, which the `k8s-cri` crate's build script needs to generate the CRI API: any
/// build of the whole workspace (clippy, tests) compiles it. Installed from Debian's
/// packages where it is missing and this runs as root.
pub fn ensure_protoc() -> Result<()> {
    if std::env::var_os("PROTOC").is_some() || crate::which("protoc").is_some() {
        return Ok(());
    }
    if !is_root() {
        bail!("the CRI lane's client (xtask/cri) needs protoc to build: apt-get install protobuf-compiler");
    }
    eprintln!("==> installing protobuf-compiler (protoc, for the k8s-cri crate)");
    let install = "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
                   --no-install-recommends --no-remove protobuf-compiler >/dev/null";
    let st = Command::new("sh")
        .args(["-c", install])
        .status()
        .context("running apt-get")?;
    if !st.success() {
        bail!("apt-get install protobuf-compiler failed ({st})");
    }
    Ok(())
}

/// Starts (or reuses) the lane's containerd. `None` means the lane is skipped here, which it
/// says; in CI a lane that cannot start is an error, never a skip.
pub fn up(root: &Path) -> Result<Option<Lane>> {
    let script = root.join("xtask/cri/containerd-cri.sh");
    if !is_root() {
        if in_ci() {
            bail!("the CRI lane needs root in CI");
        }
        eprintln!("SKIP CRI lane: needs root to install and start containerd (the tests in xtask/cri skip too)");
        return Ok(None);
    }
    let was_up = Command::new(&script)
        .arg("status")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    let st = Command::new(&script)
        .arg("up")
        .env("MAIBOX", root.join("target/debug/maibox"))
        .current_dir(root)
        .status()
        .context("running xtask/cri/containerd-cri.sh up")?;
    if !st.success() {
        if in_ci() {
            bail!("the CRI lane could not start containerd ({st})");
        }
        eprintln!("SKIP CRI lane: containerd could not be started here ({st})");
        return Ok(None);
    }
    Ok(Some(Lane {
        script,
        started_here: !was_up,
    }))
}

/// `cargo xtask test-cri`: only the CRI lane.
pub fn test_cri(root: PathBuf) -> Result<()> {
    ensure_protoc()?;
    crate::cargo(&["build", "-p", "maibox"])?;
    let Some(_lane) = up(&root)? else {
        return Ok(());
    };
    crate::cargo(&["test", "-p", "cri-lane"])
}
