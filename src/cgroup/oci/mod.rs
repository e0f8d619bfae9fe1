//! The OCI container's cgroup: what a spec asks for ([`spec`]), the groups
//! made for it and kept until `delete` ([`container`]), and the sub-groups
//! `exec --cgroup` joins ([`subgroup`]).

pub mod container;
pub mod spec;
pub mod subgroup;

pub use container::ContainerCgroup;
pub use spec::{from_spec, limits};
