//! The progress line is for terminals only: a long task whose stderr is a pipe (a CI
//! log) prints its results and nothing of the line.

use std::process::Command;

#[test]
fn no_progress_line_when_stderr_is_not_a_terminal() {
    let dir = std::env::temp_dir().join(format!("xtask-progress-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let o = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["rootfs", dir.to_str().unwrap(), "--from", "host"])
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert!(o.status.success(), "{out}{err}");
    assert!(out.starts_with("root image in "), "{out}");
    // The line would be `rootfs [1/2] copying ...`, redrawn with carriage returns
    // and erased with an escape sequence.
    for s in [&out, &err] {
        assert!(!s.contains("rootfs ["), "{s}");
        assert!(!s.contains('\r') && !s.contains('\u{1b}'), "{s:?}");
    }
}
