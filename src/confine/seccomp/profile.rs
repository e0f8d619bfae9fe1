//! maibox's seccomp profile for CPython and its standard library: the settings
//! of a trust level ([`SeccompProfile`]), the allowlist, the calls never
//! allowed, and the checks that refuse a bad profile at load time.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::syscalls;
use crate::confine::ConfineError;

/// What a syscall outside the allowlist gets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DenyAction {
    /// The call fails with EPERM; Python turns that into `PermissionError`, which
    /// well-written code already handles (e.g. probing for a feature).
    #[default]
    Errno,
    /// The whole process is killed with SIGSYS (SECCOMP_RET_KILL_PROCESS), which the
    /// supervisor reports as a seccomp violation.
    Kill,
}

/// One trust level's seccomp settings (the `seccomp:` block of a trust level in
/// `config/sandbox.yaml`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SeccompProfile {
    /// Action for every syscall not allowed.
    #[serde(default)]
    pub default_action: DenyAction,
    /// Syscalls that kill the process instead of failing with EPERM, for calls
    /// that only an exploit would make.
    #[serde(default)]
    pub kill_on: Vec<String>,
    /// Syscalls added to the base allowlist (never one of [`NEVER_ALLOW`]).
    #[serde(default)]
    pub extra_allow: Vec<String>,
    /// Syscalls removed from the base allowlist; they fail with EPERM even when
    /// `default_action` is `kill`.
    #[serde(default)]
    pub deny: Vec<String>,
    /// Route every denied call through the supervisor, which answers EPERM and lists
    /// the calls in the report (`maibox exec --audit-syscalls`). A diagnostic: each
    /// denied call then costs a round trip to the supervisor.
    #[serde(default)]
    pub audit_denials: bool,
}

