//! `/proc/vmstat`: paging and swapping counters and their rates.

use super::counter::delta;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Vm {
    /// Kilobytes paged in from / out to block devices.
    pub pgpgin: u64,
    pub pgpgout: u64,
    /// Pages swapped in / out.
    pub pswpin: u64,
    pub pswpout: u64,
}

impl Vm {
    /// `None` unless all four counters are there.
    pub fn parse(text: &str) -> Option<Vm> {
        let mut v = [None; 4];
        for l in text.lines() {
            let Some((key, val)) = l.split_once(' ') else { continue };
            let i = match key {
                "pgpgin" => 0,
                "pgpgout" => 1,
                "pswpin" => 2,
                "pswpout" => 3,
                _ => continue,
            };
            v[i] = val.trim().parse().ok();
        }
        Some(Vm { pgpgin: v[0]?, pgpgout: v[1]?, pswpin: v[2]?, pswpout: v[3]? })
    }
}

/// Per second over an interval (sar -B's pgpgin/s and pgpgout/s, sar -W's
/// pswpin/s and pswpout/s).
pub fn rates(p: &Vm, c: &Vm, secs: f64) -> [f64; 4] {
    let r = |a, b| delta(a, b) as f64 / secs;
    [r(p.pgpgin, c.pgpgin), r(p.pgpgout, c.pgpgout), r(p.pswpin, c.pswpin), r(p.pswpout, c.pswpout)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_four_counters_and_their_rates() {
        let p = Vm::parse("nr_free_pages 5\npgpgin 1000\npgpgout 200\npswpin 0\npswpout 4\npgpgoutclean 9\n").unwrap();
        assert_eq!(p, Vm { pgpgin: 1000, pgpgout: 200, pswpin: 0, pswpout: 4 });
        let c = Vm { pgpgin: 3000, pgpgout: 260, ..p };
        assert_eq!(rates(&p, &c, 2.0), [1000.0, 30.0, 0.0, 0.0]);
        assert_eq!(Vm::parse("pgpgin 1\n"), None);
    }

    #[test]
    fn captured_snapshots_page_in_what_the_loop_device_read() {
        let read = |n| {
            let p = format!("{}/tests/data/monitor/x86_64-6.18/vmstat.{n}", env!("CARGO_MANIFEST_DIR"));
            Vm::parse(&std::fs::read_to_string(p).unwrap()).unwrap()
        };
        let (p, c) = (read(1), read(2));
        // The capture read ~350 MB from loop0 with O_DIRECT: every device's
        // reads count in pgpgin, so it moved at least that much.
        let [pgin, ..] = rates(&p, &c, 1.0);
        assert!(pgin * 1024.0 >= (99717077.0 - 99015253.0) * 512.0 * 0.99, "pgpgin {pgin} kB");
    }
}
