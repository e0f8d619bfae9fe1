//! `process` (of a spec, or of an `exec --process` file) → the engine's
//! [`OciProcess`], and the process and linux fields maibox refuses by name.

use super::{invalid, unenforced, BundleError};
use crate::policy::oci::{CapabilitySets, OciProcess};

/// A spec's (or `exec --process` file's) process as the engine's plain data.
pub fn oci_process(process: &oci_spec::runtime::Process) -> Result<OciProcess, BundleError> {
    let args = process.args().clone().unwrap_or_default();
    if args.is_empty() {
        return Err(invalid("process.args", "empty (nothing to run)"));
    }
    let cwd = process.cwd().display().to_string();
    if !cwd.starts_with('/') {
        return Err(invalid("process.cwd", format!("{cwd:?} is not absolute")));
    }
    let user = process.user();
    let capabilities = capability_sets(process);
    let rlimits = rlimits(process)?;
    let console_size = console_size(process)?;
    let oci_process = OciProcess {
        args: args.clone(),
        env: process.env().clone().unwrap_or_default(),
        cwd,
        uid: user.uid(),
        gid: user.gid(),
        additional_gids: additional_gids(user.additional_gids().as_deref())?,
        rlimits,
        no_new_privileges: process.no_new_privileges().unwrap_or(false),
        oom_score_adj: process.oom_score_adj(),
        capabilities,
        terminal: process.terminal().unwrap_or(false),
        console_size,
        umask: user.umask(),
    };
    Ok(oci_process)
}

/// The capability sets, by name, sorted.
fn capability_sets(process: &oci_spec::runtime::Process) -> CapabilitySets {
    let caps = process.capabilities().clone().unwrap_or_default();
    let names = |s: &Option<oci_spec::runtime::Capabilities>| -> Vec<String> {
        let mut v: Vec<String> = s
            .iter()
            .flatten()
            .filter_map(|c| serde_json::to_value(c).ok())
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect();
        v.sort();
        v
    };
    CapabilitySets {
        bounding: names(caps.bounding()),
        effective: names(caps.effective()),
        inheritable: names(caps.inheritable()),
        permitted: names(caps.permitted()),
        ambient: names(caps.ambient()),
    }
}

/// `process.rlimits` as (resource, soft, hard).
fn rlimits(process: &oci_spec::runtime::Process) -> Result<Vec<(u32, u64, u64)>, BundleError> {
    let mut rlimits = Vec::new();
    for r in process.rlimits().iter().flatten() {
        let name = serde_json::to_value(r.typ())
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        let res = rlimit_number(&name)
            .ok_or_else(|| invalid("process.rlimits", format!("unknown limit {name:?}")))?;
        if r.soft() > r.hard() {
            return Err(invalid(
                "process.rlimits",
                format!("{name}: soft limit above the hard limit"),
            ));
        }
        rlimits.push((res, r.soft(), r.hard()));
    }
    Ok(rlimits)
}

/// `process.consoleSize` as (rows, columns).
fn console_size(process: &oci_spec::runtime::Process) -> Result<Option<(u16, u16)>, BundleError> {
    Ok(match process.console_size() {
        Some(b) => Some((
            u16::try_from(b.height())
                .map_err(|_| invalid("process.consoleSize.height", "more than 65535 rows"))?,
            u16::try_from(b.width())
                .map_err(|_| invalid("process.consoleSize.width", "more than 65535 columns"))?,
        )),
        None => None,
    })
}

/// `process.user.additionalGids`, each at most once (runc refuses duplicates too).
fn additional_gids(gids: Option<&[u32]>) -> Result<Vec<u32>, BundleError> {
    let gids = gids.unwrap_or_default().to_vec();
    let mut seen = std::collections::BTreeSet::new();
    if let Some(d) = gids.iter().find(|g| !seen.insert(**g)) {
        return Err(invalid(
            "process.user.additionalGids",
            format!("gid {d} is listed twice"),
        ));
    }
    Ok(gids)
}

pub fn rlimit_number(name: &str) -> Option<u32> {
    Some(match name {
        "RLIMIT_CPU" => libc::RLIMIT_CPU,
        "RLIMIT_FSIZE" => libc::RLIMIT_FSIZE,
        "RLIMIT_DATA" => libc::RLIMIT_DATA,
        "RLIMIT_STACK" => libc::RLIMIT_STACK,
        "RLIMIT_CORE" => libc::RLIMIT_CORE,
        "RLIMIT_RSS" => libc::RLIMIT_RSS,
        "RLIMIT_NPROC" => libc::RLIMIT_NPROC,
        "RLIMIT_NOFILE" => libc::RLIMIT_NOFILE,
        "RLIMIT_MEMLOCK" => libc::RLIMIT_MEMLOCK,
        "RLIMIT_AS" => libc::RLIMIT_AS,
        "RLIMIT_LOCKS" => libc::RLIMIT_LOCKS,
        "RLIMIT_SIGPENDING" => libc::RLIMIT_SIGPENDING,
        "RLIMIT_MSGQUEUE" => libc::RLIMIT_MSGQUEUE,
        "RLIMIT_NICE" => libc::RLIMIT_NICE,
        "RLIMIT_RTPRIO" => libc::RLIMIT_RTPRIO,
        "RLIMIT_RTTIME" => libc::RLIMIT_RTTIME,
        _ => return None,
    })
}

/// Fields maibox does not apply: refused by name, never dropped silently.
pub(super) fn refuse_unapplied(
    process: &oci_spec::runtime::Process,
    linux: &oci_spec::runtime::Linux,
) -> Result<(), BundleError> {
    let unapplied = |field: &str, hint: &str| unenforced(field, hint);
    let present = [
        (
            process.selinux_label().is_some(),
            "process.selinuxLabel",
            "no SELinux support",
        ),
        (
            linux.mount_label().is_some(),
            "linux.mountLabel",
            "no SELinux support",
        ),
        (
            process.scheduler().is_some(),
            "process.scheduler",
            "scheduling policies are not applied",
        ),
        (
            process.io_priority().is_some(),
            "process.ioPriority",
            "I/O priorities are not applied",
        ),
        (
            process.exec_cpu_affinity().is_some(),
            "process.execCPUAffinity",
            "CPU affinity is not applied",
        ),
        (
            linux.intel_rdt().is_some(),
            "linux.intelRdt",
            "no Intel RDT support",
        ),
        (
            linux.memory_policy().is_some(),
            "linux.memoryPolicy",
            "NUMA memory policies are not applied",
        ),
        (
            linux.personality().is_some(),
            "linux.personality",
            "execution domains are not applied",
        ),
        (
            linux.net_devices().is_some(),
            "linux.netDevices",
            "moving host network devices is not supported",
        ),
        (
            linux.time_offsets().is_some(),
            "linux.timeOffsets",
            "time namespaces are not supported",
        ),
    ];
    if let Some((_, field, hint)) = present.iter().find(|(on, _, _)| *on) {
        return Err(unapplied(field, hint));
    }
    Ok(())
}
