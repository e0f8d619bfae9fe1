use super::super::render::read_records;
use super::super::testutil::{cfg, make_log, sample_end, sample_start, spawn_helper, HelperJob};
use super::super::verify::{verify, ProblemKind};
use super::*;
use crate::audit::record::{hex, Kind};
use serde_json::json;
use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt;
use std::time::Instant;

#[test]
fn a_new_day_starts_a_new_segment_and_the_chain_holds() {
    let d = tempfile::tempdir().unwrap();
    let mut c = cfg(d.path());
    c.rotate_bytes = 0;
    c.rotate_daily = true;
    let mut log = AuditLog::open(&c).unwrap();
    log.append_run_start(&sample_start("a")).unwrap();
    // Pretend the active segment was started yesterday.
    let yesterday = time::OffsetDateTime::now_utc()
        .date()
        .previous_day()
        .unwrap();
    log.active.as_mut().unwrap().first_day = Some(yesterday);
    log.append_run_start(&sample_start("b")).unwrap();
    let segs = super::super::segments::list(&log.dir).unwrap();
    assert_eq!(segs.len(), 2, "{segs:?}");
    let r = verify(&log.dir).unwrap();
    assert!(r.ok, "{r}");
    // Control: without daily rotation the same day change keeps one segment.
    let d2 = tempfile::tempdir().unwrap();
    let mut c2 = cfg(d2.path());
    c2.rotate_bytes = 0;
    c2.rotate_daily = false;
    let mut log2 = AuditLog::open(&c2).unwrap();
    log2.append_run_start(&sample_start("a")).unwrap();
    log2.active.as_mut().unwrap().first_day = Some(yesterday);
    log2.append_run_start(&sample_start("b")).unwrap();
    assert_eq!(super::super::segments::list(&log2.dir).unwrap().len(), 1);
}

#[test]
fn an_unsynced_record_is_in_the_log_before_its_sync() {
    let d = tempfile::tempdir().unwrap();
    let c = cfg(d.path());
    let mut log = AuditLog::open(&c).unwrap();
    log.append_run_start(&sample_start("a")).unwrap();
    let end = Event::run_end(&sample_end("a")).unwrap();
    let (rec, unsynced) = log.append_unsynced(end).unwrap();
    let unsynced = unsynced.expect("a syncing log hands back the sync");
    // Another writer, and a reader, see it before it is synced: a server killed
    // between the write and the sync loses nothing.
    let mut other = AuditLog::open(&c).unwrap();
    let next = other.append_run_start(&sample_start("b")).unwrap();
    assert_eq!(next.seq, rec.seq + 1);
    let kinds: Vec<String> = read_records(d.path())
        .unwrap()
        .iter()
        .filter_map(|e| e.record.as_ref().map(|r| r.kind.clone()))
        .collect();
    assert!(
        kinds.iter().any(|k| k == Kind::RunEnd.as_str()),
        "{kinds:?}"
    );
    assert!(verify(d.path()).unwrap().ok);
    unsynced.sync().unwrap();
    // A log that does not sync (tests only) has nothing to hand back.
    log.set_sync(false);
    let end = Event::run_end(&sample_end("b")).unwrap();
    assert!(log.append_unsynced(end).unwrap().1.is_none());
}

#[test]
fn creates_dir_and_key_with_tight_modes() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("state/maibox/audit");
    let c = AuditConfig {
        dir: Some(dir.clone()),
        ..AuditConfig::default()
    };
    let log = AuditLog::open(&c).unwrap();
    let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&dir), 0o700);
    assert_eq!(mode(&keys::key_path(&dir)), 0o600);
    assert_eq!(log.key_fingerprint(), keys::key_fingerprint(&dir).unwrap());
    assert!(verify(&dir).unwrap().ok);
}

#[test]
fn reserved_kinds_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let mut log = make_log(&cfg(d.path()), 0);
    let e = log
        .append(Event::new(Kind::Retention, None, json!({})))
        .unwrap_err();
    assert!(matches!(e, AuditError::ReservedKind(_)), "{e}");
}

#[test]
fn code_info_diffs_against_previous_version() {
    let d = tempfile::tempdir().unwrap();
    let mut c = cfg(d.path());
    c.max_diff_bytes = 10_000;
    let log = AuditLog::open(&c).unwrap();
    let first = log.code_info(Some("/j.py"), "a = 1\nprint(a)\n").unwrap();
    assert_eq!(
        (first.previous_sha256.as_deref(), first.diff.as_deref()),
        (None, None)
    );
    let second = log.code_info(Some("/j.py"), "a = 2\nprint(a)\n").unwrap();
    assert_eq!(second.previous_sha256, Some(first.sha256.clone()));
    let diff = second.diff.unwrap();
    assert!(diff.contains("-a = 1\n+a = 2\n"), "{diff}");
    let same = log.code_info(Some("/j.py"), "a = 2\nprint(a)\n").unwrap();
    assert_eq!(same.diff, None);
    assert_eq!(same.previous_sha256, Some(second.sha256));
    // Other paths and stdin code have no history.
    assert_eq!(
        log.code_info(Some("/k.py"), "x").unwrap().previous_sha256,
        None
    );
    assert_eq!(log.code_info(None, "x").unwrap().path, None);
}

