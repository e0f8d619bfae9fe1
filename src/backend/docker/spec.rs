//! [`Policy`] → the container's configuration. Pure data, so that what maps to what is
//! checked by unit tests without an engine.

use super::archive;
use crate::policy::{Layer, Policy};
use crate::report::Layers;
use bollard::models::{
    ContainerCreateBody, HostConfig, HostConfigCgroupnsModeEnum, Mount, MountType,
    MountVolumeOptions, ResourcesUlimits,
};
use std::collections::HashMap;

pub struct Request<'a> {
    pub policy: &'a Policy,
    pub args: &'a [String],
    /// Attach the caller's stdin (otherwise the code's stdin is /dev/null).
    pub stdin: bool,
    pub labels: HashMap<String, String>,
}

pub fn container(r: &Request) -> ContainerCreateBody {
    let p = r.policy;
    let mut entrypoint = vec![
        p.interpreter.path.display().to_string(),
        archive::SCRIPT.to_string(),
    ];
    entrypoint.extend(r.args.iter().cloned());
    ContainerCreateBody {
        image: Some(p.docker.image.clone()),
        user: Some(format!("{}:{}", p.identity.uid, p.identity.gid)),
        working_dir: Some(archive::DIR.into()),
        entrypoint: Some(entrypoint),
        cmd: Some(Vec::new()),
        env: Some(p.env.iter().map(|(k, v)| format!("{k}={v}")).collect()),
        hostname: Some(p.hostname.clone()),
        labels: Some(r.labels.clone()),
        attach_stdin: Some(r.stdin),
        attach_stdout: Some(true),
        attach_stderr: Some(true),
        open_stdin: Some(r.stdin),
        stdin_once: Some(r.stdin),
        tty: Some(false),
        network_disabled: Some(p.has(Layer::NetNs)),
        host_config: Some(host_config(r)),
        ..Default::default()
    }
}

fn host_config(r: &Request) -> HostConfig {
    let p = r.policy;
    let limits = p.has(Layer::CgroupLimits);
    let mem = i64::try_from(p.limits.memory_bytes).unwrap_or(i64::MAX);
    let mut security_opt = Vec::new();
    if p.has(Layer::NoNewPrivs) {
        security_opt.push("no-new-privileges:true".to_string());
    }
    if !p.has(Layer::Seccomp) {
        security_opt.push("seccomp=unconfined".to_string());
    }
    HostConfig {
        // Swap = memory: no swap at all, as the native cgroup.
        memory: limits.then_some(mem),
        memory_swap: limits.then_some(mem),
        nano_cpus: limits.then(|| (p.limits.cpus * 1e9).round() as i64),
        pids_limit: limits.then(|| i64::try_from(p.limits.pids).unwrap_or(i64::MAX)),
        cap_drop: p.has(Layer::Capabilities).then(|| vec!["ALL".to_string()]),
        security_opt: Some(security_opt),
        readonly_rootfs: Some(p.fs.read_only_root),
        tmpfs: Some(HashMap::from([(
            "/tmp".to_string(),
            format!("rw,noexec,nosuid,nodev,size={},mode=1777", p.fs.tmp_size),
        )])),
        // The script's directory: an anonymous volume (removed with the container) that
        // the archive is extracted into, root-owned so the code cannot write there.
        mounts: Some(vec![Mount {
            target: Some(archive::DIR.into()),
            typ: Some(MountType::VOLUME),
            read_only: Some(false),
            volume_options: Some(MountVolumeOptions {
                no_copy: Some(true),
                labels: Some(r.labels.clone()),
                ..Default::default()
            }),
            ..Default::default()
        }]),
        network_mode: Some(if p.has(Layer::NetNs) { "none" } else { "host" }.into()),
        ipc_mode: Some("private".into()),
        cgroupns_mode: Some(HostConfigCgroupnsModeEnum::PRIVATE),
        // A small init as PID 1 (the engine's docker-init) reaps and forwards signals,
        // so that the code is not PID 1 (which ignores signals it has no handler for).
        init: Some(true),
        ulimits: p.has(Layer::Rlimits).then(|| ulimits(p)),
        runtime: p.docker.runtime.clone(),
        auto_remove: Some(false),
        ..Default::default()
    }
}

/// NOFILE, FSIZE and CORE as native; CPU is the per-process CPU-time fallback. NPROC is
/// left out: without a user namespace it would count the host user 1000's processes.
fn ulimits(p: &Policy) -> Vec<ResourcesUlimits> {
    let ul = |name: &str, v: u64| ResourcesUlimits {
        name: Some(name.into()),
        soft: Some(i64::try_from(v).unwrap_or(i64::MAX)),
        hard: Some(i64::try_from(v).unwrap_or(i64::MAX)),
    };
    let mut v = vec![
        ul("nofile", p.limits.nofile),
        ul("fsize", p.limits.fsize_bytes),
        ul("core", 0),
    ];
    if let Some(c) = p.limits.cpu_time {
        v.push(ul("cpu", c.as_secs_f64().ceil() as u64));
    }
    v
}

