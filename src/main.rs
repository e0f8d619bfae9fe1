//! The `maibox` command line: clap dispatch only.

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use maibox::assess::Verdict;
use maibox::config::{Config, TrustLevel};
use maibox::engine::StdinMode;
use maibox::gate::{self, Decision};
use maibox::policy::{Overrides, Policy};
use maibox::report::exit;
use maibox::run::{self, Source};
use maibox::units::{ByteSize, Seconds};
use std::io::Write;
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "maibox",
    version,
    about = "Run untrusted Python code in a native Linux sandbox"
)]
struct Cli {
    #[command(flatten)]
    oci: maibox::oci::cli::Global,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run a Python script in a sandbox.
    Exec(Box<ExecArgs>),
    /// Show what this host can enforce, and how to fix what it cannot.
    Doctor {
        #[arg(long)]
        json: bool,
    },
    /// Assess a Python script statically (triage before running it).
    Assess {
        /// The script to assess.
        #[arg(required_unless_present = "rules")]
        script: Option<PathBuf>,
        #[arg(long)]
        json: bool,
        /// Exit with status 3 when the verdict is at least this (LOW, MEDIUM, HIGH, BLOCKED).
        #[arg(long, value_parser = parse_verdict)]
        fail_at: Option<Verdict>,
        /// Print the rule table instead.
        #[arg(long)]
        rules: bool,
        #[arg(long)]
        config: Option<PathBuf>,
        /// Also run an external analyser and merge its findings into the verdict
        /// (bandit: $MAIBOX_BANDIT, else `bandit` or `python3 -m bandit` on PATH).
        #[arg(long = "with", value_enum, value_name = "TOOL")]
        with: Vec<WithTool>,
    },
    /// The tamper-evident audit log: verify, show, tail, key.
    Audit {
        #[command(subcommand)]
        cmd: AuditCmd,
    },
    /// List the syscalls a trust level's seccomp profile allows, and what it does with the rest.
    Seccomp {
        #[arg(long, value_parser = parse_trust)]
        trust: Option<TrustLevel>,
        #[arg(long)]
        config: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Print the effective policy for a trust level as JSON.
    Policy {
        #[arg(long, value_parser = parse_trust)]
        trust: Option<TrustLevel>,
        #[arg(long)]
        config: Option<PathBuf>,
    },
    #[command(flatten)]
    Oci(maibox::oci::cli::Verb),
}

#[derive(Subcommand)]
enum AuditCmd {
    /// Check every chain link and signature; exit 0 only when the log is intact.
    Verify {
        /// Log directory (default: the configured one).
        dir: Option<PathBuf>,
        /// Expected key fingerprint (SHA256:...), kept somewhere the log's writer cannot change.
        #[arg(long)]
        key: Option<String>,
        #[arg(long)]
        config: Option<PathBuf>,
    },
    /// Print records readably (or as JSON lines).
    Show {
        #[arg(long)]
        run: Option<String>,
        /// RFC 3339 time, a date, or an age such as 30m, 2h, 7d.
        #[arg(long)]
        since: Option<String>,
        #[arg(long)]
        json: bool,
        #[arg(long)]
        dir: Option<PathBuf>,
        #[arg(long)]
        config: Option<PathBuf>,
    },
    /// Print the last records; with -f keep following.
    Tail {
        #[arg(short = 'f', long)]
        follow: bool,
        #[arg(long)]
        dir: Option<PathBuf>,
        #[arg(long)]
        config: Option<PathBuf>,
    },
    /// Print the fingerprint of the log's signing key.
    Key {
        #[arg(long)]
        dir: Option<PathBuf>,
        #[arg(long)]
        config: Option<PathBuf>,
    },
}

#[derive(Args)]
struct ExecArgs {
    /// Trust level: untrusted, unknown or trusted.
    #[arg(long, value_parser = parse_trust)]
    trust: Option<TrustLevel>,
    /// Configuration file (default: $MAIBOX_CONFIG, /etc/maibox/sandbox.yaml, built-in).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Print a JSON report on stdout after the run.
    #[arg(long)]
    json: bool,
    /// Wall-clock limit, e.g. 10s or 2m (at most the trust level's limit unless raised in the config).
    #[arg(long, value_parser = parse_timeout, allow_hyphen_values = true)]
    timeout: Option<Seconds>,
    /// CPU cores, e.g. 0.5 (at most the trust level's, unless --allow-raise).
    #[arg(long, value_parser = parse_cpus, allow_hyphen_values = true)]
    cpus: Option<f64>,
    /// Memory, e.g. 128MiB (at most the trust level's, unless --allow-raise).
    #[arg(long, value_parser = parse_size)]
    memory: Option<ByteSize>,
    /// Processes and threads (at most the trust level's, unless --allow-raise).
    #[arg(long, value_parser = parse_pids, allow_hyphen_values = true)]
    pids: Option<u64>,
    /// Network: none (only lo) or allowlist (only the filtering proxy; see `network:` in the config).
    #[arg(long, value_parser = parse_network)]
    network: Option<maibox::config::NetworkMode>,
    /// Who isolates the code: native (maibox's own engine) or docker (a Docker engine
    /// at $DOCKER_HOST; see `docker:` in the config).
    #[arg(long, value_enum)]
    backend: Option<maibox::config::Backend>,
    /// Docker backend: the image to run in (default from the config).
    #[arg(long, value_parser = parse_image)]
    image: Option<String>,
    /// Docker backend: pull the image when the engine does not have it.
    #[arg(long)]
    pull: bool,
    /// Docker backend: the OCI runtime registered with the engine (e.g. maibox).
    #[arg(long, value_name = "NAME")]
    docker_runtime: Option<String>,
    /// Let --timeout/--cpus/--memory/--pids exceed the trust level's quota (recorded).
    #[arg(long)]
    allow_raise: bool,
    /// Stream usage samples as JSON lines to FILE (or - for stderr) while the code runs.
    #[arg(long, value_name = "FILE")]
    stats: Option<PathBuf>,
    /// Root image directory: run on an overlay of it instead of the host's /usr.
    #[arg(long)]
    rootfs: Option<PathBuf>,
    /// Python interpreter to use (an ELF binary; default from the config).
    #[arg(long)]
    python: Option<PathBuf>,
    /// Cap on stdout+stderr, e.g. 1MiB.
    #[arg(long, value_parser = parse_size)]
    output_limit: Option<ByteSize>,
    /// Print where the run's time went (assessment, each sandbox setup step, the code,
    /// the whole command) to stderr.
    #[arg(long)]
    timings: bool,
    /// Diagnostic: route every syscall the seccomp filter denies through the supervisor,
    /// which answers EPERM as usual and lists the calls (name and count) in the report
    /// and on stderr. Shows why code fails under the sandbox; each denial costs a round trip.
    #[arg(long)]
    audit_syscalls: bool,
    /// Switch off one layer (repeatable). For controls in tests and the per-layer
    /// benchmark only: the run is weaker than its trust level says, and the report shows it.
    #[arg(long = "unsafe-disable-layer", value_enum, hide = true)]
    unsafe_disable_layer: Vec<maibox::policy::Layer>,
    /// Run even if the assessment refuses the code; the reason is printed and recorded.
    #[arg(long = "override", value_name = "REASON", value_parser = parse_reason)]
    override_reason: Option<String>,
    /// Also run an external analyser and merge its findings into the assessment's verdict
    /// (bandit: $MAIBOX_BANDIT, else `bandit` or `python3 -m bandit` on PATH).
    #[arg(long = "with", value_enum, value_name = "TOOL")]
    with: Vec<WithTool>,
    /// Run CODE instead of a file.
    #[arg(short = 'c', value_name = "CODE", conflicts_with = "script")]
    code: Option<String>,
    /// The script to run, or - to read it from stdin.
    #[arg(required_unless_present = "code")]
    script: Option<PathBuf>,
    /// Arguments for the script (after --).
    #[arg(last = true)]
    args: Vec<String>,
}

/// External analysers that `--with` adds to the static assessment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum WithTool {
    Bandit,
}

