//! The engine's security properties, each observed from real Python code inside the
//! sandbox, as root and rootless, with a control showing the probe detects the
//! property when the layer is absent (the same probe on the host).

mod common;
use common::*;
use serde_json::Value;

const IDS: &str = r#"
import os, json
st = open('/proc/self/status').read()
f = dict(l.split(':\t', 1) for l in st.splitlines() if ':\t' in l)
print(json.dumps({"uid": os.getuid(), "gid": os.getgid(), "euid": os.geteuid(),
  "groups": os.getgroups(), "capeff": f["CapEff"].strip(), "capbnd": f["CapBnd"].strip(),
  "capprm": f["CapPrm"].strip(), "nnp": f["NoNewPrivs"].strip()}))
"#;

#[test]
fn runs_as_sandbox_user_without_capabilities() {
    for who in identities("runs_as_sandbox_user_without_capabilities") {
        let v = probe(who, &[], IDS);
        assert_eq!(v["uid"], 1000, "{who:?}: {v}");
        assert_eq!(v["gid"], 1000, "{who:?}: {v}");
        assert_eq!(v["euid"], 1000, "{who:?}: {v}");
        assert_eq!(v["capeff"], "0000000000000000", "{who:?}: {v}");
        assert_eq!(v["capbnd"], "0000000000000000", "{who:?}: {v}");
        assert_eq!(v["capprm"], "0000000000000000", "{who:?}: {v}");
        assert_eq!(v["nnp"], "1", "{who:?}: {v}");
    }
    if is_root() {
        // Control: the probe sees capabilities and no no_new_privs where they exist.
        let h = host_probe(IDS);
        assert_ne!(h["capeff"], "0000000000000000", "{h}");
        assert_ne!(h["capbnd"], "0000000000000000", "{h}");
        assert_eq!(h["nnp"], "0", "{h}");
        assert_eq!(h["uid"], 0);
    }
}

#[test]
fn root_supplementary_groups_are_dropped() {
    if !require_root("root_supplementary_groups_are_dropped") {
        return;
    }
    let v = probe(As::Caller, &[], IDS);
    assert_eq!(v["groups"], serde_json::json!([]), "{v}");
}

const PROCS: &str = r#"
import os, json
print(json.dumps(sorted(int(p) for p in os.listdir('/proc') if p.isdigit())))
"#;

#[test]
fn pid_namespace_hides_host_processes() {
    for who in identities("pid_namespace_hides_host_processes") {
        let v = probe(who, &[], PROCS);
        let pids: Vec<i64> = serde_json::from_value(v).unwrap();
        // init (1) and the payload (2); nothing of the host or the supervisor.
        assert_eq!(pids, vec![1, 2], "{who:?}");
    }
    let h = host_probe(PROCS);
    let me = std::process::id() as i64;
    assert!(
        h.as_array().unwrap().iter().any(|p| p == me),
        "control: host /proc lists the test"
    );
}

const NET: &str = r#"
import socket, json, sys
port = int(sys.argv[1])
# /proc/net/dev, not if_nameindex(): that one needs a netlink socket, which seccomp refuses.
res = {"ifaces": [l.split(":")[0].strip() for l in open("/proc/net/dev").read().splitlines()[2:]]}
try:
    s = socket.create_connection(("127.0.0.1", port), timeout=2); s.close(); res["connect"] = "ok"
except OSError as e:
    res["connect"] = e.__class__.__name__
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(1)
c = socket.create_connection(srv.getsockname(), timeout=2); c.close()
res["loopback_inside"] = "ok"
print(json.dumps(res))
"#;

