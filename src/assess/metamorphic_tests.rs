//! Robustness to respelling: the corpus assessed again after behaviour-
//! preserving rewrites (xtask/assess_mutate.py: names changed, literals
//! hoisted into constants, module functions called through an alias, a
//! pass-through helper, a dict of callables or `getattr`, module code moved
//! into a function), one transform at a time and all at once.
//!
//! Scripts written blind rate much worse than the corpus, and part of the gap
//! is spelling: a behaviour the rules recognise in one spelling is missed in
//! another. This test measures that mechanically. For each transform: of the
//! malicious scripts the original rates HIGH or BLOCKED, how many respellings
//! still are; of those rated BLOCKED, how many stay BLOCKED; of the benign
//! scripts rated below HIGH, how many respellings are raised to HIGH or
//! BLOCKED. A transform that changes nothing in a script writes no mutant, so
//! each measure counts only real respellings.
//!
//! The table in docs/assessment.md ("Robustness to respelling") is this
//! test's output and the test fails when the two differ; `cargo xtask
//! assess-table` rewrites it (MAIBOX_WRITE_ASSESSMENT_TABLE=1). The floors
//! ([`FLOORS`]) are what the engine reaches, so that a regression fails.
//! MAIBOX_RESPELL_DETAIL=1 also prints, per transform, the scripts that drop
//! and the rule ids their respellings lose.
//!
//! The mutator needs Python 3.9 or later (`ast.unparse`); without
//! /usr/bin/python3 or `python3` on PATH the test says so and passes (CI has
//! Python, so it runs there).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::{assess, AssessConfig, Verdict};

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/assess");
const MUTATOR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/xtask/assess_mutate.py");
const BEGIN: &str = "<!-- respelling-table:begin (cargo xtask assess-table) -->";
const END: &str = "<!-- respelling-table:end -->";

/// The transforms assessed, in the table's order (all of the mutator's).
const TRANSFORMS: [&str; 9] = [
    "identity", "rename", "hoist", "alias", "wrapper", "dispatch", "getattr", "mainwrap", "all",
];

/// Per transform, a floor on the share of flagged malicious scripts whose
/// respellings stay flagged and on the share of BLOCKED ones that stay
/// BLOCKED, and a ceiling on the share of benign respellings raised to
/// HIGH or BLOCKED.
struct Floor {
    transform: &'static str,
    kept_flagged: f64,
    kept_blocked: f64,
    benign_raised: f64,
}

