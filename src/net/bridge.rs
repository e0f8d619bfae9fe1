//! The in-sandbox bridge: listens on `127.0.0.1:PORT` inside the sandbox's
//! network namespace and copies each TCP connection to the proxy's unix socket.
//!
//! It runs in a process forked by the sandbox's init, so it is plain blocking std
//! code with threads: no async runtime to start inside the sandbox, nothing to
//! share with the supervisor. It does no filtering of its own: the proxy on the
//! other side of the socket decides everything, and the bridge only moves bytes.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Connections served at once. Each costs two threads (counted against the
/// sandbox's pids limit); beyond this new ones are closed at once, and the
/// proxy's own limits apply to whatever gets through.
pub const MAX_CONNECTIONS: usize = 64;

/// Binds `127.0.0.1:listen_port` and forwards forever. Never returns: on a
/// fatal error it prints why on stderr and exits 1, so the init sees a dead
/// bridge rather than a silent one.
pub fn run_bridge(listen_port: u16, unix_socket: &Path) -> ! {
    // A peer closing mid-copy must be an EPIPE error on that one connection,
    // not a signal that kills the bridge; the init that forked us may have left
    // SIGPIPE at its default.
    // SAFETY: setting a signal disposition to SIG_IGN installs no handler code.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    let code = match serve(listen_port, unix_socket) {
        Ok(never) => match never {},
        Err(e) => {
            eprintln!("maibox net bridge: {e}");
            1
        }
    };
    std::process::exit(code)
}

#[derive(Debug, thiserror::Error)]
pub enum BridgeError {
    #[error("bind 127.0.0.1:{port}: {source}")]
    Bind { port: u16, source: io::Error },
    #[error("accept on 127.0.0.1:{port}: {source}")]
    Accept { port: u16, source: io::Error },
}

enum Never {}

fn serve(port: u16, socket: &Path) -> Result<Never, BridgeError> {
    let listener = TcpListener::bind(("127.0.0.1", port))
        .map_err(|source| BridgeError::Bind { port, source })?;
    let live = Arc::new(AtomicUsize::new(0));
    let mut consecutive_errors = 0u32;
    loop {
        let client = match listener.accept() {
            Ok((s, _)) => {
                consecutive_errors = 0;
                s
            }
            // EMFILE, ECONNABORTED and friends are per-connection or transient;
            // only a listener that keeps failing is fatal.
            Err(source) => {
                consecutive_errors += 1;
                if consecutive_errors > 100 {
                    return Err(BridgeError::Accept { port, source });
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
                continue;
            }
        };
        if live.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
            live.fetch_sub(1, Ordering::SeqCst);
            drop(client);
            continue;
        }
        let live2 = live.clone();
        let socket = socket.to_path_buf();
        let spawned = std::thread::Builder::new()
            .name("bridge-conn".into())
            .spawn(move || {
                // The proxy is the one that reports; a failed connect here just
                // closes the client, which sees a reset like any unreachable host.
                if let Ok(upstream) = UnixStream::connect(&socket) {
                    let _ = forward(client, upstream);
                }
                live2.fetch_sub(1, Ordering::SeqCst);
            });
        if spawned.is_err() {
            live.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// Copies both ways until both sides are done; half-closes are passed on so
/// that a client that shuts down its write side still gets the response.
fn forward(client: TcpStream, upstream: UnixStream) -> io::Result<()> {
    let client_r = client.try_clone()?;
    let upstream_w = upstream.try_clone()?;
    let up = std::thread::Builder::new()
        .name("bridge-up".into())
        .spawn(move || {
            let mut r = client_r;
            let mut w = upstream_w;
            let res = copy(&mut r, &mut w);
            let _ = w.shutdown(Shutdown::Write);
            if res.is_err() {
                // Tear the whole connection down: the other direction must not
                // linger on a half-dead pair.
                let _ = w.shutdown(Shutdown::Both);
                let _ = r.shutdown(Shutdown::Both);
            }
        })?;
    let mut r = upstream;
    let mut w = client;
    let res = copy(&mut r, &mut w);
    let _ = w.shutdown(Shutdown::Write);
    if res.is_err() {
        let _ = w.shutdown(Shutdown::Both);
        let _ = r.shutdown(Shutdown::Both);
    }
    let _ = up.join();
    res.map(|_| ())
}

fn copy(r: &mut impl Read, w: &mut impl Write) -> io::Result<u64> {
    let mut buf = [0u8; 16 * 1024];
    let mut total = 0u64;
    loop {
        let n = match r.read(&mut buf) {
            Ok(0) => return Ok(total),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        w.write_all(&buf[..n])?;
        total += n as u64;
    }
}
