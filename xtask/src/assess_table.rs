//! `cargo xtask assess-table`: regenerates the per-family precision and recall
//! table in docs/assessment.md (the test `assess::family_tests`, which CI runs
//! with floors and which fails when the document is out of date).
//! `--bin PATH` scores another maibox binary instead and prints its table
//! (how the previous release's figures in the document were taken).

use anyhow::{bail, Result};
use std::path::Path;

use crate::cargo_env;

pub fn assess_table(args: &[String]) -> Result<()> {
    let test = [
        "test",
        "--lib",
        "assess::family_tests::family_table_and_floors",
        "--",
        "--exact",
        "--nocapture",
    ];
    match args {
        [] => cargo_env(&test, &[("MAIBOX_WRITE_ASSESSMENT_TABLE", Path::new("1"))]),
        [flag, bin] if flag == "--bin" => {
            let bin = std::fs::canonicalize(bin)?;
            cargo_env(&test, &[("MAIBOX_ASSESS_BIN", bin.as_path())])
        }
        _ => bail!("usage: cargo xtask assess-table [--bin PATH-TO-ANOTHER-MAIBOX]"),
    }
}
