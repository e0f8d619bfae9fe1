//! `mounts` → the view's [`OciMount`]s: options as mount flags, propagation,
//! recursive attributes and filesystem data; bind sources resolved against
//! the bundle.

use std::path::Path;

use nix::mount::MsFlags as F;
use oci_spec::runtime::Spec;

use super::{invalid, BundleError};
use crate::policy::oci::OciMount;

/// Every mount of the spec, in order.
pub(super) fn mounts(spec: &Spec, bundle: &Path) -> Result<Vec<OciMount>, BundleError> {
    let mut mounts = Vec::new();
    for m in spec.mounts().iter().flatten() {
        if let Some(mm) = mount_for(m, bundle)? {
            mounts.push(mm);
        }
    }
    Ok(mounts)
}

/// A mount's options, read in order (a later option overrides an earlier one).
struct Options {
    bind: bool,
    recursive: bool,
    flags: F,
    propagation: F,
    /// Options passed to the filesystem.
    data: Vec<String>,
    rec_set: u64,
    rec_clear: u64,
}

fn options(kind: &str, options: &[String]) -> Options {
    let mut out = Options {
        bind: kind == "bind",
        recursive: false,
        flags: F::empty(),
        propagation: F::empty(),
        data: Vec::new(),
        rec_set: 0,
        rec_clear: 0,
    };
    for o in options {
        if let Some((set, clear)) = recursive_attr(o) {
            out.rec_set = (out.rec_set & !clear) | set;
            out.rec_clear = (out.rec_clear & !set) | clear;
            continue;
        }
        if let Some((set, clear)) = flag(o) {
            out.flags |= set;
            out.flags &= !clear;
            continue;
        }
        match o.as_str() {
            "bind" => out.bind = true,
            "rbind" => {
                out.bind = true;
                out.recursive = true;
            }
            "private" | "rprivate" | "shared" | "rshared" | "slave" | "rslave" | "unbindable"
            | "runbindable" => {
                let rec = o.starts_with('r');
                let p = match o.trim_start_matches('r') {
                    "private" => F::MS_PRIVATE,
                    "shared" => F::MS_SHARED,
                    "slave" => F::MS_SLAVE,
                    _ => F::MS_UNBINDABLE,
                };
                out.propagation = p | if rec { F::MS_REC } else { F::empty() };
            }
            // Copying the image's content up into a tmpfs is not implemented; the
            // tmpfs starts empty, which is what runc does without it.
            "tmpcopyup" => {}
            other => out.data.push(other.to_string()),
        }
    }
    out
}

/// A mount flag option: (flags to set, flags to clear).
fn flag(o: &str) -> Option<(F, F)> {
    Some(match o {
        "ro" => (F::MS_RDONLY, F::empty()),
        "rw" => (F::empty(), F::MS_RDONLY),
        "nosuid" => (F::MS_NOSUID, F::empty()),
        "suid" => (F::empty(), F::MS_NOSUID),
        "nodev" => (F::MS_NODEV, F::empty()),
        "dev" => (F::empty(), F::MS_NODEV),
        "noexec" => (F::MS_NOEXEC, F::empty()),
        "exec" => (F::empty(), F::MS_NOEXEC),
        "sync" => (F::MS_SYNCHRONOUS, F::empty()),
        "async" => (F::empty(), F::MS_SYNCHRONOUS),
        "dirsync" => (F::MS_DIRSYNC, F::empty()),
        "noatime" => (F::MS_NOATIME, F::empty()),
        "atime" => (F::empty(), F::MS_NOATIME),
        "nodiratime" => (F::MS_NODIRATIME, F::empty()),
        "diratime" => (F::empty(), F::MS_NODIRATIME),
        "relatime" => (F::MS_RELATIME, F::empty()),
        "norelatime" => (F::empty(), F::MS_RELATIME),
        "strictatime" => (F::MS_STRICTATIME, F::empty()),
        "nosymfollow" => (crate::engine::mounts::MS_NOSYMFOLLOW, F::empty()),
        "symfollow" => (F::empty(), crate::engine::mounts::MS_NOSYMFOLLOW),
        "nostrictatime" => (F::empty(), F::MS_STRICTATIME),
        _ => return None,
    })
}

