//! `--network allowlist`: the sandbox still has only `lo`; the one way out is the
//! supervisor's filtering proxy, reached through the in-sandbox bridge.

mod common;
use common::*;
use std::io::{Read, Write};

/// A tiny HTTP server on the host's loopback standing in for a package index.
fn index_server() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut s in l.incoming().flatten() {
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let body = b"simple index";
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = s.write_all(body);
        }
    });
    port
}

fn config(s: &Scratch, port: u16) -> std::path::PathBuf {
    let text = maibox::config::BUILTIN.replacen(
        "# Per-run cgroups",
        &format!("network:\n  allow: [pypi.test:{port}]\n  test_resolve: {{pypi.test: 127.0.0.1, evil.test: 127.0.0.1}}\n\n# Per-run cgroups"),
        1,
    );
    assert_ne!(text, maibox::config::BUILTIN);
    s.file("net.yaml", text.as_bytes())
}

const CLIENT: &str = r#"
import json, os, socket, sys, urllib.request
port = int(sys.argv[1])
res = {"proxy_env": os.environ.get("HTTP_PROXY")}
def get(url, data=None):
    try:
        return urllib.request.urlopen(urllib.request.Request(url, data=data), timeout=5).read().decode()
    except Exception as e:
        return type(e).__name__ + ":" + str(getattr(e, "code", ""))
res["allowed"] = get(f"http://pypi.test:{port}/simple/")
res["forbidden_host"] = get(f"http://evil.test:{port}/")
res["post"] = get(f"http://pypi.test:{port}/upload", data=b"x")
res["ip_literal"] = get(f"http://127.0.0.1:{port}/")
try:
    socket.create_connection(("127.0.0.1", port), timeout=2); res["direct"] = "connected"
except OSError as e:
    res["direct"] = e.__class__.__name__
print(json.dumps(res))
"#;

#[test]
fn allowlist_mode_lets_only_allowed_requests_out() {
    let port = index_server();
    let s = Scratch::new();
    let cfg = config(&s, port);
    let script = s.file("client.py", CLIENT.as_bytes());
    for who in identities("allowlist_mode_lets_only_allowed_requests_out") {
        let o = run(
            who,
            &[
                "exec",
                "--json",
                "--config",
                cfg.to_str().unwrap(),
                "--network",
                "allowlist",
                script.to_str().unwrap(),
                "--",
                &port.to_string(),
            ],
        );
        let out = stdout(&o);
        let v: serde_json::Value = serde_json::from_str(out.lines().next().unwrap_or_default())
            .unwrap_or_else(|e| panic!("{e}: {out} {}", stderr(&o)));
        assert_eq!(v["allowed"], "simple index", "{who:?}: {v}");
        assert_eq!(v["forbidden_host"], "HTTPError:403", "{who:?}: {v}");
        assert_eq!(v["post"], "HTTPError:403", "{who:?}: {v}");
        // 127.0.0.1 is in NO_PROXY (local servers inside must work), so this goes
        // direct, and inside the sandbox nothing listens there: never the host's index.
        assert_ne!(v["ip_literal"], "simple index", "{who:?}: {v}");
        // A client that ignores the proxy variables has no route at all.
        assert_ne!(v["direct"], "connected", "{who:?}: {v}");
        let r = report(&o);
        assert_eq!(r["network"]["mode"], "allowlist");
        let counts = &r["network"]["proxy"]["counts"];
        assert!(counts["allowed"].as_u64().unwrap() >= 1, "{r}");
        assert!(counts["refused"].as_u64().unwrap() >= 2, "{r}");
        // Control: with network none the same client reaches nothing.
        let o = run(
            who,
            &[
                "exec",
                "--config",
                cfg.to_str().unwrap(),
                script.to_str().unwrap(),
                "--",
                &port.to_string(),
            ],
        );
        let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
        assert_ne!(v["allowed"], "simple index", "{who:?}: control: {v}");
        assert_eq!(v["proxy_env"], serde_json::Value::Null);
    }
    // No proxy socket directory is left behind.
    let left: Vec<_> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("maibox-proxy-"))
        .filter(|e| {
            std::fs::metadata(e.path())
                .map(|m| {
                    m.modified()
                        .map(|t| t.elapsed().map(|d| d.as_secs() < 60).unwrap_or(false))
                        .unwrap_or(false)
                })
                .unwrap_or(false)
        })
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn bad_allowlist_entries_are_refused_at_load() {
    let s = Scratch::new();
    for entry in [
        "http://pypi.org",
        "pypi.org/simple",
        "pypi.org:99999",
        "\"\"",
    ] {
        let text = maibox::config::BUILTIN.replacen(
            "# Per-run cgroups",
            &format!("network:\n  allow: [{entry}]\n\n# Per-run cgroups"),
            1,
        );
        let cfg = s.file("bad.yaml", text.as_bytes());
        let o = run(
            As::Caller,
            &["exec", "--config", cfg.to_str().unwrap(), "-c", "pass"],
        );
        assert_eq!(o.status.code(), Some(125), "{entry}");
        assert!(stderr(&o).contains("network"), "{entry}: {}", stderr(&o));
    }
}
