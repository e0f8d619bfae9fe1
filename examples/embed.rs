//! Embeds maibox in a Rust program: runs a Python snippet in a fresh sandbox at the
//! `untrusted` level and prints its output and report.
//!
//!     cargo run --example embed

use maibox::{Config, Sandbox, TrustLevel};
use std::time::Duration;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (config, _) = Config::load(None)?;
    let sandbox = Sandbox::new(config)
        .trust(TrustLevel::Untrusted)
        .timeout(Duration::from_secs(10));
    let run = sandbox.run_code("import statistics\nprint(statistics.mean([1, 2, 3, 4]))")?;
    print!("{}", String::from_utf8_lossy(&run.stdout));
    println!("{}", serde_json::to_string_pretty(&run.report)?);
    Ok(())
}
