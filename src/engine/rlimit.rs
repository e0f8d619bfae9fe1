//! Per-process resource limits, the first line of defence before cgroups.

use crate::error::{SetupError, Step};
use crate::policy::Policy;
use nix::sys::resource::Resource;

/// One rlimit to set: the kernel's resource number, soft and hard limits, and its
/// name for errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Setting {
    pub resource: i32,
    pub soft: u64,
    pub hard: u64,
    #[serde(skip)]
    pub name: &'static str,
}

/// The level's rlimits; with `memory_per_process` (no cgroup bounds the sandbox),
/// its memory too, as a bound on each process's data (see [`memory_bound`]).
pub fn settings(policy: &Policy, memory_per_process: bool) -> Vec<Setting> {
    let l = &policy.limits;
    let at = |r: Resource, v: u64, name| Setting {
        resource: r as i32,
        soft: v,
        hard: v,
        name,
    };
    let mut s = vec![
        at(Resource::RLIMIT_NOFILE, l.nofile, "NOFILE"),
        at(Resource::RLIMIT_FSIZE, l.fsize_bytes, "FSIZE"),
        at(Resource::RLIMIT_CORE, 0, "CORE"),
        // NPROC is counted per user in the sandbox's own user namespace, so it bounds
        // this sandbox's processes and threads without touching the host user's count.
        at(Resource::RLIMIT_NPROC, l.pids, "NPROC"),
    ];
    if memory_per_process {
        s.push(at(
            Resource::RLIMIT_DATA,
            memory_bound(l.memory_bytes),
            "DATA",
        ));
    }
    if let Some(cpu) = l.cpu_time {
        // Per process, a fallback for runs without a cgroup: SIGXCPU at the soft
        // limit (reported as a `cpu` violation), SIGKILL a second later.
        let soft = cpu.as_secs_f64().ceil() as u64;
        s.push(Setting {
            hard: soft + 1,
            ..at(Resource::RLIMIT_CPU, soft, "CPU")
        });
    }
    s
}

/// Sets the level's rlimits (see [`settings`]) on the calling process.
pub fn apply(policy: &Policy, memory_per_process: bool) -> Result<(), SetupError> {
    settings(policy, memory_per_process)
        .iter()
        .try_for_each(|s| set(s.resource, s.soft, s.hard, s.name))
}

fn set(resource: i32, soft: u64, hard: u64, what: &str) -> Result<(), SetupError> {
    let lim = libc::rlimit {
        rlim_cur: soft,
        rlim_max: hard,
    };
    // SAFETY: a valid rlimit struct; the resource number is one of the kernel's (ours,
    // or an OCI spec's, checked at parse time).
    if unsafe { libc::setrlimit(resource as _, &lim) } != 0 {
        return Err(SetupError::new(
            Step::Rlimits,
            format!(
                "setrlimit {what}={soft} (hard {hard}): {}",
                std::io::Error::last_os_error()
            ),
        ));
    }
    Ok(())
}

/// The per-process memory bound of a sandbox without a cgroup: RLIMIT_DATA at the
/// level's memory. RLIMIT_DATA counts what can become anonymous memory (heap,
/// anonymous mappings, thread stacks) and, unlike RLIMIT_AS, not the interpreter's
/// libraries nor address space reserved but never made writable, which would fail
/// ordinary code long before it used its memory. It bounds each process, not the
/// sandbox: `pids` processes may each take it, and tmpfs files and kernel memory are
/// outside it (the tmpfs sizes and inode bounds cap those).
pub fn memory_bound(memory_bytes: u64) -> u64 {
    memory_bytes
}

/// One rlimit by its kernel number, as an OCI spec gives it (checked at parse time;
/// nix's `Resource` cannot be built from a number).
pub fn set_raw(resource: u32, soft: u64, hard: u64) -> Result<(), SetupError> {
    set(resource as i32, soft, hard, &format!("resource {resource}"))
}
