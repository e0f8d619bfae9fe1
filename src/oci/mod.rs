//! The OCI runtime front door: runc-compatible verbs ([`cli`]) that turn a bundle
//! ([`bundle`]) into the engine's [`crate::policy::Policy`] with an OCI view
//! ([`view`]), keep container state under `--root` ([`state`]) and run the spec's
//! hooks ([`hooks`]); `linux.seccomp` is compiled by [`seccomp`]; `events`
//! reports usage ([`stats`]) and OOM notices ([`events`]).

pub mod agent;
pub mod bindsrc;
pub mod bundle;
pub mod cli;
pub mod events;
pub mod exec;
pub mod fds;
pub mod hooks;
pub mod list;
pub mod state;
pub mod update;
pub mod view;
