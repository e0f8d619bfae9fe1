//! The engine: turns a [`Policy`] and a script into a running, confined process.
//!
//! Split like an OCI runtime: [`prepare`] builds the whole sandbox and leaves its
//! init waiting (`create`), [`Prepared::start`] lets the payload run (`start`), and
//! the supervisor (`src/supervise/`) watches it to the end.

pub mod adopt;
pub mod cgroupfs;
mod chain;
pub(crate) mod clone;
pub mod console;
pub mod dev;

pub mod etc;
pub mod init;
pub mod mounts;
pub mod net;
pub mod oci;
pub mod privs;
pub mod procfs;
pub mod procname;
pub mod rlimit;
pub mod rootfs;
pub mod spawn;
pub mod spawner;
pub mod sync;
pub mod trees;
pub mod userns;

pub use crate::error::{SetupError, Step};

use crate::confine;
use crate::error::StepContext;
use crate::policy::{Layer, Policy};
use init::Payload;
use nix::fcntl::OFlag;
use nix::unistd::Pid;
use std::ffi::CString;
use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};
use sync::{Channel, Msg};

/// Where the sandbox's stdin comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StdinMode {
    /// The supervisor copies its own stdin into a pipe (host file descriptors are
    /// never handed to the sandbox).
    Pump,
    /// `/dev/null`.
    Null,
}

pub struct Job<'a> {
    pub policy: &'a Policy,
    pub script: &'a [u8],
    pub args: &'a [String],
    pub stdin: StdinMode,
    /// Descriptors the payload gets as 3, 4, ... (a warm sandbox's pipes).
    pub extra_fds: Vec<std::os::fd::BorrowedFd<'a>>,
    /// The payload is forked from a zygote and adopted by init, not executed (a warm
    /// sandbox of a `warm_mode: fork` level; see [`adopt`]).
    pub adopt: bool,
    /// Clone through this spawner process rather than from this one (a server's
    /// sandboxes: see [`spawner`]).
    pub spawner: Option<&'a spawner::Spawner>,
}

/// A sandbox whose init is set up and waits for `start`.
pub struct Prepared {
    pub pid: Pid,
    pub chan: Channel,
    pub stdout: OwnedFd,
    pub stderr: OwnedFd,
    pub stdin: Option<OwnedFd>,
    pub setup_time: Duration,
    pub timings_us: Vec<(String, u64)>,
}

/// How long the child may take to build its view before we give up on it.
const SETUP_TIMEOUT: Duration = Duration::from_secs(30);

/// The run's cgroup as the supervisor made it, for the sandbox.
pub struct Joined {
    /// The v1 `tasks` files through which the sandbox joins the group itself
    /// (empty when the supervisor moved it, or there is no group).
    pub tasks: Vec<OwnedFd>,
    /// A group bounds the sandbox's memory and CPU as a whole.
    pub limited: bool,
}

/// Builds the sandbox. While it builds its view, the supervisor, otherwise idle,
/// first runs `cgroup` with the sandbox's host pid: it makes the run's cgroup and
/// either moves the sandbox into it or returns the v1 `tasks` files through which
/// the sandbox joins it itself (before it forks the code). Then `meanwhile` runs.
/// A failure of either ends the sandbox before any code runs.
pub fn prepare(
    job: &Job,
    cgroup: &mut dyn FnMut(Pid) -> Result<Joined, SetupError>,
    meanwhile: &mut dyn FnMut() -> Result<(), SetupError>,
) -> Result<Prepared, SetupError> {
    let created_at = Instant::now();
    let Spawning {
        spawned,
        stdout,
        stderr,
        stdin,
    } = match job.spawner {
        Some(s) => s.spawn(job)?,
        None => spawn_job(job)?,
    };
    if let Err(e) = send_cgroup(&spawned, cgroup).and_then(|_| meanwhile()) {
        // A sandbox that failed on its own has closed its end: its reason is queued,
        // and says more than our failure to send to it.
        let e = queued_failure(&spawned).unwrap_or(e);
        clone::end(spawned.pid);
        return Err(e);
    }
    let timings_us = wait_ready(&spawned)?;
    Ok(Prepared {
        pid: spawned.pid,
        chan: spawned.chan,
        stdout,
        stderr,
        stdin,
        setup_time: created_at.elapsed(),
        timings_us,
    })
}