impl SeccompProfile {
    /// Preset for `untrusted`: EPERM by default, and the calls that are only ever
    /// useful to an exploit (kernel-memory, other-process and kernel-loading
    /// primitives) kill the process so the report shows the attempt.
    pub fn untrusted() -> Self {
        Self {
            default_action: DenyAction::Errno,
            kill_on: [
                "ptrace",
                "process_vm_readv",
                "process_vm_writev",
                "pidfd_getfd",
                "bpf",
                "perf_event_open",
                "userfaultfd",
                "io_uring_setup",
                "io_uring_enter",
                "io_uring_register",
                "kexec_load",
                "kexec_file_load",
                "init_module",
                "finit_module",
                "delete_module",
                "open_by_handle_at",
                "keyctl",
                "add_key",
                "request_key",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
            extra_allow: Vec::new(),
            deny: Vec::new(),
            audit_denials: false,
        }
    }

    /// Preset for `unknown`: the same allowlist, EPERM for everything else (no
    /// kills, so code that probes for features degrades instead of dying).
    pub fn unknown() -> Self {
        Self::default()
    }

    /// Preset for `trusted`: adds System V IPC (used by some scientific packages
    /// for shared memory), inotify (file watchers) and splice/tee
    /// (`os.splice`), none of which the stdlib itself needs.
    pub fn trusted() -> Self {
        Self {
            extra_allow: [
                "shmget",
                "shmat",
                "shmdt",
                "shmctl",
                "semget",
                "semop",
                "semtimedop",
                "semctl",
                "inotify_init",
                "inotify_init1",
                "inotify_add_watch",
                "inotify_rm_watch",
                "splice",
                "tee",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
            ..Self::default()
        }
    }
}

/// Which socket families `socket()` accepts.
///
/// AF_UNIX is always allowed (multiprocessing, asyncio's self-pipe, socketpair).
/// `Loopback` and `Inet` both allow AF_INET/AF_INET6 stream and datagram sockets:
/// seccomp sees only the call's arguments, not the address a socket will use, so
/// whether only `lo` is reachable is decided by the network namespace (and by
/// Landlock's TCP port rules on ABI >= 4), not here. `None` refuses AF_INET/6
/// outright, so even a namespace misconfiguration cannot give network access.
/// Never allowed in any mode: AF_NETLINK, AF_PACKET, AF_VSOCK, AF_ALG (and every
/// other family), SOCK_RAW, and any protocol other than 0/TCP/UDP (so no
/// IPPROTO_MPTCP, IPPROTO_SCTP, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NetAccess {
    None,
    Loopback,
    Inet,
}

/// The syscalls CPython 3.11/3.12 and its standard library need. Names absent
/// from the native table (e.g. `open` on aarch64) are skipped when building.
/// `clone`, `socket`, `socketpair`, `ioctl` and `personality` are allowed only
/// with argument checks (see `arg_rules`).
pub const BASE_ALLOW: &[&str] = &[
    // files and directories
    "read",
    "write",
    "readv",
    "writev",
    "pread64",
    "pwrite64",
    "preadv",
    "pwritev",
    "preadv2",
    "pwritev2",
    "open",
    "openat",
    "openat2",
    "creat",
    "close",
    "close_range",
    "lseek",
    "stat",
    "fstat",
    "lstat",
    "newfstatat",
    "statx",
    "statfs",
    "fstatfs",
    "access",
    "faccessat",
    "faccessat2",
    "readlink",
    "readlinkat",
    "getdents",
    "getdents64",
    "mkdir",
    "mkdirat",
    "rmdir",
    "unlink",
    "unlinkat",
    "rename",
    "renameat",
    "renameat2",
    "link",
    "linkat",
    "symlink",
    "symlinkat",
    "chmod",
    "fchmod",
    "fchmodat",
    "fchmodat2",
    "chown",
    "fchown",
    "lchown",
    "fchownat",
    "truncate",
    "ftruncate",
    "fallocate",
    "fsync",
    "fdatasync",
    "flock",
    "fcntl",
    "dup",
    "dup2",
    "dup3",
    "pipe",
    "pipe2",
    "umask",
    "chdir",
    "fchdir",
    "getcwd",
    "utime",
    "utimes",
    "utimensat",
    "futimesat",
    "mknod",
    "mknodat",
    "sendfile",
    "copy_file_range",
    "fadvise64",
    "getxattr",
    "lgetxattr",
    "fgetxattr",
    "listxattr",
    "llistxattr",
    "flistxattr",
    "setxattr",
    "lsetxattr",
    "fsetxattr",
    "removexattr",
    "lremovexattr",
    "fremovexattr",
    // memory
    "brk",
    "mmap",
    "munmap",
    "mremap",
    "mprotect",
    "madvise",
    "msync",
    "mincore",
    "mseal",
    "map_shadow_stack",
    // processes and threads
    "exit",
    "exit_group",
    "fork",
    "vfork",
    "execve",
    "wait4",
    "waitid",
    "getpid",
    "getppid",
    "gettid",
    "getuid",
    "geteuid",
    "getgid",
    "getegid",
    "getgroups",
    "getresuid",
    "getresgid",
    "getpgid",
    "getpgrp",
    "getsid",
    "setsid",
    "setpgid",
    "getpriority",
    "setpriority",
    "getrlimit",
    "setrlimit",
    "prlimit64",
    "getrusage",
    "times",
    "uname",
    "sysinfo",
    "set_tid_address",
    "set_robust_list",
    "futex",
    "rseq",
    "arch_prctl",
    "prctl",
    "capget",
    "sched_yield",
    "sched_getaffinity",
    "sched_setaffinity",
    "sched_getparam",
    "sched_setparam",
    "sched_getscheduler",
    "sched_setscheduler",
    "sched_get_priority_max",
    "sched_get_priority_min",
    "sched_rr_get_interval",
    "getcpu",
    "getrandom",
    "pidfd_open",
    "pidfd_send_signal",
    "restart_syscall",
    // signals
    "rt_sigaction",
    "rt_sigprocmask",
    "rt_sigreturn",
    "rt_sigpending",
    "rt_sigtimedwait",
    "rt_sigsuspend",
    "sigaltstack",
    "kill",
    "tgkill",
    "tkill",
    "alarm",
    "pause",
    "signalfd",
    "signalfd4",
    // time
    "clock_gettime",
    "clock_getres",
    "clock_nanosleep",
    "nanosleep",
    "gettimeofday",
    "time",
    "getitimer",
    "setitimer",
    "timer_create",
    "timer_settime",
    "timer_gettime",
    "timer_getoverrun",
    "timer_delete",
    "timerfd_create",
    "timerfd_settime",
    "timerfd_gettime",
    // polling and event fds
    "poll",
    "ppoll",
    "select",
    "pselect6",
    "epoll_create",
    "epoll_create1",
    "epoll_ctl",
    "epoll_wait",
    "epoll_pwait",
    "epoll_pwait2",
    "eventfd",
    "eventfd2",
    // sockets (socket/socketpair themselves are argument-checked)
    "bind",
    "listen",
    "accept",
    "accept4",
    "connect",
    "getsockname",
    "getpeername",
    "sendto",
    "recvfrom",
    "sendmsg",
    "recvmsg",
    "sendmmsg",
    "recvmmsg",
    "shutdown",
    "setsockopt",
    "getsockopt",
];

/// Syscalls allowed only when their arguments pass the checks of `arg_rules`.
pub const ARG_CHECKED: &[&str] = &["clone", "socket", "socketpair", "ioctl", "personality"];

/// Syscalls that no profile may allow, with the reason given in the error.
pub const NEVER_ALLOW: &[(&str, &str)] = &[
    ("mount", "changes the mount table"),
    ("umount2", "changes the mount table"),
    ("pivot_root", "changes the root"),
    ("chroot", "changes the root"),
    ("fsopen", "new mount API"),
    ("fsconfig", "new mount API"),
    ("fsmount", "new mount API"),
    ("fspick", "new mount API"),
    ("move_mount", "new mount API"),
    ("open_tree", "new mount API"),
    ("open_tree_attr", "new mount API"),
    ("mount_setattr", "new mount API"),
    ("setns", "joins namespaces"),
    ("unshare", "creates namespaces"),
    (
        "clone3",
        "its flags live in memory seccomp cannot inspect; it gets ENOSYS",
    ),
    ("ptrace", "reads and writes other processes"),
    ("process_vm_readv", "reads other processes' memory"),
    ("process_vm_writev", "writes other processes' memory"),
    ("pidfd_getfd", "steals other processes' file descriptors"),
    ("kcmp", "inspects other processes' kernel state"),
    ("bpf", "kernel attack surface"),
    ("perf_event_open", "kernel attack surface and side channels"),
    ("userfaultfd", "makes kernel races easy to win"),
    (
        "io_uring_setup",
        "kernel attack surface that bypasses seccomp",
    ),
    (
        "io_uring_enter",
        "kernel attack surface that bypasses seccomp",
    ),
    (
        "io_uring_register",
        "kernel attack surface that bypasses seccomp",
    ),
    ("keyctl", "kernel keyring is not namespaced"),
    ("add_key", "kernel keyring is not namespaced"),
    ("request_key", "kernel keyring is not namespaced"),
    ("kexec_load", "replaces the kernel"),
    ("kexec_file_load", "replaces the kernel"),
    ("init_module", "loads kernel code"),
    ("finit_module", "loads kernel code"),
    ("delete_module", "unloads kernel code"),
    ("create_module", "loads kernel code"),
    ("reboot", "reboots the host"),
    ("swapon", "changes host swap"),
    ("swapoff", "changes host swap"),
    ("clock_settime", "the clock is not namespaced"),
    ("clock_adjtime", "the clock is not namespaced"),
    ("settimeofday", "the clock is not namespaced"),
    ("adjtimex", "the clock is not namespaced"),
    ("open_by_handle_at", "escapes the mount view (shocker)"),
    ("name_to_handle_at", "pairs with open_by_handle_at"),
    (
        "memfd_create",
        "an anonymous file can be executed through /proc/self/fd, out of Landlock's reach",
    ),
    ("memfd_secret", "kernel attack surface"),
    (
        "execveat",
        "executes file descriptors (memfd, O_PATH) out of Landlock's reach",
    ),
    ("acct", "host-wide process accounting"),
    ("quotactl", "host-wide quotas"),
    ("quotactl_fd", "host-wide quotas"),
    ("syslog", "kernel log"),
    ("iopl", "raw I/O ports"),
    ("ioperm", "raw I/O ports"),
    ("modify_ldt", "historical kernel attack surface"),
    ("lookup_dcookie", "kernel internals"),
    ("uselib", "obsolete loader path"),
    ("vhangup", "hangs up terminals"),
    ("sethostname", "host identity"),
    ("setdomainname", "host identity"),
    ("fanotify_init", "watches the whole filesystem"),
    ("nfsservctl", "kernel NFS server"),
    ("vmsplice", "history of page-cache exploits"),
    ("seccomp", "the sandbox installs the only filter"),
    (
        "landlock_create_ruleset",
        "the sandbox installs the only ruleset",
    ),
    ("landlock_add_rule", "the sandbox installs the only ruleset"),
    (
        "landlock_restrict_self",
        "the sandbox installs the only ruleset",
    ),
];

/// Without these no process can start or end, so a profile denying them is a
/// configuration mistake, not a policy.
const ESSENTIAL: &[&str] = &[
    "execve",
    "exit",
    "exit_group",
    "rt_sigreturn",
    "restart_syscall",
];

/// Checks a profile without building anything, so `maibox` can refuse a bad
/// config at load time with the setting's name.
pub fn validate_profile(p: &SeccompProfile) -> Result<(), ConfineError> {
    known_names(p)?;
    nothing_essential_denied(p)?;
    nothing_forbidden_allowed(p)?;
    no_name_in_two_lists(p)
}

fn known_names(p: &SeccompProfile) -> Result<(), ConfineError> {
    let lists: [(&'static str, &Vec<String>); 3] = [
        ("kill_on", &p.kill_on),
        ("extra_allow", &p.extra_allow),
        ("deny", &p.deny),
    ];
    for (setting, names) in lists {
        if let Some(name) = names.iter().find(|n| !syscalls::is_known(n)) {
            return Err(ConfineError::UnknownSyscall {
                setting,
                name: name.clone(),
            });
        }
    }
    Ok(())
}

/// `kill_on` and `deny` may not take what every process needs, nor clone3 (whose
/// ENOSYS answer is what makes glibc fall back to clone).
fn nothing_essential_denied(p: &SeccompProfile) -> Result<(), ConfineError> {
    for (setting, names) in [("kill_on", &p.kill_on), ("deny", &p.deny)] {
        for name in names {
            if ESSENTIAL.contains(&name.as_str()) {
                return Err(ConfineError::EssentialSyscall {
                    setting,
                    name: name.clone(),
                    why: "no process can run or exit without it",
                });
            }
            if name == "clone3" {
                return Err(ConfineError::EssentialSyscall {
                    setting,
                    name: name.clone(),
                    why: "clone3 is always answered ENOSYS so glibc falls back to clone; \
                          any other answer breaks thread creation",
                });
            }
        }
    }
    Ok(())
}

/// `extra_allow` may not open what is never allowed, nor lift argument checks.
fn nothing_forbidden_allowed(p: &SeccompProfile) -> Result<(), ConfineError> {
    for name in &p.extra_allow {
        if let Some((_, why)) = NEVER_ALLOW.iter().find(|(n, _)| n == name) {
            return Err(ConfineError::NeverAllowed {
                name: name.clone(),
                why,
            });
        }
        if ARG_CHECKED.contains(&name.as_str()) {
            return Err(ConfineError::NeverAllowed {
                name: name.clone(),
                why: "it is already allowed with argument checks, which cannot be lifted",
            });
        }
    }
    Ok(())
}

fn no_name_in_two_lists(p: &SeccompProfile) -> Result<(), ConfineError> {
    let pairs: [(&'static str, &Vec<String>, &'static str, &Vec<String>); 3] = [
        ("kill_on", &p.kill_on, "extra_allow", &p.extra_allow),
        ("kill_on", &p.kill_on, "deny", &p.deny),
        ("extra_allow", &p.extra_allow, "deny", &p.deny),
    ];
    for (first, a, second, b) in pairs {
        if let Some(name) = a.iter().find(|n| b.contains(n)) {
            return Err(ConfineError::Conflict {
                name: name.clone(),
                first,
                second,
            });
        }
    }
    Ok(())
}

/// Names (native architecture) allowed by the profile, unconditionally or with
/// argument checks, sorted. `net` is accepted for symmetry with `build_filter`:
/// socket() is listed in every mode because AF_UNIX is always allowed.
pub fn allowed_syscalls(p: &SeccompProfile, _net: NetAccess) -> Vec<String> {
    let removed: BTreeSet<&str> = p
        .deny
        .iter()
        .chain(p.kill_on.iter())
        .map(String::as_str)
        .collect();
    let mut out: BTreeSet<String> = BASE_ALLOW
        .iter()
        .copied()
        .chain(ARG_CHECKED.iter().copied())
        .chain(p.extra_allow.iter().map(String::as_str))
        .filter(|n| !removed.contains(n))
        .filter(|n| syscalls::number(n).is_some())
        .map(str::to_string)
        .collect();
    // A kill_on/deny entry naming an argument-checked call removes it as a whole.
    out.retain(|n| !removed.contains(n.as_str()));
    out.into_iter().collect()
}
