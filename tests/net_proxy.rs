//! The proxy against real local servers on 127.0.0.1, driven through its unix
//! socket, and through the bridge in a separate process with Python's urllib and
//! pip, the way the sandbox uses it.

mod common;
use common::tiny_wheel;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use maibox::net::{self, NetConfig, ProxyReport, RequestRecord, Verdict};

// ---------------------------------------------------------------------------
// Local servers

/// A tiny threaded HTTP/1.1 server standing in for a package index. It records
/// every request head it receives, so tests can check what the proxy forwarded
/// and that refused requests never arrived.
struct IndexServer {
    port: u16,
    seen: Arc<Mutex<Vec<String>>>,
}

impl IndexServer {
    fn start(name: &'static str) -> IndexServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let seen2 = seen.clone();
        let wheel = Arc::new(tiny_wheel());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { continue };
                let seen = seen2.clone();
                let wheel = wheel.clone();
                std::thread::spawn(move || {
                    conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                    let mut head = Vec::new();
                    let mut b = [0u8; 1];
                    while !head.ends_with(b"\r\n\r\n") {
                        match conn.read(&mut b) {
                            Ok(1) => head.push(b[0]),
                            _ => return,
                        }
                    }
                    let head = String::from_utf8_lossy(&head).to_string();
                    seen.lock().unwrap().push(head.clone());
                    let path = head.split_whitespace().nth(1).unwrap_or("").to_string();
                    let (status, ctype, body): (&str, &str, Vec<u8>) = match path.as_str() {
                        "/simple/" => ("200 OK", "text/html", format!("<html><body>{name} <a href=\"/simple/tinypkg/\">tinypkg</a></body></html>").into_bytes()),
                        "/simple/tinypkg/" => ("200 OK", "text/html", b"<html><body><a href=\"/files/tinypkg-0.1-py3-none-any.whl\">tinypkg-0.1-py3-none-any.whl</a></body></html>".to_vec()),
                        "/files/tinypkg-0.1-py3-none-any.whl" => ("200 OK", "application/octet-stream", wheel.to_vec()),
                        "/big" => ("200 OK", "application/octet-stream", vec![b'x'; 200_000]),
                        _ => ("404 Not Found", "text/plain", b"not found".to_vec()),
                    };
                    let is_head = head.starts_with("HEAD ");
                    let _ = write!(conn, "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len());
                    if !is_head {
                        let _ = conn.write_all(&body);
                    }
                });
            }
        });
        IndexServer { port, seen }
    }

    fn hits(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

/// A raw TCP server for CONNECT tunnels: sends a fake TLS record on accept, then
/// records every byte it receives until the peer closes.
struct RawServer {
    port: u16,
    conns: Arc<Mutex<Vec<Vec<u8>>>>,
}

const SERVER_RECORD: &[u8] = &[23, 3, 3, 0, 2, b'h', b'i'];

impl RawServer {
    fn start() -> RawServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let conns = Arc::new(Mutex::new(Vec::new()));
        let conns2 = conns.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { continue };
                let conns = conns2.clone();
                std::thread::spawn(move || {
                    conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                    let _ = conn.write_all(SERVER_RECORD);
                    let mut got = Vec::new();
                    let _ = conn.read_to_end(&mut got);
                    conns.lock().unwrap().push(got);
                });
            }
        });
        RawServer { port, conns }
    }
}

// ---------------------------------------------------------------------------
// Proxy plumbing

struct Fixture {
    _tmp: tempfile::TempDir,
    proxy: net::RunningProxy,
    socket: PathBuf,
}

fn start_proxy(cfg: &NetConfig) -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let prepared = net::prepare(cfg, tmp.path()).unwrap();
    let socket = prepared.socket_path().to_path_buf();
    let proxy = prepared.start().unwrap();
    Fixture {
        _tmp: tmp,
        proxy,
        socket,
    }
}

