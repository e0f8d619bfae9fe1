//! Resource settings written to a container's groups (v1: one per controller;
//! v2: one): memory and swap ([`memory`]), CPU, pids ([`apply`] of [`Changes`],
//! for `update` and for the exact values at `create`), cpusets ([`cpuset`]), block I/O ([`blkio`]),
//! device rules ([`devices`] on v1, [`devfilter`] on v2).

use std::path::{Path, PathBuf};

use self::blkio::BlockIo;

pub mod blkio;
pub mod cpuset;
pub mod devfilter;
pub mod devices;
pub mod memory;

pub use memory::Swap;

/// The settings an update writes; `None` (or runc's 0) leaves one as it is.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Changes {
    pub memory: Option<i64>,
    pub reservation: Option<i64>,
    pub swap: Option<i64>,
    pub shares: Option<u64>,
    pub quota: Option<i64>,
    pub period: Option<u64>,
    pub rt_period: Option<u64>,
    pub rt_runtime: Option<i64>,
    pub cpus: Option<String>,
    pub mems: Option<String>,
    pub pids: Option<i64>,
    pub blkio: Option<BlockIo>,
}

/// runc's conversion of v1 CPU shares [2, 262144] to a v2 weight [1, 10000].
pub fn shares_to_weight(shares: u64) -> u64 {
    1 + ((shares.clamp(2, 262_144) - 2) * 9999) / 262_142
}

/// Enables `controller` in the subtree_control of every ancestor of the v2 group
/// `leaf`, from the root down, so that `leaf` gets its files.
pub fn enable_v2_controller(leaf: &Path, controller: &str) -> Result<(), String> {
    let root = Path::new("/sys/fs/cgroup");
    let mut chain: Vec<&Path> = leaf
        .ancestors()
        .skip(1)
        .take_while(|a| a.starts_with(root))
        .collect();
    chain.reverse();
    for a in chain {
        let sub = a.join("cgroup.subtree_control");
        let have = std::fs::read_to_string(&sub).unwrap_or_default();
        if !have.split_whitespace().any(|c| c == controller) {
            std::fs::write(&sub, format!("+{controller}"))
                .map_err(|e| format!("write +{controller} to {}: {e}", sub.display()))?;
        }
    }
    Ok(())
}

/// The first of `dirs` holding `file`.
fn holding<'a>(dirs: &'a [PathBuf], file: &str) -> Option<&'a Path> {
    dirs.iter()
        .map(PathBuf::as_path)
        .find(|d| d.join(file).exists())
}

fn write(f: &Path, v: &str) -> Result<(), std::io::Error> {
    std::fs::write(f, v)
}

fn described<'a>(f: &'a Path, v: &'a str) -> impl FnOnce(std::io::Error) -> String + 'a {
    move |e| format!("write {v} to {}: {e}", f.display())
}

/// Writes two settings whose valid values depend on each other (CFS period and
/// quota, realtime period and runtime, memory and memory+swap): `first` first,
/// unless the kernel refuses it (EINVAL) until `second` is in place.
fn write_pair(
    first: Option<(PathBuf, String)>,
    second: Option<(PathBuf, String)>,
) -> Result<(), String> {
    match (first, second) {
        (Some((f1, v1)), Some((f2, v2))) => match write(&f1, &v1) {
            Ok(()) => write(&f2, &v2).map_err(described(&f2, &v2)),
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                write(&f2, &v2).map_err(described(&f2, &v2))?;
                write(&f1, &v1).map_err(described(&f1, &v1))
            }
            Err(e) => Err(described(&f1, &v1)(e)),
        },
        (Some((f, v)), None) | (None, Some((f, v))) => write(&f, &v).map_err(described(&f, &v)),
        (None, None) => Ok(()),
    }
}

fn v1_value(v: i64) -> String {
    if v < 0 {
        "-1".into()
    } else {
        v.to_string()
    }
}

fn v2_value(v: i64) -> String {
    if v < 0 {
        "max".into()
    } else {
        v.to_string()
    }
}

