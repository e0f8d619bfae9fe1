//! `exec --cgroup [CONTROLLER[,CONTROLLER]:]PATH` (repeatable): the exec'd
//! process joins a group below the container's own, in every hierarchy or only
//! in those of the controllers named; `/` is the container's group itself. The
//! path stays below the container's group: `..` is refused, as runc refuses it.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use crate::cgroup::hierarchy::controllers_by_mount;

/// The sub-groups asked for: one for every hierarchy, and per controller.
#[derive(Debug, Default, PartialEq)]
pub struct SubCgroups {
    all: Option<PathBuf>,
    by_controller: BTreeMap<String, PathBuf>,
}

/// A path below the container's group, relative to it.
fn sub_path(p: &str) -> Result<PathBuf, String> {
    let mut out = PathBuf::new();
    for c in Path::new(p).components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::RootDir | Component::CurDir => {}
            Component::ParentDir | Component::Prefix(_) => {
                return Err(format!(
                    "--cgroup: {p} is not a sub cgroup path of the container's cgroup"
                ))
            }
        }
    }
    Ok(out)
}

/// Parses the `--cgroup` values.
pub fn parse(values: &[String]) -> Result<SubCgroups, String> {
    let mut s = SubCgroups::default();
    for v in values {
        match v.split_once(':') {
            None => s.all = Some(sub_path(v)?),
            Some((controllers, path)) => {
                let p = sub_path(path)?;
                for c in controllers.split(',').filter(|c| !c.is_empty()) {
                    s.by_controller.insert(c.to_string(), p.clone());
                }
            }
        }
    }
    Ok(s)
}

/// The directories the exec'd process joins: each of the container's groups
/// `dirs`, or the sub-group asked for in its hierarchy.
pub fn targets(dirs: &[PathBuf], subs: &SubCgroups) -> Result<Vec<PathBuf>, String> {
    let hs = controllers_by_mount();
    let controllers_of = |d: &Path| -> Vec<String> {
        hs.iter()
            .filter(|(m, _)| d.starts_with(m))
            .max_by_key(|(m, _)| m.as_os_str().len())
            .map(|(_, c)| c.clone())
            .unwrap_or_default()
    };
    let mine: Vec<Vec<String>> = dirs.iter().map(|d| controllers_of(d)).collect();
    for c in subs.by_controller.keys() {
        if !hs.iter().any(|(_, cs)| cs.contains(c)) {
            return Err(format!("--cgroup: unknown controller {c}"));
        }
        if !mine.iter().any(|cs| cs.contains(c)) {
            return Err(format!(
                "--cgroup: the container has no group in the {c} hierarchy"
            ));
        }
    }
    Ok(dirs
        .iter()
        .zip(&mine)
        .map(|(d, cs)| {
            let sub = cs
                .iter()
                .find_map(|c| subs.by_controller.get(c))
                .or(subs.all.as_ref());
            sub.map_or_else(|| d.clone(), |s| d.join(s))
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_stay_below_the_containers_group() {
        let s = parse(&["memory:submem".into(), "cpu,cpuacct:/sub/cpu".into()]).unwrap();
        assert_eq!(s.by_controller["memory"], PathBuf::from("submem"));
        assert_eq!(s.by_controller["cpuacct"], PathBuf::from("sub/cpu"));
        assert_eq!(parse(&["/".into()]).unwrap().all, Some(PathBuf::new()));
        for bad in ["..", "a/../../b", "memory:.."] {
            let e = parse(&[bad.into()]).unwrap_err();
            assert!(e.contains("is not a sub cgroup path"), "{bad}: {e}");
        }
    }
}
