//! seccomp and Landlock observed from inside the real sandbox, each probe with its
//! control (the same probe with the layer switched off). The filter's full matrix of
//! denied syscalls is in src/confine/tests.rs (forked children, with controls).

mod common;
use common::*;

/// Runs `body` (Python) which must print one JSON object; `extra` are maibox flags.
fn inside(who: As, extra: &[&str], body: &str) -> serde_json::Value {
    let mut args = vec!["exec", "--json"];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["-c", body]);
    let o = run(who, &args);
    let out = stdout(&o);
    let mut lines = out.lines();
    let probe = lines.next().unwrap_or_default();
    let report: serde_json::Value = serde_json::from_str(out.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e}: {out} {}", stderr(&o)));
    serde_json::json!({
        "probe": serde_json::from_str::<serde_json::Value>(probe).unwrap_or(serde_json::Value::Null),
        "ending": report["ending"],
        "violations": report["violations"],
        "layers": report["layers"],
        "landlock": report["landlock"],
    })
}

fn syscall_probe(nr_and_args: &str) -> String {
    format!(
        "import ctypes, json\nlibc = ctypes.CDLL(None, use_errno=True)\nlibc.syscall.restype = ctypes.c_long\nr = libc.syscall({nr_and_args})\nprint(json.dumps({{'rc': r, 'errno': ctypes.get_errno()}}), flush=True)\n"
    )
}

#[test]
fn kill_listed_syscalls_are_killed_and_reported_by_name() {
    // ptrace(PTRACE_TRACEME), io_uring_setup(1, NULL), bpf(0, NULL, 0), keyctl(0)
    for (call, name) in [
        ("101, 0, 0, 0, 0", "ptrace"),
        ("425, 1, 0", "io_uring_setup"),
        ("321, 0, 0, 0", "bpf"),
        ("250, 0, 0, 0, 0", "keyctl"),
    ] {
        for who in identities("kill_listed_syscalls_are_killed_and_reported_by_name") {
            // The probe is a kernel attack by design: the assessment blocks it (MB939),
            // so it runs with an override, which the audit log records.
            let ovr = ["--override", "seccomp probe: the call must be killed"];
            let v = inside(who, &ovr, &syscall_probe(call));
            // The supervisor ends the sandbox; the call never returned to the code.
            assert_eq!(
                v["ending"]["signaled"]["name"], "SIGKILL",
                "{who:?} syscall({call}): {v}"
            );
            // with no probe line, `inside` parses the report as the probe
            assert!(v["probe"]["rc"].is_null(), "the call returned: {v}");
            assert_eq!(v["violations"][0]["kind"], "seccomp", "{v}");
            assert_eq!(v["violations"][0]["syscall"], name, "{v}");
            assert_eq!(v["violations"].as_array().unwrap().len(), 1, "{v}");
            let c = inside(
                who,
                &[ovr[0], ovr[1], "--unsafe-disable-layer", "seccomp"],
                &syscall_probe(call),
            );
            assert!(
                c["ending"]["exited"].is_object(),
                "{who:?} control syscall({call}): {c}"
            );
        }
    }
}

/// Writes the built-in config with the first `from` replaced by `to` for each pair
/// (each must occur).
fn config_with(s: &Scratch, name: &str, edits: &[(&str, &str)]) -> String {
    let mut text = maibox::config::BUILTIN.to_string();
    for (from, to) in edits {
        let next = text.replacen(from, to, 1);
        assert_ne!(next, text, "{from}");
        text = next;
    }
    s.file(name, text.as_bytes()).to_str().unwrap().to_string()
}