fn config(allow: &[String], map: &[(&str, &str)]) -> NetConfig {
    let mut test_resolve = BTreeMap::new();
    for (n, a) in map {
        test_resolve.insert(n.to_string(), a.parse().unwrap());
    }
    NetConfig {
        allow: allow.to_vec(),
        connect_timeout_ms: 3000,
        idle_timeout_ms: 5000,
        test_resolve,
        ..NetConfig::default()
    }
}

/// Sends raw bytes over the unix socket and returns everything until close.
fn exchange(socket: &Path, request: &[u8]) -> String {
    let mut s = UnixStream::connect(socket).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(request).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out).to_string()
}

fn status(resp: &str) -> u16 {
    resp.split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// Opens a CONNECT tunnel and returns the stream after the proxy's answer.
fn connect(socket: &Path, target: &str) -> (UnixStream, String) {
    let mut s = UnixStream::connect(socket).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n").unwrap();
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match s.read(&mut b) {
            Ok(1) => head.push(b[0]),
            _ => break,
        }
    }
    (s, String::from_utf8_lossy(&head).to_string())
}

fn python_client_hello(server_hostname: &str) -> Vec<u8> {
    let script = r#"
import ssl, sys
ctx = ssl.create_default_context()
i, o = ssl.MemoryBIO(), ssl.MemoryBIO()
s = ctx.wrap_bio(i, o, server_hostname=sys.argv[1])
try:
    s.do_handshake()
except ssl.SSLWantReadError:
    pass
sys.stdout.buffer.write(o.read())
"#;
    let out = Command::new("/usr/bin/python3")
        .args(["-c", script, server_hostname])
        .output()
        .unwrap();
    assert!(out.status.success());
    out.stdout
}

/// Waits for records the proxy closes asynchronously (tunnels end after the
/// response), then stops it.
fn stop(f: Fixture) -> ProxyReport {
    std::thread::sleep(Duration::from_millis(200));
    let socket = f.socket.clone();
    let report = f.proxy.stop();
    assert!(!socket.exists(), "socket left behind");
    report
}

fn find<'a>(report: &'a ProxyReport, host: &str, method: &str) -> Vec<&'a RequestRecord> {
    report
        .requests
        .iter()
        .filter(|r| r.host == host && r.method == method)
        .collect()
}

fn assert_refused(report: &ProxyReport, host: &str, method: &str, reason_part: &str) {
    let recs = find(report, host, method);
    assert!(
        !recs.is_empty(),
        "no record for {method} {host} in {:#?}",
        report.requests
    );
    for r in recs {
        assert_eq!(r.verdict, Verdict::Refused, "{r:?}");
        let reason = r.reason.clone().unwrap_or_default();
        assert!(
            reason.contains(reason_part),
            "{method} {host}: reason {reason:?} lacks {reason_part:?}"
        );
        assert_eq!(r.bytes_up + r.bytes_down, 0, "{r:?}");
    }
}

// ---------------------------------------------------------------------------
// Tests

#[test]
fn get_to_allowed_host_is_forwarded_in_origin_form() {
    let index = IndexServer::start("allowed-index");
    let f = start_proxy(&config(
        &[format!("pypi.test:{}", index.port)],
        &[("pypi.test", "127.0.0.1")],
    ));
    let url = format!("http://PyPI.test:{}/simple/", index.port);
    let resp = exchange(
        &f.socket,
        format!("GET {url} HTTP/1.1\r\nHost: evil.test\r\nProxy-Authorization: x\r\nConnection: close\r\n\r\n").as_bytes(),
    );
    assert_eq!(status(&resp), 200, "{resp}");
    assert!(resp.contains("allowed-index"));
    let head = exchange(
        &f.socket,
        format!(
            "HEAD http://pypi.test:{}/simple/tinypkg/ HTTP/1.1\r\nConnection: close\r\n\r\n",
            index.port
        )
        .as_bytes(),
    );
    assert_eq!(status(&head), 200, "{head}");

    let hits = index.hits();
    assert_eq!(hits.len(), 2, "{hits:?}");
    assert!(
        hits[0].starts_with("GET /simple/ HTTP/1.1\r\n"),
        "{}",
        hits[0]
    );
    // Host comes from the URI, never from the client's Host header; proxy
    // credentials are not passed on.
    assert!(
        hits[0]
            .to_ascii_lowercase()
            .contains(&format!("host: pypi.test:{}\r\n", index.port)),
        "{}",
        hits[0]
    );
    assert!(!hits[0].to_ascii_lowercase().contains("evil.test"));
    assert!(!hits[0].to_ascii_lowercase().contains("proxy-authorization"));

    let report = stop(f);
    assert_eq!(report.counts.requests, 2);
    assert_eq!(report.counts.allowed, 2);
    let get = &find(&report, "PyPI.test", "GET")[0];
    assert_eq!(get.verdict, Verdict::Allowed);
    assert_eq!(
        get.address.as_deref(),
        Some(format!("127.0.0.1:{}", index.port).as_str())
    );
    assert!(
        get.bytes_down > "allowed-index".len() as u64 && get.bytes_up > 20,
        "{get:?}"
    );
    assert_eq!(
        report.counts.bytes_down,
        report.requests.iter().map(|r| r.bytes_down).sum::<u64>()
    );
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["requests"][0]["verdict"], "allowed");
}

