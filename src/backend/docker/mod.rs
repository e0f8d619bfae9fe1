//! The Docker backend: the same [`Policy`] handed to a Docker engine through its API
//! (bollard), supervised and reported like a native run.
//!
//! The async client runs on a current-thread tokio runtime made for the run and
//! dropped after it, so the native path never pays for it.

pub mod archive;
pub mod client;
pub mod error;
mod image;
pub mod labels;
pub mod report;
pub mod spec;
mod stats;
mod supervise;

use super::Job;
use crate::error::{SetupError, Step};
use crate::io::{Io, Notices, Stdin};
use crate::outcome::Outcome;
use crate::report::{EngineInfo, Facts};

pub use report::planned_layers;

/// What the engine did, for the report.
#[derive(Default)]
pub struct Applied {
    pub layers: Option<crate::report::Layers>,
    pub engine: Option<EngineInfo>,
    pub setup_ms: f64,
    pub steps: Vec<(String, u64)>,
}

/// A run that ended before the engine was asked for anything.
pub(crate) fn failed(e: SetupError) -> (Outcome, Facts) {
    let outcome = Outcome::setup_failed(e);
    let facts = report::facts(Applied::default());
    (outcome, facts)
}

pub(crate) fn run(job: &Job, io: Io, notices: &mut Notices) -> (Outcome, Facts) {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let e = SetupError::new(Step::Engine, format!("starting the Docker client: {e}"));
            return failed(e);
        }
    };
    let (outcome, applied) = rt.block_on(session(job, io, notices));
    // The stdin reader may still be blocked in read(2): do not wait for it.
    rt.shutdown_background();
    (outcome, report::facts(applied))
}

/// Records how long a step took, from the previous one.
fn step(name: &str, applied: &mut Applied, t: &mut std::time::Instant) {
    applied
        .steps
        .push((name.to_string(), t.elapsed().as_micros() as u64));
    *t = std::time::Instant::now();
}

/// The run's image, pulled if the policy says so. A pull can take long: Ctrl-C
/// meanwhile ends the run before any container exists.
async fn ensure_image(
    engine: &client::Engine,
    policy: &crate::policy::Policy,
    signals: &mut supervise::Signals,
) -> Result<(), SetupError> {
    tokio::select! {
        r = image::ensure(engine, &policy.docker.image, policy.docker.pull) => r.map_err(SetupError::from),
        sig = signals.recv() => Err(SetupError::new(
            Step::Image,
            format!("interrupted by {} before the code ran", crate::outcome::signal_name(sig)),
        )),
    }
}

/// Creates the run's container (not started); returns its id.
async fn create(engine: &client::Engine, job: &Job<'_>, io: &Io<'_>) -> Result<String, SetupError> {
    let req = spec::Request {
        policy: job.policy,
        args: job.args,
        stdin: !matches!(io.stdin, Stdin::Null),
        labels: labels::for_run(job.run_id),
    };
    match engine
        .docker
        .create_container(None, spec::container(&req))
        .await
    {
        Ok(c) => Ok(c.id),
        Err(e) => Err(error::DockerError::api(Step::Container, "creating the container", e).into()),
    }
}

async fn session(job: &Job<'_>, io: Io<'_>, notices: &mut Notices<'_>) -> (Outcome, Applied) {
    let policy = job.policy;
    let t0 = std::time::Instant::now();
    let mut applied = Applied::default();
    let mut t = t0;
    // Caught from here on, so that Ctrl-C can never leave a container behind.
    let mut signals = match supervise::Signals::install(io.forward_signals) {
        Ok(s) => s,
        Err(e) => return (Outcome::setup_failed(e), applied),
    };
    let request_timeout = policy.limits.timeout + std::time::Duration::from_secs(60);
    let engine = match client::connect(request_timeout).await {
        Ok(e) => e,
        Err(e) => return (Outcome::setup_failed(e.into()), applied),
    };
    applied.engine = Some(report::engine_info(&engine, policy));
    step("engine", &mut applied, &mut t);
    labels::cleanup_stale(&engine.docker).await;
    step("cleanup-stale", &mut applied, &mut t);
    if let Err(e) = ensure_image(&engine, job.policy, &mut signals).await {
        return (Outcome::setup_failed(e), applied);
    }
    step("image", &mut applied, &mut t);
    let id = match create(&engine, job, &io).await {
        Ok(id) => id,
        Err(e) => return (Outcome::setup_failed(e), applied),
    };
    if let Some(e) = applied.engine.as_mut() {
        e.container_id = Some(id.clone());
    }
    step("create", &mut applied, &mut t);
    // Every path from here removes the container; a maibox killed before that leaves
    // it to the next run's `cleanup_stale`.
    let run = supervise::Container {
        engine: &engine,
        id: &id,
        policy,
        t0,
    };
    let outcome = run
        .run(&job.code.bytes, io, signals, &mut applied, notices)
        .await;
    if let Err(e) = labels::remove(&engine.docker, &id).await {
        notices.warn(format!(
            "cannot remove container {id}: {} (the next docker-backend run retries)",
            error::engine_message(&e)
        ));
    }
    (outcome, applied)
}
