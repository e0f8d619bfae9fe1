//! `config/sandbox.yaml` → [`Config`]: trust levels, limits and settings.
//!
//! Every struct denies unknown fields and every value is parsed into a typed unit while
//! deserializing, so that serde_yaml can point at the line and column of a bad value.

mod server;
pub use server::{default_socket, ServerConfig, WarmMode};

use crate::assess::Verdict;
use crate::units::{ByteSize, Seconds};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// The built-in copy of `config/sandbox.yaml`, the configuration used when no other
/// file is found (a run reads its JSON copy, which build.rs makes).
pub const BUILTIN: &str = include_str!("../../config/sandbox.yaml");
/// The same, as JSON made at build time (build.rs), which is what a run parses.
const BUILTIN_JSON: &str = include_str!(concat!(env!("OUT_DIR"), "/builtin-config.json"));
/// System-wide configuration file, looked for after `--config` and `$MAIBOX_CONFIG`.
pub const SYSTEM_PATH: &str = "/etc/maibox/sandbox.yaml";

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("invalid config {origin}: {message}")]
    Parse { origin: String, message: String },
    #[error("invalid config {origin}: {setting}: {message}")]
    Invalid {
        origin: String,
        setting: String,
        message: String,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TrustLevel {
    Untrusted,
    Unknown,
    Trusted,
}

impl TrustLevel {
    pub fn as_str(self) -> &'static str {
        match self {
            TrustLevel::Untrusted => "untrusted",
            TrustLevel::Unknown => "unknown",
            TrustLevel::Trusted => "trusted",
        }
    }
}

impl fmt::Display for TrustLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for TrustLevel {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "untrusted" => Ok(TrustLevel::Untrusted),
            "unknown" => Ok(TrustLevel::Unknown),
            "trusted" => Ok(TrustLevel::Trusted),
            other => Err(format!(
                "unknown trust level {other:?} (use untrusted, unknown or trusted)"
            )),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NetworkMode {
    /// A network namespace with only `lo`: nothing leaves the sandbox.
    None,
    /// Still only `lo`; the one way out is the supervisor's filtering proxy (see
    /// `network:` in the config), reached through a bridge on 127.0.0.1:3128.
    Allowlist,
}

/// Who isolates the code: maibox's own engine, or a Docker engine through its API.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    #[default]
    Native,
    Docker,
}

/// Settings of the Docker backend (`backend: docker` in a level, or `--backend docker`).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DockerConfig {
    /// The image the code runs in; it must have the interpreter on its PATH.
    #[serde(default = "default_docker_image")]
    pub image: String,
    /// The interpreter inside the image: a name looked up on the image's PATH, or an
    /// absolute path in the image.
    #[serde(default = "default_docker_interpreter")]
    pub interpreter: String,
    /// The OCI runtime registered with the engine (e.g. `maibox`); none: the engine's default.
    #[serde(default)]
    pub runtime: Option<String>,
    /// Pull a missing image from its registry (otherwise a missing image is an error).
    #[serde(default)]
    pub pull: bool,
}

fn default_docker_image() -> String {
    "python:3-slim".into()
}

fn default_docker_interpreter() -> String {
    "python3".into()
}

