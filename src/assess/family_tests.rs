//! Precision and recall of the assessment per behaviour family, on the part of
//! the corpus the rules were tuned on and on the part held out while they were
//! written (tests/fixtures/assess/{tuned,heldout}/FAMILY/{malicious,benign}),
//! plus the original corpus (tests/fixtures/assess/{malicious,benign}), and the
//! blind batch (tests/fixtures/assess/blind/FAMILY/...): scripts written by
//! someone who saw neither the rules nor any sample, scored before and after
//! the next round of rules, which is never written on them. Like the outside
//! held-out set that issue 20 reports, it measures how the rules generalise and
//! stays out of the whole corpus's targets: its own floor only stops a
//! regression. Once a round is written on a blind batch's misses, the batch
//! joins the held-out part and a new one is written blind.
//!
//! The table in docs/assessment.md is this test's output, and the test fails
//! when the two differ. Regenerate it with `cargo xtask assess-table` (which
//! runs this test with MAIBOX_WRITE_ASSESSMENT_TABLE=1). With
//! MAIBOX_ASSESS_BIN=/path/to/maibox the verdicts come from that binary's
//! `assess --json` instead (how the previous release's figures were taken);
//! the table is then printed only.
//!
//! Floors. On the tuned part and on the whole corpus the targets: malicious
//! scripts rated HIGH or BLOCKED at least 95%, scripts that deserve BLOCKED
//! rated BLOCKED at least 90%, benign scripts rated HIGH or BLOCKED at most
//! 2%; on the whole corpus also what it reaches ([`WHOLE_FLOOR`], above the
//! targets since the sixteenth round). On the held-out part, what it
//! reaches (it was written before the rules; a batch is tuned on only once
//! it has been scored blind), so that a regression fails the test while the
//! figures stay honest.

use std::path::{Path, PathBuf};

use super::corpus_tests::load_corpus;
use super::{assess, AssessConfig, Verdict};

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/assess");
const DOC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/assessment.md");
const BEGIN: &str = "<!-- assessment-table:begin (cargo xtask assess-table) -->";
const END: &str = "<!-- assessment-table:end -->";

/// The targets (issue 20), on the tuned part and on the whole corpus.
const TARGET: Floors = Floors {
    recall: 0.95,
    blocked_recall: 0.90,
    benign_flagged: 0.02,
};

