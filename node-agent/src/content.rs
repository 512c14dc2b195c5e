//! File contents of a chosen kind, deterministic in (kind, seed, offset):
//! the same tree or file has the same bytes on every host, so runs compare.

use benchrig_wire::args::ContentKind;

/// A small xorshift generator: fast, deterministic, plenty random for content.
#[derive(Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        // splitmix64 of the seed, so nearby seeds diverge at once; never zero.
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        Rng((z ^ (z >> 31)) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// Uniform in [0, 1).
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next_u64() % n
        }
    }
}

const WORDS: &[&str] = &[
    "the",
    "of",
    "and",
    "to",
    "in",
    "a",
    "is",
    "that",
    "for",
    "it",
    "as",
    "was",
    "with",
    "be",
    "by",
    "on",
    "not",
    "he",
    "this",
    "are",
    "or",
    "his",
    "from",
    "at",
    "which",
    "but",
    "have",
    "an",
    "had",
    "they",
    "you",
    "were",
    "their",
    "one",
    "all",
    "we",
    "can",
    "her",
    "has",
    "there",
    "been",
    "if",
    "more",
    "when",
    "will",
    "would",
    "who",
    "so",
    "file",
    "system",
    "block",
    "inode",
    "journal",
    "extent",
    "device",
    "kernel",
    "buffer",
    "cache",
    "page",
    "write",
    "read",
    "directory",
    "attribute",
    "access",
    "control",
    "list",
    "permission",
    "mount",
    "volume",
    "server",
    "client",
    "request",
    "latency",
    "throughput",
    "metadata",
    "allocation",
    "superblock",
    "transaction",
    "commit",
];

/// Fill `buf` with content of `kind`, continuing the stream of `rng`.
pub fn fill(kind: ContentKind, rng: &mut Rng, buf: &mut [u8]) {
    match kind {
        ContentKind::Zeros => buf.fill(0),
        ContentKind::Random => {
            for chunk in buf.chunks_mut(8) {
                chunk.copy_from_slice(&rng.next_u64().to_le_bytes()[..chunk.len()]);
            }
        }
        ContentKind::Text => {
            let mut i = 0;
            while i < buf.len() {
                // Skewed toward the first words, as real text is.
                let r = rng.next_f64();
                let w = WORDS[((r * r) * WORDS.len() as f64) as usize].as_bytes();
                for &b in w.iter().chain(if rng.below(12) == 0 { b"\n" } else { b" " }) {
                    if i == buf.len() {
                        break;
                    }
                    buf[i] = b;
                    i += 1;
                }
            }
        }
        ContentKind::Binary => {
            // Like a shared library (the 5.5 MB one of seed 004 gzipped to
            // 2.2 MB): 64-byte runs, most of them code drawn from a small set
            // of instruction sequences with a few bytes changed (code repeats
            // itself), some random (data, tables), some padding, some symbol
            // strings. gzip -6 makes about 2.4:1 of it.
            const OPS: [u8; 12] = [0x48, 0x89, 0x8b, 0xe8, 0xc3, 0x55, 0x5d, 0x0f, 0x83, 0x74, 0x75, 0xff];
            let mut pool = [[0u8; 64]; 128];
            for seq in pool.iter_mut() {
                for (j, b) in seq.iter_mut().enumerate() {
                    *b = if j % 3 == 0 { OPS[rng.below(OPS.len() as u64) as usize] } else { rng.below(16) as u8 };
                }
            }
            for run in buf.chunks_mut(64) {
                match rng.below(7) {
                    0 => {
                        for b in run.iter_mut() {
                            *b = rng.next_u64() as u8;
                        }
                    }
                    1 => run.fill(0),
                    2 => {
                        let mut i = 0;
                        while i < run.len() {
                            for &b in WORDS[rng.below(WORDS.len() as u64) as usize].as_bytes().iter().chain(b"\0") {
                                if i < run.len() {
                                    run[i] = b;
                                    i += 1;
                                }
                            }
                        }
                    }
                    _ => {
                        run.copy_from_slice(&pool[rng.below(128) as usize][..run.len()]);
                        for _ in 0..3 {
                            let at = rng.below(run.len() as u64) as usize;
                            run[at] = rng.next_u64() as u8;
                        }
                    }
                }
            }
        }
    }
}

/// Content of every kind, for the tests of what reads and writes it (the codecs').
#[cfg(test)]
pub mod samples {
    use super::{fill, Rng};
    use benchrig_wire::args::ContentKind;

    pub const KINDS: [ContentKind; 4] =
        [ContentKind::Zeros, ContentKind::Text, ContentKind::Binary, ContentKind::Random];

    /// `n` bytes of `kind`, the same for the same `seed`.
    pub fn sample(kind: ContentKind, n: usize, seed: u64) -> Vec<u8> {
        let mut v = vec![0u8; n];
        fill(kind, &mut Rng::new(seed), &mut v);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(kind: ContentKind, seed: u64, n: usize) -> Vec<u8> {
        samples::sample(kind, n, seed)
    }

    #[test]
    fn deterministic_per_seed() {
        for kind in samples::KINDS {
            assert_eq!(bytes(kind, 7, 5000), bytes(kind, 7, 5000));
        }
        assert_ne!(bytes(ContentKind::Random, 7, 64), bytes(ContentKind::Random, 8, 64));
    }

    #[test]
    fn binary_compresses_like_a_library() {
        use std::io::Write;
        let data = bytes(ContentKind::Binary, 1, 1 << 20);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(6));
        gz.write_all(&data).unwrap();
        let ratio = data.len() as f64 / gz.finish().unwrap().len() as f64;
        // The 5.5 MB library of seed 004 went to 2.2 MB with gzip: 2.5:1.
        assert!((2.0..3.0).contains(&ratio), "binary gzips {ratio:.2}:1");
    }

    #[test]
    fn kinds_differ_in_entropy() {
        // Distinct byte values as a cheap proxy for compressibility.
        let distinct = |v: Vec<u8>| v.iter().collect::<std::collections::HashSet<_>>().len();
        assert_eq!(distinct(bytes(ContentKind::Zeros, 1, 1 << 16)), 1);
        assert!(distinct(bytes(ContentKind::Text, 1, 1 << 16)) < 40);
        assert!(distinct(bytes(ContentKind::Random, 1, 1 << 16)) == 256);
        let text = String::from_utf8(bytes(ContentKind::Text, 3, 4096)).unwrap();
        assert!(text.contains(' ') && text.contains('\n'));
    }
}
