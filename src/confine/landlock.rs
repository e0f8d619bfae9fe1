//! The Landlock ruleset: read (+execute) on the read-only view, read-write on
//! `/tmp` and the output directory, nothing else; TCP ports and scoping where
//! the kernel's ABI has them.
//!
//! Applied in the child after pivot_root, so every path is the sandbox's own
//! view (`/usr`, `/tmp`, ...), and before the seccomp filter, whose allowlist
//! has no `landlock_*` syscalls.

use std::path::{Component, Path, PathBuf};

use landlock::{
    Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, NetPort, PathBeneath, PathFd,
    Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope, ABI,
};
use serde::{Deserialize, Serialize};

use super::ConfineError;

/// The newest ABI whose rights this module asks for and was tested against
/// (ABI 7 adds only audit-log flags; 8+ are not on the hosts we test).
/// Older kernels get the subset they know (best effort), see [`apply_landlock`].
const TARGET_ABI: ABI = ABI::V6;
const TARGET_ABI_NUM: u32 = 6;

/// One trust level's Landlock settings. All paths are as seen inside the
/// sandbox after pivot_root.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LandlockSpec {
    /// Read files, list directories and execute (the read-only view: `/usr`, ...).
    #[serde(default)]
    pub read_exec: Vec<PathBuf>,
    /// Read files and list directories, no execute (e.g. `/proc`, `/etc`).
    #[serde(default)]
    pub read_only: Vec<PathBuf>,
    /// List directories only (e.g. `/`: `os.listdir("/")` works, but no file
    /// beneath is readable unless another rule grants it).
    #[serde(default)]
    pub list_only: Vec<PathBuf>,
    /// Read, write, create, remove, truncate; never execute, never make device
    /// nodes (e.g. `/tmp`, `/dev` for /dev/null and /dev/shm, the output dir).
    #[serde(default)]
    pub read_write: Vec<PathBuf>,
    /// ABI >= 4: when true, every TCP bind/connect is denied except to the ports
    /// below. When false, TCP is left to the network namespace.
    #[serde(default)]
    pub restrict_tcp: bool,
    #[serde(default)]
    pub allow_tcp_connect: Vec<u16>,
    #[serde(default)]
    pub allow_tcp_bind: Vec<u16>,
    /// ABI >= 6: no signals to, and no abstract unix sockets of, processes
    /// outside this Landlock domain.
    #[serde(default)]
    pub scope_signals_and_abstract_unix: bool,
    /// Refuse to run when the kernel has no Landlock at all. With Landlock but an
    /// older ABI the ruleset is still applied with what that ABI has, and the
    /// outcome says "partially enforced".
    #[serde(default)]
    pub required: bool,
}

impl LandlockSpec {
    /// The layout maibox's engine builds: `/usr` (and the merged-usr links) and
    /// `/sandbox` executable, `/etc` and `/proc` readable, `/tmp`, `/dev` and the
    /// output directory writable.
    pub fn sandbox_default(output_dir: Option<PathBuf>, required: bool) -> Self {
        let mut read_write = vec![PathBuf::from("/tmp"), PathBuf::from("/dev")];
        read_write.extend(output_dir);
        Self {
            read_exec: ["/usr", "/sandbox"].iter().map(PathBuf::from).collect(),
            read_only: ["/etc", "/proc"].iter().map(PathBuf::from).collect(),
            list_only: vec![PathBuf::from("/")],
            read_write,
            restrict_tcp: true,
            allow_tcp_connect: Vec::new(),
            allow_tcp_bind: Vec::new(),
            scope_signals_and_abstract_unix: true,
            required,
        }
    }

    /// Every path with the category it is listed under.
    fn paths(&self) -> impl Iterator<Item = (&'static str, &PathBuf)> {
        self.read_exec
            .iter()
            .map(|p| ("read_exec", p))
            .chain(self.read_only.iter().map(|p| ("read_only", p)))
            .chain(self.list_only.iter().map(|p| ("list_only", p)))
            .chain(self.read_write.iter().map(|p| ("read_write", p)))
    }
}

/// What was enforced, for the `--json` report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LandlockOutcome {
    /// ABI whose rights are enforced: min(kernel, [`TARGET_ABI`]), 0 if none.
    pub abi: u32,
    /// What the running kernel supports.
    pub kernel_abi: u32,
    /// "fully enforced", "partially enforced" or "not enforced: <why>".
    pub status: String,
}

/// Landlock ABI of the running kernel, 0 when there is none.
pub fn landlock_abi() -> u32 {
    landlock_support().0
}

