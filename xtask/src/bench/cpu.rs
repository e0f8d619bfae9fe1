//! CPU time per run: what throughput is made of. Each command runs `n` times, apart
//! (so that a server's refill of the sandbox a run used is counted with that run, not
//! competing with the next), and the machine's busy time over those runs, minus its
//! busy time over as long a pause, is divided by the runs (`/proc/stat`: every
//! process and the kernel's own work, such as the teardown of namespaces, which no
//! process's rusage holds; a sandbox killed with its pid namespace is never waited
//! for, so no rusage holds its CPU either). On C cores, throughput cannot pass C
//! divided by this. Needs a quiet machine, as the rest of the bench does.

use super::extra::run_once;
use anyhow::{Context, Result};
use nix::sys::resource::{getrusage, UsageWho};
use std::time::{Duration, Instant};

/// How many runs, and how far apart.
pub const RUNS: usize = 40;
pub const GAP: Duration = Duration::from_millis(150);

/// CPU ms per run of `cmd`: (everything, the command's own process tree as far as
/// it was waited for).
pub fn per_run(cmd: &[String], settle: Duration) -> Result<(f64, f64)> {
    let t = Instant::now();
    let (busy0, own0) = (busy_ms()?, children_ms()?);
    for _ in 0..RUNS {
        run_once(cmd)?;
        std::thread::sleep(GAP);
    }
    // A server's refill of the last run's sandbox.
    std::thread::sleep(settle);
    let (busy1, own1) = (busy_ms()?, children_ms()?);
    // The machine's own background, over a pause as long, after the runs.
    let b = busy_ms()?;
    std::thread::sleep(t.elapsed());
    let idle = busy_ms()? - b;
    Ok((
        ((busy1 - busy0) - idle).max(0.0) / RUNS as f64,
        (own1 - own0) / RUNS as f64,
    ))
}

/// Busy time of all CPUs since boot (the first line of /proc/stat: user, nice,
/// system, irq, softirq and steal; not idle and iowait), in ms.
fn busy_ms() -> Result<f64> {
    let stat = std::fs::read_to_string("/proc/stat").context("reading /proc/stat")?;
    let cpu = stat.lines().next().unwrap_or_default();
    let f: Vec<u64> = cpu
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    let busy: u64 = [0, 1, 2, 5, 6, 7].iter().filter_map(|&i| f.get(i)).sum();
    Ok(busy as f64 * 1e3 / clock_ticks() as f64)
}

/// User and system time of this process's waited-for descendants, in ms.
fn children_ms() -> Result<f64> {
    let u = getrusage(UsageWho::RUSAGE_CHILDREN).context("getrusage")?;
    let ms = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 * 1e3 + t.tv_usec() as f64 / 1e3;
    Ok(ms(u.user_time()) + ms(u.system_time()))
}

fn clock_ticks() -> u64 {
    use nix::unistd::{sysconf, SysconfVar};
    match sysconf(SysconfVar::CLK_TCK) {
        Ok(Some(t)) if t > 0 => t as u64,
        _ => 100,
    }
}
