//! `ps`: the host pids of a container's processes (`docker top`), as JSON or
//! as ps(1)'s table.

use crate::oci::cli::{Global, ListFormat};
use crate::oci::error::{io_err, OciError};
use crate::oci::pids::container_pids;
use crate::oci::state::{Container, Status};

/// Runs `ps`.
pub fn ps(g: &Global, format: ListFormat, id: &str, ps_args: &[String]) -> Result<(), OciError> {
    let c = Container::open(&g.root, id, false)?;
    let s = c.load()?;
    let pids = if c.status(&s) == Status::Stopped {
        Vec::new()
    } else {
        container_pids(&s)
    };
    match format {
        ListFormat::Json => println!("{}", serde_json::json!(pids)),
        ListFormat::Table => ps_table(&pids, ps_args)?,
    }
    Ok(())
}

/// runc's `ps` table: ps(1) with the caller's options (default -ef), its
/// header and the lines of the container's processes.
fn ps_table(pids: &[i32], args: &[String]) -> Result<(), OciError> {
    let args: Vec<&str> = if args.is_empty() {
        vec!["-ef"]
    } else {
        args.iter().map(String::as_str).collect()
    };
    let out = std::process::Command::new("ps")
        .args(&args)
        .output()
        .map_err(io_err("run ps"))?;
    if !out.status.success() {
        return Err(OciError::Refused(format!(
            "ps {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines();
    let header = lines.next().unwrap_or("");
    let col = header
        .split_whitespace()
        .position(|h| h == "PID")
        .ok_or_else(|| OciError::Refused("ps output has no PID column".into()))?;
    println!("{header}");
    for l in lines {
        let pid = l
            .split_whitespace()
            .nth(col)
            .and_then(|p| p.parse::<i32>().ok());
        if pid.is_some_and(|p| pids.contains(&p)) {
            println!("{l}");
        }
    }
    Ok(())
}
