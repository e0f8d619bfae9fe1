//! `maibox --hardened`: a strict OCI runtime. Registered beside the plain one (Docker's
//! `"maibox-strict": {"path": ".../maibox", "runtimeArgs": ["--hardened"]}`), it puts
//! the untrusted trust level's kernel hardening on top of whatever bundle it gets;
//! the plain runtime stays runc-compatible. What it adds (docs/oci.md says what each
//! may break):
//!
//! - seccomp: the untrusted level's `kill_on` calls (io_uring, bpf, userfaultfd,
//!   perf_event_open, keyctl, ptrace...) and every foreign-ABI and x32 call kill the
//!   process, even where the bundle's profile allows them: a filter of its own,
//!   stacked on the bundle's (the kernel keeps the most severe answer);
//! - Landlock on the container's root, from its mount table
//!   ([`crate::confine::landlock_mounts`]): read-only mounts stay read-only, no
//!   program runs from a writable tmpfs the bundle did not mount `exec`;
//! - `RLIMIT_NOFILE` at most the untrusted level's `nofile`;
//! - /proc: Docker's masks and read-only paths where the bundle lacks them, the
//!   host's kernel command line and boot configuration masked, and a boot id of the
//!   container's own (made by the init: [`crate::engine::oci`]);
//! - an inode bound on every tmpfs the bundle gives a size (one per 4 KiB).
//!
//! The same applies to a process `exec` starts in a container made strict.

use std::path::PathBuf;

use oci_spec::runtime::Spec;

use super::error::OciError;
use crate::confine::seccomp::oci::Compiled;
use crate::policy::oci::{Hardening, OciProcess, OciView};

/// The untrusted level's settings the hardening takes.
pub struct Level {
    pub kill_on: Vec<String>,
    pub nofile: u64,
}

impl Level {
    /// From the configuration maibox would use for a run (`MAIBOX_CONFIG`, the
    /// system file, or the built-in one).
    pub fn load() -> Result<Level, OciError> {
        let (cfg, origin) = crate::config::Config::load(None)
            .map_err(|e| OciError::Refused(format!("--hardened: {e}")))?;
        let l = cfg.level(crate::config::TrustLevel::Untrusted);
        if l.nofile == 0 {
            return Err(OciError::Refused(format!(
                "--hardened: levels.untrusted.nofile in {origin} must be at least 1"
            )));
        }
        Ok(Level {
            kill_on: l.seccomp.kill_on.clone(),
            nofile: l.nofile,
        })
    }
}

/// Docker's default masked paths, and the host's identity.
const MASKED: &[&str] = &[
    "/proc/asound",
    "/proc/acpi",
    "/proc/kcore",
    "/proc/keys",
    "/proc/latency_stats",
    "/proc/timer_list",
    "/proc/timer_stats",
    "/proc/sched_debug",
    "/proc/scsi",
    "/proc/kallsyms",
    "/proc/kpagecount",
    "/proc/kpageflags",
    "/proc/kpagecgroup",
    "/proc/config.gz",
    "/sys/firmware",
    "/sys/devices/virtual/powercap",
    "/proc/cmdline",
    "/proc/bootconfig",
];
/// Docker's default read-only paths.
const READ_ONLY: &[&str] = &[
    "/proc/bus",
    "/proc/fs",
    "/proc/irq",
    "/proc/sys",
    "/proc/sysrq-trigger",
];

/// Makes `view` strict (see the module's header).
pub fn apply(view: &mut OciView, spec: &Spec, level: &Level) {
    for (list, extra) in [
        (&mut view.masked_paths, MASKED),
        (&mut view.readonly_paths, READ_ONLY),
    ] {
        for p in extra.iter() {
            if !list.iter().any(|x| x == p) {
                list.push(p.to_string());
            }
        }
    }
    process(&mut view.process, level);
    view.seccomp = Some(seccomp(view.seccomp.take(), level));
    for m in view
        .mounts
        .iter_mut()
        .filter(|m| m.kind == "tmpfs" && !m.bind)
    {
        m.data = bound_inodes(&m.data);
    }
    view.hardening = Some(Hardening {
        exec_tmpfs: exec_tmpfs(spec),
    });
}

