//! The runc-compatible verbs: `create`, `start`, `state`, `kill`, `delete`, `run`,
//! `list`, `spec`. Errors are written to `--log` (JSON lines with `--log-format
//! json`, as containerd's shim reads them) and to stderr, with a non-zero exit.

use super::bundle::{self, BundleError, Waivable};
use super::hooks::{self, HookError};
use super::state::{self, Container, Saved, StateError, Status};
use crate::policy::View;
use crate::sandbox::{spawn, SetupError};
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
        /// Accepted for compatibility (ps options of runc's table form); ignored.
        #[arg(trailing_var_arg = true, hide = true)]
        ps_args: Vec<String>,
    },
    /// OCI: change a running container's limits (LinuxResources JSON from a file or
    /// `-` for stdin, as `docker update` sends it).
    Update {
        #[arg(long, short = 'r')]
        resources: Option<PathBuf>,
        id: String,
    },
    /// OCI: print what this runtime implements (runtime-spec features.md), as JSON.
    Features,
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
            1
        }
    }
}

fn log_error(g: &Global, msg: &str) {
    eprintln!("maibox: error: {msg}");
    let Some(path) = &g.log else { return };
    let line = match g.log_format {
        LogFormat::Json => serde_json::json!({
            "level": "error",
            "msg": msg,
            "time": state::now_rfc3339(),
        })
        .to_string(),
        LogFormat::Text => format!("time=\"{}\" level=error msg={msg:?}", state::now_rfc3339()),
    };
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = writeln!(f, "{line}");
    }
}

fn dispatch(g: &Global, verb: Verb) -> Result<i32, OciError> {
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
        Verb::Run { create: a, detach } => run(g, &a, detach),
        Verb::List { format, quiet } => {
            list(g, format, quiet);
            Ok(0)
        }
        Verb::Spec { rootless, bundle } => spec(rootless, bundle.as_deref()).map(|_| 0),
        Verb::OciExec(a) => super::exec::exec(g, &a),
        Verb::Update { resources, id } => update(g, &id, resources.as_deref()).map(|_| 0),
        Verb::Features => {
            println!(
                "{}",
                serde_json::to_string_pretty(&features()).unwrap_or_default()
            );
            Ok(0)
        }
        Verb::Pause { id } => pause(g, &id, true).map(|_| 0),
        Verb::Resume { id } => pause(g, &id, false).map(|_| 0),
        Verb::Ps { format, id, .. } => {
            let c = Container::open(&g.root, &id, false)?;
            let s = c.load()?;
            let pids = if c.status(&s) == Status::Stopped {
                Vec::new()
            } else {
                container_pids(&s)
            };
            match format {
                ListFormat::Json => println!("{}", serde_json::json!(pids)),
                ListFormat::Table => {
                    println!("PID");
                    for p in pids {
                        println!("{p}");
                    }
                }
            }
            Ok(0)
        }
    }
}

