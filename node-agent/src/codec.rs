//! Compressors and streaming decompressors for the `cold_read` workload:
//! LZO, gzip and zstd, in pure Rust.
//!
//! Every format is the standard one, so the host's tools read what the agent
//! writes and the agent reads what they write (the tests check both ways):
//!
//! - **gzip**: flate2 (miniz_oxide), level 6, `gzip -6`'s default. Decoding
//!   reads every member, as `gunzip` does.
//! - **zstd**: ruzstd. Its encoder implements one level, `Fastest` (about
//!   zstd's level 1; `Default` and above are unimplemented in 0.9), so the
//!   agent's `.zst` files are a little larger than `zstd -3`'s. Decoding reads
//!   every frame and checks the content checksum when a frame has one.
//! - **lzo**: LZO1X blocks (compressed with lzokay-native, an LZO1X-999-like
//!   compressor) in lzop's container, the subset without checksums:
//!
//!   ```text
//!   magic     89 4c 5a 4f 00 0d 0a 1a 0a
//!   header    version u16 = 0x1030, lib_version u16 = 0x2080,
//!             version_needed u16 = 0x0940, method u8 = 3 (LZO1X-999),
//!             level u8 = 9, flags u32 = 0x03000000 (Unix, no checksums),
//!             mode u32 = 0o100644, mtime u32 + u32 = 0, name: u8 length = 0,
//!             header checksum u32 = adler32 of the header fields above
//!   blocks    uncompressed length u32 (at most 256 KiB), compressed length u32,
//!             then the compressed bytes; equal lengths mean a stored block
//!             (LZO would have made it larger)
//!   end       a u32 0
//!   ```
//!
//!   All integers are big-endian. `lzop -d` reads it. The agent's decoder
//!   also reads lzop's own files: it checks their adler32 block checksums
//!   (lzop's default) and skips CRC32 ones. The LZO1X decoder is our own
//!   (below, safe Rust on slices); lzokay-native's decoder reads byte by byte
//!   through `Seek` and runs at about a third of the speed, which would time
//!   the decoder rather than the format.

use benchrig_wire::args::Codec;
use std::io::{self, BufRead, Read, Write};

/// Uncompressed bytes per LZO block: lzop's own block size.
pub const LZO_BLOCK: usize = 256 * 1024;
/// The largest block the decoder accepts (lzop's limit).
const LZO_MAX_BLOCK: usize = 64 * 1024 * 1024;
const LZOP_MAGIC: [u8; 9] = [0x89, b'L', b'Z', b'O', 0x00, 0x0d, 0x0a, 0x1a, 0x0a];
const F_ADLER32_D: u32 = 0x1;
const F_ADLER32_C: u32 = 0x2;
const F_H_EXTRA_FIELD: u32 = 0x40;
const F_CRC32_D: u32 = 0x100;
const F_CRC32_C: u32 = 0x200;
const F_MULTIPART: u32 = 0x400;
const F_H_FILTER: u32 = 0x800;
const F_H_CRC32: u32 = 0x1000;
const F_OS_UNIX: u32 = 0x0300_0000;

/// The file name extension of a codec's files (empty for raw).
pub fn extension(codec: Codec) -> &'static str {
    match codec {
        Codec::Raw => "",
        Codec::Lzo => "lzo",
        Codec::Gzip => "gz",
        Codec::Zstd => "zst",
    }
}

pub fn name(codec: Codec) -> &'static str {
    match codec {
        Codec::Raw => "raw",
        Codec::Lzo => "lzo",
        Codec::Gzip => "gzip",
        Codec::Zstd => "zstd",
    }
}

fn invalid(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.into())
}

/// Compress everything `src` yields into `dst` (raw: copy it).
pub fn encode(codec: Codec, src: &mut dyn Read, dst: &mut dyn Write) -> io::Result<()> {
    match codec {
        Codec::Raw => io::copy(src, dst).map(drop),
        Codec::Gzip => {
            let mut enc = flate2::write::GzEncoder::new(dst, flate2::Compression::new(6));
            io::copy(src, &mut enc)?;
            enc.finish()?.flush()
        }
        Codec::Zstd => encode_zstd(src, dst),
        Codec::Lzo => encode_lzo(src, dst),
    }
}

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

