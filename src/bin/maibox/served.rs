//! `maibox exec --server`: the same command line, output, exit codes and `--json`
//! report as a cold run, served by `maibox serve`.

use crate::exec::ExecArgs;
use maibox::serve::client::{self, ClientError, Event};
use maibox::serve::protocol::{Request, Size, StdinSpec, VERSION};
use maibox::Code;
use std::io::Write;

/// Whether to use a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A server must answer.
    Required,
    /// Try one; without it, run cold.
    Auto,
}

/// Runs on the server; `Ok(None)` when none answers and `mode` allows a cold run.
pub fn exec(
    a: &ExecArgs,
    socket: &std::path::Path,
    code: &Code,
    from_stdin: bool,
    mode: Mode,
    started: std::time::Instant,
) -> anyhow::Result<Option<i32>> {
    if let Some(flag) = a.cold_only_flag() {
        anyhow::bail!("{flag} is not available with --server (the server's levels decide it); drop it, or run without --server");
    }
    let stream = match client::connect(socket) {
        Ok(s) => s,
        Err(_) if mode == Mode::Auto => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    // Stdin that can only be empty is not streamed: the code gets /dev/null either
    // way, and no thread on either side waits for an end of input.
    let stream_stdin = !from_stdin && !stdin_is_null();
    let req = request(a, code, stream_stdin);
    let stdin: Option<Box<dyn std::io::Read + Send>> =
        stream_stdin.then(|| Box::new(std::io::stdin()) as _);
    let mut out = std::io::stdout();
    let mut err = std::io::stderr();
    let mut on_event = |e: Event| match e {
        Event::Stdout(d) => {
            let _ = out.write_all(d).and_then(|_| out.flush());
        }
        Event::Stderr(d) => {
            let _ = err.write_all(d).and_then(|_| err.flush());
        }
        Event::Notice(n) => eprintln!("maibox: {n}"),
        Event::Sample(s) => eprintln!("{s}"),
    };
    let report = match client::run(stream, socket, &req, stdin, &mut on_event) {
        Ok(r) => r,
        Err(ClientError::Failed(f)) if f.kind == "refused" => {
            anyhow::bail!("{} (add --override \"REASON\")", f.message)
        }
        Err(e) => return Err(e.into()),
    };
    print_end(a, &report, started)?;
    Ok(Some(report["exit_code"].as_i64().unwrap_or(125) as i32))
}

/// Whether this process's stdin is /dev/null (or closed).
fn stdin_is_null() -> bool {
    use nix::sys::stat::{fstat, major, minor, SFlag};
    use std::os::fd::AsRawFd;
    match fstat(std::io::stdin().as_raw_fd()) {
        Ok(st) => {
            let chr = SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT == SFlag::S_IFCHR;
            chr && major(st.st_rdev) == 1 && minor(st.st_rdev) == 3
        }
        Err(e) => e == nix::errno::Errno::EBADF,
    }
}

fn request(a: &ExecArgs, code: &Code, stream_stdin: bool) -> Request {
    Request {
        v: VERSION,
        code: String::from_utf8_lossy(&code.bytes).into_owned(),
        origin: Some(code.origin.clone()),
        // The server cannot resolve a relative name: its directory is not ours.
        path: Code::names_file(&code.origin)
            .then(|| std::fs::canonicalize(&code.origin).ok())
            .flatten()
            .map(|p| p.display().to_string()),
        args: a.args.clone(),
        trust: a.trust,
        timeout_s: a.timeout.map(|t| t.0.as_secs_f64()),
        memory: a.memory.map(|m| Size::Bytes(m.0)),
        cpus: a.cpus,
        pids: a.pids,
        output_limit: a.output_limit.map(|m| Size::Bytes(m.0)),
        allow_raise: a.allow_raise,
        network: a.network,
        override_reason: a.override_reason.clone(),
        stream: true,
        samples: a.stats.is_some(),
        stdin: stream_stdin.then(|| StdinSpec::Mode("stream".into())),
    }
}

/// What `exec` prints after a run, from the report the server sent.
fn print_end(
    a: &ExecArgs,
    report: &serde_json::Value,
    started: std::time::Instant,
) -> anyhow::Result<()> {
    let ending = &report["ending"];
    if let Some(e) = ending.get("setup_failed") {
        eprintln!(
            "maibox: error: sandbox setup failed at step `{}`: {}",
            e["step"].as_str().unwrap_or("?"),
            e["message"].as_str().unwrap_or("")
        );
    }
    if let Some(e) = ending.get("exec_failed") {
        eprintln!(
            "maibox: error: cannot execute {} in the sandbox: {}",
            report["interpreter"].as_str().unwrap_or("?"),
            e["message"].as_str().unwrap_or("")
        );
    }
    for v in report["violations"].as_array().into_iter().flatten() {
        eprintln!("maibox: violation: {v}");
    }
    if a.timings {
        let s = &report["server"];
        eprintln!(
            "maibox: timings: whole command {:.2} ms; server {:.2} ms (queue {:.2}, pool {:.2}, warm {}); code {:.2} ms",
            started.elapsed().as_secs_f64() * 1e3,
            s["total_ms"].as_f64().unwrap_or(0.0),
            s["queue_ms"].as_f64().unwrap_or(0.0),
            s["pool_wait_ms"].as_f64().unwrap_or(0.0),
            s["warm"],
            report["usage"]["wall_time_s"].as_f64().unwrap_or(0.0) * 1e3
        );
    }
    if a.json {
        let mut out = std::io::stdout().lock();
        if report["stdout_ended_with_newline"] == false {
            writeln!(out)?;
        }
        writeln!(out, "{report}")?;
    }
    Ok(())
}
