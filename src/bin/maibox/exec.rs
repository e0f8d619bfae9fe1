//! `maibox exec`: the flags become a [`Sandbox`]; the run goes to this process's stdio;
//! what maibox has to say (notices, errors, violations, timings, the JSON report) is
//! printed here.

use crate::args::*;
use anyhow::Context;
use clap::Args;
use maibox::config::{Backend, Config, NetworkMode, TrustLevel};
use maibox::session::{read_code, Error, Source};
use maibox::units::{ByteSize, Seconds};
use maibox::{Io, Notice, Run, Sample, Sandbox, Sink, Stdin, Timeline};
use std::io::Write;
use std::os::fd::{AsFd, FromRawFd, OwnedFd};
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct ExecArgs {
    /// Trust level: untrusted, unknown or trusted.
    #[arg(long, value_parser = parse_trust)]
    pub trust: Option<TrustLevel>,
    /// Configuration file (default: $MAIBOX_CONFIG, /etc/maibox/sandbox.yaml, built-in).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Print a JSON report on stdout after the run.
    #[arg(long)]
    pub json: bool,
    /// Wall-clock limit, e.g. 10s or 2m (at most the trust level's limit unless raised in the config).
    #[arg(long, value_parser = parse_timeout, allow_hyphen_values = true)]
    pub timeout: Option<Seconds>,
    /// CPU cores, e.g. 0.5 (at most the trust level's, unless --allow-raise).
    #[arg(long, value_parser = parse_cpus, allow_hyphen_values = true)]
    pub cpus: Option<f64>,
    /// Memory, e.g. 128MiB (at most the trust level's, unless --allow-raise).
    #[arg(long, value_parser = parse_size)]
    pub memory: Option<ByteSize>,
    /// Processes and threads (at most the trust level's, unless --allow-raise).
    #[arg(long, value_parser = parse_pids, allow_hyphen_values = true)]
    pub pids: Option<u64>,
    /// Network: none (only lo) or allowlist (only the filtering proxy; see `network:` in the config).
    #[arg(long, value_parser = parse_network)]
    pub network: Option<NetworkMode>,
    /// Who isolates the code: native (maibox's own engine) or docker (a Docker engine
    /// at $DOCKER_HOST; see `docker:` in the config).
    #[arg(long, value_enum)]
    backend: Option<Backend>,
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
    pub allow_raise: bool,
    /// Stream usage samples as JSON lines to FILE (or - for stderr) while the code runs.
    #[arg(long, value_name = "FILE")]
    pub stats: Option<PathBuf>,
    /// Root image directory: run on an overlay of it instead of the host's /usr.
    #[arg(long)]
    rootfs: Option<PathBuf>,
    /// Python interpreter to use (an ELF binary; default from the config).
    #[arg(long)]
    python: Option<PathBuf>,
    /// Cap on stdout+stderr, e.g. 1MiB.
    #[arg(long, value_parser = parse_size)]
    pub output_limit: Option<ByteSize>,
    /// Print where the run's time went (assessment, each sandbox setup step, the code,
    /// the whole command) to stderr.
    #[arg(long)]
    pub timings: bool,
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
    pub override_reason: Option<String>,
    /// Also run an external analyser and merge its findings into the assessment's verdict
    /// (bandit: $MAIBOX_BANDIT, else `bandit` or `python3 -m bandit` on PATH).
    #[arg(long = "with", value_enum, value_name = "TOOL")]
    with: Vec<WithTool>,
    /// Run on a `maibox serve` server (warm sandboxes): `--server` needs one,
    /// `--server=auto` runs cold when none answers (default: server.client_auto).
    #[arg(long, value_name = "WHEN", num_args = 0..=1, default_missing_value = "yes", value_parser = ["yes", "auto", "no"])]
    server: Option<String>,
    /// The server's socket (default: /run/maibox/maibox.sock as root,
    /// $XDG_RUNTIME_DIR/maibox.sock otherwise).
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,
    /// For programs that wrap maibox: the JSON report (with the notices) goes to this
    /// open descriptor, and so does an error as {"error": {...}}; stdout and stderr
    /// then carry only the code's output.
    #[arg(long, value_name = "FD", value_parser = parse_report_fd, conflicts_with_all = ["json", "server"])]
    report_fd: Option<i32>,
    /// Run CODE instead of a file.
    #[arg(short = 'c', value_name = "CODE", conflicts_with = "script")]
    code: Option<String>,
    /// The script to run, or - to read it from stdin.
    #[arg(required_unless_present = "code")]
    script: Option<PathBuf>,
    /// Arguments for the script (after --).
    #[arg(last = true)]
    pub args: Vec<String>,
}

/// A descriptor the caller opened for the report: 3 or above, and open.
fn parse_report_fd(s: &str) -> Result<i32, String> {
    let fd: i32 = s
        .parse()
        .map_err(|_| format!("{s:?} is not a descriptor number"))?;
    if fd < 3 {
        return Err("give a descriptor of 3 or above (0-2 carry the code's stdio)".into());
    }
    nix::fcntl::fcntl(fd, nix::fcntl::FcntlArg::F_GETFD).map_err(|_| {
        format!("descriptor {fd} is not open; open it for maibox (e.g. 3>report.json)")
    })?;
    Ok(fd)
}

