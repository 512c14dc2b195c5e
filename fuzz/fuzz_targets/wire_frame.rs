//! The wire's frame decoder on any bytes: a frame of either direction
//! decodes or is refused, and a header announcing more than `MAX_FRAME` is
//! refused before its body is read or allocated. As
//! `a_frame_of_any_bytes_decodes_or_is_refused` and
//! `a_frame_header_never_allocates_past_the_limit` in
//! node-agent/tests/fuzz_host_parsers.rs.
#![no_main]

use benchrig_wire::frame;
use benchrig_wire::messages::{AgentMsg, Envelope};
use libfuzzer_sys::fuzz_target;
use std::io::Cursor;

fuzz_target!(|data: &[u8]| {
    if data.len() > 64 << 10 {
        return;
    }
    let r = frame::read_frame::<_, AgentMsg>(&mut Cursor::new(data));
    if let Some(header) = data.get(..frame::HEADER_LEN) {
        let len = u32::from_be_bytes(header.try_into().expect("4 bytes"));
        if len as usize > frame::MAX_FRAME {
            assert!(r.is_err(), "a header announcing {len} bytes was not refused");
        }
    }
    let _ = frame::read_frame::<_, Envelope>(&mut Cursor::new(data));
    let _ = frame::decode::<AgentMsg>(data);
    // The body alone too, as the orchestrator's side decodes it.
    if let Some(body) = data.get(frame::HEADER_LEN..) {
        let _ = frame::decode::<AgentMsg>(body);
    }
});
