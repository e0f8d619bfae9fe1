//! One connection, one request: the peer is checked, the request read and turned into a
//! [`Sandbox`], admitted, run in a warm sandbox (or cold when none fits), and answered
//! with the run's output, notices and samples as they come and the report at the end.

use super::protocol::{self, kind, Failure, Request, StdinSpec};
use super::Server;
use crate::io::{Io, Notice, Sample, Sink, Stdin};
use crate::session::{Code, Error, Run};
use crate::warm::{NotServable, Remains, Warm};
use crate::{Sandbox, Timeline};
use std::io::Write;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

/// How long a client may take to send its request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a write to a client may block before the client counts as gone.
const SEND_TIMEOUT: Duration = Duration::from_secs(10);

/// Where the audit log says a request's script came from: the client's absolute
/// path, else its name as given (`-c` and `-` name no file).
fn recorded_path(req: &Request) -> Option<String> {
    let given = req.path.as_ref().filter(|p| p.starts_with('/'));
    let origin = req.origin.as_ref().filter(|o| Code::names_file(o));
    given.or(origin).cloned()
}

/// Serves one connection to its end.
pub fn handle(server: &Server, stream: UnixStream) {
    let started = Instant::now();
    let _ = stream.set_read_timeout(Some(REQUEST_TIMEOUT));
    let _ = stream.set_write_timeout(Some(SEND_TIMEOUT));
    let result = serve_one(server, &stream, started);
    if let Err(f) = result {
        let payload = serde_json::to_vec(&f).unwrap_or_default();
        let _ = protocol::write_frame(&mut &stream, kind::ERROR, &payload);
    }
}

fn serve_one(server: &Server, stream: &UnixStream, started: Instant) -> Result<(), Failure> {
    let caller = server.peer(stream)?;
    let req = match protocol::read_frame(&mut &*stream) {
        Ok(Some((kind::REQUEST, payload))) => protocol::parse_request(&payload)?,
        Ok(Some((k, _))) => {
            return Err(Failure::new(
                "protocol",
                format!("expected a request frame (Q) first, got {:?}", k as char),
            ))
        }
        Ok(None) => return Ok(()),
        Err(e) => {
            return Err(Failure::new(
                "protocol",
                format!("reading the request: {e}"),
            ))
        }
    };
    let sandbox = server.sandbox_for(&req, caller)?;
    let code = Code {
        bytes: req.code.clone().into_bytes(),
        origin: req.origin.clone().unwrap_or_else(|| "-c".into()),
        path: recorded_path(&req),
    };
    let input = Input::open(stream, &req)?;
    let permit = server
        .admission
        .admit(super::demand(&sandbox, &req))
        .map_err(|b| {
            Failure::new(
                "busy",
                format!(
                    "the server's queue is full ({} requests wait); try again shortly",
                    b.waiting
                ),
            )
        })?;
    let admitted = Instant::now();
    let mut out = Output::new(stream, req.stream, req.samples);
    let (result, served) = run(server, &sandbox, &code, &req.args, &input, &mut out);
    drop(permit);
    let mut run = result.map_err(failure)?;
    let sent = out.finish(&run, served.with_times(started, admitted));
    // The client has its report; the end record, already in the log, is made
    // durable now rather than on the request's path.
    if let Err(e) = run.sync_audit() {
        eprintln!("maibox serve: audit log: {e}");
    }
    sent
}

/// How the request was served, for the report's `server` object.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Served {
    pub warm: bool,
    /// Where a warm run's interpreter came from (`server.warm_mode`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warm_mode: Option<crate::config::WarmMode>,
    pub pid: u32,
    /// Waiting for admission, and for a warm sandbox, in ms.
    pub queue_ms: f64,
    pub pool_wait_ms: f64,
    /// Why the run was cold, when it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cold_because: Option<String>,
    /// From the request's arrival to its report, in ms.
    pub total_ms: f64,
    /// Where a warm run's time went, phase by phase, in ms.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub phases_ms: Vec<(&'static str, f64)>,
    #[serde(skip)]
    admitted: Option<Instant>,
    #[serde(skip)]
    arrived: Option<Instant>,
}

impl Served {
    /// A run served by this process, before anything is known of how.
    fn by_this_server() -> Served {
        Served {
            warm: false,
            warm_mode: None,
            pid: std::process::id(),
            queue_ms: 0.0,
            pool_wait_ms: 0.0,
            cold_because: None,
            total_ms: 0.0,
            phases_ms: Vec::new(),
            admitted: None,
            arrived: None,
        }
    }