impl ExecArgs {
    /// The code, and whether it comes from stdin (which leaves the code's stdin empty).
    pub fn code(&self) -> anyhow::Result<(maibox::Code, bool)> {
        let source = match (&self.code, &self.script) {
            (Some(c), _) => Source::Inline(c),
            (None, Some(p)) if p.as_os_str() == "-" => Source::Stdin,
            (None, Some(p)) => Source::File(p),
            (None, None) => anyhow::bail!("give a script, - for stdin, or -c CODE"),
        };
        let from_stdin = matches!(source, Source::Stdin);
        Ok((read_code(source)?, from_stdin))
    }

    /// A flag that only a cold run can honour, if one is given.
    pub fn cold_only_flag(&self) -> Option<&'static str> {
        [
            (self.backend.is_some(), "--backend"),
            (self.image.is_some(), "--image"),
            (self.pull, "--pull"),
            (self.docker_runtime.is_some(), "--docker-runtime"),
            (self.rootfs.is_some(), "--rootfs"),
            (self.python.is_some(), "--python"),
            (self.audit_syscalls, "--audit-syscalls"),
            (
                !self.unsafe_disable_layer.is_empty(),
                "--unsafe-disable-layer",
            ),
            (!self.with.is_empty(), "--with"),
        ]
        .into_iter()
        .find_map(|(given, flag)| given.then_some(flag))
    }

    /// Whether to go to a server: `--server`, or the configuration's default.
    fn served(&self, cfg: &Config) -> Option<crate::served::Mode> {
        match self.server.as_deref() {
            Some(_) => self.served_by_flag(),
            None if cfg.server.client_auto && self.cold_only_flag().is_none() => {
                Some(crate::served::Mode::Auto)
            }
            None => None,
        }
    }

    /// What `--server` asks for, when it is given (`--server=no` asks for none).
    fn served_by_flag(&self) -> Option<crate::served::Mode> {
        use crate::served::Mode;
        match self.server.as_deref() {
            Some("yes") => Some(Mode::Required),
            Some("auto") => Some(Mode::Auto),
            _ => None,
        }
    }

    /// The sandbox these flags describe.
    pub fn sandbox(&self, cfg: Config) -> Sandbox {
        let mut s = Sandbox::new(cfg)
            .allow_raise(self.allow_raise)
            .audit_syscalls(self.audit_syscalls)
            .with_bandit(self.with.contains(&WithTool::Bandit))
            .docker(self.image.clone(), self.pull, self.docker_runtime.clone())
            .defer_teardown(true);
        if let Some(t) = self.trust {
            s = s.trust(t);
        }
        if let Some(v) = self.timeout {
            s = s.timeout(v.0);
        }
        if let Some(v) = self.cpus {
            s = s.cpus(v);
        }
        if let Some(v) = self.memory {
            s = s.memory(v.0);
        }
        if let Some(v) = self.pids {
            s = s.pids(v);
        }
        if let Some(v) = self.network {
            s = s.network(v);
        }
        if let Some(v) = self.backend {
            s = s.backend(v);
        }
        if let Some(v) = self.output_limit {
            s = s.output_limit(v.0);
        }
        if let Some(v) = &self.rootfs {
            s = s.rootfs(v);
        }
        if let Some(v) = &self.python {
            s = s.interpreter(v);
        }
        if let Some(v) = &self.override_reason {
            s = s.override_reason(v);
        }
        for l in &self.unsafe_disable_layer {
            s = s.unsafe_disable_layer(*l);
        }
        s
    }
}

/// This process's standard streams, held for as long as a run borrows them.
pub struct OwnStdio(std::io::Stdin, std::io::Stdout, std::io::Stderr);

impl OwnStdio {
    pub fn new() -> Self {
        OwnStdio(std::io::stdin(), std::io::stdout(), std::io::stderr())
    }

    /// A run's side as a command line has it: the code writes to this process's
    /// stdout and stderr and reads its stdin (unless the code itself came from stdin),
    /// and the signals sent to this process reach the code.
    pub fn io(&self, code_from_stdin: bool) -> Io<'_> {
        Io {
            stdin: if code_from_stdin {
                Stdin::Null
            } else {
                Stdin::Fd(self.0.as_fd())
            },
            stdout: Sink::Fd(self.1.as_fd()),
            stderr: Sink::Fd(self.2.as_fd()),
            samples: None,
            notices: None,
            forward_signals: true,
            cancel: None,
        }
    }
}

