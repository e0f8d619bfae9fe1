//! Naming the syscall behind a seccomp violation.
//!
//! A process killed by `SECCOMP_RET_KILL_PROCESS` dies with SIGSYS, and the kernel
//! puts the syscall number only in the dying process's own siginfo (or in the
//! audit log, which an unprivileged supervisor cannot read). So calls that must
//! end the run return `SECCOMP_RET_USER_NOTIF` instead: the payload hands the
//! filter's listener fd to the supervisor, which reads each notification (syscall
//! number and arch), records the call by name, kills the sandbox, and answers the
//! call with EPERM so that it never runs. In `--audit-syscalls` mode every denied
//! call is routed the same way and answered with EPERM, so the report can list
//! what the code tried.
//!
//! The kernel never lets a notified call proceed unless the listener answers with
//! SECCOMP_USER_NOTIF_FLAG_CONTINUE, which maibox never does; if the listener is
//! gone (the supervisor died), notified calls fail with ENOSYS, and the sandbox
//! dies anyway through PDEATHSIG.
//!
//! Hand-written ioctls: neither seccompiler nor nix wraps the notification API, and
//! the libseccomp bindings would add a C library for three calls.

use std::collections::BTreeSet;
use std::os::fd::{AsRawFd, BorrowedFd};

use seccompiler::{sock_filter, BpfProgram};

use super::profile::{DenyAction, SeccompProfile};
pub(crate) use super::raw::RET_USER_NOTIF;
use super::raw::{BPF_RET_K, RET_EPERM, RET_KILL_PROCESS};
use super::syscalls;

/// Which denials go to the supervisor instead of being decided in the kernel.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Notify {
    /// Calls that end the run (kill list, `default_action: kill`).
    pub kills: bool,
    /// Calls that fail with EPERM (`--audit-syscalls`).
    pub denials: bool,
}

/// Rewrites the return instructions of `prog` (from index `from` on) so that the
/// chosen denials notify the supervisor. Returns true when any return was changed,
/// i.e. when the filter needs a listener.
pub fn route(prog: &mut BpfProgram, from: usize, n: Notify) -> bool {
    let mut any = false;
    for ins in prog.iter_mut().skip(from) {
        if ins.code != BPF_RET_K {
            continue;
        }
        if (n.kills && ins.k == RET_KILL_PROCESS) || (n.denials && ins.k == RET_EPERM) {
            *ins = sock_filter {
                code: BPF_RET_K,
                jt: 0,
                jf: 0,
                k: RET_USER_NOTIF,
            };
            any = true;
        }
    }
    any
}

/// Does `prog` contain a user-notification return (and so need a listener)?
pub fn needs_listener(prog: &BpfProgram) -> bool {
    prog.iter()
        .any(|i| i.code == BPF_RET_K && i.k == RET_USER_NOTIF)
}

/// What the supervisor does with a notified call: the same decision the kernel
/// would have made without notifications.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classifier {
    kill: BTreeSet<i64>,
    eperm: BTreeSet<i64>,
    default_kill: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// End the run: the call is on the kill list.
    Kill,
    /// Fail the call with EPERM and let the code go on.
    Deny,
}

impl Classifier {
    pub fn new(p: &SeccompProfile) -> Self {
        let nrs = |names: &[String]| names.iter().filter_map(|n| syscalls::number(n)).collect();
        Self {
            kill: nrs(&p.kill_on),
            eperm: nrs(&p.deny),
            default_kill: p.default_action == DenyAction::Kill,
        }
    }

    pub fn decide(&self, nr: i64) -> Decision {
        if self.kill.contains(&nr) {
            Decision::Kill
        } else if self.eperm.contains(&nr) || !self.default_kill {
            Decision::Deny
        } else {
            Decision::Kill
        }
    }
}

/// One notified syscall.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Notification {
    pub id: u64,
    /// The caller's thread id, in the supervisor's pid namespace.
    pub pid: u32,
    pub nr: i64,
}

