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
/// They are global to the whole command line, so that `maibox --root R exec
/// ID ...` still parses as runc's exec, but only the OCI verbs' help shows them
/// (see [`scope_global_flags`]).
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "OCI runtime options (runc's, before the verb)")]
pub struct Global {
    /// Directory for container state.
    #[arg(long, global = true, default_value = state::DEFAULT_ROOT)]
    pub root: PathBuf,
    /// Where errors are logged (default: stderr only).
    #[arg(long, global = true)]
    pub log: Option<PathBuf>,
    /// Format of the --log lines.
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// Debug lines to --log (or stderr).
    #[arg(long, global = true)]
    pub debug: bool,
    /// Refused: maibox manages cgroupfs paths only.
    #[arg(long, global = true)]
    pub systemd_cgroup: bool,
    /// A strict runtime: the untrusted level's kernel hardening (seccomp kills,
    /// Landlock, an open-file cap, /proc masks) on top of any bundle (docs/oci.md).
    #[arg(long, global = true)]
    pub hardened: bool,
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

/// Hides [`Global`]'s flags from the help of every subcommand that is not an
/// OCI verb (`exec`, `audit show`, ...), where they do nothing. They stay
/// global, so they still parse anywhere: each such subcommand gets a hidden
/// copy of them, which clap then passes on to its own subcommands instead of
/// the shown one.
pub fn scope_global_flags(cmd: clap::Command) -> clap::Command {
    let hidden: Vec<clap::Arg> = cmd
        .get_arguments()
        .filter(|a| a.is_global_set())
        .map(|a| a.clone().hide(true))
        .collect();
    cmd.mut_subcommands(|sc| {
        if <Verb as Subcommand>::has_subcommand(sc.get_name()) {
            let name = match sc.get_name() {
                "oci-exec" => "exec",
                n => n,
            };
            let template = RUNC_HELP.replace("{verb}", name);
            sc.help_template(template)
        } else {
            hidden.iter().fold(sc, |sc, a| sc.arg(a.clone()))
        }
    })
}

/// The OCI verbs' help in runc's layout (urfave/cli's `NAME:`, `USAGE:`,
/// `OPTIONS:` sections, the verb's name and summary on the second line), which
/// runc's callers and tests read; maibox's own subcommands keep clap's.
/// `{verb}` is filled in here, the rest by clap.
const RUNC_HELP: &str = "NAME:\n   maibox {verb} - {about}\n\nUSAGE:\n   {usage}\n\n{all-args}";

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
    /// OCI: not supported by maibox (runc's CRIU checkpoint); fails with a clear error.
    Checkpoint(commands::checkpoint::CheckpointArgs),
    /// OCI: not supported by maibox (runc's CRIU restore); fails with a clear error.
    Restore(commands::checkpoint::RestoreArgs),
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

/// A warning line to stderr, and to `--log` when given (runc's
/// `level=warning`): the verb goes on.
pub(crate) fn log_warning(g: &Global, msg: &str) {
    eprintln!("maibox: warning: {msg}");
    if let Some(path) = &g.log {
        append_log(path, g.log_format, "warning", msg);
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
        Verb::Checkpoint(a) => commands::checkpoint::checkpoint(&a).map(|_| 0),
        Verb::Restore(a) => commands::checkpoint::restore(&a).map(|_| 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{CommandFactory, FromArgMatches, Parser};

    /// maibox's shape: runc's flags flattened at the top, the OCI verbs beside
    /// other subcommands, one with subcommands of its own.
    #[derive(Parser)]
    struct Top {
        #[command(flatten)]
        oci: Global,
        #[command(subcommand)]
        cmd: Cmd,
    }

    #[derive(clap::Subcommand)]
    #[allow(clippy::large_enum_variant)]
    enum Cmd {
        Other {
            #[command(subcommand)]
            sub: Option<Sub>,
        },
        #[command(flatten)]
        Oci(Verb),
    }

    #[derive(clap::Subcommand)]
    enum Sub {
        Show,
    }

    fn help(args: &[&str]) -> String {
        let e = scope_global_flags(Top::command())
            .try_get_matches_from(args)
            .expect_err("--help ends the parse");
        assert_eq!(e.kind(), clap::error::ErrorKind::DisplayHelp);
        e.to_string()
    }

    fn parse(args: &[&str]) -> Top {
        let mut m = scope_global_flags(Top::command())
            .try_get_matches_from(args)
            .unwrap();
        Top::from_arg_matches_mut(&mut m).unwrap()
    }

    #[test]
    fn runc_flags_show_only_in_the_oci_verbs_help_and_parse_everywhere() {
        let flags = [
            "--root ",
            "--log ",
            "--log-format ",
            "--debug",
            "--systemd-cgroup",
        ];
        for args in [
            &["t", "create", "--help"][..],
            &["t", "--help"],
            &["t", "kill", "--help"],
        ] {
            let h = help(args);
            for f in flags {
                assert!(h.contains(f), "{args:?} lacks {f}: {h}");
            }
        }
        for args in [
            &["t", "other", "--help"][..],
            &["t", "other", "show", "--help"],
        ] {
            let h = help(args);
            for f in flags {
                assert!(!h.contains(f), "{args:?} shows {f}: {h}");
            }
        }
        // Control: without the scoping, the other subcommands show them too.
        let e = Top::command()
            .try_get_matches_from(["t", "other", "--help"])
            .err()
            .unwrap();
        assert!(e.to_string().contains("--root "), "{e}");
        // Still accepted before any verb, and after one (as before).
        let t = parse(&["t", "--root", "/r", "--log-format", "json", "other", "show"]);
        assert_eq!(t.oci.root, Path::new("/r"));
        assert_eq!(t.oci.log_format, LogFormat::Json);
        assert!(matches!(
            t.cmd,
            Cmd::Other {
                sub: Some(Sub::Show)
            }
        ));
        let t = parse(&["t", "other", "show", "--debug", "--root", "/s"]);
        assert!(t.oci.debug);
        assert_eq!(t.oci.root, Path::new("/s"));
        let t = parse(&[
            "t", "--root", "/r", "--log", "/l", "create", "--bundle", "/b", "c1",
        ]);
        assert_eq!(t.oci.log.as_deref(), Some(Path::new("/l")));
        assert!(matches!(t.cmd, Cmd::Oci(Verb::Create(ref a)) if a.id == "c1"));
    }
}
