//! Creating the sandbox process: clone into new namespaces, map ids, let the child
//! build its view, and wait until it is ready to start the payload.

use super::init::{self, Payload};
use super::rootfs;
use super::sync::{self, Channel, Msg};
use super::{net, privs, rlimit, userns};
use crate::error::{SetupError, Step, StepContext};
use crate::policy::{Layer, Policy, View};
use nix::sched::CloneFlags;
use nix::unistd::Pid;
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::Instant;

/// Namespaces created together with the sandbox process. The child creates two
/// more itself: the network namespace first thing (see [`early_namespaces`]), and
/// the cgroup namespace once it is in the run's cgroup, so that its root is that
/// group.
fn namespaces(policy: &Policy) -> CloneFlags {
    if let View::Oci(v) = &policy.view {
        return super::oci::clone_flags(v);
    }
    let mut f = CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS | CloneFlags::CLONE_NEWPID;
    for (layer, flag) in [
        (Layer::IpcNs, CloneFlags::CLONE_NEWIPC),
        (Layer::UtsNs, CloneFlags::CLONE_NEWUTS),
    ] {
        if policy.has(layer) {
            f |= flag;
        }
    }
    f
}

/// Child-side ends of the stdio pipes.
pub struct ChildStdio {
    pub stdin: OwnedFd,
    pub stdout: OwnedFd,
    pub stderr: OwnedFd,
}

pub struct Spawned {
    pub pid: Pid,
    pub chan: Channel,
}

/// Everything the child needs; moved into it by clone's copy of our memory.
struct ChildCtx<'a> {
    policy: &'a Policy,
    script: &'a [u8],
    payload: Payload,
    stdio: ChildStdio,
    chan: Channel,
    /// The supervisor's end of the channel, which clone copied into the child: closed
    /// there first thing, or the child's waits on the channel could never see the
    /// end-of-file that the supervisor's death means.
    parent_end: std::os::fd::RawFd,
}

const STACK_SIZE: usize = 1 << 20;

pub fn spawn(
    policy: &Policy,
    script: &[u8],
    payload: Payload,
    stdio: ChildStdio,
    before_maps: &mut dyn FnMut(Pid) -> Result<(), SetupError>,
) -> Result<Spawned, SetupError> {
    let (parent_chan, child_chan) = sync::pair()?;
    let mut ctx = ChildCtx {
        policy,
        script,
        payload,
        stdio,
        chan: child_chan,
        parent_end: parent_chan.raw_fd(),
    };
    // A zeroed Vec of this size comes from calloc/mmap: pages are only touched
    // as the child's stack grows.
    let mut stack = vec![0u8; STACK_SIZE];
    let cb = Box::new(|| child_main(&mut ctx) as isize);
    let pid =
        super::clone::clone_sandbox(cb, &mut stack, namespaces(policy)).map_err(clone_error)?;
    drop(ctx);
    let kill_child = |e: SetupError| {
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
        let _ = nix::sys::wait::waitpid(pid, None);
        e
    };
    before_maps(pid).map_err(kill_child)?;
    match &policy.view {
        View::Python => userns::write_maps(
            pid,
            policy.identity.mapping,
            policy.identity.uid,
            policy.identity.gid,
        ),
        View::Oci(v) => match &v.namespaces.user {
            Some(maps) => super::oci::write_maps(pid, maps),
            None => Ok(()),
        },
    }
    .map_err(kill_child)?;
    parent_chan.send(&Msg::MapsWritten).map_err(kill_child)?;
    Ok(Spawned {
        pid,
        chan: parent_chan,
    })
}

fn clone_error(e: nix::errno::Errno) -> SetupError {
    let hint = match e {
        nix::errno::Errno::EPERM | nix::errno::Errno::ENOSPC => {
            "; unprivileged user namespaces may be disabled (run `maibox doctor`)"
        }
        _ => "",
    };
    SetupError::new(
        Step::Clone,
        format!("clone with new user/pid/mount/ipc/uts namespaces: {e}{hint}"),
    )
}

fn child_main(ctx: &mut ChildCtx) -> i32 {
    let _ = nix::unistd::close(ctx.parent_end);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| child_run(ctx)));
    r.unwrap_or(125)
}

fn child_run(ctx: &mut ChildCtx) -> i32 {
    if let View::Oci(v) = &ctx.policy.view {
        return super::oci::child_run(v, &ctx.stdio, &ctx.chan);
    }
    match child_setup(ctx) {
        Ok(()) => {}
        Err(e) => {
            let _ = ctx.chan.send(&Msg::Failed(e));
            return 125;
        }
    }
    match ctx.chan.recv() {
        Ok(Some(Msg::Start)) => init::run(&ctx.chan, &ctx.payload),
        _ => 125,
    }
}

fn timed(t: &mut Vec<(String, u64)>, name: &str, since: &mut Instant) {
    let now = Instant::now();
    t.push((
        name.to_string(),
        now.duration_since(*since).as_micros() as u64,
    ));
    *since = now;
}

