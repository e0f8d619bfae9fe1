//! One container from upload to exit: the script goes in, output streams out within its
//! cap to the caller's sinks, stdin is pumped in, the timeout and the caller's signals are
//! enforced, usage is sampled, and the ending is read from the container's state.
//!
//! Like the native supervisor, a state ([`Watch`]) with one handler per event source
//! (output, the clock, signals, samples, the engine's wait) and one `finish`.

use super::client::Engine;
use super::error::{engine_message, DockerError};
use super::stats::{self, Peaks};
use crate::error::{SetupError, Step};
use crate::io::{Io, Out, Samples, Stdin};
use crate::outcome::{signal_name, Ending, Outcome, Usage, Violation};
use crate::output::{CappedOutput, Stream};
use crate::policy::Policy;
use bollard::container::LogOutput;
use bollard::query_parameters::{
    AttachContainerOptions, KillContainerOptions, UploadToContainerOptions,
};
use futures_util::StreamExt;
use std::time::{Duration, Instant};
use tokio::signal::unix::{signal, SignalKind};

/// After the container stopped, how long its output streams may take to close.
const DRAIN: Duration = Duration::from_secs(5);
/// How long after the timeout a container that was killed may take to stop.
const GIVE_UP: Duration = Duration::from_secs(30);
/// How often to ask whether the container stopped when the engine's wait failed.
const POLL: Duration = Duration::from_millis(100);

/// SIGINT and SIGTERM to maibox, for a caller that owns its process's signals (the
/// command line): caught for the whole run, so that the container is always removed.
/// The first goes to the code; a second one kills the container. Without them, `recv`
/// never resolves.
pub struct Signals {
    caught: Option<(tokio::signal::unix::Signal, tokio::signal::unix::Signal)>,
}

impl Signals {
    pub fn install(enabled: bool) -> Result<Signals, SetupError> {
        if !enabled {
            return Ok(Signals { caught: None });
        }
        let e = |e: std::io::Error| {
            SetupError::new(Step::Signals, format!("catching SIGINT/SIGTERM: {e}"))
        };
        Ok(Signals {
            caught: Some((
                signal(SignalKind::interrupt()).map_err(e)?,
                signal(SignalKind::terminate()).map_err(e)?,
            )),
        })
    }

    pub async fn recv(&mut self) -> i32 {
        match &mut self.caught {
            Some((int, term)) => tokio::select! {
                _ = int.recv() => libc::SIGINT,
                _ = term.recv() => libc::SIGTERM,
            },
            None => std::future::pending().await,
        }
    }
}

async fn kill(engine: &Engine, id: &str, sig: &str) {
    let opts = KillContainerOptions {
        signal: sig.to_string(),
    };
    // A container that already stopped answers 409: nothing to do.
    let _ = engine.docker.kill_container(id, Some(opts)).await;
}

/// The container a run goes to, once created.
pub struct Container<'a> {
    pub engine: &'a Engine,
    pub id: &'a str,
    pub policy: &'a Policy,
    /// When the backend's setup began.
    pub t0: Instant,
}

type Output = std::pin::Pin<
    Box<dyn futures_util::Stream<Item = Result<LogOutput, bollard::errors::Error>> + Send>,
>;

impl<'a> Container<'a> {
    /// Uploads the script, attaches, starts, supervises. The caller removes the container.
    pub async fn run(
        &self,
        script: &[u8],
        io: Io<'_>,
        signals: Signals,
        applied: &mut super::Applied,
        notices: &mut crate::io::Notices<'_>,
    ) -> Outcome {
        let mut t = Instant::now();
        let attached = match self.prepare(script, &io.stdin, applied, &mut t).await {
            Ok(a) => a,
            Err(o) => return *o,
        };
        if let Err(e) = self.engine.docker.start_container(self.id, None).await {
            return start_failed(e);
        }
        super::step("start", applied, &mut t);
        applied.setup_ms = self.t0.elapsed().as_secs_f64() * 1000.0;
        let started = Instant::now();
        match io.stdin {
            Stdin::Null => drop(attached.input),
            Stdin::Bytes(b) => write_stdin(b, attached.input),
            Stdin::Fd(fd) => match fd.try_clone_to_owned() {
                Ok(fd) => pump_stdin(fd, attached.input),
                Err(_) => drop(attached.input),
            },
        }
        let mut w = Watch {
            c: self,
            started,
            deadline: tokio::time::Instant::from_std(started + self.policy.limits.timeout),
            out: CappedOutput::new(self.policy.limits.output_bytes),
            sinks: [Out::new(io.stdout), Out::new(io.stderr)],
            samples: Samples::new(io.samples),
            violations: Vec::new(),
            peaks: Peaks::default(),
            killed: false,
            interrupted_by: None,
        };
        if w.watch(attached.output, signals).await {
            notices.warn(format!(
                "the engine did not report the killed container {} stopped; removing it",
                self.id
            ));
        }
        w.finish().await
    }

