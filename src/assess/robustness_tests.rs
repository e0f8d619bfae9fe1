//! Bad input: binary, non-UTF-8, deep nesting, random and mutated bytes.
//! A deterministic mutation loop runs with every `cargo test`; the cargo-fuzz
//! target in fuzz/ (nightly) explores further.

use super::{assess, AssessConfig, Verdict};

fn run(src: &[u8]) -> super::Assessment {
    assess("t.py", src, &AssessConfig::default()).unwrap()
}

#[test]
fn binary_pyc_like_input_is_high_not_a_panic() {
    let mut pyc = vec![0xa7, 0x0d, 0x0d, 0x0a, 0, 0, 0, 0];
    pyc.extend((0..4000u32).map(|i| (i * 7919 % 251) as u8));
    let a = run(&pyc);
    assert_eq!(a.verdict, Verdict::High);
    assert!(!a.syntax_ok);
    assert_eq!(a.findings[0].rule, "MB004");
}

#[test]
fn latin1_source_is_assessed_with_a_warning() {
    let src = b"# -*- coding: latin-1 -*-\nname = '\xe9t\xe9'\nimport os\nos.system('ls')\n";
    let a = run(src);
    let rules: Vec<&str> = a.findings.iter().map(|f| f.rule.as_str()).collect();
    assert!(
        rules.contains(&"MB003") && rules.contains(&"MB605"),
        "{rules:?}"
    );
}

#[test]
fn whitespace_only_and_bom() {
    assert_eq!(run(b"\n\n   \n").verdict, Verdict::Low);
    let a = run(b"\xef\xbb\xbfimport os\nos.system('x')\n");
    assert!(a.syntax_ok, "{:?}", a.findings);
    assert!(a.findings.iter().any(|f| f.rule == "MB605"));
}

#[test]
fn deep_nesting_does_not_overflow() {
    for depth in [1_000usize, 100_000] {
        // Parentheses only group: no syntax-tree depth, nothing hidden.
        let src = format!("x = {}1{}\n", "(".repeat(depth), ")".repeat(depth));
        let a = run(src.as_bytes());
        assert!(a.syntax_ok && a.findings.is_empty(), "{:?}", a.findings);
        let src = format!("x = {}1\n", "-".repeat(depth));
        let a = run(src.as_bytes());
        assert!(
            a.findings.iter().any(|f| f.rule == "MB002"),
            "depth {depth}: {:?}",
            a.findings
        );
        let src = format!("x = {}1{}\n", "[".repeat(depth), "]".repeat(depth));
        assert!(run(src.as_bytes())
            .findings
            .iter()
            .any(|f| f.rule == "MB002"));
        let src = format!("x = a{}\n", ".b".repeat(depth));
        let _ = run(src.as_bytes());
        let src = format!("x = 1{}\n", " + 1".repeat(depth));
        let _ = run(src.as_bytes());
        let src = format!("x = {}\n", "-".repeat(depth));
        let _ = run(src.as_bytes());
    }
    // Deeply nested blocks.
    let mut src = String::new();
    for i in 0..300 {
        src.push_str(&" ".repeat(i));
        src.push_str("if x:\n");
    }
    src.push_str(&" ".repeat(300));
    src.push_str("pass\n");
    let _ = run(src.as_bytes());
}

#[test]
fn alias_cycles_terminate() {
    let a = run(b"a = b\nb = a\na.system('x')\nc = c + c\nexec(c)\n");
    assert!(a.findings.iter().any(|f| f.rule == "MB102"));
    // Fan-out chain that would be exponential without the step budget.
    let mut src = String::from("v0 = 'x'\n");
    for i in 1..60 {
        src.push_str(&format!("v{i} = v{p} + v{p}\n", p = i - 1));
    }
    src.push_str("exec(v59)\n");
    let start = std::time::Instant::now();
    let _ = run(src.as_bytes());
    assert!(
        start.elapsed().as_secs() < 5,
        "budget did not bound the fold"
    );
    // Replace and join amplification stay bounded too.
    let src = "a = 'x' * 1\nb = 'a' + 'a' + 'a' + 'a'\nc = b.replace('a', b + b + b + b + b + b + b + b)\nd = c.replace('a', c)\ne = d.replace('a', d)\nexec(e)\n";
    let _ = run(src.as_bytes());
    assert!(start.elapsed().as_secs() < 10);
}

