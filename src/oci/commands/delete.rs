//! `delete`: removes a container's state and groups (killing it first with
//! `--force`) and runs the `poststop` hooks.

use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use nix::unistd::Pid;

use crate::cgroup::freezer;
use crate::engine::oci::hooks;
use crate::oci::cli::{log_debug, log_error, Global};
use crate::oci::error::OciError;
use crate::oci::pids::{cgroup_pids, container_pids, processes};
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

/// Who else is in `s`'s cgroup (joined while it held processes: see
/// `create`): the other live containers under the same root, and, for a
/// container with its own PID namespace, processes of another namespace (a
/// container under another `--root`, or not one of maibox's). runc 1.1 kills
/// by cgroup only a container without its own PID namespace, for the same
/// reason.
fn sharing_the_group(g: &Global, s: &Saved) -> Vec<String> {
    let Some(ours) = s.cgroup_paths.first() else {
        return Vec::new();
    };
    let mut others: Vec<String> = state::list(&g.root)
        .into_iter()
        .filter(|id| *id != s.id)
        .filter(|id| {
            state::peek(&g.root, id).is_some_and(|o| {
                o.cgroup_paths.first() == Some(ours) && state::alive(o.pid, o.start_time)
            })
        })
        .collect();
    if let Some(own) = &s.pid_ns_id {
        let foreign: Vec<String> = cgroup_pids(s)
            .into_iter()
            .filter(|p| {
                std::fs::read_link(format!("/proc/{p}/ns/pid"))
                    .is_ok_and(|l| l.display().to_string() != *own)
            })
            .map(|p| format!("process {p}"))
            .collect();
        others.extend(foreign);
    }
    others
}

/// Runs `delete`.
pub fn delete(g: &Global, id: &str, force: bool) -> Result<(), OciError> {
    let c = match Container::open(&g.root, id, true) {
        Ok(c) => c,
        Err(StateError::NotFound(_)) if force => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    let s = c.load()?;
    let sharers = sharing_the_group(g, &s);
    match c.status(&s) {
        status @ (Status::Running | Status::Paused) if !force => {
            return Err(OciError::Refused(format!(
                "cannot delete container {id}: it is {status} (stop it or use --force)"
            )))
        }
        Status::Stopped => {}
        // A created container never ran its process: deleting it is always allowed.
        Status::Created | Status::Running | Status::Paused => {
            // In a group shared with other live containers, only this one's
            // own processes: its init and its PID namespace.
            let pids = if sharers.is_empty() {
                container_pids(&s)
            } else {
                processes(&s)
            };
            for p in pids {
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
    if !sharers.is_empty() {
        // Removing the group would kill them: the last one out removes it.
        log_debug(
            g,
            &format!(
                "container {id}: cgroup left to {} (same group)",
                sharers.join(", ")
            ),
        );
    } else if let Err(e) = crate::cgroup::remove_dirs(&s.cgroup_paths) {
        log_error(g, &format!("container {id}: {e}"));
    }
    c.remove()?;
    if let Err(e) = hooks::run(s.hooks.as_ref(), "poststop", &st) {
        log_error(g, &e.to_string());
    }
    Ok(())
}
