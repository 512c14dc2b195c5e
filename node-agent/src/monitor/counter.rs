//! How far a kernel counter advanced between two reads.
//!
//! The kernel prints `/proc/diskstats`' I/O and sector counts as `unsigned
//! long` (32 bits on a 32-bit kernel) and its tick counts as `unsigned int`
//! (32 bits everywhere), so a counter can wrap. iostat gets the wrap right
//! by subtracting in the counter's own C type (iostat.c, `write_ext_stat`:
//! "the difference is still properly calculated if the result is of the same
//! type as the two values"). The agent parses into `u64` and cannot know the
//! kernel's width from its own (an i686 agent may run on a 64-bit kernel),
//! so it does what sysstat's `ll_sp_value` did for the same reason before
//! 64-bit counters were the rule: a counter that went down from a value
//! that fits in 32 bits wrapped at 2^32; one that went down from above that
//! was reset (a device re-created), and counts as no progress.

/// `cur - prev`, modulo 2^32 when a 32-bit counter wrapped; 0 for a reset.
pub fn delta(prev: u64, cur: u64) -> u64 {
    if cur >= prev {
        cur - prev
    } else if prev <= u32::MAX as u64 {
        (cur + (1u64 << 32)) - prev
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_counter_advances_wraps_at_32_bits_or_was_reset() {
        assert_eq!(delta(10, 25), 15);
        assert_eq!(delta(7, 7), 0);
        // 0xffff_fff0 → 0x10 on a 32-bit kernel: 0x20 more, not 4 billion less.
        assert_eq!(delta(0xffff_fff0, 0x10), 0x20);
        assert_eq!(delta(u32::MAX as u64, 0), 1);
        // A 64-bit counter cannot wrap in a lifetime: going down is a reset.
        assert_eq!(delta(1 << 40, 5), 0);
    }
}
