//! A sandbox never outlives its supervisor: supervisors killed with SIGKILL at random
//! points of their first 50 ms leave no process, cgroup, mount or socket behind, and
//! the audit log still verifies (a run whose supervisor died has a start record and no
//! end).
//!
//! This test process is a child subreaper: everything a killed supervisor leaves
//! running (its sandbox init, its cleaner) is re-parented here, where it can be seen
//! and reaped. It has a binary of its own so that no other test's children are.

mod common;
use common::*;
use nix::sys::signal::{kill, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;
use std::collections::BTreeSet;
use std::io::Read;
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

const RUNS: usize = 500;
const WINDOW_MS: u64 = 50;
/// How long the leftovers of a killed supervisor may take to go (the cleaner waits
/// for init's exit, up to 10 s, then retries a busy group for up to 5 s): well past
/// those bounds, for a loaded 2-core machine with hundreds of cleaners at once.
const GRACE: Duration = Duration::from_secs(40);

/// xorshift64*: the test needs uniform delays, not a crate.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

fn start(who: As, allowlist: bool, code: &str, out: Stdio) -> Child {
    let mut args = vec!["exec", "--trust", "untrusted", "--timeout", "30"];
    if allowlist {
        args.extend_from_slice(&["--network", "allowlist"]);
    }
    args.extend_from_slice(&["-c", code]);
    command(who)
        .args(&args)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Reaps whatever was re-parented here and ended; returns the pids of this process's
/// children that still run.
fn live_children() -> Vec<i32> {
    while let Ok(st) = waitpid(Pid::from_raw(-1), Some(WaitPidFlag::WNOHANG)) {
        if st == WaitStatus::StillAlive {
            break;
        }
    }
    children_of(std::process::id())
}

/// The processes (not zombies) whose parent is `parent`.
fn children_of(parent: u32) -> Vec<i32> {
    let parent = parent.to_string();
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        // Field 3 is the state, field 4 the parent.
        if f.get(1) == Some(&parent.as_str()) && f.first() != Some(&"Z") {
            found.push(pid);
        }
    }
    found
}

/// The directories under which maibox makes run groups and proxy sockets.
fn group_parents() -> Vec<PathBuf> {
    let mut v = Vec::new();
    for e in std::fs::read_dir("/sys/fs/cgroup")
        .into_iter()
        .flatten()
        .flatten()
    {
        v.push(e.path().join("maibox"));
    }
    v.push(PathBuf::from("/sys/fs/cgroup/maibox"));
    v
}

/// Run groups and proxy socket directories whose owner is one of `pids`.
fn host_leftovers(pids: &BTreeSet<u32>) -> Vec<PathBuf> {
    let owned = |name: &str, prefix: &str| {
        name.strip_prefix(prefix)
            .and_then(|r| r.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
            .is_some_and(|p| pids.contains(&p))
    };
    let mut left = Vec::new();
    for parent in group_parents() {
        for e in std::fs::read_dir(&parent).into_iter().flatten().flatten() {
            if owned(&e.file_name().to_string_lossy(), "run-") {
                left.push(e.path());
            }
        }
    }
    for e in std::fs::read_dir(std::env::temp_dir()).unwrap().flatten() {
        if owned(&e.file_name().to_string_lossy(), "maibox-proxy-") {
            left.push(e.path());
        }
    }
    let unix = std::fs::read_to_string("/proc/net/unix").unwrap_or_default();
    for l in unix.lines() {
        if let Some(path) = l.split_whitespace().nth(7) {
            let name = path.rsplit('/').nth(1).unwrap_or_default();
            if owned(name, "maibox-proxy-") {
                left.push(PathBuf::from(format!("socket {path}")));
            }
        }
    }
    left
}

fn maibox_mounts() -> BTreeSet<String> {
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .filter(|l| l.contains("maibox"))
        .map(str::to_string)
        .collect()
}

/// Polls until nothing of `pids` is left, or the grace period is over.
fn wait_clean(pids: &BTreeSet<u32>) -> (Vec<i32>, Vec<PathBuf>) {
    let t0 = Instant::now();
    loop {
        let (procs, host) = (live_children(), host_leftovers(pids));
        if (procs.is_empty() && host.is_empty()) || t0.elapsed() > GRACE {
            return (procs, host);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn describe(pids: &[i32]) -> Vec<String> {
    pids.iter()
        .map(|p| {
            let c = std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default();
            format!("{p}: {}", String::from_utf8_lossy(&c).replace('\0', " "))
        })
        .collect()
}

/// The control: a supervisor killed once its code runs has a sandbox, a cgroup (as
/// root) and a proxy socket that the probes see, and that go with it.
fn control(who: As) {
    let code = "print('ready', flush=True)\nimport time\ntime.sleep(30)\n";
    let mut child = start(who, true, code, Stdio::piped());
    let mut out = child.stdout.take().unwrap();
    let mut b = [0u8; 6];
    out.read_exact(&mut b).unwrap();
    assert_eq!(&b, b"ready\n");
    let pids = BTreeSet::from([child.id()]);
    let host = host_leftovers(&pids);
    assert!(
        host.iter()
            .any(|p| p.to_string_lossy().contains("maibox-proxy-")),
        "control {who:?}: the probe sees the proxy's socket: {host:?}"
    );
    if who == As::Caller && is_root() {
        assert!(
            host.iter().any(|p| p.to_string_lossy().contains("/run-")),
            "control: the probe sees the run's cgroup: {host:?}"
        );
    }
    // Its sandbox init and its cleaner, re-parented here once it is killed.
    let running = children_of(child.id());
    assert!(
        running.len() >= 2,
        "control {who:?}: the probe sees the supervisor's processes: {:?}",
        describe(&running)
    );
    kill(Pid::from_raw(child.id() as i32), Signal::SIGKILL).unwrap();
    child.wait().unwrap();
    let (procs, host) = wait_clean(&pids);
    assert!(
        procs.is_empty(),
        "{who:?}: left running: {:?}",
        describe(&procs)
    );
    assert!(host.is_empty(), "{who:?}: left on the host: {host:?}");
}

#[test]
fn supervisors_killed_in_their_first_50ms_leave_nothing() {
    if !require_root("supervisors_killed_in_their_first_50ms_leave_nothing") {
        return;
    }
    nix::sys::prctl::set_child_subreaper(true).unwrap();
    let mounts_before = maibox_mounts();
    let who = identities("supervisors_killed_in_their_first_50ms_leave_nothing");
    for w in &who {
        control(*w);
    }
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1;
    eprintln!("kill delays from seed {seed}");
    let mut rng = Rng(seed);
    let mut pids = BTreeSet::new();
    let t0 = Instant::now();
    for i in 0..RUNS {
        let delay = Duration::from_micros(rng.below(WINDOW_MS * 1000));
        let w = who[i % who.len()];
        let mut child = start(
            w,
            i % 4 == 0,
            "import time\ntime.sleep(30)\n",
            Stdio::null(),
        );
        pids.insert(child.id());
        std::thread::sleep(delay);
        kill(Pid::from_raw(child.id() as i32), Signal::SIGKILL).unwrap();
        child.wait().unwrap();
    }
    eprintln!("{RUNS} supervisors killed in {:?}", t0.elapsed());
    let (procs, host) = wait_clean(&pids);
    assert!(procs.is_empty(), "left running: {:?}", describe(&procs));
    assert!(host.is_empty(), "left on the host: {host:?}");
    let new_mounts: Vec<_> = maibox_mounts()
        .difference(&mounts_before)
        .cloned()
        .collect();
    assert!(new_mounts.is_empty(), "mounts left: {new_mounts:?}");
    for w in who {
        let o = run(w, &["audit", "verify"]);
        assert!(
            o.status.success(),
            "{w:?}: audit verify: {}{}",
            stdout(&o),
            stderr(&o)
        );
    }
}
