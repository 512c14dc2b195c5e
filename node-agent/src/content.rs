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
            // 64-byte runs: a quarter random (data, compressed sections),
            // half code-like (few opcodes, small operands), a quarter padding.
            const OPS: [u8; 12] = [0x48, 0x89, 0x8b, 0xe8, 0xc3, 0x55, 0x5d, 0x0f, 0x83, 0x74, 0x75, 0xff];
            for run in buf.chunks_mut(64) {
                match rng.below(4) {
                    0 => {
                        for b in run.iter_mut() {
                            *b = rng.next_u64() as u8;
                        }
                    }
                    3 => run.fill(0),
                    _ => {
                        for (j, b) in run.iter_mut().enumerate() {
                            *b = if j % 3 == 0 {
                                OPS[rng.below(OPS.len() as u64) as usize]
                            } else {
                                rng.below(16) as u8
                            };
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(kind: ContentKind, seed: u64, n: usize) -> Vec<u8> {
        let mut v = vec![0u8; n];
        fill(kind, &mut Rng::new(seed), &mut v);
        v
    }

    #[test]
    fn deterministic_per_seed() {
        for kind in [ContentKind::Zeros, ContentKind::Text, ContentKind::Binary, ContentKind::Random] {
            assert_eq!(bytes(kind, 7, 5000), bytes(kind, 7, 5000));
        }
        assert_ne!(bytes(ContentKind::Random, 7, 64), bytes(ContentKind::Random, 8, 64));
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
