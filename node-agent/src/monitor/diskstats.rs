//! `/proc/diskstats` and the `iostat -x` figures of an interval.
//!
//! A line is `major minor name` and then 11 fields (before 4.18), 15 (4.18
//! added discards) or 17 (5.5 added flushes): 14, 18 or 20 in all
//! (Documentation/admin-guide/iostats.rst). Fields a kernel does not print
//! read as 0.

use super::counter::delta;

/// One device's counters; ticks are milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DiskStat {
    pub rd_ios: u64,
    pub rd_merges: u64,
    pub rd_sectors: u64,
    pub rd_ticks: u64,
    pub wr_ios: u64,
    pub wr_merges: u64,
    pub wr_sectors: u64,
    pub wr_ticks: u64,
    pub ios_in_progress: u64,
    pub tot_ticks: u64,
    pub rq_ticks: u64,
    pub dc_ios: u64,
    pub dc_merges: u64,
    pub dc_sectors: u64,
    pub dc_ticks: u64,
    pub fl_ios: u64,
    pub fl_ticks: u64,
}

impl DiskStat {
    /// The counters of one line (after the name); `None` for fewer than 11
    /// or a field that is not a number.
    pub fn parse_fields<'a>(fields: impl Iterator<Item = &'a str>) -> Option<DiskStat> {
        let mut v = [0u64; 17];
        let mut n = 0;
        for (slot, f) in v.iter_mut().zip(fields) {
            *slot = f.parse().ok()?;
            n += 1;
        }
        if n < 11 {
            return None;
        }
        let [rd_ios, rd_merges, rd_sectors, rd_ticks, wr_ios, wr_merges, wr_sectors, wr_ticks, ios_in_progress, tot_ticks, rq_ticks, dc_ios, dc_merges, dc_sectors, dc_ticks, fl_ios, fl_ticks] =
            v;
        Some(DiskStat {
            rd_ios,
            rd_merges,
            rd_sectors,
            rd_ticks,
            wr_ios,
            wr_merges,
            wr_sectors,
            wr_ticks,
            ios_in_progress,
            tot_ticks,
            rq_ticks,
            dc_ios,
            dc_merges,
            dc_sectors,
            dc_ticks,
            fl_ios,
            fl_ticks,
        })
    }
}

/// Every device of a `/proc/diskstats` text, in its order; malformed lines
/// are skipped.
pub fn parse(text: &str) -> Vec<(String, DiskStat)> {
    text.lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let name = f.nth(2)?;
            Some((name.to_string(), DiskStat::parse_fields(f)?))
        })
        .collect()
}

/// The counters of the named devices, in the order asked (`None` for one
/// the text lacks): one pass over the text, nothing allocated per line.
pub fn find(text: &str, names: &[String], out: &mut [Option<DiskStat>]) {
    out.iter_mut().for_each(|o| *o = None);
    for l in text.lines() {
        let mut f = l.split_whitespace();
        let Some(name) = f.nth(2) else { continue };
        if let Some(i) = names.iter().position(|n| n == name) {
            out[i] = DiskStat::parse_fields(f);
        }
    }
}

/// `iostat -x`'s figures for one device over one interval.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DiskFigures {
    pub r_s: f64,
    pub w_s: f64,
    /// 10^6 bytes a second (iostat's own MB is 2^20; its rkB/s is 2^10).
    pub rmb_s: f64,
    pub wmb_s: f64,
    pub r_await_ms: f64,
    pub w_await_ms: f64,
    pub aqu_sz: f64,
    /// Not capped at 100: iostat does not cap it either, and a figure a bit
    /// over 100 says the interval's clock and the kernel's ticks disagree.
    pub util_pct: f64,
}