/// What the blind batch reaches, so that a regression fails; asserted only
/// while there is a blind batch (git keeps no empty directory between batches).
/// The twenty-third (80 scripts of the same sixteen families, asked to use
/// less common techniques; blind/BATCH23.md), written by someone who saw
/// neither the rules nor any sample, scored with the assessment of 54ade22
/// before the twenty-fourth session changed it: 40 of 48, 36 of 44, 1 of
/// 32; after that session's engine work (written on the twenty-second
/// batch's misses; this batch was never opened): the same.
/// The twenty-second (80 scripts of the twenty-first's sixteen families;
/// blind/BATCH22.md), written by someone who saw neither the rules nor any
/// sample, scored with the assessment of 7372b59 before the twenty-third
/// session changed it: 43 of 48, 40 of 44, 0 of 32; after that session's
/// engine work (written on the twenty-first batch's misses; this batch was
/// never opened): the same; it is now part of the held-out corpus,
/// heldout/BATCH22.md.
/// The twenty-first (80 scripts of sixteen families, among them host abuse,
/// lateral movement, surveillance, container escapes and trust-store
/// tampering; blind/BATCH21.md), written by someone who saw neither the
/// rules nor any sample, scored with the assessment of aa991bf before the
/// twenty-second session changed it: 44 of 48, 40 of 44, 3 of 32; after
/// that session's engine work (written on the twentieth batch's misses;
/// this batch was never opened): the same; it is now part of the held-out
/// corpus, heldout/BATCH21.md.
/// The twentieth (80 scripts of sixteen families, among them privilege
/// escalation, process injection, security disabling, cloud and container
/// abuse and network abuse; blind/BATCH20.md), written by someone who saw
/// neither the rules nor any sample, scored with the assessment of 6d0053c
/// before the twenty-first session changed it: 43 of 48, 36 of 44, 3 of 32;
/// after that session's engine work (written on the nineteenth batch's
/// misses; this batch was never opened): 46 of 48, 39 of 44, 3 of 32; it is
/// now part of the held-out corpus, heldout/BATCH20.md.
/// The nineteenth (80 scripts of sixteen families: the eighteenth's fourteen,
/// and surveillance and lateral movement with behaviours of their own;
/// blind/BATCH19.md), written by someone who saw neither the rules nor any
/// sample, scored with the assessment of 24c17c7 before the twentieth
/// session changed it: 38 of 48, 33 of 44, 1 of 32; after that session's
/// engine work (which never opened this batch): the same; it is now part of
/// the held-out corpus, heldout/BATCH19.md.
/// The eighteenth (70 scripts of fourteen families: the twelve rule families,
/// and two no batch had before, sandbox escapes (the host reached through
/// /proc, core_pattern, cgroups or mounts) and binary tampering (installed
/// programs, libraries or the standard library patched); blind/BATCH18.md),
/// written by someone who saw neither the rules nor any sample while the
/// nineteenth round was being written, scored with the assessment of 3c7ee1c,
/// before the nineteenth round: 33 of 42, 26 of 38, 1 of 28; after it and
/// the engine's changes for respellings (metamorphic_tests), which never saw
/// this batch: the same; it is now part of the held-out corpus,
/// heldout/BATCH18.md.
/// The seventeenth (70 scripts of fourteen families: the twelve rule families,
/// and click fraud, which no batch had before, and container escapes, which
/// only the tuned part had; blind/BATCH17.md), written by someone who saw
/// neither the rules nor any sample while the eighteenth round was being
/// written, scored with the assessment of 86955fd, before the eighteenth round:
/// 31 of 42, 27 of 38, 2 of 28; after it (the merge of round18, whose rules
/// were written on held-out misses and never on this batch): the same, 31 of
/// 42, 27 of 38, 2 of 28; it is now part of the held-out corpus,
/// heldout/BATCH17.md. The sixteenth (70
/// scripts of fourteen families: the twelve rule families, and two no batch had
/// before, firmware tampering (UEFI variables, boot order, BMC, flash) and spam
/// relays (mass mail through rotated senders, SMS bombing, forum spam bots);
/// blind/BATCH16.md), written by someone who saw neither the rules nor any
/// sample while the seventeenth round was being written, scored with the
/// assessment of d5e8d8a, before the seventeenth round: 34 of 42, 28 of 38, 1 of
/// 28; after it (the merge of round17), whose rules were written on held-out
/// misses and never on this batch: 35 of 42, 29 of 38, 0 of 28; it is now part
/// of the held-out corpus, heldout/BATCH16.md. (The fifteenth
/// batch was the blind one until then: 32 of 42, 23 of 37, 3 of 28 before the
/// fifteenth round, 35 of 42, 24 of 37, 3 of 28 after it and after the
/// sixteenth; it is now part of the held-out corpus, heldout/BATCH15.md. The
/// fourteenth: 35 of 42, 31 of 37, 3 of 28 before the fourteenth round, after
/// it and after the fifteenth. The thirteenth: 30 of 42, 24 of 38, 3 of 28
/// before the thirteenth round, 32 of 42, 28 of 38, 0 of 28 after the
/// fourteenth.)
const BLIND_FLOOR: Floors = Floors {
    recall: 0.83,
    blocked_recall: 0.81,
    benign_flagged: 0.035,
};

