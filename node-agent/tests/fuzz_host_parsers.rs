//! Property-based fuzzing of everything the agent and the orchestrator read
//! that a host, a disk or a channel sends (issue 26): the wire's frames,
//! fio job files, the signature probe, /proc's mountinfo, swaps,
//! diskstats, stat, meminfo, vmstat and pressure files, the kernel log's
//! records, and the decompressors. Each must return a value or an error
//! for any input: never panic (proptest shrinks a failing case and saves
//! its seed in `proptest-regressions/`). Inputs are bounded (a few KiB),
//! and so is what a decoder may make of them: memory stays bounded.
//!
//! Case counts are small so this runs in seconds in a debug build; for a
//! longer run: `PROPTEST_CASES=100000 cargo test -p benchrig-agent --test
//! fuzz_host_parsers --release`.

use benchrig_agent::monitor::{cpu, diskstats, meminfo, pressure, vmstat};
use benchrig_agent::{compress, kmsg, signature, sysfs};
use benchrig_wire::args::Codec;
use benchrig_wire::fio::FioJob;
use benchrig_wire::frame;
use benchrig_wire::messages::{AgentMsg, Envelope};
use proptest::prelude::*;
use std::io::Cursor;

/// Text shaped like the files these parsers read: their separators and
/// digits are common, so a case gets past the first check.
fn procish() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            Just(" ".to_string()),
            Just("\n".to_string()),
            Just(":".to_string()),
            Just(" - ".to_string()),
            Just("=".to_string()),
            Just(",".to_string()),
            Just(";".to_string()),
            Just("[".to_string()),
            Just("]".to_string()),
            "[0-9]{1,22}",
            "[a-z_]{1,8}",
            "\\PC{0,3}",
        ],
        0..200,
    )
    .prop_map(|parts| parts.concat())
}

/// 256 cases each unless PROPTEST_CASES says.
fn config() -> ProptestConfig {
    let mut c = ProptestConfig::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        c.cases = 256;
    }
    c
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn a_frame_of_any_bytes_decodes_or_is_refused(bytes in prop::collection::vec(any::<u8>(), 0..4096)) {
        let _ = frame::read_frame::<_, AgentMsg>(&mut Cursor::new(&bytes));
        let _ = frame::read_frame::<_, Envelope>(&mut Cursor::new(&bytes));
        let _ = frame::decode::<AgentMsg>(&bytes);
    }

    /// A header that announces more than the limit is refused before any
    /// body is read or allocated.
    #[test]
    fn a_frame_header_never_allocates_past_the_limit(len in any::<u32>(), tail in prop::collection::vec(any::<u8>(), 0..64)) {
        let mut bytes = len.to_be_bytes().to_vec();
        bytes.extend(&tail);
        let r = frame::read_frame::<_, AgentMsg>(&mut Cursor::new(&bytes));
        if len as usize > frame::MAX_FRAME {
            prop_assert!(r.is_err());
        }
    }

    #[test]
    fn a_fio_job_file_parses_or_is_refused(text in procish()) {
        let _ = FioJob::parse(&text, &[]);
        let _ = FioJob::parse(&format!("[global]\n{text}\n[x]\n{text}"), &["zonemode".to_string()]);
    }

    #[test]
    fn the_signature_probe_reads_any_device(bytes in prop::collection::vec(any::<u8>(), 0..8192), claimed in 0u64..(1 << 30)) {
        // A device may say it is larger than what can be read of it.
        for size in [bytes.len() as u64, claimed] {
            let _ = signature::probe(&mut Cursor::new(&bytes), size);
            let _ = signature::has_esp(&mut Cursor::new(&bytes), size);
        }
    }

    #[test]
    fn proc_files_parse_or_are_left_out(text in procish()) {
        let _ = sysfs::parse_mountinfo(&text);
        let _ = sysfs::parse_swaps(&text);
        let stats = diskstats::parse(&text);
        for (_, s) in &stats {
            let _ = diskstats::DiskFigures::between(s, s, 0.0);
        }
        let _ = cpu::CpuTimes::parse(&text);
        let _ = meminfo::Memory::parse(&text);
        let _ = vmstat::Vm::parse(&text);
        let _ = pressure::Stall::parse(&text);
    }

    #[test]
    fn kernel_log_records_parse_or_are_skipped(text in procish()) {
        for line in text.lines() {
            let _ = kmsg::parse_record(line);
        }
        let _ = kmsg::devices_named(&text, &|d: &str| d.starts_with("sd"));
    }

    /// Any bytes into each decompressor: data or an error, and never more
    /// than a bounded amount of data from 4 KiB.
    #[test]
    fn decompressors_take_any_bytes(bytes in prop::collection::vec(any::<u8>(), 0..4096)) {
        for codec in [Codec::Lzo, Codec::Gzip, Codec::Zstd] {
            if let Ok(out) = compress::decode_vec(codec, &bytes) {
                prop_assert!(out.len() <= 1 << 30, "{codec:?} made {} bytes of 4 KiB", out.len());
            }
        }
    }
}

/// Truncated real compressed data: the decoders' likeliest bad input (a
/// copy cut short), each cut tried.
#[test]
fn cut_short_compressed_data_is_an_error_not_a_panic() {
    let data: Vec<u8> = (0..20_000u32).map(|i| (i % 251) as u8).collect();
    for codec in [Codec::Lzo, Codec::Gzip, Codec::Zstd] {
        let packed = compress::encode_vec(codec, &data).unwrap();
        assert_eq!(compress::decode_vec(codec, &packed).unwrap(), data, "{codec:?} round trip");
        for cut in (0..packed.len()).step_by(7) {
            if let Ok(out) = compress::decode_vec(codec, &packed[..cut]) {
                assert_ne!(out, data, "{codec:?} cut at {cut} gave the whole data back");
            }
        }
    }
}
