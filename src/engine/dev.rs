//! A minimal /dev: a few host character devices bound in, a private devpts, /dev/shm.
//!
//! Device nodes cannot be created inside a user namespace (and a tmpfs mounted there
//! is nodev), so the harmless ones are bind-mounted from the host, like bubblewrap does.

use super::mounts::{
    bind, fd_path, mkdir_p, set_attr, tmpfs, tmpfs_options, touch, MOUNT_ATTR_NOEXEC,
    MOUNT_ATTR_NOSUID, MOUNT_ATTR_RDONLY,
};
use crate::error::{SetupError, Step, StepContext};
use nix::mount::{mount, MsFlags};
use std::os::fd::OwnedFd;
use std::path::Path;

/// /dev holds only mount points and links.
const DEV_SIZE: u64 = 64 << 10;
/// POSIX shared memory and semaphores (multiprocessing's).
const SHM_SIZE: u64 = 16 << 20;

pub const DEVICES: &[&str] = &["null", "zero", "full", "random", "urandom", "tty"];

const LINKS: &[(&str, &str)] = &[
    ("fd", "/proc/self/fd"),
    ("stdin", "/proc/self/fd/0"),
    ("stdout", "/proc/self/fd/1"),
    ("stderr", "/proc/self/fd/2"),
    ("ptmx", "pts/ptmx"),
    ("core", "/proc/kcore"),
];

pub fn build(dev: &Path, devices: &[(String, OwnedFd)]) -> Result<(), SetupError> {
    let step = Step::Dev;
    mkdir_p(step, dev)?;
    tmpfs(
        step,
        dev,
        MsFlags::MS_NOSUID | MsFlags::MS_NOEXEC,
        &tmpfs_options(DEV_SIZE, "0755"),
    )?;
    for (name, fd) in devices {
        let p = dev.join(name);
        touch(step, &p)?;
        bind(step, &fd_path(fd), &p, false)?;
        set_attr(step, &p, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, false)?;
    }
    for (name, target) in LINKS {
        if *name == "core" {
            continue; // /proc/kcore is masked; no link to it.
        }
        std::os::unix::fs::symlink(target, dev.join(name))
            .step(step, format!("symlink /dev/{name}"))?;
    }
    let pts = dev.join("pts");
    mkdir_p(step, &pts)?;
    mount(
        Some("devpts"),
        &pts,
        Some("devpts"),
        MsFlags::MS_NOSUID | MsFlags::MS_NOEXEC,
        Some("newinstance,ptmxmode=0666,mode=0620"),
    )
    .step(step, "mount a private devpts on /dev/pts")?;
    let shm = dev.join("shm");
    mkdir_p(step, &shm)?;
    tmpfs(
        step,
        &shm,
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
        &tmpfs_options(SHM_SIZE, "1777"),
    )?;
    let mq = dev.join("mqueue");
    mkdir_p(step, &mq)?;
    // The tmpfs itself holds only mount points and links: freeze it.
    set_attr(step, dev, MOUNT_ATTR_RDONLY, false)?;
    Ok(())
}
