//! A bundle's config.json → the engine's [`Policy`] with an [`View::Oci`] view.
//!
//! Parsing is `oci-spec`'s; this module decides what maibox does with each field.
//! A field maibox cannot enforce yet is refused (never silently dropped), unless
//! the caller waived it explicitly with `--unsafe-allow-unenforced`.

use super::view::{
    CapabilitySets, IdMaps, Namespaces, NsJoin, OciDevice, OciMount, OciProcess, OciView,
};
use crate::config::{NetworkMode, TrustLevel};
use crate::error::SpecError;
use crate::interpreter::Interpreter;
use crate::policy::{FsPolicy, IdMapping, Identity, Limits, Policy, View};
use oci_spec::runtime::{LinuxNamespaceType, Spec};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    #[error("bundle {bundle}: {what}: {source}")]
    Io {
        bundle: PathBuf,
        what: String,
        source: std::io::Error,
    },
    #[error("bundle {bundle}: no config.json in the bundle directory")]
    NoConfig { bundle: PathBuf },
    #[error("bundle {bundle}: config.json is not a valid OCI runtime spec: {message}")]
    Parse { bundle: PathBuf, message: String },
    /// A field invalid, or not enforced.
    #[error(transparent)]
    Spec(#[from] SpecError),
}

fn invalid(field: &str, message: impl Into<String>) -> BundleError {
    SpecError::Invalid {
        field: field.into(),
        message: message.into(),
    }
    .into()
}

fn unenforced(field: impl Into<String>, hint: impl Into<String>) -> BundleError {
    SpecError::Unenforced {
        field: field.into(),
        hint: hint.into(),
    }
    .into()
}

/// Features a caller may explicitly let pass unenforced (for trying maibox behind
/// Docker before the engine has them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum)]
pub enum Waivable {
    Apparmor,
}

pub struct Loaded {
    pub spec: Spec,
    pub bundle: PathBuf,
    pub policy: Policy,
}

/// Reads and validates `bundle/config.json` and builds the policy for it.
pub fn load(bundle: &Path, waived: &BTreeSet<Waivable>) -> Result<Loaded, BundleError> {
    let io = |what: &str| {
        let bundle = bundle.to_path_buf();
        let what = what.to_string();
        move |source| BundleError::Io {
            bundle,
            what,
            source,
        }
    };
    let bundle = std::fs::canonicalize(bundle).map_err(io("resolve the bundle directory"))?;
    let config = bundle.join("config.json");
    if !config.is_file() {
        return Err(BundleError::NoConfig { bundle });
    }
    let spec = Spec::load(&config).map_err(|e| BundleError::Parse {
        bundle: bundle.clone(),
        message: e.to_string(),
    })?;
    let policy = policy_for(&spec, &bundle, waived)?;
    Ok(Loaded {
        spec,
        bundle,
        policy,
    })
}

/// The spec versions this runtime implements: 1.x. A major version maibox does not
/// know may change the meaning of any field.
pub fn check_version(v: &str) -> Result<(), BundleError> {
    let major = v.split('.').next().unwrap_or("");
    let parts: Vec<&str> = v.split('-').next().unwrap_or("").split('.').collect();
    let numeric = parts.len() == 3 && parts.iter().all(|p| p.parse::<u32>().is_ok());
    if major != "1" || !numeric {
        return Err(invalid(
            "ociVersion",
            format!("{v:?} is not supported (maibox implements the 1.x runtime spec)"),
        ));
    }
    Ok(())
}

