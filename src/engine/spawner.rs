//! A single-threaded process that clones sandboxes for a multithreaded server.
//!
//! A sandbox's init is a clone of the process that made it and shares that process's
//! memory copy-on-write until it ends. Cloned from a server, every page a server
//! thread writes while sandboxes live is copied again, and in a VM each copy also
//! interrupts the CPUs where the server's other threads run (a profile of a
//! fork-mode server: about 73 page faults and 1.3 ms of CPU per run in its refill
//! threads). A multithreaded caller must also fork before each clone (see
//! [`super::clone`]), which copies its page tables every time.
//!
//! The spawner is forked, through a nursery, by the server's main thread before any
//! other thread exists. The nursery does nothing but fork spawners (with CLONE_PARENT:
//! each is the server's child): a spawner that ends (killed, or out of memory) is
//! replaced by another copy of the same single-threaded image, never by a fork of the
//! multithreaded server. The spawner receives each sandbox's policy, script,
//! arguments and descriptors over a socket, makes the run's pipes and payload,
//! clones the sandbox with CLONE_PARENT
//! (its init is the server's child: the server waits for it, and init's
//! PR_SET_PDEATHSIG follows the server's main thread), writes its id maps, and sends
//! back its pid and the supervisor's descriptors. The server then goes on as after a
//! clone of its own (the cgroup, the ready wait). Nothing else runs in the spawner,
//! so the memory its sandboxes share is written by it alone, one clone at a time.

use super::sync::{self, Channel};
use super::{spawn_job, Job, Spawning, StdinMode};
use crate::error::{SetupError, Step, StepContext};
use crate::policy::{Policy, View};
use nix::unistd::{ForkResult, Pid};
use serde::{Deserialize, Serialize};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// The most descriptors a request carries (a warm sandbox has three pipes).
const MAX_EXTRA: usize = 8;

/// The server's handle on its spawner process.
pub struct Spawner {
    /// The spawner now: replaced by [`Spawner::respawn_if_ended`].
    live: Mutex<Live>,
    /// The nursery, which forks each spawner (see [`nursery`]).
    nursery: Mutex<Live>,
    /// The spawner ended (it never does while the server lives, unless killed or
    /// out of memory): sandboxes are cloned in this process, as without a spawner,
    /// until a new one is started.
    gone: AtomicBool,
}

/// A spawner process and the server's end of its socket.
struct Live {
    sock: OwnedFd,
    pid: Pid,
    /// The process was reaped: its pid may be another process's now (one of
    /// this server's sandboxes, even), never to be waited for or signalled.
    reaped: bool,
}

impl std::fmt::Debug for Spawner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Spawner(pid {})", self.pid())
    }
}

/// A request: this JSON header, a newline, then the script's bytes, with the job's
/// extra descriptors attached.
#[derive(Serialize)]
struct Request<'a> {
    policy: &'a Policy,
    args: &'a [String],
    pump_stdin: bool,
    adopt: bool,
}

#[derive(Deserialize)]
struct Received {
    policy: Policy,
    args: Vec<String>,
    pump_stdin: bool,
    adopt: bool,
}

/// The answer, with the channel, stdout, stderr and (when pumped) stdin attached.
#[derive(Serialize, Deserialize)]
struct Answer {
    spawned: Result<i32, SetupError>,
    /// Sandboxes the spawner ended after a failed step, for the server to reap.
    orphans: Vec<i32>,
}

impl Spawner {
    /// Forks the nursery, and through it the spawner. Call it from the thread that
    /// outlives every sandbox they will make (a server's main thread), best before any
    /// other thread starts: a sandbox's init dies with the thread that forked the
    /// nursery.
    pub fn start() -> Result<Spawner, SetupError> {
        let nursery = fork_nursery()?;
        let live = new_spawner(&nursery)?;
        Ok(Spawner {
            live: Mutex::new(live),
            nursery: Mutex::new(nursery),
            gone: AtomicBool::new(false),
        })
    }

    /// The spawner's pid (the current one's, after a respawn).
    pub fn pid(&self) -> Pid {
        self.live.lock().map_or(Pid::from_raw(0), |l| l.pid)
    }

    /// The nursery's pid (it forks each spawner).
    pub fn nursery_pid(&self) -> Pid {
        self.nursery.lock().map_or(Pid::from_raw(0), |l| l.pid)
    }

    /// The spawner ended (found at a request): sandboxes are cloned by the caller.
    pub fn is_gone(&self) -> bool {
        self.gone.load(Ordering::Relaxed)
    }

