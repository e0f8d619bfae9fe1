//! `docker run --runtime=maibox` against a real local dockerd (the Docker lane: `cargo
//! xtask test` starts the engine with this checkout's maibox registered as `maibox`).
//! Docker sends its default seccomp profile, cgroup resources and device rules with
//! every container: all of them are enforced by maibox's own code, no waiver.

mod common;
use common::docker::{require_engine, IMAGE};
use common::*;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// The engine answers and knows the `maibox` runtime; in CI both are required.
fn ready(test: &str) -> bool {
    if !require_engine(test) {
        return false;
    }
    let o = Command::new("docker")
        .args(["info", "--format", "{{json .Runtimes}}"])
        .output()
        .unwrap();
    if String::from_utf8_lossy(&o.stdout).contains("\"maibox\"") {
        return true;
    }
    assert!(
        !in_ci(),
        "{test}: the engine has no `maibox` runtime registered"
    );
    eprintln!("SKIP {test}: no `maibox` runtime registered (xtask/docker/docker-engine.sh up with EXTRA_RUNTIMES=maibox=PATH)");
    false
}

fn docker(args: &[&str]) -> Output {
    Command::new("timeout")
        .arg("120")
        .arg("docker")
        .args(args)
        .output()
        .unwrap()
}

/// Polls `done` until it holds; fails naming `what` after `limit`. For what the
/// engine does in the background (a container's process starting, its output
/// reaching `docker logs`), which takes its time on a loaded machine.
fn wait_until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !done() {
        assert!(t0.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn run(flags: &[&str], code: &str) -> Output {
    let mut args = vec!["run", "--rm", "--runtime=maibox"];
    args.extend_from_slice(flags);
    args.extend_from_slice(&[IMAGE, "python3", "-c", code]);
    docker(&args)
}

const HARDENED: &[&str] = &[
    "--cap-drop",
    "ALL",
    "--security-opt",
    "no-new-privileges",
    "--read-only",
    "--user",
    "1000:1000",
    "--memory",
    "64m",
    "--memory-swap",
    "64m",
    "--cpus",
    "0.5",
    "--pids-limit",
    "32",
    "--network",
    "none",
];

#[test]
fn docker_run_prints_42() {
    if !ready("docker_run_prints_42") {
        return;
    }
    let o = run(&[], "print(42)");
    assert_eq!(stdout(&o), "42\n", "{}", stderr(&o));
    assert!(o.status.success());
}

#[test]
fn docker_hardened_flags_are_enforced() {
    if !ready("docker_hardened_flags_are_enforced") {
        return;
    }
    let probe = r#"
import ctypes, json, os, socket
st = {l.split(':')[0]: l.split(':')[1].strip() for l in open('/proc/self/status')}
try:
    open('/x', 'w'); ro = 0
except OSError as e:
    ro = e.errno
try:
    socket.create_connection(('1.1.1.1', 53), timeout=2); net = 'connected'
except OSError as e:
    net = e.errno
libc = ctypes.CDLL(None, use_errno=True)
keyctl = 0 if libc.syscall(250, 0, 0, 0, 0) >= 0 else ctypes.get_errno()
print(json.dumps({'uid': os.getuid(), 'capeff': st['CapEff'], 'nnp': st['NoNewPrivs'],
  'seccomp': st['Seccomp'], 'ro': ro, 'net': net, 'ifaces': sorted(os.listdir('/sys/class/net')),
  'keyctl': keyctl}))
"#;
    let o = run(HARDENED, probe);
    assert!(o.status.success(), "{}", stderr(&o));
    let p: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(p["uid"], 1000, "{p}");
    assert_eq!(p["capeff"], "0000000000000000", "{p}");
    assert_eq!(p["nnp"], "1", "{p}");
    assert_eq!(p["seccomp"], "2", "{p}");
    assert_eq!(p["ro"], libc::EROFS, "{p}");
    assert_ne!(p["net"], "connected", "{p}");
    assert_eq!(p["ifaces"], serde_json::json!(["lo"]), "{p}");
    assert_eq!(
        p["keyctl"],
        libc::EPERM,
        "Docker's profile denies keyctl: {p}"
    );
    // Control: without the flags (and with seccomp unconfined) the same probe differs.
    let o = run(&["--security-opt", "seccomp=unconfined"], probe);
    assert!(o.status.success(), "{}", stderr(&o));
    let c: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(c["uid"], 0, "{c}");
    assert_ne!(c["capeff"], "0000000000000000", "{c}");
    assert_eq!(c["nnp"], "0", "{c}");
    assert_eq!(c["seccomp"], "0", "{c}");
    assert_eq!(c["ro"], 0, "{c}");
    assert_ne!(c["keyctl"], libc::EPERM, "{c}");
}

#[test]
fn docker_memory_and_pids_limits_are_enforced() {
    if !ready("docker_memory_and_pids_limits_are_enforced") {
        return;
    }
    let hog =
        "b = bytearray(200 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1\nprint('survived')";
    let o = run(&["--memory", "64m", "--memory-swap", "64m"], hog);
    assert_eq!(o.status.code(), Some(137), "{} {}", stdout(&o), stderr(&o));
    assert!(!stdout(&o).contains("survived"));
    let o = run(&[], hog);
    assert!(stdout(&o).contains("survived"), "control: {}", stderr(&o));
    let forks = r#"
import os, time
n = 0
try:
    for _ in range(30):
        if os.fork() == 0:
            time.sleep(3); os._exit(0)
        n += 1
except OSError:
    pass
print(n)
"#;
    let o = run(&["--pids-limit", "10"], forks);
    let n: u32 = stdout(&o).trim().parse().unwrap();
    assert!(n < 10, "{n}");
    let o = run(&[], forks);
    assert_eq!(stdout(&o).trim(), "30", "control: {}", stderr(&o));
}

#[test]
fn docker_stop_kill_and_rm_force() {
    if !ready("docker_stop_kill_and_rm_force") {
        return;
    }
    let name = |v: &str| format!("maibox-lane-{v}-{}", std::process::id());
    let start = |n: &str| {
        let o = docker(&[
            "run",
            "-d",
            "--name",
            n,
            "--runtime=maibox",
            IMAGE,
            "python3",
            "-c",
            "import time; time.sleep(300)",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
    };
    let exit_code = |n: &str| {
        stdout(&docker(&["inspect", "-f", "{{.State.ExitCode}}", n]))
            .trim()
            .to_string()
    };
    // Python as PID 1 ignores SIGTERM: stop falls back to SIGKILL after the grace period.
    let n = name("stop");
    start(&n);
    let t = Instant::now();
    assert!(docker(&["stop", "-t", "1", &n]).status.success());
    assert!(t.elapsed() < Duration::from_secs(30));
    assert_eq!(exit_code(&n), "137");
    assert!(docker(&["rm", &n]).status.success());
    let n = name("kill");
    start(&n);
    assert!(docker(&["kill", "-s", "KILL", &n]).status.success());
    assert!(docker(&["wait", &n]).status.success());
    assert_eq!(exit_code(&n), "137");
    assert!(docker(&["rm", &n]).status.success());
    let n = name("rm");
    start(&n);
    assert!(docker(&["rm", "-f", &n]).status.success());
    let left = stdout(&docker(&["ps", "-aq", "--filter", &format!("name={n}")]));
    assert!(left.trim().is_empty(), "{left}");
}

#[test]
fn docker_exec_joins_the_container_and_docker_top_lists_it() {
    if !ready("docker_exec_joins_the_container_and_docker_top_lists_it") {
        return;
    }
    let n = format!("maibox-lane-exec-{}", std::process::id());
    let mut args = vec!["run", "-d", "--name", n.as_str(), "--runtime=maibox"];
    args.extend_from_slice(HARDENED);
    args.extend_from_slice(&["--tmpfs", "/tmp"]);
    args.extend_from_slice(&[
        IMAGE,
        "python3",
        "-c",
        "import time; open('/tmp/mark', 'w').write('x'); time.sleep(300)",
    ]);
    let o = docker(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let probe = r#"
import json, os
st = {l.split(':')[0]: l.split(':')[1].strip() for l in open('/proc/self/status')}
print(json.dumps({'uid': os.getuid(), 'pid': os.getpid(), 'capeff': st['CapEff'],
  'nnp': st['NoNewPrivs'], 'seccomp': st['Seccomp'], 'mark': os.path.exists('/tmp/mark'),
  'init': open('/proc/1/cmdline').read().split('\0')[0]}))
"#;
    // The container's python writes the mark once it has started: probe until the
    // mark is there (a fixed 500 ms was too short for a loaded machine).
    let t0 = Instant::now();
    let p = loop {
        let o = docker(&["exec", &n, "python3", "-c", probe]);
        assert!(o.status.success(), "{}", stderr(&o));
        let p: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        if p["mark"] == true || t0.elapsed() > Duration::from_secs(60) {
            break p;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    // Same pid namespace (the container's python is 1), same /tmp, same confinement.
    assert_eq!(p["init"], "python3", "{p}");
    assert_ne!(p["pid"], 1, "{p}");
    assert_eq!(p["mark"], true, "{p}");
    assert_eq!(p["uid"], 1000, "{p}");
    assert_eq!(p["capeff"], "0000000000000000", "{p}");
    assert_eq!(p["nnp"], "1", "{p}");
    assert_eq!(p["seccomp"], "2", "{p}");
    let o = docker(&["exec", &n, "sh", "-c", "exit 7"]);
    assert_eq!(o.status.code(), Some(7), "{}", stderr(&o));
    let top = stdout(&docker(&["top", &n]));
    assert!(top.contains("time.sleep(300)"), "{top}");
    assert!(docker(&["rm", "-f", &n]).status.success());
}

#[test]
fn docker_pause_freezes_and_unpause_thaws() {
    if !ready("docker_pause_freezes_and_unpause_thaws") {
        return;
    }
    let n = format!("maibox-lane-pause-{}", std::process::id());
    let ticker = "import time\nwhile True:\n    print(time.time(), flush=True); time.sleep(0.1)";
    let o = docker(&[
        "run",
        "-d",
        "--name",
        &n,
        "--runtime=maibox",
        IMAGE,
        "python3",
        "-c",
        ticker,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let lines = || stdout(&docker(&["logs", &n])).lines().count();
    wait_until("the ticker's first line", Duration::from_secs(60), || {
        lines() > 0
    });
    assert!(docker(&["pause", &n]).status.success());
    let status = stdout(&docker(&["inspect", "-f", "{{.State.Status}}", &n]));
    assert_eq!(status.trim(), "paused");
    // Lines printed just before the freeze may still be on their way to the log: wait
    // until the count holds still (a running ticker, 10 lines a second, never does).
    let mut frozen_at = lines();
    wait_until(
        "the log to settle while paused",
        Duration::from_secs(10),
        || {
            std::thread::sleep(Duration::from_millis(300));
            let now = lines();
            std::mem::replace(&mut frozen_at, now) == now
        },
    );
    std::thread::sleep(Duration::from_millis(800));
    assert_eq!(lines(), frozen_at, "output while paused");
    // exec into a paused container is refused, as runc does.
    assert!(!docker(&["exec", &n, "true"]).status.success());
    assert!(docker(&["unpause", &n]).status.success());
    wait_until("output after unpause", Duration::from_secs(60), || {
        lines() > frozen_at
    });
    // rm -f of a paused container: SIGKILL acts once thawed.
    assert!(docker(&["pause", &n]).status.success());
    assert!(docker(&["rm", "-f", &n]).status.success());
}

#[test]
fn docker_update_changes_the_limits_of_a_running_container() {
    if !ready("docker_update_changes_the_limits_of_a_running_container") {
        return;
    }
    let o = docker(&[
        "run",
        "-d",
        "--runtime=maibox",
        "--memory",
        "64m",
        "--memory-swap",
        "64m",
        "--pids-limit",
        "50",
        IMAGE,
        "python3",
        "-c",
        "import time; time.sleep(300)",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let id = stdout(&o).trim().to_string();
    let read = |ctl: &str, file: &str| {
        let v1 = std::path::Path::new("/sys/fs/cgroup")
            .join(ctl)
            .join("docker")
            .join(&id)
            .join(file);
        std::fs::read_to_string(&v1)
            .unwrap_or_default()
            .trim()
            .to_string()
    };
    if std::path::Path::new("/sys/fs/cgroup/memory").is_dir() {
        assert_eq!(
            read("memory", "memory.limit_in_bytes"),
            (64u64 << 20).to_string()
        );
        assert_eq!(read("pids", "pids.max"), "50");
    }
    let o = docker(&[
        "update",
        "--memory",
        "100m",
        "--memory-swap",
        "100m",
        "--pids-limit",
        "70",
        &id,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    if std::path::Path::new("/sys/fs/cgroup/memory").is_dir() {
        assert_eq!(
            read("memory", "memory.limit_in_bytes"),
            (100u64 << 20).to_string()
        );
        assert_eq!(read("pids", "pids.max"), "70");
    }
    let o = docker(&["inspect", "-f", "{{.HostConfig.Memory}}", &id]);
    assert_eq!(stdout(&o).trim(), (100u64 << 20).to_string());
    assert!(docker(&["rm", "-f", &id]).status.success());
}

#[test]
fn docker_run_and_exec_with_a_terminal() {
    if !ready("docker_run_and_exec_with_a_terminal") {
        return;
    }
    let probe = "import json, os\nprint(json.dumps({'tty': [os.isatty(f) for f in (0, 1, 2)], 'uid': os.getuid(), 'owner': os.stat(os.ttyname(1)).st_uid if os.isatty(1) else None}))";
    let o = docker(&[
        "run",
        "--rm",
        "-t",
        "--runtime=maibox",
        "--user",
        "1000:1000",
        IMAGE,
        "python3",
        "-c",
        probe,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let p: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(p["tty"], serde_json::json!([true, true, true]), "{p}");
    assert_eq!(
        p["owner"], 1000,
        "the pty belongs to the container's user: {p}"
    );
    // Control: without -t there is no terminal.
    let o = docker(&[
        "run",
        "--rm",
        "--runtime=maibox",
        IMAGE,
        "python3",
        "-c",
        probe,
    ]);
    let p: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(p["tty"], serde_json::json!([false, false, false]), "{p}");
    let n = format!("maibox-lane-tty-{}", std::process::id());
    let o = docker(&[
        "run",
        "-d",
        "--name",
        &n,
        "--runtime=maibox",
        "--user",
        "1000:1000",
        IMAGE,
        "python3",
        "-c",
        "import time; time.sleep(300)",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = docker(&["exec", "-t", &n, "python3", "-c", probe]);
    assert!(o.status.success(), "{}", stderr(&o));
    let p: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(p["tty"], serde_json::json!([true, true, true]), "{p}");
    assert_eq!(p["owner"], 1000, "{p}");
    assert!(docker(&["rm", "-f", &n]).status.success());
}

/// `docker run --runtime=maibox-strict` (maibox `--hardened`, registered with
/// `runtimeArgs`): an ordinary program (threads, a subprocess, JSON, a file in /tmp)
/// runs normally with the hardened flags, while io_uring, bpf and userfaultfd kill
/// the container, which its exit status shows (128 + SIGSYS). Control: the same
/// probes under runc return an error and go on.
#[test]
fn docker_strict_runtime_kills_exploit_calls() {
    let test = "docker_strict_runtime_kills_exploit_calls";
    if !ready(test) {
        return;
    }
    let o = docker(&["info", "--format", "{{json .Runtimes}}"]);
    if !stdout(&o).contains("\"maibox-strict\"") {
        assert!(!in_ci(), "{test}: no `maibox-strict` runtime registered");
        eprintln!("SKIP {test}: no `maibox-strict` runtime registered (EXTRA_RUNTIMES=maibox-strict=PATH,--hardened)");
        return;
    }
    let with = |runtime: &str, code: &str, arg: &str| {
        let rt = format!("--runtime={runtime}");
        let mut args = vec!["run", "--rm", rt.as_str(), "--tmpfs", "/tmp:size=16m"];
        args.extend_from_slice(HARDENED);
        args.extend_from_slice(&[IMAGE, "python3", "-c", code, arg]);
        docker(&args)
    };
    let ordinary = r#"
import json, subprocess, sys, threading
out = []
t = [threading.Thread(target=lambda i=i: out.append(sum(range(i * 10000)))) for i in range(8)]
[x.start() for x in t]; [x.join() for x in t]
open("/tmp/data.json", "w").write(json.dumps({"n": len(out)}))
n = json.load(open("/tmp/data.json"))["n"]
r = subprocess.run([sys.executable, "-c", "print(6 * 7)"], capture_output=True, text=True)
print(n, r.stdout.strip())
"#;
    let o = with("maibox-strict", ordinary, "");
    assert_eq!(stdout(&o), "8 42\n", "{}", stderr(&o));
    let exploit = r#"
import ctypes, platform, sys
nr = {"x86_64": {"bpf": 321, "userfaultfd": 323, "io_uring_setup": 425},
      "aarch64": {"bpf": 280, "userfaultfd": 282, "io_uring_setup": 425}}[platform.machine()][sys.argv[1]]
libc = ctypes.CDLL(None, use_errno=True)
print("returned", libc.syscall(nr, 0, 0, 0), ctypes.get_errno())
"#;
    for call in ["io_uring_setup", "bpf", "userfaultfd"] {
        let o = with("maibox-strict", exploit, call);
        assert_eq!(
            o.status.code(),
            Some(128 + libc::SIGSYS),
            "{call}: {}",
            stderr(&o)
        );
        let o = with("runc", exploit, call);
        assert!(o.status.success(), "control {call}: {}", stderr(&o));
        assert!(
            stdout(&o).starts_with("returned -1"),
            "control {call}: {}",
            stdout(&o)
        );
    }
}
