//! The path taxonomy: what a (possibly abstract, see [`super::paths`]) path
//! names, for the rules that judge writes, deletions and reads by where they
//! land rather than by how the script spelled the path.

use super::names::{credential_paths, LOGIN_FILES, PERSISTENCE};
use super::needles::Grams;

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
    ("/etc/ld.so.conf", "the dynamic-linker search path"),
    ("/etc/profile.d/", "a shell start-up file"),
    ("/etc/environment", "the login environment"),
    ("/.ssh/rc", "an SSH login script"),
    ("/etc/ssh/sshrc", "an SSH login script"),
    ("/.xinitrc", "an X session start-up file"),
    ("/.xsessionrc", "an X session start-up file"),
    ("/.xprofile", "an X session start-up file"),
    (
        "/etc/udev/rules.d/",
        "a udev rule (runs commands on device events)",
    ),
    (
        "/lib/udev/rules.d/",
        "a udev rule (runs commands on device events)",
    ),
    ("/etc/apt/apt.conf.d/", "a package-manager hook"),
    ("/etc/yum/pluginconf.d/", "a package-manager hook"),
    (
        "/etc/update-motd.d/",
        "a login message script (runs at every login)",
    ),
    ("/etc/network/if-up.d/", "a network event script"),
    (
        "/etc/networkmanager/dispatcher.d/",
        "a network event script",
    ),
    ("/etc/pam.d/", "the login authentication stack"),
    ("/etc/modules-load.d/", "a kernel module loaded at boot"),
    ("/etc/modules", "a kernel module loaded at boot"),
    ("/etc/inittab", "an init script"),
    ("/etc/rc.d/", "an init script"),
    ("/usr/lib/systemd/", "a systemd unit"),
    ("/run/systemd/system", "a systemd unit"),
    ("/.local/share/systemd/user", "a systemd unit"),
    ("/.config/systemd/", "a systemd unit"),
    // launchd reads every property list in these at login or boot.
    ("/library/launchagents/", "a launchd agent"),
    ("/library/launchdaemons/", "a launchd daemon"),
    // Windows runs whatever is put in a Startup folder at sign-in.
    ("/start menu/programs/startup/", "a Startup folder entry"),
    (
        "\\start menu\\programs\\startup\\",
        "a Startup folder entry",
    ),
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

/// Whether what follows a start-up dotfile's name (`~/.zshrc` + `.bak-1`,
/// `~`, `-old`) makes another file of the same directory: a backup the
/// shell never reads. Directories named after one (`.bashrc.d/x`) are read.
fn backup_of_dotfile(entry: &str, rest: &str) -> bool {
    entry.starts_with("/.")
        && !entry.ends_with('/')
        && rest.starts_with(['.', '-', '~', '_'])
        && !rest.contains('/')
}

/// Whether a path names a persistence entry, and not a backup beside it.
/// (`grams` is `lower`'s pair fingerprint, made once for a whole list.)
pub(super) fn names_entry(lower: &str, grams: &Grams, entry: &str) -> bool {
    // `contains` first: it has a fast path for short needles that `find`
    // lacks, and almost every path names no entry.
    grams.contains(lower, entry)
        && lower.find(entry).is_some_and(|i| {
            !backup_of_dotfile(entry, &lower[i + entry.len()..]) && !below_home(entry, &lower[..i])
        })
}

/// Whether a home start-up dotfile (`/.bashrc`) sits in a folder of the
/// home (`~/.rc-saved/2024/.bashrc`) rather than in the home itself: the
/// shell reads only the one at the top, so the others are copies.
fn below_home(entry: &str, before: &str) -> bool {
    let bare_dotfile = entry.starts_with("/.") && !entry[1..].contains('/');
    bare_dotfile && before.starts_with("~/")
}

/// Whether removing or creating `path` as a folder cannot add a start-up
/// entry: deleting a login item or a unit takes persistence away, a
/// folder made for one is empty. Account, sudo and key files are not
/// among them (deleting those locks people out).
pub(super) fn entry_taken_away(path: &str) -> bool {
    persistence(path).is_some_and(|what| {
        !matches!(
            what,
            "SSH authorized keys" | "sudoers" | "the account database"
        )
    })
}

