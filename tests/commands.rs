//! `maibox doctor` and `maibox policy`, and the command line's help.

mod common;
use common::*;

#[test]
fn doctor_reports_every_check_with_advice_for_failures() {
    let o = run(As::Caller, &["doctor", "--json"]);
    let checks: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let names: Vec<&str> = checks
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    for n in [
        "kernel",
        "user namespaces",
        "cgroups",
        "limits",
        "landlock",
        "seccomp",
        "overlayfs",
        "python",
    ] {
        assert!(names.contains(&n), "missing {n}: {names:?}");
    }
    for c in checks.as_array().unwrap() {
        if c["state"] != "ok" {
            assert!(!c["advice"].as_str().unwrap().is_empty(), "no advice: {c}");
        }
    }
    // This host runs sandboxes (the other tests prove it), so doctor must agree.
    let userns = checks
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "user namespaces")
        .unwrap();
    assert_eq!(userns["state"], "ok", "{userns}");
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let text = run(As::Caller, &["doctor"]);
    assert!(stdout(&text).contains("user namespaces"));
}

#[test]
fn doctor_as_unprivileged_user() {
    if !require_root("doctor_as_unprivileged_user") {
        return;
    }
    let o = run(As::User, &["doctor", "--json"]);
    let checks: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let userns = checks
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "user namespaces")
        .unwrap();
    assert_eq!(userns["state"], "ok", "{userns}");
    // Which limits are real: without run groups, the fallbacks are named; as root
    // (the control) the cgroup's.
    let find = |checks: &serde_json::Value, name: &str| {
        checks
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap()
            .clone()
    };
    let limits = find(&checks, "limits");
    if find(&checks, "cgroups")["state"] == "ok" {
        eprintln!("note: this host delegates a cgroup subtree to uid {USER_ID}");
    } else {
        assert_eq!(limits["state"], "warn", "{limits}");
        let d = limits["detail"].as_str().unwrap();
        assert!(
            d.contains("RLIMIT_DATA") && d.contains("no CPU quota"),
            "{d}"
        );
    }
    let root: serde_json::Value =
        serde_json::from_slice(&run(As::Caller, &["doctor", "--json"]).stdout).unwrap();
    let limits = find(&root, "limits");
    assert_eq!(limits["state"], "ok", "{limits}");
    assert!(limits["detail"].as_str().unwrap().contains("cgroup limits"));
}

#[test]
fn policy_prints_the_effective_limits() {
    for (trust, timeout, mem) in [
        ("trusted", 120.0, 1u64 << 30),
        ("untrusted", 30.0, 256 << 20),
    ] {
        let o = run(As::Caller, &["policy", "--trust", trust]);
        let p: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(p["trust"], trust);
        assert_eq!(p["limits"]["timeout"], timeout);
        assert_eq!(p["limits"]["memory_bytes"], mem);
        assert_eq!(p["network"], "none");
    }
}

#[test]
fn timings_say_where_the_time_went() {
    let o = run(As::Caller, &["exec", "--timings", "-c", "pass"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let line = stderr(&o)
        .lines()
        .find(|l| l.starts_with("maibox: timings:"))
        .unwrap_or_else(|| panic!("no timings line: {}", stderr(&o)))
        .to_string();
    for part in [
        "assessment",
        "sandbox setup",
        "rootfs",
        "code",
        "whole command",
    ] {
        assert!(line.contains(part), "{part}: {line}");
    }
    let o = run(As::Caller, &["exec", "-c", "pass"]);
    assert!(!stderr(&o).contains("timings"), "{}", stderr(&o));
}

/// runc's global options are for the OCI verbs: their help and the top level's
/// show them, the other commands' help does not; they are still accepted before
/// any verb (where Docker and containerd pass them) and after one, as before.
#[test]
fn runc_global_options_show_only_where_they_apply() {
    let shows = |args: &[&str]| {
        let o = run(As::Caller, args);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        let h = stdout(&o);
        [
            "--root ",
            "--log ",
            "--log-format",
            "--debug",
            "--systemd-cgroup",
        ]
        .iter()
        .filter(|f| h.contains(**f))
        .count()
    };
    assert_eq!(shows(&["--help"]), 5);
    assert_eq!(shows(&["create", "--help"]), 5);
    assert_eq!(shows(&["kill", "--help"]), 5);
    for args in [
        &["exec", "--help"][..],
        &["audit", "show", "--help"],
        &["doctor", "--help"],
        &["policy", "--help"],
        &["help", "exec"],
    ] {
        assert_eq!(shows(args), 0, "{args:?}");
    }
    let o = run(
        As::Caller,
        &[
            "--debug",
            "--log-format",
            "json",
            "policy",
            "--trust",
            "trusted",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(As::Caller, &["policy", "--trust", "trusted", "--debug"]);
    assert!(o.status.success(), "{}", stderr(&o));
}
