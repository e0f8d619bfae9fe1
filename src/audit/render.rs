//! `maibox audit show` and `maibox audit tail`. These only read; they do not
//! verify (that is `verify`'s job) but mark lines they cannot parse.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::Value;

use super::error::AuditError;
use super::record::{self, Record};
use super::segments;

/// One line of the log.
#[derive(Debug, Clone)]
pub struct Entry {
    pub segment: u64,
    pub line: u64,
    pub record: Option<Record>,
    pub raw: Vec<u8>,
}

fn entries_of(segment: u64, data: &[u8], first_line: u64) -> Vec<Entry> {
    let (lines, _) = segments::split_lines(data);
    lines
        .into_iter()
        .enumerate()
        .map(|(i, (_, l))| Entry {
            segment,
            line: first_line + i as u64,
            record: serde_json::from_slice(l).ok(),
            raw: l.to_vec(),
        })
        .collect()
}

/// All complete lines of all segments, in order.
pub fn read_records(dir: &Path) -> Result<Vec<Entry>, AuditError> {
    let mut out = Vec::new();
    for seg in segments::list(dir)? {
        out.extend(entries_of(seg.number, &segments::read_all(&seg)?, 1));
    }
    Ok(out)
}

/// Accepts RFC 3339 (`2025-01-31T12:00:00Z`), a date (`2025-01-31`, UTC
/// midnight) or an age (`30s`, `15m`, `2h`, `7d`, `1w`).
pub fn parse_since(s: &str) -> Result<time::OffsetDateTime, AuditError> {
    let bad = |reason: &str| AuditError::BadTime {
        value: s.to_string(),
        reason: reason.to_string(),
    };
    if let Some(unit) = s.chars().last().filter(|c| "smhdw".contains(*c)) {
        if let Ok(n) = s[..s.len() - 1].parse::<i64>() {
            let secs = n.saturating_mul(match unit {
                's' => 1,
                'm' => 60,
                'h' => 3600,
                'd' => 86_400,
                _ => 604_800,
            });
            return time::OffsetDateTime::now_utc()
                .checked_sub(time::Duration::seconds(secs))
                .ok_or_else(|| bad("too far in the past"));
        }
    }
    if s.len() == 10 {
        return record::parse_time(&format!("{s}T00:00:00Z"))
            .map_err(|_| bad("expected RFC 3339, YYYY-MM-DD or an age like 2h"));
    }
    record::parse_time(s).map_err(|_| bad("expected RFC 3339, YYYY-MM-DD or an age like 2h"))
}

fn short(h: &str) -> &str {
    &h[..h.len().min(12)]
}

fn compact(v: Option<&Value>) -> String {
    v.map_or_else(|| "-".into(), record::canonical)
}

/// One human-readable line (plus an indented diff when `with_diff`).
pub fn render(e: &Entry, with_diff: bool) -> String {
    let Some(r) = &e.record else {
        return format!(
            "!! segment {} line {}: unreadable record ({} bytes)\n",
            e.segment,
            e.line,
            e.raw.len()
        );
    };
    let b = &r.body;
    let mut s = format!("{} #{} {:<13}", r.time, r.seq, r.kind);
    if let Some(id) = &r.run_id {
        s.push_str(&format!(" run={id}"));
    }
    match r.kind.as_str() {
        "run_start" => {
            run_start(b, with_diff, &mut s);
            return s;
        }
        "run_end" => {
            s.push_str(&format!(" exit={}", compact(b.get("exit"))));
            if let Some(d) = b.get("duration_ms").and_then(Value::as_u64) {
                s.push_str(&format!(" duration={d}ms"));
            }
            s.push_str(&format!(
                " usage={} violations={}",
                compact(b.get("usage")),
                compact(b.get("violations"))
            ));
        }
        "segment_start" => s.push_str(&format!(
            " segment {} ({})",
            b.get("segment").and_then(Value::as_u64).unwrap_or(0),
            b.get("reason").and_then(Value::as_str).unwrap_or("?")
        )),
        _ => s.push_str(&format!(" {}", compact(Some(b)))),
    }
    s.push('\n');
    s
}

