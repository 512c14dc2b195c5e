//! Length-prefixed frames: a 4-byte big-endian body length, then a JSON body.
//!
//! JSON rather than a binary encoding because frames are small and rare
//! (steps last milliseconds to minutes) and a captured stream stays readable.

use serde::de::DeserializeOwned;
use serde::Serialize;
use std::io::{self, Read, Write};

pub const HEADER_LEN: usize = 4;
/// Facts of a host with hundreds of disks fit well inside this; anything larger is a bug.
pub const MAX_FRAME: usize = 16 << 20;

#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    #[error("frame of {0} bytes exceeds the {MAX_FRAME}-byte limit (is something else writing to the channel?)")]
    TooLarge(usize),
    #[error("channel i/o: {0}")]
    Io(#[from] io::Error),
    #[error("malformed frame body: {0}")]
    Json(#[from] serde_json::Error),
    #[error("the channel ended in the middle of a frame")]
    Truncated,
}

/// The whole frame (header and body) for one message.
pub fn encode<T: Serialize>(msg: &T) -> Result<Vec<u8>, FrameError> {
    let mut buf = vec![0u8; HEADER_LEN];
    serde_json::to_writer(&mut buf, msg)?;
    let len = buf.len() - HEADER_LEN;
    if len > MAX_FRAME {
        return Err(FrameError::TooLarge(len));
    }
    buf[..HEADER_LEN].copy_from_slice(&(len as u32).to_be_bytes());
    Ok(buf)
}

/// The body length a header announces, checked against [`MAX_FRAME`].
pub fn body_len(header: [u8; HEADER_LEN]) -> Result<usize, FrameError> {
    let len = u32::from_be_bytes(header) as usize;
    if len > MAX_FRAME {
        return Err(FrameError::TooLarge(len));
    }
    Ok(len)
}

pub fn decode<T: DeserializeOwned>(body: &[u8]) -> Result<T, FrameError> {
    Ok(serde_json::from_slice(body)?)
}

pub fn write_frame<W: Write, T: Serialize>(w: &mut W, msg: &T) -> Result<(), FrameError> {
    w.write_all(&encode(msg)?)?;
    w.flush()?;
    Ok(())
}

/// The next message, or `None` when the peer closed the channel between frames.
pub fn read_frame<R: Read, T: DeserializeOwned>(r: &mut R) -> Result<Option<T>, FrameError> {
    let mut header = [0u8; HEADER_LEN];
    let mut got = 0;
    while got < HEADER_LEN {
        match r.read(&mut header[got..]) {
            Ok(0) if got == 0 => return Ok(None),
            Ok(0) => return Err(FrameError::Truncated),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    let mut body = vec![0u8; body_len(header)?];
    r.read_exact(&mut body).map_err(|e| match e.kind() {
        io::ErrorKind::UnexpectedEof => FrameError::Truncated,
        _ => FrameError::Io(e),
    })?;
    decode(&body).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::{AgentMsg, Envelope, Request};

    #[test]
    fn round_trip_through_a_byte_stream() {
        let mut wire = Vec::new();
        let a = Envelope { id: 7, request: Request::Ping };
        let b = Envelope { id: 8, request: Request::Cancel { target: 7 } };
        write_frame(&mut wire, &a).unwrap();
        write_frame(&mut wire, &b).unwrap();
        let mut r = &wire[..];
        let got_a: Envelope = read_frame(&mut r).unwrap().unwrap();
        let got_b: Envelope = read_frame(&mut r).unwrap().unwrap();
        assert_eq!(got_a, a);
        assert_eq!(got_b, b);
        assert!(read_frame::<_, Envelope>(&mut r).unwrap().is_none());
    }

    #[test]
    fn a_measured_number_crosses_a_frame_bit_for_bit() {
        // fio's mean latency of a lab run, in µs: its 17 digits were read
        // back one ulp off by serde_json's default parser.
        let values = [117_430.030029_f64 / 1e3, 0.1 + 0.2, 1.0 / 3.0, 2.2250738585072014e-308, 9_007_199_254_740_993.0];
        for v in values {
            let back: Vec<f64> = decode(&encode(&vec![v]).unwrap()[HEADER_LEN..]).unwrap();
            assert_eq!(back[0].to_bits(), v.to_bits(), "{v:?}");
        }
    }

    #[test]
    fn header_is_big_endian_body_length() {
        let f = encode(&AgentMsg::Heartbeat { seq: 1 }).unwrap();
        let len = u32::from_be_bytes(f[..4].try_into().unwrap()) as usize;
        assert_eq!(len, f.len() - 4);
        assert_eq!(&f[4..], br#"{"type":"heartbeat","seq":1}"#);
    }

    #[test]
    fn oversized_header_is_refused_before_allocating() {
        let mut bytes = (MAX_FRAME as u32 + 1).to_be_bytes().to_vec();
        bytes.extend_from_slice(b"{}");
        let err = read_frame::<_, Envelope>(&mut &bytes[..]).unwrap_err();
        assert!(matches!(err, FrameError::TooLarge(_)), "{err}");
    }

    #[test]
    fn stray_text_on_the_channel_is_detected() {
        // What a shell's motd or a stray println! would look like to the reader.
        let err = read_frame::<_, Envelope>(&mut &b"Welcome to Debian GNU/Linux\n"[..]).unwrap_err();
        assert!(matches!(err, FrameError::TooLarge(_)), "{err}");
    }

    #[test]
    fn truncated_body_is_an_error_not_eof() {
        let mut f = encode(&Envelope { id: 1, request: Request::Facts }).unwrap();
        f.truncate(f.len() - 2);
        assert!(matches!(read_frame::<_, Envelope>(&mut &f[..]), Err(FrameError::Truncated)));
        assert!(matches!(read_frame::<_, Envelope>(&mut &f[..2]), Err(FrameError::Truncated)));
    }

    #[test]
    fn garbage_body_is_a_json_error() {
        let mut f = 3u32.to_be_bytes().to_vec();
        f.extend_from_slice(b"{x}");
        assert!(matches!(read_frame::<_, Envelope>(&mut &f[..]), Err(FrameError::Json(_))));
    }
}