impl Default for DockerConfig {
    fn default() -> Self {
        DockerConfig {
            image: default_docker_image(),
            interpreter: default_docker_interpreter(),
            runtime: None,
            pull: false,
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub default_trust: TrustLevel,
    pub python: PythonConfig,
    pub identity: IdentityConfig,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Static assessment settings (rule severities, thresholds, size limit).
    #[serde(default)]
    pub assessment: crate::assess::AssessConfig,
    /// The allowlist proxy's settings (used by levels or runs with `network: allowlist`).
    #[serde(default)]
    pub network: crate::net::NetConfig,
    /// Where per-run cgroups go and what to do when they cannot be made.
    #[serde(default)]
    pub cgroup: crate::cgroup::CgroupConfig,
    /// Tamper-evident audit log of every run.
    #[serde(default)]
    pub audit: crate::audit::AuditConfig,
    /// The Docker backend's image, interpreter and runtime.
    #[serde(default)]
    pub docker: DockerConfig,
    /// `maibox serve`: socket, warm pools, admission.
    #[serde(default)]
    pub server: ServerConfig,
    pub levels: Levels,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PythonConfig {
    /// `auto` or an absolute path to a python3 binary.
    pub interpreter: String,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct IdentityConfig {
    pub uid: u32,
    pub gid: u32,
    pub user: String,
    pub host_id_base: u32,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Levels {
    pub untrusted: LevelConfig,
    pub unknown: LevelConfig,
    pub trusted: LevelConfig,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LevelConfig {
    pub timeout: Seconds,
    pub cpus: f64,
    pub memory: ByteSize,
    pub pids: u64,
    /// CPU time for the whole run (all processes); none = only the wall clock.
    #[serde(default)]
    pub cpu_time: Option<Seconds>,
    pub nofile: u64,
    pub output: ByteSize,
    pub tmp_size: ByteSize,
    pub root_size: ByteSize,
    pub read_only_root: bool,
    pub network: NetworkMode,
    /// Who isolates runs at this level (`--backend` overrides it).
    #[serde(default)]
    pub backend: Backend,
    /// Root image directory: when set, the root is an overlay of it with a tmpfs upper layer.
    #[serde(default)]
    pub rootfs: Option<PathBuf>,
    /// The seccomp allowlist's settings for this level.
    pub seccomp: crate::confine::SeccompProfile,
    /// Landlock for this level (the paths follow the sandbox's view).
    pub landlock: LandlockLevel,
    /// Assessment verdict at which a run is refused unless `--override` gives a reason.
    #[serde(default = "default_refuse_at")]
    pub refuse_at: Verdict,
    /// Assessment verdict at which the run drops to the `untrusted` level's settings.
    #[serde(default)]
    pub escalate_at: Option<Verdict>,
    /// Modules a warm sandbox of this level (`maibox serve`) imports before its code
    /// arrives, e.g. [json, csv, statistics].
    #[serde(default)]
    pub preload: Vec<String>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LandlockLevel {
    /// Refuse to run on a kernel without Landlock (otherwise best effort, and the
    /// report says which ABI was enforced).
    pub required: bool,
    /// Extra directories the code may write (inside paths; must exist in the view).
    #[serde(default)]
    pub writable: Vec<PathBuf>,
}

fn default_refuse_at() -> Verdict {
    Verdict::Blocked
}

impl Config {
    pub fn level(&self, t: TrustLevel) -> &LevelConfig {
        match t {
            TrustLevel::Untrusted => &self.levels.untrusted,
            TrustLevel::Unknown => &self.levels.unknown,
            TrustLevel::Trusted => &self.levels.trusted,
        }
    }

    /// Parses and validates a configuration text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Config, ConfigError> {
        Config::checked(
            serde_yaml::from_str(text).map_err(|e| e.to_string()),
            origin,
        )
    }

    /// The built-in configuration, from its JSON copy (build.rs says why).
    pub fn builtin() -> Result<Config, ConfigError> {
        let parsed = serde_json::from_str(BUILTIN_JSON).map_err(|e| e.to_string());
        Config::checked(parsed, "(built-in)")
    }

    fn checked(parsed: Result<Config, String>, origin: &str) -> Result<Config, ConfigError> {
        let cfg = parsed.map_err(|message| ConfigError::Parse {
            origin: origin.to_string(),
            message,
        })?;
        cfg.validate(origin)?;
        Ok(cfg)
    }

    /// Loads the configuration following the documented search order.
    pub fn load(explicit: Option<&Path>) -> Result<(Config, String), ConfigError> {
        match Config::file(explicit) {
            Some(p) => {
                let text = std::fs::read_to_string(&p).map_err(|source| ConfigError::Read {
                    path: p.clone(),
                    source,
                })?;
                let origin = p.display().to_string();
                Ok((Config::parse(&text, &origin)?, origin))
            }
            None => Ok((Config::builtin()?, "(built-in)".to_string())),
        }
    }

    /// The configuration file that applies: `explicit`, else `$MAIBOX_CONFIG`, else
    /// the system file if it exists; `None` means the built-in configuration.
    fn file(explicit: Option<&Path>) -> Option<PathBuf> {
        let env_path = std::env::var_os("MAIBOX_CONFIG").filter(|v| !v.is_empty());
        match (explicit, env_path) {
            (Some(p), _) => Some(p.to_path_buf()),
            (None, Some(p)) => Some(PathBuf::from(p)),
            (None, None) => Some(PathBuf::from(SYSTEM_PATH)).filter(|p| p.exists()),
        }
    }

    /// The server socket a client goes to (`server.socket`, else the default for this
    /// user). With no configuration file the built-in one applies, which leaves
    /// `server.socket` unset (a test checks it): the default is then known without
    /// parsing it, which a client started per run would pay on every start.
    pub fn server_socket(explicit: Option<&Path>) -> Result<PathBuf, String> {
        match Config::file(explicit) {
            Some(_) => Config::load(explicit)
                .map_err(|e| e.to_string())?
                .0
                .server
                .socket_path(),
            None => server::default_socket(),
        }
    }

    fn validate(&self, origin: &str) -> Result<(), ConfigError> {
        let bad = |(setting, message): (String, String)| ConfigError::Invalid {
            origin: origin.to_string(),
            setting,
            message,
        };
        let at = |setting: &'static str, m: String| bad((setting.to_string(), m));
        crate::net::validate(&self.network).map_err(|e| at("network", e.to_string()))?;
        self.server.validate().map_err(|m| at("server", m))?;
        self.cgroup.validate().map_err(|m| at("cgroup", m))?;
        let unknown = self.assessment.unknown_rule_ids();
        if !unknown.is_empty() {
            return Err(at(
                "assessment",
                format!("unknown rule ids {unknown:?} (see `maibox assess --rules` for the table)"),
            ));
        }
        if self.python.interpreter != "auto" && !self.python.interpreter.starts_with('/') {
            return Err(at(
                "python.interpreter",
                format!(
                    "{:?} must be \"auto\" or an absolute path",
                    self.python.interpreter
                ),
            ));
        }
        self.identity.validate().map_err(bad)?;
        validate_docker(&self.docker).map_err(|(k, m)| bad((format!("docker.{k}"), m)))?;
        if let Some(key) = self
            .env
            .keys()
            .find(|k| k.is_empty() || k.contains('=') || k.contains('\0'))
        {
            return Err(bad((format!("env.{key}"), "invalid variable name".into())));
        }
        for t in [
            TrustLevel::Untrusted,
            TrustLevel::Unknown,
            TrustLevel::Trusted,
        ] {
            self.level(t)
                .validate()
                .map_err(|(k, m)| bad((format!("levels.{t}.{k}"), m)))?;
        }
        Ok(())
    }
}

/// An image reference or runtime name that cannot be right is caught at load, not by the engine.
impl IdentityConfig {
    /// Errors as (setting, message).
    fn validate(&self) -> Result<(), (String, String)> {
        let bad = |k: &str, m: &str| Err((k.to_string(), m.to_string()));
        if self.uid == 0 || self.gid == 0 {
            return bad("identity", "the sandbox uid and gid must not be 0 (root)");
        }
        if self.uid > 65535 || self.gid > 65535 {
            return bad("identity", "uid and gid must be at most 65535");
        }
        if self.host_id_base < 65536 || u64::from(self.host_id_base) + 65536 > u64::from(u32::MAX) {
            return bad(
                "identity.host_id_base",
                "must be between 65536 and 4294901759 so that 65536 ids fit above the host's usual ones",
            );
        }
        let name_ok = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
        if self.user.is_empty() || !self.user.chars().all(name_ok) {
            return bad(
                "identity.user",
                "must be a non-empty name of letters, digits, '_' or '-'",
            );
        }
        Ok(())
    }
}

impl LevelConfig {
    /// Errors as (key within the level, message).
    fn validate(&self) -> Result<(), (String, String)> {
        let bad = |k: &str, m: String| Err((k.to_string(), m));
        if !(self.cpus.is_finite() && self.cpus > 0.0) {
            return bad(
                "cpus",
                format!("{} must be a positive number of CPUs", self.cpus),
            );
        }
        if self.memory.0 < (16 << 20) {
            return bad(
                "memory",
                format!("{} is below the 16MiB Python needs to start", self.memory),
            );
        }
        for (key, ok, need) in [
            ("pids", self.pids > 0, "must be at least 1"),
            ("nofile", self.nofile >= 16, "must be at least 16"),
            ("output", self.output.0 > 0, "must be greater than 0"),
            (
                "tmp_size",
                self.tmp_size.0 >= 1 << 20,
                "must be at least 1MiB",
            ),
            (
                "root_size",
                self.root_size.0 >= 1 << 20,
                "must be at least 1MiB",
            ),
        ] {
            if !ok {
                return bad(key, need.into());
            }
        }
        crate::confine::validate_profile(&self.seccomp)
            .or_else(|e| bad("seccomp", e.to_string()))?;
        let plain = |w: &PathBuf| {
            w.is_absolute() && !w.components().any(|c| c == std::path::Component::ParentDir)
        };
        if let Some(w) = self.landlock.writable.iter().find(|w| !plain(w)) {
            return bad(
                "landlock.writable",
                format!("{} must be an absolute path without ..", w.display()),
            );
        }
        if self.rootfs.as_ref().is_some_and(|r| !r.is_absolute()) {
            return bad("rootfs", "must be an absolute path".into());
        }
        if let Some(m) = self.preload.iter().find(|m| !is_module_name(m)) {
            return bad(
                "preload",
                format!("{m:?} is not a module name (e.g. json, xml.etree.ElementTree)"),
            );
        }
        Ok(())
    }
}

/// A dotted Python module name: identifiers joined by dots.
fn is_module_name(m: &str) -> bool {
    !m.is_empty()
        && m.split('.').all(|part| {
            part.chars()
                .next()
                .is_some_and(|c| c.is_alphabetic() || c == '_')
                && part.chars().all(|c| c.is_alphanumeric() || c == '_')
        })
}

pub fn validate_docker(d: &DockerConfig) -> Result<(), (&'static str, String)> {
    let ok_ref = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-/:@".contains(c))
    };
    if !ok_ref(&d.image) {
        return Err((
            "image",
            format!(
                "{:?} is not an image reference (e.g. python:3-slim)",
                d.image
            ),
        ));
    }
    if d.interpreter.is_empty() || d.interpreter.contains(char::is_whitespace) {
        return Err((
            "interpreter",
            format!(
                "{:?} must be a program name or an absolute path in the image",
                d.interpreter
            ),
        ));
    }
    if let Some(r) = &d.runtime {
        if !ok_ref(r) || r.contains('/') {
            return Err(("runtime", format!("{r:?} is not a runtime name")));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_json_is_the_builtin_yaml() {
        let yaml = Config::parse(BUILTIN, "builtin").unwrap();
        let json = Config::builtin().unwrap();
        assert_eq!(format!("{yaml:?}"), format!("{json:?}"));
        assert_eq!(
            serde_json::to_value(&yaml).unwrap(),
            serde_json::to_value(&json).unwrap()
        );
        // The comparison sees the levels' settings, not only their shape.
        let other = Config::parse(&BUILTIN.replacen("pids: 64", "pids: 65", 1), "x").unwrap();
        assert_ne!(format!("{other:?}"), format!("{json:?}"));
    }

    #[test]
    fn builtin_config_is_valid_and_ordered() {
        let c = Config::parse(BUILTIN, "builtin").unwrap();
        let t = c.level(TrustLevel::Trusted);
        assert_eq!(t.cpus, 2.0);
        assert_eq!(t.memory.0, 1 << 30);
        assert_eq!(t.timeout.0.as_secs(), 120);
        let u = c.level(TrustLevel::Untrusted);
        assert!(u.cpus < t.cpus && u.memory < t.memory && u.timeout < t.timeout);
        assert!(u.read_only_root);
    }

    /// `Config::server_socket` skips parsing the built-in configuration because it
    /// leaves the socket unset; a file that sets it is parsed.
    #[test]
    fn a_client_finds_the_socket_without_parsing_the_builtin_configuration() {
        let c = Config::parse(BUILTIN, "builtin").unwrap();
        assert_eq!(
            c.server.socket, None,
            "server_socket's shortcut assumes this"
        );
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("c.yaml");
        std::fs::write(
            &file,
            BUILTIN.replace("  socket: null", "  socket: /tmp/elsewhere.sock"),
        )
        .unwrap();
        let got = Config::server_socket(Some(&file)).unwrap();
        assert_eq!(got, PathBuf::from("/tmp/elsewhere.sock"));
        std::fs::write(&file, "not: [valid").unwrap();
        assert!(Config::server_socket(Some(&file)).is_err());
    }

    #[test]
    fn unknown_key_names_line_and_column() {
        let text = BUILTIN.replace(
            "default_trust: untrusted",
            "default_trust: untrusted\nbogus: 1",
        );
        let e = Config::parse(&text, "x.yaml").unwrap_err().to_string();
        assert!(e.contains("unknown field `bogus`"), "{e}");
        assert!(e.contains("line"), "{e}");
    }

    #[test]
    fn bad_size_names_line() {
        let text = BUILTIN.replacen("memory: 256MiB", "memory: 1 gigabyte", 1);
        let e = Config::parse(&text, "x.yaml").unwrap_err().to_string();
        assert!(e.contains("invalid size") && e.contains("line"), "{e}");
    }

    #[test]
    fn semantic_errors_name_the_setting() {
        let text = BUILTIN.replacen("pids: 64", "pids: 0", 1);
        let e = Config::parse(&text, "x.yaml").unwrap_err().to_string();
        assert!(e.contains("levels.untrusted.pids"), "{e}");
        let text = BUILTIN.replacen("cpus: 0.5", "cpus: -1", 1);
        let e = Config::parse(&text, "x.yaml").unwrap_err().to_string();
        assert!(e.contains("levels.untrusted.cpus"), "{e}");
        let text = BUILTIN.replacen("uid: 1000", "uid: 0", 1);
        assert!(Config::parse(&text, "x.yaml").is_err());
    }

    #[test]
    fn unknown_trust_level_is_rejected() {
        let text = BUILTIN.replace("default_trust: untrusted", "default_trust: sorta");
        assert!(Config::parse(&text, "x.yaml").is_err());
        assert!("sorta".parse::<TrustLevel>().is_err());
    }
}
