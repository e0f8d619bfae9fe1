//! `cargo xtask bench`: maibox against bare python and the peers found on this
//! machine, in interleaved rounds (each round runs every row once, in a shuffled
//! order) so that machine noise hits all rows alike. Reports median, p90, p99 and the
//! ratio to bare python; throughput with N parallel workers; the supervisor's own peak
//! memory. Writes target/bench/bench.{md,json,svg}.

mod cpu;
mod extra;
mod output;
mod peers;
mod served;
mod stats;

use crate::progress::{Progress, Stage, Work};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::time::Duration;

pub struct Row {
    pub name: String,
    pub cmd: Vec<String>,
    pub samples: Vec<Duration>,
}

fn row(name: impl Into<String>, cmd: Vec<String>) -> Row {
    Row {
        name: name.into(),
        cmd,
        samples: Vec::new(),
    }
}

/// The peer names `--peers` takes, each with the rows it selects.
const PEERS: &[(&str, &str)] = &[
    ("bare", "python3 alone, the baseline (always run)"),
    ("maibox", "maibox exec --trust untrusted"),
    ("maibox-trusted", "maibox exec --trust trusted"),
    ("bwrap", "bubblewrap"),
    (
        "unshare",
        "unshare(1) with maibox's namespaces only: the kernel's floor",
    ),
    ("firejail", "firejail"),
    ("nsjail", "nsjail"),
    ("crun", "crun run with an OCI bundle"),
    ("maibox-oci", "maibox run with the same OCI bundle"),
    ("runc", "runc run with the same OCI bundle"),
    ("docker", "docker run"),
    ("docker-maibox", "docker run --runtime=maibox"),
    ("maibox-docker", "maibox exec --backend docker"),
    (
        "server",
        "maibox exec --server, a maibox serve of the bench's own",
    ),
    (
        "server-fork",
        "maibox exec --server against a maibox serve --warm-mode fork of the bench's own",
    ),
    (
        "python-client",
        "the Python package as the server's client, from one process",
    ),
];

const USAGE: &str = "options: --rounds N, --layers, --workers N, --duration SECONDS, --peers NAME,NAME..., --rootfs DIR (repeatable)";

#[derive(Debug)]
struct Options {
    rounds: usize,
    layers: bool,
    workers: usize,
    duration: Duration,
    /// None: every peer found on the machine.
    peers: Option<Vec<String>>,
    /// Images, each for an extra row `maibox exec --rootfs DIR` (the option repeats).
    rootfs: Vec<PathBuf>,
}

impl Options {
    /// Whether the row of `peer` (a name of PEERS) is wanted.
    fn wants(&self, peer: &str) -> bool {
        peer == "bare"
            || self
                .peers
                .as_ref()
                .is_none_or(|p| p.iter().any(|n| n == peer))
    }
}

