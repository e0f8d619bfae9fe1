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
//! The spawner is forked once, by the server's main thread, before any other thread
//! exists. It receives each sandbox's policy, script, arguments and descriptors over
//! a socket, makes the run's pipes and payload, clones the sandbox with CLONE_PARENT
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
    sock: Mutex<OwnedFd>,
    pid: Pid,
    /// The spawner ended (it never does while the server lives, unless killed):
    /// sandboxes are then cloned in this process, as without a spawner.
    gone: AtomicBool,
}

impl std::fmt::Debug for Spawner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Spawner(pid {})", self.pid)
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
    /// Forks the spawner. Call it from the thread that outlives every sandbox it will
    /// make (a server's main thread), best before any other thread starts: a
    /// sandbox's init dies with the thread that forked the spawner.
    pub fn start() -> Result<Spawner, SetupError> {
        let (ours, theirs) =
            sync::seqpacket_pair().step(Step::Clone, "socketpair for the spawner")?;
        let parent = nix::unistd::getpid();
        // SAFETY: the child only allocates and makes system calls (the engine's
        // cloning code); malloc is consistent after fork (glibc's atfork handlers).
        match unsafe { nix::unistd::fork() }.step(Step::Clone, "fork the spawner")? {
            ForkResult::Child => {
                drop(ours);
                serve(theirs, parent)
            }
            ForkResult::Parent { child } => Ok(Spawner {
                sock: Mutex::new(ours),
                pid: child,
                gone: AtomicBool::new(false),
            }),
        }
    }

    /// The spawner's pid.
    pub fn pid(&self) -> Pid {
        self.pid
    }

    /// The spawner ended (found at a request): sandboxes are cloned by the caller.
    pub fn is_gone(&self) -> bool {
        self.gone.load(Ordering::Relaxed)
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
        let sock = self
            .sock
            .lock()
            .map_err(|_| SetupError::new(Step::Clone, "the spawner's socket lock is poisoned"))?;
        if sync::send_fds(sock.as_fd(), &buf, &job.extra_fds).is_err() {
            return Ok(None);
        }
        // An error or an empty message: the spawner is gone.
        let (reply, fds) = match sync::recv_message::<4>(sock.as_fd()) {
            Ok(got) if !got.0.is_empty() => got,
            _ => return Ok(None),
        };
        drop(sock);
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
        // hang up (the spawner held the other end) and ends itself.
        let _ = nix::sys::signal::kill(self.pid, nix::sys::signal::Signal::SIGKILL);
        let _ = nix::sys::wait::waitpid(self.pid, None);
    }
}

/// The spawner's loop: one request, one clone, one answer, until the server's end of
/// the socket closes.
fn serve(sock: OwnedFd, parent: Pid) -> ! {
    // SIGKILL when the thread that forked it ends; it may have ended already.
    if nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL).is_err()
        || nix::unistd::getppid() != parent
    {
        exit()
    }
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
