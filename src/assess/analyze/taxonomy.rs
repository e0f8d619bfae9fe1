//! The path taxonomy: what a (possibly abstract, see [`super::paths`]) path
//! names, for the rules that judge writes, deletions and reads by where they
//! land rather than by how the script spelled the path.

use super::names::{CREDENTIAL_PATHS, PERSISTENCE};

/// Files that make something run at a later login, boot, shell or
/// interpreter start, or that grant access: writing one is persistence.
const STARTUP_FILES: &[(&str, &str)] = &[
    ("/.bashrc", "a shell start-up file"),
    ("/.bash_profile", "a shell start-up file"),
    ("/.bash_login", "a shell start-up file"),
    ("/.profile", "a shell start-up file"),
    ("/.zshrc", "a shell start-up file"),
    ("/.zprofile", "a shell start-up file"),
    ("/.zshenv", "a shell start-up file"),
    ("/.zlogin", "a shell start-up file"),
    ("/.config/fish/config.fish", "a shell start-up file"),
    ("/etc/profile", "a shell start-up file"),
    ("/etc/bash.bashrc", "a shell start-up file"),
    ("/etc/zsh/", "a shell start-up file"),
    ("authorized_keys", "SSH authorized keys"),
    ("/etc/cron", "a cron table"),
    ("/var/spool/cron", "a cron table"),
    ("/etc/anacrontab", "a cron table"),
    ("/etc/systemd/", "a systemd unit"),
    ("/lib/systemd/system", "a systemd unit"),
    ("/.config/systemd/user", "a systemd unit"),
    ("/.config/autostart", "a desktop autostart entry"),
    ("/etc/xdg/autostart", "a desktop autostart entry"),
    ("/etc/rc.local", "an init script"),
    ("/etc/init.d/", "an init script"),
    ("/etc/sudoers", "sudoers"),
    ("/etc/passwd", "the account database"),
    ("/etc/shadow", "the account database"),
    ("/etc/group", "the account database"),
    ("/etc/ld.so.preload", "the dynamic-linker preload list"),
];

/// Trees whose recursive deletion destroys the system or a user's data.
const PRECIOUS_TREES: &[&str] = &[
    "/", "~", "/etc", "/boot", "/usr", "/bin", "/sbin", "/lib", "/lib64", "/var", "/var/lib",
    "/opt", "/srv", "/home", "/root", "/mnt", "/media",
];

/// System prefixes under which any recursive deletion is destruction.
const SYSTEM_TREES: &[&str] = &[
    "/etc/",
    "/boot/",
    "/usr/",
    "/bin/",
    "/sbin/",
    "/lib/",
    "/lib64/",
    "/var/lib/",
];

/// Whole-disk block devices.
const DISKS: &[&str] = &[
    "/dev/sd",
    "/dev/hd",
    "/dev/vd",
    "/dev/xvd",
    "/dev/nvme",
    "/dev/mmcblk",
    "/dev/disk/",
    "/dev/dm-",
    "/dev/md",
];

/// What writing `path` persists, if anything.
pub(super) fn persistence(path: &str) -> Option<&'static str> {
    let lower = path.to_ascii_lowercase();
    if let Some((_, what)) = STARTUP_FILES.iter().find(|(p, _)| lower.contains(p)) {
        return Some(what);
    }
    let in_site = lower.starts_with("<site-packages>")
        || lower.contains("site-packages")
        || lower.contains("dist-packages");
    // Python runs these at start-up only from a site directory (pip writes
    // a sitecustomize.py into its own build environments, for instance).
    let hook = lower.ends_with(".pth")
        || lower.ends_with("/sitecustomize.py")
        || lower.ends_with("/usercustomize.py");
    if in_site && hook {
        return Some("a Python start-up hook");
    }
    PERSISTENCE
        .iter()
        .any(|p| lower.contains(p))
        .then_some("a persistence location")
}

/// `path` with walk and glob suffixes (`/**`, `/*`, `/**/*`) removed, and
/// whether any was: the tree a recursive operation covers.
fn tree_root(path: &str) -> (&str, bool) {
    let mut p = path;
    let mut recursive = false;
    while let Some(q) = p
        .strip_suffix("/**")
        .or_else(|| p.strip_suffix("/*"))
        .or_else(|| p.strip_suffix('/'))
    {
        recursive = true;
        if q.is_empty() {
            return ("/", true);
        }
        p = q;
    }
    (p, recursive)
}

/// Is deleting `path` (recursively, or as one file of a walk over it)
/// destruction of the system or of a home directory? Paths the script made
/// itself (`<tmp:...>`), relative paths and subdirectories of a home are not.
pub(super) fn precious_tree(path: &str, recursive_op: bool) -> bool {
    let (root, walked) = tree_root(path);
    if !(recursive_op || walked) {
        return false;
    }
    if PRECIOUS_TREES.contains(&root) || root == "/home/*" {
        return true;
    }
    let dir = format!("{root}/");
    SYSTEM_TREES.iter().any(|s| dir.starts_with(s))
}

/// A whole disk written to.
pub(super) fn is_disk(path: &str) -> bool {
    DISKS.iter().any(|d| path.starts_with(d))
}

/// Devices no sandboxed script reads for a good reason: raw keyboards and
/// mice, physical and kernel memory.
pub(super) fn capture_device(path: &str) -> Option<&'static str> {
    if path.starts_with("/dev/input/") {
        Some("raw input events (a keylogger's source)")
    } else if matches!(path, "/dev/mem" | "/dev/kmem" | "/dev/port") {
        Some("physical or kernel memory")
    } else {
        None
    }
}

/// Files whose contents are secrets: credentials, keys, browser stores,
/// shell histories, account databases.
pub(super) fn secret(path: &str) -> bool {
    const MORE: &[&str] = &[
        "/etc/passwd",
        "/etc/master.passwd",
        "_history",
        "/proc/self/environ",
        "/etc/ssh/ssh_host_",
        "wallet.dat",
        "/.electrum",
        "/.bitcoin",
        "/.password-store",
        "/.local/share/keyrings",
    ];
    let lower = path.to_ascii_lowercase();
    CREDENTIAL_PATHS
        .iter()
        .chain(MORE)
        .any(|p| lower.contains(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn taxonomy() {
        assert_eq!(persistence("~/.bashrc"), Some("a shell start-up file"));
        assert_eq!(
            persistence("<site-packages>/x.pth"),
            Some("a Python start-up hook")
        );
        assert_eq!(persistence("~/.config/myapp/settings.json"), None);
        assert!(precious_tree("/", true));
        assert!(precious_tree("/**", false));
        assert!(precious_tree("~/**/*", false));
        assert!(precious_tree("/var/lib/dpkg", true));
        assert!(precious_tree("/home/*", true));
        assert!(!precious_tree("~/.cache/thumbnailer", true));
        assert!(!precious_tree("build", true));
        assert!(!precious_tree("<tmp:12>", true));
        assert!(!precious_tree("./logs/**/*", false));
        assert!(!precious_tree("/etc", false));
        assert!(is_disk("/dev/sda") && !is_disk("/dev/null"));
        assert!(secret("~/.ssh/id_ed25519") && secret("~/.bash_history"));
    }
}
