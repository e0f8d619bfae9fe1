//! The Docker backend against a real engine: the native engine's probe set run through
//! both backends with the same expectations (any difference fails), each with a control
//! run through the Docker backend with that layer switched off; no container left behind
//! after many runs, some killed by their timeout and some with maibox itself SIGKILLed;
//! clear errors for an unreachable engine and a missing image.

mod common;
use common::docker::{require_engine, IMAGE};
use common::*;
use serde_json::Value;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Backend {
    Native,
    Docker,
}

const BOTH: [Backend; 2] = [Backend::Native, Backend::Docker];

fn ready(test: &str) -> bool {
    if !require_engine(test) {
        return false;
    }
    // The native half needs root for its cgroup limits (CI runs as root).
    require_root(test)
}

fn exec_args<'a>(b: Backend, extra: &[&'a str], code: &'a str) -> Vec<&'a str> {
    let mut args = vec!["exec", "--json"];
    if b == Backend::Docker {
        args.extend_from_slice(&["--backend", "docker", "--image", IMAGE]);
    }
    args.extend_from_slice(extra);
    args.extend_from_slice(&["-c", code]);
    args
}

fn exec(b: Backend, extra: &[&str], code: &str) -> (Output, Value) {
    let o = run(As::Caller, &exec_args(b, extra, code));
    let r = report(&o);
    let want = match b {
        Backend::Native => "native",
        Backend::Docker => "docker",
    };
    assert_eq!(r["backend"], want, "{r}");
    (o, r)
}

/// The probe's own JSON: the line before the report.
fn probe_json(b: Backend, extra: &[&str], code: &str) -> Value {
    let (o, _) = exec(b, extra, code);
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    let line = lines.len().checked_sub(2).map(|i| lines[i]).unwrap_or("");
    serde_json::from_str(line).unwrap_or_else(|e| {
        panic!(
            "{b:?}: probe printed no JSON ({e}); status {:?}\nstdout: {out}\nstderr: {}",
            o.status,
            stderr(&o)
        )
    })
}

