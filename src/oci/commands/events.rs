//! `events [--stats] [--interval D] ID`: a running container's resource usage as
//! JSON lines (`{"type":"stats","id":...,"data":{...}}`, see [`crate::cgroup::stats`]),
//! once with `--stats`, else every interval, together with
//! `{"type":"oom","id":...}` whenever the kernel's OOM handling hits the
//! container's memory cgroup. The stream ends when the container's cgroup is
//! removed (its `delete`), as runc's does.

use std::io::Write;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clap::Args;
use serde::Serialize;

use crate::cgroup::stats::{read_stats, Stats};
use crate::oci::cli::Global;
use crate::oci::error::OciError;
use crate::oci::state::{self, Container, Status};

#[derive(Args, Debug)]
pub struct EventsArgs {
    /// How often to print stats, as runc writes durations (5s, 100ms, 1m30s).
    #[arg(long, default_value = "5s")]
    pub interval: String,
    /// Print the container's stats once and exit.
    #[arg(long)]
    pub stats: bool,
    pub id: String,
}

/// One line of output; field order as runc prints it (tools match on the prefix).
#[derive(Serialize)]
struct Event<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<Stats>,
}

fn refused(m: impl Into<String>) -> OciError {
    OciError::Refused(m.into())
}

/// Go's duration syntax (runc's flag type): decimal numbers, each with a unit of
/// ns, us (µs), ms, s, m or h, e.g. `1m30s`, `1.5s`, `100ms`.
pub fn parse_go_duration(text: &str) -> Result<Duration, String> {
    let bad = || format!("invalid duration {text:?}: expected e.g. 5s, 100ms or 1m30s");
    let mut rest = text.trim();
    if rest == "0" {
        return Ok(Duration::ZERO);
    }
    if rest.is_empty() || rest.starts_with('-') {
        return Err(bad());
    }
    let mut total = 0f64;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(bad)?;
        let n: f64 = rest[..num_len].parse().map_err(|_| bad())?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let secs_per = match &rest[..unit_len] {
            "ns" => 1e-9,
            "us" | "µs" | "μs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return Err(bad()),
        };
        total += n * secs_per;
        rest = &rest[unit_len..];
    }
    Duration::try_from_secs_f64(total).map_err(|_| bad())
}

/// Runs `events`. Returns the exit code.
pub fn events(g: &Global, a: &EventsArgs) -> Result<i32, OciError> {
    let interval =
        parse_go_duration(&a.interval).map_err(|e| refused(format!("--interval: {e}")))?;
    if interval.is_zero() {
        return Err(refused("--interval: the interval must be greater than 0"));
    }
    let c = Container::open(&g.root, &a.id, false)?;
    let s = c.load()?;
    if c.status(&s) == Status::Stopped {
        return Err(refused(format!("container {} is not running", a.id)));
    }
    // A stream may run for days: it must not hold off `delete`, which ends it.
    drop(c);
    let mut out = std::io::stdout().lock();
    if a.stats {
        emit(&mut out, "stats", &a.id, Some(read_stats(&s.cgroup_paths)))?;
        return Ok(0);
    }
    let mut oom = OomWatch::new(&s.cgroup_paths)?;
    let mut next = Instant::now() + interval;
    loop {
        let wait = next.saturating_duration_since(Instant::now());
        match oom.as_mut().map_or(Ok(Wake::Timeout), |w| w.wait(wait))? {
            Wake::Oom => emit(&mut out, "oom", &a.id, None)?,
            Wake::Timeout => {
                next += interval;
                if gone(&s) {
                    return Ok(0);
                }
                emit(&mut out, "stats", &a.id, Some(read_stats(&s.cgroup_paths)))?;
            }
            Wake::Removed => return Ok(0),
            Wake::Spurious => {}
        }
    }
}

/// The container's groups are removed (by `delete`), or it never had one and its
/// init has ended.
fn gone(s: &state::Saved) -> bool {
    match s.cgroup_paths.first() {
        Some(d) => !d.is_dir(),
        None => !state::alive(s.pid, s.start_time),
    }
}

fn emit(
    out: &mut impl Write,
    kind: &'static str,
    id: &str,
    data: Option<Stats>,
) -> Result<(), OciError> {
    let line = serde_json::to_string(&Event { kind, id, data })
        .map_err(|e| refused(format!("encode the {kind} event: {e}")))?;
    writeln!(out, "{line}")
        .and_then(|_| out.flush())
        .map_err(|source| OciError::Io {
            what: "write the event to stdout".into(),
            source,
        })
}

enum Wake {
    Oom,
    Timeout,
    /// The memory cgroup is gone: the container was deleted.
    Removed,
    /// Nothing to report: wait again, up to the same tick.
    Spurious,
}

