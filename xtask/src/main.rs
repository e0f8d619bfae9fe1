//! Project tasks: `cargo xtask test` (the full check CI runs), `cargo xtask bench` and
//! `cargo xtask rootfs`.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

mod assess_table;
mod bandit;
mod bench;
mod cri;
mod docker;
mod progress;
mod pytests;
mod rootfs;
mod service;
mod vm;

/// Errors are printed as their chain of causes on one line, never with a backtrace
/// (anyhow's `Debug`, used when `main` returns an error, adds one whenever
/// RUST_BACKTRACE is set, as it often is in a developer's shell).
fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}

fn run() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("test") => test(),
        Some("bench") => bench::bench(&args[1..]),
        Some("rootfs") => rootfs::rootfs(&args[1..]),
        Some("test-vm") => vm::test_vm(root()),
        Some("test-docker") => docker::test_docker(root()),
        Some("test-cri") => cri::test_cri(root()),
        Some("test-python") => {
            cargo(&["build", "-p", "maibox"])?;
            pytests::test(&root())
        }
        Some("check-aarch64") => check_aarch64(),
        Some("bandit") => install_bandit(),
        Some("assess-table") => assess_table::assess_table(&args[1..]),
        _ => {
            eprintln!("usage: cargo xtask test | cargo xtask test-vm | cargo xtask test-docker | cargo xtask test-cri | cargo xtask test-python | cargo xtask check-aarch64 | cargo xtask bandit | cargo xtask assess-table [--bin PATH] | cargo xtask bench [--rounds N] [--layers] [--workers N] [--duration S] [--peers a,b] [--rootfs DIR] | cargo xtask rootfs DIR [--from debootstrap|host] [--python PATH] [--mirror URL] [--suite SUITE]");
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
    cargo_env(args, &[])
}

fn cargo_env(args: &[&str], envs: &[(&str, &Path)]) -> Result<()> {
    run_cargo(args, envs, false)
}

fn run_cargo(args: &[&str], envs: &[(&str, &Path)], niced: bool) -> Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let (line, mut cmd) = if niced {
        let mut c = Command::new("nice");
        c.arg("-n19").arg(&cargo);
        (format!("nice cargo {}", args.join(" ")), c)
    } else {
        (format!("cargo {}", args.join(" ")), Command::new(&cargo))
    };
    eprintln!("==> {line}");
    let st = cmd
        .args(args)
        .envs(envs.iter().copied())
        .current_dir(root())
        .status()
        .with_context(|| format!("running {line}"))?;
    if !st.success() {
        bail!("{line} failed ({st})");
    }
    Ok(())
}

/// The project's test command: formatting, lints, every test on this host (with a local
/// Docker engine for the Docker lane and a containerd with its CRI plugin for the CRI lane),
/// and the engine tests again in a cgroup-v2 guest on another kernel (the VM lane).
///
/// Clippy runs from the start, at the lowest priority and in a target directory of
/// its own (cargo serialises builds in one directory, and clippy shares nothing with
/// the test build but a few build scripts), to take what the build's serial phases
/// and the VM lane's guest leave. Measured at 525c70e, that is little: qemu used
/// 1.3 of the 2 cores, and clippy still had 337 s of work when the lane ended. The
/// VM lane runs beside the lanes' set-up. The host's own tests wait for both: some of
/// them time their sandboxes.
fn test() -> Result<()> {
    let mut t = Timings::new();
    t.step("fmt", || cargo(&["fmt", "--all", "--check"]))?;
    let begun = Instant::now();
    let clippy = std::thread::spawn(clippy);
    let built = build(&mut t);
    let lane_begun = Instant::now();
    let vm_lane = built
        .is_ok()
        .then(|| std::thread::spawn(|| vm::test_vm(root())));
    let beside = built.and_then(|()| beside_the_vm_lane(&mut t));
    let lane = t.step("waiting for the vm lane", || vm_lane.map(|l| l.join()));
    t.record("vm lane (beside the steps before)", lane_begun.elapsed());
    let clippy = t.step("waiting for clippy", || clippy.join());
    t.record("clippy (beside the steps before)", begun.elapsed());
    let clippy = clippy.map_err(|_| anyhow::anyhow!("clippy's thread panicked"))?;
    let lane = match lane {
        Some(l) => l.map_err(|_| anyhow::anyhow!("the VM lane's thread panicked"))?,
        None => Ok(()),
    };
    // The first failure is returned below; the others are printed here.
    let others: Vec<String> = [
        beside.as_ref().err(),
        clippy.as_ref().err(),
        lane.as_ref().err(),
    ]
    .into_iter()
    .flatten()
    .skip(1)
    .map(|e| format!("{e:#}"))
    .collect();
    for e in others {
        eprintln!("error: {e}");
    }
    let (bandit, lanes) = beside?;
    clippy?;
    lane?;
    let envs: Vec<(&str, &Path)> = bandit
        .iter()
        .map(|b| ("MAIBOX_BANDIT", b.as_path()))
        .collect();
    // Every failing test binary is reported, not only the first.
    let tests = t.step("cargo test", || {
        cargo_env(&["test", "--workspace", "--no-fail-fast"], &envs)
    });
    // The Python package's tests run whatever the Rust tests said: both are reported.
    let python = t.step("python", || pytests::test(&root()));
    tests?;
    python?;
    drop(lanes);
    Ok(())
}