#[test]
fn wrong_dir_permissions_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let c = cfg(d.path());
    fs::set_permissions(d.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let e = AuditLog::open(&c).unwrap_err();
    assert!(
        matches!(e, AuditError::DirPermissions { mode: 0o755, .. }),
        "{e}"
    );
    assert!(e.to_string().contains("expected 0700"), "{e}");
    let f = d.path().join("file");
    fs::write(&f, "").unwrap();
    let e = AuditLog::open(&AuditConfig {
        dir: Some(f),
        ..AuditConfig::default()
    })
    .unwrap_err();
    assert!(matches!(e, AuditError::NotADirectory { .. }), "{e}");
}

#[test]
fn missing_key_is_an_error_not_a_new_key() {
    let d = tempfile::tempdir().unwrap();
    let c = cfg(d.path());
    drop(make_log(&c, 2));
    fs::remove_file(keys::key_path(d.path())).unwrap();
    let e = AuditLog::open(&c).unwrap_err();
    assert!(matches!(e, AuditError::KeyMissing { .. }), "{e}");
    assert!(!keys::key_path(d.path()).exists());
    // With audit optional the caller gets the error back to warn with.
    let mut opt = c.clone();
    opt.required = false;
    assert!(matches!(
        AuditLog::open_policy(&opt).unwrap(),
        Opened::Disabled(AuditError::KeyMissing { .. })
    ));
    assert!(AuditLog::open_policy(&c).is_err());
}

