//! Bad input gets one clear line on stderr, a non-zero exit, and leaves nothing behind.

mod common;
use common::*;
use std::os::unix::fs::PermissionsExt;

fn assert_clean_error(o: &std::process::Output, expect: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(125), "stderr: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "not one line: {err:?}");
    assert!(err.starts_with("maibox: error: "), "{err:?}");
    assert!(err.contains(expect), "expected {expect:?} in {err:?}");
    assert!(
        !err.contains("panicked") && !err.contains("RUST_BACKTRACE"),
        "{err}"
    );
    assert!(stdout(o).is_empty(), "stdout: {}", stdout(o));
}

fn no_leftovers(before_mounts: usize, token: &str) {
    assert_eq!(host_mount_count(), before_mounts, "mount table changed");
    assert!(processes_with(token).is_empty(), "processes left behind");
}

#[test]
fn missing_script() {
    let m = host_mount_count();
    let o = run(As::Caller, &["exec", "/nonexistent/maibox-missing.py"]);
    assert_clean_error(
        &o,
        "cannot read script /nonexistent/maibox-missing.py: No such file",
    );
    no_leftovers(m, "maibox-missing");
}

#[test]
fn directory_instead_of_script() {
    let s = Scratch::new();
    let o = run(As::Caller, &["exec", s.path().to_str().unwrap()]);
    assert_clean_error(&o, "is a directory");
}

#[test]
fn unreadable_script() {
    if !require_root("unreadable_script") {
        return;
    }
    let s = Scratch::new();
    let p = s.file("secret.py", b"print('no')\n");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    let o = run(As::User, &["exec", p.to_str().unwrap()]);
    assert_clean_error(&o, "Permission denied");
    // Control: the owner can run it.
    let o = run(As::Caller, &["exec", p.to_str().unwrap()]);
    assert_eq!(stdout(&o), "no\n");
}

#[test]
fn non_utf8_script() {
    let s = Scratch::new();
    let p = s.file("latin1.py", b"print('caf\xe9')\n");
    let o = run(As::Caller, &["exec", p.to_str().unwrap()]);
    assert_clean_error(&o, "not valid UTF-8 (invalid byte at offset 10)");
}

#[test]
fn invalid_yaml_names_file_and_line() {
    let s = Scratch::new();
    let cfg = s.file("bad.yaml", b"default_trust: untrusted\nlevels: [\n");
    let o = run(
        As::Caller,
        &["exec", "--config", cfg.to_str().unwrap(), "-c", "pass"],
    );
    assert_clean_error(&o, "bad.yaml");
    assert!(stderr(&o).contains("line"), "{}", stderr(&o));
}

#[test]
fn unknown_config_key_names_line_and_column() {
    let s = Scratch::new();
    let text = maibox::config::BUILTIN
        .replace("  tmp_size: 64MiB", "  tmp_size: 64MiB\n    tmp_sise: 1MiB");
    let text = if text == maibox::config::BUILTIN {
        maibox::config::BUILTIN.replacen(
            "    tmp_size: 64MiB",
            "    tmp_size: 64MiB\n    tmp_sise: 1MiB",
            1,
        )
    } else {
        text
    };
    let cfg = s.file("typo.yaml", text.as_bytes());
    let o = run(
        As::Caller,
        &["exec", "--config", cfg.to_str().unwrap(), "-c", "pass"],
    );
    assert_clean_error(&o, "unknown field `tmp_sise`");
    assert!(
        stderr(&o).contains("line") && stderr(&o).contains("column"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn config_from_environment_is_used() {
    let s = Scratch::new();
    let cfg = s.file("env.yaml", b"nonsense: true\n");
    let o = command(As::Caller)
        .env("MAIBOX_CONFIG", &cfg)
        .args(["exec", "-c", "pass"])
        .output()
        .unwrap();
    assert_clean_error(&o, "env.yaml");
}

#[test]
fn bad_size_in_config_names_the_line() {
    let s = Scratch::new();
    let text = maibox::config::BUILTIN.replacen("memory: 256MiB", "memory: 1 gigabyte", 1);
    let cfg = s.file("size.yaml", text.as_bytes());
    let o = run(
        As::Caller,
        &["exec", "--config", cfg.to_str().unwrap(), "-c", "pass"],
    );
    assert_clean_error(&o, "invalid size \"1 gigabyte\"");
}

#[test]
fn unknown_trust_level() {
    let o = run(As::Caller, &["exec", "--trust", "sorta", "-c", "pass"]);
    assert_clean_error(&o, "unknown trust level \"sorta\"");
}

#[test]
fn zero_and_negative_timeouts() {
    for t in ["0", "-5", "0s", "abc"] {
        let o = run(As::Caller, &["exec", "--timeout", t, "-c", "pass"]);
        assert_clean_error(&o, "--timeout");
    }
}

#[test]
fn missing_interpreter() {
    let o = run(
        As::Caller,
        &["exec", "--python", "/nonexistent/python3", "-c", "pass"],
    );
    assert_clean_error(&o, "/nonexistent/python3");
}

#[test]
fn missing_rootfs() {
    let o = run(
        As::Caller,
        &["exec", "--rootfs", "/nonexistent/rootfs", "-c", "pass"],
    );
    assert_clean_error(&o, "rootfs");
}

#[test]
fn rootfs_without_python() {
    // A directory that exists but holds no interpreter: refused before anything runs,
    // with what to do, not an exit 127 from inside the sandbox.
    let s = Scratch::new();
    let empty = s.path().join("empty-image");
    std::fs::create_dir(&empty).unwrap();
    let o = run(
        As::Caller,
        &["exec", "--rootfs", empty.to_str().unwrap(), "-c", "pass"],
    );
    assert_clean_error(&o, "/usr/bin/python3: not present in the root image");
    assert!(stderr(&o).contains("cargo xtask rootfs"), "{}", stderr(&o));
}
