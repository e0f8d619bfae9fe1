//! Who isolates a run: the native engine ([`native`]) or a Docker engine ([`docker`]).
//! Both take the same [`Job`] and hand back the run's [`Outcome`] and what only they
//! know of it ([`Facts`]); the session turns those into the report.

pub mod docker;
pub(crate) mod native;

pub use crate::config::Backend;

use crate::code::Code;
use crate::error::{SetupError, Step};
use crate::io::{Io, Notices};
use crate::outcome::Outcome;
use crate::policy::Policy;
use crate::report::Facts;
use crate::timeline::Timeline;

/// One run, as every backend gets it.
pub(crate) struct Job<'a> {
    pub policy: &'a Policy,
    pub code: &'a Code,
    pub args: &'a [String],
    pub run_id: &'a str,
    pub net: &'a crate::net::NetConfig,
    /// Leave init's exit and the cgroup's removal to a cleaner process
    /// ([`crate::teardown`]), for a caller that exits right after the run: the
    /// CLI. A caller that lives on (a library user, a server) keeps them inline.
    pub defer_teardown: bool,
    pub timeline: &'a Timeline,
    /// Clone the sandbox through this spawner process (a server's: see
    /// [`crate::engine::spawner`]).
    pub spawner: Option<&'a crate::engine::spawner::Spawner>,
}

/// What must be done before the code runs but need not delay the sandbox (the audit
/// log's start record, with its fsync): it runs once, while the sandbox builds its
/// view, or, on a run that ends before that, before the backend returns. If it fails,
/// the code never starts.
#[derive(Default)]
pub(crate) struct BeforeCode<'a> {
    work: Option<Box<dyn FnOnce() -> Result<(), String> + 'a>>,
}

impl<'a> BeforeCode<'a> {
    pub fn new(work: impl FnOnce() -> Result<(), String> + 'a) -> Self {
        BeforeCode {
            work: Some(Box::new(work)),
        }
    }

    pub fn run(&mut self) -> Result<(), SetupError> {
        match self.work.take() {
            Some(w) => w().map_err(|e| SetupError::new(Step::Audit, e)),
            None => Ok(()),
        }
    }
}

/// What runs a decided job: the backends, or a warm sandbox.
pub(crate) type Runner<'a> = dyn Fn(&Job, Io, &mut Notices, BeforeCode) -> (Outcome, Facts) + 'a;

/// Runs `job` on its policy's backend.
pub(crate) fn run(
    job: &Job,
    io: Io,
    notices: &mut Notices,
    mut before_code: BeforeCode,
) -> (Outcome, Facts) {
    let r = match job.policy.backend {
        Backend::Docker => match before_code.run() {
            Ok(()) => docker::run(job, io, notices),
            Err(e) => docker::failed(e),
        },
        Backend::Native => native::run(job, io, notices, &mut before_code),
    };
    // A run that failed before the sandbox was far along still gets its start
    // recorded (ahead of the end the caller records).
    let _ = before_code.run();
    r
}

/// The layers `policy` asks its backend for: what the audit log's start record says,
/// written before the sandbox has confirmed them (the report, and the end record,
/// have what was applied). The seccomp filter, Landlock and the cgroup limits are
/// asked for unless switched off: a start record that left them out read as a run
/// without them.
pub(crate) fn planned_layers(policy: &Policy) -> crate::report::Layers {
    use crate::policy::Layer;
    match policy.backend {
        Backend::Native => crate::report::Layers {
            seccomp: policy.has(Layer::Seccomp),
            landlock: policy.has(Layer::Landlock),
            cgroup_limits: policy.has(Layer::CgroupLimits),
            ..crate::report::Layers::native(policy)
        },
        Backend::Docker => docker::planned_layers(policy),
    }
}

#[cfg(test)]
mod tests {
    //! The work done while the sandbox sets up (the audit log's start record) gates the
    //! code: if it fails, the code never starts; if it succeeds, the code runs after it.
    //! Library-level: the failure cannot be provoked through the binary once the log
    //! has opened.
    use super::*;
    use crate::config::{Config, TrustLevel};
    use crate::outcome::Ending;
    use std::cell::Cell;

    fn run_with(before: BeforeCode) -> (Outcome, Facts) {
        let (cfg, _) = Config::load(None).unwrap();
        let policy = Policy::build(&cfg, TrustLevel::Untrusted, &Default::default()).unwrap();
        let code = Code::inline("print('the code ran')\n").unwrap();
        let timeline = Timeline::new();
        let job = Job {
            policy: &policy,
            code: &code,
            args: &[],
            run_id: &crate::session::new_run_id(),
            net: &cfg.network,
            defer_teardown: false,
            timeline: &timeline,
            spawner: None,
        };
        run(&job, Io::capture(), &mut Notices::new(None), before)
    }

    #[test]
    fn before_code_gates_the_code() {
        // Failing: the sandbox is ended before the code starts; nothing is printed.
        let (o, _) = run_with(BeforeCode::new(|| Err("disk full".into())));
        match &o.ending {
            Ending::SetupFailed(e) => {
                assert_eq!(e.step, Step::Audit);
                assert!(e.message.contains("disk full"), "{e}");
            }
            other => panic!("expected a setup failure, got {other:?}"),
        }
        assert_eq!(o.stdout_bytes, 0, "the code ran");

        // Control: succeeding, it runs exactly once, and the code (which prints) runs.
        let calls = Cell::new(0);
        let (o, facts) = run_with(BeforeCode::new(|| {
            std::thread::sleep(std::time::Duration::from_millis(50));
            calls.set(calls.get() + 1);
            Ok(())
        }));
        assert!(
            matches!(o.ending, Ending::Exited { code: 0 }),
            "{:?}",
            o.ending
        );
        assert_eq!(calls.get(), 1);
        assert_eq!(o.stdout, b"the code ran\n");
        // The sandbox was released only after the work: its setup lasted at least as
        // long as the work did.
        assert!(facts.setup_ms >= 50.0, "setup {} ms", facts.setup_ms);
    }
}
