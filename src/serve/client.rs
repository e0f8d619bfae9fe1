//! The client's side of the protocol, for `maibox exec --server` (the Python package
//! has its own): send one request, stream its stdin, pass each event on.

use super::protocol::{self, kind, Failure, Request};
use std::io::Read;
use std::os::unix::net::UnixStream;
use std::path::Path;

/// What the server sends back, in order.
pub enum Event<'a> {
    Stdout(&'a [u8]),
    Stderr(&'a [u8]),
    Notice(crate::io::Notice),
    Sample(serde_json::Value),
}

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// No server answers on the socket.
    #[error("no maibox server answers on {socket}: {reason} (start one with `maibox serve`, or run without --server)")]
    Unavailable { socket: String, reason: String },
    /// The server answered with an error.
    #[error("{}", .0.message)]
    Failed(Failure),
    #[error("talking to the server on {socket}: {reason}")]
    Protocol { socket: String, reason: String },
}

/// Connects to the server at `socket`.
pub fn connect(socket: &Path) -> Result<UnixStream, ClientError> {
    UnixStream::connect(socket).map_err(|e| ClientError::Unavailable {
        socket: socket.display().to_string(),
        reason: e.to_string(),
    })
}

/// Runs `req` on the server at the other end of `stream`; `stdin`, when given, is
/// streamed to the code (the request must say `"stdin": "stream"`). Returns the report.
pub fn run(
    stream: UnixStream,
    socket: &Path,
    req: &Request,
    stdin: Option<Box<dyn Read + Send>>,
    on_event: &mut dyn FnMut(Event),
) -> Result<serde_json::Value, ClientError> {
    let proto = |reason: String| ClientError::Protocol {
        socket: socket.display().to_string(),
        reason,
    };
    let payload = serde_json::to_vec(req).map_err(|e| proto(e.to_string()))?;
    protocol::write_frame(&mut &stream, kind::REQUEST, &payload)
        .map_err(|e| proto(e.to_string()))?;
    if let Some(input) = stdin {
        let w = stream.try_clone().map_err(|e| proto(e.to_string()))?;
        std::thread::spawn(move || pump(input, w));
    }
    loop {
        let frame = protocol::read_frame(&mut &stream).map_err(|e| proto(e.to_string()))?;
        let Some((k, data)) = frame else {
            return Err(proto(
                "the server closed the connection without a report".into(),
            ));
        };
        let json = || serde_json::from_slice::<serde_json::Value>(&data);
        match k {
            kind::STDOUT => on_event(Event::Stdout(&data)),
            kind::STDERR => on_event(Event::Stderr(&data)),
            kind::NOTICE => {
                if let Ok(n) = serde_json::from_slice::<NoticeWire>(&data) {
                    on_event(Event::Notice(n.into()));
                }
            }
            kind::SAMPLE => on_event(Event::Sample(json().map_err(|e| proto(e.to_string()))?)),
            kind::REPORT => return json().map_err(|e| proto(e.to_string())),
            kind::ERROR => {
                let v = json().map_err(|e| proto(e.to_string()))?;
                return Err(ClientError::Failed(failure_of(&v)));
            }
            other => return Err(proto(format!("unknown frame {:?}", other as char))),
        }
    }
}

/// Copies `input` to the server as stdin frames, then the end.
fn pump(mut input: Box<dyn Read + Send>, stream: UnixStream) {
    let mut buf = vec![0u8; 65536];
    loop {
        match input.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if protocol::write_frame(&mut &stream, kind::STDIN, &buf[..n]).is_err() {
                    return;
                }
            }
        }
    }
    let _ = protocol::write_frame(&mut &stream, kind::STDIN_END, &[]);
}

#[derive(serde::Deserialize)]
struct NoticeWire {
    level: String,
    message: String,
}

impl From<NoticeWire> for crate::io::Notice {
    fn from(n: NoticeWire) -> Self {
        crate::io::Notice {
            level: if n.level == "warning" {
                crate::io::Level::Warning
            } else {
                crate::io::Level::Note
            },
            message: n.message,
        }
    }
}

fn failure_of(v: &serde_json::Value) -> Failure {
    let kind = match v["kind"].as_str() {
        Some("refused") => "refused",
        Some("busy") => "busy",
        Some("invalid") => "invalid",
        Some("protocol") => "protocol",
        Some("forbidden") => "forbidden",
        Some("audit") => "audit",
        _ => "internal",
    };
    let mut f = Failure::new(kind, v["message"].as_str().unwrap_or("(no message)"));
    f.findings = v["findings"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    f
}
