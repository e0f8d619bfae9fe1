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
    let line = format!("cargo {}", args.join(" "));
    eprintln!("==> {line}");
    let st = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
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
/// Clippy lints the workspace while the build compiles it (see `lint_while_building`),
/// instead of checking everything a second time in a target directory of its own: that
/// check competed with the build and the guest for the 2 cores, and still had 337 s of
/// work when the VM lane ended (measured at 525c70e). The VM lane runs beside the lanes'
/// set-up. The host's own tests wait for it: some of them time their sandboxes.
fn test() -> Result<()> {
    let mut t = Timings::new();
    t.step("fmt", || cargo(&["fmt", "--all", "--check"]))?;
    t.step("clippy canary", lint_while_building)?;
    let built = build(&mut t);
    let lane_begun = Instant::now();
    let vm_lane = built
        .is_ok()
        .then(|| std::thread::spawn(|| vm::test_vm(root())));
    let beside = built.and_then(|()| beside_the_vm_lane(&mut t));
    let lane = t.step("waiting for the vm lane", || vm_lane.map(|l| l.join()));
    t.record("vm lane (beside the steps before)", lane_begun.elapsed());
    let lane = match lane {
        Some(l) => l.map_err(|_| anyhow::anyhow!("the VM lane's thread panicked"))?,
        None => Ok(()),
    };
    if let (Err(b), Err(_)) = (&beside, &lane) {
        // The lane's failure is returned below; this one is printed here.
        eprintln!("error: {b:#}");
    }
    lane?;
    let (bandit, lanes) = beside?;
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

/// protoc (the CRI lane's crate needs it to build), then every target of the workspace,
/// linted as it compiles: the test binaries the test step and the VM lane run, the
/// binaries, the examples. `build -p maibox` resolved features for that package alone,
/// and the test step then compiled the library, the binary and six dependencies a second
/// time (measured: 2m42s here).
fn build(t: &mut Timings) -> Result<()> {
    t.step("protoc", cri::ensure_protoc)?;
    t.step("build and clippy", || {
        cargo(&["build", "--workspace", "--all-targets"])
    })
}

/// What `cargo clippy -- -D warnings` gives clippy-driver: cargo-clippy joins the
/// arguments after `--` with this separator in CLIPPY_ARGS.
const CLIPPY_ARGS: &str = "-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__";

/// Makes every cargo this run starts compile the workspace's own crates with
/// clippy-driver, as `cargo clippy` does (cargo's RUSTC_WORKSPACE_WRAPPER exists for
/// it), but with code generation: `cargo build --all-targets` then lints exactly what
/// `cargo clippy --workspace --all-targets -- -D warnings` would, and a lint fails the
/// build. Dependencies are compiled by rustc, as before. Set for the whole process, before
/// any thread starts, because each cargo (the build, the VM lane's list of binaries, the
/// test step) must see the same wrapper: its path is part of the artifacts' hash, and a
/// cargo without it would compile the workspace again.
///
/// CLIPPY_ARGS's separator is clippy's own, not a documented interface, so a canary
/// crate checks on every run that the wrapper still fails a build on a clippy-only lint,
/// and (control) that the same crate builds without it.
fn lint_while_building() -> Result<()> {
    let driver = which("clippy-driver")
        .context("clippy-driver is not on PATH: rustup component add clippy")?;
    clippy_canary(&driver)?;
    std::env::set_var("RUSTC_WORKSPACE_WRAPPER", &driver);
    std::env::set_var("CLIPPY_ARGS", CLIPPY_ARGS);
    Ok(())
}

/// Builds a crate whose only fault is clippy's `len_zero`: it must build with rustc and
/// fail with `driver` as the workspace wrapper.
fn clippy_canary(driver: &str) -> Result<()> {
    let canary = root().join("target/clippy-canary");
    std::fs::create_dir_all(canary.join("src")).context("creating target/clippy-canary")?;
    // Its own [workspace]: it lies inside this one's directory but is not a member.
    std::fs::write(
        canary.join("Cargo.toml"),
        "[package]\nname = \"clippy-canary\"\nversion = \"0.0.0\"\nedition = \"2021\"\n[workspace]\n",
    )?;
    std::fs::write(
        canary.join("src/main.rs"),
        "fn main() {\n    let a: Vec<String> = std::env::args().collect();\n    if a.len() == 0 {\n        println!(\"none\");\n    }\n}\n",
    )?;
    let build = |wrapper: Option<&str>| -> Result<std::process::Output> {
        let mut c = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
        c.args(["build", "--quiet", "--manifest-path"])
            .arg(canary.join("Cargo.toml"))
            .env_remove("RUSTC_WORKSPACE_WRAPPER")
            .env_remove("CLIPPY_ARGS");
        if let Some(w) = wrapper {
            c.env("RUSTC_WORKSPACE_WRAPPER", w)
                .env("CLIPPY_ARGS", CLIPPY_ARGS);
        }
        c.output().context("building the clippy canary")
    };
    let control = build(None)?;
    if !control.status.success() {
        bail!(
            "the clippy canary (target/clippy-canary) does not build even without clippy: {}",
            String::from_utf8_lossy(&control.stderr)
        );
    }
    let linted = build(Some(driver))?;
    let stderr = String::from_utf8_lossy(&linted.stderr);
    if linted.status.success() || !stderr.contains("len_zero") {
        bail!("{driver} as RUSTC_WORKSPACE_WRAPPER with CLIPPY_ARGS={CLIPPY_ARGS} did not fail the clippy canary's build (target/clippy-canary) on clippy::len_zero, so the build would not lint; has cargo-clippy's interface changed? {stderr}");
    }
    Ok(())
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