pub fn policy_for(
    spec: &Spec,
    bundle: &Path,
    waived: &BTreeSet<Waivable>,
) -> Result<Policy, BundleError> {
    check_version(spec.version())?;
    let process = spec
        .process()
        .as_ref()
        .ok_or_else(|| invalid("process", "missing (maibox has nothing to run)"))?;
    let root = spec
        .root()
        .as_ref()
        .ok_or_else(|| invalid("root", "missing"))?;
    let root_path = resolve_root(bundle, root.path())?;
    let linux = spec.linux().clone().unwrap_or_default();

    refuse_unapplied(process, &linux)?;
    let waive = |w: Waivable, field: &str, hint: &str| -> Result<(), BundleError> {
        if waived.contains(&w) {
            Ok(())
        } else {
            Err(unenforced(field, hint))
        }
    };
    let seccomp = linux
        .seccomp()
        .as_ref()
        .map(crate::confine::seccomp::oci::compile)
        .transpose()?;
    if process.apparmor_profile().is_some() {
        waive(
            Waivable::Apparmor,
            "process.apparmorProfile",
            "no AppArmor support",
        )?;
    }
    // Limits and the cgroup path are applied by `create` (super::cgroup); checked
    // here so that one maibox cannot apply fails before anything exists.
    crate::cgroup::oci::from_spec(&linux, "check")?;

    let oci_process = oci_process(process)?;
    let args = oci_process.args.clone();
    let user = process.user();

    let mut ns = Namespaces::default();
    for n in linux.namespaces().iter().flatten() {
        if let Some(path) = n.path() {
            let (kind, flag) = match n.typ() {
                LinuxNamespaceType::Network => ("network", libc::CLONE_NEWNET),
                LinuxNamespaceType::Ipc => ("ipc", libc::CLONE_NEWIPC),
                LinuxNamespaceType::Uts => ("uts", libc::CLONE_NEWUTS),
                LinuxNamespaceType::Cgroup => ("cgroup", libc::CLONE_NEWCGROUP),
                other => {
                    return Err(unenforced(
                        format!("linux.namespaces[{other:?}].path"),
                        "maibox joins existing network, ipc, uts and cgroup \
                         namespaces; joining other types is not supported yet",
                    ))
                }
            };
            ns.join.push(NsJoin {
                kind: kind.into(),
                path: path.clone(),
                flag,
                fd: None,
            });
            continue;
        }
        match n.typ() {
            LinuxNamespaceType::Mount => ns.mount = true,
            LinuxNamespaceType::Pid => ns.pid = true,
            LinuxNamespaceType::Network => ns.network = true,
            LinuxNamespaceType::Ipc => ns.ipc = true,
            LinuxNamespaceType::Uts => ns.uts = true,
            LinuxNamespaceType::Cgroup => ns.cgroup = true,
            LinuxNamespaceType::User => ns.user = Some(IdMaps::default()),
            other => {
                return Err(invalid(
                    "linux.namespaces",
                    format!("namespace type {other:?} is not supported"),
                ))
            }
        }
    }
    if ns.user.is_some() && !ns.join.is_empty() {
        return Err(unenforced(
            "linux.namespaces[].path",
            "joining existing namespaces together with a new user namespace is \
             not supported yet",
        ));
    }
    if !ns.mount {
        // The view is built by mounting: without its own mount namespace the
        // container would mount on the host.
        return Err(invalid(
            "linux.namespaces",
            "a mount namespace is required (maibox builds the root with mounts)",
        ));
    }
    let map = |m: &Option<Vec<oci_spec::runtime::LinuxIdMapping>>| -> Vec<(u32, u32, u32)> {
        m.iter()
            .flatten()
            .map(|e| (e.container_id(), e.host_id(), e.size()))
            .collect()
    };
    if let Some(maps) = ns.user.as_mut() {
        maps.uid = map(linux.uid_mappings());
        maps.gid = map(linux.gid_mappings());
        if maps.uid.is_empty() || maps.gid.is_empty() {
            return Err(invalid(
                "linux.uidMappings/gidMappings",
                "a user namespace needs both uid and gid mappings",
            ));
        }
    } else if linux.uid_mappings().is_some() || linux.gid_mappings().is_some() {
        return Err(invalid(
            "linux.uidMappings",
            "mappings given without a user namespace in linux.namespaces",
        ));
    }

    let hostname = spec.hostname().clone().filter(|h| !h.is_empty());
    // A joined uts namespace (a pod's) takes the hostname too, as with runc.
    let uts = ns.uts || ns.join.iter().any(|j| j.kind == "uts");
    if hostname.is_some() && !uts {
        return Err(invalid(
            "hostname",
            "setting the hostname needs a new uts namespace",
        ));
    }
    let domainname = spec.domainname().clone().filter(|h| !h.is_empty());
    if domainname.is_some() && !uts {
        return Err(invalid(
            "domainname",
            "setting the domain name needs a new uts namespace",
        ));
    }
    let mut sysctls: Vec<(String, String)> = linux
        .sysctl()
        .clone()
        .unwrap_or_default()
        .into_iter()
        .collect();
    sysctls.sort();
    for (k, _) in &sysctls {
        check_sysctl(k, &ns)?;
    }

    let mut mounts = Vec::new();
    for m in spec.mounts().iter().flatten() {
        if let Some(mm) = mount_for(m, bundle)? {
            mounts.push(mm);
        }
    }

    let view = OciView {
        root: root_path.clone(),
        root_readonly: root.readonly().unwrap_or(false),
        mounts,
        process: oci_process,
        namespaces: ns,
        hostname: hostname.clone(),
        domainname,
        masked_paths: linux.masked_paths().clone().unwrap_or_default(),
        readonly_paths: linux.readonly_paths().clone().unwrap_or_default(),
        sysctls,
        start_fifo: None,
        die_with_parent: false,
        console: None,
        preserve_fds: Vec::new(),
        seccomp,
        hooks: None,
        root_propagation: root_propagation(linux.rootfs_propagation().as_deref())?,
        devices: devices(&linux)?,
        hooks_sync: false,
    };
    let env: Vec<(String, String)> = view
        .process
        .env
        .iter()
        .map(|e| match e.split_once('=') {
            Some((k, v)) => (k.to_string(), v.to_string()),
            None => (e.clone(), String::new()),
        })
        .collect();
    // The Python-view fields below describe maibox's own runs; the OCI view does
    // not read them. They carry the spec's values where one exists.
    Ok(Policy {
        trust: TrustLevel::Untrusted,
        disabled: Default::default(),
        // The OCI view takes seccomp from the spec (`OciView::seccomp`) and applies
        // no Landlock of maibox's own.
        seccomp: Default::default(),
        landlock: Default::default(),
        cgroup: Default::default(),
        proxy_socket: None,
        backend: Default::default(),
        docker: Default::default(),
        identity: Identity {
            uid: user.uid(),
            gid: user.gid(),
            user: user.username().clone().unwrap_or_default(),
            mapping: IdMapping::Rootless {
                host_uid: nix::unistd::geteuid().as_raw(),
                host_gid: nix::unistd::getegid().as_raw(),
            },
        },
        interpreter: Interpreter {
            path: PathBuf::from(&args[0]),
            prefix: PathBuf::from("/"),
            extra_bind: None,
        },
        fs: FsPolicy {
            rootfs: Some(root_path),
            read_only_root: view.root_readonly,
            tmp_size: 0,
            root_size: 0,
        },
        adjustments: Vec::new(),
        limits: Limits {
            cpu_time: None,
            timeout: Duration::MAX,
            cpus: 0.0,
            memory_bytes: 0,
            pids: 0,
            nofile: 0,
            fsize_bytes: 0,
            output_bytes: 0,
        },
        network: NetworkMode::None,
        env,
        hostname: hostname.unwrap_or_default(),
        view: View::Oci(Box::new(view)),
    })
}

