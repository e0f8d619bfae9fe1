//! Running rows: interleaved timed rounds, throughput with parallel workers, and the
//! supervisor's own peak memory.

use super::Row;
use crate::progress::{Progress, Stage, Work};
use anyhow::{bail, Context, Result};
use std::process::Command;
use std::time::{Duration, Instant};

/// Warm-up (page cache, dynamic loader) finds rows that fail: those are reported as
/// failed, never timed. The baseline (first row) must work. Then `rounds` rounds,
/// each running every row once in a shuffled order. `step` is the warm-up's index in
/// the progress plan (the rounds are the next) and the table's name.
pub fn measure(
    rows: &mut Vec<Row>,
    rounds: usize,
    failed: &mut Vec<(String, String)>,
    progress: &Progress,
    (step, name): (usize, &str),
) -> Result<()> {
    let base = rows.first().map(|r| r.name.clone()).unwrap_or_default();
    progress.begin_as_planned(step);
    rows.retain(|r| {
        let t = Instant::now();
        let ok = run_once(&r.cmd);
        progress.tick(t.elapsed());
        match ok {
            Ok(_) => true,
            Err(e) => {
                failed.push((r.name.clone(), format!("{e:#}")));
                false
            }
        }
    });
    if rows.first().map(|r| r.name != base).unwrap_or(true) {
        bail!("the baseline ({base}) failed to run");
    }
    let work = Work::Rounds {
        rows: rows.len() as u64,
        rounds: rounds as u64,
    };
    progress.begin(step + 1, Stage::new(name, work));
    let mut order: Vec<usize> = (0..rows.len()).collect();
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..rounds {
        // Fisher-Yates with a xorshift: the order only needs to vary, not be secure.
        for i in (1..order.len()).rev() {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            order.swap(i, (seed % (i as u64 + 1)) as usize);
        }
        for &i in &order {
            let d = run_once(&rows[i].cmd)?;
            rows[i].samples.push(d);
            progress.tick(d);
        }
    }
    Ok(())
}

/// Runs/second of each command with `workers` parallel loops for `duration`; the
/// commands take turns, so both see the same machine.
pub fn throughput(
    cmds: &[(&str, Vec<String>)],
    workers: usize,
    duration: Duration,
) -> Result<Vec<(String, f64)>> {
    let mut out = Vec::new();
    for (name, cmd) in cmds {
        let until = Instant::now() + duration;
        let t = Instant::now();
        let counts: Vec<Result<u64>> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..workers)
                .map(|_| {
                    s.spawn(|| {
                        let mut n = 0u64;
                        while Instant::now() < until {
                            run_once(cmd)?;
                            n += 1;
                        }
                        Ok(n)
                    })
                })
                .collect();
            hs.into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(anyhow::anyhow!("a worker panicked")))
                })
                .collect()
        });
        let mut total = 0;
        for c in counts {
            total += c.with_context(|| format!("throughput of {name}"))?;
        }
        out.push((name.to_string(), total as f64 / t.elapsed().as_secs_f64()));
    }
    Ok(out)
}

/// Runs of the supervisor-memory measurement, and about how long one takes (its
/// script sleeps 0.4 s), for the progress line's estimate.
pub const MEMORY_RUNS: usize = 10;
pub const MEMORY_RUN: Duration = Duration::from_millis(450);

