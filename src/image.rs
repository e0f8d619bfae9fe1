//! A minimal Python root image, and the recipe it is made from.
//!
//! `maibox exec --rootfs DIR` runs on an overlay of such a directory. The recipe lives
//! in the repository's `rootfs/` directory as data (the Debian packages, the paths to
//! prune, the /etc entries) and is compiled in here, so that every builder reads the
//! same one. Two builders use it: `cargo xtask rootfs --from debootstrap` installs the
//! packages with debootstrap, then calls [`prune`] and [`finish`]; [`build`] assembles
//! an image from the host's own interpreter: the interpreter, its standard library, the
//! shared libraries they load, and a tiny /etc: nothing else of the host. Its files are
//! hard-linked when the image is on the same filesystem as the host's (instant, no
//! extra space), copied otherwise.

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

/// The image recipe of `rootfs/`, parsed.
pub struct Recipe {
    /// Debian packages installed on top of debootstrap's minbase (`rootfs/packages.txt`).
    pub packages: Vec<String>,
    /// Paths removed from the image, as patterns relative to its root (`rootfs/prune.txt`).
    pub prune: Vec<String>,
    /// Lines merged into the image's /etc files (`rootfs/etc/`): file name, lines.
    pub etc: Vec<(&'static str, Vec<&'static str>)>,
    /// Host paths the host variant copies too (`rootfs/host-paths.txt`).
    pub host_paths: Vec<PathBuf>,
}

const PACKAGES: &str = include_str!("../rootfs/packages.txt");
const PRUNE: &str = include_str!("../rootfs/prune.txt");
const HOST_PATHS: &str = include_str!("../rootfs/host-paths.txt");
const ETC: &[(&str, &str)] = &[
    ("passwd", include_str!("../rootfs/etc/passwd")),
    ("group", include_str!("../rootfs/etc/group")),
    ("hosts", include_str!("../rootfs/etc/hosts")),
];
/// Mount points the sandbox's engine needs in any root image.
const MOUNT_POINTS: &[&str] = &["tmp", "proc", "dev", "sandbox", "etc"];

/// Lines of a recipe list, without comments and blank lines.
fn entries(text: &str) -> impl Iterator<Item = &str> {
    text.lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
}

/// The recipe of the repository's `rootfs/` directory.
pub fn recipe() -> Recipe {
    Recipe {
        packages: entries(PACKAGES)
            .filter_map(|l| l.split_whitespace().next())
            .map(str::to_string)
            .collect(),
        prune: entries(PRUNE).map(str::to_string).collect(),
        etc: ETC
            .iter()
            .map(|(name, text)| (*name, text.lines().filter(|l| !l.is_empty()).collect()))
            .collect(),
        host_paths: entries(HOST_PATHS).map(PathBuf::from).collect(),
    }
}

impl Recipe {
    /// Whether `rel` (a path relative to the image's root) is pruned by the recipe.
    pub fn prunes(&self, rel: &Path) -> bool {
        let names: Vec<&str> = rel
            .components()
            .filter_map(|c| match c {
                Component::Normal(n) => n.to_str(),
                _ => None,
            })
            .collect();
        self.prune.iter().any(|p| {
            let pat: Vec<&str> = p.split('/').filter(|c| !c.is_empty()).collect();
            path_matches(&pat, &names)
        })
    }
}

/// Component-wise glob: `**` matches any number of components, other components
/// match one name each with `*` and `?`.
fn path_matches(pat: &[&str], names: &[&str]) -> bool {
    match pat.split_first() {
        None => names.is_empty(),
        Some((&"**", rest)) => (0..=names.len()).any(|i| path_matches(rest, &names[i..])),
        Some((p, rest)) => match names.split_first() {
            Some((n, more)) => name_matches(p.as_bytes(), n.as_bytes()) && path_matches(rest, more),
            None => false,
        },
    }
}

