//! The static assessment at the front door: `maibox assess`, and what it decides for `exec`.

mod common;
use common::*;

const FORK_BOMB: &str = "import os\nwhile True:\n    os.fork()\n";

#[test]
fn blocked_code_is_refused_before_any_sandbox_exists() {
    let o = run(As::Caller, &["exec", "--json", "-c", FORK_BOMB]);
    assert_eq!(o.status.code(), Some(125), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("refused") && err.contains("BLOCKED") && err.contains("MB902"),
        "{err}"
    );
    assert!(err.contains("--override"), "{err}");
    assert!(
        stdout(&o).is_empty(),
        "nothing ran, no report: {}",
        stdout(&o)
    );
}

#[test]
fn override_runs_and_is_recorded() {
    // A bounded stand-in that the assessor still calls a fork bomb.
    let code = "import os, sys\nn = 0\nwhile True:\n    os.fork()\n    sys.exit(0)\n";
    let o = run(
        As::Caller,
        &[
            "exec",
            "--json",
            "--override",
            "reviewed: exits at once",
            "-c",
            code,
        ],
    );
    let r = report(&o);
    assert_eq!(r["decision"]["decision"], "overridden", "{r}");
    assert_eq!(r["decision"]["reason"], "reviewed: exits at once");
    assert_eq!(r["assessment"]["verdict"], "BLOCKED");
    assert!(stderr(&o).contains("override: reviewed: exits at once"));
    // An empty reason is not a reason.
    let o = run(As::Caller, &["exec", "--override", " ", "-c", code]);
    assert_eq!(o.status.code(), Some(125));
    assert!(stderr(&o).contains("reason"), "{}", stderr(&o));
}

#[test]
fn high_code_under_unknown_runs_with_untrusted_settings() {
    let code = "import subprocess, sys\nif len(sys.argv) > 5:\n    subprocess.run(sys.argv[1], shell=True)\n    open('/etc/shadow').read()\nprint('ran')\n";
    let o = run(
        As::Caller,
        &["exec", "--json", "--trust", "unknown", "-c", code],
    );
    let r = report(&o);
    assert_eq!(r["assessment"]["verdict"], "HIGH", "{r}");
    assert_eq!(r["trust"], "untrusted", "{r}");
    assert_eq!(r["limits"]["timeout"], 30.0);
    assert_eq!(r["decision"]["decision"], "escalated");
    // Benign code keeps its level.
    let o = run(
        As::Caller,
        &[
            "exec",
            "--json",
            "--trust",
            "unknown",
            "-c",
            "print(sum(range(10)))",
        ],
    );
    let r = report(&o);
    assert_eq!(r["trust"], "unknown");
    assert_eq!(r["assessment"]["verdict"], "LOW");
}

#[test]
fn assess_command_outputs_and_exit_codes() {
    let s = Scratch::new();
    let bomb = s.file("bomb.py", FORK_BOMB.as_bytes());
    let o = run(As::Caller, &["assess", "--json", bomb.to_str().unwrap()]);
    let a: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(a["verdict"], "BLOCKED");
    assert_eq!(a["findings"][0]["line"], 3);
    assert_eq!(o.status.code(), Some(0));
    let o = run(
        As::Caller,
        &["assess", "--fail-at", "HIGH", bomb.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(3));
    assert!(stdout(&o).contains("MB902"), "{}", stdout(&o));
    let ok = s.file("ok.py", b"print('hi')\n");
    let o = run(
        As::Caller,
        &["assess", "--fail-at", "HIGH", ok.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(0));
    let o = run(As::Caller, &["assess", "--rules"]);
    assert!(stdout(&o).lines().count() >= 40);
}

#[test]
fn assess_bad_input_is_clear() {
    let s = Scratch::new();
    let bin = s.file(
        "x.pyc",
        &[0x55, 0x0d, 0x0d, 0x0a, 0, 0, 0, 0, 0xff, 0xfe, 0],
    );
    let o = run(As::Caller, &["assess", "--json", bin.to_str().unwrap()]);
    let a: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_ne!(a["verdict"], "LOW", "{a}");
    let empty = s.file("empty.py", b"");
    let o = run(As::Caller, &["assess", "--json", empty.to_str().unwrap()]);
    let a: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(a["verdict"], "LOW");
    let big = s.file("big.py", &vec![b'#'; 6 << 20]);
    let o = run(As::Caller, &["assess", big.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(125));
    assert!(stderr(&o).contains("limit"), "{}", stderr(&o));
}
