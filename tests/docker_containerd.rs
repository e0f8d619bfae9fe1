//! containerd's `ctr run --runc-binary maibox` (the path Kubernetes takes through a
//! RuntimeClass), against the containerd of the Docker lane's engine.

mod common;
use common::docker::{require_engine, IMAGE};
use common::*;
use std::process::{Command, Output};

const SOCKET: &str = "/var/run/docker/containerd/containerd.sock";
const NS: &str = "maibox-lane";

/// The registered `maibox` runtime's binary, once the image is in containerd.
fn setup(test: &str) -> Option<String> {
    if !require_engine(test) {
        return None;
    }
    let o = Command::new("docker")
        .args(["info", "--format", "{{(index .Runtimes \"maibox\").Path}}"])
        .output()
        .unwrap();
    let bin = stdout(&o).trim().to_string();
    if bin.is_empty() || !std::path::Path::new(SOCKET).exists() {
        assert!(
            !in_ci(),
            "{test}: no maibox runtime or containerd socket in the lane"
        );
        eprintln!("SKIP {test}: no maibox runtime registered or no containerd at {SOCKET}");
        return None;
    }
    let image = format!("docker.io/library/{IMAGE}");
    let have = ctr(&["images", "ls", "-q"]);
    if !stdout(&have).lines().any(|l| l == image) {
        let import =
            format!("docker save {IMAGE} | ctr --address {SOCKET} -n {NS} images import -");
        let o = Command::new("sh").args(["-c", &import]).output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
    }
    Some(bin)
}

fn ctr(args: &[&str]) -> Output {
    Command::new("timeout")
        .args(["120", "ctr", "--address", SOCKET, "-n", NS])
        .args(args)
        .output()
        .unwrap()
}

fn run(bin: &str, id: &str, flags: &[&str], code: &str) -> Output {
    let image = format!("docker.io/library/{IMAGE}");
    let mut args = vec!["run", "--rm", "--runc-binary", bin];
    args.extend_from_slice(flags);
    args.extend_from_slice(&[&image, id, "python3", "-c", code]);
    ctr(&args)
}

#[test]
fn ctr_runs_containers_with_maibox() {
    let Some(bin) = setup("ctr_runs_containers_with_maibox") else {
        return;
    };
    // One id per run: a run's container, task and cgroup (named after the id) are
    // torn down as it ends, and the next run must not race that teardown.
    let ids: Vec<String> = (0..3)
        .map(|n| format!("ctr-{}-{n}", std::process::id()))
        .collect();
    let o = run(&bin, &ids[0], &[], "print(42)");
    assert_eq!(stdout(&o), "42\n", "{}", stderr(&o));
    let probe = "st = {l.split(':')[0]: l.split(':')[1].strip() for l in open('/proc/self/status')}\nprint(st['Seccomp'], st['NoNewPrivs'], flush=True)\nb = bytearray(200 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1\nprint('survived')";
    let o = run(
        &bin,
        &ids[1],
        &["--seccomp", "--memory-limit", "67108864", "--read-only"],
        probe,
    );
    assert_eq!(stdout(&o).lines().next(), Some("2 1"), "{}", stderr(&o));
    assert!(!stdout(&o).contains("survived"));
    assert_eq!(o.status.code(), Some(137), "{}", stderr(&o));
    // Control: no profile, no limit.
    let o = run(&bin, &ids[2], &[], probe);
    assert_eq!(stdout(&o).lines().next(), Some("0 1"), "{}", stderr(&o));
    assert!(stdout(&o).contains("survived"), "{}", stderr(&o));
    let left = stdout(&ctr(&["containers", "ls", "-q"]));
    assert!(
        !left.lines().any(|l| ids.iter().any(|id| l == id)),
        "{left}"
    );
}
