//! `state`: a container's state as the runtime spec defines it, as JSON.

use crate::oci::cli::Global;
use crate::oci::error::OciError;
use crate::oci::state::{state_json, Container};

/// Runs `state`.
pub fn state(g: &Global, id: &str) -> Result<(), OciError> {
    let c = Container::open(&g.root, id, false)?;
    let s = c.load()?;
    println!(
        "{}",
        serde_json::to_string_pretty(&state_json(&s, c.status(&s))).unwrap_or_default()
    );
    Ok(())
}