    /// When the spawner has ended (killed, or found gone at a request), reaps it and
    /// has the nursery fork a new one; returns the old and the new pid. Any thread
    /// may call it: the new spawner is the nursery's copy, not the caller's. A request
    /// that comes while no spawner lives is cloned by its caller, as before.
    pub fn respawn_if_ended(&self) -> Result<Option<(Pid, Pid)>, SetupError> {
        use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
        let mut live = self
            .live
            .lock()
            .map_err(|_| SetupError::new(Step::Clone, "the spawner's lock is poisoned"))?;
        let old = live.pid;
        // Reaped already when a replacement could not be made last time.
        if !live.reaped {
            match waitpid(old, Some(WaitPidFlag::WNOHANG)) {
                // Alive and answering: nothing to do.
                Ok(WaitStatus::StillAlive) if !self.is_gone() => return Ok(None),
                // Alive but found gone at a request (its socket failed): ended here.
                Ok(WaitStatus::StillAlive) => {
                    let _ = nix::sys::signal::kill(old, nix::sys::signal::Signal::SIGKILL);
                    let _ = waitpid(old, None);
                }
                // Ended, and reaped now.
                _ => {}
            }
            live.reaped = true;
        }
        // Marked gone first: until a new one answers, requests are cloned here.
        self.gone.store(true, Ordering::Relaxed);
        let nursery = self
            .nursery
            .lock()
            .map_err(|_| SetupError::new(Step::Clone, "the nursery's lock is poisoned"))?;
        *live = new_spawner(&nursery)?;
        self.gone.store(false, Ordering::Relaxed);
        Ok(Some((old, live.pid)))
    }

    /// Clones `job`'s sandbox through the spawner (in this process if the spawner is
    /// gone, or for an OCI view, which is never sent).
    pub(crate) fn spawn(&self, job: &Job) -> Result<Spawning, SetupError> {
        if !matches!(job.policy.view, View::Python) || self.gone.load(Ordering::Relaxed) {
            return spawn_job(job);
        }
        match self.ask(job)? {
            Some(answer) => answer,
            None => {
                self.gone.store(true, Ordering::Relaxed);
                spawn_job(job)
            }
        }
    }

    /// One round trip; `Ok(None)` when the spawner is gone.
    fn ask(&self, job: &Job) -> Result<Option<Result<Spawning, SetupError>>, SetupError> {
        let req = Request {
            policy: job.policy,
            args: job.args,
            pump_stdin: job.stdin == StdinMode::Pump,
            adopt: job.adopt,
        };
        let mut buf = serde_json::to_vec(&req).step(Step::Clone, "encode the spawner's request")?;
        buf.push(b'\n');
        buf.extend_from_slice(job.script);
        let live = self
            .live
            .lock()
            .map_err(|_| SetupError::new(Step::Clone, "the spawner's lock is poisoned"))?;
        if sync::send_fds(live.sock.as_fd(), &buf, &job.extra_fds).is_err() {
            return Ok(None);
        }
        // An error or an empty message: the spawner is gone.
        let (reply, fds) = match sync::recv_message::<4>(live.sock.as_fd()) {
            Ok(got) if !got.0.is_empty() => got,
            _ => return Ok(None),
        };
        drop(live);
        let answer: Answer =
            serde_json::from_slice(&reply).step(Step::Clone, "decode the spawner's answer")?;
        for pid in answer.orphans {
            // Ended by the spawner; this process is their parent.
            let _ = nix::sys::wait::waitpid(Pid::from_raw(pid), None);
        }
        Ok(Some(answer.spawned.and_then(|pid| spawning(pid, fds))))
    }
}

/// The supervisor's side of a sandbox the spawner cloned.
fn spawning(pid: i32, fds: Vec<OwnedFd>) -> Result<Spawning, SetupError> {
    let pid = Pid::from_raw(pid);
    let mut fds = fds.into_iter();
    let (Some(chan), Some(stdout), Some(stderr)) = (fds.next(), fds.next(), fds.next()) else {
        super::clone::end(pid);
        return Err(SetupError::new(
            Step::Clone,
            "the spawner's answer lacks the sandbox's descriptors",
        ));
    };
    Ok(Spawning {
        spawned: super::spawn::Spawned {
            pid,
            chan: Channel::from_fd(chan),
        },
        stdout,
        stderr,
        stdin: fds.next(),
    })
}

impl Drop for Spawner {
    fn drop(&mut self) {
        // A clone it was making dies with it: that sandbox's init sees its channel
        // hang up (the spawner held the other end) and ends itself. Both are this
        // process's children (the nursery forks spawners with CLONE_PARENT).
        for live in [self.live.get_mut(), self.nursery.get_mut()]
            .into_iter()
            .flatten()
            .filter(|l| !l.reaped)
        {
            let _ = nix::sys::signal::kill(live.pid, nix::sys::signal::Signal::SIGKILL);
            let _ = nix::sys::wait::waitpid(live.pid, None);
        }
    }
}

/// Forks the nursery: a process that does nothing but fork spawners, each a copy of
/// this process as it was when the nursery was forked (single-threaded, in a server),
/// whatever has happened in this process since. A spawner forked later by the server
/// itself would copy a multithreaded process and its locks.
fn fork_nursery() -> Result<Live, SetupError> {
    let (ours, theirs) = sync::seqpacket_pair().step(Step::Clone, "socketpair for the nursery")?;
    let parent = nix::unistd::getpid();
    // SAFETY: the child only allocates and makes system calls; malloc is consistent
    // after fork (glibc's atfork handlers).
    match unsafe { nix::unistd::fork() }.step(Step::Clone, "fork the nursery")? {
        ForkResult::Child => {
            drop(ours);
            nursery(theirs, parent)
        }
        ForkResult::Parent { child } => Ok(Live {
            sock: ours,
            pid: child,
            reaped: false,
        }),
    }
}