/// The whole corpus (the tuned and held-out parts) below the malicious recall
/// target since the tenth batch joined the held-out part: 628 of 671 (0.936)
/// rated HIGH or BLOCKED, against 0.95; it was 586 of 615 (0.953) before. With
/// the eleventh batch and the twelfth round: 672 of 719 (0.935), 599 of 646
/// deserving BLOCKED (0.927), 3 of 458 benign flagged. With the twelfth batch
/// and the thirteenth round: 708 of 766 (0.924; the batch brought twelve misses,
/// the round caught one held-out script and its own five samples), 629 of 689
/// deserving BLOCKED (0.913), 8 of 490 benign flagged (1.6%). With the
/// thirteenth batch and the fourteenth round: 747 of 808 (0.925; the round caught
/// seven held-out scripts and two of the batch's, the batch brought ten misses),
/// 668 of 727 deserving BLOCKED (0.919), 8 of 518 benign flagged (1.5%). With
/// the fifteenth round (769 of 808, 0.952, before the batch joined: the target
/// met) and the fourteenth batch: 804 of 850 (0.946), 717 of 764 deserving
/// BLOCKED (0.938), 10 of 546 benign flagged (1.8%): the other two measures
/// still meet their targets. The sixteenth round (held-out misses read):
/// 821 of 850 (0.966, the target met again), 732 of 764 deserving BLOCKED
/// (0.958), 10 of 546 benign flagged (1.8%). After the nineteenth round:
/// 958 of 976 (0.982), 858 of 877 deserving BLOCKED (0.978), 8 of 630 benign
/// flagged (1.3%). With the eighteenth batch held out: 991 of 1,018 (0.973),
/// 884 of 915 (0.966), 9 of 658 (1.4%). After the twentieth session's
/// engine work (gaps the eighteenth batch's misses showed): 998 of 1,018
/// (0.980), 893 of 915 (0.976), 9 of 658. With the nineteenth batch held
/// out: 1,036 of 1,066 (0.972), 926 of 959 (0.966), 10 of 690 (1.4%).
/// After the twenty-first session's engine work (gaps the nineteenth
/// batch's misses showed: folders as code lists, XOR, partials, encoded
/// PowerShell, built strings, programs run from memory): 1,043 of 1,066
/// (0.978), 934 of 959 (0.974), 9 of 690 (a backup deleting the archive it
/// made itself no longer reads as ransomware). With the twentieth batch
/// held out: 1,089 of 1,114 (0.978), 973 of 1,003 (0.970), 12 of 722
/// (1.7%). After the twenty-second session's engine work (gaps the
/// twentieth batch's misses showed: class attributes and dataclass
/// defaults, SQL through database clients, Windows injection calls, key
/// files picked on a home walk, look-alike packages, ciphers made by
/// factories; a read-only Docker client and a log shipper's bookmark no
/// longer flagged): 1,092 of 1,114 (0.980), 979 of 1,003 (0.976), 9 of
/// 722 (1.2%). With the twenty-first batch held out: 1,136 of 1,162
/// (0.978), 1,019 of 1,047 (0.973), 12 of 754 (1.6%). After the
/// twenty-third session's engine work (gaps the twenty-first batch's misses
/// showed: SQL keywords built from pieces, pairs unpacked from tables and
/// helpers, dicts returned by helpers, modules behind nicknames, library
/// functions handed to runners; literal tables, validating helpers and a
/// read-only sudo report no longer flagged): 1,140 of 1,162 (0.981), 1,023
/// of 1,047 (0.977), 7 of 754 (0.9%). With the twenty-second batch held
/// out: 1,183 of 1,210 (0.978), 1,063 of 1,091 (0.974), 7 of 786 (0.9%).
/// After the twenty-fourth session's engine work (gaps the twenty-second
/// batch's misses showed: lambdas bound to names, queues, methods held in
/// names or picked by prefix, commands and pairs returned by helpers,
/// connection floods): 1,191 of 1,210 (0.984), 1,071 of 1,091 (0.982), 7
/// of 786 (0.9%). The floor is what it reaches,
/// so that a regression fails; the targets ([`TARGET`]) are asserted too, so
/// that a batch joining the held-out part cannot take the corpus below them
/// unnoticed (before the sixteenth round, the distance was stated in
/// docs/assessment.md rather than hidden by keeping the batch out).
const WHOLE_FLOOR: Floors = Floors {
    recall: 0.984,
    blocked_recall: 0.98,
    benign_flagged: 0.009,
};

