//! [`Policy`]: everything a run may do, as plain data. The engine's only input.
//!
//! Built from the configuration, the trust level and the caller's overrides; the
//! OCI front door (later) builds the same struct from a bundle's config.json.

pub mod oci;

use crate::config::{Backend, Config, DockerConfig, NetworkMode, TrustLevel};
use crate::interpreter::{self, Interpreter, InterpreterError};
use crate::units::{ByteSize, Seconds};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error(transparent)]
    Interpreter(#[from] InterpreterError),
    #[error("{setting}: {message}")]
    Invalid { setting: String, message: String },
}

/// Layers that can be switched off one by one, for controls in tests and the
/// per-layer benchmark. Structural layers (user, mount and pid namespaces, pivot_root)
/// are not on this list: the engine does not run without them.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum Layer {
    NetNs,
    /// Creating user namespaces inside the sandbox (the gateway to many kernel bugs).
    NestedUserns,
    IpcNs,
    UtsNs,
    CgroupNs,
    ReadOnlyRoot,
    ProcMasks,
    Capabilities,
    NoNewPrivs,
    Rlimits,
    Seccomp,
    Landlock,
    CgroupLimits,
}

/// `Deserialize` serves the server's spawner process (`engine::spawner`), which
/// receives the policy of each sandbox it clones; an OCI view is never sent there.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Policy {
    pub trust: TrustLevel,
    /// Layers switched off with `--unsafe-disable-layer` (never by configuration).
    pub disabled: std::collections::BTreeSet<Layer>,
    pub identity: Identity,
    pub interpreter: Interpreter,
    pub fs: FsPolicy,
    pub limits: Limits,
    /// Where the limits differ from the trust level's, and why.
    pub adjustments: Vec<String>,
    pub network: NetworkMode,
    pub seccomp: crate::confine::SeccompProfile,
    /// Landlock rules, with paths as seen inside the sandbox.
    pub landlock: crate::confine::LandlockSpec,
    /// The host path of the allowlist proxy's socket, bound into the sandbox at
    /// `net::SANDBOX_SOCKET_PATH` (set by the supervisor once the proxy is bound;
    /// sent to a server's spawner with the rest, which binds it as the supervisor would).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy_socket: Option<PathBuf>,
    /// Where the run's cgroup goes (limits are in `limits`).
    pub cgroup: crate::cgroup::CgroupConfig,
    /// The complete environment of the code, in order.
    pub env: Vec<(String, String)>,
    pub hostname: String,
    /// Who isolates the run: maibox's engine or a Docker engine.
    pub backend: Backend,
    /// The Docker backend's image, interpreter and runtime (used when `backend` is docker).
    pub docker: DockerConfig,
    /// What the sandbox looks like inside: maibox's Python view, or an OCI bundle's.
    pub view: View,
}

/// The filesystem view and process the engine builds. The default is maibox's own
/// Python view; the OCI front door asks for a bundle's root, mounts and process.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum View {
    #[default]
    Python,
    #[serde(skip_deserializing)]
    Oci(Box<crate::policy::oci::OciView>),
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Identity {
    /// uid/gid of the code inside the sandbox.
    pub uid: u32,
    pub gid: u32,
    pub user: String,
    /// How inside ids map to host ids.
    pub mapping: IdMapping,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(tag = "mode", rename_all = "lowercase")]