/// The rest of a `run_start` line: who ran what code, at which trust, with
/// what verdict, limits and layers; then the diff (or its size).
fn run_start(b: &Value, with_diff: bool, s: &mut String) {
    let uid = b
        .pointer("/caller/uid")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let name = b
        .pointer("/caller/name")
        .and_then(Value::as_str)
        .unwrap_or("?");
    s.push_str(&format!(
        " user={uid}({name}) trust={} code={} ({} B)",
        b.get("trust_level").and_then(Value::as_str).unwrap_or("?"),
        short(
            b.pointer("/code/sha256")
                .and_then(Value::as_str)
                .unwrap_or("?")
        ),
        b.pointer("/code/size").and_then(Value::as_u64).unwrap_or(0),
    ));
    if let Some(p) = b.pointer("/code/path").and_then(Value::as_str) {
        s.push_str(&format!(" path={p}"));
    }
    s.push_str(&format!(
        " verdict={} findings={}",
        b.pointer("/assessment/verdict")
            .and_then(Value::as_str)
            .unwrap_or("?"),
        compact(b.pointer("/assessment/findings"))
    ));
    if let Some(o) = b.get("override_reason").and_then(Value::as_str) {
        s.push_str(&format!(" override={o:?}"));
    }
    s.push_str(&format!(
        " limits={} layers={}",
        compact(b.get("limits")),
        compact(b.get("layers"))
    ));
    s.push('\n');
    if let Some(d) = b.pointer("/code/diff").and_then(Value::as_str) {
        if with_diff {
            for l in d.lines() {
                s.push_str(&format!("    | {l}\n"));
            }
        } else {
            s.push_str(&format!(
                "    changed since previous version: {} diff lines (--run to show)\n",
                d.lines().count()
            ));
        }
    }
}

fn emit(out: &mut dyn Write, e: &Entry, json: bool, with_diff: bool) -> Result<(), AuditError> {
    let res = if json {
        out.write_all(&e.raw).and_then(|_| out.write_all(b"\n"))
    } else {
        out.write_all(render(e, with_diff).as_bytes())
    };
    res.map_err(AuditError::io("write output", "<stdout>"))
}

/// Prints records, optionally only those of one run (full id or a prefix)
/// and/or from a point in time on. `json` prints the stored lines verbatim.
/// Which records `show` prints.
#[derive(Debug, Clone, Copy, Default)]
pub struct ShowFilter<'a> {
    /// Only this run's records (a prefix of its id).
    pub run: Option<&'a str>,
    /// Only records from this time on (RFC 3339, a date, or an age such as 2h).
    pub since: Option<&'a str>,
    /// Only the last N of the records that pass the other filters.
    pub last: Option<usize>,
}

pub fn show(
    dir: &Path,
    filter: ShowFilter,
    json: bool,
    out: &mut dyn Write,
) -> Result<(), AuditError> {
    let (run, since) = (filter.run, filter.since.map(parse_since).transpose()?);
    let keep = |e: &Entry| match &e.record {
        Some(r) => {
            run.is_none_or(|want| r.run_id.as_deref().is_some_and(|id| id.starts_with(want)))
                && since.is_none_or(|t0| record::parse_time(&r.time).is_ok_and(|t| t >= t0))
        }
        None => run.is_none() && since.is_none(),
    };
    let shown: Vec<Entry> = read_records(dir)?.into_iter().filter(keep).collect();
    let skip = filter.last.map_or(0, |n| shown.len().saturating_sub(n));
    for e in &shown[skip..] {
        emit(out, e, json, run.is_some())?;
    }
    Ok(())
}

#[derive(Debug, Clone)]
pub struct TailOptions<'a> {
    /// Records printed before following.
    pub lines: usize,
    pub follow: bool,
    pub poll: Duration,
    /// Set to stop following (for tests and signal handlers).
    pub stop: Option<&'a AtomicBool>,
    pub json: bool,
}

