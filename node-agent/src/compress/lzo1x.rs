//! The LZO1X block decoder: safe Rust on slices. lzokay-native's decoder
//! reads byte by byte through `Seek` and runs at about a third of the
//! speed, which would time the decoder rather than the format.

/// Decompress one LZO1X block (any LZO1X compressor's: -1, -999) into
/// `dst`, returning the bytes written. Malformed input is an error, never a
/// read or write out of bounds. This follows `lzo1x_decompress_safe`.
pub(super) fn lzo1x_decompress(src: &[u8], dst: &mut [u8]) -> Result<usize, &'static str> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compress::LZO_BLOCK;
    use crate::content::samples::{sample as content, KINDS};

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
}