fn encode_zstd(src: &mut dyn Read, dst: &mut dyn Write) -> io::Result<()> {
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

/// Read until `buf` is full or the input ends; the bytes read.
fn read_full(src: &mut dyn Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match src.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

fn lzop_header() -> Vec<u8> {
    let mut h = Vec::with_capacity(40);
    h.extend_from_slice(&0x1030u16.to_be_bytes()); // version
    h.extend_from_slice(&0x2080u16.to_be_bytes()); // LZO library version
    h.extend_from_slice(&0x0940u16.to_be_bytes()); // version needed to extract
    h.push(3); // method: M_LZO1X_999
    h.push(9); // level
    h.extend_from_slice(&F_OS_UNIX.to_be_bytes());
    h.extend_from_slice(&0o100644u32.to_be_bytes()); // mode
    h.extend_from_slice(&0u32.to_be_bytes()); // mtime, low
    h.extend_from_slice(&0u32.to_be_bytes()); // mtime, high
    h.push(0); // name length
    let sum = adler32(1, &h);
    h.extend_from_slice(&sum.to_be_bytes());
    h
}

fn encode_lzo(src: &mut dyn Read, dst: &mut dyn Write) -> io::Result<()> {
    dst.write_all(&LZOP_MAGIC)?;
    dst.write_all(&lzop_header())?;
    let mut dict = lzokay_native::Dict::new();
    let mut block = vec![0u8; LZO_BLOCK];
    loop {
        let n = read_full(src, &mut block)?;
        if n == 0 {
            break;
        }
        let data = &block[..n];
        let packed = lzokay_native::compress_with_dict(data, &mut dict)
            .map_err(|e| io::Error::other(format!("lzo compression failed: {e}")))?;
        let body = if packed.len() < n { &packed[..] } else { data };
        dst.write_all(&(n as u32).to_be_bytes())?;
        dst.write_all(&(body.len() as u32).to_be_bytes())?;
        dst.write_all(body)?;
        if n < LZO_BLOCK {
            break;
        }
    }
    dst.write_all(&0u32.to_be_bytes())?;
    dst.flush()
}

/// A reader of the decompressed stream: it decodes as it is read, into a
/// fixed buffer (a block for LZO, the window for zstd), never the whole output.
pub fn decoder<'a, R: BufRead + 'a>(codec: Codec, src: R) -> io::Result<Box<dyn Read + 'a>> {
    Ok(match codec {
        Codec::Raw => Box::new(src),
        Codec::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(src)),
        Codec::Zstd => Box::new(ZstdReader::new(src)?),
        Codec::Lzo => Box::new(LzopReader::new(src)?),
    })
}

/// Every frame of a zstd stream, checksums checked.
struct ZstdReader<R: BufRead> {
    dec: Option<ruzstd::decoding::StreamingDecoder<R, ruzstd::decoding::FrameDecoder>>,
}