/// Last 10 records; with `follow`, keeps printing new ones (`tail -f`).
pub fn tail(dir: &Path, follow: bool, out: &mut dyn Write) -> Result<(), AuditError> {
    tail_with(
        dir,
        &TailOptions {
            lines: 10,
            follow,
            poll: Duration::from_millis(250),
            stop: None,
            json: false,
        },
        out,
    )
}

/// Bytes of segment `n` from `offset` on, whether it is plain or compressed
/// by now; `None` if the segment no longer exists.
fn read_from(dir: &Path, n: u64, offset: u64) -> Result<Option<Vec<u8>>, AuditError> {
    let plain = dir.join(segments::plain_name(n));
    match File::open(&plain) {
        Ok(mut f) => {
            let mut buf = Vec::new();
            f.seek(SeekFrom::Start(offset))
                .and_then(|_| f.read_to_end(&mut buf))
                .map_err(AuditError::io("read segment", &plain))?;
            Ok(Some(buf))
        }
        Err(_) => {
            let gz = segments::SegmentFile {
                number: n,
                path: dir.join(format!("{}.gz", segments::plain_name(n))),
                compressed: true,
                duplicate_gz: None,
            };
            if !gz.path.exists() {
                return Ok(None);
            }
            let all = segments::read_all(&gz)?;
            Ok(Some(
                all.get(offset as usize..).unwrap_or_default().to_vec(),
            ))
        }
    }
}

