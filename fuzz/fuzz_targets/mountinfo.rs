//! /proc/self/mountinfo (`sysfs::parse_mountinfo`): entries or lines left
//! out, never a panic. From `proc_files_parse_or_are_left_out` in
//! node-agent/tests/fuzz_host_parsers.rs.
#![no_main]

use benchrig_agent::sysfs;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() > 64 << 10 {
        return;
    }
    let _ = sysfs::parse_mountinfo(&String::from_utf8_lossy(data));
});
