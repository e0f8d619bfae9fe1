//! maibox's CRI lane: a small client of containerd's CRI plugin, for the tests in
//! `tests/`, which drive pods through the runtime handler `maibox` as a kubelet does for a
//! RuntimeClass. The API is the `k8s-cri` crate's (Kubernetes' v1 protobuf definitions,
//! over tonic). `containerd-cri.sh up` beside this crate (run by `cargo xtask test` as root)
//! starts that containerd, registers maibox and imports the pause and test images.

pub use k8s_cri::v1 as api;

use api::image_service_client::ImageServiceClient;
use api::runtime_service_client::RuntimeServiceClient;
use hyper_util::rt::TokioIo;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tonic::transport::{Channel, Endpoint, Uri};

/// The lane containerd's CRI socket (containerd-cri.sh's `LANE_DIR`).
pub const SOCKET: &str = "/run/maibox-cri/containerd.sock";
/// The lane's configuration, which names the maibox binary registered as the handler.
pub const CONFIG: &str = "/run/maibox-cri/config.toml";
/// Where containerd's shim keeps maibox's container state (`--root`) for the CRI namespace.
pub const MAIBOX_ROOT: &str = "/run/maibox-cri/maibox/k8s.io";
/// The runtime handler the pods ask for (a RuntimeClass's `handler`).
pub const HANDLER: &str = "maibox";
/// Images the lane imports: a static pause binary, and Debian's busybox-static.
pub const PAUSE_IMAGE: &str = "localhost/maibox/pause:lane";
pub const TEST_IMAGE: &str = "localhost/maibox/busybox:lane";

/// A connection to the lane's containerd, with a runtime of its own so that the tests
/// stay plain synchronous code.
pub struct Cri {
    rt: tokio::runtime::Runtime,
    runtime: RuntimeServiceClient<Channel>,
    images: ImageServiceClient<Channel>,
}

/// Whether the tests must find the lane: `cargo xtask test` starts it in CI.
fn in_ci() -> bool {
    std::env::var("CI").map(|v| v == "true").unwrap_or(false)
}

/// Connects to the lane's containerd, or returns None (and says why) where it is not
/// running; in CI a missing lane fails the test, since `cargo xtask test` starts it.
pub fn lane(test: &str) -> Option<Cri> {
    if !Path::new(SOCKET).exists() {
        assert!(
            !in_ci(),
            "{test} needs the CRI lane's containerd; in CI `cargo xtask test` starts it (xtask/cri/containerd-cri.sh up)"
        );
        eprintln!("SKIP {test}: no containerd at {SOCKET} (as root: MAIBOX=$PWD/target/debug/maibox xtask/cri/containerd-cri.sh up)");
        return None;
    }
    match Cri::connect(SOCKET) {
        Ok(c) => Some(c),
        Err(e) => panic!("{test}: {SOCKET} exists but does not answer: {e}"),
    }
}

impl Cri {
    pub fn connect(socket: &str) -> Result<Cri, Box<dyn std::error::Error>> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let path = PathBuf::from(socket);
        // The URI is a placeholder: the connector below ignores it and dials the socket.
        let channel = rt.block_on(
            Endpoint::try_from("http://[::]:50051")?
                .timeout(Duration::from_secs(60))
                .connect_with_connector(tower::service_fn(move |_: Uri| {
                    let path = path.clone();
                    async move {
                        Ok::<_, std::io::Error>(TokioIo::new(
                            tokio::net::UnixStream::connect(path).await?,
                        ))
                    }
                })),
        )?;
        Ok(Cri {
            rt,
            runtime: RuntimeServiceClient::new(channel.clone()),
            images: ImageServiceClient::new(channel),
        })
    }

    /// One RuntimeService call: `cri.runtime(|mut c| async move { c.version(req).await })`.
    pub fn runtime<T, F>(
        &self,
        call: impl FnOnce(RuntimeServiceClient<Channel>) -> F,
    ) -> Result<T, tonic::Status>
    where
        F: Future<Output = Result<tonic::Response<T>, tonic::Status>>,
    {
        self.rt
            .block_on(call(self.runtime.clone()))
            .map(tonic::Response::into_inner)
    }

    /// One ImageService call, as [`Cri::runtime`].
    pub fn images<T, F>(
        &self,
        call: impl FnOnce(ImageServiceClient<Channel>) -> F,
    ) -> Result<T, tonic::Status>
    where
        F: Future<Output = Result<tonic::Response<T>, tonic::Status>>,
    {
        self.rt
            .block_on(call(self.images.clone()))
            .map(tonic::Response::into_inner)
    }

    /// RunPodSandbox with the `maibox` handler; returns the sandbox id.
    pub fn run_pod(&self, config: &api::PodSandboxConfig) -> Result<String, tonic::Status> {
        let req = api::RunPodSandboxRequest {
            config: Some(config.clone()),
            runtime_handler: HANDLER.into(),
        };
        self.runtime(|mut c| async move { c.run_pod_sandbox(req).await })
            .map(|r| r.pod_sandbox_id)
    }

    /// CreateContainer then StartContainer; returns the container id.
    pub fn start_container(
        &self,
        pod_id: &str,
        pod: &api::PodSandboxConfig,
        config: api::ContainerConfig,
    ) -> Result<String, tonic::Status> {
        let req = api::CreateContainerRequest {
            pod_sandbox_id: pod_id.into(),
            config: Some(config),
            sandbox_config: Some(pod.clone()),
        };
        let id = self
            .runtime(|mut c| async move { c.create_container(req).await })?
            .container_id;
        let start = api::StartContainerRequest {
            container_id: id.clone(),
        };
        self.runtime(|mut c| async move { c.start_container(start).await })?;
        Ok(id)
    }

    /// ExecSync: a command in a running container, its output and exit code.
    pub fn exec_sync(
        &self,
        id: &str,
        cmd: &[&str],
    ) -> Result<api::ExecSyncResponse, tonic::Status> {
        let req = api::ExecSyncRequest {
            container_id: id.into(),
            cmd: cmd.iter().map(|s| s.to_string()).collect(),
            timeout: 30,
        };
        self.runtime(|mut c| async move { c.exec_sync(req).await })
    }

    pub fn container_status(&self, id: &str) -> Result<api::ContainerStatus, tonic::Status> {
        let req = api::ContainerStatusRequest {
            container_id: id.into(),
            verbose: false,
        };
        self.runtime(|mut c| async move { c.container_status(req).await })?
            .status
            .ok_or_else(|| tonic::Status::not_found(format!("no status for {id}")))
    }

    /// StopContainer (SIGKILL after `grace` seconds) and RemoveContainer.
    pub fn stop_and_remove_container(&self, id: &str, grace: i64) -> Result<(), tonic::Status> {
        let stop = api::StopContainerRequest {
            container_id: id.into(),
            timeout: grace,
        };
        self.runtime(|mut c| async move { c.stop_container(stop).await })?;
        let rm = api::RemoveContainerRequest {
            container_id: id.into(),
        };
        self.runtime(|mut c| async move { c.remove_container(rm).await })?;
        Ok(())
    }

    /// StopPodSandbox and RemovePodSandbox.
    pub fn stop_and_remove_pod(&self, id: &str) -> Result<(), tonic::Status> {
        let stop = api::StopPodSandboxRequest {
            pod_sandbox_id: id.into(),
        };
        self.runtime(|mut c| async move { c.stop_pod_sandbox(stop).await })?;
        let rm = api::RemovePodSandboxRequest {
            pod_sandbox_id: id.into(),
        };
        self.runtime(|mut c| async move { c.remove_pod_sandbox(rm).await })?;
        Ok(())
    }
}

