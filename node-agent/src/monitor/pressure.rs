//! `/proc/pressure/{cpu,io,memory}` (PSI, kernel 4.20+ with it enabled):
//! the `total=` microseconds some / all non-idle tasks stalled.

use super::counter::delta;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stall {
    pub some_us: u64,
    /// 0 where the file has no `full` line (cpu before 5.13).
    pub full_us: u64,
}

impl Stall {
    /// `None` without a `some` line.
    pub fn parse(text: &str) -> Option<Stall> {
        let total = |kind: &str| {
            let line = text.lines().find(|l| l.split_whitespace().next() == Some(kind))?;
            line.split_whitespace().find_map(|f| f.strip_prefix("total="))?.parse().ok()
        };
        Some(Stall { some_us: total("some")?, full_us: total("full").unwrap_or(0) })
    }
}

/// The share of the interval stalled, 0–100: some, full.
pub fn shares(p: &Stall, c: &Stall, secs: f64) -> (f64, f64) {
    let pct = |a, b| delta(a, b) as f64 / (secs * 1e6) * 100.0;
    (pct(p.some_us, c.some_us), pct(p.full_us, c.full_us))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_and_their_shares() {
        let p = Stall::parse(
            "some avg10=1.00 avg60=0.50 avg300=0.10 total=1000000\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=200\n",
        )
        .unwrap();
        assert_eq!(p, Stall { some_us: 1_000_000, full_us: 200 });
        let c = Stall { some_us: 1_500_000, full_us: 100_200 };
        assert_eq!(shares(&p, &c, 2.0), (25.0, 5.0));
        assert_eq!(Stall::parse("some avg10=0.00 total=7\n"), Some(Stall { some_us: 7, full_us: 0 }));
        assert_eq!(Stall::parse("full total=7\n"), None);
    }

    #[test]
    fn captured_io_pressure_of_a_loop_device_read() {
        let read = |n| {
            let p = format!("{}/tests/data/monitor/x86_64-6.18/pressure-io.{n}", env!("CARGO_MANIFEST_DIR"));
            Stall::parse(&std::fs::read_to_string(p).unwrap()).unwrap()
        };
        let (some, full) = shares(&read(1), &read(2), 1.39);
        assert!(some > 10.0 && some <= 100.0 && full < some, "{some} {full}");
    }
}
