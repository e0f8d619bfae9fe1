//! Resource settings written to a container's groups: block I/O ([`blkio`])
//! and device rules on cgroup v2 ([`devfilter`]).

pub mod blkio;
pub mod devfilter;
