//! `update`: new resource settings for a running container, from runc's flags or
//! a LinuxResources JSON (`-r FILE`, `-r -` for stdin, as `docker update` sends
//! it). Only the settings given are written, each to the container's cgroup
//! file as given; the rest stay as they are. As with runc, a zero means "not
//! given" and -1 "unlimited".
//!
//! Memory+swap is written as runc 1.1 writes it (see
//! [`crate::cgroup::resources::memory`]), except in a strict container
//! (`--hardened`), which gets no swap: there the memory+swap limit follows the
//! memory limit, and a swap asked for is not applied, with a warning. As at
//! `create`, settings maibox cannot apply (device rules, kernel memory,
//! hugepages, raw v2 settings) are refused rather than dropped.

use std::path::{Path, PathBuf};

use clap::Args;

use crate::cgroup::resources::blkio::{self, BlockIo};
use crate::cgroup::resources::{apply, Changes, Swap};
use crate::oci::cli::Global;
use crate::oci::error::OciError;
use crate::oci::state::{Container, Status};

#[derive(Args, Debug)]
pub struct UpdateArgs {
    /// LinuxResources JSON from a file, or `-` for stdin.
    #[arg(long, short = 'r')]
    pub resources: Option<PathBuf>,
    #[command(flatten)]
    pub flags: UpdateFlags,
    pub id: String,
}

/// runc's `update` flags. Sizes take k, m, g, t suffixes (binary, as runc's).
#[derive(Args, Debug, Default)]
pub struct UpdateFlags {
    /// Memory limit in bytes (-1: unlimited).
    #[arg(long, short = 'm', allow_negative_numbers = true, value_parser = parse_size)]
    memory: Option<i64>,
    /// Memory soft limit in bytes (-1: none).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_size)]
    memory_reservation: Option<i64>,
    /// Memory plus swap (-1: unlimited swap); not applied in a `--hardened`
    /// container, which gets no swap.
    #[arg(long, allow_negative_numbers = true, value_parser = parse_size)]
    memory_swap: Option<i64>,
    /// CPU CFS quota in microseconds per period (-1: unlimited).
    #[arg(long, allow_negative_numbers = true)]
    cpu_quota: Option<i64>,
    /// CPU CFS period in microseconds.
    #[arg(long)]
    cpu_period: Option<u64>,
    /// CPU shares (relative weight).
    #[arg(long)]
    cpu_share: Option<u64>,
    /// Realtime period in microseconds (cgroup v1).
    #[arg(long)]
    cpu_rt_period: Option<u64>,
    /// Realtime runtime in microseconds per period (cgroup v1).
    #[arg(long, allow_negative_numbers = true)]
    cpu_rt_runtime: Option<i64>,
    /// CPUs the container may use, e.g. 0-2,4.
    #[arg(long)]
    cpuset_cpus: Option<String>,
    /// Memory nodes the container may use, e.g. 0.
    #[arg(long)]
    cpuset_mems: Option<String>,
    /// Maximum number of processes (-1: unlimited).
    #[arg(long, allow_negative_numbers = true)]
    pids_limit: Option<i64>,
    /// Refused: kernel memory limits are not supported.
    #[arg(long, value_parser = parse_size)]
    kernel_memory: Option<i64>,
    /// Refused: kernel memory limits are not supported.
    #[arg(long, value_parser = parse_size)]
    kernel_memory_tcp: Option<i64>,
    /// Block I/O weight (10 to 1000).
    #[arg(long)]
    blkio_weight: Option<u16>,
}

