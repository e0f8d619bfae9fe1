//! Project tasks: `cargo xtask test` (the full check CI runs) and `cargo xtask bench`.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

mod docker;
mod vm;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("test") => test(),
        Some("bench") => bench(&args[1..]),
        Some("rootfs") => rootfs(&args[1..]),
        Some("test-vm") => vm::test_vm(root()),
        Some("test-docker") => docker::test_docker(root()),
        _ => {
            eprintln!("usage: cargo xtask test | cargo xtask test-vm | cargo xtask test-docker | cargo xtask bench [--rounds N] [--layers] | cargo xtask rootfs DIR [PYTHON]");
            std::process::exit(2)
        }
    }
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

fn cargo(args: &[&str]) -> Result<()> {
    eprintln!("==> cargo {}", args.join(" "));
    let st = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(args)
        .current_dir(root())
        .status()
        .with_context(|| format!("running cargo {}", args.join(" ")))?;
    if !st.success() {
        bail!("cargo {} failed ({st})", args.join(" "));
    }
    Ok(())
}

/// The project's test command: formatting, lints, every test on this host (with a local
/// Docker engine for the Docker lane), then the engine tests again in a cgroup-v2 guest on another kernel (the VM lane).
fn test() -> Result<()> {
    cargo(&["fmt", "--all", "--check"])?;
    cargo(&[
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ])?;
    // The Docker lane's tests (tests/docker_*.rs) run inside the workspace's tests, against
    // an engine started here and stopped afterwards if this run started it.
    cargo(&["build", "-p", "maibox"])?;
    let engine = docker::up(&root())?;
    cargo(&["test", "--workspace"])?;
    drop(engine);
    vm::test_vm(root())
}

/// Builds the minimal Python root image for `maibox exec --rootfs DIR`.
fn rootfs(args: &[String]) -> Result<()> {
    let dest = args
        .first()
        .context("usage: cargo xtask rootfs DIR [PYTHON]")?;
    let python = args
        .get(1)
        .map(String::as_str)
        .unwrap_or("/usr/bin/python3");
    if Path::new(dest).exists() && std::fs::read_dir(dest)?.next().is_some() {
        bail!("{dest} is not empty; give a new or empty directory");
    }
    let built = maibox::image::build(Path::new(dest), Path::new(python))?;
    println!(
        "root image in {dest}: {} files, interpreter {} (run: maibox exec --rootfs {dest} script.py)",
        built.files,
        built.python.display()
    );
    Ok(())
}

struct Row {
    name: String,
    cmd: Vec<String>,
    samples: Vec<Duration>,
}

