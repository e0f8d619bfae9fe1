//! An OCI spec's `linux.seccomp` compiled with seccompiler into a stack of BPF
//! programs, installed together right before the container's execve.
//!
//! seccompiler builds one filter per (match action, mismatch action) pair, while an
//! OCI profile gives each syscall entry its own action. The kernel runs every
//! installed filter and keeps the most severe result (kill > trap > errno > trace >
//! log > allow), so the profile becomes:
//!
//! - maibox's architecture guard: foreign architectures (i386 `int 0x80`) and x32
//!   are killed. The profile is compiled for the native architecture only, so a
//!   spec that lists SCMP_ARCH_X86/X32 (Docker's does) gets them refused rather than
//!   filtered: stricter, never weaker.
//! - a default filter: every syscall the profile names (with its argument checks)
//!   is allowed by this filter, anything else gets `defaultAction`;
//! - one filter per other action A: the syscalls whose entry says A (with their
//!   argument checks) get A, anything else is allowed by this filter.
//!
//! A call named with action A thus ends with A (A is never less severe than the
//! allows around it), and an unnamed call ends with the default action: the OCI
//! semantics. Names this kernel's table does not know are skipped, as runc does:
//! Docker's profile lists syscalls of many kernel versions.
//!
//! A call numbered above every call the profile names is one its author could
//! not know (a newer kernel's). When the default is to fail calls with an errno,
//! such a call fails with ENOSYS instead, as with runc: "no such call" lets a
//! program fall back to an older call the profile does decide on (clone3 to
//! clone). Only the errno changes; a default that kills or traps stays as it is.

use std::collections::BTreeMap;

use oci_spec::runtime::{
    LinuxSeccomp, LinuxSeccompAction, LinuxSeccompArg, LinuxSeccompFilterFlag, LinuxSeccompOperator,
};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule,
};

use super::raw::{
    jump, stmt, BPF_JMP_JGT_K, BPF_LD_W_ABS, BPF_MAXINSNS, BPF_RET_K, RET_ERRNO, RET_USER_NOTIF,
    SECCOMP_DATA_NR,
};
use super::syscalls;
use crate::error::SpecError;

#[cfg(target_arch = "x86_64")]
const TARGET: seccompiler::TargetArch = seccompiler::TargetArch::x86_64;
#[cfg(target_arch = "aarch64")]
const TARGET: seccompiler::TargetArch = seccompiler::TargetArch::aarch64;

/// The compiled profile: programs in install order, and the seccomp() flags.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Compiled {
    pub programs: Vec<BpfProgram>,
    pub flags: libc::c_ulong,
    /// Names skipped because this kernel's syscall table does not have them.
    pub unknown: Vec<String>,
    /// SCMP_ACT_NOTIFY: the index of the one program that returns USER_NOTIF
    /// (installed with a listener), and where the listener goes.
    pub notify: Option<Notify>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notify {
    pub program: usize,
    /// `listenerPath`: the seccomp agent's unix socket on the host.
    pub listener_path: std::path::PathBuf,
    pub listener_metadata: String,
}

/// seccompiler has no USER_NOTIF action: SCMP_ACT_NOTIFY is compiled as this
/// errno and the returns are rewritten afterwards. A profile's own errnoRet of
/// this value is refused, so the two cannot be confused.
const NOTIFY_PLACEHOLDER: u32 = 4094;

fn field_err(field: &str, message: impl Into<String>) -> SpecError {
    SpecError::Invalid {
        field: format!("linux.seccomp.{field}"),
        message: message.into(),
    }
}

fn action(
    a: LinuxSeccompAction,
    errno: Option<u32>,
    field: &str,
) -> Result<SeccompAction, SpecError> {
    Ok(match a {
        LinuxSeccompAction::ScmpActAllow => SeccompAction::Allow,
        LinuxSeccompAction::ScmpActErrno => {
            let e = errno.unwrap_or(libc::EPERM as u32);
            if e == NOTIFY_PLACEHOLDER {
                return Err(field_err(
                    field,
                    format!("errnoRet {e} is reserved by maibox (it stands for SCMP_ACT_NOTIFY)"),
                ));
            }
            SeccompAction::Errno(e)
        }
        LinuxSeccompAction::ScmpActKill | LinuxSeccompAction::ScmpActKillThread => {
            SeccompAction::KillThread
        }
        LinuxSeccompAction::ScmpActKillProcess => SeccompAction::KillProcess,
        LinuxSeccompAction::ScmpActTrap => SeccompAction::Trap,
        LinuxSeccompAction::ScmpActTrace => {
            SeccompAction::Trace(errno.unwrap_or(libc::EPERM as u32))
        }
        LinuxSeccompAction::ScmpActLog => SeccompAction::Log,
        LinuxSeccompAction::ScmpActNotify => SeccompAction::Errno(NOTIFY_PLACEHOLDER),
    })
}

