//! The sandbox's first process, cloned into its new namespaces, from any caller.
//!
//! clone(2) copies the caller's memory, and with it every lock. From a single-threaded
//! caller (the command line) that is safe. From a multithreaded one (a server, a
//! program that embeds maibox) a lock that another thread held at that instant stays
//! held in the child for good, malloc's among them, and the child allocates while it
//! builds the sandbox. glibc's fork() takes and resets its own locks around the copy
//! (its atfork handlers); a raw clone does not. So a multithreaded caller forks first:
//! the fork's child is single-threaded, clones the sandbox with CLONE_PARENT (the
//! sandbox is then still the caller's child: the caller waits for it, and its death is
//! what PR_SET_PDEATHSIG watches), sends the sandbox's pid back and exits.
//!
//! What the child runs must not take any lock of this process other than malloc's (no
//! stdio or tracing locks): the engine's child code only makes system calls and
//! allocates.

use nix::errno::Errno;
use nix::sched::setns;
use nix::sched::{CloneCb, CloneFlags};
use nix::unistd::{ForkResult, Pid};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Set in a server's spawner process (see [`super::spawner`]): it clones sandboxes
/// for its parent, which must be their parent too.
static FOR_PARENT: AtomicBool = AtomicBool::new(false);
/// Sandboxes the spawner ended after a failed setup step: its parent reaps them.
static ORPHANS: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// From now on this process clones sandboxes as its parent's children
/// (CLONE_PARENT). Only a spawner, single-threaded, calls this.
pub(crate) fn for_parent() {
    FOR_PARENT.store(true, Ordering::Relaxed);
}

/// Ends a sandbox (its setup failed, or it is done with) and reaps it when it is
/// this process's child; a spawner's clone is noted for its parent to reap instead.
pub(crate) fn end(pid: Pid) {
    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
    if !FOR_PARENT.load(Ordering::Relaxed) {
        let _ = nix::sys::wait::waitpid(pid, None);
    } else if let Ok(mut o) = ORPHANS.lock() {
        o.push(pid.as_raw());
    }
}

/// The spawner's ended clones since the last call (see [`end`]).
pub(crate) fn take_orphans() -> Vec<i32> {
    ORPHANS
        .lock()
        .map(|mut o| std::mem::take(&mut *o))
        .unwrap_or_default()
}

/// Clones `cb` into a new process with `flags`; the caller is its parent either way.
/// With `pid_ns`, the new process is made in that existing PID namespace (an OCI
/// spec's `linux.namespaces[].path` for `pid`): setns(CLONE_NEWPID) moves only
/// the caller's future children, so the namespace is entered right before the
/// clone, by the thread that clones, and left right after.
pub(crate) fn clone_sandbox(
    cb: CloneCb,
    stack: &mut [u8],
    flags: CloneFlags,
    pid_ns: Option<BorrowedFd>,
) -> Result<Pid, Errno> {
    if threads() <= 1 {
        let flags = match FOR_PARENT.load(Ordering::Relaxed) {
            true => flags | CloneFlags::CLONE_PARENT,
            false => flags,
        };
        return match pid_ns {
            Some(ns) => clone_in_pid_ns(cb, stack, flags, ns),
            // SAFETY: single-threaded: the child's copy of the address space has no
            // locks held by another thread.
            None => unsafe { nix::sched::clone(cb, stack, flags, Some(libc::SIGCHLD)) },
        };
    }
    let (r, w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
    // SAFETY: the child only clones, writes to a pipe and _exits; malloc, which the
    // clone's child uses, was made consistent by fork's atfork handlers.
    match unsafe { nix::unistd::fork() }? {
        ForkResult::Child => {
            drop(r);
            let flags = flags | CloneFlags::CLONE_PARENT;
            // This process _exits next: it need not leave the namespace.
            let joined = pid_ns.map_or(Ok(()), |ns| setns(ns, CloneFlags::CLONE_NEWPID));
            // SAFETY: this process is single-threaded.
            let res = joined
                .and_then(|()| unsafe { nix::sched::clone(cb, stack, flags, Some(libc::SIGCHLD)) });
            let v = match res {
                Ok(p) => p.as_raw(),
                Err(e) => -(e as i32),
            };
            let _ = nix::unistd::write(&w, &v.to_ne_bytes());
            // SAFETY: _exit in a forked child; no destructors of the parent's state run.
            unsafe { libc::_exit(0) }
        }
        ForkResult::Parent { child } => {
            drop(w);
            let v = read_i32(r.as_raw_fd());
            let _ = nix::sys::wait::waitpid(child, None);
            match v {
                Some(v) if v > 0 => Ok(Pid::from_raw(v)),
                Some(v) if v < 0 => Err(Errno::from_raw(-v)),
                _ => Err(Errno::ECHILD),
            }
        }
    }
}

/// A single-threaded caller's clone into the PID namespace `ns`. The caller's
/// own namespace for children is restored afterwards, or the clone undone: a
/// later child of the runtime (a hook) must never start in the container's
/// namespace.
fn clone_in_pid_ns(
    cb: CloneCb,
    stack: &mut [u8],
    flags: CloneFlags,
    ns: BorrowedFd,
) -> Result<Pid, Errno> {
    let own = nix::fcntl::open(
        "/proc/thread-self/ns/pid_for_children",
        nix::fcntl::OFlag::O_RDONLY | nix::fcntl::OFlag::O_CLOEXEC,
        nix::sys::stat::Mode::empty(),
    )?;
    // SAFETY: a fresh descriptor that nothing else owns.
    let own = unsafe { OwnedFd::from_raw_fd(own) };
    setns(ns, CloneFlags::CLONE_NEWPID)?;
    // SAFETY: single-threaded (checked by the caller).
    let res = unsafe { nix::sched::clone(cb, stack, flags, Some(libc::SIGCHLD)) };
    if let Err(e) = setns(own.as_fd(), CloneFlags::CLONE_NEWPID) {
        if let Ok(pid) = res {
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
            let _ = nix::sys::wait::waitpid(pid, None);
        }
        return Err(e);
    }
    res
}

fn read_i32(fd: i32) -> Option<i32> {
    let mut b = [0u8; 4];
    loop {
        // SAFETY: reads into a local buffer of its length.
        let n = unsafe { libc::read(fd, b.as_mut_ptr().cast(), b.len()) };
        if n == 4 {
            return Some(i32::from_ne_bytes(b));
        }
        if n < 0 && Errno::last() == Errno::EINTR {
            continue;
        }
        return None;
    }
}

/// The number of threads of this process (`/proc/self/stat`, field 20). When it
/// cannot be read, more than one is assumed: the fork costs little, a lost lock a hang.
pub(crate) fn threads() -> usize {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return usize::MAX;
    };
    // The command name (field 2) may hold spaces and parentheses: count from its end.
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().nth(17))
        .and_then(|n| n.parse().ok())
        .unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_this_process_threads() {
        // The test harness runs tests outside the main thread: at least two here.
        assert!((2..usize::MAX).contains(&threads()), "{}", threads());
        // A fork's child is single-threaded.
        // SAFETY: the child only reads a proc file and _exits.
        match unsafe { nix::unistd::fork() }.unwrap() {
            ForkResult::Child => unsafe { libc::_exit(threads().min(100) as i32) },
            ForkResult::Parent { child } => {
                let st = nix::sys::wait::waitpid(child, None).unwrap();
                assert_eq!(st, nix::sys::wait::WaitStatus::Exited(child, 1));
            }
        }
    }
}
