//! The labelled corpus under tests/fixtures/assess: benign scripts must never
//! be BLOCKED, malicious ones never LOW, and each file's first line
//! (`# expect: VERDICT`) is the verdict it must get.

use std::path::Path;

use super::{assess, AssessConfig, Verdict};

pub(super) struct Case {
    pub name: String,
    pub malicious: bool,
    pub expect: Verdict,
    pub source: Vec<u8>,
}

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/assess");

pub(super) fn load_corpus() -> Vec<Case> {
    let mut out = Vec::new();
    for (dir, malicious) in [("benign", false), ("malicious", true)] {
        let path = Path::new(ROOT).join(dir);
        let mut entries: Vec<_> = std::fs::read_dir(&path)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for p in entries
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "py"))
        {
            let source = std::fs::read(&p).unwrap();
            let first = String::from_utf8_lossy(&source)
                .lines()
                .next()
                .unwrap_or_default()
                .to_string();
            let expect = first
                .strip_prefix("# expect:")
                .unwrap_or_else(|| panic!("{} lacks a `# expect: VERDICT` first line", p.display()))
                .trim()
                .parse::<Verdict>()
                .unwrap();
            out.push(Case {
                name: format!("{dir}/{}", p.file_name().unwrap().to_string_lossy()),
                malicious,
                expect,
                source,
            });
        }
    }
    out
}

#[test]
fn corpus_verdicts() {
    let cases = load_corpus();
    let benign = cases.iter().filter(|c| !c.malicious).count();
    let malicious = cases.len() - benign;
    assert!(
        benign >= 30 && malicious >= 40,
        "corpus too small: {benign} benign, {malicious} malicious"
    );

    let cfg = AssessConfig::default();
    let (mut tp, mut fp, mut fn_, mut tn) = (0usize, 0usize, 0usize, 0usize);
    let (mut tp_any, mut fp_any) = (0usize, 0usize);
    let mut hard = Vec::new();
    let mut mismatches = Vec::new();
    for c in &cases {
        let a = assess(&c.name, &c.source, &cfg).unwrap();
        // "Flagged" = would run under the strictest profile or be refused.
        let flagged = a.verdict >= Verdict::High;
        match (c.malicious, flagged) {
            (true, true) => tp += 1,
            (true, false) => fn_ += 1,
            (false, true) => fp += 1,
            (false, false) => tn += 1,
        }
        if a.verdict > Verdict::Low {
            if c.malicious {
                tp_any += 1;
            } else {
                fp_any += 1;
            }
        }
        if (!c.malicious && a.verdict == Verdict::Blocked)
            || (c.malicious && a.verdict == Verdict::Low)
        {
            hard.push(format!(
                "{}: got {}\n{}",
                c.name,
                a.verdict,
                super::render_text(&a)
            ));
        }
        if a.verdict != c.expect {
            mismatches.push(format!(
                "{}: expected {}, got {}\n{}",
                c.name,
                c.expect,
                a.verdict,
                super::render_text(&a)
            ));
        }
    }
    let precision = tp as f64 / (tp + fp).max(1) as f64;
    let recall = tp as f64 / (tp + fn_).max(1) as f64;
    let precision_any = tp_any as f64 / (tp_any + fp_any).max(1) as f64;
    let recall_any = tp_any as f64 / malicious.max(1) as f64;
    println!("corpus: {benign} benign, {malicious} malicious");
    println!("flagged = HIGH or BLOCKED: tp={tp} fp={fp} fn={fn_} tn={tn} precision={precision:.3} recall={recall:.3}");
    println!("flagged = above LOW:       precision={precision_any:.3} recall={recall_any:.3}");
    println!(
        "exact verdict matches: {}/{}",
        cases.len() - mismatches.len(),
        cases.len()
    );
    for m in &mismatches {
        println!("MISMATCH {m}");
    }
    assert!(
        hard.is_empty(),
        "benign BLOCKED or malicious LOW:\n{}",
        hard.join("\n")
    );
    assert!(
        mismatches.is_empty(),
        "{} verdict mismatches (see output)",
        mismatches.len()
    );
}