/// The process's limits: `RLIMIT_NOFILE` at most the level's.
pub fn process(p: &mut OciProcess, level: &Level) {
    let nofile = libc::RLIMIT_NOFILE;
    match p.rlimits.iter_mut().find(|(r, _, _)| *r == nofile) {
        Some((_, soft, hard)) => {
            *soft = (*soft).min(level.nofile);
            *hard = (*hard).min(level.nofile);
        }
        None => p.rlimits.push((nofile, level.nofile, level.nofile)),
    }
}

/// The bundle's compiled profile (if any) with the kill guard stacked on it.
pub fn seccomp(c: Option<Compiled>, level: &Level) -> Compiled {
    let mut c = c.unwrap_or_default();
    c.programs
        .push(crate::confine::seccomp::kill_guard(&level.kill_on));
    c
}

/// Writable tmpfs mounts of `spec` with an explicit `exec` option.
pub fn exec_tmpfs(spec: &Spec) -> Vec<PathBuf> {
    spec.mounts()
        .iter()
        .flatten()
        .filter(|m| m.typ().as_deref() == Some("tmpfs"))
        .filter(|m| m.options().iter().flatten().any(|o| o == "exec"))
        .map(|m| m.destination().clone())
        .collect()
}

/// A tmpfs's mount data with `nr_inodes` added, one inode per 4 KiB of its `size`
/// (at least 256), when it names a size in bytes and no inode bound. A size in
/// percent of the host's memory, or none, is left as it is.
pub fn bound_inodes(data: &str) -> String {
    let opts: Vec<&str> = data.split(',').filter(|o| !o.is_empty()).collect();
    if opts.iter().any(|o| o.starts_with("nr_inodes=")) {
        return data.to_string();
    }
    let Some(size) = opts
        .iter()
        .find_map(|o| o.strip_prefix("size="))
        .and_then(tmpfs_size)
    else {
        return data.to_string();
    };
    let inodes = crate::engine::mounts::inodes_for(size);
    let mut out = opts.join(",");
    if !out.is_empty() {
        out.push(',');
    }
    out + &format!("nr_inodes={inodes}")
}

/// A tmpfs `size=` value in bytes (`65536k`, `64m`, `1g`, `4096`); `None` for a
/// percentage or anything else.
fn tmpfs_size(v: &str) -> Option<u64> {
    let (num, mult) = match v.chars().last()? {
        'k' | 'K' => (&v[..v.len() - 1], 1u64 << 10),
        'm' | 'M' => (&v[..v.len() - 1], 1 << 20),
        'g' | 'G' => (&v[..v.len() - 1], 1 << 30),
        't' | 'T' => (&v[..v.len() - 1], 1 << 40),
        _ => (v, 1),
    };
    num.parse::<u64>().ok()?.checked_mul(mult)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tmpfs_sizes_get_an_inode_bound() {
        assert_eq!(
            bound_inodes("size=65536k,mode=755"),
            "size=65536k,mode=755,nr_inodes=16384"
        );
        assert_eq!(
            bound_inodes("mode=1777,size=64m"),
            "mode=1777,size=64m,nr_inodes=16384"
        );
        assert_eq!(bound_inodes("size=4096"), "size=4096,nr_inodes=256");
        for kept in ["size=50%", "mode=755", "", "size=1g,nr_inodes=10"] {
            assert_eq!(bound_inodes(kept), kept);
        }
    }

    #[test]
    fn nofile_is_capped_or_added() {
        let level = Level {
            kill_on: Vec::new(),
            nofile: 256,
        };
        let mut p = OciProcess {
            args: vec!["sh".into()],
            env: Vec::new(),
            cwd: "/".into(),
            uid: 0,
            gid: 0,
            additional_gids: Vec::new(),
            rlimits: vec![(libc::RLIMIT_NOFILE, 1 << 20, 1 << 20)],
            no_new_privileges: false,
            oom_score_adj: None,
            capabilities: Default::default(),
            terminal: false,
            console_size: None,
            umask: None,
        };
        process(&mut p, &level);
        assert_eq!(p.rlimits, vec![(libc::RLIMIT_NOFILE, 256, 256)]);
        p.rlimits.clear();
        process(&mut p, &level);
        assert_eq!(p.rlimits, vec![(libc::RLIMIT_NOFILE, 256, 256)]);
    }
}
