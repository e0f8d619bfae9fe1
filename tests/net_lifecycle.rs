//! 50 proxy runs in a row, each stopped in the middle of a download, leave no
//! thread, socket file or directory behind. Its own test binary, so the thread
//! count of this process is not disturbed by other tests.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use maibox::net::{self, NetConfig, Verdict};

fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").unwrap().count()
}

/// A server that never finishes its body: 1 KiB every 5 ms until the peer goes.
fn endless_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            std::thread::spawn(move || {
                let mut head = [0u8; 1024];
                let _ = conn.read(&mut head);
                if conn
                    .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000000\r\n\r\n")
                    .is_err()
                {
                    return;
                }
                while conn.write_all(&[b'x'; 1024]).is_ok() {
                    std::thread::sleep(Duration::from_millis(5));
                }
            });
        }
    });
    port
}

#[test]
fn fifty_runs_stopped_mid_download_leave_nothing() {
    let port = endless_server();
    let tmp = tempfile::tempdir().unwrap();
    let mut test_resolve = BTreeMap::new();
    test_resolve.insert("pypi.test".to_string(), "127.0.0.1".parse().unwrap());
    let cfg = NetConfig {
        allow: vec![format!("pypi.test:{port}")],
        test_resolve,
        ..NetConfig::default()
    };
    // Warm up once so lazily created process-wide threads are not counted.
    net::prepare(&cfg, tmp.path())
        .unwrap()
        .start()
        .unwrap()
        .stop();
    let baseline = threads();
    for run in 0..50 {
        let prepared = net::prepare(&cfg, tmp.path()).unwrap();
        let socket = prepared.socket_path().to_path_buf();
        let proxy = prepared.start().unwrap();
        let mut c = UnixStream::connect(&socket).unwrap();
        write!(c, "GET http://pypi.test:{port}/wheel HTTP/1.1\r\n\r\n").unwrap();
        let mut got = vec![0u8; 4096];
        let mut n = 0;
        while n < 2048 {
            n += c.read(&mut got[n..]).unwrap();
        }
        let report = proxy.stop();
        assert_eq!(report.counts.requests, 1, "run {run}");
        assert_eq!(report.requests[0].verdict, Verdict::Allowed);
        assert!(
            report.requests[0].bytes_down >= 2048,
            "run {run}: {:?}",
            report.requests[0]
        );
        // The client side sees the end promptly, not a hang.
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let t = Instant::now();
        let mut sink = Vec::new();
        let _ = c.read_to_end(&mut sink);
        assert!(
            t.elapsed() < Duration::from_secs(4),
            "run {run}: connection outlived the proxy"
        );
        assert!(!socket.exists(), "run {run}: socket left");
        assert!(UnixStream::connect(&socket).is_err());
    }
    assert_eq!(
        std::fs::read_dir(tmp.path()).unwrap().count(),
        0,
        "directories left behind"
    );
    // Threads exit asynchronously after join returns in rare cases (and the test
    // server's connection threads notice the peer gone only at their next write):
    // allow them a generous moment on a loaded machine.
    let deadline = Instant::now() + Duration::from_secs(20);
    while threads() > baseline && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        threads() <= baseline,
        "threads: {} > baseline {baseline}",
        threads()
    );
}
