//! uid/gid maps for the sandbox's user namespace, written by the supervisor.
//!
//! Only a process outside the namespace with the right privileges can write a map
//! that names more than its own id, which is why the child waits for this.

use crate::error::{SetupError, Step, StepContext};
use crate::policy::IdMapping;
use nix::unistd::Pid;

/// Ids inside 0..RANGE map to host ids base..base+RANGE when maibox runs as root.
pub const RANGE: u32 = 65536;

pub fn write_maps(pid: Pid, mapping: IdMapping, uid: u32, gid: u32) -> Result<(), SetupError> {
    let dir = format!("/proc/{}", pid.as_raw());
    let (uid_map, gid_map, setgroups) = match mapping {
        IdMapping::Range { base } => (
            format!("0 {base} {RANGE}\n"),
            format!("0 {base} {RANGE}\n"),
            // The child clears its supplementary groups itself, which needs setgroups.
            "allow",
        ),
        IdMapping::Rootless { host_uid, host_gid } => (
            format!("{uid} {host_uid} 1\n"),
            format!("{gid} {host_gid} 1\n"),
            // Required by the kernel before an unprivileged process may write gid_map.
            "deny",
        ),
    };
    std::fs::write(format!("{dir}/setgroups"), setgroups)
        .step(Step::UserNsMap, format!("write {dir}/setgroups"))?;
    std::fs::write(format!("{dir}/uid_map"), &uid_map).step(
        Step::UserNsMap,
        format!("write {dir}/uid_map ({})", uid_map.trim()),
    )?;
    std::fs::write(format!("{dir}/gid_map"), &gid_map).step(
        Step::UserNsMap,
        format!("write {dir}/gid_map ({})", gid_map.trim()),
    )?;
    Ok(())
}

/// Blocks until the supervisor has written the id maps: nothing in the new user
/// namespace has an identity before.
pub fn wait_for_maps(chan: &super::sync::Channel) -> Result<(), SetupError> {
    match chan.recv()? {
        Some(super::sync::Msg::MapsWritten) => Ok(()),
        other => Err(SetupError::new(
            Step::Sync,
            format!("expected MapsWritten from the supervisor, got {other:?}"),
        )),
    }
}
