//! The small languages inside inventories and on the command line, the
//! whole input one value through each: Python literals (INI inline values,
//! `pyliteral::parse`), host ranges (`ranges::expand`, at most `MAX_NAMES`
//! names), host patterns (`pattern::select` on a small lab), `-e` extra
//! vars (`extra_vars::parse`). No `@file`: the fuzzer stays off the file
//! system. As `pyliteral_target`, `ranges_target`, `pattern_target` and
//! `extra_vars_target` in orchestrator/tests/fuzz_parsers.rs. One value a
//! seed file: a pattern compiles a glob or regex per term, so inputs of
//! many lines would run at a few a second.
#![no_main]

use benchrig::extra_vars;
use benchrig::inventory::{pattern, pyliteral, ranges, Inventory};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

/// A small lab to select from.
fn lab() -> &'static Inventory {
    static LAB: OnceLock<Inventory> = OnceLock::new();
    LAB.get_or_init(|| {
        Inventory::parse_str(
            "lab.ini",
            "solo\n[old]\nold1\n[fast]\nfast[1:3]\n[ssd]\nfast2\ndb.lab\nfe80::1\n[prod:children]\nold\nfast\n",
        )
        .expect("the lab parses")
    })
}

fuzz_target!(|data: &[u8]| {
    if data.len() > 4 << 10 {
        return;
    }
    let text = String::from_utf8_lossy(data);
    let _ = pyliteral::parse(&text);
    if let Ok(names) = ranges::expand(&text) {
        assert!(names.len() <= ranges::MAX_NAMES, "{} names", names.len());
    }
    if !text.split([',', ':']).any(|t| t.trim().trim_start_matches(['!', '&']).starts_with('@')) {
        let _ = pattern::select(lab(), &text);
    }
    if !text.trim().starts_with('@') {
        let _ = extra_vars::parse(&[text.into_owned()]);
    }
});
