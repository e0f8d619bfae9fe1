//! The runc-compatible verbs, one file each; [`super::cli`] parses the global
//! flags and the verb and dispatches here.

pub mod checkpoint;
pub mod create;
pub mod delete;
pub mod events;
pub mod exec;
pub mod features;
pub mod kill;
pub mod list;
pub mod pause;
pub mod ps;
pub mod run;
pub mod spec;
pub mod start;
pub mod state;
pub mod update;
