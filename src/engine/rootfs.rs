//! The sandbox's filesystem view: a new root assembled on a tmpfs, then pivot_root.
//!
//! Host paths that the view needs are opened as O_PATH descriptors before anything
//! is mounted, and mounted through `/proc/self/fd/N`: the tmpfs that holds the new
//! root may cover their original location, and a path that is looked up once
//! cannot be swapped for a symlink between check and use (CVE-2021-30465).

use super::mounts::{
    self, bind, fd_path, mkdir_p, open_path, set_attr, tmpfs, MOUNT_ATTR_NODEV, MOUNT_ATTR_NOEXEC,
    MOUNT_ATTR_NOSUID, MOUNT_ATTR_RDONLY,
};
use super::trees::Tree;
use super::{dev, etc, procfs};
use crate::error::{SetupError, Step, StepContext};
use crate::policy::Policy;
use nix::mount::{mount, umount2, MntFlags, MsFlags};
use std::os::fd::OwnedFd;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Where the supervisor-side view assembles the new root, inside the sandbox's
/// private mount namespace (the host's /tmp is never touched).
const BASE: &str = "/tmp";
/// Fixed location of the code inside the sandbox.
pub const SCRIPT_DIR: &str = "/sandbox";
pub const SCRIPT_NAME: &str = "main.py";

/// Top-level host entries that merged-/usr systems make symlinks into /usr.
const TOP_LEVEL: &[&str] = &["bin", "sbin", "lib", "lib32", "lib64", "libx32"];

enum Source {
    Dir {
        at: PathBuf,
        fd: OwnedFd,
    },
    /// A detached copy of the host's mount (see [`super::trees`]).
    Tree {
        at: PathBuf,
        fd: OwnedFd,
    },
    File {
        at: PathBuf,
        fd: OwnedFd,
    },
    Symlink {
        at: PathBuf,
        target: PathBuf,
    },
}

/// Host paths needed by the view, opened before the base tmpfs covers anything.
pub struct Sources {
    binds: Vec<Source>,
    image: Option<OwnedFd>,
    devices: Vec<(String, OwnedFd)>,
}

/// A host path the view takes, before anything is opened.
enum Planned {
    Dir(PathBuf),
    File(PathBuf),
    Symlink { at: PathBuf, target: PathBuf },
}

/// The host paths of the Python view built from host binds (none for an image root).
fn plan(policy: &Policy) -> Result<Vec<Planned>, SetupError> {
    let step = Step::OpenSources;
    let mut out = Vec::new();
    if policy.fs.rootfs.is_some() {
        return Ok(out);
    }
    let link = |at: &Path| -> Result<Planned, SetupError> {
        let target = std::fs::read_link(at).step(step, format!("read link {}", at.display()))?;
        Ok(Planned::Symlink {
            at: at.to_path_buf(),
            target,
        })
    };
    out.push(Planned::Dir("/usr".into()));
    for name in TOP_LEVEL {
        let host = Path::new("/").join(name);
        match std::fs::symlink_metadata(&host) {
            Ok(m) if m.file_type().is_symlink() => out.push(link(&host)?),
            Ok(m) if m.is_dir() => out.push(Planned::Dir(host)),
            _ => {}
        }
    }
    for (p, is_dir) in etc::HOST_FILES {
        let host = Path::new(p);
        match std::fs::symlink_metadata(host) {
            Ok(m) if m.file_type().is_symlink() && !is_dir => out.push(link(host)?),
            Ok(_) if *is_dir => out.push(Planned::Dir(host.into())),
            Ok(_) => out.push(Planned::File(host.into())),
            Err(_) => {}
        }
    }
    if let Some(prefix) = &policy.interpreter.extra_bind {
        out.push(Planned::Dir(prefix.clone()));
    }
    Ok(out)
}

/// The host directories the view binds (for [`super::trees`]).
pub(super) fn host_dirs(policy: &Policy) -> Vec<PathBuf> {
    plan(policy)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|p| match p {
            Planned::Dir(d) => Some(d),
            _ => None,
        })
        .collect()
}

