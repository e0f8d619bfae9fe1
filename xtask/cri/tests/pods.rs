//! Pods through containerd's CRI plugin with maibox as the runtime handler, the path a
//! kubelet takes for a RuntimeClass whose `handler: maibox`: a pod sandbox and a container
//! in it, exec, logs, stats, stop and removal; and a pod whose two containers share its
//! process namespace (`shareProcessNamespace: true`).

use cri_lane::api::{self, NamespaceMode};
use cri_lane::{
    container_config, lane, maibox_binary, pod_config, wait_for, Cri, MAIBOX_ROOT, PAUSE_IMAGE,
    TEST_IMAGE,
};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// A pod's log directory and cgroup parent, removed when the test ends.
struct Scratch {
    logs: PathBuf,
    cgroup_parent: String,
}

impl Scratch {
    fn new(name: &str) -> Scratch {
        let unique = format!("{name}-{}", std::process::id());
        let logs = std::env::temp_dir().join(format!("maibox-cri-{unique}"));
        std::fs::create_dir_all(&logs).unwrap();
        Scratch {
            logs,
            cgroup_parent: format!("/maibox-cri-lane/{unique}"),
        }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.logs);
        // The kubelet removes a pod's cgroup; here the test does, in every hierarchy.
        for h in std::fs::read_dir("/sys/fs/cgroup").into_iter().flatten() {
            let h = h.unwrap().path();
            let _ = std::fs::remove_dir(h.join(self.cgroup_parent.trim_start_matches('/')));
            let _ = std::fs::remove_dir(h.join("maibox-cri-lane"));
        }
    }
}

/// A pod that is stopped and removed (with its containers) however the test ends.
struct PodGuard<'a> {
    cri: &'a Cri,
    id: String,
}

impl Drop for PodGuard<'_> {
    fn drop(&mut self) {
        let _ = self.cri.stop_and_remove_pod(&self.id);
    }
}

/// `maibox state ID` against the handler's state root: what maibox itself knows of a
/// container (None once it is deleted).
fn maibox_state(id: &str) -> Option<serde_json::Value> {
    let bin = maibox_binary().expect("the lane's config names the maibox binary");
    let o = Command::new(bin)
        .args(["--root", MAIBOX_ROOT, "state", id])
        .output()
        .unwrap();
    o.status
        .success()
        .then(|| serde_json::from_slice(&o.stdout).unwrap())
}

fn pod_status(cri: &Cri, id: &str) -> api::PodSandboxStatusResponse {
    let req = api::PodSandboxStatusRequest {
        pod_sandbox_id: id.into(),
        verbose: true,
    };
    cri.runtime(|mut c| async move { c.pod_sandbox_status(req).await })
        .unwrap()
}

/// The command lines of every process the container sees, pid 1's first.
fn processes(cri: &Cri, id: &str) -> Vec<String> {
    // Processes that end meanwhile (the listing's own) are skipped.
    let script = "for p in 1 $(ls /proc | grep -v '^1$' | grep '^[0-9]'); do \
                  c=$(tr '\\0' ' ' < /proc/$p/cmdline 2>/dev/null) && echo \"$c\"; done; true";
    let r = cri.exec_sync(id, &["sh", "-c", script]).unwrap();
    assert_eq!(r.exit_code, 0, "{r:?}");
    String::from_utf8_lossy(&r.stdout)
        .lines()
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

/// The log lines (stream, text) of a CRI log file: `TIME STREAM F|P TEXT`.
fn log_lines(path: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let mut f = l.splitn(4, ' ');
            let (_time, stream, tag) = (f.next()?, f.next()?, f.next()?);
            (tag == "F").then(|| (stream.to_string(), f.next().unwrap_or("").to_string()))
        })
        .collect()
}

fn container_state(cri: &Cri, id: &str) -> (api::ContainerState, i32) {
    let s = cri.container_status(id).unwrap();
    (s.state(), s.exit_code)
}