/// The nursery's loop: for each request, a spawner, forked with CLONE_PARENT (the
/// server's child, like the sandboxes it clones), and the server's end of its socket.
fn nursery(sock: OwnedFd, parent: Pid) -> ! {
    die_with(parent);
    loop {
        match sync::recv_message::<1>(sock.as_fd()) {
            Ok(got) if !got.0.is_empty() => {}
            _ => exit(),
        }
        let Ok((ours, theirs)) = sync::seqpacket_pair() else {
            exit()
        };
        // SAFETY: a fork (no CLONE_VM, no new stack: the child runs on its copy of
        // this stack) of this single-threaded process; the child never returns.
        let pid = unsafe {
            libc::syscall(
                libc::SYS_clone,
                (libc::CLONE_PARENT | libc::SIGCHLD) as libc::c_ulong,
                0usize,
                0usize,
                0usize,
                0usize,
            )
        };
        if pid == 0 {
            drop(ours);
            drop(sock);
            serve(theirs, parent)
        }
        let reply = i32::try_from(pid).unwrap_or(-1).to_ne_bytes();
        let attached = [ours.as_fd()];
        let fds: &[BorrowedFd] = if pid > 0 { &attached } else { &[] };
        if sync::send_fds(sock.as_fd(), &reply, fds).is_err() {
            exit()
        }
    }
}

/// A new spawner from the nursery.
fn new_spawner(nursery: &Live) -> Result<Live, SetupError> {
    let asked = sync::send_fds(nursery.sock.as_fd(), b"spawner", &[]);
    asked.step(Step::Clone, "ask the nursery for a spawner")?;
    let (reply, mut fds) =
        sync::recv_message::<1>(nursery.sock.as_fd()).step(Step::Clone, "the nursery's answer")?;
    let pid = <[u8; 4]>::try_from(reply.as_slice()).map(i32::from_ne_bytes);
    match (pid, fds.pop()) {
        (Ok(pid), Some(sock)) if pid > 0 => Ok(Live {
            sock,
            pid: Pid::from_raw(pid),
            reaped: false,
        }),
        _ => Err(SetupError::new(
            Step::Clone,
            "the nursery could not fork a spawner (it ended, or clone failed)",
        )),
    }
}

/// SIGKILL when the thread that forked this process ends; it may have ended already.
fn die_with(parent: Pid) {
    if nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL).is_err()
        || nix::unistd::getppid() != parent
    {
        exit()
    }
}

/// The spawner's loop: one request, one clone, one answer, until the server's end of
/// the socket closes.
fn serve(sock: OwnedFd, parent: Pid) -> ! {
    // Its parent is the server (CLONE_PARENT): the server's thread that forked the
    // nursery is the one whose end it watches.
    die_with(parent);
    super::clone::for_parent();
    loop {
        // An error or an empty message: the server is gone.
        let (buf, fds) = match sync::recv_message::<MAX_EXTRA>(sock.as_fd()) {
            Ok(got) if !got.0.is_empty() => got,
            _ => exit(),
        };
        let made = handle(&buf, &fds);
        drop(fds);
        let answer = Answer {
            spawned: made
                .as_ref()
                .map(|s| s.spawned.pid.as_raw())
                .map_err(Clone::clone),
            orphans: super::clone::take_orphans(),
        };
        let Ok(out) = serde_json::to_vec(&answer) else {
            exit()
        };
        let attached: Vec<BorrowedFd> = match &made {
            Ok(s) => [s.spawned.chan.as_fd(), s.stdout.as_fd(), s.stderr.as_fd()]
                .into_iter()
                .chain(s.stdin.as_ref().map(|f| f.as_fd()))
                .collect(),
            Err(_) => Vec::new(),
        };
        if sync::send_fds(sock.as_fd(), &out, &attached).is_err() {
            exit()
        }
        // This process's copies of the descriptors close here: the server has its own.
    }
}

/// Decodes a request and clones its sandbox.
fn handle(buf: &[u8], fds: &[OwnedFd]) -> Result<Spawning, SetupError> {
    let split = buf.iter().position(|b| *b == b'\n').unwrap_or(buf.len());
    let (head, script) = (&buf[..split], buf.get(split + 1..).unwrap_or_default());
    let r: Received =
        serde_json::from_slice(head).step(Step::Clone, "decode the spawner's request")?;
    let job = Job {
        policy: &r.policy,
        script,
        args: &r.args,
        stdin: match r.pump_stdin {
            true => StdinMode::Pump,
            false => StdinMode::Null,
        },
        extra_fds: fds.iter().map(|f| f.as_fd()).collect(),
        adopt: r.adopt,
        spawner: None,
    };
    spawn_job(&job)
}

fn exit() -> ! {
    // SAFETY: _exit in a forked child: no destructor of the server's state runs.
    unsafe { libc::_exit(0) }
}