#[test]
fn default_kill_profile_names_the_call_outside_the_allowlist() {
    let s = Scratch::new();
    let kill = (
        "      default_action: errno  # errno",
        "      default_action: kill  # errno",
    );
    let cfg = config_with(&s, "kill.yaml", &[kill]);
    // memfd_create("x", 0) is outside the allowlist.
    for who in identities("default_kill_profile_names_the_call") {
        let v = inside(who, &["--config", &cfg], &syscall_probe("319, b'x', 0"));
        assert_eq!(v["violations"][0]["syscall"], "memfd_create", "{v}");
        assert_eq!(v["violations"][0]["nr"], 319, "{v}");
        assert!(v["probe"]["rc"].is_null(), "the call returned: {v}");
        // Calls in `deny` still only fail, even under default kill.
        let cfg_deny = config_with(
            &s,
            "deny.yaml",
            &[kill, ("deny: []", "deny: [memfd_create]")],
        );
        let d = inside(
            who,
            &["--config", &cfg_deny],
            &syscall_probe("319, b'x', 0"),
        );
        assert_eq!(d["probe"]["errno"], libc::EPERM, "{d}");
        assert_eq!(d["violations"], serde_json::json!([]), "{d}");
        // Control: the default errno profile lets the code go on.
        let c = inside(who, &[], &syscall_probe("319, b'x', 0"));
        assert_eq!(c["probe"]["errno"], libc::EPERM, "{c}");
        assert_eq!(c["violations"], serde_json::json!([]), "{c}");
    }
}

const AUDIT_PROBE: &str = r#"
import json, os, socket
errs = []
for _ in range(3):
    try:
        os.close(os.memfd_create("x")); errs.append(0)
    except OSError as e:
        errs.append(e.errno)
try:
    socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0).close(); errs.append(0)
except OSError as e:
    errs.append(e.errno)
print(json.dumps({"errs": errs}), flush=True)
"#;

fn audit_run(who: As, extra: &[&str]) -> (serde_json::Value, serde_json::Value, String) {
    let mut args = vec!["exec", "--json", "--trust", "unknown"];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["-c", AUDIT_PROBE]);
    let o = run(who, &args);
    let out = stdout(&o);
    let probe = serde_json::from_str(out.lines().next().unwrap_or_default())
        .unwrap_or(serde_json::Value::Null);
    (probe, report(&o)["seccomp"].clone(), stderr(&o))
}

#[test]
fn audit_syscalls_lists_denied_calls_by_name_and_count() {
    for who in identities("audit_syscalls_lists_denied_calls_by_name_and_count") {
        let (probe, sec, err) = audit_run(who, &["--audit-syscalls"]);
        // Same answers as without auditing: the calls fail with EPERM and the code goes on.
        let eperm = libc::EPERM;
        assert_eq!(
            probe["errs"],
            serde_json::json!([eperm, eperm, eperm, eperm]),
            "{who:?}: {probe} {err}"
        );
        assert_eq!(sec["audit_denials"], true);
        let denied = sec["denied"].as_array().unwrap();
        let count = |name: &str| {
            denied
                .iter()
                .find(|d| d["syscall"] == name)
                .map(|d| d["count"].as_u64().unwrap())
        };
        assert_eq!(count("memfd_create"), Some(3), "{sec}");
        assert_eq!(count("socket"), Some(1), "{sec}");
        assert!(err.contains("memfd_create x3"), "{err}");
        // Without the flag, nothing is routed or listed.
        let (probe, sec, _) = audit_run(who, &[]);
        assert_eq!(
            probe["errs"],
            serde_json::json!([eperm, eperm, eperm, eperm])
        );
        assert_eq!(sec["denied"], serde_json::json!([]), "{sec}");
        // Control: without seccomp the calls succeed and nothing is denied.
        let (probe, sec, _) = audit_run(
            who,
            &["--audit-syscalls", "--unsafe-disable-layer", "seccomp"],
        );
        assert_eq!(probe["errs"], serde_json::json!([0, 0, 0, 0]), "{probe}");
        assert_eq!(sec["denied"], serde_json::json!([]), "{sec}");
    }
}

#[test]
fn the_code_never_holds_the_seccomp_listener() {
    // A listener in the code's hands would let it answer its own denied calls.
    let code = r#"
import json, os
fds = {fd: os.readlink(f"/proc/self/fd/{fd}") for fd in map(int, os.listdir("/proc/self/fd"))
       if os.path.exists(f"/proc/self/fd/{fd}")}
print(json.dumps({"fds": fds}), flush=True)
"#;
    for who in identities("the_code_never_holds_the_seccomp_listener") {
        for extra in [&[][..], &["--audit-syscalls"][..]] {
            let v = inside(who, extra, code);
            let fds = v["probe"]["fds"]
                .as_object()
                .unwrap_or_else(|| panic!("{v}"));
            assert!(
                fds.keys().all(|k| ["0", "1", "2"].contains(&k.as_str())
                    || fds[k].as_str().unwrap().starts_with("/proc/")),
                "{who:?}: {v}"
            );
            assert!(
                !fds.values()
                    .any(|t| t.as_str().unwrap().contains("seccomp")),
                "{v}"
            );
        }
    }
}

