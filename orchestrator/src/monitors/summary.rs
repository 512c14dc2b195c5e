//! A step's monitor series reduced to a few figures per step: per device
//! mean %util, r_await, w_await, rMB/s, wMB/s and max aqu-sz; mean CPU
//! user, sys and iowait; max Dirty and Writeback; mean I/O pressure where
//! the kernel has PSI. Means are over time (each interval weighted by its
//! length: the last one may be short); an await is weighted by the
//! requests of each interval too, so it is the mean time of the step's
//! requests, as `iostat -x` over the whole step would print it.
//!
//! Each figure is a metric named `<figure>` or `<figure> <device>`
//! (`%util loop3`), which `parse_name` reads back.

use benchrig_wire::monitor::MonitorSeries;
use benchrig_wire::steps::{Better, Metric};

/// One summarised figure. The names are iostat's where iostat has one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Figure {
    /// Mean %util of a device.
    Util,
    /// Mean r_await / w_await of a device (ms per request).
    RAwait,
    WAwait,
    /// Mean rMB/s / wMB/s of a device.
    ReadMbs,
    WriteMbs,
    /// Largest aqu-sz of an interval.
    AquSzMax,
    /// Mean shares of all CPUs' time.
    CpuUser,
    CpuSys,
    CpuIowait,
    /// Largest Dirty / Writeback at an interval's end, kB.
    DirtyMax,
    WritebackMax,
    /// Mean share of time some task stalled on I/O (PSI).
    IoPressure,
}

impl Figure {
    pub const ALL: [Figure; 12] = [
        Figure::Util,
        Figure::RAwait,
        Figure::WAwait,
        Figure::ReadMbs,
        Figure::WriteMbs,
        Figure::AquSzMax,
        Figure::CpuUser,
        Figure::CpuSys,
        Figure::CpuIowait,
        Figure::DirtyMax,
        Figure::WritebackMax,
        Figure::IoPressure,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Figure::Util => "%util",
            Figure::RAwait => "r_await",
            Figure::WAwait => "w_await",
            Figure::ReadMbs => "rMB/s",
            Figure::WriteMbs => "wMB/s",
            Figure::AquSzMax => "aqu-sz_max",
            Figure::CpuUser => "%user",
            Figure::CpuSys => "%sys",
            Figure::CpuIowait => "%iowait",
            Figure::DirtyMax => "Dirty_max",
            Figure::WritebackMax => "Writeback_max",
            Figure::IoPressure => "io_pressure",
        }
    }

    pub fn unit(self) -> &'static str {
        match self {
            Figure::Util | Figure::CpuUser | Figure::CpuSys | Figure::CpuIowait | Figure::IoPressure => "%",
            Figure::RAwait | Figure::WAwait => "ms",
            Figure::ReadMbs | Figure::WriteMbs => "MB/s",
            Figure::AquSzMax => "requests",
            Figure::DirtyMax | Figure::WritebackMax => "kB",
        }
    }

    /// Which way is better, for a person reading it (never judged).
    pub fn better(self) -> Better {
        match self {
            Figure::ReadMbs | Figure::WriteMbs => Better::Higher,
            _ => Better::Lower,
        }
    }

    /// Whether the figure is one device's.
    pub fn per_device(self) -> bool {
        matches!(
            self,
            Figure::Util | Figure::RAwait | Figure::WAwait | Figure::ReadMbs | Figure::WriteMbs | Figure::AquSzMax
        )
    }
}

/// One summarised figure of one step.
#[derive(Clone, Debug, PartialEq)]
pub struct MonitorMetric {
    pub figure: Figure,
    pub device: Option<String>,
    pub value: f64,
}

impl MonitorMetric {
    pub fn name(&self) -> String {
        match &self.device {
            Some(d) => format!("{} {d}", self.figure.name()),
            None => self.figure.name().to_string(),
        }
    }

    pub fn to_metric(&self) -> Metric {
        Metric { name: self.name(), value: self.value, unit: self.figure.unit().into(), better: self.figure.better() }
    }
}

/// A monitor metric's name back into its figure and device.
pub fn parse_name(name: &str) -> Option<(Figure, Option<String>)> {
    let (head, device) = match name.split_once(' ') {
        Some((h, d)) => (h, Some(d.to_string())),
        None => (name, None),
    };
    let figure = Figure::ALL.into_iter().find(|f| f.name() == head)?;
    (figure.per_device() == device.is_some()).then_some((figure, device))
}

/// Stored monitor metrics (name, values over repetitions) back into
/// figures, each the mean of its values; names that are no figure are
/// left out.
pub fn from_stored<'a>(metrics: impl IntoIterator<Item = (&'a str, &'a [f64])>) -> Vec<MonitorMetric> {
    metrics
        .into_iter()
        .filter(|(_, v)| !v.is_empty())
        .filter_map(|(name, v)| {
            let (figure, device) = parse_name(name)?;
            Some(MonitorMetric { figure, device, value: v.iter().sum::<f64>() / v.len() as f64 })
        })
        .collect()
}

/// Each interval's length in seconds (entry `i` ends at `t[i]`, the first
/// begins at 0).
fn durations(t: &[f64]) -> Vec<f64> {
    t.iter().scan(0.0, |prev, &x| Some((x - std::mem::replace(prev, x)).max(0.0))).collect()
}

/// Σ x·w / Σ w over the entries both have; `None` when the weights sum to 0.
fn weighted_mean(x: &[f64], w: &[f64]) -> Option<f64> {
    let (sum, total) = x.iter().zip(w).fold((0.0, 0.0), |(s, t), (x, w)| (s + x * w, t + w));
    (total > 0.0).then(|| sum / total)
}

