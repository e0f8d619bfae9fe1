//! Where a run's input comes from and where its output, usage samples and maibox's own
//! notices go: always the caller's choice, never the process's own descriptors. The CLI
//! passes its stdio, a server passes its client's socket, a test passes buffers; one
//! process may so run many sandboxes, one after another or side by side.

use serde::Serialize;
use std::io::Write;
use std::os::fd::{AsFd, BorrowedFd};
use std::time::Duration;

/// A destination for one of the code's output streams. Whatever the sink, the bytes
/// count against the run's output cap.
pub enum Sink<'a> {
    /// Dropped.
    Null,
    /// Kept in memory and returned with the run ([`crate::Run::stdout`]).
    Capture,
    /// Written to a descriptor as it arrives (the CLI passes its own stdout). A reader
    /// that goes away does not fail the run.
    Fd(BorrowedFd<'a>),
    /// Handed to a writer as it arrives (a socket's framing, a test's buffer).
    Writer(&'a mut (dyn Write + Send)),
}

/// What the code reads on its standard input.
pub enum Stdin<'a> {
    /// `/dev/null`.
    Null,
    /// These bytes, then end-of-file.
    Bytes(Vec<u8>),
    /// Copied from this descriptor until its end-of-file (the CLI passes its own stdin;
    /// host descriptors are never handed to the sandbox itself).
    Fd(BorrowedFd<'a>),
}

/// One sample of the run's resource use, taken while it runs.
#[derive(Debug, Clone, Serialize)]
pub struct Sample {
    /// Seconds since the code started.
    pub t_s: f64,
    pub usage: crate::cgroup::Usage,
}

/// How urgent a notice is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Note,
    Warning,
}

/// Something maibox tells the caller about a run that is neither the code's output nor
/// part of the report's figures: a level escalated, a limit adjusted, an override used.
#[derive(Debug, Clone, Serialize)]
pub struct Notice {
    pub level: Level,
    pub message: String,
}

impl std::fmt::Display for Notice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let level = match self.level {
            Level::Note => "note",
            Level::Warning => "warning",
        };
        write!(f, "{level}: {}", self.message)
    }
}

/// The caller's side of one run.
pub struct Io<'a> {
    pub stdin: Stdin<'a>,
    pub stdout: Sink<'a>,
    pub stderr: Sink<'a>,
    /// Called with each usage sample while the code runs (every `cgroup.sample_ms`).
    pub samples: Option<&'a mut (dyn FnMut(&Sample) + Send)>,
    /// Called with each notice as it arises; they are also returned with the run.
    pub notices: Option<&'a mut (dyn FnMut(&Notice) + Send)>,
    /// Forward SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 sent to this
    /// process to the code (a second one ends the sandbox). Only for a caller that
    /// owns its process's signals, as a command line does: the signals are blocked in
    /// the calling thread for the run and read from a signalfd.
    pub forward_signals: bool,
    /// A descriptor that becomes readable (or hangs up) when the caller gives up on
    /// the run: the sandbox is then ended and the report says `cancelled`.
    pub cancel: Option<BorrowedFd<'a>>,
}

impl<'a> Io<'a> {
    /// No input; output kept in memory and returned with the run.
    pub fn capture() -> Io<'a> {
        Io {
            stdin: Stdin::Null,
            stdout: Sink::Capture,
            stderr: Sink::Capture,
            samples: None,
            notices: None,
            forward_signals: false,
            cancel: None,
        }
    }
}

/// The output side while a run is supervised: a sink plus what it captured.
pub(crate) struct Out<'a> {
    sink: Sink<'a>,
    pub captured: Vec<u8>,
}

impl<'a> Out<'a> {
    pub fn new(sink: Sink<'a>) -> Out<'a> {
        Out {
            sink,
            captured: Vec::new(),
        }
    }

    /// Delivers a chunk. Failures of the caller's sink are the caller's: the run and
    /// its report go on.
    pub fn write(&mut self, data: &[u8]) {
        match &mut self.sink {
            Sink::Null => {}
            Sink::Capture => self.captured.extend_from_slice(data),
            Sink::Fd(fd) => crate::output::write_all(fd.as_fd(), data),
            Sink::Writer(w) => {
                let _ = w.write_all(data).and_then(|_| w.flush());
            }
        }
    }
}

/// Collects a run's notices and passes each on to the caller's callback.
pub(crate) struct Notices<'a> {
    callback: Option<&'a mut (dyn FnMut(&Notice) + Send)>,
    pub all: Vec<Notice>,
}

impl<'a> Notices<'a> {
    pub fn new(callback: Option<&'a mut (dyn FnMut(&Notice) + Send)>) -> Notices<'a> {
        Notices {
            callback,
            all: Vec::new(),
        }
    }

    pub fn push(&mut self, level: Level, message: impl Into<String>) {
        let n = Notice {
            level,
            message: message.into(),
        };
        if let Some(cb) = self.callback.as_mut() {
            cb(&n);
        }
        self.all.push(n);
    }

    pub fn warn(&mut self, message: impl Into<String>) {
        self.push(Level::Warning, message)
    }

    pub fn note(&mut self, message: impl Into<String>) {
        self.push(Level::Note, message)
    }
}

/// Passes samples to the caller's callback, if any.
pub(crate) struct Samples<'a> {
    callback: Option<&'a mut (dyn FnMut(&Sample) + Send)>,
}

impl<'a> Samples<'a> {
    pub fn new(callback: Option<&'a mut (dyn FnMut(&Sample) + Send)>) -> Samples<'a> {
        Samples { callback }
    }

    pub fn send(&mut self, t: Duration, usage: &crate::cgroup::Usage) {
        if let Some(cb) = self.callback.as_mut() {
            cb(&Sample {
                t_s: t.as_secs_f64(),
                usage: *usage,
            });
        }
    }
}