/// The assessment, with the findings of the `--with` tools merged in.
fn assess_with(
    origin: &str,
    bytes: &[u8],
    cfg: &maibox::assess::AssessConfig,
    with: &[WithTool],
) -> anyhow::Result<maibox::assess::Assessment> {
    let mut a = maibox::assess::assess(origin, bytes, cfg)?;
    if with.contains(&WithTool::Bandit) {
        maibox::assess::bandit::with_bandit(&mut a, bytes, cfg)?;
    }
    Ok(a)
}

fn parse_verdict(s: &str) -> Result<Verdict, String> {
    s.parse().map_err(|e| format!("{e}"))
}

fn parse_reason(s: &str) -> Result<String, String> {
    let t = s.trim();
    if t.len() < 3 {
        return Err("give a reason of a few words, e.g. --override \"reviewed: fork test\"".into());
    }
    Ok(t.to_string())
}

fn parse_trust(s: &str) -> Result<TrustLevel, String> {
    s.parse()
}

fn parse_timeout(s: &str) -> Result<Seconds, String> {
    s.parse()
}

fn parse_network(s: &str) -> Result<maibox::config::NetworkMode, String> {
    match s {
        "none" => Ok(maibox::config::NetworkMode::None),
        "allowlist" => Ok(maibox::config::NetworkMode::Allowlist),
        other => Err(format!(
            "unknown network mode {other:?} (use none or allowlist)"
        )),
    }
}