#[test]
fn many_gadgets_and_sends_stay_linear() {
    // Every gadget against every pickling call, or every send walking a long
    // chain of bindings, would be quadratic or worse without the per-call
    // budget and the once-per-call collection of pickled classes.
    let mut src = String::from("import os, pickle, requests\ne0 = dict(os.environ)\n");
    for i in 1..1_500 {
        src.push_str(&format!("e{i} = [e{}, e{}]\n", i - 1, i - 1));
    }
    for i in 0..1_500 {
        src.push_str(&format!(
            "class G{i}:\n    def __reduce__(self):\n        return os.system, (self.c,)\npickle.dumps([G{i}(), e1499])\nrequests.post('u', json=e1499)\n"
        ));
    }
    let start = std::time::Instant::now();
    let a = run(src.as_bytes());
    assert!(start.elapsed().as_secs() < 10, "took {:?}", start.elapsed());
    assert_eq!(a.verdict, Verdict::Blocked);
    let armed = a.findings.iter().filter(|f| f.rule == "MB912").count();
    assert_eq!(armed, 1_500);
}

/// xorshift, so the test is reproducible without a dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

#[test]
fn random_and_mutated_inputs_never_panic() {
    let seeds: Vec<Vec<u8>> = super::corpus_tests::load_corpus()
        .into_iter()
        .map(|c| c.source)
        .collect();
    assert!(seeds.len() >= 70);
    let tokens: &[&[u8]] = &[
        b"(",
        b")",
        b"[",
        b"]",
        b"'",
        b"\"\"\"",
        b"\\",
        b"exec(",
        b"getattr(",
        b"__import__(",
        b"import os as o\n",
        b"\n    ",
        b"lambda:",
        b"f'{",
        b"}",
        b"+",
        b"[::-1]",
        b"\xff",
        b"\0",
        b"def f(",
        b"os.system(",
        b"=",
    ];
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut runs = 0usize;
    for i in 0..4_000 {
        let mut buf = seeds[i % seeds.len()].clone();
        for _ in 0..1 + rng.below(8) {
            let at = rng.below(buf.len() + 1);
            match rng.below(4) {
                0 => {
                    let t = tokens[rng.below(tokens.len())];
                    buf.splice(at..at, t.iter().copied());
                }
                1 if !buf.is_empty() => {
                    let end = (at + rng.below(40)).min(buf.len());
                    buf.drain(at.min(end)..end);
                }
                2 if !buf.is_empty() => {
                    let idx = at.min(buf.len() - 1);
                    buf[idx] = (rng.next() & 0xff) as u8;
                }
                _ => {
                    let len = rng.below(64);
                    let junk: Vec<u8> = (0..len).map(|_| (rng.next() & 0x7f) as u8).collect();
                    buf.splice(at..at, junk);
                }
            }
        }
        let a = run(&buf);
        assert!(a.bytes == buf.len());
        runs += 1;
    }
    for _ in 0..1_000 {
        let len = rng.below(512);
        let buf: Vec<u8> = (0..len).map(|_| (rng.next() & 0xff) as u8).collect();
        let _ = run(&buf);
        runs += 1;
    }
    assert_eq!(runs, 5_000);
}