#[test]
fn denied_syscalls_fail_with_eperm_where_the_kernel_would_allow_them() {
    let cases = [
        // memfd_create("x", 0): fileless code.
        ("319, b'x', 0", "memfd_create"),
        // socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE)
        ("41, 16, 3, 0", "netlink socket"),
        // personality(ADDR_NO_RANDOMIZE)
        ("135, 0x0040000", "personality"),
        // socket(AF_INET, SOCK_STREAM, IPPROTO_MPTCP): past Landlock's TCP rules.
        ("41, 2, 1, 262", "mptcp socket"),
    ];
    for who in identities("denied_syscalls_fail_with_eperm") {
        for (call, what) in cases {
            // The probe is a kernel attack by design: the assessment blocks it (MB939),
            // so it runs with an override, which the audit log records.
            let ovr = ["--override", "seccomp probe: the call must be killed"];
            let v = inside(who, &ovr, &syscall_probe(call));
            assert_eq!(v["probe"]["rc"], -1, "{who:?} {what}: {v}");
            assert_eq!(v["probe"]["errno"], libc::EPERM, "{who:?} {what}: {v}");
            let c = inside(
                who,
                &[ovr[0], ovr[1], "--unsafe-disable-layer", "seccomp"],
                &syscall_probe(call),
            );
            assert!(
                c["probe"]["rc"] != -1 || c["probe"]["errno"] != libc::EPERM,
                "{who:?} {what}: control fails the same way: {c}"
            );
        }
    }
}

#[test]
fn clone3_gets_enosys_and_x32_and_i386_are_refused() {
    for who in identities("clone3_gets_enosys_and_x32_and_i386_are_refused") {
        // clone3(NULL, 0): ENOSYS so that libc falls back to clone; unfiltered EINVAL/EFAULT.
        let v = inside(who, &[], &syscall_probe("435, 0, 0"));
        assert_eq!(v["probe"]["errno"], libc::ENOSYS, "{v}");
        let c = inside(
            who,
            &["--unsafe-disable-layer", "seccomp"],
            &syscall_probe("435, 0, 0"),
        );
        assert_ne!(c["probe"]["errno"], libc::ENOSYS, "{c}");
        // x32 getpid: nr 39 | 0x40000000. The arch check alone would let it through.
        let v = inside(who, &[], &syscall_probe("0x40000027"));
        assert_eq!(
            v["ending"]["signaled"]["name"], "SIGSYS",
            "{who:?}: x32: {v}"
        );
        let c = inside(
            who,
            &["--unsafe-disable-layer", "seccomp"],
            &syscall_probe("0x40000027"),
        );
        assert!(c["ending"]["exited"].is_object(), "{c}");
    }
}

#[test]
fn landlock_forbids_executing_what_the_code_wrote() {
    let code = r#"
import json, shutil, subprocess
shutil.copy("/usr/bin/true", "/tmp/t")
import os; os.chmod("/tmp/t", 0o755)
try:
    subprocess.run(["/tmp/t"], check=True); r = "ran"
except OSError as e:
    r = e.errno
print(json.dumps({"exec_tmp": r}))
"#;
    for who in identities("landlock_forbids_executing_what_the_code_wrote") {
        let v = inside(who, &[], code);
        assert_eq!(v["probe"]["exec_tmp"], libc::EACCES, "{who:?}: {v}");
        assert!(v["landlock"]["abi"].as_u64().unwrap() >= 1, "{v}");
        assert_eq!(v["layers"]["landlock"], true);
        let c = inside(who, &["--unsafe-disable-layer", "landlock"], code);
        assert_eq!(c["probe"]["exec_tmp"], "ran", "{who:?}: control: {c}");
        assert_eq!(c["layers"]["landlock"], false);
    }
}

