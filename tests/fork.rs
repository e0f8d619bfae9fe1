//! `warm_mode: fork`: warm sandboxes whose interpreter is a fork of a zygote that
//! imported the level's preloads. Runs end as executed ones do; every layer holds in
//! the fork as in an executed interpreter (each probe is compared with a cold run's,
//! whose layers tests/confine.rs and tests/escapes.rs prove with controls); nothing of
//! one run reaches the next but what a zygote's forks are documented to share (the
//! hash secret); the zygote holds no capabilities; nothing outlives the server.

mod common;

use common::server::{config_text, request, run_on, Server};
use common::*;
use serde_json::Value;
use std::time::{Duration, Instant};

/// A fork-mode server run by `who`; each request waits for a warm sandbox.
fn fork_server(who: As, extra: &[(&str, &str)]) -> Server {
    let mut settings = vec![("warm_mode", "fork"), ("pool_wait", "60s")];
    settings.extend_from_slice(extra);
    Server::start_as(who, &config_text(&settings))
}

fn served(s: &Server, code: &str) -> common::server::Ran {
    let mut req = request(code);
    req.override_reason = Some("probes of the sandbox, on purpose".into());
    let r = s
        .run(&req)
        .unwrap_or_else(|e| panic!("{e}\nserver log:\n{}", s.log()));
    assert_eq!(r.report["server"]["warm"], true, "{}", r.report);
    assert_eq!(r.report["server"]["warm_mode"], "fork", "{}", r.report);
    r
}

/// The same code run cold by `who`, with the server's configuration.
fn cold(s: &Server, who: As, code: &str) -> (String, String, Value) {
    let cfg = s.config.display().to_string();
    let o = run(
        who,
        &[
            "exec",
            "--json",
            "--config",
            &cfg,
            "--override",
            "probes of the sandbox, on purpose",
            "-c",
            code,
        ],
    );
    let out = stdout(&o);
    let (body, last) = out
        .trim_end_matches('\n')
        .rsplit_once('\n')
        .unwrap_or(("", &out));
    let body = if body.is_empty() {
        String::new()
    } else {
        format!("{body}\n")
    };
    let report: Value = serde_json::from_str(last).unwrap_or_else(|e| panic!("{e}: {out}"));
    (body, stderr(&o), report)
}

/// Snippets whose output, errors and exit must be the same forked as executed.
const SAME: &[&str] = &[
    "import sys, json\nprint(json.dumps(sys.argv), __name__, __file__, sys.path[0])\nprint('err', file=sys.stderr)\nsys.exit(3)\n",
    "def f():\n    1 / 0\nf()\n",
    "import warnings\nwarnings.warn('careful')\n",
    "print(\n",
    "import os\nos._exit(7)\n",
    "import os, signal\nos.kill(os.getpid(), signal.SIGTERM)\n",
    "import atexit\natexit.register(lambda: print('at exit'))\nprint('main')\n",
    "import os\npid = os.fork()\nif pid == 0:\n    print('child', flush=True)\nelse:\n    os.waitpid(pid, 0)\n    print('parent')\n",
    "import subprocess, sys\nprint(subprocess.run([sys.executable, '-c', 'print(6 * 7)'], capture_output=True, text=True).stdout.strip())\n",
    "import multiprocessing\ndef sq(x):\n    return x * x\nif __name__ == '__main__':\n    with multiprocessing.get_context('fork').Pool(2) as p:\n        print(p.map(sq, [1, 2, 3]))\n",
    "import threading\nout = []\nts = [threading.Thread(target=lambda i=i: out.append(i)) for i in range(4)]\n[t.start() for t in ts]; [t.join() for t in ts]\nprint(sorted(out))\n",
    "import os, sys\nprint(os.getcwd(), os.getuid(), os.getgid(), os.getgroups(), sys.flags.no_user_site, sorted(os.environ))\n",
];