impl Notification {
    pub fn name(&self) -> String {
        syscalls::name(self.nr)
            .map(str::to_string)
            .unwrap_or_else(|| format!("syscall_{}", self.nr))
    }
}

/// Reads one pending notification. `Ok(None)` when the call it was for is already
/// gone (its caller was killed): the kernel then reports ENOENT.
pub fn receive(listener: BorrowedFd) -> std::io::Result<Option<Notification>> {
    // SAFETY: seccomp_notif is plain old data; the kernel requires it zeroed.
    let mut n: libc::seccomp_notif = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `n` is a valid, writable seccomp_notif for the ioctl.
        let rc = unsafe {
            libc::ioctl(
                listener.as_raw_fd(),
                libc::SECCOMP_IOCTL_NOTIF_RECV,
                &mut n as *mut libc::seccomp_notif,
            )
        };
        if rc == 0 {
            return Ok(Some(Notification {
                id: n.id,
                pid: n.pid,
                nr: n.data.nr as i64,
            }));
        }
        let e = std::io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::ENOENT) => return Ok(None),
            _ => return Err(e),
        }
    }
}

/// Answers a notified call with `-errno`: the call fails and never runs.
pub fn fail_call(listener: BorrowedFd, id: u64, errno: i32) -> std::io::Result<()> {
    let resp = libc::seccomp_notif_resp {
        id,
        val: 0,
        error: -errno,
        flags: 0,
    };
    // SAFETY: `resp` is a valid seccomp_notif_resp for the ioctl.
    let rc = unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_SEND,
            &resp as *const libc::seccomp_notif_resp,
        )
    };
    if rc == 0 {
        return Ok(());
    }
    let e = std::io::Error::last_os_error();
    // ENOENT: the caller died meanwhile (e.g. the sandbox was just killed).
    if e.raw_os_error() == Some(libc::ENOENT) {
        return Ok(());
    }
    Err(e)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::confine::{build_filter, build_filter_notify, NetAccess};

    fn rets(prog: &BpfProgram, k: u32) -> usize {
        prog.iter()
            .filter(|i| i.code == BPF_RET_K && i.k == k)
            .count()
    }

    #[test]
    fn routing_moves_only_the_chosen_returns() {
        let p = SeccompProfile::untrusted();
        let plain = build_filter(&p, NetAccess::Loopback).unwrap();
        assert!(!needs_listener(&plain));
        let kills = build_filter_notify(
            &p,
            NetAccess::Loopback,
            Notify {
                kills: true,
                denials: false,
            },
        )
        .unwrap();
        assert!(needs_listener(&kills));
        assert_eq!(plain.len(), kills.len());
        // The arch and x32 checks still kill in the kernel; every kill_on entry notifies.
        assert_eq!(rets(&kills, RET_KILL_PROCESS), 2);
        assert!(rets(&kills, RET_USER_NOTIF) >= p.kill_on.len());
        assert_eq!(rets(&kills, RET_EPERM), rets(&plain, RET_EPERM));
        let all = build_filter_notify(
            &p,
            NetAccess::Loopback,
            Notify {
                kills: true,
                denials: true,
            },
        )
        .unwrap();
        assert_eq!(rets(&all, RET_EPERM), 0);
        // clone3's ENOSYS is compatibility, not a denial: never routed.
        assert_eq!(rets(&all, 0x0005_0000 | libc::ENOSYS as u32), 1);
    }

    #[test]
    fn classifier_makes_the_kernels_decision() {
        let nr = |n| syscalls::number(n).unwrap();
        let c = Classifier::new(&SeccompProfile::untrusted());
        assert_eq!(c.decide(nr("ptrace")), Decision::Kill);
        assert_eq!(c.decide(nr("memfd_create")), Decision::Deny);
        let mut p = SeccompProfile::unknown();
        p.default_action = DenyAction::Kill;
        p.deny = vec!["memfd_create".into()];
        let c = Classifier::new(&p);
        assert_eq!(c.decide(nr("memfd_create")), Decision::Deny);
        assert_eq!(c.decide(nr("mount")), Decision::Kill);
    }
}
