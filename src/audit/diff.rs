//! Unified diff between two versions of a script, capped in size.

use similar::TextDiff;

/// Unified diff (3 lines of context) from `old` to `new`. Empty when equal.
/// If the diff is longer than `max_bytes`, it is cut at a line boundary and a
/// final marker line says how much was dropped; the result never exceeds
/// `max_bytes` (for `max_bytes` of at least ~80).
pub fn unified_diff(old: &str, new: &str, max_bytes: usize) -> String {
    let full = TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header("previous", "current")
        .to_string();
    if full.len() <= max_bytes {
        return full;
    }
    let marker = |n: usize| format!("... diff truncated, {n} bytes omitted\n");
    // Reserve room for the marker with the widest possible number.
    let budget = max_bytes.saturating_sub(marker(full.len()).len());
    let mut cut = 0;
    for (i, _) in full.match_indices('\n') {
        if i < budget {
            cut = i + 1;
        } else {
            break;
        }
    }
    let mut out = full[..cut].to_string();
    out.push_str(&marker(full.len() - cut));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diff_shows_change() {
        let d = unified_diff("a\nb\nc\n", "a\nB\nc\n", 10_000);
        assert!(d.contains("--- previous"), "{d}");
        assert!(d.contains("-b\n") && d.contains("+B\n"), "{d}");
        assert_eq!(unified_diff("x\n", "x\n", 100), "");
    }

    #[test]
    fn diff_is_capped() {
        let old: String = (0..2000).map(|i| format!("line {i}\n")).collect();
        let new: String = (0..2000).map(|i| format!("LINE {i}\n")).collect();
        let d = unified_diff(&old, &new, 1000);
        assert!(d.len() <= 1000, "{}", d.len());
        assert!(d.ends_with("bytes omitted\n"), "{d}");
        assert!(d.starts_with("--- previous"));
    }
}