fn child_setup(ctx: &mut ChildCtx) -> Result<(), SetupError> {
    let mut t = Vec::new();
    let mut since = Instant::now();
    // If the supervisor dies, the sandbox dies with it: nothing may run unsupervised.
    die_with(&ctx.chan)?;
    // Init waits for these synchronously (see `init::run`); blocked here, not by the
    // supervisor, whose signal mask is its caller's business.
    init::block_handled()?;
    early_namespaces(ctx.policy)?;
    timed(&mut t, "network", &mut since);
    for (fd, target) in [
        (&ctx.stdio.stdin, 0),
        (&ctx.stdio.stdout, 1),
        (&ctx.stdio.stderr, 2),
    ] {
        nix::unistd::dup2(fd.as_raw_fd(), target).step(Step::Pipes, "dup2 stdio")?;
    }
    match ctx.chan.recv()? {
        Some(Msg::MapsWritten) => {}
        other => {
            return Err(SetupError::new(
                Step::Sync,
                format!("expected MapsWritten from the supervisor, got {other:?}"),
            ))
        }
    }
    timed(&mut t, "wait-maps", &mut since);
    privs::become_ns_root(ctx.policy)?;
    if ctx.policy.has(Layer::NestedUserns) {
        forbid_nested_userns()?;
    }
    timed(&mut t, "namespaces", &mut since);
    // Opened here, not in the supervisor: a bind source must belong to the mount
    // namespace that does the binding.
    let sources = rootfs::open_sources(ctx.policy)?;
    rootfs::build(ctx.policy, sources, ctx.script)?;
    timed(&mut t, "rootfs", &mut since);
    join_cgroup(&ctx.chan)?;
    if ctx.policy.has(Layer::CgroupNs) {
        nix::sched::unshare(CloneFlags::CLONE_NEWCGROUP)
            .step(Step::Cgroup, "unshare the cgroup namespace")?;
    }
    timed(&mut t, "cgroup", &mut since);
    if ctx.policy.has(Layer::UtsNs) {
        nix::unistd::sethostname(&ctx.policy.hostname).step(Step::Hostname, "sethostname")?;
    }
    if ctx.policy.has(Layer::Rlimits) {
        rlimit::apply(ctx.policy)?;
    }
    privs::new_session()?;
    privs::close_fds_except(&[ctx.chan.raw_fd()])?;
    privs::drop_privileges(ctx.policy)?;
    // Changing credentials cleared the parent-death signal: set it again. Should the
    // supervisor already be gone, the wait for `Start` below ends at end-of-file.
    die_with(&ctx.chan)?;
    timed(&mut t, "privileges", &mut since);
    ctx.chan.send(&Msg::Ready { timings_us: t })
}

/// Joins the run's cgroup, which the supervisor makes while this process builds
/// its root. On v1 the supervisor sends the `tasks` files and this process moves
/// itself: a thread that moves itself skips the global threadgroup lock, and its
/// RCU grace period, that moving another process takes (measured here: 0.05 ms
/// against 10 ms). Nothing of the code runs before this: the payload is forked
/// later, inside the group.
fn join_cgroup(chan: &Channel) -> Result<(), SetupError> {
    chan.recv_fds_until(
        |m| matches!(m, Msg::CgroupDone),
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
    )
}

/// The network namespace, with `lo` up. Creating one is the costliest part of
/// clone (0.6 ms here: the kernel registers loopback and the per-namespace
/// sysctls); made by the child, it overlaps the supervisor's work on the id maps,
/// the cgroup and the audit log, where clone would make the supervisor wait for
/// it. The child may: a new user namespace's first process holds every
/// capability in it from the start, before its id maps are written.
fn early_namespaces(policy: &Policy) -> Result<(), SetupError> {
    if policy.has(Layer::NetNs) {
        nix::sched::unshare(CloneFlags::CLONE_NEWNET)
            .step(Step::Namespaces, "unshare the network namespace")?;
        net::loopback_up()?;
    }
    Ok(())
}

/// SIGKILL when the supervisor dies. A supervisor that died before the signal was set
/// sends none, so its side of the channel is checked after: a hang-up there means it is
/// gone, and the child ends itself. (getppid cannot tell: in its own pid namespace the
/// child sees 0 for its parent, alive or not.)
pub(crate) fn die_with(chan: &Channel) -> Result<(), SetupError> {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    use std::os::fd::AsFd;
    nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
        .step(Step::Session, "prctl(PR_SET_PDEATHSIG, SIGKILL)")?;
    let mut fds = [PollFd::new(chan.as_fd(), PollFlags::empty())];
    let hung_up = poll(&mut fds, PollTimeout::ZERO).is_ok_and(|n| n > 0)
        && fds[0]
            .revents()
            .is_some_and(|r| r.intersects(PollFlags::POLLHUP | PollFlags::POLLERR));
    if hung_up {
        // SAFETY: _exit in the cloned child: nothing of the supervisor's may run here.
        unsafe { libc::_exit(125) }
    }
    Ok(())
}

/// user.max_user_namespaces is counted per user namespace: 0 in ours means neither the
/// code nor anything it starts can create a nested one (bubblewrap's --disable-userns),
/// whatever the seccomp profile allows.
fn forbid_nested_userns() -> Result<(), SetupError> {
    std::fs::write("/proc/sys/user/max_user_namespaces", "0").step(
        Step::Namespaces,
        "set user.max_user_namespaces to 0 inside the sandbox",
    )
}
