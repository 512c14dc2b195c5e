//! What a step's monitor metrics say about its result, in a few words:
//! what changed most against a baseline and what bound the step ("w_await
//! +40%, %util 99% → disk-bound"). Pure: `compare`, `history` and the
//! reports call it with the figures they hold (each a mean over the
//! step's repetitions).

use super::summary::{Figure, MonitorMetric};

/// A device at least this busy (mean %util) bound the step.
pub const DISK_BUSY_PCT: f64 = 90.0;
/// Some task stalled on I/O at least this share of the step's time (PSI
/// `io some`) bound it too: a disk behind a blkio throttle (the lab's
/// `hdd` and `old`) shows a low %util, since the throttle holds requests
/// before they reach its queue, yet the reader waits on it all along.
/// PSI's host-wide share is weighted over the CPUs by how busy each is, so
/// on a host doing other work one stalled reader reads lower (~50% on the
/// lab's two shared CPUs): this holds on a quiet host, not on a busy one.
pub const IO_STALLED_PCT: f64 = 90.0;
/// User + sys at least this share of what the host's CPUs could give bound it.
pub const CPU_BUSY_SHARE: f64 = 0.9;
/// Writeback this large at some point (kB) means the kernel was flushing
/// dirty pages during the step, which a write's figures then include.
pub const WRITEBACK_KB: f64 = 4096.0;
/// A figure that moved less than this (relative) is not worth naming.
pub const CHANGE_SHARE: f64 = 0.10;
/// A share (%util, CPU, stalls) that moved less than this many points is not worth naming.
pub const CHANGE_POINTS: f64 = 5.0;
/// At most this many changes are named.
const MAX_CHANGES: usize = 3;

/// What bound a step, by its monitors.
#[derive(Clone, Debug, PartialEq)]
pub enum Bound {
    Disk {
        device: String,
        util_pct: f64,
    },
    /// Tasks waited on I/O nearly all the time, whatever %util says.
    IoStalled {
        pct: f64,
    },
    Cpu {
        busy_pct: f64,
    },
    Writeback {
        peak_kb: f64,
    },
}

impl Bound {
    pub fn word(&self) -> &'static str {
        match self {
            Bound::Disk { .. } | Bound::IoStalled { .. } => "disk-bound",
            Bound::Cpu { .. } => "CPU-bound",
            Bound::Writeback { .. } => "writeback",
        }
    }
}

fn find(m: &[MonitorMetric], figure: Figure) -> impl Iterator<Item = &MonitorMetric> {
    m.iter().filter(move |x| x.figure == figure)
}

fn host_figure(m: &[MonitorMetric], figure: Figure) -> Option<f64> {
    find(m, figure).next().map(|x| x.value)
}

/// What bound the step. `cpu_share_pct` is the share of the host's CPU time
/// the step could use at most (100 for all CPUs; 50 for one of two, or a
/// cgroup quota of one CPU on two): /proc/stat counts all of the host's.
pub fn bounds(m: &[MonitorMetric], cpu_share_pct: f64) -> Vec<Bound> {
    let mut out = Vec::new();
    let busiest = find(m, Figure::Util).max_by(|a, b| a.value.total_cmp(&b.value));
    if let Some(d) = busiest.filter(|d| d.value >= DISK_BUSY_PCT) {
        out.push(Bound::Disk { device: d.device.clone().unwrap_or_default(), util_pct: d.value });
    } else if let Some(pct) = host_figure(m, Figure::IoPressure).filter(|p| *p >= IO_STALLED_PCT) {
        out.push(Bound::IoStalled { pct });
    }
    let busy = host_figure(m, Figure::CpuUser).unwrap_or(0.0) + host_figure(m, Figure::CpuSys).unwrap_or(0.0);
    if cpu_share_pct > 0.0 && busy >= CPU_BUSY_SHARE * cpu_share_pct {
        out.push(Bound::Cpu { busy_pct: busy });
    }
    if let Some(peak) = host_figure(m, Figure::WritebackMax).filter(|w| *w >= WRITEBACK_KB) {
        out.push(Bound::Writeback { peak_kb: peak });
    }
    out
}

