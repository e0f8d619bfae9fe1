//! A [`SeccompProfile`] compiled into one BPF program.
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

use super::notify::Notify;
use super::profile::{allowed_syscalls, validate_profile, DenyAction, NetAccess, SeccompProfile};
use super::raw::*;
use super::syscalls;
use crate::confine::ConfineError;

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

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH_NATIVE: u32 = 62 | 0x8000_0000 | 0x4000_0000;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH_NATIVE: u32 = 183 | 0x8000_0000 | 0x4000_0000;

#[cfg(target_arch = "x86_64")]
const TARGET: TargetArch = TargetArch::x86_64;
#[cfg(target_arch = "aarch64")]
const TARGET: TargetArch = TargetArch::aarch64;

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

/// The hardening a strict OCI runtime stacks on any bundle's profile: the
/// architecture guard, then every call of `kill_on` killed (SECCOMP_RET_KILL_PROCESS,
/// which the kernel prefers to any other filter's answer), anything else allowed
/// (left to the bundle's own filters). Unknown names are skipped: the list is the
/// untrusted level's, checked when its configuration was loaded.
pub fn kill_guard(kill_on: &[String]) -> BpfProgram {
    let mut out = arch_guard();
    out.pop(); // RET_ALLOW; the syscall number is in the accumulator.
    for name in kill_on {
        if let Some(nr) = syscalls::number(name) {
            out.push(jump(BPF_JMP_JEQ_K, nr as u32, 0, 1));
            out.push(stmt(BPF_RET_K, RET_KILL_PROCESS));
        }
    }
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

#[cfg(test)]
mod dispatch_tests {
    use super::super::profile::ARG_CHECKED;
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
