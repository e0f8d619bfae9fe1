//! The `maibox` command line: clap dispatch only.

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use maibox::config::{Config, TrustLevel};
use maibox::policy::{Overrides, Policy};
use maibox::report::exit;
use maibox::run::{self, Source};
use maibox::sandbox::StdinMode;
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
    Exec(ExecArgs),
    /// Show what this host can enforce, and how to fix what it cannot.
    Doctor {
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
    /// Root image directory: run on an overlay of it instead of the host's /usr.
    #[arg(long)]
    rootfs: Option<PathBuf>,
    /// Python interpreter to use (an ELF binary; default from the config).
    #[arg(long)]
    python: Option<PathBuf>,
    /// Cap on stdout+stderr, e.g. 1MiB.
    #[arg(long, value_parser = parse_size)]
    output_limit: Option<ByteSize>,
    /// Switch off one layer (repeatable). For controls in tests and the per-layer
    /// benchmark only: the run is weaker than its trust level says, and the report shows it.
    #[arg(long = "unsafe-disable-layer", value_enum, hide = true)]
    unsafe_disable_layer: Vec<maibox::policy::Layer>,
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

fn parse_trust(s: &str) -> Result<TrustLevel, String> {
    s.parse()
}

fn parse_timeout(s: &str) -> Result<Seconds, String> {
    s.parse()
}

fn parse_size(s: &str) -> Result<ByteSize, String> {
    let b: ByteSize = s.parse()?;
    if b.0 == 0 {
        return Err("must be greater than 0".into());
    }
    Ok(b)
}

fn main() {
    let cli = match Cli::try_parse() {
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
        Cmd::Exec(a) => exec(a),
        Cmd::Doctor { json } => doctor(json),
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
    let (cfg, _origin) = Config::load(a.config.as_deref())?;
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
    let ov = Overrides {
        timeout: a.timeout,
        rootfs: a.rootfs,
        output: a.output_limit,
        interpreter: a.python,
        disable: a.unsafe_disable_layer.clone(),
    };
    if !a.unsafe_disable_layer.is_empty() {
        eprintln!(
            "maibox: warning: layers switched off for this run: {:?}",
            a.unsafe_disable_layer
        );
    }
    let policy = Policy::build(&cfg, trust, &ov).context("building the sandbox policy")?;
    let r = run::run(&policy, &code, &a.args, stdin);
    if let maibox::monitor::Ending::SetupFailed(e) = &r.outcome.ending {
        eprintln!("maibox: error: {e}");
    }
    if let maibox::monitor::Ending::ExecFailed { message, .. } = &r.outcome.ending {
        eprintln!(
            "maibox: error: cannot execute {} in the sandbox: {message}",
            policy.interpreter.path.display()
        );
    }
    for v in &r.report.violations {
        eprintln!("maibox: violation: {}", serde_json::to_string(v)?);
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
