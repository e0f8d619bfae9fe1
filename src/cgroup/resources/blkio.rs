//! `linux.resources.blockIO`: I/O weights and throttles on the container's
//! group, through v1's blkio controller or v2's io controller.
//!
//! Weights go to the BFQ scheduler's files where it is in use (v1
//! `blkio.bfq.weight`, v2 `io.bfq.weight`), else to the controller's own
//! (`blkio.weight`, `io.weight` on v2's 1–10000 scale). A setting the host has
//! no file for, and `leafWeight` (CFQ only, gone from current kernels), is
//! refused rather than dropped.

use std::path::{Path, PathBuf};

use oci_spec::runtime::{LinuxBlockIo, LinuxThrottleDevice};

/// What a spec or an update asks of block I/O.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct BlockIo {
    pub weight: Option<u16>,
    /// (major, minor, weight).
    pub device_weights: Vec<(i64, i64, u16)>,
    pub throttles: Vec<Throttle>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    ReadBps,
    WriteBps,
    ReadIops,
    WriteIops,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Throttle {
    pub limit: Limit,
    pub major: i64,
    pub minor: i64,
    pub rate: u64,
}

impl Limit {
    fn v1_file(self) -> &'static str {
        match self {
            Limit::ReadBps => "blkio.throttle.read_bps_device",
            Limit::WriteBps => "blkio.throttle.write_bps_device",
            Limit::ReadIops => "blkio.throttle.read_iops_device",
            Limit::WriteIops => "blkio.throttle.write_iops_device",
        }
    }

    fn v2_key(self) -> &'static str {
        match self {
            Limit::ReadBps => "rbps",
            Limit::WriteBps => "wbps",
            Limit::ReadIops => "riops",
            Limit::WriteIops => "wiops",
        }
    }
}

impl BlockIo {
    pub fn is_empty(&self) -> bool {
        self.weight.is_none() && self.device_weights.is_empty() && self.throttles.is_empty()
    }
}

/// The spec's `blockIO`, or why maibox cannot apply it.
/// A weight of 0 is "not set", as runc reads it: Docker sends `{"weight": 0}`
/// for every container.
pub fn from_spec(b: &LinuxBlockIo) -> Result<BlockIo, String> {
    let set = |w: Option<u16>| w.filter(|w| *w != 0);
    let leaf = set(b.leaf_weight()).is_some()
        || b.weight_device()
            .iter()
            .flatten()
            .any(|d| set(d.leaf_weight()).is_some());
    if leaf {
        return Err("leafWeight is a CFQ setting that current kernels no longer have".into());
    }
    let mut out = BlockIo {
        weight: set(b.weight()),
        device_weights: b
            .weight_device()
            .iter()
            .flatten()
            .filter_map(|d| Some((d.major(), d.minor(), set(d.weight())?)))
            .collect(),
        throttles: Vec::new(),
    };
    let lists: [(Limit, &Option<Vec<LinuxThrottleDevice>>); 4] = [
        (Limit::ReadBps, b.throttle_read_bps_device()),
        (Limit::WriteBps, b.throttle_write_bps_device()),
        (Limit::ReadIops, b.throttle_read_iops_device()),
        (Limit::WriteIops, b.throttle_write_iops_device()),
    ];
    for (limit, list) in lists {
        out.throttles
            .extend(list.iter().flatten().map(|t| Throttle {
                limit,
                major: t.major(),
                minor: t.minor(),
                rate: t.rate(),
            }));
    }
    Ok(out)
}

fn write(f: &Path, v: &str) -> Result<(), String> {
    std::fs::write(f, v).map_err(|e| format!("write {v:?} to {}: {e}", f.display()))
}

/// The first of `dirs` holding `file`.
fn holding<'a>(dirs: &'a [PathBuf], file: &str) -> Option<&'a Path> {
    dirs.iter()
        .map(PathBuf::as_path)
        .find(|d| d.join(file).exists())
}

/// v2's io.weight scale (1–10000) for a v1/BFQ weight (10–1000), as runc maps it.
fn v2_weight(w: u16) -> u64 {
    1 + (u64::from(w).clamp(10, 1000) - 10) * 9999 / 990
}

/// Writes `b` to the container's groups `dirs` (its v1 blkio group, or its v2
/// group with the io controller enabled).
pub fn apply(dirs: &[PathBuf], b: &BlockIo) -> Result<(), String> {
    if b.is_empty() {
        return Ok(());
    }
    if let Some(d) = holding(dirs, "blkio.throttle.read_bps_device") {
        return apply_v1(d, b);
    }
    if let Some(d) = holding(dirs, "io.max") {
        return apply_v2(d, b);
    }
    Err("the container has no blkio (v1) or io (v2) cgroup to apply block I/O limits in".into())
}

