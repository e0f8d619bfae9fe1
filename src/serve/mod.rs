//! `maibox serve`: a long-lived local server that keeps warm, single-use sandboxes per
//! trust level and runs each request in one of them (or cold, when none fits).
//!
//! ```text
//! client ──▶ socket (peer checked) ──▶ conn: request → Sandbox (assessment, gate,
//!            admission (host-aware)         audit, like `maibox exec`) → warm sandbox
//!                                            from its level's pool, or a cold run
//! pool threads: prepare warm sandboxes ahead (src/warm); reaper: destroys used ones
//! ```
//!
//! The main thread only accepts and watches its signals: SIGTERM or SIGINT stop the
//! accepting, let the running requests finish, destroy the pools and remove the socket.
//! A server killed outright leaves nothing that lives on: every sandbox's init dies
//! with the thread that made it (PR_SET_PDEATHSIG), and the next server or run removes
//! the stale cgroups and the socket.

mod admission;
pub mod client;
mod conn;
pub mod pool;
pub mod protocol;

pub use crate::config::ServerConfig;

use crate::config::{Config, TrustLevel};
use crate::session::audit::Caller;
use crate::warm::Remains;
use crate::Sandbox;
use admission::{Admission, Demand};
use nix::sys::signal::{SigSet, SigmaskHow, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use pool::Pool;
use std::os::fd::AsFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("{0}")]
    Socket(String),
    #[error("{0}")]
    Setup(String),
}

/// What the command line may override.
#[derive(Debug, Clone, Default)]
pub struct ServeOptions {
    pub socket: Option<PathBuf>,
}

pub struct Server {
    pub config: Arc<Config>,
    pub cfg: ServerConfig,
    admission: Admission,
    pools: Vec<Arc<Pool>>,
    socket: PathBuf,
    group: Option<nix::unistd::Gid>,
    uid: u32,
    reaper: Mutex<mpsc::Sender<Remains>>,
    /// The audit log, opened once and kept (its writes lock it against other writers).
    audit: Option<Arc<Mutex<crate::audit::AuditLog>>>,
    /// Clones the warm sandboxes (`server.spawner`).
    spawner: Option<Arc<crate::engine::spawner::Spawner>>,
}

/// Serves until SIGTERM or SIGINT. `log` gets one line per event worth a log line.
pub fn serve(
    config: Config,
    opts: ServeOptions,
    log: &(dyn Fn(&str) + Sync),
) -> Result<(), ServeError> {
    // Blocked before any thread exists, so that every thread inherits the mask and
    // only the signalfd below sees them.
    let signals = block_signals()?;
    let cfg = config.server.clone();
    // Forked by this, the main thread, before any other thread exists: sandboxes'
    // inits die with the thread that forked it (engine::spawner).
    let spawner = match cfg.spawner {
        true => Some(Arc::new(crate::engine::spawner::Spawner::start().map_err(
            |e| ServeError::Setup(format!("starting the spawner: {e}")),
        )?)),
        false => None,
    };
    let socket = opts
        .socket
        .clone()
        .map_or_else(|| cfg.socket_path(), Ok)
        .map_err(ServeError::Socket)?;
    let group = cfg.group.as_deref().map(group_id).transpose()?;
    let audit = open_audit(&config, log)?;
    let listener = bind(&socket, group)?;
    let (reap_tx, reap_rx) = mpsc::channel::<Remains>();
    let reaper = std::thread::Builder::new()
        .name("maibox-reaper".into())
        .spawn(move || reap(reap_rx))
        .map_err(|e| ServeError::Setup(format!("start the reaper: {e}")))?;
    let config = Arc::new(config);
    let server = Server {
        admission: admission_for(&cfg),
        pools: Vec::new(),
        config: Arc::clone(&config),
        socket: socket.clone(),
        group,
        uid: nix::unistd::getuid().as_raw(),
        reaper: Mutex::new(reap_tx),
        audit,
        cfg,
        spawner,
    };
    let server = server.with_pools(log);
    announce(&server, log);
    let result = std::thread::scope(|scope| accept_loop(&server, &listener, &signals, scope, log));
    // Every connection thread has ended (the scope joined them): nothing uses the pools.
    let _ = std::fs::remove_file(&socket);
    for p in &server.pools {
        p.stop();
    }
    drop(server);
    let _ = reaper.join();
    log("stopped");
    result
}

