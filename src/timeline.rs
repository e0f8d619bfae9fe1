//! Where one run spends its time, phase by phase (`--timings`).
//!
//! A list of named instants that belongs to one run: the phases live in different
//! modules (configuration, assessment, audit, cgroup, engine, supervisor), which mark
//! them on the run's timeline, so that runs side by side keep their own. Marks cost a
//! clock read and a push under an uncontended lock.

use std::sync::Mutex;
use std::time::{Duration, Instant};

#[derive(Debug)]
pub struct Timeline {
    marks: Mutex<Vec<(&'static str, Instant)>>,
}

impl Default for Timeline {
    fn default() -> Self {
        Timeline::new()
    }
}

impl Timeline {
    /// A timeline whose origin is now.
    pub fn new() -> Timeline {
        Timeline::starting_at(Instant::now())
    }

    /// A timeline whose origin is `at` (a command line passes its own start).
    pub fn starting_at(at: Instant) -> Timeline {
        Timeline {
            marks: Mutex::new(vec![("start", at)]),
        }
    }

    /// Records that the phase `name` ended now.
    pub fn mark(&self, name: &'static str) {
        if let Ok(mut m) = self.marks.lock() {
            m.push((name, Instant::now()));
        }
    }

    /// The phases so far, each with its duration since the previous mark, in order.
    pub fn phases(&self) -> Vec<(&'static str, Duration)> {
        let Ok(m) = self.marks.lock() else {
            return Vec::new();
        };
        let mut prev = m[0].1;
        m.iter()
            .skip(1)
            .map(|(name, at)| {
                let d = at.saturating_duration_since(prev);
                prev = *at;
                (*name, d)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_are_ordered_and_add_up() {
        let t = Timeline::new();
        t.mark("a");
        std::thread::sleep(Duration::from_millis(2));
        t.mark("b");
        let p = t.phases();
        assert_eq!(p.iter().map(|(n, _)| *n).collect::<Vec<_>>(), ["a", "b"]);
        assert!(p[1].1 >= Duration::from_millis(2));
    }

    #[test]
    fn two_timelines_keep_their_own_marks() {
        let (a, b) = (Timeline::new(), Timeline::new());
        a.mark("only-a");
        b.mark("only-b");
        assert_eq!(a.phases()[0].0, "only-a");
        assert_eq!(b.phases().len(), 1);
    }
}
