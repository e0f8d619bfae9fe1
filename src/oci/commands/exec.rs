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

use crate::engine::oci as engine;
use crate::oci::bundle::{self, BundleError};
use crate::oci::cli::Global;
use crate::oci::error::OciError;
use crate::oci::state::{self, Container, Status};
use crate::policy::oci::OciProcess;

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
    /// The user to run as, UID[:GID] (without --process).
    #[arg(long, short = 'u')]
    pub user: Option<String>,
    /// Exec even in a paused container (the process starts frozen).
    #[arg(long)]
    pub ignore_paused: bool,
    /// Supplementary groups (without --process; repeatable).
    #[arg(long = "additional-gids", short = 'g')]
    pub additional_gids: Vec<u32>,
    /// Pass the caller's descriptors 3 to 3+N-1 to the process.
    #[arg(long, default_value_t = 0)]
    pub preserve_fds: u32,
    /// Join a group below the container's, [CONTROLLER[,CONTROLLER]:]PATH
    /// (repeatable; `/` is the container's own).
    #[arg(long = "cgroup")]
    pub cgroup: Vec<String>,
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
        let bad = |e: serde_json::Error| {
            refused(format!(
                "--process {}: not an OCI process: {e}",
                p.display()
            ))
        };
        let mut v: serde_json::Value = serde_json::from_str(&text).map_err(bad)?;
        // As runc: a process without `user` runs as root, without `cwd` in /.
        if let Some(o) = v.as_object_mut() {
            o.entry("user")
                .or_insert_with(|| serde_json::json!({"uid": 0, "gid": 0}));
            o.entry("cwd").or_insert_with(|| "/".into());
        }
        let proc: oci_spec::runtime::Process = serde_json::from_value(v).map_err(bad)?;
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
    // As runc: the container's terminal setting is not inherited; `-t` asks.
    p.terminal = false;
    if let Some(u) = &a.user {
        let (uid, gid) = parse_user(u)?;
        p.uid = uid;
        p.gid = gid;
        p.additional_gids.clear();
    }
    if !a.additional_gids.is_empty() {
        p.additional_gids = a.additional_gids.clone();
    }
    Ok(p)
}

/// `--user UID[:GID]` (numeric, as runc takes it).
fn parse_user(u: &str) -> Result<(u32, u32), OciError> {
    let bad = || refused(format!("--user {u:?}: expected UID[:GID], numeric"));
    let (uid, gid) = match u.split_once(':') {
        Some((a, b)) => (a, Some(b)),
        None => (u, None),
    };
    let uid: u32 = uid.parse().map_err(|_| bad())?;
    let gid: u32 = match gid {
        Some(g) => g.parse().map_err(|_| bad())?,
        None => 0,
    };
    Ok((uid, gid))
}

/// The container's seccomp programs for the process; for a strict runtime's
/// container (`hardened`), its hardening as its init's: the open-file cap in
/// `process`, the kill guard on the programs, and the tmpfs mounts Landlock lets run
/// programs (`Some` when Landlock applies).
type Confinement = (
    Option<crate::confine::seccomp::oci::Compiled>,
    Option<Vec<PathBuf>>,
);
fn confinement(
    spec: &oci_spec::runtime::Spec,
    process: &mut OciProcess,
    hardened: bool,
) -> Result<Confinement, OciError> {
    let seccomp = spec
        .linux()
        .as_ref()
        .and_then(|l| l.seccomp().as_ref())
        .map(crate::confine::seccomp::oci::compile)
        .transpose()
        .map_err(BundleError::from)?;
    if !hardened {
        return Ok((seccomp, None));
    }
    let level = crate::oci::harden::Level::load()?;
    crate::oci::harden::process(process, &level);
    Ok((
        Some(crate::oci::harden::seccomp(seccomp, &level)),
        Some(crate::oci::harden::exec_tmpfs(spec)),
    ))
}