#[test]
fn refusals_are_refused_and_counted() {
    let index = IndexServer::start("allowed-index");
    let forbidden = IndexServer::start("forbidden-index");
    let raw = RawServer::start();
    let cfg = config(
        &[
            format!("pypi.test:{}", index.port),
            format!("tls.test:{}", raw.port),
            "meta.test:80".into(),
            "meta6.test".into(),
            "lan.test:80".into(),
            // Allowlisted, resolved by the real resolver (/etc/hosts): loopback,
            // and the index really listens there, so only the check stops it.
            format!("localhost:{}", index.port),
        ],
        &[
            ("pypi.test", "127.0.0.1"),
            ("tls.test", "127.0.0.1"),
            ("forbidden.test", "127.0.0.1"),
            ("meta.test", "169.254.169.254"),
            ("meta6.test", "fd00:ec2::254"),
            ("lan.test", "10.0.0.1"),
        ],
    );
    let f = start_proxy(&cfg);
    let s = &f.socket;
    let ip = index.port;
    let fp = forbidden.port;

    let expect_403 = |req: String| {
        let resp = exchange(s, req.as_bytes());
        assert_eq!(status(&resp), 403, "{req:?} -> {resp}");
        assert!(resp.contains("maibox proxy refused"), "{resp}");
    };
    // Not allowlisted (though it resolves and listens).
    expect_403(format!(
        "GET http://forbidden.test:{fp}/simple/ HTTP/1.1\r\nConnection: close\r\n\r\n"
    ));
    // Allowed host, wrong port.
    expect_403(format!(
        "GET http://pypi.test:{fp}/simple/ HTTP/1.1\r\nConnection: close\r\n\r\n"
    ));
    // Methods that write.
    expect_403(format!("POST http://pypi.test:{ip}/simple/ HTTP/1.1\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc"));
    expect_403(format!("PUT http://pypi.test:{ip}/simple/ HTTP/1.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"));
    expect_403(format!(
        "DELETE http://pypi.test:{ip}/simple/ HTTP/1.1\r\nConnection: close\r\n\r\n"
    ));
    // A GET carrying a body.
    expect_403(format!("GET http://pypi.test:{ip}/x HTTP/1.1\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello"));
    // Origin-form: not a proxy request.
    expect_403(format!(
        "GET /simple/ HTTP/1.1\r\nHost: pypi.test:{ip}\r\nConnection: close\r\n\r\n"
    ));
    // IP literals, in several spellings.
    expect_403(format!(
        "GET http://127.0.0.1:{ip}/simple/ HTTP/1.1\r\nConnection: close\r\n\r\n"
    ));
    expect_403(format!(
        "GET http://[::1]:{ip}/simple/ HTTP/1.1\r\nConnection: close\r\n\r\n"
    ));
    expect_403(format!(
        "GET http://2130706433:{ip}/simple/ HTTP/1.1\r\nConnection: close\r\n\r\n"
    ));
    // Allowlisted names resolving to refused addresses.
    expect_403(
        "GET http://meta.test/latest/meta-data/ HTTP/1.1\r\nConnection: close\r\n\r\n".into(),
    );
    expect_403("GET http://lan.test/ HTTP/1.1\r\nConnection: close\r\n\r\n".into());
    expect_403(format!(
        "GET http://localhost:{ip}/simple/ HTTP/1.1\r\nConnection: close\r\n\r\n"
    ));
    for target in [
        "evil.test:443".to_string(),
        "127.0.0.1:443".into(),
        "[::1]:443".into(),
        "meta6.test:443".into(),
    ] {
        let (_s, head) = connect(s, &target);
        assert_eq!(status(&head), 403, "CONNECT {target}: {head}");
    }

    // Mismatched SNI: the CONNECT is to an allowed host, the ClientHello names another.
    let (mut t, head) = connect(s, &format!("tls.test:{}", raw.port));
    assert_eq!(status(&head), 200, "{head}");
    t.write_all(&python_client_hello("evil.test")).unwrap();
    let mut rest = Vec::new();
    let _ = t.read_to_end(&mut rest);
    assert!(
        rest.is_empty(),
        "tunnel with wrong SNI carried data: {rest:?}"
    );

    // A relayed CONNECT inside a tunnel to the allowed host.
    let (mut t, head) = connect(s, &format!("tls.test:{}", raw.port));
    assert_eq!(status(&head), 200, "{head}");
    // The proxy may close as soon as it has seen the first non-TLS bytes, so a
    // failed write here is the refusal arriving early, not a test error.
    let relayed = format!("CONNECT forbidden.test:{fp} HTTP/1.1\r\nHost: forbidden.test\r\n\r\n");
    let _ = t.write_all(relayed.as_bytes());
    let mut rest = Vec::new();
    let _ = t.read_to_end(&mut rest);
    assert!(rest.is_empty(), "relayed CONNECT got an answer: {rest:?}");

    let report = stop(f);
    // Nothing refused ever reached a server: not the index, not the forbidden
    // one, and the TLS stand-in got connections but not a single byte.
    assert!(index.hits().is_empty(), "{:?}", index.hits());
    assert!(forbidden.hits().is_empty(), "{:?}", forbidden.hits());
    assert!(
        raw.conns.lock().unwrap().iter().all(|c| c.is_empty()),
        "upstream received data"
    );

    assert_refused(&report, "forbidden.test", "GET", "not in the allowlist");
    assert_refused(&report, "pypi.test", "POST", "method POST not allowed");
    assert_refused(&report, "pypi.test", "PUT", "method PUT not allowed");
    assert_refused(&report, "pypi.test", "DELETE", "method DELETE not allowed");
    assert_refused(&report, "", "GET", "URI must be absolute");
    assert_refused(&report, "127.0.0.1", "GET", "IP-literal");
    assert_refused(&report, "[::1]", "GET", "IP-literal");
    assert_refused(&report, "2130706433", "GET", "IP-literal");
    assert_refused(
        &report,
        "meta.test",
        "GET",
        "169.254.169.254 (cloud metadata)",
    );
    assert_refused(&report, "lan.test", "GET", "10.0.0.1 (private)");
    assert_refused(&report, "localhost", "GET", "(loopback)");
    assert_refused(&report, "evil.test", "CONNECT", "not in the allowlist");
    assert_refused(&report, "127.0.0.1", "CONNECT", "IP-literal");
    assert_refused(&report, "[::1]", "CONNECT", "IP-literal");
    assert_refused(
        &report,
        "meta6.test",
        "CONNECT",
        "fd00:ec2::254 (cloud metadata)",
    );
    let tls: Vec<_> = find(&report, "tls.test", "CONNECT");
    assert_eq!(tls.len(), 2);
    assert!(tls.iter().all(|r| r.verdict == Verdict::Refused));
    assert!(
        tls[0]
            .reason
            .as_deref()
            .unwrap()
            .contains("SNI evil.test does not match CONNECT host tls.test"),
        "{:?}",
        tls[0]
    );
    assert!(
        tls[1]
            .reason
            .as_deref()
            .unwrap()
            .contains("not a TLS handshake"),
        "{:?}",
        tls[1]
    );
    let pypi_get: Vec<_> = find(&report, "pypi.test", "GET");
    assert_eq!(pypi_get.len(), 2);
    assert!(pypi_get.iter().any(|r| r
        .reason
        .as_deref()
        .unwrap()
        .contains("not in the allowlist")));
    assert!(pypi_get.iter().any(|r| r
        .reason
        .as_deref()
        .unwrap()
        .contains("request body not allowed")));

    assert_eq!(report.counts.allowed, 0, "{:#?}", report.requests);
    assert_eq!(report.counts.refused, report.counts.requests);
    assert_eq!(report.counts.requests, 19);
}

