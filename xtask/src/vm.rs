//! The VM lane: the engine's integration tests inside a throw-away QEMU guest that
//! boots Debian 12's 6.1 kernel with a pure cgroup v2 hierarchy and Landlock ABI 2
//! (xtask/vm/vm-run.sh, the project's own copy of the recipe).

use anyhow::{bail, Context, Result};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
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
    // The OCI runtime's cgroups (limits, freezer) on a pure v2 hierarchy: see OCI_IN_VM.
    "oci",
];

/// The OCI tests that exercise what differs in the guest: cgroup v2 (limits, devices
/// as a BPF program, cpusets, freezer, events, update, sub-cgroups, block I/O) and
/// the 6.1 kernel (seccomp notify and ENOSYS handling, mount_setattr, user
/// namespaces). The rest (command line, state, hooks, terminals...) behave alike on
/// any kernel, and under software emulation each container costs seconds.
const OCI_IN_VM: &[&str] = &[
    "spec_resources_are_enforced_in_the_containers_cgroup",
    "added_device_rules_are_enforced_or_refused",
    "cgroup_mount_shows_the_containers_own_group",
    "cpuset_confines_the_container",
    "pre_frozen_cgroup_is_refused",
    "cpu_period_shares_and_memory_reservation_are_written",
    "update_writes_each_setting_as_given",
    "update_orders_period_and_quota_under_a_pod_limit",
    "events_report_usage_and_oom_kills",
    "unified_settings_are_refused_for_what_the_host_is",
    "exec_joins_a_sub_cgroup_below_the_containers",
    "block_io_limits_are_written_to_the_containers_group",
    "runc_command_line_forms",
    "spec_seccomp_profile_is_enforced",
    "seccomp_notify_reaches_the_agent",
    "calls_newer_than_the_profile_fail_with_enosys",
    "recursive_mount_options_bind_flags_and_umask",
    "user_namespace_binds_sources_its_root_cannot_reach",
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
    check_oci_names(&root)?;
    let bins = test_binaries(&root, VM_TESTS)?;
    let mut cmd = String::from("set -e; echo \"==> vm: kernel $(uname -r), cgroup2 controllers: $(cat /sys/fs/cgroup/cgroup.controllers)\"; ");
    // The 200-run and 50-run leak tests are host-only: under software emulation they take
    // minutes and add no kernel coverage the other tests do not have.
    for b in &bins {
        let is_oci = b
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("oci-"));
        let filters = if is_oci {
            format!(" --exact {}", OCI_IN_VM.join(" "))
        } else {
            String::new()
        };
        cmd.push_str(&format!(
            "echo '==> vm: {0}'; CI=true {0} --test-threads=2 --color never --skip two_hundred_runs_leave_nothing_behind --skip fifty_allowlist_runs_killed_mid_download_leave_nothing_behind{filters}; ",
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

/// A renamed test would silently drop out of an --exact filter: each name must
/// still be a test in tests/oci.rs.
fn check_oci_names(root: &Path) -> Result<()> {
    let src = std::fs::read_to_string(root.join("tests/oci.rs")).context("reading tests/oci.rs")?;
    for name in OCI_IN_VM {
        if !src.contains(&format!("#[test]\nfn {name}()")) {
            bail!("xtask/src/vm.rs OCI_IN_VM names {name}, which is not a test in tests/oci.rs");
        }
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