/// Peak memory of the maibox supervisor itself, read from /proc/PID/status while it
/// waits for a script that sleeps: VmHWM (every resident page, including the
/// binary's and libc's file pages, which are shared and reclaimable) and the peak of
/// RssAnon (its own heap and stacks). The sandbox is a separate process (cloned
/// without CLONE_VM), so Python's memory is in neither. Medians of 10 runs, in bytes.
pub fn supervisor_peak_memory(
    maibox: &str,
    dir: &std::path::Path,
    progress: &Progress,
) -> Result<(u64, u64)> {
    let script = dir.join("sleep.py");
    std::fs::write(&script, "import time\ntime.sleep(0.4)\n")?;
    let field = |s: &str, name: &str| -> Option<u64> {
        s.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map(|kb| kb * 1024)
    };
    let (mut hwms, mut anons) = (Vec::new(), Vec::new());
    for _ in 0..MEMORY_RUNS {
        let t = Instant::now();
        let mut child = Command::new(maibox)
            .args(["exec", &script.display().to_string()])
            .stdout(std::process::Stdio::null())
            .spawn()
            .context("start maibox")?;
        let status = format!("/proc/{}/status", child.id());
        let (mut hwm, mut anon) = (0u64, 0u64);
        while child.try_wait()?.is_none() {
            if let Ok(s) = std::fs::read_to_string(&status) {
                hwm = hwm.max(field(&s, "VmHWM:").unwrap_or(0));
                anon = anon.max(field(&s, "RssAnon:").unwrap_or(0));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        hwms.push(hwm);
        anons.push(anon);
        progress.tick(t.elapsed());
    }
    hwms.sort_unstable();
    anons.sort_unstable();
    Ok((hwms[hwms.len() / 2], anons[anons.len() / 2]))
}

pub fn run_once(cmd: &[String]) -> Result<Duration> {
    // Container runtimes need a fresh id per run.
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let cmd: Vec<String> = cmd
        .iter()
        .map(|a| a.replace("@ID@", &format!("maibox-bench-{}-{n}", std::process::id())))
        .collect();
    let t = Instant::now();
    let st = Command::new(&cmd[0])
        .args(&cmd[1..])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .output()
        .with_context(|| format!("running {}", cmd.join(" ")))?;
    let d = t.elapsed();
    let err = String::from_utf8_lossy(&st.stderr);
    let st = st.status;
    if !st.success() {
        bail!("{st}: {}", err.lines().next().unwrap_or_default());
    }
    Ok(d)
}

/// The static assessment's own time (`assessment.elapsed_us` of `maibox assess
/// --json`, process start-up excluded, each run a fresh process) on Python
/// files of `lines` lines built from the assessor's test corpus `kind`
/// ("benign": ordinary code; "malicious": dense with findings): the median of
/// `rounds` runs, in ms.
pub fn assessment_ms(
    maibox: &str,
    dir: &std::path::Path,
    kind: &str,
    lines: usize,
    rounds: usize,
    progress: &Progress,
) -> Result<f64> {
    let corpus = crate::root().join("tests/fixtures/assess").join(kind);
    let mut files: Vec<std::path::PathBuf> = Vec::new();
    for e in std::fs::read_dir(&corpus)?.flatten() {
        if e.path().extension().is_some_and(|x| x == "py") {
            files.push(e.path());
        }
    }
    files.sort();
    // Whole files, repeated until long enough: valid Python, as users write it.
    let mut src = String::new();
    let mut n = 0;
    'fill: loop {
        for f in &files {
            let text = std::fs::read_to_string(f)?;
            n += text.lines().count();
            src.push_str(&text);
            src.push('\n');
            if n >= lines {
                break 'fill;
            }
        }
    }
    let path = dir.join(format!("assess-{kind}-{lines}.py"));
    std::fs::write(&path, &src)?;
    let mut times = Vec::new();
    for _ in 0..rounds {
        let t = Instant::now();
        let o = std::process::Command::new(maibox)
            .args(["assess", "--json"])
            .arg(&path)
            .output()?;
        progress.tick(t.elapsed());
        let v: serde_json::Value = serde_json::from_slice(&o.stdout)
            .map_err(|e| anyhow::anyhow!("maibox assess --json: {e}"))?;
        let us = v["elapsed_us"]
            .as_f64()
            .ok_or_else(|| anyhow::anyhow!("maibox assess --json gave no elapsed_us"))?;
        times.push(us / 1000.0);
    }
    times.sort_by(|a, b| a.total_cmp(b));
    Ok(times[times.len() / 2])
}
