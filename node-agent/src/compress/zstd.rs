//! zstd through ruzstd. Its encoder implements one level, `Fastest` (about
//! zstd's level 1; `Default` and above are unimplemented in 0.9), so the
//! agent's `.zst` files are a little larger than `zstd -3`'s. Decoding reads
//! every frame and checks the content checksum when a frame has one.

use std::io::{self, BufRead, Read, Write};

/// ruzstd's encoder unwraps its I/O results; these adapters hand it
/// successes and keep the first error, so a full disk is an error, not a panic.
struct KeepErr<T> {
    inner: T,
    err: Option<io::Error>,
}

impl<T: Read> Read for KeepErr<T> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.err.is_some() {
            return Ok(0);
        }
        match self.inner.read(buf) {
            Ok(n) => Ok(n),
            Err(e) => {
                self.err = Some(e);
                Ok(0)
            }
        }
    }
}

impl<T: Write> Write for KeepErr<T> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.err.is_none() {
            if let Err(e) = self.inner.write_all(buf) {
                self.err = Some(e);
            }
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Compress everything `src` yields into one zstd frame.
pub(super) fn encode(src: &mut dyn Read, dst: &mut dyn Write) -> io::Result<()> {
    let mut source = KeepErr { inner: src, err: None };
    let mut drain = KeepErr { inner: dst, err: None };
    let mut enc = ruzstd::encoding::FrameCompressor::new(ruzstd::encoding::CompressionLevel::Fastest);
    enc.set_source(&mut source);
    enc.set_drain(&mut drain);
    enc.compress();
    drop(enc);
    if let Some(e) = source.err.or(drain.err) {
        return Err(e);
    }
    drain.inner.flush()
}

/// Every frame of a zstd stream, checksums checked.
pub(super) struct ZstdReader<R: BufRead> {
    dec: Option<ruzstd::decoding::StreamingDecoder<R, ruzstd::decoding::FrameDecoder>>,
}

impl<R: BufRead> ZstdReader<R> {
    pub(super) fn new(src: R) -> io::Result<Self> {
        let dec = ruzstd::decoding::StreamingDecoder::new(src).map_err(|e| invalid(format!("zstd: {e}")))?;
        Ok(ZstdReader { dec: Some(dec) })
    }
}

impl<R: BufRead> Read for ZstdReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            let Some(dec) = self.dec.as_mut() else { return Ok(0) };
            let n = dec.read(buf)?;
            if n > 0 {
                return Ok(n);
            }
            // This frame is done: check it, then start the next one if there is more input.
            let fd = &dec.decoder;
            if let (Some(want), Some(have)) = (fd.get_checksum_from_data(), fd.get_calculated_checksum()) {
                if want != have {
                    return Err(invalid("zstd: content checksum mismatch"));
                }
            }
            let (mut src, fd) = self.dec.take().expect("checked above").into_parts();
            if src.fill_buf()?.is_empty() {
                return Ok(0);
            }
            let dec = ruzstd::decoding::StreamingDecoder::new_with_decoder(src, fd)
                .map_err(|e| invalid(format!("zstd: {e}")))?;
            self.dec = Some(dec);
        }
    }
}

fn invalid(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.into())
}