fn assert_gone(cri: &Cri, pod: &str, containers: &[&str]) {
    let list = cri
        .runtime(|mut c| async move {
            c.list_pod_sandbox(api::ListPodSandboxRequest { filter: None })
                .await
        })
        .unwrap();
    assert!(
        !list.items.iter().any(|p| p.id == pod),
        "{pod} still listed"
    );
    for id in std::iter::once(&pod).chain(containers) {
        assert!(maibox_state(id).is_none(), "maibox still has {id}");
    }
}

#[test]
fn a_pod_runs_execs_logs_stats_and_stops_through_the_maibox_handler() {
    let Some(cri) = lane("a_pod_runs_execs_logs_stats_and_stops_through_the_maibox_handler") else {
        return;
    };
    let v = cri
        .runtime(|mut c| async move {
            c.version(api::VersionRequest {
                version: "v1".into(),
            })
            .await
        })
        .unwrap();
    assert_eq!(
        (v.runtime_name.as_str(), v.runtime_api_version.as_str()),
        ("containerd", "v1")
    );
    for image in [PAUSE_IMAGE, TEST_IMAGE] {
        let req = api::ImageStatusRequest {
            image: Some(api::ImageSpec {
                image: image.into(),
                ..Default::default()
            }),
            verbose: false,
        };
        let st = cri
            .images(|mut c| async move { c.image_status(req).await })
            .unwrap();
        assert!(st.image.is_some(), "{image} is not in the lane's store");
    }

    // The pod: its sandbox runs the pause image through the maibox handler's binary.
    let scratch = Scratch::new("basic");
    let pod = pod_config(
        &format!("basic-{}", std::process::id()),
        &scratch.logs,
        &scratch.cgroup_parent,
        NamespaceMode::Container,
    );
    let pod_id = cri.run_pod(&pod).unwrap();
    let _guard = PodGuard {
        cri: &cri,
        id: pod_id.clone(),
    };
    let st = pod_status(&cri, &pod_id);
    let status = st.status.as_ref().unwrap();
    assert_eq!(status.state(), api::PodSandboxState::SandboxReady);
    assert_eq!(status.runtime_handler, "maibox");
    let info: serde_json::Value = serde_json::from_str(&st.info["info"]).unwrap();
    let bin = maibox_binary().unwrap();
    assert_eq!(
        info["runtimeOptions"]["binary_name"].as_str(),
        bin.to_str(),
        "{info}"
    );
    assert_eq!(maibox_state(&pod_id).unwrap()["status"], "running");

    // A container with a memory limit, writing to both streams, then sleeping as pid 1.
    let mut config = container_config(
        "app",
        "echo hello from maibox; echo to stderr >&2; exec sleep 3600",
        "app.log",
        &pod,
    );
    config.linux.as_mut().unwrap().resources = Some(api::LinuxContainerResources {
        memory_limit_in_bytes: 64 << 20,
        ..Default::default()
    });
    let id = cri.start_container(&pod_id, &pod, config).unwrap();
    assert_eq!(
        container_state(&cri, &id).0,
        api::ContainerState::ContainerRunning
    );
    assert_eq!(maibox_state(&id).unwrap()["status"], "running");

    // Logs: the kubelet's files, one line per write, each stream tagged.
    let log = scratch.logs.join("app.log");
    let lines = wait_for(Duration::from_secs(10), || {
        let l = log_lines(&log);
        (l.len() >= 2).then_some(l)
    })
    .unwrap_or_else(|| panic!("no log lines in {}: {:?}", log.display(), log_lines(&log)));
    assert!(
        lines.contains(&("stdout".into(), "hello from maibox".into())),
        "{lines:?}"
    );
    assert!(
        lines.contains(&("stderr".into(), "to stderr".into())),
        "{lines:?}"
    );

    // Exec: in the container's namespaces (its pid 1 is its own sleep; no pause in a
    // pod without a shared process namespace) and cgroup (the limit asked for).
    let ps = processes(&cri, &id);
    assert_eq!(ps[0], "sleep 3600", "{ps:?}");
    assert!(!ps.iter().any(|p| p == "/pause"), "{ps:?}");
    let r = cri
        .exec_sync(
            &id,
            &[
                "sh",
                "-c",
                "cat /sys/fs/cgroup/memory/memory.limit_in_bytes; id -u",
            ],
        )
        .unwrap();
    assert_eq!(
        (String::from_utf8_lossy(&r.stdout).as_ref(), r.exit_code),
        ("67108864\n0\n", 0),
        "{}",
        String::from_utf8_lossy(&r.stderr)
    );
    let r = cri
        .exec_sync(&id, &["sh", "-c", "echo failing >&2; exit 3"])
        .unwrap();
    assert_eq!((r.stderr.as_slice(), r.exit_code), (&b"failing\n"[..], 3));

    // Stats: the container's own cgroup, as the kubelet's summary reads it.
    let req = api::ContainerStatsRequest {
        container_id: id.clone(),
    };
    let stats = cri
        .runtime(|mut c| async move { c.container_stats(req).await })
        .unwrap()
        .stats
        .unwrap();
    assert_eq!(stats.attributes.as_ref().unwrap().id, id);
    let cpu = stats.cpu.unwrap().usage_core_nano_seconds.unwrap().value;
    let memory = stats.memory.unwrap().working_set_bytes.unwrap().value;
    assert!(
        cpu > 0 && memory > 0,
        "cpu {cpu} ns, working set {memory} B"
    );

    // Stop: pid 1 ignores SIGTERM, so containerd kills it after the grace period.
    let stop = api::StopContainerRequest {
        container_id: id.clone(),
        timeout: 1,
    };
    cri.runtime(|mut c| async move { c.stop_container(stop).await })
        .unwrap();
    assert_eq!(
        container_state(&cri, &id),
        (api::ContainerState::ContainerExited, 137)
    );
    let rm = api::RemoveContainerRequest {
        container_id: id.clone(),
    };
    cri.runtime(|mut c| async move { c.remove_container(rm).await })
        .unwrap();
    cri.stop_and_remove_pod(&pod_id).unwrap();
    assert_gone(&cri, &pod_id, &[&id]);
}