/// A spec's (or `exec --process` file's) process as the engine's plain data.
pub fn oci_process(process: &oci_spec::runtime::Process) -> Result<OciProcess, BundleError> {
    let args = process.args().clone().unwrap_or_default();
    if args.is_empty() {
        return Err(invalid("process.args", "empty (nothing to run)"));
    }
    let cwd = process.cwd().display().to_string();
    if !cwd.starts_with('/') {
        return Err(invalid("process.cwd", format!("{cwd:?} is not absolute")));
    }
    let user = process.user();
    let caps = process.capabilities().clone().unwrap_or_default();
    let names = |s: &Option<oci_spec::runtime::Capabilities>| -> Vec<String> {
        let mut v: Vec<String> = s
            .iter()
            .flatten()
            .filter_map(|c| serde_json::to_value(c).ok())
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect();
        v.sort();
        v
    };
    let capabilities = CapabilitySets {
        bounding: names(caps.bounding()),
        effective: names(caps.effective()),
        inheritable: names(caps.inheritable()),
        permitted: names(caps.permitted()),
        ambient: names(caps.ambient()),
    };
    let mut rlimits = Vec::new();
    for r in process.rlimits().iter().flatten() {
        let name = serde_json::to_value(r.typ())
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        let res = rlimit_number(&name)
            .ok_or_else(|| invalid("process.rlimits", format!("unknown limit {name:?}")))?;
        if r.soft() > r.hard() {
            return Err(invalid(
                "process.rlimits",
                format!("{name}: soft limit above the hard limit"),
            ));
        }
        rlimits.push((res, r.soft(), r.hard()));
    }
    let console_size = match process.console_size() {
        Some(b) => Some((
            u16::try_from(b.height())
                .map_err(|_| invalid("process.consoleSize.height", "more than 65535 rows"))?,
            u16::try_from(b.width())
                .map_err(|_| invalid("process.consoleSize.width", "more than 65535 columns"))?,
        )),
        None => None,
    };
    let oci_process = OciProcess {
        args: args.clone(),
        env: process.env().clone().unwrap_or_default(),
        cwd,
        uid: user.uid(),
        gid: user.gid(),
        additional_gids: additional_gids(user.additional_gids().as_deref())?,
        rlimits,
        no_new_privileges: process.no_new_privileges().unwrap_or(false),
        oom_score_adj: process.oom_score_adj(),
        capabilities,
        terminal: process.terminal().unwrap_or(false),
        console_size,
        umask: user.umask(),
    };
    Ok(oci_process)
}