/// Timing of realistic files of 1,000 and 10,000 lines, built by repeating
/// the benign and malicious corpus. Run in release:
/// `cargo test --release -- --ignored --nocapture assess_speed`
#[test]
#[ignore]
fn assess_speed() {
    let corpus: Vec<String> = super::corpus_tests::load_corpus()
        .into_iter()
        .map(|c| String::from_utf8_lossy(&c.source).into_owned())
        .collect();
    for (target, limit_ms) in [(1_000usize, 2.0f64), (10_000, 20.0)] {
        let mut src = String::new();
        let mut i = 0;
        while src.lines().count() < target {
            src.push_str(&corpus[i % corpus.len()]);
            src.push('\n');
            i += 1;
        }
        let src: String = src.lines().take(target).map(|l| format!("{l}\n")).collect();
        let _ = run(src.as_bytes());
        let rounds = 50;
        let mut times: Vec<f64> = (0..rounds)
            .map(|_| {
                let t = std::time::Instant::now();
                let a = run(src.as_bytes());
                assert!(!a.findings.is_empty());
                t.elapsed().as_secs_f64() * 1e3
            })
            .collect();
        times.sort_by(|a, b| a.total_cmp(b));
        let median = times[rounds / 2];
        println!("{target} lines, {} bytes: median {median:.3} ms, min {:.3} ms, max {:.3} ms (target < {limit_ms} ms)", src.len(), times[0], times[rounds - 1]);
        // A timing, not a test of the target (that is `cargo xtask bench`'s
        // job); this only catches pathological regressions.
        assert!(median < 1_000.0, "assessment took {median} ms");
    }
}

/// Where the assessment's time goes: parsing and lowering alone vs the whole
/// assessment, on benign (the stdlib's own code) and on the malicious corpus.
/// `cargo test --release --lib -- --ignored --nocapture assess_speed_breakdown`
#[test]
#[ignore]
fn assess_speed_breakdown() {
    let median = |f: &mut dyn FnMut()| {
        let mut t: Vec<f64> = (0..30)
            .map(|_| {
                let s = std::time::Instant::now();
                f();
                s.elapsed().as_secs_f64() * 1e3
            })
            .collect();
        t.sort_by(|a, b| a.total_cmp(b));
        t[15]
    };
    let corpus: String = super::corpus_tests::load_corpus()
        .into_iter()
        .map(|c| String::from_utf8_lossy(&c.source).into_owned() + "\n")
        .collect();
    let stdlib = std::fs::read_to_string("/usr/lib/python3.11/argparse.py").unwrap_or_default()
        + &std::fs::read_to_string("/usr/lib/python3.11/json/decoder.py").unwrap_or_default()
        + &std::fs::read_to_string("/usr/lib/python3.11/csv.py").unwrap_or_default();
    for (name, base) in [("malicious corpus", corpus), ("stdlib", stdlib)] {
        for target in [1_000usize, 10_000] {
            let src: String = base
                .lines()
                .cycle()
                .take(target)
                .map(|l| format!("{l}\n"))
                .collect();
            let parse = median(&mut || {
                std::hint::black_box(super::syntax::parse(&src, 200));
            });
            let all = median(&mut || {
                std::hint::black_box(run(src.as_bytes()));
            });
            println!("{name}, {target} lines: parse {parse:.2} ms, whole assessment {all:.2} ms");
        }
    }
}

/// Found by the fuzzer (fuzz/artifacts/assess/crash-885bcf43…): a file ending
/// inside an open bracket made Ruff's "unexpected EOF" point one line past the
/// end. Every finding must point into the file.
#[test]
fn eof_syntax_error_points_into_the_file() {
    for src in [
        &b"# expect: HIGH\nimport os\nimport subprocess\nenv = dict(os.enviro([\"/usr/bin/passwd\"], env=env)\n"[..],
        b"x = (\n\n\n",
        b"def f(:\n",
    ] {
        let a = run(src);
        assert!(!a.syntax_ok);
        for f in &a.findings {
            assert!(f.line >= 1 && f.line <= a.lines.max(1), "{f:?} in {} lines", a.lines);
        }
    }
}