/// A cloned sandbox whose id maps are written, and the supervisor's ends of its
/// stdio.
pub(crate) struct Spawning {
    spawned: spawn::Spawned,
    stdout: OwnedFd,
    stderr: OwnedFd,
    stdin: Option<OwnedFd>,
}

/// The run's pipes, the payload and the clone: everything of a sandbox that the
/// process which clones it makes (this one, or the server's spawner).
fn spawn_job(job: &Job) -> Result<Spawning, SetupError> {
    let pipe = || nix::unistd::pipe2(OFlag::O_CLOEXEC).step(Step::Pipes, "pipe");
    let (out_r, out_w) = pipe()?;
    let (err_r, err_w) = pipe()?;
    let (in_r, in_w) = match job.stdin {
        StdinMode::Pump => {
            let (r, w) = pipe()?;
            (r, Some(w))
        }
        StdinMode::Null => (
            std::fs::File::open("/dev/null")
                .step(Step::Pipes, "open /dev/null")?
                .into(),
            None,
        ),
    };
    let payload = build_payload(job)?;
    let extra = job
        .extra_fds
        .iter()
        .map(|fd| sync::high_copy(*fd))
        .collect::<Result<Vec<_>, _>>()?;
    let spawned = spawn::spawn(
        job.policy,
        job.script,
        payload,
        spawn::ChildStdio {
            stdin: in_r,
            stdout: out_w,
            stderr: err_w,
            extra,
        },
        &mut |_| Ok(()),
    )?;
    Ok(Spawning {
        spawned,
        stdout: out_r,
        stderr: err_r,
        stdin: in_w,
    })
}

fn send_cgroup(
    s: &spawn::Spawned,
    cgroup: &mut dyn FnMut(Pid) -> Result<Joined, SetupError>,
) -> Result<(), SetupError> {
    use std::os::fd::AsFd;
    let joined = cgroup(s.pid)?;
    for fd in &joined.tasks {
        s.chan.send_fd(&Msg::CgroupTasks, fd.as_fd())?;
    }
    s.chan.send(&Msg::CgroupDone {
        limited: joined.limited,
    })
}

fn queued_failure(s: &spawn::Spawned) -> Option<SetupError> {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    use std::os::fd::AsFd;
    let mut fds = [PollFd::new(s.chan.as_fd(), PollFlags::POLLIN)];
    if poll(&mut fds, PollTimeout::ZERO).ok()? == 0 {
        return None;
    }
    match s.chan.recv() {
        Ok(Some(Msg::Failed(e))) => Some(e),
        _ => None,
    }
}

pub fn wait_ready(s: &spawn::Spawned) -> Result<Vec<(String, u64)>, SetupError> {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    use std::os::fd::AsFd;
    let fail = |e: SetupError| {
        clone::end(s.pid);
        e
    };
    let mut fds = [PollFd::new(s.chan.as_fd(), PollFlags::POLLIN)];
    let ms = SETUP_TIMEOUT.as_millis() as i32;
    let n = poll(
        &mut fds,
        PollTimeout::try_from(ms).unwrap_or(PollTimeout::MAX),
    )
    .step(Step::Sync, "wait for the sandbox to be ready")
    .map_err(fail)?;
    if n == 0 {
        return Err(fail(SetupError::new(
            Step::Sync,
            format!(
                "the sandbox was not ready after {}s",
                SETUP_TIMEOUT.as_secs()
            ),
        )));
    }
    match s.chan.recv().map_err(fail)? {
        Some(Msg::Ready { timings_us }) => Ok(timings_us),
        Some(Msg::Failed(e)) => Err(fail(e)),
        other => Err(fail(SetupError::new(
            Step::Sync,
            format!("the sandbox init ended during setup ({other:?})"),
        ))),
    }
}

impl Prepared {
    /// Lets the payload start (OCI `start`).
    pub fn start(&self) -> Result<(), SetupError> {
        self.chan.send(&Msg::Start)
    }
}

fn cstring(step: Step, s: &str) -> Result<CString, SetupError> {
    CString::new(s).step(step, format!("{s:?} contains a NUL byte"))
}