/// The audit log the server writes every run to; `None` when it cannot be
/// opened and the configuration allows running without it (said in the log).
fn open_audit(
    config: &Config,
    log: &(dyn Fn(&str) + Sync),
) -> Result<Option<Arc<Mutex<crate::audit::AuditLog>>>, ServeError> {
    match crate::session::audit::open(&config.audit) {
        Ok(Ok(audit)) => Ok(Some(Arc::new(Mutex::new(audit)))),
        Ok(Err(why)) => {
            log(&format!(
                "audit log disabled (audit.required is false): {why}"
            ));
            Ok(None)
        }
        Err(e) => Err(ServeError::Setup(format!("opening the audit log: {e}"))),
    }
}

/// The line that says the server is up: where, which levels are warm, how.
fn announce(server: &Server, log: &(dyn Fn(&str) + Sync)) {
    let levels: Vec<String> = server.pools.iter().map(|p| p.level.to_string()).collect();
    log(&format!(
        "serving on {} (pid {}; warm levels: {}; warm mode: {}; spawner: {})",
        server.socket.display(),
        std::process::id(),
        levels.join(", "),
        server.cfg.warm_mode,
        server
            .spawner
            .as_ref()
            .map_or("none".to_string(), |s| format!("pid {}", s.pid()))
    ));
}

/// The reaper: destroys remains as they come, and keeps the namespaces of the last
/// used sandbox open until the next one's remains arrive (see
/// [`Remains::take_namespaces`]).
fn reap(remains: mpsc::Receiver<Remains>) {
    let mut held = Vec::new();
    for mut r in remains {
        let ns = r.take_namespaces();
        drop(r);
        if !ns.is_empty() {
            held = ns;
        }
    }
    drop(held);
}

fn accept_loop<'s>(
    server: &'s Server,
    listener: &UnixListener,
    signals: &SignalFd,
    scope: &'s std::thread::Scope<'s, '_>,
    log: &(dyn Fn(&str) + Sync),
) -> Result<(), ServeError> {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    let mut spawner_gone = false;
    loop {
        let mut fds = [
            PollFd::new(listener.as_fd(), PollFlags::POLLIN),
            PollFd::new(signals.as_fd(), PollFlags::POLLIN),
        ];
        match poll(&mut fds, PollTimeout::from(1000u16)) {
            Ok(_) | Err(nix::errno::Errno::EINTR) => {}
            Err(e) => return Err(ServeError::Socket(format!("poll: {e}"))),
        }
        if fds[1].revents().is_some_and(|r| !r.is_empty()) {
            if let Ok(Some(s)) = signals.read_signal() {
                log(&format!(
                    "signal {}: draining the running requests",
                    crate::outcome::signal_name(s.ssi_signo as i32)
                ));
            }
            return Ok(());
        }
        log_troubles(server, &mut spawner_gone, log);
        if fds[0].revents().is_some_and(|r| !r.is_empty()) {
            match listener.accept() {
                Ok((stream, _)) => {
                    let spawned = std::thread::Builder::new()
                        .name("maibox-conn".into())
                        .spawn_scoped(scope, move || conn::handle(server, stream));
                    if let Err(e) = spawned {
                        log(&format!("cannot start a connection thread: {e}"));
                    }
                }
                Err(e) => log(&format!("accept: {e}")),
            }
        }
    }
}

/// What went wrong since the last round: warm sandboxes that could not be prepared,
/// and a spawner that ended, which is replaced here, within a second (until then its
/// requests are cloned by their own threads: engine::spawner).
fn log_troubles(server: &Server, spawner_gone: &mut bool, log: &(dyn Fn(&str) + Sync)) {
    for p in &server.pools {
        if let Some(why) = p.take_failure() {
            log(&format!("cannot prepare a warm {} sandbox: {why}", p.level));
        }
    }
    let Some(s) = server.spawner.as_ref() else {
        return;
    };
    match s.respawn_if_ended() {
        Ok(None) => {}
        Ok(Some((old, new))) => {
            *spawner_gone = false;
            log(&format!(
                "the spawner (pid {old}) ended; a new one (pid {new}) clones the sandboxes"
            ));
        }
        // Logged once until a later round starts one again.
        Err(e) if !std::mem::replace(spawner_gone, true) => log(&format!(
            "the spawner (pid {}) ended and a new one could not be started ({e}): \
             sandboxes are cloned by the server's own threads until one is (more CPU per run)",
            s.pid()
        )),
        Err(_) => {}
    }
}

