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

use std::collections::BTreeMap;

use oci_spec::runtime::{
    LinuxSeccomp, LinuxSeccompAction, LinuxSeccompArg, LinuxSeccompFilterFlag, LinuxSeccompOperator,
};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule,
};

use super::bundle::BundleError;
use crate::confine::syscalls;

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
}

fn field_err(field: &str, message: impl Into<String>) -> BundleError {
    BundleError::Invalid {
        field: format!("linux.seccomp.{field}"),
        message: message.into(),
    }
}

fn action(
    a: LinuxSeccompAction,
    errno: Option<u32>,
    field: &str,
) -> Result<SeccompAction, BundleError> {
    Ok(match a {
        LinuxSeccompAction::ScmpActAllow => SeccompAction::Allow,
        LinuxSeccompAction::ScmpActErrno => {
            SeccompAction::Errno(errno.unwrap_or(libc::EPERM as u32))
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
        LinuxSeccompAction::ScmpActNotify => {
            return Err(BundleError::Unenforced {
                field: format!("linux.seccomp.{field}: SCMP_ACT_NOTIFY"),
                hint: "maibox has no seccomp agent (listenerPath) support".into(),
            })
        }
    })
}

fn condition(a: &LinuxSeccompArg, field: &str) -> Result<SeccompCondition, BundleError> {
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
fn rules(args: &[LinuxSeccompArg], field: &str) -> Result<Vec<SeccompRule>, BundleError> {
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
) -> Result<BpfProgram, BundleError> {
    let f = SeccompFilter::new(rules, mismatch, matched, TARGET)
        .map_err(|e| field_err(field, format!("compiling: {e}")))?;
    let prog: BpfProgram = f
        .try_into()
        .map_err(|e: seccompiler::BackendError| field_err(field, format!("compiling: {e}")))?;
    if prog.len() > 4096 {
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

fn flags(s: &LinuxSeccomp) -> Result<libc::c_ulong, BundleError> {
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
                return Err(BundleError::Unenforced {
                    field: format!("linux.seccomp.flags: {other:?}"),
                    hint: "flag not supported".into(),
                })
            }
        };
    }
    Ok(out)
}

/// Compiles `linux.seccomp`.
pub fn compile(s: &LinuxSeccomp) -> Result<Compiled, BundleError> {
    if s.listener_path().is_some() {
        return Err(BundleError::Unenforced {
            field: "linux.seccomp.listenerPath".into(),
            hint: "maibox has no seccomp agent support".into(),
        });
    }
    let default = action(s.default_action(), s.default_errno_ret(), "defaultAction")?;
    let mut named = RuleMap::new();
    let mut by_action: BTreeMap<u32, (SeccompAction, RuleMap)> = BTreeMap::new();
    let mut unknown = Vec::new();
    for (i, entry) in s.syscalls().iter().flatten().enumerate() {
        let field = format!("syscalls[{i}]");
        let act = action(entry.action(), entry.errno_ret(), &field)?;
        let rs = rules(entry.args().as_deref().unwrap_or(&[]), &field)?;
        for name in entry.names() {
            let Some(nr) = syscalls::number(name) else {
                unknown.push(name.clone());
                continue;
            };
            add(&mut named, nr, &rs);
            if act != SeccompAction::Allow {
                let slot = by_action
                    .entry(u32::from(act.clone()))
                    .or_insert_with(|| (act.clone(), RuleMap::new()));
                add(&mut slot.1, nr, &rs);
            }
        }
    }
    let mut programs = vec![crate::confine::seccomp::arch_guard()];
    if default != SeccompAction::Allow {
        programs.push(compile_filter(
            named,
            default,
            SeccompAction::Allow,
            "defaultAction",
        )?);
    }
    // Also for an action equal to the default: the default filter allows every
    // named call, so the entry's own filter must apply its action.
    for (_, (act, map)) in by_action {
        programs.push(compile_filter(map, SeccompAction::Allow, act, "syscalls")?);
    }
    unknown.sort();
    unknown.dedup();
    Ok(Compiled {
        programs,
        flags: flags(s)?,
        unknown,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn docker_profile() -> LinuxSeccomp {
        let text = include_str!("../../tests/data/docker-config.json");
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
    fn notify_and_listener_are_refused() {
        let mut s = docker_profile();
        s.set_default_action(LinuxSeccompAction::ScmpActNotify);
        assert!(compile(&s)
            .unwrap_err()
            .to_string()
            .contains("SCMP_ACT_NOTIFY"));
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
