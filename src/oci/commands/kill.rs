//! `kill`: a signal to a container's init, or with `--all` to every process
//! of it.

use nix::sys::signal::Signal;
use nix::unistd::Pid;

use crate::cgroup::freezer;
use crate::oci::cli::Global;
use crate::oci::error::OciError;
use crate::oci::pids::{cgroup_pids, container_pids};
use crate::oci::state::{Container, Status};

/// A signal by name or number; `None` for 0, which only checks that the
/// container's processes exist.
pub fn parse_signal(s: &str) -> Result<Option<Signal>, OciError> {
    let bad = || OciError::Refused(format!("invalid signal {s:?}"));
    if let Ok(n) = s.parse::<i32>() {
        if n == 0 {
            return Ok(None);
        }
        return Signal::try_from(n).map(Some).map_err(|_| bad());
    }
    let up = s.to_ascii_uppercase();
    let name = if up.starts_with("SIG") {
        up
    } else {
        format!("SIG{up}")
    };
    name.parse::<Signal>().map(Some).map_err(|_| bad())
}

/// Runs `kill`.
pub fn kill(g: &Global, id: &str, sig: Option<Signal>, all: bool) -> Result<(), OciError> {
    let c = Container::open(&g.root, id, true)?;
    let s = c.load()?;
    let targets = match (c.status(&s), all) {
        (Status::Stopped, false) => {
            return Err(OciError::Refused(format!("container {id} is not running")))
        }
        // As runc: --all on a stopped container is no error. Whatever its
        // cgroup still holds gets the signal; its init's pid, which may be
        // someone else's by now, never does.
        (Status::Stopped, true) => cgroup_pids(&s),
        (_, true) => container_pids(&s),
        (_, false) => vec![s.pid],
    };
    for p in targets {
        nix::sys::signal::kill(Pid::from_raw(p), sig).map_err(|e| {
            let name = sig.map_or("0", |s| s.as_str());
            OciError::Refused(format!("kill {p} with {name}: {e}"))
        })?;
    }
    // A frozen task acts on SIGKILL only once thawed.
    if sig == Some(Signal::SIGKILL) && freezer::frozen(&s.cgroup_paths) {
        freezer::set_frozen(&s.cgroup_paths, false).map_err(OciError::Refused)?;
    }
    Ok(())
}
