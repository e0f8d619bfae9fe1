//! The OCI runtime front door: runc-compatible verbs ([`cli`] parses and
//! dispatches, [`commands`] has one file per verb) that turn a bundle
//! ([`bundle`]) into the engine's [`crate::policy::Policy`] with an OCI view
//! ([`view`]), keep container state under `--root` ([`state`]) and run the
//! spec's hooks ([`hooks`]). `linux.seccomp` is compiled by
//! [`crate::confine::seccomp::oci`]; the container's cgroup is
//! [`crate::cgroup::oci`].

pub mod agent;
pub mod bindsrc;
pub mod bundle;
pub mod cli;
pub mod commands;
pub mod error;
pub mod fds;
pub mod harden;
pub mod pids;
pub mod state;
