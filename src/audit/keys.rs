//! Signing key management.
//!
//! `audit.key` holds the 32-byte Ed25519 seed as 64 hex digits and a newline,
//! mode 0600, owned by the writer. `audit.pub` holds the public key the same
//! way and is what `verify` checks against. Anyone able to replace `audit.pub`
//! *and* re-sign every record could forge a consistent log, so the fingerprint
//! (`key_fingerprint`) should be recorded somewhere else and passed to
//! `verify_pinned`.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use ed25519_dalek::{Signature, Signer, SigningKey, Verifier, VerifyingKey};

use super::error::AuditError;
use super::record::{hex, sha256_hex, unhex};

pub const KEY_FILE: &str = "audit.key";
pub const PUB_FILE: &str = "audit.pub";

pub fn key_path(dir: &Path) -> PathBuf {
    dir.join(KEY_FILE)
}

pub fn pub_path(dir: &Path) -> PathBuf {
    dir.join(PUB_FILE)
}

/// `SHA256:<hex of sha256(public key bytes)>`, printed by `maibox audit key`.
pub fn fingerprint_of(vk: &VerifyingKey) -> String {
    format!("SHA256:{}", sha256_hex(vk.as_bytes()))
}

/// Fingerprint of the public key stored in `dir`.
pub fn key_fingerprint(dir: &Path) -> Result<String, AuditError> {
    Ok(fingerprint_of(&load_public(dir)?))
}

fn parse_hex32(path: &Path, text: &str) -> Result<[u8; 32], AuditError> {
    let bytes = unhex(text.trim_end_matches('\n')).ok_or_else(|| AuditError::KeyInvalid {
        path: path.to_path_buf(),
        reason: "expected 64 lowercase hex digits".into(),
    })?;
    bytes.try_into().map_err(|_| AuditError::KeyInvalid {
        path: path.to_path_buf(),
        reason: "expected 32 bytes".into(),
    })
}

pub fn load_public(dir: &Path) -> Result<VerifyingKey, AuditError> {
    let p = pub_path(dir);
    let text = fs::read_to_string(&p).map_err(AuditError::io("read public key", &p))?;
    let b = parse_hex32(&p, &text)?;
    VerifyingKey::from_bytes(&b).map_err(|e| AuditError::KeyInvalid {
        path: p,
        reason: e.to_string(),
    })
}

/// Loads the signing key, checking that only its owner (the writer) can read it.
pub fn load_signing(dir: &Path) -> Result<SigningKey, AuditError> {
    let p = key_path(dir);
    let meta = fs::metadata(&p).map_err(AuditError::io("stat signing key", &p))?;
    let euid = nix::unistd::geteuid().as_raw();
    if meta.uid() != euid {
        return Err(AuditError::KeyOwner {
            path: p,
            owner: meta.uid(),
            euid,
        });
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(AuditError::KeyPermissions { path: p, mode });
    }
    let text = fs::read_to_string(&p).map_err(AuditError::io("read signing key", &p))?;
    let seed = parse_hex32(&p, &text)?;
    Ok(SigningKey::from_bytes(&seed))
}

/// Creates a new key pair. Must be called with the writer lock held; the key
/// is written to a temporary file first so a crash never leaves a short key.
pub fn create(dir: &Path) -> Result<SigningKey, AuditError> {
    let mut seed = [0u8; 32];
    getrandom::getrandom(&mut seed).map_err(|e| AuditError::Io {
        step: "generate signing key",
        path: key_path(dir),
        source: std::io::Error::other(e.to_string()),
    })?;
    let sk = SigningKey::from_bytes(&seed);
    write_atomic(dir, KEY_FILE, 0o600, &format!("{}\n", hex(&seed)))?;
    write_public(dir, &sk.verifying_key())?;
    Ok(sk)
}

pub fn write_public(dir: &Path, vk: &VerifyingKey) -> Result<(), AuditError> {
    write_atomic(dir, PUB_FILE, 0o644, &format!("{}\n", hex(vk.as_bytes())))
}

fn write_atomic(dir: &Path, name: &str, mode: u32, content: &str) -> Result<(), AuditError> {
    let (tmp, dst) = super::segments::write_synced_tmp(
        dir,
        name,
        mode,
        content.as_bytes(),
        ["create key file", "write key file"],
    )?;
    fs::rename(&tmp, &dst).map_err(AuditError::io("install key file", &dst))?;
    super::segments::sync_dir(dir)
}

pub fn sign_hash(sk: &SigningKey, hash: &[u8; 32]) -> String {
    hex(&sk.sign(hash).to_bytes())
}

pub fn check_sig(vk: &VerifyingKey, hash: &[u8; 32], sig_hex: &str) -> bool {
    let Some(bytes) = unhex(sig_hex) else {
        return false;
    };
    let Ok(arr) = <[u8; 64]>::try_from(bytes.as_slice()) else {
        return false;
    };
    vk.verify(hash, &Signature::from_bytes(&arr)).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn create_load_and_fingerprint() {
        let d = tempfile::tempdir().unwrap();
        let sk = create(d.path()).unwrap();
        let mode = fs::metadata(key_path(d.path()))
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o600);
        let sk2 = load_signing(d.path()).unwrap();
        assert_eq!(sk.to_bytes(), sk2.to_bytes());
        let fp = key_fingerprint(d.path()).unwrap();
        assert!(fp.starts_with("SHA256:") && fp.len() == 7 + 64, "{fp}");
        let h = [7u8; 32];
        let sig = sign_hash(&sk, &h);
        assert!(check_sig(&sk.verifying_key(), &h, &sig));
        assert!(!check_sig(&sk.verifying_key(), &[8u8; 32], &sig));
        assert!(!check_sig(&sk.verifying_key(), &h, "00"));
    }

    #[test]
    fn rejects_readable_or_garbage_key() {
        let d = tempfile::tempdir().unwrap();
        create(d.path()).unwrap();
        let kp = key_path(d.path());
        fs::set_permissions(&kp, fs::Permissions::from_mode(0o644)).unwrap();
        assert!(matches!(
            load_signing(d.path()),
            Err(AuditError::KeyPermissions { mode: 0o644, .. })
        ));
        fs::set_permissions(&kp, fs::Permissions::from_mode(0o600)).unwrap();
        fs::write(&kp, "not hex\n").unwrap();
        let e = load_signing(d.path()).unwrap_err();
        assert!(matches!(e, AuditError::KeyInvalid { .. }), "{e}");
        assert!(e.to_string().contains("audit.key"), "{e}");
    }
}
