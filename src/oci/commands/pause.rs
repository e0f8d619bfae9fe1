//! `pause` and `resume`: freeze or thaw every process of a container.

use crate::cgroup::freezer;
use crate::oci::cli::Global;
use crate::oci::error::OciError;
use crate::oci::state::{Container, Status};

/// `pause` / `resume`: freeze or thaw every process of the container.
pub fn pause(g: &Global, id: &str, freeze: bool) -> Result<(), OciError> {
    let c = Container::open(&g.root, id, true)?;
    let s = c.load()?;
    let (from, verb) = if freeze {
        (Status::Running, "pause")
    } else {
        (Status::Paused, "resume")
    };
    let status = c.status(&s);
    if status != from {
        return Err(OciError::Refused(format!(
            "cannot {verb} container {id}: it is {status}, not {from}"
        )));
    }
    freezer::set_frozen(&s.cgroup_paths, freeze)
        .map_err(|e| OciError::Refused(format!("{verb} container {id}: {e}")))
}