fn mount_for(m: &oci_spec::runtime::Mount, bundle: &Path) -> Result<Option<OciMount>, BundleError> {
    let dest = m.destination().display().to_string();
    if !dest.starts_with('/') {
        return Err(invalid(
            "mounts[].destination",
            format!("{dest:?} is not absolute"),
        ));
    }
    let kind = m.typ().clone().unwrap_or_default();
    let o = options(&kind, &m.options().clone().unwrap_or_default());
    // A bind mount has no filesystem to take options: a flag maibox does not
    // know would otherwise be dropped silently. Filesystem data (`key=value`,
    // which runc passes on and the kernel ignores for a bind) is left alone.
    let unknown: Vec<&String> = o.data.iter().filter(|o| !o.contains('=')).collect();
    if o.bind && !unknown.is_empty() {
        return Err(invalid(
            "mounts[].options",
            format!(
                "{dest}: unknown option(s) {} for a bind mount",
                unknown
                    .iter()
                    .map(|o| o.as_str())
                    .collect::<Vec<_>>()
                    .join(",")
            ),
        ));
    }
    let source = source(m, &kind, o.bind, &dest, bundle)?;
    Ok(Some(OciMount {
        destination: dest,
        kind,
        source,
        bind: o.bind,
        recursive: o.recursive,
        flags: o.flags.bits(),
        propagation: o.propagation.bits(),
        data: o.data.join(","),
        rec_set: o.rec_set,
        rec_clear: o.rec_clear,
    }))
}

/// A bind's source, relative to the bundle unless absolute; another
/// filesystem's source as given, for the types maibox mounts.
fn source(
    m: &oci_spec::runtime::Mount,
    kind: &str,
    bind: bool,
    dest: &str,
    bundle: &Path,
) -> Result<String, BundleError> {
    let src = m
        .source()
        .as_ref()
        .map(|s| s.display().to_string())
        .unwrap_or_default();
    if bind {
        if src.is_empty() {
            return Err(invalid(
                "mounts[].source",
                format!("bind mount on {dest} has no source"),
            ));
        }
        let p = Path::new(&src);
        return Ok(if p.is_absolute() {
            src
        } else {
            bundle.join(p).display().to_string()
        });
    }
    if !matches!(
        kind,
        "proc" | "tmpfs" | "devpts" | "mqueue" | "sysfs" | "cgroup"
    ) {
        return Err(invalid(
            "mounts[].type",
            format!("{kind:?} on {dest} is not supported"),
        ));
    }
    Ok(src)
}

/// The recursive mount options (runc's `r`-prefixed set, applied with
/// mount_setattr(AT_RECURSIVE)): (attributes to set, attributes to clear).
fn recursive_attr(o: &str) -> Option<(u64, u64)> {
    use crate::engine::mounts::*;
    Some(match o {
        "rro" => (MOUNT_ATTR_RDONLY, 0),
        "rrw" => (0, MOUNT_ATTR_RDONLY),
        "rnosuid" => (MOUNT_ATTR_NOSUID, 0),
        "rsuid" => (0, MOUNT_ATTR_NOSUID),
        "rnodev" => (MOUNT_ATTR_NODEV, 0),
        "rdev" => (0, MOUNT_ATTR_NODEV),
        "rnoexec" => (MOUNT_ATTR_NOEXEC, 0),
        "rexec" => (0, MOUNT_ATTR_NOEXEC),
        "rnodiratime" => (MOUNT_ATTR_NODIRATIME, 0),
        "rnosymfollow" => (MOUNT_ATTR_NOSYMFOLLOW, 0),
        "rsymfollow" => (0, MOUNT_ATTR_NOSYMFOLLOW),
        "rdiratime" => (0, MOUNT_ATTR_NODIRATIME),
        "rnoatime" => (MOUNT_ATTR_NOATIME, MOUNT_ATTR_ATIME_MASK),
        "rstrictatime" => (MOUNT_ATTR_STRICTATIME, MOUNT_ATTR_ATIME_MASK),
        // relatime is the atime field's zero value; "no relatime" names no
        // other mode, so (as in runc) it changes nothing.
        "rrelatime" | "ratime" | "rnostrictatime" => (0, MOUNT_ATTR_ATIME_MASK),
        "rnorelatime" => (0, 0),
        _ => return None,
    })
}
