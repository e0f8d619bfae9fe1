//! Shared test helpers, including the child-process writer used by the
//! concurrency, crash and full-disk tests.
//!
//! Child processes are the test binary itself, re-executed with a filter that
//! selects only `audit_helper_child_process` and with `MAIBOX_AUDIT_HELPER`
//! describing what to do. This keeps working unchanged once the module is
//! copied into maibox, because the filter is a substring of the test name.

use std::path::Path;
use std::process::{Child, Command, Stdio};

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{AuditConfig, AuditLog, Event, Kind, RunEnd, RunStart};

pub const HELPER_ENV: &str = "MAIBOX_AUDIT_HELPER";

/// Config for a log in `dir`, which is made 0700 (tempdirs are 0755, which
/// `open` rightly refuses).
pub fn cfg(dir: &Path) -> AuditConfig {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    AuditConfig {
        dir: Some(dir.to_path_buf()),
        ..AuditConfig::default()
    }
}

pub fn sample_start(run_id: &str) -> RunStart {
    RunStart {
        run_id: run_id.to_string(),
        caller: super::Caller {
            uid: 1000,
            name: Some("alice".into()),
            via: None,
        },
        trust_level: "untrusted".into(),
        code: super::CodeInfo {
            path: Some("/home/alice/job.py".into()),
            sha256: super::record::sha256_hex(run_id.as_bytes()),
            size: 42,
            previous_sha256: None,
            diff: None,
        },
        assessment: super::Assessment {
            verdict: "allow".into(),
            findings: vec!["net-001".into()],
        },
        override_reason: None,
        limits: json!({"memory_bytes": 268435456, "cpu_seconds": 10, "pids": 64}),
        layers: json!(["userns", "mountns", "seccomp", "landlock"]),
    }
}

pub fn sample_end(run_id: &str) -> RunEnd {
    RunEnd {
        run_id: run_id.to_string(),
        exit: json!({"code": 0}),
        duration_ms: Some(12),
        usage: json!({"cpu_ms": 10, "max_rss_bytes": 1048576}),
        violations: json!([]),
    }
}

/// A log with `n` run_start records.
pub fn make_log(cfg: &AuditConfig, n: usize) -> AuditLog {
    let mut log = AuditLog::open(cfg).unwrap();
    for i in 0..n {
        log.append_run_start(&sample_start(&format!("run-{i}")))
            .unwrap();
    }
    log
}

#[derive(Debug, Serialize, Deserialize)]
pub struct HelperJob {
    pub dir: String,
    pub writer: u32,
    /// 0 = append until killed.
    pub count: u32,
    pub rotate_bytes: u64,
    /// After opening, limit file size to the active segment's size plus this
    /// many bytes, so the next append hits EFBIG like a full disk.
    pub fsize_slack: Option<u64>,
}

pub fn spawn_helper(job: &HelperJob) -> Child {
    let exe = std::env::current_exe().unwrap();
    Command::new(exe)
        .args([
            "audit_helper_child_process",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
            "--quiet",
        ])
        .env(HELPER_ENV, serde_json::to_string(job).unwrap())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Not a test: the body of the child processes. Does nothing when run
/// without `MAIBOX_AUDIT_HELPER` (e.g. by `cargo test -- --ignored`).
#[test]
#[ignore]
fn audit_helper_child_process() {
    let Ok(spec) = std::env::var(HELPER_ENV) else {
        return;
    };
    let job: HelperJob = serde_json::from_str(&spec).unwrap();
    let mut c = cfg(Path::new(&job.dir));
    c.rotate_bytes = job.rotate_bytes;
    let mut log = AuditLog::open(&c).unwrap();
    if let Some(slack) = job.fsize_slack {
        let segs = super::segments::list(Path::new(&job.dir)).unwrap();
        let len = std::fs::metadata(&segs.last().unwrap().path).unwrap().len();
        // Blocked rather than ignored (ignoring needs unsafe): the write then
        // fails with EFBIG instead of the process being killed.
        let mut set = nix::sys::signal::SigSet::empty();
        set.add(nix::sys::signal::Signal::SIGXFSZ);
        nix::sys::signal::pthread_sigmask(
            nix::sys::signal::SigmaskHow::SIG_BLOCK,
            Some(&set),
            None,
        )
        .unwrap();
        let lim = len + slack;
        nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_FSIZE, lim, lim)
            .unwrap();
        match log.append_run_start(&sample_start("too-big")) {
            Ok(r) => println!("HELPER-RESULT OK {}", r.seq),
            Err(e) => println!("HELPER-RESULT ERR {e}"),
        }
        return;
    }
    let mut i = 0u32;
    while job.count == 0 || i < job.count {
        let id = format!("w{}-{}", job.writer, i);
        let ev = if i.is_multiple_of(2) {
            Event::run_start(&sample_start(&id)).unwrap()
        } else {
            Event::new(
                Kind::RunEnd,
                Some(id.clone()),
                serde_json::to_value(sample_end(&id)).unwrap(),
            )
        };
        log.append(ev).unwrap();
        i += 1;
    }
}