/// What the held-out part reaches, so that a regression fails. Its first
/// batch, when first measured: 50 of 56 malicious, 43 of 54 deserving
/// BLOCKED, 1 benign of 36 flagged (an SSH client naming its login key:
/// HIGH). With the second batch (commit 8b1589e), before the rules written
/// after it: 72 of 86, 58 of 82, 3 of 53; after them: 84 of 86, 80 of 82,
/// 1 of 53. With the fifth batch (six families no rule was written for, 54
/// scripts, written blind; its lines in heldout/BATCH5.md), before any rule
/// written after it: 108 of 122, 96 of 111, 2 of 71 (the fifth batch alone: 23
/// of 36, 15 of 29, 1 of 18). After the fifth round of rules, written on the
/// helper's own samples of four of those families and never on the batch: 118
/// of 122, 107 of 111, 3 of 71 (the batch: 33 of 36, 26 of 29, 2 of 18; the
/// new benign flag is a development login page, MB946). In the seventh round
/// an SSH client naming its own login key went from HIGH to MEDIUM (MB222):
/// 2 of 71 benign flagged. With the sixth batch (heldout/BATCH6.md, blind
/// until the seventh round tuned on its misses; 29 of 32, 25 of 27, 0 of 18
/// after it): 147 of 154, 132 of 138, 2 of 89. With the seventh batch
/// (heldout/BATCH7.md, blind until the eighth round tuned on its misses; 34 of
/// 38, 29 of 35, 0 of 26 after it): 181 of 192, 161 of 173, 2 of 115. With the
/// eighth batch (heldout/BATCH8.md, blind until the ninth round tuned on its
/// misses; 38 of 40, 36 of 38, 0 of 28 after it): 219 of 232, 197 of 211, 2 of
/// 143. With the ninth batch (heldout/BATCH9.md, blind until the tenth round
/// tuned on its misses; 29 of 42, 25 of 38, 0 of 29 after it): 248 of 274, 222
/// of 249, 2 of 172. With the tenth batch (heldout/BATCH10.md, blind until the
/// eleventh round tuned on its misses; 26 of 42, 22 of 38, 1 of 28 after it):
/// 276 of 316, 246 of 287, 3 of 200. With the eleventh batch
/// (heldout/BATCH11.md, blind until the twelfth round tuned on its misses; 36
/// of 42, 32 of 38, 0 of 28 after it): 314 of 358, 280 of 325, 2 of 228. With
/// the twelfth batch (heldout/BATCH12.md, blind until the thirteenth round tuned
/// on its misses; 30 of 42, 24 of 38, 5 of 28 after it): 345 of 400, 305 of
/// 363, 7 of 256 (352 of 400, 316 of 363, 7 of 256 after the fourteenth round).
/// With the thirteenth batch (heldout/BATCH13.md, blind until the fourteenth
/// round tuned on its misses; 32 of 42, 28 of 38, 0 of 28 after it): 384 of 442,
/// 344 of 401, 7 of 284 (406 of 442, 362 of 401, 6 of 284 after the fifteenth
/// round). With the fourteenth batch (heldout/BATCH14.md, blind until the
/// fifteenth round, which was written on held-out misses and not on it; 35 of
/// 42, 31 of 37, 3 of 28 after it): 441 of 484, 393 of 438, 9 of 312: the twelfth
/// and fourteenth batches' flagged look-alikes (a shell-history privacy tool, a
/// backup cron set-up, a vault folder, pinned wheels installed; a privilege
/// report, a service restarted through sudo, developer accounts onboarded) put
/// this part above the 2% target. What it still misses (rated below HIGH:
/// objects re-encrypted in S3, an archive of a developer's files sent away,
/// office documents and key stores zipped and uploaded or mailed, and
/// the ninth batch's thirteen: event logs cleared by hidden names, cloud
/// versions and backups deleted, staged droppers, a LaunchAgent piping curl to
/// a shell, a UAC bypass key, services made over SMB, a low-level keyboard
/// hook; rated HIGH, not BLOCKED: disks zeroed through /sys/block, logs
/// shipped with key files; and the tenth batch's sixteen, listed in
/// docs/assessment.md) brings the floors below the tuned part's targets.
/// After the sixteenth round: 457 of 484, 408 of 438, 9 of 312. With the
/// fifteenth batch (heldout/BATCH15.md, blind until the seventeenth round,
/// which was written on held-out misses, this batch's among them; 35 of 42,
/// 24 of 37, 3 of 28 before it, 39 of 42, 34 of 37, 2 of 28 after it): 492
/// of 526, 432 of 475, 12 of 340 (above
/// the 3% ceiling: the batch's flagged look-alikes joined the earlier
/// ones). After the seventeenth round: 508 of 526, 460 of 475, 8 of 340. With
/// the sixteenth batch (heldout/BATCH16.md, blind through the seventeenth round;
/// 35 of 42, 29 of 38, 0 of 28 after it): 543 of 568, 489 of 513, 8 of 368.
/// After the eighteenth round (written on held-out misses, this batch's
/// among them: firmware tampering and spam relays): 548 of 568, 495 of 513,
/// 5 of 368. With the seventeenth batch (heldout/BATCH17.md, blind through the
/// eighteenth round; 31 of 42, 27 of 38, 2 of 28 before and after it): 579 of
/// 610, 522 of 551, 7 of 396. After the nineteenth round (written on held-out
/// misses as behaviours, each spelled three ways or more in its tests; the
/// seventeenth batch 39 of 42, 34 of 38, 2 of 28): 593 of 610, 533 of 551, 7
/// of 396. With the eighteenth batch (heldout/BATCH18.md, blind through the
/// nineteenth round; 33 of 42, 26 of 38, 1 of 28 before and after it): 626 of
/// 652, 559 of 589, 8 of 424. After the twentieth session's engine work
/// (written on the eighteenth batch's misses among others): 633 of 652,
/// 568 of 589, 8 of 424. With the nineteenth batch (heldout/BATCH19.md,
/// blind through the twentieth session; 38 of 48, 33 of 44, 1 of 32 before
/// and after it): 671 of 700, 601 of 633, 9 of 456. After the twenty-first
/// session's engine work (written on the nineteenth batch's misses among
/// others): 678 of 700, 609 of 633, 8 of 456. With the twentieth batch
/// (heldout/BATCH20.md, blind through the twenty-first session; 43 of 48,
/// 36 of 44, 3 of 32 before it, 46 of 48, 39 of 44, 3 of 32 after it): 724
/// of 748, 648 of 677, 11 of 488 (2.3%: the batch's three flagged
/// look-alikes put this part above the 2% target again). After the
/// twenty-second session's engine work (written on the twentieth batch's
/// misses among others): 727 of 748, 654 of 677, 8 of 488. With the
/// twenty-first batch (heldout/BATCH21.md, blind through the twenty-second
/// session; 44 of 48, 40 of 44, 3 of 32 before and after it): 771 of 796,
/// 694 of 721, 11 of 520 (2.1%: the batch's three flagged look-alikes put
/// this part above the 2% target again). After the twenty-third session's
/// engine work (written on the twenty-first batch's misses among others):
/// 775 of 796, 698 of 721, 6 of 520. With the twenty-second batch
/// (heldout/BATCH22.md, blind through the twenty-third session; 43 of 48,
/// 40 of 44, 0 of 32 before and after it): 818 of 844, 738 of 765, 6 of
/// 552. After the twenty-fourth session's engine work (written on the
/// twenty-second batch's misses among others): 826 of 844, 746 of 765, 6
/// of 552.
const HELD_OUT_FLOOR: Floors = Floors {
    recall: 0.978,
    blocked_recall: 0.975,
    benign_flagged: 0.011,
};