/// ABI and, when it is 0, why (for `maibox doctor`).
pub fn landlock_support() -> (u32, Option<String>) {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a NULL attr, size 0 and the VERSION flag the kernel only
    // returns a number.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    if rc > 0 {
        return (u32::try_from(rc).unwrap_or(0), None);
    }
    let err = std::io::Error::last_os_error();
    let why = match err.raw_os_error() {
        Some(libc::EOPNOTSUPP) => {
            "the kernel has Landlock but it is not enabled: add `landlock` to the `lsm=` boot parameter"
                .to_string()
        }
        Some(libc::ENOSYS) => "the kernel is built without Landlock (CONFIG_SECURITY_LANDLOCK)".to_string(),
        Some(libc::EPERM) => "a seccomp filter already denies the landlock syscalls".to_string(),
        _ => format!("landlock_create_ruleset failed: {err}"),
    };
    (0, Some(why))
}

/// Checks the spec without touching the kernel: absolute, normalised paths.
/// Existence is checked at apply time, in the sandbox's own view.
pub fn validate_spec(spec: &LandlockSpec) -> Result<(), ConfineError> {
    for (setting, path) in spec.paths() {
        let bad = |why: &str| ConfineError::LandlockPath {
            path: path.clone(),
            why: format!("{setting}: {why}"),
        };
        if !path.is_absolute() {
            return Err(bad("must be absolute"));
        }
        if path
            .components()
            .any(|c| matches!(c, Component::ParentDir | Component::CurDir))
        {
            return Err(bad("must not contain `.` or `..`"));
        }
    }
    Ok(())
}

/// Checks that every path exists under `root` (the host directory that becomes
/// the sandbox's `/`), so a config naming a missing path fails at load time.
pub fn check_spec_paths(spec: &LandlockSpec, root: &Path) -> Result<(), ConfineError> {
    validate_spec(spec)?;
    for (setting, path) in spec.paths() {
        let rel = path.strip_prefix("/").unwrap_or(path);
        let host = root.join(rel);
        if let Err(e) = std::fs::metadata(&host) {
            return Err(ConfineError::LandlockPath {
                path: path.clone(),
                why: format!("{setting}: {} does not exist: {e}", host.display()),
            });
        }
    }
    Ok(())
}

fn read_exec_access(abi: ABI) -> BitFlags<AccessFs> {
    AccessFs::from_read(abi)
}

fn read_only_access(abi: ABI) -> BitFlags<AccessFs> {
    AccessFs::from_read(abi) & !AccessFs::Execute
}

fn read_write_access(abi: ABI) -> BitFlags<AccessFs> {
    // No Execute: a file written to /tmp must not become a program. No device
    // nodes: nothing in the sandbox has a reason to make them.
    (AccessFs::from_all(abi) & !AccessFs::Execute) & !(AccessFs::MakeChar | AccessFs::MakeBlock)
}

fn ll(step: &'static str) -> impl FnOnce(landlock::RulesetError) -> ConfineError {
    move |source| ConfineError::Landlock { step, source }
}

fn open_path(setting: &'static str, path: &Path) -> Result<PathFd, ConfineError> {
    PathFd::new(path).map_err(|e| ConfineError::LandlockPath {
        path: path.to_path_buf(),
        why: format!("{setting}: {e}"),
    })
}

/// The ruleset for `spec`: the accesses handled (all of [`TARGET_ABI`]'s), the
/// scopes, and a rule for each path and port it allows.
fn ruleset(spec: &LandlockSpec) -> Result<landlock::RulesetCreated, ConfineError> {
    let abi = TARGET_ABI;
    // Best effort: on an older kernel the crate drops the rights that ABI lacks
    // (e.g. no Truncate on ABI 2, no TCP on ABI < 4, no scoping on ABI < 6),
    // and reports "partially enforced".
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(abi))
        .map_err(ll("handling filesystem access"))?;
    if spec.restrict_tcp {
        ruleset = ruleset
            .handle_access(AccessNet::from_all(abi))
            .map_err(ll("handling TCP bind/connect"))?;
    }
    if spec.scope_signals_and_abstract_unix {
        ruleset = ruleset
            .scope(Scope::from_all(abi))
            .map_err(ll("scoping signals and abstract unix sockets"))?;
    }
    let mut created = ruleset.create().map_err(ll("creating the ruleset"))?;
    let categories: [(&'static str, &Vec<PathBuf>, BitFlags<AccessFs>); 4] = [
        ("read_exec", &spec.read_exec, read_exec_access(abi)),
        ("read_only", &spec.read_only, read_only_access(abi)),
        ("list_only", &spec.list_only, AccessFs::ReadDir.into()),
        ("read_write", &spec.read_write, read_write_access(abi)),
    ];
    for (setting, paths, access) in categories {
        for path in paths {
            let fd = open_path(setting, path)?;
            created = created
                .add_rule(PathBeneath::new(fd, access))
                .map_err(ll("adding a path rule"))?;
        }
    }
    if spec.restrict_tcp {
        for port in &spec.allow_tcp_connect {
            created = created
                .add_rule(NetPort::new(*port, AccessNet::ConnectTcp))
                .map_err(ll("adding a TCP connect port"))?;
        }
        for port in &spec.allow_tcp_bind {
            created = created
                .add_rule(NetPort::new(*port, AccessNet::BindTcp))
                .map_err(ll("adding a TCP bind port"))?;
        }
    }
    Ok(created)
}

