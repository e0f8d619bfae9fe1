//! The server's wire protocol, version 1 (`docs/server.md`): one request per connection
//! over a unix stream socket, in frames of a 4-byte big-endian length, a type byte and
//! the payload.
//!
//! Client to server: `Q` the request (JSON), then, when it says `"stdin": "stream"`,
//! `I` frames of input and a `Z` at its end. Server to client: `O` and `E` output of
//! the code, `N` notices and `S` usage samples (JSON), and last either `R`, the report
//! (the JSON of `maibox exec --json` plus a `server` object), or `X`, an error (JSON
//! with a `kind`). A client that closes its side before the end cancels the run.

use serde::{Deserialize, Serialize};
use std::io::{Read, Write};

pub const VERSION: u32 = 1;

/// The largest frame accepted: a request holds the code (at most
/// `assessment.max_bytes`, 5 MiB by default) and its JSON escaping.
pub const MAX_FRAME: usize = 64 << 20;

pub mod kind {
    pub const REQUEST: u8 = b'Q';
    pub const STDIN: u8 = b'I';
    pub const STDIN_END: u8 = b'Z';
    pub const STDOUT: u8 = b'O';
    pub const STDERR: u8 = b'E';
    pub const NOTICE: u8 = b'N';
    pub const SAMPLE: u8 = b'S';
    pub const REPORT: u8 = b'R';
    pub const ERROR: u8 = b'X';
}

/// What a client asks for. Everything but `v` and `code` is optional.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// Protocol version: 1.
    pub v: u32,
    /// The Python code.
    pub code: String,
    /// How the caller names the code (a path, `-c`, `-`), cited by the assessment and
    /// the audit log.
    #[serde(default)]
    pub origin: Option<String>,
    /// The script's absolute path on the client's side, for the audit log. Without it
    /// a path `origin` is recorded as given: the server resolves nothing against its
    /// own working directory, which is not the client's.
    #[serde(default)]
    pub path: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub trust: Option<crate::config::TrustLevel>,
    #[serde(default)]
    pub timeout_s: Option<f64>,
    /// Bytes, or a size such as "128MiB".
    #[serde(default)]
    pub memory: Option<Size>,
    #[serde(default)]
    pub cpus: Option<f64>,
    #[serde(default)]
    pub pids: Option<u64>,
    #[serde(default)]
    pub output_limit: Option<Size>,
    #[serde(default)]
    pub allow_raise: bool,
    #[serde(default)]
    pub network: Option<crate::config::NetworkMode>,
    #[serde(default)]
    pub override_reason: Option<String>,
    /// Send output and samples as they come (default), or only with the end.
    #[serde(default = "yes")]
    pub stream: bool,
    /// Send usage samples (`S` frames).
    #[serde(default)]
    pub samples: bool,
    /// The code's stdin: absent for none, `{"data": "..."}` for fixed text, or
    /// `"stream"` for `I` frames that follow the request.
    #[serde(default)]
    pub stdin: Option<StdinSpec>,
}

fn yes() -> bool {
    true
}

/// A size in bytes, given as a number or as text with a unit.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(untagged)]
pub enum Size {
    Bytes(u64),
    Text(String),
}

impl Size {
    pub fn bytes(&self) -> Result<u64, String> {
        match self {
            Size::Bytes(b) => Ok(*b),
            Size::Text(t) => t.parse::<crate::units::ByteSize>().map(|b| b.0),
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(untagged)]
pub enum StdinSpec {
    Data { data: String },
    Mode(String),
}

/// Why a request did not run.
#[derive(Debug, Clone, Serialize)]
pub struct Failure {
    /// refused, busy, invalid, protocol, forbidden, audit, internal.
    pub kind: &'static str,
    pub message: String,
    /// A refusal's verdict and findings (rule ids).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict: Option<crate::assess::Verdict>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<String>,
}

impl Failure {
    pub fn new(kind: &'static str, message: impl Into<String>) -> Failure {
        Failure {
            kind,
            message: message.into(),
            verdict: None,
            findings: Vec::new(),
        }
    }
}

/// Writes one frame.
pub fn write_frame(w: &mut dyn Write, kind: u8, payload: &[u8]) -> std::io::Result<()> {
    let len =
        u32::try_from(payload.len() + 1).map_err(|_| std::io::Error::other("frame too large"))?;
    let mut buf = Vec::with_capacity(payload.len() + 5);
    buf.extend_from_slice(&len.to_be_bytes());
    buf.push(kind);
    buf.extend_from_slice(payload);
    w.write_all(&buf)
}

/// Reads one frame: `Ok(None)` at a clean end of stream.
pub fn read_frame(r: &mut dyn Read) -> std::io::Result<Option<(u8, Vec<u8>)>> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let n = u32::from_be_bytes(len) as usize;
    if n == 0 || n > MAX_FRAME {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("a frame of {n} bytes (1 to {MAX_FRAME} allowed)"),
        ));
    }
    let mut buf = vec![0u8; n];
    r.read_exact(&mut buf)?;
    let kind = buf.remove(0);
    Ok(Some((kind, buf)))
}

/// Parses a request frame, with errors a client can act on.
pub fn parse_request(payload: &[u8]) -> Result<Request, Failure> {
    #[derive(Deserialize)]
    struct Version {
        v: Option<u32>,
    }
    let v: Version = serde_json::from_slice(payload)
        .map_err(|e| Failure::new("protocol", format!("the request is not a JSON object: {e}")))?;
    match v.v {
        Some(VERSION) => {}
        Some(other) => {
            return Err(Failure::new(
                "protocol",
                format!("unknown protocol version {other}; this server speaks {VERSION}"),
            ))
        }
        None => {
            return Err(Failure::new(
                "protocol",
                format!("the request has no protocol version: add \"v\": {VERSION}"),
            ))
        }
    }
    serde_json::from_slice(payload)
        .map_err(|e| Failure::new("invalid", format!("bad request: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_and_bad_lengths_are_refused() {
        let mut buf = Vec::new();
        write_frame(&mut buf, kind::STDOUT, b"hello").unwrap();
        write_frame(&mut buf, kind::REPORT, b"{}").unwrap();
        let mut r = &buf[..];
        assert_eq!(read_frame(&mut r).unwrap(), Some((b'O', b"hello".to_vec())));
        assert_eq!(read_frame(&mut r).unwrap(), Some((b'R', b"{}".to_vec())));
        assert_eq!(read_frame(&mut r).unwrap(), None);
        let mut huge = &[0xffu8, 0xff, 0xff, 0xff, b'Q'][..];
        assert!(read_frame(&mut huge).is_err());
    }

    #[test]
    fn requests_name_what_is_wrong() {
        let ok = parse_request(br#"{"v": 1, "code": "print(1)", "memory": "64MiB"}"#).unwrap();
        assert_eq!(ok.memory.unwrap().bytes().unwrap(), 64 << 20);
        assert!(ok.stream);
        let e = parse_request(br#"{"v": 7, "code": ""}"#).unwrap_err();
        assert!(
            e.message.contains("unknown protocol version 7"),
            "{}",
            e.message
        );
        let e = parse_request(br#"{"code": ""}"#).unwrap_err();
        assert_eq!(e.kind, "protocol");
        let e = parse_request(br#"{"v": 1, "code": "", "colour": 1}"#).unwrap_err();
        assert!(e.message.contains("colour"), "{}", e.message);
        assert!(parse_request(b"not json").is_err());
    }
}