/// A size as runc's flags take it: bytes, or a number with a binary unit
/// (`50M`, `1g`, `512KiB`); `-1` is "unlimited".
pub fn parse_size(s: &str) -> Result<i64, String> {
    let t = s.trim();
    if t == "-1" {
        return Ok(-1);
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num
        .parse()
        .map_err(|_| format!("invalid size {s:?}: expected bytes, e.g. 67108864, 64m or -1"))?;
    let unit = unit.trim().to_ascii_lowercase();
    let unit = unit.trim_end_matches('b').trim_end_matches('i');
    let mult: u64 = match unit {
        "" => 1,
        "k" => 1 << 10,
        "m" => 1 << 20,
        "g" => 1 << 30,
        "t" => 1 << 40,
        "p" => 1 << 50,
        _ => {
            return Err(format!(
                "invalid size {s:?}: unknown unit (use k, m, g or t)"
            ))
        }
    };
    let v = n * mult as f64;
    if !v.is_finite() || v < 0.0 || v > i64::MAX as f64 {
        return Err(format!("invalid size {s:?}: out of range"));
    }
    Ok(v as i64)
}

fn refused(m: impl Into<String>) -> OciError {
    OciError::Refused(m.into())
}

fn nonzero_i(v: Option<i64>) -> Option<i64> {
    v.filter(|v| *v != 0)
}

fn nonzero_u(v: Option<u64>) -> Option<u64> {
    v.filter(|v| *v != 0)
}

fn nonempty(v: Option<String>) -> Option<String> {
    v.filter(|v| !v.is_empty())
}

impl UpdateFlags {
    fn changes(&self) -> Result<Option<Changes>, OciError> {
        if self.kernel_memory.is_some() || self.kernel_memory_tcp.is_some() {
            return Err(refused(
                "--kernel-memory: kernel memory limits are not supported",
            ));
        }
        let c = Changes {
            memory: nonzero_i(self.memory),
            reservation: nonzero_i(self.memory_reservation),
            swap: nonzero_i(self.memory_swap),
            shares: nonzero_u(self.cpu_share),
            quota: nonzero_i(self.cpu_quota),
            period: nonzero_u(self.cpu_period),
            rt_period: nonzero_u(self.cpu_rt_period),
            rt_runtime: nonzero_i(self.cpu_rt_runtime),
            cpus: nonempty(self.cpuset_cpus.clone()),
            mems: nonempty(self.cpuset_mems.clone()),
            pids: nonzero_i(self.pids_limit),
            blkio: self.blkio_weight.filter(|w| *w != 0).map(|w| BlockIo {
                weight: Some(w),
                ..BlockIo::default()
            }),
        };
        Ok((c != Changes::default()).then_some(c))
    }
}

/// The changes a LinuxResources document asks for; what maibox cannot apply is
/// refused.
pub fn changes_from(r: &oci_spec::runtime::LinuxResources) -> Result<Changes, OciError> {
    if r.devices().as_ref().is_some_and(|d| !d.is_empty()) {
        return Err(refused(
            "update of device rules is not supported (they are fixed at create)",
        ));
    }
    // The rest of what maibox refuses, with create's words.
    let mut rest = r.clone();
    rest.set_devices(None);
    rest.set_block_io(None);
    rest.set_memory(None);
    rest.set_cpu(None);
    rest.set_pids(None);
    crate::cgroup::oci::limits(&rest).map_err(crate::oci::bundle::BundleError::from)?;
    let mut c = Changes::default();
    if let Some(m) = r.memory() {
        if m.kernel().is_some_and(|v| v != 0) || m.kernel_tcp().is_some_and(|v| v != 0) {
            return Err(refused(
                "memory.kernel: kernel memory limits are not supported",
            ));
        }
        c.memory = nonzero_i(m.limit());
        c.reservation = nonzero_i(m.reservation());
        c.swap = nonzero_i(m.swap());
    }
    if let Some(cpu) = r.cpu() {
        c.shares = nonzero_u(cpu.shares());
        c.quota = nonzero_i(cpu.quota());
        c.period = nonzero_u(cpu.period());
        c.rt_period = nonzero_u(cpu.realtime_period());
        c.rt_runtime = nonzero_i(cpu.realtime_runtime());
        c.cpus = nonempty(cpu.cpus().clone());
        c.mems = nonempty(cpu.mems().clone());
    }
    c.pids = r.pids().as_ref().and_then(|p| nonzero_i(Some(p.limit())));
    if let Some(b) = r.block_io() {
        let b = blkio::from_spec(b).map_err(|e| refused(format!("blockIO: {e}")))?;
        c.blkio = (!b.is_empty()).then_some(b);
    }
    Ok(c)
}

/// Runs `update`.
pub fn update(g: &Global, a: &UpdateArgs) -> Result<(), OciError> {
    let c = Container::open(&g.root, &a.id, true)?;
    let s = c.load()?;
    if c.status(&s) == Status::Stopped {
        return Err(refused(format!("container {} is not running", a.id)));
    }
    let changes = match (&a.resources, a.flags.changes()?) {
        (None, Some(c)) => c,
        (Some(_), Some(_)) => {
            return Err(refused(
                "update takes --resources or the limit flags, not both",
            ))
        }
        (None, None) => {
            return Err(refused(
                "update needs --resources FILE (or - for stdin), or a limit flag such as \
                 --memory, --cpu-quota, --cpuset-cpus or --pids-limit",
            ))
        }
        (Some(p), None) => changes_from(&read_resources(p)?)?,
    };
    if s.cgroup_paths.is_empty() {
        return Err(refused(format!(
            "container {} has no cgroup to update",
            a.id
        )));
    }
    let rule = Swap::of(g.hardened || s.hardened);
    if let Some(w) = swap_warning(&changes, rule) {
        eprintln!("maibox: warning: {w}");
    }
    apply(&s.cgroup_paths, &changes, rule)
        .map_err(|e| refused(format!("update container {}: {e}", a.id)))
}

fn read_resources(p: &Path) -> Result<oci_spec::runtime::LinuxResources, OciError> {
    let text = if p == Path::new("-") {
        let mut t = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut t).map_err(|source| {
            OciError::Io {
                what: "read the resources from stdin".into(),
                source,
            }
        })?;
        t
    } else {
        std::fs::read_to_string(p).map_err(|source| OciError::Io {
            what: format!("read {}", p.display()),
            source,
        })?
    };
    serde_json::from_str(&text)
        .map_err(|e| refused(format!("--resources: not LinuxResources JSON: {e}")))
}

