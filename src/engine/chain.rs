//! The sandbox's setup chain: every step the cloned child takes, in order, for both
//! views a policy can have (maibox's Python view for `exec`, an OCI bundle's view for
//! the runtime verbs). [`setup`] is the list, one step per line; each step lives in
//! its own module, and a step with nothing to do for a view does nothing. A failure
//! anywhere ends the child before anything of the payload runs: it reports the step
//! that failed and exits.
//!
//! The two views differ in three places, which the list shows: an OCI container's
//! cgroup namespace is made before its root (a cgroup mount in it must show the
//! container's groups), a Python sandbox's after (it joins the run's cgroup, which
//! the supervisor makes meanwhile); the OCI view sets its seccomp programs before
//! the identity switch where the spec needs that; and after `Ready` a Python sandbox
//! starts maibox's init, an OCI container execs its own process.

use super::init::{self, Payload};
use super::sync::{Channel, Msg};
use super::{net, oci, privs, procname, rlimit, rootfs, userns};
use crate::error::{SetupError, Step, StepContext};
use crate::policy::{Layer, Policy, View};
use nix::sched::CloneFlags;
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::Instant;

/// Child-side ends of the stdio pipes, and the descriptors the payload gets as 3, 4,
/// ... (numbered above any target, so that placing one never overwrites another).
pub struct ChildStdio {
    pub stdin: OwnedFd,
    pub stdout: OwnedFd,
    pub stderr: OwnedFd,
    pub extra: Vec<OwnedFd>,
}

/// Everything the child needs; moved into it by clone's copy of the caller's memory.
pub(super) struct Child<'a> {
    pub policy: &'a Policy,
    pub script: &'a [u8],
    pub payload: Payload,
    pub stdio: ChildStdio,
    pub chan: Channel,
    /// Detached copies of the host mounts the view binds (root only; see
    /// [`super::trees`]).
    pub trees: Vec<super::trees::Tree>,
    /// The supervisor's end of the channel, which clone copied into the child: closed
    /// first thing, or the child's waits on the channel could never see the
    /// end-of-file that the supervisor's death means.
    pub parent_end: std::os::fd::RawFd,
}

/// What the chain leaves for the start.
struct Ready {
    timings_us: Vec<(String, u64)>,
    /// OCI: the FIFO `start` writes to.
    gate: Option<OwnedFd>,
    /// OCI: the container's state for its own hooks.
    hook_state: Option<serde_json::Value>,
}

/// The cloned child's whole life: the chain, `Ready`, the wait for `start`, and then
/// the payload.
pub(super) fn main(c: &mut Child) -> i32 {
    let _ = nix::unistd::close(c.parent_end);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(c)));
    r.unwrap_or(125)
}

fn run(c: &Child) -> i32 {
    let ready = match setup(c) {
        Ok(r) => r,
        Err(e) => {
            let _ = c.chan.send(&Msg::Failed(e));
            return 125;
        }
    };
    match &c.policy.view {
        View::Oci(v) => oci::start(v, ready.gate, ready.hook_state, &c.chan),
        View::Python => {
            let ready = Msg::Ready {
                timings_us: ready.timings_us,
            };
            if c.chan.send(&ready).is_err() {
                return 125;
            }
            match c.chan.recv() {
                Ok(Some(Msg::Start)) => init::run(&c.chan, &c.payload),
                _ => 125,
            }
        }
    }
}

/// The chain, in order.
fn setup(c: &Child) -> Result<Ready, SetupError> {
    let (p, chan) = (c.policy, &c.chan);
    let mut t = Timings::start();
    die_with_supervisor(p, chan)?; // SIGKILL when the supervisor dies
    init_signals(p)?; // init waits for its signals synchronously
    stdio(&c.stdio)?; // the run's pipes as 0, 1 and 2
    drop_inherited_fds(c, chan)?; // Python: stdio, the channel; before any wait
    own_network(p)?; // a fresh network namespace with `lo` up
    t.step("network");
    userns::wait_for_maps(chan)?; // the supervisor writes the id maps
    t.step("wait-maps");
    become_root(p)?; // root of the user namespace, no supplementary groups
    forbid_nested_userns(p)?; // user.max_user_namespaces = 0
    join_namespaces(p)?; // OCI: namespaces named by path
    t.step("namespaces");
    let gate = close_inherited_fds(c, chan)?; // OCI: once namespace files are used
    let groups = early_cgroup_namespace(p)?; // OCI: before the root
    network_settings(p)?; // OCI: `lo`, sysctls
    let hook_state = build_root(c, &groups)?; // mounts, pivot_root, masks
    t.step("rootfs");
    let grouped = join_cgroup(p, chan)?; // Python: the run's cgroup, then its ns
    t.step("cgroup");
    names(p)?; // hostname (and domain name)
    init_name(p)?; // Python: /proc/1/cmdline and comm neutral
    limits(p, grouped)?; // rlimits (memory too, without a group)
    privs::new_session()?; // no controlling terminal (TIOCSTI)
    console(p)?; // OCI: the pty as controlling terminal
    harden(p)?; // OCI --hardened: Landlock on the container's root
    identity(p, chan)?; // the sandbox's user, no capabilities, no_new_privs
    die_with_supervisor_again(p, chan)?; // the identity switch cleared it
    t.step("privileges");
    Ok(Ready {
        timings_us: t.done(),
        gate,
        hook_state,
    })
}