/// Writes `c` to the container's groups `dirs` (v1: one per controller; v2:
/// one), memory+swap by `swap`'s rule.
pub fn apply(dirs: &[PathBuf], c: &Changes, swap: Swap) -> Result<(), String> {
    memory::apply(dirs, c, swap)?;
    cpu(dirs, c)?;
    cpuset::update(dirs, c)?;
    pids(dirs, c)?;
    match &c.blkio {
        Some(b) => blkio::apply(dirs, b),
        None => Ok(()),
    }
}

fn cpu(dirs: &[PathBuf], c: &Changes) -> Result<(), String> {
    let any = c.shares.is_some()
        || c.quota.is_some()
        || c.period.is_some()
        || c.rt_period.is_some()
        || c.rt_runtime.is_some();
    if !any {
        return Ok(());
    }
    if let Some(d) = holding(dirs, "cpu.cfs_quota_us") {
        if let Some(s) = c.shares {
            let (f, v) = (d.join("cpu.shares"), s.to_string());
            write(&f, &v).map_err(described(&f, &v))?;
        }
        write_pair(
            c.period
                .map(|p| (d.join("cpu.cfs_period_us"), p.to_string())),
            c.quota.map(|q| (d.join("cpu.cfs_quota_us"), v1_value(q))),
        )?;
        if c.rt_period.is_some() || c.rt_runtime.is_some() {
            if !d.join("cpu.rt_runtime_us").exists() {
                return Err(
                    "realtime CPU limits need a kernel with realtime group scheduling".into(),
                );
            }
            write_pair(
                c.rt_period
                    .map(|p| (d.join("cpu.rt_period_us"), p.to_string())),
                c.rt_runtime
                    .map(|r| (d.join("cpu.rt_runtime_us"), v1_value(r))),
            )?;
        }
        return Ok(());
    }
    let d = holding(dirs, "cpu.max").ok_or("the container has no cpu cgroup")?;
    if c.rt_period.is_some() || c.rt_runtime.is_some() {
        return Err(
            "realtime CPU limits need cgroup v1 (cgroup v2 has no per-group realtime budget)"
                .into(),
        );
    }
    if let Some(s) = c.shares {
        let (f, v) = (d.join("cpu.weight"), shares_to_weight(s).to_string());
        write(&f, &v).map_err(described(&f, &v))?;
    }
    if c.quota.is_some() || c.period.is_some() {
        let f = d.join("cpu.max");
        let now = std::fs::read_to_string(&f).map_err(|e| format!("read {}: {e}", f.display()))?;
        let mut parts = now.split_whitespace();
        let (q, p) = (
            parts.next().unwrap_or("max"),
            parts.next().unwrap_or("100000"),
        );
        let q = c.quota.map_or(q.to_string(), v2_value);
        let p = c.period.map_or(p.to_string(), |p| p.to_string());
        let v = format!("{q} {p}");
        write(&f, &v).map_err(described(&f, &v))?;
    }
    Ok(())
}

fn pids(dirs: &[PathBuf], c: &Changes) -> Result<(), String> {
    let Some(n) = c.pids else { return Ok(()) };
    let d = holding(dirs, "pids.max").ok_or("the container has no pids cgroup")?;
    let (f, v) = (d.join("pids.max"), v2_value(n));
    write(&f, &v).map_err(described(&f, &v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_are_written_in_order_and_errors_name_the_file() {
        // The EINVAL retry needs the kernel (tests/oci.rs, under a pod limit).
        let d = tempfile::tempdir().unwrap();
        let (p, q) = (d.path().join("period"), d.path().join("quota"));
        write_pair(Some((p.clone(), "1".into())), Some((q.clone(), "2".into()))).unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "1");
        assert_eq!(std::fs::read_to_string(&q).unwrap(), "2");
        let missing = d.path().join("no/such");
        let e = write_pair(Some((missing, "3".into())), None).unwrap_err();
        assert!(e.contains("write 3 to"), "{e}");
    }
}