/// What writing `path` persists, if anything.
pub(super) fn persistence(path: &str) -> Option<&'static str> {
    let lower = path.to_ascii_lowercase();
    let grams = Grams::of(&lower);
    let names = |p: &str| names_entry(&lower, &grams, p);
    if let Some((_, what)) = STARTUP_FILES.iter().find(|(p, _)| names(p)) {
        return Some(what);
    }
    let in_site = lower.starts_with("<site-packages>")
        || grams.contains(&lower, "site-packages")
        || grams.contains(&lower, "dist-packages");
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
        .any(|p| names(p))
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
/// itself (`<tmp:...>`), relative paths and subdirectories of a home are
/// not, but for the folders of the user's own work ([`USER_DATA_FOLDERS`]).
pub(super) fn precious_tree(path: &str, recursive_op: bool) -> bool {
    let (root, walked) = tree_root(path);
    if !(recursive_op || walked) {
        return false;
    }
    if PRECIOUS_TREES.contains(&root) || root == "/home/*" || user_data_folder(root) {
        return true;
    }
    let dir = format!("{root}/");
    // `/usr/tmp` is a temporary directory (the FHS keeps it as a link to
    // `/var/tmp`; `tempfile` probes it with a file it makes and removes),
    // not part of the installed system beside it.
    SYSTEM_TREES.iter().any(|s| dir.starts_with(s)) && !dir.starts_with("/usr/tmp/")
}

/// The folders where a desktop keeps its user's own work (the XDG user
/// directories, and the same names on macOS and Windows), in the user's
/// home or in any home: deleting one whole, or every file a walk over it
/// finds, destroys what cannot be reinstalled. Downloads is left out:
/// clearing old downloads is what tidying tools do.
const USER_DATA_FOLDERS: &[&str] = &[
    "documents",
    "desktop",
    "pictures",
    "photos",
    "videos",
    "movies",
    "music",
];

fn user_data_folder(root: &str) -> bool {
    let lower = root.to_ascii_lowercase();
    let Some((home, folder)) = lower.rsplit_once('/') else {
        return false;
    };
    let a_home = matches!(home, "~" | "/home/*" | "/users/*")
        || ["/home/", "/users/"].iter().any(|h| {
            home.strip_prefix(h)
                .is_some_and(|u| !u.is_empty() && !u.contains('/'))
        });
    a_home && USER_DATA_FOLDERS.contains(&folder)
}

/// A whole disk written to.
pub(super) fn is_disk(path: &str) -> bool {
    DISKS.iter().any(|d| path.starts_with(d)) || windows_raw_disk(path)
}

/// Windows' names for a whole disk or a volume read and written raw,
/// beneath the file system: `\\.\PhysicalDrive0`, `\\.\C:` (also
/// through `\\?\` and with forward slashes).
fn windows_raw_disk(path: &str) -> bool {
    // Both prefixes open with two separators: other paths are not copied.
    let sep = |b: Option<&u8>| matches!(b, Some(b'/' | b'\\'));
    if !(sep(path.as_bytes().first()) && sep(path.as_bytes().get(1))) {
        return false;
    }
    let lower = path.to_ascii_lowercase().replace('/', "\\");
    let Some(rest) = lower
        .strip_prefix("\\\\.\\")
        .or_else(|| lower.strip_prefix("\\\\?\\"))
    else {
        return false;
    };
    let volume = rest.len() == 2 && rest.ends_with(':');
    rest.starts_with("physicaldrive") || rest.starts_with("harddisk") || volume
}

