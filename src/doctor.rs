//! `maibox doctor`: what this host can enforce, and what to change when it cannot.

use serde::Serialize;

#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum State {
    Ok,
    Warn,
    Fail,
}

#[derive(Debug, Serialize)]
pub struct Check {
    pub name: &'static str,
    pub state: State,
    pub detail: String,
    /// What the user can do about it (empty when all is well).
    pub advice: String,
}

fn check(
    name: &'static str,
    state: State,
    detail: impl Into<String>,
    advice: impl Into<String>,
) -> Check {
    Check {
        name,
        state,
        detail: detail.into(),
        advice: advice.into(),
    }
}

fn read(p: &str) -> Option<String> {
    std::fs::read_to_string(p)
        .ok()
        .map(|s| s.trim().to_string())
}

pub fn run_checks() -> Vec<Check> {
    let (cgroups, grouped) = cgroups();
    vec![
        kernel(),
        user_namespaces(),
        container(),
        cgroups,
        limits(grouped),
        landlock(),
        seccomp(),
        overlayfs(),
        python(),
    ]
}

fn kernel() -> Check {
    let u = nix::sys::utsname::uname();
    let rel = u
        .as_ref()
        .map(|u| u.release().to_string_lossy().into_owned())
        .unwrap_or_default();
    let (maj, min) = parse_version(&rel);
    if (maj, min) >= (5, 12) {
        check("kernel", State::Ok, format!("Linux {rel}"), "")
    } else {
        check(
            "kernel",
            State::Fail,
            format!("Linux {rel}"),
            "maibox needs Linux 5.12 or newer (mount_setattr, unprivileged overlayfs)",
        )
    }
}

fn parse_version(rel: &str) -> (u32, u32) {
    let mut it = rel
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|s| s.parse().ok());
    (it.next().unwrap_or(0), it.next().unwrap_or(0))
}

/// Tries the real thing in a throw-away child: creating a user namespace.
fn probe_userns() -> Result<(), String> {
    // SAFETY: the child only calls unshare and _exit.
    match unsafe { nix::unistd::fork() } {
        Ok(nix::unistd::ForkResult::Child) => {
            let ok = nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWUSER).is_ok();
            // SAFETY: _exit in a forked child.
            unsafe { libc::_exit(if ok { 0 } else { 1 }) }
        }
        Ok(nix::unistd::ForkResult::Parent { child }) => match nix::sys::wait::waitpid(child, None)
        {
            Ok(nix::sys::wait::WaitStatus::Exited(_, 0)) => Ok(()),
            _ => Err("unshare(CLONE_NEWUSER) failed".into()),
        },
        Err(e) => Err(format!("fork: {e}")),
    }
}

fn user_namespaces() -> Check {
    let max = read("/proc/sys/user/max_user_namespaces").unwrap_or_default();
    let deb = read("/proc/sys/kernel/unprivileged_userns_clone");
    let aa = read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns");
    match probe_userns() {
        Ok(()) => {
            let mut detail = format!("available (max_user_namespaces={max})");
            if aa.as_deref() == Some("1") {
                detail.push_str(
                    "; AppArmor restricts unprivileged user namespaces for unconfined programs",
                );
            }
            check("user namespaces", State::Ok, detail, "")
        }
        Err(e) => {
            let advice = if max == "0" {
                "set user.max_user_namespaces to a positive number (sysctl -w user.max_user_namespaces=15000)".to_string()
            } else if deb.as_deref() == Some("0") {
                "enable them: sysctl -w kernel.unprivileged_userns_clone=1".to_string()
            } else if aa.as_deref() == Some("1") {
                "AppArmor blocks them (kernel.apparmor_restrict_unprivileged_userns=1): add an AppArmor profile for maibox with `userns,` or set the sysctl to 0".to_string()
            } else {
                "check seccomp/LSM policies of the container or host that runs maibox".to_string()
            };
            check("user namespaces", State::Fail, e, advice)
        }
    }
}

fn container() -> Check {
    let markers = ["/.dockerenv", "/run/.containerenv"];
    let found: Vec<&str> = markers
        .iter()
        .copied()
        .filter(|p| std::path::Path::new(p).exists())
        .collect();
    if found.is_empty() {
        check("container", State::Ok, "not running inside a container", "")
    } else {
        check(
            "container",
            State::Warn,
            format!("running inside a container ({})", found.join(", ")),
            "nested sandboxes need the outer container to allow user namespaces and mounts (e.g. docker run --security-opt seccomp=unconfined --security-opt apparmor=unconfined)",
        )
    }
}

