//! The OCI view's process: identity and capabilities, cwd, the spec's seccomp
//! programs, the program found in the container's PATH, and the last steps from
//! `start` to execve.

use crate::engine::sync::{Channel, Msg};
use crate::error::{SetupError, Step, StepContext};
use crate::policy::oci::{CapabilitySets, OciProcess, OciView};
use nix::unistd::{Gid, Uid};
use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;

fn cap_set(step: Step, names: &[String]) -> Result<caps::CapsHashSet, SetupError> {
    names
        .iter()
        .map(|n| {
            n.parse::<caps::Capability>()
                .step(step, format!("capability {n}"))
        })
        .collect()
}

/// setgroups/setresgid/setresuid to the spec's user, keeping exactly the spec's
/// capability sets (an empty or absent set keeps nothing).
pub(crate) fn switch_identity(p: &OciProcess, in_userns: bool) -> Result<(), SetupError> {
    use caps::CapSet;
    let step = Step::Capabilities;
    let c: &CapabilitySets = &p.capabilities;
    let bounding = cap_set(step, &c.bounding)?;
    // The bounding set can only shrink while CAP_SETPCAP is held: first.
    for cap in caps::all() {
        if !bounding.contains(&cap) && caps::has_cap(None, CapSet::Bounding, cap).unwrap_or(false) {
            caps::drop(None, CapSet::Bounding, cap)
                .step(step, format!("drop {cap} from the bounding set"))?;
        }
    }
    nix::sys::prctl::set_keepcaps(true).step(step, "prctl(PR_SET_KEEPCAPS, 1)")?;
    let groups: Vec<Gid> = p
        .additional_gids
        .iter()
        .map(|g| Gid::from_raw(*g))
        .collect();
    // A user namespace made by an ordinary user must deny setgroups (to map its
    // gid): the caller's groups stay, as under runc's rootless mode.
    if in_userns && setgroups_denied() {
        if !groups.is_empty() {
            return Err(SetupError::new(
                Step::Identity,
                "process.user.additionalGids cannot be given: the container's user namespace denies setgroups (a runtime that is not root cannot allow it); leave them out or run the runtime as root",
            ));
        }
    } else {
        nix::unistd::setgroups(&groups).step(Step::Identity, "setgroups")?;
    }
    let (u, g) = (Uid::from_raw(p.uid), Gid::from_raw(p.gid));
    nix::unistd::setresgid(g, g, g).step(Step::Identity, format!("setresgid({g})"))?;
    nix::unistd::setresuid(u, u, u).step(Step::Identity, format!("setresuid({u})"))?;
    nix::sys::prctl::set_keepcaps(false).step(step, "prctl(PR_SET_KEEPCAPS, 0)")?;
    let effective = cap_set(step, &c.effective)?;
    let permitted = cap_set(step, &c.permitted)?;
    if !effective.is_subset(&permitted) {
        return Err(SetupError::new(
            step,
            "process.capabilities: effective is not a subset of permitted",
        ));
    }
    caps::set(None, CapSet::Effective, &effective).step(step, "set the effective set")?;
    caps::set(None, CapSet::Inheritable, &cap_set(step, &c.inheritable)?)
        .step(step, "set the inheritable set")?;
    caps::set(None, CapSet::Permitted, &permitted).step(step, "set the permitted set")?;
    caps::clear(None, CapSet::Ambient).step(step, "clear the ambient set")?;
    // The kernel raises an ambient capability only if it is also permitted and
    // inheritable; runc's own template lists ambient capabilities without
    // inheritable ones. As runc does, such a request is skipped (silently: this
    // process's stderr is the container's): the process gets fewer
    // capabilities than asked, never more.
    for cap in cap_set(step, &c.ambient)? {
        let _ = caps::raise(None, CapSet::Ambient, cap);
    }
    if p.no_new_privileges {
        nix::sys::prctl::set_no_new_privs().step(Step::NoNewPrivs, "prctl(PR_SET_NO_NEW_PRIVS)")?;
    }
    // Until execve replaces this image, nothing in the container may read our memory.
    nix::sys::prctl::set_dumpable(false).step(step, "prctl(PR_SET_DUMPABLE, 0)")?;
    Ok(())
}