/// Places where a file is run by someone else, later: mounted removable
/// media and shares (opened on another machine), notebooks, IPython start-up
/// directories, git hooks, installed packages. A copy of a script put there
/// spreads it.
pub(super) fn spread_target(path: &str) -> Option<&'static str> {
    let lower = path.to_ascii_lowercase();
    if ["/media/", "/run/media/", "/mnt/"]
        .iter()
        .any(|m| lower.starts_with(m))
    {
        Some("removable media or a network share")
    } else if lower.ends_with(".ipynb") {
        Some("a notebook other people run")
    } else if lower.contains("/.ipython/") && lower.contains("/startup/") {
        Some("IPython's start-up directory")
    } else if lower.contains("/.git/hooks/") {
        Some("a git hook")
    } else if installed_package(&lower) {
        Some("an installed package")
    } else {
        None
    }
}

/// A path inside a directory Python imports installed packages from.
pub(super) fn installed_package(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    lower.starts_with("<site-packages>/")
        || lower.contains("/site-packages/")
        || lower.contains("/dist-packages/")
}

/// Files a test harness reads its verdict from: test modules, pytest's
/// configuration hooks, expected outputs of test cases, test and coverage
/// reports, pytest's cache of failures.
pub(super) fn harness_file(path: &str) -> Option<&'static str> {
    let lower = path.to_ascii_lowercase();
    let name = lower.rsplit('/').next().unwrap_or(&lower);
    let in_tests = lower
        .split('/')
        .any(|d| d == "tests" || d == "test" || d == "testcases" || d == "cases");
    if name == "conftest.py" {
        Some("pytest's configuration hooks")
    } else if (name.starts_with("test_") || name.ends_with("_test.py")) && name.ends_with(".py") {
        Some("a test module")
    } else if in_tests
        && [".out", ".expected", ".ans"]
            .iter()
            .any(|e| name.ends_with(e))
    {
        Some("the expected output of a test case")
    } else if (name.starts_with("junit") && name.ends_with(".xml"))
        || matches!(name, "coverage.xml" | ".coverage" | "lcov.info")
        || lower.contains(".pytest_cache/")
    {
        Some("a test or coverage report")
    } else {
        None
    }
}

