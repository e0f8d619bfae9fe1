//! Every run lands in the tamper-evident audit log, which the code inside can never reach.

mod common;
use common::*;

fn verify(who: As) -> std::process::Output {
    run(who, &["audit", "verify"])
}

fn records(who: As) -> Vec<serde_json::Value> {
    let o = run(who, &["audit", "show", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn runs_are_recorded_with_start_and_end_and_verify() {
    for who in identities("runs_are_recorded_with_start_and_end_and_verify") {
        let o = run(who, &["exec", "--json", "-c", "print('audited')"]);
        let id = report(&o)["run_id"].as_str().unwrap().to_string();
        let recs: Vec<_> = records(who)
            .into_iter()
            .filter(|r| r["run_id"] == id.as_str())
            .collect();
        assert_eq!(recs.len(), 2, "{who:?}: {recs:?}");
        assert_eq!(recs[0]["kind"], "run_start");
        assert_eq!(recs[0]["body"]["assessment"]["verdict"], "LOW");
        assert_eq!(recs[1]["kind"], "run_end");
        assert_eq!(recs[1]["body"]["exit"]["exit_code"], 0);
        let v = verify(who);
        assert_eq!(v.status.code(), Some(0), "{who:?}: {}", stdout(&v));
        assert!(stdout(&v).contains("intact"));
    }
}

/// The start record says which layers the run asked for, the end record which it had
/// (as the report does); a layer switched off is off in both.
#[test]
fn the_records_carry_the_layers_asked_for_and_applied() {
    for who in identities("the_records_carry_the_layers_asked_for_and_applied") {
        for off in [None, Some("seccomp")] {
            let mut args = vec!["exec", "--trust", "untrusted", "--json"];
            if let Some(layer) = off {
                args.extend(["--unsafe-disable-layer", layer]);
            }
            args.extend(["-c", "print('layers')"]);
            let r = report(&run(who, &args));
            let id = r["run_id"].as_str().unwrap().to_string();
            let recs: Vec<_> = records(who)
                .into_iter()
                .filter(|x| x["run_id"] == id.as_str())
                .collect();
            let (asked, had) = (
                &recs[0]["body"]["layers"],
                &recs[1]["body"]["exit"]["layers"],
            );
            assert_eq!(
                had, &r["layers"],
                "{who:?} {off:?}: the end record's layers"
            );
            let on = off.is_none();
            assert_eq!(asked["seccomp"], on, "{who:?} {off:?}: {asked}");
            assert_eq!(had["seccomp"], on, "{who:?} {off:?}: {had}");
            assert_eq!(asked["landlock"], true, "{who:?} {off:?}: {asked}");
            assert_eq!(asked["cgroup_limits"], true, "{who:?} {off:?}: {asked}");
        }
    }
}

#[test]
fn overrides_and_refusals_are_visible_in_the_log() {
    let code = "import os, sys\nwhile True:\n    os.fork()\n    sys.exit(0)\n";
    let o = run(
        As::Caller,
        &[
            "exec",
            "--json",
            "--override",
            "audited override",
            "-c",
            code,
        ],
    );
    let id = report(&o)["run_id"].as_str().unwrap().to_string();
    let start = records(As::Caller)
        .into_iter()
        .find(|r| r["run_id"] == id.as_str() && r["kind"] == "run_start")
        .unwrap();
    assert_eq!(start["body"]["override_reason"], "audited override");
    assert_eq!(start["body"]["assessment"]["verdict"], "BLOCKED");
}

#[test]
fn tampering_is_detected_and_named() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let go = |args: &[&str]| {
        command(As::Caller)
            .env("MAIBOX_AUDIT_DIR", &log)
            .args(args)
            .output()
            .unwrap()
    };
    for i in 0..3 {
        let o = go(&["exec", "-c", &format!("print({i})")]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    assert_eq!(go(&["audit", "verify"]).status.code(), Some(0));
    let seg = std::fs::read_dir(&log)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().map(|x| x == "jsonl").unwrap_or(false))
        .unwrap();
    let text = std::fs::read_to_string(&seg).unwrap();
    let forged = text.replacen("\"exit_code\":0", "\"exit_code\":1", 1);
    assert_ne!(forged, text);
    std::fs::write(&seg, forged).unwrap();
    let o = go(&["audit", "verify"]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stdout(&o).to_lowercase().contains("edit"), "{}", stdout(&o));
}

#[test]
fn the_code_cannot_reach_the_log_or_the_key() {
    for who in identities("the_code_cannot_reach_the_log_or_the_key") {
        let dir = audit_dir(who);
        // Make sure the log exists before probing for it.
        let o = run(who, &["exec", "-c", "pass"]);
        assert!(o.status.success());
        assert!(dir.join("audit.key").exists());
        let code = format!(
            "import os, json\nres = {{}}\nfor p in [{:?}, {:?}]:\n    try:\n        open(p, 'rb'); res[p] = 'opened'\n    except OSError as e:\n        res[p] = e.__class__.__name__\nres['env'] = [k for k in os.environ if 'AUDIT' in k]\nprint(json.dumps(res))\n",
            dir.join("audit.key").display().to_string(),
            dir.join("seg-00000001.jsonl").display().to_string()
        );
        for trust in ["untrusted", "trusted"] {
            let v = probe(who, &["--trust", trust], &code);
            for (k, val) in v.as_object().unwrap() {
                if k != "env" {
                    assert_eq!(val, "FileNotFoundError", "{who:?} {trust}: {k}: {v}");
                }
            }
            assert_eq!(v["env"], serde_json::json!([]), "{v}");
        }
    }
}

#[test]
fn required_audit_that_cannot_be_written_refuses_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let not_a_dir = dir.path().join("file");
    std::fs::write(&not_a_dir, "x").unwrap();
    let o = command(As::Caller)
        .env("MAIBOX_AUDIT_DIR", &not_a_dir)
        .args(["exec", "-c", "print('must not run')"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(125), "{}", stderr(&o));
    assert!(!stdout(&o).contains("must not run"));
    assert!(stderr(&o).contains("audit"), "{}", stderr(&o));
}

#[test]
fn concurrent_runs_never_fork_the_chain() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let children: Vec<_> = (0..8)
        .map(|i| {
            command(As::Caller)
                .env("MAIBOX_AUDIT_DIR", &log)
                .args(["exec", "-c", &format!("print({i})")])
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let o = command(As::Caller)
        .env("MAIBOX_AUDIT_DIR", &log)
        .args(["audit", "verify"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let o = command(As::Caller)
        .env("MAIBOX_AUDIT_DIR", &log)
        .args(["audit", "show", "--json"])
        .output()
        .unwrap();
    let starts = stdout(&o)
        .lines()
        .filter(|l| l.contains("\"run_start\""))
        .count();
    let ends = stdout(&o)
        .lines()
        .filter(|l| l.contains("\"run_end\""))
        .count();
    assert_eq!((starts, ends), (8, 8));
}