pub fn exec(a: ExecArgs, timeline: &Timeline, started: std::time::Instant) -> anyhow::Result<i32> {
    match a.report_fd {
        // SAFETY: the caller handed this descriptor to us (checked open at parse time),
        // and nothing else here uses it.
        Some(fd) => crate::report_fd::exec(a, unsafe { OwnedFd::from_raw_fd(fd) }, timeline),
        None => exec_printed(a, timeline, started),
    }
}

fn exec_printed(
    a: ExecArgs,
    timeline: &Timeline,
    started: std::time::Instant,
) -> anyhow::Result<i32> {
    let (code, from_stdin) = a.code()?;
    // `--server` leaves nothing for the configuration to decide on this side (the
    // server's levels do) but the socket: parsing it (~0.3 ms) waits for a cold run.
    let flagged = match (a.served_by_flag(), &a.socket) {
        (Some(mode), Some(p)) => Some((mode, p.clone())),
        (Some(mode), None) => Some((
            mode,
            Config::server_socket(a.config.as_deref()).map_err(anyhow::Error::msg)?,
        )),
        (None, _) => None,
    };
    if let Some((mode, socket)) = &flagged {
        if let Some(rc) = crate::served::exec(&a, socket, &code, from_stdin, *mode, started)? {
            return Ok(rc);
        }
    }
    let (cfg, _origin) = Config::load(a.config.as_deref())?;
    timeline.mark("config");
    if let (None, Some(mode)) = (&flagged, a.served(&cfg)) {
        let socket = match &a.socket {
            Some(p) => p.clone(),
            None => cfg.server.socket_path().map_err(anyhow::Error::msg)?,
        };
        if let Some(rc) = crate::served::exec(&a, &socket, &code, from_stdin, mode, started)? {
            return Ok(rc);
        }
    }
    let sandbox = a.sandbox(cfg);
    let mut stats = match &a.stats {
        None => None,
        Some(p) if p.as_os_str() == "-" => {
            Some(Box::new(std::io::stderr()) as Box<dyn Write + Send>)
        }
        Some(p) => Some(Box::new(
            std::fs::File::create(p).with_context(|| format!("--stats {}", p.display()))?,
        ) as Box<dyn Write + Send>),
    };
    let mut on_sample = |s: &Sample| {
        if let (Some(w), Ok(line)) = (stats.as_mut(), serde_json::to_string(s)) {
            let _ = writeln!(w, "{line}");
        }
    };
    let mut on_notice = |n: &Notice| eprintln!("maibox: {n}");
    let own = OwnStdio::new();
    let mut io = own.io(from_stdin);
    io.samples = a.stats.is_some().then_some(&mut on_sample as _);
    io.notices = Some(&mut on_notice);
    let r = match sandbox.run_timed(&code, &a.args, io, timeline) {
        Ok(r) => r,
        Err(Error::Refused(r)) => anyhow::bail!(
            "refused: the assessment of {o} says {} (this level refuses at {}): {}. Review it with `maibox assess {o}`; to run it anyway, add --override \"REASON\"",
            r.verdict, r.refuse_at, r.worst, o = r.origin
        ),
        Err(e) => return Err(e.into()),
    };
    report(&a, &r, timeline, started)?;
    Ok(r.report.exit_code)
}

/// What maibox says after the run: errors, denials, violations, timings, the report.
fn report(
    a: &ExecArgs,
    r: &Run,
    timeline: &Timeline,
    started: std::time::Instant,
) -> anyhow::Result<()> {
    use maibox::Ending;
    match &r.report.ending {
        Ending::SetupFailed(e) => eprintln!("maibox: error: {e}"),
        Ending::ExecFailed { message, .. } => eprintln!(
            "maibox: error: cannot execute {} in the sandbox: {message}",
            r.report.interpreter
        ),
        _ => {}
    }
    if r.report.seccomp.audit_denials {
        let denied: Vec<String> = r
            .report
            .seccomp
            .denied
            .iter()
            .map(|d| format!("{} x{}", d.syscall, d.count))
            .collect();
        let denied = if denied.is_empty() {
            "nothing".to_string()
        } else {
            denied.join(", ")
        };
        eprintln!("maibox: seccomp denied (EPERM): {denied}");
    }
    for v in &r.report.violations {
        eprintln!("maibox: violation: {}", serde_json::to_string(v)?);
    }
    if a.timings {
        eprintln!(
            "maibox: timings: {}",
            timings_line(&r.report, timeline, started.elapsed())
        );
    }
    if a.json {
        let mut out = std::io::stdout().lock();
        if !r.stdout_ended_with_newline {
            writeln!(out)?;
        }
        writeln!(out, "{}", serde_json::to_string(&r.report)?)?;
    }
    Ok(())
}

/// `--timings`: one line, in the order things happen.
fn timings_line(r: &maibox::Report, timeline: &Timeline, total: std::time::Duration) -> String {
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
    let phases: Vec<String> = timeline
        .phases()
        .iter()
        .map(|(name, d)| format!("{name} {:.2}", d.as_secs_f64() * 1e3))
        .collect();
    parts.push(format!("supervisor phases ms: {}", phases.join(", ")));
    parts.join("; ")
}
