//! A minimal Python root image assembled from the host's own interpreter.
//!
//! `maibox exec --rootfs DIR` runs on an overlay of such a directory. The image holds
//! the interpreter, its standard library, the shared libraries they load, and a tiny
//! /etc: nothing else of the host. Files are hard-linked when the image is on the
//! same filesystem as the host's (instant, no extra space), copied otherwise.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};
use std::process::Command;

#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    #[error("building the root image in {dest}: {what}: {source}")]
    Io {
        dest: PathBuf,
        what: String,
        source: std::io::Error,
    },
    #[error("building the root image: {0}")]
    Other(String),
}

pub struct Built {
    pub files: usize,
    pub python: PathBuf,
}

/// Builds an image in `dest` (which must be empty or absent) from the host python at `python`.
pub fn build(dest: &Path, python: &Path) -> Result<Built, ImageError> {
    let io = |what: String| {
        let dest = dest.to_path_buf();
        move |source| ImageError::Io { dest, what, source }
    };
    std::fs::create_dir_all(dest).map_err(io("create the image directory".into()))?;
    let real =
        std::fs::canonicalize(python).map_err(io(format!("resolve {}", python.display())))?;
    let name = real
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| ImageError::Other(format!("{} has no file name", real.display())))?
        .to_string();
    let prefix = real
        .parent()
        .and_then(Path::parent)
        .ok_or_else(|| ImageError::Other(format!("{} is not in PREFIX/bin", real.display())))?;
    let stdlib = prefix.join("lib").join(&name);
    if !stdlib.is_dir() {
        return Err(ImageError::Other(format!(
            "no standard library at {} for {}",
            stdlib.display(),
            real.display()
        )));
    }
    let mut img = Image {
        dest: dest.to_path_buf(),
        files: 0,
        done: BTreeSet::new(),
    };
    img.copy_path(&real)?;
    img.copy_tree(&stdlib)?;
    let mut elves = vec![real.clone()];
    let dynload = stdlib.join("lib-dynload");
    if let Ok(rd) = std::fs::read_dir(&dynload) {
        elves.extend(
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().map(|x| x == "so").unwrap_or(false)),
        );
    }
    for lib in shared_libraries(&elves)? {
        img.copy_path(&lib)?;
    }
    if Path::new("/etc/ld.so.cache").exists() {
        img.copy_path(Path::new("/etc/ld.so.cache"))?;
    }
    let inside_python = Path::new("/usr/bin/python3");
    let link = dest.join("usr/bin/python3");
    if std::fs::symlink_metadata(&link).is_err() {
        // An absolute target: it resolves inside the sandbox's root, where it exists.
        std::os::unix::fs::symlink(&real, &link).map_err(io("link usr/bin/python3".into()))?;
    }
    for d in ["tmp", "proc", "dev", "sandbox", "etc"] {
        std::fs::create_dir_all(dest.join(d)).map_err(io(format!("create /{d}")))?;
    }
    std::fs::write(
        dest.join("etc/passwd"),
        "root:x:0:0:root:/root:/usr/sbin/nologin\nsandbox:x:1000:1000:sandbox:/tmp:/usr/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
    )
    .map_err(io("write /etc/passwd".into()))?;
    std::fs::write(
        dest.join("etc/group"),
        "root:x:0:\nsandbox:x:1000:\nnogroup:x:65534:\n",
    )
    .map_err(io("write /etc/group".into()))?;
    std::fs::write(
        dest.join("etc/hosts"),
        "127.0.0.1\tlocalhost maibox\n::1\tlocalhost\n",
    )
    .map_err(io("write /etc/hosts".into()))?;
    Ok(Built {
        files: img.files,
        python: inside_python.to_path_buf(),
    })
}

/// Shared libraries the given ELF files load, as the dynamic loader resolves them.
/// `ldd` is the loader's own answer; parsing ELF and ld.so.conf here would be a
/// second, worse loader.
fn shared_libraries(elves: &[PathBuf]) -> Result<BTreeSet<PathBuf>, ImageError> {
    let out = Command::new("ldd")
        .args(elves)
        .output()
        .map_err(|e| ImageError::Other(format!("running ldd: {e}")))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut libs = BTreeSet::new();
    for line in text.lines() {
        let line = line.trim();
        if line.ends_with(':') {
            continue; // "FILE:" headers when ldd is given several files
        }
        let path = match line.split_once("=>") {
            Some((_, rhs)) => rhs.split_whitespace().next(),
            None => line.split_whitespace().next(),
        };
        if let Some(p) = path.filter(|p| p.starts_with('/')) {
            libs.insert(PathBuf::from(p));
        }
    }
    Ok(libs)
}