/// chdir to the spec's cwd, as the container's user, and check that it lies inside
/// the container's root: a cwd reached through a leaked descriptor
/// (`/proc/self/fd/N`, CVE-2024-21626) shows up as an unreachable directory.
pub(crate) fn enter_cwd(cwd: &str) -> Result<(), SetupError> {
    std::env::set_current_dir(cwd).step(Step::PivotRoot, format!("chdir to process.cwd {cwd}"))?;
    check_cwd(cwd)
}

/// The current directory, entered for `cwd`, must lie inside the container's root.
pub(crate) fn check_cwd(cwd: &str) -> Result<(), SetupError> {
    let step = Step::PivotRoot;
    let here = nix::unistd::getcwd().step(
        step,
        format!("process.cwd {cwd} is outside the container's root"),
    )?;
    if !here.is_absolute() || here.as_os_str().as_encoded_bytes().starts_with(b"(") {
        return Err(SetupError::new(
            step,
            format!("process.cwd {cwd} is outside the container's root"),
        ));
    }
    Ok(())
}

/// Finds the program the way execvp would, in the container's root and PATH, so
/// that a missing program fails `create` rather than the container.
pub fn resolve_program(v: &OciView) -> Result<CString, SetupError> {
    resolve_in_path(&v.process)
}

