//! The code a run is given: read from a file, inline or standard input, within the
//! size limit, and checked to be UTF-8.

use std::io::Read;
use std::path::Path;

/// Largest script accepted; anything bigger is almost certainly not a script.
pub const MAX_SCRIPT_BYTES: usize = 8 << 20;

#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("cannot read script {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("script {path} is a directory, not a Python file")]
    IsDir { path: String },
    #[error("script {path} is {size} bytes; the limit is {MAX_SCRIPT_BYTES} bytes")]
    TooBig { path: String, size: usize },
    #[error(
        "script {path} is not valid UTF-8 (invalid byte at offset {offset}); save it as UTF-8"
    )]
    NotUtf8 { path: String, offset: usize },
}

/// Where the code comes from.
pub enum Source<'a> {
    File(&'a Path),
    Inline(&'a str),
    Stdin,
}

/// The code of a run: Python source, and how the caller named it (a path, `-c` for
/// code given inline, `-` for standard input). The name is what the assessment's
/// findings and the audit log cite.
#[derive(Debug, Clone)]
pub struct Code {
    pub bytes: Vec<u8>,
    pub origin: String,
    /// The script's file as the audit log records it, when the caller knows it better
    /// than this process can: a server's client, whose working directory is not the
    /// server's. `None`: `origin` resolved here (a cold run).
    pub path: Option<String>,
}

impl Code {
    /// Whether a code's name (its `origin`) names a file: not `-c` (inline) or
    /// `-` (standard input).
    pub fn names_file(origin: &str) -> bool {
        origin != "-" && origin != "-c"
    }

    /// Code given inline (named `-c`).
    pub fn inline(code: impl Into<String>) -> Result<Code, InputError> {
        let code = code.into();
        if code.len() > MAX_SCRIPT_BYTES {
            return Err(InputError::TooBig {
                path: "-c".into(),
                size: code.len(),
            });
        }
        Ok(Code {
            bytes: code.into_bytes(),
            origin: "-c".into(),
            path: None,
        })
    }

    /// A script file, read and checked as [`read_code`] does.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Code, InputError> {
        read_code(Source::File(path.as_ref()))
    }
}

/// Reads the code and checks that it is UTF-8 (what the sandbox will run).
pub fn read_code(src: Source) -> Result<Code, InputError> {
    let code = read_bytes(src)?;
    check_utf8(&code)?;
    Ok(code)
}

/// The sandbox runs UTF-8 source only.
pub(crate) fn check_utf8(code: &Code) -> Result<(), InputError> {
    match std::str::from_utf8(&code.bytes) {
        Ok(_) => Ok(()),
        Err(e) => Err(InputError::NotUtf8 {
            path: code.origin.clone(),
            offset: e.valid_up_to(),
        }),
    }
}

/// Reads the code as bytes, within the size limit (what `maibox assess` examines).
pub fn read_bytes(src: Source) -> Result<Code, InputError> {
    let (origin, bytes) = match src {
        Source::Inline(s) => ("-c".to_string(), s.as_bytes().to_vec()),
        Source::Stdin => {
            let mut b = Vec::new();
            std::io::stdin()
                .take(MAX_SCRIPT_BYTES as u64 + 1)
                .read_to_end(&mut b)
                .map_err(|source| InputError::Read {
                    path: "-".into(),
                    source,
                })?;
            ("-".to_string(), b)
        }
        Source::File(p) => {
            let path = p.display().to_string();
            if p.is_dir() {
                return Err(InputError::IsDir { path });
            }
            let f = std::fs::File::open(p).map_err(|source| InputError::Read {
                path: path.clone(),
                source,
            })?;
            let mut b = Vec::new();
            f.take(MAX_SCRIPT_BYTES as u64 + 1)
                .read_to_end(&mut b)
                .map_err(|source| InputError::Read {
                    path: path.clone(),
                    source,
                })?;
            (path, b)
        }
    };
    if bytes.len() > MAX_SCRIPT_BYTES {
        return Err(InputError::TooBig {
            path: origin,
            size: bytes.len(),
        });
    }
    Ok(Code {
        bytes,
        origin,
        path: None,
    })
}