impl<R: BufRead> ZstdReader<R> {
    fn new(src: R) -> io::Result<Self> {
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

/// lzop's container, one block decoded at a time.
struct LzopReader<R: BufRead> {
    src: R,
    flags: u32,
    inbuf: Vec<u8>,
    out: Vec<u8>,
    pos: usize,
    done: bool,
}

fn read_u32(src: &mut impl Read) -> io::Result<u32> {
    let mut b = [0u8; 4];
    src.read_exact(&mut b).map_err(truncated)?;
    Ok(u32::from_be_bytes(b))
}

fn truncated(e: io::Error) -> io::Error {
    if e.kind() == io::ErrorKind::UnexpectedEof {
        invalid("lzo: the file is truncated")
    } else {
        e
    }
}

impl<R: BufRead> LzopReader<R> {
    fn new(mut src: R) -> io::Result<Self> {
        let mut magic = [0u8; 9];
        src.read_exact(&mut magic).map_err(truncated)?;
        if magic != LZOP_MAGIC {
            return Err(invalid("lzo: not an lzop file (bad magic)"));
        }
        // The header is checksummed from the version on: keep its bytes.
        let mut h = Vec::new();
        let mut take = |src: &mut R, n: usize| -> io::Result<u64> {
            let start = h.len();
            h.resize(start + n, 0);
            src.read_exact(&mut h[start..]).map_err(truncated)?;
            Ok(h[start..].iter().fold(0u64, |v, &b| v << 8 | b as u64))
        };
        let version = take(&mut src, 2)?;
        take(&mut src, 2)?; // library version
        if version < 0x0900 {
            return Err(invalid(format!("lzo: lzop format version {version:#x} is too old")));
        }
        if version >= 0x0940 {
            take(&mut src, 2)?; // version needed to extract
        }
        let method = take(&mut src, 1)?;
        if !(1..=3).contains(&method) {
            return Err(invalid(format!("lzo: method {method} is not LZO1X")));
        }
        if version >= 0x0940 {
            take(&mut src, 1)?; // level
        }
        let flags = take(&mut src, 4)? as u32;
        if flags & (F_H_FILTER | F_MULTIPART) != 0 {
            return Err(invalid(format!("lzo: header flags {flags:#x} (filter or multipart) are not supported")));
        }
        take(&mut src, 4)?; // mode
        take(&mut src, 4)?; // mtime low
        if version >= 0x0940 {
            take(&mut src, 4)?; // mtime high
        }
        let name_len = take(&mut src, 1)? as usize;
        take(&mut src, name_len)?;
        let sum = read_u32(&mut src)?;
        if flags & F_H_CRC32 == 0 && sum != adler32(1, &h) {
            return Err(invalid("lzo: header checksum mismatch"));
        }
        if flags & F_H_EXTRA_FIELD != 0 {
            let len = read_u32(&mut src)? as u64;
            io::copy(&mut (&mut src).take(len + 4), &mut io::sink())?;
        }
        Ok(LzopReader { src, flags, inbuf: Vec::new(), out: Vec::new(), pos: 0, done: false })
    }

    /// Decode the next block into `out`; false at the end of the stream.
    fn next_block(&mut self) -> io::Result<bool> {
        let d_len = read_u32(&mut self.src)? as usize;
        if d_len == 0 {
            return Ok(false);
        }
        let c_len = read_u32(&mut self.src)? as usize;
        if d_len > LZO_MAX_BLOCK || c_len > d_len {
            return Err(invalid(format!("lzo: corrupt block lengths ({c_len} compressed, {d_len} uncompressed)")));
        }
        let d_adler = if self.flags & F_ADLER32_D != 0 { Some(read_u32(&mut self.src)?) } else { None };
        if self.flags & F_CRC32_D != 0 {
            read_u32(&mut self.src)?;
        }
        let mut c_adler = None;
        if c_len < d_len {
            if self.flags & F_ADLER32_C != 0 {
                c_adler = Some(read_u32(&mut self.src)?);
            }
            if self.flags & F_CRC32_C != 0 {
                read_u32(&mut self.src)?;
            }
        }
        self.out.resize(d_len, 0);
        if c_len == d_len {
            self.src.read_exact(&mut self.out).map_err(truncated)?;
        } else {
            self.inbuf.resize(c_len, 0);
            self.src.read_exact(&mut self.inbuf).map_err(truncated)?;
            if c_adler.is_some_and(|want| want != adler32(1, &self.inbuf)) {
                return Err(invalid("lzo: compressed block checksum mismatch"));
            }
            let n = lzo1x_decompress(&self.inbuf, &mut self.out).map_err(|e| invalid(format!("lzo: {e}")))?;
            if n != d_len {
                return Err(invalid(format!("lzo: a block decoded to {n} bytes, its header says {d_len}")));
            }
        }
        if d_adler.is_some_and(|want| want != adler32(1, &self.out)) {
            return Err(invalid("lzo: block checksum mismatch"));
        }
        self.pos = 0;
        Ok(true)
    }
}

impl<R: BufRead> Read for LzopReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        while self.pos == self.out.len() {
            if self.done || !self.next_block()? {
                self.done = true;
                return Ok(0);
            }
        }
        let n = buf.len().min(self.out.len() - self.pos);
        buf[..n].copy_from_slice(&self.out[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

/// Adler-32 as zlib and lzop define it; `start` is 1 for a fresh sum.
pub fn adler32(start: u32, data: &[u8]) -> u32 {
    const MOD: u32 = 65521;
    let (mut a, mut b) = (start & 0xffff, start >> 16);
    // 5552 bytes is the most that cannot overflow u32 before the modulo.
    for chunk in data.chunks(5552) {
        for &x in chunk {
            a += x as u32;
            b += a;
        }
        a %= MOD;
        b %= MOD;
    }
    b << 16 | a
}

/// Decompress one LZO1X block (any LZO1X compressor's: -1, -999) into
/// `dst`, returning the bytes written. Malformed input is an error, never a
/// read or write out of bounds. This follows `lzo1x_decompress_safe`.
pub fn lzo1x_decompress(src: &[u8], dst: &mut [u8]) -> Result<usize, &'static str> {
    const IN: &str = "compressed data ends early";
    const OUT: &str = "output would exceed the block size";
    const BEHIND: &str = "a match points before the start of the block";
    let mut ip = 0usize;
    let mut op = 0usize;

    macro_rules! byte {
        () => {{
            let b = *src.get(ip).ok_or(IN)?;
            ip += 1;
            b as usize
        }};
    }
    macro_rules! le16 {
        () => {{
            let b = src.get(ip..ip + 2).ok_or(IN)?;
            ip += 2;
            b[0] as usize | (b[1] as usize) << 8
        }};
    }
    macro_rules! literals {
        ($n:expr) => {{
            let n: usize = $n;
            let s = src.get(ip..ip + n).ok_or(IN)?;
            dst.get_mut(op..op + n).ok_or(OUT)?.copy_from_slice(s);
            ip += n;
            op += n;
        }};
    }
    // A length continued in zero bytes: each zero adds 255, then the last byte.
    macro_rules! long_length {
        () => {{
            let start = ip;
            while src.get(ip) == Some(&0) {
                ip += 1;
            }
            (ip - start) * 255 + byte!()
        }};
    }

    // Literals copied by the previous instruction: 0..3, or 4 for "4 or more".
    let mut state = 0usize;
    let first = *src.first().ok_or(IN)? as usize;
    if first > 17 {
        ip = 1;
        let t = first - 17;
        literals!(t);
        state = t.min(4);
    }
    loop {
        let t = byte!();
        let (len, dist, next);
        if t >= 64 {
            // M2: 3..8 bytes within 2 KiB.
            let h = byte!();
            dist = 1 + ((t >> 2) & 7) + (h << 3);
            len = (t >> 5) + 1;
            next = t & 3;
        } else if t >= 32 {
            // M3: within 16 KiB.
            let l = if t & 31 == 0 { 31 + long_length!() } else { t & 31 };
            len = l + 2;
            let d = le16!();
            dist = 1 + (d >> 2);
            next = d & 3;
        } else if t >= 16 {
            // M4: 16..48 KiB back; distance 16384 exactly ends the stream.
            let l = if t & 7 == 0 { 7 + long_length!() } else { t & 7 };
            len = l + 2;
            let d = le16!();
            let far = ((t & 8) << 11) + (d >> 2);
            if far == 0 {
                if len != 3 {
                    return Err("malformed end-of-stream marker");
                }
                break;
            }
            dist = far + 0x4000;
            next = d & 3;
        } else if state == 0 {
            // A run of 4 or more literals.
            let l = if t == 0 { 15 + long_length!() } else { t };
            literals!(l + 3);
            state = 4;
            continue;
        } else if state != 4 {
            // M1 after 1..3 literals: 2 bytes within 1 KiB.
            let h = byte!();
            dist = 1 + (t >> 2) + (h << 2);
            len = 2;
            next = t & 3;
        } else {
            // M1 after a literal run: 3 bytes 2..3 KiB back.
            let h = byte!();
            dist = 1 + 0x800 + (t >> 2) + (h << 2);
            len = 3;
            next = t & 3;
        }
        if dist > op {
            return Err(BEHIND);
        }
        if op + len > dst.len() {
            return Err(OUT);
        }
        let from = op - dist;
        if dist >= len {
            dst.copy_within(from..from + len, op);
        } else {
            // Overlapping: the match repeats the last `dist` bytes. Copy
            // from `from` in growing chunks that are already written.
            let mut done = 0;
            while done < len {
                let n = (len - done).min(op + done - from);
                dst.copy_within(from..from + n, op + done);
                done += n;
            }
        }
        op += len;
        literals!(next);
        state = next;
    }
    if ip != src.len() {
        return Err("data follows the end-of-stream marker");
    }
    Ok(op)
}

/// Compress a buffer (tests, small inputs).
pub fn encode_vec(codec: Codec, data: &[u8]) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    encode(codec, &mut &data[..], &mut out)?;
    Ok(out)
}

/// Decompress a buffer (tests, small inputs).
pub fn decode_vec(codec: Codec, data: &[u8]) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    decoder(codec, data)?.read_to_end(&mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::content::{fill, Rng};
    use benchrig_wire::args::ContentKind;

    const CODECS: [Codec; 4] = [Codec::Raw, Codec::Lzo, Codec::Gzip, Codec::Zstd];
    const KINDS: [ContentKind; 4] = [ContentKind::Zeros, ContentKind::Text, ContentKind::Binary, ContentKind::Random];

    fn content(kind: ContentKind, n: usize, seed: u64) -> Vec<u8> {
        let mut v = vec![0u8; n];
        fill(kind, &mut Rng::new(seed), &mut v);
        v
    }

    #[test]
    fn round_trips_every_codec_kind_and_awkward_size() {
        for codec in CODECS {
            for kind in KINDS {
                for n in [0, 1, 5, 4095, LZO_BLOCK - 1, LZO_BLOCK, LZO_BLOCK + 1, 2 * LZO_BLOCK + 12345] {
                    let data = content(kind, n, n as u64 + 3);
                    let packed = encode_vec(codec, &data).unwrap();
                    let back = decode_vec(codec, &packed).unwrap_or_else(|e| panic!("{codec:?} {kind:?} {n}: {e}"));
                    assert!(back == data, "{codec:?} {kind:?} {n}: round trip differs");
                }
            }
        }
    }

    #[test]
    fn decoding_streams_through_a_small_buffer() {
        let data = content(ContentKind::Text, 3 * LZO_BLOCK + 77, 9);
        for codec in CODECS {
            let packed = encode_vec(codec, &data).unwrap();
            let mut dec = decoder(codec, io::BufReader::with_capacity(4096, &packed[..])).unwrap();
            let mut buf = [0u8; 1000];
            let mut got = Vec::new();
            loop {
                let n = dec.read(&mut buf).unwrap();
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&buf[..n]);
            }
            assert!(got == data, "{codec:?}");
        }
    }

    fn ratio(codec: Codec, kind: ContentKind) -> f64 {
        let data = content(kind, 1 << 20, 1);
        data.len() as f64 / encode_vec(codec, &data).unwrap().len() as f64
    }

    #[test]
    fn ratios_are_ordered_by_content() {
        for codec in [Codec::Lzo, Codec::Gzip, Codec::Zstd] {
            let [z, t, b, r] = KINDS.map(|k| ratio(codec, k));
            eprintln!("{codec:?}: zeros {z:.1} text {t:.2} binary {b:.2} random {r:.3}");
            assert!(z > 50.0 && z > 10.0 * t, "{codec:?}: zeros {z} text {t}");
            assert!(t > b && b > r * 1.2, "{codec:?}: text {t} binary {b} random {r}");
            assert!((0.95..=1.01).contains(&r), "{codec:?}: random {r}");
            assert!(t > 1.8, "{codec:?}: text {t}");
        }
    }

    #[test]
    fn corrupt_input_is_an_error_not_a_panic() {
        let data = content(ContentKind::Text, 100_000, 2);
        for codec in [Codec::Lzo, Codec::Gzip, Codec::Zstd] {
            let packed = encode_vec(codec, &data).unwrap();
            // Truncated.
            assert!(decode_vec(codec, &packed[..packed.len() / 2]).is_err(), "{codec:?} truncated");
            // Every byte of the body flipped in turn (a sample of them).
            for i in (40..packed.len()).step_by(97) {
                let mut bad = packed.clone();
                bad[i] ^= 0x5a;
                let _ = decode_vec(codec, &bad);
            }
        }
        // Garbage straight into the block decoder.
        let mut rng = Rng::new(5);
        let mut out = vec![0u8; 4096];
        for _ in 0..2000 {
            let mut junk = vec![0u8; rng.below(64) as usize];
            fill(ContentKind::Random, &mut rng, &mut junk);
            let _ = lzo1x_decompress(&junk, &mut out);
        }
    }

    #[test]
    fn lzo_blocks_match_lzokay() {
        // Our decoder against the compressor's own test of itself: every kind, several sizes.
        let mut dict = lzokay_native::Dict::new();
        for kind in KINDS {
            for n in [1, 3, 17, 300, 5000, 70_000, LZO_BLOCK] {
                let data = content(kind, n, 11);
                let packed = lzokay_native::compress_with_dict(&data, &mut dict).unwrap();
                let mut out = vec![0u8; n];
                assert_eq!(lzo1x_decompress(&packed, &mut out), Ok(n), "{kind:?} {n}");
                assert!(out == data, "{kind:?} {n}");
                // One byte short of room is an error.
                let mut small = vec![0u8; n - 1];
                assert!(lzo1x_decompress(&packed, &mut small).is_err());
            }
        }
    }

    /// Run a host tool over `input` on stdin; .ci/run installs lzop, gzip and zstd.
    fn tool(argv: &[&str], input: &[u8]) -> Vec<u8> {
        use std::process::{Command, Stdio};
        let mut child = Command::new(argv[0])
            .args(&argv[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{} (install it: .ci/run does): {e}", argv[0]));
        let mut stdin = child.stdin.take().unwrap();
        let input = input.to_vec();
        let feeder = std::thread::spawn(move || stdin.write_all(&input));
        let out = child.wait_with_output().unwrap();
        feeder.join().unwrap().unwrap();
        assert!(out.status.success(), "{argv:?}: {}", String::from_utf8_lossy(&out.stderr));
        out.stdout
    }

    const TOOLS: [(Codec, &[&str], &[&str]); 3] = [
        (Codec::Lzo, &["lzop", "-c"], &["lzop", "-dc"]),
        (Codec::Gzip, &["gzip", "-c", "-6"], &["gzip", "-dc"]),
        (Codec::Zstd, &["zstd", "-c", "-3", "-q"], &["zstd", "-dc", "-q"]),
    ];

    #[test]
    fn host_tools_read_what_the_agent_writes() {
        for (codec, _, decompress) in TOOLS {
            for kind in KINDS {
                for n in [0, 1000, 3 * LZO_BLOCK + 5] {
                    let data = content(kind, n, 4);
                    let packed = encode_vec(codec, &data).unwrap();
                    assert!(tool(decompress, &packed) == data, "{decompress:?} {kind:?} {n}");
                }
            }
        }
    }

    #[test]
    fn the_agent_reads_what_host_tools_write() {
        for (codec, compress, _) in TOOLS {
            for kind in KINDS {
                for n in [0, 1000, 3 * LZO_BLOCK + 5] {
                    let data = content(kind, n, 6);
                    let packed = tool(compress, &data);
                    let back = decode_vec(codec, &packed).unwrap_or_else(|e| panic!("{compress:?} {kind:?} {n}: {e}"));
                    assert!(back == data, "{compress:?} {kind:?} {n}");
                }
            }
        }
        // lzop's levels use different LZO1X compressors (-1: LZO1X-1, -9: LZO1X-999), and
        // two gzip members or zstd frames in a row are one stream to their tools.
        let data = content(ContentKind::Text, 600_000, 8);
        for level in ["-1", "-9"] {
            assert!(decode_vec(Codec::Lzo, &tool(&["lzop", "-c", level], &data)).unwrap() == data);
        }
        for (codec, compress, _) in &TOOLS[1..] {
            let mut two = tool(compress, &data[..1000]);
            two.extend(tool(compress, &data[1000..]));
            assert!(decode_vec(*codec, &two).unwrap() == data, "{codec:?}: two in a row");
        }
        // A corrupted lzop block fails its adler32 check.
        let mut packed = tool(&["lzop", "-c"], &data);
        let last = packed.len() - 10;
        packed[last] ^= 1;
        assert!(decode_vec(Codec::Lzo, &packed).is_err());
    }

    #[test]
    fn adler32_known_values() {
        assert_eq!(adler32(1, b""), 1);
        assert_eq!(adler32(1, b"Wikipedia"), 0x11E6_0398);
        let big = vec![0xffu8; 100_000];
        // Split sums continue where they left off.
        assert_eq!(adler32(adler32(1, &big[..33_333]), &big[33_333..]), adler32(1, &big));
    }
}
