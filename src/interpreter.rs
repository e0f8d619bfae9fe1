//! Finding a real Python interpreter and the part of the host it needs.
//!
//! The first `python3` on PATH is often a wrapper script (pyenv shims, conda
//! activation wrappers) that would drag a shell and a home directory into the
//! sandbox. We want the ELF binary and exactly the prefix it was built for.

use serde::Serialize;
use std::ffi::CString;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum InterpreterError {
    #[error("no usable Python interpreter found (looked at {looked}); install python3 or set python.interpreter in the config")]
    NotFound { looked: String },
    #[error("python.interpreter {path}: {why}")]
    Unusable { path: PathBuf, why: String },
}

/// A resolved interpreter: the binary and, when it lives outside `/usr`, the
/// prefix directory that must be visible (read-only) inside the sandbox.
#[derive(Debug, Clone, Serialize)]
pub struct Interpreter {
    pub path: PathBuf,
    pub prefix: PathBuf,
    /// `Some(prefix)` when the prefix is not under `/usr` and must be bound.
    pub extra_bind: Option<PathBuf>,
}

const CANDIDATES: &[&str] = &["/usr/bin/python3", "/usr/local/bin/python3"];

/// The interpreter inside a root image: `auto` means `/usr/bin/python3` there. Only
/// its presence is checked from the host (an absolute symlink in the image resolves
/// against the image's root, not the host's, once the sandbox runs).
pub fn resolve_in_image(image: &Path, setting: &str) -> Result<Interpreter, InterpreterError> {
    let inside = if setting == "auto" {
        PathBuf::from("/usr/bin/python3")
    } else {
        PathBuf::from(setting)
    };
    let on_host = image.join(inside.strip_prefix("/").unwrap_or(&inside));
    if std::fs::symlink_metadata(&on_host).is_err() {
        return Err(InterpreterError::Unusable {
            path: inside,
            why: format!(
                "not present in the root image {} (build one with `cargo xtask rootfs DIR`)",
                image.display()
            ),
        });
    }
    Ok(Interpreter {
        path: inside,
        prefix: PathBuf::from("/usr"),
        extra_bind: None,
    })
}

pub fn resolve(setting: &str) -> Result<Interpreter, InterpreterError> {
    if setting != "auto" {
        return check(Path::new(setting)).map_err(|why| InterpreterError::Unusable {
            path: PathBuf::from(setting),
            why,
        });
    }
    let mut looked = Vec::new();
    let path_dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join("python3"))
                .collect()
        })
        .unwrap_or_default();
    for cand in CANDIDATES.iter().map(PathBuf::from).chain(path_dirs) {
        match check(&cand) {
            Ok(i) => return Ok(i),
            Err(why) => looked.push(format!("{}: {why}", cand.display())),
        }
    }
    Err(InterpreterError::NotFound {
        looked: looked.join("; "),
    })
}

fn check(path: &Path) -> Result<Interpreter, String> {
    let real = std::fs::canonicalize(path).map_err(|e| e.to_string())?;
    if !executable_by_caller(&real) {
        return Err("not executable by the calling user".into());
    }
    let mut magic = [0u8; 4];
    std::fs::File::open(&real)
        .and_then(|mut f| f.read_exact(&mut magic))
        .map_err(|e| format!("cannot read it: {e}"))?;
    if &magic != b"\x7fELF" {
        return Err("not an ELF binary (a wrapper script such as a pyenv shim?)".into());
    }
    let bin_dir = real.parent().ok_or("has no parent directory")?;
    let prefix = bin_dir
        .parent()
        .ok_or("is not inside a PREFIX/bin directory")?
        .to_path_buf();
    if !prefix.join("lib").is_dir() {
        return Err(format!("{}/lib does not exist", prefix.display()));
    }
    let extra_bind = if prefix.starts_with("/usr") {
        None
    } else {
        if prefix == Path::new("/") {
            return Err("its prefix would be the whole host root".into());
        }
        Some(prefix.clone())
    };
    Ok(Interpreter {
        path: real,
        prefix,
        extra_bind,
    })
}

fn executable_by_caller(p: &Path) -> bool {
    CString::new(p.as_os_str().as_bytes())
        .map(|c| {
            // SAFETY: c is a valid NUL-terminated string; access only reads it.
            unsafe { libc::access(c.as_ptr(), libc::X_OK | libc::R_OK) == 0 }
        })
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_finds_an_elf_python() {
        let i = resolve("auto").unwrap();
        let mut magic = [0u8; 4];
        std::fs::File::open(&i.path)
            .unwrap()
            .read_exact(&mut magic)
            .unwrap();
        assert_eq!(&magic, b"\x7fELF");
    }

    #[test]
    fn scripts_are_refused() {
        let d = tempfile::tempdir().unwrap();
        let bin = d.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::create_dir_all(d.path().join("lib")).unwrap();
        let shim = bin.join("python3");
        std::fs::write(&shim, "#!/bin/sh\nexec /usr/bin/python3 \"$@\"\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&shim, std::fs::Permissions::from_mode(0o755)).unwrap();
        let e = resolve(shim.to_str().unwrap()).unwrap_err().to_string();
        assert!(e.contains("not an ELF"), "{e}");
    }

    #[test]
    fn prefix_outside_usr_is_bound() {
        let d = tempfile::tempdir().unwrap();
        let bin = d.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::create_dir_all(d.path().join("lib")).unwrap();
        let py = bin.join("python3");
        std::fs::copy("/usr/bin/python3", &py).unwrap();
        let i = resolve(py.to_str().unwrap()).unwrap();
        assert_eq!(
            i.extra_bind.as_deref(),
            Some(std::fs::canonicalize(d.path()).unwrap().as_path())
        );
    }
}
