//! Warm, single-use sandboxes: everything of a run that does not depend on its code,
//! made ahead of it.
//!
//! [`Sandbox::prepare_warm`] builds a sandbox as a cold run does (namespaces, root,
//! cgroup with the level's limits, init) and starts its payload at once: Python, under
//! Landlock and seccomp, runs the warm runner (`runner.py`, installed as the sandbox's
//! `/sandbox/main.py`), which imports the level's preloaded modules, says it is ready
//! on one pipe and waits for its script on another. [`Warm::run`] then takes one
//! request through the same assessment, gate and audit as [`Sandbox::run`], lowers the
//! cgroup's limits to the request's, hands the script over and supervises it like any
//! run. A warm sandbox runs exactly one script; its remains ([`Remains`]) are destroyed
//! after, whole. Every warm sandbox is a fresh process tree with fresh namespaces and a
//! freshly started interpreter: no state, seed or hash secret is shared with another.

use crate::backend::native::{self, Group};
use crate::backend::{BeforeCode, Job};
use crate::config::{Backend, NetworkMode};
use crate::engine::sync::Msg;
use crate::engine::{self, Prepared, StdinMode};
use crate::error::{SetupError, Step, StepContext};
use crate::io::{Io, Notices};
use crate::outcome::{Confined, Outcome};
use crate::policy::{Limits, Policy};
use crate::report::Facts;
use crate::session::{new_run_id, Code, Decided, Error, Execution, Run, Sandbox};
use crate::supervise::Started;
use crate::timeline::Timeline;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::time::{Duration, Instant};

/// The runner, as the warm sandbox's script.
const RUNNER: &str = include_str!("runner.py");
/// How long the runner may take to import its preloads and say it is ready.
const READY_TIMEOUT: Duration = Duration::from_secs(30);

pub mod zygote;
pub use crate::engine::spawner::Spawner;
pub use zygote::Zygote;

/// A prepared sandbox whose interpreter waits for its one script.
pub struct Warm {
    policy: Policy,
    run_id: String,
    prepared: Option<Prepared>,
    started: Option<Started>,
    /// The runner's script pipe (written once, then closed) and its ready pipe (which
    /// hangs up when the runner is gone).
    code: Option<OwnedFd>,
    ready: OwnedFd,
    /// The runner's status pipe: one byte when the code has ended (see
    /// `supervise::done`).
    done: Option<OwnedFd>,
    group: Group,
    made_at: Instant,
    setup: (f64, Vec<(String, u64)>),
    /// The init of a sandbox whose run ended before init was reaped.
    pending_init: Option<nix::unistd::Pid>,
    /// Its namespaces, held open from when it is ready until its remains are
    /// released (see [`Remains::take_namespaces`]).
    namespaces: Vec<OwnedFd>,
    /// What maibox noted while preparing it (a degraded cgroup, adjustments).
    pub notices: Vec<crate::io::Notice>,
}

/// Why a request cannot go to a given warm sandbox: it needs another one, or a cold
/// run (the sandbox is handed back unused).
#[derive(Debug)]
pub enum NotServable {
    /// The gate decided another level than the sandbox's.
    Level(crate::config::TrustLevel),
    /// The request asks for something a prepared sandbox cannot change.
    Differs(String),
}

impl Sandbox {
    /// A warm sandbox at this sandbox's level and settings, with `preload` imported
    /// by an interpreter started in it (`warm_mode: strict`).
    pub fn prepare_warm(&self, preload: &[String]) -> Result<Warm, Error> {
        self.prepare_warm_with(preload, None)
    }

    /// A warm sandbox at this sandbox's level and settings whose interpreter is a
    /// fork of `zygote`, which imported the level's preloads (`warm_mode: fork`).
    pub fn prepare_warm_forked(&self, zygote: &mut Zygote) -> Result<Warm, Error> {
        self.prepare_warm_with(&[], Some(zygote))
    }

    /// A zygote for this sandbox's level, which imports `preload` and forks at most
    /// `forks` interpreters (see [`Sandbox::prepare_warm_forked`]).
    pub fn zygote(&self, preload: &[String], forks: usize) -> Result<Zygote, Error> {
        let mut notices = Notices::new(None);
        let policy = self.policy_for(self.level(), &mut notices)?;
        Zygote::spawn(&policy, preload, forks)
            .map_err(|e| Error::Invalid(format!("starting a zygote: {e}")))
    }

