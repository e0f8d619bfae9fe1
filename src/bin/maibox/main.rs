//! The `maibox` command line: argument parsing and printing only. Everything a run
//! does happens in the library ([`maibox::Sandbox`]); the OCI verbs live in
//! [`maibox::oci`].

// Functions fit a screen (clippy.toml sets the limit); a test reads as one scenario.
#![warn(clippy::too_many_lines)]
#![cfg_attr(test, allow(clippy::too_many_lines))]

mod args;
mod commands;
mod exec;
mod report_fd;
mod runc;
mod served;

use args::*;
use clap::{Parser, Subcommand};
use maibox::assess::Verdict;
use maibox::config::TrustLevel;
use maibox::report::exit;
use maibox::Timeline;
use std::path::PathBuf;
use std::time::Instant;

#[derive(Parser, Debug)]
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

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Run a Python script in a sandbox.
    Exec(Box<exec::ExecArgs>),
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
    /// Serve warm, single-use sandboxes on a unix socket until SIGTERM (docs/server.md).
    Serve {
        /// The socket (default: /run/maibox/maibox.sock as root, $XDG_RUNTIME_DIR/maibox.sock).
        #[arg(long)]
        socket: Option<PathBuf>,
        #[arg(long)]
        config: Option<PathBuf>,
        /// Where warm sandboxes' interpreters come from: `strict` (started in each) or
        /// `fork` (forked from a zygote); overrides `server.warm_mode`.
        #[arg(long, value_name = "MODE")]
        warm_mode: Option<maibox::config::WarmMode>,
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

#[derive(Subcommand, Debug)]
pub enum AuditCmd {
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
        /// Only the last N records (of those the other options select).
        #[arg(long, value_name = "N")]
        last: Option<usize>,
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

/// clap's parse, with runc's global options shown only in the OCI verbs' help.
fn parse(args: Vec<std::ffi::OsString>) -> Result<Cli, clap::Error> {
    match parse_exec(&args) {
        Some(cli) => Ok(cli),
        None => parse_all(args),
    }
}

fn parse_all(args: Vec<std::ffi::OsString>) -> Result<Cli, clap::Error> {
    use clap::{CommandFactory, FromArgMatches};
    let mut m = maibox::oci::cli::scope_global_flags(Cli::command()).try_get_matches_from(args)?;
    Cli::from_arg_matches_mut(&mut m).map_err(|e| e.format(&mut Cli::command()))
}

/// `maibox exec ...` parsed by a command tree that holds `exec` alone. clap builds
/// the whole tree (every verb, the OCI runtime's too) before it parses a word, and
/// for the command an agent starts once per run that was half of a served run's
/// client instructions and most of its heap page faults (`perf record -e
/// page-faults`). The same derived arguments parse here; anything but a successful
/// parse (help, a bad flag) returns `None` and goes through the whole tree, so help
/// and error messages stay the whole tree's.
fn parse_exec(args: &[std::ffi::OsString]) -> Option<Cli> {
    use clap::{Args, Command, FromArgMatches};
    if args.get(1).is_none_or(|a| a != "exec") {
        return None;
    }
    let exec = exec::ExecArgs::augment_args(Command::new("exec"));
    let root = maibox::oci::cli::Global::augment_args(Command::new("maibox")).subcommand(exec);
    let mut m = root.try_get_matches_from(args).ok()?;
    let oci = maibox::oci::cli::Global::from_arg_matches_mut(&mut m).ok()?;
    let (_, mut sub) = m.remove_subcommand()?;
    let a = exec::ExecArgs::from_arg_matches_mut(&mut sub).ok()?;
    Some(Cli {
        oci,
        cmd: Cmd::Exec(Box::new(a)),
    })
}

fn main() {
    let started = Instant::now();
    let timeline = Timeline::starting_at(started);
    // runc's `-v` (what runc-compatible tooling and runc's own tests call):
    // version, commit and runtime-spec version, one per line.
    if runc::is_runc_version(&std::env::args().skip(1).collect::<Vec<_>>()) {
        println!("maibox version {}", env!("CARGO_PKG_VERSION"));
        println!("commit: none");
        println!("spec: {}", maibox::oci::cli::OCI_VERSION);
        return;
    }
    let args = runc::route_oci_exec(std::env::args_os().collect());
    let cli = match parse(args.clone()) {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                let _ = e.print();
                std::process::exit(0);
            }
            if let Some(m) = runc::unknown_help_topic(&e, &args) {
                eprintln!("maibox: error: {m}");
                std::process::exit(exit::MAIBOX_FAILED);
            }
            let rendered = e.to_string();
            let first = rendered.lines().next().unwrap_or("invalid arguments");
            let first = first.strip_prefix("error: ").unwrap_or(first);
            eprintln!("maibox: error: {first} (see maibox --help)");
            std::process::exit(exit::MAIBOX_FAILED);
        }
    };
    if !matches!(cli.cmd, Cmd::Exec(_) | Cmd::Oci(_) | Cmd::Serve { .. }) {
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
    let code = match dispatch(cli, &timeline, started) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("maibox: error: {e:#}");
            exit::MAIBOX_FAILED
        }
    };
    std::process::exit(code);
}