#[test]
fn connect_with_matching_sni_carries_only_tls() {
    let raw = RawServer::start();
    let f = start_proxy(&config(
        &[format!("tls.test:{}", raw.port)],
        &[("tls.test", "127.0.0.1")],
    ));
    let hello = python_client_hello("tls.test");
    let (mut t, head) = connect(&f.socket, &format!("tls.test:{}", raw.port));
    assert_eq!(status(&head), 200, "{head}");
    t.write_all(&hello).unwrap();
    let mut got = [0u8; 7];
    t.read_exact(&mut got).unwrap();
    assert_eq!(got, SERVER_RECORD);
    let app = [23u8, 3, 3, 0, 4, 1, 2, 3, 4];
    t.write_all(&app).unwrap();
    t.shutdown(std::net::Shutdown::Write).unwrap();
    let mut rest = Vec::new();
    let _ = t.read_to_end(&mut rest);

    let deadline = Instant::now() + Duration::from_secs(5);
    while raw.conns.lock().unwrap().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let conns = raw.conns.lock().unwrap().clone();
    assert_eq!(conns.len(), 1);
    let mut want = hello.clone();
    want.extend_from_slice(&app);
    assert_eq!(
        conns[0], want,
        "upstream must receive exactly the ClientHello and the record"
    );

    let report = stop(f);
    let r = &report.requests[0];
    assert_eq!(
        (r.method.as_str(), r.verdict, r.reason.as_deref()),
        ("CONNECT", Verdict::Allowed, None),
        "{r:?}"
    );
    assert_eq!(r.bytes_up, want.len() as u64);
    assert_eq!(r.bytes_down, SERVER_RECORD.len() as u64);
}