pub enum IdMapping {
    /// maibox runs as root: inside 0..65535 → host `base`..`base`+65535.
    Range { base: u32 },
    /// maibox runs unprivileged: only the caller's own ids can be mapped.
    Rootless { host_uid: u32, host_gid: u32 },
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FsPolicy {
    /// Root image directory for an overlay root; `None` builds a root from host binds.
    pub rootfs: Option<PathBuf>,
    pub read_only_root: bool,
    pub tmp_size: u64,
    pub root_size: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Limits {
    #[serde(serialize_with = "secs", deserialize_with = "from_secs")]
    pub timeout: Duration,
    pub cpus: f64,
    pub memory_bytes: u64,
    pub pids: u64,
    pub nofile: u64,
    /// CPU time of the whole sandbox (cgroup) and of each process (RLIMIT_CPU).
    #[serde(serialize_with = "opt_secs", deserialize_with = "from_opt_secs")]
    pub cpu_time: Option<Duration>,
    /// Largest file the code may write (RLIMIT_FSIZE).
    pub fsize_bytes: u64,
    pub output_bytes: u64,
}

/// Landlock follows the view the engine builds: binaries and the code executable,
/// /etc and /proc readable, /tmp and /dev writable (Python opens /dev/null read-write,
/// multiprocessing puts semaphores in /dev/shm), and /sandbox when the root is.
fn landlock_spec(
    level: &crate::config::LevelConfig,
    interp: &Interpreter,
) -> crate::confine::LandlockSpec {
    let mut spec = crate::confine::LandlockSpec::sandbox_default(None, level.landlock.required);
    // Network `none` keeps `lo`, and local TCP servers and clients must work there;
    // the network namespace is what stops anything from leaving.
    spec.restrict_tcp = match level.network {
        crate::config::NetworkMode::None | crate::config::NetworkMode::Allowlist => false,
    };
    for link in ["/bin", "/lib", "/lib64", "/sbin"] {
        spec.read_only.retain(|p| p != std::path::Path::new(link));
    }
    if let Some(prefix) = &interp.extra_bind {
        spec.read_exec.push(prefix.clone());
    }
    if !level.read_only_root {
        // A writable root means what it says: writes wherever file permissions allow
        // (never execute what was written; that right is not in read_write).
        spec.read_write.push(PathBuf::from("/"));
    }
    spec.read_write
        .extend(level.landlock.writable.iter().cloned());
    spec
}

fn opt_secs<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => s.serialize_f64(d.as_secs_f64()),
        None => s.serialize_none(),
    }
}

/// A caller's override of a quota: lowering is always fine, raising needs `allow_raise`.
fn pick<T: PartialOrd + Copy + std::fmt::Debug>(
    name: &str,
    wanted: Option<T>,
    level: T,
    allow_raise: bool,
    notes: &mut Vec<String>,
) -> Result<T, PolicyError> {
    match wanted {
        None => Ok(level),
        Some(w) if w <= level => Ok(w),
        Some(w) if allow_raise => {
            notes.push(format!("{name} raised above the trust level's {level:?} to {w:?} (--allow-raise)"));
            Ok(w)
        }
        Some(w) => Err(PolicyError::Invalid {
            setting: format!("--{name}"),
            message: format!(
                "{w:?} is above this trust level's {level:?}; lower it, pick another --trust, or add --allow-raise (recorded in the report)"
            ),
        }),
    }
}

pub(crate) fn host_cpus() -> f64 {
    std::thread::available_parallelism()
        .map(|n| n.get() as f64)
        .unwrap_or(1.0)
}

pub(crate) fn host_memory_available() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kb: u64 = info
        .lines()
        .find(|l| l.starts_with("MemAvailable:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(kb * 1024)
}

/// Seconds as the report writes them; exact for whole and millisecond values.
fn from_secs<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let s = f64::deserialize(d)?;
    Duration::try_from_secs_f64(s).map_err(serde::de::Error::custom)
}

fn from_opt_secs<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    Option::<f64>::deserialize(d)?
        .map(Duration::try_from_secs_f64)
        .transpose()
        .map_err(serde::de::Error::custom)
}

fn secs<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

/// Caller-side overrides of the trust level's settings (CLI flags).
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub timeout: Option<Seconds>,
    pub cpus: Option<f64>,
    pub memory: Option<ByteSize>,
    pub pids: Option<u64>,
    /// Let the overrides above exceed the trust level's quota (recorded in the report).
    pub allow_raise: bool,
    pub network: Option<NetworkMode>,
    pub rootfs: Option<PathBuf>,
    pub output: Option<ByteSize>,
    pub interpreter: Option<PathBuf>,
    pub disable: Vec<Layer>,
    pub backend: Option<Backend>,
    /// Docker backend: image, `--pull`, runtime name.
    pub image: Option<String>,
    pub pull: bool,
    pub docker_runtime: Option<String>,
}

