//! One line of progress on stderr for the long tasks (`cargo xtask bench`, `cargo xtask
//! rootfs`): which step, how far in it, the time spent and an estimate of the time
//! left, redrawn in place and cleared at the end. indicatif draws it, and draws
//! nothing when stderr is not a terminal, so CI logs get only the results.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};
use std::fmt::Write as _;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How much work a step is, for its progress and the estimate of the time left.
#[derive(Debug, Clone, PartialEq)]
pub enum Work {
    /// `rounds` rounds of one run of each of `rows` commands.
    Rounds { rows: u64, rounds: u64 },
    /// `n` runs; `each` is how long one takes when that is known beforehand.
    Runs { n: u64, each: Option<Duration> },
    /// A known length of time.
    Timed(Duration),
    /// Work of unknown length (no estimate while it lasts).
    Open,
}

impl Work {
    fn units(&self) -> u64 {
        match self {
            Work::Rounds { rows, rounds } => rows * rounds,
            Work::Runs { n, .. } => *n,
            Work::Timed(_) | Work::Open => 0,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Stage {
    pub name: String,
    pub work: Work,
}

impl Stage {
    pub fn new(name: impl Into<String>, work: Work) -> Stage {
        Stage {
            name: name.into(),
            work,
        }
    }
}

/// The steps of a task and how far it has got: everything the line shows, apart from
/// the clock, so that it can be tested without a terminal.
#[derive(Debug)]
pub struct Plan {
    task: String,
    stages: Vec<Stage>,
    /// The step under way (`stages.len()` before the first begins).
    current: usize,
    /// Units of the current step done.
    done: u64,
    /// Time the finished units of the current step took.
    spent: Duration,
    /// All runs timed so far, over every step: the pace for steps not yet begun.
    runs: (u64, Duration),
    /// The last line of a tool's own output, shown after the step's name.
    detail: Option<String>,
}

impl Plan {
    pub fn new(task: &str, stages: Vec<Stage>) -> Plan {
        Plan {
            task: task.into(),
            current: stages.len(),
            stages,
            done: 0,
            spent: Duration::ZERO,
            runs: (0, Duration::ZERO),
            detail: None,
        }
    }

    /// Starts step `i`, with its work as now known (rows that failed their warm-up are gone).
    pub fn begin(&mut self, i: usize, stage: Stage) {
        if let Some(s) = self.stages.get_mut(i) {
            *s = stage;
            self.current = i;
            self.done = 0;
            self.spent = Duration::ZERO;
            self.detail = None;
        }
    }

    /// Starts step `i` with the work planned for it.
    pub fn begin_as_planned(&mut self, i: usize) {
        if let Some(s) = self.stages.get(i).cloned() {
            self.begin(i, s);
        }
    }

    /// One unit of the current step is done; it took `took`.
    pub fn tick(&mut self, took: Duration) {
        self.done += 1;
        self.spent += took;
        // Runs of a known, different length (a script that sleeps) say nothing of
        // the pace of the others.
        let own_length = self
            .stages
            .get(self.current)
            .is_some_and(|s| matches!(s.work, Work::Runs { each: Some(_), .. }));
        if !own_length {
            self.runs.0 += 1;
            self.runs.1 += took;
        }
    }

    /// Shows a tool's latest output line after the step's name, cut to keep the line
    /// to one row of a terminal.
    pub fn set_detail(&mut self, detail: &str) {
        const MAX: usize = 60;
        let d = detail.trim();
        self.detail = Some(match d.char_indices().nth(MAX) {
            Some((cut, _)) => format!("{}…", &d[..cut]),
            None => d.to_string(),
        });
    }

    /// The average run so far, for the steps whose runs have not been timed yet.
    fn pace(&self) -> Option<Duration> {
        let (n, t) = self.runs;
        (n > 0).then(|| t / n as u32)
    }

    /// Estimated time left, `in_step` into the current step: the current step at its own
    /// pace, the later ones at their known length or at the pace of the runs so far.
    /// None while any part cannot be estimated (nothing timed yet, open-ended work).
    pub fn time_left(&self, in_step: Duration) -> Option<Duration> {
        let mut left = Duration::ZERO;
        for (i, s) in self.stages.iter().enumerate().skip(self.current) {
            let units = s.work.units();
            let rest = if i == self.current {
                units.saturating_sub(self.done)
            } else {
                units
            };
            left += match &s.work {
                Work::Timed(d) if i == self.current => d.saturating_sub(in_step),
                Work::Timed(d) => *d,
                Work::Open => return None,
                _ if i == self.current && self.done > 0 => {
                    self.spent.mul_f64(rest as f64 / self.done as f64)
                }
                Work::Runs { each: Some(e), .. } => *e * rest as u32,
                _ => self.pace()? * rest as u32,
            };
        }
        Some(left)
    }

    /// The line: `bench [2/7] empty script: round 37/100 of 19 rows, 1:02 elapsed, about 2:10 left`.
    pub fn line(&self, elapsed: Duration, in_step: Duration) -> String {
        let mut l = self.task.clone();
        if let Some(s) = self.stages.get(self.current) {
            let _ = write!(
                l,
                " [{}/{}] {}",
                self.current + 1,
                self.stages.len(),
                s.name
            );
            match &s.work {
                Work::Rounds { rows, rounds } => {
                    let round = (self.done / (*rows).max(1) + 1).min(*rounds);
                    let _ = write!(l, ": round {round}/{rounds} of {rows} rows");
                }
                Work::Runs { n, .. } if *n > 1 => {
                    let _ = write!(l, ": {}/{n} runs", self.done.min(*n));
                }
                Work::Timed(d) => {
                    let _ = write!(l, ": {}/{}", clock(in_step.min(*d)), clock(*d));
                }
                _ => {}
            }
            if let Some(d) = &self.detail {
                let _ = write!(l, ": {d}");
            }
        }
        let _ = write!(l, ", {} elapsed", clock(elapsed));
        if let Some(left) = self.time_left(in_step) {
            let _ = write!(l, ", about {} left", clock(left));
        }
        l
    }
}

/// `m:ss`, or `h:mm:ss` from an hour on.
pub fn clock(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 {
        format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
    } else {
        format!("{}:{:02}", s / 60, s % 60)
    }
}

/// A [`Plan`] drawn on stderr when stderr is a terminal; cleared when dropped.
pub struct Progress {
    bar: ProgressBar,
    state: Arc<Mutex<(Plan, Instant, Instant)>>,
}

impl Progress {
    pub fn new(task: &str, stages: Vec<Stage>) -> Progress {
        let now = Instant::now();
        let state = Arc::new(Mutex::new((Plan::new(task, stages), now, now)));
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        let shared = Arc::clone(&state);
        // The line is rendered at each draw, so the clocks move between ticks too
        // (a throughput step has none for seconds).
        let render = move |_: &ProgressState, w: &mut dyn std::fmt::Write| {
            let s = lock(&shared);
            let _ = w.write_str(&s.0.line(s.1.elapsed(), s.2.elapsed()));
        };
        if let Ok(style) = ProgressStyle::with_template("{line}") {
            bar.set_style(style.with_key("line", render));
        }
        if !bar.is_hidden() {
            bar.enable_steady_tick(Duration::from_millis(250));
        }
        Progress { bar, state }
    }

    /// Starts step `i` (see [`Plan::begin`]).
    pub fn begin(&self, i: usize, stage: Stage) {
        let mut s = lock(&self.state);
        s.0.begin(i, stage);
        s.2 = Instant::now();
    }

    /// Starts step `i` with the work planned for it.
    pub fn begin_as_planned(&self, i: usize) {
        let mut s = lock(&self.state);
        s.0.begin_as_planned(i);
        s.2 = Instant::now();
    }

    /// One unit of the current step is done (may be called from several threads).
    pub fn tick(&self, took: Duration) {
        lock(&self.state).0.tick(took);
        self.bar.tick();
    }

    pub fn set_detail(&self, detail: &str) {
        lock(&self.state).0.set_detail(detail);
        self.bar.tick();
    }

    /// Whether the line is drawn (stderr is a terminal).
    pub fn visible(&self) -> bool {
        !self.bar.is_hidden()
    }

    /// A message on stderr, above the line when there is one.
    pub fn note(&self, msg: &str) {
        self.bar.suspend(|| eprintln!("{msg}"));
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic elsewhere while the lock was held leaves a plan that is still fine to draw.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn bench_plan() -> Plan {
        Plan::new(
            "bench",
            vec![
                Stage::new("warm-up", Work::Runs { n: 4, each: None }),
                Stage::new(
                    "empty script",
                    Work::Rounds {
                        rows: 4,
                        rounds: 10,
                    },
                ),
                Stage::new("throughput", Work::Timed(Duration::from_secs(20))),
                Stage::new(
                    "supervisor memory",
                    Work::Runs {
                        n: 10,
                        each: Some(400 * MS),
                    },
                ),
            ],
        )
    }

    #[test]
    fn nothing_is_estimated_before_a_run_is_timed() {
        let mut p = bench_plan();
        p.begin(0, Stage::new("warm-up", Work::Runs { n: 4, each: None }));
        assert_eq!(p.time_left(Duration::ZERO), None);
        assert!(!p.line(Duration::ZERO, Duration::ZERO).contains("left"));
    }

    #[test]
    fn time_left_adds_the_current_pace_and_the_later_steps() {
        let mut p = bench_plan();
        p.begin(0, Stage::new("warm-up", Work::Runs { n: 4, each: None }));
        for _ in 0..4 {
            p.tick(20 * MS);
        }
        // One row failed its warm-up: three rows of 10 rounds remain.
        p.begin(
            1,
            Stage::new(
                "empty script",
                Work::Rounds {
                    rows: 3,
                    rounds: 10,
                },
            ),
        );
        // Not begun: 30 runs at the warm-up's 20 ms, then 20 s, then 10 runs of 400 ms.
        assert_eq!(p.time_left(Duration::ZERO), Some(600 * MS + 24_000 * MS));
        for _ in 0..6 {
            p.tick(10 * MS);
        }
        // Its own pace now: 24 runs left at 10 ms.
        assert_eq!(p.time_left(60 * MS), Some(240 * MS + 24_000 * MS));
        p.begin(2, Stage::new("throughput", Work::Timed(20 * 1000 * MS)));
        assert_eq!(
            p.time_left(Duration::from_secs(5)),
            Some(15_000 * MS + 4_000 * MS)
        );
        // Past its length, a timed step counts as done, never negative.
        assert_eq!(p.time_left(Duration::from_secs(25)), Some(4_000 * MS));
    }

    #[test]
    fn runs_of_a_known_length_keep_their_own_pace() {
        let mut p = Plan::new(
            "bench",
            vec![
                Stage::new("rounds", Work::Rounds { rows: 2, rounds: 1 }),
                Stage::new(
                    "memory",
                    Work::Runs {
                        n: 4,
                        each: Some(400 * MS),
                    },
                ),
                Stage::new("assessment", Work::Runs { n: 10, each: None }),
            ],
        );
        p.begin_as_planned(0);
        p.tick(10 * MS);
        p.tick(30 * MS);
        p.begin_as_planned(1);
        // Before a memory run is timed: its planned length, then 10 runs at 20 ms.
        assert_eq!(p.time_left(Duration::ZERO), Some(1_600 * MS + 200 * MS));
        p.tick(500 * MS);
        // Its own measured pace now; the assessment's estimate is unchanged.
        assert_eq!(p.time_left(500 * MS), Some(1_500 * MS + 200 * MS));
    }

    #[test]
    fn open_ended_work_has_no_estimate() {
        let mut p = Plan::new(
            "rootfs",
            vec![
                Stage::new("debootstrap", Work::Open),
                Stage::new("pruning", Work::Runs { n: 1, each: None }),
            ],
        );
        p.begin(0, Stage::new("debootstrap", Work::Open));
        p.set_detail(&format!(
            "I: Valid Release signature (key id {})",
            "4D64".repeat(10)
        ));
        let line = p.line(Duration::ZERO, Duration::ZERO);
        let detail = line.split_once("debootstrap: ").unwrap_or_default().1;
        assert!(detail.ends_with("…, 0:00 elapsed"), "{line}");
        assert_eq!(detail.split('…').next().unwrap().chars().count(), 60);
        p.set_detail("I: Retrieving InRelease \n");
        assert_eq!(p.time_left(Duration::from_secs(3)), None);
        assert_eq!(
            p.line(Duration::from_secs(75), Duration::from_secs(3)),
            "rootfs [1/2] debootstrap: I: Retrieving InRelease, 1:15 elapsed"
        );
    }

    #[test]
    fn the_line_says_rows_rounds_elapsed_and_left() {
        let mut p = bench_plan();
        p.begin(
            1,
            Stage::new(
                "empty script",
                Work::Rounds {
                    rows: 4,
                    rounds: 10,
                },
            ),
        );
        for _ in 0..9 {
            p.tick(100 * MS);
        }
        // Nine runs done: the third round is under way; 31 runs at 100 ms, then 24 s.
        assert_eq!(
            p.line(Duration::from_secs(62), 900 * MS),
            "bench [2/4] empty script: round 3/10 of 4 rows, 1:02 elapsed, about 0:27 left"
        );
        for _ in 0..31 {
            p.tick(100 * MS);
        }
        assert!(p
            .line(Duration::ZERO, Duration::ZERO)
            .contains("round 10/10 of 4 rows"));
        p.begin(
            2,
            Stage::new("throughput", Work::Timed(Duration::from_secs(20))),
        );
        assert!(p
            .line(Duration::ZERO, Duration::from_secs(7))
            .contains("throughput: 0:07/0:20"));
        p.begin(
            3,
            Stage::new(
                "supervisor memory",
                Work::Runs {
                    n: 10,
                    each: Some(400 * MS),
                },
            ),
        );
        p.tick(400 * MS);
        assert!(p
            .line(Duration::ZERO, Duration::ZERO)
            .contains("supervisor memory: 1/10 runs"));
    }

    #[test]
    fn clock_format() {
        assert_eq!(clock(Duration::from_secs(0)), "0:00");
        assert_eq!(clock(Duration::from_millis(61_900)), "1:01");
        assert_eq!(clock(Duration::from_secs(3_725)), "1:02:05");
    }
}