fn parse_image(s: &str) -> Result<String, String> {
    if s.is_empty() || s.starts_with('-') {
        return Err("give an image reference, e.g. python:3-slim".into());
    }
    Ok(s.to_string())
}

fn parse_cpus(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .parse()
        .map_err(|_| format!("{s:?} is not a number of CPUs (e.g. 0.5 or 2)"))?;
    if !(v.is_finite() && v > 0.0) {
        return Err("must be a positive number of CPUs".into());
    }
    Ok(v)
}

fn parse_pids(s: &str) -> Result<u64, String> {
    let v: u64 = s
        .parse()
        .map_err(|_| format!("{s:?} is not a whole number"))?;
    if v == 0 {
        return Err("must be at least 1".into());
    }
    Ok(v)
}

fn parse_size(s: &str) -> Result<ByteSize, String> {
    let b: ByteSize = s.parse()?;
    if b.0 == 0 {
        return Err("must be greater than 0".into());
    }
    Ok(b)
}

/// runc's `exec --process FILE ID` (how Docker and containerd run `docker exec`) shares
/// its name with maibox's own `exec` of Python code; the runc form is told apart by
/// its flags and routed to the hidden `oci-exec` verb.
fn route_oci_exec(mut args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    let Some(pos) = args.iter().position(|a| a == "exec") else {
        return args;
    };
    // Only maibox's own options count: after `--` come the code's arguments.
    let own = || args[pos + 1..].iter().take_while(|a| *a != "--");
    let oci_flag = own().any(|a| {
        let a = a.to_string_lossy();
        [
            "--process",
            "-p",
            "--pid-file",
            "--detach",
            "-d",
            "--console-socket",
            "--tty",
            "-t",
            "--user",
            "-u",
            "--cwd",
            "--additional-gids",
            "-g",
            "--ignore-paused",
            "--preserve-fds",
            "--cgroup",
        ]
        .iter()
        .any(|f| a == *f || a.starts_with(&format!("{f}=")))
    });
    // `exec ID CMD...` without flags (runc's plain form): an argument naming a
    // container under the state root, and no file of that name, means OCI.
    let root = args
        .iter()
        .position(|a| a == "--root")
        .and_then(|i| args.get(i + 1))
        .map(PathBuf::from)
        .or_else(|| {
            args.iter().find_map(|a| {
                a.to_str()
                    .and_then(|s| s.strip_prefix("--root="))
                    .map(PathBuf::from)
            })
        })
        .unwrap_or_else(|| PathBuf::from(maibox::oci::state::DEFAULT_ROOT));
    let names_container = || {
        own().any(|a| {
            let s = a.to_string_lossy();
            !s.starts_with('-')
                && !s.contains('/')
                && root.join(&*s).join("state.json").is_file()
                && !std::path::Path::new(a).exists()
        })
    };
    // runc's callers name a state root before the verb; maibox's own exec has no
    // use for one. So `--root DIR exec ID ...` is OCI even when ID does not exist
    // (and fails as runc's does: no such container, status 255).
    let state_root = args[..pos].iter().any(|a| {
        let a = a.to_string_lossy();
        a == "--root" || a.starts_with("--root=")
    });
    if oci_flag || state_root || names_container() {
        args[pos] = "oci-exec".into();
    }
    args
}