/// Files of the grader rather than of the task: autograder trees, hidden
/// test cases and their answers.
pub(super) fn grader_file(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    lower.split('/').any(|d| {
        matches!(
            d,
            "autograder" | "grader" | "grading" | "hidden_tests" | ".hidden_tests"
        )
    })
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

/// Directories whose whole contents are secrets (keys, cloud credentials,
/// browser profiles): read when walked, archived or copied as a tree.
const SECRET_DIRS: &[&str] = &[
    "/.ssh",
    "/.aws",
    "/.gnupg",
    "/.kube",
    "/.docker",
    "/.azure",
    "/.config/gcloud",
    "/.password-store",
    "/.mozilla/firefox",
    "/.config/google-chrome",
    "/.config/chromium",
    "/.config/bravesoftware",
    "/.thunderbird",
    "/.local/share/keyrings",
];

/// A secret directory itself, or a walk inside it (`~/.ssh`, `~/.aws/**`):
/// named files beside the keys (`~/.ssh/known_hosts`) are not.
fn secret_tree(lower: &str, grams: &Grams) -> bool {
    SECRET_DIRS.iter().any(|d| {
        // `find` sets a searcher up per needle: most are turned away first.
        grams.may_hold(d)
            && lower.find(d).is_some_and(|i| {
                let rest = &lower[i + d.len()..];
                rest.is_empty() || rest == "/" || rest.starts_with("/*")
            })
    })
}

/// The suffixes of rotated log archives.
const ROTATED: &[&str] = &[".gz", ".xz", ".bz2", ".zst", ".old"];

/// Whether a test's text names a rotated archive's suffix in a literal
/// (`name.endswith((".gz", ".old"))`).
pub(super) fn names_rotated(test: &str) -> bool {
    ROTATED
        .iter()
        .any(|e| test.contains(&format!("\"{e}\"")) || test.contains(&format!("'{e}'")))
}

/// Extensions of state and configuration files, which log readers keep
/// under /var/log beside what they read.
const STATE_FILES: &[&str] = &[
    ".json", ".pos", ".yaml", ".yml", ".toml", ".ini", ".lock", ".pid", ".state", ".offset",
];

/// Files that record what happened on the machine: system logs, login
/// records, shell and interpreter histories. Rotated archives (`.1`, `.gz`,
/// `.old`) are what log rotation removes, so they are not counted.
pub(super) fn trace(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    let name = lower.rsplit('/').next().unwrap_or(&lower);
    let rotated = ROTATED.iter().any(|e| name.ends_with(e))
        || name
            .rsplit('.')
            .next()
            .is_some_and(|e| !e.is_empty() && e.bytes().all(|b| b.is_ascii_digit()))
        // `app.log.*`, `syslog-*`: the rotated copies beside a log.
        || (name.len() > 2 && (name.ends_with(".*") || name.ends_with("-*")));
    // A log reader's own bookmark kept beside the logs (a shipper's read
    // offsets, a pid or lock file) records nothing that happened.
    let state = STATE_FILES.iter().any(|e| name.ends_with(e));
    if rotated || state {
        return false;
    }
    let log = lower == "/var/log" || lower.starts_with("/var/log/");
    let records = ["/run/utmp", "/var/run/utmp"].contains(&lower.as_str());
    let history = name.ends_with("_history")
        || matches!(name, ".lesshst" | ".viminfo" | ".histfile" | ".sh_history");
    log || records || history
}

/// Kernel and security-module settings that are defences: writing them
/// from a script turns a protection off (ASLR, ptrace scope, SELinux).
pub(super) fn defence_setting(path: &str) -> bool {
    const KNOBS: &[&str] = &[
        "/proc/sys/kernel/randomize_va_space",
        "/proc/sys/kernel/yama/",
        "/proc/sys/kernel/kptr_restrict",
        "/proc/sys/kernel/dmesg_restrict",
        "/proc/sys/kernel/perf_event_paranoid",
        "/proc/sys/kernel/unprivileged_bpf_disabled",
        "/proc/sys/fs/protected_",
        "/sys/fs/selinux/enforce",
        "/etc/selinux/config",
        "/sys/kernel/security/",
    ];
    let lower = path.to_ascii_lowercase();
    KNOBS.iter().any(|k| lower.starts_with(k))
}

/// Processes and services whose job is to watch, log or protect: stopping
/// or killing one is switching a defence off.
pub(super) const DEFENCES: &[&str] = &[
    "auditd",
    "auditbeat",
    "apparmor",
    "selinux",
    "firewalld",
    "ufw",
    "nftables",
    "netfilter-persistent",
    "fail2ban",
    "clamd",
    "clamav-daemon",
    "clamav-freshclam",
    "freshclam",
    "falcon-sensor",
    "falcond",
    "osqueryd",
    "wazuh-agent",
    "wazuh-agentd",
    "ossec",
    "ossec-agentd",
    "sysmon",
    "aide",
    "tripwire",
    "rkhunter",
    "falco",
    "tracee",
    "tetragon",
    "sentinelone",
    "sentinelagent",
    "cbagentd",
    "elastic-agent",
    "elastic-endpoint",
    "filebeat",
    "rsyslog",
    "rsyslogd",
    "syslog-ng",
    "systemd-journald",
    "snoopy",
    "mdatp",
    "wdavdaemon",
];

/// Whether a word names a defence (`auditd`, `auditd.service`, `/usr/sbin/auditd`).
pub(super) fn is_defence(word: &str) -> bool {
    let w = word.trim_matches(|c: char| "'\"".contains(c));
    let Some(w) = last_segment_within(w, LONGEST_DEFENCE + ".service".len()) else {
        return false;
    };
    let w = w.strip_suffix(".service").unwrap_or(w);
    // Whole literals are asked too: most are longer than any name, and
    // need not be compared with forty.
    w.len() <= LONGEST_DEFENCE && defences().bits(w) != 0
}

/// [`DEFENCES`] as a table: a short literal was compared with all forty.
fn defences() -> &'static super::kinds::Table {
    static TABLE: std::sync::OnceLock<super::kinds::Table> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| super::kinds::Table::new(&[(DEFENCES, 1)]))
}