#[test]
fn non_tls_after_hello_ends_the_tunnel() {
    let raw = RawServer::start();
    let f = start_proxy(&config(
        &[format!("tls.test:{}", raw.port)],
        &[("tls.test", "127.0.0.1")],
    ));
    let hello = python_client_hello("tls.test");
    let (mut t, _) = connect(&f.socket, &format!("tls.test:{}", raw.port));
    t.write_all(&hello).unwrap();
    let mut got = [0u8; 7];
    t.read_exact(&mut got).unwrap();
    t.write_all(b"GET http://forbidden.test/ HTTP/1.1\r\n\r\n")
        .unwrap();
    let mut rest = Vec::new();
    let _ = t.read_to_end(&mut rest);
    let report = stop(f);
    let r = &report.requests[0];
    assert_eq!(r.verdict, Verdict::Refused, "{r:?}");
    assert!(
        r.reason.as_deref().unwrap().contains("after ClientHello"),
        "{r:?}"
    );
    let conns = raw.conns.lock().unwrap().clone();
    assert_eq!(
        conns[0], hello,
        "only the ClientHello may have reached upstream"
    );
}

#[test]
fn request_and_byte_limits() {
    let index = IndexServer::start("allowed-index");
    let mut cfg = config(
        &[format!("pypi.test:{}", index.port)],
        &[("pypi.test", "127.0.0.1")],
    );
    cfg.max_requests = 2;
    cfg.max_bytes = 50_000;
    let f = start_proxy(&cfg);
    let get = |path: &str| {
        exchange(
            &f.socket,
            format!(
                "GET http://pypi.test:{}{path} HTTP/1.1\r\nConnection: close\r\n\r\n",
                index.port
            )
            .as_bytes(),
        )
    };
    let big = get("/big");
    assert_eq!(status(&big), 200);
    assert!(
        big.len() < 60_000,
        "byte limit not enforced: {} bytes",
        big.len()
    );
    // The budget is spent: the next allowed request cannot get its answer.
    let second = get("/simple/");
    assert_ne!(status(&second), 200, "{second}");
    let third = get("/simple/");
    assert_eq!(status(&third), 403, "{third}");
    let report = stop(f);
    assert_eq!(report.counts.requests, 3);
    assert!(
        report.counts.bytes_up + report.counts.bytes_down <= 50_000,
        "{:?}",
        report.counts
    );
    assert_eq!(
        report.requests[0].reason.as_deref(),
        Some("byte limit reached"),
        "{:?}",
        report.requests[0]
    );
    assert!(report.requests[2]
        .reason
        .as_deref()
        .unwrap()
        .contains("request limit (2) reached"));
}

