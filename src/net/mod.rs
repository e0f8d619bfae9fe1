//! Allowlisted network mode: a filtering HTTP proxy run by the supervisor and a
//! bridge inside the sandbox that is the sandbox's only way to reach it.
//!
//! Lifecycle, shaped by the supervisor being single-threaded when it clones the
//! sandbox:
//! 1. [`validate`] at config load (malformed entries are refused there).
//! 2. [`prepare`] before the clone: creates a private directory and binds the
//!    unix socket. No threads, no runtime.
//! 3. The engine bind-mounts [`PreparedProxy::socket_path`] at
//!    `/run/maibox/proxy.sock`; init forks [`run_bridge`] (as the sandbox user)
//!    before the payload, which gets [`proxy_env`].
//! 4. [`PreparedProxy::start`] after the clone: spawns the proxy's thread with a
//!    current-thread tokio runtime, and returns only once it is serving, so a
//!    proxy that cannot start refuses the run (fail closed).
//! 5. [`RunningProxy::stop`] at the end: stops serving, drops every connection,
//!    joins the thread, removes the socket directory, returns the report.
//!
//! Rules the proxy enforces (see `proxy.rs`): `CONNECT` only to allowlisted
//! `host:port` (an entry without a port means 443 for CONNECT and 80 for plain
//! HTTP; `name:PORT` means exactly PORT), the tunnel's first bytes must be a TLS
//! ClientHello whose SNI is the CONNECT host, and after it only TLS records; plain
//! HTTP only `GET`/`HEAD` in absolute form (`http://host/...`) without a body;
//! IP-literal targets refused; every address connected to is checked
//! (`resolve.rs`); per-run limits on requests and bytes, a connect timeout and an
//! idle timeout.

pub mod allowlist;
pub mod bridge;
pub mod proxy;
pub mod report;
pub mod resolve;
pub mod sni;

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};

use serde::Deserialize;

pub use bridge::run_bridge;
pub use report::{Counts, ProxyReport, RequestRecord, Verdict};

/// Where the engine mounts the socket inside the sandbox.
pub const SANDBOX_SOCKET_PATH: &str = "/run/maibox/proxy.sock";
/// The port the bridge listens on inside the sandbox.
pub const DEFAULT_BRIDGE_PORT: u16 = 3128;
pub const DEFAULT_ALLOW: [&str; 3] = ["pypi.org", "files.pythonhosted.org", "docs.python.org"];

#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct NetConfig {
    #[serde(default = "default_allow")]
    pub allow: Vec<String>,
    /// Requests per run, allowed and refused alike (each CONNECT and each plain
    /// HTTP request counts one); beyond it every request is refused.
    #[serde(default = "default_max_requests")]
    pub max_requests: u32,
    /// Bytes per run, up and down together, counted on the upstream side.
    #[serde(default = "default_max_bytes")]
    pub max_bytes: u64,
    /// Limit on resolving plus connecting to an upstream.
    #[serde(default = "default_connect_timeout_ms")]
    pub connect_timeout_ms: u64,
    /// A connection with no traffic either way for this long is closed; also
    /// bounds the wait for request headers and for the ClientHello.
    #[serde(default = "default_idle_timeout_ms")]
    pub idle_timeout_ms: u64,
    /// TEST ONLY. Names mapped here get the given address instead of DNS, and
    /// for these exact names a *loopback* address is accepted (so a test can put
    /// a package index on 127.0.0.1 as `pypi.test`). Private, link-local and
    /// metadata addresses stay refused even when mapped. Leave empty in real
    /// configs.
    #[serde(default)]
    pub test_resolve: BTreeMap<String, IpAddr>,
}

fn default_allow() -> Vec<String> {
    DEFAULT_ALLOW.iter().map(|s| s.to_string()).collect()
}
fn default_max_requests() -> u32 {
    1000
}
fn default_max_bytes() -> u64 {
    1 << 30
}
fn default_connect_timeout_ms() -> u64 {
    10_000
}
fn default_idle_timeout_ms() -> u64 {
    60_000
}

