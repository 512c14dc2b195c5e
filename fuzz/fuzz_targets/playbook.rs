//! Playbooks (`playbook::parse`), and every play that parses planned
//! (`planner::plan_play`) on a one-host inventory: that is where templates
//! and the matrix are reached. As `playbook_target` and
//! `plan_on_localhost` in orchestrator/tests/fuzz_parsers.rs.
#![no_main]

use benchrig::inventory::{Inventory, Vars};
use benchrig::{planner, playbook};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

fn plan_on_localhost(pb: &playbook::Playbook) {
    static INV: OnceLock<Inventory> = OnceLock::new();
    let inv = INV.get_or_init(|| {
        Inventory::parse_str(
            "local.yml",
            "all:\n  hosts:\n    localhost:\n      ansible_connection: local\n      scratch_devices:\n        - {path: /tmp/x.img, name: img0, kind: image, size: 1G}\n",
        )
        .expect("the one-host inventory parses")
    });
    let t = planner::templates(inv);
    let extra = Vars::new();
    for (i, play) in pb.plays.iter().enumerate() {
        if !play.roles.is_empty() {
            continue;
        }
        let input = planner::HostInput { inventory: inv, host: "localhost", extra_vars: &extra, facts: None };
        if let Err(e) = planner::plan_play(play, i, &input, &t) {
            let _ = e.to_string();
        }
    }
}

fuzz_target!(|data: &[u8]| {
    if data.len() > 64 << 10 {
        return;
    }
    let text = String::from_utf8_lossy(data);
    match playbook::parse("fuzz.yml", &text) {
        Ok(pb) => plan_on_localhost(&pb),
        Err(e) => {
            let _ = e.to_string();
        }
    }
});
