//! `create`: sets a container up from its bundle and leaves its init blocked
//! on the start FIFO until `start`.

use std::collections::{BTreeMap, BTreeSet};
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use clap::Args;
use nix::sys::signal::Signal;
use nix::unistd::Pid;

use crate::cgroup::oci::ContainerCgroup;
use crate::cgroup::resources::Swap;
use crate::engine::oci::hooks;
use crate::engine::{spawn, SetupError};
use crate::oci::bundle::{self, BundleError, Waivable};
use crate::oci::cli::{log_debug, Global};
use crate::oci::error::{io_err, OciError};
use crate::oci::state::{self, Container, Saved, OCI_VERSION};
use crate::policy::View;

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

pub struct Created {
    pub container: Container,
    pub saved: Saved,
    /// The pty master of a foreground `run` with `terminal: true`.
    pub console: Option<OwnedFd>,
}

/// Sets a container up and leaves its init blocked on the start FIFO. With
/// `foreground` (`run`), the container dies with this process.
pub fn create(g: &Global, a: &CreateArgs, foreground: bool) -> Result<Created, OciError> {
    // Before this command opens anything of its own.
    let preserved = crate::oci::fds::inherited(a.preserve_fds);
    state::check_id(&a.id)?;
    let waived: BTreeSet<Waivable> = g.unenforced.iter().copied().collect();
    // Validate everything before claiming the id: a bad bundle leaves nothing behind.
    let mut loaded = bundle::load(&a.bundle, &waived)?;
    let level = g
        .hardened
        .then(crate::oci::harden::Level::load)
        .transpose()?;
    if let View::Oci(view) = &mut loaded.policy.view {
        view.preserve_fds = preserved;
        if let Some(level) = &level {
            crate::oci::harden::apply(view, &loaded.spec, level);
        }
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

/// What the OCI view asks of `create` once the runtime's descriptors are in
/// it, read before the view is handed to the engine.
struct Plan {
    pid_ns: bool,
    /// The spec's hooks, as the state and the init read them.
    hooks: Option<serde_json::Value>,
    /// The init waits for the runtime's hooks before pivot_root.
    hooks_sync: bool,
    /// Bind sources the runtime opens for the init (see [`crate::oci::bindsrc`]).
    bind_sources: Option<Vec<crate::policy::oci::OciMount>>,
    notify: Option<crate::confine::seccomp::oci::Notify>,
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
    let gate = open_start_gate(&fifo, view)?;
    view.die_with_parent = foreground;
    let ns_files = open_joined_namespaces(view)?;
    // Our end of the console socket of a foreground `run`, which relays the pty itself.
    let (console, own_console) = console_for(a, view.process.terminal, foreground)?;
    view.console = console.as_ref().map(std::os::fd::AsRawFd::as_raw_fd);
    let plan = plan(view, &loaded.spec);
    let stdio = dup_stdio()?;
    let group = container_cgroup(g, &loaded.spec, &a.id)?;
    let spawned = spawn_init(&loaded.policy, stdio, group.as_ref())?;
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
    set_up(&spawned, a, loaded, &plan, group.as_ref()).map_err(kill_it)?;
    drop(console);
    let master = match &own_console {
        Some(sock) => Some(
            crate::engine::console::receive_master(sock.as_fd()).map_err(|e| kill_it(e.into()))?,
        ),
        None => None,
    };
    let saved = saved_state(a, loaded, pid, plan, group.as_ref()).map_err(kill_it)?;
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

/// Opens the start FIFO for the init to wait on. O_RDWR never blocks on a
/// FIFO, and keeps it open for `start`'s non-blocking open. The init inherits
/// it (see OciView::start_fifo).
fn open_start_gate(
    fifo: &Path,
    view: &mut crate::policy::oci::OciView,
) -> Result<OwnedFd, OciError> {
    let gate = nix::fcntl::open(
        fifo,
        nix::fcntl::OFlag::O_RDWR | nix::fcntl::OFlag::O_CLOEXEC,
        nix::sys::stat::Mode::empty(),
    )
    .map_err(|e| io_err("open the start FIFO")(e.into()))?;
    // SAFETY: a fresh descriptor owned by nothing else.
    let gate = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(gate) };
    view.start_fifo = Some(std::os::fd::AsRawFd::as_raw_fd(&gate));
    Ok(gate)
}

/// Namespaces to join, opened here so that a bad path fails before the clone;
/// the init inherits them.
fn open_joined_namespaces(
    view: &mut crate::policy::oci::OciView,
) -> Result<Vec<std::fs::File>, OciError> {
    let mut ns_files = Vec::new();
    for j in &mut view.namespaces.join {
        let f = std::fs::File::open(&j.path).map_err(|e| {
            OciError::Refused(format!(
                "linux.namespaces: cannot open the {} namespace {}: {e}",
                j.kind,
                j.path.display()
            ))
        })?;
        check_ns_type(&f, j)?;
        j.fd = Some(std::os::fd::AsRawFd::as_raw_fd(&f));
        ns_files.push(f);
    }
    Ok(ns_files)
}

/// The file is a namespace of the kind the spec names (NS_GET_NSTYPE): a pid
/// namespace is entered by the clone, where a wrong one would fail as an
/// opaque clone error.
fn check_ns_type(f: &std::fs::File, j: &crate::policy::oci::NsJoin) -> Result<(), OciError> {
    // _IO(0xb7, 0x3), <linux/nsfs.h>.
    const NS_GET_NSTYPE: u32 = 0xb703;
    // SAFETY: an ioctl without an argument on a descriptor we own.
    let t = unsafe { libc::ioctl(std::os::fd::AsRawFd::as_raw_fd(f), NS_GET_NSTYPE as _) };
    if t == j.flag {
        return Ok(());
    }
    let what = if t < 0 {
        format!("not a namespace file ({})", std::io::Error::last_os_error())
    } else {
        format!("a namespace of another type (clone flag {t:#x})")
    };
    Err(OciError::Refused(format!(
        "linux.namespaces: cannot join the {} namespace {}: it is {what}",
        j.kind,
        j.path.display()
    )))
}

/// The console socket end the init sends its pty master to, and, for a
/// foreground `run` without `--console-socket`, our end of a fresh pair.
fn console_for(
    a: &CreateArgs,
    terminal: bool,
    foreground: bool,
) -> Result<(Option<OwnedFd>, Option<OwnedFd>), OciError> {
    match (&a.console_socket, terminal) {
        (Some(p), true) => Ok((Some(crate::engine::console::connect(p)?), None)),
        (None, false) => Ok((None, None)),
        (Some(_), false) => Err(OciError::Refused(
            "--console-socket given but process.terminal is false: there is no pty to \
             send (set process.terminal to true or drop --console-socket)"
                .into(),
        )),
        (None, true) if foreground => {
            let (ours, theirs) = std::os::unix::net::UnixStream::pair()
                .map_err(io_err("create the console socket pair"))?;
            Ok((Some(OwnedFd::from(theirs)), Some(ours.into())))
        }
        (None, true) => Err(OciError::Refused(
            "process.terminal is true: give --console-socket to receive the pty".into(),
        )),
    }
}

/// Puts the spec's hooks in the view and reads what the rest of `create`
/// needs from it.
fn plan(view: &mut crate::policy::oci::OciView, spec: &oci_spec::runtime::Spec) -> Plan {
    let hooks = spec
        .hooks()
        .as_ref()
        .and_then(|h| serde_json::to_value(h).ok());
    view.hooks = hooks.clone();
    view.hooks_sync = [
        "prestart",
        "createRuntime",
        "createContainer",
        "startContainer",
    ]
    .iter()
    .any(|stage| {
        hooks
            .as_ref()
            .and_then(|h| h.get(*stage))
            .is_some_and(|l| l.as_array().is_some_and(|a| !a.is_empty()))
    });
    Plan {
        pid_ns: view.namespaces.pid,
        hooks,
        hooks_sync: view.hooks_sync,
        bind_sources: view
            .bind_sources_from_runtime()
            .then(|| view.mounts.clone()),
        notify: view.seccomp.as_ref().and_then(|c| c.notify.clone()),
    }
}

/// This process's stdio, for the init.
fn dup_stdio() -> Result<spawn::ChildStdio, OciError> {
    let dup = |fd: std::os::fd::BorrowedFd| -> Result<OwnedFd, OciError> {
        fd.try_clone_to_owned().map_err(io_err("duplicate stdio"))
    };
    Ok(spawn::ChildStdio {
        stdin: dup(std::io::stdin().as_fd())?,
        stdout: dup(std::io::stdout().as_fd())?,
        stderr: dup(std::io::stderr().as_fd())?,
        extra: Vec::new(),
    })
}

/// Clones the container's init, in the container's cgroup from its first
/// instruction.
fn spawn_init(
    policy: &crate::policy::Policy,
    stdio: spawn::ChildStdio,
    group: Option<&ContainerCgroup>,
) -> Result<spawn::Spawned, OciError> {
    // The OCI child finds its program inside the container's root itself (so that a
    // missing one fails `create`); the engine's payload slot carries nothing here.
    let payload = crate::engine::init::Payload {
        program: c"/".into(),
        argv: Vec::new(),
        envp: Vec::new(),
        confine: Box::new(|| Ok(Default::default())),
        bridge: None,
        extra_fds: 0,
        adopt: None,
    };
    let mut attach = |pid: Pid| -> Result<(), SetupError> {
        if let Some(g) = group {
            g.attach(pid.as_raw())
                .map_err(|e| SetupError::new(crate::error::Step::Cgroup, e.to_string()))?;
        }
        Ok(())
    };
    Ok(spawn::spawn(policy, &[], payload, stdio, &mut attach)?)
}

/// The runtime's part while the init sets up: bind sources, hooks, the
/// seccomp listener, then (once it is ready) the device rules.
fn set_up(
    spawned: &spawn::Spawned,
    a: &CreateArgs,
    loaded: &bundle::Loaded,
    plan: &Plan,
    group: Option<&ContainerCgroup>,
) -> Result<(), OciError> {
    // Before anything else: the init waits for them to build the root.
    if let Some(mounts) = &plan.bind_sources {
        crate::oci::bindsrc::send(spawned, mounts)?;
    }
    if plan.hooks_sync {
        runtime_hooks(spawned, &a.id, loaded, plan.hooks.as_ref())?;
    }
    if let Some(n) = plan.notify.as_ref() {
        forward_listener(spawned, &a.id, loaded, n)?;
    }
    crate::engine::wait_ready(spawned)?;
    if let Some(g) = group {
        g.apply_devices()
            .map_err(|e| OciError::Refused(format!("container device rules: {e}")))?;
    }
    Ok(())
}

/// The container's state as `state.json` keeps it.
fn saved_state(
    a: &CreateArgs,
    loaded: &bundle::Loaded,
    pid: Pid,
    plan: Plan,
    group: Option<&ContainerCgroup>,
) -> Result<Saved, OciError> {
    let start_time = state::proc_stat(pid.as_raw())
        .map(|(_, t)| t)
        .ok_or_else(|| OciError::Refused("the container init vanished".into()))?;
    Ok(Saved {
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
        pid_ns: plan.pid_ns,
        pid_ns_id: plan
            .pid_ns
            .then(|| std::fs::read_link(format!("/proc/{}/ns/pid", pid.as_raw())).ok())
            .flatten()
            .map(|l| l.display().to_string()),
        hooks: plan.hooks,
        owner: nix::unistd::geteuid().as_raw(),
        cgroup_paths: group.map(ContainerCgroup::paths).unwrap_or_default(),
        hardened: matches!(&loaded.policy.view, View::Oci(v) if v.hardening.is_some()),
    })
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
/// spec's `listenerPath` (see [`crate::oci::agent`]).
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
    let owner = crate::oci::agent::Owner {
        id,
        pid: spawned.pid.as_raw(),
        status: "creating",
        bundle: &loaded.bundle,
        annotations: serde_json::json!(loaded.spec.annotations().clone().unwrap_or_default()),
    };
    crate::oci::agent::hand_over(n, &owner, &fd)
}

/// The container's cgroup as its spec asks (none when it asks for none). A
/// group that already holds processes is joined with runc 1.1's warning
/// (Kubernetes-era tools and runc's tests expect the container to start);
/// `delete` then leaves the group to whoever else is in it.
fn container_cgroup(
    g: &Global,
    spec: &oci_spec::runtime::Spec,
    id: &str,
) -> Result<Option<ContainerCgroup>, OciError> {
    let linux = spec.linux().clone().unwrap_or_default();
    let Some(want) = crate::cgroup::oci::from_spec(&linux, id).map_err(BundleError::from)? else {
        return Ok(None);
    };
    let swap = swap_rule(g, linux.resources().as_ref());
    let group = ContainerCgroup::create(&want, linux.resources().as_ref(), swap)
        .map_err(OciError::Refused)?;
    if group.found_processes > 0 {
        crate::oci::cli::log_warning(
            g,
            &format!(
                "container's cgroup is not empty: {} process(es) found in {}; container {id} \
                 shares it (its limits, `kill --all`, `ps` and `pause` too); give each \
                 container a cgroupsPath of its own",
                group.found_processes,
                want.rel.display()
            ),
        );
    }
    Ok(Some(group))
}

/// The plain runtime writes the spec's swap as runc 1.1 does; a strict one
/// (`--hardened`) gives no swap, and says so when the spec asks for some.
fn swap_rule(g: &Global, r: Option<&oci_spec::runtime::LinuxResources>) -> Swap {
    let rule = Swap::of(g.hardened);
    let memory = r.and_then(|r| *r.memory()).unwrap_or_default();
    let what = "linux.resources.memory.swap";
    if let Some(w) = rule.not_applied(what, memory.limit(), memory.swap()) {
        crate::oci::cli::log_warning(g, &w);
    }
    rule
}

/// Written to a temporary name and renamed: a reader never sees a partial pid.
fn write_pid_file(p: &Path, pid: i32) -> Result<(), OciError> {
    let tmp = p.with_extension("maibox-tmp");
    std::fs::write(&tmp, pid.to_string()).map_err(io_err(format!("write {}", tmp.display())))?;
    std::fs::rename(&tmp, p).map_err(io_err(format!("write {}", p.display())))
}