/// The cgroup layout, and whether this caller can make run groups in it.
fn cgroups() -> (Check, bool) {
    let layout = crate::cgroup::detect();
    let cfg = crate::cgroup::delegation::for_caller(&layout, &Default::default());
    let (state, detail) = match &layout {
        crate::cgroup::Layout::V2 { root } => (State::Ok, format!("v2 at {}", root.display())),
        crate::cgroup::Layout::V1 { controllers } => (
            State::Ok,
            format!(
                "v1/hybrid: controllers {}",
                controllers.keys().cloned().collect::<Vec<_>>().join(", ")
            ),
        ),
        crate::cgroup::Layout::None => {
            let c = check(
                "cgroups",
                State::Warn,
                "no cgroup hierarchy with a memory controller",
                "mount cgroup2 on /sys/fs/cgroup: without it memory, CPU and pids limits fall back to rlimits",
            );
            return (c, false);
        }
    };
    // The real test: can this caller create (and remove) a run group?
    match crate::cgroup::RunCgroup::create(
        &layout,
        &cfg,
        "doctor",
        crate::cgroup::Limits {
            memory_bytes: 64 << 20,
            cpus: 1.0,
            pids: 16,
        },
    ) {
        Ok(g) => {
            let _ = g.remove();
            let c = check(
                "cgroups",
                state,
                format!("{detail}; run groups under {}", cfg.parent),
                "",
            );
            (c, true)
        }
        Err(e) => {
            let c = check(
                "cgroups",
                State::Warn,
                format!(
                    "{detail}; this user cannot create run groups ({e}): limits degrade to rlimits"
                ),
                delegation_advice(&layout),
            );
            (c, false)
        }
    }
}

/// How a caller without run groups gets them: on cgroup v2, a subtree delegated to
/// it (systemd delegates `user@UID.service` to each logged-in user).
fn delegation_advice(layout: &crate::cgroup::Layout) -> String {
    use std::os::unix::fs::MetadataExt;
    let uid = nix::unistd::getuid().as_raw();
    if let crate::cgroup::Layout::V2 { root } = layout {
        let rel = format!("user.slice/user-{uid}.slice/user@{uid}.service");
        let owned = std::fs::metadata(root.join(&rel)).is_ok_and(|m| m.uid() == uid);
        if owned && uid != 0 {
            return format!(
                "{} is delegated to this user, but this process runs outside it: start maibox inside it (systemd-run --user --scope maibox ...) and run groups go to /{rel}/maibox by themselves",
                root.join(&rel).display()
            );
        }
    }
    "run maibox as root, or from a cgroup v2 subtree delegated to this user (systemd delegates user@UID.service to a logged-in user: systemd-run --user --scope maibox ...; or a unit with Delegate=yes): maibox finds the subtree and puts its run groups there".into()
}

/// Which limits a run of this caller gets from a cgroup, and which from fallbacks.
fn limits(grouped: bool) -> Check {
    if grouped {
        return check(
            "limits",
            State::Ok,
            "cgroup limits: memory (no swap), pids, CPU quota and CPU time bound the sandbox as a whole",
            "",
        );
    }
    check(
        "limits",
        State::Warn,
        "fallbacks only (with cgroup.allow_degraded, the default; without it runs are refused): memory bounds each process's data (RLIMIT_DATA at the level's memory, so N processes may take N times it), CPU time each process (RLIMIT_CPU), processes the sandbox as a whole (RLIMIT_NPROC in its user namespace); no CPU quota. The tmpfs sizes and inode bounds hold either way",
        "for real limits on the sandbox as a whole, see the cgroups check's advice",
    )
}

fn landlock() -> Check {
    match crate::confine::landlock::landlock_support() {
        (abi, _) if abi > 0 => check("landlock", State::Ok, format!("ABI {abi}"), ""),
        (_, why) => {
            let lsm = read("/sys/kernel/security/lsm").unwrap_or_else(|| "unknown".into());
            check(
                "landlock",
                State::Warn,
                format!(
                    "not available: {} (active LSMs: {lsm})",
                    why.unwrap_or_else(|| "no Landlock in this kernel".into())
                ),
                "add landlock to the kernel's lsm= boot parameter (e.g. lsm=landlock,lockdown,yama,apparmor,bpf) on a kernel built with CONFIG_SECURITY_LANDLOCK; untrusted runs refuse to start without it",
            )
        }
    }
}

fn seccomp() -> Check {
    let status = read("/proc/self/status").unwrap_or_default();
    if status.lines().any(|l| l.starts_with("Seccomp:")) {
        check("seccomp", State::Ok, "seccomp filters supported", "")
    } else {
        check(
            "seccomp",
            State::Fail,
            "the kernel reports no seccomp support",
            "use a kernel built with CONFIG_SECCOMP_FILTER",
        )
    }
}

fn overlayfs() -> Check {
    let fs = read("/proc/filesystems").unwrap_or_default();
    if fs.lines().any(|l| l.ends_with("overlay")) {
        check("overlayfs", State::Ok, "available", "")
    } else {
        check(
            "overlayfs",
            State::Warn,
            "not loaded",
            "modprobe overlay (needed only for --rootfs images)",
        )
    }
}

fn python() -> Check {
    match crate::interpreter::resolve("auto") {
        Ok(i) => check("python", State::Ok, i.path.display().to_string(), ""),
        Err(e) => check(
            "python",
            State::Fail,
            e.to_string(),
            "apt-get install python3",
        ),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn version_parsing() {
        assert_eq!(super::parse_version("6.1.0-18-amd64"), (6, 1));
        assert_eq!(super::parse_version("5.15.0"), (5, 15));
    }
}
