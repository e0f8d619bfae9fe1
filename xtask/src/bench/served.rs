//! The warm rows: a `maibox serve` of the bench's own, `maibox exec --server` rows in
//! both tables and in the throughput, the Python client driven from one Python process
//! against bare python started per run from that process, and the server's memory.

use super::{row, Row};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running server; stopped (SIGTERM) when dropped.
pub struct Server {
    child: Child,
    pub socket: PathBuf,
}

impl Server {
    /// Starts `m serve` with the built-in configuration and `extra_args` (e.g.
    /// `--warm-mode fork`), its socket, log and audit directory named after `name`
    /// in `dir`, and waits for its pool.
    pub fn start(m: &str, dir: &Path, name: &str, extra_args: &[&str]) -> Result<Server> {
        let socket = dir.join(format!("{name}.sock"));
        let log = dir.join(format!("{name}.log"));
        let child = Command::new(m)
            .arg("serve")
            .args(extra_args)
            .arg("--socket")
            .arg(&socket)
            .env("MAIBOX_AUDIT_DIR", dir.join(format!("{name}-audit")))
            .env_remove("MAIBOX_CONFIG")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log)?)
            .spawn()
            .with_context(|| format!("starting maibox serve {}", extra_args.join(" ")))?;
        let mut s = Server { child, socket };
        let t0 = Instant::now();
        while std::os::unix::net::UnixStream::connect(&s.socket).is_err() {
            if let Some(st) = s.child.try_wait()? {
                bail!("maibox serve exited ({st}); see {}", log.display());
            }
            if t0.elapsed() > Duration::from_secs(60) {
                bail!("maibox serve did not start; see {}", log.display());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // Let the pool fill before anything is timed.
        std::thread::sleep(Duration::from_secs(2));
        Ok(s)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let _ = self.child.wait();
    }
}

/// `maibox exec --server` of `script`: the CLI as the server's client.
pub fn cli_cmd(m: &str, socket: &Path, script: &str) -> Vec<String> {
    [
        m,
        "exec",
        "--server",
        "--socket",
        &socket.display().to_string(),
        script,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

pub fn rows(m: &str, socket: &Path, script: &str) -> Vec<Row> {
    rows_named(
        "maibox exec --server (warm, preloaded imports)",
        m,
        socket,
        script,
    )
}

/// [`rows`] under another name: the row of another server's mode.
pub fn rows_named(name: &str, m: &str, socket: &Path, script: &str) -> Vec<Row> {
    vec![row(name, cli_cmd(m, socket, script))]
}

/// RssAnon of `pid` in bytes (0 when it is gone).
fn rss_anon(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            let kb = s.lines().find_map(|l| l.strip_prefix("RssAnon:"))?;
            kb.trim().trim_end_matches("kB").trim().parse::<u64>().ok()
        })
        .unwrap_or(0)
        * 1024
}

/// The zygotes of a `--warm-mode fork` server: its direct children whose command
/// line holds `_MAIBOX_ZYGOTE` (their short-lived per-sandbox parents are the
/// zygotes' children, not the server's). The sum of their RssAnon (pages they
/// share with their forks included) and how many there are.
pub fn zygotes(server: u32) -> (u64, usize) {
    const TAG: &[u8] = b"_MAIBOX_ZYGOTE";
    let ppid = server.to_string();
    let pids: Vec<u32> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/status"))
                .ok()
                .and_then(|s| {
                    let p = s.lines().find_map(|l| l.strip_prefix("PPid:"))?;
                    Some(p.trim() == ppid)
                })
                .unwrap_or(false)
        })
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|c| c.windows(TAG.len()).any(|w| w == TAG))
                .unwrap_or(false)
        })
        .collect();
    (pids.iter().map(|p| rss_anon(*p)).sum(), pids.len())
}

/// The server's anonymous memory (its own heap and stacks: RssAnon), idle with its
/// pool, and the memory of one prepared sandbox (its cgroup's usage: the interpreter
/// with its preloads, the sandbox's tmpfs pages and kernel memory), with how many.
pub fn memory(server: u32) -> (u64, u64, usize) {
    let anon = rss_anon(server);
    let tag = format!("run-{server}-");
    let usages: Vec<u64> = ["/sys/fs/cgroup/memory/maibox", "/sys/fs/cgroup/maibox"]
        .iter()
        .flat_map(|d| std::fs::read_dir(d).into_iter().flatten().flatten())
        .filter(|e| e.file_name().to_string_lossy().starts_with(&tag))
        .filter_map(|e| {
            ["memory.usage_in_bytes", "memory.current"]
                .iter()
                .find_map(|f| std::fs::read_to_string(e.path().join(f)).ok())
                .and_then(|v| v.trim().parse().ok())
        })
        .collect();
    let per = usages.iter().sum::<u64>() / usages.len().max(1) as u64;
    (anon, per, usages.len())
}

/// The Python client from one Python process, in interleaved rounds against bare
/// python started per run (subprocess) from the same process.
const DRIVER: &str = r#"
import json, random, subprocess, sys, time
sys.path.insert(0, sys.argv[1])
import maibox
socket, rounds = sys.argv[2], int(sys.argv[3])
scripts = {name: open(path).read() for name, path in zip(("empty", "realistic"), sys.argv[4:6])}
paths = dict(zip(("empty", "realistic"), sys.argv[4:6]))
sb = maibox.Sandbox(mode="server", socket=socket)
out = {}
for name, code in scripts.items():
    bare, client, overhead = [], [], []
    for _ in range(rounds):
        for which in random.sample(["bare", "client"], 2):
            t = time.perf_counter()
            if which == "bare":
                subprocess.run(["/usr/bin/python3", "-s", paths[name]], stdout=subprocess.DEVNULL, check=True)
                bare.append(time.perf_counter() - t)
            else:
                r = sb.run(code)
                d = time.perf_counter() - t
                assert r.exit_code == 0, r.stderr
                client.append(d)
                overhead.append(d - r.server["total_ms"] / 1e3)
    out[name] = {"bare_s": bare, "client_s": client, "client_overhead_s": overhead}
print(json.dumps(out))
"#;

/// Medians in ms: per script, (bare python, client, client overhead).
pub type Client = Vec<(String, f64, f64, f64)>;

pub fn python_client(
    socket: &Path,
    dir: &Path,
    scripts: [&Path; 2],
    rounds: usize,
) -> Result<Client> {
    let driver = dir.join("client_driver.py");
    std::fs::write(&driver, DRIVER)?;
    let pkg = crate::root().join("python");
    let o = Command::new("/usr/bin/python3")
        .arg(&driver)
        .arg(&pkg)
        .arg(socket)
        .arg(rounds.to_string())
        .args(scripts)
        .output()
        .context("running the Python client's driver")?;
    if !o.status.success() {
        bail!(
            "the Python client's driver failed: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let v: serde_json::Value = serde_json::from_slice(&o.stdout)?;
    let median = |key: &str, name: &str| -> f64 {
        let mut xs: Vec<f64> = v[name][key]
            .as_array()
            .map(|a| a.iter().filter_map(|x| x.as_f64()).collect())
            .unwrap_or_default();
        xs.sort_by(|a, b| a.total_cmp(b));
        xs.get(xs.len() / 2).copied().unwrap_or(0.0) * 1e3
    };
    Ok(["empty", "realistic"]
        .iter()
        .map(|n| {
            (
                n.to_string(),
                median("bare_s", n),
                median("client_s", n),
                median("client_overhead_s", n),
            )
        })
        .collect())
}
