//! The run's cgroup while it runs: sampled on the clock (usage for the caller's
//! samples and the report; the OOM killer, the pids limit and the CPU-time budget as
//! violations), and read once more when the sandbox is gone.

use crate::io::Samples;
use crate::outcome::Violation;
use std::time::{Duration, Instant};

/// The run's cgroup, sampled while it runs.
pub(crate) struct Cgroup<'a> {
    pub group: &'a crate::cgroup::RunCgroup,
    pub sample: Duration,
    pub cpu_time: Option<Duration>,
}

pub(super) struct Watch<'a, 'io> {
    cg: Cgroup<'a>,
    samples: Samples<'io>,
    next: Instant,
    pub last: crate::cgroup::Usage,
    pub max_pids: u64,
}

impl<'a, 'io> Watch<'a, 'io> {
    pub fn new(cg: Cgroup<'a>, samples: Samples<'io>, started: Instant) -> Watch<'a, 'io> {
        Watch {
            cg,
            samples,
            next: started,
            last: Default::default(),
            max_pids: 0,
        }
    }

    pub fn group(&self) -> &'a crate::cgroup::RunCgroup {
        self.cg.group
    }

    /// How long until the next sample is due.
    pub fn until_next(&self, now: Instant) -> Duration {
        match self.next.checked_duration_since(now) {
            Some(d) if !d.is_zero() => d,
            _ => self.cg.sample,
        }
    }

    /// Samples when one is due (on the clock, not on every wake-up: a chatty program
    /// wakes the loop for each chunk of output, and a sample reads half a dozen cgroup
    /// files). Returns a limit the run crossed since the last sample, if `judge`.
    pub fn tick(&mut self, now: Instant, started: Instant, judge: bool) -> Option<Violation> {
        if now < self.next {
            return None;
        }
        self.next = now + self.cg.sample;
        let u = self.cg.group.stats();
        self.max_pids = self.max_pids.max(u.pids_current);
        self.samples.send(started.elapsed(), &u);
        let crossed = judge.then(|| self.crossed(&u)).flatten();
        self.last = u;
        crossed
    }

    fn crossed(&self, u: &crate::cgroup::Usage) -> Option<Violation> {
        let limits = &self.cg.group.limits;
        if u.oom_kills > self.last.oom_kills {
            return Some(Violation::Memory {
                limit_bytes: limits.memory_bytes,
                peak_bytes: u.memory_peak_bytes,
            });
        }
        if u.pids_limit_hits > self.last.pids_limit_hits {
            return Some(Violation::Pids { limit: limits.pids });
        }
        self.cg
            .cpu_time
            .zip(u.cpu_usage_usec)
            .filter(|(l, used)| *used as u128 > l.as_micros())
            .map(|(limit, used_us)| Violation::Cpu {
                limit_s: limit.as_secs_f64(),
                used_s: used_us as f64 / 1e6,
            })
    }

    /// The last reading, once the sandbox is gone: an OOM kill or a refused fork that
    /// ended the run before the next sample is still a violation.
    pub fn last_reading(&mut self, violations: &mut Vec<Violation>) {
        let u = self.cg.group.stats();
        let limits = &self.cg.group.limits;
        let has = |vs: &Vec<Violation>, f: fn(&Violation) -> bool| vs.iter().any(f);
        if u.oom_kills > 0 && !has(violations, |v| matches!(v, Violation::Memory { .. })) {
            violations.push(Violation::Memory {
                limit_bytes: limits.memory_bytes,
                peak_bytes: u.memory_peak_bytes,
            });
        }
        if u.pids_limit_hits > 0 && !has(violations, |v| matches!(v, Violation::Pids { .. })) {
            violations.push(Violation::Pids { limit: limits.pids });
        }
        self.last = u;
    }

    pub fn cpu_limit_s(&self) -> f64 {
        self.cg.cpu_time.map(|d| d.as_secs_f64()).unwrap_or(0.0)
    }
}