fn name_matches(p: &[u8], n: &[u8]) -> bool {
    match (p.split_first(), n.split_first()) {
        (None, None) => true,
        (Some((b'*', rest)), _) => (0..=n.len()).any(|i| name_matches(rest, &n[i..])),
        (Some((b'?', rest)), Some((_, more))) => name_matches(rest, more),
        (Some((a, rest)), Some((b, more))) => a == b && name_matches(rest, more),
        _ => false,
    }
}

/// What [`prune`] removed.
pub struct Pruned {
    pub paths: usize,
    pub bytes: u64,
}

/// Removes the recipe's prune paths from the image in `dest`. The walk never leaves the
/// image's filesystem nor follows a symlink: a mount left inside it (a builder's /proc)
/// or a link to the host's root is not emptied.
pub fn prune(dest: &Path, recipe: &Recipe) -> Result<Pruned, ImageError> {
    use std::os::unix::fs::MetadataExt;
    let io = |what: String| {
        let dest = dest.to_path_buf();
        move |source| ImageError::Io { dest, what, source }
    };
    let dev = std::fs::symlink_metadata(dest)
        .map_err(io("stat the image".into()))?
        .dev();
    let mut out = Pruned { paths: 0, bytes: 0 };
    let mut stack = vec![dest.to_path_buf()];
    while let Some(d) = stack.pop() {
        let rd = std::fs::read_dir(&d).map_err(io(format!("list {}", d.display())))?;
        for e in rd {
            let e = e.map_err(io(format!("list {}", d.display())))?;
            let p = e.path();
            let meta =
                std::fs::symlink_metadata(&p).map_err(io(format!("stat {}", p.display())))?;
            if meta.dev() != dev {
                continue;
            }
            let rel = p.strip_prefix(dest).unwrap_or(&p);
            if recipe.prunes(rel) {
                out.paths += 1;
                if meta.is_dir() {
                    out.bytes += disk_usage(&p)?;
                    std::fs::remove_dir_all(&p).map_err(io(format!("remove {}", p.display())))?;
                } else {
                    out.bytes += meta.blocks() * 512;
                    std::fs::remove_file(&p).map_err(io(format!("remove {}", p.display())))?;
                }
            } else if meta.is_dir() {
                stack.push(p);
            }
        }
    }
    Ok(out)
}

/// Bytes the image takes on disk, as `du` counts them: allocated blocks, a file with
/// several links once, nothing on another filesystem.
pub fn disk_usage(dir: &Path) -> Result<u64, ImageError> {
    use std::os::unix::fs::MetadataExt;
    let io = |what: String| {
        let dest = dir.to_path_buf();
        move |source| ImageError::Io { dest, what, source }
    };
    let top = std::fs::symlink_metadata(dir).map_err(io("stat".into()))?;
    let mut seen = BTreeSet::new();
    let mut total = top.blocks() * 512;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).map_err(io(format!("list {}", d.display())))? {
            let e = e.map_err(io(format!("list {}", d.display())))?;
            let meta = std::fs::symlink_metadata(e.path())
                .map_err(io(format!("stat {}", e.path().display())))?;
            if meta.dev() != top.dev()
                || (meta.nlink() > 1 && !meta.is_dir() && !seen.insert(meta.ino()))
            {
                continue;
            }
            total += meta.blocks() * 512;
            if meta.is_dir() {
                stack.push(e.path());
            }
        }
    }
    Ok(total)
}