    /// As [`Sandbox::zygote`], but returns while the zygote imports `preload`: its
    /// first fork waits for that, and fails with the import's error.
    pub fn start_zygote(&self, preload: &[String], forks: usize) -> Result<Zygote, Error> {
        let mut notices = Notices::new(None);
        let policy = self.policy_for(self.level(), &mut notices)?;
        Zygote::start(&policy, preload, forks)
            .map_err(|e| Error::Invalid(format!("starting a zygote: {e}")))
    }

    /// The level's policy, which a warm sandbox can serve only with the native
    /// backend and no network.
    fn warm_policy(&self, notices: &mut Notices) -> Result<Policy, Error> {
        let policy = self.policy_for(self.level(), notices)?;
        if policy.backend != Backend::Native || policy.network != NetworkMode::None {
            return Err(Error::Invalid(
                "warm sandboxes need the native backend and network none".into(),
            ));
        }
        Ok(policy)
    }

    fn prepare_warm_with(
        &self,
        preload: &[String],
        zygote: Option<&mut Zygote>,
    ) -> Result<Warm, Error> {
        let mut notices = Notices::new(None);
        let policy = self.warm_policy(&mut notices)?;
        let setup = |e: SetupError| Error::Invalid(format!("preparing a warm sandbox: {e}"));
        let Channels {
            code: (code_r, code_w),
            done: (done_r, done_w),
            ready: (ready_r, ready_w),
        } = channels(zygote.is_some()).map_err(setup)?;
        let run_id = new_run_id();
        let ejob = engine::Job {
            policy: &policy,
            script: RUNNER.as_bytes(),
            args: preload,
            stdin: StdinMode::Pump,
            extra_fds: vec![code_r.as_fd(), ready_w.as_fd(), done_w.as_fd()],
            adopt: zygote.is_some(),
            spawner: self.spawner_ref(),
        };
        let timeline = Timeline::new();
        let (group, prepared) = self
            .prepare_fresh(&policy, &ejob, &run_id, &timeline, &mut notices)
            .map_err(setup)?;
        drop((code_r, ready_w, done_w));
        // Preparing yields the CPU to runs in progress (given back in `lower`).
        if let Some(Some(g)) = group.made.get() {
            g.cpu_share(true);
        }
        let made_at = Instant::now();
        let (started, namespaces) =
            start_runner(&prepared, &policy, &group, zygote, &ready_r).map_err(setup)?;
        Ok(Warm {
            setup: (
                prepared.setup_time.as_secs_f64() * 1000.0,
                prepared.timings_us.clone(),
            ),
            policy,
            run_id,
            prepared: Some(prepared),
            started: Some(started),
            code: Some(code_w),
            ready: ready_r,
            // Without a cgroup there is no usage to read at the runner's word: the
            // pipe is closed, the runner's write fails, and the run ends with init's.
            done: group
                .made
                .get()
                .is_some_and(Option::is_some)
                .then_some(done_r),
            group,
            made_at,
            pending_init: None,
            namespaces,
            notices: notices.all,
        })
    }
}

/// The pipes a warm sandbox is driven through, each as (read end, write end): the
/// code in, the runner's readiness out, and its word that the code has ended.
struct Channels {
    code: (OwnedFd, OwnedFd),
    done: (OwnedFd, OwnedFd),
    ready: (OwnedFd, OwnedFd),
}

fn channels(forked: bool) -> Result<Channels, SetupError> {
    Ok(Channels {
        code: pipe()?,
        done: pipe()?,
        // A fork reports its confinement with the seccomp listener attached: a socket.
        ready: if forked { report_socket()? } else { pipe()? },
    })
}

fn pipe() -> Result<(OwnedFd, OwnedFd), SetupError> {
    nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).step(Step::Pipes, "pipe")
}

/// The ready channel of a forked interpreter: it carries its report and listener.
fn report_socket() -> Result<(OwnedFd, OwnedFd), SetupError> {
    crate::engine::sync::seqpacket_pair().step(
        Step::Pipes,
        "socketpair for the forked interpreter's report",
    )
}

