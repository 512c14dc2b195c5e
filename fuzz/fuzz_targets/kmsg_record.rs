//! The kernel log's records (`kmsg::parse_record`, each line, and the
//! whole input as one record with its ` KEY=value` lines) and the devices
//! a log names (`kmsg::devices_named`): parsed or skipped, never a panic.
//! As `kernel_log_records_parse_or_are_skipped` in
//! node-agent/tests/fuzz_host_parsers.rs.
#![no_main]

use benchrig_agent::kmsg;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() > 64 << 10 {
        return;
    }
    let text = String::from_utf8_lossy(data);
    for line in text.lines() {
        let _ = kmsg::parse_record(line);
    }
    // And whole, as one read of /dev/kmsg gives a record: its first line,
    // then ` KEY=value` lines (` DEVICE=b8:16`).
    let _ = kmsg::parse_record(&text);
    let _ = kmsg::devices_named(&text, &|d: &str| d.starts_with("sd"));
});
