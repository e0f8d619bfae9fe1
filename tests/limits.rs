//! cgroup limits observed from inside: memory, pids, CPU; no group left behind,
//! also when the supervisor is SIGKILLed. Runs on this host's v1/hybrid layout and,
//! in the VM lane, on pure cgroup v2.

mod common;
use common::*;
use std::time::{Duration, Instant};

fn cgroup_dirs_of(pid: u32) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for root in [
        "/sys/fs/cgroup/maibox",
        "/sys/fs/cgroup/memory/maibox",
        "/sys/fs/cgroup/pids/maibox",
    ] {
        if let Ok(rd) = std::fs::read_dir(root) {
            for e in rd.flatten() {
                if e.file_name()
                    .to_string_lossy()
                    .starts_with(&format!("run-{pid}-"))
                {
                    found.push(e.path());
                }
            }
        }
    }
    found
}

#[test]
fn memory_hog_is_killed_at_the_limit_and_reported() {
    if !require_root("memory_hog_is_killed_at_the_limit_and_reported") {
        return;
    }
    let hog = "x = bytearray(400 << 20)\nprint('survived', len(x))";
    let o = run(As::Caller, &["exec", "--json", "-c", hog]);
    let r = report(&o);
    assert_eq!(r["violations"][0]["kind"], "memory", "{r}");
    assert_eq!(r["violations"][0]["limit_bytes"], 256 << 20);
    let peak = r["usage"]["peak_memory_bytes"].as_u64().unwrap();
    assert!(peak > 200 << 20 && peak <= 256 << 20, "peak {peak}");
    assert_eq!(o.status.code(), Some(137));
    assert!(!stdout(&o).contains("survived"));
    assert_eq!(r["cgroup"]["enforced"], true);
    // Control: under trusted (1 GiB) the same allocation succeeds.
    let o = run(
        As::Caller,
        &["exec", "--json", "--trust", "trusted", "-c", hog],
    );
    assert!(stdout(&o).contains("survived 419430400"), "{}", stderr(&o));
    assert_eq!(report(&o)["violations"], serde_json::json!([]));
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
fn fork_bomb_is_stopped_at_pids_max_and_reported() {
    if !require_root("fork_bomb_is_stopped_at_pids_max_and_reported") {
        return;
    }
    // rlimits off so that the cgroup, not NPROC, is what stops it.
    let o = run(
        As::Caller,
        &[
            "exec",
            "--json",
            "--unsafe-disable-layer",
            "rlimits",
            "-c",
            FORKS,
        ],
    );
    let r = report(&o);
    // The supervisor ends the sandbox at the first refused fork; the code may or may
    // not have printed "stopped" by then (a slow VM rarely gets that far).
    assert!(!stdout(&o).contains("forked 150"), "{}", stdout(&o));
    assert_eq!(o.status.code(), Some(137));
    assert!(
        r["violations"]
            .as_array()
            .unwrap()
            .iter()
            .any(|v| v["kind"] == "pids" && v["limit"] == 64),
        "{r}"
    );
    assert!(r["usage"]["max_pids"].as_u64().unwrap() <= 64, "{r}");
    // Control: with neither cgroup nor NPROC, all 150 forks succeed.
    let o = run(
        As::Caller,
        &[
            "exec",
            "--json",
            "--unsafe-disable-layer",
            "rlimits",
            "--unsafe-disable-layer",
            "cgroup-limits",
            "-c",
            FORKS,
        ],
    );
    assert!(stdout(&o).contains("forked 150"), "{}", stdout(&o));
}

const SPIN: &str = r#"
import os, time, json
t0 = time.time(); c0 = time.process_time()
while time.time() - t0 < 1.5:
    pass
print(json.dumps({"ratio": (time.process_time() - c0) / (time.time() - t0)}))
"#;

#[test]
fn cpu_quota_gives_about_half_a_core() {
    if !require_root("cpu_quota_gives_about_half_a_core") {
        return;
    }
    let v = probe(As::Caller, &["--trust", "untrusted"], SPIN);
    let ratio = v["ratio"].as_f64().unwrap();
    assert!((0.3..=0.7).contains(&ratio), "cpus 0.5 gave {ratio}");
    let c = probe(
        As::Caller,
        &["--unsafe-disable-layer", "cgroup-limits"],
        SPIN,
    );
    assert!(c["ratio"].as_f64().unwrap() > 0.8, "control: {c}");
}

#[test]
fn no_cgroup_is_left_behind_even_when_the_supervisor_is_killed() {
    if !require_root("no_cgroup_is_left_behind_even_when_the_supervisor_is_killed") {
        return;
    }
    // A normal run removes its group.
    let mut child = command(As::Caller)
        .args([
            "exec",
            "-c",
            "import time; print('up', flush=True); time.sleep(30)",
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 3];
    std::io::Read::read_exact(child.stdout.as_mut().unwrap(), &mut first).unwrap();
    let pid = child.id();
    assert!(
        !cgroup_dirs_of(pid).is_empty(),
        "the run has a cgroup while it runs"
    );
    // SIGKILL the supervisor: the sandbox dies (PDEATHSIG) but its group stays...
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    child.wait().unwrap();
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(5) {
        // ...until the next run cleans up groups whose supervisor is gone.
        let o = run(As::Caller, &["exec", "-c", "pass"]);
        assert!(o.status.success());
        if cgroup_dirs_of(pid).is_empty() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!(
        "stale cgroups of a killed supervisor remain: {:?}",
        cgroup_dirs_of(pid)
    );
}

#[test]
fn rootless_without_delegation_degrades_and_says_so() {
    if !require_root("rootless_without_delegation_degrades_and_says_so") {
        return;
    }
    let o = run(As::User, &["exec", "--json", "-c", "print(1)"]);
    let r = report(&o);
    if r["cgroup"]["enforced"] == true {
        eprintln!("note: this host delegates a cgroup subtree to uid {USER_ID}");
        return;
    }
    assert!(
        r["cgroup"]["note"].as_str().unwrap().contains("degraded"),
        "{r}"
    );
    assert_eq!(r["layers"]["cgroup_limits"], false);
    assert!(stderr(&o).contains("not enforced"), "{}", stderr(&o));
}

#[test]
fn bad_cgroup_settings_are_refused_at_load() {
    let s = Scratch::new();
    for (from, to, expect) in [
        ("  parent: /maibox", "  parent: maibox", "must be absolute"),
        (
            "  parent: /maibox",
            "  parent: /maibox/../etc",
            "must not contain ..",
        ),
        ("  sample_ms: 100", "  sample_ms: 0", "sample_ms"),
    ] {
        let text = maibox::config::BUILTIN.replacen(from, to, 1);
        assert_ne!(text, maibox::config::BUILTIN, "{from}");
        let cfg = s.file("cg.yaml", text.as_bytes());
        let o = run(
            As::Caller,
            &["exec", "--config", cfg.to_str().unwrap(), "-c", "pass"],
        );
        assert_eq!(o.status.code(), Some(125));
        assert!(stderr(&o).contains(expect), "{expect}: {}", stderr(&o));
    }
}
