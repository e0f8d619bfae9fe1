//! Kernel attack-surface reduction for the sandboxed payload (issue 4):
//! a default-deny seccomp filter ([`seccomp`]) and a Landlock ruleset ([`landlock`]).
//!
//! Order in the child, after pivot_root and after capabilities are dropped:
//! 1. [`apply_landlock`] (needs the `landlock_*` syscalls, which the seccomp
//!    allowlist does not contain, so it must come first);
//! 2. [`install_filter`] with a program built by [`build_filter`] in the
//!    supervisor before fork;
//! 3. `execve`.

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
compile_error!("maibox's seccomp filter is written for x86_64 and aarch64 only");

pub mod landlock;
pub mod landlock_mounts;
pub mod seccomp;

pub use self::seccomp::{notify, syscalls};

use std::path::PathBuf;

pub use self::landlock::{
    apply_landlock, build_ruleset, landlock_abi, LandlockOutcome, LandlockSpec,
};
pub use self::seccomp::notify::Notify;
pub use self::seccomp::{
    allowed_syscalls, build_filter, build_filter_notify, install_filter, install_filter_listening,
    validate_profile, DenyAction, NetAccess, SeccompProfile,
};

/// Every failure of this module, each naming the step or the setting at fault.
#[derive(Debug, thiserror::Error)]
pub enum ConfineError {
    #[error("seccomp profile: {setting}: unknown syscall name `{name}`")]
    UnknownSyscall { setting: &'static str, name: String },
    #[error("seccomp profile: {setting}: `{name}` cannot be denied: {why}")]
    EssentialSyscall {
        setting: &'static str,
        name: String,
        why: &'static str,
    },
    #[error("seccomp profile: extra_allow: `{name}` is never allowed by maibox: {why}")]
    NeverAllowed { name: String, why: &'static str },
    #[error("seccomp profile: `{name}` is listed in both `{first}` and `{second}`")]
    Conflict {
        name: String,
        first: &'static str,
        second: &'static str,
    },
    #[error("seccomp: compiling the filter: {0}")]
    Compile(#[from] seccompiler::BackendError),
    #[error("seccomp: the filter has {0} instructions, over the kernel's limit of 4096")]
    FilterTooLarge(usize),
    #[error("seccomp: setting no_new_privs before installing the filter: {0}")]
    NoNewPrivs(std::io::Error),
    #[error("seccomp: installing the filter: {0}")]
    Install(std::io::Error),
    #[error("landlock: path `{path}`: {why}")]
    LandlockPath { path: PathBuf, why: String },
    #[error("landlock is required for this trust level but {0}")]
    LandlockRequired(String),
    #[error("landlock: {step}: {source}")]
    Landlock {
        step: &'static str,
        #[source]
        source: ::landlock::RulesetError,
    },
}

#[cfg(test)]
mod tests;