fn condition(a: &LinuxSeccompArg, field: &str) -> Result<SeccompCondition, SpecError> {
    let index = u8::try_from(a.index())
        .ok()
        .filter(|i| *i < 6)
        .ok_or_else(|| {
            field_err(
                field,
                format!("argument index {} (must be 0..5)", a.index()),
            )
        })?;
    let (op, value) = match a.op() {
        LinuxSeccompOperator::ScmpCmpNe => (SeccompCmpOp::Ne, a.value()),
        LinuxSeccompOperator::ScmpCmpLt => (SeccompCmpOp::Lt, a.value()),
        LinuxSeccompOperator::ScmpCmpLe => (SeccompCmpOp::Le, a.value()),
        LinuxSeccompOperator::ScmpCmpEq => (SeccompCmpOp::Eq, a.value()),
        LinuxSeccompOperator::ScmpCmpGe => (SeccompCmpOp::Ge, a.value()),
        LinuxSeccompOperator::ScmpCmpGt => (SeccompCmpOp::Gt, a.value()),
        // libseccomp: (arg & value) == valueTwo.
        LinuxSeccompOperator::ScmpCmpMaskedEq => (
            SeccompCmpOp::MaskedEq(a.value()),
            a.value_two().unwrap_or(0),
        ),
    };
    // 64-bit comparisons, as libseccomp makes them.
    SeccompCondition::new(index, SeccompCmpArgLen::Qword, op, value)
        .map_err(|e| field_err(field, format!("argument check: {e}")))
}

/// An entry's argument checks as seccompiler rules (ORed). Several checks on one
/// argument are alternatives (runc's reading, e.g. "personality is 0 or 8"); checks
/// on different arguments must all hold.
fn rules(args: &[LinuxSeccompArg], field: &str) -> Result<Vec<SeccompRule>, SpecError> {
    if args.is_empty() {
        return Ok(Vec::new());
    }
    let conds = args
        .iter()
        .map(|a| condition(a, field))
        .collect::<Result<Vec<_>, _>>()?;
    let same_index = args.len() > 1 && args.iter().all(|a| a.index() == args[0].index());
    let rule = |c: Vec<SeccompCondition>| {
        SeccompRule::new(c).map_err(|e| field_err(field, format!("argument checks: {e}")))
    };
    if same_index {
        conds.into_iter().map(|c| rule(vec![c])).collect()
    } else {
        Ok(vec![rule(conds)?])
    }
}

type RuleMap = BTreeMap<i64, Vec<SeccompRule>>;

/// Adds `rs` for `nr`: an empty list means "unconditionally", which absorbs any
/// argument checks already there.
fn add(map: &mut RuleMap, nr: i64, rs: &[SeccompRule]) {
    match map.get_mut(&nr) {
        Some(existing) if existing.is_empty() => {}
        Some(existing) if rs.is_empty() => existing.clear(),
        Some(existing) => existing.extend_from_slice(rs),
        None => {
            map.insert(nr, rs.to_vec());
        }
    }
}

fn compile_filter(
    rules: RuleMap,
    mismatch: SeccompAction,
    matched: SeccompAction,
    field: &str,
) -> Result<BpfProgram, SpecError> {
    let f = SeccompFilter::new(rules, mismatch, matched, TARGET)
        .map_err(|e| field_err(field, format!("compiling: {e}")))?;
    let prog: BpfProgram = f
        .try_into()
        .map_err(|e: seccompiler::BackendError| field_err(field, format!("compiling: {e}")))?;
    if prog.len() > BPF_MAXINSNS {
        return Err(field_err(
            field,
            format!(
                "compiles to {} BPF instructions, over the kernel's 4096",
                prog.len()
            ),
        ));
    }
    Ok(prog)
}

fn flags(s: &LinuxSeccomp) -> Result<libc::c_ulong, SpecError> {
    let mut out = 0;
    for f in s.flags().iter().flatten() {
        out |= match f {
            LinuxSeccompFilterFlag::SeccompFilterFlagLog => libc::SECCOMP_FILTER_FLAG_LOG,
            LinuxSeccompFilterFlag::SeccompFilterFlagSpecAllow => {
                libc::SECCOMP_FILTER_FLAG_SPEC_ALLOW
            }
            // The container's process is single-threaded when the filter goes on.
            LinuxSeccompFilterFlag::SeccompFilterFlagTsync => 0,
            other => {
                return Err(SpecError::Unenforced {
                    field: format!("linux.seccomp.flags: {other:?}"),
                    hint: "flag not supported".into(),
                })
            }
        };
    }
    Ok(out)
}