    /// The script in, what the engine will apply read back, the streams attached.
    async fn prepare(
        &self,
        script: &[u8],
        stdin: &Stdin<'_>,
        applied: &mut super::Applied,
        t: &mut Instant,
    ) -> Result<bollard::container::AttachContainerResults, Box<Outcome>> {
        let docker = &self.engine.docker;
        let fail = |e: SetupError| Box::new(Outcome::setup_failed(e));
        let tar = super::archive::script_tar(script).map_err(fail)?;
        let opts = UploadToContainerOptions {
            path: super::archive::DIR.into(),
            ..Default::default()
        };
        docker
            .upload_to_container(self.id, Some(opts), bollard::body_full(tar.into()))
            .await
            .map_err(|e| {
                fail(
                    DockerError::api(Step::Script, "putting the script into the container", e)
                        .into(),
                )
            })?;
        super::step("upload", applied, t);
        // What the engine will apply, read back rather than assumed.
        let c = docker.inspect_container(self.id, None).await.map_err(|e| {
            fail(DockerError::api(Step::Container, "inspecting the created container", e).into())
        })?;
        applied.layers = c
            .host_config
            .as_ref()
            .map(|hc| super::spec::layers(hc, self.engine));
        let opts = AttachContainerOptions {
            stdin: !matches!(stdin, Stdin::Null),
            stdout: true,
            stderr: true,
            stream: true,
            logs: false,
            detach_keys: None,
        };
        let attached = docker
            .attach_container(self.id, Some(opts))
            .await
            .map_err(|e| {
                fail(DockerError::api(Step::Container, "attaching to the container", e).into())
            })?;
        super::step("attach", applied, t);
        Ok(attached)
    }
}

/// The run while the container runs.
struct Watch<'a, 'c> {
    c: &'c Container<'c>,
    started: Instant,
    deadline: tokio::time::Instant,
    out: CappedOutput,
    sinks: [Out<'a>; 2],
    samples: Samples<'a>,
    violations: Vec<Violation>,
    peaks: Peaks,
    killed: bool,
    interrupted_by: Option<i32>,
}

impl Watch<'_, '_> {
    async fn kill(&mut self, sig: &str) {
        kill(self.c.engine, self.c.id, sig).await;
        if sig == "SIGKILL" {
            self.killed = true;
        }
    }

    async fn violated(&mut self, v: Violation) {
        self.violations.push(v);
        self.kill("SIGKILL").await;
    }

    /// Until the container is gone and its output read. True when the engine never
    /// said a killed container stopped (the caller's removal then kills it).
    async fn watch(&mut self, mut output: Output, mut signals: Signals) -> bool {
        let docker = &self.c.engine.docker;
        let mut samples = stats::spawn_sampler(docker.clone(), self.c.id.to_string());
        let mut stopped = spawn_wait(docker.clone(), self.c.id.to_string());
        let mut poll = tokio::time::interval(POLL);
        poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let (mut exited, mut wait_failed, mut output_done) = (false, false, false);
        loop {
            tokio::select! {
                chunk = output.next(), if !output_done => match chunk {
                    Some(Ok(c)) => self.on_output(c).await,
                    Some(Err(_)) | None => output_done = true,
                },
                _ = tokio::time::sleep_until(self.deadline), if !self.killed => {
                    let limit_s = self.c.policy.limits.timeout.as_secs_f64();
                    self.violated(Violation::Timeout { limit_s }).await;
                },
                sig = signals.recv() => self.on_signal(sig).await,
                Some(s) = samples.recv(), if !output_done => self.on_sample(s).await,
                w = &mut stopped, if !exited && !wait_failed => match w {
                    Ok(true) => exited = true,
                    _ => wait_failed = true,
                },
                _ = poll.tick(), if wait_failed && !exited => {
                    exited = !running(self.c.engine, self.c.id).await;
                },
                // Last resort when the engine neither stops the container nor says so: the
                // forced removal that follows kills it.
                _ = tokio::time::sleep_until(self.deadline + GIVE_UP), if self.killed => {
                    return true;
                },
                _ = tokio::time::sleep(DRAIN), if exited && !output_done => {
                    tracing::debug!("the container stopped but its output did not end");
                    break;
                },
            }
            // The streams close when the container ends, possibly just after the engine
            // says it stopped: both, so that no output is lost.
            if exited && output_done {
                return false;
            }
        }
        false
    }

