//! Freezing a container's processes (`pause`, `resume`): the v1 freezer or a
//! v2 group's `cgroup.freeze`.

use std::path::PathBuf;

/// The file that freezes the container and the values for frozen / thawed.
/// The v1 freezer wins over a v2 group's `cgroup.freeze`: on a hybrid host the
/// container has both, and v1 is where `pause` freezes it.
fn freezer_of(dirs: &[PathBuf]) -> Option<(PathBuf, &'static str, &'static str)> {
    let v1 = dirs
        .iter()
        .find(|d| d.join("freezer.state").exists())
        .map(|d| (d.join("freezer.state"), "FROZEN", "THAWED"));
    v1.or_else(|| {
        dirs.iter()
            .find(|d| d.join("cgroup.freeze").exists())
            .map(|d| (d.join("cgroup.freeze"), "1", "0"))
    })
}

pub fn frozen(dirs: &[PathBuf]) -> bool {
    freezer_of(dirs)
        .is_some_and(|(f, on, _)| std::fs::read_to_string(f).is_ok_and(|s| s.trim() == on))
}

/// Freezes (`pause`) or thaws (`resume`) every process of the container, waiting
/// until the kernel reports it done.
pub fn set_frozen(dirs: &[PathBuf], freeze: bool) -> Result<(), String> {
    let (file, on, off) = freezer_of(dirs).ok_or("the container has no freezer cgroup")?;
    let want = if freeze { on } else { off };
    std::fs::write(&file, want).map_err(|e| format!("write {want} to {}: {e}", file.display()))?;
    // v1 passes through FREEZING; v2 reports completion in cgroup.events.
    let done = || match file.file_name().and_then(|n| n.to_str()) {
        Some("cgroup.freeze") => std::fs::read_to_string(file.with_file_name("cgroup.events"))
            .is_ok_and(|e| {
                e.lines()
                    .any(|l| l == format!("frozen {}", u8::from(freeze)))
            }),
        _ => std::fs::read_to_string(&file).is_ok_and(|s| s.trim() == want),
    };
    for _ in 0..1000 {
        if done() {
            return Ok(());
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    Err(format!("{} did not reach {want} in 5 s", file.display()))
}
