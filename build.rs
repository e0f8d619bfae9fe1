//! Build step: the built-in configuration as JSON.
//!
//! `config/sandbox.yaml` stays the one source (documented, commented, shipped). A
//! process that finds no configuration file used to parse it as YAML at every start;
//! serde_yaml took about 1.6 M instructions for it (0.2 to 0.4 ms of every cold
//! `maibox exec` and `maibox assess`), serde_json reads the same data in a tenth of
//! that. `config::tests` checks that both give the same `Config`.

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=config/sandbox.yaml");
    let yaml = std::fs::read_to_string("config/sandbox.yaml")
        .unwrap_or_else(|e| panic!("reading config/sandbox.yaml: {e}"));
    let value: serde_json::Value = serde_yaml::from_str(&yaml)
        .unwrap_or_else(|e| panic!("config/sandbox.yaml is not valid YAML: {e}"));
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let json = serde_json::to_string(&value).expect("a YAML value is JSON");
    std::fs::write(out.join("builtin-config.json"), json)
        .unwrap_or_else(|e| panic!("writing the built-in configuration: {e}"));
}