/// Runs `exec`. Returns the exit code of the runtime command.
pub fn exec(g: &Global, a: &ExecArgs) -> Result<i32, OciError> {
    // Before this command opens anything of its own.
    let preserved = crate::oci::fds::inherited(a.preserve_fds);
    let subs = crate::cgroup::oci::subgroup::parse(&a.cgroup).map_err(refused)?;
    let (c, s, spec) = open_container(g, a)?;
    let mut process = process_for(a, &spec)?;
    process.terminal |= a.tty;
    // Our end of the console socket of a foreground exec, which relays the pty itself.
    let (console, own_console) = console_for(a, process.terminal)?;
    let (seccomp, landlock) = confinement(&spec, &mut process, g.hardened || s.hardened)?;
    if !a.cgroup.is_empty() && s.cgroup_paths.is_empty() {
        return Err(refused(format!(
            "--cgroup: container {} has no cgroup",
            a.id
        )));
    }
    let cgroups = crate::cgroup::oci::subgroup::targets(&s.cgroup_paths, &subs).map_err(refused)?;
    let (namespaces, userns) = open_namespaces(s.pid)?;
    // The fds above must belong to the container's init, not to a recycled pid.
    if !state::alive(s.pid, s.start_time) {
        return Err(refused(format!("container {} ended", a.id)));
    }
    // The namespaces are pinned by their fds now. The lock must not outlive this
    // point: a forked helper would inherit it, and one frozen in a paused
    // container (--ignore-paused) would hold off the `resume` that thaws it, as
    // would a long exec every `kill` or `delete`.
    drop(c);
    if !a.detach {
        nix::sys::prctl::set_child_subreaper(true)
            .map_err(|e| refused(format!("become a subreaper: {e}")))?;
    }
    // SCMP_ACT_NOTIFY: the process passes its listener back on this, for the agent.
    let notify = seccomp.as_ref().and_then(|c| c.notify.clone());
    let listener_pair = match notify {
        Some(_) => Some(socket_pair("socket pair for the seccomp listener")?),
        None => None,
    };
    let job = Job {
        namespaces: &namespaces,
        userns,
        cgroups: &cgroups,
        process: &process,
        seccomp: seccomp.as_ref(),
        landlock: landlock.as_deref(),
        console: console.as_ref(),
        preserved: &preserved,
        listener_sock: listener_pair.as_ref().map(|(_, theirs)| theirs),
    };
    let (helper, report) = fork_helper(&job)?;
    drop(console);
    let pid = collect_pid(a, &s, helper, report, notify.as_ref(), listener_pair)?;
    if let Some(f) = &a.pid_file {
        write_pid(f, pid)?;
    }
    if a.detach {
        return Ok(0);
    }
    wait_exit(pid, own_console)
}

/// A stopped container runs nothing; a paused one only when asked to.
fn check_status(status: Status, a: &ExecArgs) -> Result<(), OciError> {
    match status {
        Status::Stopped => Err(refused(format!(
            "cannot exec in a stopped container ({})",
            a.id
        ))),
        // Its process would stay frozen until `resume`: only when asked for.
        Status::Paused if !a.ignore_paused => Err(refused(format!(
            "cannot exec in a paused container ({}): resume it, or pass --ignore-paused",
            a.id
        ))),
        _ => Ok(()),
    }
}

/// The console socket end the process sends its pty master to, and, for a
/// foreground exec without `--console-socket`, our end of a fresh pair.
fn console_for(
    a: &ExecArgs,
    terminal: bool,
) -> Result<(Option<OwnedFd>, Option<OwnedFd>), OciError> {
    match (&a.console_socket, terminal) {
        (Some(p), true) => Ok((Some(crate::engine::console::connect(p)?), None)),
        (None, false) => Ok((None, None)),
        (Some(_), false) => Err(refused(
            "--console-socket given but the process has no terminal",
        )),
        (None, true) if !a.detach => {
            let (ours, theirs) = socket_pair("create the console socket pair")?;
            Ok((Some(theirs), Some(ours)))
        }
        (None, true) => Err(refused(
            "a detached terminal needs --console-socket to receive the pty",
        )),
    }
}

/// The container, its state and its spec; refused when it cannot run a process.
fn open_container(
    g: &Global,
    a: &ExecArgs,
) -> Result<(Container, state::Saved, oci_spec::runtime::Spec), OciError> {
    state::check_id(&a.id)?;
    let c = Container::open(&g.root, &a.id, false)?;
    let s = c.load()?;
    check_status(c.status(&s), a)?;
    let spec = oci_spec::runtime::Spec::load(s.bundle.join("config.json")).map_err(|e| {
        OciError::Bundle(BundleError::Parse {
            bundle: s.bundle.clone(),
            message: e.to_string(),
        })
    })?;
    Ok((c, s, spec))
}

fn socket_pair(what: &str) -> Result<(OwnedFd, OwnedFd), OciError> {
    let (ours, theirs) =
        std::os::unix::net::UnixStream::pair().map_err(|e| refused(format!("{what}: {e}")))?;
    Ok((OwnedFd::from(ours), OwnedFd::from(theirs)))
}

/// Forks the helper that joins the container and forks the process; its
/// report comes back on the returned pipe.
fn fork_helper(job: &Job) -> Result<(Pid, Report), OciError> {
    let (r, w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)
        .map_err(|e| refused(format!("pipe: {e}")))?;
    // SAFETY: the runtime is single-threaded here; the child only sets up and execs.
    match unsafe { fork() } {
        Ok(ForkResult::Child) => {
            drop(r);
            helper(job, w)
        }
        Ok(ForkResult::Parent { child }) => Ok((child, Report::new(r))),
        Err(e) => Err(refused(format!("fork: {e}"))),
    }
}

