//! The processes of a container, for `ps`, `kill --all` and `delete`.

use super::state::Saved;

/// Every process of the container: from its cgroup when it has one (processes that
/// `exec` added included), else its init and its PID namespace.
pub(crate) fn container_pids(s: &Saved) -> Vec<i32> {
    let mut pids = cgroup_pids(s);
    if pids.is_empty() {
        pids = processes(s);
    }
    pids.sort_unstable();
    pids.dedup();
    pids
}

/// The processes in the container's cgroup (none when it has none).
pub(crate) fn cgroup_pids(s: &Saved) -> Vec<i32> {
    s.cgroup_paths
        .first()
        .and_then(|d| std::fs::read_to_string(d.join("cgroup.procs")).ok())
        .map(|t| t.lines().filter_map(|l| l.trim().parse().ok()).collect())
        .unwrap_or_default()
}

/// Processes of the container: its init, plus everything in its PID namespace.
pub(crate) fn processes(s: &Saved) -> Vec<i32> {
    let mut pids = vec![s.pid];
    if !s.pid_ns {
        return pids;
    }
    let Ok(ns) = std::fs::read_link(format!("/proc/{}/ns/pid", s.pid)) else {
        return pids;
    };
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if p != s.pid && std::fs::read_link(format!("/proc/{p}/ns/pid")).ok() == Some(ns.clone()) {
            pids.push(p);
        }
    }
    pids
}