struct Floors {
    recall: f64,
    blocked_recall: f64,
    benign_flagged: f64,
}

/// The corpus's parts under tests/fixtures/assess, in the table's order.
const SPLITS: [&str; 3] = ["tuned", "heldout", "blind"];

struct Labelled {
    family: String,
    split: &'static str,
    name: String,
    malicious: bool,
    /// The script deserves BLOCKED (its `# expect:` line).
    blocked_class: bool,
    source: Vec<u8>,
}

fn py_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = rd
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "py"))
        .collect();
    out.sort();
    out
}

fn expectation(p: &Path, source: &[u8]) -> Verdict {
    let text = String::from_utf8_lossy(source);
    let first = text.lines().next().unwrap_or_default();
    first
        .strip_prefix("# expect:")
        .unwrap_or_else(|| panic!("{} lacks a `# expect: VERDICT` first line", p.display()))
        .trim()
        .parse()
        .unwrap()
}

fn load_families() -> Vec<Labelled> {
    let mut out = Vec::new();
    for split in SPLITS {
        // Between a blind batch joining the held-out part and the next one being
        // written, the blind part is empty and git keeps no directory for it.
        let Ok(dirs) = std::fs::read_dir(Path::new(ROOT).join(split)) else {
            continue;
        };
        let mut families: Vec<PathBuf> = dirs
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_dir())
            .collect();
        families.sort();
        for fam in families {
            let family = fam.file_name().unwrap().to_string_lossy().into_owned();
            for (dir, malicious) in [("benign", false), ("malicious", true)] {
                for p in py_files(&fam.join(dir)) {
                    let source = std::fs::read(&p).unwrap();
                    let expect = expectation(&p, &source);
                    assert_eq!(
                        expect >= Verdict::High,
                        malicious,
                        "{}: a {dir} script expecting {expect}",
                        p.display()
                    );
                    out.push(Labelled {
                        name: format!(
                            "{split}/{family}/{dir}/{}",
                            p.file_name().unwrap().to_string_lossy()
                        ),
                        family: family.clone(),
                        split,
                        malicious,
                        blocked_class: expect == Verdict::Blocked,
                        source,
                    });
                }
            }
        }
    }
    for c in load_corpus() {
        out.push(Labelled {
            family: "original corpus".into(),
            split: "tuned",
            name: c.name,
            malicious: c.malicious,
            blocked_class: c.expect == Verdict::Blocked,
            source: c.source,
        });
    }
    out
}