impl Policy {
    pub fn has(&self, l: Layer) -> bool {
        !self.disabled.contains(&l)
    }

    pub fn build(cfg: &Config, trust: TrustLevel, ov: &Overrides) -> Result<Policy, PolicyError> {
        let level = cfg.level(trust);
        let backend = ov.backend.unwrap_or(level.backend);
        let rootfs = ov.rootfs.clone().or_else(|| level.rootfs.clone());
        let docker = docker_settings(cfg, ov);
        let network = ov.network.unwrap_or(level.network);
        if backend == Backend::Docker {
            check_docker(rootfs.is_some(), network, &docker, &ov.disable)?;
        }
        let interpreter = interpreter_for(cfg, ov, backend, rootfs.as_deref(), &docker)?;
        let mut adjustments = Vec::new();
        let limits = limits_for(level, ov, &mut adjustments)?;
        let mut env: Vec<(String, String)> = cfg
            .env
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if network == NetworkMode::Allowlist {
            env.extend(crate::net::proxy_env(crate::net::DEFAULT_BRIDGE_PORT));
        }
        Ok(Policy {
            adjustments,
            trust,
            disabled: ov.disable.iter().copied().collect(),
            identity: identity(cfg),
            landlock: landlock_spec(level, &interpreter),
            interpreter,
            fs: FsPolicy {
                rootfs,
                read_only_root: level.read_only_root && !ov.disable.contains(&Layer::ReadOnlyRoot),
                tmp_size: level.tmp_size.0,
                root_size: level.root_size.0,
            },
            limits,
            network,
            proxy_socket: None,
            seccomp: level.seccomp.clone(),
            cgroup: cfg.cgroup.clone(),
            env,
            hostname: "maibox".into(),
            backend,
            docker,
            view: View::default(),
        })
    }
}

/// The interpreter the run execs: the image's (Docker), one found in the root image,
/// or the host's.
fn interpreter_for(
    cfg: &Config,
    ov: &Overrides,
    backend: Backend,
    rootfs: Option<&std::path::Path>,
    docker: &DockerConfig,
) -> Result<Interpreter, PolicyError> {
    let setting = ov
        .interpreter
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| cfg.python.interpreter.clone());
    if let Some(r) = rootfs.filter(|r| !r.is_dir()) {
        return Err(PolicyError::Invalid {
            setting: "rootfs".into(),
            message: format!("{} is not a directory", r.display()),
        });
    }
    Ok(match (backend, rootfs) {
        // The image's interpreter runs; nothing about it can be checked from here.
        (Backend::Docker, _) => Interpreter {
            path: PathBuf::from(&docker.interpreter),
            prefix: PathBuf::new(),
            extra_bind: None,
        },
        (Backend::Native, Some(img)) => interpreter::resolve_in_image(img, &setting)?,
        (Backend::Native, None) => interpreter::resolve(&setting)?,
    })
}

/// The level's limits with the caller's overrides, never above what the host has.
fn limits_for(
    level: &crate::config::LevelConfig,
    ov: &Overrides,
    adjustments: &mut Vec<String>,
) -> Result<Limits, PolicyError> {
    let raise = ov.allow_raise;
    let timeout = pick(
        "timeout",
        ov.timeout.map(|t| t.0),
        level.timeout.0,
        raise,
        adjustments,
    )?;
    let mut cpus = pick("cpus", ov.cpus, level.cpus, raise, adjustments)?;
    let mut memory_bytes = pick(
        "memory",
        ov.memory.map(|m| m.0),
        level.memory.0,
        raise,
        adjustments,
    )?;
    let pids = pick("pids", ov.pids, level.pids, raise, adjustments)?;
    // Never grant more than the host has: a quota above it is no quota at all.
    let host_cpus = host_cpus();
    if cpus > host_cpus {
        adjustments.push(format!(
            "cpus reduced from {cpus} to the host's {host_cpus}"
        ));
        cpus = host_cpus;
    }
    if let Some(avail) = host_memory_available().filter(|a| memory_bytes > *a) {
        adjustments.push(format!(
            "memory reduced from {} to the {} the host has available",
            ByteSize(memory_bytes),
            ByteSize(avail)
        ));
        memory_bytes = avail;
    }
    Ok(Limits {
        timeout,
        cpus,
        memory_bytes,
        pids,
        cpu_time: level.cpu_time.map(|c| c.0),
        nofile: level.nofile,
        fsize_bytes: level.tmp_size.0,
        output_bytes: ov.output.unwrap_or(level.output).0,
    })
}

