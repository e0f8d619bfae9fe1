//! The OCI container's cgroup: what a spec asks for ([`spec`]) and the
//! sub-groups `exec --cgroup` joins ([`subgroup`]).

pub mod spec;
pub mod subgroup;