fn options(args: &[String]) -> Result<Options> {
    let mut o = Options {
        rounds: 100,
        layers: false,
        workers: 2,
        duration: Duration::from_secs(10),
        peers: None,
        rootfs: Vec::new(),
    };
    let mut it = args.iter();
    let num = |v: Option<&String>, what: &str| -> Result<u64> {
        v.with_context(|| format!("{what} needs a number"))?
            .parse()
            .with_context(|| format!("{what} needs a number"))
    };
    while let Some(a) = it.next() {
        match a.as_str() {
            "--rounds" => o.rounds = num(it.next(), "--rounds")? as usize,
            "--workers" => o.workers = num(it.next(), "--workers")? as usize,
            "--duration" => o.duration = Duration::from_secs(num(it.next(), "--duration")?),
            "--layers" => o.layers = true,
            "--peers" => {
                let list = it
                    .next()
                    .context("--peers needs a list of names, e.g. --peers bare,maibox,bwrap")?;
                let mut names = Vec::new();
                for n in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
                    if !PEERS.iter().any(|(p, _)| *p == n) {
                        bail!(
                            "unknown peer {n:?} in --peers; valid names: {}",
                            PEERS.iter().map(|(p, _)| *p).collect::<Vec<_>>().join(", ")
                        );
                    }
                    names.push(n.to_string());
                }
                if names.is_empty() {
                    bail!("--peers needs at least one name, e.g. --peers bare,maibox");
                }
                o.peers = Some(names);
            }
            "--rootfs" => {
                let dir = PathBuf::from(it.next().context(
                    "--rootfs needs a directory (build one with cargo xtask rootfs DIR)",
                )?);
                let dir = std::fs::canonicalize(&dir).with_context(|| {
                    format!(
                        "--rootfs {}: no such directory (build one with cargo xtask rootfs DIR)",
                        dir.display()
                    )
                })?;
                // The check `maibox exec --rootfs` makes, before any row runs: a row
                // that could only fail is not worth a bench run.
                maibox::interpreter::resolve_in_image(&dir, "auto")
                    .with_context(|| format!("--rootfs {}", dir.display()))?;
                o.rootfs.push(dir);
            }
            other => bail!("unknown bench option {other} ({USAGE})"),
        }
    }
    if o.rounds == 0 || o.workers == 0 || o.duration.is_zero() {
        bail!("--rounds, --workers and --duration must be at least 1");
    }
    Ok(o)
}

/// A small realistic script: JSON and CSV parsing, some arithmetic, a file written
/// to /tmp and read back.
const REALISTIC: &str = r#"import csv, io, json, math, statistics, os, tempfile
rows = [{"id": i, "name": f"item{i}", "price": round(math.sin(i) * 100 + 150, 2)} for i in range(500)]
text = json.dumps(rows)
data = json.loads(text)
buf = io.StringIO()
w = csv.DictWriter(buf, fieldnames=["id", "name", "price"])
w.writeheader(); w.writerows(data)
parsed = list(csv.DictReader(io.StringIO(buf.getvalue())))
prices = [float(r["price"]) for r in parsed]
summary = {"n": len(prices), "mean": statistics.mean(prices), "stdev": statistics.pstdev(prices)}
with tempfile.NamedTemporaryFile("w+", dir="/tmp", delete=True) as f:
    f.write(json.dumps(summary)); f.flush(); f.seek(0)
    assert json.loads(f.read())["n"] == 500
print(summary["n"])
"#;

