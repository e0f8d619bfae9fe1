//! Order statistics of a row's samples.

use std::time::Duration;

pub fn percentile(s: &[Duration], q: f64) -> Duration {
    let mut v = s.to_vec();
    v.sort();
    if v.is_empty() {
        return Duration::ZERO;
    }
    let idx = ((v.len() - 1) as f64 * q).round() as usize;
    v[idx]
}

pub fn median(s: &[Duration]) -> Duration {
    percentile(s, 0.5)
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_pick_the_nearest_rank() {
        let s: Vec<Duration> = [5, 1, 4, 2, 3]
            .iter()
            .map(|m| Duration::from_millis(*m))
            .collect();
        assert_eq!(median(&s), Duration::from_millis(3));
        assert_eq!(percentile(&s, 0.0), Duration::from_millis(1));
        assert_eq!(percentile(&s, 1.0), Duration::from_millis(5));
        assert_eq!(percentile(&[], 0.5), Duration::ZERO);
    }
}
