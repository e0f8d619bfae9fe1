//! maibox as a library: one process runs sandboxes one after another and side by side,
//! each with its own output, report and notices, through [`maibox::Sandbox`].

mod common;

use maibox::{Code, Config, Io, Sandbox, Sink, Stdin, TrustLevel};
use std::time::Duration;

fn sandbox() -> Sandbox {
    // The runs' audit records go to a log of this test binary's own.
    static AUDIT: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    let dir = AUDIT.get_or_init(|| tempfile::tempdir().unwrap());
    std::env::set_var("MAIBOX_AUDIT_DIR", dir.path().join("audit"));
    let (cfg, _) = Config::load(None).unwrap();
    Sandbox::new(cfg)
        .trust(TrustLevel::Untrusted)
        .timeout(Duration::from_secs(20))
}

/// A script that names itself, reads its stdin, and shows a fact of its own sandbox
/// (its pid namespace: a fresh sandbox has its own).
fn probe(tag: &str) -> Code {
    Code::inline(format!(
        "import os, sys\nprint('{tag}', sys.stdin.read().strip(), os.readlink('/proc/self/ns/pid'))\nprint('{tag}-err', file=sys.stderr)\n"
    ))
    .unwrap()
}

fn captured(stdin: &str) -> Io<'static> {
    Io {
        stdin: Stdin::Bytes(stdin.as_bytes().to_vec()),
        ..Io::capture()
    }
}

#[test]
fn one_process_runs_sandboxes_in_turn_and_side_by_side() {
    let s = sandbox();
    // One after the other: each run is its own sandbox.
    let a = s.run(&probe("first"), &[], captured("in-a")).unwrap();
    let b = s.run(&probe("second"), &[], captured("in-b")).unwrap();
    let (out_a, out_b) = (
        String::from_utf8(a.stdout).unwrap(),
        String::from_utf8(b.stdout).unwrap(),
    );
    assert!(out_a.starts_with("first in-a pid:["), "{out_a}");
    assert!(out_b.starts_with("second in-b pid:["), "{out_b}");
    assert_eq!(a.stderr, b"first-err\n");
    assert_ne!(a.report.run_id, b.report.run_id);
    let ns = |o: &str| o.split_whitespace().nth(2).map(str::to_string);
    assert_ne!(ns(&out_a), ns(&out_b), "two runs shared a pid namespace");

    // Side by side, from two threads of this process.
    let runs: Vec<_> = std::thread::scope(|t| {
        let handles: Vec<_> = (0..2)
            .map(|i| {
                let s = &s;
                t.spawn(move || {
                    let tag = format!("par{i}");
                    s.run(&probe(&tag), &[], captured(&format!("x{i}")))
                        .unwrap()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (i, r) in runs.iter().enumerate() {
        let out = String::from_utf8_lossy(&r.stdout);
        assert!(out.starts_with(&format!("par{i} x{i} pid:[")), "{out}");
        assert_eq!(r.stderr, format!("par{i}-err\n").as_bytes());
        assert_eq!(r.report.exit_code, 0, "{:?}", r.report.ending);
        assert!(r.report.layers.seccomp && r.report.layers.pid_ns);
    }
    assert_ne!(
        ns(&String::from_utf8_lossy(&runs[0].stdout)),
        ns(&String::from_utf8_lossy(&runs[1].stdout))
    );
}

#[test]
fn output_goes_to_the_callers_writer_and_limits_apply_per_run() {
    let s = sandbox();
    let mut out = Vec::new();
    let io = Io {
        stdout: Sink::Writer(&mut out),
        stderr: Sink::Null,
        ..Io::capture()
    };
    let r = s
        .run(&Code::inline("print('to the writer')").unwrap(), &[], io)
        .unwrap();
    assert_eq!(out, b"to the writer\n");
    assert!(r.stdout.is_empty(), "captured although a writer was given");
    // A timeout of one run does not touch the next.
    let short = sandbox().timeout(Duration::from_millis(300));
    let r = short.run_code("import time\ntime.sleep(30)").unwrap();
    assert_eq!(r.report.exit_code, 124);
    let r = s.run_code("print('after')").unwrap();
    assert_eq!(r.stdout, b"after\n");
}

#[test]
fn a_refusal_is_an_error_with_the_findings_and_nothing_runs() {
    let s = sandbox();
    let e = s
        .run_code("import os\nwhile True:\n    os.fork()\n")
        .unwrap_err();
    match e {
        maibox::Error::Refused(r) => {
            assert!(!r.assessment.findings.is_empty());
            assert_eq!(r.verdict, maibox::assess::Verdict::Blocked);
        }
        other => panic!("expected a refusal, got {other}"),
    }
}