/// `root.path` relative to the bundle, resolved on the host. A root that leaves the
/// bundle through a symlink is refused: the bundle's owner chose the bundle, not
/// whatever the link points to.
fn resolve_root(bundle: &Path, p: &Path) -> Result<PathBuf, BundleError> {
    let joined = if p.is_absolute() {
        p.to_path_buf()
    } else {
        bundle.join(p)
    };
    let real = std::fs::canonicalize(&joined)
        .map_err(|e| invalid("root.path", format!("{}: {e}", joined.display())))?;
    if !real.is_dir() {
        return Err(invalid(
            "root.path",
            format!("{} is not a directory", real.display()),
        ));
    }
    if !p.is_absolute() && !real.starts_with(bundle) {
        return Err(invalid(
            "root.path",
            format!(
                "{} resolves to {}, outside the bundle",
                p.display(),
                real.display()
            ),
        ));
    }
    if real == Path::new("/") {
        return Err(invalid(
            "root.path",
            "the host's / cannot be a container root",
        ));
    }
    Ok(real)
}

/// Only sysctls that belong to a namespace the container owns may be set: anything
/// else would change the host.
fn check_sysctl(k: &str, ns: &Namespaces) -> Result<(), BundleError> {
    let ipc = matches!(
        k,
        "kernel.msgmax"
            | "kernel.msgmnb"
            | "kernel.msgmni"
            | "kernel.sem"
            | "kernel.shmall"
            | "kernel.shmmax"
            | "kernel.shmmni"
            | "kernel.shm_rmid_forced"
    ) || k.starts_with("fs.mqueue.");
    let ok = (ipc && ns.ipc)
        || (k.starts_with("net.") && ns.network)
        || (matches!(k, "kernel.hostname" | "kernel.domainname") && ns.uts);
    if ok && !k.contains("..") && !k.contains('/') {
        Ok(())
    } else {
        Err(invalid(
            "linux.sysctl",
            format!("{k} is not namespaced by the container's namespaces"),
        ))
    }
}

