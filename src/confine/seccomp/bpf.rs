//! The seccomp allowlist for CPython and its standard library.
//!
//! Layout of the program handed to the kernel (built once, before fork):
//!
//! ```text
//! prefix (our own raw BPF, see `prefix()`):
//!   arch != native               -> KILL_PROCESS   (i386 `int 0x80`, any foreign ABI)
//!   x86_64 only: nr >= 0x40000000 -> KILL_PROCESS  (x32 ABI)
//!   nr == clone3                 -> ERRNO(ENOSYS)  (glibc then falls back to clone)
//!   nr in kill_on                -> KILL_PROCESS
//!   nr in deny (default = kill)  -> ERRNO(EPERM)
//! dispatch (our own raw BPF, see `dispatch()`):
//!   allowlist entries without argument checks -> ALLOW, by binary search
//! seccompiler's program:
//!   allowlist entries with argument checks    -> ALLOW
//!   anything else, or an argument check failing   -> default action
//! ```
//!
//! Why a raw dispatch: seccompiler compiles a linear chain, five instructions per
//! syscall (1,206 for the default profile). Installing it, the kernel converts and
//! JIT-compiles every instruction and, for its per-filter action cache, runs the
//! filter for each of the ~460 syscall numbers, which walks the chain to its end
//! for every number not allowed: together about 0.5 ms of each run's start,
//! measured with perf. With a search tree over the plain allowlist the program has
//! 527 instructions and decides any allowed number in at most 23 (448 before);
//! `dispatch_tests` checks it decides every number as the chain did.
//!
//! Why a raw prefix: seccompiler compiles one mismatch action and one match action
//! per filter and checks only `seccomp_data.arch`. The x32 ABI shares
//! AUDIT_ARCH_X86_64 with the 64-bit ABI and is told apart only by bit 30 of the
//! syscall number, which seccompiler cannot test; and clone3/kill_on need actions
//! other than the two it offers.
//!
//! `socketcall` and `ipc` exist only in the i386 table; since every i386 call
//! is killed by the arch check, their multiplexed socket/ipc operations cannot be
//! used to bypass the `socket()` argument checks below.

use std::collections::{BTreeMap, BTreeSet};

use seccompiler::{
    sock_filter, BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition,
    SeccompFilter, SeccompRule, TargetArch,
};
use serde::{Deserialize, Serialize};

use std::os::fd::{FromRawFd, OwnedFd};

use super::notify::Notify;
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

/// Namespace-creating clone flags; a clone with any of them is refused.
const CLONE_NS_FLAGS: u64 = (libc::CLONE_NEWUSER
    | libc::CLONE_NEWNS
    | libc::CLONE_NEWPID
    | libc::CLONE_NEWNET
    | libc::CLONE_NEWIPC
    | libc::CLONE_NEWUTS
    | libc::CLONE_NEWCGROUP) as u64
    // Not valid for clone() (its bit is CSIGNAL), listed so the intent is plain.
    | 0x80 /* CLONE_NEWTIME */;

/// Requests refused to `ioctl` (compared on the low 32 bits only, because the
/// kernel truncates the request to `unsigned int`: CVE-2019-10063).
const DENIED_IOCTLS: &[u64] = &[libc::TIOCSTI, libc::TIOCLINUX];

// Raw BPF opcodes and seccomp constants for the prefix.
const BPF_LD_W_ABS: u16 = 0x20;
const BPF_JMP_JEQ_K: u16 = 0x15;
const BPF_JMP_JGE_K: u16 = 0x35;
const BPF_RET_K: u16 = 0x06;
const SECCOMP_DATA_NR: u32 = 0;
const SECCOMP_DATA_ARCH: u32 = 4;
const RET_KILL_PROCESS: u32 = 0x8000_0000;
const RET_ALLOW: u32 = 0x7fff_0000;
const RET_ERRNO: u32 = 0x0005_0000;
const RET_EPERM: u32 = RET_ERRNO | libc::EPERM as u32;
const X32_SYSCALL_BIT: u32 = 0x4000_0000;
const BPF_MAXINSNS: usize = 4096;

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH_NATIVE: u32 = 62 | 0x8000_0000 | 0x4000_0000;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH_NATIVE: u32 = 183 | 0x8000_0000 | 0x4000_0000;