impl Default for NetConfig {
    fn default() -> Self {
        NetConfig {
            allow: default_allow(),
            max_requests: default_max_requests(),
            max_bytes: default_max_bytes(),
            connect_timeout_ms: default_connect_timeout_ms(),
            idle_timeout_ms: default_idle_timeout_ms(),
            test_resolve: BTreeMap::new(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum NetError {
    #[error("network allowlist entry {entry:?}: {why}")]
    InvalidEntry { entry: String, why: String },
    #[error("network config: {0}")]
    Config(String),
    #[error("network proxy: create socket directory in {dir}: {source}")]
    SocketDir {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("network proxy: bind unix socket {path}: {source}")]
    Bind {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("network proxy: start: {0}")]
    Start(String),
}

/// Checks the whole config; every error names the entry or field at fault.
pub fn validate(cfg: &NetConfig) -> Result<(), NetError> {
    allowlist::Allowlist::parse(&cfg.allow)?;
    if cfg.max_requests == 0 {
        return Err(NetError::Config(
            "max_requests must be at least 1 (use network `none` for no network)".into(),
        ));
    }
    if cfg.max_bytes == 0 {
        return Err(NetError::Config(
            "max_bytes must be at least 1 (use network `none` for no network)".into(),
        ));
    }
    for (field, v) in [
        ("connect_timeout_ms", cfg.connect_timeout_ms),
        ("idle_timeout_ms", cfg.idle_timeout_ms),
    ] {
        if !(1..=3_600_000).contains(&v) {
            return Err(NetError::Config(format!(
                "{field} = {v}: must be from 1 to 3600000"
            )));
        }
    }
    for name in cfg.test_resolve.keys() {
        if let Some(why) = allowlist::name_syntax_error(&allowlist::normalize_host(name)) {
            return Err(NetError::Config(format!(
                "test_resolve name {name:?}: {why}"
            )));
        }
    }
    Ok(())
}

/// The bound socket, before any thread exists.
#[derive(Debug)]
pub struct PreparedProxy {
    cfg: NetConfig,
    listener: UnixListener,
    socket: PathBuf,
    // Dropped last: removes the directory and the socket file in it.
    dir: tempfile::TempDir,
}

/// The proxy's socket in its directory.
pub const SOCKET_FILE: &str = "proxy.sock";

/// Socket directories are named `maibox-proxy-<owner pid>-<start time>-XXXX`.
const DIR_PREFIX: &str = "maibox-proxy-";

/// Removes socket directories under `dir` left by supervisors that were killed
/// before they could clean up (SIGKILL skips destructors). Returns how many.
pub fn cleanup_stale(dir: &Path) -> usize {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return 0;
    };
    rd.flatten()
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.strip_prefix(DIR_PREFIX)
                .is_some_and(|rest| !crate::cgroup::tag_owner_alive(rest))
        })
        .filter(|e| std::fs::remove_dir_all(e.path()).is_ok())
        .count()
}

/// Validates `cfg`, creates a fresh private directory under `dir` and binds
/// `proxy.sock` in it. Spawns nothing.
pub fn prepare(cfg: &NetConfig, dir: &Path) -> Result<PreparedProxy, NetError> {
    let prefix = format!("{DIR_PREFIX}{}-", crate::cgroup::owner_tag());
    prepare_in(cfg, dir, tempfile::Builder::new().prefix(&prefix))
}

/// The socket directory [`prepare_for_run`] makes for `run_id` under `dir`, known
/// before it exists (a cleaner armed before it removes it, see [`crate::teardown`]).
pub fn run_socket_dir(dir: &Path, run_id: &str) -> PathBuf {
    dir.join(format!(
        "{DIR_PREFIX}{}-{run_id}",
        crate::cgroup::owner_tag()
    ))
}

/// [`prepare`], in the directory [`run_socket_dir`] names.
pub fn prepare_for_run(
    cfg: &NetConfig,
    dir: &Path,
    run_id: &str,
) -> Result<PreparedProxy, NetError> {
    let planned = run_socket_dir(dir, run_id);
    let name = planned.file_name().unwrap_or_default().to_os_string();
    prepare_in(
        cfg,
        dir,
        tempfile::Builder::new().prefix(&name).rand_bytes(0),
    )
}

fn prepare_in(
    cfg: &NetConfig,
    dir: &Path,
    builder: &mut tempfile::Builder,
) -> Result<PreparedProxy, NetError> {
    validate(cfg)?;
    let sock_dir = builder
        .tempdir_in(dir)
        .map_err(|source| NetError::SocketDir {
            dir: dir.to_path_buf(),
            source,
        })?;
    // 0700: no other host user can reach the socket through this path. Inside
    // the sandbox it is reached through the bind mount, which does not traverse
    // this directory.
    std::fs::set_permissions(sock_dir.path(), std::fs::Permissions::from_mode(0o700)).map_err(
        |source| NetError::SocketDir {
            dir: sock_dir.path().to_path_buf(),
            source,
        },
    )?;
    let socket = sock_dir.path().join(SOCKET_FILE);
    let listener = UnixListener::bind(&socket).map_err(|source| NetError::Bind {
        path: socket.clone(),
        source,
    })?;
    // The sandbox user may map to a uid other than ours; connecting needs write
    // permission on the socket inode itself. The 0700 directory is what keeps
    // host users out.
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o666)).map_err(
        |source| NetError::Bind {
            path: socket.clone(),
            source,
        },
    )?;
    Ok(PreparedProxy {
        cfg: cfg.clone(),
        listener,
        socket,
        dir: sock_dir,
    })
}

impl PreparedProxy {
    pub fn socket_path(&self) -> &Path {
        &self.socket
    }

    /// The listening socket's descriptor. A child cloned after `prepare`
    /// inherits it (CLOEXEC only drops it at exec), so the sandbox side should
    /// close it right after the clone: nothing inside may accept on it.
    pub fn listener_fd(&self) -> std::os::fd::RawFd {
        std::os::fd::AsRawFd::as_raw_fd(&self.listener)
    }

