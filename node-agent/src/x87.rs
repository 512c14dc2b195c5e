//! Floats on an x86 CPU without SSE2 round as they do everywhere else.
//!
//! The i586 build computes with the x87 FPU, whose registers keep a 64-bit
//! mantissa: a rate computed there could differ in its last bit from the
//! same rate on an SSE2 host (the i686 and x86_64 builds), depending on
//! where the compiler spilled a register. Setting the FPU's precision
//! control to 53 bits (double) makes every operation round as IEEE double
//! arithmetic does, so the agent's figures are bit for bit the other
//! builds'. `ci/emulated-cpus.sh` runs the unit tests, which compare
//! exact figures, on an emulated Pentium. Elsewhere this does nothing.
//!
//! The setting is per thread and a new thread inherits its creator's, so it
//! is made once, before `main` (an `.init_array` entry, which also covers
//! the unit tests' harness), and again at the top of `main`.

/// Set the x87 precision control to double (53-bit mantissa); a no-op on
/// builds that compute floats with SSE2 or on other architectures.
pub fn double_precision() {
    #[cfg(all(target_arch = "x86", not(target_feature = "sse2")))]
    {
        let mut cw: u16 = 0;
        // SAFETY: fnstcw stores the FPU control word in `cw`; fldcw loads
        // it back with bits 8-9 (precision control) set to 10b, double.
        // Neither touches memory but `cw`, nor the stack.
        unsafe {
            std::arch::asm!("fnstcw word ptr [{0}]", in(reg) &mut cw, options(nostack));
            cw = (cw & !0x0300) | 0x0200;
            std::arch::asm!("fldcw word ptr [{0}]", in(reg) &cw, options(nostack, readonly));
        }
    }
}

#[cfg(all(target_arch = "x86", not(target_feature = "sse2")))]
extern "C" fn before_main() {
    double_precision();
}

#[cfg(all(target_arch = "x86", not(target_feature = "sse2")))]
#[used]
#[unsafe(link_section = ".init_array")]
static BEFORE_MAIN: extern "C" fn() = before_main;

#[cfg(test)]
mod tests {
    /// What x87 extended precision gets wrong and double precision right:
    /// 1 + 2^-60 - 1 is 0 in doubles and 2^-60 in 64-bit mantissas. On SSE2
    /// builds it is 0 anyway; on the i586 build it is 0 only once
    /// `double_precision` has run (before main, for this test too).
    #[test]
    fn floats_round_to_doubles_on_every_build() {
        let tiny = std::hint::black_box(2f64.powi(-60));
        let one = std::hint::black_box(1.0f64);
        assert_eq!((one + tiny) - one, 0.0);
        // A rate as the agent computes one: what the i686 build gives.
        let bytes = std::hint::black_box(103_079_215_104.0f64);
        let secs = std::hint::black_box(3.3239f64);
        assert_eq!((bytes / secs / 1e6).to_bits(), 31011.52715304311f64.to_bits());
    }
}