/// The rows of one group: bare python, then the wanted peers found here, then the
/// `--rootfs` image. `all_peers` false keeps the realistic script's group to maibox,
/// bubblewrap, unshare(1) and the image.
fn group_rows(
    o: &Options,
    m: &str,
    script: &str,
    dir: &Path,
    empty: &Path,
    all_peers: bool,
    notes: &mut Vec<String>,
) -> Result<Vec<Row>> {
    let maibox = |flags: &[&str]| {
        let mut c = vec![m.to_string(), "exec".to_string()];
        c.extend(flags.iter().map(|f| f.to_string()));
        c.push(script.to_string());
        c
    };
    let want =
        |peer: &str| o.wants(peer) && (all_peers || matches!(peer, "maibox" | "bwrap" | "unshare"));
    let mut rows = vec![row("python3 (bare)", peers::bare_cmd(script))];
    if want("maibox") {
        rows.push(row(
            "maibox exec --trust untrusted",
            maibox(&["--trust", "untrusted"]),
        ));
    }
    for img in &o.rootfs {
        let img = img.display().to_string();
        rows.push(row(
            format!("maibox exec --trust untrusted --rootfs {img}"),
            maibox(&["--trust", "untrusted", "--rootfs", &img]),
        ));
    }
    if want("maibox-trusted") {
        rows.push(row(
            "maibox exec --trust trusted",
            maibox(&["--trust", "trusted"]),
        ));
    }
    // A wanted peer's binary; when it is not installed, `skipped` goes to the notes.
    let mut installed = |peer: &str, skipped: &str| -> Option<String> {
        if !want(peer) {
            return None;
        }
        let bin = peers::which(peer);
        if bin.is_none() {
            notes.push(skipped.into());
        }
        bin
    };
    if let Some(b) = installed("bwrap", "bubblewrap: not installed, skipped") {
        rows.push(row(
            "bubblewrap (unshare-all, ro /usr, caps dropped)",
            peers::bwrap_cmd(&b, script),
        ));
    }
    if let Some(u) = installed("unshare", "unshare (util-linux): not installed, skipped") {
        rows.push(row(
            "unshare(1): the same namespaces, nothing else (kernel floor)",
            peers::unshare_cmd(&u, script),
        ));
    }
    if let Some(f) = installed("firejail", "firejail: not installed, skipped") {
        rows.push(row(
            "firejail (net none, caps dropped, seccomp, ro /)",
            peers::firejail_cmd(&f, script),
        ));
    }
    // No row for an installed nsjail yet: only its absence is noted.
    let _ = installed(
        "nsjail",
        "nsjail: not installed (not packaged in Debian 12), skipped",
    );
    if let Some(crun) = installed("crun", "crun: not installed, skipped") {
        let bundle = dir.join("crun-bundle");
        peers::oci_bundle(&bundle, empty, None)?;
        rows.push(row(
            "crun run (OCI bundle, no cgroups)",
            vec![
                crun,
                "--cgroup-manager=disabled".into(),
                "run".into(),
                "--bundle".into(),
                bundle.display().to_string(),
                "@ID@".into(),
            ],
        ));
    }
    // The same bundle through maibox's and runc's OCI runtime modes, each with
    // an absolute cgroup of its own (and so with cgroups, unlike the crun row).
    if want("maibox-oci") {
        let bundle = dir.join("maibox-bundle");
        peers::oci_bundle(&bundle, empty, Some("/maibox-bench/maibox"))?;
        rows.push(row(
            "maibox run (OCI bundle)",
            vec![
                m.to_string(),
                "--root".into(),
                dir.join("maibox-state").display().to_string(),
                "run".into(),
                "--bundle".into(),
                bundle.display().to_string(),
                "@ID@".into(),
            ],
        ));
    }
    if let Some(runc) = installed("runc", "runc: not installed, skipped") {
        let bundle = dir.join("runc-bundle");
        peers::oci_bundle(&bundle, empty, Some("/maibox-bench/runc"))?;
        rows.push(row(
            "runc run (OCI bundle)",
            vec![
                runc,
                "--root".into(),
                dir.join("runc-state").display().to_string(),
                "run".into(),
                "--bundle".into(),
                bundle.display().to_string(),
                "@ID@".into(),
            ],
        ));
    }
    if !(want("docker") || want("docker-maibox") || want("maibox-docker")) {
        return Ok(rows);
    }
    let (engine, has_maibox) = peers::docker_state();
    if !engine {
        notes.push(
            "docker: no engine answers (start one: xtask/docker/docker-engine.sh up), skipped"
                .into(),
        );
        return Ok(rows);
    }
    if want("docker") {
        rows.push(row(
            "docker run (seeds' hardening flags)",
            peers::docker_cmd(None, script),
        ));
    }
    if want("docker-maibox") {
        if has_maibox {
            rows.push(row(
                "docker run --runtime=maibox (same flags)",
                peers::docker_cmd(Some("maibox"), script),
            ));
        } else {
            notes.push(
                "docker run --runtime=maibox: the engine has no maibox runtime, skipped".into(),
            );
        }
    }
    if want("maibox-docker") {
        rows.push(row(
            "maibox exec --backend docker",
            maibox(&["--backend", "docker", "--image", "maibox-python:test"]),
        ));
    }
    Ok(rows)
}