fn block_signals() -> Result<SignalFd, ServeError> {
    let mut set = SigSet::empty();
    for s in [Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP] {
        set.add(s);
    }
    nix::sys::signal::pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&set), None)
        .map_err(|e| ServeError::Setup(format!("block signals: {e}")))?;
    SignalFd::with_flags(&set, SfdFlags::SFD_CLOEXEC | SfdFlags::SFD_NONBLOCK)
        .map_err(|e| ServeError::Setup(format!("signalfd: {e}")))
}

/// Binds the socket, mode 0600 (0660 and owned by `group` when one may submit). A
/// socket left by a server that died is removed; one another server listens on is not.
fn bind(path: &Path, group: Option<nix::unistd::Gid>) -> Result<UnixListener, ServeError> {
    use std::os::unix::fs::PermissionsExt;
    let err = |what: &str, e: std::io::Error| {
        ServeError::Socket(format!("{what} {}: {e}", path.display()))
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| err("create the directory of", e))?;
    }
    if path.exists() {
        if UnixStream::connect(path).is_ok() {
            return Err(ServeError::Socket(format!(
                "another server listens on {}: stop it, or give --socket PATH",
                path.display()
            )));
        }
        std::fs::remove_file(path).map_err(|e| err("remove the stale socket", e))?;
    }
    // Made unreachable first, then opened up to exactly what is allowed.
    let old = nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o177));
    let listener = UnixListener::bind(path);
    nix::sys::stat::umask(old);
    let listener = listener.map_err(|e| err("bind", e))?;
    if let Some(g) = group {
        nix::unistd::chown(path, None, Some(g)).map_err(|e| err("give the group", e.into()))?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o660))
            .map_err(|e| err("chmod", e))?;
    }
    Ok(listener)
}

fn group_id(name: &str) -> Result<nix::unistd::Gid, ServeError> {
    match nix::unistd::Group::from_name(name) {
        Ok(Some(g)) => Ok(g.gid),
        _ => Err(ServeError::Setup(format!(
            "server.group {name:?} is not a group on this host"
        ))),
    }
}

/// Room for the host's CPUs and available memory, times the overcommit factor.
fn admission_for(cfg: &ServerConfig) -> Admission {
    let cpus = crate::policy::host_cpus() * cfg.overcommit;
    let memory = crate::policy::host_memory_available().unwrap_or(u64::MAX / 4) as f64;
    Admission::new(cpus, (memory * cfg.overcommit) as u64, cfg.queue)
}

/// What a request will take of the host, from its level and its own limits.
fn demand(s: &Sandbox, req: &protocol::Request) -> Demand {
    let level = s.config().level(s.level());
    Demand {
        cpus: req
            .cpus
            .unwrap_or(level.cpus)
            .min(crate::policy::host_cpus()),
        memory_bytes: req
            .memory
            .as_ref()
            .and_then(|m| m.bytes().ok())
            .unwrap_or(level.memory.0),
    }
}

impl Server {
    fn with_pools(mut self, log: &(dyn Fn(&str) + Sync)) -> Server {
        let threads = self
            .cfg
            .refill_threads
            .unwrap_or_else(|| crate::policy::host_cpus().ceil().max(1.0) as usize);
        for level in self.cfg.warm_levels.clone() {
            let mut sandbox = Sandbox::new(Arc::clone(&self.config)).trust(level);
            if let Some(s) = &self.spawner {
                sandbox = sandbox.spawner(Arc::clone(s));
            }
            if let Err(e) = self.try_warm(&sandbox, level) {
                log(&format!(
                    "no warm sandboxes at level {level}: {e}; its requests run cold"
                ));
                continue;
            }
            let pool = Pool::new(level, sandbox, &self.cfg);
            pool.start(threads);
            self.pools.push(pool);
        }
        self
    }