/// A figure for a person: `%util 99%`, `w_await 4.2 ms`.
fn shown(x: &MonitorMetric, several_devices: bool) -> String {
    let name = match (&x.device, several_devices) {
        (Some(d), true) => format!("{} {d}", x.figure.name()),
        _ => x.figure.name().to_string(),
    };
    match x.figure.unit() {
        "%" => format!("{name} {:.0}%", x.value),
        "kB" => format!("{name} {:.0} MiB", x.value / 1024.0),
        // The figure's name says MB/s already.
        "MB/s" => format!("{name} {:.1}", x.value),
        "ms" => format!("{name} {:.1} ms", x.value),
        unit => format!("{name} {} {unit}", crate::human::fmt_num(x.value)),
    }
}

/// How a figure moved from `base` to `new`, worth naming: its weight
/// among the changes and how it reads. A share (%) moves in points, or
/// user+sys 1% → 4% would read "+300%"; memory below 1 MiB and throughput
/// below 0.05 MB/s at both ends is too little to matter.
fn change(unit: &str, base: f64, new: f64) -> Option<(f64, String)> {
    match unit {
        "%" => {
            let points = new - base;
            (points.abs() >= CHANGE_POINTS)
                .then(|| (points.abs() / base.abs().max(10.0), format!("{base:.0}→{new:.0}%")))
        }
        "kB" if base.abs().max(new.abs()) < 1024.0 => None,
        "MB/s" if base.abs().max(new.abs()) < 0.05 => None,
        _ => {
            let rel = (base != 0.0).then(|| (new - base) / base.abs())?;
            (rel.abs() >= CHANGE_SHARE).then(|| (rel.abs(), format!("{:+.0}%", rel * 100.0)))
        }
    }
}

/// The short explanation of `new` (against `base` when there is one), or
/// `None` when the monitors have nothing to say.
pub fn explain(new: &[MonitorMetric], base: Option<&[MonitorMetric]>, cpu_share_pct: f64) -> Option<String> {
    let several = find(new, Figure::Util).count() > 1;
    let mut parts: Vec<String> = Vec::new();
    if let Some(base) = base {
        let mut changes: Vec<(f64, String)> = new
            .iter()
            .filter(|x| x.figure != Figure::Util)
            .filter_map(|x| {
                let b = base.iter().find(|b| b.figure == x.figure && b.device == x.device)?;
                let name = match (&x.device, several) {
                    (Some(d), true) => format!("{} {d}", x.figure.name()),
                    _ => x.figure.name().to_string(),
                };
                change(x.figure.unit(), b.value, x.value).map(|(score, text)| (score, format!("{name} {text}")))
            })
            .collect();
        changes.sort_by(|a, b| b.0.total_cmp(&a.0));
        parts.extend(changes.into_iter().take(MAX_CHANGES).map(|(_, s)| s));
    }
    // The busiest device's %util, always: whether the disk was the limit.
    if let Some(d) = find(new, Figure::Util).max_by(|a, b| a.value.total_cmp(&b.value)) {
        let before = base.and_then(|b| b.iter().find(|x| x.figure == Figure::Util && x.device == d.device));
        parts.push(match before {
            Some(b) if (b.value - d.value).abs() >= 10.0 => {
                let name =
                    if several { format!("%util {}", d.device.as_deref().unwrap_or_default()) } else { "%util".into() };
                format!("{name} {:.0}→{:.0}%", b.value, d.value)
            }
            _ => shown(d, several),
        });
    }
    let words: Vec<&str> = bounds(new, cpu_share_pct).iter().map(Bound::word).collect();
    if parts.is_empty() && words.is_empty() {
        return None;
    }
    let mut text = parts.join(", ");
    if !words.is_empty() {
        text = if text.is_empty() { words.join(", ") } else { format!("{text} → {}", words.join(", ")) };
    }
    Some(text)
}