impl DiskFigures {
    /// iostat.c's `write_ext_stat` and rd_stats.c's `compute_ext_disk_stats`
    /// with the interval in seconds (iostat's `S_VALUE(m, n, itv)` with
    /// `itv` in centiseconds is `(n - m) / seconds`).
    pub fn between(prev: &DiskStat, cur: &DiskStat, secs: f64) -> DiskFigures {
        let d = |a: u64, b: u64| delta(a, b) as f64;
        let per_s = |a, b| d(a, b) / secs;
        let await_ms = |ios: f64, ticks: f64| if ios > 0.0 { ticks / ios } else { 0.0 };
        let (rd, wr) = (d(prev.rd_ios, cur.rd_ios), d(prev.wr_ios, cur.wr_ios));
        DiskFigures {
            r_s: rd / secs,
            w_s: wr / secs,
            rmb_s: per_s(prev.rd_sectors, cur.rd_sectors) * 512.0 / 1e6,
            wmb_s: per_s(prev.wr_sectors, cur.wr_sectors) * 512.0 / 1e6,
            r_await_ms: await_ms(rd, d(prev.rd_ticks, cur.rd_ticks)),
            w_await_ms: await_ms(wr, d(prev.wr_ticks, cur.wr_ticks)),
            // Milliseconds of waiting requests per millisecond.
            aqu_sz: per_s(prev.rq_ticks, cur.rq_ticks) / 1000.0,
            // Milliseconds busy per second, as a percentage.
            util_pct: per_s(prev.tot_ticks, cur.tot_ticks) / 10.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(name: &str) -> String {
        let p = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/monitor/");
        std::fs::read_to_string(format!("{p}{name}")).unwrap()
    }

    #[test]
    fn all_three_field_layouts() {
        // 4.4 (14 fields), 4.19 (18), 6.x (20).
        let t = "   8       0 sda 10 1 200 30 40 2 500 60 3 70 90\n\
                 \x20  8       1 sda1 11 1 201 31 41 2 501 61 0 71 91 5 6 7 8\n\
                 \x20  8      16 sdb 12 1 202 32 42 2 502 62 0 72 92 5 6 7 8 9 10\n\
                 garbage\n   1 2 short 1 2 3\n";
        let all = parse(t);
        assert_eq!(all.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), ["sda", "sda1", "sdb"]);
        let sda = all[0].1;
        assert_eq!((sda.rd_ios, sda.rd_sectors, sda.wr_ticks, sda.ios_in_progress, sda.rq_ticks), (10, 200, 60, 3, 90));
        assert_eq!((sda.dc_ios, sda.fl_ios), (0, 0));
        assert_eq!((all[1].1.dc_ios, all[1].1.dc_ticks, all[1].1.fl_ios), (5, 8, 0));
        assert_eq!((all[2].1.fl_ios, all[2].1.fl_ticks), (9, 10));
        let mut found = [None; 2];
        find(t, &["sdb".to_string(), "nvme0n1".to_string()], &mut found);
        assert_eq!(found, [Some(all[2].1), None]);
    }

    #[test]
    fn captured_x86_64_snapshots_give_the_loop_device_s_reads() {
        let (a, b) = (parse(&data("x86_64-6.18/diskstats.1")), parse(&data("x86_64-6.18/diskstats.2")));
        let get = |v: &[(String, DiskStat)]| v.iter().find(|(n, _)| n == "loop0").unwrap().1;
        let (p, c) = (get(&a), get(&b));
        // uptime 42893.77 → 42895.16
        let f = DiskFigures::between(&p, &c, 1.39);
        assert!((f.r_s - (578080.0 - 572597.0) / 1.39).abs() < 1e-9, "{f:?}");
        assert!((f.rmb_s - (99717077.0 - 99015253.0) * 512.0 / 1e6 / 1.39).abs() < 1e-9, "{f:?}");
        assert!((f.r_await_ms - (431388.0 - 430480.0) / 5483.0).abs() < 1e-12, "{f:?}");
        assert!((f.util_pct - (181576.0 - 180672.0) / 1.39 / 10.0).abs() < 1e-9, "{f:?}");
        assert_eq!((f.w_s, f.w_await_ms), (0.0, 0.0));
    }

    #[test]
    fn captured_i686_snapshots_parse_and_advance() {
        let (a, b) = (parse(&data("i686-old/diskstats.1")), parse(&data("i686-old/diskstats.2")));
        assert!(!a.is_empty() && a.len() == b.len(), "{} vs {} devices", a.len(), b.len());
        let moved = a.iter().zip(&b).any(|((_, p), (_, c))| c.rd_sectors > p.rd_sectors || c.wr_sectors > p.wr_sectors);
        assert!(moved, "no device moved a sector between the two i686 captures");
    }

    #[test]
    fn a_32_bit_wrap_gives_the_interval_s_figures_not_a_negative_or_huge_one() {
        // Hand-made: a 32-bit kernel's counters just before and after 2^32
        // (ios, sectors and every tick count wrapped in this interval).
        let text = data("wrap32/diskstats");
        let v = parse(&text);
        let (p, c) = (v[0].1, v[1].1);
        let f = DiskFigures::between(&p, &c, 2.0);
        assert_eq!(f.r_s, 100.0 / 2.0);
        assert_eq!(f.rmb_s, 800.0 * 512.0 / 1e6 / 2.0);
        assert_eq!(f.r_await_ms, 500.0 / 100.0);
        assert_eq!(f.util_pct, 2000.0 / 2.0 / 10.0);
        assert_eq!(f.aqu_sz, 3000.0 / 2.0 / 1000.0);
        assert_eq!((f.w_s, f.wmb_s, f.w_await_ms), (20.0 / 2.0, 160.0 * 512.0 / 1e6 / 2.0, 40.0 / 20.0));
    }
}