    /// Prepares one warm sandbox of the level as its pool will, to find out at the
    /// start whether it can.
    fn try_warm(&self, sandbox: &Sandbox, level: TrustLevel) -> Result<(), crate::Error> {
        let preload = &self.config.level(level).preload;
        match self.cfg.warm_mode {
            crate::config::WarmMode::Strict => sandbox.prepare_warm(preload).map(drop),
            crate::config::WarmMode::Fork => {
                let mut z = sandbox.zygote(preload, self.cfg.zygote_forks)?;
                sandbox.prepare_warm_forked(&mut z).map(drop)
            }
        }
    }

    fn pool(&self, level: TrustLevel) -> Option<&Arc<Pool>> {
        self.pools.iter().find(|p| p.level == level)
    }

    /// Destroys a sandbox's remains off the request's path.
    fn reap(&self, r: Remains) {
        if let Ok(tx) = self.reaper.lock() {
            let _ = tx.send(r);
        }
    }

    /// Who is on the other end, if they may submit: this server's user, root, or a
    /// member of the configured group.
    fn peer(&self, stream: &UnixStream) -> Result<Caller, protocol::Failure> {
        use nix::sys::socket::{getsockopt, sockopt::PeerCredentials};
        let cred = getsockopt(stream, PeerCredentials)
            .map_err(|e| protocol::Failure::new("forbidden", format!("peer credentials: {e}")))?;
        let (uid, gid, pid) = (cred.uid(), cred.gid(), cred.pid());
        let in_group = self
            .group
            .is_some_and(|g| g.as_raw() == gid || supplementary_groups(pid).contains(&g.as_raw()));
        if uid != self.uid && uid != 0 && !in_group {
            return Err(protocol::Failure::new(
                "forbidden",
                format!(
                    "uid {uid} may not submit to this server (its user, root{})",
                    if self.group.is_some() {
                        " and server.group's members"
                    } else {
                        ""
                    }
                ),
            ));
        }
        let name = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid))
            .ok()
            .flatten()
            .map(|u| u.name);
        Ok(Caller {
            uid,
            name,
            via: Some(format!(
                "maibox serve pid {} socket {} client pid {pid}",
                std::process::id(),
                self.socket.display()
            )),
        })
    }

    /// The request as a [`Sandbox`], with its limits checked the way the command
    /// line checks its flags.
    fn sandbox_for(
        &self,
        req: &protocol::Request,
        caller: Caller,
    ) -> Result<Sandbox, protocol::Failure> {
        let bad = |m: String| protocol::Failure::new("invalid", m);
        let mut s = Sandbox::new(Arc::clone(&self.config))
            .trust(req.trust.unwrap_or(self.config.default_trust))
            .caller(caller)
            .allow_raise(req.allow_raise);
        if let Some(log) = &self.audit {
            s = s.audit_log(Arc::clone(log));
        }
        // A cold run (no warm sandbox fits) is cloned by the spawner too.
        if let Some(sp) = &self.spawner {
            s = s.spawner(Arc::clone(sp));
        }
        if let Some(t) = req.timeout_s {
            if !(t.is_finite() && t > 0.0 && t < 1e9) {
                return Err(bad(format!(
                    "timeout_s {t} must be a positive number of seconds"
                )));
            }
            s = s.timeout(Duration::from_secs_f64(t));
        }
        if let Some(c) = req.cpus {
            if !(c.is_finite() && c > 0.0) {
                return Err(bad(format!("cpus {c} must be a positive number")));
            }
            s = s.cpus(c);
        }
        if let Some(p) = req.pids {
            if p == 0 {
                return Err(bad("pids must be at least 1".into()));
            }
            s = s.pids(p);
        }
        for (what, v) in [("memory", &req.memory), ("output_limit", &req.output_limit)] {
            let Some(v) = v else { continue };
            let b = v.bytes().map_err(|e| bad(format!("{what}: {e}")))?;
            if b == 0 {
                return Err(bad(format!("{what} must be greater than 0")));
            }
            s = if what == "memory" {
                s.memory(b)
            } else {
                s.output_limit(b)
            };
        }
        if let Some(n) = req.network {
            s = s.network(n);
        }
        if let Some(r) = &req.override_reason {
            if r.trim().len() < 3 {
                return Err(bad("override_reason: give a reason of a few words".into()));
            }
            s = s.override_reason(r.trim());
        }
        Ok(s)
    }
}

/// The supplementary groups of process `pid`.
fn supplementary_groups(pid: i32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("Groups:"))
        .map(|g| {
            g.split_whitespace()
                .filter_map(|n| n.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}