/// The OCI rows' cgroups are absolute (/maibox-bench/...); the runtimes remove
/// their leaves, the parent is ours. rmdir only: a group still in use stays.
fn remove_bench_cgroups() {
    let Ok(hierarchies) = std::fs::read_dir("/sys/fs/cgroup") else {
        return;
    };
    for h in hierarchies.flatten() {
        let parent = h.path().join("maibox-bench");
        if let Ok(children) = std::fs::read_dir(&parent) {
            for c in children.flatten() {
                if c.path().is_dir() {
                    let _ = std::fs::remove_dir(c.path());
                }
            }
        }
        let _ = std::fs::remove_dir(&parent);
    }
}

/// The rows of the per-layer costs (`--layers`): untrusted with the allowlist proxy,
/// and with one layer switched off at a time.
fn layer_rows(m: &str, script: &str) -> Vec<Row> {
    let exec = |extra: &[&str]| {
        let mut c: Vec<String> = [m, "exec", "--trust", "untrusted"]
            .iter()
            .chain(extra)
            .map(|s| s.to_string())
            .collect();
        c.push(script.to_string());
        c
    };
    let mut rows = vec![row(
        "untrusted with --network allowlist (proxy and bridge)",
        exec(&["--network", "allowlist"]),
    )];
    for layer in [
        "cgroup-limits",
        "seccomp",
        "landlock",
        "net-ns",
        "proc-masks",
    ] {
        rows.push(row(
            format!("untrusted without {layer}"),
            exec(&["--unsafe-disable-layer", layer]),
        ));
    }
    rows
}

/// The short names of the two tables, for the progress line.
const GROUPS: [&str; 2] = ["empty script", "realistic script"];

/// The steps of a bench run, as far as they are known before it starts: each table's
/// warm-up and rounds, throughput, supervisor memory, assessment time.
fn plan(groups: &[(String, Vec<Row>)], o: &Options, throughput_cmds: usize) -> Vec<Stage> {
    let mut stages = Vec::new();
    for ((_, rows), name) in groups.iter().zip(GROUPS) {
        let rows = rows.len() as u64;
        stages.push(Stage::new(
            format!("{name}, warm-up"),
            Work::Runs {
                n: rows,
                each: None,
            },
        ));
        stages.push(Stage::new(
            name,
            Work::Rounds {
                rows,
                rounds: o.rounds as u64,
            },
        ));
    }
    stages.push(Stage::new(
        format!("throughput, {} workers", o.workers),
        Work::Timed(o.duration * throughput_cmds as u32),
    ));
    stages.push(Stage::new(
        "supervisor memory",
        Work::Runs {
            n: extra::MEMORY_RUNS as u64,
            each: Some(extra::MEMORY_RUN),
        },
    ));
    stages.push(Stage::new(
        "assessment time",
        Work::Runs {
            n: (ASSESS_KINDS.len() * 2 * ASSESS_RUNS) as u64,
            each: None,
        },
    ));
    stages
}

/// The corpus kinds the assessment's time is measured on, and the runs per file.
const ASSESS_KINDS: [&str; 2] = ["benign", "malicious"];
const ASSESS_RUNS: usize = 21;