/// A strict container gets no swap: say so when an update asks for any.
fn swap_warning(c: &Changes, rule: Swap) -> Option<String> {
    rule.not_applied("memory swap", c.memory, c.swap)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_as_runc_takes_them() {
        assert_eq!(parse_size("67108864").unwrap(), 67108864);
        assert_eq!(parse_size("50M").unwrap(), 50 << 20);
        assert_eq!(parse_size("1g").unwrap(), 1 << 30);
        assert_eq!(parse_size("512KiB").unwrap(), 512 << 10);
        assert_eq!(parse_size("-1").unwrap(), -1);
        for bad in ["", "-2", "1x", "m"] {
            assert!(parse_size(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn zero_means_not_given_and_swap_warns_only_when_withheld() {
        let r: oci_spec::runtime::LinuxResources = serde_json::from_str(
            r#"{"memory": {"limit": 0, "swap": 96468992}, "cpu": {"period": 900000}, "pids": {"limit": -1}}"#,
        )
        .unwrap();
        let c = changes_from(&r).unwrap();
        assert_eq!(c.memory, None);
        assert_eq!(c.period, Some(900000));
        assert_eq!(c.quota, None);
        assert_eq!(c.pids, Some(-1));
        assert_eq!(c.swap, Some(96468992));
        assert_eq!(swap_warning(&c, Swap::AsGiven), None);
        assert!(swap_warning(&c, Swap::Withheld)
            .unwrap()
            .contains("no swap"));
        let lift = Changes {
            swap: Some(-1),
            ..Changes::default()
        };
        assert!(swap_warning(&lift, Swap::Withheld).is_some());
        let same = Changes {
            memory: Some(1 << 20),
            swap: Some(1 << 20),
            ..Changes::default()
        };
        assert_eq!(swap_warning(&same, Swap::Withheld), None);
    }
}
