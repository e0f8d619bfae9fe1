//! Landlock for a container's root, derived from its mount table (the strict OCI
//! runtime, `maibox --hardened`): every file gets what the mount it lives on allows,
//! and no more.
//!
//! - a read-only mount: read, and execute unless it is `noexec`;
//! - a writable mount: read and write (never device nodes), and execute unless it is
//!   `noexec` or a tmpfs the bundle did not mount with an explicit `exec` (a file the
//!   container writes to a tmpfs does not become a program);
//! - `/proc` and `/sys` as a whole, as their own mounts say: the read-only binds and
//!   masks the runtime makes inside them are the kernel's to enforce (they are locked).
//!
//! Landlock rights are additive down a directory tree: a rule on `/` would grant
//! its rights to every mount below it. So a directory gets a rule with only the
//! rights that every mount below it also has, and where it needs more, its entries
//! get rules of their own, down to the mounts that need less (see [`place`]). What
//! that costs: a directory with such a mount below it (`/`, `/dev`, `/etc` with a
//! read-only bind) has no rule of its own for what its entries have, so a new entry
//! made directly in it later (`mkdir /data`) is refused.

use std::path::{Path, PathBuf};

use landlock::{
    Access, AccessFs, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, ABI,
};

use super::landlock::{landlock_support, LandlockOutcome};
use super::ConfineError;

const ABI_USED: ABI = ABI::V6;

type Rights = BitFlags<AccessFs>;

/// One mount of the container, with what its files may be used for, and what the
/// kernel refuses on it whatever Landlock allows (writes on a read-only mount,
/// execution on a `noexec` one): a rule above it may grant those without harm.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Mount {
    at: PathBuf,
    rights: Rights,
    moot: Rights,
}

/// What the mount options `opts` make the kernel refuse.
fn moot(opts: &str) -> Rights {
    let has = |o: &str| opts.split(',').any(|x| x == o);
    let mut m = Rights::EMPTY;
    if has("ro") {
        m |= AccessFs::from_all(ABI_USED) & !AccessFs::from_read(ABI_USED) & !AccessFs::IoctlDev;
    }
    if has("noexec") {
        m |= AccessFs::Execute;
    }
    m
}

/// What a file may be used for on a mount with these mountinfo options.
fn rights(fstype: &str, opts: &str, at: &Path, exec_tmpfs: &[PathBuf]) -> Rights {
    let has = |o: &str| opts.split(',').any(|x| x == o);
    // ioctl on a device (a terminal) is not a write: read-only mounts keep it.
    let read = (AccessFs::from_read(ABI_USED) & !AccessFs::Execute) | AccessFs::IoctlDev;
    let write = AccessFs::from_all(ABI_USED)
        & !AccessFs::from_read(ABI_USED)
        & !(AccessFs::MakeChar | AccessFs::MakeBlock);
    let writable = has("rw");
    let unmarked_tmpfs = fstype == "tmpfs" && !exec_tmpfs.iter().any(|e| e == at);
    let exec = !(has("noexec") || writable && unmarked_tmpfs);
    let mut r = read;
    if writable {
        r |= write;
    }
    if exec {
        r |= AccessFs::Execute;
    }
    r
}

/// The container's mounts from `mountinfo` (as seen after pivot_root). Mounts
/// below `/proc` and `/sys` are left to the kernel (see the module's header).
fn mounts(mountinfo: &str, exec_tmpfs: &[PathBuf]) -> Vec<Mount> {
    let mut out: Vec<Mount> = Vec::new();
    for line in mountinfo.lines() {
        let Some((pre, post)) = line.split_once(" - ") else {
            continue;
        };
        let f: Vec<&str> = pre.split(' ').collect();
        let (Some(at), Some(opts)) = (f.get(4), f.get(5)) else {
            continue;
        };
        let at = PathBuf::from(crate::mountinfo::unescape(at));
        let fstype = post.split(' ').next().unwrap_or_default();
        if ["/proc", "/sys"]
            .iter()
            .any(|p| at.starts_with(p) && at != Path::new(p))
        {
            continue;
        }
        // A later mount on the same point covers the earlier one.
        out.retain(|m| m.at != at);
        let rights = rights(fstype, opts, &at, exec_tmpfs);
        out.push(Mount {
            at,
            rights,
            moot: moot(opts),
        });
    }
    out
}

