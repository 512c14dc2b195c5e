//! lzop's container around LZO1X blocks (compressed with lzokay-native, an
//! LZO1X-999-like compressor). The agent writes the subset without
//! checksums:
//!
//! ```text
//! magic     89 4c 5a 4f 00 0d 0a 1a 0a
//! header    version u16 = 0x1030, lib_version u16 = 0x2080,
//!           version_needed u16 = 0x0940, method u8 = 3 (LZO1X-999),
//!           level u8 = 9, flags u32 = 0x03000000 (Unix, no checksums),
//!           mode u32 = 0o100644, mtime u32 + u32 = 0, name: u8 length = 0,
//!           header checksum u32 = adler32 of the header fields above
//! blocks    uncompressed length u32 (at most 256 KiB), compressed length u32,
//!           then the compressed bytes; equal lengths mean a stored block
//!           (LZO would have made it larger)
//! end       a u32 0
//! ```
//!
//! All integers are big-endian. `lzop -d` reads it. The agent's decoder
//! also reads lzop's own files: it checks their adler32 block checksums
//! (lzop's default) and skips CRC32 ones. Blocks are decoded by our own
//! LZO1X decoder (`lzo1x`).

use super::lzo1x::lzo1x_decompress;
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

/// Compress everything `src` yields into an lzop file.
pub(super) fn encode(src: &mut dyn Read, dst: &mut dyn Write) -> io::Result<()> {
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

/// lzop's container, one block decoded at a time.
pub(super) struct LzopReader<R: BufRead> {
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
    pub(super) fn new(mut src: R) -> io::Result<Self> {
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
fn adler32(start: u32, data: &[u8]) -> u32 {
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

fn invalid(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adler32_known_values() {
        assert_eq!(adler32(1, b""), 1);
        assert_eq!(adler32(1, b"Wikipedia"), 0x11E6_0398);
        let big = vec![0xffu8; 100_000];
        // Split sums continue where they left off.
        assert_eq!(adler32(adler32(1, &big[..33_333]), &big[33_333..]), adler32(1, &big));
    }
}
