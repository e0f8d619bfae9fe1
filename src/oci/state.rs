//! Container state under `--root`: one directory per id, holding `state.json`, the
//! start FIFO while the container is `created`, and a lock file that serialises
//! concurrent runtime calls on the same id.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

pub const DEFAULT_ROOT: &str = "/run/maibox";
const STATE_FILE: &str = "state.json";
const LOCK_FILE: &str = "lock";
pub const FIFO: &str = "exec.fifo";

#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("container id {0:?} is invalid: use letters, digits, '_', '+', '-' and '.' only, not '.' or '..'")]
    BadId(String),
    #[error("container {0} does not exist")]
    NotFound(String),
    #[error("container id {0} is already in use")]
    InUse(String),
    #[error("state of container {id}: {what}: {source}")]
    Io {
        id: String,
        what: String,
        source: std::io::Error,
    },
    #[error("state of container {id} is corrupt: {message}")]
    Corrupt { id: String, message: String },
}

/// Ids become directory names: anything that could leave `--root` is refused.
pub fn check_id(id: &str) -> Result<(), StateError> {
    let ok = !id.is_empty()
        && id.len() <= 1024
        && id != "."
        && id != ".."
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '+' | '-' | '.'));
    if ok {
        Ok(())
    } else {
        Err(StateError::BadId(id.to_string()))
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Saved {
    pub id: String,
    pub pid: i32,
    /// Start time of `pid` in clock ticks since boot (/proc/PID/stat field 22): a
    /// recycled pid has another one.
    pub start_time: u64,
    pub bundle: PathBuf,
    pub created: String,
    pub annotations: BTreeMap<String, String>,
    /// The container has its own PID namespace (so killing its init ends it all).
    pub pid_ns: bool,
    /// That namespace's identity (`pid:[INODE]`, read at create): a process of
    /// its cgroup in another namespace is someone else's (see `delete`).
    #[serde(default)]
    pub pid_ns_id: Option<String>,
    /// The spec's hooks, kept for `start` (poststart) and `delete` (poststop).
    pub hooks: Option<serde_json::Value>,
    pub owner: u32,
    /// The container's cgroup directories (one per hierarchy), removed by `delete`.
    #[serde(default)]
    pub cgroup_paths: Vec<PathBuf>,
    /// Made by a strict runtime (`--hardened`): `exec` hardens its processes too.
    #[serde(default)]
    pub hardened: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Created,
    Running,
    Paused,
    Stopped,
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Status::Created => "created",
            Status::Running => "running",
            Status::Paused => "paused",
            Status::Stopped => "stopped",
        })
    }
}

/// One container's directory, locked for as long as this value lives.
pub struct Container {
    pub id: String,
    pub dir: PathBuf,
    _lock: File,
}

fn io(id: &str, what: impl Into<String>) -> impl FnOnce(std::io::Error) -> StateError {
    let id = id.to_string();
    let what = what.into();
    move |source| StateError::Io { id, what, source }
}

fn lock(id: &str, dir: &Path, exclusive: bool) -> Result<File, StateError> {
    let f = File::options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(dir.join(LOCK_FILE))
        .map_err(io(id, "open the lock file"))?;
    let op = if exclusive {
        libc::LOCK_EX
    } else {
        libc::LOCK_SH
    };
    // SAFETY: flock on a descriptor we own.
    if unsafe { libc::flock(f.as_raw_fd(), op) } != 0 {
        return Err(io(id, "lock")(std::io::Error::last_os_error()));
    }
    Ok(f)
}

fn ensure_root(root: &Path) -> Result<(), StateError> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(root)
        .map_err(io("-", format!("create the state root {}", root.display())))
}