/// The sandbox's user, and how its ids map to the host's: a range of unused host ids
/// as root, the caller's own id otherwise.
fn identity(cfg: &Config) -> Identity {
    let mapping = if nix::unistd::geteuid().is_root() {
        IdMapping::Range {
            base: cfg.identity.host_id_base,
        }
    } else {
        IdMapping::Rootless {
            host_uid: nix::unistd::geteuid().as_raw(),
            host_gid: nix::unistd::getegid().as_raw(),
        }
    };
    Identity {
        uid: cfg.identity.uid,
        gid: cfg.identity.gid,
        user: cfg.identity.user.clone(),
        mapping,
    }
}

/// The layers the Docker backend can switch off for controls (`--unsafe-disable-layer`); the
/// others are either the engine's business or maibox's own engine only.
pub const DOCKER_SWITCHABLE: &[Layer] = &[
    Layer::NetNs,
    Layer::ReadOnlyRoot,
    Layer::Capabilities,
    Layer::NoNewPrivs,
    Layer::Rlimits,
    Layer::Seccomp,
    Layer::CgroupLimits,
];

/// The Docker backend takes the same limits; what only maibox's engine can do is refused
/// here, before anything runs.
fn check_docker(
    backend_has_rootfs: bool,
    network: NetworkMode,
    d: &DockerConfig,
    disable: &[Layer],
) -> Result<(), PolicyError> {
    let invalid = |setting: &str, message: String| PolicyError::Invalid {
        setting: setting.into(),
        message,
    };
    if backend_has_rootfs {
        return Err(invalid(
            "--rootfs",
            "a root image directory is for the native backend; with --backend docker give an image with --image".into(),
        ));
    }
    if network == NetworkMode::Allowlist {
        return Err(invalid(
            "--network allowlist",
            "the docker backend cannot provide the filtering proxy, so it runs with --network none only; use --backend native for the allowlist".into(),
        ));
    }
    if let Some(l) = disable.iter().find(|l| !DOCKER_SWITCHABLE.contains(l)) {
        return Err(invalid(
            "--unsafe-disable-layer",
            format!("{l:?} is not a layer the docker backend applies or can switch off"),
        ));
    }
    crate::config::validate_docker(d).map_err(|(k, m)| invalid(&format!("docker.{k}"), m))
}