/// What every image needs besides its packages: the engine's mount points, and the
/// recipe's /etc entries (the sandbox user among them). A line of `rootfs/etc/F` is
/// added to the image's `/etc/F` unless a line with the same first field (the name
/// before `:`, or the address in hosts) is there already: a Debian image keeps its own
/// system users, a host image gets the recipe's.
pub fn finish(dest: &Path, recipe: &Recipe) -> Result<(), ImageError> {
    let io = |what: String| {
        let dest = dest.to_path_buf();
        move |source| ImageError::Io { dest, what, source }
    };
    for d in MOUNT_POINTS {
        std::fs::create_dir_all(dest.join(d)).map_err(io(format!("create /{d}")))?;
    }
    let key = |l: &str| -> String {
        l.split(|c: char| c == ':' || c.is_whitespace())
            .next()
            .unwrap_or("")
            .to_string()
    };
    for (name, lines) in &recipe.etc {
        let file = dest.join("etc").join(name);
        // An image's /etc file may be a symlink (to the host's, say): never write through it.
        let existing = match std::fs::symlink_metadata(&file) {
            Ok(m) if m.is_file() => {
                std::fs::read_to_string(&file).map_err(io(format!("read /etc/{name}")))?
            }
            Ok(_) => {
                std::fs::remove_file(&file).map_err(io(format!("replace /etc/{name}")))?;
                String::new()
            }
            Err(_) => String::new(),
        };
        let have: BTreeSet<String> = existing.lines().map(key).collect();
        let mut text = existing.clone();
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        for l in lines.iter().filter(|l| !have.contains(&key(l))) {
            text.push_str(l);
            text.push('\n');
        }
        if text != existing {
            std::fs::write(&file, text).map_err(io(format!("write /etc/{name}")))?;
        }
    }
    Ok(())
}

pub struct Built {
    pub files: usize,
    pub python: PathBuf,
}

/// The standard library of the interpreter at `real` (a resolved path): for
/// PREFIX/bin/pythonX.Y, PREFIX/lib/pythonX.Y, which must exist.
fn stdlib_of(real: &Path) -> Result<PathBuf, ImageError> {
    let name = real
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| ImageError::Other(format!("{} has no file name", real.display())))?;
    let prefix = real
        .parent()
        .and_then(Path::parent)
        .ok_or_else(|| ImageError::Other(format!("{} is not in PREFIX/bin", real.display())))?;
    let stdlib = prefix.join("lib").join(name);
    if !stdlib.is_dir() {
        return Err(ImageError::Other(format!(
            "no standard library at {} for {}",
            stdlib.display(),
            real.display()
        )));
    }
    Ok(stdlib)
}

/// The standard library's extension modules (lib-dynload/*.so) the recipe keeps:
/// their shared libraries go into the image too.
fn extension_modules(stdlib: &Path, recipe: &Recipe) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(stdlib.join("lib-dynload")) else {
        return Vec::new();
    };
    rd.flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().map(|x| x == "so").unwrap_or(false))
        .filter(|p| !recipe.prunes(p.strip_prefix("/").unwrap_or(p)))
        .collect()
}

/// Builds an image in `dest` (which must be empty or absent) from the host python at
/// `python`, leaving out what the recipe prunes.
pub fn build(dest: &Path, python: &Path) -> Result<Built, ImageError> {
    let recipe = recipe();
    let io = |what: String| {
        let dest = dest.to_path_buf();
        move |source| ImageError::Io { dest, what, source }
    };
    std::fs::create_dir_all(dest).map_err(io("create the image directory".into()))?;
    let real =
        std::fs::canonicalize(python).map_err(io(format!("resolve {}", python.display())))?;
    let stdlib = stdlib_of(&real)?;
    let mut img = Image {
        dest: dest.to_path_buf(),
        files: 0,
        done: BTreeSet::new(),
        recipe: &recipe,
    };
    img.copy_path(&real)?;
    img.copy_tree(&stdlib)?;
    let mut elves = vec![real.clone()];
    elves.extend(extension_modules(&stdlib, &recipe));
    for lib in shared_libraries(&elves)? {
        img.copy_path(&lib)?;
    }
    if Path::new("/etc/ld.so.cache").exists() {
        img.copy_path(Path::new("/etc/ld.so.cache"))?;
    }
    for p in &recipe.host_paths {
        if std::fs::symlink_metadata(p).is_err() {
            continue;
        }
        img.copy_path(p)?;
        if p.is_dir() {
            let real = std::fs::canonicalize(p).map_err(io(format!("resolve {}", p.display())))?;
            img.copy_tree(&real)?;
        }
    }
    let inside_python = Path::new("/usr/bin/python3");
    let link = dest.join("usr/bin/python3");
    if std::fs::symlink_metadata(&link).is_err() {
        // An absolute target: it resolves inside the sandbox's root, where it exists.
        std::os::unix::fs::symlink(&real, &link).map_err(io("link usr/bin/python3".into()))?;
    }
    finish(dest, &recipe)?;
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

struct Image<'r> {
    dest: PathBuf,
    files: usize,
    done: BTreeSet<PathBuf>,
    recipe: &'r Recipe,
}

