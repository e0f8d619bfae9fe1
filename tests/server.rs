//! `maibox serve` and `maibox exec --server`: warm runs behave as cold ones, each warm
//! sandbox serves exactly one request, the code never reaches the server, peers and
//! bad requests are refused clearly, load leaves nothing behind, and the limits follow
//! the host.

mod common;

use common::server::{config_text, request, run_on, Server};
use common::*;
use maibox::serve::client::ClientError;
use serde_json::Value;
use std::time::{Duration, Instant};

fn served(s: &Server, code: &str) -> common::server::Ran {
    s.run(&request(code))
        .unwrap_or_else(|e| panic!("{e}\nserver log:\n{}", s.log()))
}

fn failure(r: Result<common::server::Ran, ClientError>) -> maibox::serve::protocol::Failure {
    match r {
        Err(ClientError::Failed(f)) => f,
        Err(e) => panic!("expected the server's refusal, got {e}"),
        Ok(r) => panic!("expected a refusal, the run happened: {}", r.report),
    }
}

/// `maibox exec` against this server (`--server`) or cold (no flag).
fn cli(s: &Server, server: bool, args: &[&str], stdin: &[u8]) -> std::process::Output {
    cli_with(s, server, args, Some(stdin))
}

/// `maibox exec` with the server's configuration and audit log, on the server
/// when `server`, then `args`.
fn exec_command(s: &Server, server: bool, args: &[&str]) -> std::process::Command {
    let sock = s.socket();
    let cfg = s.config.display().to_string();
    let mut all = vec!["exec", "--config", &cfg];
    let sock = sock.display().to_string();
    if server {
        all.extend(["--server", "--socket", &sock]);
    }
    all.extend_from_slice(args);
    let mut c = command(As::Caller);
    c.env("MAIBOX_AUDIT_DIR", s.audit()).args(&all);
    c
}

/// As [`cli`]; stdin `None` is /dev/null.
fn cli_with(s: &Server, server: bool, args: &[&str], stdin: Option<&[u8]>) -> std::process::Output {
    let mut c = exec_command(s, server, args);
    c.stdin(match stdin {
        Some(_) => std::process::Stdio::piped(),
        None => std::process::Stdio::null(),
    })
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped());
    let mut child = c.spawn().unwrap();
    use std::io::Write;
    if let Some(data) = stdin {
        child.stdin.take().unwrap().write_all(data).unwrap();
    }
    child.wait_with_output().unwrap()
}

#[test]
fn served_runs_match_cold_runs_through_the_cli() {
    if !require_root("served_runs_match_cold_runs_through_the_cli") {
        return;
    }
    let s = Server::start(&[("pool_wait", "60s")]);
    let dir = Scratch::new();
    let script = dir.file(
        "job.py",
        b"import sys\nprint('args', sys.argv[1:], sys.stdin.read().strip())\nprint('to stderr', file=sys.stderr)\ndef f():\n    raise ValueError('boom')\nif len(sys.argv) > 2:\n    f()\nsys.exit(3)\n",
    );
    let path = script.display().to_string();
    for args in [
        vec![&path[..], "--", "a b"],
        vec![&path[..], "--", "x", "y"],
    ] {
        // Stdin streamed, and /dev/null (which the client does not stream).
        for input in [Some(&b"input line\n"[..]), None] {
            let warm = cli_with(&s, true, &args, input);
            let cold = cli_with(&s, false, &args, input);
            assert_eq!(stdout(&warm), stdout(&cold));
            assert_eq!(stderr(&warm), stderr(&cold));
            assert_eq!(warm.status.code(), cold.status.code());
        }
    }
    let mut json = vec!["--json", &path[..]];
    let w = report(&cli(&s, true, &json, b""));
    json.push("--");
    assert_eq!(w["exit_code"], 3);
    assert_eq!(w["server"]["warm"], true, "{w}");
    assert_eq!(w["layers"]["seccomp"], true);
    assert_eq!(w["layers"]["landlock"], true);
    // Without a server: a clear error, or with --server=auto a cold run.
    let s2 = Scratch::new();
    let nowhere = s2.path().join("none.sock").display().to_string();
    let o = run(
        As::Caller,
        &["exec", "--server", "--socket", &nowhere, "-c", "print(1)"],
    );
    assert_eq!(o.status.code(), Some(125));
    assert!(
        stderr(&o).contains("no maibox server answers"),
        "{}",
        stderr(&o)
    );
    let o = run(
        As::Caller,
        &[
            "exec",
            "--server=auto",
            "--socket",
            &nowhere,
            "-c",
            "print(1)",
        ],
    );
    assert_eq!(stdout(&o), "1\n", "{}", stderr(&o));
}