/// The process's pid from the helper's report, once it has exec'd; its seccomp
/// listener goes to the agent meanwhile.
fn collect_pid(
    a: &ExecArgs,
    s: &state::Saved,
    helper: Pid,
    mut report: Report,
    notify: Option<&crate::confine::seccomp::oci::Notify>,
    listener_pair: Option<(OwnedFd, OwnedFd)>,
) -> Result<i32, OciError> {
    let pid = report.pid();
    if let (Some(n), Some((ours, theirs)), Some(pid)) = (notify, listener_pair, pid) {
        // Only the process keeps the other end: end-of-file once it is gone.
        drop(theirs);
        if let Some(listener) = crate::oci::agent::receive_listener(&ours)? {
            let owner = crate::oci::agent::Owner {
                id: &a.id,
                pid,
                status: "running",
                bundle: &s.bundle,
                annotations: serde_json::json!(s.annotations),
            };
            if let Err(e) = crate::oci::agent::hand_over(n, &owner, &listener) {
                let _ =
                    nix::sys::signal::kill(Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
                return Err(e);
            }
        }
    }
    let error = report.error();
    let _ = nix::sys::wait::waitpid(helper, None);
    if let Some(e) = error {
        return Err(refused(format!("exec in container {}: {e}", a.id)));
    }
    pid.ok_or_else(|| refused("the exec helper ended without starting the process"))
}

/// Waits for the process (relaying its pty when it has one); its exit code,
/// or 128 + the signal that killed it.
fn wait_exit(pid: i32, own_console: Option<OwnedFd>) -> Result<i32, OciError> {
    let relay = match &own_console {
        Some(sock) => {
            let master = crate::engine::console::receive_master(sock.as_fd())?;
            Some(
                crate::engine::console::relay(master)
                    .map_err(|e| refused(format!("relay the process's pty: {e}")))?,
            )
        }
        None => None,
    };
    let code = loop {
        match nix::sys::wait::waitpid(Pid::from_raw(pid), None) {
            Ok(nix::sys::wait::WaitStatus::Exited(_, code)) => break code,
            Ok(nix::sys::wait::WaitStatus::Signaled(_, sig, _)) => break 128 + sig as i32,
            Ok(_) | Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(refused(format!("wait for the exec'd process: {e}"))),
        }
    };
    if let Some(r) = relay {
        r.finish();
    }
    Ok(code)
}

fn write_pid(f: &Path, pid: i32) -> Result<(), OciError> {
    let tmp = f.with_extension("maibox-tmp");
    std::fs::write(&tmp, pid.to_string())
        .and_then(|_| std::fs::rename(&tmp, f))
        .map_err(|e| refused(format!("write {}: {e}", f.display())))
}

/// The helper's report: "pid N" once the process is forked, then "error ..."
/// lines if its setup failed; end-of-file once it has exec'd (the pipe is
/// close-on-exec). Read in two steps, so that the runtime can serve the process
/// (its seccomp listener) between the pid and the exec.
struct Report {
    lines: std::io::Lines<std::io::BufReader<std::fs::File>>,
    error: Option<String>,
}

impl Report {
    fn new(r: OwnedFd) -> Report {
        Report {
            lines: std::io::BufReader::new(std::fs::File::from(r)).lines(),
            error: None,
        }
    }

    /// The process's pid; `None` if the helper failed first.
    fn pid(&mut self) -> Option<i32> {
        for line in self.lines.by_ref().map_while(Result::ok) {
            if let Some(p) = line.strip_prefix("pid ") {
                return p.parse().ok();
            }
            if let Some(e) = line.strip_prefix("error ") {
                self.error.get_or_insert_with(|| e.to_string());
            }
        }
        None
    }

    /// The first error reported, after reading to the end.
    fn error(mut self) -> Option<String> {
        for line in self.lines.by_ref().map_while(Result::ok) {
            if let Some(e) = line.strip_prefix("error ") {
                self.error.get_or_insert_with(|| e.to_string());
            }
        }
        self.error
    }
}

struct Job<'a> {
    namespaces: &'a [(OwnedFd, CloneFlags)],
    userns: bool,
    cgroups: &'a [PathBuf],
    process: &'a OciProcess,
    seccomp: Option<&'a crate::confine::seccomp::oci::Compiled>,
    /// `--hardened`: Landlock on the container's root, with these tmpfs mounted
    /// `exec` (see [`crate::oci::harden`]).
    landlock: Option<&'a [PathBuf]>,
    console: Option<&'a OwnedFd>,
    /// `--preserve-fds`: the caller's descriptors, kept open through execve.
    preserved: &'a [i32],
    /// SCMP_ACT_NOTIFY: where the process passes its listener (close-on-exec).
    listener_sock: Option<&'a OwnedFd>,
}

