//! The work done while the sandbox sets up (the audit log's start record) gates the
//! code: if it fails, the code never starts; if it succeeds, the code runs after it.
//!
//! Library-level: the failure cannot be provoked through the binary once the log has
//! opened. One test per binary run, so the test process has a single busy thread
//! when it clones the sandbox.

use maibox::config::{Config, TrustLevel};
use maibox::engine::{StdinMode, Step};
use maibox::monitor::Ending;
use maibox::policy::{Overrides, Policy};
use maibox::run::{self, BeforeCode, Code, Context};
use std::cell::Cell;

fn run_with(before: BeforeCode) -> maibox::run::Run {
    let (cfg, _) = Config::load(None).unwrap();
    let policy = Policy::build(&cfg, TrustLevel::Untrusted, &Overrides::default()).unwrap();
    let code = Code {
        bytes: b"print('the code ran')\n".to_vec(),
        origin: "-c".into(),
    };
    let ctx = Context {
        proxy: None,
        stats: None,
        run_id: run::new_run_id(),
        assessment: None,
        decision: None,
        defer_teardown: false,
    };
    run::run(
        &policy,
        &code,
        &[],
        StdinMode::Null,
        ctx,
        &cfg.network,
        before,
    )
}

#[test]
fn before_code_gates_the_code() {
    // Failing: the sandbox is ended before the code starts; nothing is printed.
    let r = run_with(BeforeCode::new(|| Err("disk full".into())));
    match &r.outcome.ending {
        Ending::SetupFailed(e) => {
            assert_eq!(e.step, Step::Audit);
            assert!(e.message.contains("disk full"), "{e}");
        }
        other => panic!("expected a setup failure, got {other:?}"),
    }
    assert_eq!(r.outcome.stdout_bytes, 0, "the code ran");

    // Control: succeeding, it runs exactly once, and the code (which prints) runs.
    let calls = Cell::new(0);
    let r = run_with(BeforeCode::new(|| {
        std::thread::sleep(std::time::Duration::from_millis(50));
        calls.set(calls.get() + 1);
        Ok(())
    }));
    assert!(
        matches!(r.outcome.ending, Ending::Exited { code: 0 }),
        "{:?}",
        r.outcome.ending
    );
    assert_eq!(calls.get(), 1);
    assert!(r.outcome.stdout_bytes > 0, "the code did not run");
    // The sandbox was released only after the work: its setup lasted at least as
    // long as the work did.
    assert!(r.report.setup_ms >= 50.0, "setup {} ms", r.report.setup_ms);
}
