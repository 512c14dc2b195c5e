//! Answering at the model's completion time on a VM whose sleeps wake late.
//!
//! A sleep on the lab's VM wakes 0.2–0.3 ms late when the machine is quiet
//! (timer slack and the hypervisor's timer), and by milliseconds when the
//! host under it is busy, a vCPU that halted for a 14 ms seek waiting for
//! the host to run it again (one CI run saw every request 1.5–2.5 ms slower
//! than the model). Every late wake-up lengthens a modelled request by as much.
//! So [`Waker`] sleeps to a margin before the due time and yields the rest,
//! the margin following how late this machine's sleeps have been woken of
//! late: up at once to a late wake-up seen, down slowly when they come back
//! on time, between [`Waker::MIN`] and [`Waker::MAX`]. The price is CPU
//! while yielding (up to `MAX` a request, outside the hosts' cgroups, like a
//! disk's firmware), paid only while the machine wakes late.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How late sleeps have been woken of late, in nanoseconds: the envelope
/// the margin is built on. Shared by the daemon's threads; a lost update
/// between two of them costs one estimate, nothing more.
#[derive(Debug)]
pub struct Waker {
    late_ns: AtomicU64,
}

impl Default for Waker {
    fn default() -> Waker {
        Waker { late_ns: AtomicU64::new(Self::MIN.as_nanos() as u64) }
    }
}

impl Waker {
    /// The quiet machine's late wake-up (measured: p50 0.2 ms, max 0.3).
    pub const MIN: Duration = Duration::from_micros(300);
    /// Past this, yield no longer: a machine this late is too loaded for
    /// the model to hold, and the daemon must not eat a core per disk.
    pub const MAX: Duration = Duration::from_millis(4);
    /// Over the envelope, for a wake-up a little later than the last ones.
    const HEADROOM: Duration = Duration::from_micros(100);

    /// How long before a due time to stop sleeping and start yielding.
    pub fn margin(&self) -> Duration {
        (Duration::from_nanos(self.late_ns.load(Ordering::Relaxed)) + Self::HEADROOM).clamp(Self::MIN, Self::MAX)
    }

    /// Takes in one sleep's lateness: the envelope rises to it at once and
    /// decays towards it by an eighth of the gap (so a burst of late
    /// wake-ups sets the margin for the next dozens of requests).
    pub fn observe(&self, late: Duration) {
        let late = (late.as_nanos() as u64).min(Self::MAX.as_nanos() as u64);
        let was = self.late_ns.load(Ordering::Relaxed);
        let now = if late >= was { late } else { was - (was - late) / 8 };
        self.late_ns.store(now, Ordering::Relaxed);
    }

    /// Returns at `due` (or as soon after it as this thread runs again):
    /// a sleep to the margin before it, then yields.
    pub fn wait_until(&self, due: Instant) {
        let margin = self.margin();
        let now = Instant::now();
        if let Some(sleep) = due.checked_duration_since(now).and_then(|left| left.checked_sub(margin)) {
            if !sleep.is_zero() {
                let meant = now + sleep;
                std::thread::sleep(sleep);
                self.observe(Instant::now().saturating_duration_since(meant));
            }
        }
        while Instant::now() < due {
            std::thread::yield_now();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn the_margin_starts_at_the_quiet_machines_and_stays_within_bounds() {
        let w = Waker::default();
        assert_eq!(w.margin(), Waker::MIN + Waker::HEADROOM);
        w.observe(Duration::ZERO);
        assert!(w.margin() >= Waker::MIN);
        w.observe(Duration::from_secs(1));
        assert_eq!(w.margin(), Waker::MAX);
    }

    #[test]
    fn a_late_wake_up_raises_the_margin_at_once_and_on_time_ones_lower_it_slowly() {
        let w = Waker::default();
        w.observe(2 * MS);
        assert_eq!(w.margin(), 2 * MS + Waker::HEADROOM);
        w.observe(Duration::from_micros(200));
        let after_one = w.margin();
        assert!(after_one < 2 * MS + Waker::HEADROOM && after_one > MS, "{after_one:?}");
        for _ in 0..100 {
            w.observe(Duration::from_micros(100));
        }
        assert_eq!(w.margin(), Waker::MIN, "back to the quiet machine's margin");
    }

    #[test]
    fn wait_until_returns_at_the_due_time_not_before() {
        let w = Waker::default();
        for ms in [0u64, 1, 5] {
            let due = Instant::now() + Duration::from_millis(ms);
            w.wait_until(due);
            assert!(Instant::now() >= due);
        }
        // A due time already past returns at once.
        let past = Instant::now();
        w.wait_until(past);
    }
}
