//! seccomp, all of it: maibox's profile for Python compiled into one BPF
//! program ([`bpf`]), the supervisor's side of user notifications
//! ([`notify`]), the syscall tables ([`syscalls`]), and an OCI spec's
//! `linux.seccomp` ([`oci`]).

pub mod bpf;
pub mod notify;
pub mod oci;
pub mod syscalls;

pub use self::bpf::*;