#[test]
fn unreadable_or_swapped_key_is_an_error() {
    let d = tempfile::tempdir().unwrap();
    let c = cfg(d.path());
    drop(make_log(&c, 1));
    let kp = keys::key_path(d.path());
    let saved = fs::read(&kp).unwrap();
    if !nix::unistd::geteuid().is_root() {
        fs::set_permissions(&kp, fs::Permissions::from_mode(0o000)).unwrap();
        let e = AuditLog::open(&c).unwrap_err();
        assert!(
            matches!(
                e,
                AuditError::Io {
                    step: "read signing key",
                    ..
                }
            ),
            "{e}"
        );
    }
    // Root reads anything, so make the read itself fail another way.
    fs::remove_file(&kp).unwrap();
    DirBuilder::new().mode(0o700).create(&kp).unwrap();
    let e = AuditLog::open(&c).unwrap_err();
    assert!(
        matches!(
            e,
            AuditError::Io {
                step: "read signing key",
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("audit.key"), "{e}");
    fs::remove_dir(&kp).unwrap();
    // A different key than the one audit.pub belongs to.
    let other = ed25519_dalek::SigningKey::from_bytes(&[5u8; 32]);
    fs::write(&kp, format!("{}\n", hex(&other.to_bytes()))).unwrap();
    fs::set_permissions(&kp, fs::Permissions::from_mode(0o600)).unwrap();
    assert!(matches!(
        AuditLog::open(&c).unwrap_err(),
        AuditError::KeyMismatch { .. }
    ));
    fs::write(&kp, saved).unwrap();
    assert!(AuditLog::open(&c).is_ok());
}

#[test]
fn corrupt_last_record_blocks_writers() {
    let d = tempfile::tempdir().unwrap();
    let c = cfg(d.path());
    drop(make_log(&c, 3));
    let p = segments::list(d.path()).unwrap().pop().unwrap().path;
    let s = fs::read_to_string(&p)
        .unwrap()
        .replacen("alice", "mallory", 100);
    fs::write(&p, s).unwrap();
    let e = AuditLog::open(&c).unwrap_err();
    assert!(matches!(e, AuditError::TailCorrupt { .. }), "{e}");
}

#[test]
fn full_disk_is_reported_not_skipped() {
    let d = tempfile::tempdir().unwrap();
    let c = cfg(d.path());
    drop(make_log(&c, 3));
    let before = verify(d.path()).unwrap();
    let child = spawn_helper(&HelperJob {
        dir: d.path().display().to_string(),
        writer: 0,
        count: 0,
        rotate_bytes: c.rotate_bytes,
        fsize_slack: Some(100),
    });
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("HELPER-RESULT ERR audit: write record"),
        "{stdout}"
    );
    // The partial line was rolled back: the log is intact and unchanged.
    let after = verify(d.path()).unwrap();
    assert!(after.ok, "{after}");
    assert_eq!(after.last_seq, before.last_seq);
}

#[test]
fn concurrent_processes_keep_one_chain() {
    let d = tempfile::tempdir().unwrap();
    let c = cfg(d.path());
    drop(AuditLog::open(&c).unwrap());
    let t = Instant::now();
    let children: Vec<_> = (0..8)
        .map(|w| {
            spawn_helper(&HelperJob {
                dir: d.path().display().to_string(),
                writer: w,
                count: 500,
                rotate_bytes: 256 * 1024,
                fsize_slack: None,
            })
        })
        .collect();
    for ch in children {
        let out = ch.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let r = verify(d.path()).unwrap();
    assert!(r.ok, "{r}");
    let mut per_writer: HashMap<String, usize> = HashMap::new();
    let mut ids = std::collections::HashSet::new();
    for e in read_records(d.path()).unwrap() {
        let rec = e.record.unwrap();
        if let Some(id) = rec.run_id {
            let w = id.split('-').next().unwrap().to_string();
            *per_writer.entry(w).or_default() += 1;
            assert!(ids.insert(id), "duplicate record");
        }
    }
    assert_eq!(ids.len(), 4000);
    assert_eq!(per_writer.len(), 8);
    assert!(per_writer.values().all(|n| *n == 500), "{per_writer:?}");
    eprintln!(
        "8x500 appends by processes: {:?}, {} segments, {} records",
        t.elapsed(),
        r.segments,
        r.records
    );
}

#[test]
fn sigkill_at_random_points_never_looks_like_tampering() {
    let t = Instant::now();
    let mut rng = t.elapsed().as_nanos() as u64 | 0x9e37_79b9;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let (mut torn, mut records, mut kills) = (0, 0, 0);
    // 8 logs x 25 kills: `verify` runs after every kill, and a fresh log
    // every 25 rounds keeps that from growing quadratically.
    for log_no in 0..8 {
        let d = tempfile::tempdir().unwrap();
        let c = cfg(d.path());
        drop(AuditLog::open(&c).unwrap());
        for round in 0..25 {
            let mut ch = spawn_helper(&HelperJob {
                dir: d.path().display().to_string(),
                writer: round,
                count: 0,
                // Small segments so kills also land in rotations and compressions.
                rotate_bytes: 6 * 1024,
                fsize_slack: None,
            });
            std::thread::sleep(std::time::Duration::from_micros(2_000 + next() % 25_000));
            ch.kill().unwrap();
            let status = ch.wait().unwrap();
            assert!(!status.success(), "helper exited by itself: {status}");
            kills += 1;
            let r = verify(d.path()).unwrap();
            if let Some(p) = &r.problem {
                assert!(!p.kind.is_tampering(), "log {log_no} round {round}: {r}");
                assert_eq!(p.kind, ProblemKind::TruncatedTail);
                torn += 1;
            }
        }
        let mut log = AuditLog::open(&c).unwrap();
        log.append_run_start(&sample_start("final")).unwrap();
        let r = verify(d.path()).unwrap();
        assert!(r.ok, "{r}");
        records += r.records;
    }
    assert_eq!(kills, 200);
    eprintln!(
        "200 SIGKILLs in {:?}: {records} records in 8 logs, {torn} torn tails seen",
        t.elapsed()
    );
}

/// `nice -n 10 cargo test --release -- --ignored bench_append_and_verify --nocapture`
#[test]
#[ignore]
fn bench_append_and_verify() {
    let d = tempfile::tempdir().unwrap();
    let c = cfg(d.path());
    let mut log = make_log(&c, 0);
    let n = 2000;
    let t = Instant::now();
    for i in 0..n {
        log.append_run_start(&sample_start(&format!("b{i}")))
            .unwrap();
    }
    let per = t.elapsed() / n;
    println!("append with fdatasync: {per:?} per record ({n} records)");
    log.set_sync(false);
    let t = Instant::now();
    for i in 0..(100_000 - n) {
        log.append_run_start(&sample_start(&format!("c{i}")))
            .unwrap();
    }
    println!(
        "append without fsync: {:?} per record",
        t.elapsed() / (100_000 - n)
    );
    let t = Instant::now();
    let r = verify(d.path()).unwrap();
    let el = t.elapsed();
    assert!(r.ok, "{r}");
    println!(
        "verify: {} records in {} segments in {el:?} = {:.0} records/s",
        r.records,
        r.segments,
        r.records as f64 / el.as_secs_f64()
    );
}