    fn with_times(mut self, arrived: Instant, admitted: Instant) -> Served {
        self.queue_ms = admitted.duration_since(arrived).as_secs_f64() * 1e3;
        self.admitted = Some(admitted);
        self.arrived = Some(arrived);
        self
    }
}

/// The run: in a warm sandbox of the level the gate decides, else cold.
fn run(
    server: &Server,
    sandbox: &Sandbox,
    code: &Code,
    args: &[String],
    input: &Input,
    out: &mut Output,
) -> (Result<Run, Error>, Served) {
    let mut served = Served::by_this_server();
    let mut level = sandbox.level();
    // At most twice: the gate may send the code to another level's pool.
    for _ in 0..2 {
        let Some(pool) = server.pool(level) else {
            served.cold_because = Some(format!("no warm sandboxes at level {level}"));
            break;
        };
        let t = Instant::now();
        let warm = pool.take(server.cfg.pool_wait.0);
        served.pool_wait_ms += t.elapsed().as_secs_f64() * 1e3;
        let Some((warm, serving)) = warm else {
            served.cold_because = Some("no warm sandbox was ready in time".into());
            break;
        };
        let timeline = Timeline::new();
        let result = run_warm(warm, sandbox, code, args, input, out, &timeline);
        drop(serving);
        served.phases_ms = timeline
            .phases()
            .into_iter()
            .map(|(n, d)| (n, d.as_secs_f64() * 1e3))
            .collect();
        match result {
            Ok((run, remains)) => {
                server.reap(remains);
                served.warm = true;
                served.warm_mode = Some(pool.mode);
                return (Ok(run), served);
            }
            Err(Err(e)) => return (Err(e), served),
            Err(Ok((unused, why))) => {
                // Unused: it goes back to be destroyed with the others, not reused.
                server.reap(unused.into());
                match why {
                    NotServable::Level(l) => level = l,
                    NotServable::Differs(d) => {
                        served.cold_because = Some(d);
                        break;
                    }
                }
            }
        }
    }
    let io = out.io(input);
    (sandbox.run(code, args, io), served)
}

#[allow(clippy::result_large_err)]
fn run_warm(
    warm: Warm,
    sandbox: &Sandbox,
    code: &Code,
    args: &[String],
    input: &Input,
    out: &mut Output,
    timeline: &Timeline,
) -> Result<(Run, Remains), Result<(Warm, NotServable), Error>> {
    let io = out.io(input);
    warm.run(sandbox, code, args, io, timeline)
}

/// The request's stdin, and the descriptor that says the client went away.
struct Input {
    data: Option<Vec<u8>>,
    /// Streamed stdin: the read end of a pipe a reader thread fills from `I` frames.
    pipe: Option<OwnedFd>,
    /// Readable once the client closed its side (read by a watcher thread).
    gone: OwnedFd,
}

impl Input {
    fn open(stream: &UnixStream, req: &Request) -> Result<Input, Failure> {
        let internal = |e: std::io::Error| Failure::new("internal", format!("{e}"));
        let (gone_r, gone_w) =
            nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(|e| internal(e.into()))?;
        let (data, stream_stdin) = match &req.stdin {
            None => (None, false),
            Some(StdinSpec::Data { data }) => (Some(data.clone().into_bytes()), false),
            Some(StdinSpec::Mode(m)) if m == "stream" => (None, true),
            Some(StdinSpec::Mode(m)) => {
                return Err(Failure::new(
                    "invalid",
                    format!("stdin {m:?}: give {{\"data\": TEXT}} or \"stream\""),
                ))
            }
        };
        let (pipe_r, pipe_w) = if stream_stdin {
            let (r, w) =
                nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(|e| internal(e.into()))?;
            (Some(r), Some(w))
        } else {
            (None, None)
        };
        let reader = stream.try_clone().map_err(internal)?;
        std::thread::Builder::new()
            .name("maibox-conn-reader".into())
            .spawn(move || watch_client(reader, pipe_w, gone_w))
            .map_err(internal)?;
        Ok(Input {
            data,
            pipe: pipe_r,
            gone: gone_r,
        })
    }

    fn stdin(&self) -> Stdin<'_> {
        match (&self.data, &self.pipe) {
            (Some(d), _) => Stdin::Bytes(d.clone()),
            (None, Some(p)) => Stdin::Fd(p.as_fd()),
            (None, None) => Stdin::Null,
        }
    }
}