impl Image<'_> {
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
            // Python checks a cached .pyc against its source's mtime: a copy that got a
            // new mtime would make every cache stale, and every import compile again.
            if let Ok(t) = std::fs::metadata(host).and_then(|m| m.modified()) {
                // futimens needs ownership, not write access: a read-only copy works.
                let _ = std::fs::File::open(inside).and_then(|f| f.set_modified(t));
            }
        }
        self.files += 1;
        Ok(())
    }

    fn copy_tree(&mut self, dir: &Path) -> Result<(), ImageError> {
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            // A directory removed since its parent was listed (a package being
            // installed or removed meanwhile) is simply not part of the image.
            let rd = match std::fs::read_dir(&d) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                r => r.map_err(self.io(format!("list {}", d.display())))?,
            };
            for e in rd.flatten() {
                let p = e.path();
                let ft = match e.file_type() {
                    Ok(t) => t,
                    Err(_) => continue,
                };
                if self.recipe.prunes(p.strip_prefix("/").unwrap_or(&p)) {
                    continue;
                }
                if ft.is_dir() {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recipe_lists_parse() {
        let r = recipe();
        assert!(
            r.packages.iter().any(|p| p == "python3"),
            "{:?}",
            r.packages
        );
        // Comments and the commented-out optional packages are not packages.
        assert!(r
            .packages
            .iter()
            .all(|p| !p.contains('#') && !p.contains(' ')));
        assert!(!r.packages.iter().any(|p| p == "ca-certificates"));
        assert!(r.prune.iter().any(|p| p == "usr/share/doc"));
        assert!(r.etc.iter().any(
            |(n, l)| *n == "passwd" && l.iter().any(|l| l.starts_with("sandbox:x:1000:1000:"))
        ));
    }

    #[test]
    fn prune_patterns() {
        let r = Recipe {
            packages: vec![],
            prune: vec![
                "usr/share/doc".into(),
                "var/cache/apt/*.bin".into(),
                "**/python3.*/test".into(),
                "a/?b".into(),
            ],
            etc: vec![],
            host_paths: vec![],
        };
        let yes = [
            "usr/share/doc",
            "var/cache/apt/pkgcache.bin",
            "usr/lib/python3.11/test",
            "root/.pyenv/versions/3.12.1/lib/python3.12/test",
            "a/xb",
        ];
        let no = [
            "usr/share/docs",
            "usr/share",
            "usr/share/doc2/x",
            "var/cache/apt/archives",
            "var/cache/apt/x.bin.old",
            "usr/lib/python3.11/test.py",
            "usr/lib/python3.11/unittest",
            "usr/lib/python3/test",
            "a/b",
            "a/xxb",
        ];
        for p in yes {
            assert!(r.prunes(Path::new(p)), "{p} should be pruned");
        }
        for p in no {
            assert!(!r.prunes(Path::new(p)), "{p} should stay");
        }
    }

    #[test]
    fn prune_removes_matches_and_nothing_through_links() {
        let d = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("keep"), "x").unwrap();
        let img = d.path();
        std::fs::create_dir_all(img.join("usr/share/doc/pkg")).unwrap();
        std::fs::write(img.join("usr/share/doc/pkg/copyright"), vec![0u8; 10_000]).unwrap();
        std::fs::create_dir_all(img.join("usr/bin")).unwrap();
        std::fs::write(img.join("usr/bin/python3"), "x").unwrap();
        std::fs::create_dir_all(img.join("var/cache/apt")).unwrap();
        // A link named like a pruned directory: the link goes, its target stays.
        std::os::unix::fs::symlink(outside.path(), img.join("var/cache/apt/x.bin")).unwrap();
        let r = Recipe {
            packages: vec![],
            prune: vec!["usr/share/doc".into(), "var/cache/apt/*.bin".into()],
            etc: vec![],
            host_paths: vec![],
        };
        let p = prune(img, &r).unwrap();
        assert_eq!(p.paths, 2);
        assert!(p.bytes >= 10_000, "{}", p.bytes);
        assert!(!img.join("usr/share/doc").exists());
        assert!(img.join("usr/share").is_dir());
        assert!(img.join("usr/bin/python3").is_file());
        assert!(std::fs::symlink_metadata(img.join("var/cache/apt/x.bin")).is_err());
        assert!(outside.path().join("keep").is_file());
    }

    #[test]
    fn finish_merges_etc_without_replacing_entries() {
        let d = tempfile::tempdir().unwrap();
        let img = d.path();
        std::fs::create_dir_all(img.join("etc")).unwrap();
        std::fs::write(
            img.join("etc/passwd"),
            "root:x:0:0:root:/root:/bin/bash\n_apt:x:42:65534::/nonexistent:/usr/sbin/nologin",
        )
        .unwrap();
        // A link to the host's file must be replaced, never written through.
        let host = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(host.path(), "10.0.0.1 host-only\n").unwrap();
        std::os::unix::fs::symlink(host.path(), img.join("etc/hosts")).unwrap();
        finish(img, &recipe()).unwrap();
        let passwd = std::fs::read_to_string(img.join("etc/passwd")).unwrap();
        let lines: Vec<&str> = passwd.lines().collect();
        assert_eq!(lines[0], "root:x:0:0:root:/root:/bin/bash");
        assert_eq!(lines[1], "_apt:x:42:65534::/nonexistent:/usr/sbin/nologin");
        assert_eq!(lines.iter().filter(|l| l.starts_with("root:")).count(), 1);
        assert!(
            lines.iter().any(|l| l.starts_with("sandbox:x:1000:1000:")),
            "{passwd}"
        );
        assert_eq!(
            std::fs::read_to_string(host.path()).unwrap(),
            "10.0.0.1 host-only\n"
        );
        let hosts = std::fs::read_to_string(img.join("etc/hosts")).unwrap();
        assert!(hosts.starts_with("127.0.0.1\tlocalhost maibox"), "{hosts}");
        assert!(std::fs::read_to_string(img.join("etc/group"))
            .unwrap()
            .contains("sandbox:x:1000:"));
        for m in MOUNT_POINTS {
            assert!(img.join(m).is_dir(), "{m}");
        }
        // Idempotent: a second pass adds nothing.
        finish(img, &recipe()).unwrap();
        assert_eq!(
            std::fs::read_to_string(img.join("etc/passwd")).unwrap(),
            passwd
        );
    }

    #[test]
    fn host_image_leaves_out_pruned_paths_and_keeps_bytecode() {
        let d = tempfile::tempdir().unwrap();
        let img = d.path().join("img");
        let b = build(&img, Path::new("/usr/bin/python3")).unwrap();
        let real = std::fs::canonicalize("/usr/bin/python3").unwrap();
        let stdlib = Path::new("/usr/lib").join(real.file_name().unwrap());
        let inside = img.join(stdlib.strip_prefix("/").unwrap());
        assert!(inside.join("json/__init__.py").is_file());
        if stdlib.join("test").is_dir() {
            assert!(!inside.join("test").exists());
        }
        if stdlib.join("__pycache__").is_dir() {
            assert!(inside.join("__pycache__").is_dir());
        }
        assert!(b.files > 100);
        // The recipe's host paths come along (the time zone database, for zoneinfo).
        if Path::new("/usr/share/zoneinfo/UTC").exists() {
            assert!(std::fs::symlink_metadata(img.join("usr/share/zoneinfo/UTC")).is_ok());
        }
        assert!(disk_usage(&img).unwrap() > 1_000_000);
    }
}