#[test]
fn network_namespace_has_only_loopback_and_no_host() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port().to_string();
    let s = Scratch::new();
    let script = s.file("net.py", NET.as_bytes());
    for who in identities("network_namespace_has_only_loopback_and_no_host") {
        let o = run(who, &["exec", script.to_str().unwrap(), "--", &port]);
        let v: Value = serde_json::from_str(stdout(&o).trim())
            .unwrap_or_else(|e| panic!("{e}: {}", stderr(&o)));
        assert_eq!(v["ifaces"], serde_json::json!(["lo"]), "{who:?}: {v}");
        assert_ne!(
            v["connect"], "ok",
            "{who:?}: host loopback server reachable: {v}"
        );
        assert_eq!(v["loopback_inside"], "ok", "{who:?}: {v}");
    }
    // Control: from the host the same probe reaches the server.
    let o = std::process::Command::new("/usr/bin/python3")
        .args([script.to_str().unwrap(), &port])
        .output()
        .unwrap();
    let v: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["connect"], "ok", "control: {v}");
    assert!(v["ifaces"].as_array().unwrap().len() > 1 || v["connect"] == "ok");
}

const SEE: &str = r#"
import os, json, sys
p = sys.argv[1]
try:
    open(p).read(); r = "read"
except OSError as e:
    r = e.__class__.__name__
print(json.dumps({"result": r, "root": sorted(os.listdir('/'))}))
"#;

#[test]
fn host_files_outside_the_view_are_invisible() {
    // Not under /tmp: prove the view hides host paths, not just a covered /tmp.
    let dir = tempfile::Builder::new()
        .prefix("maibox-secret-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let secret = dir.path().join("secret.txt");
    std::fs::write(&secret, "top secret").unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o644)).unwrap();
    let s = Scratch::new();
    let script = s.file("see.py", SEE.as_bytes());
    for who in identities("host_files_outside_the_view_are_invisible") {
        let o = run(
            who,
            &[
                "exec",
                script.to_str().unwrap(),
                "--",
                secret.to_str().unwrap(),
            ],
        );
        let v: Value = serde_json::from_str(stdout(&o).trim())
            .unwrap_or_else(|e| panic!("{e}: {}", stderr(&o)));
        assert_eq!(v["result"], "FileNotFoundError", "{who:?}: {v}");
        let root: Vec<String> = serde_json::from_value(v["root"].clone()).unwrap();
        for hidden in [
            "root", "home", "var", "work", "opt", "srv", "mnt", "boot", "sys",
        ] {
            assert!(
                !root.contains(&hidden.to_string()),
                "{who:?}: /{hidden} visible: {root:?}"
            );
        }
    }
    let o = std::process::Command::new("/usr/bin/python3")
        .args([script.to_str().unwrap(), secret.to_str().unwrap()])
        .output()
        .unwrap();
    let v: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["result"], "read", "control: {v}");
}

