//! What a timed region cost: wall clock, CPU time (self and waited-for
//! children) and the I/O the block devices saw.

use crate::monitor::{Sampler, Watch};
use crate::outbox::StepCtx;
use crate::sysfs::SysView;
use benchrig_wire::steps::{DevIo, Usage};
use std::time::Instant;

pub struct Meter {
    start: Instant,
    cpu: (f64, f64),
    devices: Vec<(String, DevStat)>,
    sys: std::path::PathBuf,
    /// Sampling /proc for the step's monitors, when its request asked.
    monitor: Option<(Sampler, Watch)>,
}

impl Meter {
    /// Start measuring; `devices` are kernel names whose counters to diff
    /// (and, when the step asked for monitors, to sample: the monitors'
    /// first reading is taken before the clock starts and the last after
    /// it stops, so they cost the timed region only their thread's ticks).
    pub fn start(ctx: &StepCtx, view: &SysView, devices: &[String]) -> Meter {
        let monitor = ctx.watch.config().map(|cfg| (Sampler::start(&view.proc_, devices, cfg), ctx.watch.clone()));
        Meter { monitor, ..Meter::without_monitors(&view.sys, devices) }
    }

    /// For an action that times a change (`volume`): monitors are for measured steps.
    pub fn without_monitors(sys: &std::path::Path, devices: &[String]) -> Meter {
        let devices = devices.iter().map(|d| (d.clone(), DevStat::read(sys, d).unwrap_or_default())).collect();
        Meter { start: Instant::now(), cpu: cpu_times(), devices, sys: sys.to_path_buf(), monitor: None }
    }

    /// The usage of the region; its monitors' series go to the step's `Watch`.
    pub fn stop(mut self) -> Usage {
        let wall_s = self.start.elapsed().as_secs_f64();
        if let Some((sampler, watch)) = self.monitor.take() {
            if let Some(series) = sampler.finish() {
                watch.put(series);
            }
        }
        let (u, s) = cpu_times();
        let devices = self
            .devices
            .into_iter()
            .map(|(name, before)| {
                let after = DevStat::read(&self.sys, &name).unwrap_or_default();
                after.since(&before, name)
            })
            .collect();
        Usage { wall_s, user_s: u - self.cpu.0, sys_s: s - self.cpu.1, devices }
    }
}

/// User and system CPU seconds of the agent and its reaped children.
fn cpu_times() -> (f64, f64) {
    fn get(who: libc::c_int) -> (f64, f64) {
        // SAFETY: getrusage only writes into the struct we own; rustix has no wrapper for it.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        if unsafe { libc::getrusage(who, &mut ru) } != 0 {
            return (0.0, 0.0);
        }
        let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
        (t(ru.ru_utime), t(ru.ru_stime))
    }
    let (su, ss) = get(libc::RUSAGE_SELF);
    let (cu, cs) = get(libc::RUSAGE_CHILDREN);
    (su + cu, ss + cs)
}

/// The fields of `/sys/class/block/<dev>/stat` we keep (sectors are 512 bytes
/// whatever the device's block size).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DevStat {
    pub read_ios: u64,
    pub read_sectors: u64,
    pub write_ios: u64,
    pub write_sectors: u64,
}

impl DevStat {
    pub fn read(sys: &std::path::Path, dev: &str) -> Option<DevStat> {
        let text = std::fs::read_to_string(sys.join("class/block").join(dev).join("stat")).ok()?;
        Self::parse(&text)
    }

    pub fn parse(text: &str) -> Option<DevStat> {
        let f: Vec<u64> = text.split_whitespace().map(|x| x.parse().unwrap_or(0)).collect();
        Some(DevStat {
            read_ios: *f.first()?,
            read_sectors: *f.get(2)?,
            write_ios: *f.get(4)?,
            write_sectors: *f.get(6)?,
        })
    }

    fn since(&self, before: &DevStat, device: String) -> DevIo {
        DevIo {
            device,
            read_ios: self.read_ios.saturating_sub(before.read_ios),
            read_bytes: self.read_sectors.saturating_sub(before.read_sectors) * 512,
            write_ios: self.write_ios.saturating_sub(before.write_ios),
            write_bytes: self.write_sectors.saturating_sub(before.write_sectors) * 512,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields() {
        let s = DevStat::parse(
            "     156        0   209920      117      280        0   286720      214        0      132      331",
        )
        .unwrap();
        assert_eq!(s, DevStat { read_ios: 156, read_sectors: 209920, write_ios: 280, write_sectors: 286720 });
        let later = DevStat { read_ios: 160, read_sectors: 209920 + 8, ..s.clone() };
        let d = later.since(&s, "loop0".into());
        assert_eq!((d.read_ios, d.read_bytes, d.write_bytes), (4, 4096, 0));
    }

    #[test]
    fn cpu_time_advances_with_work() {
        let out = crate::outbox::Outbox::new(Box::new(std::io::sink()));
        let cancel = std::sync::atomic::AtomicBool::new(false);
        let ctx = StepCtx::new(1, &out, &cancel);
        let m = Meter::start(&ctx, &SysView::at(std::path::Path::new("/nonexistent")), &[]);
        let mut x = 0u64;
        for i in 0..30_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let u = m.stop();
        assert!(u.wall_s > 0.0 && u.user_s + u.sys_s > 0.0, "{u:?}");
    }
}