/// Reads what the client sends after its request: stdin frames into the pipe, then
/// nothing until it closes its side, which closes `gone` (the run is then cancelled).
fn watch_client(stream: UnixStream, mut pipe: Option<OwnedFd>, gone: OwnedFd) {
    let _ = stream.set_read_timeout(None);
    loop {
        match protocol::read_frame(&mut &stream) {
            Ok(Some((kind::STDIN, data))) => {
                if let Some(p) = &pipe {
                    let mut f = std::fs::File::from(p.try_clone().expect("dup of an open pipe"));
                    if f.write_all(&data).is_err() {
                        pipe = None;
                    }
                }
            }
            Ok(Some((kind::STDIN_END, _))) => pipe = None,
            Ok(Some(_)) => {}
            Ok(None) | Err(_) => break,
        }
    }
    drop(pipe);
    drop(gone);
}

/// Where the run's events go: frames to the client as they come, or kept for the end.
struct Output<'s> {
    stream: &'s UnixStream,
    live: bool,
    out: Frames<'s>,
    err: Frames<'s>,
    notice: Callback<'s, Notice>,
    sample: Option<Callback<'s, Sample>>,
}

type Callback<'s, T> = Box<dyn FnMut(&T) + Send + 's>;

/// One stream of the code's output as frames of one kind.
struct Frames<'s> {
    stream: &'s UnixStream,
    kind: u8,
}

impl Write for Frames<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        protocol::write_frame(&mut &*self.stream, self.kind, buf)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A JSON frame of `kind` with `value`; a client that went away is noticed elsewhere.
fn send_json(stream: &UnixStream, kind: u8, value: &impl serde::Serialize) {
    if let Ok(j) = serde_json::to_vec(value) {
        let _ = protocol::write_frame(&mut &*stream, kind, &j);
    }
}

impl<'s> Output<'s> {
    fn new(stream: &'s UnixStream, live: bool, samples: bool) -> Output<'s> {
        Output {
            stream,
            live,
            out: Frames {
                stream,
                kind: kind::STDOUT,
            },
            err: Frames {
                stream,
                kind: kind::STDERR,
            },
            notice: Box::new(move |n: &Notice| send_json(stream, kind::NOTICE, n)),
            sample: samples.then(|| {
                Box::new(move |s: &Sample| send_json(stream, kind::SAMPLE, s))
                    as Callback<'s, Sample>
            }),
        }
    }

    /// The run's side of the caller's end, for one attempt.
    fn io<'a>(&'a mut self, input: &'a Input) -> Io<'a> {
        let (stdout, stderr) = if self.live {
            (Sink::Writer(&mut self.out), Sink::Writer(&mut self.err))
        } else {
            (Sink::Capture, Sink::Capture)
        };
        Io {
            stdin: input.stdin(),
            stdout,
            stderr,
            samples: self.sample.as_deref_mut().map(|s| s as _),
            notices: Some(&mut *self.notice),
            forward_signals: false,
            cancel: Some(input.gone.as_fd()),
        }
    }

    /// The end: captured output, then the report with the server's part.
    fn finish(&mut self, run: &Run, mut served: Served) -> Result<(), Failure> {
        let mut w = self.stream;
        let send = |w: &mut &UnixStream, k: u8, b: &[u8]| {
            protocol::write_frame(w, k, b).map_err(|e| Failure::new("internal", e.to_string()))
        };
        if !self.live {
            send(&mut w, kind::STDOUT, &run.stdout)?;
            send(&mut w, kind::STDERR, &run.stderr)?;
        }
        if let Some(t) = served.arrived {
            served.total_ms = t.elapsed().as_secs_f64() * 1e3;
        }
        let mut report = serde_json::to_value(&run.report)
            .map_err(|e| Failure::new("internal", e.to_string()))?;
        report["server"] = serde_json::to_value(&served).unwrap_or_default();
        report["stdout_ended_with_newline"] = run.stdout_ended_with_newline.into();
        let bytes =
            serde_json::to_vec(&report).map_err(|e| Failure::new("internal", e.to_string()))?;
        send(&mut w, kind::REPORT, &bytes)
    }
}

/// A run that did not happen, as the client is told.
fn failure(e: Error) -> Failure {
    match e {
        Error::Refused(r) => Failure {
            kind: "refused",
            message: format!(
                "refused: the assessment of {} says {} (this level refuses at {}): {}. Review it with `maibox assess`; to run it anyway, send an override_reason",
                r.origin, r.verdict, r.refuse_at, r.worst
            ),
            verdict: Some(r.verdict),
            findings: r.assessment.findings.clone(),
        },
        Error::Audit { .. } => Failure::new("audit", e.to_string()),
        Error::Code(_) | Error::Assess(_) | Error::Policy(_) | Error::Invalid(_) => {
            Failure::new("invalid", e.to_string())
        }
        Error::Bandit(_) => Failure::new("internal", e.to_string()),
    }
}

impl From<Warm> for Remains {
    fn from(w: Warm) -> Remains {
        w.into_unused()
    }
}