/// clap's parse, with runc's global options shown only in the OCI verbs' help.
fn parse(args: Vec<std::ffi::OsString>) -> Result<Cli, clap::Error> {
    use clap::{CommandFactory, FromArgMatches};
    let mut m = maibox::oci::cli::scope_global_flags(Cli::command()).try_get_matches_from(args)?;
    Cli::from_arg_matches_mut(&mut m).map_err(|e| e.format(&mut Cli::command()))
}

/// `-v` alone, after any of runc's global options (`--root DIR -v`).
fn is_runc_version(args: &[String]) -> bool {
    let mut rest = args.iter();
    while let Some(a) = rest.next() {
        match a.as_str() {
            "--root" | "--log" | "--log-format" => {
                rest.next();
            }
            "--debug" | "--systemd-cgroup" => {}
            "-v" => return rest.next().is_none(),
            s if s.starts_with("--root=") || s.starts_with("--log=") => {}
            s if s.starts_with("--log-format=") => {}
            _ => return false,
        }
    }
    false
}

fn main() {
    maibox::timeline::mark("start");
    // runc's `-v` (what runc-compatible tooling and runc's own tests call):
    // version, commit and runtime-spec version, one per line.
    if is_runc_version(&std::env::args().skip(1).collect::<Vec<_>>()) {
        println!("maibox version {}", env!("CARGO_PKG_VERSION"));
        println!("commit: none");
        println!("spec: {}", maibox::oci::cli::OCI_VERSION);
        return;
    }
    let cli = match parse(route_oci_exec(std::env::args_os().collect())) {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                let _ = e.print();
                std::process::exit(0);
            }
            let rendered = e.to_string();
            let first = rendered.lines().next().unwrap_or("invalid arguments");
            let first = first.strip_prefix("error: ").unwrap_or(first);
            eprintln!("maibox: error: {first} (see maibox --help)");
            std::process::exit(exit::MAIBOX_FAILED);
        }
    };
    if !matches!(cli.cmd, Cmd::Exec(_) | Cmd::Oci(_)) {
        // Listing commands behave like any Unix filter when the reader goes away
        // (`maibox seccomp | head`). `exec` keeps SIGPIPE ignored: its supervisor
        // must outlive a closed stdout to finish the run and its audit record; so
        // do the OCI verbs, which write to hooks that may not read their input
        // and must still finish the container's bookkeeping.
        // SAFETY: setting a signal disposition at start-up, before any thread exists.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    }
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_env("MAIBOX_LOG"))
        .with_writer(std::io::stderr)
        .init();
    let code = match dispatch(cli) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("maibox: error: {e:#}");
            exit::MAIBOX_FAILED
        }
    };
    std::process::exit(code);
}

