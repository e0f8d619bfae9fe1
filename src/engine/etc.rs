//! A generated, minimal /etc: just enough for Python, libc name lookups and TLS.

use super::mounts::mkdir_p;
use crate::error::{SetupError, Step, StepContext};
use crate::policy::Policy;
use std::path::Path;

/// Host files bound read-only into the generated /etc (path, is a directory).
pub const HOST_FILES: &[(&str, bool)] = &[
    ("/etc/ld.so.cache", false),
    ("/etc/localtime", false),
    ("/etc/ssl", true),
    ("/etc/ca-certificates", true),
    ("/etc/alternatives", true),
];

pub fn write(root: &Path, policy: &Policy) -> Result<(), SetupError> {
    let step = Step::Etc;
    let etc = root.join("etc");
    mkdir_p(step, &etc)?;
    let id = &policy.identity;
    let files = [
        (
            "passwd",
            format!(
                "root:x:0:0:root:/root:/usr/sbin/nologin\n{u}:x:{uid}:{gid}:{u}:/tmp:/usr/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
                u = id.user,
                uid = id.uid,
                gid = id.gid
            ),
        ),
        (
            "group",
            format!(
                "root:x:0:\n{u}:x:{gid}:\nnogroup:x:65534:\n",
                u = id.user,
                gid = id.gid
            ),
        ),
        (
            "hosts",
            format!(
                "127.0.0.1\tlocalhost {h}\n::1\tlocalhost ip6-localhost ip6-loopback\n",
                h = policy.hostname
            ),
        ),
        ("hostname", format!("{}\n", policy.hostname)),
        (
            "nsswitch.conf",
            "passwd: files\ngroup: files\nshadow: files\nhosts: files\nnetworks: files\nprotocols: files\nservices: files\n".to_string(),
        ),
        ("resolv.conf", String::new()),
    ];
    for (name, content) in files {
        let p = etc.join(name);
        std::fs::write(&p, content).step(step, format!("write {}", p.display()))?;
    }
    Ok(())
}
