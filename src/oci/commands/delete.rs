//! `delete`: removes a container's state and groups (killing it first with
//! `--force`) and runs the `poststop` hooks.

use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use nix::unistd::Pid;

use crate::cgroup::freezer;
use crate::engine::oci::hooks;
use crate::oci::cli::{log_error, Global};
use crate::oci::error::OciError;
use crate::oci::pids::container_pids;
use crate::oci::state::{self, state_json, Container, Saved, StateError, Status};

/// Waits until the init has ended (a zombie counts: its parent reaps it).
fn wait_gone(s: &Saved, limit: Duration) -> bool {
    let until = Instant::now() + limit;
    while state::alive(s.pid, s.start_time) {
        if Instant::now() >= until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    true
}

/// Runs `delete`.
pub fn delete(g: &Global, id: &str, force: bool) -> Result<(), OciError> {
    let c = match Container::open(&g.root, id, true) {
        Ok(c) => c,
        Err(StateError::NotFound(_)) if force => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    let s = c.load()?;
    match c.status(&s) {
        status @ (Status::Running | Status::Paused) if !force => {
            return Err(OciError::Refused(format!(
                "cannot delete container {id}: it is {status} (stop it or use --force)"
            )))
        }
        Status::Stopped => {}
        // A created container never ran its process: deleting it is always allowed.
        Status::Created | Status::Running | Status::Paused => {
            for p in container_pids(&s) {
                let _ = nix::sys::signal::kill(Pid::from_raw(p), Signal::SIGKILL);
            }
            if freezer::frozen(&s.cgroup_paths) {
                let _ = freezer::set_frozen(&s.cgroup_paths, false);
            }
            if !wait_gone(&s, Duration::from_secs(5)) {
                return Err(OciError::Refused(format!(
                    "container {id}: init {} did not die after SIGKILL",
                    s.pid
                )));
            }
        }
    }
    let st = state_json(&s, Status::Stopped);
    if let Err(e) = crate::cgroup::remove_dirs(&s.cgroup_paths) {
        log_error(g, &format!("container {id}: {e}"));
    }
    c.remove()?;
    if let Err(e) = hooks::run(s.hooks.as_ref(), "poststop", &st) {
        log_error(g, &e.to_string());
    }
    Ok(())
}