impl Sandbox {
    /// Makes the warm sandbox's process tree and cgroup.
    fn prepare_fresh(
        &self,
        policy: &Policy,
        ejob: &engine::Job,
        run_id: &str,
        timeline: &Timeline,
        notices: &mut Notices,
    ) -> Result<(Group, Prepared), SetupError> {
        let group = Group::default();
        let job = native_job(policy, run_id, self, timeline);
        let mut make_group = |pid| native::make_group(policy, &job, &group, notices, pid);
        let prepared = engine::prepare(ejob, &mut make_group, &mut || Ok(()))?;
        Ok((group, prepared))
    }
}

/// A job for the native backend's helpers (the cgroup), outside a run.
fn native_job<'a>(policy: &'a Policy, run_id: &'a str, s: &'a Sandbox, t: &'a Timeline) -> Job<'a> {
    static NO_CODE: std::sync::OnceLock<Code> = std::sync::OnceLock::new();
    Job {
        policy,
        code: NO_CODE.get_or_init(|| Code {
            bytes: Vec::new(),
            origin: "-".into(),
            path: None,
        }),
        args: &[],
        run_id,
        net: &s.config().network,
        defer_teardown: false,
        timeline: t,
        spawner: s.spawner_ref(),
    }
}

/// Starts the runner and waits until it is confined and ready.
/// Starts the prepared sandbox's runner (fresh, or forked from `zygote`) and waits for
/// its word that it is confined and ready; on failure its init is ended and reaped
/// here (it is this thread's child), not left a zombie.
fn start_runner(
    p: &Prepared,
    policy: &Policy,
    group: &Group,
    zygote: Option<&mut Zygote>,
    ready: &OwnedFd,
) -> Result<(Started, Vec<OwnedFd>), SetupError> {
    let started = match zygote {
        None => start(p, ready).map(|s| (s, hold_namespaces(p.pid))),
        Some(z) => start_forked(p, policy, group, z, ready),
    };
    if started.is_err() {
        crate::engine::clone::end(p.pid);
    }
    started
}

fn start(p: &Prepared, ready: &OwnedFd) -> Result<Started, SetupError> {
    p.start()?;
    let mut listener = None;
    let confined: Confined = loop {
        match p.chan.recv_with_fd()? {
            Some((Msg::SeccompListener, fd)) => listener = fd,
            Some((Msg::Started(c), _)) => break c,
            Some((Msg::Failed(e), _)) => return Err(e),
            Some((Msg::ExecFailed { message, .. }, _)) => {
                return Err(SetupError::new(Step::Exec, message))
            }
            Some(_) => {}
            None => return Err(SetupError::new(Step::Exec, "the sandbox's init ended")),
        }
    };
    let mut fds = [PollFd::new(ready.as_fd(), PollFlags::POLLIN)];
    let ms = PollTimeout::try_from(READY_TIMEOUT.as_millis() as i32).unwrap_or(PollTimeout::MAX);
    let n = poll(&mut fds, ms).step(Step::Exec, "wait for the warm runner")?;
    let mut b = [0u8; 1];
    if n == 0 || nix::unistd::read(std::os::fd::AsRawFd::as_raw_fd(ready), &mut b) != Ok(1) {
        return Err(SetupError::new(
            Step::Exec,
            format!(
                "the warm runner did not get ready (a preloaded module failed to import?): {}",
                stderr_tail(p)
            ),
        ));
    }
    Ok(Started { confined, listener })
}

/// Starts a sandbox whose interpreter is forked from `zygote`: init hands over the
/// sandbox's namespaces, the run's pipes and the Landlock ruleset (`engine::adopt`),
/// the zygote forks an interpreter that joins the run's cgroup and the namespaces and
/// confines itself, and init adopts it. Returns how it is confined, and the
/// namespaces, held as [`hold_namespaces`] holds a strict sandbox's.
fn start_forked(
    p: &Prepared,
    policy: &Policy,
    group: &Group,
    zygote: &mut Zygote,
    ready: &OwnedFd,
) -> Result<(Started, Vec<OwnedFd>), SetupError> {
    p.start()?;
    let (offered, landlock) = receive_offer(&p.chan)?;
    let made = group.made.get().and_then(Option::as_ref);
    let joins = match made {
        Some(g) => g
            .join_files()
            .map_err(|e| SetupError::new(Step::Cgroup, e.to_string()))?,
        None => Vec::new(),
    };
    let rlimits = match policy.has(crate::policy::Layer::Rlimits) {
        true => engine::rlimit::settings(policy, made.is_none()),
        false => Vec::new(),
    };
    let fds: Vec<(String, BorrowedFd)> = offered
        .iter()
        .map(|(n, fd)| (n.clone(), fd.as_fd()))
        .chain(
            joins
                .iter()
                .enumerate()
                .map(|(i, fd)| (format!("cgroup:{i}"), fd.as_fd())),
        )
        .collect();
    zygote.fork_into(&fds, &rlimits)?;
    // Only the fork keeps the run's pipes: the supervisor sees end-of-file when the
    // code is gone, as with an executed payload.
    let namespaces = offered
        .into_iter()
        .filter(|(n, _)| n.starts_with("ns:"))
        .map(|(_, fd)| fd)
        .collect();
    let (report, listener) = zygote::read_report(ready.as_fd())?;
    p.chan.send(&Msg::Adopt { pid: report.pid })?;
    let confined = Confined {
        landlock: landlock.filter(|_| report.landlock),
        seccomp: report.seccomp,
        listener: None,
    };
    Ok((Started { confined, listener }, namespaces))
}

