//! What can go wrong talking to the engine, each naming the setup step and what to do.

use crate::error::{SetupError, Step};

#[derive(Debug, thiserror::Error)]
pub enum DockerError {
    #[error("cannot reach the Docker engine at {host}: {why} (is dockerd running? point DOCKER_HOST at it: unix:///var/run/docker.sock, or tcp://HOST:2376 with DOCKER_TLS_VERIFY=1 and DOCKER_CERT_PATH)")]
    Unreachable { host: String, why: String },
    #[error("image {image} is not on the Docker engine at {host}: pull it first (docker pull {image}) or add --pull to let maibox pull it")]
    ImageMissing { image: String, host: String },
    #[error("cannot pull image {image}: {why}")]
    Pull { image: String, why: String },
    #[error("{what}: {why}")]
    Api {
        step: Step,
        what: &'static str,
        why: String,
    },
}

impl DockerError {
    pub fn api(step: Step, what: &'static str, e: bollard::errors::Error) -> DockerError {
        DockerError::Api {
            step,
            what,
            why: engine_message(&e),
        }
    }

    pub fn step(&self) -> Step {
        match self {
            DockerError::Unreachable { .. } => Step::Engine,
            DockerError::ImageMissing { .. } | DockerError::Pull { .. } => Step::Image,
            DockerError::Api { step, .. } => *step,
        }
    }
}

impl From<DockerError> for SetupError {
    fn from(e: DockerError) -> SetupError {
        SetupError::new(e.step(), e.to_string())
    }
}

/// The engine's own words when it gave any (they say what is wrong), else the client's.
pub fn engine_message(e: &bollard::errors::Error) -> String {
    match e {
        bollard::errors::Error::DockerResponseServerError {
            status_code,
            message,
        } => format!("{} (HTTP {status_code})", message.trim()),
        other => other.to_string(),
    }
}

pub fn is_not_found(e: &bollard::errors::Error) -> bool {
    matches!(
        e,
        bollard::errors::Error::DockerResponseServerError {
            status_code: 404,
            ..
        }
    )
}