fn dispatch(cli: Cli) -> anyhow::Result<i32> {
    match cli.cmd {
        Cmd::Exec(a) => exec(*a),
        Cmd::Doctor { json } => doctor(json),
        Cmd::Audit { cmd } => audit_cmd(cmd),
        Cmd::Seccomp {
            trust,
            config,
            json,
        } => {
            let (cfg, _) = Config::load(config.as_deref())?;
            let t = trust.unwrap_or(cfg.default_trust);
            let p = &cfg.level(t).seccomp;
            let allowed =
                maibox::confine::allowed_syscalls(p, maibox::confine::NetAccess::Loopback);
            if json {
                println!(
                    "{}",
                    serde_json::json!({"trust": t, "default_action": p.default_action, "kill_on": p.kill_on, "deny": p.deny, "allowed": allowed})
                );
            } else {
                println!(
                    "# {t}: {} syscalls allowed; everything else: {:?}; killed: {}",
                    allowed.len(),
                    p.default_action,
                    if p.kill_on.is_empty() {
                        "none".to_string()
                    } else {
                        p.kill_on.join(" ")
                    }
                );
                for s in allowed {
                    if maibox::confine::seccomp::ARG_CHECKED.contains(&s.as_str()) {
                        println!("{s}  (argument-checked)");
                    } else {
                        println!("{s}");
                    }
                }
            }
            Ok(0)
        }
        Cmd::Assess {
            script,
            json,
            fail_at,
            rules,
            config,
            with,
        } => assess(script, json, fail_at, rules, config, &with),
        Cmd::Policy { trust, config } => {
            let (cfg, _) = Config::load(config.as_deref())?;
            let t = trust.unwrap_or(cfg.default_trust);
            let p = Policy::build(&cfg, t, &Overrides::default())?;
            println!("{}", serde_json::to_string_pretty(&p)?);
            Ok(0)
        }
        // Logs its own errors (to --log, as the OCI callers expect).
        Cmd::Oci(verb) => Ok(maibox::oci::cli::main(&cli.oci, verb)),
    }
}

