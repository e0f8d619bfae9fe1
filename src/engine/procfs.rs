//! A fresh /proc for the sandbox's PID namespace, with the dangerous parts masked.

use super::mounts::{
    bind, mkdir_p, set_attr, tmpfs, MOUNT_ATTR_NODEV, MOUNT_ATTR_NOEXEC, MOUNT_ATTR_NOSUID,
    MOUNT_ATTR_RDONLY,
};
use crate::error::{SetupError, Step, StepContext};
use nix::mount::MsFlags;
use std::path::Path;

/// Files hidden behind /dev/null (what Docker and runc mask by default).
const MASKED_FILES: &[&str] = &[
    "kcore",
    "keys",
    "sysrq-trigger",
    "timer_list",
    "sched_debug",
    "latency_stats",
    "kallsyms",
    "kpagecount",
    "kpageflags",
    "kpagecgroup",
    "config.gz",
];
/// Host facts that name the machine rather than describe it, hidden behind
/// /dev/null: the kernel's command line (root device, console, boot options) and
/// the boot configuration. The boot id is replaced instead (see [`BOOT_ID`]).
const HOST_IDENTITY: &[&str] = &["cmdline", "bootconfig"];
/// The host's boot id: the same for every process on the host until it reboots, so
/// code in two sandboxes could tell they share one. Each sandbox gets its own.
const BOOT_ID: &str = "sys/kernel/random/boot_id";
/// Directories hidden behind an empty read-only tmpfs.
const MASKED_DIRS: &[&str] = &["acpi", "scsi", "asound", "driver"];
/// Directories kept visible but read-only.
const READ_ONLY: &[&str] = &["sys", "bus", "fs", "irq"];

/// Mounts /proc at `target` and, with `masks`, hides what it must not show. `scratch`
/// is a directory on a private tmpfs outside the new root, for the sandbox's own
/// boot id.
pub fn mount(target: &Path, masks: bool, scratch: &Path) -> Result<(), SetupError> {
    let step = Step::Proc;
    mkdir_p(step, target)?;
    nix::mount::mount(
        Some("proc"),
        target,
        Some("proc"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
        None::<&str>,
    )
    .step(step, format!("mount proc on {}", target.display()))?;
    if !masks {
        return Ok(());
    }
    for name in READ_ONLY {
        let p = target.join(name);
        if p.exists() {
            let ps = p.display().to_string();
            bind(step, &ps, &p, true)?;
            set_attr(
                step,
                &p,
                MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC,
                true,
            )?;
        }
    }
    for name in MASKED_FILES.iter().chain(HOST_IDENTITY) {
        let p = target.join(name);
        if p.exists() {
            mount_null(&p)?;
        }
    }
    own_boot_id(target, scratch)?;
    for name in MASKED_DIRS {
        let p = target.join(name);
        if p.is_dir() {
            tmpfs(
                step,
                &p,
                MsFlags::MS_RDONLY | MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
                // Read-only and empty: its root is its one inode.
                "size=4k,nr_inodes=1,mode=0555",
            )?;
        }
    }
    Ok(())
}

fn mount_null(p: &Path) -> Result<(), SetupError> {
    let step = Step::Proc;
    nix::mount::mount(
        Some("/dev/null"),
        p,
        None::<&str>,
        MsFlags::MS_BIND,
        None::<&str>,
    )
    .step(step, format!("mask {}", p.display()))?;
    // Not nodev: reads of a masked file must behave like /dev/null (empty), as in Docker.
    set_attr(
        step,
        p,
        MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC,
        false,
    )
}

/// A random boot id of the sandbox's own, read-only over the host's.
pub fn own_boot_id(target: &Path, scratch: &Path) -> Result<(), SetupError> {
    let step = Step::Proc;
    let host = target.join(BOOT_ID);
    if !host.exists() {
        return Ok(());
    }
    let file = scratch.join("boot_id");
    let id = format!("{}\n", uuid::Uuid::new_v4().hyphenated());
    std::fs::write(&file, id).step(step, format!("write {}", file.display()))?;
    bind(step, &file.display().to_string(), &host, false)?;
    set_attr(
        step,
        &host,
        MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC,
        false,
    )
}