/// The audit log records a served script under its absolute path on the client's side,
/// named relative to the client's directory, which is not the server's.
#[test]
fn a_served_script_is_recorded_under_the_clients_path() {
    if !require_root("a_served_script_is_recorded_under_the_clients_path") {
        return;
    }
    let s = Server::start(&[("pool_wait", "60s")]);
    let dir = Scratch::new();
    let script = dir.file("relative.py", b"print('where')\n");
    let o = exec_command(&s, true, &["--json", "relative.py"])
        .current_dir(dir.path())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let r = report(&o);
    assert_eq!(r["server"]["warm"], true, "{r}");
    let id = r["run_id"].as_str().unwrap().to_string();
    let audit = s.audit().display().to_string();
    let shown = run(
        As::Caller,
        &["audit", "show", "--dir", &audit, "--run", &id, "--json"],
    );
    let start: serde_json::Value =
        serde_json::from_str(stdout(&shown).lines().next().unwrap()).unwrap();
    let want = std::fs::canonicalize(&script)
        .unwrap()
        .display()
        .to_string();
    assert_eq!(start["body"]["code"]["path"], want.as_str(), "{start}");
}

/// Plants what could outlive a run, and reports what it finds of an earlier one.
const PLANT: &str = r#"
import ctypes, json, os, random, socket, sys, time
libc = ctypes.CDLL(None, use_errno=True)
found = {
    "tmp": os.path.exists("/tmp/planted"),
    "shm": os.path.exists("/dev/shm/planted"),
    "sysv": libc.shmget(0x4d41, 0, 0) >= 0,
    "procs": sorted(p for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()),
    "abstract": True,
    "env": os.environ.get("PLANTED"),
    "ns": [os.readlink(f"/proc/self/ns/{n}") for n in ("pid", "net", "mnt")],
    "seed": [random.getrandbits(64), hash("maibox")],
}
try:
    c = socket.socket(socket.AF_UNIX); c.connect("\0maibox-planted")
except OSError:
    found["abstract"] = False
open("/tmp/planted", "w").write("x")
open("/dev/shm/planted", "w").write("x")
planted_sysv = libc.shmget(0x4d41, 4096, 0o1000 | 0o600) >= 0
os.environ["PLANTED"] = "yes"
bound_r, bound_w = os.pipe()
if os.fork() == 0:
    os.setsid()
    s = socket.socket(socket.AF_UNIX); s.bind("\0maibox-planted"); s.listen()
    os.write(bound_w, b"x")
    time.sleep(60)
    os._exit(0)
os.read(bound_r, 1)  # the socket is planted, however slow the machine
print(json.dumps({"found": found, "planted_sysv": planted_sysv}))
"#;