/// How long each step of the chain took, for `--timings`.
struct Timings {
    since: Instant,
    steps: Vec<(String, u64)>,
}

impl Timings {
    fn start() -> Timings {
        Timings {
            since: Instant::now(),
            steps: Vec::new(),
        }
    }

    fn step(&mut self, name: &str) {
        let now = Instant::now();
        let us = now.duration_since(self.since).as_micros() as u64;
        self.steps.push((name.to_string(), us));
        self.since = now;
    }

    fn done(self) -> Vec<(String, u64)> {
        self.steps
    }
}

fn die_with_supervisor(p: &Policy, chan: &Channel) -> Result<(), SetupError> {
    match &p.view {
        // A container `create` leaves behind must outlive the runtime.
        View::Oci(v) if !v.die_with_parent => Ok(()),
        _ => privs::die_with(chan),
    }
}

/// Set again: the switch to a non-root user cleared it. A foreground OCI run's
/// container may already be under the bundle's seccomp filter, which may refuse
/// prctl: there it is a best effort (runc sets none at all; the runtime's death
/// still ends every wait on the channel).
fn die_with_supervisor_again(p: &Policy, chan: &Channel) -> Result<(), SetupError> {
    match &p.view {
        View::Python => privs::die_with(chan),
        View::Oci(v) if v.die_with_parent => {
            let _ = privs::die_with(chan);
            Ok(())
        }
        View::Oci(_) => Ok(()),
    }
}

/// Blocked here, not by the supervisor, whose signal mask is its caller's business.
fn init_signals(p: &Policy) -> Result<(), SetupError> {
    match &p.view {
        View::Python => init::block_handled().map(drop),
        View::Oci(_) => Ok(()),
    }
}

fn stdio(s: &ChildStdio) -> Result<(), SetupError> {
    for (fd, target) in [(&s.stdin, 0), (&s.stdout, 1), (&s.stderr, 2)] {
        if fd.as_raw_fd() != target {
            nix::unistd::dup2(fd.as_raw_fd(), target).step(Step::Pipes, "dup2 stdio")?;
        }
    }
    for (i, fd) in s.extra.iter().enumerate() {
        nix::unistd::dup2(fd.as_raw_fd(), 3 + i as i32).step(Step::Pipes, "dup2 a pipe")?;
    }
    Ok(())
}

/// The network namespace, with `lo` up. Creating one is the costliest part of
/// clone (0.6 ms here: the kernel registers loopback and the per-namespace
/// sysctls); made by the child, it overlaps the supervisor's work on the id maps,
/// the cgroup and the audit log, where clone would make the supervisor wait for
/// it. The child may: a new user namespace's first process holds every
/// capability in it from the start, before its id maps are written. (An OCI
/// container's comes with the clone, as the spec asks.)
fn own_network(p: &Policy) -> Result<(), SetupError> {
    if matches!(p.view, View::Python) && p.has(Layer::NetNs) {
        nix::sched::unshare(CloneFlags::CLONE_NEWNET)
            .step(Step::Namespaces, "unshare the network namespace")?;
        net::loopback_up()?;
    }
    Ok(())
}

fn become_root(p: &Policy) -> Result<(), SetupError> {
    match &p.view {
        View::Python => privs::become_ns_root(p),
        View::Oci(v) => oci::become_root(v),
    }
}

/// user.max_user_namespaces is counted per user namespace: 0 in ours means neither the
/// code nor anything it starts can create a nested one (bubblewrap's --disable-userns),
/// whatever the seccomp profile allows.
fn forbid_nested_userns(p: &Policy) -> Result<(), SetupError> {
    if matches!(p.view, View::Python) && p.has(Layer::NestedUserns) {
        std::fs::write("/proc/sys/user/max_user_namespaces", "0").step(
            Step::Namespaces,
            "set user.max_user_namespaces to 0 inside the sandbox",
        )?;
    }
    Ok(())
}

fn join_namespaces(p: &Policy) -> Result<(), SetupError> {
    match &p.view {
        View::Python => Ok(()),
        View::Oci(v) => oci::join_namespaces(v),
    }
}