/// execvp's search for the process's program, in the current root.
pub(crate) fn resolve_in_path(process: &OciProcess) -> Result<CString, SetupError> {
    let step = Step::Exec;
    let arg0 = &process.args[0];
    let cstr = |s: &str| CString::new(s).step(step, format!("{s:?} contains a NUL byte"));
    let executable = |p: &Path| {
        nix::unistd::access(p, nix::unistd::AccessFlags::X_OK).is_ok()
            && std::fs::metadata(p).map(|m| m.is_file()).unwrap_or(false)
    };
    if arg0.contains('/') {
        if executable(Path::new(arg0)) {
            return cstr(arg0);
        }
        return Err(SetupError::new(
            step,
            format!("{arg0}: not an executable file in the container"),
        ));
    }
    let path = process
        .env
        .iter()
        .find_map(|e| e.strip_prefix("PATH="))
        .unwrap_or("/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
    for dir in path.split(':').filter(|d| !d.is_empty()) {
        let cand = Path::new(dir).join(arg0);
        if executable(&cand) {
            return cstr(&cand.display().to_string());
        }
    }
    Err(SetupError::new(
        step,
        format!("{arg0}: executable file not found in $PATH ({path})"),
    ))
}

/// The payload for an OCI view: the spec's argv and environment, verbatim.
pub fn payload(v: &OciView, program: CString) -> Result<crate::engine::init::Payload, SetupError> {
    let cstr = |s: &str| CString::new(s).step(Step::Exec, format!("{s:?} contains a NUL byte"));
    Ok(crate::engine::init::Payload {
        program,
        argv: v
            .process
            .args
            .iter()
            .map(|a| cstr(a))
            .collect::<Result<_, _>>()?,
        envp: v
            .process
            .env
            .iter()
            .map(|a| cstr(a))
            .collect::<Result<_, _>>()?,
        confine: Box::new(|| Ok(Default::default())),
        bridge: None,
        extra_fds: 0,
        adopt: None,
    })
}

/// The spec's seccomp programs, in order (see [`crate::confine::seccomp::oci`]).
pub(super) fn notifies(v: &OciView) -> bool {
    v.seccomp.as_ref().is_some_and(|c| c.notify.is_some())
}

/// Returns the listener of the notifying program (SCMP_ACT_NOTIFY), if any.
pub(crate) fn install_seccomp(
    c: Option<&crate::confine::seccomp::oci::Compiled>,
) -> Result<Option<OwnedFd>, SetupError> {
    let Some(c) = c else {
        return Ok(None);
    };
    let mut listener = None;
    for (i, p) in c.programs.iter().enumerate() {
        if c.notify.as_ref().is_some_and(|n| n.program == i) {
            listener = Some(
                crate::confine::seccomp::install_filter_flags_listening(p, c.flags)
                    .step(Step::Seccomp, "install the spec's notifying seccomp filter")?,
            );
        } else {
            crate::confine::seccomp::install_filter_flags(p, c.flags)
                .step(Step::Seccomp, "install the spec's seccomp filter")?;
        }
    }
    Ok(listener)
}

/// Signal dispositions and mask back to defaults, then execve. Returns only on failure.
fn exec(p: &crate::engine::init::Payload) -> i32 {
    let _ = crate::engine::init::reset_signals();
    let e = nix::unistd::execve(&p.program, &p.argv, &p.envp)
        .map(|_| nix::errno::Errno::UnknownErrno)
        .unwrap_or_else(|e| e);
    eprintln!("maibox: exec {:?}: {e}", p.program);
    if e == nix::errno::Errno::ENOENT {
        127
    } else {
        126
    }
}

/// After `Ready`: blocks until `start` (or, without a FIFO, the `Start` message).
pub fn wait_start(gate: Option<OwnedFd>, chan: &Channel) -> Result<(), SetupError> {
    match gate {
        Some(fd) => {
            let mut b = [0u8; 1];
            loop {
                match nix::unistd::read(fd.as_raw_fd(), &mut b) {
                    Ok(1) => return Ok(()),
                    Err(nix::errno::Errno::EINTR) => continue,
                    other => {
                        return Err(SetupError::new(
                            Step::Sync,
                            format!("waiting on the start FIFO: {other:?}"),
                        ))
                    }
                }
            }
        }
        None => match chan.recv()? {
            Some(Msg::Start) => Ok(()),
            other => Err(SetupError::new(
                Step::Sync,
                format!("expected Start, got {other:?}"),
            )),
        },
    }
}

/// The set-up child's last steps for an OCI view: `Ready` once its program is found,
/// the wait for `start`, then the umask, the late seccomp programs and the
/// `startContainer` hooks, and execve. The container's process is this one (PID 1 of
/// its namespace: no maibox init stays in between, so the shim sees the process the
/// spec asked for).
pub(crate) fn start(
    v: &OciView,
    gate: Option<OwnedFd>,
    hook_state: Option<serde_json::Value>,
    chan: &Channel,
) -> i32 {
    let payload = match resolve_program(v).and_then(|p| payload(v, p)) {
        Ok(p) => p,
        Err(e) => {
            let _ = chan.send(&Msg::Failed(e));
            return 125;
        }
    };
    if chan
        .send(&Msg::Ready {
            timings_us: Vec::new(),
        })
        .is_err()
    {
        return 125;
    }
    if let Err(e) = wait_start(gate, chan) {
        eprintln!("maibox: {e}");
        return 125;
    }
    // As runc: the spec's umask, or 022 rather than whatever the runtime had.
    nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(
        v.process.umask.unwrap_or(0o022),
    ));
    // With no_new_privs, as late as possible: only the startContainer hooks and
    // execve are left.
    if v.process.no_new_privileges && !notifies(v) {
        if let Err(e) = install_seccomp(v.seccomp.as_ref()) {
            eprintln!("maibox: {e}");
            return 125;
        }
    }
    // In the container, as its user and under its seccomp filter, before the
    // program (runtime spec; runc runs them the same way). The state says
    // `created`, with the pid this process has here.
    if let Some(mut state) = hook_state {
        state["status"] = "created".into();
        state["pid"] = std::process::id().into();
        if let Err(e) = super::root::run_hooks(v, "startContainer", &state) {
            eprintln!("maibox: {e}");
            return 125;
        }
    }
    exec(&payload)
}

/// Whether this process's user namespace denies setgroups(2) (its
/// `/proc/self/setgroups` says `deny`). The init reads it where the container's
/// /proc is mounted; without one it assumes not, and setgroups says why it fails.
fn setgroups_denied() -> bool {
    std::fs::read_to_string("/proc/self/setgroups").is_ok_and(|s| s.trim() == "deny")
}