#[test]
fn landlock_scopes_signals_to_the_sandboxed_code() {
    if maibox::confine::landlock_abi() < 6 {
        eprintln!("note: Landlock ABI < 6 here: signal scoping is not available, nothing to test");
        return;
    }
    // Signal 0 to init (outside the payload's Landlock domain): refused when scoped.
    let code = "import os, json\ntry:\n    os.kill(1, 0); r = 'ok'\nexcept OSError as e:\n    r = e.errno\nprint(json.dumps({'kill_init': r}))\n";
    for who in identities("landlock_scopes_signals_to_the_sandboxed_code") {
        let v = inside(who, &[], code);
        assert_eq!(v["probe"]["kill_init"], libc::EPERM, "{who:?}: {v}");
        let c = inside(who, &["--unsafe-disable-layer", "landlock"], code);
        assert_eq!(c["probe"]["kill_init"], "ok", "{who:?}: control: {c}");
    }
}

const WORKLOAD: &str = r#"
import json, re, math, decimal, datetime, sqlite3, threading, multiprocessing, subprocess
import asyncio, hashlib, zlib, tempfile, sys, os
res = {}
res["json"] = json.loads(json.dumps({"a": [1, 2]}))["a"][1]
res["re"] = re.sub(r"(\d+)", r"<\1>", "a1b22")
res["math"] = round(math.sqrt(2), 3)
res["decimal"] = str(decimal.Decimal("1.1") + decimal.Decimal("2.2"))
res["datetime"] = datetime.date(2024, 2, 29).isoformat()
db = sqlite3.connect(":memory:"); db.execute("create table t(x)"); db.execute("insert into t values (7)")
res["sqlite3"] = db.execute("select x from t").fetchone()[0]
out = []
ts = [threading.Thread(target=lambda i=i: out.append(i)) for i in range(4)]
[t.start() for t in ts]; [t.join() for t in ts]
res["threads"] = sorted(out)
def sq(x): return x * x
if __name__ == "__main__":
    with multiprocessing.get_context("fork").Pool(2) as p:
        res["multiprocessing"] = p.map(sq, [1, 2, 3])
res["subprocess"] = subprocess.run([sys.executable, "-c", "print(6*7)"], capture_output=True, text=True).stdout.strip()
async def main():
    await asyncio.sleep(0.01)
    return "async"
res["asyncio"] = asyncio.run(main())
res["hashlib"] = hashlib.sha256(b"x").hexdigest()[:8]
res["zlib"] = len(zlib.compress(b"a" * 1000)) < 100
with tempfile.NamedTemporaryFile("w+", dir="/tmp") as f:
    f.write("tmp"); f.flush(); f.seek(0); res["tempfile"] = f.read()
res["own_script"] = "WORKLOAD" in open(__file__).read() or len(open(__file__).read()) > 0
try:
    import numpy
    res["numpy"] = int(numpy.arange(5).sum())
except ImportError:
    res["numpy"] = "absent"
print(json.dumps(res))
"#;

#[test]
fn real_workloads_run_under_untrusted() {
    let s = Scratch::new();
    let script = s.file("work.py", WORKLOAD.as_bytes());
    for who in identities("real_workloads_run_under_untrusted") {
        for trust in ["untrusted", "unknown", "trusted"] {
            let o = run(who, &["exec", "--trust", trust, script.to_str().unwrap()]);
            assert!(o.status.success(), "{who:?} {trust}: {}", stderr(&o));
            let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
            assert_eq!(v["json"], 2);
            assert_eq!(v["re"], "a<1>b<22>");
            assert_eq!(v["decimal"], "3.3");
            assert_eq!(v["sqlite3"], 7);
            assert_eq!(v["threads"], serde_json::json!([0, 1, 2, 3]));
            assert_eq!(
                v["multiprocessing"],
                serde_json::json!([1, 4, 9]),
                "{who:?} {trust}: {v}"
            );
            assert_eq!(v["subprocess"], "42", "{who:?} {trust}: {v}");
            assert_eq!(v["asyncio"], "async");
            assert_eq!(v["tempfile"], "tmp");
            assert_eq!(v["own_script"], true);
            assert_ne!(v["numpy"], serde_json::Value::Null);
        }
    }
}