/// The layers of a run as the engine applied them: read back from the created container
/// and the engine's security options, never assumed from the request.
pub fn layers(hc: &HostConfig, engine: &super::client::Engine) -> Layers {
    let sec = hc.security_opt.clone().unwrap_or_default();
    let seccomp = engine.has_security_option("seccomp")
        && !sec
            .iter()
            .any(|o| o == "seccomp=unconfined" || o == "seccomp:unconfined")
        && hc.privileged != Some(true);
    let cap_drop_all = hc
        .cap_drop
        .as_ref()
        .is_some_and(|c| c.iter().any(|c| c.eq_ignore_ascii_case("ALL")));
    let userns = engine.has_security_option("userns") && hc.userns_mode.as_deref() != Some("host");
    let limits = hc.memory.unwrap_or(0) > 0 && hc.pids_limit.unwrap_or(0) > 0;
    Layers {
        user_ns: userns,
        pid_ns: hc.pid_mode.as_deref().unwrap_or("").is_empty(),
        mount_ns: true,
        net_ns: hc.network_mode.as_deref() == Some("none"),
        // The engine's default seccomp profile refuses unshare/clone of namespaces to a
        // process without CAP_SYS_ADMIN.
        nested_userns_blocked: seccomp && cap_drop_all,
        ipc_ns: hc.ipc_mode.as_deref() != Some("host"),
        uts_ns: hc.uts_mode.as_deref() != Some("host"),
        cgroup_ns: hc.cgroupns_mode == Some(HostConfigCgroupnsModeEnum::PRIVATE),
        pivot_root: true,
        read_only_root: hc.readonly_rootfs == Some(true),
        overlay_root: false,
        // The engine masks /proc/kcore, /proc/keys & co. unless privileged.
        proc_masks: hc.privileged != Some(true),
        capabilities_dropped: cap_drop_all,
        no_new_privs: sec.iter().any(|o| o.starts_with("no-new-privileges")),
        rlimits: hc.ulimits.as_ref().is_some_and(|u| !u.is_empty()),
        seccomp,
        landlock: false,
        cgroup_limits: limits,
        rootless: engine.has_security_option("rootless"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Backend, Config, TrustLevel, BUILTIN};
    use crate::policy::Overrides;

    fn policy(ov: Overrides) -> Policy {
        let cfg = Config::parse(BUILTIN, "builtin").unwrap();
        let ov = Overrides {
            backend: Some(Backend::Docker),
            image: Some("img:1".into()),
            ..ov
        };
        Policy::build(&cfg, TrustLevel::Untrusted, &ov).unwrap()
    }

    #[test]
    fn untrusted_maps_onto_the_container() {
        let p = policy(Overrides::default());
        let args = vec!["a".to_string()];
        let c = container(&Request {
            policy: &p,
            args: &args,
            stdin: false,
            labels: HashMap::new(),
        });
        let hc = c.host_config.unwrap();
        assert_eq!(c.image.as_deref(), Some("img:1"));
        assert_eq!(c.user.as_deref(), Some("1000:1000"));
        assert_eq!(
            c.entrypoint.unwrap(),
            vec!["python3", "/sandbox/main.py", "a"]
        );
        assert_eq!(hc.memory, Some(p.limits.memory_bytes as i64));
        assert_eq!(hc.memory_swap, hc.memory);
        assert_eq!(hc.nano_cpus, Some(500_000_000));
        assert_eq!(hc.pids_limit, Some(64));
        assert_eq!(hc.cap_drop, Some(vec!["ALL".to_string()]));
        assert_eq!(
            hc.security_opt,
            Some(vec!["no-new-privileges:true".to_string()])
        );
        assert_eq!(hc.readonly_rootfs, Some(true));
        assert_eq!(hc.network_mode.as_deref(), Some("none"));
        assert_eq!(
            hc.tmpfs.unwrap()["/tmp"],
            "rw,noexec,nosuid,nodev,size=67108864,mode=1777"
        );
        assert_eq!(c.open_stdin, Some(false));
    }

    #[test]
    fn allowlist_and_rootfs_are_refused() {
        let cfg = Config::parse(BUILTIN, "builtin").unwrap();
        let ov = Overrides {
            backend: Some(Backend::Docker),
            network: Some(crate::config::NetworkMode::Allowlist),
            ..Default::default()
        };
        let e = Policy::build(&cfg, TrustLevel::Untrusted, &ov).unwrap_err();
        assert!(e.to_string().contains("allowlist"), "{e}");
        let ov = Overrides {
            backend: Some(Backend::Docker),
            rootfs: Some("/".into()),
            ..Default::default()
        };
        let e = Policy::build(&cfg, TrustLevel::Untrusted, &ov).unwrap_err();
        assert!(e.to_string().contains("--image"), "{e}");
    }
}
