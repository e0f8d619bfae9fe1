//! Usage samples of a running container from the engine's stats endpoint.

use bollard::query_parameters::StatsOptions;
use futures_util::StreamExt;

#[derive(Debug, Clone, Copy, Default)]
pub struct Sample {
    pub memory_bytes: u64,
    /// The engine's high-water mark where the kernel keeps one (cgroup v1).
    pub memory_max_bytes: Option<u64>,
    pub pids: u64,
    pub cpu_ns: u64,
    pub cpu_user_ns: u64,
    pub cpu_system_ns: u64,
}

/// The running peak over all samples.
#[derive(Debug, Clone, Copy, Default)]
pub struct Peaks {
    pub memory_bytes: u64,
    pub pids: u64,
    pub last: Sample,
    pub samples: u64,
}

impl Peaks {
    pub fn add(&mut self, s: Sample) {
        // A container that is not running (yet, or any more) reports zeros.
        if s.memory_bytes == 0 && s.pids == 0 {
            return;
        }
        self.memory_bytes = self
            .memory_bytes
            .max(s.memory_bytes)
            .max(s.memory_max_bytes.unwrap_or(0));
        self.pids = self.pids.max(s.pids);
        if s.cpu_ns >= self.last.cpu_ns {
            self.last = s;
        }
        self.samples += 1;
    }
}

/// Streams the container's samples into a channel until the container stops. The
/// engine publishes one a second (its collector's interval; a one-shot read waits for
/// the next one just the same), so sampling runs beside the supervisor, never in its way.
pub fn spawn_sampler(docker: bollard::Docker, id: String) -> tokio::sync::mpsc::Receiver<Sample> {
    let (tx, rx) = tokio::sync::mpsc::channel(16);
    tokio::spawn(async move {
        let opts = StatsOptions {
            stream: true,
            one_shot: false,
        };
        let mut stream = docker.stats(&id, Some(opts));
        while let Some(Ok(s)) = stream.next().await {
            if tx.send(convert(s)).await.is_err() {
                return;
            }
        }
    });
    rx
}

fn convert(s: bollard::models::ContainerStatsResponse) -> Sample {
    let mem = s.memory_stats.unwrap_or_default();
    let cpu = s.cpu_stats.and_then(|c| c.cpu_usage).unwrap_or_default();
    let pids = s.pids_stats.and_then(|p| p.current).unwrap_or(0);
    Sample {
        memory_bytes: mem.usage.unwrap_or(0),
        memory_max_bytes: mem.max_usage,
        pids,
        cpu_ns: cpu.total_usage.unwrap_or(0),
        cpu_user_ns: cpu.usage_in_usermode.unwrap_or(0),
        cpu_system_ns: cpu.usage_in_kernelmode.unwrap_or(0),
    }
}

impl Sample {
    /// The same shape as the native backend's `--stats` lines.
    pub fn as_usage(&self, peak: u64) -> crate::cgroup::Usage {
        crate::cgroup::Usage {
            memory_current_bytes: self.memory_bytes,
            memory_peak_bytes: peak,
            oom_kills: 0,
            pids_current: self.pids,
            pids_limit_hits: 0,
            cpu_usage_usec: Some(self.cpu_ns / 1000),
        }
    }
}