fn docker_settings(cfg: &Config, ov: &Overrides) -> DockerConfig {
    let mut d = cfg.docker.clone();
    if let Some(i) = &ov.image {
        d.image = i.clone();
    }
    if let Some(r) = &ov.docker_runtime {
        d.runtime = Some(r.clone());
    }
    if let Some(p) = &ov.interpreter {
        d.interpreter = p.display().to_string();
    }
    d.pull |= ov.pull;
    d
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::BUILTIN;

    #[test]
    fn levels_map_to_limits() {
        let cfg = Config::parse(BUILTIN, "builtin").unwrap();
        let p = Policy::build(&cfg, TrustLevel::Trusted, &Overrides::default()).unwrap();
        assert_eq!(p.limits.timeout, Duration::from_secs(120));
        assert_eq!(p.limits.memory_bytes, 1 << 30);
        assert!(!p.fs.read_only_root);
        let u = Policy::build(&cfg, TrustLevel::Untrusted, &Overrides::default()).unwrap();
        assert!(u.fs.read_only_root);
        assert_eq!(u.limits.timeout, Duration::from_secs(30));
        assert_eq!(u.network, NetworkMode::None);
    }

    /// The spawner (engine::spawner) gets each sandbox's policy as JSON: what it
    /// decodes must be what was sent, at every level and with odd timeouts.
    #[test]
    fn a_policy_survives_its_json() {
        let cfg = Config::parse(BUILTIN, "builtin").unwrap();
        for level in [
            TrustLevel::Trusted,
            TrustLevel::Untrusted,
            TrustLevel::Unknown,
        ] {
            let ov = Overrides {
                timeout: Some("0.3s".parse().unwrap()),
                disable: vec![Layer::UtsNs],
                ..Default::default()
            };
            let mut p = Policy::build(&cfg, level, &ov).unwrap();
            // An allowlisted run's proxy socket goes to the spawner too.
            p.proxy_socket = Some(PathBuf::from("/run/maibox/proxy-1.sock"));
            let json = serde_json::to_string(&p).unwrap();
            let back: Policy = serde_json::from_str(&json).unwrap();
            assert_eq!(serde_json::to_string(&back).unwrap(), json);
            assert_eq!(back.limits, p.limits);
            assert_eq!(back.disabled, p.disabled);
            assert_eq!(back.proxy_socket, p.proxy_socket);
        }
    }

    #[test]
    fn overrides_apply() {
        let cfg = Config::parse(BUILTIN, "builtin").unwrap();
        let ov = Overrides {
            timeout: Some("2s".parse().unwrap()),
            output: Some("1KiB".parse().unwrap()),
            ..Default::default()
        };
        let p = Policy::build(&cfg, TrustLevel::Trusted, &ov).unwrap();
        assert_eq!(p.limits.timeout, Duration::from_secs(2));
        assert_eq!(p.limits.output_bytes, 1024);
    }

    #[test]
    fn a_level_can_choose_the_docker_backend() {
        let text = BUILTIN.replacen("backend: native", "backend: docker", 1);
        let cfg = Config::parse(&text, "x.yaml").unwrap();
        let p = Policy::build(&cfg, TrustLevel::Untrusted, &Overrides::default()).unwrap();
        assert_eq!(p.backend, Backend::Docker);
        // The interpreter is the image's, named as configured, never resolved on the host.
        assert_eq!(p.interpreter.path, PathBuf::from("python3"));
        assert_eq!(p.docker.image, "python:3-slim");
        // The other levels keep the native engine; the flag overrides the level.
        let t = Policy::build(&cfg, TrustLevel::Trusted, &Overrides::default()).unwrap();
        assert_eq!(t.backend, Backend::Native);
        let ov = Overrides {
            backend: Some(Backend::Native),
            ..Default::default()
        };
        let n = Policy::build(&cfg, TrustLevel::Untrusted, &ov).unwrap();
        assert_eq!(n.backend, Backend::Native);
    }

    #[test]
    fn docker_settings_are_checked() {
        let text = BUILTIN.replace("image: python:3-slim", "image: \"bad image\"");
        let e = Config::parse(&text, "x.yaml").unwrap_err().to_string();
        assert!(e.contains("docker.image"), "{e}");
        let cfg = Config::parse(BUILTIN, "builtin").unwrap();
        let ov = Overrides {
            backend: Some(Backend::Docker),
            disable: vec![Layer::Landlock],
            ..Default::default()
        };
        let e = Policy::build(&cfg, TrustLevel::Untrusted, &ov).unwrap_err();
        assert!(e.to_string().contains("docker backend"), "{e}");
    }

    #[test]
    fn missing_rootfs_is_an_error() {
        let cfg = Config::parse(BUILTIN, "builtin").unwrap();
        let ov = Overrides {
            rootfs: Some("/nonexistent/rootfs".into()),
            ..Default::default()
        };
        let e = Policy::build(&cfg, TrustLevel::Trusted, &ov).unwrap_err();
        assert!(e.to_string().contains("rootfs"));
    }
}
