//! The qualified names the checks recognise, by what they do: shells and
//! process creation, deserialisers, decoders, network clients, privileged
//! libc calls, keyboard hooks; and the paths and hosts that matter.

pub(super) fn is_network_client(q: &str) -> bool {
    network_client(q, super::kinds::of(q))
}

/// [`is_network_client`], `k` being the callee lists of `q`
/// ([`super::kinds::of`]), looked up once per call.
pub(super) fn network_client(q: &str, k: u32) -> bool {
    k & super::kinds::NETWORK != 0
        || ["requests.", "httpx.", "aiohttp.", "urllib3."]
            .iter()
            .any(|p| {
                q.starts_with(p)
                    && q[p.len()..]
                        .chars()
                        .next()
                        .is_some_and(|c| c.is_ascii_lowercase())
                    && !q.ends_with(".exceptions")
            })
}

/// The builtins the checks know by name (a bare name nothing binds).
pub(super) fn is_builtin(name: &str) -> bool {
    matches!(
        name,
        "exec"
            | "eval"
            | "compile"
            | "execfile"
            | "open"
            | "getattr"
            | "__import__"
            | "globals"
            | "vars"
            | "locals"
            | "chr"
            | "str"
            | "bytes"
            | "input"
            | "__builtins__"
            | "raw_input"
            | "print"
            | "int"
            | "float"
            | "len"
            | "bool"
            | "hash"
            | "isinstance"
            | "sorted"
            | "list"
            | "set"
            | "tuple"
            | "reversed"
            | "filter"
            | "map"
            | "enumerate"
            | "zip"
            | "bytearray"
            | "next"
    )
}

pub(super) const SHELL_FUNCS: &[&str] = &[
    "os.system",
    "os.popen",
    "os.popen2",
    "os.popen3",
    "os.popen4",
    "commands.getoutput",
    "commands.getstatusoutput",
    "subprocess.getoutput",
    "subprocess.getstatusoutput",
    "popen2.popen2",
    "popen2.popen3",
    "popen2.popen4",
];

pub(super) const SUBPROCESS: &[&str] = &[
    "subprocess.Popen",
    "subprocess.run",
    "subprocess.call",
    "subprocess.check_call",
    "subprocess.check_output",
    "asyncio.create_subprocess_shell",
    "asyncio.create_subprocess_exec",
];

/// Does the callee `q` (qualified) run a command: a shell function of
/// [`SHELL_FUNCS`] or a process call of [`SUBPROCESS`]?
pub(super) fn runs_command(q: &str) -> bool {
    super::kinds::is(q, super::kinds::COMMAND)
}

pub(super) const EXEC_FUNCS: &[&str] = &[
    "os.posix_spawn",
    "os.posix_spawnp",
    "os.startfile",
    "pty.spawn",
];

pub(super) const DESERIALIZERS: &[&str] = &[
    "pickle.load",
    "pickle.loads",
    "pickle.Unpickler",
    "dill.load",
    "dill.loads",
    "shelve.open",
    "joblib.load",
    "pandas.read_pickle",
    "jsonpickle.decode",
    "torch.load",
];

pub(super) const DECODERS: &[&str] = &[
    "base64.b64decode",
    "base64.standard_b64decode",
    "base64.urlsafe_b64decode",
    "base64.b32decode",
    "base64.b16decode",
    "base64.a85decode",
    "base64.b85decode",
    "base64.decodebytes",
    "base64.decodestring",
    "binascii.unhexlify",
    "binascii.a2b_base64",
    "binascii.a2b_hex",
    "bytes.fromhex",
    "codecs.decode",
    "zlib.decompress",
    "gzip.decompress",
    "bz2.decompress",
    "lzma.decompress",
    "marshal.loads",
    "marshal.load",
];

pub(super) const NETWORK_CLIENTS: &[&str] = &[
    "urllib.request.urlopen",
    "urllib.request.urlretrieve",
    "urllib.urlopen",
    "urllib.urlretrieve",
    // An opener made to set headers (a disguising User-Agent) fetches
    // like `urlopen`.
    "urllib.request.build_opener",
    "urllib.request.OpenerDirector",
    "http.client.HTTPConnection",
    "http.client.HTTPSConnection",
    "smtplib.SMTP",
    "smtplib.SMTP_SSL",
    "ftplib.FTP",
    "ftplib.FTP_TLS",
    "telnetlib.Telnet",
    "paramiko.SSHClient",
    "socket.create_connection",
    // Answers from name servers and remote queues are data others control.
    "dns.resolver.resolve",
    "dns.resolver.query",
    "dns.resolver.Resolver",
    "redis.Redis",
    "redis.StrictRedis",
    "redis.from_url",
    "redis.Redis.from_url",
];