/// `text.rsplit('/').next()`, when that is at most `max` bytes long (`None`
/// when longer). Only the last `max + 1` bytes are searched for the slash:
/// every literal of a file is asked whether it names a defence, and
/// searching a long one from its end for its last slash cost more than the
/// rest of the question.
fn last_segment_within(text: &str, max: usize) -> Option<&str> {
    let from = text.len().saturating_sub(max + 1);
    let tail = text.as_bytes().get(from..)?;
    match memchr::memrchr(b'/', tail) {
        // After an ASCII slash: a character boundary.
        Some(i) => text.get(from + i + 1..),
        None if from == 0 => Some(text).filter(|t| t.len() <= max),
        // No slash in the last `max + 1` bytes: the last part is longer.
        None => None,
    }
}

/// The length of the longest of [`DEFENCES`], worked out when compiling so
/// that a longer name added to the list cannot be turned away.
const LONGEST_DEFENCE: usize = {
    let (mut i, mut longest) = (0, 0);
    while i < DEFENCES.len() {
        if DEFENCES[i].len() > longest {
            longest = DEFENCES[i].len();
        }
        i += 1;
    }
    longest
};

/// Programs that hand out a shell or run code: with the setuid bit or root
/// capabilities they are a root shell for anyone. Files in a temporary
/// directory count too: nothing honest is made setuid there.
pub(super) fn root_shell_target(path: &str) -> bool {
    const PROGRAMS: &[&str] = &[
        "sh", "bash", "dash", "zsh", "ksh", "csh", "tcsh", "fish", "ash", "busybox", "python",
        "perl", "ruby", "php", "node", "lua", "env", "find", "vim", "vi", "awk", "gawk", "tclsh",
        "socat", "nc",
    ];
    let lower = path.to_ascii_lowercase();
    if lower == "<python>" {
        return true;
    }
    let temp = ["/tmp/", "/var/tmp/", "/dev/shm/", "<tmp:"]
        .iter()
        .any(|t| lower.starts_with(t));
    let name = lower.rsplit('/').next().unwrap_or(&lower);
    let base = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    temp || PROGRAMS.contains(&base)
}

/// Where a pod's service account token is mounted.
const POD_TOKEN: &str = "/serviceaccount/token";

/// A pod's own service account token: every client of the cluster's API
/// running in the pod reads it to log in, so reading it beside network use
/// is no sign (MB904); its contents sent anywhere but in an
/// `Authorization` header still are (MB916).
pub(super) fn pod_token(path: &str) -> bool {
    path.ends_with(POD_TOKEN)
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
        // Other wallets' key stores, as their applications lay them out
        // (under the home directory, or under %APPDATA% on Windows).
        "/electrum/wallets",
        "/ethereum/keystore",
        "exodus.wallet",
        "/monero/wallets",
        "/.password-store",
        "/.local/share/keyrings",
        // macOS's private stores: messages, notes, mail, keychains,
        // Safari's history and cookies.
        "/library/messages/",
        "group.com.apple.notes",
        "/library/mail/",
        "/library/keychains/",
        "/library/safari/",
        "cookies.binarycookies",
        // A pod's service account token: the cluster credential of
        // whatever runs in the pod (see `pod_token`).
        POD_TOKEN,
    ];
    let lower = path.to_ascii_lowercase();
    let grams = Grams::of(&lower);
    credential_paths()
        .chain(MORE)
        .any(|p| grams.contains(&lower, p))
        || secret_tree(&lower, &grams)
}

/// A credential path (already lower-cased) naming the current user's own
/// login file: relative to the home or the working directory (`~/.ssh/id_rsa`,
/// `.aws/credentials`), one file, not a pattern. Reading or rewriting it to
/// log in is what the tool it belongs to does; system stores (`/etc/shadow`),
/// absolute paths into a home the script cannot show is the user's own
/// (`/root`, `/home/x`, `~x/`) and globs over keys are not this.
pub(super) fn own_login_file(lower: &str) -> bool {
    let own_home = !lower.starts_with('~') || lower.starts_with("~/") || lower == "~";
    own_home
        && !lower.starts_with('/')
        && !lower.contains(['*', '?', '['])
        && LOGIN_FILES.iter().any(|f| lower.contains(f))
}

