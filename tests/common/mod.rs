//! Shared helpers for the integration tests: run the real `maibox` binary, as root
//! and as an unprivileged user, on probe scripts.
#![allow(dead_code)]

pub mod docker;
pub mod server;

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

/// An unprivileged uid/gid with no passwd entry: rootless runs need nothing more.
pub const USER_ID: u32 = 4242;

pub fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

pub fn in_ci() -> bool {
    std::env::var("CI").map(|v| v == "true").unwrap_or(false)
}

/// Returns false (and says why) when a test cannot run here; in CI it fails instead.
pub fn require_root(test: &str) -> bool {
    if is_root() {
        return true;
    }
    assert!(!in_ci(), "{test} needs root, and CI runs as root");
    eprintln!("SKIP {test}: needs root (run the tests as root to cover it)");
    false
}

/// A world-readable scratch directory: the unprivileged user must reach it.
pub struct Scratch {
    pub dir: tempfile::TempDir,
}

impl Scratch {
    pub fn new() -> Scratch {
        let dir = tempfile::Builder::new()
            .prefix("maibox-test-")
            .tempdir_in("/tmp")
            .unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        Scratch { dir }
    }

    pub fn file(&self, name: &str, content: &[u8]) -> PathBuf {
        let p = self.dir.path().join(name);
        std::fs::write(&p, content).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        p
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

const BIN_PREFIX: &str = "maibox-tests-bin-";

/// Copies of older builds are of no use, but another checkout's test run may be
/// using its own copy right now: only copies untouched for an hour go.
fn remove_stale_copies(keep: &Path) {
    let hour = std::time::Duration::from_secs(3600);
    for e in std::fs::read_dir(std::env::temp_dir()).unwrap().flatten() {
        let n = e.file_name().to_string_lossy().into_owned();
        let old = e
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > hour);
        if n.starts_with(BIN_PREFIX) && e.path() != keep && old {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// The maibox binary, copied where an unprivileged user can execute it.
pub fn binary() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        // Keyed by the binary's size and mtime: test processes share one copy
        // instead of leaving one each in /tmp.
        let src = std::fs::metadata(env!("CARGO_BIN_EXE_maibox")).unwrap();
        let mtime = src
            .modified()
            .unwrap()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let dir = std::env::temp_dir().join(format!("{BIN_PREFIX}{}-{mtime}", src.len()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let dst = dir.join("maibox");
        if dst.exists() {
            return dst;
        }
        remove_stale_copies(&dir);
        let tmp = dir.join(format!("maibox.tmp{}", std::process::id()));
        std::fs::copy(env!("CARGO_BIN_EXE_maibox"), &tmp).unwrap();
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::rename(&tmp, &dst).unwrap();
        dst
    })
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum As {
    /// Whoever runs the tests (root in CI).
    Caller,
    /// An unprivileged user (rootless mode); needs root to switch to.
    User,
}

/// A private audit log per test process and identity, so tests never write the
/// machine's own log (and the unprivileged user can create its directory).
pub fn audit_dir(who: As) -> PathBuf {
    std::env::temp_dir().join(format!("maibox-test-audit-{who:?}"))
}

pub fn command(who: As) -> Command {
    let mut c = Command::new(binary());
    c.env_remove("MAIBOX_CONFIG");
    c.env("MAIBOX_AUDIT_DIR", audit_dir(who));
    if who == As::User {
        c.uid(USER_ID).gid(USER_ID);
        c.env("HOME", "/nonexistent");
    }
    c
}

pub fn run(who: As, args: &[&str]) -> Output {
    command(who)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

pub fn run_stdin(who: As, args: &[&str], input: &[u8]) -> Output {
    use std::io::Write;
    let mut child = command(who)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

/// Who to test as: the caller, plus the unprivileged user when we can switch to it.
pub fn identities(test: &str) -> Vec<As> {
    if is_root() {
        vec![As::Caller, As::User]
    } else {
        assert!(!in_ci(), "{test}: CI runs as root");
        eprintln!("note {test}: not root, so the rootless case runs as the caller only");
        vec![As::Caller]
    }
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The JSON report: the last line of stdout.
pub fn report(o: &Output) -> serde_json::Value {
    let s = stdout(o);
    let last = s.lines().last().unwrap_or_default();
    serde_json::from_str(last)
        .unwrap_or_else(|e| panic!("no JSON report ({e}) in stdout {s:?}, stderr {}", stderr(o)))
}

/// Runs probe code inside the sandbox and parses the JSON it prints.
pub fn probe(who: As, extra: &[&str], code: &str) -> serde_json::Value {
    let mut args = vec!["exec"];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["-c", code]);
    let o = run(who, &args);
    let out = stdout(&o);
    let line = out.lines().last().unwrap_or_default();
    serde_json::from_str(line).unwrap_or_else(|e| {
        panic!(
            "probe printed no JSON ({e}); status {:?}\nstdout: {out}\nstderr: {}",
            o.status,
            stderr(&o)
        )
    })
}

/// Runs the same probe code directly on the host (the control without maibox).
pub fn host_probe(code: &str) -> serde_json::Value {
    let o = Command::new("/usr/bin/python3")
        .args(["-c", code])
        .output()
        .unwrap();
    let out = stdout(&o);
    serde_json::from_str(out.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("host probe: {e}: {out} {}", stderr(&o)))
}

/// Mount table size of the test process's namespace: a leak would grow it.
pub fn host_mount_count() -> usize {
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .count()
}

/// The parent pid of `pid` (0 when it is gone).
pub fn parent_of(pid: i32) -> i32 {
    status_field(pid, "PPid")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// The value of `key` in `/proc/PID/status` (`None` when the process is gone).
pub fn status_field(pid: i32, key: &str) -> Option<String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k == key).then(|| v.trim().to_string())
    })
}

/// Host processes whose command line contains `token`.
pub fn processes_with(token: &str) -> Vec<i32> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if let Ok(c) = std::fs::read(format!("/proc/{pid}/cmdline")) {
            if String::from_utf8_lossy(&c).contains(token) {
                found.push(pid);
            }
        }
    }
    found
}

/// Host processes whose name (`comm`) is `name`.
pub fn processes_named(name: &str) -> Vec<i32> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if let Ok(c) = std::fs::read_to_string(format!("/proc/{pid}/comm")) {
            if c.trim_end() == name {
                found.push(pid);
            }
        }
    }
    found
}