/// What init hands over for a forked interpreter (see `engine::adopt`).
#[allow(clippy::type_complexity)]
fn receive_offer(
    chan: &crate::engine::sync::Channel,
) -> Result<
    (
        Vec<(String, OwnedFd)>,
        Option<crate::confine::LandlockOutcome>,
    ),
    SetupError,
> {
    let mut fds = Vec::new();
    loop {
        match chan.recv_with_fd()? {
            Some((Msg::AdoptFd { what }, Some(fd))) => fds.push((what, fd)),
            Some((Msg::Adoptable { landlock }, _)) => return Ok((fds, landlock)),
            Some((Msg::Failed(e), _)) => return Err(e),
            Some((other, _)) => {
                return Err(SetupError::new(
                    Step::Sync,
                    format!("expected the sandbox's namespaces from init, got {other:?}"),
                ))
            }
            None => return Err(SetupError::new(Step::Sync, "the sandbox's init ended")),
        }
    }
}

/// The sandbox's namespaces, as init has them once the setup chain is done (it
/// unshares some itself, so not before): open descriptors keep each namespace, and so
/// its inode number, alive after the sandbox's processes are gone. Why: the kernel
/// gives a new namespace the lowest free inode number, so a sandbox made just after
/// another was destroyed would show the same numbers, and two runs' namespaces could
/// not be told apart from inside them. A namespace that cannot be opened is skipped:
/// this only keeps numbers distinct, it confines nothing.
fn hold_namespaces(init: nix::unistd::Pid) -> Vec<OwnedFd> {
    const KINDS: [&str; 7] = ["pid", "net", "mnt", "ipc", "uts", "cgroup", "user"];
    KINDS
        .iter()
        .filter_map(|k| std::fs::File::open(format!("/proc/{init}/ns/{k}")).ok())
        .map(OwnedFd::from)
        .collect()
}

/// What the runner wrote to stderr before it failed.
fn stderr_tail(p: &Prepared) -> String {
    let mut fds = [PollFd::new(p.stderr.as_fd(), PollFlags::POLLIN)];
    let mut buf = [0u8; 4096];
    match poll(&mut fds, PollTimeout::from(200u8)) {
        Ok(n) if n > 0 => {
            match nix::unistd::read(std::os::fd::AsRawFd::as_raw_fd(&p.stderr), &mut buf) {
                Ok(k) => String::from_utf8_lossy(&buf[..k]).trim().to_string(),
                Err(_) => String::new(),
            }
        }
        _ => String::new(),
    }
}

impl Warm {
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// How long ago it became ready.
    pub fn age(&self) -> Duration {
        self.made_at.elapsed()
    }

    /// Whether its runner still waits (it hangs up its ready pipe when it dies).
    pub fn alive(&self) -> bool {
        let mut fds = [PollFd::new(self.ready.as_fd(), PollFlags::empty())];
        !matches!(poll(&mut fds, PollTimeout::ZERO), Ok(n) if n > 0)
    }

