//! A bundle's config.json → the engine's [`Policy`] with an [`View::Oci`] view.
//!
//! Parsing is `oci-spec`'s; this module decides what maibox does with each field.
//! A field maibox cannot enforce yet is refused (never silently dropped), unless
//! the caller waived it explicitly with `--unsafe-allow-unenforced`.

use crate::config::{NetworkMode, TrustLevel};
use crate::error::SpecError;
use crate::interpreter::Interpreter;
use crate::policy::oci::OciView;
use crate::policy::{FsPolicy, IdMapping, Identity, Limits, Policy, View};
use oci_spec::runtime::Spec;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

mod linux;
mod mounts;
mod process;

pub use process::{oci_process, rlimit_number};

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

/// The policy for `spec` in `bundle`: every field checked, refused when
/// maibox cannot enforce it (unless `waived`).
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

    process::refuse_unapplied(process, &linux)?;
    let seccomp = linux
        .seccomp()
        .as_ref()
        .map(crate::confine::seccomp::oci::compile)
        .transpose()?;
    if process.apparmor_profile().is_some() && !waived.contains(&Waivable::Apparmor) {
        return Err(unenforced("process.apparmorProfile", "no AppArmor support"));
    }
    // Limits and the cgroup path are applied by `create` (crate::cgroup::oci);
    // checked here so that one maibox cannot apply fails before anything exists.
    crate::cgroup::oci::from_spec(&linux, "check")?;

    let oci_process = process::oci_process(process)?;
    let ns = linux::namespaces(&linux)?;
    let (hostname, domainname) = linux::uts_names(spec, &ns)?;
    let sysctls = linux::sysctls(&linux, &ns)?;
    let mounts = mounts::mounts(spec, bundle)?;
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
        root_propagation: linux::root_propagation(linux.rootfs_propagation().as_deref())?,
        devices: linux::devices(&linux)?,
        hooks_sync: false,
        hardening: None,
        runtime_is_root: nix::unistd::geteuid().is_root(),
    };
    Ok(policy(view, process.user(), root_path, hostname))
}

/// The policy around an OCI view. The Python-view fields describe maibox's own
/// runs; the OCI view does not read them. They carry the spec's values where
/// one exists.
fn policy(
    view: OciView,
    user: &oci_spec::runtime::User,
    root_path: PathBuf,
    hostname: Option<String>,
) -> Policy {
    let env: Vec<(String, String)> = view
        .process
        .env
        .iter()
        .map(|e| match e.split_once('=') {
            Some((k, v)) => (k.to_string(), v.to_string()),
            None => (e.clone(), String::new()),
        })
        .collect();
    Policy {
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
            path: PathBuf::from(&view.process.args[0]),
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
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::oci::CapabilitySets;

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
}