fn build_payload(job: &Job) -> Result<Payload, SetupError> {
    let p = job.policy;
    let program = cstring(Step::Exec, &p.interpreter.path.display().to_string())?;
    let (argv, envp) = command_line(job, &program)?;
    let filter = seccomp_filter(p)?;
    let landlock = p.has(Layer::Landlock).then(|| p.landlock.clone());
    Ok(Payload {
        program,
        argv,
        envp,
        extra_fds: job.extra_fds.len() as i32,
        bridge: (p.network == crate::config::NetworkMode::Allowlist).then(|| {
            (
                crate::net::DEFAULT_BRIDGE_PORT,
                std::path::PathBuf::from(crate::net::SANDBOX_SOCKET_PATH),
            )
        }),
        adopt: job.adopt.then(|| adopt::Adopt {
            landlock: landlock.clone(),
        }),
        confine: Box::new(move || confine_payload(landlock.as_ref(), filter.as_ref())),
    })
}

/// The interpreter's argv and the code's environment.
fn command_line(job: &Job, program: &CString) -> Result<(Vec<CString>, Vec<CString>), SetupError> {
    let p = job.policy;
    let script = format!("{}/{}", rootfs::SCRIPT_DIR, rootfs::SCRIPT_NAME);
    // argv[0] is the full path: Python derives sys.executable and its prefix from
    // it, and a bare "python3" would resolve to whichever python3 is first on PATH.
    let mut argv = vec![
        program.clone(),
        // No user site-packages: nothing outside the view may change the import path.
        cstring(Step::Exec, "-s")?,
        cstring(Step::Exec, &script)?,
    ];
    for a in job.args {
        argv.push(cstring(Step::Exec, a)?);
    }
    let envp = environment(p)
        .iter()
        .map(|(k, v)| cstring(Step::Exec, &format!("{k}={v}")))
        .collect::<Result<_, _>>()?;
    Ok((argv, envp))
}

/// The code's environment: the policy's, and USER and LOGNAME unless it sets them.
pub(crate) fn environment(p: &Policy) -> Vec<(String, String)> {
    let mut env = p.env.clone();
    for k in ["USER", "LOGNAME"] {
        if !p.env.iter().any(|(ek, _)| ek == k) {
            env.push((k.to_string(), p.identity.user.clone()));
        }
    }
    env
}

/// Compiled here, in the supervisor: installing it in the child is then a single
/// allocation-free syscall right before execve.
pub(crate) fn seccomp_filter(p: &Policy) -> Result<Option<seccompiler::BpfProgram>, SetupError> {
    if !p.has(Layer::Seccomp) {
        return Ok(None);
    }
    // `none` still has `lo`, and local TCP/UDP sockets must work there: the
    // network namespace is what keeps them from leaving.
    let net = match p.network {
        crate::config::NetworkMode::None | crate::config::NetworkMode::Allowlist => {
            confine::NetAccess::Loopback
        }
    };
    // Kills go through the supervisor so that the report can name the call.
    let notify = confine::Notify {
        kills: true,
        denials: p.seccomp.audit_denials,
    };
    confine::build_filter_notify(&p.seccomp, net, notify)
        .step(Step::Seccomp, "build the seccomp filter")
        .map(Some)
}

/// The payload's last step before execve: Landlock first (the seccomp allowlist has
/// no landlock syscalls), then the filter.
fn confine_payload(
    landlock: Option<&confine::LandlockSpec>,
    filter: Option<&seccompiler::BpfProgram>,
) -> Result<crate::outcome::Confined, SetupError> {
    let landlock = match landlock {
        Some(spec) => {
            Some(confine::apply_landlock(spec).step(Step::Landlock, "apply the Landlock ruleset")?)
        }
        None => None,
    };
    let mut listener = None;
    if let Some(f) = filter {
        if confine::notify::needs_listener(f) {
            listener = Some(std::sync::Arc::new(
                confine::install_filter_listening(f)
                    .step(Step::Seccomp, "install the seccomp filter")?,
            ));
        } else {
            confine::install_filter(f).step(Step::Seccomp, "install the seccomp filter")?;
        }
    }
    Ok(crate::outcome::Confined {
        landlock,
        seccomp: filter.is_some(),
        listener,
    })
}