    /// Runs `code` in this sandbox, once, after the same assessment, gate and audit as
    /// [`Sandbox::run`]. A request this sandbox cannot serve (another level after the
    /// gate, settings a prepared sandbox cannot change) comes back as `Err(Ok(..))`,
    /// with the sandbox, unused.
    #[allow(clippy::result_large_err)]
    pub fn run(
        self,
        sandbox: &Sandbox,
        code: &Code,
        args: &[String],
        mut io: Io,
        timeline: &Timeline,
    ) -> Result<(Run, Remains), Result<(Warm, NotServable), Error>> {
        let mut notices = Notices::new(io.notices.take());
        let decided = sandbox.decide(code, &mut notices, timeline).map_err(Err)?;
        let lowered = match self.servable(&decided) {
            Ok(l) => l,
            Err(why) => return Err(Ok((self, why))),
        };
        let x = Execution {
            decided,
            run_id: self.run_id.clone(),
            code,
            args,
            timeline,
        };
        // The sandbox stays in the cell after its run: what is left of it goes to
        // the caller as `Remains`, to be destroyed off the request's path (dropping
        // it here would kill, reap and remove its group before the report is sent).
        let cell = std::cell::RefCell::new(Some(self));
        let backend = |job: &Job, io: Io, n: &mut Notices, before: BeforeCode| match cell
            .borrow_mut()
            .as_mut()
        {
            Some(w) => w.supervise(job, io, n, before, lowered.clone()),
            None => failed(job.policy, "the warm sandbox was used twice"),
        };
        let run = sandbox.execute(x, io, notices, &backend);
        let remains = cell
            .borrow_mut()
            .take()
            .map(Warm::into_remains)
            .unwrap_or_default();
        run.map(|r| (r, remains)).map_err(Err)
    }

    /// The limits the request runs with, when this sandbox can serve it: the same
    /// level and settings, and limits no higher than those it was made with.
    fn servable(&self, d: &Decided) -> Result<Limits, NotServable> {
        if d.policy.trust != self.policy.trust {
            return Err(NotServable::Level(d.policy.trust));
        }
        let (want, have) = (&d.policy.limits, &self.policy.limits);
        if want.memory_bytes > have.memory_bytes || want.cpus > have.cpus || want.pids > have.pids {
            return Err(NotServable::Differs("limits above the level's".into()));
        }
        let lowered = want != have;
        if lowered && self.group.made.get().is_none_or(Option::is_none) {
            return Err(NotServable::Differs(
                "lowered limits without a cgroup".into(),
            ));
        }
        // Everything else must be what the sandbox was built with.
        let mut same = d.policy.clone();
        same.limits = self.policy.limits.clone();
        same.adjustments = self.policy.adjustments.clone();
        let (a, b) = (
            serde_json::to_value(&same),
            serde_json::to_value(&self.policy),
        );
        match (a, b) {
            (Ok(a), Ok(b)) if a == b => Ok(want.clone()),
            _ => Err(NotServable::Differs(
                "settings other than the level's".into(),
            )),
        }
    }

    fn supervise(
        &mut self,
        job: &Job,
        io: Io,
        notices: &mut Notices,
        mut before: BeforeCode,
        limits: Limits,
    ) -> (Outcome, Facts) {
        let (Some(prepared), Some(started), Some(code_w)) =
            (self.prepared.take(), self.started.take(), self.code.take())
        else {
            return failed(job.policy, "the warm sandbox was used twice");
        };
        let pid = prepared.pid;
        if let Err(e) = self.lower(&limits).and_then(|_| before.run()) {
            self.prepared = Some(prepared);
            return self.finish(job, Outcome::setup_failed(e), None);
        }
        // The sandbox's accounts before the code: its usage is counted from here.
        let done = self.done.take().and_then(|fd| {
            let g = self.group.made.get().and_then(Option::as_ref)?;
            Some((fd, crate::supervise::done::Accounts::read(g, false)))
        });
        if let Err(e) = hand_over(code_w, &job.code.bytes, job.args) {
            self.prepared = Some(prepared);
            return self.finish(job, Outcome::setup_failed(e), None);
        }
        job.timeline.mark("code-handed-over");
        let run_limits = crate::supervise::Limits {
            timeout: limits.timeout,
            output_bytes: limits.output_bytes,
            seccomp: Some(crate::confine::notify::Classifier::new(&job.policy.seccomp)),
        };
        let cg = self
            .group
            .made
            .get()
            .and_then(Option::as_ref)
            .map(|g| crate::supervise::Cgroup {
                group: g,
                sample: Duration::from_millis(job.policy.cgroup.sample_ms),
                cpu_time: limits.cpu_time,
            });
        let opts = crate::supervise::Options {
            limits: &run_limits,
            cgroup: cg,
            signals: None,
            started: Some(started),
            done,
            timeline: job.timeline,
        };
        let mut outcome = crate::supervise::run(prepared, opts, io, &mut || {});
        job.timeline.mark("code");
        let _ = notices;
        outcome.unreaped_init = outcome.unreaped_init.or(Some(pid));
        let done = self.finish(job, outcome, None);
        job.timeline.mark("facts");
        done
    }