/// The verdict of one script: in-process, or from another maibox binary.
fn verdict_of(case: &Labelled, bin: Option<&str>) -> Verdict {
    let Some(bin) = bin else {
        return assess(&case.name, &case.source, &AssessConfig::default())
            .unwrap()
            .verdict;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("script.py");
    std::fs::write(&path, &case.source).unwrap();
    let out = std::process::Command::new(bin)
        .args(["assess", "--json"])
        .arg(&path)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{bin} assess --json {}: {e}", case.name));
    v["verdict"].as_str().unwrap().parse().unwrap()
}

#[derive(Default, Clone)]
struct Score {
    malicious: usize,
    flagged: usize,
    blocked_class: usize,
    blocked: usize,
    benign: usize,
    benign_flagged: usize,
    missed: Vec<String>,
}

impl Score {
    fn add(&mut self, c: &Labelled, v: Verdict) {
        let flagged = v >= Verdict::High;
        let short = c.name.rsplit('/').next().unwrap_or(&c.name).to_string();
        if c.malicious {
            self.malicious += 1;
            self.flagged += usize::from(flagged);
            if c.blocked_class {
                self.blocked_class += 1;
                self.blocked += usize::from(v == Verdict::Blocked);
            }
            let short_of_class = !flagged || (c.blocked_class && v != Verdict::Blocked);
            if short_of_class {
                self.missed.push(format!("{short} ({v})"));
            }
        } else {
            self.benign += 1;
            self.benign_flagged += usize::from(flagged);
            if flagged {
                self.missed.push(format!("benign {short} ({v})"));
            }
        }
    }

    fn merge(&mut self, o: &Score) {
        self.malicious += o.malicious;
        self.flagged += o.flagged;
        self.blocked_class += o.blocked_class;
        self.blocked += o.blocked;
        self.benign += o.benign;
        self.benign_flagged += o.benign_flagged;
    }

    fn recall(&self) -> f64 {
        self.flagged as f64 / self.malicious.max(1) as f64
    }

    fn blocked_recall(&self) -> f64 {
        self.blocked as f64 / self.blocked_class.max(1) as f64
    }

    fn benign_rate(&self) -> f64 {
        self.benign_flagged as f64 / self.benign.max(1) as f64
    }

    fn precision(&self) -> f64 {
        self.flagged as f64 / (self.flagged + self.benign_flagged).max(1) as f64
    }

    fn row(&self, label: &str, split: &str) -> String {
        let pct = |a: usize, b: usize| {
            if b == 0 {
                "-".to_string()
            } else {
                format!("{a}/{b} ({:.0}%)", 100.0 * a as f64 / b as f64)
            }
        };
        // Precision is 0/0 when nothing was flagged (an empty blind part
        // between batches): a dash, not a precision of zero.
        let precision = if self.flagged + self.benign_flagged == 0 {
            "-".to_string()
        } else {
            format!("{:.2}", self.precision())
        };
        format!(
            "| {label} | {split} | {} | {} | {} | {precision} |",
            pct(self.flagged, self.malicious),
            pct(self.blocked, self.blocked_class),
            pct(self.benign_flagged, self.benign),
        )
    }
}

/// The scores of the tuned part, the held-out part and the whole corpus.
struct Parts {
    tuned: Score,
    held: Score,
    blind: Score,
    all: Score,
}

/// The markdown table, and the lists of scripts short of their class.
fn render(cases: &[Labelled], verdicts: &[Verdict]) -> (String, Parts) {
    let mut keys: Vec<(String, &'static str)> = Vec::new();
    for c in cases {
        let k = (c.family.clone(), c.split);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let order = |split: &str| SPLITS.iter().position(|s| *s == split);
    keys.sort_by(|a, b| {
        (a.0 == "original corpus", &a.0, order(a.1)).cmp(&(
            b.0 == "original corpus",
            &b.0,
            order(b.1),
        ))
    });
    let mut out = String::from(
        "| family | part | malicious rated HIGH or BLOCKED (recall) | deserving BLOCKED rated BLOCKED | benign rated HIGH or BLOCKED | precision |\n|---|---|---|---|---|---|\n",
    );
    let (mut tuned, mut held, mut blind) = (Score::default(), Score::default(), Score::default());
    let mut all = Score::default();
    let mut misses = String::new();
    for (family, split) in &keys {
        let mut s = Score::default();
        for (c, v) in cases.iter().zip(verdicts) {
            if &c.family == family && c.split == *split {
                s.add(c, *v);
            }
        }
        let (label, part) = match *split {
            "heldout" => ("held-out", &mut held),
            "blind" => ("blind", &mut blind),
            _ => ("tuned", &mut tuned),
        };
        out.push_str(&s.row(family, label));
        out.push('\n');
        part.merge(&s);
        if *split != "blind" {
            all.merge(&s);
        }
        if !s.missed.is_empty() {
            misses.push_str(&format!("- {family} ({split}): {}\n", s.missed.join(", ")));
        }
    }
    for (label, s) in [
        ("**all tuned**", &tuned),
        ("**all held-out**", &held),
        ("**whole corpus** (tuned and held-out)", &all),
        ("**all blind**", &blind),
    ] {
        out.push_str(&s.row(label, ""));
        out.push('\n');
    }
    if !misses.is_empty() {
        out.push_str("\nShort of their class (malicious below HIGH, or deserving BLOCKED and not BLOCKED; benign at HIGH or above):\n\n");
        out.push_str(&misses);
    }
    let parts = Parts {
        tuned,
        held,
        blind,
        all,
    };
    (out, parts)
}

fn assert_floors(part: &str, s: &Score, f: &Floors) {
    assert!(
        s.recall() >= f.recall,
        "{part}: malicious recall {:.3} < {}",
        s.recall(),
        f.recall
    );
    assert!(
        s.blocked_recall() >= f.blocked_recall,
        "{part}: BLOCKED-class recall {:.3} < {}",
        s.blocked_recall(),
        f.blocked_recall
    );
    assert!(
        s.benign_rate() <= f.benign_flagged,
        "{part}: benign HIGH-or-BLOCKED {:.3} > {}",
        s.benign_rate(),
        f.benign_flagged
    );
}

#[test]
fn family_table_and_floors() {
    let cases = load_families();
    let bin = std::env::var("MAIBOX_ASSESS_BIN").ok();
    let verdicts: Vec<Verdict> = cases
        .iter()
        .map(|c| verdict_of(c, bin.as_deref()))
        .collect();
    let (table, parts) = render(&cases, &verdicts);
    println!("{table}");
    if bin.is_some() {
        return;
    }
    assert_floors("tuned part", &parts.tuned, &TARGET);
    assert_floors("whole corpus", &parts.all, &TARGET);
    assert_floors("whole corpus", &parts.all, &WHOLE_FLOOR);
    assert_floors("held-out part", &parts.held, &HELD_OUT_FLOOR);
    if parts.blind.malicious + parts.blind.benign > 0 {
        assert_floors("blind batches", &parts.blind, &BLIND_FLOOR);
    }
    keep_doc_table(BEGIN, END, &table, "table");
}

/// Fails when docs/assessment.md's block between `begin` and `end` differs
/// from `table`; rewrites it instead when `MAIBOX_WRITE_ASSESSMENT_TABLE` is
/// set (what `cargo xtask assess-table` does).
pub(super) fn keep_doc_table(begin: &str, end: &str, table: &str, what: &str) {
    let doc = std::fs::read_to_string(DOC).unwrap_or_default();
    let block = format!("{begin}\n{table}{end}");
    let current = doc
        .find(begin)
        .zip(doc.find(end))
        .map(|(a, b)| &doc[a..b + end.len()]);
    if std::env::var_os("MAIBOX_WRITE_ASSESSMENT_TABLE").is_some() {
        let updated = match current {
            Some(old) => doc.replace(old, &block),
            None => format!("{doc}\n{block}\n"),
        };
        std::fs::write(DOC, updated).unwrap();
        return;
    }
    assert_eq!(
        current,
        Some(block.as_str()),
        "docs/assessment.md's {what} is out of date: run `cargo xtask assess-table`"
    );
}
