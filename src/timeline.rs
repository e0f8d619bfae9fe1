//! Where a `maibox exec` spends its time, phase by phase (`--timings`).
//!
//! A process-wide list of named instants: the phases live in different modules
//! (config, assessment, audit, cgroup, engine, monitor), and threading a recorder
//! through all of them would widen every signature for a diagnostic. Marks cost a
//! clock read and a push under an uncontended lock.

use std::sync::Mutex;
use std::time::{Duration, Instant};

static MARKS: Mutex<Vec<(&'static str, Instant)>> = Mutex::new(Vec::new());

/// Records that the phase `name` ended now.
pub fn mark(name: &'static str) {
    if let Ok(mut m) = MARKS.lock() {
        m.push((name, Instant::now()));
    }
}

/// The phases so far, each with its duration since the previous mark, in order;
/// the first mark is the origin.
pub fn phases() -> Vec<(&'static str, Duration)> {
    let Ok(m) = MARKS.lock() else {
        return Vec::new();
    };
    let Some((_, mut prev)) = m.first().copied() else {
        return Vec::new();
    };
    m.iter()
        .skip(1)
        .map(|(name, at)| {
            let d = at.saturating_duration_since(prev);
            prev = *at;
            (*name, d)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_are_ordered_and_add_up() {
        // Other tests may mark concurrently: look for this test's own names.
        mark("timeline-test-origin");
        mark("timeline-test-a");
        std::thread::sleep(Duration::from_millis(2));
        mark("timeline-test-b");
        let p = phases();
        let at = |n: &str| p.iter().position(|(m, _)| *m == n).unwrap();
        let (a, b) = (at("timeline-test-a"), at("timeline-test-b"));
        assert!(a < b);
        let between: Duration = p[a + 1..=b].iter().map(|(_, d)| *d).sum();
        assert!(between >= Duration::from_millis(2));
    }
}