/// A pod's configuration as a kubelet sends it: a cgroup parent of its own, a log
/// directory, the node's network (the lane has no CNI plugin), and `pid` as the pod's
/// process namespace mode (`Pod` for `shareProcessNamespace: true`).
pub fn pod_config(
    name: &str,
    log_dir: &Path,
    cgroup_parent: &str,
    pid: api::NamespaceMode,
) -> api::PodSandboxConfig {
    api::PodSandboxConfig {
        metadata: Some(api::PodSandboxMetadata {
            name: name.into(),
            uid: format!("{name}-uid"),
            namespace: "maibox-lane".into(),
            attempt: 0,
        }),
        // As the kubelet: no hostname for a pod on the node's network (and so in its uts
        // namespace).
        hostname: String::new(),
        log_directory: log_dir.display().to_string(),
        linux: Some(api::LinuxPodSandboxConfig {
            cgroup_parent: cgroup_parent.into(),
            security_context: Some(api::LinuxSandboxSecurityContext {
                namespace_options: Some(api::NamespaceOption {
                    network: api::NamespaceMode::Node as i32,
                    pid: pid as i32,
                    ipc: api::NamespaceMode::Pod as i32,
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// A container of the lane's busybox image running `sh -c script`, logging to
/// `log_path` (relative to the pod's log directory), in `pod`'s namespaces.
pub fn container_config(
    name: &str,
    script: &str,
    log_path: &str,
    pod: &api::PodSandboxConfig,
) -> api::ContainerConfig {
    let pod_ns = pod
        .linux
        .as_ref()
        .and_then(|l| l.security_context.as_ref())
        .and_then(|s| s.namespace_options.clone());
    api::ContainerConfig {
        metadata: Some(api::ContainerMetadata {
            name: name.into(),
            attempt: 0,
        }),
        image: Some(api::ImageSpec {
            image: TEST_IMAGE.into(),
            ..Default::default()
        }),
        // The image's entrypoint is /bin/sh.
        args: vec!["-c".into(), script.into()],
        log_path: log_path.into(),
        linux: Some(api::LinuxContainerConfig {
            security_context: Some(api::LinuxContainerSecurityContext {
                namespace_options: pod_ns,
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Polls `check` every 100 ms until it gives a value or `timeout` passes.
pub fn wait_for<T>(timeout: Duration, mut check: impl FnMut() -> Option<T>) -> Option<T> {
    let end = Instant::now() + timeout;
    loop {
        if let Some(v) = check() {
            return Some(v);
        }
        if Instant::now() > end {
            return None;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The maibox binary the lane registered as the handler (containerd-cri.sh's `MAIBOX`).
pub fn maibox_binary() -> Option<PathBuf> {
    let config = std::fs::read_to_string(CONFIG).ok()?;
    config.lines().find_map(|l| {
        let v = l.trim().strip_prefix("BinaryName = ")?;
        Some(PathBuf::from(v.trim_matches('"')))
    })
}
