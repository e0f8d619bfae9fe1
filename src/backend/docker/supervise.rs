//! One container from upload to exit: the script goes in, output streams out within its
//! cap, stdin is pumped in, the timeout and the caller's signals are enforced, usage is
//! sampled, and the ending is read from the container's state.

use super::client::Engine;
use super::error::{engine_message, DockerError};
use super::stats::{self, Peaks};
use crate::error::{SetupError, Step};
use crate::monitor::{signal_name, Ending, Outcome, Usage, Violation};
use crate::output::{CappedOutput, Stream};
use crate::policy::Policy;
use crate::run::Code;
use bollard::container::LogOutput;
use bollard::query_parameters::{
    AttachContainerOptions, KillContainerOptions, UploadToContainerOptions,
};
use futures_util::StreamExt;
use std::os::fd::AsFd;
use std::time::{Duration, Instant};
use tokio::signal::unix::{signal, SignalKind};

/// After the container stopped, how long its output streams may take to close.
const DRAIN: Duration = Duration::from_secs(5);
/// How long after the timeout a container that was killed may take to stop.
const GIVE_UP: Duration = Duration::from_secs(30);
/// How often to ask whether the container stopped when the engine's wait failed.
const POLL: Duration = Duration::from_millis(100);

/// SIGINT and SIGTERM to maibox: caught for the whole run, so that the container is
/// always removed. The first goes to the code; a second one kills the container.
pub struct Signals {
    int: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
}

impl Signals {
    pub fn install() -> Result<Signals, SetupError> {
        let e = |e: std::io::Error| {
            SetupError::new(Step::Signals, format!("catching SIGINT/SIGTERM: {e}"))
        };
        Ok(Signals {
            int: signal(SignalKind::interrupt()).map_err(e)?,
            term: signal(SignalKind::terminate()).map_err(e)?,
        })
    }

    pub async fn recv(&mut self) -> i32 {
        tokio::select! {
            _ = self.int.recv() => libc::SIGINT,
            _ = self.term.recv() => libc::SIGTERM,
        }
    }
}

pub fn setup_failed(e: SetupError) -> Outcome {
    Outcome {
        ending: Ending::SetupFailed(e),
        violations: Vec::new(),
        usage: Default::default(),
        stdout_bytes: 0,
        stderr_bytes: 0,
        truncated: false,
        stdout_ended_with_newline: true,
        interrupted_by: None,
        confined: None,
        denied_syscalls: Vec::new(),
        unreaped_init: None,
    }
}

async fn kill(engine: &Engine, id: &str, sig: &str) {
    let opts = KillContainerOptions {
        signal: sig.to_string(),
    };
    // A container that already stopped answers 409: nothing to do.
    let _ = engine.docker.kill_container(id, Some(opts)).await;
}

