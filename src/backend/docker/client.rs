//! Connecting to the engine the way the docker CLI does: `DOCKER_HOST` (unix socket or
//! tcp), with TLS when `DOCKER_TLS_VERIFY` is set (certificates from `DOCKER_CERT_PATH`).

use super::error::DockerError;
use bollard::Docker;
use std::time::Duration;

/// How long an unreachable engine may take to say so.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// An engine that answered, and what it told about itself.
pub struct Engine {
    pub docker: Docker,
    /// Where it is, as the user named it.
    pub host: String,
    pub version: String,
    pub api_version: String,
    /// `SecurityOptions` from `docker info`, e.g. `name=seccomp,profile=default`.
    pub security_options: Vec<String>,
    /// "1" or "2".
    pub cgroup_version: Option<String>,
}

impl Engine {
    pub fn has_security_option(&self, name: &str) -> bool {
        let want = format!("name={name}");
        self.security_options
            .iter()
            .any(|o| o.split(',').any(|p| p == want))
    }
}

pub fn host() -> String {
    std::env::var("DOCKER_HOST")
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unix:///var/run/docker.sock".to_string())
}

/// Connects, agrees on an API version both sides speak, and asks for the engine's info.
/// `request_timeout` bounds every request (the run's own calls are bounded by its timeout).
pub async fn connect(request_timeout: Duration) -> Result<Engine, DockerError> {
    let host = host();
    let unreachable = |why: String| DockerError::Unreachable {
        host: host.clone(),
        why,
    };
    // bollard reads DOCKER_HOST, DOCKER_TLS_VERIFY and DOCKER_CERT_PATH itself.
    let docker = Docker::connect_with_defaults()
        .map_err(|e| unreachable(e.to_string()))?
        .with_timeout(request_timeout);
    let docker = tokio::time::timeout(CONNECT_TIMEOUT, docker.negotiate_version())
        .await
        .map_err(|_| unreachable(format!("no answer within {CONNECT_TIMEOUT:?}")))?
        .map_err(|e| unreachable(super::error::engine_message(&e)))?;
    let info = tokio::time::timeout(CONNECT_TIMEOUT, docker.info())
        .await
        .map_err(|_| unreachable(format!("no answer within {CONNECT_TIMEOUT:?}")))?
        .map_err(|e| unreachable(super::error::engine_message(&e)))?;
    let cgroup_version = info.cgroup_version.map(|v| v.to_string());
    Ok(Engine {
        api_version: docker.client_version().to_string(),
        docker,
        host,
        version: info.server_version.unwrap_or_default(),
        security_options: info.security_options.unwrap_or_default(),
        cgroup_version,
    })
}
