//! The OCI runtime verbs against the real binary: bundles with a Python root built
//! by `maibox::image::build`, run through `run` and `create`/`start`/`state`/`delete`,
//! and bad input that must fail clearly and leave nothing behind.

mod common;
use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::AtomicUsize;

static COUNTER: AtomicUsize = AtomicUsize::new(0);
use std::time::{Duration, Instant};

struct Env {
    scratch: Scratch,
}

impl Env {
    fn new() -> Env {
        Env {
            scratch: Scratch::new(),
        }
    }
    fn root(&self) -> PathBuf {
        self.scratch.path().join("state")
    }
    fn log(&self) -> PathBuf {
        self.scratch.path().join("log.json")
    }
    /// A bundle whose rootfs is a bind of the shared image, with `config.json` from
    /// `maibox spec` edited by `edit`.
    fn bundle(&self, name: &str, edit: impl FnOnce(&mut Value)) -> PathBuf {
        let b = self.scratch.path().join(name);
        std::fs::create_dir_all(&b).unwrap();
        image(&b.join("rootfs"));
        let o = Command::new(binary())
            .args(["spec", "--bundle"])
            .arg(&b)
            .output()
            .unwrap();
        assert!(o.status.success(), "spec: {}", stderr(&o));
        let mut v: Value =
            serde_json::from_slice(&std::fs::read(b.join("config.json")).unwrap()).unwrap();
        v["process"]["args"] = serde_json::json!(["python3", "-c", "print(42)"]);
        v["process"]["terminal"] = false.into();
        edit(&mut v);
        std::fs::write(
            b.join("config.json"),
            serde_json::to_vec_pretty(&v).unwrap(),
        )
        .unwrap();
        b
    }
    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(binary());
        c.arg("--root")
            .arg(self.root())
            .arg("--log")
            .arg(self.log())
            .args(["--log-format", "json"])
            .args(args)
            .stdin(Stdio::null());
        c
    }
    /// Runs a verb. `create` hands its stdio to the container, which outlives it:
    /// waiting for end-of-file on a pipe would wait for the container, so output
    /// goes through files.
    fn run(&self, args: &[&str]) -> Output {
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let (o, e) = (
            self.scratch.path().join(format!("out.{n}")),
            self.scratch.path().join(format!("err.{n}")),
        );
        let status = self
            .cmd(args)
            .stdout(std::fs::File::create(&o).unwrap())
            .stderr(std::fs::File::create(&e).unwrap())
            .status()
            .unwrap();
        Output {
            status,
            stdout: std::fs::read(&o).unwrap(),
            stderr: std::fs::read(&e).unwrap(),
        }
    }
    fn state(&self, id: &str) -> Value {
        let o = self.run(&["state", id]);
        assert!(o.status.success(), "state: {}", stderr(&o));
        serde_json::from_slice(&o.stdout).unwrap()
    }
    fn log_messages(&self) -> Vec<String> {
        std::fs::read_to_string(self.log())
            .unwrap_or_default()
            .lines()
            .map(|l| {
                let v: Value = serde_json::from_str(l).unwrap();
                assert_eq!(v["level"], "error");
                assert!(v["time"].is_string());
                v["msg"].as_str().unwrap().to_string()
            })
            .collect()
    }
    fn ids(&self) -> Vec<String> {
        std::fs::read_dir(self.root())
            .map(|rd| {
                rd.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// A Python root in `dir` (hard links to the host's files: fast, and removed with
/// the test's scratch directory).
fn image(dir: &Path) {
    maibox::image::build(dir, Path::new("/usr/bin/python3")).unwrap();
}

fn wait_status(env: &Env, id: &str, want: &str) -> Value {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let s = env.state(id);
        if s["status"] == want || Instant::now() > until {
            return s;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn run_prints_42() {
    if !require_root("run_prints_42") {
        return;
    }
    let env = Env::new();
    let b = env.bundle("b", |_| {});
    let o = env.run(&["run", "--bundle", b.to_str().unwrap(), "c1"]);
    assert_eq!(stdout(&o), "42\n", "stderr: {}", stderr(&o));
    assert!(o.status.success());
    assert!(env.ids().is_empty(), "state left behind: {:?}", env.ids());
}

#[test]
fn exit_code_passes_through_run() {
    if !require_root("exit_code_passes_through_run") {
        return;
    }
    let env = Env::new();
    let b = env.bundle("b", |v| {
        v["process"]["args"] = serde_json::json!(["python3", "-c", "raise SystemExit(7)"]);
    });
    let o = env.run(&["run", "--bundle", b.to_str().unwrap(), "c1"]);
    assert_eq!(o.status.code(), Some(7), "stderr: {}", stderr(&o));
}

#[test]
fn create_start_state_delete() {
    if !require_root("create_start_state_delete") {
        return;
    }
    let env = Env::new();
    let b = env.bundle("b", |v| {
        v["process"]["args"] = serde_json::json!([
            "python3",
            "-c",
            "import sys; print(42); sys.stdout.flush(); sys.stdin.read()"
        ]);
        v["annotations"] = serde_json::json!({"org.example": "yes"});
    });
    let out = env.scratch.path().join("out");
    let pidfile = env.scratch.path().join("init.pid");
    // Options after the id, as youki's contest passes them.
    let mut create = env.cmd(&["create", "c1", "--bundle", b.to_str().unwrap()]);
    create.arg("--pid-file").arg(&pidfile);
    // stdin: a pipe whose write end we hold, so the container runs until we close it.
    let (r, w) = nix::unistd::pipe().unwrap();
    let errf = env.scratch.path().join("create.err");
    let st = create
        .stdin(Stdio::from(r))
        .stdout(Stdio::from(std::fs::File::create(&out).unwrap()))
        .stderr(Stdio::from(std::fs::File::create(&errf).unwrap()))
        .status()
        .unwrap();
    assert!(
        st.success(),
        "create: {}",
        std::fs::read_to_string(&errf).unwrap()
    );
    let pid: i32 = std::fs::read_to_string(&pidfile).unwrap().parse().unwrap();
    let s = env.state("c1");
    assert_eq!(s["status"], "created");
    assert_eq!(s["pid"], pid);
    assert_eq!(s["id"], "c1");
    assert_eq!(s["annotations"]["org.example"], "yes");
    assert_eq!(
        s["bundle"].as_str().unwrap(),
        std::fs::canonicalize(&b).unwrap().to_str().unwrap()
    );
    // The program has not run before start.
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "");
    let o = env.run(&["start", "c1"]);
    assert!(o.status.success(), "start: {}", stderr(&o));
    let s = wait_status(&env, "c1", "running");
    assert_eq!(s["status"], "running");
    let until = Instant::now() + Duration::from_secs(10);
    while std::fs::read_to_string(&out).unwrap() != "42\n" && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "42\n");
    // A second start of a running container is refused.
    let o = env.run(&["start", "c1"]);
    assert!(!o.status.success());
    assert!(
        env.log_messages().iter().any(|m| m.contains("not created")),
        "{:?}",
        env.log_messages()
    );
    // Deleting a running container needs --force.
    let o = env.run(&["delete", "c1"]);
    assert!(!o.status.success());
    drop(w); // stdin closes: the program ends.
    let s = wait_status(&env, "c1", "stopped");
    assert_eq!(s["status"], "stopped");
    let o = env.run(&["delete", "c1"]);
    assert!(o.status.success(), "delete: {}", stderr(&o));
    assert!(env.ids().is_empty());
    // The process was reparented away from create; it must not be left running.
    assert!(!Path::new(&format!("/proc/{pid}/exe")).exists() || zombie(pid));
}

fn zombie(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(true)
}

#[test]
fn kill_by_name_and_number() {
    if !require_root("kill_by_name_and_number") {
        return;
    }
    let env = Env::new();
    let b = env.bundle("b", |v| {
        v["process"]["args"] = serde_json::json!(["python3", "-c", "import time; time.sleep(60)"]);
    });
    for (id, sig) in [("k1", "KILL"), ("k2", "9"), ("k3", "SIGKILL")] {
        let o = env.run(&["create", "--bundle", b.to_str().unwrap(), id]);
        assert!(o.status.success(), "create: {}", stderr(&o));
        assert!(env.run(&["start", id]).status.success());
        assert_eq!(wait_status(&env, id, "running")["status"], "running");
        let o = env.run(&["kill", id, sig]);
        assert!(o.status.success(), "kill {sig}: {}", stderr(&o));
        assert_eq!(
            wait_status(&env, id, "stopped")["status"],
            "stopped",
            "{sig}"
        );
        assert!(env.run(&["delete", id]).status.success());
    }
    // A bad signal name is an error.
    let o = env.run(&["create", "--bundle", b.to_str().unwrap(), "k4"]);
    assert!(o.status.success());
    let o = env.run(&["kill", "k4", "NOSUCH"]);
    assert!(!o.status.success());
    assert!(env.run(&["delete", "--force", "k4"]).status.success());
    assert!(env.ids().is_empty());
}

#[test]
fn delete_force_of_a_missing_id_succeeds() {
    let env = Env::new();
    assert!(env.run(&["delete", "--force", "nope"]).status.success());
    let o = env.run(&["delete", "nope"]);
    assert!(!o.status.success());
    assert!(env.log_messages()[0].contains("does not exist"));
}

#[test]
fn container_is_confined_as_the_spec_says() {
    if !require_root("container_is_confined_as_the_spec_says") {
        return;
    }
    let env = Env::new();
    let probe = r#"
import json, os
st = {l.split(':')[0]: l.split(':')[1].strip() for l in open('/proc/self/status')}
try:
    open('/x', 'w'); ro = False
except OSError:
    ro = True
print(json.dumps({'uid': os.getuid(), 'gid': os.getgid(), 'groups': sorted(os.getgroups()),
  'capeff': st['CapEff'], 'capbnd': st['CapBnd'], 'nnp': st['NoNewPrivs'], 'ro': ro,
  'pid': os.getpid(), 'host': os.uname().nodename, 'cwd': os.getcwd(),
  'masked': [l.split()[4] for l in open('/proc/self/mountinfo') if l.split()[4] in ('/proc/keys', '/proc/sys')],
  'keys': len(open('/proc/keys').read()),
  'nofile': __import__('resource').getrlimit(__import__('resource').RLIMIT_NOFILE)}))
"#;
    let b = env.bundle("b", |v| {
        v["process"]["args"] = serde_json::json!(["python3", "-c", probe]);
        v["process"]["user"] =
            serde_json::json!({"uid": 1000, "gid": 1000, "additionalGids": [1000, 5]});
        v["process"]["capabilities"] = serde_json::json!({});
        v["process"]["noNewPrivileges"] = true.into();
        v["process"]["cwd"] = "/tmp".into();
        v["process"]["rlimits"] =
            serde_json::json!([{"type": "RLIMIT_NOFILE", "soft": 100, "hard": 200}]);
        v["hostname"] = "oci-test".into();
        v["root"]["readonly"] = true.into();
        v["linux"]["maskedPaths"] = serde_json::json!(["/proc/keys"]);
        v["linux"]["readonlyPaths"] = serde_json::json!(["/proc/sys"]);
    });
    let o = env.run(&["run", "--bundle", b.to_str().unwrap(), "p1"]);
    assert!(o.status.success(), "stderr: {}", stderr(&o));
    let p: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(p["uid"], 1000);
    assert_eq!(p["gid"], 1000);
    assert_eq!(p["groups"], serde_json::json!([5, 1000]));
    assert_eq!(p["capeff"], "0000000000000000");
    assert_eq!(p["capbnd"], "0000000000000000");
    assert_eq!(p["nnp"], "1");
    assert_eq!(p["ro"], true);
    assert_eq!(p["pid"], 1);
    assert_eq!(p["host"], "oci-test");
    assert_eq!(p["cwd"], "/tmp");
    assert_eq!(p["masked"], serde_json::json!(["/proc/keys", "/proc/sys"]));
    assert_eq!(p["keys"], 0, "masked /proc/keys reads as /dev/null");
    assert_eq!(p["nofile"], serde_json::json!([100, 200]));
}

#[test]
fn spec_seccomp_profile_is_enforced() {
    if !require_root("spec_seccomp_profile_is_enforced") {
        return;
    }
    let env = Env::new();
    // keyctl(0) is outside Docker's profile (default errno 1); clone3(NULL, 0) gets its
    // errnoRet 38; personality(ADDR_NO_RANDOMIZE) is refused by an argument check.
    let probe = r#"
import ctypes, json
libc = ctypes.CDLL(None, use_errno=True)
def call(*a):
    r = libc.syscall(*a); return 0 if r >= 0 else ctypes.get_errno()
st = {l.split(':')[0]: l.split(':')[1].strip() for l in open('/proc/self/status')}
print(json.dumps({'keyctl': call(250, 0, 0, 0, 0), 'clone3': call(435, 0, 0),
  'personality': call(135, 0x0040000), 'query': call(135, ctypes.c_ulong(0xffffffff)), 'mode': st['Seccomp']}))
"#;
    let docker: Value = serde_json::from_str(include_str!("data/docker-config.json")).unwrap();
    let profile = docker["linux"]["seccomp"].clone();
    for nnp in [true, false] {
        for with_profile in [true, false] {
            let b = env.bundle(&format!("s{nnp}{with_profile}"), |v| {
                v["process"]["args"] = serde_json::json!(["python3", "-c", probe]);
                v["process"]["noNewPrivileges"] = nnp.into();
                if with_profile {
                    v["linux"]["seccomp"] = profile.clone();
                }
            });
            let o = env.run(&["run", "--bundle", b.to_str().unwrap(), "sc"]);
            assert!(o.status.success(), "stderr: {}", stderr(&o));
            let p: Value = serde_json::from_slice(&o.stdout).unwrap();
            if with_profile {
                assert_eq!(p["mode"], "2", "nnp {nnp}: {p}");
                assert_eq!(p["keyctl"], libc::EPERM, "nnp {nnp}: {p}");
                assert_eq!(p["clone3"], libc::ENOSYS, "nnp {nnp}: {p}");
                assert_eq!(p["personality"], libc::EPERM, "nnp {nnp}: {p}");
                assert_eq!(p["query"], 0, "nnp {nnp}: {p}");
            } else {
                // Control: the same probes without the profile.
                assert_eq!(p["mode"], "0", "{p}");
                assert_ne!(p["keyctl"], libc::EPERM, "{p}");
                assert_ne!(p["clone3"], libc::ENOSYS, "{p}");
                assert_eq!(p["personality"], 0, "{p}");
            }
        }
    }
}

#[test]
fn spec_resources_are_enforced_in_the_containers_cgroup() {
    if !require_root("spec_resources_are_enforced_in_the_containers_cgroup") {
        return;
    }
    let env = Env::new();
    let probe = r#"
import json, os, sys
forks = 0
try:
    for _ in range(40):
        if os.fork() == 0:
            import time; time.sleep(2); os._exit(0)
        forks += 1
except OSError:
    pass
cg = open('/proc/self/cgroup').read()
print(json.dumps({'forks': forks, 'cgroup': cg}), flush=True)
if sys.argv[1:] == ['hog']:
    b = bytearray(200 << 20)
    for i in range(0, len(b), 4096): b[i] = 1
    print('survived', flush=True)
"#;
    let tag = format!("maibox-oci-test-{}", std::process::id());
    let cg_path = format!("/{tag}/c1");
    let resources = serde_json::json!({
        "memory": {"limit": 64 << 20},
        "pids": {"limit": 16},
        "cpu": {"quota": 50000, "period": 100000},
        "devices": [{"allow": false, "access": "rwm"},
                    {"allow": true, "type": "c", "major": 1, "minor": 3, "access": "rwm"}],
    });
    for limited in [true, false] {
        for hog in [false, true] {
            let b = env.bundle(&format!("r{limited}{hog}"), |v| {
                let mut args = vec!["python3", "-c", probe];
                if hog {
                    args.push("hog");
                }
                v["process"]["args"] = serde_json::json!(args);
                v["linux"]["namespaces"]
                    .as_array_mut()
                    .unwrap()
                    .push(serde_json::json!({"type": "cgroup"}));
                if limited {
                    v["linux"]["resources"] = resources.clone();
                    v["linux"]["cgroupsPath"] = cg_path.clone().into();
                }
            });
            let o = env.run(&["run", "--bundle", b.to_str().unwrap(), "c1"]);
            let out = stdout(&o);
            let p: Value = serde_json::from_str(out.lines().next().unwrap_or("null"))
                .unwrap_or_else(|e| panic!("{e}: {out} {}", stderr(&o)));
            if limited {
                assert!(
                    p["forks"].as_u64().is_some_and(|f| f < 16),
                    "{p} {}",
                    stderr(&o)
                );
                // Inside its own cgroup namespace the container sees its group as /.
                // (v1: the memory hierarchy's line; v2: the unified one.)
                let cg = p["cgroup"].as_str().unwrap();
                assert!(cg.contains("memory:/\n") || cg == "0::/\n", "{p}");
                if hog {
                    assert_eq!(o.status.code(), Some(137), "{out} {}", stderr(&o));
                    assert!(!out.contains("survived"));
                }
                // `run` deletes the container, and its cgroup with it.
                for h in ["memory", "pids", "cpu"] {
                    let d = Path::new("/sys/fs/cgroup").join(h).join(&tag).join("c1");
                    let u = Path::new("/sys/fs/cgroup").join(&tag).join("c1");
                    assert!(!d.exists() && !u.exists(), "{} left behind", d.display());
                }
            } else {
                // Control: no limits, the same probes succeed.
                assert_eq!(p["forks"], 40, "{p}");
                if hog {
                    assert!(out.contains("survived"), "{out} {}", stderr(&o));
                }
            }
        }
    }
    for h in ["memory", "pids", "cpu", "devices", ""] {
        let _ = std::fs::remove_dir(Path::new("/sys/fs/cgroup").join(h).join(&tag));
    }
}

#[test]
fn spec_rootless_runs_in_a_user_namespace() {
    if !require_root("spec_rootless_runs_in_a_user_namespace") {
        return;
    }
    let env = Env::new();
    let b = env.scratch.path().join("rl");
    std::fs::create_dir_all(&b).unwrap();
    image(&b.join("rootfs"));
    let o = Command::new(binary())
        .args(["spec", "--rootless", "--bundle"])
        .arg(&b)
        .output()
        .unwrap();
    assert!(o.status.success());
    let mut v: Value =
        serde_json::from_slice(&std::fs::read(b.join("config.json")).unwrap()).unwrap();
    v["process"]["args"] = serde_json::json!([
        "python3",
        "-c",
        "print(open('/proc/self/uid_map').read().split())"
    ]);
    v["process"]["terminal"] = false.into();
    std::fs::write(b.join("config.json"), serde_json::to_vec(&v).unwrap()).unwrap();
    let o = env.run(&["run", "--bundle", b.to_str().unwrap(), "u1"]);
    assert!(o.status.success(), "stderr: {}", stderr(&o));
    // Inside: only container uid 0 → host uid 0, one id (the spec's mapping).
    assert_eq!(stdout(&o), "['0', '0', '1']\n");
}

/// Each bad input fails with a clear message in the JSON log, a non-zero exit,
/// and no state directory left behind.
fn expect_failure(env: &Env, args: &[&str], needle: &str) {
    let before = env.log_messages().len();
    let o = env.run(args);
    assert!(!o.status.success(), "{args:?} succeeded");
    let msgs = env.log_messages();
    assert!(msgs.len() > before, "{args:?}: nothing logged");
    assert!(
        msgs[before..].iter().any(|m| m.contains(needle)),
        "{args:?}: {needle:?} not in {msgs:?}"
    );
}

#[test]
fn bad_input() {
    if !require_root("bad_input") {
        return;
    }
    let env = Env::new();
    let empty = env.scratch.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    expect_failure(
        &env,
        &["create", "--bundle", empty.to_str().unwrap(), "x"],
        "no config.json",
    );
    let b = env.bundle("v2", |v| v["ociVersion"] = "2.0.0".into());
    expect_failure(
        &env,
        &["create", "--bundle", b.to_str().unwrap(), "x"],
        "ociVersion",
    );
    let b = env.bundle("bad-field", |v| v["process"]["user"] = "root".into());
    expect_failure(
        &env,
        &["create", "--bundle", b.to_str().unwrap(), "x"],
        "not a valid OCI runtime spec",
    );
    let good = env.bundle("good", |_| {});
    for id in ["a/b", "..", "../x"] {
        expect_failure(
            &env,
            &["create", "--bundle", good.to_str().unwrap(), id],
            "is invalid",
        );
    }
    // CVE-2024-21626: a cwd through a leaked descriptor must not reach the host.
    let b = env.bundle("cwd", |v| v["process"]["cwd"] = "/proc/self/fd/7".into());
    expect_failure(
        &env,
        &["create", "--bundle", b.to_str().unwrap(), "x"],
        "process.cwd",
    );
    let b = env.bundle("noexe", |v| {
        v["process"]["args"] = serde_json::json!(["no-such-program"])
    });
    expect_failure(
        &env,
        &["create", "--bundle", b.to_str().unwrap(), "x"],
        "not found",
    );
    assert!(env.ids().is_empty(), "left behind: {:?}", env.ids());
    // An id in use, and start of a container that is not `created`.
    let o = env.run(&["create", "--bundle", good.to_str().unwrap(), "dup"]);
    assert!(o.status.success(), "{}", stderr(&o));
    expect_failure(
        &env,
        &["create", "--bundle", good.to_str().unwrap(), "dup"],
        "already in use",
    );
    assert!(env.run(&["start", "dup"]).status.success());
    wait_status(&env, "dup", "stopped");
    expect_failure(&env, &["start", "dup"], "not created");
    assert!(env.run(&["delete", "dup"]).status.success());
    expect_failure(&env, &["start", "dup"], "does not exist");
    expect_failure(
        &env,
        &["--systemd-cgroup", "state", "dup"],
        "systemd-cgroup",
    );
    assert!(env.ids().is_empty(), "left behind: {:?}", env.ids());
}

#[test]
fn features_describe_what_is_enforced() {
    let o = Command::new(binary()).arg("features").output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let f: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(f["linux"]["seccomp"]["enabled"], true);
    assert_eq!(f["linux"]["cgroup"]["systemd"], false);
    assert!(f["linux"]["capabilities"]
        .as_array()
        .unwrap()
        .contains(&"CAP_SYS_ADMIN".into()));
    assert!(!f["linux"]["seccomp"]["actions"]
        .as_array()
        .unwrap()
        .contains(&"SCMP_ACT_NOTIFY".into()));
}