fn apply_v1(d: &Path, b: &BlockIo) -> Result<(), String> {
    let (weight, device) = if d.join("blkio.bfq.weight").exists() {
        ("blkio.bfq.weight", "blkio.bfq.weight_device")
    } else {
        ("blkio.weight", "blkio.weight_device")
    };
    let weights_wanted = b.weight.is_some() || !b.device_weights.is_empty();
    if weights_wanted && !d.join(weight).exists() {
        return Err(
            "block I/O weights need an I/O scheduler with weights (BFQ) on the host".into(),
        );
    }
    if let Some(w) = b.weight {
        write(&d.join(weight), &w.to_string())?;
    }
    for (major, minor, w) in &b.device_weights {
        write(&d.join(device), &format!("{major}:{minor} {w}"))?;
    }
    for t in &b.throttles {
        write(
            &d.join(t.limit.v1_file()),
            &format!("{}:{} {}", t.major, t.minor, t.rate),
        )?;
    }
    Ok(())
}

fn apply_v2(d: &Path, b: &BlockIo) -> Result<(), String> {
    let bfq = d.join("io.bfq.weight").exists();
    let weights_wanted = b.weight.is_some() || !b.device_weights.is_empty();
    if weights_wanted && !bfq && !d.join("io.weight").exists() {
        return Err("block I/O weights need io.weight or BFQ's io.bfq.weight on the host".into());
    }
    let weight = |w: u16| {
        if bfq {
            u64::from(w)
        } else {
            v2_weight(w)
        }
    };
    let file = d.join(if bfq { "io.bfq.weight" } else { "io.weight" });
    if let Some(w) = b.weight {
        write(&file, &format!("default {}", weight(w)))?;
    }
    for (major, minor, w) in &b.device_weights {
        write(&file, &format!("{major}:{minor} {}", weight(*w)))?;
    }
    for t in &b.throttles {
        write(
            &d.join("io.max"),
            &format!("{}:{} {}={}", t.major, t.minor, t.limit.v2_key(), t.rate),
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_maps_and_leaf_weight_is_refused() {
        let b: LinuxBlockIo = serde_json::from_str(
            r#"{"weight": 333, "weightDevice": [{"major": 7, "minor": 0, "weight": 444}],
                "throttleReadBpsDevice": [{"major": 8, "minor": 0, "rate": 1048576}]}"#,
        )
        .unwrap();
        let got = from_spec(&b).unwrap();
        assert_eq!(got.weight, Some(333));
        assert_eq!(got.device_weights, vec![(7, 0, 444)]);
        assert_eq!(got.throttles[0].limit, Limit::ReadBps);
        let leaf: LinuxBlockIo = serde_json::from_str(r#"{"leafWeight": 300}"#).unwrap();
        assert!(from_spec(&leaf).unwrap_err().contains("leafWeight"));
        // Docker's `{"weight": 0}` asks for nothing.
        let docker: LinuxBlockIo = serde_json::from_str(r#"{"weight": 0}"#).unwrap();
        assert!(from_spec(&docker).unwrap().is_empty());
        assert_eq!(v2_weight(10), 1);
        assert_eq!(v2_weight(1000), 10000);
    }

    #[test]
    fn v1_files_are_written_as_the_kernel_takes_them() {
        let d = tempfile::tempdir().unwrap();
        for f in [
            "blkio.bfq.weight",
            "blkio.bfq.weight_device",
            "blkio.throttle.read_bps_device",
        ] {
            std::fs::write(d.path().join(f), "").unwrap();
        }
        let b = BlockIo {
            weight: Some(333),
            device_weights: vec![(7, 0, 444)],
            throttles: vec![Throttle {
                limit: Limit::ReadBps,
                major: 8,
                minor: 0,
                rate: 1 << 20,
            }],
        };
        apply(&[d.path().to_path_buf()], &b).unwrap();
        let read = |f: &str| std::fs::read_to_string(d.path().join(f)).unwrap();
        assert_eq!(read("blkio.bfq.weight"), "333");
        assert_eq!(read("blkio.bfq.weight_device"), "7:0 444");
        assert_eq!(read("blkio.throttle.read_bps_device"), "8:0 1048576");
    }
}
