//! The OCI view as plain data: what the OCI front door (`src/oci/bundle/`) reads from a bundle's
//! config.json and the engine (`src/engine/oci/`) enforces.
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
    /// Only with a new UTS namespace.
    pub domainname: Option<String>,
    pub masked_paths: Vec<String>,
    pub readonly_paths: Vec<String>,
    /// Namespaced sysctls, written once the namespaces exist.
    pub sysctls: Vec<(String, String)>,
    /// A FIFO the init blocks on until `start` writes to it (runc's exec.fifo),
    /// opened read-write by the runtime and inherited: inside a user namespace
    /// the init may no longer open the root-owned FIFO by path.
    /// `None`: the init waits for `Start` on its channel, as in `maibox exec`.
    #[serde(skip)]
    pub start_fifo: Option<i32>,
    /// Kill the container when the process that created it dies. Off for
    /// `create`: the container outlives the runtime command and the shim reaps it.
    pub die_with_parent: bool,
    /// The connected `--console-socket` (an fd the cloned child inherits), for
    /// `process.terminal`.
    #[serde(skip)]
    pub console: Option<i32>,
    /// `--preserve-fds`: the caller's descriptors the container's process keeps.
    #[serde(skip)]
    pub preserve_fds: Vec<i32>,
    /// `linux.seccomp`, compiled ([`crate::confine::seccomp::oci`]).
    #[serde(skip)]
    pub seccomp: Option<crate::confine::seccomp::oci::Compiled>,
    /// The spec's `hooks` object. The init runs `createContainer` (mounted, before
    /// pivot_root) and `startContainer` (after `start`, before the program).
    pub hooks: Option<serde_json::Value>,
    /// `linux.rootfsPropagation` (MS_* flags), set on the new root after pivot_root.
    pub root_propagation: Option<libc::c_ulong>,
    /// `linux.devices`: nodes made in the container's /dev.
    pub devices: Vec<OciDevice>,
    /// Stop before pivot_root for the runtime's `prestart`/`createRuntime` hooks,
    /// which must run before `createContainer`'s.
    pub hooks_sync: bool,
    /// `--hardened`: what the init applies itself for a strict runtime
    /// (made by `oci::harden`).
    pub hardening: Option<Hardening>,
    /// The runtime runs as the host's root. Decided by the runtime, not the init
    /// (root in its own user namespace): a runtime of an ordinary user reaches no
    /// more than its container's root (the same host uid) and may not join the
    /// container's mount namespace from outside its user namespace (EPERM).
    pub runtime_is_root: bool,
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
    /// MOUNT_ATTR_* to set and to clear on this mount and every mount below it
    /// (the recursive options: rro, rnosuid, rnoexec, rnoatime…).
    pub rec_set: u64,
    pub rec_clear: u64,
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
    /// `process.consoleSize` as (rows, columns), for that pty.
    pub console_size: Option<(u16, u16)>,
    /// `process.user.umask`, set just before the program runs.
    pub umask: Option<u32>,
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
    /// Existing namespaces to join (a `path` in the spec) instead of making new ones.
    pub join: Vec<NsJoin>,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct OciDevice {
    /// Absolute path in the container.
    pub path: String,
    /// S_IFCHR, S_IFBLK or S_IFIFO.
    pub kind: u32,
    pub major: u64,
    pub minor: u64,
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct NsJoin {
    /// The spec's type name ("network", "ipc", "uts", "cgroup", "pid").
    pub kind: String,
    pub path: PathBuf,
    /// The clone flag of that type, for setns's check of the file.
    pub flag: i32,
    /// The namespace file, opened by the runtime (so a bad path fails `create`
    /// before anything exists) and inherited by the init.
    #[serde(skip)]
    pub fd: Option<i32>,
}

#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct IdMaps {
    /// (container id, host id, size).
    pub uid: Vec<(u32, u32, u32)>,
    pub gid: Vec<(u32, u32, u32)>,
}

impl OciView {
    /// Whether the runtime opens the bind sources for the init: in its own
    /// user namespace the init is root there only, and may not reach a source
    /// the host's root can (a directory only its owner may enter). Only a root
    /// runtime does ([`OciView::runtime_is_root`]).
    pub fn bind_sources_from_runtime(&self) -> bool {
        self.runtime_is_root && self.namespaces.user.is_some() && self.mounts.iter().any(|m| m.bind)
    }
}

/// What a strict runtime's init (or an `exec`'d process) applies itself: Landlock on
/// the container's root from its mount table (`confine::landlock_mounts`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Hardening {
    /// Writable tmpfs mount points the bundle mounted with an explicit `exec`.
    pub exec_tmpfs: Vec<PathBuf>,
}
