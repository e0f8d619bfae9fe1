//! The runc-compatible command line: the global flags ([`Global`]), the verbs
//! ([`Verb`], each run by its file in [`super::commands`]) and the dispatch.
//! Errors are written to `--log` (JSON lines with `--log-format json`, as
//! containerd's shim reads them) and to stderr, with a non-zero exit.

use super::bundle::Waivable;
use super::commands::{self, create::CreateArgs};
use super::error::OciError;
use super::state;
use clap::{Args, Subcommand, ValueEnum};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The runtime-spec version of the states maibox reports (`maibox -v` prints it).
pub use super::state::OCI_VERSION;

/// runc's global flags; accepted before the verb (where Docker puts them).
#[derive(Args, Debug, Clone)]
pub struct Global {
    /// Directory for container state.
    #[arg(long, global = true, default_value = state::DEFAULT_ROOT)]
    pub root: PathBuf,
    /// Where errors are logged (default: stderr only).
    #[arg(long, global = true)]
    pub log: Option<PathBuf>,
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    #[arg(long, global = true)]
    pub debug: bool,
    /// Refused: maibox manages cgroupfs paths only.
    #[arg(long, global = true)]
    pub systemd_cgroup: bool,
    /// Let a spec run although maibox does not enforce these of its fields yet
    /// (comma-separated). The container is weaker than its spec says.
    #[arg(
        long = "unsafe-allow-unenforced",
        global = true,
        value_enum,
        value_delimiter = ',',
        hide = true
    )]
    pub unenforced: Vec<Waivable>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Subcommand, Debug)]
