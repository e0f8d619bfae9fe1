//! `exec --process FILE [--detach] [--pid-file F] ID` (what `docker exec` calls): a new
//! process inside a running container, with the container's namespaces, cgroup and
//! seccomp profile, and the identity, capabilities and no_new_privs of its own
//! process description.
//!
//! The runtime forks a helper that joins the container's cgroup and namespaces
//! (setns); joining a PID namespace only takes effect for children, so the helper
//! forks the process itself, reports its host pid and exits. The process then
//! belongs to the caller's subreaper (the shim), or to this runtime without
//! `--detach`.

use std::io::BufRead;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use clap::Args;
use nix::sched::CloneFlags;
use nix::unistd::{fork, ForkResult, Pid};

use super::bundle::{self, BundleError};
use super::cli::{Global, OciError};
use super::state::{self, Container, Status};
use super::view::OciProcess;
use crate::sandbox::oci as engine;

#[derive(Args, Debug)]
pub struct ExecArgs {
    /// The process to run, as an OCI `process` JSON object.
    #[arg(long, short = 'p')]
    pub process: Option<PathBuf>,
    /// Return once the process runs instead of waiting for it.
    #[arg(long, short = 'd')]
    pub detach: bool,
    #[arg(long)]
    pub pid_file: Option<PathBuf>,
    #[arg(long)]
    pub console_socket: Option<PathBuf>,
    #[arg(long, short = 't')]
    pub tty: bool,
    /// Working directory (without --process).
    #[arg(long)]
    pub cwd: Option<String>,
    /// Extra environment variables KEY=VALUE (without --process).
    #[arg(long, short = 'e')]
    pub env: Vec<String>,
    pub id: String,
    /// The command, when no --process is given.
    #[arg(trailing_var_arg = true)]
    pub command: Vec<String>,
}

/// Namespaces joined, in order: the user namespace first (it grants the rights for
/// the others), the mount namespace last (it changes what paths mean).
const NAMESPACES: &[(&str, CloneFlags)] = &[
    ("user", CloneFlags::CLONE_NEWUSER),
    ("ipc", CloneFlags::CLONE_NEWIPC),
    ("uts", CloneFlags::CLONE_NEWUTS),
    ("net", CloneFlags::CLONE_NEWNET),
    ("pid", CloneFlags::CLONE_NEWPID),
    ("cgroup", CloneFlags::CLONE_NEWCGROUP),
    ("mnt", CloneFlags::CLONE_NEWNS),
];

fn refused(m: impl Into<String>) -> OciError {
    OciError::Refused(m.into())
}

/// The container's namespaces that differ from ours, opened now (before any fork),
/// with whether a user namespace is among them.
fn open_namespaces(pid: i32) -> Result<(Vec<(OwnedFd, CloneFlags)>, bool), OciError> {
    let mut out = Vec::new();
    let mut userns = false;
    for (name, flag) in NAMESPACES {
        let theirs = format!("/proc/{pid}/ns/{name}");
        let same = std::fs::read_link(&theirs).ok()
            == std::fs::read_link(format!("/proc/self/ns/{name}")).ok();
        if same {
            continue;
        }
        let fd =
            std::fs::File::open(&theirs).map_err(|e| refused(format!("open {theirs}: {e}")))?;
        userns |= *name == "user";
        out.push((OwnedFd::from(fd), *flag));
    }
    Ok((out, userns))
}

fn process_for(a: &ExecArgs, spec: &oci_spec::runtime::Spec) -> Result<OciProcess, OciError> {
    if let Some(p) = &a.process {
        let text = std::fs::read_to_string(p)
            .map_err(|e| refused(format!("--process {}: {e}", p.display())))?;
        let proc: oci_spec::runtime::Process = serde_json::from_str(&text).map_err(|e| {
            refused(format!(
                "--process {}: not an OCI process: {e}",
                p.display()
            ))
        })?;
        return Ok(bundle::oci_process(&proc)?);
    }
    if a.command.is_empty() {
        return Err(refused(
            "exec needs --process FILE or a command after the id",
        ));
    }
    let base = spec
        .process()
        .as_ref()
        .ok_or_else(|| refused("the container's config.json has no process"))?;
    let mut p = bundle::oci_process(base)?;
    p.args = a.command.clone();
    p.env.extend(a.env.iter().cloned());
    if let Some(c) = &a.cwd {
        p.cwd = c.clone();
    }
    Ok(p)
}

