//! `features`: what this runtime implements (runtime-spec features.md).

use std::collections::BTreeSet;

/// The runtime-spec `features` document: only what maibox enforces.
pub fn features() -> serde_json::Value {
    let caps: Vec<String> = caps::all()
        .into_iter()
        .map(|c| c.to_string())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    serde_json::json!({
        "ociVersionMin": "1.0.0",
        "ociVersionMax": "1.2.0",
        "hooks": ["prestart", "createRuntime", "createContainer", "startContainer", "poststart", "poststop"],
        "mountOptions": ["ro", "rw", "nosuid", "suid", "nodev", "dev", "noexec", "exec",
            "relatime", "norelatime", "strictatime", "noatime", "nodiratime", "bind", "rbind",
            "private", "rprivate", "slave", "rslave", "shared", "rshared", "nosymfollow",
            "symfollow", "rro", "rrw", "rnosuid", "rsuid", "rnodev", "rdev", "rnoexec", "rexec",
            "rnoatime", "rrelatime", "rstrictatime", "rnodiratime", "rdiratime",
            "rnosymfollow", "rsymfollow"],
        "linux": {
            "namespaces": ["mount", "pid", "network", "ipc", "uts", "cgroup", "user"],
            "capabilities": caps,
            "cgroup": {"v1": true, "v2": true, "systemd": false, "systemdUser": false},
            "seccomp": {
                "enabled": true,
                "actions": ["SCMP_ACT_ALLOW", "SCMP_ACT_ERRNO", "SCMP_ACT_KILL",
                    "SCMP_ACT_KILL_THREAD", "SCMP_ACT_KILL_PROCESS", "SCMP_ACT_TRAP",
                    "SCMP_ACT_TRACE", "SCMP_ACT_LOG", "SCMP_ACT_NOTIFY"],
                "operators": ["SCMP_CMP_NE", "SCMP_CMP_LT", "SCMP_CMP_LE", "SCMP_CMP_EQ",
                    "SCMP_CMP_GE", "SCMP_CMP_GT", "SCMP_CMP_MASKED_EQ"],
                "archs": [if cfg!(target_arch = "x86_64") { "SCMP_ARCH_X86_64" } else { "SCMP_ARCH_AARCH64" }],
                "knownFlags": ["SECCOMP_FILTER_FLAG_TSYNC", "SECCOMP_FILTER_FLAG_LOG",
                    "SECCOMP_FILTER_FLAG_SPEC_ALLOW"],
                "supportedFlags": ["SECCOMP_FILTER_FLAG_TSYNC", "SECCOMP_FILTER_FLAG_LOG",
                    "SECCOMP_FILTER_FLAG_SPEC_ALLOW"]
            },
            "apparmor": {"enabled": false},
            "selinux": {"enabled": false}
        },
        "annotations": {"io.maibox.version": env!("CARGO_PKG_VERSION")}
    })
}