/// Restricts the calling thread (and everything it execs or forks) to `spec`.
/// Call it in the single-threaded child, after pivot_root, before the seccomp
/// filter. Sets no_new_privs (required by the kernel; harmless if already set).
pub fn apply_landlock(spec: &LandlockSpec) -> Result<LandlockOutcome, ConfineError> {
    let kernel_abi = match usable_abi(spec)? {
        Ok(abi) => abi,
        Err(none) => return Ok(none),
    };
    let status = ruleset(spec)?
        .restrict_self()
        .map_err(ll("restricting the process"))?;
    outcome(spec, kernel_abi, status.ruleset)
}

/// The ruleset for `spec`, made but not applied: a descriptor that another process
/// of the same view restricts itself with (`landlock_restrict_self`), and what it
/// will enforce. A warm sandbox's init makes it for the interpreter forked into the
/// sandbox (see `engine::adopt`), so that this module stays the only one that knows
/// the rules. No descriptor when the kernel has no Landlock and the spec allows that.
pub fn build_ruleset(
    spec: &LandlockSpec,
) -> Result<(Option<std::os::fd::OwnedFd>, LandlockOutcome), ConfineError> {
    let kernel_abi = match usable_abi(spec)? {
        Ok(abi) => abi,
        Err(none) => return Ok((None, none)),
    };
    let fd: Option<std::os::fd::OwnedFd> = ruleset(spec)?.into();
    // The crate enforces fully what the kernel's ABI has of TARGET_ABI's rights; on an
    // older ABI it drops the rights that ABI lacks (best effort): that is its status
    // once restricted, known here without restricting.
    let status = if fd.is_none() {
        RulesetStatus::NotEnforced
    } else if kernel_abi >= TARGET_ABI_NUM {
        RulesetStatus::FullyEnforced
    } else {
        RulesetStatus::PartiallyEnforced
    };
    Ok((fd, outcome(spec, kernel_abi, status)?))
}

/// The kernel's ABI; or, when it has no Landlock and the spec allows that, the
/// outcome to report (an error when the spec requires Landlock).
fn usable_abi(spec: &LandlockSpec) -> Result<Result<u32, LandlockOutcome>, ConfineError> {
    validate_spec(spec)?;
    let (kernel_abi, why_none) = landlock_support();
    if kernel_abi != 0 {
        return Ok(Ok(kernel_abi));
    }
    let why = why_none.unwrap_or_else(|| "the kernel has no Landlock".to_string());
    if spec.required {
        return Err(ConfineError::LandlockRequired(why));
    }
    Ok(Err(LandlockOutcome {
        abi: 0,
        kernel_abi: 0,
        status: format!("not enforced: {why}"),
    }))
}

fn outcome(
    spec: &LandlockSpec,
    kernel_abi: u32,
    status: RulesetStatus,
) -> Result<LandlockOutcome, ConfineError> {
    let (abi_enforced, text) = match status {
        RulesetStatus::FullyEnforced => (kernel_abi.min(TARGET_ABI_NUM), "fully enforced".to_string()),
        RulesetStatus::PartiallyEnforced => (
            kernel_abi.min(TARGET_ABI_NUM),
            format!("partially enforced: kernel ABI {kernel_abi} lacks some of ABI {TARGET_ABI_NUM}'s rights"),
        ),
        RulesetStatus::NotEnforced => (0, "not enforced".to_string()),
    };
    if abi_enforced == 0 && spec.required {
        return Err(ConfineError::LandlockRequired(format!(
            "the ruleset was not enforced (kernel ABI {kernel_abi})"
        )));
    }
    Ok(LandlockOutcome {
        abi: abi_enforced,
        kernel_abi,
        status: text,
    })
}
