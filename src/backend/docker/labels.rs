//! Every container maibox creates carries labels naming its run and its owner process,
//! so that a container left by a maibox that was killed (SIGKILL, a crash) is removed by
//! the next Docker-backend run, and nothing else on the engine is ever touched.

use bollard::query_parameters::{ListContainersOptions, RemoveContainerOptions};
use std::collections::HashMap;

/// The run's id.
pub const RUN: &str = "io.maibox.run";
/// `<pid>-<start time>` of the maibox that owns the container (see `cgroup::owner_tag`).
pub const OWNER: &str = "io.maibox.owner";
/// The owner's kernel boot id: a pid means something only on the same machine and boot.
pub const OWNER_BOOT: &str = "io.maibox.owner-boot";
/// When the run started (Unix seconds).
pub const STARTED: &str = "io.maibox.started";

pub fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

pub fn for_run(run_id: &str) -> HashMap<String, String> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    HashMap::from([
        (RUN.to_string(), run_id.to_string()),
        (OWNER.to_string(), crate::cgroup::owner_tag()),
        (OWNER_BOOT.to_string(), boot_id()),
        (STARTED.to_string(), now.to_string()),
    ])
}

/// Whether a container with these labels belongs to a maibox of this boot that is gone.
/// Anything else (another machine, another boot, labels that do not parse) is left alone.
pub fn is_stale(labels: &HashMap<String, String>, our_boot: &str) -> bool {
    let (Some(owner), Some(boot)) = (labels.get(OWNER), labels.get(OWNER_BOOT)) else {
        return false;
    };
    !our_boot.is_empty() && boot == our_boot && !crate::cgroup::tag_owner_alive(owner)
}

/// Removes the containers (and their anonymous volumes) of maibox runs whose owner is gone.
/// Best effort: a failure is a warning, never a reason not to run.
pub async fn cleanup_stale(docker: &bollard::Docker) -> usize {
    let opts = ListContainersOptions {
        all: true,
        filters: Some(HashMap::from([(
            "label".to_string(),
            vec![OWNER.to_string()],
        )])),
        ..Default::default()
    };
    let list = match docker.list_containers(Some(opts)).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("maibox: warning: cannot list leftover maibox containers: {e}");
            return 0;
        }
    };
    let boot = boot_id();
    let mut removed = 0;
    for c in list {
        let (Some(id), Some(labels)) = (c.id, c.labels) else {
            continue;
        };
        if !is_stale(&labels, &boot) {
            continue;
        }
        tracing::debug!(%id, "removing a container left by a maibox that is gone");
        match remove(docker, &id).await {
            Ok(()) => removed += 1,
            Err(e) => eprintln!("maibox: warning: cannot remove leftover container {id}: {e}"),
        }
    }
    removed
}

/// Kills (if needed) and removes a container with its anonymous volumes.
pub async fn remove(docker: &bollard::Docker, id: &str) -> Result<(), bollard::errors::Error> {
    let opts = RemoveContainerOptions {
        force: true,
        v: true,
        ..Default::default()
    };
    match docker.remove_container(id, Some(opts)).await {
        Err(e) if super::error::is_not_found(&e) => Ok(()),
        r => r,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_dead_owners_of_this_boot_are_stale() {
        let boot = "b1";
        let mut l = for_run("r");
        l.insert(OWNER_BOOT.into(), boot.into());
        // Our own process is alive.
        assert!(!is_stale(&l, boot));
        // A pid that exists with another start time is a reused pid: its owner is gone.
        l.insert(OWNER.into(), format!("{}-1", std::process::id()));
        assert!(is_stale(&l, boot));
        // Another boot or machine: leave it.
        assert!(!is_stale(&l, "b2"));
        // Not our labels: leave it.
        l.remove(OWNER);
        assert!(!is_stale(&l, boot));
    }
}