/// The rights of the mount `p` lives on.
fn rights_at(p: &Path, mounts: &[Mount]) -> Rights {
    mounts
        .iter()
        .filter(|m| p.starts_with(&m.at))
        .max_by_key(|m| m.at.components().count())
        .map(|m| m.rights)
        .unwrap_or_default()
}

/// Rules that give every file under `dir` (whose own mount grants `r`; the rules
/// above it grant `have`) its mount's rights, and beyond them only what that mount
/// refuses anyway. A rule on `dir` takes only what every mount below it has (or
/// refuses); where `dir`'s area, or a mount below, needs more, its entries get
/// their own rules, walking only toward such mounts.
fn place(
    dir: &Path,
    r: Rights,
    have: Rights,
    mounts: &[Mount],
    rules: &mut Vec<(PathBuf, Rights)>,
) {
    let below: Vec<&Mount> = mounts
        .iter()
        .filter(|m| m.at.starts_with(dir) && m.at != dir)
        .collect();
    let safe = below.iter().fold(r, |acc, m| acc & (m.rights | m.moot));
    let mut have = have;
    if !have.contains(safe) {
        have |= safe;
        rules.push((dir.to_path_buf(), have));
    }
    if have.contains(r) && below.iter().all(|m| have.contains(m.rights)) {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let is_mount = mounts.iter().any(|m| m.at == p);
        let leads_to_mount = below.iter().any(|m| m.at.starts_with(&p));
        let pr = if is_mount { rights_at(&p, mounts) } else { r };
        let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
        if leads_to_mount && (is_dir || is_mount) {
            place(&p, pr, have, mounts, rules);
        } else if !have.contains(pr) {
            rules.push((p, pr));
        }
    }
}

