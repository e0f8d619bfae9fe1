//! The `linux` section (and the uts names) → the view's namespaces, sysctls,
//! devices and root propagation.

use oci_spec::runtime::{LinuxNamespaceType, Spec};

use super::{invalid, unenforced, BundleError};
use crate::policy::oci::{IdMaps, Namespaces, NsJoin, OciDevice};

/// `linux.namespaces` (new ones, and ones to join by path) and the user
/// namespace's id maps.
pub(super) fn namespaces(linux: &oci_spec::runtime::Linux) -> Result<Namespaces, BundleError> {
    let mut ns = Namespaces::default();
    for n in linux.namespaces().iter().flatten() {
        if let Some(path) = n.path() {
            ns.join.push(join(n.typ(), path)?);
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
    if ns.pid && ns.join.iter().any(|j| j.kind == "pid") {
        return Err(invalid(
            "linux.namespaces",
            "pid is listed both as a new namespace and as one to join by path: keep one",
        ));
    }
    if !ns.mount {
        // The view is built by mounting: without its own mount namespace the
        // container would mount on the host (runc does, and leaves them there).
        return Err(invalid(
            "linux.namespaces",
            "no mount namespace: maibox builds the container's root with mounts, which \
             without one would land on the host's mount table; add {\"type\": \"mount\"}",
        ));
    }
    id_maps(linux, &mut ns)?;
    Ok(ns)
}

/// A namespace to join by path: network, ipc, uts, cgroup and pid ones (a
/// pod's: Kubernetes hands the runtime the pause container's, and for
/// `shareProcessNamespace` and `kubectl debug` its pid namespace). A pid
/// namespace is entered by the clone of the init, the others by the init.
fn join(kind: LinuxNamespaceType, path: &std::path::Path) -> Result<NsJoin, BundleError> {
    let (kind, flag) = match kind {
        LinuxNamespaceType::Network => ("network", libc::CLONE_NEWNET),
        LinuxNamespaceType::Ipc => ("ipc", libc::CLONE_NEWIPC),
        LinuxNamespaceType::Uts => ("uts", libc::CLONE_NEWUTS),
        LinuxNamespaceType::Cgroup => ("cgroup", libc::CLONE_NEWCGROUP),
        LinuxNamespaceType::Pid => ("pid", libc::CLONE_NEWPID),
        // The root is built by mounting: in a joined mount namespace the
        // container's mounts would land in someone else's mount table (the host's,
        // another container's), and its pivot_root would move theirs.
        LinuxNamespaceType::Mount => {
            return Err(invalid(
                "linux.namespaces[mount].path",
                "joining an existing mount namespace is refused: maibox builds the \
                 container's root with mounts, which would land in that namespace; \
                 give the container a new one ({\"type\": \"mount\"} without a path)",
            ))
        }
        other => {
            return Err(unenforced(
                format!("linux.namespaces[{other:?}].path"),
                "maibox joins existing network, ipc, uts, cgroup and pid namespaces; \
                 joining a user namespace is not supported",
            ))
        }
    };
    Ok(NsJoin {
        kind: kind.into(),
        path: path.to_path_buf(),
        flag,
        fd: None,
    })
}

/// `linux.uidMappings` and `gidMappings`: both, and only with a user namespace.
fn id_maps(linux: &oci_spec::runtime::Linux, ns: &mut Namespaces) -> Result<(), BundleError> {
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
    Ok(())
}

/// `hostname` and `domainname`, which need a uts namespace of the container's.
pub(super) fn uts_names(
    spec: &Spec,
    ns: &Namespaces,
) -> Result<(Option<String>, Option<String>), BundleError> {
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
    Ok((hostname, domainname))
}

/// `linux.sysctl`, sorted, each namespaced by the container.
pub(super) fn sysctls(
    linux: &oci_spec::runtime::Linux,
    ns: &Namespaces,
) -> Result<Vec<(String, String)>, BundleError> {
    let mut sysctls: Vec<(String, String)> = linux
        .sysctl()
        .clone()
        .unwrap_or_default()
        .into_iter()
        .collect();
    sysctls.sort();
    for (k, _) in &sysctls {
        check_sysctl(k, ns)?;
    }
    Ok(sysctls)
}

/// Only sysctls that belong to a namespace the container owns may be set: anything
/// else would change the host.
pub(super) fn check_sysctl(k: &str, ns: &Namespaces) -> Result<(), BundleError> {
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

/// `linux.rootfsPropagation` as mount flags. maibox first makes every mount of
/// the container private, so no setting can reach the host's mounts: "shared"
/// makes a peer group inside the container only, "slave" has no master left.
pub(super) fn root_propagation(p: Option<&str>) -> Result<Option<libc::c_ulong>, BundleError> {
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
pub(super) fn devices(linux: &oci_spec::runtime::Linux) -> Result<Vec<OciDevice>, BundleError> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