#[test]
fn a_warm_sandbox_serves_one_request_and_leaves_nothing_to_the_next() {
    if !require_root("a_warm_sandbox_serves_one_request_and_leaves_nothing_to_the_next") {
        return;
    }
    // Each run must be warm: it waits for the refill (the built-in wait runs it cold).
    let s = Server::start(&[
        ("warm_levels", "[untrusted, trusted]"),
        ("pool_min", "1"),
        ("pool_wait", "60s"),
    ]);
    for level in [maibox::TrustLevel::Trusted, maibox::TrustLevel::Untrusted] {
        let mut req = request(PLANT);
        req.trust = Some(level);
        req.override_reason = Some("plants state on purpose".into());
        let runs: Vec<Value> = (0..3)
            .map(|_| {
                let r = s.run(&req).unwrap_or_else(|e| panic!("{e}: {}", s.log()));
                assert_eq!(r.report["server"]["warm"], true, "{}", r.report);
                assert_eq!(r.report["server"]["warm_mode"], "strict", "{}", r.report);
                serde_json::from_str(r.stdout.trim())
                    .unwrap_or_else(|e| panic!("{e}: {}", r.stderr))
            })
            .collect();
        // SysV IPC is allowed at trusted only: there the segment was really planted.
        assert_eq!(
            runs[0]["planted_sysv"],
            level == maibox::TrustLevel::Trusted
        );
        for r in &runs[1..] {
            let f = &r["found"];
            for key in ["tmp", "shm", "sysv", "abstract"] {
                assert_eq!(f[key], false, "{level}: {key} survived: {r}");
            }
            assert_eq!(f["env"], Value::Null, "{level}: the environment survived");
            assert_eq!(f["procs"].as_array().map(Vec::len), Some(1), "{level}: {r}");
        }
        for (a, b) in [(0, 1), (1, 2)] {
            let (fa, fb) = (&runs[a]["found"], &runs[b]["found"]);
            for i in 0..3 {
                assert_ne!(fa["ns"][i], fb["ns"][i], "{level}: a namespace was shared");
            }
            for i in 0..2 {
                assert_ne!(fa["seed"][i], fb["seed"][i], "{level}: a seed was shared");
            }
        }
    }
}

#[test]
fn the_code_cannot_see_or_reach_the_server_or_other_sandboxes() {
    if !require_root("the_code_cannot_see_or_reach_the_server_or_other_sandboxes") {
        return;
    }
    let s = Server::start(&[("pool_min", "3"), ("pool_wait", "60s")]);
    let code = format!(
        "import os, socket, json\nsock = {:?}\ntry:\n    c = socket.socket(socket.AF_UNIX); c.connect(sock); reached = True\nexcept OSError:\n    reached = False\ndef cmdline(p):\n    try:\n        return open(f'/proc/{{p}}/cmdline','rb').read()\n    except OSError:\n        return b''  # it ended between listdir and open\nprocs = [cmdline(p) for p in os.listdir('/proc') if p.isdigit()]\nprint(json.dumps({{'socket_visible': os.path.exists(sock), 'reached': reached, 'pythons': sum(b'python' in p for p in procs)}}))\n",
        s.socket().display().to_string()
    );
    let r = served(&s, &code);
    assert_eq!(r.report["server"]["warm"], true, "{}", r.report);
    let v: Value =
        serde_json::from_str(r.stdout.trim()).unwrap_or_else(|e| panic!("{e}: {}", r.stderr));
    assert_eq!(v["socket_visible"], false, "{v}");
    assert_eq!(v["reached"], false, "{v}");
    // Its own interpreter only: not the pool's other warm ones.
    assert_eq!(v["pythons"], 1, "{v}");
    // Control: the same probe on the host sees the socket and reaches the server.
    let host = std::process::Command::new("/usr/bin/python3")
        .args(["-c", &code])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&host.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&host.stderr)));
    assert_eq!(v["socket_visible"], true);
    assert_eq!(v["reached"], true);
}

#[test]
fn a_client_of_another_uid_is_refused() {
    if !require_root("a_client_of_another_uid_is_refused") {
        return;
    }
    let s = Server::start(&[]);
    // Even with the socket opened up by mistake, the peer check refuses.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(s.socket(), std::fs::Permissions::from_mode(0o666)).unwrap();
    let sock = s.socket().display().to_string();
    let o = run(
        As::User,
        &["exec", "--server", "--socket", &sock, "-c", "print(1)"],
    );
    assert_eq!(o.status.code(), Some(125), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("uid 4242 may not submit"),
        "{}",
        stderr(&o)
    );
    // Control: the server's own user is served.
    assert_eq!(served(&s, "print(1)").stdout, "1\n");
}

