//! The OCI view as plain data: what [`crate::oci::bundle`] reads from a bundle's
//! config.json and the engine ([`crate::sandbox::oci`]) enforces.
//!
//! Kept free of `oci-spec` types so that the engine depends on maibox's own data
//! only, and a policy can be printed and unit-tested without a bundle.

use serde::Serialize;
use std::path::PathBuf;

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct OciView {
    /// Absolute, canonical path of the container's root on the host.
    pub root: PathBuf,
    pub root_readonly: bool,
    pub mounts: Vec<OciMount>,
    pub process: OciProcess,
    pub namespaces: Namespaces,
    /// Only with a new UTS namespace.
    pub hostname: Option<String>,
    pub masked_paths: Vec<String>,
    pub readonly_paths: Vec<String>,
    /// Namespaced sysctls, written once the namespaces exist.
    pub sysctls: Vec<(String, String)>,
    /// A FIFO the init blocks on until `start` writes to it (runc's exec.fifo).
    /// `None`: the init waits for `Start` on its channel, as in `maibox exec`.
    pub start_fifo: Option<PathBuf>,
    /// Kill the container when the process that created it dies. Off for
    /// `create`: the container outlives the runtime command and the shim reaps it.
    pub die_with_parent: bool,
    /// The connected `--console-socket` (an fd the cloned child inherits), for
    /// `process.terminal`.
    #[serde(skip)]
    pub console: Option<i32>,
    /// `linux.seccomp`, compiled ([`crate::oci::seccomp`]).
    #[serde(skip)]
    pub seccomp: Option<crate::oci::seccomp::Compiled>,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct OciMount {
    pub destination: String,
    pub kind: String,
    /// Host path for binds (already resolved against the bundle), else the fs source.
    pub source: String,
    pub bind: bool,
    pub recursive: bool,
    /// MS_* flags from the options (ro, nosuid, nodev, noexec, atime variants…).
    pub flags: libc::c_ulong,
    /// Mount propagation to apply after mounting (MS_PRIVATE, MS_SLAVE…, with MS_REC).
    pub propagation: libc::c_ulong,
    /// Options the kernel interprets itself (mode=, size=, newinstance…).
    pub data: String,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct OciProcess {
    pub args: Vec<String>,
    pub env: Vec<String>,
    pub cwd: String,
    pub uid: u32,
    pub gid: u32,
    pub additional_gids: Vec<u32>,
    /// (resource number, soft, hard).
    pub rlimits: Vec<(u32, u64, u64)>,
    pub no_new_privileges: bool,
    pub oom_score_adj: Option<i32>,
    pub capabilities: CapabilitySets,
    /// A pty for stdio, its master sent over `--console-socket`.
    pub terminal: bool,
}

/// Capability names as the kernel spells them (`CAP_KILL`). A set the spec leaves
/// out is empty: what is not granted is dropped.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct CapabilitySets {
    pub bounding: Vec<String>,
    pub effective: Vec<String>,
    pub inheritable: Vec<String>,
    pub permitted: Vec<String>,
    pub ambient: Vec<String>,
}

#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct Namespaces {
    pub mount: bool,
    pub pid: bool,
    pub network: bool,
    pub ipc: bool,
    pub uts: bool,
    pub cgroup: bool,
    /// `Some` only when the spec lists a user namespace.
    pub user: Option<IdMaps>,
}

#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct IdMaps {
    /// (container id, host id, size).
    pub uid: Vec<(u32, u32, u32)>,
    pub gid: Vec<(u32, u32, u32)>,
}