/// The profile's entries sorted out: every named call with its argument
/// checks, and the calls of each action other than allow.
#[derive(Default)]
struct Entries {
    named: RuleMap,
    /// Keyed by the action's return value, which orders them.
    by_action: BTreeMap<u32, (SeccompAction, RuleMap)>,
    /// Names this kernel's table does not know.
    unknown: Vec<String>,
    highest_named: Option<i64>,
}

fn entries(s: &LinuxSeccomp) -> Result<Entries, SpecError> {
    let notify_action = SeccompAction::Errno(NOTIFY_PLACEHOLDER);
    let mut out = Entries::default();
    for (i, entry) in s.syscalls().iter().flatten().enumerate() {
        let field = format!("syscalls[{i}]");
        let act = action(entry.action(), entry.errno_ret(), &field)?;
        if act == notify_action && entry.names().iter().any(|n| n == "write") {
            return Err(field_err(
                &field,
                "SCMP_ACT_NOTIFY cannot be used for the write syscall: the container's \
                 setup writes to the runtime after the filter is installed",
            ));
        }
        let rs = rules(entry.args().as_deref().unwrap_or(&[]), &field)?;
        for name in entry.names() {
            let Some(nr) = syscalls::number(name) else {
                out.unknown.push(name.clone());
                continue;
            };
            out.highest_named = out.highest_named.max(Some(nr));
            add(&mut out.named, nr, &rs);
            if act != SeccompAction::Allow {
                let slot = out
                    .by_action
                    .entry(u32::from(act.clone()))
                    .or_insert_with(|| (act.clone(), RuleMap::new()));
                add(&mut slot.1, nr, &rs);
            }
        }
    }
    out.unknown.sort();
    out.unknown.dedup();
    Ok(out)
}

/// The filter that gives `default` to every call the profile does not name;
/// calls above every named one fail with ENOSYS when the default is an errno.
fn default_program(
    default: &SeccompAction,
    named: RuleMap,
    highest_named: Option<i64>,
) -> Result<BpfProgram, SpecError> {
    let mut p = compile_filter(
        named,
        default.clone(),
        SeccompAction::Allow,
        "defaultAction",
    )?;
    if let (SeccompAction::Errno(e), Some(top)) = (default, highest_named) {
        if *e != libc::ENOSYS as u32 && *e != NOTIFY_PLACEHOLDER {
            p.splice(0..0, enosys_above(top));
            if p.len() > BPF_MAXINSNS {
                return Err(field_err(
                    "defaultAction",
                    format!(
                        "compiles to {} BPF instructions, over the kernel's 4096",
                        p.len()
                    ),
                ));
            }
        }
    }
    Ok(p)
}

/// Compiles `linux.seccomp`.
pub fn compile(s: &LinuxSeccomp) -> Result<Compiled, SpecError> {
    let default = action(s.default_action(), s.default_errno_ret(), "defaultAction")?;
    // The container's setup goes on after its filter is installed (the listener
    // reaches the agent through the runtime, then `Ready`, both written by the
    // init): a notifying default, or notifying write, would hold those calls for
    // an agent that has no listener yet.
    if default == SeccompAction::Errno(NOTIFY_PLACEHOLDER) {
        return Err(field_err(
            "defaultAction",
            "SCMP_ACT_NOTIFY cannot be used as the default action: the container's setup \
             makes calls after the filter is installed, before any agent has the listener",
        ));
    }
    let e = entries(s)?;
    let mut programs = vec![super::arch_guard()];
    if default != SeccompAction::Allow {
        programs.push(default_program(&default, e.named, e.highest_named)?);
    }
    // Also for an action equal to the default: the default filter allows every
    // named call, so the entry's own filter must apply its action.
    for (_, (act, map)) in e.by_action {
        programs.push(compile_filter(map, SeccompAction::Allow, act, "syscalls")?);
    }
    let notify = notify_of(s, &mut programs)?;
    Ok(Compiled {
        programs,
        flags: flags(s)?,
        unknown: e.unknown,
        notify,
    })
}

/// The one program that notifies (its returns rewritten to USER_NOTIF) and
/// where its listener goes; `None` when no entry says SCMP_ACT_NOTIFY.
fn notify_of(s: &LinuxSeccomp, programs: &mut [BpfProgram]) -> Result<Option<Notify>, SpecError> {
    let notifying: Vec<usize> = programs
        .iter_mut()
        .enumerate()
        .filter_map(|(i, p)| notify_returns(p).then_some(i))
        .collect();
    // An empty listenerPath is no path; one without a notifying action has nothing
    // to receive (runc runs such specs too).
    let listener_path = s
        .listener_path()
        .as_ref()
        .filter(|p| !p.as_os_str().is_empty());
    match (notifying.as_slice(), listener_path) {
        ([], _) => Ok(None),
        ([program], Some(path)) => Ok(Some(Notify {
            program: *program,
            listener_path: path.clone(),
            listener_metadata: s.listener_metadata().clone().unwrap_or_default(),
        })),
        ([_], None) => Err(field_err(
            "listenerPath",
            "SCMP_ACT_NOTIFY needs a listenerPath (the seccomp agent's socket)",
        )),
        _ => Err(SpecError::Unenforced {
            field: "linux.seccomp: SCMP_ACT_NOTIFY".into(),
            hint: "notifications from more than one filter are not supported".into(),
        }),
    }
}

