//! seccomp, all of it: maibox's profile for Python ([`profile`]) compiled into
//! one BPF program ([`bpf`], over the raw encoding in `raw`) and installed
//! right before execve ([`install`]); the supervisor's side of user
//! notifications ([`notify`]); the syscall tables ([`syscalls`]); and an OCI
//! spec's `linux.seccomp` compiled into a stack of programs ([`oci`]).
//!
//! Dependencies point one way: `bpf` → `notify` → `profile` → `syscalls`.

pub mod bpf;
pub mod install;
pub mod notify;
pub mod oci;
pub mod profile;
mod raw;
pub mod syscalls;

pub use self::bpf::{arch_guard, build_filter, build_filter_notify, kill_guard};
pub use self::install::{
    install_filter, install_filter_flags, install_filter_flags_listening, install_filter_listening,
};
pub use self::profile::{
    allowed_syscalls, validate_profile, DenyAction, NetAccess, SeccompProfile, ARG_CHECKED,
    BASE_ALLOW, NEVER_ALLOW,
};