/// Only stdio, the payload's extra pipes and the channel stay, before the first wait
/// on the supervisor. A multithreaded caller may prepare several sandboxes at once,
/// and each clone copies every descriptor of the caller: one that waited while it
/// held another's end of its channel could keep that one from ever seeing its
/// supervisor's death (and the other way round).
fn drop_inherited_fds(c: &Child, chan: &Channel) -> Result<(), SetupError> {
    match &c.policy.view {
        View::Python => {
            let mut keep: Vec<i32> = (3..3 + c.stdio.extra.len() as i32).collect();
            keep.push(chan.raw_fd());
            keep.extend(c.trees.iter().map(|t| t.fd.as_raw_fd()));
            privs::close_fds_except(&keep)
        }
        View::Oci(_) => Ok(()),
    }
}

fn close_inherited_fds(c: &Child, chan: &Channel) -> Result<Option<OwnedFd>, SetupError> {
    match &c.policy.view {
        View::Python => Ok(None),
        View::Oci(v) => oci::close_inherited_fds(v, chan),
    }
}

fn early_cgroup_namespace(p: &Policy) -> Result<Vec<(String, String)>, SetupError> {
    match &p.view {
        View::Python => Ok(Vec::new()),
        View::Oci(v) => oci::cgroup_namespace(v),
    }
}

fn network_settings(p: &Policy) -> Result<(), SetupError> {
    match &p.view {
        View::Python => Ok(()),
        View::Oci(v) => oci::network_settings(v),
    }
}

fn build_root(
    c: &Child,
    groups: &[(String, String)],
) -> Result<Option<serde_json::Value>, SetupError> {
    match &c.policy.view {
        View::Python => {
            // Opened here, not in the supervisor: a bind source must belong to the
            // mount namespace that does the binding.
            let sources = rootfs::open_sources(c.policy, &c.trees)?;
            rootfs::build(c.policy, sources, c.script).map(|_| None)
        }
        View::Oci(v) => oci::root::build(v, &c.chan, groups),
    }
}

/// Joins the run's cgroup, which the supervisor makes while this process builds
/// its root. On v1 the supervisor sends the `tasks` files and this process moves
/// itself: a thread that moves itself skips the global threadgroup lock, and its
/// RCU grace period, that moving another process takes (measured here: 0.05 ms
/// against 10 ms). Nothing of the code runs before this: the payload is forked
/// later, inside the group. Then the cgroup namespace, rooted at that group.
/// Returns whether the group bounds the sandbox's memory and CPU.
fn join_cgroup(p: &Policy, chan: &Channel) -> Result<bool, SetupError> {
    if !matches!(p.view, View::Python) {
        return Ok(true);
    }
    let mut limited = false;
    chan.recv_fds_until(
        |m| match m {
            Msg::CgroupDone { limited: l } => {
                limited = *l;
                true
            }
            _ => false,
        },
        Step::Sync,
        "the run's cgroup from the supervisor",
        |m, fd| match m {
            Msg::CgroupTasks => {
                nix::unistd::write(&fd, b"0").step(Step::Cgroup, "join the run's cgroup")?;
                Ok(())
            }
            other => Err(SetupError::new(
                Step::Sync,
                format!("expected a cgroup tasks file, got {other:?}"),
            )),
        },
    )?;
    if p.has(Layer::CgroupNs) {
        nix::sched::unshare(CloneFlags::CLONE_NEWCGROUP)
            .step(Step::Cgroup, "unshare the cgroup namespace")?;
    }
    Ok(limited)
}

fn names(p: &Policy) -> Result<(), SetupError> {
    match &p.view {
        View::Python if p.has(Layer::UtsNs) => {
            nix::unistd::sethostname(&p.hostname).step(Step::Hostname, "sethostname")
        }
        View::Python => Ok(()),
        View::Oci(v) => oci::names(v),
    }
}

/// Init is a fork of the supervisor: without this, the code would read the
/// supervisor's command line as init's (see [`procname`]).
fn init_name(p: &Policy) -> Result<(), SetupError> {
    match &p.view {
        View::Python if p.has(Layer::ProcMasks) => procname::neutral(),
        _ => Ok(()),
    }
}

fn limits(p: &Policy, grouped: bool) -> Result<(), SetupError> {
    match &p.view {
        View::Python if p.has(Layer::Rlimits) => rlimit::apply(p, !grouped),
        View::Python => Ok(()),
        View::Oci(v) => oci::limits(v),
    }
}

fn console(p: &Policy) -> Result<(), SetupError> {
    match &p.view {
        View::Python => Ok(()),
        View::Oci(v) => oci::console(v),
    }
}

/// While the init still holds CAP_SYS_ADMIN in its user namespace: Landlock then
/// needs no no_new_privs, which the bundle decides.
fn harden(p: &Policy) -> Result<(), SetupError> {
    match &p.view {
        View::Python => Ok(()),
        View::Oci(v) => oci::harden(v),
    }
}

fn identity(p: &Policy, chan: &Channel) -> Result<(), SetupError> {
    match &p.view {
        View::Python => privs::drop_privileges(p),
        View::Oci(v) => oci::identity(v, chan),
    }
}
