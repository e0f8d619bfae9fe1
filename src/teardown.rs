//! What is left of a run on the host once its supervisor is done with it, or dies.
//!
//! A run makes two things on the host besides processes: its cgroup (one directory
//! per hierarchy) and, in allowlist mode, the proxy's socket directory. Neither may
//! outlive the run, however the supervisor ends: a caller that kills `maibox exec`
//! with SIGKILL on its own timeout must not leave them behind.
//!
//! So a cleaner process is forked before either exists, with their paths planned
//! ([`Plan`]). It waits on a pipe for end-of-file, which comes when the supervisor
//! releases it or exits or dies, whatever the way. Meanwhile the supervisor sends it
//! the sandbox init's pid once cloned, which the cleaner holds as a pidfd. After the
//! end-of-file it waits for init to exit (the kernel tears down the sandbox's mount,
//! network and other namespaces then: 0.6–1 ms measured here, which the CLI need not
//! wait for), removes the groups (retrying while they are busy) and the socket
//! directory, and exits. On a supervisor that ended normally and removed them itself
//! it finds nothing to do.
//!
//! The supervisor may have threads (the allowlist proxy, a server's), so the cleaner
//! only makes async-signal-safe calls, on paths prepared before the fork.

use nix::unistd::{ForkResult, Pid};
use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

/// How long the cleaner waits for init to exit before trying anyway, in ms.
const INIT_EXIT_WAIT_MS: i32 = 10_000;
/// How long it retries a group that is still busy: 1000 times 5 ms (a supervisor
/// killed before it could name init leaves the cleaner without a pidfd to wait on).
const RMDIR_RETRIES: u32 = 1000;
const RMDIR_PAUSE_NS: libc::c_long = 5_000_000;

/// What the cleaner removes, named before any of it exists.
#[derive(Debug, Default, Clone)]
pub struct Plan {
    /// The run's cgroups, removed once init has exited.
    pub groups: Vec<PathBuf>,
    /// Files, then directories, removed at the end (the proxy's socket and its
    /// directory).
    pub files: Vec<PathBuf>,
    pub dirs: Vec<PathBuf>,
}

/// The supervisor's handle on its cleaner: dropping it lets the cleaner go on.
pub struct Cleaner {
    pipe: OwnedFd,
    pid: Pid,
}

impl Cleaner {
    /// Names the sandbox's init, whose exit the cleaner waits for.
    pub fn watch(&self, init: Pid) {
        let _ = nix::unistd::write(&self.pipe, &init.as_raw().to_ne_bytes());
    }

    /// The supervisor is done with the run's groups (their final statistics are
    /// read): the cleaner goes on, and ends on its own.
    pub fn release(self) {
        drop(self.pipe);
    }

    /// The supervisor removed everything itself: the cleaner finds nothing to do,
    /// and is reaped here (a caller that lives on must not collect zombies).
    pub fn finish(self) {
        drop(self.pipe);
        let _ = nix::sys::wait::waitpid(self.pid, None);
    }
}

/// Forks the cleaner of `plan`. `None` when it cannot be forked: the run then relies
/// on the next run's sweep of stale groups and socket directories.
pub fn arm(plan: &Plan) -> Option<Cleaner> {
    let c = |paths: &[PathBuf]| -> Vec<CString> {
        paths
            .iter()
            .filter_map(|d| CString::new(d.as_os_str().as_bytes()).ok())
            .collect()
    };
    let (groups, files, dirs) = (c(&plan.groups), c(&plan.files), c(&plan.dirs));
    let (r, w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).ok()?;
    // SAFETY: the child only runs `clean`, which makes async-signal-safe calls on
    // memory prepared above and ends in _exit.
    match unsafe { nix::unistd::fork() } {
        Ok(ForkResult::Child) => {
            drop(w);
            clean(r, &groups, &files, &dirs)
        }
        Ok(ForkResult::Parent { child }) => Some(Cleaner {
            pipe: w,
            pid: child,
        }),
        Err(e) => {
            tracing::debug!(%e, "fork the cleaner; a killed supervisor's groups wait for the next run");
            None
        }
    }
}

fn clean(pipe: OwnedFd, groups: &[CString], files: &[CString], dirs: &[CString]) -> ! {
    keep_only(pipe.as_raw_fd());
    // SAFETY: setsid, read, pidfd_open, poll, rmdir, unlink, nanosleep and _exit are
    // async-signal-safe and get valid pointers to this process's memory.
    unsafe {
        // Out of the caller's session: a Ctrl-C meant for the next command is not ours.
        libc::setsid();
        let pidfd = read_until_eof(0);
        if let Some(fd) = pidfd {
            let mut p = libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            };
            libc::poll(&mut p, 1, INIT_EXIT_WAIT_MS);
        }
        for g in groups {
            remove_group(g);
        }
        for f in files {
            libc::unlink(f.as_ptr());
        }
        for d in dirs {
            libc::rmdir(d.as_ptr());
        }
        libc::_exit(0)
    }
}

/// Leaves the cleaner with the pipe as fd 0 and nothing else: not the caller's stdio
/// (a caller reading our output to its end would wait for the cleaner), not the
/// audit log's lock, not the sandbox's pipes or channel.
fn keep_only(pipe: RawFd) {
    // SAFETY: fcntl/dup2/close_range on fds of this process only.
    unsafe {
        // Out of the way first, in case it already is 0.
        let r = libc::fcntl(pipe, libc::F_DUPFD, 10);
        libc::dup2(r, 0);
        if libc::syscall(libc::SYS_close_range, 1u32, u32::MAX, 0u32) != 0 {
            for fd in 1..1024 {
                libc::close(fd);
            }
        }
    }
}

/// Reads `fd` to its end-of-file (or an error other than EINTR, which the blocked
/// signals make rare). Returns a pidfd for the init pid the supervisor sent, if any
/// (`None` on kernels before 5.3, where the removal relies on its retries alone).
unsafe fn read_until_eof(fd: RawFd) -> Option<RawFd> {
    let mut pid = [0u8; 4];
    let mut have = 0usize;
    let mut pidfd = None;
    let mut b = [0u8; 16];
    loop {
        let n = libc::read(fd, b.as_mut_ptr().cast(), b.len());
        if n == 0 || (n < 0 && *libc::__errno_location() != libc::EINTR) {
            return pidfd;
        }
        for byte in b.iter().take(n.max(0) as usize) {
            if have < 4 {
                pid[have] = *byte;
                have += 1;
                if have == 4 {
                    let p = i32::from_ne_bytes(pid);
                    let fd = libc::syscall(libc::SYS_pidfd_open, p, 0);
                    pidfd = (fd >= 0).then_some(fd as RawFd);
                }
            }
        }
    }
}

unsafe fn remove_group(dir: &CString) {
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