    /// Starts serving on a new thread; returns once the runtime is up and the
    /// listener registered, or the reason it could not be.
    pub fn start(self) -> Result<RunningProxy, NetError> {
        let PreparedProxy {
            cfg,
            listener,
            socket: _,
            dir,
        } = self;
        let handle = proxy::spawn(cfg, listener)?;
        Ok(RunningProxy { handle, _dir: dir })
    }
}

pub struct RunningProxy {
    handle: proxy::Handle,
    _dir: tempfile::TempDir,
}

impl RunningProxy {
    /// Stops the proxy, closes every connection, removes the socket directory,
    /// and returns what was requested.
    pub fn stop(self) -> ProxyReport {
        let RunningProxy { handle, _dir } = self;
        let report = handle.stop();
        drop(_dir);
        report
    }
}

/// Environment for the payload: both spellings of the proxy variables (curl and
/// urllib read lowercase, requests/pip read either), pip pointed at the default
/// index through them, and `NO_PROXY` for the sandbox's own loopback so local
/// servers inside the sandbox keep working (the proxy would refuse IP literals).
pub fn proxy_env(port: u16) -> Vec<(String, String)> {
    let url = format!("http://127.0.0.1:{port}");
    let mut env: Vec<(String, String)> = Vec::new();
    for k in [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "http_proxy",
        "https_proxy",
        "PIP_PROXY",
    ] {
        env.push((k.to_string(), url.clone()));
    }
    for k in ["NO_PROXY", "no_proxy"] {
        env.push((k.to_string(), "localhost,127.0.0.1,::1".to_string()));
    }
    env.push(("PIP_INDEX_URL".into(), "https://pypi.org/simple/".into()));
    env.push(("PIP_DISABLE_PIP_VERSION_CHECK".into(), "1".into()));
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_defaults_and_unknown_fields() {
        let c: NetConfig = serde_json::from_str("{}").unwrap();
        assert_eq!(c, NetConfig::default());
        assert_eq!(
            c.allow,
            vec!["pypi.org", "files.pythonhosted.org", "docs.python.org"]
        );
        validate(&c).unwrap();
        let e = serde_json::from_str::<NetConfig>(r#"{"allowed": []}"#).unwrap_err();
        assert!(e.to_string().contains("unknown field"), "{e}");
        let c: NetConfig = serde_json::from_str(
            r#"{"allow":["a.test:81"],"test_resolve":{"a.test":"127.0.0.1"}}"#,
        )
        .unwrap();
        validate(&c).unwrap();
    }

    #[test]
    fn validate_names_the_bad_entry() {
        let c = NetConfig {
            allow: vec!["pypi.org".into(), "http://evil.com".into()],
            ..NetConfig::default()
        };
        let e = validate(&c).unwrap_err().to_string();
        assert!(
            e.contains("\"http://evil.com\"") && e.contains("URL"),
            "{e}"
        );
        let c = NetConfig {
            max_bytes: 0,
            ..NetConfig::default()
        };
        assert!(validate(&c).unwrap_err().to_string().contains("max_bytes"));
        let c = NetConfig {
            connect_timeout_ms: 0,
            ..NetConfig::default()
        };
        assert!(validate(&c)
            .unwrap_err()
            .to_string()
            .contains("connect_timeout_ms"));
        let mut c = NetConfig::default();
        c.test_resolve
            .insert("bad name".into(), "127.0.0.1".parse().unwrap());
        assert!(validate(&c)
            .unwrap_err()
            .to_string()
            .contains("test_resolve"));
    }

    #[test]
    fn prepare_refuses_bad_config_and_cleans_up() {
        let tmp = tempfile::tempdir().unwrap();
        let bad = NetConfig {
            allow: vec!["pypi.org/simple".into()],
            ..NetConfig::default()
        };
        assert!(matches!(
            prepare(&bad, tmp.path()),
            Err(NetError::InvalidEntry { .. })
        ));
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
        let p = prepare(&NetConfig::default(), tmp.path()).unwrap();
        let sock = p.socket_path().to_path_buf();
        let dir_mode = std::fs::metadata(sock.parent().unwrap())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(dir_mode & 0o777, 0o700);
        let r = p.start().unwrap();
        assert!(sock.exists());
        let report = r.stop();
        assert_eq!(report.counts.requests, 0);
        assert!(!sock.exists());
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
        // A directory that does not exist: an error naming the step, no panic.
        let e = prepare(&NetConfig::default(), &tmp.path().join("missing")).unwrap_err();
        assert!(e.to_string().contains("create socket directory"), "{e}");
    }

    #[test]
    fn env_points_at_the_bridge() {
        let env = proxy_env(3128);
        let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("HTTP_PROXY"), Some("http://127.0.0.1:3128"));
        assert_eq!(get("https_proxy"), Some("http://127.0.0.1:3128"));
        assert_eq!(get("PIP_INDEX_URL"), Some("https://pypi.org/simple/"));
    }
}