/// What the rows measured besides the tables.
struct Extra {
    thr: Vec<(String, f64)>,
    mem: (u64, u64),
    assess: Vec<(&'static str, f64, f64)>,
    /// Per server, idle with its pool.
    served_mem: Vec<ServedMem>,
    /// The Python client's medians, per server's warm mode ("strict", "fork").
    client: Vec<(String, served::Client)>,
    /// CPU ms per run of the empty script: (name, all of it, the command's own
    /// waited-for processes).
    cpu: Vec<(String, f64, f64)>,
}

/// The memory of one server of the bench's, idle with its pool.
struct ServedMem {
    /// Its warm mode: "strict" or "fork".
    mode: &'static str,
    /// The server's own anonymous memory (RssAnon), in bytes.
    anon: u64,
    /// One warm sandbox's cgroup memory, in bytes, and how many were ready.
    per_sandbox: u64,
    ready: usize,
    /// `fork`: the zygotes' anonymous memory in bytes, and how many.
    zygotes: Option<(u64, usize)>,
}

/// The name of the fork server's warm rows (the strict server's: served::rows).
const FORK_ROW: &str = "maibox exec --server, warm_mode fork (warm, preloaded imports)";

pub fn bench(args: &[String]) -> Result<()> {
    let o = options(args)?;
    crate::cargo(&["build", "--release", "--bin", "maibox"])?;
    let m = crate::root()
        .join("target/release/maibox")
        .display()
        .to_string();
    // Not under /tmp: firejail's --private-tmp would hide the scripts.
    let dir = crate::root().join(format!("target/bench/run-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let empty = dir.join("empty.py");
    std::fs::write(&empty, "")?;
    let real = dir.join("realistic.py");
    std::fs::write(&real, REALISTIC)?;
    let e = empty.display().to_string();
    let mut notes = Vec::new();
    let mut startup = group_rows(&o, &m, &e, &dir, &empty, true, &mut notes)?;
    if o.layers {
        startup.extend(layer_rows(&m, &e));
    }
    let mut realistic = group_rows(
        &o,
        &m,
        &real.display().to_string(),
        &dir,
        &empty,
        false,
        &mut Vec::new(),
    )?;
    // Started before the tables, so its pool is warm; dropped (stopped) at the end.
    let server = o
        .wants("server")
        .then(|| served::Server::start(&m, &dir, "serve", &[]))
        .transpose()?;
    if let Some(s) = &server {
        startup.extend(served::rows(&m, &s.socket, &e));
        realistic.extend(served::rows(&m, &s.socket, &real.display().to_string()));
    }
    let fork = o
        .wants("server-fork")
        .then(|| served::Server::start(&m, &dir, "serve-fork", &["--warm-mode", "fork"]))
        .transpose()?;
    if let Some(s) = &fork {
        startup.extend(served::rows_named(FORK_ROW, &m, &s.socket, &e));
        realistic.extend(served::rows_named(
            FORK_ROW,
            &m,
            &s.socket,
            &real.display().to_string(),
        ));
    }
    let mut groups = vec![
        (format!("Startup of an empty script, {} interleaved rounds:", o.rounds), startup),
        (format!("A small realistic script (JSON, CSV, statistics, a /tmp file), {} interleaved rounds:", o.rounds), realistic),
    ];
    let mut thr_cmds = vec![
        ("python3 (bare)", peers::bare_cmd(&e)),
        (
            "maibox exec --trust untrusted",
            vec![m.clone(), "exec".into(), e.clone()],
        ),
    ];
    // The namespaces alone, so the ratio can be read against what the kernel's
    // creation and teardown of them cost on the same cores.
    if let Some(u) = peers::which("unshare").filter(|_| o.wants("unshare")) {
        thr_cmds.push(("unshare(1) floor", peers::unshare_cmd(&u, &e)));
    }
    if let Some(s) = &server {
        thr_cmds.push(("maibox exec --server", served::cli_cmd(&m, &s.socket, &e)));
    }
    if let Some(s) = &fork {
        thr_cmds.push((
            "maibox exec --server (fork)",
            served::cli_cmd(&m, &s.socket, &e),
        ));
    }
    let progress = Progress::new("bench", plan(&groups, &o, thr_cmds.len()));
    let mut failed = Vec::new();
    for (i, ((_, rows), name)) in groups.iter_mut().zip(GROUPS).enumerate() {
        extra::measure(rows, o.rounds, &mut failed, &progress, (2 * i, name))?;
    }
    // After the tables' steps: throughput, supervisor memory, assessment time.
    let step = 2 * GROUPS.len();
    progress.begin_as_planned(step);
    let thr = extra::throughput(&thr_cmds, o.workers, o.duration)?;
    progress.begin_as_planned(step + 1);
    let mem = extra::supervisor_peak_memory(&m, &dir, &progress)?;
    progress.begin_as_planned(step + 2);
    let mut assess = Vec::new();
    for kind in ASSESS_KINDS {
        assess.push((
            kind,
            extra::assessment_ms(&m, &dir, kind, 1_000, ASSESS_RUNS, &progress)?,
            extra::assessment_ms(&m, &dir, kind, 10_000, ASSESS_RUNS, &progress)?,
        ));
    }
    drop(progress);
    let servers: Vec<(&'static str, &served::Server)> = [("strict", &server), ("fork", &fork)]
        .into_iter()
        .filter_map(|(mode, s)| Some((mode, s.as_ref()?)))
        .collect();
    if !servers.is_empty() {
        // Idle, with their pools refilled after the load above.
        std::thread::sleep(Duration::from_secs(3));
    }
    let mut served_mem = Vec::new();
    for (mode, s) in &servers {
        let (anon, per_sandbox, ready) = served::memory(s.pid());
        served_mem.push(ServedMem {
            mode,
            anon,
            per_sandbox,
            ready,
            zygotes: (*mode == "fork").then(|| served::zygotes(s.pid())),
        });
    }
    let mut client = Vec::new();
    if o.wants("python-client") {
        for (mode, s) in &servers {
            let c = served::python_client(&s.socket, &dir, [&empty, &real], o.rounds)?;
            client.push((mode.to_string(), c));
        }
    }
    let mut cpu = Vec::new();
    for (name, cmd) in &thr_cmds {
        let settle = Duration::from_millis(if name.contains("--server") { 1500 } else { 0 });
        let (all, own) = cpu::per_run(cmd, settle)?;
        cpu.push((name.to_string(), all, own));
    }
    drop(server);
    drop(fork);
    let extra = Extra {
        thr,
        mem,
        assess,
        served_mem,
        client,
        cpu,
    };
    write_results(&o, &notes, &groups, &failed, &extra)?;
    let _ = std::fs::remove_dir_all(&dir);
    remove_bench_cgroups();
    Ok(())
}

/// The CPU time per run, and the throughput it allows relative to bare python's.
fn cpu_lines(cpu: &[(String, f64, f64)]) -> String {
    let Some((_, base, _)) = cpu.first() else {
        return String::new();
    };
    // Zero means the machine was busier at rest than during the runs (cpu::per_run):
    // it was not quiet, and there is no figure, nor a ratio to make of it.
    const NOISY: &str =
        "not measured (the machine was busier in its idle reference than in the runs)";
    let each = cpu.iter().map(|(n, all, own)| match (*all > 0.0, n.contains("--server")) {
        (false, _) => format!("{n} {NOISY}"),
        (true, true) => format!("{n} {all:.1} ms (the client process {own:.1}; the rest is the server's: the request, and the preparation of the warm sandbox that replaces the one it used)"),
        (true, false) => format!("{n} {all:.1} ms"),
    });
    let ceiling = cpu
        .iter()
        .skip(1)
        .map(|(n, all, _)| match *base > 0.0 && *all > 0.0 {
            true => format!("{n} {:.2}x", base / all),
            false => format!("{n} not measured"),
        });
    format!(
        "\nCPU time per run of the empty script ({} runs {} ms apart; the machine's busy time over them, less its busy time over as long a pause): {}\nthroughput ceiling relative to bare python (its CPU per run over theirs): {}\n",
        cpu::RUNS,
        cpu::GAP.as_millis(),
        each.collect::<Vec<_>>().join("; "),
        ceiling.collect::<Vec<_>>().join(", ")
    )
}

/// Prints the results and writes target/bench/bench.{md,json,svg}.
fn write_results(
    o: &Options,
    notes: &[String],
    groups: &[(String, Vec<Row>)],
    failed: &[(String, String)],
    x: &Extra,
) -> Result<()> {
    let mut md = String::new();
    for n in notes {
        md.push_str(&format!("note: {n}\n"));
    }
    md.push_str(&output::markdown(groups, failed));
    md.push_str(&format!(
        "\nThroughput, {} workers for {} s (empty script): {}\n",
        o.workers,
        o.duration.as_secs(),
        x.thr
            .iter()
            .map(|(n, r)| format!("{n} {r:.1} runs/s"))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    if let Some(((_, base), rest)) = x.thr.split_first() {
        md.push_str(&format!(
            "throughput relative to bare python: {}\n",
            rest.iter()
                .map(|(n, r)| format!("{n} {:.2}x", r / base.max(1e-9)))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    md.push_str(&cpu_lines(&x.cpu));
    md.push_str(&format!(
        "\nSupervisor peak memory (the maibox process itself, the sandbox excluded), median of 10 runs: VmHWM {:.2} MB (file pages of the binary and libc included), RssAnon peak {:.2} MB\n",
        x.mem.0 as f64 / 1e6,
        x.mem.1 as f64 / 1e6
    ));
    for sm in &x.served_mem {
        let mb = |b: u64| b as f64 / 1e6;
        let n = sm.ready;
        match sm.zygotes {
            None => md.push_str(&format!(
                "\nmaibox serve, idle with its pool: the server's own anonymous memory (RssAnon) {:.2} MB; one warm sandbox (its cgroup's memory: the interpreter with its preloads, tmpfs and kernel memory) {:.2} MB, {n} ready\n",
                mb(sm.anon),
                mb(sm.per_sandbox)
            )),
            Some((zanon, zn)) => md.push_str(&format!(
                "\nmaibox serve --warm-mode {}, idle with its pool: the server's own anonymous memory (RssAnon) {:.2} MB; its {zn} zygotes' anonymous memory (RssAnon, the preloads they share with their forks included) {:.2} MB; one warm sandbox (its cgroup's memory: the forked interpreter's own pages, tmpfs and kernel memory) {:.2} MB, {n} ready\n",
                sm.mode,
                mb(sm.anon),
                mb(zanon),
                mb(sm.per_sandbox)
            )),
        }
    }
    for (mode, client) in &x.client {
        let which = match mode.as_str() {
            "strict" => String::new(),
            m => format!(" (warm_mode {m})"),
        };
        md.push_str(&format!("\nThe Python client from one Python process{which}, {} interleaved rounds (medians):\n\n| script | bare python (subprocess per run) ms | client run ms | ratio | client overhead ms (client time minus the server's) |\n|---|---:|---:|---:|---:|\n", o.rounds));
        for (name, bare, run, over) in client {
            md.push_str(&format!(
                "| {name} | {bare:.2} | {run:.2} | {:.2}x | {over:.2} |\n",
                run / bare.max(1e-9)
            ));
        }
    }
    md.push_str("\nStatic assessment, its own time in a fresh process (median of 21 `maibox assess --json` runs; targets 2 ms and 20 ms):\n");
    for (kind, k1, k10) in &x.assess {
        md.push_str(&format!(
            "- {kind} corpus files: {k1:.2} ms for 1,000 lines, {k10:.2} ms for 10,000 lines\n"
        ));
    }
    println!("{md}");
    let out = crate::root().join("target/bench");
    std::fs::create_dir_all(&out)?;
    std::fs::write(out.join("bench.md"), &md)?;
    let client_json = |mode: &str| {
        x.client.iter().find(|(m, _)| m == mode).map(|(_, c)| {
            c.iter()
                .map(|(n, b, r, o)| serde_json::json!({"script": n, "bare": b, "client": r, "overhead": o}))
                .collect::<Vec<_>>()
        })
    };
    let extra_json = serde_json::json!({
        "throughput": {"workers": o.workers, "duration_s": o.duration.as_secs(),
            "runs_per_s": x.thr.iter().map(|(n, r)| serde_json::json!({"name": n, "runs_per_s": r})).collect::<Vec<_>>()},
        "supervisor_peak_rss_bytes": x.mem.0,
        "supervisor_peak_anon_bytes": x.mem.1,
        "cpu_per_run_ms": x.cpu.iter().map(|(n, all, own)| serde_json::json!({"name": n, "all": all, "own_processes": own})).collect::<Vec<_>>(),
        "server_memory": x.served_mem.iter().map(|sm| {
            let mut v = serde_json::json!({"mode": sm.mode, "anon_bytes": sm.anon, "per_sandbox_bytes": sm.per_sandbox, "ready": sm.ready});
            if let Some((za, zn)) = sm.zygotes {
                v["zygotes_anon_bytes"] = za.into();
                v["zygotes"] = zn.into();
            }
            v
        }).collect::<Vec<_>>(),
        "python_client_ms": client_json("strict"),
        "python_client_ms_fork": client_json("fork"),
        "assessment_ms": x.assess.iter().map(|(k, a, b)| serde_json::json!({"corpus": k, "lines_1000": a, "lines_10000": b})).collect::<Vec<_>>(),
        "notes": notes,
    });
    std::fs::write(
        out.join("bench.json"),
        serde_json::to_vec_pretty(&output::json(groups, failed, extra_json))?,
    )?;
    output::svg(
        &out.join("bench.svg"),
        "maibox exec startup vs peers (empty script)",
        &groups[0].1,
    )?;
    println!("wrote {}/bench.{{md,json,svg}}", out.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(a: &[&str]) -> Result<Options> {
        options(&a.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    fn error(a: &[&str]) -> String {
        format!("{:#}", parse(a).unwrap_err())
    }

    #[test]
    fn defaults_and_peer_selection() {
        let o = parse(&[]).unwrap();
        assert_eq!((o.rounds, o.workers, o.layers), (100, 2, false));
        assert!(PEERS.iter().all(|(p, _)| o.wants(p)));
        let o = parse(&["--rounds", "5", "--peers", "maibox,bwrap"]).unwrap();
        assert_eq!(o.rounds, 5);
        assert!(o.wants("maibox") && o.wants("bwrap"));
        // The baseline runs whatever the list: every ratio is taken against it.
        assert!(o.wants("bare"));
        assert!(!o.wants("firejail") && !o.wants("docker") && !o.wants("maibox-trusted"));
    }

    #[test]
    fn bad_options_are_clear_errors() {
        for (a, want) in [
            (
                vec!["--rounds", "0"],
                "--rounds, --workers and --duration must be at least 1",
            ),
            (
                vec!["--workers", "0"],
                "--rounds, --workers and --duration must be at least 1",
            ),
            (vec!["--rounds", "many"], "--rounds needs a number"),
            (vec!["--rounds"], "--rounds needs a number"),
            (vec!["--round", "3"], "unknown bench option --round"),
            (vec!["--peers"], "--peers needs a list of names"),
            (vec!["--peers", ","], "--peers needs at least one name"),
        ] {
            let e = error(&a);
            assert!(e.contains(want), "{a:?}: {e}");
        }
        let e = error(&["--peers", "maibox,podman"]);
        assert!(e.contains("unknown peer \"podman\""), "{e}");
        // The message lists every valid name.
        for (p, _) in PEERS {
            assert!(e.contains(p), "{p} missing from {e}");
        }
    }

    #[test]
    fn rootfs_must_hold_a_python() {
        let d = std::env::temp_dir().join(format!("xtask-bench-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("usr/bin")).unwrap();
        let ds = d.display().to_string();
        let e = error(&["--rootfs", &ds]);
        assert!(
            e.contains("--rootfs") && e.contains("/usr/bin/python3") && e.contains("not present"),
            "{e}"
        );
        let e = error(&["--rootfs", &format!("{ds}/absent")]);
        assert!(e.contains("no such directory"), "{e}");
        std::fs::copy("/usr/bin/python3", d.join("usr/bin/python3")).unwrap();
        let o = parse(&["--rootfs", &ds]).unwrap();
        assert_eq!(o.rootfs, vec![d.canonicalize().unwrap()]);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