/// Fields maibox does not apply: refused by name, never dropped silently.
fn refuse_unapplied(
    process: &oci_spec::runtime::Process,
    linux: &oci_spec::runtime::Linux,
) -> Result<(), BundleError> {
    let unapplied = |field: &str, hint: &str| unenforced(field, hint);
    let present = [
        (
            process.selinux_label().is_some(),
            "process.selinuxLabel",
            "no SELinux support",
        ),
        (
            linux.mount_label().is_some(),
            "linux.mountLabel",
            "no SELinux support",
        ),
        (
            process.scheduler().is_some(),
            "process.scheduler",
            "scheduling policies are not applied",
        ),
        (
            process.io_priority().is_some(),
            "process.ioPriority",
            "I/O priorities are not applied",
        ),
        (
            process.exec_cpu_affinity().is_some(),
            "process.execCPUAffinity",
            "CPU affinity is not applied",
        ),
        (
            linux.intel_rdt().is_some(),
            "linux.intelRdt",
            "no Intel RDT support",
        ),
        (
            linux.memory_policy().is_some(),
            "linux.memoryPolicy",
            "NUMA memory policies are not applied",
        ),
        (
            linux.personality().is_some(),
            "linux.personality",
            "execution domains are not applied",
        ),
        (
            linux.net_devices().is_some(),
            "linux.netDevices",
            "moving host network devices is not supported",
        ),
        (
            linux.time_offsets().is_some(),
            "linux.timeOffsets",
            "time namespaces are not supported",
        ),
    ];
    if let Some((_, field, hint)) = present.iter().find(|(on, _, _)| *on) {
        return Err(unapplied(field, hint));
    }
    Ok(())
}

/// `process.user.additionalGids`, each at most once (runc refuses duplicates too).
fn additional_gids(gids: Option<&[u32]>) -> Result<Vec<u32>, BundleError> {
    let gids = gids.unwrap_or_default().to_vec();
    let mut seen = std::collections::BTreeSet::new();
    if let Some(d) = gids.iter().find(|g| !seen.insert(**g)) {
        return Err(invalid(
            "process.user.additionalGids",
            format!("gid {d} is listed twice"),
        ));
    }
    Ok(gids)
}

/// `linux.rootfsPropagation` as mount flags. maibox first makes every mount of
/// the container private, so no setting can reach the host's mounts: "shared"
/// makes a peer group inside the container only, "slave" has no master left.
fn root_propagation(p: Option<&str>) -> Result<Option<libc::c_ulong>, BundleError> {
    use nix::mount::MsFlags as F;
    let f = match p.unwrap_or("") {
        "" => return Ok(None),
        "private" => F::MS_PRIVATE,
        "rprivate" => F::MS_PRIVATE | F::MS_REC,
        "shared" => F::MS_SHARED,
        "rshared" => F::MS_SHARED | F::MS_REC,
        "slave" => F::MS_SLAVE,
        "rslave" => F::MS_SLAVE | F::MS_REC,
        "unbindable" => F::MS_UNBINDABLE,
        "runbindable" => F::MS_UNBINDABLE | F::MS_REC,
        other => {
            return Err(invalid(
                "linux.rootfsPropagation",
                format!("{other:?} is not a propagation type"),
            ))
        }
    };
    Ok(Some(f.bits()))
}