/// Kernel and cgroup files whose contents the host kernel runs or acts on,
/// outside any container: writing one is a container escape.
pub(super) fn host_control(path: &str) -> Option<&'static str> {
    const FILES: &[(&str, &str)] = &[
        (
            "/proc/sys/kernel/core_pattern",
            "the kernel's core-dump handler",
        ),
        (
            "/proc/sys/kernel/modprobe",
            "the kernel's module-loader path",
        ),
        ("/proc/sys/kernel/hotplug", "the kernel's hotplug helper"),
        ("/sys/kernel/uevent_helper", "the kernel's uevent helper"),
        ("/proc/sysrq-trigger", "the kernel's SysRq trigger"),
        ("/proc/sys/fs/binfmt_misc/", "a binary-format handler"),
    ];
    let lower = path.trim().to_ascii_lowercase();
    if let Some((_, what)) = FILES.iter().find(|(f, _)| lower.starts_with(f)) {
        return Some(what);
    }
    let name = lower.rsplit('/').next().unwrap_or(&lower);
    match name {
        "release_agent" => Some("a cgroup release agent (run by the host kernel)"),
        "notify_on_release" => Some("a cgroup's release notification"),
        _ => None,
    }
}

/// The pid part of a `/proc/PID/rest` path, and the rest.
fn proc_entry(lower: &str) -> Option<(&str, &str)> {
    let rest = lower.strip_prefix("/proc/")?;
    rest.split_once('/')
}

/// Another process's memory or executable, or a descriptor reopened by a
/// computed number (a runtime binary held open): what `/proc` lets one
/// overwrite in place.
pub(super) fn process_image(path: &str) -> Option<&'static str> {
    let lower = path.trim().to_ascii_lowercase();
    let (pid, rest) = proc_entry(&lower)?;
    let own = matches!(pid, "self" | "thread-self");
    match rest {
        "mem" if !own => Some("the memory"),
        "exe" => Some("the executable"),
        r if r.starts_with("fd/") && r[3..].contains(['*', '{', '<']) => {
            Some("a descriptor reopened by number (such as a runtime binary held open)")
        }
        _ => None,
    }
}

/// A namespace of another process (`/proc/1/ns/mnt`, `/proc/%d/ns/%s`).
pub(super) fn foreign_namespace(path: &str) -> bool {
    let lower = path.trim().to_ascii_lowercase();
    proc_entry(&lower).is_some_and(|(pid, rest)| {
        !matches!(pid, "self" | "thread-self") && (rest == "ns" || rest.starts_with("ns/"))
    })
}