pub fn tail_with(
    dir: &Path,
    opts: &TailOptions<'_>,
    out: &mut dyn Write,
) -> Result<(), AuditError> {
    let segs = segments::list(dir)?;
    let all = read_records(dir)?;
    for e in &all[all.len().saturating_sub(opts.lines)..] {
        emit(out, e, opts.json, false)?;
    }
    out.flush()
        .map_err(AuditError::io("write output", "<stdout>"))?;
    if !opts.follow {
        return Ok(());
    }
    // Position = (segment, byte offset of the first unread byte, next line no).
    let (mut seg, mut offset, mut line_no) = match segs.last() {
        Some(last) => {
            let data = segments::read_all(last)?;
            let (lines, _) = segments::split_lines(&data);
            let consumed = lines.last().map_or(0, |(o, l)| o + l.len() + 1);
            (last.number, consumed as u64, lines.len() as u64 + 1)
        }
        None => (1, 0, 1),
    };
    while !opts.stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
        std::thread::sleep(opts.poll);
        loop {
            if let Some(buf) = read_from(dir, seg, offset)? {
                let complete = buf.iter().rposition(|b| *b == b'\n').map_or(0, |p| p + 1);
                let entries = entries_of(seg, &buf[..complete], line_no);
                for e in &entries {
                    emit(out, e, opts.json, false)?;
                }
                offset += complete as u64;
                line_no += entries.len() as u64;
            }
            // Move on only once the next segment exists: until then more
            // lines may still arrive in this one.
            let next_exists = segments::list(dir)?.iter().any(|s| s.number == seg + 1);
            if !next_exists {
                break;
            }
            seg += 1;
            offset = 0;
            line_no = 1;
        }
        out.flush()
            .map_err(AuditError::io("write output", "<stdout>"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{cfg, make_log, sample_end, sample_start};
    use super::*;
    use std::sync::{Arc, Mutex};

    #[test]
    fn show_filters_and_renders() {
        let d = tempfile::tempdir().unwrap();
        let mut log = make_log(&cfg(d.path()), 2);
        let mut s = sample_start("abcdef-1");
        s.code.diff = Some("--- previous\n+++ current\n-a\n+b\n".into());
        s.override_reason = Some("reviewed by bob".into());
        log.append_run_start(&s).unwrap();
        log.append_run_end(&sample_end("abcdef-1")).unwrap();
        let mut out = Vec::new();
        show(d.path(), run_filter("abcdef"), false, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.matches(" run=abcdef-1").count(), 2, "{text}");
        assert!(text.contains("user=1000(alice) trust=untrusted"), "{text}");
        assert!(text.contains("override=\"reviewed by bob\""), "{text}");
        assert!(text.contains("    | +b"), "{text}");
        assert!(text.contains("exit={\"code\":0}"), "{text}");
        assert!(!text.contains("run-0"), "{text}");
        let mut out = Vec::new();
        show(d.path(), ShowFilter::default(), true, &mut out).unwrap();
        let raw = fs_lines(d.path());
        assert_eq!(String::from_utf8(out).unwrap(), raw);
        let mut out = Vec::new();
        show(d.path(), since("2999-01-01"), false, &mut out).unwrap();
        assert!(out.is_empty());
        let mut out = Vec::new();
        show(d.path(), since("1h"), false, &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out)
                .unwrap()
                .lines()
                .filter(|l| l.contains(" #"))
                .count(),
            5
        );
        assert!(show(d.path(), since("last tuesday"), false, &mut Vec::new()).is_err());
        // The last N of what the other filters select, in log order.
        let mut out = Vec::new();
        let last_two = ShowFilter {
            last: Some(2),
            ..since("1h")
        };
        show(d.path(), last_two, true, &mut out).unwrap();
        let tail: Vec<&str> = raw.lines().rev().take(2).collect();
        let shown = String::from_utf8(out).unwrap();
        assert_eq!(shown.lines().rev().collect::<Vec<_>>(), tail, "{shown}");
    }

    fn run_filter(run: &str) -> ShowFilter<'_> {
        ShowFilter {
            run: Some(run),
            ..Default::default()
        }
    }

    fn since(since: &str) -> ShowFilter<'_> {
        ShowFilter {
            since: Some(since),
            ..Default::default()
        }
    }

    fn fs_lines(dir: &Path) -> String {
        let mut s = String::new();
        for seg in segments::list(dir).unwrap() {
            s.push_str(&String::from_utf8(segments::read_all(&seg).unwrap()).unwrap());
        }
        s
    }

    /// Output shared with the test, which also sees how often the tail flushed.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>, Arc<std::sync::atomic::AtomicUsize>);
    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            self.1.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }
    }

    /// Polls `done` for up to 30 s (a loaded machine may hold a thread back).
    fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
        let t0 = std::time::Instant::now();
        while !done() {
            assert!(t0.elapsed() < Duration::from_secs(30), "waiting for {what}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn tail_follows_across_rotation() {
        let d = tempfile::tempdir().unwrap();
        let mut c = cfg(d.path());
        c.rotate_bytes = 3000;
        let mut log = make_log(&c, 12);
        let mut out = Vec::new();
        tail(d.path(), false, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text.lines().filter(|l| l.contains(" #")).count(),
            10,
            "{text}"
        );
        assert!(text.contains("run=run-11"));
        let stop = Arc::new(AtomicBool::new(false));
        let buf = Shared::default();
        let (dir, st, mut w) = (d.path().to_path_buf(), stop.clone(), buf.clone());
        let th = std::thread::spawn(move || {
            let o = TailOptions {
                lines: 0,
                follow: true,
                poll: Duration::from_millis(20),
                stop: Some(&st),
                json: false,
            };
            tail_with(&dir, &o, &mut w)
        });
        // Its second flush ends its first poll, which comes after it took its place at
        // the log's end: records appended before that would count as old ones.
        wait_until("the tail to follow", || buf.1.load(Ordering::SeqCst) >= 2);
        for i in 0..10 {
            log.append_run_start(&sample_start(&format!("new-{i}")))
                .unwrap();
        }
        let text = || String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
        wait_until("the new records", || text().contains("run=new-9 "));
        stop.store(true, Ordering::Relaxed);
        th.join().unwrap().unwrap();
        let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
        for i in 0..10 {
            assert_eq!(text.matches(&format!("run=new-{i} ")).count(), 1, "{text}");
        }
        assert!(text.contains("segment_start"), "rotation expected: {text}");
        assert!(!text.contains("run=run-"), "{text}");
    }
}
