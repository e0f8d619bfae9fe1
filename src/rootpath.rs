//! Resolving a path the way a process whose root is another directory would: every
//! symlink on the way is followed inside that root (an absolute target starts over
//! at it, `..` stops at it), at most 40 of them as the kernel allows. runc calls this
//! securejoin. Two users: the OCI mounts (where a missing part is fine, it is made
//! later) and the image check of `exec --rootfs` (where it is not).

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

/// The kernel's limit on symlinks followed in one lookup.
const MAX_LINKS: usize = 40;

#[derive(Debug)]
pub enum WalkError {
    /// More than 40 symlinks were followed.
    TooManyLinks,
    /// A symlink at this path (inside the root) could not be read.
    ReadLink(PathBuf, std::io::Error),
}

/// Where a walk first met a part that is not there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Missing {
    /// Symlinks followed before it.
    pub links: usize,
    /// The whole path the walk still had to go, from `/` of the root.
    pub path: PathBuf,
}

#[derive(Debug)]
pub struct Walk {
    /// The resolved path, relative to the root; parts after a missing one are
    /// taken as plain names.
    pub path: PathBuf,
    pub missing: Option<Missing>,
}

/// Walks `path` inside `root`. With `stop_at_missing`, the walk ends at the first
/// part that is not there.
pub fn walk(root: &Path, path: &Path, stop_at_missing: bool) -> Result<Walk, WalkError> {
    // A stack of the names still to walk, the next one last.
    let reversed = |p: &Path| -> Vec<OsString> {
        p.components()
            .rev()
            .filter_map(|c| match c {
                Component::Normal(n) => Some(n.to_os_string()),
                Component::ParentDir => Some("..".into()),
                _ => None,
            })
            .collect()
    };
    let mut todo = reversed(path);
    let mut at = PathBuf::new();
    let mut links = 0;
    let mut missing = None;
    while let Some(name) = todo.pop() {
        if name == ".." {
            at.pop();
            continue;
        }
        let next = at.join(&name);
        let host = root.join(&next);
        match std::fs::symlink_metadata(&host) {
            Ok(m) if m.file_type().is_symlink() => {
                links += 1;
                if links > MAX_LINKS {
                    return Err(WalkError::TooManyLinks);
                }
                let target = std::fs::read_link(&host)
                    .map_err(|e| WalkError::ReadLink(Path::new("/").join(&next), e))?;
                if target.is_absolute() {
                    at = PathBuf::new();
                }
                todo.extend(reversed(&target));
            }
            Ok(_) => at = next,
            Err(_) => {
                if missing.is_none() {
                    missing = Some(Missing {
                        links,
                        path: todo
                            .iter()
                            .rev()
                            .fold(Path::new("/").join(&next), |p, n| p.join(n)),
                    });
                    if stop_at_missing {
                        return Ok(Walk {
                            path: next,
                            missing,
                        });
                    }
                }
                at = next;
            }
        }
    }
    Ok(Walk { path: at, missing })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn links_stay_inside_the_root_and_missing_parts_are_reported() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        std::fs::create_dir_all(root.join("usr/bin")).unwrap();
        std::fs::write(root.join("usr/bin/python3.11"), "").unwrap();
        symlink("python3.11", root.join("usr/bin/python3")).unwrap();
        symlink("/usr/bin", root.join("bin")).unwrap();
        symlink("/nowhere/x", root.join("dangling")).unwrap();
        symlink("loop", root.join("loop")).unwrap();

        let w = walk(root, Path::new("/bin/python3"), true).unwrap();
        assert_eq!(w.path, Path::new("usr/bin/python3.11"));
        assert_eq!(w.missing, None);
        // `..` stops at the root, and after a link goes up from where it led.
        let w = walk(root, Path::new("/../../bin/../bin/python3.11"), true).unwrap();
        assert_eq!(w.path, Path::new("usr/bin/python3.11"));

        let w = walk(root, Path::new("/usr/lib/x"), true).unwrap();
        let m = w.missing.unwrap();
        assert_eq!((m.links, m.path), (0, PathBuf::from("/usr/lib/x")));
        let w = walk(root, Path::new("/dangling/y"), true).unwrap();
        let m = w.missing.unwrap();
        assert_eq!((m.links, m.path), (1, PathBuf::from("/nowhere/x/y")));
        // Without stopping, the rest is taken as plain names.
        let w = walk(root, Path::new("/dangling/y"), false).unwrap();
        assert_eq!(w.path, Path::new("nowhere/x/y"));

        assert!(matches!(
            walk(root, Path::new("/loop"), false),
            Err(WalkError::TooManyLinks)
        ));
    }
}
