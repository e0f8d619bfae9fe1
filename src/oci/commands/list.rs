//! `list`: the containers under `--root`, as runc's table (`ID PID STATUS
//! BUNDLE CREATED OWNER`), ids only (`-q`), or JSON in runc's field order, which
//! tools match on.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::oci::cli::{Global, ListFormat};
use crate::oci::state::{self, Container, Saved, Status, OCI_VERSION};

/// One container in `list --format json`.
#[derive(Serialize)]
struct Listed<'a> {
    #[serde(rename = "ociVersion")]
    oci_version: &'static str,
    id: &'a str,
    /// 0 once stopped.
    pid: i32,
    status: Status,
    bundle: &'a Path,
    rootfs: PathBuf,
    created: &'a str,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    annotations: &'a BTreeMap<String, String>,
    owner: String,
}

/// The owner's user name, or the uid where it has none.
fn owner_name(uid: u32) -> String {
    nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid))
        .ok()
        .flatten()
        .map_or_else(|| uid.to_string(), |u| u.name)
}

fn listed(s: &Saved, status: Status) -> Listed<'_> {
    Listed {
        oci_version: OCI_VERSION,
        id: &s.id,
        pid: if status == Status::Stopped { 0 } else { s.pid },
        status,
        bundle: &s.bundle,
        rootfs: s.bundle.join("rootfs"),
        created: &s.created,
        annotations: &s.annotations,
        owner: owner_name(s.owner),
    }
}

/// Columns padded with spaces, as runc's table output (tools split on runs of
/// blanks).
fn print_columns(rows: &[Vec<String>]) {
    let n = rows.iter().map(Vec::len).max().unwrap_or(0);
    let width: Vec<usize> = (0..n)
        .map(|i| {
            rows.iter()
                .filter_map(|r| r.get(i))
                .map(String::len)
                .max()
                .unwrap_or(0)
        })
        .collect();
    for r in rows {
        let line: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(i, c)| {
                if i + 1 == r.len() {
                    c.clone()
                } else {
                    format!("{c:<w$}", w = width[i])
                }
            })
            .collect();
        println!("{}", line.join("   "));
    }
}

pub fn list(g: &Global, format: ListFormat, quiet: bool) {
    let mut rows = Vec::new();
    for id in state::list(&g.root) {
        let Ok(c) = Container::open(&g.root, &id, false) else {
            continue;
        };
        let Ok(s) = c.load() else { continue };
        let status = c.status(&s);
        rows.push((s, status));
    }
    if quiet {
        for (s, _) in &rows {
            println!("{}", s.id);
        }
        return;
    }
    let all: Vec<Listed> = rows.iter().map(|(s, st)| listed(s, *st)).collect();
    match format {
        ListFormat::Json => {
            println!("{}", serde_json::to_string(&all).unwrap_or_default());
        }
        ListFormat::Table => {
            let mut table = vec![["ID", "PID", "STATUS", "BUNDLE", "CREATED", "OWNER"]
                .map(String::from)
                .to_vec()];
            for l in &all {
                table.push(vec![
                    l.id.to_string(),
                    l.pid.to_string(),
                    l.status.to_string(),
                    l.bundle.display().to_string(),
                    l.created.to_string(),
                    l.owner.clone(),
                ]);
            }
            print_columns(&table);
        }
    }
}