    async fn on_output(&mut self, chunk: LogOutput) {
        let (stream, message) = match chunk {
            LogOutput::StdOut { message } | LogOutput::Console { message } => {
                (Stream::Stdout, message)
            }
            LogOutput::StdErr { message } => (Stream::Stderr, message),
            LogOutput::StdIn { .. } => return,
        };
        let sink = &mut self.sinks[stream as usize];
        if self.out.forward(stream, &message, &mut |d| sink.write(d)) {
            let limit_bytes = self.c.policy.limits.output_bytes;
            self.violated(Violation::Output { limit_bytes }).await;
        }
    }

    async fn on_signal(&mut self, sig: i32) {
        if self.interrupted_by.is_some() {
            self.kill("SIGKILL").await;
        } else {
            self.interrupted_by = Some(sig);
            self.kill(&signal_name(sig)).await;
        }
    }

    async fn on_sample(&mut self, s: stats::Sample) {
        self.peaks.add(s);
        self.samples
            .send(self.started.elapsed(), &s.as_usage(self.peaks.memory_bytes));
        if self.killed {
            return;
        }
        let limits = &self.c.policy.limits;
        if self.c.policy.has(crate::policy::Layer::CgroupLimits) && s.pids >= limits.pids {
            // The engine counts no refused forks: a container at its limit is
            // refusing them (or about to), which ends the run as natively.
            let limit = limits.pids;
            self.violated(Violation::Pids { limit }).await;
        } else if let Some(limit) = limits
            .cpu_time
            .filter(|l| u128::from(s.cpu_ns) > l.as_nanos())
        {
            let (limit_s, used_s) = (limit.as_secs_f64(), s.cpu_ns as f64 / 1e9);
            self.violated(Violation::Cpu { limit_s, used_s }).await;
        }
    }

    /// The ending from the container's state, the OOM killer and signal violations.
    async fn finish(mut self) -> Outcome {
        let wall = self.started.elapsed();
        let state = self
            .c
            .engine
            .docker
            .inspect_container(self.c.id, None)
            .await
            .ok()
            .and_then(|c| c.state);
        let (code, oom) = state
            .map(|s| (s.exit_code.unwrap_or(0), s.oom_killed.unwrap_or(false)))
            .unwrap_or((0, false));
        let limits = &self.c.policy.limits;
        if oom
            && !self
                .violations
                .iter()
                .any(|v| matches!(v, Violation::Memory { .. }))
        {
            // Samples rarely catch the last allocation before the kill, but the kernel's OOM
            // killer acts in a memory cgroup only once usage has reached its limit.
            self.peaks.memory_bytes = self.peaks.memory_bytes.max(limits.memory_bytes);
            self.violations.push(Violation::Memory {
                limit_bytes: limits.memory_bytes,
                peak_bytes: self.peaks.memory_bytes,
            });
        }
        let peaks = self.peaks;
        let sampled = peaks.samples > 0 || oom;
        let [o, e] = self.sinks;
        let mut outcome = Outcome {
            ending: ending_of(code),
            violations: self.violations,
            usage: Usage {
                wall_time_s: wall.as_secs_f64(),
                cpu_user_s: peaks.last.cpu_user_ns as f64 / 1e9,
                cpu_system_s: peaks.last.cpu_system_ns as f64 / 1e9,
                // Per-process figures are not in the engine's API.
                peak_rss_bytes: 0,
                peak_memory_bytes: sampled.then_some(peaks.memory_bytes),
                max_pids: sampled.then_some(peaks.pids),
                cgroup_cpu_s: sampled.then_some(peaks.last.cpu_ns as f64 / 1e9),
            },
            stdout_bytes: self.out.stdout.bytes,
            stderr_bytes: self.out.stderr.bytes,
            stdout: o.captured,
            stderr: e.captured,
            truncated: self.out.truncated,
            stdout_ended_with_newline: self.out.stdout.ended_with_newline,
            interrupted_by: self.interrupted_by,
            confined: None,
            denied_syscalls: Vec::new(),
            unreaped_init: None,
        };
        let cpu_limit_s = limits.cpu_time.map(|d| d.as_secs_f64()).unwrap_or(0.0);
        outcome.signal_violations(cpu_limit_s, peaks.last.cpu_ns as f64 / 1e9);
        outcome
    }
}

/// Resolves when the container is no longer running (`true`), or `false` when the
/// engine's wait failed and the caller must poll instead. Asked after the start, so
/// `not-running` cannot miss an exit that already happened.
fn spawn_wait(docker: bollard::Docker, id: String) -> tokio::sync::oneshot::Receiver<bool> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let opts = bollard::query_parameters::WaitContainerOptions {
            condition: "not-running".into(),
        };
        let ok = match docker.wait_container(&id, Some(opts)).next().await {
            // bollard reports a non-zero exit code as an error: it stopped all the same.
            Some(Ok(_)) | Some(Err(bollard::errors::Error::DockerContainerWaitError { .. })) => {
                true
            }
            _ => false,
        };
        let _ = tx.send(ok);
    });
    rx
}