/// `linux.devices`, checked: absolute paths, known types, numbers for
/// character and block devices.
fn devices(linux: &oci_spec::runtime::Linux) -> Result<Vec<OciDevice>, BundleError> {
    use oci_spec::runtime::LinuxDeviceType as T;
    let mut out = Vec::new();
    for d in linux.devices().iter().flatten() {
        let path = d.path().display().to_string();
        if !path.starts_with('/') || path.split('/').any(|c| c == "..") {
            return Err(invalid(
                "linux.devices[].path",
                format!("{path:?} is not an absolute path inside the container"),
            ));
        }
        let kind = match d.typ() {
            T::C | T::U => libc::S_IFCHR,
            T::B => libc::S_IFBLK,
            T::P => libc::S_IFIFO,
            other => {
                return Err(invalid(
                    "linux.devices[].type",
                    format!("{path}: type {other:?} cannot be created"),
                ))
            }
        };
        out.push(OciDevice {
            path,
            kind,
            major: u64::try_from(d.major()).unwrap_or(0),
            minor: u64::try_from(d.minor()).unwrap_or(0),
            mode: d.file_mode().unwrap_or(0o666) & 0o7777,
            uid: d.uid().unwrap_or(0),
            gid: d.gid().unwrap_or(0),
        });
    }
    Ok(out)
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

pub fn rlimit_number(name: &str) -> Option<u32> {
    Some(match name {
        "RLIMIT_CPU" => libc::RLIMIT_CPU,
        "RLIMIT_FSIZE" => libc::RLIMIT_FSIZE,
        "RLIMIT_DATA" => libc::RLIMIT_DATA,
        "RLIMIT_STACK" => libc::RLIMIT_STACK,
        "RLIMIT_CORE" => libc::RLIMIT_CORE,
        "RLIMIT_RSS" => libc::RLIMIT_RSS,
        "RLIMIT_NPROC" => libc::RLIMIT_NPROC,
        "RLIMIT_NOFILE" => libc::RLIMIT_NOFILE,
        "RLIMIT_MEMLOCK" => libc::RLIMIT_MEMLOCK,
        "RLIMIT_AS" => libc::RLIMIT_AS,
        "RLIMIT_LOCKS" => libc::RLIMIT_LOCKS,
        "RLIMIT_SIGPENDING" => libc::RLIMIT_SIGPENDING,
        "RLIMIT_MSGQUEUE" => libc::RLIMIT_MSGQUEUE,
        "RLIMIT_NICE" => libc::RLIMIT_NICE,
        "RLIMIT_RTPRIO" => libc::RLIMIT_RTPRIO,
        "RLIMIT_RTTIME" => libc::RLIMIT_RTTIME,
        _ => return None,
    })
}

fn mount_for(m: &oci_spec::runtime::Mount, bundle: &Path) -> Result<Option<OciMount>, BundleError> {
    use nix::mount::MsFlags as F;
    let dest = m.destination().display().to_string();
    if !dest.starts_with('/') {
        return Err(invalid(
            "mounts[].destination",
            format!("{dest:?} is not absolute"),
        ));
    }
    let kind = m.typ().clone().unwrap_or_default();
    let options = m.options().clone().unwrap_or_default();
    let mut bind = kind == "bind";
    let mut recursive = false;
    let mut flags = F::empty();
    let mut propagation = F::empty();
    let mut data = Vec::new();
    let (mut rec_set, mut rec_clear) = (0u64, 0u64);
    for o in &options {
        if let Some((set, clear)) = recursive_attr(o) {
            rec_set = (rec_set & !clear) | set;
            rec_clear = (rec_clear & !set) | clear;
            continue;
        }
        let (set, clear) = match o.as_str() {
            "bind" => {
                bind = true;
                (F::empty(), F::empty())
            }
            "rbind" => {
                bind = true;
                recursive = true;
                (F::empty(), F::empty())
            }
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
            "private" | "rprivate" | "shared" | "rshared" | "slave" | "rslave" | "unbindable"
            | "runbindable" => {
                let rec = o.starts_with('r');
                let p = match o.trim_start_matches('r') {
                    "private" => F::MS_PRIVATE,
                    "shared" => F::MS_SHARED,
                    "slave" => F::MS_SLAVE,
                    _ => F::MS_UNBINDABLE,
                };
                propagation = p | if rec { F::MS_REC } else { F::empty() };
                (F::empty(), F::empty())
            }
            // Copying the image's content up into a tmpfs is not implemented; the
            // tmpfs starts empty, which is what runc does without it.
            "tmpcopyup" => (F::empty(), F::empty()),
            other => {
                data.push(other.to_string());
                (F::empty(), F::empty())
            }
        };
        flags |= set;
        flags &= !clear;
    }
    // A bind mount has no filesystem to take options: a flag maibox does not
    // know would otherwise be dropped silently. Filesystem data (`key=value`,
    // which runc passes on and the kernel ignores for a bind) is left alone.
    let unknown: Vec<&String> = data.iter().filter(|o| !o.contains('=')).collect();
    if bind && !unknown.is_empty() {
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
    let src = m
        .source()
        .as_ref()
        .map(|s| s.display().to_string())
        .unwrap_or_default();
    let source = if bind {
        if src.is_empty() {
            return Err(invalid(
                "mounts[].source",
                format!("bind mount on {dest} has no source"),
            ));
        }
        let p = Path::new(&src);
        if p.is_absolute() {
            src
        } else {
            bundle.join(p).display().to_string()
        }
    } else {
        if !matches!(
            kind.as_str(),
            "proc" | "tmpfs" | "devpts" | "mqueue" | "sysfs" | "cgroup"
        ) {
            return Err(invalid(
                "mounts[].type",
                format!("{kind:?} on {dest} is not supported"),
            ));
        }
        src
    };
    Ok(Some(OciMount {
        destination: dest,
        kind,
        source,
        bind,
        recursive,
        flags: flags.bits(),
        propagation: propagation.bits(),
        data: data.join(","),
        rec_set,
        rec_clear,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions() {
        assert!(check_version("1.0.2").is_ok());
        assert!(check_version("1.0.2-dev").is_ok());
        assert!(check_version("1.2.0").is_ok());
        assert!(check_version("2.0.0").is_err());
        assert!(check_version("0.9.0").is_err());
        assert!(check_version("1.x").is_err());
    }

    #[test]
    fn docker_reference_config_maps_to_a_policy() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("rootfs")).unwrap();
        let text = include_str!("../../../tests/data/docker-config.json");
        let mut v: serde_json::Value = serde_json::from_str(text).unwrap();
        v["root"]["path"] = "rootfs".into();
        let spec: Spec = serde_json::from_value(v).unwrap();
        let none = BTreeSet::new();
        let p = policy_for(&spec, dir.path(), &none).unwrap();
        let View::Oci(view) = &p.view else {
            panic!("not an OCI view")
        };
        assert!(view.root_readonly);
        assert_eq!(view.process.uid, 1000);
        assert_eq!(view.process.additional_gids, vec![1000]);
        assert!(view.process.no_new_privileges);
        assert_eq!(view.process.capabilities, CapabilitySets::default());
        assert!(view.namespaces.user.is_none());
        assert!(view.namespaces.network && view.namespaces.pid);
        // Docker's read-only cgroup mount is kept (engine::cgroupfs mounts it).
        let cg = view.mounts.iter().find(|m| m.kind == "cgroup").unwrap();
        assert_eq!(cg.destination, "/sys/fs/cgroup");
        assert!(nix::mount::MsFlags::from_bits_truncate(cg.flags)
            .contains(nix::mount::MsFlags::MS_RDONLY));
        let rc = view
            .mounts
            .iter()
            .find(|m| m.destination == "/etc/resolv.conf")
            .unwrap();
        assert!(rc.bind && rc.recursive);
        assert_eq!(rc.flags & libc::MS_RDONLY, libc::MS_RDONLY);
        assert!(view.masked_paths.contains(&"/proc/kcore".to_string()));
        // Docker's profile is compiled, not waived.
        assert!(view.seccomp.as_ref().unwrap().programs.len() >= 3);
    }

    #[test]
    fn root_escaping_the_bundle_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("rootfs")).unwrap();
        let bundle = std::fs::canonicalize(dir.path()).unwrap();
        let e = resolve_root(&bundle, Path::new("rootfs")).unwrap_err();
        assert!(e.to_string().contains("outside the bundle"), "{e}");
    }

    #[test]
    fn host_sysctls_are_refused() {
        let ns = Namespaces {
            network: true,
            ..Default::default()
        };
        assert!(check_sysctl("net.ipv4.ping_group_range", &ns).is_ok());
        assert!(check_sysctl("kernel.core_pattern", &ns).is_err());
        assert!(check_sysctl("kernel.shmmax", &ns).is_err());
    }
}
