use super::super::testutil::{cfg, make_log, sample_start};
use super::super::{AuditConfig, AuditLog};
use super::*;
use crate::audit::record::{canonical, hex, record_hash};
use serde_json::Value;
use std::fs;
use std::path::PathBuf;

/// A log of several plain segments (~5 records each).
fn log_with_segments(dir: &Path) -> AuditConfig {
    let mut c = cfg(dir);
    c.rotate_bytes = 4000;
    c.compress = false;
    drop(make_log(&c, 30));
    c
}

fn active(dir: &Path) -> PathBuf {
    segments::list(dir).unwrap().last().unwrap().path.clone()
}

fn lines(p: &Path) -> Vec<String> {
    fs::read_to_string(p)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

fn write_lines(p: &Path, l: &[String]) {
    fs::write(p, l.iter().map(|s| format!("{s}\n")).collect::<String>()).unwrap();
}

fn problem(dir: &Path) -> Problem {
    let r = verify(dir).unwrap();
    assert!(!r.ok, "verify passed a tampered log: {r}");
    r.problem.unwrap()
}

/// Run reports carry floats such as wall times; a float whose shortest form has
/// 17 digits once broke canonical re-serialization (serde_json's default
/// float parser is not exact; maibox enables `float_roundtrip`).
#[test]
fn floats_survive_canonical_round_trip() {
    let d = tempfile::tempdir().unwrap();
    let c = crate::audit::testutil::cfg(d.path());
    let mut log = AuditLog::open(&c).unwrap();
    for x in [
        1.5216985680000001f64,
        0.1 + 0.2,
        1e-7,
        123456.78901234568,
        f64::MIN_POSITIVE,
    ] {
        let body = serde_json::json!({"wall_time_s": x});
        log.append(crate::audit::Event::security(Some("r".into()), body))
            .unwrap();
    }
    let r = verify(d.path()).unwrap();
    assert!(r.ok, "{r}");
}

#[test]
fn untouched_log_passes() {
    let d = tempfile::tempdir().unwrap();
    log_with_segments(d.path());
    let r = verify(d.path()).unwrap();
    assert!(r.ok, "{r}");
    let segs = segments::list(d.path()).unwrap().len();
    assert!(segs >= 4, "{segs}");
    assert_eq!(r.segments, segs);
    // 30 run records + one segment_start per segment.
    assert_eq!(r.records, 30 + segs as u64);
    assert_eq!(r.last_seq, Some(r.records));
}

#[test]
fn edited_byte_is_caught() {
    let d = tempfile::tempdir().unwrap();
    log_with_segments(d.path());
    let p = active(d.path());
    let mut l = lines(&p);
    l[2] = l[2].replacen("untrusted", "untrustee", 1);
    write_lines(&p, &l);
    let pr = problem(d.path());
    assert_eq!((pr.kind, pr.line), (ProblemKind::Edited, 3), "{pr:?}");
}

#[test]
fn every_single_byte_edit_is_caught() {
    let d = tempfile::tempdir().unwrap();
    log_with_segments(d.path());
    let p = active(d.path());
    let orig = fs::read(&p).unwrap();
    let start = orig.iter().position(|b| *b == b'\n').unwrap() + 1;
    let end = start + orig[start..].iter().position(|b| *b == b'\n').unwrap();
    for i in (start..end).step_by(3) {
        let mut m = orig.clone();
        m[i] = if m[i] == b'1' { b'2' } else { b'1' };
        fs::write(&p, &m).unwrap();
        let r = verify(d.path()).unwrap();
        assert!(!r.ok, "edit at byte {} went unnoticed", i - start);
        assert_ne!(r.problem.unwrap().kind, ProblemKind::TruncatedTail);
    }
}

#[test]
fn deleted_record_is_caught() {
    let d = tempfile::tempdir().unwrap();
    log_with_segments(d.path());
    let p = active(d.path());
    let mut l = lines(&p);
    l.remove(2);
    write_lines(&p, &l);
    let pr = problem(d.path());
    assert_eq!((pr.kind, pr.line), (ProblemKind::Deleted, 3), "{pr:?}");
}

#[test]
fn inserted_copy_is_caught() {
    let d = tempfile::tempdir().unwrap();
    log_with_segments(d.path());
    let p = active(d.path());
    let mut l = lines(&p);
    let copy = l[1].clone();
    l.insert(3, copy);
    write_lines(&p, &l);
    let pr = problem(d.path());
    assert_eq!((pr.kind, pr.line), (ProblemKind::Inserted, 4), "{pr:?}");
}

#[test]
fn inserted_forgery_is_caught() {
    let d = tempfile::tempdir().unwrap();
    log_with_segments(d.path());
    let p = active(d.path());
    let mut l = lines(&p);
    // A well-formed record that links perfectly, signed with another key.
    let prev: Value = serde_json::from_str(&l[1]).unwrap();
    let mut m = prev.as_object().unwrap().clone();
    m.insert("seq".into(), (prev["seq"].as_u64().unwrap() + 1).into());
    m.insert("prev_hash".into(), prev["hash"].clone());
    let h = record_hash(&m);
    m.insert("hash".into(), hex(&h).into());
    let other = ed25519_dalek::SigningKey::from_bytes(&[9u8; 32]);
    m.insert("sig".into(), keys::sign_hash(&other, &h).into());
    l.insert(2, canonical(&Value::Object(m)));
    write_lines(&p, &l);
    let pr = problem(d.path());
    assert_eq!((pr.kind, pr.line), (ProblemKind::Inserted, 3), "{pr:?}");
}

#[test]
fn swapped_records_are_caught() {
    let d = tempfile::tempdir().unwrap();
    log_with_segments(d.path());
    let p = active(d.path());
    let mut l = lines(&p);
    l.swap(2, 3);
    write_lines(&p, &l);
    let pr = problem(d.path());
    assert_eq!((pr.kind, pr.line), (ProblemKind::Reordered, 3), "{pr:?}");
}

#[test]
fn rehashed_forgery_of_last_record_is_caught() {
    let d = tempfile::tempdir().unwrap();
    log_with_segments(d.path());
    let p = active(d.path());
    let mut l = lines(&p);
    let last = l.len() - 1;
    let v: Value = serde_json::from_str(&l[last]).unwrap();
    let mut m = v.as_object().unwrap().clone();
    m.insert("body".into(), serde_json::json!({"forged": true}));
    let h = record_hash(&m);
    m.insert("hash".into(), hex(&h).into());
    l[last] = canonical(&Value::Object(m));
    write_lines(&p, &l);
    let pr = problem(d.path());
    assert_eq!(
        (pr.kind, pr.line),
        (ProblemKind::BadSignature, last as u64 + 1),
        "{pr:?}"
    );
}

#[test]
fn truncated_tail_is_named_and_repaired() {
    let d = tempfile::tempdir().unwrap();
    let c = log_with_segments(d.path());
    let p = active(d.path());
    let data = fs::read(&p).unwrap();
    fs::write(&p, &data[..data.len() - 40]).unwrap();
    let pr = problem(d.path());
    assert_eq!(pr.kind, ProblemKind::TruncatedTail, "{pr:?}");
    assert!(!pr.kind.is_tampering());
    // The next writer starts a new segment recording the break.
    let mut log = AuditLog::open(&c).unwrap();
    log.append_run_start(&sample_start("after-crash")).unwrap();
    let r = verify(d.path()).unwrap();
    assert!(r.ok, "{r}");
    // ... and the torn bytes are still there as evidence.
    assert_eq!(fs::read(&p).unwrap(), &data[..data.len() - 40]);
}

#[test]
fn torn_closed_segment_without_break_record_is_caught() {
    let d = tempfile::tempdir().unwrap();
    log_with_segments(d.path());
    let segs = segments::list(d.path()).unwrap();
    let p = &segs[1].path;
    let data = fs::read(p).unwrap();
    fs::write(p, &data[..data.len() - 10]).unwrap();
    let pr = problem(d.path());
    assert_eq!((pr.kind, pr.segment), (ProblemKind::Deleted, 2), "{pr:?}");
}

#[test]
fn deleted_middle_segment_is_caught() {
    let d = tempfile::tempdir().unwrap();
    log_with_segments(d.path());
    fs::remove_file(d.path().join(segments::plain_name(3))).unwrap();
    let pr = problem(d.path());
    assert_eq!(
        (pr.kind, pr.segment),
        (ProblemKind::MissingSegment, 3),
        "{pr:?}"
    );
}

#[test]
fn deleted_compressed_segment_and_renames_are_caught() {
    let d = tempfile::tempdir().unwrap();
    let mut c = cfg(d.path());
    c.rotate_bytes = 4000;
    drop(make_log(&c, 30));
    let segs = segments::list(d.path()).unwrap();
    assert!(segs[..segs.len() - 1].iter().all(|s| s.compressed));
    assert!(verify(d.path()).unwrap().ok);
    // Delete segment 2 and renumber 3 -> 2 to close the gap.
    fs::remove_file(&segs[1].path).unwrap();
    fs::rename(&segs[2].path, &segs[1].path).unwrap();
    let pr = problem(d.path());
    assert_eq!(pr.kind, ProblemKind::MissingSegment, "{pr:?}");
}

#[test]
fn deleted_first_segment_needs_a_retention_record() {
    let d = tempfile::tempdir().unwrap();
    log_with_segments(d.path());
    fs::remove_file(d.path().join(segments::plain_name(1))).unwrap();
    let pr = problem(d.path());
    assert_eq!(pr.kind, ProblemKind::MissingSegment, "{pr:?}");
}

#[test]
fn retention_deletes_old_segments_without_breaking_verify() {
    let d = tempfile::tempdir().unwrap();
    let mut c = log_with_segments(d.path());
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(40 * 86_400);
    let segs = segments::list(d.path()).unwrap();
    for s in &segs[..2] {
        fs::File::options()
            .write(true)
            .open(&s.path)
            .unwrap()
            .set_modified(old)
            .unwrap();
    }
    c.retention_days = 30;
    drop(AuditLog::open(&c).unwrap());
    let left = segments::list(d.path()).unwrap();
    assert_eq!(left.first().unwrap().number, 3);
    let r = verify(d.path()).unwrap();
    assert!(r.ok, "{r}");
    // A second expiry, which deletes the segment holding nothing special.
    for s in &left[..1] {
        fs::File::options()
            .write(true)
            .open(&s.path)
            .unwrap()
            .set_modified(old)
            .unwrap();
    }
    drop(AuditLog::open(&c).unwrap());
    assert_eq!(segments::list(d.path()).unwrap().first().unwrap().number, 4);
    let r = verify(d.path()).unwrap();
    assert!(r.ok, "{r}");
    // But deleting the next one by hand is still caught.
    fs::remove_file(d.path().join(segments::plain_name(4))).unwrap();
    assert_eq!(problem(d.path()).kind, ProblemKind::MissingSegment);
}

#[test]
fn pinned_fingerprint() {
    let d = tempfile::tempdir().unwrap();
    log_with_segments(d.path());
    let fp = keys::key_fingerprint(d.path()).unwrap();
    assert!(verify_pinned(d.path(), Some(&fp)).unwrap().ok);
    let r = verify_pinned(d.path(), Some("SHA256:00")).unwrap();
    assert_eq!(r.problem.unwrap().kind, ProblemKind::WrongKey);
}