/// The kernel's OOM notification for the container's memory cgroup: on v1 an
/// eventfd registered for `memory.oom_control` (which also fires when the group
/// is removed), on v2 inotify on `memory.events` and its `oom_kill` counter.
enum OomWatch {
    V1 {
        efd: nix::sys::eventfd::EventFd,
        dir: PathBuf,
        // Registered with the eventfd: must stay open as long as it.
        _control: std::fs::File,
    },
    V2 {
        inotify: nix::sys::inotify::Inotify,
        events: PathBuf,
        kills: u64,
    },
}

fn v2_kills(events: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(events).ok()?;
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == "oom_kill").then(|| v.trim().parse().ok())?
    })
}

impl OomWatch {
    /// `None` when the container has no memory cgroup to watch.
    fn new(dirs: &[PathBuf]) -> Result<Option<OomWatch>, OciError> {
        let io = |what: String| move |source| OciError::Io { what, source };
        if let Some(dir) = dirs.iter().find(|d| d.join("memory.oom_control").exists()) {
            let control = std::fs::File::open(dir.join("memory.oom_control"))
                .map_err(io(format!("open {}/memory.oom_control", dir.display())))?;
            let efd =
                nix::sys::eventfd::EventFd::from_flags(nix::sys::eventfd::EfdFlags::EFD_CLOEXEC)
                    .map_err(|e| io("create an eventfd for OOM notices".into())(e.into()))?;
            let registration = format!(
                "{} {}",
                std::os::fd::AsRawFd::as_raw_fd(&efd),
                std::os::fd::AsRawFd::as_raw_fd(&control)
            );
            std::fs::write(dir.join("cgroup.event_control"), registration)
                .map_err(io(format!("register for OOM notices in {}", dir.display())))?;
            return Ok(Some(OomWatch::V1 {
                efd,
                dir: dir.clone(),
                _control: control,
            }));
        }
        let Some(dir) = dirs.iter().find(|d| d.join("memory.events").exists()) else {
            return Ok(None);
        };
        use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};
        let events = dir.join("memory.events");
        let inotify = Inotify::init(InitFlags::IN_CLOEXEC | InitFlags::IN_NONBLOCK)
            .map_err(|e| io("create an inotify instance".into())(e.into()))?;
        inotify
            .add_watch(&events, AddWatchFlags::IN_MODIFY)
            .map_err(|e| io(format!("watch {}", events.display()))(e.into()))?;
        let kills = v2_kills(&events).unwrap_or(0);
        Ok(Some(OomWatch::V2 {
            inotify,
            events,
            kills,
        }))
    }

    fn wait(&mut self, timeout: Duration) -> Result<Wake, OciError> {
        use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
        let ready = {
            let fd = match &*self {
                OomWatch::V1 { efd, .. } => efd.as_fd(),
                OomWatch::V2 { inotify, .. } => inotify.as_fd(),
            };
            let mut fds = [PollFd::new(fd, PollFlags::POLLIN)];
            let t = PollTimeout::try_from(timeout).unwrap_or(PollTimeout::MAX);
            match poll(&mut fds, t) {
                Ok(n) => n > 0,
                Err(nix::errno::Errno::EINTR) => false,
                Err(e) => {
                    return Err(OciError::Io {
                        what: "wait for OOM notices".into(),
                        source: e.into(),
                    })
                }
            }
        };
        if !ready {
            return Ok(Wake::Timeout);
        }
        match self {
            OomWatch::V1 { efd, dir, .. } => {
                let _ = efd.read();
                Ok(if dir.is_dir() {
                    Wake::Oom
                } else {
                    Wake::Removed
                })
            }
            OomWatch::V2 {
                inotify,
                events,
                kills,
            } => {
                let _ = inotify.read_events();
                match v2_kills(events) {
                    None => Ok(Wake::Removed),
                    Some(n) if n > *kills => {
                        *kills = n;
                        Ok(Wake::Oom)
                    }
                    // Another counter moved: nothing to report.
                    Some(_) => Ok(Wake::Spurious),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        assert_eq!(parse_go_duration("5s").unwrap(), Duration::from_secs(5));
        assert_eq!(
            parse_go_duration("100ms").unwrap(),
            Duration::from_millis(100)
        );
        assert_eq!(parse_go_duration("1m30s").unwrap(), Duration::from_secs(90));
        assert_eq!(
            parse_go_duration("1.5s").unwrap(),
            Duration::from_millis(1500)
        );
        assert_eq!(parse_go_duration("0").unwrap(), Duration::ZERO);
        for bad in ["", "5", "-1s", "1x", "s", "1.2.3s"] {
            assert!(parse_go_duration(bad).is_err(), "{bad:?}");
        }
    }
}
