//! Public escapes and resource attacks (see the project's list in the README), each
//! tried from inside the sandbox, with a control where a layer switch exists.

mod common;
use common::*;

#[test]
fn cve_2019_5736_runtime_and_interpreter_binaries_cannot_be_overwritten() {
    let code = r#"
import os, json
res = {}
for name, path, flags in [("init_exe_read", "/proc/1/exe", os.O_RDONLY),
                          ("init_exe_write", "/proc/1/exe", os.O_WRONLY),
                          ("self_exe_write", "/proc/self/exe", os.O_WRONLY),
                          ("interp_write", os.path.realpath("/proc/self/exe"), os.O_WRONLY)]:
    try:
        os.close(os.open(path, flags)); res[name] = "opened"
    except OSError as e:
        res[name] = e.errno
print(json.dumps(res))
"#;
    for who in identities("cve_2019_5736") {
        let v = probe(who, &[], code);
        for k in [
            "init_exe_read",
            "init_exe_write",
            "self_exe_write",
            "interp_write",
        ] {
            assert_ne!(v[k], "opened", "{who:?}: {k}: {v}");
        }
    }
}

#[test]
fn cve_2024_21626_no_leaked_descriptors_and_cwd_inside_the_root() {
    let code = r#"
import os, json
fds = {}
for fd in os.listdir("/proc/self/fd"):
    try:
        fds[fd] = os.readlink("/proc/self/fd/" + fd)
    except OSError:
        pass  # listdir's own handle, closed by now
print(json.dumps({"cwd": os.getcwd(), "cwd_link": os.readlink("/proc/self/cwd"), "fds": fds}))
"#;
    for who in identities("cve_2024_21626") {
        let v = probe(who, &[], code);
        assert_eq!(v["cwd"], "/sandbox", "{v}");
        assert_eq!(v["cwd_link"], "/sandbox", "{v}");
        let fds = v["fds"].as_object().unwrap();
        for (fd, target) in fds {
            let n: i32 = fd.parse().unwrap();
            // 0-2 are pipes or /dev/null; one more is listdir's own directory handle.
            assert!(
                n <= 2 || target.as_str().unwrap().starts_with("/proc/"),
                "{who:?}: leaked fd {fd} -> {target}"
            );
        }
    }
}

#[test]
fn cve_2022_0492_no_cgroup_release_agent_reachable() {
    let code = r#"
import ctypes, os, json
libc = ctypes.CDLL(None, use_errno=True)
os.makedirs("/tmp/cg", exist_ok=True)
r = libc.mount(b"cgroup", b"/tmp/cg", b"cgroup", 0, b"rdma")
res = {"mount": r, "errno": ctypes.get_errno(), "sys": os.path.exists("/sys"),
       "cgroup": open("/proc/self/cgroup").read().strip().splitlines()}
print(json.dumps(res))
"#;
    for who in identities("cve_2022_0492") {
        let v = probe(who, &[], code);
        assert_eq!(v["mount"], -1, "{who:?}: cgroup mounted: {v}");
        assert_eq!(v["errno"], libc::EPERM, "{v}");
        assert_eq!(v["sys"], false, "/sys is visible: {v}");
        // The cgroup namespace roots every hierarchy at the sandbox's own cgroup.
        for line in v["cgroup"].as_array().unwrap() {
            assert!(line.as_str().unwrap().ends_with(":/"), "{who:?}: {v}");
        }
    }
}

const UNSHARE_USERNS: &str = r#"
import ctypes, os, json
libc = ctypes.CDLL(None, use_errno=True)
r = libc.unshare(0x10000000)
print(json.dumps({"rc": r, "errno": ctypes.get_errno()}))
"#;

#[test]
fn nested_user_namespaces_are_refused() {
    for who in identities("nested_user_namespaces_are_refused") {
        // Two layers stop it: seccomp first (EPERM), and behind it the namespace's
        // own max_user_namespaces=0 (ENOSPC). Each is shown alone, then neither.
        let v = probe(who, &[], UNSHARE_USERNS);
        assert_eq!(
            (v["rc"].as_i64(), v["errno"].as_i64()),
            (Some(-1), Some(libc::EPERM as i64)),
            "{who:?}: {v}"
        );
        let v = probe(who, &["--unsafe-disable-layer", "seccomp"], UNSHARE_USERNS);
        assert_eq!(
            (v["rc"].as_i64(), v["errno"].as_i64()),
            (Some(-1), Some(libc::ENOSPC as i64)),
            "{who:?}: {v}"
        );
        let v = probe(
            who,
            &[
                "--unsafe-disable-layer",
                "seccomp",
                "--unsafe-disable-layer",
                "nested-userns",
            ],
            UNSHARE_USERNS,
        );
        assert_eq!(v["rc"], 0, "{who:?}: control: {v}");
    }
}

const FORKS: &str = r#"
import os, json, sys
n = int(sys.argv[1]); started = 0; err = None
pids = []
for i in range(n):
    try:
        pid = os.fork()
    except OSError as e:
        err = e.errno; break
    if pid == 0:
        import time; time.sleep(2); os._exit(0)
    pids.append(pid); started += 1
for p in pids: os.kill(p, 9)
print(json.dumps({"started": started, "errno": err}))
"#;

