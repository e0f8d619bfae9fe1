//! The VM lane: the engine's integration tests inside a throw-away QEMU guest that
//! boots Debian 12's 6.1 kernel with a pure cgroup v2 hierarchy and Landlock ABI 2
//! (xtask/vm/vm-run.sh, the project's own copy of the recipe).

use anyhow::{bail, Context, Result};
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::process::Command;

/// Integration test targets that also run in the VM lane.
const VM_TESTS: &[&str] = &[
    "engine",
    "lifecycle",
    "bad_input",
    "commands",
    "escapes",
    "confine",
    "limits",
    "network",
    // The OCI runtime's cgroups (limits, freezer) on a pure v2 hierarchy.
    "oci",
];

pub fn in_ci() -> bool {
    std::env::var("CI").map(|v| v == "true").unwrap_or(false)
}

pub fn is_root() -> bool {
    std::fs::metadata("/proc/self")
        .map(|m| m.uid() == 0)
        .unwrap_or(false)
}

/// Skips, saying so, only where qemu cannot run at all and this is not CI.
pub fn test_vm(root: PathBuf) -> Result<()> {
    let script = root.join("xtask/vm/vm-run.sh");
    if !is_root() {
        if in_ci() {
            bail!("the VM lane needs root in CI");
        }
        eprintln!("SKIP vm lane: needs root to install qemu and prepare the guest kernel");
        return Ok(());
    }
    let prep = Command::new(&script)
        .arg("--prepare")
        .current_dir(&root)
        .status()
        .context("running xtask/vm/vm-run.sh --prepare")?;
    if !prep.success() {
        if in_ci() {
            bail!("the VM lane could not prepare qemu and the guest kernel ({prep})");
        }
        eprintln!("SKIP vm lane: qemu or the guest kernel could not be set up here ({prep})");
        return Ok(());
    }
    let bins = test_binaries(&root, VM_TESTS)?;
    let mut cmd = String::from("set -e; echo \"==> vm: kernel $(uname -r), cgroup2 controllers: $(cat /sys/fs/cgroup/cgroup.controllers)\"; ");
    // The 200-run and 50-run leak tests are host-only: under software emulation they take
    // minutes and add no kernel coverage the other tests do not have.
    for b in &bins {
        cmd.push_str(&format!(
            "echo '==> vm: {0}'; CI=true {0} --test-threads=2 --color never --skip two_hundred_runs_leave_nothing_behind --skip fifty_allowlist_runs_killed_mid_download_leave_nothing_behind; ",
            b.display()
        ));
    }
    eprintln!(
        "==> vm lane: {} test binaries in a cgroup-v2 guest",
        bins.len()
    );
    let st = Command::new(&script)
        .args(["--timeout", "1200", "--", "bash", "-c", &cmd])
        .current_dir(&root)
        .status()
        .context("running xtask/vm/vm-run.sh")?;
    if !st.success() {
        bail!("the VM lane failed ({st})");
    }
    Ok(())
}

/// Builds the named integration test targets and returns their executables.
fn test_binaries(root: &PathBuf, names: &[&str]) -> Result<Vec<PathBuf>> {
    let mut args = vec!["test", "--no-run", "--message-format=json", "-p", "maibox"];
    for n in names {
        args.push("--test");
        args.push(n);
    }
    let out = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(&args)
        .current_dir(root)
        .output()
        .context("cargo test --no-run")?;
    if !out.status.success() {
        bail!(
            "cargo test --no-run failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let mut bins = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if v["reason"] == "compiler-artifact" && v["profile"]["test"] == true {
            if let Some(exe) = v["executable"].as_str() {
                bins.push(PathBuf::from(exe));
            }
        }
    }
    if bins.len() != names.len() {
        bail!(
            "expected {} test binaries, cargo built {}",
            names.len(),
            bins.len()
        );
    }
    Ok(bins)
}
