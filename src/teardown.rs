//! The end of a run that the caller need not wait for.
//!
//! When the payload has ended, init has already sent SIGKILL to everything else in
//! the sandbox, and the run's output is complete. What remains is init's own exit,
//! in which the kernel tears down the sandbox's mount, network and other
//! namespaces, and then removing the run's cgroup, which cannot go before init
//! does. Measured here, those two took 0.6–1 ms of every `maibox exec`.
//!
//! A cleaner process takes them over. It is forked while the code runs, when the
//! supervisor would be waiting anyway. It waits for the supervisor to be done with
//! the cgroup (end-of-file on a pipe: the supervisor releases it, exits or dies),
//! then for init to exit (a pidfd), then removes the groups. Should it fail, the
//! next run's stale-group sweep removes them, as after a supervisor killed with
//! SIGKILL.
//!
//! The supervisor may have a thread then (the allowlist proxy), so the cleaner
//! only makes async-signal-safe calls, on paths prepared before the fork.

use nix::unistd::{ForkResult, Pid};
use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

/// How long the cleaner waits for init to exit before trying anyway, in ms.
const INIT_EXIT_WAIT_MS: i32 = 10_000;
/// How long it retries a group that is still busy: 400 times 5 ms.
const RMDIR_RETRIES: u32 = 400;
const RMDIR_PAUSE_NS: libc::c_long = 5_000_000;

/// The supervisor's handle on its cleaner: dropping it lets the cleaner go on.
pub struct Cleaner {
    release: OwnedFd,
}

impl Cleaner {
    /// The supervisor is done with the groups (their final statistics are read).
    pub fn release(self) {
        drop(self.release);
    }
}

/// Forks the cleaner of `dirs`, the groups of the sandbox whose init is `init`.
/// `None` when it cannot be forked: the caller then removes the groups itself.
pub fn arm(init: Pid, dirs: Vec<PathBuf>) -> Option<Cleaner> {
    let dirs: Vec<CString> = dirs
        .iter()
        .filter_map(|d| CString::new(d.as_os_str().as_bytes()).ok())
        .collect();
    let (r, w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).ok()?;
    // SAFETY: the child only runs `clean`, which makes async-signal-safe calls on
    // memory prepared above and ends in _exit.
    match unsafe { nix::unistd::fork() } {
        Ok(ForkResult::Child) => {
            drop(w);
            clean(r, init, &dirs)
        }
        Ok(ForkResult::Parent { .. }) => Some(Cleaner { release: w }),
        Err(e) => {
            tracing::debug!(%e, "fork the cleaner; the run's groups are removed inline");
            None
        }
    }
}

fn clean(release: OwnedFd, init: Pid, dirs: &[CString]) -> ! {
    let pidfd = pidfd_open(init);
    keep_only(release.as_raw_fd(), pidfd);
    // SAFETY: setsid, read, poll, rmdir, nanosleep and _exit are async-signal-safe
    // and get valid pointers to this process's memory.
    unsafe {
        // Out of the caller's session: a Ctrl-C meant for the next command is not ours.
        libc::setsid();
        wait_eof(0);
        if pidfd.is_some() {
            let mut p = libc::pollfd {
                fd: 1,
                events: libc::POLLIN,
                revents: 0,
            };
            libc::poll(&mut p, 1, INIT_EXIT_WAIT_MS);
        }
        for d in dirs {
            remove(d);
        }
        libc::_exit(0)
    }
}

/// nix 0.29 has no pidfd_open. `None` on kernels before 5.3, where the removal
/// relies on its retries alone.
fn pidfd_open(pid: Pid) -> Option<RawFd> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid.as_raw(), 0) };
    (fd >= 0).then_some(fd as RawFd)
}

/// Leaves the cleaner with the release pipe as fd 0 and the pidfd as fd 1, and
/// nothing else: not the caller's stdio (a caller reading our output to its end
/// would wait for the cleaner), not the audit log's lock, not the sandbox's pipes.
fn keep_only(release: RawFd, pidfd: Option<RawFd>) {
    // Out of the way first, in case either already is 0 or 1.
    // SAFETY: fcntl/dup2/close_range on fds of this process only.
    unsafe {
        let r = libc::fcntl(release, libc::F_DUPFD, 10);
        let p = pidfd.map(|p| libc::fcntl(p, libc::F_DUPFD, 10));
        libc::dup2(r, 0);
        match p {
            Some(p) => libc::dup2(p, 1),
            None => libc::close(1),
        };
        if libc::syscall(libc::SYS_close_range, 2u32, u32::MAX, 0u32) != 0 {
            for fd in 2..1024 {
                libc::close(fd);
            }
        }
    }
}

/// Returns at end-of-file or on an error other than EINTR (which the blocked
/// signals make rare).
unsafe fn wait_eof(fd: RawFd) {
    let mut b = [0u8; 16];
    loop {
        let n = libc::read(fd, b.as_mut_ptr().cast(), b.len());
        if n == 0 || (n < 0 && *libc::__errno_location() != libc::EINTR) {
            return;
        }
    }
}

unsafe fn remove(dir: &CString) {
    let pause = libc::timespec {
        tv_sec: 0,
        tv_nsec: RMDIR_PAUSE_NS,
    };
    for _ in 0..RMDIR_RETRIES {
        if libc::rmdir(dir.as_ptr()) == 0 || *libc::__errno_location() != libc::EBUSY {
            return;
        }
        libc::nanosleep(&pause, std::ptr::null_mut());
    }
}