/// What the engine reaches once it sees through the respellings (rounded
/// down, the ceilings up), so that a regression fails. Before (3c7ee1c):
/// wrapper 367/913 flagged kept, 244/864 BLOCKED kept, 28/612 benign
/// raised; mainwrap 743/823, 674/771, 10/531; hoist 893/929, 827/871,
/// 9/614; all 661/945, 545/883, 20/622 (docs/assessment.md has the whole
/// table, before and after). With the nineteenth round merged: hoist 935/943,
/// 872/883, 10/614 (one benign respelling more raised); wrapper 888/927,
/// 836/876, 12/612; all 940/959, 872/895, 17/622. With the eighteenth batch
/// held out, and f-strings, tables looked up by unknown keys, reversed and
/// hex-encoded words read (the twentieth session): identity 996/997 (the
/// one drop a mass update that was flagged only because the literal's
/// first piece lacked its `WHERE`), hoist 11/641 benign raised, wrapper
/// 928/967, 873/913 (after the fixes of the held-out misses). With the
/// nineteenth batch held out: wrapper 962/1005, 905/948; all 1015/1037,
/// 942/967, 18/680. After the twenty-first session's engine work (seven
/// more flagged, whose names split by `+` or codes a hoisted constant
/// hides again): hoist 1018/1028, 950/963; wrapper 970/1012, 912/956.
/// With the twentieth batch held out: hoist 1062/1074, 991/1006; wrapper
/// 1013/1058, 951/999; all 1067/1090, 990/1018, 18/710.
/// After the twenty-second session's engine work (the batch's misses
/// caught, some of them only as written): hoist 1065/1077, 996/1012;
/// all 1070/1093, 995/1024, 18/713. With the twenty-first batch held out:
/// wrapper 1056/1105, 993/1046; all 1113/1137, 1035/1065, 18/742.
/// After the twenty-third session's engine work (three look-alikes no
/// longer flagged, so their respellings count; one of them, a calculator
/// whose validator is recognised by its calls' names, is raised again when
/// `ast` is aliased or its calls dispatched): alias and dispatch 9/726
/// benign raised, hoist 9/739 (from 11/734: literal tables hoisted into
/// constants are still literal choices), all 1116/1141, 1038/1069, 17/747.
/// With the twenty-second batch held out and the twenty-fourth session's
/// engine work (lambdas, queues, methods held in names, commands returned
/// by helpers; a validator recognised by what its calls resolve to, so the
/// calculator is no longer raised when `ast` is aliased or dispatched; a
/// clock read through a pass-through helper bounds a flood): alias 7/758
/// and dispatch 8/758 benign raised, wrapper 1114/1160, 1051/1101, 12/767;
/// all 1167/1192, 1089/1120, 15/779 (two of the newly caught, a connection
/// flood among them, are caught only as written under some respellings).
const FLOORS: [Floor; 9] = [
    floor("identity", 0.998, 0.998, 0.0),
    floor("rename", 0.997, 0.997, 0.0),
    floor("hoist", 0.988, 0.984, 0.012),
    floor("alias", 0.996, 0.997, 0.01),
    floor("wrapper", 0.96, 0.954, 0.016),
    floor("dispatch", 0.993, 0.994, 0.011),
    floor("getattr", 0.997, 0.997, 0.004),
    floor("mainwrap", 1.0, 1.0, 0.002),
    floor("all", 0.979, 0.972, 0.02),
];

const fn floor(transform: &'static str, flagged: f64, blocked: f64, raised: f64) -> Floor {
    Floor {
        transform,
        kept_flagged: flagged,
        kept_blocked: blocked,
        benign_raised: raised,
    }
}

/// One corpus script: its path under [`ROOT`] and its class.
struct Script {
    rel: String,
    malicious: bool,
    source: Vec<u8>,
}

/// Every script of the corpus (tuned, held-out and original parts),
/// labelled by its `# expect:` line: HIGH and BLOCKED are malicious (the
/// family test holds each file's directory to the same rule). The blind
/// batch is left out: it measures what no one has looked at, and a table
/// listing its scripts' lost rules would show them to whoever tunes next.
fn load_scripts() -> Vec<Script> {
    let mut files = Vec::new();
    let blind = Path::new(ROOT).join("blind");
    let mut dirs = vec![PathBuf::from(ROOT)];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p == blind {
                continue;
            }
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "py") {
                files.push(p);
            }
        }
    }
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let source = std::fs::read(&p).unwrap();
            let text = String::from_utf8_lossy(&source);
            let first = text.lines().next().unwrap_or_default();
            let expect: Verdict = first
                .strip_prefix("# expect:")
                .unwrap_or_else(|| panic!("{} lacks `# expect:`", p.display()))
                .trim()
                .parse()
                .unwrap();
            let rel = p.strip_prefix(ROOT).unwrap().to_string_lossy().into_owned();
            Script {
                rel,
                malicious: expect >= Verdict::High,
                source,
            }
        })
        .collect()
}

/// The Python that runs the mutator, or why there is none.
fn python() -> Result<PathBuf, String> {
    let candidates = [PathBuf::from("/usr/bin/python3"), PathBuf::from("python3")];
    for py in candidates {
        let ok = Command::new(&py)
            .args([
                "-c",
                "import ast, sys; sys.exit(not hasattr(ast, 'unparse'))",
            ])
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            return Ok(py);
        }
    }
    Err("neither /usr/bin/python3 nor python3 on PATH runs, or has no ast.unparse (3.9+)".into())
}