#[test]
fn containers_of_a_pod_share_its_process_namespace() {
    let Some(cri) = lane("containers_of_a_pod_share_its_process_namespace") else {
        return;
    };
    let scratch = Scratch::new("shared-pid");
    let pod = pod_config(
        &format!("shared-pid-{}", std::process::id()),
        &scratch.logs,
        &scratch.cgroup_parent,
        NamespaceMode::Pod,
    );
    let pod_id = cri.run_pod(&pod).unwrap();
    let _guard = PodGuard {
        cri: &cri,
        id: pod_id.clone(),
    };
    let a = cri
        .start_container(
            &pod_id,
            &pod,
            container_config("a", "exec sleep 3600", "a.log", &pod),
        )
        .unwrap();
    let b = cri
        .start_container(
            &pod_id,
            &pod,
            container_config("b", "exec sleep 3601", "b.log", &pod),
        )
        .unwrap();

    // From b: the pod's pause is pid 1, and a's process is there too.
    let ps = processes(&cri, &b);
    assert_eq!(ps[0], "/pause", "{ps:?}");
    assert!(ps.iter().any(|p| p == "sleep 3600"), "{ps:?}");
    assert!(ps.iter().any(|p| p == "sleep 3601"), "{ps:?}");
    // ... and can signal it (not pid 1 of its namespace: SIGTERM ends it).
    let r = cri
        .exec_sync(&b, &["sh", "-c", "kill $(pidof 'sleep' | tr ' ' '\\n' | while read p; do grep -q 3600 /proc/$p/cmdline && echo $p; done)"])
        .unwrap();
    assert_eq!(r.exit_code, 0, "{}", String::from_utf8_lossy(&r.stderr));
    let ended = wait_for(Duration::from_secs(10), || {
        let s = container_state(&cri, &a);
        (s.0 == api::ContainerState::ContainerExited).then_some(s.1)
    });
    assert_eq!(ended, Some(143));
    assert_eq!(
        container_state(&cri, &b).0,
        api::ContainerState::ContainerRunning
    );

    for id in [&a, &b] {
        cri.stop_and_remove_container(id, 1).unwrap();
    }
    cri.stop_and_remove_pod(&pod_id).unwrap();
    assert_gone(&cri, &pod_id, &[&a, &b]);
}