pub(super) const PATH_TYPES: &[&str] = &[
    "pathlib.Path",
    "pathlib.PosixPath",
    "pathlib.PurePath",
    "pathlib.PurePosixPath",
    "os.path.join",
    "os.path.expanduser",
];

pub(super) const PRIV_LIBC: &[&str] = &[
    "setuid",
    "setgid",
    "seteuid",
    "setegid",
    "setresuid",
    "setresgid",
    "setreuid",
    "setregid",
    "ptrace",
    "mount",
    "umount",
    "umount2",
    "unshare",
    "setns",
    "mprotect",
    "mmap",
    "prctl",
    "syscall",
    "init_module",
    "finit_module",
    "delete_module",
    "chroot",
    "pivot_root",
    "capset",
    "execve",
    "system",
    "kill",
];

pub(super) const KEYLOGGERS: &[&str] = &[
    "pynput.keyboard.Listener",
    "keyboard.on_press",
    "keyboard.hook",
    "keyboard.record",
    "pyHook.HookManager",
];

pub(super) const SYSTEM_PREFIXES: &[&str] = &[
    "/etc",
    "/usr",
    "/boot",
    "/proc/sys",
    "/proc/sysrq-trigger",
    "/sys",
    "/dev",
    "/bin",
    "/sbin",
    "/lib",
    "/lib64",
    "/root",
    "/var/spool/cron",
    "/var/lib",
];

pub(super) const PERSISTENCE: &[&str] = &[
    "authorized_keys",
    "/etc/sudoers",
    "/etc/passwd",
    "/etc/shadow",
    "/etc/group",
    "/etc/crontab",
    "/etc/cron.",
    "/var/spool/cron",
    "/etc/ld.so.preload",
    "/etc/rc.local",
    "/etc/init.d/",
    "/etc/systemd/system",
    "/lib/systemd/system",
    "/etc/profile",
    "/etc/bash.bashrc",
    "/.bashrc",
    "/.bash_profile",
    "/.profile",
    "/.config/autostart",
];

/// Files a client tool logs in with (SSH keys, cloud and registry
/// credentials, `.netrc`, `.pgpass`): credential paths, and the ones a script
/// may name as the current user's own (`taxonomy::own_login_file`). Browser
/// stores and keyrings are not among them: no script logs in with another
/// program's saved passwords.
pub(super) const LOGIN_FILES: &[&str] = &[
    ".ssh/id_",
    "id_rsa",
    "id_ed25519",
    "id_ecdsa",
    "id_dsa",
    ".aws/credentials",
    ".netrc",
    ".docker/config.json",
    ".kube/config",
    ".git-credentials",
    ".pgpass",
    ".config/gcloud",
    ".azure/",
];

/// Credential paths beside [`LOGIN_FILES`]: the system's stores and other
/// programs' saved secrets.
pub(super) const CREDENTIAL_STORES: &[&str] = &[
    "/etc/shadow",
    "/etc/gshadow",
    ".gnupg",
    "login data",
    "cookies.sqlite",
    "logins.json",
    "key4.db",
    "/etc/sudoers",
    // The macOS login keychain: the user's saved passwords and keys (the
    // System keychain is also where trusted certificates are added).
    "keychains/login.keychain",
];

/// Every credential path: [`LOGIN_FILES`] and [`CREDENTIAL_STORES`].
pub(super) fn credential_paths() -> impl Iterator<Item = &'static &'static str> {
    LOGIN_FILES.iter().chain(CREDENTIAL_STORES)
}

pub(super) const METADATA_HOSTS: &[&str] = &[
    "169.254.169.254",
    "metadata.google.internal",
    "169.254.170.2",
    "fd00:ec2::254",
    "100.100.100.200",
];

pub(super) const MINER_MARKERS: &[&str] = &[
    "stratum+tcp",
    "stratum+ssl",
    "xmrig",
    "minerd",
    "cryptonight",
    "coinhive",
    "nicehash",
    // Stratum, the mining pools' protocol.
    "mining.subscribe",
    "mining.authorize",
    "mining.submit",
    "mining.notify",
];
