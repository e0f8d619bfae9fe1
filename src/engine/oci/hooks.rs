//! OCI hooks: host programs run at points of the container's life with its state
//! on stdin (Docker's `libnetwork-setkey` prestart hook is one).

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[derive(Debug, thiserror::Error)]
pub enum HookError {
    #[error("{stage}: error running hook {path}: {what}")]
    Failed {
        stage: String,
        path: String,
        what: String,
    },
}

#[derive(Debug, Clone, serde::Deserialize)]
struct Hook {
    path: String,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: Vec<String>,
    timeout: Option<u64>,
}

/// Runs the hooks of `stage` (e.g. "prestart") from the spec's `hooks` object in
/// order; the first failure stops the rest.
pub fn run(
    hooks: Option<&serde_json::Value>,
    stage: &str,
    state: &serde_json::Value,
) -> Result<(), HookError> {
    let Some(list) = hooks.and_then(|h| h.get(stage)) else {
        return Ok(());
    };
    let list: Vec<Hook> = serde_json::from_value(list.clone()).map_err(|e| HookError::Failed {
        stage: stage.into(),
        path: "?".into(),
        what: format!("invalid hook list: {e}"),
    })?;
    let input = serde_json::to_vec(state).unwrap_or_default();
    for h in &list {
        run_one(stage, h, &input)?;
    }
    Ok(())
}

fn run_one(stage: &str, h: &Hook, input: &[u8]) -> Result<(), HookError> {
    let err = |what: String| HookError::Failed {
        stage: stage.into(),
        path: h.path.clone(),
        what,
    };
    let mut c = Command::new(&h.path);
    if let Some((a0, rest)) = h.args.split_first() {
        c.arg0(a0).args(rest);
    }
    c.env_clear();
    for e in &h.env {
        if let Some((k, v)) = e.split_once('=') {
            c.env(k, v);
        }
    }
    let mut child = c
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| err(format!("cannot start: {e}")))?;
    if let Some(mut w) = child.stdin.take() {
        // A hook that does not read its input may close stdin early: not an error.
        let _ = w.write_all(input);
    }
    let deadline = h
        .timeout
        .filter(|t| *t > 0)
        .map(|t| Instant::now() + Duration::from_secs(t));
    loop {
        match child.try_wait() {
            Ok(Some(st)) => {
                if st.success() {
                    return Ok(());
                }
                let mut msg = String::new();
                if let Some(mut e) = child.stderr.take() {
                    use std::io::Read;
                    let _ = e.read_to_string(&mut msg);
                }
                let why = describe(st);
                let msg = msg.trim();
                return Err(err(if msg.is_empty() {
                    why
                } else {
                    format!("{why}: {msg}")
                }));
            }
            Ok(None) => {}
            Err(e) => return Err(err(format!("wait: {e}"))),
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            let _ = child.kill();
            let _ = child.wait();
            return Err(err(format!("timed out after {}s", h.timeout.unwrap_or(0))));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// How a hook ended, in words: "exit status 3", "killed by SIGSYS (bad system
/// call)" (a seccomp filter's kill reads as what it is).
fn describe(st: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (st.code(), st.signal()) {
        (Some(c), _) => format!("exit status {c}"),
        (None, Some(sig)) => {
            let name = nix::sys::signal::Signal::try_from(sig)
                .map_or_else(|_| format!("signal {sig}"), |s| s.as_str().to_string());
            // SAFETY: strsignal returns a static or thread-local C string.
            let text = unsafe { std::ffi::CStr::from_ptr(libc::strsignal(sig)) }
                .to_string_lossy()
                .to_lowercase();
            format!("killed by {name} ({text})")
        }
        (None, None) => st.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_say_how_the_hook_ended() {
        let state = serde_json::json!({});
        let hooks =
            |args: &[&str]| serde_json::json!({"poststart": [{"path": "/bin/sh", "args": args}]});
        let e = run(
            Some(&hooks(&["sh", "-c", "echo oops >&2; exit 3"])),
            "poststart",
            &state,
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            e,
            "poststart: error running hook /bin/sh: exit status 3: oops"
        );
        let e = run(
            Some(&hooks(&["sh", "-c", "kill -SYS $$"])),
            "poststart",
            &state,
        )
        .unwrap_err()
        .to_string();
        assert!(e.ends_with("killed by SIGSYS (bad system call)"), "{e}");
        assert!(run(Some(&hooks(&["sh", "-c", "true"])), "poststart", &state).is_ok());
    }
}
