//! The OCI runtime front door: runc-compatible verbs ([`cli`]) that turn a bundle
//! ([`bundle`]) into the engine's [`crate::policy::Policy`] with an OCI view
//! ([`view`]), keep container state under `--root` ([`state`]) and run the spec's
//! hooks ([`hooks`]); `linux.seccomp` is compiled by [`seccomp`].

pub mod bundle;
pub mod cgroup;
pub mod cli;
pub mod exec;
pub mod hooks;
pub mod seccomp;
pub mod state;
pub mod view;