/// Runs `exec`. Returns the exit code of the runtime command.
pub fn exec(g: &Global, a: &ExecArgs) -> Result<i32, OciError> {
    state::check_id(&a.id)?;
    let c = Container::open(&g.root, &a.id, false)?;
    let s = c.load()?;
    let status = c.status(&s);
    if matches!(status, Status::Stopped | Status::Paused) {
        return Err(refused(format!(
            "cannot exec in container {}: it is {status}",
            a.id
        )));
    }
    let spec = oci_spec::runtime::Spec::load(s.bundle.join("config.json")).map_err(|e| {
        OciError::Bundle(BundleError::Parse {
            bundle: s.bundle.clone(),
            message: e.to_string(),
        })
    })?;
    let mut process = process_for(a, &spec)?;
    process.terminal |= a.tty;
    let console = match (&a.console_socket, process.terminal) {
        (Some(p), true) => Some(crate::sandbox::console::connect(p)?),
        (None, false) => None,
        (Some(_), false) => {
            return Err(refused(
                "--console-socket given but the process has no terminal",
            ))
        }
        (None, true) => {
            return Err(refused(
                "a terminal needs --console-socket to receive the pty",
            ))
        }
    };
    let seccomp = spec
        .linux()
        .as_ref()
        .and_then(|l| l.seccomp().as_ref())
        .map(super::seccomp::compile)
        .transpose()?;
    let (namespaces, userns) = open_namespaces(s.pid)?;
    // The fds above must belong to the container's init, not to a recycled pid.
    if !state::alive(s.pid, s.start_time) {
        return Err(refused(format!("container {} ended", a.id)));
    }
    if !a.detach {
        nix::sys::prctl::set_child_subreaper(true)
            .map_err(|e| refused(format!("become a subreaper: {e}")))?;
    }
    let (r, w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)
        .map_err(|e| refused(format!("pipe: {e}")))?;
    let job = Job {
        namespaces: &namespaces,
        userns,
        cgroups: &s.cgroup_paths,
        process: &process,
        seccomp: seccomp.as_ref(),
        console: console.as_ref(),
    };
    // SAFETY: the runtime is single-threaded here; the child only sets up and execs.
    let helper = match unsafe { fork() } {
        Ok(ForkResult::Child) => {
            drop(r);
            helper(&job, w)
        }
        Ok(ForkResult::Parent { child }) => child,
        Err(e) => return Err(refused(format!("fork: {e}"))),
    };
    drop(w);
    let (pid, error) = read_report(r);
    let _ = nix::sys::wait::waitpid(helper, None);
    if let Some(e) = error {
        return Err(refused(format!("exec in container {}: {e}", a.id)));
    }
    let pid = pid.ok_or_else(|| refused("the exec helper ended without starting the process"))?;
    if let Some(f) = &a.pid_file {
        write_pid(f, pid)?;
    }
    if a.detach {
        return Ok(0);
    }
    loop {
        match nix::sys::wait::waitpid(Pid::from_raw(pid), None) {
            Ok(nix::sys::wait::WaitStatus::Exited(_, code)) => return Ok(code),
            Ok(nix::sys::wait::WaitStatus::Signaled(_, sig, _)) => return Ok(128 + sig as i32),
            Ok(_) | Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(refused(format!("wait for the exec'd process: {e}"))),
        }
    }
}

fn write_pid(f: &Path, pid: i32) -> Result<(), OciError> {
    let tmp = f.with_extension("maibox-tmp");
    std::fs::write(&tmp, pid.to_string())
        .and_then(|_| std::fs::rename(&tmp, f))
        .map_err(|e| refused(format!("write {}: {e}", f.display())))
}

/// "pid N" from the helper, then "error ..." lines if setup failed; end-of-file once
/// the process has exec'd (the pipe is close-on-exec).
fn read_report(r: OwnedFd) -> (Option<i32>, Option<String>) {
    let (mut pid, mut error) = (None, None);
    for line in std::io::BufReader::new(std::fs::File::from(r))
        .lines()
        .map_while(Result::ok)
    {
        if let Some(p) = line.strip_prefix("pid ") {
            pid = p.parse().ok();
        } else if let Some(e) = line.strip_prefix("error ") {
            error.get_or_insert_with(|| e.to_string());
        }
    }
    (pid, error)
}

