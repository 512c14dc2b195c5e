//! YAML inventories (`Inventory::parse_str("fuzz.yml", ..)`), then what a
//! run asks of one: `host_vars` of up to 20 hosts, `groups_var`, and a few
//! host patterns selected. As `inventory_target` in
//! orchestrator/tests/fuzz_parsers.rs.
#![no_main]

use benchrig::inventory::{pattern, Inventory};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() > 64 << 10 {
        return;
    }
    let text = String::from_utf8_lossy(data);
    match Inventory::parse_str("fuzz.yml", &text) {
        Ok(inv) => {
            for h in inv.hosts.keys().take(20) {
                let _ = inv.host_vars(h);
            }
            let _ = inv.groups_var();
            for p in ["all", "ungrouped", "*", "!ungrouped", "a*:&all"] {
                let _ = pattern::select(&inv, p);
            }
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
});