/// Uploads the script, attaches, starts, supervises. The caller removes the container.
#[allow(clippy::too_many_arguments)]
pub async fn run(
    engine: &Engine,
    id: &str,
    policy: &Policy,
    code: &Code,
    attach_stdin: bool,
    mut signals: Signals,
    mut sink: Option<crate::run::StatsSink>,
    applied: &mut super::Applied,
    t0: Instant,
) -> Outcome {
    let docker = &engine.docker;
    let mut t = Instant::now();
    let mut step = |name: &str, applied: &mut super::Applied| {
        applied
            .steps
            .push((name.to_string(), t.elapsed().as_micros() as u64));
        t = Instant::now();
    };
    let tar = match super::archive::script_tar(&code.bytes) {
        Ok(t) => t,
        Err(e) => return setup_failed(e),
    };
    let opts = UploadToContainerOptions {
        path: super::archive::DIR.into(),
        ..Default::default()
    };
    if let Err(e) = docker
        .upload_to_container(id, Some(opts), bollard::body_full(tar.into()))
        .await
    {
        return setup_failed(
            DockerError::api(Step::Script, "putting the script into the container", e).into(),
        );
    }
    step("upload", applied);
    // What the engine will apply, read back rather than assumed.
    match docker.inspect_container(id, None).await {
        Ok(c) => {
            applied.layers = c
                .host_config
                .as_ref()
                .map(|hc| super::spec::layers(hc, engine))
        }
        Err(e) => {
            return setup_failed(
                DockerError::api(Step::Container, "inspecting the created container", e).into(),
            )
        }
    }
    let opts = AttachContainerOptions {
        stdin: attach_stdin,
        stdout: true,
        stderr: true,
        stream: true,
        logs: false,
        detach_keys: None,
    };
    let attached = match docker.attach_container(id, Some(opts)).await {
        Ok(a) => a,
        Err(e) => {
            return setup_failed(
                DockerError::api(Step::Container, "attaching to the container", e).into(),
            )
        }
    };
    let mut output = attached.output;
    step("attach", applied);
    if let Err(e) = docker.start_container(id, None).await {
        return start_failed(e);
    }
    step("start", applied);
    applied.setup_ms = t0.elapsed().as_secs_f64() * 1000.0;
    let started = Instant::now();
    if attach_stdin {
        pump_stdin(attached.input);
    } else {
        drop(attached.input);
    }

    let deadline = tokio::time::Instant::from_std(started + policy.limits.timeout);
    let mut samples = stats::spawn_sampler(docker.clone(), id.to_string());
    let mut stopped = spawn_wait(docker.clone(), id.to_string());
    let mut exited = false;
    let mut poll = tokio::time::interval(POLL);
    poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut wait_failed = false;
    let mut out = CappedOutput::new(policy.limits.output_bytes);
    let mut violations = Vec::new();
    let mut peaks = Peaks::default();
    let mut killed = false;
    let mut interrupted_by = None;
    let mut output_done = false;
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    loop {
        tokio::select! {
            chunk = output.next(), if !output_done => match chunk {
                Some(Ok(LogOutput::StdOut { message })) | Some(Ok(LogOutput::Console { message })) => {
                    if out.forward(Stream::Stdout, &message, stdout.as_fd()) {
                        violations.push(Violation::Output { limit_bytes: policy.limits.output_bytes });
                        kill(engine, id, "SIGKILL").await;
                        killed = true;
                    }
                }
                Some(Ok(LogOutput::StdErr { message })) => {
                    if out.forward(Stream::Stderr, &message, stderr.as_fd()) {
                        violations.push(Violation::Output { limit_bytes: policy.limits.output_bytes });
                        kill(engine, id, "SIGKILL").await;
                        killed = true;
                    }
                }
                Some(Ok(LogOutput::StdIn { .. })) => {}
                Some(Err(_)) | None => {
                    output_done = true;
                }
            },
            _ = tokio::time::sleep_until(deadline), if !killed => {
                violations.push(Violation::Timeout { limit_s: policy.limits.timeout.as_secs_f64() });
                kill(engine, id, "SIGKILL").await;
                killed = true;
            },
            sig = signals.recv() => {
                if interrupted_by.is_some() {
                    kill(engine, id, "SIGKILL").await;
                    killed = true;
                } else {
                    interrupted_by = Some(sig);
                    kill(engine, id, &signal_name(sig)).await;
                }
            },
            Some(s) = samples.recv(), if !output_done => {
                peaks.add(s);
                write_sample(&mut sink, started.elapsed(), &s, peaks.memory_bytes);
                if killed {
                    continue;
                }
                if policy.has(crate::policy::Layer::CgroupLimits) && s.pids >= policy.limits.pids {
                    // The engine counts no refused forks: a container at its limit is
                    // refusing them (or about to), which ends the run as natively.
                    violations.push(Violation::Pids { limit: policy.limits.pids });
                    kill(engine, id, "SIGKILL").await;
                    killed = true;
                } else if let Some(limit) = policy.limits.cpu_time.filter(|l| u128::from(s.cpu_ns) > l.as_nanos()) {
                    violations.push(Violation::Cpu { limit_s: limit.as_secs_f64(), used_s: s.cpu_ns as f64 / 1e9 });
                    kill(engine, id, "SIGKILL").await;
                    killed = true;
                }
            },
            w = &mut stopped, if !exited && !wait_failed => match w {
                Ok(true) => exited = true,
                _ => wait_failed = true,
            },
            _ = poll.tick(), if wait_failed && !exited => {
                exited = !running(engine, id).await;
            },
            // Last resort when the engine neither stops the container nor says so: the
            // forced removal that follows kills it.
            _ = tokio::time::sleep_until(deadline + GIVE_UP), if killed => {
                eprintln!("maibox: warning: the engine did not report the killed container {id} stopped; removing it");
                break;
            },
            _ = tokio::time::sleep(DRAIN), if exited && !output_done => {
                tracing::debug!("the container stopped but its output did not end");
                break;
            },
        }
        // The streams close when the container ends, possibly just after the engine
        // says it stopped: both, so that no output is lost.
        if exited && output_done {
            break;
        }
    }
    let wall = started.elapsed();
    let state = docker
        .inspect_container(id, None)
        .await
        .ok()
        .and_then(|c| c.state);
    let (code, oom) = state
        .map(|s| (s.exit_code.unwrap_or(0), s.oom_killed.unwrap_or(false)))
        .unwrap_or((0, false));
    let ending = ending_of(code);
    if oom
        && !violations
            .iter()
            .any(|v| matches!(v, Violation::Memory { .. }))
    {
        // Samples rarely catch the last allocation before the kill, but the kernel's OOM
        // killer acts in a memory cgroup only once usage has reached its limit.
        peaks.memory_bytes = peaks.memory_bytes.max(policy.limits.memory_bytes);
        violations.push(Violation::Memory {
            limit_bytes: policy.limits.memory_bytes,
            peak_bytes: peaks.memory_bytes,
        });
    }
    if let Ending::Signaled { signal, name } = &ending {
        if *signal == libc::SIGSYS {
            violations.push(Violation::Seccomp {
                syscall: None,
                nr: None,
                signal: Some(name.clone()),
            });
        }
        if *signal == libc::SIGXCPU
            && !violations
                .iter()
                .any(|v| matches!(v, Violation::Cpu { .. }))
        {
            violations.push(Violation::Cpu {
                limit_s: policy
                    .limits
                    .cpu_time
                    .map(|d| d.as_secs_f64())
                    .unwrap_or(0.0),
                used_s: peaks.last.cpu_ns as f64 / 1e9,
            });
        }
    }
    let sampled = peaks.samples > 0 || oom;
    Outcome {
        ending,
        violations,
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
        stdout_bytes: out.stdout.bytes,
        stderr_bytes: out.stderr.bytes,
        truncated: out.truncated,
        stdout_ended_with_newline: out.stdout.ended_with_newline,
        interrupted_by,
        confined: None,
        denied_syscalls: Vec::new(),
        unreaped_init: None,
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
        let mut o = setup_failed(SetupError::new(Step::Exec, msg.clone()));
        o.ending = Ending::ExecFailed {
            errno: libc::ENOENT,
            message: msg,
        };
        return o;
    }
    if lower.contains("exec: ") && lower.contains("permission denied") {
        let mut o = setup_failed(SetupError::new(Step::Exec, msg.clone()));
        o.ending = Ending::ExecFailed {
            errno: libc::EACCES,
            message: msg,
        };
        return o;
    }
    setup_failed(SetupError::new(
        Step::Container,
        format!("starting the container: {msg}"),
    ))
}

/// Copies maibox's stdin into the container. The reading thread blocks in read(2) and is
/// left behind at exit; the engine closes the container's stdin at our EOF.
fn pump_stdin(mut input: std::pin::Pin<Box<dyn tokio::io::AsyncWrite + Send>>) {
    use tokio::io::AsyncWriteExt;
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Vec<u8>>(4);
    let spawned = std::thread::Builder::new()
        .name("maibox-stdin".into())
        .spawn(move || {
            let mut buf = vec![0u8; 65536];
            loop {
                match nix::unistd::read(0, &mut buf) {
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

/// One `--stats` line, in the native backend's shape.
fn write_sample(
    sink: &mut Option<crate::run::StatsSink>,
    t: Duration,
    s: &stats::Sample,
    peak: u64,
) {
    use std::io::Write;
    let Some(sink) = sink.as_mut() else { return };
    let line =
        serde_json::json!({"t_s": t.as_secs_f64(), "usage": s.as_usage(peak)}).to_string() + "\n";
    let _ = match sink {
        crate::run::StatsSink::Stderr => std::io::stderr().write_all(line.as_bytes()),
        crate::run::StatsSink::File(f) => f.write_all(line.as_bytes()),
    };
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
