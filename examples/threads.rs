//! Makes sandboxes from several threads of one program at once, as a server or an
//! embedder that serves many requests does, and counts the failures by reason.
//!
//!     cargo run --release --example threads -- [cold|warm] THREADS PER_THREAD
//!
//! `cold` runs `print(1)` in fresh sandboxes and checks its output; `warm` prepares
//! warm sandboxes (an interpreter started in each, see docs/server.md) and drops
//! them unused. The default is `cold 2 100`.

use maibox::{Config, Sandbox, TrustLevel};
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let warm = match args.first().map(String::as_str) {
        None | Some("cold") => false,
        Some("warm") => true,
        Some(other) => return Err(format!("unknown mode {other:?}: cold or warm").into()),
    };
    let number = |i: usize, default: usize| args.get(i).map_or(Ok(default), |a| a.parse());
    let (threads, each) = (number(1, 2)?, number(2, 100)?);
    let (config, _) = Config::load(None)?;
    let sandbox = Sandbox::new(config)
        .trust(TrustLevel::Untrusted)
        .timeout(Duration::from_secs(10));
    let failures: Mutex<BTreeMap<String, usize>> = Mutex::new(BTreeMap::new());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                for _ in 0..each {
                    if let (Some(why), Ok(mut f)) = (attempt(&sandbox, warm), failures.lock()) {
                        *f.entry(why).or_default() += 1;
                    }
                }
            });
        }
    });
    let failures = failures.into_inner()?;
    let failed: usize = failures.values().sum();
    let mode = if warm {
        "warm preparations"
    } else {
        "cold runs"
    };
    println!(
        "{} {mode} from {threads} threads, {failed} failed",
        threads * each
    );
    for (why, n) in failures {
        println!("{n:6}  {why}");
    }
    Ok(())
}

/// One sandbox; why it failed, if it did.
fn attempt(sandbox: &Sandbox, warm: bool) -> Option<String> {
    if warm {
        return sandbox.prepare_warm(&[]).err().map(|e| e.to_string());
    }
    match sandbox.run_code("print(1)") {
        Ok(run) if run.stdout == b"1\n" => None,
        Ok(run) => Some(format!("output {:?}", String::from_utf8_lossy(&run.stdout))),
        Err(e) => Some(e.to_string()),
    }
}