// ---------------------------------------------------------------------------
// Through the bridge, in another process, with Python

/// Entry point for the bridge child: the test binary re-executed with
/// `MAIBOX_TEST_BRIDGE=port:socket`. A fresh process rather than fork() from
/// the multi-threaded test harness, where only async-signal-safe calls would be
/// safe in the child; in maibox the bridge is forked from the single-threaded
/// init.
#[test]
fn bridge_child_entry() {
    if let Ok(spec) = std::env::var("MAIBOX_TEST_BRIDGE") {
        let (port, socket) = spec.split_once(':').unwrap();
        net::run_bridge(port.parse().unwrap(), Path::new(socket));
    }
}

struct Bridge {
    child: Child,
    port: u16,
}

impl Drop for Bridge {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_bridge(socket: &Path) -> Bridge {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "bridge_child_entry",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("MAIBOX_TEST_BRIDGE", format!("{port}:{}", socket.display()))
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "bridge did not listen on {port}");
        std::thread::sleep(Duration::from_millis(20));
    }
    Bridge { child, port }
}

fn python(bridge_port: u16, home: &Path, args: &[&str]) -> std::process::Output {
    let mut cmd = Command::new("/usr/bin/python3");
    cmd.args(args)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", home);
    for (k, v) in net::proxy_env(bridge_port) {
        cmd.env(k, v);
    }
    // pip must not read the machine's config or use its cache.
    cmd.env("PIP_CONFIG_FILE", "/dev/null")
        .env("PIP_NO_CACHE_DIR", "1");
    cmd.output().unwrap()
}

const URLLIB: &str = r#"
import sys, urllib.request, urllib.error
req = urllib.request.Request(sys.argv[1], method=sys.argv[2], data=(b"x" if sys.argv[2] == "POST" else None))
try:
    with urllib.request.urlopen(req, timeout=20) as r:
        print(r.status, r.read().decode())
except urllib.error.HTTPError as e:
    print(e.code)
"#;