/// protoc (the CRI lane's crate needs it to build), then every test target, as the
/// test step and the VM lane run them: `build -p maibox` resolved features for that
/// package alone, and the test step then compiled the library, the binary and six
/// dependencies a second time (measured: 2m42s here).
fn build(t: &mut Timings) -> Result<()> {
    t.step("protoc", cri::ensure_protoc)?;
    t.step("build", || cargo(&["test", "--workspace", "--no-run"]))
}

/// `cargo clippy` on every target, in target/clippy, at the lowest CPU priority (nice
/// 19: about 1.5% of a core against a normal process), since it shares the machine with
/// the VM lane's guest. Under software emulation the guest's clock runs on while qemu
/// waits for a core, so the time its sandboxes are charged grows with the host's load:
/// at nice 10, beside a build, a guest test's sandbox ran out of its 15 s of CPU.
fn clippy() -> Result<()> {
    let dir = root().join("target/clippy");
    let args = [
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ];
    run_cargo(&args, &[("CARGO_TARGET_DIR", dir.as_path())], true)
}

/// The Docker engine and the CRI lane's containerd, when this run started them.
type Lanes = (Option<service::Service>, Option<service::Service>);

/// The steps that run while the VM lane does: what the host's tests need (Bandit, a
/// Docker engine, a containerd for the CRI lane, stopped when dropped).
fn beside_the_vm_lane(t: &mut Timings) -> Result<(Option<PathBuf>, Lanes)> {
    // `--with bandit` is tested against the real Bandit (tests/assess_cli.rs).
    let bandit = t.step("bandit", || bandit::ensure(&root()))?;
    // The Docker lane's tests (tests/docker_*.rs) run inside the workspace's tests, against
    // an engine started here and stopped afterwards if this run started it.
    let engine = t.step("docker engine", || docker::up(&root()))?;
    let cri_lane = t.step("cri lane", || cri::up(&root()))?;
    Ok((bandit, (engine, cri_lane)))
}

/// The wall time of each step of `cargo xtask test`, printed when the run ends, failed
/// or not, so that every CI log says where the suite's time went (it should stay under
/// 30 minutes on 2 cores).
struct Timings {
    start: Instant,
    steps: Vec<(&'static str, Duration)>,
}

impl Timings {
    fn new() -> Self {
        Timings {
            start: Instant::now(),
            steps: Vec::new(),
        }
    }

    fn step<T>(&mut self, name: &'static str, f: impl FnOnce() -> T) -> T {
        let begun = Instant::now();
        let out = f();
        self.record(name, begun.elapsed());
        out
    }

    fn record(&mut self, name: &'static str, took: Duration) {
        self.steps.push((name, took));
    }
}

impl Drop for Timings {
    fn drop(&mut self) {
        let steps: Vec<String> = self
            .steps
            .iter()
            .map(|(name, d)| format!("{name} {}", d.as_secs()))
            .collect();
        eprintln!(
            "==> time (s): {}; total {}",
            steps.join(", "),
            self.start.elapsed().as_secs()
        );
    }
}

/// `cargo xtask bandit`: installs the tests' Bandit (target/tools/bandit), so that
/// `cargo test --test assess_cli` covers `--with bandit` outside `cargo xtask test`.
fn install_bandit() -> Result<()> {
    match bandit::ensure(&root())? {
        Some(b) => {
            println!("{}", b.display());
            Ok(())
        }
        None => bail!("Bandit could not be installed (see above)"),
    }
}

/// Type-checks maibox for aarch64 (the seccomp filter's second architecture). Needs
/// `rustup target add aarch64-unknown-linux-gnu` and `apt-get install
/// gcc-aarch64-linux-gnu` (C parts of ring and other dependencies). Not part of `test`: both
/// come from the network.
fn check_aarch64() -> Result<()> {
    let st = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args([
            "check",
            "--lib",
            "--bins",
            "--target",
            "aarch64-unknown-linux-gnu",
        ])
        .env("CC_aarch64_unknown_linux_gnu", "aarch64-linux-gnu-gcc")
        .env("CARGO_TARGET_DIR", root().join("target/aarch64"))
        .current_dir(root())
        .status()
        .context("running cargo check for aarch64")?;
    if !st.success() {
        bail!("cargo check --target aarch64-unknown-linux-gnu failed ({st}); see the doc comment of check_aarch64 for what it needs");
    }
    Ok(())
}

/// The first `name` on PATH.
pub fn which(name: &str) -> Option<String> {
    std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join(name))
            .find(|f| f.is_file())
            .map(|f| f.display().to_string())
    })
}