/// An OS error as the kernel's text, lowercase ("no such file or directory").
fn lowercase_os_error(e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(n) => {
            let text = nix::errno::Errno::from_raw(n).desc();
            let mut c = text.chars();
            c.next()
                .map(|f| f.to_lowercase().chain(c).collect())
                .unwrap_or_default()
        }
        None => e.to_string(),
    }
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
            fail(format!(
                "adding pid {me} to the container's cgroup: {}: {}",
                f.display(),
                lowercase_os_error(&e)
            ));
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

/// Right after a notifying filter goes on: its listener to the runtime, which
/// hands it to the agent before this process's notified calls can be answered.
fn pass_listener(job: &Job, listener: Option<OwnedFd>) -> Result<(), crate::error::SetupError> {
    let (Some(l), Some(sock)) = (listener, job.listener_sock) else {
        return Ok(());
    };
    crate::oci::agent::send_listener(sock, &l)
        .map_err(|e| crate::error::SetupError::new(crate::error::Step::Seccomp, e))
}

/// The process's `rlimits`.
fn set_rlimits(p: &OciProcess) -> Result<(), String> {
    for (res, soft, hard) in &p.rlimits {
        let lim = libc::rlimit {
            rlim_cur: *soft,
            rlim_max: *hard,
        };
        // SAFETY: a valid rlimit; the resource number was checked at parse time.
        if unsafe { libc::setrlimit(*res as _, &lim) } != 0 {
            return Err(format!(
                "setrlimit({res}): {}",
                std::io::Error::last_os_error()
            ));
        }
    }
    Ok(())
}

/// In the process itself, inside the container: identity, limits, seccomp, execve.
fn start(job: &Job, w: &OwnedFd) -> ! {
    let fail = |e: String| -> ! {
        report(w, &format!("error {e}"));
        // SAFETY: _exit in a forked child.
        unsafe { libc::_exit(1) }
    };
    let program = match prepare_process(job, w) {
        Ok(prog) => prog,
        Err(e) => fail(e),
    };
    let p = job.process;
    let _ = crate::engine::init::reset_signals();
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

/// The process's setup in order, up to the program to execve: descriptors, console,
/// limits, Landlock, then identity and seccomp.
fn prepare_process(job: &Job, w: &OwnedFd) -> Result<std::ffi::CString, String> {
    // Only stdio, the descriptors the caller preserved and the report pipe
    // (close-on-exec) reach the process: a leaked runtime fd is how
    // CVE-2024-21626 reached the host.
    let mut keep = vec![w.as_raw_fd()];
    keep.extend(job.console.map(|c| c.as_raw_fd()));
    keep.extend_from_slice(job.preserved);
    keep.extend(job.listener_sock.map(|l| l.as_raw_fd()));
    crate::engine::privs::close_fds_except(&keep).map_err(|e| e.to_string())?;
    if let Some(c) = job.console {
        nix::unistd::setsid().map_err(|e| e.to_string())?;
        crate::engine::console::attach(c.as_fd(), job.process.uid, job.process.console_size)
            .map_err(|e| e.to_string())?;
        // SAFETY: closing our inherited copy of the console socket before exec.
        unsafe { libc::close(c.as_raw_fd()) };
    }
    set_rlimits(job.process)?;
    // Before the identity switch: Landlock needs CAP_SYS_ADMIN or no_new_privs.
    if let Some(exec_tmpfs) = job.landlock {
        crate::confine::landlock_mounts::apply(exec_tmpfs)
            .map_err(|e| format!("Landlock on the container's root: {e}"))?;
    }
    identity_and_seccomp(job).map_err(|e| e.to_string())
}

/// Seccomp (before the identity switch unless no_new_privileges lets it wait until
/// last), the working directory, the identity, the program found on PATH, the umask.
fn identity_and_seccomp(job: &Job) -> Result<std::ffi::CString, crate::error::SetupError> {
    let p = job.process;
    if !p.no_new_privileges {
        pass_listener(job, engine::install_seccomp(job.seccomp)?)?;
    }
    let entered = std::env::set_current_dir(&p.cwd).is_ok();
    engine::switch_identity(p, job.userns)?;
    if entered {
        engine::check_cwd(&p.cwd)?;
    } else {
        engine::enter_cwd(&p.cwd)?;
    }
    let program = engine::resolve_in_path(p)?;
    // As runc: the spec's umask, or 022 rather than whatever the runtime had.
    nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(
        p.umask.unwrap_or(0o022),
    ));
    if p.no_new_privileges {
        pass_listener(job, engine::install_seccomp(job.seccomp)?)?;
    }
    Ok(program)
}