/// BPF that fails every call numbered above `top` with ENOSYS, to go in front
/// of a program (which loads what it needs itself). Foreign architectures and
/// x32 numbers never get here: the architecture guard kills them first.
fn enosys_above(top: i64) -> Vec<seccompiler::sock_filter> {
    vec![
        stmt(BPF_LD_W_ABS, SECCOMP_DATA_NR),
        jump(BPF_JMP_JGT_K, u32::try_from(top).unwrap_or(u32::MAX), 0, 1),
        stmt(BPF_RET_K, RET_ERRNO | libc::ENOSYS as u32),
    ]
}

/// Rewrites the placeholder returns of SCMP_ACT_NOTIFY into USER_NOTIF; true if
/// there were any.
fn notify_returns(p: &mut BpfProgram) -> bool {
    let mut any = false;
    for ins in p.iter_mut() {
        if ins.code == BPF_RET_K && ins.k == RET_ERRNO | NOTIFY_PLACEHOLDER {
            ins.k = RET_USER_NOTIF;
            any = true;
        }
    }
    any
}

#[cfg(test)]
mod tests {
    use super::*;

    fn docker_profile() -> LinuxSeccomp {
        let text = include_str!("../../../tests/data/docker-config.json");
        let spec: oci_spec::runtime::Spec = serde_json::from_str(text).unwrap();
        spec.linux().as_ref().unwrap().seccomp().clone().unwrap()
    }

    #[test]
    fn dockers_default_profile_compiles() {
        let c = compile(&docker_profile()).unwrap();
        // Guard, default filter, and clone3's ENOSYS (errnoRet 38) at least.
        assert!(c.programs.len() >= 3, "{}", c.programs.len());
        assert!(c.programs.iter().all(|p| p.len() <= 4096));
    }

    #[test]
    fn notify_needs_a_listener_path_and_compiles_to_one_program() {
        let mut s = docker_profile();
        let notify = |names: &[&str]| {
            oci_spec::runtime::LinuxSyscallBuilder::default()
                .names(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
                .action(LinuxSeccompAction::ScmpActNotify)
                .build()
                .unwrap()
        };
        let mut calls = s.syscalls().clone().unwrap();
        calls.push(notify(&["mkdir", "mkdirat"]));
        calls.push(notify(&["chmod"]));
        s.set_syscalls(Some(calls.clone()));
        assert!(compile(&s)
            .unwrap_err()
            .to_string()
            .contains("needs a listenerPath"));
        s.set_listener_path(Some("/run/agent.sock".into()));
        let c = compile(&s).unwrap();
        let n = c.notify.unwrap();
        assert_eq!(n.listener_path, std::path::Path::new("/run/agent.sock"));
        let notifying = c
            .programs
            .iter()
            .filter(|p| p.iter().any(|i| i.k == RET_USER_NOTIF))
            .count();
        assert_eq!(notifying, 1);
        assert!(c.programs[n.program]
            .iter()
            .all(|i| i.k != RET_ERRNO | NOTIFY_PLACEHOLDER));
        // Refused: notifying write, and a notifying default.
        calls.push(notify(&["write"]));
        s.set_syscalls(Some(calls));
        let e = compile(&s).unwrap_err().to_string();
        assert!(e.contains("cannot be used for the write syscall"), "{e}");
        let mut d = docker_profile();
        d.set_default_action(LinuxSeccompAction::ScmpActNotify);
        d.set_listener_path(Some("/run/agent.sock".into()));
        let e = compile(&d).unwrap_err().to_string();
        assert!(e.contains("cannot be used as the default action"), "{e}");
    }

    #[test]
    fn several_checks_on_one_argument_are_alternatives() {
        let arg = |index: usize, v: u64| {
            oci_spec::runtime::LinuxSeccompArgBuilder::default()
                .index(index)
                .value(v)
                .op(LinuxSeccompOperator::ScmpCmpEq)
                .build()
                .unwrap()
        };
        assert_eq!(rules(&[arg(0, 0), arg(0, 8)], "t").unwrap().len(), 2);
        assert_eq!(rules(&[arg(0, 0), arg(1, 1)], "t").unwrap().len(), 1);
    }
}