struct Job<'a> {
    namespaces: &'a [(OwnedFd, CloneFlags)],
    userns: bool,
    cgroups: &'a [PathBuf],
    process: &'a OciProcess,
    seccomp: Option<&'a super::seccomp::Compiled>,
    console: Option<&'a OwnedFd>,
}

fn report(w: &OwnedFd, line: &str) {
    let _ = nix::unistd::write(w, format!("{line}\n").as_bytes());
}

/// In the forked helper: join the cgroup and namespaces, fork the process, report it.
fn helper(job: &Job, w: OwnedFd) -> ! {
    let fail = |e: String| -> ! {
        report(&w, &format!("error {e}"));
        // SAFETY: _exit in a forked child.
        unsafe { libc::_exit(1) }
    };
    let me = std::process::id().to_string();
    for dir in job.cgroups {
        let f = dir.join("cgroup.procs");
        if let Err(e) = std::fs::write(&f, &me) {
            fail(format!("join the container's cgroup {}: {e}", f.display()));
        }
    }
    for (fd, flag) in job.namespaces {
        if let Err(e) = nix::sched::setns(fd, *flag) {
            fail(format!("join the container's {flag:?} namespace: {e}"));
        }
    }
    // SAFETY: single-threaded; the child only sets up and execs.
    match unsafe { fork() } {
        Ok(ForkResult::Child) => start(job, &w),
        Ok(ForkResult::Parent { child }) => {
            report(&w, &format!("pid {child}"));
            // SAFETY: _exit in a forked child.
            unsafe { libc::_exit(0) }
        }
        Err(e) => fail(format!("fork into the container's pid namespace: {e}")),
    }
}

/// In the process itself, inside the container: identity, limits, seccomp, execve.
fn start(job: &Job, w: &OwnedFd) -> ! {
    let fail = |e: String| -> ! {
        report(w, &format!("error {e}"));
        // SAFETY: _exit in a forked child.
        unsafe { libc::_exit(1) }
    };
    let p = job.process;
    // Only stdio and the report pipe (close-on-exec) reach the process: a leaked
    // runtime fd is how CVE-2024-21626 reached the host.
    let mut keep = vec![w.as_raw_fd()];
    keep.extend(job.console.map(|c| c.as_raw_fd()));
    if let Err(e) = crate::sandbox::privs::close_fds_except(&keep) {
        fail(e.to_string());
    }
    if let Some(c) = job.console {
        let tty = nix::unistd::setsid()
            .map_err(|e| e.to_string())
            .and_then(|_| {
                crate::sandbox::console::attach(c.as_fd(), p.uid, p.gid).map_err(|e| e.to_string())
            });
        if let Err(e) = tty {
            fail(e);
        }
        // SAFETY: closing our inherited copy of the console socket before exec.
        unsafe { libc::close(c.as_raw_fd()) };
    }
    for (res, soft, hard) in &p.rlimits {
        let lim = libc::rlimit {
            rlim_cur: *soft,
            rlim_max: *hard,
        };
        // SAFETY: a valid rlimit; the resource number was checked at parse time.
        if unsafe { libc::setrlimit(*res as _, &lim) } != 0 {
            fail(format!(
                "setrlimit({res}): {}",
                std::io::Error::last_os_error()
            ));
        }
    }
    let steps = || -> Result<std::ffi::CString, crate::sandbox::SetupError> {
        if !p.no_new_privileges {
            engine::install_seccomp(job.seccomp)?;
        }
        engine::switch_identity(p, job.userns)?;
        engine::enter_cwd(&p.cwd)?;
        let program = engine::resolve_in_path(p)?;
        if p.no_new_privileges {
            engine::install_seccomp(job.seccomp)?;
        }
        Ok(program)
    };
    let program = match steps() {
        Ok(prog) => prog,
        Err(e) => fail(e.to_string()),
    };
    let _ = crate::sandbox::init::reset_signals();
    let cstr = |v: &[String]| -> Vec<std::ffi::CString> {
        v.iter()
            .filter_map(|s| std::ffi::CString::new(s.as_str()).ok())
            .collect()
    };
    let e = nix::unistd::execve(&program, &cstr(&p.args), &cstr(&p.env))
        .map(|_| nix::errno::Errno::UnknownErrno)
        .unwrap_or_else(|e| e);
    fail(format!("execve {program:?}: {e}"))
}