/// Startup benchmark: interleaved rounds (each round runs every row once) so that
/// machine noise hits all rows alike; reports medians and the ratio to bare python.
fn bench(args: &[String]) -> Result<()> {
    let mut rounds = 200usize;
    let mut layers = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--rounds" => {
                rounds = it
                    .next()
                    .context("--rounds needs a number")?
                    .parse()
                    .context("--rounds needs a number")?
            }
            "--layers" => layers = true,
            other => bail!("unknown bench option {other} (options: --rounds N, --layers)"),
        }
    }
    if rounds == 0 {
        bail!("--rounds must be at least 1");
    }
    cargo(&["build", "--release", "--bin", "maibox"])?;
    let maibox = root().join("target/release/maibox");
    let dir = std::env::temp_dir().join(format!("maibox-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let empty = dir.join("empty.py");
    std::fs::write(&empty, "")?;
    let e = empty.display().to_string();
    let m = maibox.display().to_string();
    let mut rows = vec![
        Row {
            name: "python3 (bare)".into(),
            cmd: vec!["/usr/bin/python3".into(), e.clone()],
            samples: vec![],
        },
        Row {
            name: "maibox exec --trust untrusted".into(),
            cmd: maibox_cmd(&m, &["--trust", "untrusted"], &e),
            samples: vec![],
        },
        Row {
            name: "maibox exec --trust trusted".into(),
            cmd: maibox_cmd(&m, &["--trust", "trusted"], &e),
            samples: vec![],
        },
    ];
    // Peers found on this machine, with command lines as close to maibox's layers as
    // each allows; absent ones are skipped with a note.
    let mut notes = Vec::new();
    match which("bwrap") {
        Some(bwrap) => rows.push(Row {
            name: "bubblewrap (unshare-all, ro /usr, caps dropped)".into(),
            cmd: bwrap_cmd(&bwrap, &e),
            samples: vec![],
        }),
        None => notes.push("bubblewrap: not installed, skipped".to_string()),
    }
    match which("crun") {
        Some(crun) => {
            let bundle = dir.join("crun-bundle");
            crun_bundle(&bundle, &empty)?;
            rows.push(Row {
                name: "crun run (OCI bundle, no cgroups)".into(),
                cmd: vec![
                    crun,
                    "--cgroup-manager=disabled".into(),
                    "run".into(),
                    "--bundle".into(),
                    bundle.display().to_string(),
                    "@ID@".into(),
                ],
                samples: vec![],
            });
        }
        None => notes.push("crun: not installed, skipped".to_string()),
    }
    if layers {
        // What each layer costs: untrusted with that one layer switched off.
        rows.push(Row {
            name: "untrusted with --network allowlist (proxy and bridge)".into(),
            cmd: maibox_cmd(&m, &["--trust", "untrusted", "--network", "allowlist"], &e),
            samples: vec![],
        });
        for layer in [
            "cgroup-limits",
            "seccomp",
            "landlock",
            "net-ns",
            "proc-masks",
        ] {
            rows.push(Row {
                name: format!("untrusted without {layer}"),
                cmd: maibox_cmd(
                    &m,
                    &["--trust", "untrusted", "--unsafe-disable-layer", layer],
                    &e,
                ),
                samples: vec![],
            });
        }
    }
    // Warm-up (page cache, dynamic loader), which also finds rows that fail: those
    // are reported as failed, never timed. The baseline must work.
    let mut failed = Vec::new();
    rows.retain(|r| match run_once(&r.cmd) {
        Ok(_) => true,
        Err(e) => {
            failed.push(format!("| {} | failed: {e:#} | | |", r.name));
            false
        }
    });
    if rows
        .first()
        .map(|r| !r.name.starts_with("python3"))
        .unwrap_or(true)
    {
        bail!("the baseline (bare python3) failed to run");
    }
    let mut order: Vec<usize> = (0..rows.len()).collect();
    let mut seed = 0x9e3779b97f4a7c15u64;
    for _ in 0..rounds {
        // Fisher-Yates with a xorshift: the order only needs to vary, not be secure.
        for i in (1..order.len()).rev() {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            order.swap(i, (seed % (i as u64 + 1)) as usize);
        }
        for &i in &order {
            let d = run_once(&rows[i].cmd)?;
            rows[i].samples.push(d);
        }
    }
    for n in &notes {
        println!("note: {n}");
    }
    let base = median(&mut rows[0].samples.clone());
    println!("\nStartup of an empty script, {rounds} interleaved rounds:\n");
    println!("| command | median ms | p90 ms | ratio to bare python |");
    println!("|---|---:|---:|---:|");
    for r in &mut rows {
        let med = median(&mut r.samples);
        let p90 = percentile(&mut r.samples, 0.9);
        println!(
            "| {} | {:.2} | {:.2} | {:.2}x |",
            r.name,
            ms(med),
            ms(p90),
            med.as_secs_f64() / base.as_secs_f64()
        );
    }
    for f in &failed {
        println!("{f}");
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

fn maibox_cmd(m: &str, flags: &[&str], script: &str) -> Vec<String> {
    let mut c = vec![m.to_string(), "exec".to_string()];
    c.extend(flags.iter().map(|f| f.to_string()));
    c.push(script.to_string());
    c
}

fn which(name: &str) -> Option<String> {
    std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join(name))
            .find(|f| f.is_file())
            .map(|f| f.display().to_string())
    })
}