pub enum Verb {
    /// OCI: create a container from a bundle and leave it waiting for `start`.
    Create(CreateArgs),
    /// OCI: start a created container.
    Start { id: String },
    /// OCI: print a container's state as JSON.
    State { id: String },
    /// OCI: send a signal (name or number, default TERM) to a container.
    Kill {
        /// Signal every process of the container, not only its init.
        #[arg(long, short = 'a')]
        all: bool,
        id: String,
        signal: Option<String>,
    },
    /// OCI: delete a container's state, killing it if --force.
    Delete {
        #[arg(long, short = 'f')]
        force: bool,
        id: String,
    },
    /// OCI: create and start a container, and wait for it.
    Run {
        #[command(flatten)]
        create: CreateArgs,
        /// Return after the start instead of waiting.
        #[arg(long, short = 'd')]
        detach: bool,
        /// Keep the container's state after it exits (delete it later).
        #[arg(long)]
        keep: bool,
    },
    /// OCI: list containers.
    List {
        #[arg(long, short = 'f', value_enum, default_value_t = ListFormat::Table)]
        format: ListFormat,
        #[arg(long, short = 'q')]
        quiet: bool,
    },
    /// OCI: list the host pids of a container's processes (`docker top`).
    Ps {
        #[arg(long, short = 'f', value_enum, default_value_t = ListFormat::Table)]
        format: ListFormat,
        id: String,
        /// Options for ps(1) in the table form (default -ef), as runc takes them.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        ps_args: Vec<String>,
    },
    /// OCI: change a running container's limits, from runc's flags or a
    /// LinuxResources JSON (`-r FILE`, `-r -` for stdin, as `docker update` sends it).
    Update(commands::update::UpdateArgs),
    /// OCI: print what this runtime implements (runtime-spec features.md), as JSON.
    Features,
    /// OCI: print a container's resource usage and OOM notices as JSON lines
    /// (every --interval, or once with --stats).
    Events(commands::events::EventsArgs),
    /// OCI: freeze every process of a container.
    Pause { id: String },
    /// OCI: thaw a paused container.
    Resume { id: String },
    /// OCI: run a process in a running container (`exec --process FILE ID`; the
    /// `maibox exec` of Python code is told apart by these flags).
    #[command(name = "oci-exec", hide = true)]
    OciExec(commands::exec::ExecArgs),
    /// OCI: write a template config.json.
    Spec {
        #[arg(long)]
        rootless: bool,
        /// Directory to write config.json into (default: the current directory).
        #[arg(long, short = 'b')]
        bundle: Option<PathBuf>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ListFormat {
    Table,
    Json,
}

/// Runs one verb; returns the process exit code. Errors are logged here.
pub fn main(g: &Global, verb: Verb) -> i32 {
    // runc's exec exits 255 when the process could not be started (its own
    // status otherwise); the other verbs exit 1 on error.
    let failure = if matches!(verb, Verb::OciExec(_)) {
        255
    } else {
        1
    };
    let r = if g.systemd_cgroup {
        Err(OciError::Refused(
            "--systemd-cgroup is not supported: configure the caller for the cgroupfs driver"
                .into(),
        ))
    } else {
        dispatch(g, verb)
    };
    match r {
        Ok(code) => code,
        Err(e) => {
            log_error(g, &e.to_string());
            failure
        }
    }
}

/// An error line to stderr, and to `--log` when given.
pub(crate) fn log_error(g: &Global, msg: &str) {
    eprintln!("maibox: error: {msg}");
    if let Some(path) = &g.log {
        append_log(path, g.log_format, "error", msg);
    }
}

/// With `--debug`, a debug line to `--log`, or else to stderr (as runc does).
pub(crate) fn log_debug(g: &Global, msg: &str) {
    if !g.debug {
        return;
    }
    match &g.log {
        Some(path) => append_log(path, g.log_format, "debug", msg),
        None => eprintln!("{}", log_line(LogFormat::Text, "debug", msg)),
    }
}

fn log_line(format: LogFormat, level: &str, msg: &str) -> String {
    match format {
        LogFormat::Json => serde_json::json!({
            "level": level,
            "msg": msg,
            "time": state::now_rfc3339(),
        })
        .to_string(),
        LogFormat::Text => format!(
            "time=\"{}\" level={level} msg={msg:?}",
            state::now_rfc3339()
        ),
    }
}

fn append_log(path: &Path, format: LogFormat, level: &str, msg: &str) {
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = writeln!(f, "{}", log_line(format, level, msg));
    }
}

fn dispatch(g: &Global, verb: Verb) -> Result<i32, OciError> {
    log_debug(
        g,
        &format!(
            "maibox {} (spec {}), root {}",
            env!("CARGO_PKG_VERSION"),
            OCI_VERSION,
            g.root.display()
        ),
    );
    match verb {
        Verb::Create(a) => commands::create::create(g, &a, false).map(|_| 0),
        Verb::Start { id } => commands::start::start(g, &id).map(|_| 0),
        Verb::State { id } => commands::state::state(g, &id).map(|_| 0),
        Verb::Kill { all, id, signal } => {
            let sig = commands::kill::parse_signal(signal.as_deref().unwrap_or("TERM"))?;
            commands::kill::kill(g, &id, sig, all).map(|_| 0)
        }
        Verb::Delete { force, id } => commands::delete::delete(g, &id, force).map(|_| 0),
        Verb::Run {
            create: a,
            detach,
            keep,
        } => commands::run::run(g, &a, detach, keep),
        Verb::List { format, quiet } => {
            commands::list::list(g, format, quiet);
            Ok(0)
        }
        Verb::Spec { rootless, bundle } => {
            commands::spec::spec(rootless, bundle.as_deref()).map(|_| 0)
        }
        Verb::OciExec(a) => commands::exec::exec(g, &a),
        Verb::Update(a) => commands::update::update(g, &a).map(|_| 0),
        Verb::Features => {
            println!(
                "{}",
                serde_json::to_string_pretty(&commands::features::features()).unwrap_or_default()
            );
            Ok(0)
        }
        Verb::Events(a) => commands::events::events(g, &a),
        Verb::Pause { id } => commands::pause::pause(g, &id, true).map(|_| 0),
        Verb::Resume { id } => commands::pause::pause(g, &id, false).map(|_| 0),
        Verb::Ps {
            format,
            id,
            ps_args,
        } => commands::ps::ps(g, format, &id, &ps_args).map(|_| 0),
    }
}
