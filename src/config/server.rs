//! The `server:` section of the configuration: where `maibox serve` listens, who may
//! submit, how many warm sandboxes it keeps, and how many runs it admits at once.

use crate::config::TrustLevel;
use crate::units::Seconds;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerConfig {
    /// The socket (default: /run/maibox/maibox.sock as root, $XDG_RUNTIME_DIR/maibox.sock
    /// otherwise; `--socket` overrides it).
    pub socket: Option<PathBuf>,
    /// A group whose members may submit too (the socket is then mode 0660 and owned
    /// by it); by default only the server's own user and root may.
    pub group: Option<String>,
    /// Levels that keep warm sandboxes; requests at other levels run cold.
    pub warm_levels: Vec<TrustLevel>,
    /// Warm sandboxes kept ready per level, at least and at most; the pool grows toward
    /// `pool_max` while requests find it empty, and shrinks back after `pool_idle`.
    pub pool_min: usize,
    pub pool_max: usize,
    pub pool_idle: Seconds,
    /// Threads per level that prepare warm sandboxes (default: the host's CPUs).
    pub refill_threads: Option<usize>,
    /// How long a request waits for a warm sandbox before it runs cold.
    pub pool_wait: Seconds,
    /// Runs admitted at once while their CPUs and memory add up to at most the host's
    /// times this factor; beyond, requests wait in a queue.
    pub overcommit: f64,
    /// Requests that may wait for admission; one more is answered "busy" at once.
    pub queue: usize,
    /// `maibox exec` without `--server`: whether to try the server first and fall back
    /// to a cold run when none answers (`--server=auto`).
    pub client_auto: bool,
    /// How a warm sandbox gets its interpreter: started afresh in it (`strict`), or
    /// forked from a zygote that imported the level's modules once (`fork`).
    pub warm_mode: WarmMode,
    /// `fork`: how many interpreters one zygote forks before it is replaced by a fresh
    /// one (the forks of one zygote share its hash secret and memory layout).
    pub zygote_forks: usize,
    /// Clone sandboxes, warm and cold, from a single-threaded spawner process forked
    /// when the server starts (`engine::spawner`), not from the server's threads.
    pub spawner: bool,
}

/// Where a warm sandbox's interpreter comes from (docs/server.md, "Warm modes").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WarmMode {
    /// Each warm sandbox starts its own interpreter: nothing is shared between runs,
    /// not even the hash secret or the memory layout.
    #[default]
    Strict,
    /// Each warm sandbox's interpreter is a fork of a zygote, reseeded in the child;
    /// its forks share the zygote's hash secret and memory layout, `zygote_forks` at
    /// most.
    Fork,
}

impl std::fmt::Display for WarmMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            WarmMode::Strict => "strict",
            WarmMode::Fork => "fork",
        })
    }
}

impl std::str::FromStr for WarmMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "strict" => Ok(WarmMode::Strict),
            "fork" => Ok(WarmMode::Fork),
            other => Err(format!("unknown warm mode {other:?}: strict or fork")),
        }
    }
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            socket: None,
            group: None,
            warm_levels: vec![TrustLevel::Untrusted],
            pool_min: 2,
            pool_max: 8,
            pool_idle: Seconds(Duration::from_secs(60)),
            refill_threads: None,
            pool_wait: Seconds(Duration::from_millis(10)),
            overcommit: 2.0,
            queue: 64,
            client_auto: false,
            warm_mode: WarmMode::Strict,
            zygote_forks: 32,
            spawner: true,
        }
    }
}

impl ServerConfig {
    /// The socket path: the configured one, else the default for this user.
    pub fn socket_path(&self) -> Result<PathBuf, String> {
        if let Some(p) = &self.socket {
            return Ok(p.clone());
        }
        default_socket()
    }

    pub fn validate(&self) -> Result<(), String> {
        if self.pool_max < self.pool_min.max(1) {
            return Err(format!(
                "server.pool_max ({}) must be at least pool_min ({}) and 1",
                self.pool_max, self.pool_min
            ));
        }
        if !(self.overcommit.is_finite() && self.overcommit > 0.0) {
            return Err("server.overcommit must be a positive number".into());
        }
        if self.zygote_forks == 0 {
            return Err("server.zygote_forks must be at least 1".into());
        }
        if self.refill_threads == Some(0) {
            return Err("server.refill_threads must be at least 1 (or left out)".into());
        }
        Ok(())
    }
}

/// /run/maibox/maibox.sock as root, $XDG_RUNTIME_DIR/maibox.sock otherwise.
pub fn default_socket() -> Result<PathBuf, String> {
    if nix::unistd::geteuid().is_root() {
        return Ok(PathBuf::from("/run/maibox/maibox.sock"));
    }
    match std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        Some(d) => Ok(PathBuf::from(d).join("maibox.sock")),
        None => Err(
            "no default socket for this user: $XDG_RUNTIME_DIR is not set; give --socket PATH"
                .into(),
        ),
    }
}
