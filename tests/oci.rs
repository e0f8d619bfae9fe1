//! The OCI runtime verbs against the real binary: bundles with a Python root built
//! by `maibox::image::build`, run through `run` and `create`/`start`/`state`/`delete`,
//! and bad input that must fail clearly and leave nothing behind.

mod common;
use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::AtomicUsize;
use std::sync::OnceLock;

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
    /// Runs a verb that must succeed; its output, for further checks.
    #[track_caller]
    fn run_ok(&self, args: &[&str]) -> Output {
        let o = self.run(args);
        assert!(o.status.success(), "stderr: {}", stderr(&o));
        o
    }
    fn state(&self, id: &str) -> Value {
        let o = self.run_ok(&["state", id]);
        serde_json::from_slice(&o.stdout).unwrap()
    }
    fn log_messages(&self) -> Vec<String> {
        std::fs::read_to_string(self.log())
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|v| v["level"] != "warning")
            .map(|v| {
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

/// The image every bundle's root is linked from, built once per test process in /tmp
/// (the scratch directories' filesystem, so that they can hard-link it).
static IMAGE: OnceLock<PathBuf> = OnceLock::new();

/// A Python root in `dir`: hard links to one image built by `maibox::image::build`,
/// and directories of its own, so that a test may add to or chown them. On the host
/// the image is itself hard links to the host's files, but in the VM lane, where /tmp
/// is another filesystem than the host's /usr, each build copied the interpreter and
/// its standard library over virtio-9p: 25-85 s per bundle under software emulation,
/// against about 1 s for `cp -a --link`.
fn image(dir: &Path) {
    let img = IMAGE.get_or_init(|| {
        let tmp = tempfile::Builder::new()
            .prefix("maibox-oci-image-")
            .tempdir_in("/tmp")
            .unwrap()
            .keep();
        // Removed when the test binary exits (the harness returns from main or calls
        // exit, both of which run atexit handlers).
        extern "C" fn remove_image() {
            if let Some(root) = IMAGE.get().and_then(|r| r.parent()) {
                let _ = std::fs::remove_dir_all(root);
            }
        }
        // SAFETY: registers a plain function with no captured state.
        assert_eq!(unsafe { libc::atexit(remove_image) }, 0);
        let root = tmp.join("rootfs");
        maibox::image::build(&root, Path::new("/usr/bin/python3")).unwrap();
        root
    });
    let o = Command::new("cp")
        .args(["-a", "--link"])
        .arg(img)
        .arg(dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "cp -a --link: {}", stderr(&o));
}

fn wait_status(env: &Env, id: &str, want: &str) -> Value {
    // Generous: each poll is a whole `maibox state`, slow on a loaded 2-core machine.
    let until = Instant::now() + Duration::from_secs(30);
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
    let o = env.run(&["run", "--bundle", b.to_str().unwrap(), "rp1"]);
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
    let o = env.run(&["run", "--bundle", b.to_str().unwrap(), "xc1"]);
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
    env.run_ok(&["start", "c1"]);
    let s = wait_status(&env, "c1", "running");
    assert_eq!(s["status"], "running");
    let until = Instant::now() + Duration::from_secs(30);
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
    env.run_ok(&["delete", "c1"]);
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
        env.run_ok(&["create", "--bundle", b.to_str().unwrap(), id]);
        assert!(env.run(&["start", id]).status.success());
        assert_eq!(wait_status(&env, id, "running")["status"], "running");
        let o = env.run(&["kill", id, sig]);
        assert!(o.status.success(), "kill {sig}: {}", stderr(&o));
        assert_eq!(
            wait_status(&env, id, "stopped")["status"],
            "stopped",
            "{sig}"
        );
        // Stopped: `kill -a` is no error (as runc), a plain kill is.
        env.run_ok(&["kill", "-a", id, "0"]);
        expect_failure(&env, &["kill", id, "0"], "is not running");
        assert!(env.run(&["delete", id]).status.success());
    }
    // A bad signal name is an error.
    env.run_ok(&["create", "--bundle", b.to_str().unwrap(), "k4"]);
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
  'masked': sorted(l.split()[4] for l in open('/proc/self/mountinfo') if l.split()[4] in ('/proc/keys', '/proc/sys')),
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
    let o = env.run_ok(&["run", "--bundle", b.to_str().unwrap(), "p1"]);
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
            let o = env.run_ok(&["run", "--bundle", b.to_str().unwrap(), "sc"]);
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
            let o = env.run(&["run", "--bundle", b.to_str().unwrap(), "sr1"]);
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
    // The parent maibox made in each hierarchy (freezer and devices included).
    let _ = std::fs::remove_dir(Path::new("/sys/fs/cgroup").join(&tag));
    for h in std::fs::read_dir("/sys/fs/cgroup").unwrap().flatten() {
        let _ = std::fs::remove_dir(h.path().join(&tag));
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
    let o = env.run_ok(&["run", "--bundle", b.to_str().unwrap(), "u1"]);
    // Inside: only container uid 0 → host uid 0, one id (the spec's mapping).
    assert_eq!(stdout(&o), "['0', '0', '1']\n");
    // The strict runtime in a user namespace: Landlock, the open-file cap, the own
    // boot id and the seccomp kills as without one (the probes' controls are in
    // hardened_runtime_adds_the_untrusted_levels_hardening).
    let host_boot_id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap();
    v["process"]["args"] = serde_json::json!(["python3", "-c", STRICT_PROBE]);
    v["mounts"].as_array_mut().unwrap().push(serde_json::json!({
        "destination": "/tmp", "type": "tmpfs", "source": "tmpfs",
        "options": ["nosuid", "nodev", "mode=1777", "size=16m"]}));
    std::fs::write(b.join("config.json"), serde_json::to_vec(&v).unwrap()).unwrap();
    let o = env.run_ok(&["--hardened", "run", "--bundle", b.to_str().unwrap(), "u2"]);
    let strict: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(strict["nofile"], serde_json::json!([256, 256]), "{strict}");
    let own = strict["boot_id"].as_str().unwrap_or_default();
    assert!(own.len() == 37 && own != host_boot_id, "{strict}");
    assert_eq!(strict["threads"], 8, "{strict}");
    assert_eq!(
        strict["exec_tmp"],
        format!("error {}", libc::EACCES),
        "{strict}"
    );
    v["process"]["args"] = serde_json::json!(["python3", "-c", EXPLOIT_CALL, "io_uring_setup"]);
    std::fs::write(b.join("config.json"), serde_json::to_vec(&v).unwrap()).unwrap();
    let o = env.run(&["--hardened", "run", "--bundle", b.to_str().unwrap(), "u3"]);
    assert_eq!(o.status.code(), Some(128 + libc::SIGSYS), "{}", stderr(&o));
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

/// `create` of `bundle` fails with `needle` in the log and leaves no container.
fn expect_create_refused(env: &Env, bundle: &Path, id: &str, needle: &str) {
    expect_failure(
        env,
        &["create", "--bundle", bundle.to_str().unwrap(), id],
        needle,
    );
    assert!(env.ids().is_empty(), "left behind: {:?}", env.ids());
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
    expect_create_refused(&env, &b, "x", "not found");
    // An id in use, and start of a container that is not `created`.
    env.run_ok(&["create", "--bundle", good.to_str().unwrap(), "dup"]);
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
    assert!(f["linux"]["seccomp"]["actions"]
        .as_array()
        .unwrap()
        .contains(&"SCMP_ACT_NOTIFY".into()));
}

/// runc's template: `terminal: true`, no inheritable capabilities, every device
/// denied but the defaults; and a
/// foreground `run` with a terminal and no --console-socket relays the pty
/// itself (the container sees a tty; without the relay there is none).
#[test]
fn foreground_run_relays_a_pty() {
    if !require_root("foreground_run_relays_a_pty") {
        return;
    }
    let env = Env::new();
    let probe =
        "import os, sys; print(os.isatty(0), os.ttyname(1) if os.isatty(1) else '-'); sys.exit(3)";
    let b = env.bundle("b", |v| {
        v["process"]["args"] = serde_json::json!(["python3", "-c", probe]);
    });
    let spec: Value =
        serde_json::from_slice(&std::fs::read(env.scratch.path().join("b/config.json")).unwrap())
            .unwrap();
    assert!(spec["process"]["capabilities"].get("inheritable").is_none());
    // Every device denied (the default ones stay allowed); none of that for a
    // rootless container, which has no cgroup to enforce it with.
    assert_eq!(
        spec["linux"]["resources"],
        serde_json::json!({"devices": [{"allow": false, "access": "rwm"}]})
    );
    let rl = env.scratch.path().join("rootless");
    std::fs::create_dir_all(&rl).unwrap();
    let o = Command::new(binary())
        .args(["spec", "--rootless", "--bundle"])
        .arg(&rl)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let rspec: Value =
        serde_json::from_slice(&std::fs::read(rl.join("config.json")).unwrap()).unwrap();
    assert!(
        rspec["linux"].get("resources").is_none(),
        "{}",
        rspec["linux"]
    );
    // With the template's terminal: true.
    let tb = env.bundle("t", |v| {
        v["process"]["args"] = serde_json::json!(["python3", "-c", probe]);
        v["process"]["terminal"] = true.into();
    });
    let o = env.run(&["run", "--bundle", tb.to_str().unwrap(), "t1"]);
    assert_eq!(o.status.code(), Some(3), "stderr: {}", stderr(&o));
    let out = stdout(&o);
    assert!(out.starts_with("True /dev/pts/"), "{out:?}");
    assert!(env.ids().is_empty());
    // Control: terminal false gives plain stdio.
    let o = env.run(&["run", "--bundle", b.to_str().unwrap(), "t2"]);
    assert_eq!(o.status.code(), Some(3), "stderr: {}", stderr(&o));
    assert_eq!(stdout(&o), "False -\n");
    // Detached with a terminal still needs a console socket.
    expect_failure(
        &env,
        &["run", "-d", "--bundle", tb.to_str().unwrap(), "t3"],
        "give --console-socket",
    );
}

/// `exec ID CMD...` (runc's plain form) reaches the container; `-t` without a
/// console socket relays a pty, sized as `consoleSize` says; `run --keep`
/// keeps the stopped state.
#[test]
fn plain_exec_tty_exec_and_keep() {
    if !require_root("plain_exec_tty_exec_and_keep") {
        return;
    }
    let env = Env::new();
    let b = env.bundle("b", |v| {
        v["process"]["args"] = serde_json::json!(["python3", "-c", "import time; time.sleep(60)"]);
    });
    env.run_ok(&["run", "-d", "--bundle", b.to_str().unwrap(), "e1"]);
    let tty = "import os, sys; print(os.isatty(1)); sys.exit(4)";
    let o = env.run(&["exec", "e1", "python3", "-c", tty]);
    assert_eq!(o.status.code(), Some(4), "stderr: {}", stderr(&o));
    assert_eq!(stdout(&o), "False\n");
    let o = env.run(&["exec", "-t", "e1", "python3", "-c", tty]);
    assert_eq!(o.status.code(), Some(4), "stderr: {}", stderr(&o));
    assert_eq!(stdout(&o).trim_end(), "True");
    let o = env.run(&[
        "exec",
        "--user",
        "1000:1001",
        "e1",
        "python3",
        "-c",
        "import os; print(os.getuid(), os.getgid())",
    ]);
    assert!(o.status.success(), "stderr: {}", stderr(&o));
    assert_eq!(stdout(&o), "1000 1001\n");
    // --process without user or cwd: root, in /.
    let pj = env.scratch.path().join("p.json");
    std::fs::write(&pj, r#"{"args": ["python3", "-c", "import os; print(os.getuid(), os.getcwd())"], "env": ["PATH=/usr/bin:/bin"]}"#).unwrap();
    let o = env.run_ok(&["exec", "--process", pj.to_str().unwrap(), "e1"]);
    assert_eq!(stdout(&o), "0 /\n");
    // process.consoleSize sizes the pty; without it the kernel's 0x0 stays.
    for (name, size, want) in [
        (
            "sized.json",
            r#""consoleSize": {"height": 10, "width": 110},"#,
            "110 10",
        ),
        ("unsized.json", "", "0 0"),
    ] {
        let pj = env.scratch.path().join(name);
        std::fs::write(
            &pj,
            format!(
                r#"{{"terminal": true, {size} "args": ["python3", "-c", "import os; print(*os.get_terminal_size(1))"], "env": ["PATH=/usr/bin:/bin"]}}"#
            ),
        )
        .unwrap();
        let o = env.run_ok(&["exec", "--process", pj.to_str().unwrap(), "e1"]);
        assert_eq!(stdout(&o).trim_end(), want, "{name}");
    }
    env.run_ok(&["delete", "-f", "e1"]);

    let k = env.bundle("k", |_| {});
    env.run_ok(&["run", "--keep", "--bundle", k.to_str().unwrap(), "kp1"]);
    assert_eq!(env.state("kp1")["status"], "stopped");
    assert!(env.run(&["delete", "kp1"]).status.success());
    assert!(env.ids().is_empty());
}

/// `--debug` writes debug lines to `--log` in its format (runc's debug.bats).
#[test]
fn debug_goes_to_the_log() {
    if !require_root("debug_goes_to_the_log") {
        return;
    }
    let env = Env::new();
    let b = env.bundle("b", |_| {});
    let o = env.run_ok(&["--debug", "run", "--bundle", b.to_str().unwrap(), "d1"]);
    assert!(!stderr(&o).contains("debug"), "{}", stderr(&o));
    let log = std::fs::read_to_string(env.log()).unwrap();
    let levels: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["level"].clone())
        .collect();
    assert!(
        levels.len() >= 2 && levels.iter().all(|l| l == "debug"),
        "{log}"
    );
    // Without --debug, nothing.
    std::fs::remove_file(env.log()).unwrap();
    env.run_ok(&["run", "--bundle", b.to_str().unwrap(), "d2"]);
    assert!(!env.log().exists());
}

/// Ambient capabilities that are not inheritable are skipped, as runc does
/// (runc's own template asks for them): the process gets none of them. A cwd
/// the container's user cannot search is entered as root first, as runc does.
#[test]
fn ambient_without_inheritable_and_unsearchable_cwd() {
    if !require_root("ambient_without_inheritable_and_unsearchable_cwd") {
        return;
    }
    let env = Env::new();
    let probe = "import os; st = {l.split(':')[0]: l.split(':')[1].strip() for l in open('/proc/self/status')}; print(st['CapAmb'], st['CapEff'], os.getcwd())";
    let caps = serde_json::json!(["CAP_KILL"]);
    let b = env.bundle("b", |v| {
        v["process"]["args"] = serde_json::json!(["python3", "-c", probe]);
        v["process"]["user"] = serde_json::json!({"uid": 1000, "gid": 1000});
        v["process"]["capabilities"] = serde_json::json!({
            "bounding": caps, "permitted": caps, "effective": caps, "ambient": caps});
    });
    let o = env.run_ok(&["run", "--bundle", b.to_str().unwrap(), "a1"]);
    assert_eq!(stdout(&o), "0000000000000000 0000000000000000 /\n");
    // With inheritable too, the ambient capability is raised (and survives execve).
    let b = env.bundle("c", |v| {
        v["process"]["args"] = serde_json::json!(["python3", "-c", probe]);
        v["process"]["user"] = serde_json::json!({"uid": 1000, "gid": 1000});
        v["process"]["capabilities"] = serde_json::json!({
            "bounding": caps, "permitted": caps, "effective": caps, "ambient": caps,
            "inheritable": caps});
    });
    let o = env.run_ok(&["run", "--bundle", b.to_str().unwrap(), "a2"]);
    assert_eq!(stdout(&o), "0000000000000020 0000000000000020 /\n");
    // A 0700 root-owned cwd: entered before the switch to uid 1000.
    let b = env.bundle("d", |v| {
        v["process"]["args"] = serde_json::json!(["python3", "-c", probe]);
        v["process"]["user"] = serde_json::json!({"uid": 1000, "gid": 1000});
        v["process"]["cwd"] = "/private".into();
    });
    let private = b.join("rootfs/private");
    std::fs::create_dir(&private).unwrap();
    std::fs::set_permissions(
        &private,
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )
    .unwrap();
    let o = env.run_ok(&["run", "--bundle", b.to_str().unwrap(), "a3"]);
    assert!(stdout(&o).ends_with(" /private\n"), "{}", stdout(&o));
}

/// All four creation hooks run, in the spec's order, where the spec says:
/// prestart and createRuntime in the runtime's namespaces, createContainer in
/// the container's mount namespace, startContainer inside the container before
/// its program; each gets the state on stdin.
#[test]
fn hooks_run_in_order_and_in_their_namespaces() {
    if !require_root("hooks_run_in_order_and_in_their_namespaces") {
        return;
    }
    let env = Env::new();
    let trace = env.scratch.path().join("hooks.log");
    let host_hook = |stage: &str| {
        serde_json::json!({
            "path": "/usr/bin/python3",
            "args": ["python3", "-c", format!(
                "import json, os, sys; s = json.load(sys.stdin); \
                 open({:?}, 'a').write('{stage} %s %s %s\\n' % (s['id'], s['status'], os.readlink('/proc/self/ns/mnt')))",
                trace.display().to_string())]
        })
    };
    let b = env.bundle("b", |v| {
        v["root"]["readonly"] = false.into();
        v["process"]["args"] = serde_json::json!(["python3", "-c",
            "import os; print(open('/start-hook.txt').read().strip(), os.readlink('/proc/self/ns/mnt'))"]);
        v["hooks"] = serde_json::json!({
            // A hook that ignores its input and exits at once (a write to it can
            // meet EPIPE): the runtime goes on.
            "prestart": [{"path": "/bin/true"}, host_hook("prestart")],
            "createRuntime": [host_hook("createRuntime")],
            "createContainer": [host_hook("createContainer")],
            "startContainer": [{
                "path": "/usr/bin/python3",
                "args": ["python3", "-c",
                    "import json, sys; s = json.load(sys.stdin); open('/start-hook.txt', 'w').write('startContainer %s %s' % (s['id'], s['status']))"]
            }],
        });
    });
    let o = env.run_ok(&["run", "--bundle", b.to_str().unwrap(), "h1"]);
    let out = stdout(&o);
    let (start_line, container_ns) = out.trim().rsplit_once(' ').unwrap();
    assert_eq!(start_line, "startContainer h1 created");
    let log = std::fs::read_to_string(&trace).unwrap();
    let lines: Vec<Vec<&str>> = log.lines().map(|l| l.split(' ').collect()).collect();
    let stages: Vec<&str> = lines.iter().map(|l| l[0]).collect();
    assert_eq!(
        stages,
        ["prestart", "createRuntime", "createContainer"],
        "{log}"
    );
    let host_ns = std::fs::read_link("/proc/self/ns/mnt").unwrap();
    let host_ns = host_ns.to_str().unwrap();
    assert_eq!(lines[0][1..], ["h1", "created", host_ns]);
    assert_eq!(lines[1][1..], ["h1", "created", host_ns]);
    assert_eq!(lines[2][1..3], ["h1", "created"]);
    assert_eq!(
        lines[2][3], container_ns,
        "createContainer runs in the container's mount ns"
    );
    assert_ne!(container_ns, host_ns);

    // A failing createContainer hook fails create and leaves nothing behind.
    let bad = env.bundle("bad", |v| {
        v["hooks"] = serde_json::json!({"createContainer": [{"path": "/bin/false"}]});
    });
    expect_create_refused(
        &env,
        &bad,
        "h2",
        "createContainer: error running hook /bin/false: exit status 1",
    );
}

/// A user namespace whose root is an unprivileged host uid (as Docker's
/// userns-remap makes): the init can no longer open the root-owned start FIFO
/// by path, so the runtime hands it over; create/start still work.
#[test]
fn user_namespace_with_unprivileged_root_starts() {
    if !require_root("user_namespace_with_unprivileged_root_starts") {
        return;
    }
    let env = Env::new();
    let b = env.bundle("b", |v| {
        v["process"]["args"] = serde_json::json!([
            "python3",
            "-c",
            "print(open('/proc/self/uid_map').read().split())"
        ]);
        v["linux"]["namespaces"]
            .as_array_mut()
            .unwrap()
            .push(serde_json::json!({"type": "user"}));
        v["linux"]["uidMappings"] =
            serde_json::json!([{"containerID": 0, "hostID": 200000, "size": 65536}]);
        v["linux"]["gidMappings"] =
            serde_json::json!([{"containerID": 0, "hostID": 200000, "size": 65536}]);
    });
    // The image is hard links to root-owned host files, readable by anyone; the
    // mount points the container's root cannot create are made here.
    for d in ["proc", "dev", "sys"] {
        let _ = std::fs::create_dir(b.join("rootfs").join(d));
    }
    env.run_ok(&["create", "--bundle", b.to_str().unwrap(), "un1"]);
    env.run_ok(&["start", "un1"]);
    wait_status(&env, "un1", "stopped");
    // create's stdout file is the container's.
    let outs: Vec<String> = std::fs::read_dir(env.scratch.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("out."))
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .filter(|t| t.starts_with('['))
        .collect();
    assert_eq!(outs, ["['0', '200000', '65536']\n"]);
    assert!(env.run(&["delete", "un1"]).status.success());
}

/// `linux.namespaces[].path` joins an existing namespace (how Kubernetes pods
/// share a network): the second container sees the first one's network and
/// uts namespaces; without the path it gets its own. Bad paths fail `create`.
#[test]
fn namespaces_are_joined_by_path() {
    if !require_root("namespaces_are_joined_by_path") {
        return;
    }
    let env = Env::new();
    let a = env.bundle("a", |v| {
        v["process"]["args"] = serde_json::json!(["python3", "-c", "import time; time.sleep(60)"]);
        v["linux"]["namespaces"]
            .as_array_mut()
            .unwrap()
            .push(serde_json::json!({"type": "uts"}));
        v["hostname"] = "pod-a".into();
    });
    env.run_ok(&["run", "-d", "--bundle", a.to_str().unwrap(), "pa"]);
    let pid = env.state("pa")["pid"].as_i64().unwrap();
    let host_view = |ns: &str| {
        std::fs::read_link(format!("/proc/{pid}/ns/{ns}"))
            .unwrap()
            .display()
            .to_string()
    };
    let probe = "import os, socket; print(os.readlink('/proc/self/ns/net'), socket.gethostname())";
    let joined = env.bundle("b", |v| {
        v["process"]["args"] = serde_json::json!(["python3", "-c", probe]);
        let ns = v["linux"]["namespaces"].as_array_mut().unwrap();
        ns.retain(|n| n["type"] != "network");
        ns.push(serde_json::json!({"type": "network", "path": format!("/proc/{pid}/ns/net")}));
        ns.push(serde_json::json!({"type": "uts", "path": format!("/proc/{pid}/ns/uts")}));
        v["hostname"] = "".into();
    });
    let o = env.run_ok(&["run", "--bundle", joined.to_str().unwrap(), "pb"]);
    assert_eq!(stdout(&o), format!("{} pod-a\n", host_view("net")));
    // A hostname with a joined uts namespace is that namespace's (runc's reading).
    let renamer = env.bundle("r", |v| {
        v["process"]["args"] = serde_json::json!(["python3", "-c", probe]);
        let ns = v["linux"]["namespaces"].as_array_mut().unwrap();
        ns.retain(|n| n["type"] != "uts");
        ns.push(serde_json::json!({"type": "uts", "path": format!("/proc/{pid}/ns/uts")}));
        v["hostname"] = "pod-b".into();
    });
    let o = env.run_ok(&["run", "--bundle", renamer.to_str().unwrap(), "pr"]);
    assert!(stdout(&o).ends_with(" pod-b\n"), "{}", stdout(&o));
    let o = env.run(&[
        "exec",
        "pa",
        "python3",
        "-c",
        "import socket; print(socket.gethostname())",
    ]);
    assert_eq!(stdout(&o), "pod-b\n", "stderr: {}", stderr(&o));
    // Control: its own network namespace.
    let own = env.bundle("c", |v| {
        v["process"]["args"] = serde_json::json!(["python3", "-c", probe]);
    });
    let o = env.run_ok(&["run", "--bundle", own.to_str().unwrap(), "pc"]);
    assert!(!stdout(&o).starts_with(&host_view("net")), "{}", stdout(&o));
    // A missing file, and a namespace file of the wrong type.
    let missing = env.bundle("d", |v| {
        let ns = v["linux"]["namespaces"].as_array_mut().unwrap();
        ns.retain(|n| n["type"] != "network");
        ns.push(serde_json::json!({"type": "network", "path": "/nonexistent/net"}));
    });
    expect_failure(
        &env,
        &["create", "--bundle", missing.to_str().unwrap(), "pd"],
        "cannot open the network namespace /nonexistent/net",
    );
    let wrong = env.bundle("e", |v| {
        let ns = v["linux"]["namespaces"].as_array_mut().unwrap();
        ns.retain(|n| n["type"] != "network");
        ns.push(serde_json::json!({"type": "network", "path": format!("/proc/{pid}/ns/ipc")}));
    });
    expect_failure(
        &env,
        &["create", "--bundle", wrong.to_str().unwrap(), "pe"],
        "join the network namespace",
    );
    assert!(env.run(&["delete", "-f", "pa"]).status.success());
    assert!(env.ids().is_empty(), "{:?}", env.ids());
}

/// The recursive mount options reach mounts below a recursive bind (rnoexec,
/// rro), plain flags reach a bind mount itself, an option maibox does not know
/// on a bind mount is refused rather than dropped, and process.user.umask is
/// the program's umask (022 without one).
#[test]
fn recursive_mount_options_bind_flags_and_umask() {
    if !require_root("recursive_mount_options_bind_flags_and_umask") {
        return;
    }
    let env = Env::new();
    // A host directory with a tmpfs mounted inside, holding an executable.
    let host = env.scratch.path().join("host");
    let sub = host.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    nix::mount::mount(
        Some("tmpfs"),
        &sub,
        Some("tmpfs"),
        nix::mount::MsFlags::empty(),
        None::<&str>,
    )
    .unwrap();
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = nix::mount::umount2(&self.0, nix::mount::MntFlags::MNT_DETACH);
        }
    }
    let _guard = Unmount(sub.clone());
    std::fs::copy("/bin/true", sub.join("t")).unwrap();
    std::os::unix::fs::symlink("t", sub.join("link")).unwrap();
    let probe = r#"
import os, subprocess
def run(p):
    try:
        subprocess.run([p], check=True); return 'ran'
    except PermissionError:
        return 'EACCES'
def write(p):
    try:
        open(p, 'w').close(); return 'wrote'
    except OSError as e:
        return 'EROFS' if e.errno == 30 else str(e)
def follow(p):
    try:
        open(p).close(); return 'followed'
    except OSError as e:
        return 'ELOOP' if e.errno == 40 else str(e)
print(run('/h/sub/t'), write('/h/sub/x'), write('/h/y'), oct(os.umask(0)), follow('/h/sub/link'))
"#;
    let bundle = |name: &str, options: serde_json::Value, umask: Option<u32>| {
        env.bundle(name, |v| {
            v["process"]["args"] = serde_json::json!(["python3", "-c", probe]);
            v["mounts"].as_array_mut().unwrap().push(serde_json::json!({
                "destination": "/h", "type": "bind", "source": host, "options": options}));
            if let Some(m) = umask {
                v["process"]["user"]["umask"] = m.into();
            }
        })
    };
    let out = |b: &Path, id: &str| {
        let o = env.run_ok(&["run", "--bundle", b.to_str().unwrap(), id]);
        stdout(&o)
    };
    // Control: a plain recursive bind.
    let b = bundle("plain", serde_json::json!(["rbind"]), None);
    assert_eq!(out(&b, "m1"), "ran wrote wrote 0o22 followed\n");
    // Recursive noexec and read-only reach the submount.
    let b = bundle(
        "rec",
        serde_json::json!(["rbind", "rnoexec", "rro", "rnosymfollow"]),
        Some(0o077),
    );
    assert_eq!(out(&b, "m2"), "EACCES EROFS EROFS 0o77 ELOOP\n");
    // Non-recursive: the top mount only.
    let b = bundle("top", serde_json::json!(["rbind", "ro", "noexec"]), None);
    assert_eq!(out(&b, "m3"), "ran wrote EROFS 0o22 followed\n");
    // Unknown option on a bind mount.
    let b = bundle("bad", serde_json::json!(["rbind", "rnoexecc"]), None);
    expect_failure(
        &env,
        &["create", "--bundle", b.to_str().unwrap(), "m4"],
        "unknown option(s) rnoexecc for a bind mount",
    );
}

/// linux.devices are made with the spec's type, numbers, mode and owner;
/// without the entry the node is absent.
#[test]
fn spec_devices_are_created() {
    if !require_root("spec_devices_are_created") {
        return;
    }
    let env = Env::new();
    let probe = r#"
import os, stat
def show(p):
    try:
        st = os.stat(p)
    except FileNotFoundError:
        return 'absent'
    return '%s %d:%d %o %d:%d' % ('c' if stat.S_ISCHR(st.st_mode) else 'p' if stat.S_ISFIFO(st.st_mode) else '?',
        os.major(st.st_rdev), os.minor(st.st_rdev), stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid)
print(show('/dev/kmsg2'), '|', show('/dev/sub/fifo'), '|', len(open('/dev/kmsg2', 'rb').read(0)))
"#;
    let with = env.bundle("with", |v| {
        v["process"]["args"] = serde_json::json!(["python3", "-c", probe]);
        v["linux"]["devices"] = serde_json::json!([
            {"path": "/dev/kmsg2", "type": "c", "major": 1, "minor": 5, "fileMode": 0o644, "uid": 7, "gid": 8},
            {"path": "/dev/sub/fifo", "type": "p", "fileMode": 0o600}
        ]);
    });
    let o = env.run_ok(&["run", "--bundle", with.to_str().unwrap(), "v1"]);
    assert_eq!(stdout(&o), "c 1:5 644 7:8 | p 0:0 600 0:0 | 0\n");
    let without = env.bundle("without", |v| {
        v["process"]["args"] = serde_json::json!([
            "python3",
            "-c",
            "import os; print(os.path.exists('/dev/kmsg2'))"
        ]);
    });
    let o = env.run(&["run", "--bundle", without.to_str().unwrap(), "v2"]);
    assert_eq!(stdout(&o), "False\n", "stderr: {}", stderr(&o));
    let bad = env.bundle("bad", |v| {
        v["linux"]["devices"] =
            serde_json::json!([{"path": "dev/x", "type": "c", "major": 1, "minor": 3}]);
    });
    expect_failure(
        &env,
        &["create", "--bundle", bad.to_str().unwrap(), "v3"],
        "is not an absolute path",
    );
}

/// domainname is set in the container's uts namespace (the host's stays); the
/// fields maibox does not apply are refused by name instead of dropped.
#[test]
fn domainname_and_unapplied_fields() {
    if !require_root("domainname_and_unapplied_fields") {
        return;
    }
    let env = Env::new();
    let probe = "import subprocess, os; print(open('/proc/sys/kernel/domainname').read().strip())";
    let b = env.bundle("b", |v| {
        v["process"]["args"] = serde_json::json!(["python3", "-c", probe]);
        v["linux"]["namespaces"]
            .as_array_mut()
            .unwrap()
            .push(serde_json::json!({"type": "uts"}));
        v["domainname"] = "pod.example".into();
    });
    let o = env.run_ok(&["run", "--bundle", b.to_str().unwrap(), "dn"]);
    assert_eq!(stdout(&o), "pod.example\n");
    let host = std::fs::read_to_string("/proc/sys/kernel/domainname").unwrap();
    assert_ne!(host.trim(), "pod.example");
    for (i, (path, value, field)) in [
        (
            "process",
            (
                "selinuxLabel",
                serde_json::json!("system_u:system_r:container_t:s0"),
            ),
            "process.selinuxLabel",
        ),
        (
            "process",
            (
                "scheduler",
                serde_json::json!({"policy": "SCHED_FIFO", "priority": 1}),
            ),
            "process.scheduler",
        ),
        (
            "process",
            (
                "ioPriority",
                serde_json::json!({"class": "IOPRIO_CLASS_IDLE", "priority": 0}),
            ),
            "process.ioPriority",
        ),
        (
            "linux",
            ("personality", serde_json::json!({"domain": "LINUX32"})),
            "linux.personality",
        ),
        (
            "linux",
            ("rootfsPropagation", serde_json::json!("sideways")),
            "linux.rootfsPropagation",
        ),
        (
            "process",
            (
                "user",
                serde_json::json!({"uid": 0, "gid": 0, "additionalGids": [5, 5]}),
            ),
            "gid 5 is listed twice",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let b = env.bundle(&format!("uv{i}"), |v| {
            v[path][value.0] = value.1.clone();
        });
        expect_failure(
            &env,
            &["create", "--bundle", b.to_str().unwrap(), &format!("uv{i}")],
            field,
        );
    }
}

/// SCMP_ACT_NOTIFY with listenerPath: the listener reaches the agent with the
/// container process state, and the agent's answer is what the call returns;
/// without the notify entry the same call succeeds.
#[test]
fn seccomp_notify_reaches_the_agent() {
    if !require_root("seccomp_notify_reaches_the_agent") {
        return;
    }
    let env = Env::new();
    let sock = env.scratch.path().join("agent.sock");
    let listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let agent = std::thread::spawn(move || {
        let (conn, _) = listener.accept().unwrap();
        serve_one_listener(conn)
    });
    let probe = "import os\ntry:\n    os.mkdir('/made'); print('made')\nexcept OSError as e:\n    print(e.errno)";
    let seccomp = |notify: bool| {
        let mut s = serde_json::json!({
            "defaultAction": "SCMP_ACT_ALLOW",
            "architectures": ["SCMP_ARCH_X86_64"],
            "syscalls": []
        });
        if notify {
            s["syscalls"] =
                serde_json::json!([{"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_NOTIFY"}]);
            s["listenerPath"] = sock.display().to_string().into();
            s["listenerMetadata"] = "test-meta".into();
        }
        s
    };
    let b = env.bundle("n", |v| {
        v["root"]["readonly"] = false.into();
        v["process"]["args"] = serde_json::json!(["python3", "-c", probe]);
        v["linux"]["seccomp"] = seccomp(true);
    });
    let o = env.run_ok(&["run", "--bundle", b.to_str().unwrap(), "sn1"]);
    assert_eq!(stdout(&o), "42\n");
    let (state, answered) = agent.join().unwrap();
    // Python's own start-up also makes directories (bytecode caches).
    assert!(answered >= 1);
    assert_eq!(state["fds"], serde_json::json!(["seccompFd"]));
    assert_eq!(state["metadata"], "test-meta");
    assert_eq!(state["state"]["id"], "sn1");
    assert!(state["pid"].as_i64().unwrap() > 0);
    // Control: no notify entry, the call runs.
    let b = env.bundle("c", |v| {
        v["root"]["readonly"] = false.into();
        v["process"]["args"] = serde_json::json!(["python3", "-c", probe]);
        v["linux"]["seccomp"] = seccomp(false);
    });
    let o = env.run_ok(&["run", "--bundle", b.to_str().unwrap(), "sn2"]);
    assert_eq!(stdout(&o), "made\n");
    // A listenerPath without any notifying action has nothing to receive: runs.
    let b = env.bundle("l", |v| {
        v["linux"]["seccomp"] = seccomp(false);
        v["linux"]["seccomp"]["listenerPath"] = "/nonexistent/agent.sock".into();
    });
    env.run_ok(&["run", "--bundle", b.to_str().unwrap(), "sn4"]);
    // An unreachable agent fails create, leaving nothing.
    let b = env.bundle("u", |v| {
        v["linux"]["seccomp"] = seccomp(true);
        v["linux"]["seccomp"]["listenerPath"] = "/nonexistent/agent.sock".into();
    });
    expect_create_refused(&env, &b, "sn3", "failed to connect with seccomp agent");
    // Notifying write is refused: the container's setup writes after its filter
    // is installed, before any agent has the listener.
    let w = env.bundle("w", |v| {
        v["linux"]["seccomp"] = seccomp(true);
        v["linux"]["seccomp"]["syscalls"][0]["names"] = serde_json::json!(["write"]);
    });
    expect_create_refused(
        &env,
        &w,
        "sn5",
        "SCMP_ACT_NOTIFY cannot be used for the write syscall",
    );
    // An agent that holds the listener and never answers: the runtime's own setup
    // must not make the notified call (here getcwd, which the cwd check uses).
    let held = env.scratch.path().join("held.sock");
    let holder = std::os::unix::net::UnixListener::bind(&held).unwrap();
    let (hold_tx, hold_rx) = std::sync::mpsc::channel::<()>();
    let keeper = std::thread::spawn(move || {
        let conn = holder.accept().map(|(c, _)| c);
        let _ = hold_rx.recv();
        drop(conn);
    });
    let g = env.bundle("g", |v| {
        v["process"]["args"] = serde_json::json!(["python3", "-c", "pass"]);
        v["linux"]["seccomp"] = seccomp(true);
        v["linux"]["seccomp"]["syscalls"][0]["names"] = serde_json::json!(["getcwd"]);
        v["linux"]["seccomp"]["listenerPath"] = held.display().to_string().into();
    });
    env.run_ok(&["create", "--bundle", g.to_str().unwrap(), "sn6"]);
    assert_eq!(env.state("sn6")["status"], "created");
    assert!(env.run(&["delete", "-f", "sn6"]).status.success());
    hold_tx.send(()).unwrap();
    keeper.join().unwrap();
    assert!(env.ids().is_empty(), "{:?}", env.ids());
}

/// An added device (10:200, the tun device: no default device, openable by
/// anyone) whose access the device rules limit: reading is allowed, writing is
/// not, through the v1 devices controller (this host) or a cgroup v2 device
/// program (the VM lane); the control allows both.
#[test]
fn added_device_rules_are_enforced_or_refused() {
    if !require_root("added_device_rules_are_enforced_or_refused") {
        return;
    }
    let env = Env::new();
    let probe = "import os\nfor m in (os.O_RDONLY, os.O_WRONLY):\n    try:\n        os.close(os.open('/dev/zz', m)); print('ok', end=' ')\n    except OSError as e:\n        print(e.errno, end=' ')\nprint()";
    let b = env.bundle("b", |v| {
        v["process"]["args"] = serde_json::json!(["python3", "-c", probe]);
        v["process"]["capabilities"] = serde_json::json!({});
        v["linux"]["devices"] = serde_json::json!([
            {"path": "/dev/zz", "type": "c", "major": 10, "minor": 200, "fileMode": 0o666}]);
        v["linux"]["resources"] = serde_json::json!({"devices": [
            {"allow": false, "access": "rwm"},
            {"allow": true, "type": "c", "major": 10, "minor": 200, "access": "r"}]});
    });
    let o = env.run(&["run", "--bundle", b.to_str().unwrap(), "dv1"]);
    if Path::new("/sys/fs/cgroup/devices/devices.allow").exists()
        || Path::new("/sys/fs/cgroup/cgroup.controllers").exists()
    {
        assert!(o.status.success(), "stderr: {}", stderr(&o));
        assert_eq!(stdout(&o), format!("ok {} \n", libc::EPERM));
        // Stray access letters: an allow rule's are ignored ("ra" allows
        // reading only), a deny rule's deny everything ("wa" denies reading too).
        for (name, rules) in [
            (
                "dv3",
                serde_json::json!([{"allow": false, "access": "rwm"},
                {"allow": true, "type": "c", "major": 10, "minor": 200, "access": "ra"}]),
            ),
            (
                "dv4",
                serde_json::json!([{"allow": true, "access": "rwm"},
                {"allow": false, "type": "c", "major": 10, "minor": 200, "access": "wa"}]),
            ),
        ] {
            let d = env.bundle(name, |v| {
                v["process"]["args"] = serde_json::json!(["python3", "-c", probe]);
                v["process"]["capabilities"] = serde_json::json!({});
                v["linux"]["devices"] = serde_json::json!([
                    {"path": "/dev/zz", "type": "c", "major": 10, "minor": 200, "fileMode": 0o666}]);
                v["linux"]["resources"] = serde_json::json!({ "devices": rules });
            });
            let o = env.run(&["run", "--bundle", d.to_str().unwrap(), name]);
            assert!(o.status.success(), "{name}: {}", stderr(&o));
            let want = if name == "dv3" {
                format!("ok {} \n", libc::EPERM)
            } else {
                format!("{0} {0} \n", libc::EPERM)
            };
            assert_eq!(stdout(&o), want, "{name}");
        }
        // `maibox spec`'s template alone denies every device but the defaults.
        let t = env.bundle("t", |v| {
            v["process"]["args"] = serde_json::json!(["python3", "-c", probe]);
            v["process"]["capabilities"] = serde_json::json!({});
            v["linux"]["devices"] = serde_json::json!([
                {"path": "/dev/zz", "type": "c", "major": 10, "minor": 200, "fileMode": 0o666}]);
        });
        let o = env.run_ok(&["run", "--bundle", t.to_str().unwrap(), "dv5"]);
        assert_eq!(stdout(&o), format!("{0} {0} \n", libc::EPERM));
        // Control: the same device without device rules.
        let c = env.bundle("c", |v| {
            v["process"]["args"] = serde_json::json!(["python3", "-c", probe]);
            v["process"]["capabilities"] = serde_json::json!({});
            v["linux"]["devices"] = serde_json::json!([
                {"path": "/dev/zz", "type": "c", "major": 10, "minor": 200, "fileMode": 0o666}]);
            v["linux"]["resources"] = Value::Null;
        });
        let o = env.run_ok(&["run", "--bundle", c.to_str().unwrap(), "dv2"]);
        assert_eq!(stdout(&o), "ok ok \n");
    } else {
        assert!(!o.status.success());
        assert!(
            stderr(&o).contains("no v1 devices controller"),
            "{}",
            stderr(&o)
        );
        assert!(env.ids().is_empty());
    }
}

/// The spec's cgroup mount shows the container its own group (its memory limit,
/// not the host's groups), read-only as Docker asks; with and without a cgroup
/// namespace. Without the mount, /sys/fs/cgroup shows nothing of it.
#[test]
fn cgroup_mount_shows_the_containers_own_group() {
    if !require_root("cgroup_mount_shows_the_containers_own_group") {
        return;
    }
    let env = Env::new();
    let probe = r#"
import os
v2 = os.path.exists('/sys/fs/cgroup/cgroup.controllers')
f = '/sys/fs/cgroup/memory.max' if v2 else '/sys/fs/cgroup/memory/memory.limit_in_bytes'
try:
    limit = open(f).read().strip()
except OSError as e:
    limit = 'missing'
try:
    open(f, 'w').write('1'); w = 'wrote'
except OSError as e:
    w = e.errno
print(limit, w, os.path.isdir('/sys/fs/cgroup/maibox') or os.path.isdir('/sys/fs/cgroup/memory/maibox'))
"#;
    let mk = |name: &str, mount: bool, cgroupns: bool| {
        env.bundle(name, |v| {
            v["process"]["args"] = serde_json::json!(["python3", "-c", probe]);
            v["linux"]["resources"] = serde_json::json!({"memory": {"limit": 100 * 1024 * 1024}});
            let mounts = v["mounts"].as_array_mut().unwrap();
            mounts.retain(|m| m["type"] != "cgroup");
            if mount {
                mounts.push(
                    serde_json::json!({"destination": "/sys/fs/cgroup", "type": "cgroup",
                    "source": "cgroup", "options": ["ro", "nosuid", "noexec", "nodev"]}),
                );
            }
            let ns = v["linux"]["namespaces"].as_array_mut().unwrap();
            ns.retain(|n| n["type"] != "cgroup");
            if cgroupns {
                ns.push(serde_json::json!({"type": "cgroup"}));
            }
        })
    };
    for (i, cgroupns) in [false, true].into_iter().enumerate() {
        let b = mk(&format!("m{i}"), true, cgroupns);
        let o = env.run_ok(&["run", "--bundle", b.to_str().unwrap(), &format!("cg{i}")]);
        assert_eq!(stdout(&o), "104857600 30 False\n", "cgroupns {cgroupns}");
    }
    let b = mk("none", false, false);
    let o = env.run_ok(&["run", "--bundle", b.to_str().unwrap(), "cg3"]);
    assert!(stdout(&o).starts_with("missing "), "{}", stdout(&o));
}

/// linux.rootfsPropagation applies to the container's root (a peer group of its
/// own: every mount was made private first, so nothing reaches the host).
#[test]
fn rootfs_propagation_applies_inside_the_container() {
    if !require_root("rootfs_propagation_applies_inside_the_container") {
        return;
    }
    let env = Env::new();
    let probe = "print([l.split(' - ')[0].split()[6:] for l in open('/proc/self/mountinfo') if l.split()[4] == '/'][0])";
    let run = |name: &str, prop: Option<&str>| {
        let b = env.bundle(name, |v| {
            v["process"]["args"] = serde_json::json!(["python3", "-c", probe]);
            if let Some(p) = prop {
                v["linux"]["rootfsPropagation"] = p.into();
            }
        });
        let o = env.run_ok(&["run", "--bundle", b.to_str().unwrap(), name]);
        stdout(&o)
    };
    assert!(run("shared", Some("shared")).contains("shared:"));
    assert_eq!(run("default", None), "[]\n", "private by default");
}

/// linux.resources.cpu.cpus confines the container to those CPUs (a v1 cpuset
/// group here, the v2 cpuset controller in the VM lane); without it the
/// container may use every CPU the runtime may.
#[test]
fn cpuset_confines_the_container() {
    if !require_root("cpuset_confines_the_container") {
        return;
    }
    let all = std::thread::available_parallelism().map_or(1, |n| n.get());
    if all < 2 {
        eprintln!("cpuset_confines_the_container: needs 2 CPUs to tell a cpuset apart, skipped");
        return;
    }
    let env = Env::new();
    let probe = "import os; print(sorted(os.sched_getaffinity(0)))";
    let run = |name: &str, cpus: Option<&str>| {
        let b = env.bundle(name, |v| {
            v["process"]["args"] = serde_json::json!(["python3", "-c", probe]);
            if let Some(c) = cpus {
                v["linux"]["resources"] = serde_json::json!({"cpu": {"cpus": c}});
            }
        });
        let o = env.run_ok(&["run", "--bundle", b.to_str().unwrap(), name]);
        stdout(&o)
    };
    assert_eq!(run("one", Some("1")), "[1]\n");
    assert_eq!(run("all", None).matches(',').count() + 1, all);
    let bad = env.bundle("bad", |v| {
        v["linux"]["resources"] = serde_json::json!({"cpu": {"cpus": "zero"}});
    });
    expect_create_refused(&env, &bad, "cs3", "is not a list like");
}

/// A cgroup frozen before `create` is refused (the init would freeze mid-setup
/// and the runtime wait for it); the same path thawed works.
#[test]
fn pre_frozen_cgroup_is_refused() {
    if !require_root("pre_frozen_cgroup_is_refused") {
        return;
    }
    let env = Env::new();
    let (dir, file, frozen, thawed) = if Path::new("/sys/fs/cgroup/freezer").is_dir() {
        (
            PathBuf::from("/sys/fs/cgroup/freezer/maibox-frozen-test/c"),
            "freezer.state",
            "FROZEN",
            "THAWED",
        )
    } else {
        (
            PathBuf::from("/sys/fs/cgroup/maibox-frozen-test/c"),
            "cgroup.freeze",
            "1",
            "0",
        )
    };
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(file), frozen).unwrap();
    let b = env.bundle("b", |v| {
        v["linux"]["cgroupsPath"] = "/maibox-frozen-test/c".into();
    });
    expect_failure(
        &env,
        &["create", "--bundle", b.to_str().unwrap(), "fz1"],
        "unexpectedly frozen",
    );
    // The group was someone else's: the failed create leaves it, frozen, so a
    // second try is refused the same way.
    assert_eq!(read_trim(&dir.join(file)), frozen);
    expect_failure(
        &env,
        &["create", "--bundle", b.to_str().unwrap(), "fz1b"],
        "unexpectedly frozen",
    );
    std::fs::write(dir.join(file), thawed).unwrap();
    let o = env.run_ok(&["run", "--bundle", b.to_str().unwrap(), "fz2"]);
    assert_eq!(stdout(&o), "42\n");
    // The parents maibox made in each hierarchy for the cgroupsPath.
    for h in std::fs::read_dir("/sys/fs/cgroup").unwrap().flatten() {
        let _ = std::fs::remove_dir(h.path().join("maibox-frozen-test/c"));
        let _ = std::fs::remove_dir(h.path().join("maibox-frozen-test"));
    }
}

/// runc's smaller command-line forms: `kill ID 0`, `list` tables and JSON, `ps`,
/// `exec --additional-gids`, `update --pids-limit`, `--root DIR -v`.
#[test]
fn runc_command_line_forms() {
    if !require_root("runc_command_line_forms") {
        return;
    }
    let env = Env::new();
    let b = env.bundle("b", |v| {
        v["process"]["args"] = serde_json::json!(["python3", "-c", "import time; time.sleep(60)"]);
    });
    env.run_ok(&["run", "-d", "--bundle", b.to_str().unwrap(), "f1"]);
    assert!(env.run(&["kill", "f1", "0"]).status.success());
    let list = stdout(&env.run(&["list"]));
    let header: Vec<&str> = list.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        ["ID", "PID", "STATUS", "BUNDLE", "CREATED", "OWNER"],
        "{list}"
    );
    assert!(list.lines().nth(1).unwrap().starts_with("f1 "), "{list}");
    // JSON in runc's field order, which tools match on.
    let json = stdout(&env.run(&["list", "--format", "json"]));
    assert!(
        json.starts_with(r#"[{"ociVersion":"1.0.2","id":"f1","pid":"#),
        "{json}"
    );
    let l: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(l[0]["status"], "running");
    assert_eq!(l[0]["owner"], "root");
    let order: Vec<usize> = ["\"status\"", "\"bundle\"", "\"rootfs\"", "\"created\""]
        .iter()
        .map(|k| json.find(k).unwrap())
        .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{json}");
    let ps = stdout(&env.run(&["ps", "f1"]));
    assert!(ps.lines().next().unwrap().contains("PID"), "{ps}");
    assert!(ps.contains("time.sleep"), "{ps}");
    let o = env.run(&[
        "exec",
        "-g",
        "5",
        "-g",
        "6",
        "f1",
        "python3",
        "-c",
        "import os; print(sorted(os.getgroups()))",
    ]);
    assert_eq!(stdout(&o), "[5, 6]\n", "stderr: {}", stderr(&o));
    env.run_ok(&["update", "--pids-limit", "7", "f1"]);
    // Read on the host: the container's group in the pids hierarchy.
    let state = env.state("f1");
    let pid = state["pid"].as_i64().unwrap();
    let cg = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap();
    let pids_line = cg
        .lines()
        .find(|l| l.contains(":pids:") || l.starts_with("0::"))
        .unwrap();
    let rel = pids_line.rsplit(':').next().unwrap();
    let max = if Path::new("/sys/fs/cgroup/pids").exists() {
        format!("/sys/fs/cgroup/pids{rel}/pids.max")
    } else {
        format!("/sys/fs/cgroup{rel}/pids.max")
    };
    assert_eq!(std::fs::read_to_string(&max).unwrap().trim(), "7");
    // exec into a paused container: refused with runc's status and wording.
    assert!(env.run(&["pause", "f1"]).status.success());
    let o = env.run(&["exec", "f1", "true"]);
    assert_eq!(o.status.code(), Some(255));
    assert!(
        stderr(&o).contains("cannot exec in a paused container"),
        "{}",
        stderr(&o)
    );
    assert!(env.run(&["resume", "f1"]).status.success());
    // runc's exit statuses: the process's own, or 255 when it could not start
    // (a missing program, cwd or container, an unwritable pid file).
    let o = env.run(&["exec", "f1", "python3", "-c", "raise SystemExit(42)"]);
    assert_eq!(o.status.code(), Some(42), "{}", stderr(&o));
    for args in [
        &["exec", "f1", "no-such-binary"][..],
        &[
            "exec",
            "--cwd",
            "/no/such/dir",
            "f1",
            "python3",
            "-c",
            "pass",
        ],
        &[
            "exec",
            "--pid-file",
            "/non-existent/dir/pid",
            "f1",
            "python3",
            "-c",
            "pass",
        ],
        &["exec", "no_such_container", "true"],
    ] {
        let o = env.run(args);
        assert_eq!(o.status.code(), Some(255), "{args:?}: {}", stderr(&o));
    }
    assert!(env.run(&["delete", "-f", "f1"]).status.success());
    let o = Command::new(binary())
        .args(["--root", "/nonexistent", "-v"])
        .output()
        .unwrap();
    assert!(stdout(&o).starts_with("maibox version "), "{}", stdout(&o));
}

/// The CPU quota keeps the spec's own period, and shares and the memory
/// reservation are written too (v1 or v2 files, whichever the host has).
#[test]
fn cpu_period_shares_and_memory_reservation_are_written() {
    if !require_root("cpu_period_shares_and_memory_reservation_are_written") {
        return;
    }
    let env = Env::new();
    let b = env.bundle("b", |v| {
        v["process"]["args"] = serde_json::json!(["python3", "-c", "import time; time.sleep(60)"]);
        v["linux"]["resources"] = serde_json::json!({
            "cpu": {"quota": 500000, "period": 1000000, "shares": 512},
            "memory": {"limit": 64 << 20, "reservation": 24 << 20}});
    });
    env.run_ok(&["run", "-d", "--bundle", b.to_str().unwrap(), "cp1"]);
    let pid = env.state("cp1")["pid"].as_i64().unwrap();
    let cg = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap();
    let path_of = |ctl: &str| {
        cg.lines()
            .find(|l| {
                l.split(':')
                    .nth(1)
                    .is_some_and(|c| c.split(',').any(|x| x == ctl))
            })
            .map(|l| format!("/sys/fs/cgroup/{ctl}{}", l.rsplit(':').next().unwrap()))
    };
    let read = |p: String| std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"));
    match (path_of("cpu"), path_of("memory")) {
        (Some(cpu), Some(mem)) => {
            assert_eq!(read(format!("{cpu}/cpu.cfs_period_us")).trim(), "1000000");
            assert_eq!(read(format!("{cpu}/cpu.cfs_quota_us")).trim(), "500000");
            assert_eq!(read(format!("{cpu}/cpu.shares")).trim(), "512");
            assert_eq!(
                read(format!("{mem}/memory.soft_limit_in_bytes")).trim(),
                "25165824"
            );
        }
        _ => {
            let rel = cg
                .lines()
                .find(|l| l.starts_with("0::"))
                .unwrap()
                .trim_start_matches("0::");
            let d = format!("/sys/fs/cgroup{rel}");
            assert_eq!(read(format!("{d}/cpu.max")).trim(), "500000 1000000");
            assert_eq!(read(format!("{d}/memory.low")).trim(), "25165824");
            assert!(
                read(format!("{d}/cpu.weight"))
                    .trim()
                    .parse::<u64>()
                    .unwrap()
                    < 100
            );
        }
    }
    assert!(env.run(&["delete", "-f", "cp1"]).status.success());
}

/// `exec` holds no lock on the container while its process runs: `exec
/// --ignore-paused` into a paused container waits for a `resume` from elsewhere
/// (its helper is frozen meanwhile), and a long foreground exec does not hold
/// off `kill`.
#[test]
fn exec_leaves_the_container_unlocked_while_it_runs() {
    if !require_root("exec_leaves_the_container_unlocked_while_it_runs") {
        return;
    }
    let env = Env::new();
    let b = env.bundle("b", |v| {
        v["process"]["args"] = serde_json::json!(["python3", "-c", "import time; time.sleep(60)"]);
    });
    env.run_ok(&["run", "-d", "--bundle", b.to_str().unwrap(), "lk1"]);
    assert!(env.run(&["pause", "lk1"]).status.success());
    let started = Instant::now();
    let (exec, resume) = std::thread::scope(|s| {
        let resume = s.spawn(|| {
            std::thread::sleep(Duration::from_millis(500));
            env.run(&["resume", "lk1"])
        });
        let exec = env.run(&[
            "exec",
            "--ignore-paused",
            "lk1",
            "python3",
            "-c",
            "print('ok')",
        ]);
        (exec, resume.join().unwrap())
    });
    assert!(resume.status.success(), "resume: {}", stderr(&resume));
    assert_eq!(stdout(&exec), "ok\n", "exec: {}", stderr(&exec));
    assert!(started.elapsed() < Duration::from_secs(20));
    // Control: a foreground exec still running while `kill` ends the container.
    let (exec, kill) = std::thread::scope(|s| {
        let exec = s.spawn(|| {
            env.run(&[
                "exec",
                "lk1",
                "python3",
                "-c",
                "import time; time.sleep(30)",
            ])
        });
        std::thread::sleep(Duration::from_millis(500));
        let kill = env.run(&["kill", "lk1", "KILL"]);
        (exec.join().unwrap(), kill)
    });
    assert!(kill.status.success(), "kill: {}", stderr(&kill));
    assert!(!exec.status.success());
    assert!(started.elapsed() < Duration::from_secs(25));
    assert!(env.run(&["delete", "-f", "lk1"]).status.success());
}

/// The host path of `file` in the container's group of `controller` (v1), or in
/// its one group (v2), from the /proc/PID/cgroup of one of its processes.
fn cgroup_file(pid: i64, controller: &str, file: &str) -> PathBuf {
    let cg = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap();
    let v1 = cg.lines().find(|l| {
        l.split(':')
            .nth(1)
            .is_some_and(|c| c.split(',').any(|x| x == controller))
    });
    let rel = match v1 {
        Some(l) => format!("{controller}{}", l.rsplit(':').next().unwrap()),
        None => cg
            .lines()
            .find(|l| l.starts_with("0::"))
            .unwrap()
            .trim_start_matches("0::")
            .to_string(),
    };
    Path::new("/sys/fs/cgroup")
        .join(rel.trim_start_matches('/'))
        .join(file)
}

fn read_trim(p: &Path) -> String {
    std::fs::read_to_string(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .trim()
        .to_string()
}

/// Whether the host accounts swap in its memory controller (v1:
/// `memory.memsw.*`; v2: `memory.swap.max` in the groups).
fn swap_accounted() -> bool {
    if cgroup_v1() {
        return Path::new("/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes").exists();
    }
    std::fs::read_dir("/sys/fs/cgroup")
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| e.path().join("memory.swap.max").exists())
}

/// Whether the host's controllers are on cgroup v1 (or hybrid).
fn cgroup_v1() -> bool {
    Path::new("/sys/fs/cgroup/memory/memory.limit_in_bytes").exists()
}

/// Removes what a test made under `/<tag>` in every hierarchy.
fn remove_cgroup_tree(tag: &str, leaves: &[&str]) {
    for h in std::fs::read_dir("/sys/fs/cgroup").unwrap().flatten() {
        for l in leaves {
            let _ = std::fs::remove_dir(h.path().join(tag).join(l));
        }
        let _ = std::fs::remove_dir(h.path().join(tag));
    }
    for l in leaves {
        let _ = std::fs::remove_dir(Path::new("/sys/fs/cgroup").join(tag).join(l));
    }
    let _ = std::fs::remove_dir(Path::new("/sys/fs/cgroup").join(tag));
}

/// `update` writes only what it is given, as given: a CFS period alone keeps
/// the quota, -1 lifts a limit, shares, the memory reservation, memory+swap
/// (v2: swap = memory+swap − memory) and the cpuset change, a realtime budget is
/// set (v1). (A `--hardened` container's withheld swap:
/// `hardened_container_gets_no_swap`.)
#[test]
fn update_writes_each_setting_as_given() {
    if !require_root("update_writes_each_setting_as_given") {
        return;
    }
    let env = Env::new();
    let tag = format!("maibox-update-test-{}", std::process::id());
    let v1 = cgroup_v1();
    let rt = v1 && Path::new("/sys/fs/cgroup/cpu/cpu.rt_runtime_us").exists();
    if rt {
        // A group's realtime budget comes out of its parent's, which starts at 0.
        let parent = Path::new("/sys/fs/cgroup/cpu").join(&tag);
        std::fs::create_dir_all(&parent).unwrap();
        for f in ["cpu.rt_period_us", "cpu.rt_runtime_us"] {
            let root = std::fs::read_to_string(Path::new("/sys/fs/cgroup/cpu").join(f)).unwrap();
            std::fs::write(parent.join(f), root.trim()).unwrap();
        }
    }
    let b = env.bundle("b", |v| {
        v["process"]["args"] = serde_json::json!(["python3", "-c", "import time; time.sleep(60)"]);
        v["linux"]["cgroupsPath"] = format!("/{tag}/c").into();
        v["linux"]["resources"] = serde_json::json!({
            "memory": {"limit": 64 << 20}, "pids": {"limit": 20},
            "cpu": {"quota": 500000, "period": 1000000, "shares": 100}});
    });
    env.run_ok(&["run", "-d", "--bundle", b.to_str().unwrap(), "up1"]);
    let pid = env.state("up1")["pid"].as_i64().unwrap();
    let cpu_max = || {
        if v1 {
            (
                read_trim(&cgroup_file(pid, "cpu", "cpu.cfs_quota_us")),
                read_trim(&cgroup_file(pid, "cpu", "cpu.cfs_period_us")),
            )
        } else {
            let t = read_trim(&cgroup_file(pid, "cpu", "cpu.max"));
            let (q, p) = t.split_once(' ').unwrap();
            (q.to_string(), p.to_string())
        }
    };
    let update = |args: &[&str]| {
        let mut a = vec!["update"];
        a.extend_from_slice(args);
        a.push("up1");
        let o = env.run(&a);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        o
    };
    let unlimited = if v1 { "-1" } else { "max" };
    update(&["--cpu-period", "900000"]);
    assert_eq!(cpu_max(), ("500000".into(), "900000".into()));
    update(&["--cpu-quota", "-1"]);
    assert_eq!(cpu_max(), (unlimited.into(), "900000".into()));
    let json = env.scratch.path().join("r.json");
    std::fs::write(&json, r#"{"cpu": {"quota": 500000, "period": 1000000}}"#).unwrap();
    update(&["-r", json.to_str().unwrap()]);
    assert_eq!(cpu_max(), ("500000".into(), "1000000".into()));
    update(&["--cpu-share", "200"]);
    if v1 {
        assert_eq!(read_trim(&cgroup_file(pid, "cpu", "cpu.shares")), "200");
    } else {
        assert_eq!(read_trim(&cgroup_file(pid, "cpu", "cpu.weight")), "8");
    }
    update(&["--memory-reservation", "32M", "--pids-limit", "-1"]);
    let (reservation, memsw) = if v1 {
        ("memory.soft_limit_in_bytes", "memory.memsw.limit_in_bytes")
    } else {
        ("memory.low", "memory.swap.max")
    };
    assert_eq!(
        read_trim(&cgroup_file(pid, "memory", reservation)),
        "33554432"
    );
    assert_eq!(read_trim(&cgroup_file(pid, "pids", "pids.max")), "max");
    // Memory+swap as given, without a warning.
    let swap_file = cgroup_file(pid, "memory", memsw);
    if swap_file.exists() {
        let o = update(&["--memory", "64M", "--memory-swap", "128M"]);
        assert!(!stderr(&o).contains("not applied"), "{}", stderr(&o));
        let want = if v1 { 128 << 20 } else { 64 << 20 };
        assert_eq!(read_trim(&swap_file), want.to_string());
    }
    if std::thread::available_parallelism().map_or(1, |n| n.get()) >= 2 {
        update(&["--cpuset-cpus", "1"]);
        let probe = "import os; print(sorted(os.sched_getaffinity(0)))";
        let o = env.run(&["exec", "up1", "python3", "-c", probe]);
        assert_eq!(stdout(&o), "[1]\n", "{}", stderr(&o));
        update(&["--cpuset-cpus", "0"]);
        let o = env.run(&["exec", "up1", "python3", "-c", probe]);
        assert_eq!(stdout(&o), "[0]\n", "{}", stderr(&o));
    }
    expect_failure(
        &env,
        &["update", "--kernel-memory", "10M", "up1"],
        "kernel memory",
    );
    if rt {
        update(&["--cpu-rt-period", "800001", "--cpu-rt-runtime", "500001"]);
        assert_eq!(
            read_trim(&cgroup_file(pid, "cpu", "cpu.rt_period_us")),
            "800001"
        );
        assert_eq!(
            read_trim(&cgroup_file(pid, "cpu", "cpu.rt_runtime_us")),
            "500001"
        );
        // Control: more than the parent's budget is the kernel's to refuse.
        expect_failure(
            &env,
            &["update", "--cpu-rt-runtime", "990000", "up1"],
            "cpu.rt_runtime_us",
        );
    }
    assert!(env.run(&["delete", "-f", "up1"]).status.success());
    remove_cgroup_tree(&tag, &["c"]);
}

/// Under a parent ("pod") with a CFS limit, a shorter period goes in after the
/// quota that makes it fit (the kernel refuses it before), and a quota beyond
/// the parent's share is refused. cgroup v1 only: v2 sets both in one write.
#[test]
fn update_orders_period_and_quota_under_a_pod_limit() {
    if !require_root("update_orders_period_and_quota_under_a_pod_limit") {
        return;
    }
    if !cgroup_v1() {
        eprintln!("update_orders_period_and_quota_under_a_pod_limit: cgroup v1 only, skipped");
        return;
    }
    let env = Env::new();
    let tag = format!("maibox-pod-test-{}", std::process::id());
    let pod = Path::new("/sys/fs/cgroup/cpu").join(&tag);
    std::fs::create_dir_all(&pod).unwrap();
    std::fs::write(pod.join("cpu.cfs_quota_us"), "50000").unwrap();
    let b = env.bundle("b", |v| {
        v["process"]["args"] = serde_json::json!(["python3", "-c", "import time; time.sleep(60)"]);
        v["linux"]["cgroupsPath"] = format!("/{tag}/c").into();
        v["linux"]["resources"] = serde_json::json!({"cpu": {"quota": 500000, "period": 1000000}});
    });
    env.run_ok(&["run", "-d", "--bundle", b.to_str().unwrap(), "pod1"]);
    let pid = env.state("pod1")["pid"].as_i64().unwrap();
    expect_failure(
        &env,
        &["update", "--cpu-quota", "600000", "pod1"],
        "cpu.cfs_quota_us",
    );
    env.run_ok(&[
        "update",
        "--cpu-period",
        "10000",
        "--cpu-quota",
        "3000",
        "pod1",
    ]);
    assert_eq!(
        read_trim(&cgroup_file(pid, "cpu", "cpu.cfs_period_us")),
        "10000"
    );
    assert_eq!(
        read_trim(&cgroup_file(pid, "cpu", "cpu.cfs_quota_us")),
        "3000"
    );
    assert!(env.run(&["delete", "-f", "pod1"]).status.success());
    remove_cgroup_tree(&tag, &["c"]);
}

/// On a hybrid host (controllers on v1, cgroup2 at /sys/fs/cgroup/unified) the
/// container and what `exec` starts in it share a group in the unified
/// hierarchy too, named like its v1 groups, as runc places them.
#[test]
fn hybrid_host_places_the_container_in_the_unified_hierarchy() {
    if !require_root("hybrid_host_places_the_container_in_the_unified_hierarchy") {
        return;
    }
    let unified = Path::new("/sys/fs/cgroup/unified/cgroup.procs").exists();
    if !unified || !cgroup_v1() {
        eprintln!(
            "hybrid_host_places_the_container_in_the_unified_hierarchy: not a hybrid host, skipped"
        );
        return;
    }
    let env = Env::new();
    let tag = format!("maibox-hybrid-test-{}", std::process::id());
    let b = env.bundle("b", |v| {
        v["process"]["args"] = serde_json::json!(["python3", "-c", "import time; time.sleep(60)"]);
        v["linux"]["cgroupsPath"] = format!("/{tag}/c").into();
    });
    env.run_ok(&["run", "-d", "--bundle", b.to_str().unwrap(), "hy1"]);
    let pid = env.state("hy1")["pid"].as_i64().unwrap();
    let last = |p: i64| {
        std::fs::read_to_string(format!("/proc/{p}/cgroup"))
            .unwrap()
            .lines()
            .last()
            .unwrap()
            .to_string()
    };
    assert_eq!(last(pid), format!("0::/{tag}/c"));
    let pidfile = env.scratch.path().join("exec.pid");
    let o = env.run(&[
        "exec",
        "-d",
        "--pid-file",
        pidfile.to_str().unwrap(),
        "hy1",
        "python3",
        "-c",
        "import time; time.sleep(30)",
    ]);
    assert!(o.status.success(), "stderr: {}", stderr(&o));
    let exec_pid: i64 = read_trim(&pidfile).parse().unwrap();
    assert_eq!(last(exec_pid), last(pid));
    assert!(env.run(&["delete", "-f", "hy1"]).status.success());
    assert!(!Path::new("/sys/fs/cgroup/unified")
        .join(&tag)
        .join("c")
        .exists());
    remove_cgroup_tree(&tag, &["c"]);
}

fn wait_for(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let until = Instant::now() + limit;
    while !done() {
        assert!(Instant::now() < until, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `events --stats` prints one line in runc's shape (type and id first, then
/// the usage read from the container's groups); `events --interval` a line per
/// interval, an `oom` line when the memory limit kills a process (none before),
/// and ends when the container is deleted.
#[test]
fn events_report_usage_and_oom_kills() {
    if !require_root("events_report_usage_and_oom_kills") {
        return;
    }
    let env = Env::new();
    let b = env.bundle("b", |v| {
        v["process"]["args"] = serde_json::json!(["python3", "-c", "import time; time.sleep(60)"]);
        v["linux"]["resources"] =
            serde_json::json!({"memory": {"limit": 64 << 20}, "pids": {"limit": 32}});
    });
    env.run_ok(&["run", "-d", "--bundle", b.to_str().unwrap(), "ev1"]);
    let o = env.run(&["events", "--stats", "ev1"]);
    let out = stdout(&o);
    assert!(o.status.success(), "stderr: {}", stderr(&o));
    assert_eq!(out.lines().count(), 1, "{out}");
    assert!(
        out.starts_with(r#"{"type":"stats","id":"ev1","data":{"#),
        "{out}"
    );
    let v: Value = serde_json::from_str(&out).unwrap();
    let d = &v["data"];
    assert_eq!(d["memory"]["usage"]["limit"], 64 << 20, "{d}");
    assert!(d["memory"]["usage"]["usage"].as_u64().unwrap() > 0, "{d}");
    assert_eq!(d["pids"]["limit"], 32, "{d}");
    assert!(d["pids"]["current"].as_u64().unwrap() >= 1, "{d}");
    assert!(d["cpu"]["usage"]["total"].as_u64().unwrap() > 0, "{d}");
    expect_failure(
        &env,
        &["events", "--interval", "0s", "ev1"],
        "greater than 0",
    );
    let log = env.scratch.path().join("events.log");
    let mut stream = env
        .cmd(&["events", "--interval", "200ms", "ev1"])
        .stdout(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let text = || std::fs::read_to_string(&log).unwrap_or_default();
    // Generous deadlines: the VM lane runs this under software emulation.
    wait_for("two stats lines", Duration::from_secs(60), || {
        text().matches(r#"{"type":"stats","id":"ev1""#).count() >= 2
    });
    // Control: nothing was killed yet.
    assert!(!text().contains("oom"), "{}", text());
    let hog = "b = bytearray(200 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1";
    env.run_ok(&["exec", "-d", "ev1", "python3", "-c", hog]);
    wait_for("the oom event", Duration::from_secs(60), || {
        text().lines().any(|l| l == r#"{"type":"oom","id":"ev1"}"#)
    });
    assert!(env.run(&["delete", "-f", "ev1"]).status.success());
    let until = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(st) = stream.try_wait().unwrap() {
            break st;
        }
        if Instant::now() > until {
            let _ = stream.kill();
            panic!("events did not end after delete");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success());
}

/// Raw v2 settings (`linux.resources.unified`) on a host whose controllers are
/// on v1 are an invalid configuration; on a v2 host they are not enforced yet.
/// Either way refused, and nothing is left behind.
#[test]
fn unified_settings_are_refused_for_what_the_host_is() {
    if !require_root("unified_settings_are_refused_for_what_the_host_is") {
        return;
    }
    let env = Env::new();
    let b = env.bundle("b", |v| {
        v["linux"]["resources"] = serde_json::json!({"unified": {"memory.min": "131072"}});
    });
    let why = if cgroup_v1() {
        "invalid configuration"
    } else {
        "not enforced"
    };
    expect_create_refused(&env, &b, "un1", why);
}

/// `--preserve-fds N`: the caller's descriptor 4 reaches the container's
/// process (`run`) and an exec'd one; without the flag it does not.
#[test]
fn preserved_descriptors_reach_the_process() {
    if !require_root("preserved_descriptors_reach_the_process") {
        return;
    }
    use std::os::fd::AsRawFd;
    use std::os::unix::process::CommandExt;
    let env = Env::new();
    let data = env.scratch.file("data", b"hello\n");
    let probe = "import os\ntry:\n    print(os.read(4, 100).decode().strip())\nexcept OSError as e:\n    print(e.errno)";
    // Runs a verb with `data` open on the caller's fd 4 (not close-on-exec).
    let with_fd4 = |args: &[&str]| {
        let f = std::fs::File::open(&data).unwrap();
        let raw = f.as_raw_fd();
        let mut c = env.cmd(args);
        // SAFETY: dup2 and fcntl only, between fork and exec.
        unsafe {
            c.pre_exec(move || {
                if libc::dup2(raw, 4) < 0 || libc::fcntl(4, libc::F_SETFD, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        c.output().unwrap()
    };
    let b = env.bundle("b", |v| {
        v["process"]["args"] = serde_json::json!(["python3", "-c", probe]);
    });
    let o = with_fd4(&[
        "run",
        "--preserve-fds",
        "2",
        "--bundle",
        b.to_str().unwrap(),
        "pf1",
    ]);
    assert_eq!(stdout(&o), "hello\n", "{}", stderr(&o));
    // Control: the same without the flag.
    let o = with_fd4(&["run", "--bundle", b.to_str().unwrap(), "pf2"]);
    assert_eq!(stdout(&o), format!("{}\n", libc::EBADF), "{}", stderr(&o));
    let s = env.bundle("s", |v| {
        v["process"]["args"] = serde_json::json!(["python3", "-c", "import time; time.sleep(60)"]);
    });
    env.run_ok(&["run", "-d", "--bundle", s.to_str().unwrap(), "pf3"]);
    let o = with_fd4(&["exec", "--preserve-fds=2", "pf3", "python3", "-c", probe]);
    assert_eq!(stdout(&o), "hello\n", "{}", stderr(&o));
    let o = with_fd4(&["exec", "pf3", "python3", "-c", probe]);
    assert_eq!(stdout(&o), format!("{}\n", libc::EBADF), "{}", stderr(&o));
    assert!(env.run(&["delete", "-f", "pf3"]).status.success());
}

/// `exec --cgroup [CONTROLLER:]PATH` puts the process in a group below the
/// container's (in that controller's hierarchy only, when one is named), and
/// never above it: `..` is refused, as are a missing group and an unknown
/// controller. `delete` removes such groups with the container's.
#[test]
fn exec_joins_a_sub_cgroup_below_the_containers() {
    if !require_root("exec_joins_a_sub_cgroup_below_the_containers") {
        return;
    }
    let env = Env::new();
    let tag = format!("maibox-subcg-test-{}", std::process::id());
    let b = env.bundle("b", |v| {
        v["process"]["args"] = serde_json::json!(["python3", "-c", "import time; time.sleep(60)"]);
        v["linux"]["cgroupsPath"] = format!("/{tag}/c").into();
    });
    env.run_ok(&["run", "-d", "--bundle", b.to_str().unwrap(), "sc1"]);
    let pid = env.state("sc1")["pid"].as_i64().unwrap();
    let sub = cgroup_file(pid, "memory", "sub");
    std::fs::create_dir(&sub).unwrap();
    let pidfile = env.scratch.path().join("exec.pid");
    let line_of = |p: i64| {
        let cg = std::fs::read_to_string(format!("/proc/{p}/cgroup")).unwrap();
        cg.lines()
            .find(|l| l.contains(":memory:") || (!cgroup_v1() && l.starts_with("0::")))
            .unwrap()
            .to_string()
    };
    let sleep = ["python3", "-c", "import time; time.sleep(30)"];
    let exec_in = |cg: &str| {
        let mut a = vec!["exec", "-d", "--pid-file", pidfile.to_str().unwrap()];
        a.extend(["--cgroup", cg, "sc1"]);
        a.extend(sleep);
        let o = env.run(&a);
        assert!(o.status.success(), "--cgroup {cg}: {}", stderr(&o));
        read_trim(&pidfile).parse::<i64>().unwrap()
    };
    let named = if cgroup_v1() { "memory:sub" } else { "sub" };
    let p = exec_in(named);
    assert!(
        line_of(p).ends_with(&format!("/{tag}/c/sub")),
        "{}",
        line_of(p)
    );
    // Control: `/` is the container's own group.
    let p = exec_in("/");
    assert!(line_of(p).ends_with(&format!("/{tag}/c")), "{}", line_of(p));
    for (cg, why) in [
        ("..", ".. is not a sub cgroup path"),
        ("x/../../..", "is not a sub cgroup path"),
        (
            "nonexistent",
            "nonexistent/cgroup.procs: no such file or directory",
        ),
        ("whaaat:/", "unknown controller whaaat"),
    ] {
        let mut a = vec!["exec", "--cgroup", cg, "sc1"];
        a.extend(sleep);
        let o = env.run(&a);
        assert_eq!(o.status.code(), Some(255), "--cgroup {cg}");
        assert!(stderr(&o).contains(why), "--cgroup {cg}: {}", stderr(&o));
    }
    // `delete` removes the group the container had below its own too.
    let logged = env.log_messages().len();
    env.run_ok(&["delete", "-f", "sc1"]);
    assert_eq!(env.log_messages().len(), logged, "{:?}", env.log_messages());
    assert!(!sub.exists() && !sub.parent().unwrap().exists());
    remove_cgroup_tree(&tag, &["c"]);
}

/// A call numbered above every call a profile names (one its author could not
/// know) fails with ENOSYS when the profile's default is an errno, so that a
/// program can fall back; an unnamed call below stays the default's errno, and
/// a default that kills still kills.
#[test]
fn calls_newer_than_the_profile_fail_with_enosys() {
    if !require_root("calls_newer_than_the_profile_fail_with_enosys") {
        return;
    }
    let env = Env::new();
    let probe = r#"
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
def call(*a):
    r = libc.syscall(*a); return 0 if r >= 0 else ctypes.get_errno()
print(call(250, 0, 0, 0, 0), call(1000, 0), flush=True)
"#;
    let docker: Value = serde_json::from_str(include_str!("data/docker-config.json")).unwrap();
    let run = |name: &str, default: &str| {
        let b = env.bundle(name, |v| {
            v["process"]["args"] = serde_json::json!(["python3", "-c", probe]);
            v["linux"]["seccomp"] = docker["linux"]["seccomp"].clone();
            v["linux"]["seccomp"]["defaultAction"] = default.into();
        });
        env.run(&["run", "--bundle", b.to_str().unwrap(), name])
    };
    // keyctl (250) is below the profile's highest call and not named: EPERM.
    let o = run("en1", "SCMP_ACT_ERRNO");
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), format!("{} {}\n", libc::EPERM, libc::ENOSYS));
    // Control: a killing default kills on keyctl already; and on the unknown
    // call alone (the probe's first call named instead).
    let o = run("en2", "SCMP_ACT_KILL_PROCESS");
    assert_eq!(o.status.code(), Some(128 + libc::SIGSYS), "{}", stderr(&o));
    let b = env.bundle("en3", |v| {
        v["process"]["args"] = serde_json::json!([
            "python3",
            "-c",
            "import ctypes; ctypes.CDLL(None).syscall(1000, 0); print('survived')"
        ]);
        v["linux"]["seccomp"] = docker["linux"]["seccomp"].clone();
        v["linux"]["seccomp"]["defaultAction"] = "SCMP_ACT_KILL_PROCESS".into();
    });
    let o = env.run(&["run", "--bundle", b.to_str().unwrap(), "en3"]);
    assert_eq!(o.status.code(), Some(128 + libc::SIGSYS), "{}", stderr(&o));
    assert!(!stdout(&o).contains("survived"));
}

/// A startContainer hook runs in the container under its seccomp filter: one
/// that makes a call the profile kills fails the start, saying the hook was
/// killed by SIGSYS; without the rule the same hook runs.
#[test]
fn start_container_hook_runs_under_the_containers_seccomp_filter() {
    if !require_root("start_container_hook_runs_under_the_containers_seccomp_filter") {
        return;
    }
    let env = Env::new();
    let bundle = |name: &str, kill_mkdir: bool| {
        env.bundle(name, |v| {
            v["hooks"] = serde_json::json!({"startContainer": [{
                "path": "/usr/bin/python3",
                "args": ["python3", "-c", "import os; os.mkdir('/dev/shm/hooked')"]}]});
            let mut profile = serde_json::json!({"defaultAction": "SCMP_ACT_ALLOW"});
            if kill_mkdir {
                profile["syscalls"] =
                    serde_json::json!([{"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_KILL"}]);
            }
            v["linux"]["seccomp"] = profile;
        })
    };
    let b = bundle("b", true);
    let o = env.run(&["run", "--bundle", b.to_str().unwrap(), "sh1"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("startContainer: error running hook /usr/bin/python3: killed by SIGSYS (bad system call)"),
        "{}",
        stderr(&o)
    );
    // Control: the same hook, mkdir allowed.
    let c = bundle("c", false);
    let o = env.run(&["run", "--bundle", c.to_str().unwrap(), "sh2"]);
    assert_eq!(stdout(&o), "42\n", "{}", stderr(&o));
}

/// A read-only `/dev` tmpfs still gets its mount points and device nodes (made
/// before it turns read-only), then refuses writes; the control is writable.
#[test]
fn read_only_dev_is_set_up_then_read_only() {
    if !require_root("read_only_dev_is_set_up_then_read_only") {
        return;
    }
    let env = Env::new();
    let probe = r#"
import os
line = [l for l in open('/proc/mounts') if l.split()[1] == '/dev'][0]
try:
    open('/dev/new', 'w').close(); made = 'made'
except OSError as e:
    made = e.errno
print(line.split()[3].split(',')[0], os.path.exists('/dev/pts/ptmx'), open('/dev/zero', 'rb').read(1), made)
"#;
    for ro in [true, false] {
        let b = env.bundle(&format!("d{ro}"), |v| {
            v["process"]["args"] = serde_json::json!(["python3", "-c", probe]);
            if ro {
                for m in v["mounts"].as_array_mut().unwrap() {
                    if m["destination"] == "/dev" {
                        m["options"].as_array_mut().unwrap().push("ro".into());
                    }
                }
            }
        });
        let o = env.run(&["run", "--bundle", b.to_str().unwrap(), "rd"]);
        assert!(o.status.success(), "ro {ro}: {}", stderr(&o));
        let want = if ro {
            format!("ro True b'\\x00' {}\n", libc::EROFS)
        } else {
            "rw True b'\\x00' made\n".to_string()
        };
        assert_eq!(stdout(&o), want);
    }
}

/// In a user namespace, a bind source under a directory only the host's root
/// may enter still mounts (the runtime opens it for the init, in the
/// container's mount namespace), and no descriptor of it stays open in the
/// container. A missing source fails create, naming it.
#[test]
fn user_namespace_binds_sources_its_root_cannot_reach() {
    if !require_root("user_namespace_binds_sources_its_root_cannot_reach") {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    let secret = env.scratch.path().join("secret");
    std::fs::create_dir_all(secret.join("dir")).unwrap();
    std::fs::write(secret.join("dir/foo.txt"), "hello\n").unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o700)).unwrap();
    let probe = r#"
import os
links = []
for f in os.listdir('/proc/self/fd'):
    try: links.append(os.readlink('/proc/self/fd/' + f))
    except OSError: pass
print(open('/mnt/s/foo.txt').read().strip(), any('secret' in l for l in links))
"#;
    let bundle = |name: &str, source: &Path| {
        let b = env.bundle(name, |v| {
            v["process"]["args"] = serde_json::json!(["python3", "-c", probe]);
            v["linux"]["namespaces"]
                .as_array_mut()
                .unwrap()
                .push(serde_json::json!({"type": "user"}));
            v["linux"]["uidMappings"] =
                serde_json::json!([{"containerID": 0, "hostID": 200000, "size": 65536}]);
            v["linux"]["gidMappings"] =
                serde_json::json!([{"containerID": 0, "hostID": 200000, "size": 65536}]);
            v["mounts"].as_array_mut().unwrap().push(serde_json::json!({
                "source": source, "destination": "/mnt/s", "options": ["bind"]}));
        });
        // Mount points the container's root (an unprivileged host uid) could
        // not make in the root-owned image.
        for d in ["proc", "dev", "sys", "mnt/s"] {
            let _ = std::fs::create_dir_all(b.join("rootfs").join(d));
        }
        b
    };
    let b = bundle("b", &secret.join("dir"));
    let o = env.run_ok(&["run", "--bundle", b.to_str().unwrap(), "ub1"]);
    assert_eq!(stdout(&o), "hello False\n");
    let c = bundle("c", &secret.join("nosuch"));
    expect_create_refused(&env, &c, "ub2", "nosuch for /mnt/s");
}

/// `linux.resources.blockIO`: a read throttle on a disk of this host and the
/// weight land in the container's blkio (v1) or io (v2) group, and `update
/// --blkio-weight` changes it; a weight of 0 (Docker's) is no setting, and
/// leafWeight (CFQ only) is refused.
#[test]
fn block_io_limits_are_written_to_the_containers_group() {
    if !require_root("block_io_limits_are_written_to_the_containers_group") {
        return;
    }
    // A whole disk of this host (one with a queue, not a partition).
    let Some(disk) = std::fs::read_dir("/sys/block")
        .unwrap()
        .flatten()
        .find(|e| e.path().join("queue/scheduler").exists() && e.path().join("dev").exists())
        .map(|e| read_trim(&e.path().join("dev")))
    else {
        eprintln!("block_io_limits_are_written_to_the_containers_group: no block device, skipped");
        return;
    };
    let (major, minor) = disk.split_once(':').unwrap();
    let (major, minor): (i64, i64) = (major.parse().unwrap(), minor.parse().unwrap());
    let env = Env::new();
    let b = env.bundle("b", |v| {
        v["process"]["args"] = serde_json::json!(["python3", "-c", "import time; time.sleep(60)"]);
        v["linux"]["resources"] = serde_json::json!({"blockIO": {
            "throttleReadBpsDevice": [{"major": major, "minor": minor, "rate": 1048576}]}});
    });
    env.run_ok(&["run", "-d", "--bundle", b.to_str().unwrap(), "bi1"]);
    let pid = env.state("bi1")["pid"].as_i64().unwrap();
    let v1 = cgroup_v1();
    let (throttle, weight) = if v1 {
        (
            cgroup_file(pid, "blkio", "blkio.throttle.read_bps_device"),
            cgroup_file(pid, "blkio", "blkio.bfq.weight"),
        )
    } else {
        (
            cgroup_file(pid, "io", "io.max"),
            cgroup_file(pid, "io", "io.bfq.weight"),
        )
    };
    let t = read_trim(&throttle);
    let want = if v1 {
        format!("{disk} 1048576")
    } else {
        format!("{disk} rbps=1048576")
    };
    assert!(t.contains(&want), "{t}");
    if weight.exists() {
        env.run_ok(&["update", "--blkio-weight", "444", "bi1"]);
        assert!(read_trim(&weight).contains("444"), "{}", read_trim(&weight));
    }
    assert!(env.run(&["delete", "-f", "bi1"]).status.success());
    // Docker's `{"weight": 0}` (every container it runs) asks for nothing.
    let z = env.bundle("z", |v| {
        v["linux"]["resources"] = serde_json::json!({"blockIO": {"weight": 0}});
    });
    let o = env.run(&["run", "--bundle", z.to_str().unwrap(), "bi3"]);
    assert_eq!(stdout(&o), "42\n", "{}", stderr(&o));
    let leaf = env.bundle("l", |v| {
        v["linux"]["resources"] = serde_json::json!({"blockIO": {"leafWeight": 300}});
    });
    expect_create_refused(&env, &leaf, "bi2", "leafWeight");
}

/// Serves one seccomp listener sent to `conn`: answers every mkdir with
/// ENOMSG until its process is gone. Returns the state that came with it and
/// how many calls it answered.
fn serve_one_listener(conn: std::os::unix::net::UnixStream) -> (Value, usize) {
    use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
    let mut buf = vec![0u8; 65536];
    let mut space = nix::cmsg_space!([std::os::fd::RawFd; 1]);
    let mut iov = [std::io::IoSliceMut::new(&mut buf)];
    let msg = nix::sys::socket::recvmsg::<()>(
        conn.as_raw_fd(),
        &mut iov,
        Some(&mut space),
        nix::sys::socket::MsgFlags::empty(),
    )
    .unwrap();
    let mut fd = None;
    for c in msg.cmsgs().unwrap() {
        if let nix::sys::socket::ControlMessageOwned::ScmRights(fds) = c {
            fd = Some(unsafe { OwnedFd::from_raw_fd(fds[0]) });
        }
    }
    let n = msg.bytes;
    let state: Value = serde_json::from_slice(&buf[..n]).unwrap();
    let fd = fd.expect("no listener fd");
    let mut answered = 0;
    loop {
        use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
        let mut p = [PollFd::new(fd.as_fd(), PollFlags::POLLIN)];
        poll(&mut p, PollTimeout::from(30_000u16)).unwrap();
        if !p[0]
            .revents()
            .unwrap_or(PollFlags::empty())
            .contains(PollFlags::POLLIN)
        {
            break;
        }
        match maibox::confine::notify::receive(fd.as_fd()) {
            Ok(Some(call)) => {
                maibox::confine::notify::fail_call(fd.as_fd(), call.id, libc::ENOMSG).unwrap();
                answered += 1;
            }
            Ok(None) => continue,
            Err(_) => break,
        }
    }
    (state, answered)
}

/// A process `exec` starts in a container whose profile notifies gets its own
/// listener to the agent (state "running", its own pid), and the agent answers
/// its calls; the control container, without the notify entry, makes the
/// directory.
#[test]
fn seccomp_notify_reaches_the_agent_from_exec() {
    if !require_root("seccomp_notify_reaches_the_agent_from_exec") {
        return;
    }
    let env = Env::new();
    let sock = env.scratch.path().join("agent.sock");
    let listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let agent = std::thread::spawn(move || {
        let served: Vec<_> = (0..2)
            .map(|_| {
                let (conn, _) = listener.accept().unwrap();
                std::thread::spawn(move || serve_one_listener(conn))
            })
            .collect();
        served
            .into_iter()
            .map(|t| t.join().unwrap())
            .collect::<Vec<_>>()
    });
    let bundle = |name: &str, notify: bool| {
        env.bundle(name, |v| {
            v["root"]["readonly"] = false.into();
            v["process"]["args"] =
                serde_json::json!(["python3", "-c", "import time; time.sleep(60)"]);
            if notify {
                v["linux"]["seccomp"] = serde_json::json!({
                    "defaultAction": "SCMP_ACT_ALLOW",
                    "listenerPath": sock.display().to_string(),
                    "syscalls": [{"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_NOTIFY"}]});
            }
        })
    };
    let probe = [
        "python3",
        "-c",
        "import os\ntry:\n    os.mkdir('/made'); print('made')\nexcept OSError as e:\n    print(e.errno)",
    ];
    let b = bundle("b", true);
    env.run_ok(&["run", "-d", "--bundle", b.to_str().unwrap(), "nx1"]);
    let init = env.state("nx1")["pid"].as_i64().unwrap();
    let mut args = vec!["exec", "nx1"];
    args.extend(probe);
    let o = env.run_ok(&args);
    assert_eq!(stdout(&o), format!("{}\n", libc::ENOMSG));
    // Control: the same exec in a container whose profile does not notify.
    let c = bundle("c", false);
    env.run_ok(&["run", "-d", "--bundle", c.to_str().unwrap(), "nx2"]);
    let mut args = vec!["exec", "nx2"];
    args.extend(probe);
    assert_eq!(stdout(&env.run(&args)), "made\n");
    assert!(env.run(&["delete", "-f", "nx1"]).status.success());
    assert!(env.run(&["delete", "-f", "nx2"]).status.success());
    let served = agent.join().unwrap();
    let (created, _) = &served[0];
    assert_eq!(created["state"]["status"], "creating");
    assert_eq!(created["pid"], init);
    let (exec, answered) = &served[1];
    assert_eq!(exec["state"]["status"], "running");
    assert_eq!(exec["state"]["id"], "nx1");
    assert_ne!(exec["pid"], init);
    assert!(*answered >= 1);
}

/// A foreground `run` killed with SIGKILL takes its container with it, even one
/// whose process runs as a non-root user (the identity switch clears the parent
/// death signal, which is set again). The control: a detached container outlives
/// the `create` that made it, as with runc.
#[test]
fn foreground_container_dies_with_its_runtime() {
    if !require_root("foreground_container_dies_with_its_runtime") {
        return;
    }
    use nix::sys::signal::{kill, Signal};
    use std::io::Read;
    let env = Env::new();
    let token = format!("maibox-oci-orphan-{}", std::process::id());
    let code = "import sys, time; print('ready', flush=True); time.sleep(60)";
    let b = env.bundle("b", |v| {
        v["process"]["args"] = serde_json::json!(["python3", "-c", code, token]);
        v["process"]["user"] = serde_json::json!({"uid": 1000, "gid": 1000});
    });
    let bs = b.to_str().unwrap();
    let mut child = env
        .cmd(&["run", "--bundle", bs, "fg"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut ready = [0u8; 6];
    child.stdout.take().unwrap().read_exact(&mut ready).unwrap();
    assert_eq!(&ready, b"ready\n");
    assert!(
        !processes_with(&token).is_empty(),
        "control: the probe sees it"
    );
    kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        Signal::SIGKILL,
    )
    .unwrap();
    child.wait().unwrap();
    wait_for(
        "the container to die with its runtime",
        Duration::from_secs(30),
        || processes_with(&token).is_empty(),
    );
    // Control: created and started detached, it runs on after the runtime exits.
    env.run_ok(&["create", "--bundle", bs, "bg"]);
    env.run_ok(&["start", "bg"]);
    wait_for(
        "the detached container to start",
        Duration::from_secs(30),
        || !processes_with(&token).is_empty(),
    );
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        !processes_with(&token).is_empty(),
        "the detached container runs on"
    );
    env.run_ok(&["delete", "--force", "bg"]);
    let _ = env.run(&["delete", "--force", "fg"]);
}

/// One probe of the strict runtime's hardening, as JSON.
const STRICT_PROBE: &str = r#"
import json, os, resource, shutil, subprocess, sys, threading
def read(p):
    try:
        return open(p).read()
    except OSError as e:
        return "error %d" % e.errno
res = {"nofile": resource.getrlimit(resource.RLIMIT_NOFILE)}
res["boot_id"] = read("/proc/sys/kernel/random/boot_id")
res["cmdline"] = read("/proc/cmdline")
res["tmp_inodes"] = os.statvfs("/tmp").f_files
try:
    os.mknod("/tmp/null", 0o600 | __import__("stat").S_IFCHR, os.makedev(1, 3))
    res["mknod"] = "ok"
except OSError as e:
    res["mknod"] = "error %d" % e.errno
shutil.copy(sys.executable, "/tmp/py")
os.chmod("/tmp/py", 0o755)
try:
    r = subprocess.run(["/tmp/py", "-c", "print(7)"], capture_output=True, text=True)
    res["exec_tmp"] = r.stdout.strip()
except OSError as e:
    res["exec_tmp"] = "error %d" % e.errno
out = []
t = [threading.Thread(target=lambda i=i: out.append(sum(range(i * 1000)))) for i in range(8)]
[x.start() for x in t]; [x.join() for x in t]
res["threads"] = len(out)
res["exec_usr"] = subprocess.run([sys.executable, "-c", "print(6)"], capture_output=True, text=True).stdout.strip()
print(json.dumps(res))
"#;

/// A call only an exploit makes, by number: killed under `--hardened`.
const EXPLOIT_CALL: &str = r#"
import ctypes, platform, sys
nr = {"x86_64": {"bpf": 321, "userfaultfd": 323, "io_uring_setup": 425},
      "aarch64": {"bpf": 280, "userfaultfd": 282, "io_uring_setup": 425}}[platform.machine()][sys.argv[1]]
libc = ctypes.CDLL(None, use_errno=True)
r = libc.syscall(nr, 0, 0, 0)
print("returned", r, ctypes.get_errno())
"#;

/// `maibox --hardened`, the strict runtime: an ordinary program runs as under the
/// plain runtime, while the untrusted level's hardening applies on top of the
/// bundle: exploit-only calls kill the process, nothing written to a tmpfs runs and
/// no device node can be made (Landlock),
/// the open-file limit is capped, the boot id is the container's own, the kernel
/// command line is masked, and a tmpfs with a size has an inode bound. Controls: the same bundle
/// under the plain runtime.
#[test]
fn hardened_runtime_adds_the_untrusted_levels_hardening() {
    if !require_root("hardened_runtime_adds_the_untrusted_levels_hardening") {
        return;
    }
    let env = Env::new();
    let with_tmp = |v: &mut Value| {
        v["mounts"].as_array_mut().unwrap().push(serde_json::json!({
            "destination": "/tmp", "type": "tmpfs", "source": "tmpfs",
            "options": ["nosuid", "nodev", "mode=1777", "size=16m"]}));
    };
    let b = env.bundle("b", |v| {
        with_tmp(v);
        v["process"]["args"] = serde_json::json!(["python3", "-c", STRICT_PROBE]);
        // The kernel lets a process with CAP_MKNOD make a device node on a nodev
        // tmpfs; Landlock does not.
        for set in ["bounding", "effective", "permitted"] {
            v["process"]["capabilities"][set]
                .as_array_mut()
                .unwrap()
                .push("CAP_MKNOD".into());
        }
    });
    let bs = b.to_str().unwrap();
    let probe = |args: &[&str]| -> Value {
        let o = env.run(args);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(&o)))
    };
    let strict = probe(&["--hardened", "run", "--bundle", bs, "s1"]);
    let plain = probe(&["run", "--bundle", bs, "p1"]);
    assert_eq!(strict["threads"], 8, "{strict}");
    assert_eq!(strict["exec_usr"], "6", "{strict}");
    assert_eq!(
        strict["exec_tmp"],
        format!("error {}", libc::EACCES),
        "{strict}"
    );
    assert_eq!(plain["exec_tmp"], "7", "control: {plain}");
    assert_eq!(
        strict["mknod"],
        format!("error {}", libc::EACCES),
        "{strict}"
    );
    assert_eq!(plain["mknod"], "ok", "control: {plain}");
    assert_eq!(strict["nofile"], serde_json::json!([256, 256]), "{strict}");
    assert_eq!(plain["nofile"], serde_json::json!([1024, 1024]), "control");
    let host_boot_id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap();
    // Its own: a random id in the kernel's format, not the host's, not empty.
    let own = strict["boot_id"].as_str().unwrap_or_default();
    assert!(
        own.len() == 37 && own.matches('-').count() == 4 && own != host_boot_id,
        "{strict}"
    );
    assert_eq!(plain["boot_id"], host_boot_id.as_str(), "control");
    assert_eq!(strict["cmdline"], "", "{strict}");
    assert_ne!(plain["cmdline"], "", "control");
    assert_eq!(strict["tmp_inodes"], (16u64 << 20) / 4096, "{strict}");
    assert!(
        plain["tmp_inodes"].as_u64().unwrap() > 16 << 20 >> 12,
        "control: {plain}"
    );
    for call in ["bpf", "userfaultfd", "io_uring_setup"] {
        let b = env.bundle(&format!("k-{call}"), |v| {
            v["process"]["args"] = serde_json::json!(["python3", "-c", EXPLOIT_CALL, call]);
        });
        let bs = b.to_str().unwrap();
        let o = env.run(&["--hardened", "run", "--bundle", bs, &format!("ks-{call}")]);
        assert_eq!(
            o.status.code(),
            Some(128 + libc::SIGSYS),
            "{call}: {}",
            stdout(&o)
        );
        assert!(
            stderr(&o).contains("killed by SIGSYS") && stderr(&o).contains("--hardened"),
            "{call}: {}",
            stderr(&o)
        );
        let o = env.run(&["run", "--bundle", bs, &format!("kp-{call}")]);
        assert!(
            stdout(&o).starts_with("returned"),
            "control {call}: {}",
            stderr(&o)
        );
        assert!(
            !stderr(&o).contains("SIGSYS"),
            "control {call}: {}",
            stderr(&o)
        );
    }
    assert!(env.ids().is_empty(), "{:?}", env.ids());
}

/// `exec` in a container the strict runtime made hardens its process as the init,
/// without `--hardened` given again (Docker repeats it; a caller may not): the
/// open-file cap, Landlock (nothing written to /tmp runs) and the seccomp kills.
/// Control: the same `exec`s in a container of the plain runtime.
#[test]
fn hardened_container_hardens_its_execs() {
    if !require_root("hardened_container_hardens_its_execs") {
        return;
    }
    let env = Env::new();
    let b = env.bundle("b", |v| {
        v["mounts"].as_array_mut().unwrap().push(serde_json::json!({
            "destination": "/tmp", "type": "tmpfs", "source": "tmpfs",
            "options": ["nosuid", "nodev", "mode=1777", "size=16m"]}));
        v["process"]["args"] = serde_json::json!(["python3", "-c", "import time; time.sleep(60)"]);
    });
    let bs = b.to_str().unwrap();
    env.run_ok(&["--hardened", "run", "-d", "--bundle", bs, "strict"]);
    env.run_ok(&["run", "-d", "--bundle", bs, "plain"]);
    let probe = r#"
import json, os, resource, shutil, subprocess, sys
shutil.copy(sys.executable, "/tmp/py-%d" % os.getpid())
os.chmod("/tmp/py-%d" % os.getpid(), 0o755)
try:
    r = subprocess.run(["/tmp/py-%d" % os.getpid(), "-c", "print(7)"], capture_output=True, text=True)
    x = r.stdout.strip()
except OSError as e:
    x = "error %d" % e.errno
print(json.dumps({"nofile": resource.getrlimit(resource.RLIMIT_NOFILE), "exec_tmp": x}))
"#;
    let exec = |id: &str, args: &[&str]| {
        let mut a = vec!["exec", id, "python3", "-c"];
        a.extend_from_slice(args);
        env.run(&a)
    };
    let parse = |o: &Output| -> Value {
        assert!(o.status.success(), "{}", stderr(o));
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(o)))
    };
    let strict = parse(&exec("strict", &[probe]));
    let plain = parse(&exec("plain", &[probe]));
    assert_eq!(strict["nofile"], serde_json::json!([256, 256]), "{strict}");
    assert_eq!(plain["nofile"], serde_json::json!([1024, 1024]), "control");
    assert_eq!(
        strict["exec_tmp"],
        format!("error {}", libc::EACCES),
        "{strict}"
    );
    assert_eq!(plain["exec_tmp"], "7", "control: {plain}");
    let o = exec("strict", &[EXPLOIT_CALL, "io_uring_setup"]);
    assert_eq!(o.status.code(), Some(128 + libc::SIGSYS), "{}", stdout(&o));
    let o = exec("plain", &[EXPLOIT_CALL, "io_uring_setup"]);
    assert!(
        stdout(&o).starts_with("returned"),
        "control: {}",
        stderr(&o)
    );
    env.run_ok(&["delete", "--force", "strict"]);
    env.run_ok(&["delete", "--force", "plain"]);
    assert!(env.ids().is_empty(), "{:?}", env.ids());
}

/// `--hardened` is never ignored: outside the OCI verbs (where it would mean
/// nothing) it is refused. Control: the same run without it.
#[test]
fn hardened_is_refused_outside_the_oci_verbs() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("s.py");
    std::fs::write(&script, "print(1)\n").unwrap();
    let s = script.to_str().unwrap();
    for args in [&["--hardened", "exec", s][..], &["assess", "--hardened", s]] {
        let o = Command::new(binary()).args(args).output().unwrap();
        assert!(!o.status.success(), "{args:?}");
        assert!(
            stderr(&o).contains("--hardened is for the OCI runtime verbs"),
            "{}",
            stderr(&o)
        );
    }
    let o = Command::new(binary()).args(["assess", s]).output().unwrap();
    assert!(o.status.success(), "control: {}", stderr(&o));
}

/// `maibox spec`'s template is runc 1.1's: a cgroup namespace only on a unified
/// (cgroup2) host. On a v1 or hybrid host the container's init and a process
/// `exec` adds see their group's own path in `/proc/self/cgroup` (runc's bats
/// "runc exec (cgroup v1+hybrid joins correct cgroup)"), not `/`.
#[test]
fn spec_template_has_a_cgroup_namespace_only_on_unified_hosts() {
    if !require_root("spec_template_has_a_cgroup_namespace_only_on_unified_hosts") {
        return;
    }
    let env = Env::new();
    let unified = Path::new("/sys/fs/cgroup/cgroup.controllers").exists();
    let tag = format!("maibox-specns-test-{}", std::process::id());
    let b = env.bundle("b", |v| {
        let ns = v["linux"]["namespaces"].as_array().unwrap();
        let has_cgroupns = ns.iter().any(|n| n["type"] == "cgroup");
        assert_eq!(has_cgroupns, unified, "template namespaces: {ns:?}");
        v["process"]["args"] = serde_json::json!(["python3", "-c", "import time; time.sleep(60)"]);
        v["linux"]["cgroupsPath"] = format!("/{tag}/c").into();
    });
    env.run_ok(&["run", "-d", "--bundle", b.to_str().unwrap(), "sn1"]);
    let probe = "print(open('/proc/1/cgroup').read() + open('/proc/self/cgroup').read(), end='')";
    let o = env.run(&["exec", "sn1", "python3", "-c", probe]);
    env.run_ok(&["delete", "-f", "sn1"]);
    remove_cgroup_tree(&tag, &["c"]);
    assert!(o.status.success(), "exec: {}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out
        .lines()
        .filter(|l| l.contains(":memory:") || l.starts_with("0::"))
        .map(|l| l.rsplit(':').next().unwrap())
        .collect();
    assert!(!lines.is_empty() && lines.len().is_multiple_of(2), "{out}");
    let want = if unified {
        "/".to_string()
    } else {
        format!("/{tag}/c")
    };
    for l in &lines {
        assert_eq!(*l, want, "{out}");
    }
}

/// A `cgroupsPath` that already holds another container's processes is joined
/// with runc 1.1's warning (bats "runc run/create should warn about a non-empty
/// cgroup"); deleting one of the containers leaves the others and their group.
#[test]
fn non_empty_cgroup_is_joined_with_a_warning() {
    if !require_root("non_empty_cgroup_is_joined_with_a_warning") {
        return;
    }
    let env = Env::new();
    let tag = format!("maibox-shared-test-{}", std::process::id());
    let b = env.bundle("b", |v| {
        v["process"]["args"] = serde_json::json!(["python3", "-c", "import time; time.sleep(60)"]);
        v["linux"]["cgroupsPath"] = format!("/{tag}/c").into();
    });
    let bundle = b.to_str().unwrap();
    let warning = "container's cgroup is not empty";
    // Control: the first one, in a fresh group, has no warning.
    let o = env.run_ok(&["run", "-d", "--bundle", bundle, "sh1"]);
    assert!(!stderr(&o).contains(warning), "{}", stderr(&o));
    let o = env.run_ok(&["run", "-d", "--bundle", bundle, "sh2"]);
    assert!(
        stderr(&o).contains(&format!("{warning}: 1 process(es) found")),
        "{}",
        stderr(&o)
    );
    let o = env.run_ok(&["create", "--bundle", bundle, "sh3"]);
    assert!(
        stderr(&o).contains(&format!("{warning}: 2 process(es) found")),
        "{}",
        stderr(&o)
    );
    let log = std::fs::read_to_string(env.log()).unwrap();
    assert!(log.contains("\"level\":\"warning\""), "{log}");
    let pid = |id: &str| env.state(id)["pid"].as_i64().unwrap();
    let group = cgroup_file(pid("sh1"), "memory", "cgroup.procs");
    assert_eq!(group, cgroup_file(pid("sh2"), "memory", "cgroup.procs"));
    assert_eq!(group, cgroup_file(pid("sh3"), "memory", "cgroup.procs"));
    // Deleting one (created, then running) kills nothing of the others'.
    env.run_ok(&["delete", "-f", "sh3"]);
    env.run_ok(&["delete", "-f", "sh2"]);
    assert_eq!(env.state("sh1")["status"], "running");
    assert_eq!(read_trim(&group), pid("sh1").to_string());
    // Nor of a container under another state root, which maibox cannot list:
    // its processes are in another pid namespace.
    let other = Env::new();
    other.run_ok(&["run", "-d", "--bundle", bundle, "sh4"]);
    env.run_ok(&["delete", "-f", "sh1"]);
    assert_eq!(other.state("sh4")["status"], "running");
    assert_eq!(read_trim(&group), other.state("sh4")["pid"].to_string());
    other.run_ok(&["delete", "-f", "sh4"]);
    // The last one out removes the group.
    assert!(!group.exists(), "{} left behind", group.display());
    remove_cgroup_tree(&tag, &["c"]);
}

/// `update --memory-swap -1` lifts the swap limit as runc does (v1:
/// memory.memsw.limit_in_bytes -1, where the host accounts swap; v2:
/// memory.swap.max "max"); a memory limit given alone leaves it, as runc's.
#[test]
fn update_memory_swap_minus_one_lifts_the_swap_limit() {
    if !require_root("update_memory_swap_minus_one_lifts_the_swap_limit") {
        return;
    }
    let env = Env::new();
    let tag = format!("maibox-swap-test-{}", std::process::id());
    let present = swap_accounted();
    let b = env.bundle("b", |v| {
        v["process"]["args"] = serde_json::json!(["python3", "-c", "import time; time.sleep(60)"]);
        v["linux"]["cgroupsPath"] = format!("/{tag}/c").into();
        // No swap to start with (an amount needs swap accounting).
        let memory = if present {
            serde_json::json!({"limit": 64 << 20, "swap": 64 << 20})
        } else {
            serde_json::json!({"limit": 64 << 20})
        };
        v["linux"]["resources"] = serde_json::json!({ "memory": memory });
    });
    env.run_ok(&["run", "-d", "--bundle", b.to_str().unwrap(), "sw1"]);
    let pid = env.state("sw1")["pid"].as_i64().unwrap();
    let v1 = cgroup_v1();
    let (file, withheld, lifted) = if v1 {
        let root = read_trim(Path::new("/sys/fs/cgroup/memory/memory.limit_in_bytes"));
        ("memory.memsw.limit_in_bytes", (64 << 20).to_string(), root)
    } else {
        ("memory.swap.max", "0".to_string(), "max".to_string())
    };
    let swap = cgroup_file(pid, "memory", file);
    if present {
        assert_eq!(read_trim(&swap), withheld, "at create");
    }
    let o = env.run_ok(&["update", "--memory-swap", "-1", "sw1"]);
    assert!(!stderr(&o).contains("not applied"), "{}", stderr(&o));
    if present {
        assert_eq!(read_trim(&swap), lifted);
        env.run_ok(&["update", "--memory", "32M", "sw1"]);
        assert_eq!(read_trim(&swap), lifted);
        // Both at once: the limit, and swap lifted.
        env.run_ok(&["update", "--memory", "48M", "--memory-swap", "-1", "sw1"]);
        assert_eq!(read_trim(&swap), lifted);
        let limit = if v1 {
            "memory.limit_in_bytes"
        } else {
            "memory.max"
        };
        assert_eq!(
            read_trim(&cgroup_file(pid, "memory", limit)),
            (48 << 20).to_string()
        );
    } else {
        eprintln!("no swap accounting on this host: only the exit status checked");
    }
    env.run_ok(&["delete", "-f", "sw1"]);
    remove_cgroup_tree(&tag, &["c"]);
}

/// The memory+swap files of the container whose init is `pid`: the limit's and
/// swap's (v1: memory.memsw.limit_in_bytes; v2: memory.swap.max), and how each
/// reads "unlimited".
fn memory_files(pid: i64) -> (PathBuf, PathBuf, String) {
    if cgroup_v1() {
        let root = read_trim(Path::new("/sys/fs/cgroup/memory/memory.limit_in_bytes"));
        (
            cgroup_file(pid, "memory", "memory.limit_in_bytes"),
            cgroup_file(pid, "memory", "memory.memsw.limit_in_bytes"),
            root,
        )
    } else {
        (
            cgroup_file(pid, "memory", "memory.max"),
            cgroup_file(pid, "memory", "memory.swap.max"),
            "max".into(),
        )
    }
}

/// The plain runtime writes the spec's swap and `update --memory-swap` as runc
/// 1.1 does: memory+swap on v1, swap = memory+swap − memory on v2, in the order
/// the kernel takes them when both shrink or both grow past each other (runc's
/// `setMemoryAndSwap` cases); a memory+swap below the memory limit is refused
/// before anything is written, at create and at update.
#[test]
fn swap_is_written_as_runc_writes_it() {
    if !require_root("swap_is_written_as_runc_writes_it") {
        return;
    }
    if !swap_accounted() {
        eprintln!("skipped: no swap accounting on this host");
        return;
    }
    let env = Env::new();
    let tag = format!("maibox-swapset-test-{}", std::process::id());
    let v1 = cgroup_v1();
    const M: i64 = 1 << 20;
    let bundle = |name: &str, swap: i64| {
        env.bundle(name, |v| {
            v["process"]["args"] =
                serde_json::json!(["python3", "-c", "import time; time.sleep(60)"]);
            v["linux"]["cgroupsPath"] = format!("/{tag}/{name}").into();
            v["linux"]["resources"] =
                serde_json::json!({"memory": {"limit": 64 * M, "swap": swap}});
        })
    };
    let b = bundle("c", 96 * M);
    env.run_ok(&["run", "-d", "--bundle", b.to_str().unwrap(), "swc1"]);
    let pid = env.state("swc1")["pid"].as_i64().unwrap();
    let (limit, swap, unlimited) = memory_files(pid);
    // v1 memory+swap as given; v2 only the swap part.
    let swap_of = |memory: i64, total: i64| if v1 { total } else { total - memory }.to_string();
    let both = || (read_trim(&limit), read_trim(&swap));
    assert_eq!(
        both(),
        ((64 * M).to_string(), swap_of(64 * M, 96 * M)),
        "at create"
    );
    // Both lower than the memory limit was: the limit goes first.
    env.run_ok(&["update", "--memory", "30M", "--memory-swap", "50M", "swc1"]);
    assert_eq!(both(), ((30 * M).to_string(), swap_of(30 * M, 50 * M)));
    // The limit above the old memory+swap: memory+swap goes first.
    env.run_ok(&["update", "--memory", "60M", "--memory-swap", "80M", "swc1"]);
    assert_eq!(both(), ((60 * M).to_string(), swap_of(60 * M, 80 * M)));
    if v1 {
        // bats' `--memory-swap 96468992` alone: memory+swap against the limit in place.
        env.run_ok(&["update", "--memory-swap", "96468992", "swc1"]);
        assert_eq!(read_trim(&swap), "96468992");
        // Alone and below that limit: refused in maibox's words, not the kernel's.
        expect_failure(
            &env,
            &["update", "--memory-swap", "10M", "swc1"],
            "below the memory limit",
        );
        assert_eq!(read_trim(&swap), "96468992");
    } else {
        // v2 needs the limit to convert it, as runc does.
        expect_failure(
            &env,
            &["update", "--memory-swap", "96468992", "swc1"],
            "--memory",
        );
    }
    // Below the limit: refused, and nothing written.
    let before = both();
    expect_failure(
        &env,
        &["update", "--memory", "70M", "--memory-swap", "65M", "swc1"],
        "at least the memory limit",
    );
    assert_eq!(both(), before);
    // The limit lifted without a swap: swap lifted with it (runc).
    env.run_ok(&["update", "--memory", "-1", "swc1"]);
    assert_eq!(both(), (unlimited.clone(), unlimited.clone()));
    env.run_ok(&["delete", "-f", "swc1"]);
    // At create too: a bundle whose memory+swap is below its limit is refused.
    expect_create_refused(
        &env,
        &bundle("below", 32 * M),
        "swc2",
        "at least memory.limit",
    );
    remove_cgroup_tree(&tag, &["c", "below"]);
}

/// `maibox --hardened` gives no swap whatever the bundle or `update` asks, and
/// says so: memory+swap follows the memory limit (v2: swap.max 0), at create
/// and at update, `-1` included. Control: the same bundle under the plain
/// runtime gets the swap it asks for.
#[test]
fn hardened_container_gets_no_swap() {
    if !require_root("hardened_container_gets_no_swap") {
        return;
    }
    if !swap_accounted() {
        eprintln!("skipped: no swap accounting on this host");
        return;
    }
    let env = Env::new();
    let tag = format!("maibox-noswap-test-{}", std::process::id());
    let v1 = cgroup_v1();
    const M: i64 = 1 << 20;
    let b = env.bundle("b", |v| {
        v["process"]["args"] = serde_json::json!(["python3", "-c", "import time; time.sleep(60)"]);
        v["linux"]["cgroupsPath"] = format!("/{tag}/c").into();
        v["linux"]["resources"] = serde_json::json!({"memory": {"limit": 64 * M, "swap": 128 * M}});
    });
    let bs = b.to_str().unwrap();
    let none = |memory: i64| if v1 { memory.to_string() } else { "0".into() };
    // Control first: the plain runtime applies the bundle's swap.
    env.run_ok(&["run", "-d", "--bundle", bs, "nsw0"]);
    let (_, swap, _) = memory_files(env.state("nsw0")["pid"].as_i64().unwrap());
    let asked = if v1 { 128 * M } else { 64 * M };
    assert_eq!(read_trim(&swap), asked.to_string(), "control");
    env.run_ok(&["delete", "-f", "nsw0"]);
    let o = env.run_ok(&["--hardened", "run", "-d", "--bundle", bs, "nsw1"]);
    assert!(stderr(&o).contains("not applied"), "{}", stderr(&o));
    let (limit, swap, _) = memory_files(env.state("nsw1")["pid"].as_i64().unwrap());
    assert_eq!(read_trim(&swap), none(64 * M), "at create");
    // Not even "unlimited", with or without --hardened repeated.
    for args in [&["--hardened", "update"][..], &["update"]] {
        let mut a = args.to_vec();
        a.extend(["--memory-swap", "-1", "nsw1"]);
        let o = env.run_ok(&a);
        assert!(stderr(&o).contains("no swap"), "{a:?}: {}", stderr(&o));
        assert_eq!(read_trim(&swap), none(64 * M), "{a:?}");
    }
    // A new limit: memory+swap follows it, whatever swap is asked.
    let o = env.run_ok(&["update", "--memory", "32M", "--memory-swap", "96M", "nsw1"]);
    assert!(stderr(&o).contains("not applied"), "{}", stderr(&o));
    assert_eq!(read_trim(&limit), (32 * M).to_string());
    assert_eq!(read_trim(&swap), none(32 * M));
    env.run_ok(&["delete", "-f", "nsw1"]);
    remove_cgroup_tree(&tag, &["c"]);
}

/// Every OCI verb answers `-h` and `--help` in runc's layout (`NAME:`, then the
/// verb and its summary); an unknown topic is a clear error. `checkpoint` and
/// `restore` exist, and fail with "not supported by maibox" and a non-zero
/// status (what containerd shows the user), leaving a running container as it
/// was and creating nothing.
#[test]
fn help_for_every_verb_and_checkpoint_restore_refused() {
    if !require_root("help_for_every_verb_and_checkpoint_restore_refused") {
        return;
    }
    let verbs = [
        "checkpoint",
        "create",
        "delete",
        "events",
        "features",
        "kill",
        "list",
        "pause",
        "ps",
        "restore",
        "resume",
        "run",
        "spec",
        "start",
        "state",
        "update",
    ];
    for verb in verbs {
        for flag in ["-h", "--help"] {
            let o = Command::new(binary()).args([verb, flag]).output().unwrap();
            assert!(o.status.success(), "{verb} {flag}: {}", stderr(&o));
            let out = stdout(&o);
            let lines: Vec<&str> = out.lines().collect();
            assert_eq!(lines.first(), Some(&"NAME:"), "{verb} {flag}: {out}");
            assert!(
                lines[1].starts_with(&format!("   maibox {verb} - ")),
                "{verb} {flag}: {out}"
            );
            assert!(out.contains("\nUSAGE:\n"), "{verb} {flag}: {out}");
        }
    }
    for args in [&["foo", "-h"][..], &["help", "foo"]] {
        let o = Command::new(binary()).args(args).output().unwrap();
        assert!(!o.status.success(), "{args:?}");
        assert!(
            stderr(&o).contains("No help topic for 'foo'"),
            "{args:?}: {}",
            stderr(&o)
        );
    }
    let env = Env::new();
    let b = env.bundle("b", |v| {
        v["process"]["args"] = serde_json::json!(["python3", "-c", "import time; time.sleep(60)"]);
    });
    env.run_ok(&["run", "-d", "--bundle", b.to_str().unwrap(), "cr1"]);
    let images = env.scratch.path().join("images");
    // As containerd's runc shim calls them.
    let o = env.run(&[
        "checkpoint",
        "--image-path",
        images.to_str().unwrap(),
        "--work-path",
        images.to_str().unwrap(),
        "--leave-running",
        "cr1",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let refusal = "checkpoint of container cr1 is not supported by maibox";
    assert!(stderr(&o).contains(refusal), "{}", stderr(&o));
    assert!(env.log_messages().iter().any(|m| m.contains(refusal)));
    assert_eq!(env.state("cr1")["status"], "running");
    assert!(!images.exists());
    let o = env.run(&[
        "restore",
        "--bundle",
        b.to_str().unwrap(),
        "--image-path",
        images.to_str().unwrap(),
        "--detach",
        "cp2",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("restore of container cp2 is not supported by maibox"),
        "{}",
        stderr(&o)
    );
    env.run_ok(&["delete", "-f", "cr1"]);
    assert!(env.ids().is_empty(), "{:?}", env.ids());
}

/// Kubernetes' `shareProcessNamespace: true`: a pod's containers join the pid
/// namespace of its first one by path (as they join its network, ipc and uts
/// namespaces). The joined container sees the first one's process in /proc,
/// and the first sees it; deleting the joined one leaves the first running.
/// Joining a mount namespace stays refused, and a bundle without one too,
/// each with an error that says why.
#[test]
fn pid_namespace_is_shared_by_path_as_in_a_pod() {
    if !require_root("pid_namespace_is_shared_by_path_as_in_a_pod") {
        return;
    }
    let env = Env::new();
    let sleeper = |marker: &str| {
        serde_json::json!([
            "python3",
            "-c",
            format!("import time; time.sleep(60) # {marker}")
        ])
    };
    let a = env.bundle("a", |v| v["process"]["args"] = sleeper("pod-first"));
    env.run_ok(&["run", "-d", "--bundle", a.to_str().unwrap(), "spa"]);
    let pid = env.state("spa")["pid"].as_i64().unwrap();
    let ns = |p: i64, kind: &str| std::fs::read_link(format!("/proc/{p}/ns/{kind}")).unwrap();
    let join = |v: &mut Value, kinds: &[&str]| {
        let list = v["linux"]["namespaces"].as_array_mut().unwrap();
        list.retain(|n| !kinds.contains(&n["type"].as_str().unwrap()));
        for k in kinds {
            let file = if *k == "network" { "net" } else { k };
            list.push(serde_json::json!({"type": k, "path": format!("/proc/{pid}/ns/{file}")}));
        }
        v["hostname"] = "".into();
    };
    // What the joined container sees: every command line in its /proc, and its pid.
    let probe = r#"
import os
cmds = []
for p in os.listdir('/proc'):
    if p.isdigit() and int(p) != os.getpid():
        try:
            cmds.append(open(f'/proc/{p}/cmdline').read().replace('\0', ' '))
        except OSError:
            pass
print(os.getpid(), any('pod-first' in c for c in cmds))
"#;
    let b = env.bundle("b", |v| {
        v["process"]["args"] = serde_json::json!(["python3", "-c", probe]);
        join(v, &["pid", "network", "ipc", "uts"]);
    });
    let o = env.run_ok(&["run", "--bundle", b.to_str().unwrap(), "spb"]);
    let out = stdout(&o);
    let (own_pid, sees) = out.trim().split_once(' ').unwrap();
    assert_eq!(sees, "True", "{out} {}", stderr(&o));
    assert_ne!(own_pid, "1", "the first container's init is 1: {out}");
    // Control: with a pid namespace of its own, the first one's process is not there.
    let own = env.bundle("c", |v| {
        v["process"]["args"] = serde_json::json!(["python3", "-c", probe]);
        join(v, &["network", "ipc", "uts"]);
    });
    let o = env.run_ok(&["run", "--bundle", own.to_str().unwrap(), "spc"]);
    assert_eq!(stdout(&o), "1 False\n", "{}", stderr(&o));
    // A long-lived joined container: in the pod's namespace, seen from the first,
    // and deleted without touching it.
    let d = env.bundle("d", |v| {
        v["process"]["args"] = sleeper("pod-second");
        join(v, &["pid"]);
    });
    env.run_ok(&["run", "-d", "--bundle", d.to_str().unwrap(), "spd"]);
    let second = env.state("spd")["pid"].as_i64().unwrap();
    assert_eq!(ns(second, "pid"), ns(pid, "pid"));
    assert_ne!(ns(second, "mnt"), ns(pid, "mnt"));
    // The runtime's own children stay in the host's pid namespace.
    let me = std::process::id() as i64;
    assert_ne!(ns(me, "pid"), ns(pid, "pid"));
    let o = env.run(&[
        "exec",
        "spa",
        "python3",
        "-c",
        "import os; print(any('pod-second' in open(f'/proc/{p}/cmdline').read() for p in os.listdir('/proc') if p.isdigit()))",
    ]);
    assert_eq!(stdout(&o), "True\n", "{}", stderr(&o));
    env.run_ok(&["delete", "-f", "spd"]);
    assert_eq!(env.state("spa")["status"], "running");
    // Refused, each saying why: a mount namespace by path, no mount namespace,
    // and a file of the wrong type for a pid namespace.
    let mnt = env.bundle("m", |v| join(v, &["mount"]));
    expect_create_refused_keeping(
        &env,
        &mnt,
        "spm",
        "joining an existing mount namespace is refused",
    );
    let nomnt = env.bundle("n", |v| {
        let list = v["linux"]["namespaces"].as_array_mut().unwrap();
        list.retain(|n| n["type"] != "mount");
    });
    expect_create_refused_keeping(&env, &nomnt, "spn", "no mount namespace");
    let wrong = env.bundle("w", |v| {
        let list = v["linux"]["namespaces"].as_array_mut().unwrap();
        list.retain(|n| n["type"] != "pid");
        list.push(serde_json::json!({"type": "pid", "path": format!("/proc/{pid}/ns/net")}));
    });
    expect_create_refused_keeping(&env, &wrong, "spw", "cannot join the pid namespace");
    env.run_ok(&["delete", "-f", "spa"]);
    assert!(env.ids().is_empty(), "{:?}", env.ids());
}

/// `create` of `bundle` fails with `needle` in the log and leaves no state for `id`
/// (other containers may run).
fn expect_create_refused_keeping(env: &Env, bundle: &Path, id: &str, needle: &str) {
    expect_failure(
        env,
        &["create", "--bundle", bundle.to_str().unwrap(), id],
        needle,
    );
    assert!(!env.ids().contains(&id.to_string()), "{id} left behind");
}

/// The strict runtime for a caller that is not root (runc's rootless mode: `spec
/// --rootless`, a state directory of its own): its hardening holds as for root
/// (Landlock, the open-file cap, the own boot id, the masked command line, the
/// seccomp kills). Controls: the same bundle under the plain runtime, as the same
/// user.
#[test]
fn hardened_runtime_holds_for_a_non_root_caller() {
    if !require_root("hardened_runtime_holds_for_a_non_root_caller") {
        return;
    }
    use std::os::unix::process::CommandExt;
    let scratch = Scratch::new();
    let dir = scratch.path();
    let b = dir.join("b");
    std::fs::create_dir_all(&b).unwrap();
    image(&b.join("rootfs"));
    // The directories, never the files: the image's files are hard links to the
    // host's.
    for d in [dir, &b, &b.join("rootfs")] {
        std::os::unix::fs::chown(d, Some(USER_ID), Some(USER_ID)).unwrap();
    }
    let user = |args: &[&str]| {
        Command::new(binary())
            .args(["--root", dir.join("state").to_str().unwrap()])
            .args(args)
            .uid(USER_ID)
            .gid(USER_ID)
            .env("HOME", "/nonexistent")
            .env("XDG_RUNTIME_DIR", dir)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    };
    let o = user(&["spec", "--rootless", "--bundle", b.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let edit = |args: Value| {
        let mut v: Value =
            serde_json::from_slice(&std::fs::read(b.join("config.json")).unwrap()).unwrap();
        v["process"]["args"] = args;
        v["process"]["terminal"] = false.into();
        if !v["mounts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["destination"] == "/tmp")
        {
            v["mounts"].as_array_mut().unwrap().push(serde_json::json!({
                "destination": "/tmp", "type": "tmpfs", "source": "tmpfs",
                "options": ["nosuid", "nodev", "mode=1777", "size=16m"]}));
        }
        std::fs::write(b.join("config.json"), serde_json::to_vec(&v).unwrap()).unwrap();
    };
    edit(serde_json::json!(["python3", "-c", STRICT_PROBE]));
    let bs = b.to_str().unwrap();
    let probe = |args: &[&str]| -> Value {
        let o = user(args);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(&o)))
    };
    let strict = probe(&["--hardened", "run", "--bundle", bs, "nr1"]);
    let plain = probe(&["run", "--bundle", bs, "nr2"]);
    assert_eq!(strict["exec_usr"], "6", "{strict}");
    assert_eq!(strict["threads"], 8, "{strict}");
    assert_eq!(
        strict["exec_tmp"],
        format!("error {}", libc::EACCES),
        "{strict}"
    );
    assert_eq!(plain["exec_tmp"], "7", "control: {plain}");
    assert_eq!(strict["nofile"], serde_json::json!([256, 256]), "{strict}");
    assert_ne!(plain["nofile"], strict["nofile"], "control: {plain}");
    let host_boot_id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap();
    let own = strict["boot_id"].as_str().unwrap_or_default();
    assert!(own.len() == 37 && own != host_boot_id, "{strict}");
    assert_eq!(plain["boot_id"], host_boot_id.as_str(), "control");
    assert_eq!(strict["cmdline"], "", "{strict}");
    assert_ne!(plain["cmdline"], "", "control");
    assert_eq!(strict["tmp_inodes"], (16u64 << 20) / 4096, "{strict}");
    edit(serde_json::json!([
        "python3",
        "-c",
        EXPLOIT_CALL,
        "io_uring_setup"
    ]));
    let o = user(&["--hardened", "run", "--bundle", bs, "nr3"]);
    assert_eq!(o.status.code(), Some(128 + libc::SIGSYS), "{}", stderr(&o));
    let o = user(&["run", "--bundle", bs, "nr4"]);
    assert!(
        stdout(&o).starts_with("returned"),
        "control: {}",
        stderr(&o)
    );
    // A limit this caller has no cgroup for is refused, never dropped.
    let mut v: Value =
        serde_json::from_slice(&std::fs::read(b.join("config.json")).unwrap()).unwrap();
    v["linux"]["resources"] = serde_json::json!({"memory": {"limit": 64 << 20}});
    std::fs::write(b.join("config.json"), serde_json::to_vec(&v).unwrap()).unwrap();
    let o = user(&["run", "--bundle", bs, "nr5"]);
    assert!(
        !o.status.success() && stderr(&o).contains("cgroup"),
        "{}",
        stderr(&o)
    );
    assert!(stdout(&o).is_empty(), "{}", stdout(&o));
}
