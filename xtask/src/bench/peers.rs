//! Command lines of the peers, each as close to maibox's layers as the tool allows.

use anyhow::Result;
use std::path::Path;

pub use crate::which;

fn argv(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| a.to_string()).collect()
}

/// python3 alone on the same script: the baseline every row is compared with.
pub fn bare_cmd(script: &str) -> Vec<String> {
    argv(&["/usr/bin/python3", "-s", script])
}

/// bubblewrap with the closest equivalent of maibox's view and privileges (it has no
/// seccomp profile or Landlock of its own, and no cgroups).
pub fn bwrap_cmd(bwrap: &str, script: &str) -> Vec<String> {
    argv(&[
        bwrap,
        "--unshare-all",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--ro-bind",
        "/usr",
        "/usr",
        "--symlink",
        "usr/lib",
        "/lib",
        "--symlink",
        "usr/lib64",
        "/lib64",
        "--symlink",
        "usr/bin",
        "/bin",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--tmpfs",
        "/tmp",
        "--uid",
        "1000",
        "--gid",
        "1000",
        "--ro-bind",
        script,
        "/sandbox/main.py",
        "--chdir",
        "/sandbox",
        "/usr/bin/python3",
        "-s",
        "/sandbox/main.py",
    ])
}

/// util-linux's unshare(1) creating the namespaces maibox creates, and nothing else:
/// no root change, mounts, limits, filters or supervisor. What it costs over bare
/// python is the kernel's own price for those namespaces on this machine, a floor
/// under any sandbox that makes them fresh for each run.
pub fn unshare_cmd(unshare: &str, script: &str) -> Vec<String> {
    argv(&[
        unshare,
        "--user",
        "--map-root-user",
        "--pid",
        "--fork",
        "--mount",
        "--net",
        "--ipc",
        "--uts",
        "--cgroup",
        "/usr/bin/python3",
        "-s",
        script,
    ])
}

/// An OCI bundle on maibox's minimal Python image running the same script.
/// `cgroups_path` must be absolute when given: a runtime left to pick its own
/// makes the group relative to the caller's cgroup.
pub fn oci_bundle(bundle: &Path, script: &Path, cgroups_path: Option<&str>) -> Result<()> {
    let rootfs = bundle.join("rootfs");
    maibox::image::build(&rootfs, Path::new("/usr/bin/python3"))?;
    std::fs::copy(script, rootfs.join("sandbox/main.py"))?;
    let config = serde_json::json!({
        "ociVersion": "1.0.2",
        "process": {
            "terminal": false,
            "user": {"uid": 1000, "gid": 1000},
            "args": ["/usr/bin/python3", "-s", "/sandbox/main.py"],
            "env": ["PATH=/usr/bin:/bin", "LANG=C.UTF-8"],
            "cwd": "/sandbox",
            "capabilities": {"bounding": [], "effective": [], "permitted": [], "inheritable": [], "ambient": []},
            "noNewPrivileges": true
        },
        "root": {"path": "rootfs", "readonly": true},
        "hostname": "bench",
        "mounts": [
            {"destination": "/proc", "type": "proc", "source": "proc"},
            {"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "mode=755", "size=65536k"]},
            {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "nodev", "size=64m"]}
        ],
        "linux": {
            "namespaces": [{"type": "pid"}, {"type": "network"}, {"type": "ipc"}, {"type": "uts"}, {"type": "mount"}, {"type": "cgroup"}],
            "maskedPaths": ["/proc/kcore", "/proc/keys", "/proc/timer_list"],
            "readonlyPaths": ["/proc/sys", "/proc/bus", "/proc/fs", "/proc/irq"]
        }
    });
    let mut config = config;
    if let Some(p) = cgroups_path {
        config["linux"]["cgroupsPath"] = p.into();
    }
    std::fs::write(
        bundle.join("config.json"),
        serde_json::to_vec_pretty(&config)?,
    )?;
    Ok(())
}

/// firejail with its own hardening: no network, private /tmp, capabilities dropped,
/// no_new_privs and its default seccomp filter (it has no read-only-root-only view).
pub fn firejail_cmd(firejail: &str, script: &str) -> Vec<String> {
    argv(&[
        firejail,
        "--quiet",
        "--noprofile",
        "--net=none",
        "--private-tmp",
        "--caps.drop=all",
        "--nonewprivs",
        "--seccomp",
        "--read-only=/",
        "/usr/bin/python3",
        "-s",
        script,
    ])
}

/// `docker run` with the seeds' hardening flags, the script bound read-only.
pub fn docker_cmd(runtime: Option<&str>, script: &str) -> Vec<String> {
    let mut c = argv(&[
        "docker",
        "run",
        "--rm",
        "--network",
        "none",
        "--read-only",
        "--cap-drop",
        "ALL",
        "--security-opt",
        "no-new-privileges",
        "--user",
        "1000:1000",
        "--memory",
        "256m",
        "--pids-limit",
        "64",
    ]);
    if let Some(r) = runtime {
        c.push(format!("--runtime={r}"));
    }
    c.extend([
        "-v".to_string(),
        format!("{script}:/sandbox/main.py:ro"),
        "maibox-python:test".into(),
        "python3".into(),
        "-s".into(),
        "/sandbox/main.py".into(),
    ]);
    c
}

/// Whether a Docker engine answers, and whether it knows the `maibox` runtime.
pub fn docker_state() -> (bool, bool) {
    let o = std::process::Command::new("docker")
        .args(["info", "--format", "{{json .Runtimes}}"])
        .output();
    match o {
        Ok(o) if o.status.success() => (
            true,
            String::from_utf8_lossy(&o.stdout).contains("\"maibox\""),
        ),
        _ => (false, false),
    }
}
