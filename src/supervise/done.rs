//! A warm runner's word that the code has ended (served runs only).
//!
//! The runner of a warm sandbox flushes and closes the code's output, then writes the
//! exit status, one byte, on a pipe of its own and waits to be killed. The run is then
//! over: its usage is read while the runner is still there to be read, and the sandbox
//! is killed, its processes' exit (about 1.2 to 1.5 ms of the kernel tearing down an
//! interpreter's memory on the 2-vCPU VM) left to whoever reaps it, off the request's
//! path. The byte comes from inside the sandbox: code that writes it early only ends
//! its own run, as `os._exit` would; it confines nothing and reports nothing the
//! kernel does not.

use crate::cgroup::RunCgroup;
use crate::engine::sync::ChildUsage;
use std::os::fd::{AsRawFd, OwnedFd};

/// The exit status on the runner's pipe, `None` once it hung up without one (the
/// runner died some other way: the run ends as any other).
pub(super) fn read_status(fd: &OwnedFd) -> Option<i32> {
    let mut b = [0u8; 1];
    match nix::unistd::read(fd.as_raw_fd(), &mut b) {
        Ok(1) => Some(i32::from(b[0])),
        _ => None,
    }
}

/// CPU accounting of the sandbox's processes, from the kernel (`/proc`): what a
/// served run reports as its usage is the difference between two of these.
#[derive(Debug, Clone, Default)]
pub(crate) struct Accounts {
    /// Per process: time on a CPU (ns, schedstat), and user and system clock ticks
    /// of itself and of the children it waited for.
    procs: Vec<(i32, u64, [u64; 4])>,
    maxrss_kb: u64,
}

impl Accounts {
    /// The accounts now; the resident-set peaks only with `rss` (a baseline needs
    /// none, and each is one more `/proc` file to read on the request's path).
    pub(crate) fn read(group: &RunCgroup, rss: bool) -> Accounts {
        let mut a = Accounts::default();
        for pid in group.pids() {
            let run_ns = std::fs::read_to_string(format!("/proc/{pid}/schedstat"))
                .ok()
                .and_then(|s| s.split_whitespace().next()?.parse().ok());
            let ticks = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| stat_ticks(&s));
            if let (Some(ns), Some(t)) = (run_ns, ticks) {
                a.procs.push((pid, ns, t));
            }
            if rss {
                let kb = vm_hwm_kb(&format!("/proc/{pid}/status")).unwrap_or(0);
                a.maxrss_kb = a.maxrss_kb.max(kb);
            }
        }
        a
    }

    /// The code's own usage: CPU time since `before` (an interpreter's start and its
    /// preloads are not the code's), split into user and system time in the
    /// proportion of the kernel's clock ticks (as the kernel splits it for
    /// getrusage); the largest resident set now (VmHWM, what getrusage reports).
    pub fn since(&self, before: &Accounts) -> ChildUsage {
        let (mut run_ns, mut ticks) = (0u64, [0u64; 4]);
        for (pid, ns, t) in &self.procs {
            let old = before.procs.iter().find(|(p, ..)| p == pid);
            run_ns += ns.saturating_sub(old.map_or(0, |o| o.1));
            for (i, v) in t.iter().enumerate() {
                ticks[i] += v.saturating_sub(old.map_or(0, |o| o.2[i]));
            }
        }
        // Children waited for left only ticks (10 ms each) behind.
        let tick_us = 1_000_000
            / nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
                .ok()
                .flatten()
                .filter(|&t| t > 0)
                .unwrap_or(100) as u64;
        let total_us = run_ns / 1000 + (ticks[2] + ticks[3]) * tick_us;
        let (user, system) = (ticks[0] + ticks[2], ticks[1] + ticks[3]);
        let user_us = match user + system {
            0 => total_us,
            all => total_us * user / all,
        };
        ChildUsage {
            user_us,
            system_us: total_us - user_us,
            maxrss_kb: self.maxrss_kb,
        }
    }
}

/// utime, stime, cutime, cstime from a `/proc/PID/stat` line (fields 14 to 17; the
/// command name in parentheses may hold spaces).
fn stat_ticks(stat: &str) -> Option<[u64; 4]> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state is field 3, so field N is f[N - 3].
    let n = |i: usize| f.get(i - 3)?.parse::<i64>().ok().map(|v| v.max(0) as u64);
    Some([n(14)?, n(15)?, n(16)?, n(17)?])
}

fn vm_hwm_kb(status: &str) -> Option<u64> {
    let text = std::fs::read_to_string(status).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_accounts_of_a_process() {
        assert!(vm_hwm_kb("/proc/self/status").unwrap() > 0);
        assert_eq!(vm_hwm_kb("/proc/self/nonexistent"), None);
        let line = "42 (a (b) c) S 1 42 42 0 -1 4194560 100 0 0 0 7 3 2 1 20 0 1 0";
        assert_eq!(stat_ticks(line), Some([7, 3, 2, 1]));
    }

    #[test]
    fn usage_is_the_difference_split_by_ticks() {
        let before = Accounts {
            procs: vec![(10, 5_000_000, [1, 1, 0, 0])],
            maxrss_kb: 100,
        };
        let after = Accounts {
            procs: vec![(10, 9_000_000, [4, 2, 0, 0]), (11, 1_000_000, [0, 0, 0, 0])],
            maxrss_kb: 300,
        };
        let u = after.since(&before);
        // 4 ms more of process 10 and 1 ms of the new process 11, 3 user ticks to 1.
        assert_eq!(u.user_us + u.system_us, 5_000);
        assert_eq!(u.user_us, 3_750);
        assert_eq!(u.maxrss_kb, 300);
    }
}
