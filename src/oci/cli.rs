//! The runc-compatible verbs: `create`, `start`, `state`, `kill`, `delete`, `run`,
//! `list`, `spec`. Errors are written to `--log` (JSON lines with `--log-format
//! json`, as containerd's shim reads them) and to stderr, with a non-zero exit.

use super::bundle::{self, BundleError, Waivable};
use super::hooks::{self, HookError};
use super::state::{self, Container, Saved, StateError, Status};
use crate::cgroup::oci::ContainerCgroup;
use crate::engine::{spawn, SetupError};
use crate::policy::View;
use clap::{Args, Subcommand, ValueEnum};
use nix::sys::signal::Signal;
use nix::unistd::Pid;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// runc's global flags; accepted before the verb (where Docker puts them).
#[derive(Args, Debug, Clone)]
pub struct Global {
    /// Directory for container state.
    #[arg(long, global = true, default_value = state::DEFAULT_ROOT)]
    pub root: PathBuf,
    /// Where errors are logged (default: stderr only).
    #[arg(long, global = true)]
    pub log: Option<PathBuf>,
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    #[arg(long, global = true)]
    pub debug: bool,
    /// Refused: maibox manages cgroupfs paths only.
    #[arg(long, global = true)]
    pub systemd_cgroup: bool,
    /// Let a spec run although maibox does not enforce these of its fields yet
    /// (comma-separated). The container is weaker than its spec says.
    #[arg(
        long = "unsafe-allow-unenforced",
        global = true,
        value_enum,
        value_delimiter = ',',
        hide = true
    )]
    pub unenforced: Vec<Waivable>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Subcommand, Debug)]