/// Restricts this process (and what it starts) to its mounts' rights, as the module
/// says; `exec_tmpfs` are the tmpfs mount points the bundle mounted `exec`. Call it
/// in the container, after pivot_root and every mount, while the process still has
/// CAP_SYS_ADMIN in its user namespace (no_new_privs is left as the bundle says).
pub fn apply(exec_tmpfs: &[PathBuf]) -> Result<LandlockOutcome, ConfineError> {
    let (kernel_abi, why) = landlock_support();
    if kernel_abi == 0 {
        return Err(ConfineError::LandlockRequired(
            why.unwrap_or_else(|| "the kernel has no Landlock".into()),
        ));
    }
    let info = std::fs::read_to_string("/proc/self/mountinfo").map_err(|e| {
        ConfineError::LandlockPath {
            path: "/proc/self/mountinfo".into(),
            why: e.to_string(),
        }
    })?;
    let mounts = mounts(&info, exec_tmpfs);
    let mut rules = Vec::new();
    place(
        Path::new("/"),
        rights_at(Path::new("/"), &mounts),
        Rights::EMPTY,
        &mounts,
        &mut rules,
    );
    let ll = |step| move |source| ConfineError::Landlock { step, source };
    let mut created = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(ABI_USED))
        .map_err(ll("handling filesystem access"))?
        .create()
        .map_err(ll("creating the ruleset"))?
        .no_new_privs(false);
    for (path, access) in rules {
        // A dangling link or a file gone meanwhile: no rule, so less access.
        let Ok(fd) = PathFd::new(&path) else { continue };
        let is_dir = std::fs::metadata(&path).is_ok_and(|m| m.is_dir());
        let access = if is_dir {
            access
        } else {
            access & AccessFs::from_file(ABI_USED)
        };
        created = created
            .add_rule(PathBeneath::new(fd, access))
            .map_err(ll("adding a path rule"))?;
    }
    let status = created
        .restrict_self()
        .map_err(ll("restricting the process"))?;
    let text = match status.ruleset {
        RulesetStatus::FullyEnforced => "fully enforced",
        RulesetStatus::PartiallyEnforced => "partially enforced",
        RulesetStatus::NotEnforced => "not enforced",
    };
    Ok(LandlockOutcome {
        abi: kernel_abi.min(6),
        kernel_abi,
        status: text.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const INFO: &str = "\
1 0 0:1 / / rw,relatime - overlay overlay rw,lowerdir=/x
2 1 0:2 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw
3 2 0:2 /sys /proc/sys ro,nosuid,nodev,noexec,relatime - proc proc rw
4 1 0:3 / /dev rw,nosuid - tmpfs tmpfs rw,mode=755
5 4 0:4 / /dev/shm rw,nosuid,nodev,noexec - tmpfs shm rw
6 1 0:5 / /sys ro,nosuid,nodev,noexec - sysfs sysfs ro
7 1 0:6 / /run\\040x rw,nosuid - tmpfs tmpfs rw
8 1 8:1 /vol /etc/hosts ro,relatime - ext4 /dev/sda1 rw
";

    #[test]
    fn rights_follow_each_mount() {
        let m = mounts(INFO, &[PathBuf::from("/run x")]);
        let at = |p: &str| rights_at(Path::new(p), &m);
        let w = AccessFs::WriteFile;
        let x = AccessFs::Execute;
        assert!(
            at("/usr/bin").contains(w | x),
            "the root: read, write, exec"
        );
        assert!(at("/proc/sys/kernel").contains(w), "/proc as a whole");
        assert!(!m.iter().any(|m| m.at == Path::new("/proc/sys")));
        assert!(
            at("/dev/null").contains(w) && !at("/dev").contains(x),
            "tmpfs: no exec"
        );
        assert!(!at("/dev/shm").contains(x));
        assert!(!at("/sys/kernel").contains(w) && !at("/sys").contains(x));
        assert!(at("/run x/a").contains(x), "a tmpfs mounted exec");
        assert!(!at("/etc/hosts").contains(w), "a read-only bind");
        assert!(!at("/").contains(AccessFs::MakeChar));
    }

    #[test]
    fn a_rule_never_gives_a_mount_below_more_than_it_has() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for d in ["usr/bin", "tmp", "etc/ssl", "sys"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(root.join("etc/hosts"), "").unwrap();
        let rw = AccessFs::from_all(ABI_USED) & !(AccessFs::MakeChar | AccessFs::MakeBlock);
        let ro = AccessFs::from_read(ABI_USED) | AccessFs::IoctlDev;
        let noexec = rw & !AccessFs::Execute;
        let mount = |at: PathBuf, rights, opts| Mount {
            at,
            rights,
            moot: moot(opts),
        };
        let mounts = vec![
            mount(root.to_path_buf(), rw, "rw"),
            mount(root.join("tmp"), noexec, "rw,nosuid"),
            mount(root.join("etc/hosts"), ro, "ro"),
            mount(root.join("sys"), ro & !AccessFs::Execute, "ro,noexec"),
        ];
        let mut rules = Vec::new();
        place(root, rw, Rights::EMPTY, &mounts, &mut rules);
        // Effective rights of a path: the union of the rules on it and above it.
        let eff = |p: &Path| {
            rules
                .iter()
                .filter(|(r, _)| p.starts_with(r))
                .fold(Rights::EMPTY, |a, (_, x)| a | *x)
        };
        let moot_at = |p: &Path| {
            mounts
                .iter()
                .filter(|m| p.starts_with(&m.at))
                .max_by_key(|m| m.at.components().count())
                .map_or(Rights::EMPTY, |m| m.moot)
        };
        for p in ["usr/bin", "etc/ssl", "tmp", "etc/hosts", "tmp/x", "sys/x"] {
            let p = root.join(p);
            let (e, want) = (eff(&p), rights_at(&p, &mounts));
            assert!(e.contains(want), "{}: {rules:?}", p.display());
            assert!(
                (want | moot_at(&p)).contains(e),
                "{}: {rules:?}",
                p.display()
            );
        }
        // The cost: a new entry of the root (made after the rules) may be written,
        // not run, as a rule on the root must not let /tmp run what it holds.
        assert_eq!(eff(&root.join("new")), noexec);
    }
}