struct Image {
    dest: PathBuf,
    files: usize,
    done: BTreeSet<PathBuf>,
}

impl Image {
    fn io(&self, what: String) -> impl FnOnce(std::io::Error) -> ImageError {
        let dest = self.dest.clone();
        move |source| ImageError::Io { dest, what, source }
    }

    /// Copies `p` into the image at the same path, recreating every symlink met on the
    /// way (so `/lib64/ld-linux-x86-64.so.2` works through the same links as on the host).
    fn copy_path(&mut self, p: &Path) -> Result<(), ImageError> {
        if !self.done.insert(p.to_path_buf()) {
            return Ok(());
        }
        let mut host = PathBuf::from("/");
        let comps: Vec<Component> = p.components().collect();
        for (i, c) in comps.iter().enumerate() {
            let Component::Normal(name) = c else { continue };
            host.push(name);
            let inside = self.dest.join(host.strip_prefix("/").unwrap_or(&host));
            let meta = std::fs::symlink_metadata(&host)
                .map_err(self.io(format!("stat {}", host.display())))?;
            if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&host)
                    .map_err(self.io(format!("readlink {}", host.display())))?;
                if std::fs::symlink_metadata(&inside).is_err() {
                    if let Some(parent) = inside.parent() {
                        std::fs::create_dir_all(parent)
                            .map_err(self.io(format!("mkdir {}", parent.display())))?;
                    }
                    std::os::unix::fs::symlink(&target, &inside)
                        .map_err(self.io(format!("symlink {}", inside.display())))?;
                }
                let resolved = host.parent().unwrap_or(Path::new("/")).join(&target);
                let rest: PathBuf = comps[i + 1..].iter().collect();
                return self.copy_path(&resolved.join(rest));
            }
            if i + 1 == comps.len() {
                if meta.is_dir() {
                    std::fs::create_dir_all(&inside)
                        .map_err(self.io(format!("mkdir {}", inside.display())))?;
                } else {
                    self.copy_file(&host, &inside)?;
                }
            }
        }
        Ok(())
    }

    fn copy_file(&mut self, host: &Path, inside: &Path) -> Result<(), ImageError> {
        if std::fs::symlink_metadata(inside).is_ok() {
            return Ok(());
        }
        if let Some(parent) = inside.parent() {
            std::fs::create_dir_all(parent)
                .map_err(self.io(format!("mkdir {}", parent.display())))?;
        }
        if std::fs::hard_link(host, inside).is_err() {
            std::fs::copy(host, inside).map_err(self.io(format!("copy {}", host.display())))?;
        }
        self.files += 1;
        Ok(())
    }

    fn copy_tree(&mut self, dir: &Path) -> Result<(), ImageError> {
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            let rd = std::fs::read_dir(&d).map_err(self.io(format!("list {}", d.display())))?;
            for e in rd.flatten() {
                let p = e.path();
                let ft = match e.file_type() {
                    Ok(t) => t,
                    Err(_) => continue,
                };
                let name = e.file_name();
                if ft.is_dir() {
                    // Tests and caches are most of the stdlib's size and none of its use.
                    if name == "__pycache__" || name == "test" || name == "idlelib" {
                        continue;
                    }
                    stack.push(p);
                } else if ft.is_symlink() {
                    let inside = self.dest.join(p.strip_prefix("/").unwrap_or(&p));
                    if let Ok(t) = std::fs::read_link(&p) {
                        if let Some(parent) = inside.parent() {
                            std::fs::create_dir_all(parent)
                                .map_err(self.io(format!("mkdir {}", parent.display())))?;
                        }
                        let _ = std::os::unix::fs::symlink(t, &inside);
                    }
                } else {
                    let inside = self.dest.join(p.strip_prefix("/").unwrap_or(&p));
                    self.copy_file(&p, &inside)?;
                }
            }
        }
        Ok(())
    }
}