#[test]
fn pyenv_style_prefix_exposes_only_the_prefix() {
    if !require_root("pyenv_style_prefix_exposes_only_the_prefix") {
        return;
    }
    // A python living outside /usr, like pyenv's under /root: a copy of the
    // interpreter in a private prefix whose parent holds a secret.
    let top = tempfile::Builder::new()
        .prefix("maibox-prefix-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let prefix = top.path().join("versions/3");
    std::fs::create_dir_all(prefix.join("bin")).unwrap();
    std::fs::create_dir_all(prefix.join("lib")).unwrap();
    std::fs::write(top.path().join("secret.txt"), "secret").unwrap();
    let py = prefix.join("bin/python3");
    std::fs::copy("/usr/bin/python3", &py).unwrap();
    let code = format!(
        "import os, json, sys; print(json.dumps({{'exe': sys.executable, 'secret': os.path.exists({:?}), 'prefix': os.path.isdir({:?})}}))",
        top.path().join("secret.txt").to_str().unwrap(),
        prefix.to_str().unwrap()
    );
    let v = probe(As::Caller, &["--python", py.to_str().unwrap()], &code);
    assert_eq!(v["secret"], false, "{v}");
    assert_eq!(v["prefix"], true, "{v}");
    assert!(
        v["exe"]
            .as_str()
            .unwrap()
            .ends_with("versions/3/bin/python3"),
        "{v}"
    );
}

#[test]
fn proc_masks_are_absent_on_the_host() {
    // Control for the /proc masks: the host's own mount table has none of them.
    let h = host_probe(
        r#"
import json
mounts = [l.split()[4] for l in open("/proc/self/mountinfo")]
print(json.dumps([p for p in ["/proc/keys", "/proc/timer_list"] if p in mounts]))
"#,
    );
    assert_eq!(h, serde_json::json!([]));
}

const IDENTITY: &str = r#"
import json
def read(p):
    try:
        return open(p, "rb").read().decode(errors="replace")
    except OSError as e:
        return "error: %s" % e.__class__.__name__
print(json.dumps({k: read(p) for k, p in [
    ("boot_id", "/proc/sys/kernel/random/boot_id"), ("cmdline", "/proc/cmdline"),
    ("init_cmdline", "/proc/1/cmdline"), ("init_comm", "/proc/1/comm"),
    ("mountinfo", "/proc/self/mountinfo")]}))
"#;

/// What names the host stays outside: the boot id is the sandbox's own (a fresh
/// one each run), the kernel's command line is empty, and init shows a neutral
/// command line and name, not the supervisor's. The control: with the /proc masks
/// switched off, the probe reads the host's boot id and command line, and the
/// supervisor's command line as init's.
#[test]
fn host_identity_stays_outside() {
    let host = host_probe(IDENTITY);
    let host_boot_id = host["boot_id"].as_str().unwrap().to_string();
    for who in identities("host_identity_stays_outside") {
        let a = probe(who, &[], IDENTITY);
        let b = probe(who, &[], IDENTITY);
        let id = a["boot_id"].as_str().unwrap();
        assert_ne!(id, host_boot_id, "{who:?}: the host's boot id");
        assert_ne!(
            id,
            b["boot_id"].as_str().unwrap(),
            "{who:?}: shared by two runs"
        );
        assert_eq!(id.len(), 37, "{who:?}: not a boot id: {id:?}");
        assert_eq!(a["cmdline"], "", "{who:?}: {}", a["cmdline"]);
        assert_eq!(a["init_cmdline"], "maibox-init\u{0}", "{who:?}");
        assert_eq!(a["init_comm"], "maibox-init\n", "{who:?}");
        let mountinfo = a["mountinfo"].as_str().unwrap();
        assert!(!mountinfo.contains("/tmp/root"), "{who:?}: {mountinfo}");

        let c = probe(who, &["--unsafe-disable-layer", "proc-masks"], IDENTITY);
        assert_eq!(c["boot_id"], host["boot_id"], "{who:?}: control");
        assert_eq!(c["cmdline"], host["cmdline"], "{who:?}: control");
        let init = c["init_cmdline"].as_str().unwrap();
        assert!(
            init.contains("exec") && init.contains(binary().to_str().unwrap()),
            "{who:?}: control: {init:?}"
        );
    }
}

const SUBMOUNTS: &str = r#"
import json, os, sys
print(json.dumps({
    "dropped": os.path.exists(sys.argv[1] + "/MARKER"),
    "kept": os.path.exists("/usr/local/MARKER"),
    "mounts": [l.split()[4] for l in open("/proc/self/mountinfo")],
}))
"#;

/// Runs SUBMOUNTS in a private mount namespace of the test's where a tmpfs covers
/// `dir` (a submount of `/usr` the view does not need) and `/usr/local` (one it
/// keeps), each with a MARKER file: in maibox as `who`, or on the host (`None`).
fn with_usr_submounts(dir: &str, who: Option<As>) -> serde_json::Value {
    let mut script = format!(
        "set -e; for d in {dir} /usr/local; do mount -t tmpfs -o size=1m none $d; touch $d/MARKER; done; "
    );
    script += match who {
        None => "exec /usr/bin/python3 -c \"$2\" \"$3\"",
        Some(As::Caller) => "exec \"$1\" exec -c \"$2\" -- \"$3\"",
        Some(As::User) => {
            "exec setpriv --reuid 4242 --regid 4242 --clear-groups \"$1\" exec -c \"$2\" -- \"$3\""
        }
    };
    let o = std::process::Command::new("unshare")
        .args([
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            &script,
            "sh",
        ])
        .arg(binary())
        .args([SUBMOUNTS, dir])
        .env("MAIBOX_AUDIT_DIR", audit_dir(who.unwrap_or(As::Caller)))
        .output()
        .unwrap();
    let out = stdout(&o);
    serde_json::from_str(out.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e}: {out} {}", stderr(&o)))
}

/// As root, the host directories the view binds come without their submounts
/// (detached copies of their own mounts), but those the interpreter needs
/// (/usr/local): nothing of the host's other mounts under /usr, nor their paths,
/// reaches the sandbox. Controls: the host sees both submounts; a rootless run,
/// whose binds must stay recursive (the documented residue), sees both too.
#[test]
fn host_submounts_stay_outside() {
    if !require_root("host_submounts_stay_outside") {
        return;
    }
    let dir = ["/usr/share/doc", "/usr/src", "/usr/games", "/usr/include"]
        .into_iter()
        .find(|d| std::path::Path::new(d).is_dir())
        .expect("a directory under /usr");
    let host = with_usr_submounts(dir, None);
    assert_eq!(
        (host["dropped"].clone(), host["kept"].clone()),
        (true.into(), true.into()),
        "control: {host}"
    );
    let v = with_usr_submounts(dir, Some(As::Caller));
    assert_eq!(v["dropped"], false, "{v}");
    assert_eq!(v["kept"], true, "{v}");
    let mounts: Vec<String> = serde_json::from_value(v["mounts"].clone()).unwrap();
    assert!(!mounts.iter().any(|m| m == dir), "{mounts:?}");
    let v = with_usr_submounts(dir, Some(As::User));
    assert_eq!(
        (v["dropped"].clone(), v["kept"].clone()),
        (true.into(), true.into()),
        "rootless: {v}"
    );
}

const FS: &str = r#"
import os, json
res = {}
res["usr_ro"] = bool(os.statvfs('/usr').f_flag & os.ST_RDONLY)
try:
    open('/usr/maibox-probe', 'w'); res["usr_write"] = "ok"
except OSError as e:
    res["usr_write"] = e.__class__.__name__ + ":" + str(e.errno)
name = '/tmp/maibox-probe-' + os.environ.get('TOKEN', 'x')
res["tmp_existed"] = os.path.exists(name)
with open(name, 'w') as f: f.write('hi')
res["tmp_write"] = open(name).read()
try:
    with open('/sandbox/out.txt', 'w') as f: f.write('x')
    res["beside_script"] = "ok"
except OSError as e:
    res["beside_script"] = e.__class__.__name__
try:
    open('/sandbox/main.py', 'a').write('x'); res["script_write"] = "ok"
except OSError as e:
    res["script_write"] = e.__class__.__name__
res["root_ro"] = bool(os.statvfs('/').f_flag & os.ST_RDONLY)
print(json.dumps(res))
"#;

#[test]
fn filesystem_view_is_read_only_and_throw_away() {
    for who in identities("filesystem_view_is_read_only_and_throw_away") {
        let s = Scratch::new();
        let script = s.file("fs.py", FS.as_bytes());
        for trust in ["untrusted", "trusted"] {
            let o = run(who, &["exec", "--trust", trust, script.to_str().unwrap()]);
            let v: Value = serde_json::from_str(stdout(&o).trim())
                .unwrap_or_else(|e| panic!("{e}: {}", stderr(&o)));
            assert_eq!(v["usr_ro"], true, "{who:?} {trust}: {v}");
            assert!(
                v["usr_write"].as_str().unwrap().starts_with("OSError:30")
                    || v["usr_write"]
                        .as_str()
                        .unwrap()
                        .starts_with("PermissionError"),
                "{who:?} {trust}: {v}"
            );
            assert_eq!(v["tmp_write"], "hi");
            // Each run starts from a fresh /tmp.
            assert_eq!(v["tmp_existed"], false, "{who:?} {trust}: {v}");
            assert_ne!(v["script_write"], "ok", "{who:?} {trust}: {v}");
            if trust == "untrusted" {
                assert_eq!(v["root_ro"], true, "{v}");
                assert_ne!(v["beside_script"], "ok", "{v}");
            } else {
                assert_eq!(v["beside_script"], "ok", "{v}");
            }
            // Nothing the code wrote reached the host.
            assert!(!s.path().join("out.txt").exists());
            assert!(!std::path::Path::new("/tmp/maibox-probe-x").exists());
        }
    }
    // Control: on the host /usr is writable (not a read-only mount).
    let h = host_probe(
        "import os, json; print(json.dumps(bool(os.statvfs('/usr').f_flag & os.ST_RDONLY)))",
    );
    assert_eq!(h, false);
}

#[test]
fn background_processes_do_not_survive_the_run() {
    let token = format!("maibox-daemon-{}", std::process::id());
    let code = format!(
        r#"
import os, time, sys
# The pipe is close-on-exec: its end reads EOF once the daemon has exec'd (and its
# parent exited), however slow the machine.
r, w = os.pipe()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv('/usr/bin/python3', ['python3', '-c', 'import time; time.sleep(60)', {token:?}])
    os._exit(0)
os.close(w)
os.read(r, 1)
print('parent done')
"#
    );
    for who in identities("background_processes_do_not_survive_the_run") {
        let o = run(who, &["exec", "-c", &code]);
        assert!(o.status.success(), "{}", stderr(&o));
        // exec returns without waiting for the sandbox's init to finish exiting: a
        // daemon killed with it may take a moment to go; one that survived sleeps 60 s.
        let t0 = std::time::Instant::now();
        while !processes_with(&token).is_empty()
            && t0.elapsed() < std::time::Duration::from_secs(20)
        {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert!(
            processes_with(&token).is_empty(),
            "{who:?}: a daemon survived"
        );
    }
    // Control: the same code run on the host leaves the daemon behind.
    let st = std::process::Command::new("/usr/bin/python3")
        .args(["-c", &code])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(st.success());
    let left = processes_with(&token);
    assert!(
        !left.is_empty(),
        "control: the probe did not leave a daemon"
    );
    for pid in left {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

#[test]
fn timeout_kills_and_is_reported() {
    for who in identities("timeout_kills_and_is_reported") {
        let t0 = std::time::Instant::now();
        let o = run(
            who,
            &[
                "exec",
                "--json",
                "--timeout",
                "1",
                "-c",
                "import time\nwhile True: time.sleep(1)",
            ],
        );
        // The loop never ends by itself: any bound shows the kill; a generous one
        // leaves room for a loaded machine.
        assert!(t0.elapsed().as_secs_f64() < 20.0, "{:?}", t0.elapsed());
        assert_eq!(o.status.code(), Some(124), "{}", stderr(&o));
        let r = report(&o);
        assert_eq!(r["violations"][0]["kind"], "timeout", "{r}");
        assert_eq!(r["exit_code"], 124);
        assert!(stderr(&o).contains("timeout"));
    }
}

#[test]
fn output_flood_is_cut_at_the_cap() {
    for who in identities("output_flood_is_cut_at_the_cap") {
        let o = run(
            who,
            &[
                "exec",
                "--json",
                "--output-limit",
                "1MiB",
                "-c",
                "import sys\nsys.stdout.write('x' * (100 << 20))",
            ],
        );
        let r = report(&o);
        assert_eq!(r["output"]["truncated"], true, "{r}");
        assert_eq!(r["output"]["stdout_bytes"], 1 << 20, "{r}");
        assert_eq!(r["violations"][0]["kind"], "output", "{r}");
        let out = stdout(&o);
        assert!(out.contains("[maibox: output truncated"), "no marker");
        assert!(
            out.len() < (1 << 20) + 4096,
            "stdout holds {} bytes",
            out.len()
        );
    }
    // Control: under the cap nothing is cut.
    let o = run(
        As::Caller,
        &[
            "exec",
            "--json",
            "--output-limit",
            "1MiB",
            "-c",
            "print('x' * 1000)",
        ],
    );
    let r = report(&o);
    assert_eq!(r["output"]["truncated"], false);
    assert_eq!(r["output"]["stdout_bytes"], 1001);
}

#[test]
fn exit_codes_and_signals_propagate() {
    for who in identities("exit_codes_and_signals_propagate") {
        let o = run(who, &["exec", "-c", "import sys; sys.exit(7)"]);
        assert_eq!(o.status.code(), Some(7));
        let o = run(
            who,
            &[
                "exec",
                "--json",
                "-c",
                "import os, signal; os.kill(os.getpid(), signal.SIGTERM)",
            ],
        );
        assert_eq!(o.status.code(), Some(128 + 15));
        let r = report(&o);
        assert_eq!(r["ending"]["signaled"]["name"], "SIGTERM", "{r}");
        let o = run(who, &["exec", "-c", "raise SystemExit('boom')"]);
        assert_eq!(o.status.code(), Some(1));
        assert!(stderr(&o).contains("boom"));
    }
}

#[test]
fn json_report_carries_the_documented_fields() {
    let o = run(
        As::Caller,
        &[
            "exec",
            "--json",
            "--trust",
            "unknown",
            "-c",
            "print('hello')",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).starts_with("hello\n"));
    let r = report(&o);
    for key in [
        "run_id",
        "trust",
        "exit_code",
        "ending",
        "violations",
        "usage",
        "output",
        "limits",
        "layers",
        "interpreter",
        "setup_ms",
    ] {
        assert!(r.get(key).is_some(), "missing {key}: {r}");
    }
    assert_eq!(r["trust"], "unknown");
    assert_eq!(r["ending"]["exited"]["code"], 0);
    assert_eq!(r["limits"]["timeout"], 60.0);
    assert!(r["usage"]["wall_time_s"].as_f64().unwrap() > 0.0);
    assert!(
        r["usage"]["cpu_user_s"].as_f64().unwrap() + r["usage"]["cpu_system_s"].as_f64().unwrap()
            > 0.0
    );
    assert!(r["usage"]["peak_rss_bytes"].as_u64().unwrap() > 1 << 20);
    assert_eq!(r["layers"]["user_ns"], true);
    assert_eq!(r["output"]["stdout_bytes"], 6);
}

#[test]
fn script_arguments_and_stdin_reach_the_code() {
    let s = Scratch::new();
    let script = s.file(
        "args.py",
        b"import sys\nprint(sys.argv[1:], sys.stdin.read().strip())\n",
    );
    let o = run_stdin(
        As::Caller,
        &["exec", script.to_str().unwrap(), "--", "a", "b c"],
        b"from stdin\n",
    );
    assert_eq!(stdout(&o), "['a', 'b c'] from stdin\n", "{}", stderr(&o));
    // Code read from stdin.
    let o = run_stdin(As::Caller, &["exec", "-"], b"print(6 * 7)\n");
    assert_eq!(stdout(&o), "42\n", "{}", stderr(&o));
}

const MISC: &str = r#"
import os, json, socket
res = {"hostname": socket.gethostname()}
mounts = [l.split()[4] for l in open("/proc/self/mountinfo")]
res["masked"] = [p for p in ["/proc/keys", "/proc/timer_list", "/proc/kcore", "/proc/sysrq-trigger"] if p in mounts]
res["keys"] = len(open("/proc/keys", "rb").read(4096))
try:
    open("/proc/sys/kernel/hostname", "w").write("x"); res["proc_sys"] = "ok"
except OSError as e:
    res["proc_sys"] = e.__class__.__name__
try:
    open("/proc/1/exe", "rb"); res["init_exe"] = "ok"
except OSError as e:
    res["init_exe"] = e.__class__.__name__
res["sid_is_pid"] = os.getsid(0) == os.getpid() or os.getsid(0) == 1
try:
    os.open("/dev/tty", os.O_RDWR); res["tty"] = "ok"
except OSError as e:
    res["tty"] = e.__class__.__name__
res["fds"] = sorted(int(x) for x in os.listdir("/proc/self/fd"))
res["env"] = sorted(os.environ)
print(json.dumps(res))
"#;

#[test]
fn proc_is_masked_and_the_session_has_no_terminal() {
    for who in identities("proc_is_masked_and_the_session_has_no_terminal") {
        let v = probe(who, &[], MISC);
        assert_eq!(v["hostname"], "maibox", "{v}");
        let masked: Vec<String> = serde_json::from_value(v["masked"].clone()).unwrap();
        for p in [
            "/proc/keys",
            "/proc/timer_list",
            "/proc/kcore",
            "/proc/sysrq-trigger",
        ] {
            if std::path::Path::new(p).exists() {
                assert!(
                    masked.contains(&p.to_string()),
                    "{who:?}: {p} not masked: {v}"
                );
            }
        }
        assert_eq!(v["keys"], 0, "{v}");
        assert_ne!(v["proc_sys"], "ok", "{v}");
        // CVE-2019-5736: the runtime side of the sandbox is not reachable.
        assert_ne!(v["init_exe"], "ok", "{who:?}: /proc/1/exe opened: {v}");
        // No controlling terminal: TIOCSTI-style injection has nothing to target.
        assert_eq!(v["tty"], "OSError", "{v}");
        // Only stdio (plus the listdir fd itself) is open.
        let fds: Vec<i64> = serde_json::from_value(v["fds"].clone()).unwrap();
        assert!(
            fds.len() <= 4 && fds[..3] == [0, 1, 2],
            "{who:?}: inherited fds {fds:?}"
        );
        let env: Vec<String> = serde_json::from_value(v["env"].clone()).unwrap();
        assert!(
            !env.iter()
                .any(|k| k == "CARGO" || k == "CARGO_MANIFEST_DIR"),
            "{env:?}"
        );
    }
}

/// The same probes with one layer switched off: each probe must see the difference,
/// which proves it really observes that layer.
#[test]
fn probes_detect_each_layer_when_it_is_switched_off() {
    for who in identities("probes_detect_each_layer_when_it_is_switched_off") {
        // execve as a non-root uid empties the effective set anyway: the bounding set
        // (what a setuid or file-capability binary could regain) is what the layer clears.
        let v = probe(who, &["--unsafe-disable-layer", "capabilities"], IDS);
        assert_ne!(v["capbnd"], "0000000000000000", "{who:?}: {v}");
        assert_eq!(v["nnp"], "1");
        // seccomp and Landlock need no_new_privs themselves, so all three go.
        let v = probe(
            who,
            &[
                "--unsafe-disable-layer",
                "no-new-privs",
                "--unsafe-disable-layer",
                "seccomp",
                "--unsafe-disable-layer",
                "landlock",
            ],
            IDS,
        );
        assert_eq!(v["nnp"], "0", "{who:?}: {v}");
        assert_eq!(v["capeff"], "0000000000000000");

        let v = probe(who, &["--unsafe-disable-layer", "proc-masks"], MISC);
        assert_eq!(v["masked"], serde_json::json!([]), "{who:?}: {v}");

        let v = probe(
            who,
            &[
                "--trust",
                "untrusted",
                "--unsafe-disable-layer",
                "read-only-root",
            ],
            "import os, json; print(json.dumps(bool(os.statvfs('/').f_flag & os.ST_RDONLY)))",
        );
        assert_eq!(v, false, "{who:?}");

        let o = run(
            who,
            &[
                "exec",
                "--json",
                "--unsafe-disable-layer",
                "uts-ns",
                "-c",
                "import socket; print(socket.gethostname())",
            ],
        );
        // The host's own name, whatever it is (a CI machine could be called "maibox").
        let host = nix::unistd::gethostname().unwrap();
        assert_eq!(
            stdout(&o).lines().next().unwrap_or_default(),
            host.to_string_lossy(),
            "{who:?}"
        );
        assert_eq!(report(&o)["layers"]["uts_ns"], false);
        assert!(stderr(&o).contains("layers switched off"), "{}", stderr(&o));
    }
    // Without the network namespace the host's loopback server is reachable.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port().to_string();
    let s = Scratch::new();
    let script = s.file("net.py", NET.as_bytes());
    let o = run(
        As::Caller,
        &[
            "exec",
            "--unsafe-disable-layer",
            "net-ns",
            script.to_str().unwrap(),
            "--",
            &port,
        ],
    );
    let v: Value =
        serde_json::from_str(stdout(&o).trim()).unwrap_or_else(|e| panic!("{e}: {}", stderr(&o)));
    assert_eq!(v["connect"], "ok", "{v}");
    // The host's own interfaces show up (in the VM lane the host has only `lo` too).
    let host_ifaces = host_probe(
        "import json; print(json.dumps([l.split(':')[0].strip() for l in open('/proc/net/dev').read().splitlines()[2:]]))",
    );
    assert_eq!(v["ifaces"], host_ifaces, "{v}");
}
