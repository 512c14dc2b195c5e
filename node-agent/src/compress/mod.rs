//! Compressors and streaming decompressors for the `cold_read` workload:
//! LZO, gzip and zstd, in pure Rust.
//!
//! Every format is the standard one, so the host's tools read what the agent
//! writes and the agent reads what they write (the tests check both ways):
//!
//! - **gzip**: flate2 (miniz_oxide), level 6, `gzip -6`'s default. Decoding
//!   reads every member, as `gunzip` does.
//! - **zstd** (`zstd`): ruzstd, every frame read back with its checksum.
//! - **lzo** (`lzop`): LZO1X blocks in lzop's container; the block decoder
//!   is our own (`lzo1x`).

mod lzo1x;
mod lzop;
mod zstd;

use benchrig_wire::args::Codec;
use std::io::{self, BufRead, Read, Write};

pub use lzop::LZO_BLOCK;

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

/// Compress everything `src` yields into `dst` (raw: copy it).
pub fn encode(codec: Codec, src: &mut dyn Read, dst: &mut dyn Write) -> io::Result<()> {
    match codec {
        Codec::Raw => io::copy(src, dst).map(drop),
        Codec::Gzip => {
            let mut enc = flate2::write::GzEncoder::new(dst, flate2::Compression::new(6));
            io::copy(src, &mut enc)?;
            enc.finish()?.flush()
        }
        Codec::Zstd => zstd::encode(src, dst),
        Codec::Lzo => lzop::encode(src, dst),
    }
}

/// A reader of the decompressed stream: it decodes as it is read, into a
/// fixed buffer (a block for LZO, the window for zstd), never the whole output.
pub fn decoder<'a, R: BufRead + 'a>(codec: Codec, src: R) -> io::Result<Box<dyn Read + 'a>> {
    Ok(match codec {
        Codec::Raw => Box::new(src),
        Codec::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(src)),
        Codec::Zstd => Box::new(zstd::ZstdReader::new(src)?),
        Codec::Lzo => Box::new(lzop::LzopReader::new(src)?),
    })
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
    use super::lzo1x::lzo1x_decompress;
    use super::*;
    use crate::content::samples::{sample as content, KINDS};
    use crate::content::{fill, Rng};
    use benchrig_wire::args::ContentKind;

    const CODECS: [Codec; 4] = [Codec::Raw, Codec::Lzo, Codec::Gzip, Codec::Zstd];

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
}