/// Another process's root directory (`/proc/1/root`): PID 1's is the host's
/// when the container shares its PID namespace.
pub(super) fn foreign_root(path: &str) -> bool {
    let lower = path.trim().trim_end_matches('/').to_ascii_lowercase();
    proc_entry(&lower)
        .is_some_and(|(pid, rest)| !matches!(pid, "self" | "thread-self") && rest == "root")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The two-separator gate keeps every spelling of a raw disk.
    #[test]
    fn raw_disks_through_the_gate() {
        for p in [
            "\\\\.\\PhysicalDrive0",
            "//./physicaldrive1",
            "\\\\?\\C:",
            "/\\.\\harddisk0",
            "\\/./d:",
        ] {
            assert!(windows_raw_disk(p), "{p}");
        }
        for p in [
            "C:\\x",
            "/dev/sda",
            "\\server\\share",
            ".\\PhysicalDrive0",
            "\\",
        ] {
            assert!(!windows_raw_disk(p), "{p}");
        }
    }

    /// The last part is found as `rsplit` finds it, whenever it is short
    /// enough, and every defence is still recognised after a path.
    #[test]
    fn last_segment_matches_rsplit() {
        let texts = [
            "", "/", "a", "a/", "/a", "ab/cd", "x/é/ü", "//", "a/bcdef", "abcdef",
        ];
        for t in texts {
            let seg = t.rsplit('/').next().unwrap_or(t);
            for max in 0..8 {
                let want = (seg.len() <= max).then_some(seg);
                assert_eq!(last_segment_within(t, max), want, "{t:?} {max}");
            }
        }
        for d in DEFENCES {
            let long = format!("/usr/lib/systemd/system/with/a/long/path/{d}.service");
            assert!(is_defence(d) && is_defence(&long), "{d}");
            assert!(is_defence(&format!("'{d}'")), "{d}");
        }
        for w in ["", "falco2", "auditd ", "sshd", "x/falc"] {
            assert_eq!(defences().bits(w) != 0, DEFENCES.contains(&w), "{w}");
        }
        assert!(defences().len() * 3 <= 512 && defences().len() < 255);
    }

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
        // A user's own work, deleted whole or file by file through a walk.
        assert!(precious_tree("~/Documents", true) && precious_tree("~/Pictures/**/*", false));
        assert!(
            precious_tree("/home/*/Desktop/*", false) && precious_tree("/Users/ann/Music", true)
        );
        // One file, a named folder below, Downloads, caches: not this.
        assert!(!precious_tree("~/Documents/report.txt", false));
        assert!(
            !precious_tree("~/Documents/build", true) && !precious_tree("~/Downloads/*", false)
        );
        assert!(
            !precious_tree("~/.cache/Pictures", true) && !precious_tree("/srv/x/Documents", true)
        );
        assert!(!precious_tree("~/.cache/thumbnailer", true));
        assert!(!precious_tree("build", true));
        assert!(!precious_tree("<tmp:12>", true));
        assert!(!precious_tree("./logs/**/*", false));
        assert!(!precious_tree("/usr/tmp/*", false));
        assert!(precious_tree("/usr/lib/*", false));
        assert!(!precious_tree("/etc", false));
        assert!(is_disk("/dev/sda") && !is_disk("/dev/null"));
        assert!(is_disk("\\\\.\\PhysicalDrive0") && is_disk("//./C:"));
        assert!(!is_disk("\\\\.\\pipe\\x") && !is_disk("C:\\Users"));
        assert!(secret("~/.ssh/id_ed25519") && secret("~/.bash_history"));
        assert!(secret("~/.aws") && secret("~/.ssh/**/*") && !secret("~/.ssh/known_hosts"));
        assert!(trace("/var/log/auth.log") && trace("~/.zsh_history") && trace("/var/log/wtmp"));
        assert!(!trace("/var/log/syslog.2.gz") && !trace("/var/log/app.log.1"));
        assert!(!trace("logs/app.log") && !trace("/var/log/app.log.*"));
        assert!(!trace("/var/log/svc/.shipper-offset.json") && !trace("/var/log/td-agent/app.pos"));
        assert!(trace("/var/log/*") && trace("/var/log/*.log"));
        assert!(defence_setting("/proc/sys/kernel/randomize_va_space"));
        assert!(is_defence("auditd.service") && is_defence("/usr/sbin/auditd"));
        assert!(!is_defence("nginx"));
        assert_eq!(
            Some(LONGEST_DEFENCE),
            DEFENCES.iter().map(|d| d.len()).max()
        );
        assert!(root_shell_target("/bin/bash") && root_shell_target("/usr/bin/python3.11"));
        assert!(root_shell_target("/var/tmp/.x") && root_shell_target("<python>"));
        assert!(!root_shell_target("/usr/local/bin/ping-helper"));
        assert!(persistence("/etc/udev/rules.d/10-x.rules").is_some());
        assert!(own_login_file("~/.aws/credentials") && own_login_file(".ssh/id_ed25519"));
        assert!(!own_login_file("/etc/shadow") && !own_login_file("/root/.ssh/id_rsa"));
        assert!(!own_login_file("/home/*/.ssh/id_*") && !own_login_file("~bob/.netrc"));
        assert!(!own_login_file("login data") && !own_login_file("~/.gnupg"));
    }
}