#[test]
fn process_count_is_capped() {
    let s = Scratch::new();
    let script = s.file("forks.py", FORKS.as_bytes());
    for who in identities("process_count_is_capped") {
        // untrusted: pids 64. NPROC alone (counted per user in the sandbox's own user
        // namespace, so it works rootless too) stops it; the pids cgroup is tested
        // in limits.rs.
        let o = run(
            who,
            &[
                "exec",
                "--unsafe-disable-layer",
                "cgroup-limits",
                script.to_str().unwrap(),
                "--",
                "100",
            ],
        );
        let v: serde_json::Value = serde_json::from_str(stdout(&o).trim())
            .unwrap_or_else(|e| panic!("{e}: {}", stderr(&o)));
        assert_eq!(v["errno"], libc::EAGAIN, "{who:?}: {v}");
        assert!(v["started"].as_i64().unwrap() < 64, "{who:?}: {v}");
        let o = run(
            who,
            &[
                "exec",
                "--unsafe-disable-layer",
                "rlimits",
                "--unsafe-disable-layer",
                "cgroup-limits",
                script.to_str().unwrap(),
                "--",
                "100",
            ],
        );
        let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
        assert_eq!(v["started"], 100, "{who:?}: control: {v}");
    }
}

const FDS: &str = r#"
import os, json
fds = []
err = None
while len(fds) < 5000:
    try:
        fds.append(os.open("/dev/null", os.O_RDONLY))
    except OSError as e:
        err = e.errno; break
print(json.dumps({"opened": len(fds), "errno": err}))
"#;

#[test]
fn open_files_are_capped() {
    for who in identities("open_files_are_capped") {
        let v = probe(who, &[], FDS);
        assert_eq!(v["errno"], libc::EMFILE, "{who:?}: {v}");
        assert!(v["opened"].as_i64().unwrap() <= 256, "{who:?}: {v}");
        let v = probe(who, &["--unsafe-disable-layer", "rlimits"], FDS);
        assert!(v["opened"].as_i64().unwrap() > 256, "{who:?}: control: {v}");
    }
}

#[test]
fn tmp_fill_stops_at_its_size() {
    let code = r#"
import os, json
chunk = b"x" * (1 << 20)
total = 0; err = None
try:
    for i in range(1000):
        with open(f"/tmp/fill{i // 8}", "ab") as f:
            f.write(chunk); f.flush()
        total += len(chunk)
except OSError as e:
    err = e.errno
st = os.statvfs("/tmp")
print(json.dumps({"written": total, "errno": err, "size": st.f_blocks * st.f_frsize}))
"#;
    for who in identities("tmp_fill_stops_at_its_size") {
        let v = probe(who, &[], code);
        assert_eq!(v["errno"], libc::ENOSPC, "{who:?}: {v}");
        assert_eq!(v["size"], 64 << 20, "{v}");
        assert!(v["written"].as_i64().unwrap() <= 64 << 20, "{v}");
    }
}

/// Creates empty files in each directory until the filesystem refuses one (or
/// `cap` times its inode count is reached) and reports how far it got.
const INODE_FLOOD: &str = r#"
import os, json, sys
res = {}
for d in sys.argv[1].split(","):
    os.makedirs(d, exist_ok=True)
    st = os.statvfs(d)
    cap = int(sys.argv[2]) if len(sys.argv) > 2 else 3 * st.f_files
    n = 0; err = None
    try:
        while n < cap:
            os.close(os.open(f"{d}/f{n}", os.O_CREAT | os.O_WRONLY, 0o600)); n += 1
    except OSError as e:
        err = e.errno
    res[d] = {"created": n, "errno": err, "inodes": st.f_files,
              "size": st.f_blocks * st.f_frsize}
res["unbounded"] = [l.split()[4] for l in open("/proc/self/mountinfo")
                    if l.split(" - ")[1].startswith("tmpfs ") and "nr_inodes=" not in l]
print(json.dumps(res))
"#;

/// Empty files take no page of a tmpfs: only its inode bound stops a flood of them
/// (kernel memory that, rootless, no limit charges). Every tmpfs the sandbox can
/// write to has one inode per 4 KiB of its size. The control: the same flood in a
/// host directory goes on past the largest of those bounds.
#[test]
fn inode_flood_stops_at_the_tmpfs_bound() {
    let flood = |who: As, level: &str, dirs: &str| {
        let o = run(
            who,
            &["exec", "--trust", level, "-c", INODE_FLOOD, "--", dirs],
        );
        let out = stdout(&o);
        serde_json::from_str::<serde_json::Value>(out.lines().last().unwrap_or_default())
            .unwrap_or_else(|e| panic!("{e}: {out} {}", stderr(&o)))
    };
    for who in identities("inode_flood_stops_at_the_tmpfs_bound") {
        for (level, dirs) in [
            ("untrusted", "/tmp/flood,/dev/shm/flood"),
            ("trusted", "/tmp/flood,/sandbox/flood"),
        ] {
            let v = flood(who, level, dirs);
            assert_eq!(
                v["unbounded"],
                serde_json::json!([]),
                "{who:?} {level}: {v}"
            );
            for d in dirs.split(',') {
                let r = &v[d];
                let (inodes, size) = (r["inodes"].as_u64().unwrap(), r["size"].as_u64().unwrap());
                assert_eq!(inodes, size / 4096, "{who:?} {level} {d}: {r}");
                assert_eq!(r["errno"], libc::ENOSPC, "{who:?} {level} {d}: {r}");
                assert!(
                    r["created"].as_u64().unwrap() < inodes,
                    "{who:?} {level} {d}: {r}"
                );
            }
        }
    }
    let s = Scratch::new();
    let dir = s.path().join("flood");
    let o = std::process::Command::new("/usr/bin/python3")
        .args(["-c", INODE_FLOOD, dir.to_str().unwrap(), "70000"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    let r = &v[dir.to_str().unwrap()];
    assert_eq!(r["created"], 70000, "control: {r}");
}
