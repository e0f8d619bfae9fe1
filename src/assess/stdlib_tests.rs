//! False positives on real code nobody wrote for the corpus: the host's Python
//! standard library. It legitimately runs programs, pickles and opens sockets,
//! so HIGH is expected here; BLOCKED should be rare, and each BLOCKED file is
//! printed with the findings that made it so.
//!
//! It runs with the other tests (about 3 s in a debug build), and is skipped,
//! saying so, where the directory is missing. Print the figures:
//! `cargo test --release --lib -- --nocapture assess_stdlib`
//! (`MAIBOX_STDLIB_DIR` picks another tree; the default is /usr/lib/python3.11).

use std::path::{Path, PathBuf};

use super::{assess, AssessConfig, AssessError, Assessment, Verdict};

const DEFAULT_DIR: &str = "/usr/lib/python3.11";
/// Fewer files than this means the directory is not a standard library.
const MIN_FILES: usize = 300;
/// The files expected BLOCKED, each with why. Any other BLOCKED file is a
/// regression to investigate (a rule's false positive, or stdlib code that
/// really is dangerous), not to wave through; a listed file no longer
/// BLOCKED fails too, so that the list stays true.
const EXPECTED_BLOCKED: &[(&str, &str)] = &[(
    "http/server.py",
    "CGIHTTPRequestHandler runs the script a request names, with the \
     request's query as its arguments (MB913): what a web shell does \
     (Python deprecated the class in 3.13, for removal in 3.15)",
)];

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
    let found: Vec<&str> = blocked.iter().map(|(n, _)| n.as_str()).collect();
    let expected: Vec<&str> = EXPECTED_BLOCKED.iter().map(|(n, _)| *n).collect();
    assert_eq!(
        found, expected,
        "stdlib files BLOCKED differ from EXPECTED_BLOCKED; see the list above"
    );
}

/// Shapes the standard library and its test suites showed, judged on small
/// cases of their own: each spared case with a control that is still found.
mod shapes {
    use super::super::behaviour_tests::{rules, run};

    /// Filling a non-blocking socket until it would block ends there (trio's
    /// and asyncio's tests); the same loop ended only by Ctrl-C is a flood.
    #[test]
    fn a_buffer_filled_until_it_would_block_is_no_flood() {
        let fill = "import socket\na, b = socket.socketpair()\na.setblocking(False)\n\
                    try:\n    while True:\n        a.send(b'x' * 65536)\nexcept BlockingIOError:\n    pass\n";
        assert!(
            !rules(&run(fill)).contains(&"MB927"),
            "{:?}",
            run(fill).findings
        );
        let flood = fill.replace("BlockingIOError", "KeyboardInterrupt");
        assert!(
            rules(&run(&flood)).contains(&"MB927"),
            "{:?}",
            run(&flood).findings
        );
    }

    /// A test expecting the write to block (`assertRaises(BlockingIOError)`)
    /// ends its loop there; one expecting `MemoryError` is a memory bomb.
    #[test]
    fn a_loop_a_test_expects_to_block_ends_there() {
        let spared = "import os, unittest\nclass T(unittest.TestCase):\n    def test_fill(self):\n\
                      r, w = os.pipe()\n        os.set_blocking(w, False)\n        f = open(w, 'wb', buffering=0)\n\
                      with self.assertRaises(BlockingIOError):\n            while True:\n                f.write(b'x' * 4096)\n";
        assert!(
            !rules(&run(spared)).contains(&"MB918"),
            "{:?}",
            run(spared).findings
        );
        let bomb = "import pytest\ndef test_grow():\n    held = []\n    with pytest.raises(MemoryError):\n\
                    while True:\n            held.append(' ' * 10**6)\n";
        assert!(
            rules(&run(bomb)).contains(&"MB918"),
            "{:?}",
            run(bomb).findings
        );
    }

    /// `/usr/tmp` is a temporary directory (`tempfile` probes it with a file
    /// it makes and removes); a file of `/usr/lib` removed the same way is
    /// still destruction.
    #[test]
    fn a_probe_file_removed_from_usr_tmp_is_no_destruction() {
        let probe = "import os, random\nfor d in ['/usr/tmp', '/var/tmp']:\n\
                     name = os.path.join(d, str(random.random()))\n    fd = os.open(name, os.O_CREAT | os.O_WRONLY)\n\
                     os.close(fd)\n    os.unlink(name)\n";
        assert!(
            !rules(&run(probe)).contains(&"MB907"),
            "{:?}",
            run(probe).findings
        );
        let wipe = probe.replace("/usr/tmp", "/usr/lib");
        assert!(
            rules(&run(&wipe)).contains(&"MB907"),
            "{:?}",
            run(&wipe).findings
        );
    }
}
