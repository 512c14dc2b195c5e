//! The agent's gzip decoder (`compress::decode_vec(Codec::Gzip, ..)`) on
//! any bytes: data or an error, and never more than a bounded amount of
//! data from 4 KiB. As `decompressors_take_any_bytes` in
//! node-agent/tests/fuzz_host_parsers.rs (inputs bounded as there: a
//! decompression bomb of a larger input would be libFuzzer's out-of-memory,
//! not a bug). The seeds are small files `gzip` wrote.
#![no_main]

use benchrig_agent::compress;
use benchrig_wire::args::Codec;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() > 4096 {
        return;
    }
    if let Ok(out) = compress::decode_vec(Codec::Gzip, data) {
        assert!(out.len() <= 1 << 30, "made {} bytes of {}", out.len(), data.len());
    }
});
