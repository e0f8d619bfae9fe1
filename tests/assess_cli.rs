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

/// Bandit for the `--with bandit` tests: $MAIBOX_BANDIT (what `cargo xtask test`
/// exports after installing it into target/tools/bandit), that venv itself, or
/// `bandit` on PATH. None outside CI means skip; CI must have it.
fn bandit_for_tests() -> Option<std::path::PathBuf> {
    let venv = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .map(|t| t.join("tools/bandit/bin/bandit"));
    let on_path = std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join("bandit"))
            .find(|b| b.is_file())
    });
    let found = std::env::var_os("MAIBOX_BANDIT")
        .filter(|p| !p.is_empty())
        .map(std::path::PathBuf::from)
        .or(venv.filter(|v| v.is_file()))
        .or(on_path);
    if found.is_none() {
        assert!(
            !in_ci(),
            "CI must run the --with bandit test: `cargo xtask test` installs Bandit into target/tools/bandit and exports MAIBOX_BANDIT"
        );
        eprintln!("SKIP with_bandit_merges_its_findings: Bandit not found (run `cargo xtask bandit`, set MAIBOX_BANDIT, or put bandit on PATH)");
    }
    found
}

// MD5 is a Bandit test (B324, HIGH) that maibox has no rule for; os.system is
// one both have (B605 / MB605).
const WEAK_HASH: &str =
    "import hashlib, os\nos.system('ls')\nprint(hashlib.md5(b'x').hexdigest())\n";

#[test]
fn with_bandit_merges_its_findings() {
    let Some(bandit) = bandit_for_tests() else {
        return;
    };
    let s = Scratch::new();
    let f = s.file("hash.py", WEAK_HASH.as_bytes());
    let assess = |with: bool| {
        let mut args = vec!["assess", "--json"];
        if with {
            args.extend(["--with", "bandit"]);
        }
        args.push(f.to_str().unwrap());
        let o = command(As::Caller)
            .env("MAIBOX_BANDIT", &bandit)
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()
    };
    let alone = assess(false);
    assert_eq!(alone["verdict"], "MEDIUM", "{alone}");
    assert_eq!(alone["tools"], serde_json::json!([]));
    let with = assess(true);
    assert_eq!(with["tools"], serde_json::json!(["bandit"]), "{with}");
    assert_eq!(with["verdict"], "HIGH", "{with}");
    let findings = with["findings"].as_array().unwrap();
    let b324 = findings
        .iter()
        .find(|f| f["rule"] == "bandit:B324")
        .unwrap_or_else(|| panic!("no bandit:B324 in {with}"));
    assert_eq!(b324["line"], 3);
    assert_eq!(b324["severity"], "HIGH");
    // B605 is maibox's MB605 on the same line: reported once.
    let mb605 = findings.iter().filter(|f| f["rule"] == "MB605").count();
    assert_eq!(mb605, 1, "{with}");
    assert!(!findings.iter().any(|f| f["rule"] == "bandit:B605"));

    // exec weighs Bandit's findings too: HIGH under unknown runs as untrusted.
    let o = command(As::Caller)
        .env("MAIBOX_BANDIT", &bandit)
        .args([
            "exec",
            "--json",
            "--trust",
            "unknown",
            "--with",
            "bandit",
            "-c",
            "import hashlib\nprint(hashlib.md5(b'x').hexdigest())\n",
        ])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let r = report(&o);
    assert_eq!(r["assessment"]["verdict"], "HIGH", "{r}");
    assert_eq!(r["decision"]["decision"], "escalated", "{r}");
    assert_eq!(
        r["assessment"]["tools"],
        serde_json::json!(["bandit"]),
        "{r}"
    );
    assert!(
        r["assessment"]["findings"]
            .as_array()
            .is_some_and(|f| f.iter().any(|x| x == "bandit:B324")),
        "{r}"
    );
}

#[test]
fn with_bandit_absent_is_a_clear_error() {
    let s = Scratch::new();
    let f = s.file("ok.py", b"print('hi')\n");
    // No bandit and no python3 on PATH; then a python3 without the module.
    let empty = s.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let fake = s.path().join("fake");
    std::fs::create_dir(&fake).unwrap();
    s.file(
        "fake/python3",
        b"#!/bin/sh\necho \"$0: No module named bandit\" >&2\nexit 1\n",
    );
    std::fs::set_permissions(
        fake.join("python3"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    for dir in [&empty, &fake] {
        for args in [
            vec!["assess", "--with", "bandit", f.to_str().unwrap()],
            vec!["exec", "--with", "bandit", "-c", "print('hi')"],
        ] {
            let o = command(As::Caller)
                .env_remove("MAIBOX_BANDIT")
                .env("PATH", dir)
                .args(&args)
                .stdin(std::process::Stdio::null())
                .output()
                .unwrap();
            let err = stderr(&o);
            assert_eq!(o.status.code(), Some(125), "{args:?}: {err}");
            assert!(
                err.contains("Bandit is not installed: pip install bandit, or drop --with bandit"),
                "{args:?}: {err}"
            );
            assert!(!err.contains("panicked"), "{err}");
            assert!(stdout(&o).is_empty(), "nothing ran: {}", stdout(&o));
        }
    }
    // An unknown tool is a usage error like any other.
    let o = run(
        As::Caller,
        &["assess", "--with", "pylint", f.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(125));
    assert!(stderr(&o).contains("--with"), "{}", stderr(&o));
}

/// The README and the security model state how many rules there are; the
/// number drifted once (57 after the rounds had taken it past 130), so it
/// is checked against the binary's own table.
#[test]
fn documented_rule_count_matches_the_rule_table() {
    let o = run(As::Caller, &["assess", "--rules"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let count = stdout(&o)
        .lines()
        .filter(|l| l.contains("\"id\":\"MB"))
        .count();
    assert!(count > 50, "the rule table looks empty: {count} rules");
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    for doc in ["README.md", "docs/security-model.md"] {
        let text = std::fs::read_to_string(root.join(doc)).expect("read the doc");
        let stated = format!("{count} rules");
        assert!(
            text.contains(&stated),
            "{doc} does not say \"{stated}\": update its rule count"
        );
    }
}