fn max(x: &[f64]) -> Option<f64> {
    x.iter().copied().filter(|v| v.is_finite()).reduce(f64::max)
}

/// The summaries of one step's series, in a fixed order: devices in the
/// series' order, then CPU, memory and pressure.
pub fn summarise(s: &MonitorSeries) -> Vec<MonitorMetric> {
    let dt = durations(&s.t);
    let mut out = Vec::new();
    let mut push = |figure: Figure, device: Option<&str>, value: Option<f64>| {
        if let Some(value) = value.filter(|v| v.is_finite()) {
            out.push(MonitorMetric { figure, device: device.map(str::to_string), value });
        }
    };
    for d in &s.devices {
        let dev = Some(d.device.as_str());
        // Requests of each interval: its rate times its length.
        let weights = |rate: &[f64]| rate.iter().zip(&dt).map(|(r, t)| r * t).collect::<Vec<_>>();
        push(Figure::Util, dev, weighted_mean(&d.util_pct, &dt));
        push(Figure::ReadMbs, dev, weighted_mean(&d.rmb_s, &dt));
        push(Figure::WriteMbs, dev, weighted_mean(&d.wmb_s, &dt));
        push(Figure::RAwait, dev, weighted_mean(&d.r_await_ms, &weights(&d.r_s)));
        push(Figure::WAwait, dev, weighted_mean(&d.w_await_ms, &weights(&d.w_s)));
        push(Figure::AquSzMax, dev, max(&d.aqu_sz));
    }
    push(Figure::CpuUser, None, weighted_mean(&s.cpu.user_pct, &dt));
    push(Figure::CpuSys, None, weighted_mean(&s.cpu.sys_pct, &dt));
    push(Figure::CpuIowait, None, weighted_mean(&s.cpu.iowait_pct, &dt));
    push(Figure::DirtyMax, None, max(&s.memory.dirty_kb));
    push(Figure::WritebackMax, None, max(&s.memory.writeback_kb));
    if let Some(p) = &s.pressure {
        push(Figure::IoPressure, None, weighted_mean(&p.io_some_pct, &dt));
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use benchrig_wire::monitor::{CpuSeries, DeviceSeries, MemorySeries};

    /// Three intervals of 1 s, 1 s and 0.5 s on one disk.
    pub(crate) fn series() -> MonitorSeries {
        MonitorSeries {
            interval_ms: 1000,
            t: vec![1.0, 2.0, 2.5],
            devices: vec![DeviceSeries {
                device: "loop3".into(),
                r_s: vec![100.0, 300.0, 0.0],
                w_s: vec![0.0, 0.0, 0.0],
                rmb_s: vec![10.0, 30.0, 0.0],
                wmb_s: vec![0.0, 0.0, 0.0],
                r_await_ms: vec![2.0, 6.0, 0.0],
                w_await_ms: vec![0.0, 0.0, 0.0],
                aqu_sz: vec![0.5, 1.8, 0.0],
                util_pct: vec![100.0, 100.0, 50.0],
            }],
            cpu: CpuSeries {
                user_pct: vec![1.0, 3.0, 6.0],
                sys_pct: vec![2.0, 2.0, 2.0],
                iowait_pct: vec![40.0, 50.0, 0.0],
                idle_pct: vec![57.0, 45.0, 92.0],
            },
            memory: MemorySeries {
                dirty_kb: vec![10.0, 300.0, 20.0],
                writeback_kb: vec![0.0, 0.0, 0.0],
                cached_kb: vec![1e5, 2e5, 2e5],
            },
            vm: Default::default(),
            pressure: None,
        }
    }

    fn value(m: &[MonitorMetric], name: &str) -> f64 {
        m.iter().find(|x| x.name() == name).unwrap_or_else(|| panic!("no {name} in {m:?}")).value
    }

    #[test]
    fn means_weigh_each_interval_by_its_length_and_awaits_by_its_requests() {
        let m = summarise(&series());
        // (100·1 + 100·1 + 50·0.5) / 2.5
        assert_eq!(value(&m, "%util loop3"), 90.0);
        // (10 + 30 + 0) / 2.5
        assert_eq!(value(&m, "rMB/s loop3"), 16.0);
        // 100 reads at 2 ms and 300 at 6 ms: 5 ms each on average, not (2+6)/2.
        assert_eq!(value(&m, "r_await loop3"), 5.0);
        assert!(m.iter().all(|x| x.name() != "w_await loop3"), "no write, no w_await: {m:?}");
        assert_eq!(value(&m, "aqu-sz_max loop3"), 1.8);
        // (1 + 3 + 6·0.5) / 2.5
        assert_eq!(value(&m, "%user"), 2.8);
        assert_eq!(value(&m, "%iowait"), 36.0);
        assert_eq!(value(&m, "Dirty_max"), 300.0);
        assert!(m.iter().all(|x| x.figure != Figure::IoPressure), "no PSI, no pressure figure");
    }

    #[test]
    fn a_step_shorter_than_the_interval_has_its_one_entry() {
        let mut s = series();
        s.t = vec![0.2];
        for d in &mut s.devices {
            d.util_pct = vec![75.0];
        }
        assert_eq!(value(&summarise(&s), "%util loop3"), 75.0);
    }

    #[test]
    fn names_read_back_into_figure_and_device() {
        for m in summarise(&series()) {
            assert_eq!(parse_name(&m.name()), Some((m.figure, m.device.clone())), "{}", m.name());
        }
        assert_eq!(parse_name("%util"), None, "a device figure names its device");
        assert_eq!(parse_name("%iowait sda"), None, "a host figure names none");
        assert_eq!(parse_name("throughput"), None);
    }
}