/// Runs the mutator over the corpus (its parts but the blind batch) into
/// `out`.
fn mutate(py: &Path, out: &Path) {
    let blind = Path::new(ROOT).join("blind");
    let mut parts: Vec<PathBuf> = std::fs::read_dir(ROOT)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir() && *p != blind)
        .collect();
    parts.sort();
    let run = Command::new(py)
        .arg(MUTATOR)
        .arg("--out")
        .arg(out)
        .args(["--root", ROOT, "--transforms", &TRANSFORMS.join(",")])
        .args(&parts)
        .output()
        .unwrap();
    // Its report (scripts not parsed, rewrites dropped) matters only when
    // it fails: then the end of it says why.
    let err = String::from_utf8_lossy(&run.stderr);
    let tail: Vec<&str> = err.lines().rev().take(20).collect();
    assert!(
        run.status.success(),
        "{MUTATOR} failed: {}\n{}",
        run.status,
        tail.into_iter().rev().collect::<Vec<_>>().join("\n")
    );
}

/// A script's verdict and the rule ids of its findings.
#[derive(Clone)]
struct Seen {
    verdict: Verdict,
    rules: Vec<String>,
}

fn seen(name: &str, source: &[u8]) -> Seen {
    let a = assess(name, source, &AssessConfig::default()).unwrap();
    let mut rules: Vec<String> = a.findings.into_iter().map(|f| f.rule).collect();
    rules.sort();
    rules.dedup();
    Seen {
        verdict: a.verdict,
        rules,
    }
}