#[cfg(target_arch = "x86_64")]
const TARGET: TargetArch = TargetArch::x86_64;
#[cfg(target_arch = "aarch64")]
const TARGET: TargetArch = TargetArch::aarch64;

const BPF_JMP_JA: u16 = 0x05;
/// Most numbers tested one after the other in a leaf of the dispatch tree.
const DISPATCH_LEAF: usize = 8;

/// BPF that, with the syscall number in the accumulator, returns ALLOW for the
/// numbers in `nrs` (sorted, distinct) and falls through to the instruction after
/// it for any other. Forward jumps only, as BPF requires; a subtree is reached by
/// `ja`, whose offset has 32 bits, so no 8-bit jump offset ever overflows.
fn dispatch(nrs: &[u32]) -> Vec<sock_filter> {
    if nrs.len() <= DISPATCH_LEAF {
        // jeq n_i -> the RET ALLOW below; after the last, ja over it.
        let k = nrs.len();
        let mut out: Vec<sock_filter> = nrs
            .iter()
            .enumerate()
            .map(|(i, n)| jump(BPF_JMP_JEQ_K, *n, (k - i) as u8, 0))
            .collect();
        out.push(stmt(BPF_JMP_JA, 1));
        out.push(stmt(BPF_RET_K, RET_ALLOW));
        return out;
    }
    let mid = nrs.len() / 2;
    let left = dispatch(&nrs[..mid]);
    let right = dispatch(&nrs[mid..]);
    // jge pivot -> `ja right`, else -> left; left's fall-through jumps over right.
    let mut out = Vec::with_capacity(left.len() + right.len() + 3);
    out.push(jump(BPF_JMP_JGE_K, nrs[mid], 0, 1));
    out.push(stmt(BPF_JMP_JA, left.len() as u32 + 1));
    out.extend(left);
    out.push(stmt(BPF_JMP_JA, right.len() as u32));
    out.extend(right);
    out
}