fn exec(a: ExecArgs) -> anyhow::Result<i32> {
    let started = std::time::Instant::now();
    let (cfg, _origin) = Config::load(a.config.as_deref())?;
    maibox::timeline::mark("config");
    let trust = a.trust.unwrap_or(cfg.default_trust);
    let source = match (&a.code, &a.script) {
        (Some(c), _) => Source::Inline(c),
        (None, Some(p)) if p.as_os_str() == "-" => Source::Stdin,
        (None, Some(p)) => Source::File(p),
        (None, None) => anyhow::bail!("give a script, - for stdin, or -c CODE"),
    };
    let stdin = match source {
        Source::Stdin => StdinMode::Null,
        _ => StdinMode::Pump,
    };
    let code = run::read_code(source)?;
    let assessment = assess_with(&code.origin, &code.bytes, &cfg.assessment, &a.with)?;
    maibox::timeline::mark("assess");
    let decision = gate::decide(&cfg, trust, &assessment, a.override_reason.as_deref());
    let trust = match &decision {
        Decision::Refused { verdict, refuse_at } => {
            anyhow::bail!(
                "refused: the assessment of {} says {verdict} (this level refuses at {refuse_at}): {}. Review it with `maibox assess {}`; to run it anyway, add --override \"REASON\"",
                code.origin,
                gate::worst_findings(&assessment, 3),
                code.origin
            )
        }
        Decision::Overridden { reason, .. } => {
            eprintln!(
                "maibox: warning: running {} despite its {} verdict; override: {reason}",
                code.origin, assessment.verdict
            );
            trust
        }
        Decision::Escalated { from, trust } => {
            eprintln!(
                "maibox: note: the assessment says {}: running with {trust} settings instead of {from}",
                assessment.verdict
            );
            *trust
        }
        Decision::Run { trust } => *trust,
    };
    let ov = Overrides {
        timeout: a.timeout,
        cpus: a.cpus,
        memory: a.memory,
        pids: a.pids,
        allow_raise: a.allow_raise,
        network: a.network,
        rootfs: a.rootfs,
        output: a.output_limit,
        interpreter: a.python,
        disable: a.unsafe_disable_layer.clone(),
        backend: a.backend,
        image: a.image,
        pull: a.pull,
        docker_runtime: a.docker_runtime,
    };
    if !a.unsafe_disable_layer.is_empty() {
        eprintln!(
            "maibox: warning: layers switched off for this run: {:?}",
            a.unsafe_disable_layer
        );
    }
    let mut policy = Policy::build(&cfg, trust, &ov)?;
    if a.audit_syscalls {
        if policy.backend != maibox::config::Backend::Native {
            anyhow::bail!(
                "--audit-syscalls needs maibox's own seccomp filter: use it with --backend native (the docker backend applies the engine's profile)"
            );
        }
        policy.seccomp.audit_denials = true;
    }
    for note in &policy.adjustments {
        eprintln!("maibox: note: {note}");
    }
    maibox::timeline::mark("policy");
    let summary = gate::AssessmentSummary::of(&assessment);
    let run_id = run::new_run_id();
    // The log is opened and the start record written (and synced) while the sandbox
    // builds its view; the code starts only once the record is on disk.
    let audit = RunAudit::default();
    let before_code = audit.before_code(&cfg.audit, &run_id, &policy, &code, &summary, &decision);
    let stats = match &a.stats {
        None => None,
        Some(p) if p.as_os_str() == "-" => Some(run::StatsSink::Stderr),
        Some(p) => Some(run::StatsSink::File(
            std::fs::File::create(p).with_context(|| format!("--stats {}", p.display()))?,
        )),
    };
    let ctx = run::Context {
        proxy: None,
        stats,
        run_id,
        assessment: Some(summary),
        decision: Some(decision),
        defer_teardown: true,
    };
    let r = run::run(
        &policy,
        &code,
        &a.args,
        stdin,
        ctx,
        &cfg.network,
        before_code,
    );
    audit.end(&r.report)?;
    if let maibox::monitor::Ending::SetupFailed(e) = &r.outcome.ending {
        eprintln!("maibox: error: {e}");
    }
    if let maibox::monitor::Ending::ExecFailed { message, .. } = &r.outcome.ending {
        eprintln!(
            "maibox: error: cannot execute {} in the sandbox: {message}",
            policy.interpreter.path.display()
        );
    }
    if policy.seccomp.audit_denials {
        let denied: Vec<String> = r
            .report
            .seccomp
            .denied
            .iter()
            .map(|d| format!("{} x{}", d.syscall, d.count))
            .collect();
        eprintln!(
            "maibox: seccomp denied (EPERM): {}",
            if denied.is_empty() {
                "nothing".to_string()
            } else {
                denied.join(", ")
            }
        );
    }
    for v in &r.report.violations {
        eprintln!("maibox: violation: {}", serde_json::to_string(v)?);
    }
    if a.timings {
        eprintln!(
            "maibox: timings: {}",
            timings_line(&r.report, started.elapsed())
        );
    }
    if a.json {
        let mut out = std::io::stdout().lock();
        if !r.outcome.stdout_ended_with_newline {
            writeln!(out)?;
        }
        writeln!(out, "{}", serde_json::to_string(&r.report)?)?;
    }
    Ok(r.report.exit_code)
}