/// Assesses the sources on every core (the corpus times ten transforms is
/// about 15,000 assessments).
fn assess_many(jobs: &[(String, Vec<u8>)]) -> Vec<Seen> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunk = jobs.len().div_ceil(threads).max(1);
    std::thread::scope(|s| {
        let handles: Vec<_> = jobs
            .chunks(chunk)
            .map(|part| {
                s.spawn(move || part.iter().map(|(n, src)| seen(n, src)).collect::<Vec<_>>())
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    })
}

/// The three measures of one transform, and what its respellings lost.
#[derive(Default)]
struct Drift {
    flagged: usize,
    kept_flagged: usize,
    blocked: usize,
    kept_blocked: usize,
    benign: usize,
    raised: usize,
    /// Rule ids present in a flagged original and absent from its
    /// respelling that dropped below HIGH (or out of BLOCKED), with the
    /// scripts.
    lost: BTreeMap<String, Vec<String>>,
    raised_scripts: Vec<String>,
}

impl Drift {
    fn add(&mut self, s: &Script, orig: &Seen, m: &Seen) {
        let high = |v: Verdict| v >= Verdict::High;
        if !s.malicious {
            if !high(orig.verdict) {
                self.benign += 1;
                self.raised += usize::from(high(m.verdict));
                if high(m.verdict) {
                    self.raised_scripts
                        .push(format!("{} ({})", s.rel, m.verdict));
                }
            }
            return;
        }
        if !high(orig.verdict) {
            return;
        }
        self.flagged += 1;
        self.kept_flagged += usize::from(high(m.verdict));
        let was_blocked = orig.verdict == Verdict::Blocked;
        if was_blocked {
            self.blocked += 1;
            self.kept_blocked += usize::from(m.verdict == Verdict::Blocked);
        }
        if !high(m.verdict) || (was_blocked && m.verdict != Verdict::Blocked) {
            for r in orig.rules.iter().filter(|r| !m.rules.contains(r)) {
                let who = format!("{} ({} -> {})", s.rel, orig.verdict, m.verdict);
                self.lost.entry(r.clone()).or_default().push(who);
            }
        }
    }

    fn row(&self, transform: &str) -> String {
        let pct = |a: usize, b: usize| {
            if b == 0 {
                "-".to_string()
            } else {
                format!("{a}/{b} ({:.1}%)", 100.0 * a as f64 / b as f64)
            }
        };
        format!(
            "| {transform} | {} | {} | {} |",
            pct(self.kept_flagged, self.flagged),
            pct(self.kept_blocked, self.blocked),
            pct(self.raised, self.benign),
        )
    }

    fn ratio(a: usize, b: usize, empty: f64) -> f64 {
        if b == 0 {
            empty
        } else {
            a as f64 / b as f64
        }
    }
}

/// The drift of every transform, and the table.
fn measure(scripts: &[Script], out: &Path) -> (Vec<Drift>, String) {
    // Each job: the script, and the transform (`None` for the original).
    let mut jobs: Vec<(String, Vec<u8>)> = Vec::new();
    let mut what: Vec<(usize, Option<usize>)> = Vec::new();
    for (i, s) in scripts.iter().enumerate() {
        jobs.push((s.rel.clone(), s.source.clone()));
        what.push((i, None));
        for (t, name) in TRANSFORMS.iter().enumerate() {
            if let Ok(src) = std::fs::read(out.join(name).join(&s.rel)) {
                jobs.push((format!("{name}/{}", s.rel), src));
                what.push((i, Some(t)));
            }
        }
    }
    let seen = assess_many(&jobs);
    let mut drift: Vec<Drift> = TRANSFORMS.iter().map(|_| Drift::default()).collect();
    let mut orig = 0;
    for (job, &(i, t)) in what.iter().enumerate() {
        match t {
            None => orig = job,
            Some(t) => drift[t].add(&scripts[i], &seen[orig], &seen[job]),
        }
    }
    let mut table = String::from(
        "| transform | flagged malicious still HIGH or BLOCKED | BLOCKED still BLOCKED | benign raised to HIGH or BLOCKED |\n|---|---|---|---|\n",
    );
    for (d, name) in drift.iter().zip(TRANSFORMS) {
        table.push_str(&d.row(name));
        table.push('\n');
    }
    (drift, table)
}

/// With MAIBOX_RESPELL_DETAIL set: the rule ids each transform loses most
/// often in the scripts that drop, with a few of those scripts.
fn print_detail(drift: &[Drift]) {
    for (d, name) in drift.iter().zip(TRANSFORMS) {
        let mut lost: Vec<_> = d.lost.iter().collect();
        lost.sort_by_key(|(rule, who)| (std::cmp::Reverse(who.len()), rule.as_str()));
        println!("== {name}: rule ids lost in the scripts that drop");
        for (rule, who) in lost.iter().take(12) {
            let some: Vec<&str> = who.iter().take(4).map(String::as_str).collect();
            println!("  {rule} x{}: {}", who.len(), some.join(", "));
        }
        if !d.raised_scripts.is_empty() {
            println!("  benign raised: {}", d.raised_scripts.join(", "));
        }
    }
}

fn check_floors(drift: &[Drift]) {
    for (d, f) in drift.iter().zip(&FLOORS) {
        let t = f.transform;
        let kept = Drift::ratio(d.kept_flagged, d.flagged, 1.0);
        let blocked = Drift::ratio(d.kept_blocked, d.blocked, 1.0);
        let raised = Drift::ratio(d.raised, d.benign, 0.0);
        assert!(
            kept >= f.kept_flagged,
            "{t}: {kept:.3} of flagged malicious respellings stay flagged, floor {}",
            f.kept_flagged
        );
        assert!(
            blocked >= f.kept_blocked,
            "{t}: {blocked:.3} of BLOCKED respellings stay BLOCKED, floor {}",
            f.kept_blocked
        );
        assert!(
            raised <= f.benign_raised,
            "{t}: {raised:.3} of benign respellings raised to HIGH, ceiling {}",
            f.benign_raised
        );
    }
}

/// Fails when docs/assessment.md's table differs; rewrites it when asked.
fn check_doc(table: &str) {
    super::family_tests::keep_doc_table(BEGIN, END, table, "respelling table");
}

#[test]
fn respelling_table_and_floors() {
    let py = match python() {
        Ok(py) => py,
        Err(why) => {
            println!("respelling_table_and_floors skipped: {why}");
            return;
        }
    };
    let started = std::time::Instant::now();
    let out = tempfile::tempdir().unwrap();
    mutate(&py, out.path());
    let mutated = started.elapsed();
    let scripts = load_scripts();
    let (drift, table) = measure(&scripts, out.path());
    println!("{table}");
    println!(
        "{} scripts; mutator {:.1} s, total {:.1} s",
        scripts.len(),
        mutated.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    if std::env::var_os("MAIBOX_RESPELL_DETAIL").is_some() {
        print_detail(&drift);
    }
    check_floors(&drift);
    check_doc(&table);
}