/// Opens the view's host paths. A directory with a tree from the supervisor
/// ([`super::trees`]) is attached from it; the trees left over are the submounts
/// the view keeps, attached after their parents.
pub fn open_sources(policy: &Policy, trees: &[Tree]) -> Result<Sources, SetupError> {
    let step = Step::OpenSources;
    let dup = |t: &Tree| {
        t.fd.try_clone()
            .step(step, format!("dup the tree of {}", t.at.display()))
    };
    let mut trees: Vec<&Tree> = trees.iter().collect();
    let mut binds = Vec::new();
    for p in plan(policy)? {
        binds.push(match p {
            Planned::Dir(at) => match trees.iter().position(|t| t.at == at) {
                Some(i) => Source::Tree {
                    fd: dup(trees.remove(i))?,
                    at,
                },
                None => Source::Dir {
                    fd: open_path(step, &at)?,
                    at,
                },
            },
            Planned::File(at) => Source::File {
                fd: open_path(step, &at)?,
                at,
            },
            Planned::Symlink { at, target } => Source::Symlink { at, target },
        });
    }
    for t in trees {
        binds.push(Source::Tree {
            at: t.at.clone(),
            fd: dup(t)?,
        });
    }
    let image = match &policy.fs.rootfs {
        Some(img) => Some(open_path(step, img)?),
        None => None,
    };
    if let Some(sock) = &policy.proxy_socket {
        binds.push(Source::File {
            at: PathBuf::from(crate::net::SANDBOX_SOCKET_PATH),
            fd: open_path(step, sock)?,
        });
    }
    let mut devices = Vec::new();
    for name in dev::DEVICES {
        let host = Path::new("/dev").join(name);
        devices.push((name.to_string(), open_path(step, &host)?));
    }
    Ok(Sources {
        binds,
        image,
        devices,
    })
}

/// Builds the new root and pivots into it. On return the process sees only the
/// sandbox view, with `/` as its root and `/sandbox` as its working directory.
pub fn build(policy: &Policy, src: Sources, script: &[u8]) -> Result<(), SetupError> {
    mounts::make_private()?;

    let base = Path::new(BASE);
    tmpfs(
        Step::RootTmpfs,
        base,
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
        &mounts::tmpfs_options(policy.fs.root_size, "0755"),
    )?;
    let root = base.join("root");
    mkdir_p(Step::RootTmpfs, &root)?;

    mount_root(base, &root, src.image.as_ref())?;

    // /tmp first: a host bind whose path lies under /tmp (an interpreter prefix
    // there, say) must land on top of the sandbox's /tmp, not be hidden by it.
    let tmp = root.join("tmp");
    mkdir_p(Step::Tmp, &tmp)?;
    tmpfs(
        Step::Tmp,
        &tmp,
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
        &mounts::tmpfs_options(policy.fs.tmp_size, "1777"),
    )?;
    for b in &src.binds {
        bind_host(&root, b)?;
    }
    if src.image.is_none() {
        etc::write(&root, policy)?;
    }
    procfs::mount(
        &root.join("proc"),
        policy.has(crate::policy::Layer::ProcMasks),
        base,
    )?;
    dev::build(&root.join("dev"), &src.devices)?;
    install_script(&root, policy, script)?;
    drop(src);

    pivot(&root)?;
    if policy.fs.read_only_root {
        set_attr(Step::ReadOnlyRoot, Path::new("/"), MOUNT_ATTR_RDONLY, false)?;
        set_attr(
            Step::ReadOnlyRoot,
            Path::new(SCRIPT_DIR),
            MOUNT_ATTR_RDONLY,
            false,
        )?;
    }
    std::env::set_current_dir(SCRIPT_DIR).step(Step::PivotRoot, "chdir /sandbox")?;
    Ok(())
}