fn stmt(code: u16, k: u32) -> sock_filter {
    sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(code: u16, k: u32, jt: u8, jf: u8) -> sock_filter {
    sock_filter { code, jt, jf, k }
}

/// Checks a profile without building anything, so `maibox` can refuse a bad
/// config at load time with the setting's name.
pub fn validate_profile(p: &SeccompProfile) -> Result<(), ConfineError> {
    let lists: [(&'static str, &Vec<String>); 3] = [
        ("kill_on", &p.kill_on),
        ("extra_allow", &p.extra_allow),
        ("deny", &p.deny),
    ];
    for (setting, names) in lists {
        for name in names {
            if !syscalls::is_known(name) {
                return Err(ConfineError::UnknownSyscall {
                    setting,
                    name: name.clone(),
                });
            }
        }
    }
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

fn cond(
    arg: u8,
    len: SeccompCmpArgLen,
    op: SeccompCmpOp,
    value: u64,
) -> Result<SeccompCondition, ConfineError> {
    Ok(SeccompCondition::new(arg, len, op, value)?)
}

fn rule(conds: Vec<SeccompCondition>) -> Result<SeccompRule, ConfineError> {
    Ok(SeccompRule::new(conds)?)
}

/// Argument checks: each syscall maps to rules, any one of which allows the call.
fn arg_rules(name: &str, net: NetAccess) -> Result<Vec<SeccompRule>, ConfineError> {
    use SeccompCmpArgLen::Dword;
    use SeccompCmpOp::{Eq, MaskedEq, Ne};
    match name {
        // Same argument position on x86_64 and aarch64: flags is argument 0. Only
        // the low 32 bits matter (the kernel's legacy clone truncates them).
        "clone" => Ok(vec![rule(vec![cond(
            0,
            Dword,
            MaskedEq(CLONE_NS_FLAGS),
            0,
        )?])?]),
        "socket" => {
            let unix = libc::AF_UNIX as u64;
            let mut families_types: Vec<(u64, u64, &[u64])> = vec![
                (unix, libc::SOCK_STREAM as u64, &[0]),
                (unix, libc::SOCK_DGRAM as u64, &[0]),
                (unix, libc::SOCK_SEQPACKET as u64, &[0]),
            ];
            if net != NetAccess::None {
                for fam in [libc::AF_INET as u64, libc::AF_INET6 as u64] {
                    families_types.push((
                        fam,
                        libc::SOCK_STREAM as u64,
                        &[0, libc::IPPROTO_TCP as u64],
                    ));
                    families_types.push((
                        fam,
                        libc::SOCK_DGRAM as u64,
                        &[0, libc::IPPROTO_UDP as u64],
                    ));
                }
            }
            let mut rules = Vec::new();
            for (family, ty, protos) in families_types {
                for proto in protos {
                    rules.push(rule(vec![
                        cond(0, Dword, Eq, family)?,
                        // The low 4 bits are the type; SOCK_NONBLOCK/SOCK_CLOEXEC sit above.
                        cond(1, Dword, MaskedEq(0xf), ty)?,
                        cond(2, Dword, Eq, *proto)?,
                    ])?);
                }
            }
            Ok(rules)
        }
        // Only AF_UNIX supports socketpair; other families are refused outright.
        "socketpair" => Ok(vec![rule(vec![cond(0, Dword, Eq, libc::AF_UNIX as u64)?])?]),
        "ioctl" => Ok(vec![rule(
            DENIED_IOCTLS
                .iter()
                .map(|req| cond(1, Dword, Ne, *req & 0xffff_ffff))
                .collect::<Result<Vec<_>, _>>()?,
        )?]),
        // Querying (0xffffffff) and PER_LINUX only: other personalities turn off
        // ASLR (ADDR_NO_RANDOMIZE) or change the exec'd program's ABI.
        "personality" => Ok(vec![
            rule(vec![cond(0, Dword, Eq, 0xffff_ffff)?])?,
            rule(vec![cond(0, Dword, Eq, 0)?])?,
        ]),
        _ => Ok(Vec::new()),
    }
}

/// Instructions at the head of [`prefix`] that check the architecture and x32.
fn arch_check_len() -> usize {
    if cfg!(target_arch = "x86_64") {
        6
    } else {
        4
    }
}

/// A program that only kills foreign-architecture and x32 calls and allows the rest,
/// to stack under filters compiled by seccompiler (which checks the arch value alone,
/// so x32 would pass it).
pub fn arch_guard() -> BpfProgram {
    let mut out = prefix(&SeccompProfile {
        kill_on: Vec::new(),
        deny: Vec::new(),
        ..SeccompProfile::default()
    });
    // prefix() ends with clone3's ENOSYS entry, which a foreign profile decides itself.
    out.truncate(arch_check_len());
    out.push(stmt(BPF_RET_K, RET_ALLOW));
    out
}

/// Our raw BPF that runs before seccompiler's program (see the module doc).
fn prefix(p: &SeccompProfile) -> Vec<sock_filter> {
    let mut out = vec![
        stmt(BPF_LD_W_ABS, SECCOMP_DATA_ARCH),
        jump(BPF_JMP_JEQ_K, AUDIT_ARCH_NATIVE, 1, 0),
        stmt(BPF_RET_K, RET_KILL_PROCESS),
        stmt(BPF_LD_W_ABS, SECCOMP_DATA_NR),
    ];
    if cfg!(target_arch = "x86_64") {
        out.push(jump(BPF_JMP_JGE_K, X32_SYSCALL_BIT, 0, 1));
        out.push(stmt(BPF_RET_K, RET_KILL_PROCESS));
    }
    let mut special: BTreeMap<u32, u32> = BTreeMap::new();
    if p.default_action == DenyAction::Kill {
        for name in &p.deny {
            if let Some(nr) = syscalls::number(name) {
                special.insert(nr as u32, RET_EPERM);
            }
        }
    }
    for name in &p.kill_on {
        if let Some(nr) = syscalls::number(name) {
            special.insert(nr as u32, RET_KILL_PROCESS);
        }
    }
    if let Some(nr) = syscalls::number("clone3") {
        special.insert(nr as u32, RET_ERRNO | libc::ENOSYS as u32);
    }
    for (nr, ret) in special {
        out.push(jump(BPF_JMP_JEQ_K, nr, 0, 1));
        out.push(stmt(BPF_RET_K, ret));
    }
    out
}

/// Builds the whole program. Call it in the supervisor before fork: installing
/// it afterwards only copies it into the kernel.
pub fn build_filter(p: &SeccompProfile, net: NetAccess) -> Result<BpfProgram, ConfineError> {
    build_filter_notify(p, net, Notify::default())
}

/// Like [`build_filter`], with the chosen denials routed to the supervisor as user
/// notifications (see [`super::notify`]). The architecture and x32 checks always
/// kill in the kernel: their numbers belong to other syscall tables.
pub fn build_filter_notify(
    p: &SeccompProfile,
    net: NetAccess,
    notify: Notify,
) -> Result<BpfProgram, ConfineError> {
    validate_profile(p)?;
    let mut plain: BTreeSet<u32> = BTreeSet::new();
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for name in allowed_syscalls(p, net) {
        let Some(nr) = syscalls::number(&name) else {
            continue;
        };
        let r = arg_rules(&name, net)?;
        if r.is_empty() {
            plain.insert(nr as u32);
        } else {
            rules.insert(nr, r);
        }
    }
    let filter = SeccompFilter::new(
        rules,
        mismatch_action(p.default_action),
        SeccompAction::Allow,
        TARGET,
    )?;
    let compiled: BpfProgram = filter.try_into()?;
    let mut prog = prefix(p);
    prog.extend(dispatch(&plain.into_iter().collect::<Vec<_>>()));
    prog.extend(compiled);
    super::notify::route(&mut prog, arch_check_len(), notify);
    if prog.len() > BPF_MAXINSNS {
        return Err(ConfineError::FilterTooLarge(prog.len()));
    }
    Ok(prog)
}

fn mismatch_action(action: DenyAction) -> SeccompAction {
    match action {
        DenyAction::Errno => SeccompAction::Errno(libc::EPERM as u32),
        DenyAction::Kill => SeccompAction::KillProcess,
    }
}

/// Installs `prog` on the calling thread. Meant for the forked child right
/// before execve: it does not allocate, and it sets no_new_privs itself (the
/// kernel refuses an unprivileged filter without it; setting it twice is harmless).
pub fn install_filter(prog: &BpfProgram) -> Result<(), ConfineError> {
    install(prog, 0).map(|_| ())
}

/// Installs `prog` without setting no_new_privs, for OCI specs that leave it off:
/// the kernel then requires CAP_SYS_ADMIN in the caller's user namespace.
pub fn install_filter_flags(prog: &BpfProgram, flags: libc::c_ulong) -> Result<(), ConfineError> {
    raw_install(prog, flags).map(|_| ())
}

/// Installs `prog` and returns the listener for its user notifications. The fd is
/// not close-on-exec: the caller must hand it on and close it before execve, or the
/// code would hold the power to answer its own denied calls.
pub fn install_filter_listening(prog: &BpfProgram) -> Result<OwnedFd, ConfineError> {
    let fd = install(prog, libc::SECCOMP_FILTER_FLAG_NEW_LISTENER)?;
    // SAFETY: with NEW_LISTENER, seccomp() returns a fresh fd that we now own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// [`install_filter_flags`] with a listener for the filter's user notifications
/// (OCI `SCMP_ACT_NOTIFY`); the same care with the fd applies.
pub fn install_filter_flags_listening(
    prog: &BpfProgram,
    flags: libc::c_ulong,
) -> Result<OwnedFd, ConfineError> {
    let fd = raw_install(prog, flags | libc::SECCOMP_FILTER_FLAG_NEW_LISTENER)?;
    // SAFETY: with NEW_LISTENER, seccomp() returns a fresh fd that we now own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

fn install(prog: &BpfProgram, flags: libc::c_ulong) -> Result<libc::c_long, ConfineError> {
    // SAFETY: plain prctl with integer arguments.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(ConfineError::NoNewPrivs(std::io::Error::last_os_error()));
    }
    raw_install(prog, flags)
}

fn raw_install(prog: &BpfProgram, flags: libc::c_ulong) -> Result<libc::c_long, ConfineError> {
    let len = u16::try_from(prog.len()).map_err(|_| ConfineError::FilterTooLarge(prog.len()))?;
    let fprog = libc::sock_fprog {
        len,
        // seccompiler's sock_filter is #[repr(C)] with the same layout as the kernel's.
        filter: prog.as_ptr() as *mut libc::sock_filter,
    };
    // SAFETY: fprog points to `prog`, alive for the call; the kernel copies it.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            flags,
            &fprog as *const libc::sock_fprog,
        )
    };
    if rc < 0 {
        return Err(ConfineError::Install(std::io::Error::last_os_error()));
    }
    Ok(rc)
}

#[cfg(test)]
mod dispatch_tests {
    use super::*;

    /// The classic-BPF subset these programs use, run as the kernel would on one
    /// `seccomp_data`. Returns the action and the number of instructions run.
    fn run(prog: &[sock_filter], nr: u32, arch: u32, args: [u64; 6]) -> (u32, usize) {
        let word = |off: u32| -> u32 {
            match off {
                0 => nr,
                4 => arch,
                o if (16..64).contains(&o) => {
                    let a = args[((o - 16) / 8) as usize];
                    if (o - 16) % 8 == 0 {
                        a as u32
                    } else {
                        (a >> 32) as u32
                    }
                }
                o => panic!("load at {o}"),
            }
        };
        let (mut pc, mut acc, mut steps) = (0usize, 0u32, 0usize);
        loop {
            let i = &prog[pc];
            steps += 1;
            let cond = |c: bool| pc + 1 + if c { i.jt as usize } else { i.jf as usize };
            pc = match i.code {
                0x20 => {
                    acc = word(i.k);
                    pc + 1
                }
                0x54 => {
                    acc &= i.k;
                    pc + 1
                }
                0x05 => pc + 1 + i.k as usize,
                0x15 => cond(acc == i.k),
                0x25 => cond(acc > i.k),
                0x35 => cond(acc >= i.k),
                0x45 => cond(acc & i.k != 0),
                0x06 => return (i.k, steps),
                c => panic!("opcode {c:#x} at {pc}"),
            };
        }
    }

    /// The program as it was before the dispatch tree: every allowed syscall in
    /// seccompiler's linear chain.
    fn linear(p: &SeccompProfile, net: NetAccess, notify: Notify) -> BpfProgram {
        let mut rules = BTreeMap::new();
        for name in allowed_syscalls(p, net) {
            if let Some(nr) = syscalls::number(&name) {
                rules.insert(nr, arg_rules(&name, net).unwrap());
            }
        }
        let f = SeccompFilter::new(
            rules,
            mismatch_action(p.default_action),
            SeccompAction::Allow,
            TARGET,
        )
        .unwrap();
        let mut prog = prefix(p);
        prog.extend(BpfProgram::try_from(f).unwrap());
        super::super::notify::route(&mut prog, arch_check_len(), notify);
        prog
    }

    fn profiles() -> Vec<SeccompProfile> {
        vec![
            SeccompProfile::default(),
            SeccompProfile {
                default_action: DenyAction::Kill,
                kill_on: vec!["ptrace".into(), "bpf".into(), "mount".into()],
                deny: vec!["chmod".into(), "socket".into()],
                extra_allow: vec!["sched_setaffinity".into()],
                audit_denials: false,
            },
            SeccompProfile {
                deny: vec!["getpid".into(), "ioctl".into()],
                ..SeccompProfile::default()
            },
        ]
    }

    #[test]
    fn dispatch_decides_every_call_as_the_linear_chain_did() {
        let arg_sets: [[u64; 6]; 6] = [
            [0; 6],
            [libc::CLONE_NEWUSER as u64, 0, 0, 0, 0, 0],
            [libc::AF_INET as u64, libc::SOCK_STREAM as u64, 0, 0, 0, 0],
            [libc::AF_UNIX as u64, libc::SOCK_DGRAM as u64, 0, 0, 0, 0],
            [1, libc::TIOCSTI, 0, 0, 0, 0],
            [u64::MAX; 6],
        ];
        let mut compared = 0;
        for p in profiles() {
            for net in [NetAccess::None, NetAccess::Loopback, NetAccess::Inet] {
                for notify in [
                    Notify::default(),
                    Notify {
                        kills: true,
                        denials: true,
                    },
                ] {
                    let new = build_filter_notify(&p, net, notify).unwrap();
                    let old = linear(&p, net, notify);
                    for arch in [AUDIT_ARCH_NATIVE, 0x4000_0003] {
                        for nr in (0..1100).chain([X32_SYSCALL_BIT, X32_SYSCALL_BIT + 1]) {
                            for args in arg_sets {
                                assert_eq!(
                                    run(&new, nr, arch, args).0,
                                    run(&old, nr, arch, args).0,
                                    "nr {nr} arch {arch:#x} args {args:?} profile {p:?} {net:?}"
                                );
                                compared += 1;
                            }
                        }
                    }
                }
            }
        }
        assert!(compared > 100_000);
    }

    #[test]
    fn dispatch_is_short_and_shallow() {
        let p = SeccompProfile::default();
        let new = build_filter_notify(&p, NetAccess::Loopback, Notify::default()).unwrap();
        let old = linear(&p, NetAccess::Loopback, Notify::default());
        assert!(
            new.len() * 5 < old.len() * 3,
            "{} vs {}",
            new.len(),
            old.len()
        );
        let plain: Vec<u32> = allowed_syscalls(&p, NetAccess::Loopback)
            .iter()
            .filter(|n| !ARG_CHECKED.contains(&n.as_str()))
            .filter_map(|n| syscalls::number(n))
            .map(|n| n as u32)
            .collect();
        assert!(plain.len() > 150);
        // Every plain call is allowed within a few dozen instructions; the chain
        // took hundreds for the last ones.
        let worst_new = plain
            .iter()
            .map(|nr| run(&new, *nr, AUDIT_ARCH_NATIVE, [0; 6]))
            .inspect(|(ret, _)| assert_eq!(*ret, RET_ALLOW))
            .map(|(_, steps)| steps)
            .max()
            .unwrap();
        let worst_old = plain
            .iter()
            .map(|nr| run(&old, *nr, AUDIT_ARCH_NATIVE, [0; 6]).1)
            .max()
            .unwrap();
        eprintln!(
            "{} vs {} instructions; worst walk {worst_new} vs {worst_old}",
            new.len(),
            old.len()
        );
        assert!(worst_new <= 30, "{worst_new} instructions");
        assert!(worst_old > 300, "{worst_old} instructions");
    }
}