/// A minimal wheel (package `tinypkg`, `VALUE = 42`) that pip really accepts.
pub fn tiny_wheel() -> Vec<u8> {
    // Built with Python's zipfile so it is a wheel pip really accepts.
    let script = r#"
import io, sys, zipfile, hashlib, base64
files = {
  "tinypkg/__init__.py": b"VALUE = 42\n",
  "tinypkg-0.1.dist-info/METADATA": b"Metadata-Version: 2.1\nName: tinypkg\nVersion: 0.1\n",
  "tinypkg-0.1.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: maibox-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
record = ""
for n, d in files.items():
    h = base64.urlsafe_b64encode(hashlib.sha256(d).digest()).rstrip(b"=").decode()
    record += f"{n},sha256={h},{len(d)}\n"
record += "tinypkg-0.1.dist-info/RECORD,,\n"
buf = io.BytesIO()
with zipfile.ZipFile(buf, "w") as z:
    for n, d in files.items():
        z.writestr(n, d)
    z.writestr("tinypkg-0.1.dist-info/RECORD", record)
sys.stdout.buffer.write(buf.getvalue())
"#;
    let out = std::process::Command::new("/usr/bin/python3")
        .args(["-c", script])
        .output()
        .unwrap();
    assert!(out.status.success());
    out.stdout
}
