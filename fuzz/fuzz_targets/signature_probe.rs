//! The signature probe and the ESP finder on any device: the first four
//! bytes (big-endian, below 1 GiB) are the size the device claims, the
//! rest is what can be read of it. Each runs with the real size and the
//! claimed one (a device may say it is larger than what can be read), as
//! `the_signature_probe_reads_any_device` in
//! node-agent/tests/fuzz_host_parsers.rs. The bound covers the table's
//! deepest magic (btrfs, at 64 KiB) and ZFS's first label (128 to 256 KiB):
//! run with `-max_len=300000` to reach them.
#![no_main]

use benchrig_agent::signature;
use libfuzzer_sys::fuzz_target;
use std::io::Cursor;

fuzz_target!(|data: &[u8]| {
    if data.len() > 320 << 10 || data.len() < 4 {
        return;
    }
    let claimed = u64::from(u32::from_be_bytes(data[..4].try_into().expect("4 bytes"))) & ((1 << 30) - 1);
    let dev = &data[4..];
    for size in [dev.len() as u64, claimed] {
        let _ = signature::probe(&mut Cursor::new(dev), size);
        let _ = signature::has_esp(&mut Cursor::new(dev), size);
    }
});
