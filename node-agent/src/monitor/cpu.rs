//! The `cpu` line of `/proc/stat` (all CPUs, in clock ticks) and the shares
//! of an interval as iostat's `avg-cpu` computes them.

/// The fields iostat reads; guest time is already inside user and nice.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuTimes {
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub irq: u64,
    pub softirq: u64,
    pub steal: u64,
}

impl CpuTimes {
    /// The first line starting `cpu `; fields a kernel does not print
    /// (iowait before 2.6, steal before 2.6.11) read as 0.
    pub fn parse(text: &str) -> Option<CpuTimes> {
        let line = text.lines().find(|l| l.starts_with("cpu "))?;
        let mut v = [0u64; 8];
        for (slot, f) in v.iter_mut().zip(line.split_whitespace().skip(1)) {
            *slot = f.parse().ok()?;
        }
        let [user, nice, system, idle, iowait, irq, softirq, steal] = v;
        Some(CpuTimes { user, nice, system, idle, iowait, irq, softirq, steal })
    }

    fn total(&self) -> u64 {
        self.user + self.nice + self.system + self.idle + self.iowait + self.irq + self.softirq + self.steal
    }
}

/// Percent of all CPUs' time in the interval.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CpuShares {
    /// iostat's %user: without nice.
    pub user_pct: f64,
    /// iostat's %system: system, hard and soft interrupts.
    pub sys_pct: f64,
    pub iowait_pct: f64,
    pub idle_pct: f64,
}

impl CpuShares {
    /// iostat.c's `write_plain_cpu_stat`: each share of the total ticks
    /// (`get_interval`, at least 1), a counter that went down (iowait and
    /// idle can, on some kernels) counting 0 (`ll_sp_value`).
    pub fn between(p: &CpuTimes, c: &CpuTimes) -> CpuShares {
        let tot = c.total().saturating_sub(p.total()).max(1) as f64;
        let share = |a: u64, b: u64| b.saturating_sub(a) as f64 / tot * 100.0;
        CpuShares {
            user_pct: share(p.user, c.user),
            sys_pct: share(p.system + p.irq + p.softirq, c.system + c.irq + c.softirq),
            iowait_pct: share(p.iowait, c.iowait),
            idle_pct: share(p.idle, c.idle),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(name: &str) -> String {
        std::fs::read_to_string(format!("{}/tests/data/monitor/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
    }

    #[test]
    fn the_cpu_line_and_its_shares() {
        let p = CpuTimes::parse("cpu  100 10 50 800 20 5 15 0 0 0\ncpu0 1 2 3 4\n").unwrap();
        assert_eq!(
            p,
            CpuTimes { user: 100, nice: 10, system: 50, idle: 800, iowait: 20, irq: 5, softirq: 15, steal: 0 }
        );
        let c = CpuTimes { user: 130, nice: 10, system: 60, idle: 850, iowait: 30, irq: 5, softirq: 15, steal: 0 };
        let s = CpuShares::between(&p, &c);
        assert_eq!((s.user_pct, s.sys_pct, s.iowait_pct, s.idle_pct), (30.0, 10.0, 10.0, 50.0));
        // An old kernel's 4-field line, and a counter that went down.
        let old = CpuTimes::parse("cpu  1 2 3 4\n").unwrap();
        assert_eq!((old.idle, old.iowait), (4, 0));
        let back = CpuTimes { idle: 790, ..c };
        assert_eq!(CpuShares::between(&p, &back).idle_pct, 0.0);
        assert_eq!(CpuTimes::parse("intr 5\n"), None);
    }

    #[test]
    fn captured_snapshots_give_shares_that_add_up() {
        for arch in ["x86_64-6.18", "i686-old"] {
            let p = CpuTimes::parse(&data(&format!("{arch}/stat.1"))).unwrap();
            let c = CpuTimes::parse(&data(&format!("{arch}/stat.2"))).unwrap();
            assert!(c.total() > p.total(), "{arch}: {p:?} → {c:?}");
            let s = CpuShares::between(&p, &c);
            let nice_steal = (c.nice - p.nice + c.steal - p.steal) as f64 / (c.total() - p.total()) as f64 * 100.0;
            let sum = s.user_pct + s.sys_pct + s.iowait_pct + s.idle_pct + nice_steal;
            assert!((sum - 100.0).abs() < 1e-9, "{arch}: {s:?} sums to {sum}");
        }
    }
}