fn assess(
    script: Option<PathBuf>,
    json: bool,
    fail_at: Option<Verdict>,
    rules: bool,
    config: Option<PathBuf>,
    with: &[WithTool],
) -> anyhow::Result<i32> {
    if rules {
        for r in maibox::assess::rules() {
            println!("{}", serde_json::to_string(r)?);
        }
        return Ok(0);
    }
    let (cfg, _) = Config::load(config.as_deref())?;
    let path = script.ok_or_else(|| anyhow::anyhow!("give a script to assess"))?;
    let source = if path.as_os_str() == "-" {
        Source::Stdin
    } else {
        Source::File(&path)
    };
    let bytes = run::read_bytes(source)?;
    let a = assess_with(&bytes.origin, &bytes.bytes, &cfg.assessment, with)?;
    if json {
        println!("{}", serde_json::to_string(&a)?);
    } else {
        print!("{}", maibox::assess::render_text(&a));
    }
    Ok(match fail_at {
        Some(at) if a.verdict >= at => 3,
        _ => 0,
    })
}

fn audit_dir(dir: Option<PathBuf>, config: Option<&std::path::Path>) -> anyhow::Result<PathBuf> {
    if let Some(d) = dir {
        return Ok(d);
    }
    if let Some(d) = std::env::var_os(maibox::run_audit::DIR_ENV).filter(|d| !d.is_empty()) {
        return Ok(d.into());
    }
    let (cfg, _) = Config::load(config)?;
    Ok(cfg.audit.resolved_dir()?)
}

fn audit_cmd(cmd: AuditCmd) -> anyhow::Result<i32> {
    let mut out = std::io::stdout().lock();
    match cmd {
        AuditCmd::Verify { dir, key, config } => {
            let d = audit_dir(dir, config.as_deref())?;
            let r = maibox::audit::verify_pinned(&d, key.as_deref())?;
            writeln!(out, "{r}")?;
            Ok(if r.ok { 0 } else { 1 })
        }
        AuditCmd::Show {
            run,
            since,
            json,
            dir,
            config,
        } => {
            let d = audit_dir(dir, config.as_deref())?;
            maibox::audit::show(&d, run.as_deref(), since.as_deref(), json, &mut out)?;
            Ok(0)
        }
        AuditCmd::Tail {
            follow,
            dir,
            config,
        } => {
            let d = audit_dir(dir, config.as_deref())?;
            maibox::audit::tail(&d, follow, &mut out)?;
            Ok(0)
        }
        AuditCmd::Key { dir, config } => {
            let d = audit_dir(dir, config.as_deref())?;
            writeln!(out, "{}", maibox::audit::key_fingerprint(&d)?)?;
            Ok(0)
        }
    }
}

fn doctor(json: bool) -> anyhow::Result<i32> {
    let checks = maibox::doctor::run_checks();
    if json {
        println!("{}", serde_json::to_string_pretty(&checks)?);
    } else {
        for c in &checks {
            let tag = match c.state {
                maibox::doctor::State::Ok => "ok  ",
                maibox::doctor::State::Warn => "warn",
                maibox::doctor::State::Fail => "FAIL",
            };
            println!("[{tag}] {:<16} {}", c.name, c.detail);
            if !c.advice.is_empty() {
                println!("       {:<16} fix: {}", "", c.advice);
            }
        }
    }
    let failed = checks
        .iter()
        .any(|c| c.state == maibox::doctor::State::Fail);
    Ok(if failed { 1 } else { 0 })
}

/// The audit side of one `maibox exec`: the log, once opened, and why recording the
/// run's start failed, if it did (then nothing ran).
#[derive(Default)]
struct RunAudit {
    log: std::cell::RefCell<Option<maibox::audit::AuditLog>>,
    failed: std::cell::RefCell<Option<anyhow::Error>>,
}

