//! The CRI lane: containerd's CRI plugin (xtask/cri/containerd-cri.sh, no registry: it builds
//! its pause and busybox images here) with this checkout's `maibox` registered as the runtime
//! handler `maibox`, for the tests in `xtask/cri/tests` (a small CRI client of the project's
//! own, the `cri-lane` crate).

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::service::{Lane, Service};
use crate::vm::is_root;

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
    // The VM lane may be installing QEMU at the same time: apt waits for
    // dpkg's lock instead of failing on it.
    let install =
        "apt-get -o DPkg::Lock::Timeout=600 update -qq && DEBIAN_FRONTEND=noninteractive \
                   apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends \
                   --no-remove protobuf-compiler >/dev/null";
    let st = Command::new("sh")
        .args(["-c", install])
        .status()
        .context("running apt-get")?;
    if !st.success() {
        bail!("apt-get install protobuf-compiler failed ({st})");
    }
    Ok(())
}

fn containerd_answers(script: &Path) -> bool {
    Command::new(script)
        .arg("status")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// Starts (or reuses) the lane's containerd, with this checkout's `maibox` as the runtime
/// handler `maibox`; stopped on drop when this run started it.
pub fn up(root: &Path) -> Result<Option<Service>> {
    crate::service::up(
        root,
        Lane {
            name: "CRI lane",
            script: "xtask/cri/containerd-cri.sh",
            also_skipped: "the tests in xtask/cri",
            answers: containerd_answers,
            env: vec![("MAIBOX", root.join("target/debug/maibox").into())],
        },
    )
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
