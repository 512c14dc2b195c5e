//! fio job files (`FioJob::parse`): parsed or refused, never a panic. The
//! text is parsed alone with nothing allowed, and inside a `[global]` and a
//! job section with `zonemode` allowed, as
//! `a_fio_job_file_parses_or_is_refused` in
//! node-agent/tests/fuzz_host_parsers.rs does.
#![no_main]

use benchrig_wire::fio::FioJob;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() > 64 << 10 {
        return;
    }
    let text = String::from_utf8_lossy(data);
    let _ = FioJob::parse(&text, &[]);
    let _ = FioJob::parse(&format!("[global]\n{text}\n[x]\n{text}"), &["zonemode".to_string()]);
});