/// Mounts what becomes `/`: an overlay over the image (writes go to the root tmpfs),
/// or, without an image, the root tmpfs's own directory bound onto itself, because
/// pivot_root needs the new root to be a mount point.
fn mount_root(base: &Path, root: &Path, image: Option<&OwnedFd>) -> Result<(), SetupError> {
    let Some(img) = image else {
        return bind(Step::RootTmpfs, &root.display().to_string(), root, false);
    };
    let (upper, work) = (base.join("upper"), base.join("work"));
    mkdir_p(Step::Overlay, &upper)?;
    mkdir_p(Step::Overlay, &work)?;
    let opts = format!(
        "lowerdir={},upperdir={},workdir={}",
        fd_path(img),
        upper.display(),
        work.display()
    );
    mount(
        Some("overlay"),
        root,
        Some("overlay"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
        Some(opts.as_str()),
    )
    .step(Step::Overlay, format!("mount overlay ({opts})"))
}

fn bind_host(root: &Path, b: &Source) -> Result<(), SetupError> {
    let step = Step::BindHost;
    let inside = |at: &Path| root.join(at.strip_prefix("/").unwrap_or(at));
    match b {
        Source::Symlink { at, target } => {
            let p = inside(at);
            if let Some(parent) = p.parent() {
                mkdir_p(step, parent)?;
            }
            std::os::unix::fs::symlink(target, &p).step(
                step,
                format!("symlink {} -> {}", p.display(), target.display()),
            )
        }
        Source::Tree { at, fd } => {
            let p = inside(at);
            mkdir_p(step, &p)?;
            mounts::move_mount(step, fd, &p)
        }
        // Recursive: a plain bind of a host mount with submounts is refused in a
        // user namespace (a rootless run's; see super::trees).
        Source::Dir { at, fd } => {
            let p = inside(at);
            mkdir_p(step, &p)?;
            bind(step, &fd_path(fd), &p, true)?;
            set_attr(
                step,
                &p,
                MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
                true,
            )
        }
        Source::File { at, fd } => {
            let p = inside(at);
            if let Some(parent) = p.parent() {
                mkdir_p(step, parent)?;
            }
            mounts::touch(step, &p)?;
            bind(step, &fd_path(fd), &p, false)?;
            set_attr(
                step,
                &p,
                MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC,
                false,
            )
        }
    }
}

/// Writes the code to `/sandbox/main.py` and makes that file read-only. The code
/// is copied from the supervisor's memory (the bytes that were read, hashed and
/// assessed), never bound from the host path, so it cannot change under us.
fn install_script(root: &Path, policy: &Policy, script: &[u8]) -> Result<(), SetupError> {
    let step = Step::Script;
    let dir = root.join(SCRIPT_DIR.trim_start_matches('/'));
    mkdir_p(step, &dir)?;
    // A tmpfs of its own: an image's /sandbox belongs to a host uid that is not
    // mapped here, so even the namespace's root could not write into it.
    tmpfs(
        step,
        &dir,
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
        &mounts::tmpfs_options(policy.fs.root_size, "0755"),
    )?;
    let file = dir.join(SCRIPT_NAME);
    std::fs::write(&file, script).step(step, format!("write {}", file.display()))?;
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o444))
        .step(step, "chmod main.py")?;
    let fs = file.display().to_string();
    bind(step, &fs, &file, false)?;
    set_attr(
        step,
        &file,
        MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
        false,
    )?;
    if !policy.fs.read_only_root {
        // A writable root lets code write next to its script, like at home.
        nix::unistd::chown(
            &dir,
            Some(nix::unistd::Uid::from_raw(policy.identity.uid)),
            Some(nix::unistd::Gid::from_raw(policy.identity.gid)),
        )
        .step(step, "chown /sandbox to the sandbox user")?;
    }
    Ok(())
}

/// pivot_root(".", ".") stacks the old root on top of the new one, so it can be
/// detached without a directory to park it in (the runc/crun idiom).
pub(crate) fn pivot(root: &Path) -> Result<(), SetupError> {
    let step = Step::PivotRoot;
    std::env::set_current_dir(root).step(step, format!("chdir {}", root.display()))?;
    nix::unistd::pivot_root(".", ".").step(step, "pivot_root")?;
    umount2(".", MntFlags::MNT_DETACH).step(step, "detach the old root")?;
    std::env::set_current_dir("/").step(step, "chdir /")?;
    Ok(())
}