pub enum Verb {
    /// OCI: create a container from a bundle and leave it waiting for `start`.
    Create(CreateArgs),
    /// OCI: start a created container.
    Start { id: String },
    /// OCI: print a container's state as JSON.
    State { id: String },
    /// OCI: send a signal (name or number, default TERM) to a container.
    Kill {
        /// Signal every process of the container, not only its init.
        #[arg(long, short = 'a')]
        all: bool,
        id: String,
        signal: Option<String>,
    },
    /// OCI: delete a container's state, killing it if --force.
    Delete {
        #[arg(long, short = 'f')]
        force: bool,
        id: String,
    },
    /// OCI: create and start a container, and wait for it.
    Run {
        #[command(flatten)]
        create: CreateArgs,
        /// Return after the start instead of waiting.
        #[arg(long, short = 'd')]
        detach: bool,
        /// Keep the container's state after it exits (delete it later).
        #[arg(long)]
        keep: bool,
    },
    /// OCI: list containers.
    List {
        #[arg(long, short = 'f', value_enum, default_value_t = ListFormat::Table)]
        format: ListFormat,
        #[arg(long, short = 'q')]
        quiet: bool,
    },
    /// OCI: list the host pids of a container's processes (`docker top`).
    Ps {
        #[arg(long, short = 'f', value_enum, default_value_t = ListFormat::Table)]
        format: ListFormat,
        id: String,
        /// Options for ps(1) in the table form (default -ef), as runc takes them.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        ps_args: Vec<String>,
    },
    /// OCI: change a running container's limits, from runc's flags or a
    /// LinuxResources JSON (`-r FILE`, `-r -` for stdin, as `docker update` sends it).
    Update(super::update::UpdateArgs),
    /// OCI: print what this runtime implements (runtime-spec features.md), as JSON.
    Features,
    /// OCI: print a container's resource usage and OOM notices as JSON lines
    /// (every --interval, or once with --stats).
    Events(super::events::EventsArgs),
    /// OCI: freeze every process of a container.
    Pause { id: String },
    /// OCI: thaw a paused container.
    Resume { id: String },
    /// OCI: run a process in a running container (`exec --process FILE ID`; the
    /// `maibox exec` of Python code is told apart by these flags).
    #[command(name = "oci-exec", hide = true)]
    OciExec(super::exec::ExecArgs),
    /// OCI: write a template config.json.
    Spec {
        #[arg(long)]
        rootless: bool,
        /// Directory to write config.json into (default: the current directory).
        #[arg(long, short = 'b')]
        bundle: Option<PathBuf>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ListFormat {
    Table,
    Json,
}

#[derive(Args, Debug)]
pub struct CreateArgs {
    /// The bundle directory (default: the current directory).
    #[arg(long, short = 'b', default_value = ".")]
    pub bundle: PathBuf,
    #[arg(long)]
    pub pid_file: Option<PathBuf>,
    #[arg(long)]
    pub console_socket: Option<PathBuf>,
    /// Accepted for compatibility: maibox always uses pivot_root.
    #[arg(long)]
    pub no_pivot: bool,
    /// Accepted for compatibility: no session keyring is created.
    #[arg(long)]
    pub no_new_keyring: bool,
    /// Pass the caller's descriptors 3 to 3+N-1 to the container's process.
    #[arg(long, default_value_t = 0)]
    pub preserve_fds: u32,
    pub id: String,
}

#[derive(Debug, thiserror::Error)]
pub enum OciError {
    #[error(transparent)]
    Bundle(#[from] BundleError),
    #[error(transparent)]
    State(#[from] StateError),
    #[error(transparent)]
    Setup(#[from] SetupError),
    #[error(transparent)]
    Hook(#[from] HookError),
    #[error("{0}")]
    Refused(String),
    #[error("{what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
}

fn io_err(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> OciError {
    let what = what.into();
    move |source| OciError::Io { what, source }
}

/// Runs one verb; returns the process exit code. Errors are logged here.
pub fn main(g: &Global, verb: Verb) -> i32 {
    // runc's exec exits 255 when the process could not be started (its own
    // status otherwise); the other verbs exit 1 on error.
    let failure = if matches!(verb, Verb::OciExec(_)) {
        255
    } else {
        1
    };
    let r = if g.systemd_cgroup {
        Err(OciError::Refused(
            "--systemd-cgroup is not supported: configure the caller for the cgroupfs driver"
                .into(),
        ))
    } else {
        dispatch(g, verb)
    };
    match r {
        Ok(code) => code,
        Err(e) => {
            log_error(g, &e.to_string());
            failure
        }
    }
}

fn log_error(g: &Global, msg: &str) {
    eprintln!("maibox: error: {msg}");
    if let Some(path) = &g.log {
        append_log(path, g.log_format, "error", msg);
    }
}

/// With `--debug`, a debug line to `--log`, or else to stderr (as runc does).
pub(crate) fn log_debug(g: &Global, msg: &str) {
    if !g.debug {
        return;
    }
    match &g.log {
        Some(path) => append_log(path, g.log_format, "debug", msg),
        None => eprintln!("{}", log_line(LogFormat::Text, "debug", msg)),
    }
}

fn log_line(format: LogFormat, level: &str, msg: &str) -> String {
    match format {
        LogFormat::Json => serde_json::json!({
            "level": level,
            "msg": msg,
            "time": state::now_rfc3339(),
        })
        .to_string(),
        LogFormat::Text => format!(
            "time=\"{}\" level={level} msg={msg:?}",
            state::now_rfc3339()
        ),
    }
}

fn append_log(path: &Path, format: LogFormat, level: &str, msg: &str) {
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = writeln!(f, "{}", log_line(format, level, msg));
    }
}

fn dispatch(g: &Global, verb: Verb) -> Result<i32, OciError> {
    log_debug(
        g,
        &format!(
            "maibox {} (spec {}), root {}",
            env!("CARGO_PKG_VERSION"),
            OCI_VERSION,
            g.root.display()
        ),
    );
    match verb {
        Verb::Create(a) => create(g, &a, false).map(|_| 0),
        Verb::Start { id } => start(g, &id).map(|_| 0),
        Verb::State { id } => {
            let c = Container::open(&g.root, &id, false)?;
            let s = c.load()?;
            println!(
                "{}",
                serde_json::to_string_pretty(&state_json(&s, c.status(&s))).unwrap_or_default()
            );
            Ok(0)
        }
        Verb::Kill { all, id, signal } => {
            let sig = parse_signal(signal.as_deref().unwrap_or("TERM"))?;
            kill(g, &id, sig, all).map(|_| 0)
        }
        Verb::Delete { force, id } => delete(g, &id, force).map(|_| 0),
        Verb::Run {
            create: a,
            detach,
            keep,
        } => run(g, &a, detach, keep),
        Verb::List { format, quiet } => {
            super::list::list(g, format, quiet);
            Ok(0)
        }
        Verb::Spec { rootless, bundle } => spec(rootless, bundle.as_deref()).map(|_| 0),
        Verb::OciExec(a) => super::exec::exec(g, &a),
        Verb::Update(a) => super::update::update(g, &a).map(|_| 0),
        Verb::Features => {
            println!(
                "{}",
                serde_json::to_string_pretty(&features()).unwrap_or_default()
            );
            Ok(0)
        }
        Verb::Events(a) => super::events::events(g, &a),
        Verb::Pause { id } => pause(g, &id, true).map(|_| 0),
        Verb::Resume { id } => pause(g, &id, false).map(|_| 0),
        Verb::Ps {
            format,
            id,
            ps_args,
        } => {
            let c = Container::open(&g.root, &id, false)?;
            let s = c.load()?;
            let pids = if c.status(&s) == Status::Stopped {
                Vec::new()
            } else {
                container_pids(&s)
            };
            match format {
                ListFormat::Json => println!("{}", serde_json::json!(pids)),
                ListFormat::Table => ps_table(&pids, &ps_args)?,
            }
            Ok(0)
        }
    }
}

/// The runtime-spec version of the states maibox reports.
pub const OCI_VERSION: &str = "1.0.2";

/// The state as the runtime spec defines it (`ociVersion`, `id`, `status`, `pid`,
/// `bundle`, `annotations`). A stopped container has no pid.
pub fn state_json(s: &Saved, status: Status) -> serde_json::Value {
    let mut v = serde_json::json!({
        "ociVersion": OCI_VERSION,
        "id": s.id,
        "status": status,
        "bundle": s.bundle,
        "rootfs": s.bundle.join("rootfs"),
        "created": s.created,
        "owner": "",
        "annotations": s.annotations,
    });
    if status != Status::Stopped {
        v["pid"] = s.pid.into();
    } else {
        v["pid"] = 0.into();
    }
    v
}

/// A signal by name or number; `None` for 0, which only checks that the
/// container's processes exist.
pub fn parse_signal(s: &str) -> Result<Option<Signal>, OciError> {
    let bad = || OciError::Refused(format!("invalid signal {s:?}"));
    if let Ok(n) = s.parse::<i32>() {
        if n == 0 {
            return Ok(None);
        }
        return Signal::try_from(n).map(Some).map_err(|_| bad());
    }
    let up = s.to_ascii_uppercase();
    let name = if up.starts_with("SIG") {
        up
    } else {
        format!("SIG{up}")
    };
    name.parse::<Signal>().map(Some).map_err(|_| bad())
}

struct Created {
    container: Container,
    saved: Saved,
    /// The pty master of a foreground `run` with `terminal: true`.
    console: Option<OwnedFd>,
}

/// Sets a container up and leaves its init blocked on the start FIFO. With
/// `foreground` (`run`), the container dies with this process.
fn create(g: &Global, a: &CreateArgs, foreground: bool) -> Result<Created, OciError> {
    // Before this command opens anything of its own.
    let preserved = super::fds::inherited(a.preserve_fds);
    state::check_id(&a.id)?;
    let waived: BTreeSet<Waivable> = g.unenforced.iter().copied().collect();
    // Validate everything before claiming the id: a bad bundle leaves nothing behind.
    let mut loaded = bundle::load(&a.bundle, &waived)?;
    if let View::Oci(view) = &mut loaded.policy.view {
        view.preserve_fds = preserved;
    }
    let container = Container::create(&g.root, &a.id)?;
    match create_in(g, a, &container, &mut loaded, foreground) {
        Ok((saved, console)) => Ok(Created {
            container,
            saved,
            console,
        }),
        Err(e) => {
            let _ = container.remove();
            Err(e)
        }
    }
}

fn create_in(
    g: &Global,
    a: &CreateArgs,
    container: &Container,
    loaded: &mut bundle::Loaded,
    foreground: bool,
) -> Result<(Saved, Option<OwnedFd>), OciError> {
    let fifo = container.fifo();
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600))
        .map_err(|e| io_err("create the start FIFO")(e.into()))?;
    let View::Oci(view) = &mut loaded.policy.view else {
        return Err(OciError::Refused("internal: not an OCI view".into()));
    };
    // O_RDWR never blocks on a FIFO, and keeps it open for `start`'s
    // non-blocking open. The init inherits it (see OciView::start_fifo).
    let gate = nix::fcntl::open(
        &fifo,
        nix::fcntl::OFlag::O_RDWR | nix::fcntl::OFlag::O_CLOEXEC,
        nix::sys::stat::Mode::empty(),
    )
    .map_err(|e| io_err("open the start FIFO")(e.into()))?;
    // SAFETY: a fresh descriptor owned by nothing else.
    let gate = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(gate) };
    view.start_fifo = Some(std::os::fd::AsRawFd::as_raw_fd(&gate));
    view.die_with_parent = foreground;
    // Namespaces to join, opened here so that a bad path fails before the clone;
    // the init inherits them.
    let mut ns_files = Vec::new();
    for j in &mut view.namespaces.join {
        let f = std::fs::File::open(&j.path).map_err(|e| {
            OciError::Refused(format!(
                "linux.namespaces: cannot open the {} namespace {}: {e}",
                j.kind,
                j.path.display()
            ))
        })?;
        j.fd = Some(std::os::fd::AsRawFd::as_raw_fd(&f));
        ns_files.push(f);
    }
    // Our end of the console socket of a foreground `run`, which relays the pty itself.
    let mut own_console: Option<OwnedFd> = None;
    let console = match (&a.console_socket, view.process.terminal) {
        (Some(p), true) => Some(crate::engine::console::connect(p)?),
        (None, false) => None,
        (Some(_), false) => {
            return Err(OciError::Refused(
                "--console-socket given but process.terminal is false: there is no pty to \
                 send (set process.terminal to true or drop --console-socket)"
                    .into(),
            ))
        }
        (None, true) if foreground => {
            let (ours, theirs) = std::os::unix::net::UnixStream::pair()
                .map_err(io_err("create the console socket pair"))?;
            own_console = Some(ours.into());
            Some(OwnedFd::from(theirs))
        }
        (None, true) => {
            return Err(OciError::Refused(
                "process.terminal is true: give --console-socket to receive the pty".into(),
            ))
        }
    };
    view.console = console.as_ref().map(std::os::fd::AsRawFd::as_raw_fd);
    let pid_ns = view.namespaces.pid;
    let hooks_value = loaded
        .spec
        .hooks()
        .as_ref()
        .and_then(|h| serde_json::to_value(h).ok());
    view.hooks = hooks_value.clone();
    view.hooks_sync = [
        "prestart",
        "createRuntime",
        "createContainer",
        "startContainer",
    ]
    .iter()
    .any(|stage| {
        hooks_value
            .as_ref()
            .and_then(|h| h.get(*stage))
            .is_some_and(|l| l.as_array().is_some_and(|a| !a.is_empty()))
    });
    let hooks_sync = view.hooks_sync;
    let bind_sources = view
        .bind_sources_from_runtime()
        .then(|| view.mounts.clone());
    let notify = view.seccomp.as_ref().and_then(|c| c.notify.clone());
    let dup = |fd: std::os::fd::BorrowedFd| -> Result<OwnedFd, OciError> {
        fd.try_clone_to_owned().map_err(io_err("duplicate stdio"))
    };
    let stdio = spawn::ChildStdio {
        stdin: dup(std::io::stdin().as_fd())?,
        stdout: dup(std::io::stdout().as_fd())?,
        stderr: dup(std::io::stderr().as_fd())?,
    };
    // The OCI child finds its program inside the container's root itself (so that a
    // missing one fails `create`); the engine's payload slot carries nothing here.
    let payload = crate::engine::init::Payload {
        program: c"/".into(),
        argv: Vec::new(),
        envp: Vec::new(),
        confine: Box::new(|| Ok(Default::default())),
        bridge: None,
    };
    let group = container_cgroup(&loaded.spec, &a.id)?;
    let mut attach = |pid: Pid| -> Result<(), SetupError> {
        if let Some(g) = &group {
            g.attach(pid.as_raw())
                .map_err(|e| SetupError::new(crate::error::Step::Cgroup, e.to_string()))?;
        }
        Ok(())
    };
    let spawned = spawn::spawn(&loaded.policy, &[], payload, stdio, &mut attach)?;
    // The init has its own copy now; ours would keep `start`'s open from failing
    // once the init is gone.
    drop(gate);
    drop(ns_files);
    let pid = spawned.pid;
    let kill_it = |e: OciError| {
        let _ = nix::sys::signal::kill(pid, Signal::SIGKILL);
        let _ = nix::sys::wait::waitpid(pid, None);
        e
    };
    // Before anything else: the init waits for them to build the root.
    if let Some(mounts) = &bind_sources {
        super::bindsrc::send(&spawned, mounts).map_err(kill_it)?;
    }
    if hooks_sync {
        runtime_hooks(&spawned, &a.id, loaded, hooks_value.as_ref()).map_err(kill_it)?;
    }
    if let Some(n) = notify.as_ref() {
        forward_listener(&spawned, &a.id, loaded, n).map_err(kill_it)?;
    }
    crate::engine::wait_ready(&spawned).map_err(|e| kill_it(e.into()))?;
    if let Some(g) = &group {
        g.apply_devices()
            .map_err(|e| kill_it(OciError::Refused(format!("container device rules: {e}"))))?;
    }
    drop(console);
    let master = match &own_console {
        Some(sock) => Some(
            crate::engine::console::receive_master(sock.as_fd()).map_err(|e| kill_it(e.into()))?,
        ),
        None => None,
    };
    let start_time = state::proc_stat(pid.as_raw())
        .map(|(_, t)| t)
        .ok_or_else(|| kill_it(OciError::Refused("the container init vanished".into())))?;
    let saved = Saved {
        id: a.id.clone(),
        pid: pid.as_raw(),
        start_time,
        bundle: loaded.bundle.clone(),
        created: state::now_rfc3339(),
        annotations: loaded
            .spec
            .annotations()
            .clone()
            .unwrap_or_default()
            .into_iter()
            .collect::<BTreeMap<_, _>>(),
        pid_ns,
        hooks: hooks_value,
        owner: nix::unistd::geteuid().as_raw(),
        cgroup_paths: group
            .as_ref()
            .map(ContainerCgroup::paths)
            .unwrap_or_default(),
    };
    container.save(&saved).map_err(|e| kill_it(e.into()))?;

    if let Some(p) = &a.pid_file {
        write_pid_file(p, pid.as_raw()).map_err(kill_it)?;
    }
    log_debug(g, &format!("created container {} (pid {pid})", a.id));
    if let Some(g) = group {
        g.persist();
    }
    Ok((saved, master))
}

/// The runtime's share of the hooks at create: the init has mounted the
/// container's filesystems and waits before pivot_root; `prestart` and
/// `createRuntime` run here (host namespaces), then the init runs
/// `createContainer` with the state sent back.
fn runtime_hooks(
    spawned: &spawn::Spawned,
    id: &str,
    loaded: &bundle::Loaded,
    hooks_value: Option<&serde_json::Value>,
) -> Result<(), OciError> {
    use crate::engine::sync::Msg;
    match spawned.chan.recv()? {
        Some(Msg::HooksPoint) => {}
        Some(Msg::Failed(e)) => return Err(e.into()),
        other => {
            return Err(OciError::Refused(format!(
                "the container init ended before its hooks ({other:?})"
            )))
        }
    }
    // "created", as runtime-tools' hooks_stdin check expects: the container's
    // process and namespaces exist by now.
    let state = serde_json::json!({
        "ociVersion": OCI_VERSION,
        "id": id,
        "status": "created",
        "pid": spawned.pid.as_raw(),
        "bundle": loaded.bundle,
        "annotations": loaded.spec.annotations().clone().unwrap_or_default(),
    });
    for stage in ["prestart", "createRuntime"] {
        hooks::run(hooks_value, stage, &state)?;
    }
    spawned.chan.send(&Msg::HooksDone {
        state: state.to_string(),
    })?;
    Ok(())
}

/// SCMP_ACT_NOTIFY: the init's seccomp listener goes to the agent at the
/// spec's `listenerPath` (see [`super::agent`]).
fn forward_listener(
    spawned: &spawn::Spawned,
    id: &str,
    loaded: &bundle::Loaded,
    n: &crate::confine::seccomp::oci::Notify,
) -> Result<(), OciError> {
    use crate::engine::sync::Msg;
    let fd = match spawned.chan.recv_with_fd()? {
        Some((Msg::SeccompListener, Some(fd))) => fd,
        Some((Msg::Failed(e), _)) => return Err(e.into()),
        other => {
            return Err(OciError::Refused(format!(
                "expected the seccomp listener from the container init, got {:?}",
                other.map(|(m, _)| m)
            )))
        }
    };
    let owner = super::agent::Owner {
        id,
        pid: spawned.pid.as_raw(),
        status: "creating",
        bundle: &loaded.bundle,
        annotations: serde_json::json!(loaded.spec.annotations().clone().unwrap_or_default()),
    };
    super::agent::hand_over(n, &owner, &fd)
}

/// The container's cgroup as its spec asks (none when it asks for none).
fn container_cgroup(
    spec: &oci_spec::runtime::Spec,
    id: &str,
) -> Result<Option<ContainerCgroup>, OciError> {
    let linux = spec.linux().clone().unwrap_or_default();
    let Some(want) = crate::cgroup::oci::from_spec(&linux, id).map_err(BundleError::from)? else {
        return Ok(None);
    };
    ContainerCgroup::create(&want, linux.resources().as_ref())
        .map(Some)
        .map_err(OciError::Refused)
}

/// Written to a temporary name and renamed: a reader never sees a partial pid.
fn write_pid_file(p: &Path, pid: i32) -> Result<(), OciError> {
    let tmp = p.with_extension("maibox-tmp");
    std::fs::write(&tmp, pid.to_string()).map_err(io_err(format!("write {}", tmp.display())))?;
    std::fs::rename(&tmp, p).map_err(io_err(format!("write {}", p.display())))
}

fn start(g: &Global, id: &str) -> Result<(), OciError> {
    let c = Container::open(&g.root, id, true)?;
    let s = c.load()?;
    let status = c.status(&s);
    if status != Status::Created {
        return Err(OciError::Refused(format!(
            "cannot start container {id}: it is {status}, not created"
        )));
    }
    let fifo = c.fifo();
    // Non-blocking: the init holds the FIFO open, so ENXIO means it is gone.
    let fd = nix::fcntl::open(
        &fifo,
        nix::fcntl::OFlag::O_WRONLY | nix::fcntl::OFlag::O_NONBLOCK | nix::fcntl::OFlag::O_CLOEXEC,
        nix::sys::stat::Mode::empty(),
    )
    .map_err(|e| {
        OciError::Refused(format!(
            "cannot start container {id}: init not waiting ({e})"
        ))
    })?;
    // SAFETY: a fresh descriptor owned by nothing else.
    let fd = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    nix::unistd::write(&fd, b"0").map_err(|e| io_err("write the start FIFO")(e.into()))?;
    drop(fd);
    std::fs::remove_file(&fifo).map_err(io_err("remove the start FIFO"))?;
    let st = state_json(&s, Status::Running);
    if let Err(e) = hooks::run(s.hooks.as_ref(), "poststart", &st) {
        // The container runs already; the spec says to log and go on.
        log_error(g, &e.to_string());
    }
    Ok(())
}

/// Every process of the container: from its cgroup when it has one (processes that
/// `exec` added included), else its init and its PID namespace.
fn container_pids(s: &Saved) -> Vec<i32> {
    let mut pids = cgroup_pids(s);
    if pids.is_empty() {
        pids = processes(s);
    }
    pids.sort_unstable();
    pids.dedup();
    pids
}

/// The processes in the container's cgroup (none when it has none).
fn cgroup_pids(s: &Saved) -> Vec<i32> {
    s.cgroup_paths
        .first()
        .and_then(|d| std::fs::read_to_string(d.join("cgroup.procs")).ok())
        .map(|t| t.lines().filter_map(|l| l.trim().parse().ok()).collect())
        .unwrap_or_default()
}

/// Processes of the container: its init, plus everything in its PID namespace.
fn processes(s: &Saved) -> Vec<i32> {
    let mut pids = vec![s.pid];
    if !s.pid_ns {
        return pids;
    }
    let Ok(ns) = std::fs::read_link(format!("/proc/{}/ns/pid", s.pid)) else {
        return pids;
    };
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if p != s.pid && std::fs::read_link(format!("/proc/{p}/ns/pid")).ok() == Some(ns.clone()) {
            pids.push(p);
        }
    }
    pids
}

fn kill(g: &Global, id: &str, sig: Option<Signal>, all: bool) -> Result<(), OciError> {
    let c = Container::open(&g.root, id, true)?;
    let s = c.load()?;
    let targets = match (c.status(&s), all) {
        (Status::Stopped, false) => {
            return Err(OciError::Refused(format!("container {id} is not running")))
        }
        // As runc: --all on a stopped container is no error. Whatever its
        // cgroup still holds gets the signal; its init's pid, which may be
        // someone else's by now, never does.
        (Status::Stopped, true) => cgroup_pids(&s),
        (_, true) => container_pids(&s),
        (_, false) => vec![s.pid],
    };
    for p in targets {
        nix::sys::signal::kill(Pid::from_raw(p), sig).map_err(|e| {
            let name = sig.map_or("0", |s| s.as_str());
            OciError::Refused(format!("kill {p} with {name}: {e}"))
        })?;
    }
    // A frozen task acts on SIGKILL only once thawed.
    if sig == Some(Signal::SIGKILL) && crate::cgroup::freezer::frozen(&s.cgroup_paths) {
        crate::cgroup::freezer::set_frozen(&s.cgroup_paths, false).map_err(OciError::Refused)?;
    }
    Ok(())
}

/// The runtime-spec `features` document: only what maibox enforces.
fn features() -> serde_json::Value {
    let caps: Vec<String> = caps::all()
        .into_iter()
        .map(|c| c.to_string())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    serde_json::json!({
        "ociVersionMin": "1.0.0",
        "ociVersionMax": "1.2.0",
        "hooks": ["prestart", "createRuntime", "createContainer", "startContainer", "poststart", "poststop"],
        "mountOptions": ["ro", "rw", "nosuid", "suid", "nodev", "dev", "noexec", "exec",
            "relatime", "norelatime", "strictatime", "noatime", "nodiratime", "bind", "rbind",
            "private", "rprivate", "slave", "rslave", "shared", "rshared", "nosymfollow",
            "symfollow", "rro", "rrw", "rnosuid", "rsuid", "rnodev", "rdev", "rnoexec", "rexec",
            "rnoatime", "rrelatime", "rstrictatime", "rnodiratime", "rdiratime",
            "rnosymfollow", "rsymfollow"],
        "linux": {
            "namespaces": ["mount", "pid", "network", "ipc", "uts", "cgroup", "user"],
            "capabilities": caps,
            "cgroup": {"v1": true, "v2": true, "systemd": false, "systemdUser": false},
            "seccomp": {
                "enabled": true,
                "actions": ["SCMP_ACT_ALLOW", "SCMP_ACT_ERRNO", "SCMP_ACT_KILL",
                    "SCMP_ACT_KILL_THREAD", "SCMP_ACT_KILL_PROCESS", "SCMP_ACT_TRAP",
                    "SCMP_ACT_TRACE", "SCMP_ACT_LOG", "SCMP_ACT_NOTIFY"],
                "operators": ["SCMP_CMP_NE", "SCMP_CMP_LT", "SCMP_CMP_LE", "SCMP_CMP_EQ",
                    "SCMP_CMP_GE", "SCMP_CMP_GT", "SCMP_CMP_MASKED_EQ"],
                "archs": [if cfg!(target_arch = "x86_64") { "SCMP_ARCH_X86_64" } else { "SCMP_ARCH_AARCH64" }],
                "knownFlags": ["SECCOMP_FILTER_FLAG_TSYNC", "SECCOMP_FILTER_FLAG_LOG",
                    "SECCOMP_FILTER_FLAG_SPEC_ALLOW"],
                "supportedFlags": ["SECCOMP_FILTER_FLAG_TSYNC", "SECCOMP_FILTER_FLAG_LOG",
                    "SECCOMP_FILTER_FLAG_SPEC_ALLOW"]
            },
            "apparmor": {"enabled": false},
            "selinux": {"enabled": false}
        },
        "annotations": {"io.maibox.version": env!("CARGO_PKG_VERSION")}
    })
}

/// `pause` / `resume`: freeze or thaw every process of the container.
fn pause(g: &Global, id: &str, freeze: bool) -> Result<(), OciError> {
    let c = Container::open(&g.root, id, true)?;
    let s = c.load()?;
    let (from, verb) = if freeze {
        (Status::Running, "pause")
    } else {
        (Status::Paused, "resume")
    };
    let status = c.status(&s);
    if status != from {
        return Err(OciError::Refused(format!(
            "cannot {verb} container {id}: it is {status}, not {from}"
        )));
    }
    crate::cgroup::freezer::set_frozen(&s.cgroup_paths, freeze)
        .map_err(|e| OciError::Refused(format!("{verb} container {id}: {e}")))
}

/// Waits until the init has ended (a zombie counts: its parent reaps it).
fn wait_gone(s: &Saved, limit: Duration) -> bool {
    let until = Instant::now() + limit;
    while state::alive(s.pid, s.start_time) {
        if Instant::now() >= until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    true
}

fn delete(g: &Global, id: &str, force: bool) -> Result<(), OciError> {
    let c = match Container::open(&g.root, id, true) {
        Ok(c) => c,
        Err(StateError::NotFound(_)) if force => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    let s = c.load()?;
    match c.status(&s) {
        status @ (Status::Running | Status::Paused) if !force => {
            return Err(OciError::Refused(format!(
                "cannot delete container {id}: it is {status} (stop it or use --force)"
            )))
        }
        Status::Stopped => {}
        // A created container never ran its process: deleting it is always allowed.
        Status::Created | Status::Running | Status::Paused => {
            for p in container_pids(&s) {
                let _ = nix::sys::signal::kill(Pid::from_raw(p), Signal::SIGKILL);
            }
            if crate::cgroup::freezer::frozen(&s.cgroup_paths) {
                let _ = crate::cgroup::freezer::set_frozen(&s.cgroup_paths, false);
            }
            if !wait_gone(&s, Duration::from_secs(5)) {
                return Err(OciError::Refused(format!(
                    "container {id}: init {} did not die after SIGKILL",
                    s.pid
                )));
            }
        }
    }
    let st = state_json(&s, Status::Stopped);
    if let Err(e) = crate::cgroup::remove_dirs(&s.cgroup_paths) {
        log_error(g, &format!("container {id}: {e}"));
    }
    c.remove()?;
    if let Err(e) = hooks::run(s.hooks.as_ref(), "poststop", &st) {
        log_error(g, &e.to_string());
    }
    Ok(())
}

fn run(g: &Global, a: &CreateArgs, detach: bool, keep: bool) -> Result<i32, OciError> {
    let Created {
        container,
        saved,
        console,
    } = create(g, a, !detach)?;
    drop(container);
    let pid = Pid::from_raw(saved.pid);
    if let Err(e) = start(g, &a.id) {
        let _ = delete(g, &a.id, true);
        return Err(e);
    }
    if detach {
        return Ok(0);
    }
    let relay = match console {
        Some(master) => Some(
            crate::engine::console::relay(master).map_err(io_err("relay the container's pty"))?,
        ),
        None => None,
    };
    let code = loop {
        match nix::sys::wait::waitpid(pid, None) {
            Ok(nix::sys::wait::WaitStatus::Exited(_, c)) => break c,
            Ok(nix::sys::wait::WaitStatus::Signaled(_, s, _)) => break 128 + s as i32,
            Ok(_) | Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(io_err("wait for the container")(e.into())),
        }
    };
    if let Some(r) = relay {
        r.finish();
    }
    log_debug(g, &format!("container {} exited with {code}", a.id));
    if !keep {
        delete(g, &a.id, true)?;
    }
    Ok(code)
}

/// runc's `ps` table: ps(1) with the caller's options (default -ef), its
/// header and the lines of the container's processes.
fn ps_table(pids: &[i32], args: &[String]) -> Result<(), OciError> {
    let args: Vec<&str> = if args.is_empty() {
        vec!["-ef"]
    } else {
        args.iter().map(String::as_str).collect()
    };
    let out = std::process::Command::new("ps")
        .args(&args)
        .output()
        .map_err(io_err("run ps"))?;
    if !out.status.success() {
        return Err(OciError::Refused(format!(
            "ps {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines();
    let header = lines.next().unwrap_or("");
    let col = header
        .split_whitespace()
        .position(|h| h == "PID")
        .ok_or_else(|| OciError::Refused("ps output has no PID column".into()))?;
    println!("{header}");
    for l in lines {
        let pid = l
            .split_whitespace()
            .nth(col)
            .and_then(|p| p.parse::<i32>().ok());
        if pid.is_some_and(|p| pids.contains(&p)) {
            println!("{l}");
        }
    }
    Ok(())
}

fn deny_all_devices() -> oci_spec::runtime::LinuxResources {
    let mut deny = oci_spec::runtime::LinuxDeviceCgroup::default();
    deny.set_allow(false);
    deny.set_access(Some("rwm".into()));
    let mut r = oci_spec::runtime::LinuxResources::default();
    r.set_devices(Some(vec![deny]));
    r
}

fn spec(rootless: bool, dir: Option<&Path>) -> Result<(), OciError> {
    let dir = dir.unwrap_or(Path::new("."));
    let path = dir.join("config.json");
    if path.exists() {
        return Err(OciError::Refused(format!(
            "{} exists; remove it first",
            path.display()
        )));
    }
    let mut s = if rootless {
        oci_spec::runtime::Spec::rootless(
            nix::unistd::geteuid().as_raw(),
            nix::unistd::getegid().as_raw(),
        )
    } else {
        oci_spec::runtime::Spec::default()
    };
    // As runc's template: every device denied but the default ones (which the
    // device rules always allow). A rootless container has no cgroup to
    // enforce that with, so its template asks for no resources at all.
    if let Some(l) = s.linux_mut() {
        l.set_resources(if rootless {
            None
        } else {
            Some(deny_all_devices())
        });
    }
    // As runc's template: an interactive shell on a pty, and no inheritable
    // capabilities (CVE-2022-29162: inheritable capabilities reach programs
    // the container executes with file capabilities).
    s.set_hostname(Some("maibox".into()));
    if let Some(p) = s.process_mut() {
        p.set_terminal(Some(true));
        if let Some(mut c) = p.capabilities().clone() {
            c.set_inheritable(None);
            p.set_capabilities(Some(c));
        }
    }
    let text = serde_json::to_string_pretty(&s)
        .map_err(|e| OciError::Refused(format!("encode the spec: {e}")))?;
    std::fs::write(&path, text + "\n").map_err(io_err(format!("write {}", path.display())))
}