impl Container {
    /// Claims a new id: the directory's creation is the atomic "in use" check.
    pub fn create(root: &Path, id: &str) -> Result<Container, StateError> {
        use std::os::unix::fs::DirBuilderExt;
        check_id(id)?;
        ensure_root(root)?;
        let dir = root.join(id);
        match std::fs::DirBuilder::new().mode(0o711).create(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                return Err(StateError::InUse(id.to_string()))
            }
            Err(e) => return Err(io(id, "create the state directory")(e)),
        }
        let lock = lock(id, &dir, true)?;
        Ok(Container {
            id: id.to_string(),
            dir,
            _lock: lock,
        })
    }

    /// Opens an existing container's directory and locks it.
    pub fn open(root: &Path, id: &str, exclusive: bool) -> Result<Container, StateError> {
        check_id(id)?;
        let dir = root.join(id);
        if !dir.join(STATE_FILE).is_file() {
            return Err(StateError::NotFound(id.to_string()));
        }
        let lock = lock(id, &dir, exclusive)?;
        // A concurrent delete may have removed it while we waited for the lock.
        if !dir.join(STATE_FILE).is_file() {
            return Err(StateError::NotFound(id.to_string()));
        }
        Ok(Container {
            id: id.to_string(),
            dir,
            _lock: lock,
        })
    }

    pub fn fifo(&self) -> PathBuf {
        self.dir.join(FIFO)
    }

    pub fn save(&self, s: &Saved) -> Result<(), StateError> {
        let tmp = self.dir.join("state.json.tmp");
        let text = serde_json::to_vec_pretty(s).map_err(|e| StateError::Corrupt {
            id: self.id.clone(),
            message: e.to_string(),
        })?;
        std::fs::write(&tmp, text).map_err(io(&self.id, "write state.json"))?;
        std::fs::rename(&tmp, self.dir.join(STATE_FILE)).map_err(io(&self.id, "write state.json"))
    }

    pub fn load(&self) -> Result<Saved, StateError> {
        let text =
            std::fs::read(self.dir.join(STATE_FILE)).map_err(io(&self.id, "read state.json"))?;
        serde_json::from_slice(&text).map_err(|e| StateError::Corrupt {
            id: self.id.clone(),
            message: e.to_string(),
        })
    }

    pub fn status(&self, s: &Saved) -> Status {
        if !alive(s.pid, s.start_time) {
            Status::Stopped
        } else if self.fifo().exists() {
            Status::Created
        } else if crate::cgroup::freezer::frozen(&s.cgroup_paths) {
            Status::Paused
        } else {
            Status::Running
        }
    }

    /// Removes the directory; the lock goes with it.
    pub fn remove(self) -> Result<(), StateError> {
        std::fs::remove_dir_all(&self.dir).map_err(io(&self.id, "remove the state directory"))
    }
}

/// Ids of all containers under `root`.
pub fn list(root: &Path) -> Vec<String> {
    let mut ids: Vec<String> = std::fs::read_dir(root)
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.path().join(STATE_FILE).is_file())
                .filter_map(|e| e.file_name().to_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    ids.sort();
    ids
}

/// The saved state of container `id` under `root`, read without its lock
/// (state.json is replaced by a rename, so a reader sees a whole one): for a
/// look at the other containers that must not wait on their verbs.
pub fn peek(root: &Path, id: &str) -> Option<Saved> {
    let text = std::fs::read(root.join(id).join(STATE_FILE)).ok()?;
    serde_json::from_slice(&text).ok()
}

/// (state letter, start time) from /proc/PID/stat.
pub fn proc_stat(pid: i32) -> Option<(char, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may contain spaces and parentheses: fields start after the last ')'.
    let rest = &text[text.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let state = fields.first()?.chars().next()?;
    let start = fields.get(19)?.parse().ok()?;
    Some((state, start))
}

/// The process is the one we started (same start time) and has not ended.
pub fn alive(pid: i32, start_time: u64) -> bool {
    match proc_stat(pid) {
        Some((state, start)) => start == start_time && state != 'Z' && state != 'X',
        None => false,
    }
}

/// RFC 3339 UTC time, as the OCI state and runc's logs use.
pub fn now_rfc3339() -> String {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let secs = d.as_secs() as i64;
    let (days, rem) = (secs.div_euclid(86400), secs.rem_euclid(86400));
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:09}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        d.subsec_nanos()
    )
}

/// The runtime-spec version of the states maibox reports.
pub const OCI_VERSION: &str = "1.0.2";

/// The state as the runtime spec defines it (`ociVersion`, `id`, `status`, `pid`,
/// `bundle`, `annotations`). A stopped container has no pid.
pub fn state_json(s: &Saved, status: Status) -> serde_json::Value {
    let mut v = serde_json::json!({
        "ociVersion": OCI_VERSION,
        "id": s.id,
        "status": status,
        "bundle": s.bundle,
        "rootfs": s.bundle.join("rootfs"),
        "created": s.created,
        "owner": "",
        "annotations": s.annotations,
    });
    if status != Status::Stopped {
        v["pid"] = s.pid.into();
    } else {
        v["pid"] = 0.into();
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids() {
        for ok in ["abc", "a-b_c.d+e", "0123456789abcdef"] {
            assert!(check_id(ok).is_ok(), "{ok}");
        }
        for bad in ["", ".", "..", "a/b", "../x", "a b", "a\0b"] {
            assert!(check_id(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn own_process_is_alive_and_a_wrong_start_time_is_not() {
        let me = std::process::id() as i32;
        let (_, start) = proc_stat(me).unwrap();
        assert!(alive(me, start));
        assert!(!alive(me, start + 1));
    }

    #[test]
    fn time_format() {
        let t = now_rfc3339();
        assert_eq!(t.len(), 30, "{t}");
        assert!(t.starts_with("20") && t.ends_with('Z'), "{t}");
    }

    #[test]
    fn second_create_of_an_id_is_in_use() {
        let d = tempfile::tempdir().unwrap();
        let c = Container::create(d.path(), "x").unwrap();
        assert!(matches!(
            Container::create(d.path(), "x"),
            Err(StateError::InUse(_))
        ));
        drop(c);
    }
}