#[test]
fn blocked_code_is_refused_and_runs_with_an_override_the_audit_log_records() {
    if !require_root("blocked_code_is_refused_and_runs_with_an_override_the_audit_log_records") {
        return;
    }
    let s = Server::start(&[]);
    let bomb = "import os\nwhile True:\n    os.fork()\n";
    let f = failure(s.run(&request(bomb)));
    assert_eq!(f.kind, "refused");
    assert!(!f.findings.is_empty());
    let mut req = request(bomb);
    req.override_reason = Some("reviewed: fork limit test".into());
    req.timeout_s = Some(2.0);
    let r = s.run(&req).unwrap();
    let id = r.report["run_id"].as_str().unwrap().to_string();
    let audit = s.audit().display().to_string();
    let o = run(
        As::Caller,
        &["audit", "show", "--dir", &audit, "--run", &id, "--json"],
    );
    let text = stdout(&o);
    assert!(text.contains("reviewed: fork limit test"), "{text}");
    assert!(
        text.contains("maibox serve pid"),
        "the record does not name the server: {text}"
    );
    let o = run(As::Caller, &["audit", "verify", &audit]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
}

#[test]
fn bad_requests_get_clear_errors_and_the_server_keeps_serving() {
    if !require_root("bad_requests_get_clear_errors_and_the_server_keeps_serving") {
        return;
    }
    let mut cfg = config_text(&[]);
    cfg = cfg.replacen("max_bytes: 5242880", "max_bytes: 2000", 1);
    let s = Server::start_with(&cfg);
    let raw = |payload: &[u8]| -> Value {
        let stream = std::os::unix::net::UnixStream::connect(s.socket()).unwrap();
        maibox::serve::protocol::write_frame(&mut &stream, b'Q', payload).unwrap();
        let (k, body) = maibox::serve::protocol::read_frame(&mut &stream)
            .unwrap()
            .unwrap();
        assert_eq!(k, b'X');
        serde_json::from_slice(&body).unwrap()
    };
    let e = raw(b"{not json");
    assert_eq!(e["kind"], "protocol", "{e}");
    let e = raw(br#"{"v": 9, "code": "print(1)"}"#);
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("unknown protocol version 9"),
        "{e}"
    );
    let e = raw(br#"{"v": 1, "code": "print(1)", "trust": "root"}"#);
    assert!(e["message"].as_str().unwrap().contains("root"), "{e}");
    let e = raw(br#"{"v": 1, "code": "print(1)", "timeout_s": -1}"#);
    assert!(e["message"].as_str().unwrap().contains("timeout_s"), "{e}");
    let e = raw(br#"{"v": 1, "code": "print(1)", "memory": "64GiB"}"#);
    assert!(e["message"].as_str().unwrap().contains("memory"), "{e}");
    let big = format!(r#"{{"v": 1, "code": "x = 1\n{}"}}"#, "#".repeat(3000));
    let e = raw(big.as_bytes());
    assert!(e["message"].as_str().unwrap().contains("max_bytes"), "{e}");
    // A client that goes away mid-run: the run is ended and audited as cancelled.
    let stream = std::os::unix::net::UnixStream::connect(s.socket()).unwrap();
    let mut req = request("import time\nprint('started', flush=True)\ntime.sleep(60)\n");
    req.timeout_s = Some(30.0);
    let body = serde_json::to_vec(&req).unwrap();
    maibox::serve::protocol::write_frame(&mut &stream, b'Q', &body).unwrap();
    let (k, _) = maibox::serve::protocol::read_frame(&mut &stream)
        .unwrap()
        .unwrap();
    assert_eq!(k, b'O', "the run started");
    drop(stream);
    let audit = s.audit().display().to_string();
    let t0 = Instant::now();
    loop {
        let o = run(As::Caller, &["audit", "show", "--dir", &audit, "--json"]);
        if stdout(&o).contains("\"cancelled\"") {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "no cancelled run: {}",
            stdout(&o)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // And the server goes on.
    assert_eq!(served(&s, "print('still here')").stdout, "still here\n");
}

/// What is left of a server's sandboxes: processes (each sandbox's init is a fork of
/// the server, with its command line, which names the socket) and cgroups (named after
/// the server's pid).
fn leftovers(socket: &std::path::Path, server_pid: i32) -> (Vec<i32>, Vec<String>) {
    let sock = socket.display().to_string();
    let procs = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(&sock))
        })
        .collect();
    let tag = format!("run-{server_pid}-");
    let groups = [
        "/sys/fs/cgroup/memory/maibox",
        "/sys/fs/cgroup/unified/maibox",
        "/sys/fs/cgroup/maibox",
    ]
    .iter()
    .flat_map(|d| std::fs::read_dir(d).into_iter().flatten().flatten())
    .map(|e| e.file_name().to_string_lossy().into_owned())
    .filter(|n| n.starts_with(&tag))
    .collect();
    (procs, groups)
}

fn load(socket: &std::path::Path, clients: usize, per_client: usize) -> usize {
    let ok = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|t| {
        for c in 0..clients {
            let ok = &ok;
            t.spawn(move || {
                for i in 0..per_client {
                    let Ok(r) = run_on(socket, &request(&format!("print({c} * 1000 + {i})")))
                    else {
                        continue;
                    };
                    assert_eq!(r.stdout, format!("{}\n", c * 1000 + i), "{}", r.stderr);
                    ok.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
            });
        }
    });
    ok.into_inner()
}

#[test]
fn load_leaves_nothing_behind_even_after_the_server_is_killed() {
    if !require_root("load_leaves_nothing_behind_even_after_the_server_is_killed") {
        return;
    }
    let mut s = Server::start(&[("queue", "256")]);
    let t0 = Instant::now();
    assert_eq!(load(&s.socket(), 8, 125), 1000, "{}", s.log());
    eprintln!("1000 requests from 8 clients in {:?}", t0.elapsed());
    let pid = s.pid();
    assert!(
        s.stop(nix::sys::signal::Signal::SIGTERM).success(),
        "{}",
        s.log()
    );
    let t0 = Instant::now();
    while leftovers(&s.socket(), pid) != (vec![], vec![]) && t0.elapsed() < Duration::from_secs(30)
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        leftovers(&s.socket(), pid),
        (vec![], vec![]),
        "after SIGTERM"
    );
    assert!(!s.socket().exists(), "the socket stayed");
    // Killed mid-load: nothing of it lives on once the next server started.
    s.spawn();
    let killed = s.pid();
    std::thread::scope(|t| {
        let sock = s.socket();
        t.spawn(move || load(&sock, 8, 30));
        std::thread::sleep(Duration::from_millis(700));
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(killed),
            nix::sys::signal::Signal::SIGKILL,
        );
    });
    let _ = s.child.take().map(|mut c| c.wait());
    s.spawn();
    assert_eq!(served(&s, "print('after')").stdout, "after\n");
    let t0 = Instant::now();
    while leftovers(&s.socket(), killed).1 != Vec::<String>::new()
        && t0.elapsed() < Duration::from_secs(30)
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        leftovers(&s.socket(), killed).1,
        Vec::<String>::new(),
        "cgroups of the killed server"
    );
    // The running server's own sandboxes carry the same socket: of the killed one's,
    // none may be left, so count those not in the new server's process tree (polled:
    // they die of the server's death, asynchronously).
    let others = || -> Vec<i32> {
        leftovers(&s.socket(), killed)
            .0
            .into_iter()
            .filter(|p| parent_of(*p) == 1)
            .collect()
    };
    let t0 = Instant::now();
    while !others().is_empty() && t0.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let others = others();
    assert!(
        others.is_empty(),
        "processes of the killed server: {others:?}"
    );
    let audit = s.audit().display().to_string();
    let o = run(As::Caller, &["audit", "verify", &audit]);
    assert!(o.status.success(), "{}", stdout(&o));
}

#[test]
fn limits_follow_the_host_and_a_full_queue_is_busy_at_once() {
    if !require_root("limits_follow_the_host_and_a_full_queue_is_busy_at_once") {
        return;
    }
    let cfg = config_text(&[("queue", "0"), ("overcommit", "0.01")]).replacen(
        "    cpus: 0.5 ",
        "    cpus: 64 ",
        1,
    );
    assert!(cfg.contains("cpus: 64"));
    let s = Server::start_with(&cfg);
    let r = served(&s, "print('clamped')");
    let adj = r.report["adjustments"].to_string();
    assert!(adj.contains("cpus reduced from 64"), "{adj}");
    // The long run holds the only slot until the test ends its stdin: it cannot
    // end before the busy answer comes, however slow the machine, and a server that
    // queued instead of answering busy would leave that answer waiting for good.
    let (stdin_r, stdin_w) = std::os::unix::net::UnixStream::pair().unwrap();
    let (started_tx, started) = std::sync::mpsc::channel();
    let sock = s.socket();
    let long = std::thread::spawn(move || {
        let mut req = request("import sys\nprint('started', flush=True)\nsys.stdin.read()\n");
        req.stdin = Some(maibox::serve::protocol::StdinSpec::Mode("stream".into()));
        let stream = maibox::serve::client::connect(&sock)?;
        maibox::serve::client::run(stream, &sock, &req, Some(Box::new(stdin_r)), &mut |e| {
            if let maibox::serve::client::Event::Stdout(_) = e {
                let _ = started_tx.send(());
            }
        })
    });
    started
        .recv_timeout(Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("the long run did not start ({e}): {}", s.log()));
    let (busy_tx, busy) = std::sync::mpsc::channel();
    let sock = s.socket();
    std::thread::spawn(move || {
        let _ = busy_tx.send(run_on(&sock, &request("print(1)")));
    });
    // Generous for a loaded machine, yet far from waiting for the slot.
    let answer = busy.recv_timeout(Duration::from_secs(5));
    drop(stdin_w);
    let f = failure(answer.expect("no answer within 5 s while the queue was full"));
    assert_eq!(f.kind, "busy", "{}", f.message);
    let r = long.join().unwrap().expect("the long run");
    assert_eq!(r["exit_code"], 0, "{r}");
}

/// The number after `key` in the server's log (e.g. `spawner: pid `), once it
/// is there (within `secs`).
fn logged_pid(s: &Server, key: &str, secs: u64) -> i32 {
    let t0 = Instant::now();
    loop {
        let log = s.log();
        let found = log.rfind(key).and_then(|at| {
            let rest = &log[at + key.len()..];
            rest.split(|c: char| !c.is_ascii_digit())
                .next()?
                .parse()
                .ok()
        });
        if let Some(p) = found {
            return p;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(secs),
            "no {key:?}: {log}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A server whose spawner is killed forks a new one (through its nursery) within a
/// second, says so in its log, and its runs are cloned by the new spawner, which is
/// the server's child. Before the kill, the same runs leave the log without a
/// replacement (the control: nothing is replaced while the spawner lives).
#[test]
fn a_killed_spawner_is_replaced_and_the_server_keeps_serving() {
    // No warm pool: each run is cloned when it comes, by the spawner of that moment.
    let s = Server::start(&[("warm_levels", "[]")]);
    // Logged once the pools are made, after the socket is bound.
    let old = logged_pid(&s, "spawner: pid ", 30);
    assert_eq!(served(&s, "print(1)").stdout, "1\n");
    std::thread::sleep(Duration::from_millis(1500));
    assert!(!s.log().contains("a new one"), "{}", s.log());
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(old),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let new = logged_pid(&s, "a new one (pid ", 10);
    assert!(
        s.log().contains(&format!("the spawner (pid {old}) ended")),
        "{}",
        s.log()
    );
    assert_ne!(new, old);
    assert_eq!(parent_of(new), s.pid());
    let before = status_field(new, "voluntary_ctxt_switches").unwrap();
    assert_eq!(served(&s, "print(2)").stdout, "2\n");
    let after = status_field(new, "voluntary_ctxt_switches").unwrap();
    assert_ne!(before, after, "the new spawner did not clone the run");
}