#[test]
fn forked_runs_end_as_executed_runs() {
    for who in identities("forked_runs_end_as_executed_runs") {
        let s = fork_server(who, &[]);
        for code in SAME {
            let w = served(&s, code);
            let (out, err, report) = cold(&s, who, code);
            assert_eq!(
                (w.stdout.as_str(), w.report["exit_code"].clone()),
                (out.as_str(), report["exit_code"].clone()),
                "{who:?}: {code}"
            );
            // maibox's own notices on stderr (a cold run prints them) aside.
            let err: String = err
                .lines()
                .filter(|l| !l.starts_with("maibox:"))
                .map(|l| format!("{l}\n"))
                .collect();
            assert_eq!(w.stderr, err, "{who:?}: {code}");
        }
    }
}

/// The layers as the code sees them: its ids and capability sets, the filter, what
/// Landlock refuses, the processes it can see and signal.
const LAYERS: &str = r#"
import ctypes, json, os, shutil, subprocess
status = dict(l.split(":", 1) for l in open("/proc/self/status").read().splitlines())
shutil.copy("/usr/bin/true", "/tmp/t")
os.chmod("/tmp/t", 0o755)
try:
    subprocess.run(["/tmp/t"], check=True); exec_tmp = "ran"
except OSError as e:
    exec_tmp = e.errno
try:
    os.kill(1, 0); kill_init = "ok"
except OSError as e:
    kill_init = e.errno
