//! `[audit]` section of the maibox config.

use std::path::PathBuf;

use serde::Deserialize;

use super::error::AuditError;

/// Audit settings. Every field has a default so an empty `[audit]` table works.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct AuditConfig {
    /// Log directory. `None`: `/var/lib/maibox/audit` as root,
    /// `$XDG_STATE_HOME/maibox/audit` (or `~/.local/state/maibox/audit`) otherwise.
    pub dir: Option<PathBuf>,
    /// When true (the default) a run must be refused if the log cannot be
    /// opened or written; when false the caller may run with a warning.
    pub required: bool,
    /// Rotate the active segment once it reaches this size (0 = never by size).
    pub rotate_bytes: u64,
    /// Rotate when the UTC day of the active segment's first record is over.
    pub rotate_daily: bool,
    /// Delete rotated segments older than this many days (0 = keep forever).
    pub retention_days: u32,
    /// Cap on the unified diff stored in a run-start record.
    pub max_diff_bytes: usize,
    /// Scripts larger than this are not kept in the side store, so the next
    /// run of the same path gets no diff (only the hash changes are visible).
    pub max_source_bytes: usize,
    /// Compress rotated segments with gzip.
    pub compress: bool,
}

impl Default for AuditConfig {
    fn default() -> Self {
        AuditConfig {
            dir: None,
            required: true,
            rotate_bytes: 16 * 1024 * 1024,
            rotate_daily: true,
            retention_days: 30,
            max_diff_bytes: 64 * 1024,
            max_source_bytes: 1024 * 1024,
            compress: true,
        }
    }
}

impl AuditConfig {
    /// The directory the log lives in, applying the root/rootless defaults.
    pub fn resolved_dir(&self) -> Result<PathBuf, AuditError> {
        if let Some(d) = &self.dir {
            return Ok(d.clone());
        }
        if nix::unistd::geteuid().is_root() {
            return Ok(PathBuf::from("/var/lib/maibox/audit"));
        }
        default_user_dir(std::env::var_os("XDG_STATE_HOME"), std::env::var_os("HOME"))
    }
}

fn default_user_dir(
    xdg_state: Option<std::ffi::OsString>,
    home: Option<std::ffi::OsString>,
) -> Result<PathBuf, AuditError> {
    // The XDG spec says relative values must be ignored.
    if let Some(x) = xdg_state.filter(|x| PathBuf::from(x).is_absolute()) {
        return Ok(PathBuf::from(x).join("maibox/audit"));
    }
    match home.filter(|h| PathBuf::from(h).is_absolute()) {
        Some(h) => Ok(PathBuf::from(h).join(".local/state/maibox/audit")),
        None => Err(AuditError::NoDir(
            "neither $XDG_STATE_HOME nor $HOME is set to an absolute path; set audit.dir".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_unknown_fields() {
        let c: AuditConfig = serde_json::from_str("{}").unwrap();
        assert_eq!(c, AuditConfig::default());
        assert!(c.required);
        assert_eq!(c.retention_days, 30);
        let e = serde_json::from_str::<AuditConfig>(r#"{"retention":3}"#);
        assert!(e.is_err());
        let c: AuditConfig = serde_json::from_str(r#"{"required":false,"dir":"/x"}"#).unwrap();
        assert!(!c.required);
        assert_eq!(c.resolved_dir().unwrap(), PathBuf::from("/x"));
    }

    #[test]
    fn rootless_dir_resolution() {
        let d = default_user_dir(Some("/s".into()), Some("/h".into())).unwrap();
        assert_eq!(d, PathBuf::from("/s/maibox/audit"));
        let d = default_user_dir(Some("rel".into()), Some("/h".into())).unwrap();
        assert_eq!(d, PathBuf::from("/h/.local/state/maibox/audit"));
        assert!(matches!(
            default_user_dir(None, None),
            Err(AuditError::NoDir(_))
        ));
    }
}
