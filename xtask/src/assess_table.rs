//! `cargo xtask assess-table`: regenerates the assessment's tables in
//! docs/assessment.md: the per-family precision and recall table (the test
//! `assess::family_tests`) and the robustness-to-respelling table (the test
//! `assess::metamorphic_tests`, which runs xtask/assess_mutate.py over the
//! corpus). CI runs both tests with their floors, and each fails when its
//! table in the document is out of date.
//! `--bin PATH` scores another maibox binary instead and prints its family
//! table only (how the previous release's figures in the document were
//! taken).

use anyhow::{bail, Result};
use std::path::Path;

use crate::cargo_env;

/// `cargo test` arguments that run one test of the library, printing.
fn one_test(name: &str) -> [&str; 6] {
    ["test", "--lib", name, "--", "--exact", "--nocapture"]
}

pub fn assess_table(args: &[String]) -> Result<()> {
    let families = one_test("assess::family_tests::family_table_and_floors");
    let respelling = one_test("assess::metamorphic_tests::respelling_table_and_floors");
    let write = [("MAIBOX_WRITE_ASSESSMENT_TABLE", Path::new("1"))];
    match args {
        [] => {
            cargo_env(&families, &write)?;
            cargo_env(&respelling, &write)
        }
        [flag, bin] if flag == "--bin" => {
            let bin = std::fs::canonicalize(bin)?;
            cargo_env(&families, &[("MAIBOX_ASSESS_BIN", bin.as_path())])
        }
        _ => bail!("usage: cargo xtask assess-table [--bin PATH-TO-ANOTHER-MAIBOX]"),
    }
}
