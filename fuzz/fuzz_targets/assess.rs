//! Fuzzes the static assessment: any bytes must give an assessment or a clear error,
//! never a panic, a hang or a stack overflow, and every finding must point into the file.
#![no_main]

use libfuzzer_sys::fuzz_target;
use maibox::assess::{assess, AssessConfig};

fuzz_target!(|data: &[u8]| {
    let cfg = AssessConfig::default();
    if let Ok(a) = assess("fuzz.py", data, &cfg) {
        for f in &a.findings {
            assert!(f.line >= 1 && f.line <= a.lines.max(1), "{f:?} in {} lines", a.lines);
            assert!(f.column >= 1, "{f:?}");
        }
    }
});