/// One run's monitors of one step for a person, on a line under it: the
/// busiest device's figures, the CPU's, the peak of dirty memory, then what
/// bound the step ("loop3: %util 99%, rMB/s 6.2, r_await 21 ms; CPU user+sys
/// 3%, iowait 48% → disk-bound"). `None` without figures.
pub fn headline(m: &[MonitorMetric], cpu_share_pct: f64) -> Option<String> {
    let mut groups: Vec<String> = Vec::new();
    if let Some(d) = find(m, Figure::Util).max_by(|a, b| a.value.total_cmp(&b.value)) {
        let of = |f: Figure| m.iter().find(|x| x.figure == f && x.device == d.device);
        let mut parts = vec![shown(d, false)];
        for f in [Figure::ReadMbs, Figure::WriteMbs] {
            parts.extend(of(f).filter(|x| x.value >= 0.05).map(|x| shown(x, false)));
        }
        parts.extend([Figure::RAwait, Figure::WAwait].into_iter().filter_map(of).map(|x| shown(x, false)));
        groups.push(format!("{}: {}", d.device.as_deref().unwrap_or_default(), parts.join(", ")));
    }
    let (user, sys) = (host_figure(m, Figure::CpuUser), host_figure(m, Figure::CpuSys));
    if user.is_some() || sys.is_some() {
        let busy = user.unwrap_or(0.0) + sys.unwrap_or(0.0);
        let iowait = host_figure(m, Figure::CpuIowait).map(|w| format!(", iowait {w:.0}%")).unwrap_or_default();
        groups.push(format!("CPU user+sys {busy:.0}%{iowait}"));
    }
    if let Some(p) = host_figure(m, Figure::IoPressure) {
        groups.push(format!("I/O stalled {p:.0}%"));
    }
    if let Some(d) = find(m, Figure::DirtyMax).next().filter(|d| d.value >= 1024.0) {
        groups.push(shown(d, false));
    }
    if groups.is_empty() {
        return None;
    }
    let words: Vec<&str> = bounds(m, cpu_share_pct).iter().map(Bound::word).collect();
    let text = groups.join("; ");
    Some(if words.is_empty() { text } else { format!("{text} → {}", words.join(", ")) })
}

/// The share of the host's CPU time a step could use: its usable CPUs
/// (cpuset, quota) over the host's, 100 when either is unknown.
pub fn cpu_share_pct(usable_cpus: Option<f64>, host_cpus: Option<f64>) -> f64 {
    match (usable_cpus, host_cpus) {
        (Some(u), Some(h)) if h > 0.0 && u > 0.0 => (100.0 * u / h).min(100.0),
        _ => 100.0,
    }
}