impl RunAudit {
    /// The work `run` does while the sandbox sets up: open the log, record the start.
    fn before_code<'a>(
        &'a self,
        cfg: &'a maibox::audit::AuditConfig,
        run_id: &str,
        policy: &'a Policy,
        code: &'a run::Code,
        summary: &gate::AssessmentSummary,
        decision: &Decision,
    ) -> run::BeforeCode<'a> {
        let (run_id, summary, decision) = (run_id.to_string(), summary.clone(), decision.clone());
        run::BeforeCode::new(move || {
            let r = maibox::run_audit::open(cfg)
                .context("opening the audit log")
                .and_then(|log| {
                    maibox::timeline::mark("audit-open");
                    let Some(mut log) = log else { return Ok(()) };
                    let r = maibox::run_audit::start(
                        &mut log, &run_id, policy, code, &summary, &decision,
                    )
                    .context("recording the run in the audit log (nothing ran)");
                    *self.log.borrow_mut() = Some(log);
                    r
                });
            maibox::timeline::mark("audit-start");
            r.map_err(|e| {
                let msg = format!("{e:#}");
                *self.failed.borrow_mut() = Some(e);
                msg
            })
        })
    }

    /// Records the run's end; an error when its start could not be recorded.
    fn end(&self, r: &maibox::report::Report) -> anyhow::Result<()> {
        if let Some(e) = self.failed.borrow_mut().take() {
            return Err(e);
        }
        if let Some(log) = self.log.borrow_mut().as_mut() {
            if let Err(e) = maibox::run_audit::end(log, r) {
                eprintln!(
                    "maibox: error: the end of run {} could not be recorded in the audit log: {e}",
                    r.run_id
                );
            }
        }
        maibox::timeline::mark("audit-end");
        Ok(())
    }
}

/// `--timings`: one line, in the order things happen.
fn timings_line(r: &maibox::report::Report, total: std::time::Duration) -> String {
    let mut parts = Vec::new();
    if let Some(a) = &r.assessment {
        parts.push(format!("assessment {:.2} ms", a.elapsed_us as f64 / 1e3));
    }
    let steps: Vec<String> = r
        .setup_steps_us
        .iter()
        .map(|(name, us)| format!("{name} {:.2}", *us as f64 / 1e3))
        .collect();
    parts.push(format!(
        "sandbox setup {:.2} ms ({})",
        r.setup_ms,
        steps.join(", ")
    ));
    parts.push(format!("code {:.2} ms", r.usage.wall_time_s * 1e3));
    parts.push(format!("whole command {:.2} ms", total.as_secs_f64() * 1e3));
    let phases: Vec<String> = maibox::timeline::phases()
        .iter()
        .map(|(name, d)| format!("{name} {:.2}", d.as_secs_f64() * 1e3))
        .collect();
    parts.push(format!("supervisor phases ms: {}", phases.join(", ")));
    parts.join("; ")
}

#[cfg(test)]
mod route_tests {
    use super::route_oci_exec;

    fn routed(args: &[&str]) -> Vec<String> {
        route_oci_exec(args.iter().map(|a| a.into()).collect())
            .into_iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn runc_exec_is_told_apart_from_python_exec() {
        let docker = [
            "maibox",
            "--root",
            "/r",
            "exec",
            "--process",
            "/p.json",
            "--detach",
            "id",
        ];
        assert_eq!(routed(&docker)[3], "oci-exec");
        assert_eq!(
            routed(&["maibox", "exec", "--pid-file=/f", "-d", "id"])[1],
            "oci-exec"
        );
        // The code's own arguments after `--` never count.
        let py = ["maibox", "exec", "code.py", "--", "-d", "--process"];
        assert_eq!(routed(&py)[1], "exec");
        assert_eq!(routed(&["maibox", "exec", "-c", "pass"])[1], "exec");
        // A state root before the verb is runc's form, whether or not the
        // container exists; so are --preserve-fds and --cgroup.
        let plain = ["maibox", "--root", "/nonexistent", "exec", "nosuch", "true"];
        assert_eq!(routed(&plain)[3], "oci-exec");
        assert_eq!(
            routed(&["maibox", "exec", "--preserve-fds=2", "id", "cat"])[1],
            "oci-exec"
        );
    }
}