fn dispatch(cli: Cli, timeline: &Timeline, started: Instant) -> anyhow::Result<i32> {
    if cli.oci.hardened && !matches!(cli.cmd, Cmd::Oci(_)) {
        // Never ignored: a caller asking for it must not get less than it asked.
        anyhow::bail!(
            "--hardened is for the OCI runtime verbs (docs/oci.md); a Python run's \
             hardening is its trust level (--trust untrusted)"
        );
    }
    match cli.cmd {
        Cmd::Exec(a) => exec::exec(*a, timeline, started),
        Cmd::Doctor { json } => commands::doctor(json),
        Cmd::Audit { cmd } => commands::audit_cmd(cmd),
        Cmd::Seccomp {
            trust,
            config,
            json,
        } => commands::seccomp(trust, config, json),
        Cmd::Assess {
            script,
            json,
            fail_at,
            rules,
            config,
            with,
        } => commands::assess(script, json, fail_at, rules, config, &with),
        Cmd::Policy { trust, config } => commands::policy(trust, config),
        Cmd::Serve {
            socket,
            config,
            warm_mode,
        } => commands::serve(socket, config, warm_mode),
        // Logs its own errors (to --log, as the OCI callers expect).
        Cmd::Oci(verb) => Ok(maibox::oci::cli::main(&cli.oci, verb)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<std::ffi::OsString> {
        std::iter::once("maibox")
            .chain(line.split(' '))
            .map(Into::into)
            .collect()
    }

    #[test]
    fn exec_alone_parses_as_the_whole_tree_does() {
        for line in [
            "exec x.py",
            "exec --trust untrusted --json x.py",
            "exec --server --socket /tmp/s.sock --trust unknown x.py",
            "exec --server=auto -c print(1)",
            "exec --timeout 5s --memory 64MiB --cpus 0.5 --pids 8 x.py -- a --b -c",
            "exec --network allowlist --allow-raise --override why x.py",
            "exec --unsafe-disable-layer seccomp --with bandit --timings x.py",
            "exec x.py --root /tmp/r --debug",
            "exec -",
        ] {
            let fast = parse_exec(&words(line)).unwrap_or_else(|| panic!("{line}: not parsed"));
            let all = parse_all(words(line)).unwrap_or_else(|e| panic!("{line}: {e}"));
            assert_eq!(format!("{fast:?}"), format!("{all:?}"), "{line}");
        }
    }

    #[test]
    fn anything_exec_alone_cannot_parse_goes_to_the_whole_tree() {
        for line in [
            "exec --help",
            "exec --no-such-flag x.py",
            "exec --trust sorta x.py",
            "exec",
            "exec -c print(1) x.py",
            "exec --json --report-fd 3 x.py",
        ] {
            assert!(parse_exec(&words(line)).is_none(), "{line}");
            assert!(parse_all(words(line)).is_err(), "{line}");
        }
        // Not `exec` first: the whole tree, as before.
        assert!(parse_exec(&words("--debug exec x.py")).is_none());
        assert!(matches!(
            parse(words("assess x.py")).map(|c| c.cmd),
            Ok(Cmd::Assess { .. })
        ));
    }
}
