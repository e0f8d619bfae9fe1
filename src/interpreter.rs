//! Finding a real Python interpreter and the part of the host it needs.
//!
//! The first `python3` on PATH is often a wrapper script (pyenv shims, conda
//! activation wrappers) that would drag a shell and a home directory into the
//! sandbox. We want the ELF binary and exactly the prefix it was built for.

use serde::{Deserialize, Serialize};
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
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Interpreter {
    pub path: PathBuf,
    pub prefix: PathBuf,
    /// `Some(prefix)` when the prefix is not under `/usr` and must be bound.
    pub extra_bind: Option<PathBuf>,
}

const CANDIDATES: &[&str] = &["/usr/bin/python3", "/usr/local/bin/python3"];

/// The interpreter inside a root image: `auto` means `/usr/bin/python3` there. It is
/// checked from the host before anything starts, so that an image without a usable
/// python is a refusal (exit 125) naming the image, not an exit 127 from inside the
/// sandbox: its symlinks are followed the way the sandbox will see them (an absolute
/// target resolves against the image's root, not the host's), and the file they end
/// at must be a regular file with an execute bit.
pub fn resolve_in_image(image: &Path, setting: &str) -> Result<Interpreter, InterpreterError> {
    let inside = if setting == "auto" {
        PathBuf::from("/usr/bin/python3")
    } else {
        PathBuf::from(setting)
    };
    let unusable = |why: String| {
        InterpreterError::Unusable {
        path: inside.clone(),
        why: format!(
            "{why} (build an image with `cargo xtask rootfs DIR`, or name the image's interpreter with --python)"
        ),
    }
    };
    let resolved = resolve_inside(image, &inside).map_err(&unusable)?;
    let on_host = image.join(resolved.strip_prefix("/").unwrap_or(&resolved));
    let meta = std::fs::metadata(&on_host).map_err(|e| {
        unusable(format!(
            "{} in the root image {}: {e}",
            resolved.display(),
            image.display()
        ))
    })?;
    if !meta.is_file() {
        return Err(unusable(format!(
            "{} in the root image {} is not a regular file",
            resolved.display(),
            image.display()
        )));
    }
    use std::os::unix::fs::PermissionsExt;
    if meta.permissions().mode() & 0o111 == 0 {
        return Err(unusable(format!(
            "{} in the root image {} is not executable (mode {:o})",
            resolved.display(),
            image.display(),
            meta.permissions().mode() & 0o7777
        )));
    }
    Ok(Interpreter {
        path: inside,
        prefix: PathBuf::from("/usr"),
        extra_bind: None,
    })
}

/// `path` as the sandbox will resolve it with `image` as its root: every symlink on
/// the way is followed inside the image (`..` stops at its root), at most 40 of them
/// as the kernel allows. Returns the path inside the image that names no symlink.
fn resolve_inside(image: &Path, path: &Path) -> Result<PathBuf, String> {
    use crate::rootpath::{walk, Missing, WalkError};
    let w = walk(image, path, true).map_err(|e| match e {
        WalkError::TooManyLinks => format!(
            "too many symlinks resolving {} in the root image {}",
            path.display(),
            image.display()
        ),
        WalkError::ReadLink(at, e) => {
            format!("reading the link {} in the root image: {e}", at.display())
        }
    })?;
    match w.missing {
        None => Ok(Path::new("/").join(w.path)),
        // Missing without a link on the way: the path itself is absent.
        Some(Missing { links: 0, .. }) => {
            Err(format!("not present in the root image {}", image.display()))
        }
        // The whole path the links led to, not just its first missing part.
        Some(Missing { path: missing, .. }) => Err(format!(
            "a symlink in the root image {} leads to {}, which is not present there",
            image.display(),
            missing.display()
        )),
    }
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

    /// An image whose links point where only the image has files: resolving them on
    /// the host's root would find nothing (or the wrong file).
    fn image_with(links: &[(&str, &str)], files: &[(&str, u32)]) -> tempfile::TempDir {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        for (path, mode) in files {
            let f = d.path().join(path);
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(&f, "\x7fELF").unwrap();
            std::fs::set_permissions(&f, std::fs::Permissions::from_mode(*mode)).unwrap();
        }
        for (path, target) in links {
            let l = d.path().join(path);
            std::fs::create_dir_all(l.parent().unwrap()).unwrap();
            std::os::unix::fs::symlink(target, &l).unwrap();
        }
        d
    }

    #[test]
    fn image_links_resolve_inside_the_image() {
        let d = image_with(
            &[
                ("usr/bin/python3", "/opt/maibox-only/python3.99"),
                ("usr/bin/rel", "../../opt/maibox-only/python3.99"),
                // `..` past the image's root stays at its root, as in the sandbox.
                ("usr/bin/up", "../../../../../opt/maibox-only/python3.99"),
                ("bin", "usr/bin"),
            ],
            &[("opt/maibox-only/python3.99", 0o755)],
        );
        for p in ["auto", "/usr/bin/rel", "/usr/bin/up", "/bin/python3"] {
            let i = resolve_in_image(d.path(), p).unwrap_or_else(|e| panic!("{p}: {e}"));
            assert_eq!(i.prefix, Path::new("/usr"));
        }
    }

    #[test]
    fn image_without_a_usable_python_is_refused() {
        let empty = tempfile::tempdir().unwrap();
        let e = resolve_in_image(empty.path(), "auto")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("/usr/bin/python3") && e.contains("not present in the root image"),
            "{e}"
        );
        assert!(e.contains("cargo xtask rootfs"), "{e}");
        let d = image_with(
            &[
                // Present on the host, absent from the image: must not count.
                ("usr/bin/python3", "/usr/bin/env"),
                ("usr/bin/loop", "/usr/bin/loop"),
            ],
            &[("usr/bin/noexec", 0o644), ("usr/lib/dir/x", 0o755)],
        );
        let cases = [
            ("auto", "leads to /usr/bin/env, which is not present there"),
            ("/usr/bin/noexec", "not executable (mode 644)"),
            ("/usr/lib/dir", "not a regular file"),
            ("/usr/bin/loop", "too many symlinks"),
        ];
        for (p, want) in cases {
            let e = resolve_in_image(d.path(), p).unwrap_err().to_string();
            assert!(e.contains(want), "{p}: {e}");
        }
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