async fn running(engine: &Engine, id: &str) -> bool {
    match engine.docker.inspect_container(id, None).await {
        Ok(c) => c.state.and_then(|s| s.running).unwrap_or(false),
        Err(_) => false,
    }
}

/// Docker gives 128+N for a container whose process died of signal N (docker-init
/// passes its child's death on the same way); it cannot tell that apart from the code
/// calling `sys.exit(128+N)`, which gets the same exit code either way.
fn ending_of(code: i64) -> Ending {
    match code {
        129..=192 => {
            let s = (code - 128) as i32;
            Ending::Signaled {
                signal: s,
                name: signal_name(s),
            }
        }
        c => Ending::Exited {
            code: i32::try_from(c).unwrap_or(255),
        },
    }
}

/// The engine refuses to start a container whose program it cannot execute; that is
/// the native backend's exec failure (127/126), anything else a setup failure.
fn start_failed(e: bollard::errors::Error) -> Outcome {
    let msg = engine_message(&e);
    let lower = msg.to_lowercase();
    // Only the runtime's exec of the program itself: a runtime binary or a mount
    // that is missing also says "no such file", and is a setup failure.
    if lower.contains("executable file not found") {
        let mut o = Outcome::setup_failed(SetupError::new(Step::Exec, msg.clone()));
        o.ending = Ending::ExecFailed {
            errno: libc::ENOENT,
            message: msg,
        };
        return o;
    }
    if lower.contains("exec: ") && lower.contains("permission denied") {
        let mut o = Outcome::setup_failed(SetupError::new(Step::Exec, msg.clone()));
        o.ending = Ending::ExecFailed {
            errno: libc::EACCES,
            message: msg,
        };
        return o;
    }
    Outcome::setup_failed(SetupError::new(
        Step::Container,
        format!("starting the container: {msg}"),
    ))
}

type Input = std::pin::Pin<Box<dyn tokio::io::AsyncWrite + Send>>;

/// Copies the caller's descriptor into the container. The reading thread blocks in
/// read(2) and is left behind at the run's end; the engine closes the container's stdin
/// at our EOF.
fn pump_stdin(from: std::os::fd::OwnedFd, mut input: Input) {
    use tokio::io::AsyncWriteExt;
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Vec<u8>>(4);
    let spawned = std::thread::Builder::new()
        .name("maibox-stdin".into())
        .spawn(move || {
            let mut buf = vec![0u8; 65536];
            loop {
                match nix::unistd::read(std::os::fd::AsRawFd::as_raw_fd(&from), &mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        if tx.blocking_send(buf[..n].to_vec()).is_err() {
                            break;
                        }
                    }
                    Err(nix::errno::Errno::EINTR) => continue,
                    Err(_) => break,
                }
            }
        });
    if spawned.is_err() {
        return;
    }
    tokio::spawn(async move {
        while let Some(chunk) = rx.recv().await {
            if input.write_all(&chunk).await.is_err() {
                return;
            }
        }
        let _ = input.shutdown().await;
    });
}

/// Writes the caller's bytes into the container, then end-of-file.
fn write_stdin(bytes: Vec<u8>, mut input: Input) {
    use tokio::io::AsyncWriteExt;
    tokio::spawn(async move {
        if input.write_all(&bytes).await.is_ok() {
            let _ = input.shutdown().await;
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_above_128_are_signals() {
        assert!(matches!(ending_of(3), Ending::Exited { code: 3 }));
        assert!(matches!(ending_of(137), Ending::Signaled { signal: 9, .. }));
        assert!(matches!(ending_of(255), Ending::Exited { code: 255 }));
    }
}