/// bubblewrap with the closest equivalent of maibox's view and privileges (it has no
/// seccomp profile or Landlock of its own, and no cgroups).
fn bwrap_cmd(bwrap: &str, script: &str) -> Vec<String> {
    let mut c: Vec<String> = vec![bwrap.into()];
    for a in [
        "--unshare-all",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--ro-bind",
        "/usr",
        "/usr",
        "--symlink",
        "usr/lib",
        "/lib",
        "--symlink",
        "usr/lib64",
        "/lib64",
        "--symlink",
        "usr/bin",
        "/bin",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--tmpfs",
        "/tmp",
        "--uid",
        "1000",
        "--gid",
        "1000",
        "--ro-bind",
        script,
        "/sandbox/main.py",
        "--chdir",
        "/sandbox",
        "/usr/bin/python3",
        "-s",
        "/sandbox/main.py",
    ] {
        c.push(a.into());
    }
    c
}

/// An OCI bundle on maibox's minimal Python image running the same script.
fn crun_bundle(bundle: &Path, script: &Path) -> Result<()> {
    let rootfs = bundle.join("rootfs");
    maibox::image::build(&rootfs, Path::new("/usr/bin/python3"))?;
    std::fs::copy(script, rootfs.join("sandbox/main.py"))?;
    let config = serde_json::json!({
        "ociVersion": "1.0.2",
        "process": {
            "terminal": false,
            "user": {"uid": 1000, "gid": 1000},
            "args": ["/usr/bin/python3", "-s", "/sandbox/main.py"],
            "env": ["PATH=/usr/bin:/bin", "LANG=C.UTF-8"],
            "cwd": "/sandbox",
            "capabilities": {"bounding": [], "effective": [], "permitted": [], "inheritable": [], "ambient": []},
            "noNewPrivileges": true
        },
        "root": {"path": "rootfs", "readonly": true},
        "hostname": "bench",
        "mounts": [
            {"destination": "/proc", "type": "proc", "source": "proc"},
            {"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "mode=755", "size=65536k"]},
            {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "nodev", "size=64m"]}
        ],
        "linux": {
            "namespaces": [{"type": "pid"}, {"type": "network"}, {"type": "ipc"}, {"type": "uts"}, {"type": "mount"}, {"type": "cgroup"}],
            "maskedPaths": ["/proc/kcore", "/proc/keys", "/proc/timer_list"],
            "readonlyPaths": ["/proc/sys", "/proc/bus", "/proc/fs", "/proc/irq"]
        }
    });
    std::fs::write(
        bundle.join("config.json"),
        serde_json::to_vec_pretty(&config)?,
    )?;
    Ok(())
}

fn run_once(cmd: &[String]) -> Result<Duration> {
    // Container runtimes need a fresh id per run.
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let cmd: Vec<String> = cmd
        .iter()
        .map(|a| a.replace("@ID@", &format!("maibox-bench-{}-{n}", std::process::id())))
        .collect();
    let t = Instant::now();
    let st = Command::new(&cmd[0])
        .args(&cmd[1..])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .output()
        .with_context(|| format!("running {}", cmd.join(" ")))?;
    let d = t.elapsed();
    let err = String::from_utf8_lossy(&st.stderr);
    let st = st.status;
    if !st.success() {
        bail!("exit {st}: {}", err.lines().next().unwrap_or_default());
    }
    if !st.success() {
        bail!("{} failed: {st}", cmd.join(" "));
    }
    Ok(d)
}

fn median(s: &mut [Duration]) -> Duration {
    percentile(s, 0.5)
}

fn percentile(s: &mut [Duration], q: f64) -> Duration {
    s.sort();
    if s.is_empty() {
        return Duration::ZERO;
    }
    let idx = ((s.len() - 1) as f64 * q).round() as usize;
    s[idx]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