    /// The request's limits where they are lower than the level's, and the CPU share
    /// of a run.
    fn lower(&self, limits: &Limits) -> Result<(), SetupError> {
        if let Some(g) = self.group.made.get().and_then(Option::as_ref) {
            g.cpu_share(false);
        }
        match self.group.made.get().and_then(Option::as_ref) {
            Some(g) if *limits != self.policy.limits => g
                .lower(crate::cgroup::Limits {
                    memory_bytes: limits.memory_bytes,
                    cpus: limits.cpus,
                    pids: limits.pids,
                })
                .map_err(|e| SetupError::new(Step::Cgroup, e.to_string())),
            _ => Ok(()),
        }
    }

    fn finish(
        &mut self,
        job: &Job,
        outcome: Outcome,
        proxy: Option<crate::net::ProxyReport>,
    ) -> (Outcome, Facts) {
        let layout = self
            .group
            .made
            .get()
            .and_then(Option::as_ref)
            .map(|g| g.layout().name().to_string());
        let note = self.group.note.get().cloned().flatten();
        let facts = native::facts(
            job.policy,
            &outcome,
            layout,
            note,
            proxy,
            Some(self.setup.clone()),
        );
        self.pending_init = outcome.unreaped_init;
        (outcome, facts)
    }

    /// An unused sandbox's remains, to destroy it off the caller's path.
    /// An unused sandbox ran no code: no run will be compared with it, so its
    /// namespaces are not held.
    pub fn into_unused(mut self) -> Remains {
        self.namespaces.clear();
        self.into_remains()
    }

    fn into_remains(mut self) -> Remains {
        self.take_remains()
    }

    /// What is left to destroy; the value itself then holds nothing.
    fn take_remains(&mut self) -> Remains {
        Remains {
            init: self
                .pending_init
                .take()
                .or_else(|| self.prepared.as_ref().map(|p| p.pid)),
            group: self.group.made.take().flatten(),
            namespaces: std::mem::take(&mut self.namespaces),
        }
    }
}

/// What is left of a warm sandbox after its run (or unused): its init, to be ended and
/// reaped, and its cgroup, to be removed. Dropping it does both; a server drops it off
/// the request's path.
#[derive(Default)]
pub struct Remains {
    init: Option<nix::unistd::Pid>,
    group: Option<crate::cgroup::RunCgroup>,
    namespaces: Vec<OwnedFd>,
}

impl Remains {
    /// The descriptors that keep its namespaces alive. A server that destroys used
    /// sandboxes off the request's path keeps the last one's until the next is
    /// destroyed: every sandbox is then made while its predecessor's namespaces still
    /// exist, and consecutive runs never show the same namespace inode numbers.
    /// (Holding a mount namespace keeps its tmpfs contents, one sandbox's at most.)
    pub fn take_namespaces(&mut self) -> Vec<OwnedFd> {
        std::mem::take(&mut self.namespaces)
    }
}

impl Drop for Remains {
    fn drop(&mut self) {
        if let Some(pid) = self.init.take() {
            crate::engine::clone::end(pid);
        }
        if let Some(g) = self.group.take() {
            let _ = g.remove();
        }
    }
}

impl Drop for Warm {
    fn drop(&mut self) {
        drop(self.take_remains());
    }
}

/// The script to the runner: `argc NUL arg NUL ... code`, then end-of-file.
fn hand_over(code_w: OwnedFd, code: &[u8], args: &[String]) -> Result<(), SetupError> {
    let mut blob = format!("{}\0", args.len()).into_bytes();
    for a in args {
        blob.extend_from_slice(a.as_bytes());
        blob.push(0);
    }
    blob.extend_from_slice(code);
    let mut f = std::fs::File::from(code_w);
    std::io::Write::write_all(&mut f, &blob).step(Step::Script, "hand the script to the runner")
}

fn failed(policy: &Policy, why: &str) -> (Outcome, Facts) {
    let outcome = Outcome::setup_failed(SetupError::new(Step::Sync, why));
    let facts = native::facts(policy, &outcome, None, None, None, None);
    (outcome, facts)
}