#[test]
fn urllib_and_pip_through_the_bridge() {
    let index = IndexServer::start("allowed-index");
    let forbidden = IndexServer::start("forbidden-index");
    let f = start_proxy(&config(
        &[format!("pypi.test:{}", index.port)],
        &[("pypi.test", "127.0.0.1"), ("forbidden.test", "127.0.0.1")],
    ));
    let bridge = start_bridge(&f.socket);
    let home = tempfile::tempdir().unwrap();
    let ip = index.port;

    let out = python(
        bridge.port,
        home.path(),
        &[
            "-c",
            URLLIB,
            &format!("http://pypi.test:{ip}/simple/"),
            "GET",
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with("200 ") && stdout.contains("allowed-index"),
        "{stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    for (url, method) in [
        (
            format!("http://forbidden.test:{}/simple/", forbidden.port),
            "GET",
        ),
        (format!("http://pypi.test:{ip}/simple/"), "POST"),
    ] {
        let out = python(bridge.port, home.path(), &["-c", URLLIB, &url, method]);
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            "403",
            "{method} {url}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    // The gold test: pip resolves the index page and installs the wheel, all
    // through the variables from proxy_env, the bridge and the proxy.
    let target = home.path().join("site");
    let index_url = format!("http://pypi.test:{ip}/simple/");
    let host = format!("pypi.test:{ip}");
    let out = python(
        bridge.port,
        home.path(),
        &[
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--index-url",
            &index_url,
            "--trusted-host",
            &host,
            "--target",
            target.to_str().unwrap(),
            "tinypkg",
        ],
    );
    assert!(
        out.status.success(),
        "pip install failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(target.join("tinypkg/__init__.py")).unwrap(),
        "VALUE = 42\n"
    );
    let dl = home.path().join("dl");
    let out = python(
        bridge.port,
        home.path(),
        &[
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--index-url",
            &index_url,
            "--trusted-host",
            &host,
            "-d",
            dl.to_str().unwrap(),
            "tinypkg",
        ],
    );
    assert!(
        out.status.success(),
        "pip download failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(dl.join("tinypkg-0.1-py3-none-any.whl").exists());

    drop(bridge);
    let report = stop(f);
    assert!(forbidden.hits().is_empty());
    assert!(
        index.hits().iter().all(|h| h.starts_with("GET ")),
        "{:?}",
        index.hits()
    );
    assert_refused(&report, "forbidden.test", "GET", "not in the allowlist");
    assert_refused(&report, "pypi.test", "POST", "method POST not allowed");
    let wheel_gets = index
        .hits()
        .iter()
        .filter(|h| h.starts_with("GET /files/tinypkg-0.1-py3-none-any.whl"))
        .count();
    assert_eq!(wheel_gets, 2);
    assert!(report.counts.allowed >= 5, "{:?}", report.counts);
    assert_eq!(report.counts.refused, 2);
}

const TLS_SCRIPT: &str = r#"
import ssl, sys, threading, http.server, urllib.request
port, cert, key, host = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        b = b"tls-ok"
        self.send_response(200)
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)
    def log_message(self, *a):
        pass
srv = http.server.HTTPServer(("127.0.0.1", port), H)
sctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
sctx.load_cert_chain(cert, key)
srv.socket = sctx.wrap_socket(srv.socket, server_side=True)
threading.Thread(target=srv.serve_forever, daemon=True).start()
cctx = ssl.create_default_context(cafile=cert)
try:
    print(urllib.request.urlopen(f"https://{host}:{port}/", context=cctx, timeout=20).read().decode())
except OSError as e:
    print("error", e)
"#;

/// Real TLS end to end: OpenSSL client (urllib via HTTPS_PROXY) and server, the
/// tunnel through bridge and proxy, the SNI checked on the way.
#[test]
fn https_through_the_bridge() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = (dir.path().join("c.pem"), dir.path().join("k.pem"));
    let ok = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=tls.test",
        ])
        .args(["-addext", "subjectAltName=DNS:tls.test", "-keyout"])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("openssl CLI is needed for this test");
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let f = start_proxy(&config(
        &[format!("tls.test:{port}")],
        &[("tls.test", "127.0.0.1"), ("evil.test", "127.0.0.1")],
    ));
    let bridge = start_bridge(&f.socket);
    let run = |host: &str| {
        let out = python(
            bridge.port,
            dir.path(),
            &[
                "-c",
                TLS_SCRIPT,
                &port.to_string(),
                cert.to_str().unwrap(),
                key.to_str().unwrap(),
                host,
            ],
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    assert_eq!(run("tls.test"), "tls-ok");
    let refused = run("evil.test");
    assert!(
        refused.starts_with("error") && refused.contains("403"),
        "{refused}"
    );
    drop(bridge);
    let report = stop(f);
    let ok = &find(&report, "tls.test", "CONNECT")[0];
    assert_eq!(
        (ok.verdict, ok.reason.as_deref()),
        (Verdict::Allowed, None),
        "{ok:?}"
    );
    assert!(ok.bytes_up > 200 && ok.bytes_down > 500, "{ok:?}");
    assert_refused(&report, "evil.test", "CONNECT", "not in the allowlist");
}
