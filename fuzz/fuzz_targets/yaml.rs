//! YAML into located nodes (`yaml::parse_str`, then `Node::to_json`, or
//! the error's text): every playbook and YAML inventory is read through
//! it. As `yaml_target` in orchestrator/tests/fuzz_parsers.rs.
#![no_main]

use benchrig::yaml;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() > 64 << 10 {
        return;
    }
    let text = String::from_utf8_lossy(data);
    match yaml::parse_str("fuzz.yml", &text) {
        Ok(node) => {
            let _ = node.to_json();
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
});