/// [`cpu_share_pct`] from a host's stored facts (`limits.effective_cpus`
/// over `cpu.count`).
pub fn cpu_share_of_facts(facts: Option<&serde_json::Value>) -> f64 {
    let f = |p: &str| facts.and_then(|f| f.pointer(p)).and_then(serde_json::Value::as_f64);
    cpu_share_pct(f("/limits/effective_cpus"), f("/cpu/count"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(figure: Figure, device: Option<&str>, value: f64) -> MonitorMetric {
        MonitorMetric { figure, device: device.map(str::to_string), value }
    }

    fn disk(util: f64, w_await: f64) -> Vec<MonitorMetric> {
        vec![
            m(Figure::Util, Some("sdb"), util),
            m(Figure::WAwait, Some("sdb"), w_await),
            m(Figure::WriteMbs, Some("sdb"), 100.0),
            m(Figure::CpuUser, None, 2.0),
            m(Figure::CpuSys, None, 5.0),
        ]
    }

    #[test]
    fn a_saturated_disk_whose_await_grew_is_disk_bound() {
        let text = explain(&disk(99.0, 14.0), Some(&disk(97.0, 10.0)), 100.0).unwrap();
        assert_eq!(text, "w_await +40%, %util 99% → disk-bound");
    }

    #[test]
    fn a_disk_that_became_busy_shows_both_figures() {
        let text = explain(&disk(95.0, 10.0), Some(&disk(40.0, 10.0)), 100.0).unwrap();
        assert_eq!(text, "%util 40→95% → disk-bound");
    }

    #[test]
    fn cpu_bound_is_measured_against_the_cpus_the_step_could_use() {
        let mut busy = disk(30.0, 1.0);
        busy[3].value = 40.0; // user 40 + sys 5 of a host with two CPUs, one usable: 90% of its 50%
        assert_eq!(bounds(&busy, cpu_share_pct(Some(1.0), Some(2.0))), [Bound::Cpu { busy_pct: 45.0 }]);
        assert!(bounds(&busy, 100.0).is_empty(), "45% of all CPUs is not all of them");
        assert_eq!(explain(&busy, None, 50.0).unwrap(), "%util 30% → CPU-bound");
    }

    #[test]
    fn a_throttled_disk_is_disk_bound_by_its_stalls_though_its_util_is_low() {
        let mut throttled = disk(14.0, 2.0);
        throttled.push(m(Figure::IoPressure, None, 97.0));
        assert_eq!(bounds(&throttled, 100.0), [Bound::IoStalled { pct: 97.0 }]);
        let text = headline(&throttled, 100.0).unwrap();
        assert!(text.ends_with("; I/O stalled 97% → disk-bound"), "{text}");
        throttled[0].value = 99.0;
        assert_eq!(bounds(&throttled, 100.0).len(), 1, "one disk-bound, by its %util");
        throttled.last_mut().unwrap().value = 50.0;
        throttled[0].value = 14.0;
        assert!(bounds(&throttled, 100.0).is_empty(), "half the time stalled is not bound");
    }

    #[test]
    fn writeback_and_nothing_to_say() {
        let mut w = disk(20.0, 1.0);
        w.push(m(Figure::WritebackMax, None, 8192.0));
        assert_eq!(bounds(&w, 100.0), [Bound::Writeback { peak_kb: 8192.0 }]);
        assert_eq!(explain(&[], None, 100.0), None);
        let host_only = [m(Figure::CpuUser, None, 1.0)];
        assert_eq!(explain(&host_only, Some(&host_only), 100.0), None, "nothing moved, nothing bound");
    }

    #[test]
    fn the_headline_of_one_run_names_the_busiest_disk_the_cpu_and_what_bound_it() {
        let mut one = disk(99.0, 14.0);
        one.push(m(Figure::Util, Some("sdc"), 3.0));
        one.push(m(Figure::CpuIowait, None, 48.0));
        one.push(m(Figure::DirtyMax, None, 2048.0));
        assert_eq!(
            headline(&one, 100.0).unwrap(),
            "sdb: %util 99%, wMB/s 100.0, w_await 14.0 ms; CPU user+sys 7%, iowait 48%; Dirty_max 2 MiB → disk-bound"
        );
        assert_eq!(headline(&[], 100.0), None);
    }

    #[test]
    fn shares_move_in_points_and_small_amounts_are_not_named() {
        let base = [m(Figure::CpuSys, None, 1.0), m(Figure::DirtyMax, None, 200.0), m(Figure::CpuIowait, None, 10.0)];
        let new = [m(Figure::CpuSys, None, 4.0), m(Figure::DirtyMax, None, 500.0), m(Figure::CpuIowait, None, 40.0)];
        assert_eq!(explain(&new, Some(&base), 100.0).unwrap(), "%iowait 10→40%", "sys +3 points and 0.5 MiB are noise");
        let more = [m(Figure::DirtyMax, None, 4096.0)];
        assert_eq!(explain(&more, Some(&[m(Figure::DirtyMax, None, 1024.0)]), 100.0).unwrap(), "Dirty_max +300%");
    }

    #[test]
    fn small_changes_are_left_out_and_several_devices_are_named() {
        let mut two = disk(99.0, 10.5);
        two.push(m(Figure::Util, Some("sdc"), 20.0));
        let text = explain(&two, Some(&disk(99.0, 10.0)), 100.0).unwrap();
        assert_eq!(text, "%util sdb 99% → disk-bound", "w_await +5% is noise");
    }
}