procs = [p for p in os.listdir("/proc") if p.isdigit()]
pythons = sum(b"python" in open(f"/proc/{p}/cmdline", "rb").read() for p in procs if p != "self")
print(json.dumps({
    "uid": os.getuid(), "gid": os.getgid(), "pid": os.getpid(),
    "caps": [status[k].strip() for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")],
    "no_new_privs": status["NoNewPrivs"].strip(), "seccomp": status["Seccomp"].strip(),
    "exec_tmp": exec_tmp, "kill_init": kill_init, "procs": len(procs), "pythons": pythons,
    "hostname": os.uname().nodename, "fds": sorted(os.listdir("/proc/self/fd")),
}))
"#;

#[test]
fn every_layer_holds_in_a_forked_interpreter() {
    for who in identities("every_layer_holds_in_a_forked_interpreter") {
        let s = fork_server(who, &[]);
        let w = served(&s, LAYERS);
        let v: Value =
            serde_json::from_str(w.stdout.trim()).unwrap_or_else(|e| panic!("{e}: {}", w.stderr));
        let (out, _, report) = cold(&s, who, LAYERS);
        let c: Value = serde_json::from_str(out.trim()).unwrap();
        assert_eq!(
            v["caps"],
            serde_json::json!(vec!["0000000000000000"; 5]),
            "{who:?}: {v}"
        );
        assert_eq!(
            (v["no_new_privs"].as_str(), v["seccomp"].as_str()),
            (Some("1"), Some("2"))
        );
        assert_eq!(v["exec_tmp"], libc::EACCES, "{who:?}: Landlock: {v}");
        assert_eq!(
            v["pythons"], 1,
            "{who:?}: the zygote or another sandbox is visible: {v}"
        );
        // Beside the code's own (0, 1, 2 and the listing's 3): the runner's status pipe.
        assert_eq!(
            v["fds"],
            serde_json::json!(["0", "1", "2", "3", "5"]),
            "{who:?}: {v}"
        );
        for key in [
            "uid",
            "gid",
            "pid",
            "caps",
            "no_new_privs",
            "seccomp",
            "exec_tmp",
            "kill_init",
            "procs",
            "pythons",
            "hostname",
        ] {
            assert_eq!(
                v[key], c[key],
                "{who:?}: {key} differs from an executed run: {v} / {c}"
            );
        }
        for key in ["layers", "landlock", "limits"] {
            assert_eq!(w.report[key], report[key], "{who:?}: {key}");
        }
        // A kill-listed call ends the run, and the report names it: the filter's
        // listener reached the server.
        let ptrace =
            "import ctypes\nctypes.CDLL(None).syscall(101, 0, 0, 0, 0)\nprint('returned')\n";
        let k = served(&s, ptrace);
        assert_eq!(k.stdout, "", "{who:?}: {}", k.report);
        assert_eq!(
            k.report["ending"]["signaled"]["name"], "SIGKILL",
            "{}",
            k.report
        );
        assert_eq!(
            k.report["violations"][0]["syscall"], "ptrace",
            "{}",
            k.report
        );
    }
}

#[test]
fn a_forked_run_is_held_to_its_cgroup_limits() {
    if !require_root("a_forked_run_is_held_to_its_cgroup_limits") {
        return;
    }
    let s = fork_server(As::Caller, &[]);
    let hog = "x = b'a' * (400 << 20)\nprint('survived')\n";
    let r = served(&s, hog);
    assert_eq!(r.stdout, "", "{}", r.report);
    assert_eq!(r.report["violations"][0]["kind"], "memory", "{}", r.report);
    let groups = served(&s, "print(open('/proc/self/cgroup').read())");
    for line in groups.stdout.lines().filter(|l| !l.is_empty()) {
        assert!(line.ends_with(":/"), "outside its run's cgroup: {line}");
    }
    // Control: the same hog cold, under the same limit, meets the same end.
    let (_, _, cold) = cold(&s, As::Caller, hog);
    assert_eq!(cold["violations"][0]["kind"], "memory", "{cold}");
}

/// Plants what could outlive a run and reports what it finds of an earlier one, and
/// what a run draws from its generators.
const PLANT: &str = r#"
import ctypes, json, os, random, socket, ssl, tempfile, time
libc = ctypes.CDLL(None, use_errno=True)
found = {
    "tmp": os.path.exists("/tmp/planted"),
    "shm": os.path.exists("/dev/shm/planted"),
    "abstract": True,
    "env": os.environ.get("PLANTED"),
    "procs": sorted(p for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()),
    "ns": [os.readlink(f"/proc/self/ns/{n}") for n in ("pid", "net", "mnt", "ipc", "uts")],
    "random": random.getrandbits(64),
    "tempname": tempfile.mktemp(),
    "ssl": ssl.RAND_bytes(16).hex(),
    "urandom": os.urandom(16).hex(),
    "hash": hash("maibox"),
}
try:
    c = socket.socket(socket.AF_UNIX); c.connect("\0maibox-planted")
except OSError:
    found["abstract"] = False
open("/tmp/planted", "w").write("x")
open("/dev/shm/planted", "w").write("x")
os.environ["PLANTED"] = "yes"
random.seed(42)
r, w = os.pipe()
if os.fork() == 0:
    s = socket.socket(socket.AF_UNIX); s.bind("\0maibox-planted"); s.listen()
    os.write(w, b"x")
    time.sleep(60)
    os._exit(0)
os.read(r, 1)
print(json.dumps(found))
"#;

fn plant_runs(s: &Server, n: usize) -> Vec<Value> {
    (0..n)
        .map(|_| {
            let r = served(s, PLANT);
            serde_json::from_str(r.stdout.trim()).unwrap_or_else(|e| panic!("{e}: {}", r.stderr))
        })
        .collect()
}

#[test]
fn forked_runs_share_no_state_and_draw_fresh_seeds() {
    // `ssl` preloaded too: OpenSSL's generator is then the zygote's, to be reseeded.
    let text = config_text(&[
        ("warm_mode", "fork"),
        ("pool_wait", "60s"),
        ("pool_min", "1"),
    ]);
    let line = "preload: [json, csv, statistics, tempfile]";
    assert!(
        text.contains(line),
        "the untrusted level's preload line changed"
    );
    // One refill thread: every sandbox comes from the same zygote.
    let text = text.replacen("refill_threads: null", "refill_threads: 1", 1);
    let s = Server::start_with(&text.replacen(
        line,
        "preload: [json, csv, statistics, tempfile, ssl]",
        1,
    ));
    let runs = plant_runs(&s, 3);
    for (a, b) in [(0, 1), (1, 2)] {
        let (fa, fb) = (&runs[a], &runs[b]);
        for key in ["tmp", "shm", "abstract"] {
            assert_eq!(fb[key], false, "{key} survived: {fb}");
        }
        assert_eq!(fb["env"], Value::Null, "the environment survived: {fb}");
        assert_eq!(fb["procs"], serde_json::json!(["1"]), "{fb}");
        for i in 0..5 {
            assert_ne!(
                fa["ns"][i], fb["ns"][i],
                "a namespace was shared: {fa} / {fb}"
            );
        }
        for key in ["random", "tempname", "ssl", "urandom"] {
            assert_ne!(fa[key], fb[key], "{key} was drawn alike: {fa} / {fb}");
        }
        // What the forks of one zygote share, as docs/server.md says: its hash secret.
        assert_eq!(fa["hash"], fb["hash"], "{fa} / {fb}");
    }
    // One fork per zygote: then not even the hash secret is shared.
    let s = fork_server(As::Caller, &[("zygote_forks", "1"), ("pool_min", "1")]);
    let runs = plant_runs(&s, 2);
    assert_ne!(runs[0]["hash"], runs[1]["hash"], "{runs:?}");
}

/// Processes of a zygote (the zygotes, and the parents of forked interpreters).
fn zygote_processes() -> Vec<i32> {
    processes_with("_MAIBOX_ZYGOTE")
}

fn ancestors_include(pid: i32, of: i32) -> bool {
    let mut p = pid;
    for _ in 0..64 {
        if p == of {
            return true;
        }
        if p <= 1 {
            return false;
        }
        p = parent_of(p);
    }
    false
}

#[test]
fn the_zygote_holds_no_capabilities_and_nothing_outlives_the_server() {
    if !require_root("the_zygote_holds_no_capabilities_and_nothing_outlives_the_server") {
        return;
    }
    let mut s = fork_server(As::Caller, &[("queue", "256"), ("pool_wait", "10ms")]);
    let server = s.pid();
    // The refill threads start their zygotes (the server's children; their own
    // children are the forked interpreters' parents) once the server listens.
    let mine = || -> Vec<i32> {
        zygote_processes()
            .into_iter()
            .filter(|p| parent_of(*p) == server)
            .collect()
    };
    let t0 = Instant::now();
    while mine().is_empty() && t0.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let zygotes = mine();
    assert!(!zygotes.is_empty(), "no zygote: {}", s.log());
    for z in &zygotes {
        let status = std::fs::read_to_string(format!("/proc/{z}/status")).unwrap_or_default();
        for key in ["CapPrm", "CapEff", "CapBnd", "CapAmb"] {
            let line = status
                .lines()
                .find(|l| l.starts_with(key))
                .unwrap_or_default();
            assert!(line.ends_with("0000000000000000"), "zygote {z}: {line}");
        }
        assert!(status.contains("NoNewPrivs:\t1"), "zygote {z}");
    }
    // Load, all answered correctly; then the server is killed mid-load.
    let ok = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|t| {
        for c in 0..8 {
            let (sock, ok) = (s.socket(), &ok);
            t.spawn(move || {
                for i in 0..25 {
                    let r = run_on(&sock, &request(&format!("print({c} * 1000 + {i})"))).unwrap();
                    assert_eq!(r.stdout, format!("{}\n", c * 1000 + i), "{}", r.stderr);
                    ok.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
            });
        }
    });
    assert_eq!(ok.into_inner(), 200);
    let doomed = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|t| {
        let sock = s.socket();
        t.spawn(move || {
            for i in 0..40 {
                let _ = run_on(&sock, &request(&format!("print({i})")));
            }
        });
        std::thread::sleep(Duration::from_millis(500));
        // Its zygotes and the parents of its forked interpreters, as it dies.
        *doomed.lock().unwrap() = zygote_processes()
            .into_iter()
            .filter(|p| ancestors_include(*p, server))
            .collect();
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(server),
            nix::sys::signal::Signal::SIGKILL,
        );
    });
    let _ = s.child.take().map(|mut c| c.wait());
    let doomed = doomed.into_inner().unwrap();
    assert!(
        !doomed.is_empty(),
        "no zygote process when the server was killed"
    );
    let alive = || -> Vec<i32> {
        let now = zygote_processes();
        doomed.iter().copied().filter(|p| now.contains(p)).collect()
    };
    let t0 = Instant::now();
    while !alive().is_empty() && t0.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        alive(),
        Vec::<i32>::new(),
        "zygote processes outlived the server"
    );
    s.spawn();
    let after = run_on(&s.socket(), &request("print('after')")).unwrap();
    assert_eq!(after.stdout, "after\n");
    let audit = s.audit().display().to_string();
    let o = run(As::Caller, &["audit", "verify", &audit]);
    assert!(o.status.success(), "{}", stdout(&o));
}
