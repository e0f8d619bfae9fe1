//! False positives on real code nobody wrote for the corpus: the host's Python
//! standard library. It legitimately runs programs, pickles and opens sockets,
//! so HIGH is expected here; BLOCKED should be rare, and each BLOCKED file is
//! printed with the findings that made it so.
//!
//! `cargo test --release --lib -- --ignored --nocapture assess_stdlib`
//! (`MAIBOX_STDLIB_DIR` picks another tree; the default is /usr/lib/python3.11).

use std::path::{Path, PathBuf};

use super::{assess, AssessConfig, AssessError, Assessment, Verdict};

const DEFAULT_DIR: &str = "/usr/lib/python3.11";
/// Fewer files than this means the directory is not a standard library.
const MIN_FILES: usize = 300;
/// The most BLOCKED files tolerated: the count when the rules last changed.
/// A new BLOCKED file is a regression to investigate (false positive of a
/// rule, or stdlib code that really is dangerous), not to wave through.
const MAX_BLOCKED: usize = 0;

fn python_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            // Symlinks are skipped: they lead out of the tree or back into it.
            let Ok(ft) = e.file_type() else { continue };
            if ft.is_dir() {
                todo.push(p);
            } else if ft.is_file() && p.extension().is_some_and(|x| x == "py") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Why a file is BLOCKED: its BLOCKED findings, or the HIGH ones that escalated.
fn why_blocked(a: &Assessment) -> String {
    let blocked: Vec<String> = a
        .findings
        .iter()
        .filter(|f| f.severity == Verdict::Blocked)
        .map(|f| {
            format!(
                "    {}:{} {} {} [{}]",
                f.line, f.column, f.rule, f.title, f.detail
            )
        })
        .collect();
    if !blocked.is_empty() {
        return blocked.join("\n");
    }
    let mut high: Vec<&str> = a
        .findings
        .iter()
        .filter(|f| f.severity == Verdict::High)
        .map(|f| f.rule.as_str())
        .collect();
    high.sort_unstable();
    high.dedup();
    format!("    escalated by distinct HIGH rules: {}", high.join(" "))
}

#[test]
#[ignore]
fn assess_stdlib() {
    let dir = std::env::var_os("MAIBOX_STDLIB_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(DEFAULT_DIR));
    if !dir.is_dir() {
        eprintln!(
            "SKIP assess_stdlib: {} is not a directory (set MAIBOX_STDLIB_DIR to a Python standard library)",
            dir.display()
        );
        return;
    }
    let files = python_files(&dir);
    assert!(
        files.len() >= MIN_FILES,
        "{}: only {} .py files, not a standard library",
        dir.display(),
        files.len()
    );
    let cfg = AssessConfig::default();
    let mut counts = [0usize; 4];
    let mut times: Vec<(f64, usize, String)> = Vec::new();
    let mut blocked: Vec<(String, String)> = Vec::new();
    let mut too_large = Vec::new();
    let (mut lines, mut total_ms) = (0usize, 0.0f64);
    for p in &files {
        let name = p
            .strip_prefix(&dir)
            .unwrap_or(p)
            .to_string_lossy()
            .into_owned();
        let source = std::fs::read(p).unwrap();
        let start = std::time::Instant::now();
        let a = match assess(&name, &source, &cfg) {
            Ok(a) => a,
            Err(AssessError::TooLarge { .. }) => {
                too_large.push(name);
                continue;
            }
            Err(e) => panic!("{e}"),
        };
        let ms = start.elapsed().as_secs_f64() * 1e3;
        total_ms += ms;
        lines += a.lines;
        counts[a.verdict as usize] += 1;
        if a.verdict == Verdict::Blocked {
            blocked.push((name.clone(), why_blocked(&a)));
        }
        times.push((ms, a.lines, name));
    }
    times.sort_by(|a, b| b.0.total_cmp(&a.0));
    println!(
        "stdlib {}: {} files, {lines} lines, {total_ms:.0} ms assessing ({:.2} ms per 1,000 lines), {} over max_bytes",
        dir.display(),
        files.len(),
        total_ms / (lines.max(1) as f64 / 1e3),
        too_large.len()
    );
    let n = times.len().max(1) as f64;
    for v in Verdict::ALL {
        let c = counts[v as usize];
        println!("  {:<8} {c:>5}  {:>5.1}%", v.as_str(), 100.0 * c as f64 / n);
    }
    println!("slowest:");
    for (ms, l, name) in times.iter().take(10) {
        println!("  {ms:>7.2} ms  {l:>6} lines  {name}");
    }
    println!("BLOCKED ({}):", blocked.len());
    for (name, why) in &blocked {
        println!("  {name}\n{why}");
    }
    // saturating_sub rather than `<=`, which clippy rejects while the bound is 0.
    assert_eq!(
        blocked.len().saturating_sub(MAX_BLOCKED),
        0,
        "{} stdlib files BLOCKED (at most {MAX_BLOCKED} expected); see the list above",
        blocked.len()
    );
}
