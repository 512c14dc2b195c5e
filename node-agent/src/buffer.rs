//! An I/O buffer aligned for O_DIRECT, filled with incompressible bytes so a
//! compressing filesystem cannot flatter a write.

pub struct IoBuffer {
    bytes: Vec<u8>,
    offset: usize,
    len: usize,
}

/// O_DIRECT needs the logical block size; 4096 covers every device we meet.
pub const ALIGN: usize = 4096;

impl IoBuffer {
    /// Safe alignment: over-allocate and start at the first aligned byte.
    pub fn new(len: usize) -> Self {
        let bytes = vec![0u8; len + ALIGN];
        let offset = bytes.as_ptr().align_offset(ALIGN);
        IoBuffer { bytes, offset, len }
    }

    pub fn random(len: usize, seed: u64) -> Self {
        let mut b = Self::new(len);
        let mut x = seed | 1;
        for chunk in b.bytes_mut().chunks_mut(8) {
            // xorshift64: fast and plenty random against a compressor.
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            chunk.copy_from_slice(&x.to_le_bytes()[..chunk.len()]);
        }
        b
    }

    pub fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.bytes[self.offset..self.offset + self.len]
    }
}

impl AsRef<[u8]> for IoBuffer {
    fn as_ref(&self) -> &[u8] {
        &self.bytes[self.offset..self.offset + self.len]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_and_sized() {
        for len in [1, 4096, 1 << 20, 12345] {
            let b = IoBuffer::new(len);
            assert_eq!(b.as_ref().len(), len);
            assert_eq!(b.as_ref().as_ptr() as usize % ALIGN, 0);
        }
    }

    #[test]
    fn random_fill_is_deterministic_and_not_constant() {
        let a = IoBuffer::random(4096, 7);
        let b = IoBuffer::random(4096, 7);
        assert_eq!(a.as_ref(), b.as_ref());
        let distinct: std::collections::HashSet<u8> = a.as_ref().iter().copied().collect();
        assert!(distinct.len() > 200);
    }
}
