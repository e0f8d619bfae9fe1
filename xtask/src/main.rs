//! Project tasks: `cargo xtask test` (the full check CI runs) and `cargo xtask bench`.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

mod vm;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("test") => test(),
        Some("bench") => bench(&args[1..]),
        Some("rootfs") => rootfs(&args[1..]),
        Some("test-vm") => vm::test_vm(root()),
        _ => {
            eprintln!("usage: cargo xtask test | cargo xtask test-vm | cargo xtask bench [--rounds N] [--layers] | cargo xtask rootfs DIR [PYTHON]");
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

/// The project's test command: formatting, lints, every test on this host, then the
/// engine tests again in a cgroup-v2 guest on another kernel (the VM lane).
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
    cargo(&["test", "--workspace"])?;
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
    if layers {
        // What each layer costs: untrusted with that one layer switched off.
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
    // Warm-up: page cache, dynamic loader.
    for r in &rows {
        run_once(&r.cmd)?;
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
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

fn maibox_cmd(m: &str, flags: &[&str], script: &str) -> Vec<String> {
    let mut c = vec![m.to_string(), "exec".to_string()];
    c.extend(flags.iter().map(|f| f.to_string()));
    c.push(script.to_string());
    c
}

fn run_once(cmd: &[String]) -> Result<Duration> {
    let t = Instant::now();
    let st = Command::new(&cmd[0])
        .args(&cmd[1..])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .status()
        .with_context(|| format!("running {}", cmd.join(" ")))?;
    let d = t.elapsed();
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
