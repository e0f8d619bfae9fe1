//! `run`: `create` and `start` in one, then (unless `--detach`) wait for the
//! container, relay its pty, and delete it (unless `--keep`).

use nix::unistd::Pid;

use super::create::{create, CreateArgs, Created};
use super::delete::delete;
use super::start::start;
use crate::oci::cli::{log_debug, Global};
use crate::oci::error::{io_err, OciError};

/// Runs `run`; returns the container's exit code (128 + signal if killed).
pub fn run(g: &Global, a: &CreateArgs, detach: bool, keep: bool) -> Result<i32, OciError> {
    let Created {
        container,
        saved,
        console,
    } = create(g, a, !detach)?;
    drop(container);
    let pid = Pid::from_raw(saved.pid);
    if let Err(e) = start(g, &a.id) {
        let _ = delete(g, &a.id, true);
        return Err(e);
    }
    if detach {
        return Ok(0);
    }
    let relay = match console {
        Some(master) => Some(
            crate::engine::console::relay(master).map_err(io_err("relay the container's pty"))?,
        ),
        None => None,
    };
    let code = loop {
        match nix::sys::wait::waitpid(pid, None) {
            Ok(nix::sys::wait::WaitStatus::Exited(_, c)) => break c,
            Ok(nix::sys::wait::WaitStatus::Signaled(_, s, _)) => break 128 + s as i32,
            Ok(_) | Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(io_err("wait for the container")(e.into())),
        }
    };
    if let Some(r) = relay {
        r.finish();
    }
    // A strict runtime's seccomp kill leaves only the status; say what it means
    // (the kernel does not tell which call it was).
    if g.hardened && code == 128 + libc::SIGSYS {
        crate::oci::cli::log_warning(
            g,
            &format!(
                "container {} was killed by SIGSYS: it made a system call the strict runtime \
                 (--hardened) kills, one of the untrusted level's exploit-only calls or a \
                 foreign ABI (`maibox seccomp --trust untrusted` lists them)",
                a.id
            ),
        );
    }
    log_debug(g, &format!("container {} exited with {code}", a.id));
    if !keep {
        delete(g, &a.id, true)?;
    }
    Ok(code)
}