fn kinds(r: &Value) -> Vec<String> {
    r["violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["kind"].as_str().unwrap().to_string())
        .collect()
}

const IDS: &str = r#"
import os, json
st = open('/proc/self/status').read()
f = dict(l.split(':\t', 1) for l in st.splitlines() if ':\t' in l)
print(json.dumps({"uid": os.getuid(), "gid": os.getgid(), "euid": os.geteuid(),
  "capeff": f["CapEff"].strip(), "capbnd": f["CapBnd"].strip(),
  "capprm": f["CapPrm"].strip(), "nnp": f["NoNewPrivs"].strip(), "cwd": os.getcwd()}))
"#;

#[test]
fn identity_capabilities_and_no_new_privs_match() {
    if !ready("identity_capabilities_and_no_new_privs_match") {
        return;
    }
    for b in BOTH {
        let v = probe_json(b, &[], IDS);
        assert_eq!(v["uid"], 1000, "{b:?}: {v}");
        assert_eq!(v["gid"], 1000, "{b:?}: {v}");
        assert_eq!(v["euid"], 1000, "{b:?}: {v}");
        assert_eq!(v["capeff"], "0000000000000000", "{b:?}: {v}");
        assert_eq!(v["capprm"], "0000000000000000", "{b:?}: {v}");
        assert_eq!(v["capbnd"], "0000000000000000", "{b:?}: {v}");
        assert_eq!(v["nnp"], "1", "{b:?}: {v}");
        assert_eq!(v["cwd"], "/sandbox", "{b:?}: {v}");
    }
    // Control: without CapDrop ALL and no-new-privileges, the same probe in the same
    // image sees the engine's default bounding set and no no_new_privs.
    let v = probe_json(
        Backend::Docker,
        &[
            "--unsafe-disable-layer",
            "capabilities",
            "--unsafe-disable-layer",
            "no-new-privs",
        ],
        IDS,
    );
    assert_ne!(v["capbnd"], "0000000000000000", "{v}");
    assert_eq!(v["nnp"], "0", "{v}");
}

const FS: &str = r##"
import os, json
def try_write(p):
    try:
        fd = os.open(p, os.O_CREAT | os.O_WRONLY, 0o644)
        os.write(fd, b"x" * 1024 * 1024)
        os.close(fd)
        return "ok"
    except OSError as e:
        return e.errno
def try_exec(p):
    try:
        with open(p, "w") as f:
            f.write("#!/bin/sh\necho ran\n")
        os.chmod(p, 0o755)
        os.execv(p, [p])
    except OSError as e:
        return e.errno
res = {"root": try_write("/x"), "usr": try_write("/usr/x"), "etc": try_write("/etc/x"),
       "script_dir": try_write("/sandbox/x"), "tmp": try_write("/tmp/x"),
       "tmp_exec": try_exec("/tmp/run.sh")}
try:
    open("/sandbox/main.py", "a").write("# changed")
    res["script"] = "ok"
except OSError as e:
    res["script"] = e.errno
print(json.dumps(res))
"##;

#[test]
fn read_only_root_writable_tmp_and_read_only_script_match() {
    if !ready("read_only_root_writable_tmp_and_read_only_script_match") {
        return;
    }
    for b in BOTH {
        let v = probe_json(b, &[], FS);
        assert_eq!(v["root"], libc::EROFS, "{b:?}: {v}");
        assert_ne!(v["usr"], "ok", "{b:?}: {v}");
        assert_ne!(v["etc"], "ok", "{b:?}: {v}");
        assert_ne!(v["script_dir"], "ok", "{b:?}: {v}");
        assert_ne!(v["script"], "ok", "{b:?}: {v}");
        assert_eq!(v["tmp"], "ok", "{b:?}: {v}");
        // /tmp is noexec (native: also Landlock).
        assert_eq!(v["tmp_exec"], libc::EACCES, "{b:?}: {v}");
    }
    // Control: with a writable root the same write is not refused as read-only.
    let v = probe_json(
        Backend::Docker,
        &["--unsafe-disable-layer", "read-only-root"],
        FS,
    );
    assert_ne!(v["root"], libc::EROFS, "{v}");
}

const NET: &str = r#"
import json, socket
# /proc/net/dev lists the interfaces of the reader's network namespace (netlink,
# which socket.if_nameindex() uses, is refused by the native seccomp filter).
names = sorted(l.split(":")[0].strip() for l in open("/proc/net/dev").read().splitlines()[2:])
res = {"ifaces": names}
for name, addr in [("tcp", ("1.1.1.1", 53)), ("lan", ("10.0.0.1", 80))]:
    s = socket.socket(); s.settimeout(2)
    try:
        s.connect(addr); res[name] = "connected"
    except OSError as e:
        res[name] = type(e).__name__
    finally:
        s.close()
print(json.dumps(res))
"#;

#[test]
fn no_network_matches() {
    if !ready("no_network_matches") {
        return;
    }
    for b in BOTH {
        let v = probe_json(b, &[], NET);
        let ifaces: Vec<String> = serde_json::from_value(v["ifaces"].clone()).unwrap();
        assert!(
            ifaces.iter().all(|i| i == "lo"),
            "{b:?}: only lo at most: {v}"
        );
        assert_ne!(v["tcp"], "connected", "{b:?}: {v}");
        assert_ne!(v["lan"], "connected", "{b:?}: {v}");
    }
    // Control: in the host's network namespace the probe sees the host's interfaces.
    let v = probe_json(Backend::Docker, &["--unsafe-disable-layer", "net-ns"], NET);
    let ifaces: Vec<String> = serde_json::from_value(v["ifaces"].clone()).unwrap();
    assert!(ifaces.iter().any(|i| i != "lo"), "{v}");
}

#[test]
fn memory_limit_kill_is_a_memory_violation_in_both() {
    if !ready("memory_limit_kill_is_a_memory_violation_in_both") {
        return;
    }
    let hog = "x = bytearray(400 << 20)\nprint('survived', len(x))";
    for b in BOTH {
        let (o, r) = exec(b, &[], hog);
        assert_eq!(kinds(&r), vec!["memory"], "{b:?}: {r}");
        assert_eq!(r["violations"][0]["limit_bytes"], 256 << 20, "{b:?}");
        let peak = r["usage"]["peak_memory_bytes"].as_u64().unwrap();
        assert!(peak > 0 && peak <= 256 << 20, "{b:?}: peak {peak}");
        assert_eq!(o.status.code(), Some(137), "{b:?}: {r}");
        assert!(!stdout(&o).contains("survived"), "{b:?}");
        assert_eq!(r["cgroup"]["enforced"], true, "{b:?}");
        assert_eq!(r["layers"]["cgroup_limits"], true, "{b:?}");
    }
    // Control: under trusted (1 GiB) the same allocation succeeds in the container.
    let (o, r) = exec(Backend::Docker, &["--trust", "trusted"], hog);
    assert!(stdout(&o).contains("survived 419430400"), "{}", stderr(&o));
    assert_eq!(r["violations"], serde_json::json!([]));
}

const FORKS: &str = r#"
import os, time, sys
pids = []
try:
    for i in range(150):
        pid = os.fork()
        if pid == 0:
            time.sleep(5); os._exit(0)
        pids.append(pid)
    print("forked", len(pids), flush=True)
except OSError as e:
    print("stopped", len(pids), e.errno, flush=True)
    time.sleep(2)
"#;

#[test]
fn pids_limit_stops_a_fork_bomb_in_both() {
    if !ready("pids_limit_stops_a_fork_bomb_in_both") {
        return;
    }
    // rlimits off so that the cgroup, not NPROC, is what stops it natively.
    for b in BOTH {
        let (o, r) = exec(b, &["--unsafe-disable-layer", "rlimits"], FORKS);
        assert!(!stdout(&o).contains("forked 150"), "{b:?}: {}", stdout(&o));
        assert_eq!(o.status.code(), Some(137), "{b:?}: {r}");
        assert!(
            r["violations"]
                .as_array()
                .unwrap()
                .iter()
                .any(|v| v["kind"] == "pids" && v["limit"] == 64),
            "{b:?}: {r}"
        );
        assert!(r["usage"]["max_pids"].as_u64().unwrap() <= 64, "{b:?}: {r}");
    }
    // Control: without the container's limits all 150 forks succeed.
    let (o, _) = exec(
        Backend::Docker,
        &[
            "--unsafe-disable-layer",
            "rlimits",
            "--unsafe-disable-layer",
            "cgroup-limits",
        ],
        FORKS,
    );
    assert!(stdout(&o).contains("forked 150"), "{}", stdout(&o));
}

#[test]
fn timeout_kills_and_exits_124_in_both() {
    if !ready("timeout_kills_and_exits_124_in_both") {
        return;
    }
    let code = "import time\nprint('start', flush=True)\ntime.sleep(30)\nprint('end')";
    for b in BOTH {
        let t = Instant::now();
        // The clock starts with the container: 3 s leave room for the interpreter to
        // start and print on a loaded machine (at 1 s, "start" could miss the cut).
        let (o, r) = exec(b, &["--timeout", "3s"], code);
        assert_eq!(o.status.code(), Some(124), "{b:?}: {r}");
        assert_eq!(kinds(&r), vec!["timeout"], "{b:?}: {r}");
        assert_eq!(r["violations"][0]["limit_s"], 3.0, "{b:?}");
        assert!(stdout(&o).starts_with("start\n"), "{b:?}: {}", stdout(&o));
        assert!(!stdout(&o).lines().any(|l| l == "end"), "{b:?}");
        assert!(
            t.elapsed() < Duration::from_secs(15),
            "{b:?}: {:?}",
            t.elapsed()
        );
    }
}

#[test]
fn output_cap_cuts_with_the_marker_in_both() {
    if !ready("output_cap_cuts_with_the_marker_in_both") {
        return;
    }
    let code = "import sys, time\nsys.stdout.write('x' * 5000)\nsys.stdout.flush()\ntime.sleep(10)";
    for b in BOTH {
        let (o, r) = exec(b, &["--output-limit", "1KiB"], code);
        let out = stdout(&o);
        assert!(
            out.starts_with(&format!(
                "{}\n[maibox: output truncated: the limit of 1024 bytes was reached]\n",
                "x".repeat(1024)
            )),
            "{b:?}: {out}"
        );
        assert_eq!(kinds(&r), vec!["output"], "{b:?}: {r}");
        assert_eq!(r["output"]["truncated"], true, "{b:?}");
        assert_eq!(r["output"]["stdout_bytes"], 1024, "{b:?}");
        assert_eq!(o.status.code(), Some(137), "{b:?}: {r}");
    }
}

#[test]
fn exit_codes_match() {
    if !ready("exit_codes_match") {
        return;
    }
    let cases: [(&str, i32); 5] = [
        ("pass", 0),
        ("import sys; sys.exit(3)", 3),
        ("raise SystemExit('bad')", 1),
        (
            "import os, signal; os.kill(os.getpid(), signal.SIGTERM)",
            143,
        ),
        (
            "import os, signal; os.kill(os.getpid(), signal.SIGKILL)",
            137,
        ),
    ];
    for b in BOTH {
        for (code, want) in cases {
            let (o, r) = exec(b, &[], code);
            assert_eq!(o.status.code(), Some(want), "{b:?} {code}: {r}");
            assert_eq!(r["exit_code"], want, "{b:?} {code}");
            assert_eq!(r["violations"], serde_json::json!([]), "{b:?} {code}");
        }
    }
}

#[test]
fn stdin_reaches_the_code_in_both() {
    if !ready("stdin_reaches_the_code_in_both") {
        return;
    }
    let code = "import sys; d = sys.stdin.read(); print('got', len(d), d[:5])";
    for b in BOTH {
        let mut args = vec!["exec"];
        if b == Backend::Docker {
            args.extend_from_slice(&["--backend", "docker", "--image", IMAGE]);
        }
        args.extend_from_slice(&["-c", code]);
        let o = run_stdin(As::Caller, &args, &b"hello".repeat(20000));
        assert_eq!(stdout(&o), "got 100000 hello\n", "{b:?}: {}", stderr(&o));
    }
}

#[test]
fn reports_share_the_schema_and_runs_are_audited() {
    if !ready("reports_share_the_schema_and_runs_are_audited") {
        return;
    }
    let (_, n) = exec(Backend::Native, &[], "print(1)");
    let (_, d) = exec(Backend::Docker, &[], "print(1)");
    let keys = |v: &Value| -> Vec<String> {
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.retain(|k| k != "docker");
        k.sort();
        k
    };
    assert_eq!(keys(&n), keys(&d));
    for f in [
        "usage", "output", "limits", "layers", "cgroup", "network", "seccomp",
    ] {
        assert_eq!(keys(&n[f]), keys(&d[f]), "{f}");
    }
    assert_eq!(n["limits"], d["limits"]);
    assert_eq!(d["docker"]["image"], IMAGE);
    assert_eq!(
        d["layers"]["landlock"], false,
        "Landlock is not the engine's"
    );
    // The run is in the audit log like a native one: a start and an end record.
    let run_id = d["run_id"].as_str().unwrap();
    let o = run(As::Caller, &["audit", "show", "--run", run_id, "--json"]);
    let recs: Vec<Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let text = stdout(&o);
    assert!(recs.len() >= 2, "{text}");
    assert!(
        text.contains("run_start") && text.contains("run_end"),
        "{text}"
    );
}

#[test]
fn unreachable_engine_is_a_clear_error() {
    // No engine needed: the point is that there is none at this address.
    for host in ["unix:///nonexistent.sock", "tcp://127.0.0.1:1"] {
        let o = command(As::Caller)
            .env("DOCKER_HOST", host)
            .args([
                "exec",
                "--backend",
                "docker",
                "--image",
                IMAGE,
                "-c",
                "print(1)",
            ])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(125), "{host}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(e.starts_with("maibox: error:"), "{e}");
        assert!(
            e.contains("cannot reach the Docker engine")
                && e.contains(host)
                && e.contains("DOCKER_HOST"),
            "{e}"
        );
        assert!(!e.contains("panicked"), "{e}");
        assert_eq!(stdout(&o), "");
    }
}

#[test]
fn missing_image_and_allowlist_are_clear_errors() {
    if !require_engine("missing_image_and_allowlist_are_clear_errors") {
        return;
    }
    let o = run(
        As::Caller,
        &[
            "exec",
            "--backend",
            "docker",
            "--image",
            "maibox-no-such-image:none",
            "-c",
            "print(1)",
        ],
    );
    assert_eq!(o.status.code(), Some(125));
    let e = stderr(&o);
    assert!(
        e.contains("maibox-no-such-image:none")
            && e.contains("--pull")
            && e.contains("docker pull"),
        "{e}"
    );
    // --pull asks the image's registry, here one that refuses the connection at once.
    let o = run(
        As::Caller,
        &[
            "exec",
            "--backend",
            "docker",
            "--image",
            "localhost:1/maibox-no-such-image:none",
            "--pull",
            "-c",
            "print(1)",
        ],
    );
    assert_eq!(o.status.code(), Some(125));
    assert!(
        stderr(&o).contains("cannot pull image localhost:1/maibox-no-such-image:none"),
        "{}",
        stderr(&o)
    );
    let o = run(
        As::Caller,
        &[
            "exec",
            "--backend",
            "docker",
            "--image",
            IMAGE,
            "--network",
            "allowlist",
            "-c",
            "print(1)",
        ],
    );
    assert_eq!(o.status.code(), Some(125));
    assert!(
        stderr(&o).contains("allowlist") && stderr(&o).contains("--backend native"),
        "{}",
        stderr(&o)
    );
}

/// The `<pid>-<start time>` owner tag maibox labels its containers with.
fn owner_tag(pid: u32) -> String {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let start = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .nth(19)
        .unwrap();
    format!("{pid}-{start}")
}

/// Containers carrying our owner label whose owner is one of `owners` (owner tags: a
/// pid reused by another test's maibox does not count).
fn containers_of(owners: &[String]) -> Vec<String> {
    let o = std::process::Command::new("docker")
        .args([
            "ps",
            "-a",
            "--filter",
            "label=io.maibox.owner",
            "--format",
            "{{.ID}} {{.Label \"io.maibox.owner\"}}",
        ])
        .output()
        .unwrap();
    stdout(&o)
        .lines()
        .filter(|l| {
            owners
                .iter()
                .any(|t| l.split_whitespace().nth(1) == Some(t.as_str()))
        })
        .map(str::to_string)
        .collect()
}

#[test]
fn hundred_runs_leave_no_container_behind() {
    if !require_engine("hundred_runs_leave_no_container_behind") {
        return;
    }
    const RUNS: usize = 100;
    const WORKERS: usize = 4;
    let docker = ["--backend", "docker", "--image", IMAGE];
    let owners = std::sync::Mutex::new(Vec::<String>::new());
    let killed = std::sync::atomic::AtomicUsize::new(0);
    let timed_out = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for w in 0..WORKERS {
            let (owners, killed, timed_out) = (&owners, &killed, &timed_out);
            s.spawn(move || {
                for i in (w..RUNS).step_by(WORKERS) {
                    let mut c = command(As::Caller);
                    c.arg("exec").args(docker);
                    let kind = i % 10;
                    match kind {
                        // maibox SIGKILLed while its container runs.
                        0 => c.args(["-c", "import time\nprint('up', flush=True)\ntime.sleep(30)"]),
                        // Killed by its own timeout.
                        1 | 5 => c.args(["--timeout", "1s", "-c", "import time; time.sleep(30)"]),
                        _ => c.args(["-c", "print('ok')"]),
                    };
                    let mut child = c
                        .stdin(Stdio::null())
                        .stdout(Stdio::piped())
                        .stderr(Stdio::piped())
                        .spawn()
                        .unwrap();
                    owners.lock().unwrap().push(owner_tag(child.id()));
                    if kind == 0 {
                        // Wait until the code runs (its container exists), then kill maibox.
                        use std::io::Read;
                        let mut out = child.stdout.take().unwrap();
                        let mut b = [0u8; 3];
                        out.read_exact(&mut b).unwrap();
                        assert_eq!(&b, b"up\n");
                        child.kill().unwrap();
                        child.wait().unwrap();
                        killed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        continue;
                    }
                    let o = child.wait_with_output().unwrap();
                    if kind == 1 || kind == 5 {
                        assert_eq!(o.status.code(), Some(124), "{}", stderr(&o));
                        timed_out.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    } else {
                        assert_eq!(stdout(&o), "ok\n", "{}", stderr(&o));
                    }
                }
            });
        }
    });
    assert_eq!(killed.into_inner(), RUNS / 10);
    assert_eq!(timed_out.into_inner(), RUNS / 5);
    // The last runs' workers may have ended with a SIGKILLed maibox: one more run
    // cleans up after them.
    let o = run(
        As::Caller,
        &[
            "exec",
            "--backend",
            "docker",
            "--image",
            IMAGE,
            "-c",
            "pass",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let owners = owners.into_inner().unwrap();
    assert_eq!(owners.len(), RUNS);
    let left = containers_of(&owners);
    assert!(left.is_empty(), "containers left behind: {left:?}");
}

#[test]
fn interrupted_run_removes_its_container() {
    if !require_engine("interrupted_run_removes_its_container") {
        return;
    }
    let mut child = command(As::Caller)
        .args([
            "exec",
            "--backend",
            "docker",
            "--image",
            IMAGE,
            "-c",
            "import time\nprint('up', flush=True)\ntime.sleep(30)",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let owner = [owner_tag(pid)];
    {
        use std::io::Read;
        let mut b = [0u8; 3];
        child.stdout.as_mut().unwrap().read_exact(&mut b).unwrap();
    }
    assert_eq!(containers_of(&owner).len(), 1, "the run's container exists");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let t = Instant::now();
    let o = child.wait_with_output().unwrap();
    // The code got the SIGINT (KeyboardInterrupt), and maibox removed the container.
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    assert!(stderr(&o).contains("KeyboardInterrupt"), "{}", stderr(&o));
    assert!(t.elapsed() < Duration::from_secs(20));
    assert!(containers_of(&owner).is_empty());
}

#[test]
fn a_level_can_choose_the_docker_backend_in_the_config() {
    if !require_engine("a_level_can_choose_the_docker_backend_in_the_config") {
        return;
    }
    let cfg = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/config/sandbox.yaml"))
        .unwrap()
        .replacen("backend: native", "backend: docker", 1)
        .replace("image: python:3-slim", &format!("image: {IMAGE}"));
    let scratch = Scratch::new();
    let path = scratch.file("sandbox.yaml", cfg.as_bytes());
    let path = path.to_str().unwrap();
    let o = run(
        As::Caller,
        &["exec", "--config", path, "--json", "-c", "print(7)"],
    );
    let r = report(&o);
    assert_eq!(r["backend"], "docker", "{r}");
    assert_eq!(r["trust"], "untrusted");
    assert_eq!(r["docker"]["image"], IMAGE);
    assert!(stdout(&o).starts_with("7\n"));
    // --backend overrides the level's choice.
    let o = run(
        As::Caller,
        &[
            "exec",
            "--config",
            path,
            "--backend",
            "native",
            "--json",
            "-c",
            "print(7)",
        ],
    );
    assert_eq!(report(&o)["backend"], "native");
}
