//! A `maibox serve` of a test's own: its socket, config and audit log in a scratch
//! directory; stopped (SIGTERM) when dropped.

use super::{binary, As, Scratch, USER_ID};
use maibox::serve::client::{self, ClientError, Event};
use maibox::serve::protocol::{Request, VERSION};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Server {
    pub dir: Scratch,
    pub child: Option<Child>,
    pub config: PathBuf,
    /// Who runs it: the caller, or the unprivileged user (a rootless server).
    pub who: As,
}

/// The built-in configuration with `server:` settings changed (`key: value` lines
/// that replace the built-in ones).
pub fn config_text(server: &[(&str, &str)]) -> String {
    let mut text = maibox::config::BUILTIN.to_string();
    for (key, value) in server {
        let at = text
            .find(&format!("\n  {key}:"))
            .unwrap_or_else(|| panic!("no server key {key}"));
        let end = text[at + 1..].find('\n').map(|e| at + 1 + e).unwrap();
        text.replace_range(at + 1..end, &format!("  {key}: {value}"));
    }
    text
}

impl Server {
    pub fn start(server: &[(&str, &str)]) -> Server {
        Server::start_with(&config_text(server))
    }

    pub fn start_with(config: &str) -> Server {
        Server::start_as(As::Caller, config)
    }

    /// A server run by `who`; the unprivileged user's owns its scratch directory.
    pub fn start_as(who: As, config: &str) -> Server {
        let dir = Scratch::new();
        let cfg = dir.file("sandbox.yaml", config.as_bytes());
        if who == As::User {
            nix::unistd::chown(
                dir.path(),
                Some(nix::unistd::Uid::from_raw(USER_ID)),
                Some(nix::unistd::Gid::from_raw(USER_ID)),
            )
            .unwrap();
        }
        let mut s = Server {
            dir,
            child: None,
            config: cfg,
            who,
        };
        s.spawn();
        s
    }

    pub fn socket(&self) -> PathBuf {
        self.dir.path().join("s.sock")
    }

    pub fn audit(&self) -> PathBuf {
        self.dir.path().join("audit")
    }

    /// (Re)starts the server process and waits until its socket answers.
    pub fn spawn(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("server.log"))
            .unwrap();
        let mut cmd = Command::new(binary());
        cmd.args(["serve", "--socket"])
            .arg(self.socket())
            .arg("--config")
            .arg(&self.config)
            .env("MAIBOX_AUDIT_DIR", self.audit())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log);
        if self.who == As::User {
            use std::os::unix::process::CommandExt;
            cmd.uid(USER_ID).gid(USER_ID).env("HOME", "/nonexistent");
        }
        let child = cmd.spawn().unwrap();
        self.child = Some(child);
        let t0 = Instant::now();
        while std::os::unix::net::UnixStream::connect(self.socket()).is_err() {
            assert!(
                t0.elapsed() < Duration::from_secs(60),
                "the server did not start: {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }

    pub fn pid(&self) -> i32 {
        self.child.as_ref().map(|c| c.id() as i32).unwrap_or(0)
    }

    /// One request, as the library's client sends it.
    pub fn run(&self, req: &Request) -> Result<Ran, ClientError> {
        run_on(&self.socket(), req)
    }

    pub fn stop(&mut self, signal: nix::sys::signal::Signal) -> std::process::ExitStatus {
        let mut child = self.child.take().expect("a running server");
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), signal);
        child.wait().unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if self.child.is_some() {
            self.stop(nix::sys::signal::Signal::SIGTERM);
        }
    }
}

/// What a request got back.
pub struct Ran {
    pub report: serde_json::Value,
    pub stdout: String,
    pub stderr: String,
    pub notices: Vec<String>,
}

pub fn run_on(socket: &Path, req: &Request) -> Result<Ran, ClientError> {
    let stream = client::connect(socket)?;
    let (mut out, mut err, mut notices) = (Vec::new(), Vec::new(), Vec::new());
    let report = client::run(stream, socket, req, None, &mut |e| match e {
        Event::Stdout(d) => out.extend_from_slice(d),
        Event::Stderr(d) => err.extend_from_slice(d),
        Event::Notice(n) => notices.push(n.to_string()),
        Event::Sample(_) => {}
    })?;
    Ok(Ran {
        report,
        stdout: String::from_utf8_lossy(&out).into_owned(),
        stderr: String::from_utf8_lossy(&err).into_owned(),
        notices,
    })
}

/// A request for `code`, everything else left to the server.
pub fn request(code: &str) -> Request {
    Request {
        v: VERSION,
        code: code.into(),
        stream: true,
        ..Default::default()
    }
}