/// The state as the runtime spec defines it (`ociVersion`, `id`, `status`, `pid`,
/// `bundle`, `annotations`). A stopped container has no pid.
pub fn state_json(s: &Saved, status: Status) -> serde_json::Value {
    let mut v = serde_json::json!({
        "ociVersion": "1.0.2",
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

pub fn parse_signal(s: &str) -> Result<Signal, OciError> {
    let bad = || OciError::Refused(format!("invalid signal {s:?}"));
    if let Ok(n) = s.parse::<i32>() {
        return Signal::try_from(n).map_err(|_| bad());
    }
    let up = s.to_ascii_uppercase();
    let name = if up.starts_with("SIG") {
        up
    } else {
        format!("SIG{up}")
    };
    name.parse::<Signal>().map_err(|_| bad())
}

struct Created {
    container: Container,
    saved: Saved,
}

/// Sets a container up and leaves its init blocked on the start FIFO. With
/// `foreground` (`run`), the container dies with this process.
fn create(g: &Global, a: &CreateArgs, foreground: bool) -> Result<Created, OciError> {
    if a.preserve_fds > 0 {
        return Err(OciError::Refused(
            "--preserve-fds is not supported: only stdio reaches the container".into(),
        ));
    }
    state::check_id(&a.id)?;
    let waived: BTreeSet<Waivable> = g.unenforced.iter().copied().collect();
    // Validate everything before claiming the id: a bad bundle leaves nothing behind.
    let mut loaded = bundle::load(&a.bundle, &waived)?;
    let container = Container::create(&g.root, &a.id)?;
    match create_in(g, a, &container, &mut loaded, foreground) {
        Ok(saved) => Ok(Created { container, saved }),
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
) -> Result<Saved, OciError> {
    let fifo = container.fifo();
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600))
        .map_err(|e| io_err("create the start FIFO")(e.into()))?;
    let View::Oci(view) = &mut loaded.policy.view else {
        return Err(OciError::Refused("internal: not an OCI view".into()));
    };
    view.start_fifo = Some(fifo);
    view.die_with_parent = foreground;
    let console = match (&a.console_socket, view.process.terminal) {
        (Some(p), true) => Some(crate::sandbox::console::connect(p)?),
        (None, false) => None,
        (Some(_), false) => {
            return Err(OciError::Refused(
                "--console-socket given but process.terminal is false".into(),
            ))
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
    for stage in ["createContainer", "startContainer"] {
        if hooks_value
            .as_ref()
            .and_then(|h| h.get(stage))
            .is_some_and(|l| l.as_array().is_some_and(|a| !a.is_empty()))
        {
            return Err(OciError::Refused(format!(
                "hooks.{stage} is not supported yet"
            )));
        }
    }
    let dup = |fd: std::os::fd::BorrowedFd| -> Result<OwnedFd, OciError> {
        fd.try_clone_to_owned().map_err(io_err("duplicate stdio"))
    };
    let stdio = spawn::ChildStdio {
        stdin: dup(std::io::stdin().as_fd())?,
        stdout: dup(std::io::stdout().as_fd())?,
        stderr: dup(std::io::stderr().as_fd())?,
        cgroup_self_attach: Vec::new(),
    };
    // The OCI child finds its program inside the container's root itself (so that a
    // missing one fails `create`); the engine's payload slot carries nothing here.
    let payload = crate::sandbox::init::Payload {
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
                .map_err(|e| SetupError::new(crate::sandbox::Step::Cgroup, e.to_string()))?;
        }
        Ok(())
    };
    let spawned = spawn::spawn(&loaded.policy, &[], payload, stdio, &mut attach)?;
    let pid = spawned.pid;
    let kill_it = |e: OciError| {
        let _ = nix::sys::signal::kill(pid, Signal::SIGKILL);
        let _ = nix::sys::wait::waitpid(pid, None);
        e
    };
    crate::sandbox::wait_ready(&spawned).map_err(|e| kill_it(e.into()))?;
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
    let st = state_json(&saved, Status::Created);
    for stage in ["prestart", "createRuntime"] {
        hooks::run(saved.hooks.as_ref(), stage, &st).map_err(|e| kill_it(e.into()))?;
    }
    if let Some(p) = &a.pid_file {
        write_pid_file(p, pid.as_raw()).map_err(kill_it)?;
    }
    if g.debug {
        eprintln!("maibox: created {} (pid {})", a.id, pid);
    }
    if let Some(g) = group {
        g.persist();
    }
    Ok(saved)
}

/// The container's cgroup: maibox's limits group plus, for device rules, the v1
/// devices group. Removed on drop unless [`ContainerCgroup::persist`]ed.
struct ContainerCgroup {
    limits: Option<crate::cgroup::RunCgroup>,
    /// v1 groups outside maibox's own hierarchies: devices, freezer.
    extra: Vec<PathBuf>,
}

impl ContainerCgroup {
    fn attach(&self, pid: i32) -> Result<(), crate::cgroup::CgroupError> {
        if let Some(l) = &self.limits {
            l.attach(pid)?;
        }
        for d in &self.extra {
            let f = d.join("cgroup.procs");
            std::fs::write(&f, pid.to_string()).map_err(|e| crate::cgroup::CgroupError::Io {
                step: "attach the container to its devices/freezer cgroup",
                path: f,
                source: e,
            })?;
        }
        Ok(())
    }

    fn paths(&self) -> Vec<PathBuf> {
        let mut v = self.limits.as_ref().map(|l| l.paths()).unwrap_or_default();
        v.extend(self.extra.iter().cloned());
        v
    }

    fn persist(mut self) {
        self.extra.clear();
        if let Some(l) = self.limits.take() {
            l.persist();
        }
    }
}

impl Drop for ContainerCgroup {
    fn drop(&mut self) {
        let _ = crate::cgroup::remove_dirs(&std::mem::take(&mut self.extra));
    }
}

fn container_cgroup(
    spec: &oci_spec::runtime::Spec,
    id: &str,
) -> Result<Option<ContainerCgroup>, OciError> {
    let linux = spec.linux().clone().unwrap_or_default();
    let Some(want) = crate::oci::cgroup::from_spec(&linux, id)? else {
        return Ok(None);
    };
    let refuse =
        |e: String| OciError::Refused(format!("container cgroup {}: {e}", want.rel.display()));
    let limits =
        crate::cgroup::RunCgroup::create_at(&crate::cgroup::detect(), &want.rel, want.limits)
            .map_err(|e| refuse(e.to_string()))?;
    let mut group = ContainerCgroup {
        limits: Some(limits),
        extra: Vec::new(),
    };
    group
        .extra
        .extend(crate::oci::cgroup::create_freezer(&want.rel).map_err(refuse)?);
    if !want.devices.is_empty() {
        match crate::oci::cgroup::apply_devices(&want.rel, &want.devices).map_err(refuse)? {
            Some(d) => group.extra.push(d),
            None if can_mknod(spec) => {
                return Err(refuse(
                    "the spec gives device rules but this host has no v1 devices controller to enforce them (cgroup v2 device programs are not supported); drop CAP_MKNOD (e.g. --cap-drop MKNOD) so no device node can be made".into(),
                ))
            }
            // Without CAP_MKNOD no new device node can appear; the nodes maibox
            // creates are the spec's defaults.
            None => {}
        }
    }
    Ok(Some(group))
}

fn can_mknod(spec: &oci_spec::runtime::Spec) -> bool {
    spec.process()
        .as_ref()
        .and_then(|p| p.capabilities().as_ref())
        .and_then(|c| c.bounding().as_ref())
        .is_some_and(|b| b.contains(&oci_spec::runtime::Capability::Mknod))
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
    let mut pids: Vec<i32> = s
        .cgroup_paths
        .first()
        .and_then(|d| std::fs::read_to_string(d.join("cgroup.procs")).ok())
        .map(|t| t.lines().filter_map(|l| l.trim().parse().ok()).collect())
        .unwrap_or_default();
    if pids.is_empty() {
        pids = processes(s);
    }
    pids.sort_unstable();
    pids.dedup();
    pids
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

fn kill(g: &Global, id: &str, sig: Signal, all: bool) -> Result<(), OciError> {
    let c = Container::open(&g.root, id, true)?;
    let s = c.load()?;
    if c.status(&s) == Status::Stopped {
        return Err(OciError::Refused(format!("container {id} is not running")));
    }
    let targets = if all { container_pids(&s) } else { vec![s.pid] };
    for p in targets {
        nix::sys::signal::kill(Pid::from_raw(p), sig)
            .map_err(|e| OciError::Refused(format!("kill {p} with {sig}: {e}")))?;
    }
    // A frozen task acts on SIGKILL only once thawed.
    if sig == Signal::SIGKILL && crate::oci::cgroup::frozen(&s.cgroup_paths) {
        crate::oci::cgroup::set_frozen(&s.cgroup_paths, false).map_err(OciError::Refused)?;
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
        "hooks": ["prestart", "createRuntime", "poststart", "poststop"],
        "mountOptions": ["ro", "rw", "nosuid", "suid", "nodev", "dev", "noexec", "exec",
            "relatime", "norelatime", "strictatime", "noatime", "nodiratime", "bind", "rbind",
            "private", "rprivate", "slave", "rslave", "shared", "rshared"],
        "linux": {
            "namespaces": ["mount", "pid", "network", "ipc", "uts", "cgroup", "user"],
            "capabilities": caps,
            "cgroup": {"v1": true, "v2": true, "systemd": false, "systemdUser": false},
            "seccomp": {
                "enabled": true,
                "actions": ["SCMP_ACT_ALLOW", "SCMP_ACT_ERRNO", "SCMP_ACT_KILL",
                    "SCMP_ACT_KILL_THREAD", "SCMP_ACT_KILL_PROCESS", "SCMP_ACT_TRAP",
                    "SCMP_ACT_TRACE", "SCMP_ACT_LOG"],
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

fn update(g: &Global, id: &str, resources: Option<&Path>) -> Result<(), OciError> {
    let c = Container::open(&g.root, id, true)?;
    let s = c.load()?;
    if c.status(&s) == Status::Stopped {
        return Err(OciError::Refused(format!("container {id} is not running")));
    }
    let text = match resources {
        None => {
            return Err(OciError::Refused(
                "update needs --resources FILE (or - for stdin)".into(),
            ))
        }
        Some(p) if p == Path::new("-") => {
            let mut t = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut t)
                .map_err(io_err("read the resources from stdin"))?;
            t
        }
        Some(p) => std::fs::read_to_string(p).map_err(io_err(format!("read {}", p.display())))?,
    };
    let r: oci_spec::runtime::LinuxResources = serde_json::from_str(&text)
        .map_err(|e| OciError::Refused(format!("--resources: not LinuxResources JSON: {e}")))?;
    if r.devices().as_ref().is_some_and(|d| !d.is_empty()) {
        return Err(OciError::Refused(
            "update of device rules is not supported".into(),
        ));
    }
    let limits = crate::oci::cgroup::limits(&r)?;
    if s.cgroup_paths.is_empty() {
        return Err(OciError::Refused(format!(
            "container {id} has no cgroup to update"
        )));
    }
    crate::oci::cgroup::update(&s.cgroup_paths, &limits)
        .map_err(|e| OciError::Refused(format!("update container {id}: {e}")))
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
    crate::oci::cgroup::set_frozen(&s.cgroup_paths, freeze)
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
            if crate::oci::cgroup::frozen(&s.cgroup_paths) {
                let _ = crate::oci::cgroup::set_frozen(&s.cgroup_paths, false);
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

fn run(g: &Global, a: &CreateArgs, detach: bool) -> Result<i32, OciError> {
    let Created { container, saved } = create(g, a, !detach)?;
    drop(container);
    let pid = Pid::from_raw(saved.pid);
    if let Err(e) = start(g, &a.id) {
        let _ = delete(g, &a.id, true);
        return Err(e);
    }
    if detach {
        return Ok(0);
    }
    let code = loop {
        match nix::sys::wait::waitpid(pid, None) {
            Ok(nix::sys::wait::WaitStatus::Exited(_, c)) => break c,
            Ok(nix::sys::wait::WaitStatus::Signaled(_, s, _)) => break 128 + s as i32,
            Ok(_) | Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(io_err("wait for the container")(e.into())),
        }
    };
    delete(g, &a.id, true)?;
    Ok(code)
}

fn list(g: &Global, format: ListFormat, quiet: bool) {
    let mut rows = Vec::new();
    for id in state::list(&g.root) {
        let Ok(c) = Container::open(&g.root, &id, false) else {
            continue;
        };
        let Ok(s) = c.load() else { continue };
        rows.push((state_json(&s, c.status(&s)), s));
    }
    if quiet {
        for (_, s) in &rows {
            println!("{}", s.id);
        }
        return;
    }
    match format {
        ListFormat::Json => {
            let v: Vec<&serde_json::Value> = rows.iter().map(|(v, _)| v).collect();
            println!("{}", serde_json::to_string(&v).unwrap_or_default());
        }
        ListFormat::Table => {
            println!("ID\tPID\tSTATUS\tBUNDLE\tCREATED\tOWNER");
            for (v, s) in &rows {
                println!(
                    "{}\t{}\t{}\t{}\t{}\t{}",
                    s.id,
                    v["pid"],
                    v["status"].as_str().unwrap_or(""),
                    s.bundle.display(),
                    s.created,
                    s.owner
                );
            }
        }
    }
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
    // Without cgroup support, the template must not ask for limits (runc's template
    // has a device deny-all rule) that create would then refuse as unenforced.
    if let Some(l) = s.linux_mut() {
        l.set_resources(None);
    }
    let text = serde_json::to_string_pretty(&s)
        .map_err(|e| OciError::Refused(format!("encode the spec: {e}")))?;
    std::fs::write(&path, text + "\n").map_err(io_err(format!("write {}", path.display())))
}
