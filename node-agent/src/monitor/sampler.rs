//! The thread that samples /proc while a timed region runs.
//!
//! It never makes a step fail: a file it cannot read at the start (no PSI,
//! a device gone) leaves its series out (`pressure: None`, the device not
//! listed, an empty `cpu`/`memory`/`vm` vector), and a read that fails
//! later repeats the previous reading, so that entry shows no activity and
//! the next one covers both intervals' counts. Each file stays open for
//! the region, and each tick reads it once from its start into a buffer
//! kept for the whole region. The thread waits on a
//! channel, so stopping it (at the region's end, or when a cancelled step
//! drops its Meter) takes no longer than one reading.

use super::cpu::{CpuShares, CpuTimes};
use super::diskstats::{self, DiskFigures, DiskStat};
use super::meminfo::Memory;
use super::pressure::{self, Stall};
use super::vmstat::{self, Vm};
use benchrig_wire::monitor::{
    CpuSeries, DeviceSeries, MemorySeries, MonitorConfig, MonitorSeries, PressureSeries, VmSeries,
};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Below this an interval would cost more than the step it watches.
pub const MIN_INTERVAL_MS: u64 = 10;

/// At most this many entries: the series goes back in the step's reply,
/// one frame of at most 16 MiB, and a reply too large to send would lose
/// the step's result. A series that reaches it is rebuilt from every other
/// reading (exact for counters: an entry then spans two intervals; a level
/// such as Dirty is the one at the kept reading) and sampled half as often.
/// 2048 entries of a few devices are well under 2 MB.
pub const MAX_ENTRIES: usize = 2048;

pub struct Sampler {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<MonitorSeries>>,
}

impl Sampler {
    /// Take the first reading now (before the caller starts its clock) and
    /// sample every interval from here on. `proc_` is /proc (a fake tree in
    /// tests), `devices` kernel names as in `/proc/diskstats`.
    pub fn start(proc_: &Path, devices: &[String], cfg: MonitorConfig) -> Sampler {
        Self::start_capped(proc_, devices, cfg, MAX_ENTRIES)
    }

    /// [`Self::start`] with at most `max_entries` (even, at least 2).
    fn start_capped(proc_: &Path, devices: &[String], cfg: MonitorConfig, max_entries: usize) -> Sampler {
        let mut r = Reader::new(proc_, devices);
        let first = r.read(None);
        let interval = Duration::from_millis(cfg.interval_ms.max(MIN_INTERVAL_MS));
        let (tx, rx) = mpsc::channel();
        let max = max_entries.max(2) & !1;
        let thread =
            std::thread::Builder::new().name("monitor".into()).spawn(move || run(r, first, interval, rx, max)).ok();
        Sampler { stop: Some(tx), thread }
    }

    /// The last reading, at the region's end, and the series. `None` only
    /// if the thread could not be started or panicked.
    pub fn finish(mut self) -> Option<MonitorSeries> {
        self.stop.take();
        self.thread.take()?.join().ok()
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn run(mut r: Reader, first: Snapshot, base: Duration, stop: mpsc::Receiver<()>, max: usize) -> MonitorSeries {
    let mut b = Builder::new(&r, &first, base);
    // The readings at the entries' ends, the first included: what a
    // coarser series is rebuilt from.
    let mut readings = vec![first];
    // Ticks at start + k·base, every `stride`-th, so a slow reading does not shift the rest.
    let (mut k, mut stride) = (1u32, 1u32);
    loop {
        let due = b.start + base * k;
        let wait = due.saturating_duration_since(Instant::now());
        let last = !matches!(stop.recv_timeout(wait), Err(mpsc::RecvTimeoutError::Timeout));
        let prev = readings.last().expect("the first reading");
        let cur = r.read(Some(prev));
        b.push(prev, &cur);
        readings.push(cur);
        if readings.len() > max {
            // Every other reading, the first and the last among them (`max` is even).
            readings = readings.into_iter().step_by(2).collect();
            stride *= 2;
            b.rebuild(&readings, base * stride);
        }
        if last {
            return b.series;
        }
        k += stride;
        // A reading that took longer than an interval skips the ticks it missed.
        while b.start + base * k <= Instant::now() {
            k += stride;
        }
    }
}

/// One reading of every file.
#[derive(Clone)]
struct Snapshot {
    at: Instant,
    disks: Vec<Option<DiskStat>>,
    cpu: Option<CpuTimes>,
    mem: Option<Memory>,
    vm: Option<Vm>,
    psi: Option<[Stall; 3]>,
}

struct Reader {
    devices: Vec<String>,
    diskstats: ProcFile,
    stat: ProcFile,
    meminfo: ProcFile,
    vmstat: ProcFile,
    pressure: [ProcFile; 3],
    buf: String,
}

/// A /proc file kept open for the region and read again from its start
/// at each tick: one seek instead of an open and a close (as top does).
struct ProcFile {
    path: PathBuf,
    file: Option<std::fs::File>,
}

impl ProcFile {
    fn new(path: PathBuf) -> ProcFile {
        ProcFile { path, file: None }
    }

    /// Into `buf`; false if the file cannot be read (it is opened again next time).
    fn load(&mut self, buf: &mut String) -> bool {
        use std::io::{Seek, SeekFrom};
        buf.clear();
        if self.file.is_none() {
            self.file = std::fs::File::open(&self.path).ok();
        }
        let Some(f) = self.file.as_mut() else { return false };
        let ok = f.seek(SeekFrom::Start(0)).is_ok() && f.read_to_string(buf).is_ok();
        if !ok {
            self.file = None;
        }
        ok
    }
}

impl Reader {
    fn new(proc_: &Path, devices: &[String]) -> Reader {
        Reader {
            devices: devices.to_vec(),
            diskstats: ProcFile::new(proc_.join("diskstats")),
            stat: ProcFile::new(proc_.join("stat")),
            meminfo: ProcFile::new(proc_.join("meminfo")),
            vmstat: ProcFile::new(proc_.join("vmstat")),
            pressure: ["cpu", "io", "memory"].map(|f| ProcFile::new(proc_.join("pressure").join(f))),
            buf: String::with_capacity(16 * 1024),
        }
    }

    /// What failed to read now keeps `prev`'s value (see the module doc).
    fn read(&mut self, prev: Option<&Snapshot>) -> Snapshot {
        let at = Instant::now();
        let mut disks = vec![None; self.devices.len()];
        if !self.devices.is_empty() && self.diskstats.load(&mut self.buf) {
            diskstats::find(&self.buf, &self.devices, &mut disks);
        }
        if let Some(p) = prev {
            disks.iter_mut().zip(&p.disks).for_each(|(d, p)| *d = d.or(*p));
        }
        let cpu = self.stat.load(&mut self.buf).then(|| CpuTimes::parse(&self.buf)).flatten();
        let mem = self.meminfo.load(&mut self.buf).then(|| Memory::parse(&self.buf)).flatten();
        let vm = self.vmstat.load(&mut self.buf).then(|| Vm::parse(&self.buf)).flatten();
        let mut psi = [Stall::default(); 3];
        let mut all = true;
        for (s, file) in psi.iter_mut().zip(&mut self.pressure) {
            match file.load(&mut self.buf).then(|| Stall::parse(&self.buf)).flatten() {
                Some(v) => *s = v,
                None => all = false,
            }
        }
        let psi = all.then_some(psi);
        Snapshot {
            at,
            disks,
            cpu: cpu.or(prev.and_then(|p| p.cpu)),
            mem: mem.or(prev.and_then(|p| p.mem)),
            vm: vm.or(prev.and_then(|p| p.vm)),
            psi: psi.or(prev.and_then(|p| p.psi)),
        }
    }
}

/// The series, with only what the first reading found.
struct Builder {
    start: Instant,
    series: MonitorSeries,
    /// Index into the Reader's devices of each series in `series.devices`.
    devices: Vec<usize>,
}

impl Builder {
    fn new(r: &Reader, first: &Snapshot, interval: Duration) -> Builder {
        let devices: Vec<usize> = (0..r.devices.len()).filter(|&i| first.disks[i].is_some()).collect();
        let series = MonitorSeries {
            interval_ms: interval.as_millis() as u64,
            devices: devices
                .iter()
                .map(|&i| DeviceSeries { device: r.devices[i].clone(), ..Default::default() })
                .collect(),
            pressure: first.psi.map(|_| PressureSeries::default()),
            ..Default::default()
        };
        Builder { start: first.at, series, devices }
    }

    /// The same series from `readings` alone, at `interval`.
    fn rebuild(&mut self, readings: &[Snapshot], interval: Duration) {
        let s = &self.series;
        self.series = MonitorSeries {
            interval_ms: interval.as_millis() as u64,
            devices: s
                .devices
                .iter()
                .map(|d| DeviceSeries { device: d.device.clone(), ..Default::default() })
                .collect(),
            pressure: s.pressure.as_ref().map(|_| PressureSeries::default()),
            ..Default::default()
        };
        for w in readings.windows(2) {
            self.push(&w[0], &w[1]);
        }
    }

    fn push(&mut self, p: &Snapshot, c: &Snapshot) {
        let s = &mut self.series;
        let secs = c.at.saturating_duration_since(p.at).as_secs_f64().max(1e-6);
        s.t.push(c.at.saturating_duration_since(self.start).as_secs_f64());
        for (ds, &i) in s.devices.iter_mut().zip(&self.devices) {
            let (Some(pd), Some(cd)) = (p.disks[i], c.disks[i]) else { continue };
            let f = DiskFigures::between(&pd, &cd, secs);
            ds.r_s.push(f.r_s);
            ds.w_s.push(f.w_s);
            ds.rmb_s.push(f.rmb_s);
            ds.wmb_s.push(f.wmb_s);
            ds.r_await_ms.push(f.r_await_ms);
            ds.w_await_ms.push(f.w_await_ms);
            ds.aqu_sz.push(f.aqu_sz);
            ds.util_pct.push(f.util_pct);
        }
        if let (Some(pc), Some(cc)) = (p.cpu, c.cpu) {
            let sh = CpuShares::between(&pc, &cc);
            let CpuSeries { user_pct, sys_pct, iowait_pct, idle_pct } = &mut s.cpu;
            user_pct.push(sh.user_pct);
            sys_pct.push(sh.sys_pct);
            iowait_pct.push(sh.iowait_pct);
            idle_pct.push(sh.idle_pct);
        }
        if let Some(m) = c.mem {
            let MemorySeries { dirty_kb, writeback_kb, cached_kb } = &mut s.memory;
            dirty_kb.push(m.dirty_kb as f64);
            writeback_kb.push(m.writeback_kb as f64);
            cached_kb.push(m.cached_kb as f64);
        }
        if let (Some(pv), Some(cv)) = (p.vm, c.vm) {
            let [i, o, si, so] = vmstat::rates(&pv, &cv, secs);
            let VmSeries { pgpgin_kb_s, pgpgout_kb_s, pswpin_s, pswpout_s } = &mut s.vm;
            pgpgin_kb_s.push(i);
            pgpgout_kb_s.push(o);
            pswpin_s.push(si);
            pswpout_s.push(so);
        }
        if let (Some(ps), Some(pp), Some(cp)) = (s.pressure.as_mut(), p.psi, c.psi) {
            let [(cpu, _), (io_some, io_full), (mem_some, mem_full)] =
                [0, 1, 2].map(|k| pressure::shares(&pp[k], &cp[k], secs));
            ps.cpu_some_pct.push(cpu);
            ps.io_some_pct.push(io_some);
            ps.io_full_pct.push(io_full);
            ps.memory_some_pct.push(mem_some);
            ps.memory_full_pct.push(mem_full);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_proc(dir: &Path, with_psi: bool) {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/monitor/x86_64-6.18");
        for f in ["diskstats", "stat", "meminfo", "vmstat"] {
            std::fs::copy(src.join(format!("{f}.1")), dir.join(f)).unwrap();
        }
        if with_psi {
            std::fs::create_dir_all(dir.join("pressure")).unwrap();
            for f in ["cpu", "io", "memory"] {
                std::fs::copy(src.join(format!("pressure-{f}.1")), dir.join("pressure").join(f)).unwrap();
            }
        }
    }

    #[test]
    fn a_region_shorter_than_the_interval_has_one_entry_of_every_series_found() {
        let dir = tempfile::tempdir().unwrap();
        fake_proc(dir.path(), false);
        let devs = ["loop0".to_string(), "nosuchdisk".to_string()];
        let s = Sampler::start(dir.path(), &devs, MonitorConfig { interval_ms: 60_000 });
        let t0 = Instant::now();
        let series = s.finish().unwrap();
        assert!(t0.elapsed() < Duration::from_secs(1), "stopping waited for the interval");
        assert_eq!(series.t.len(), 1);
        assert_eq!(series.devices.iter().map(|d| d.device.as_str()).collect::<Vec<_>>(), ["loop0"]);
        assert_eq!((series.devices[0].r_s.len(), series.cpu.idle_pct.len(), series.memory.dirty_kb.len()), (1, 1, 1));
        assert_eq!(series.vm.pgpgin_kb_s.len(), 1);
        assert_eq!(series.pressure, None, "no /proc/pressure, no pressure series");
    }

    #[test]
    fn every_interval_has_an_entry_and_a_changed_file_shows_in_it() {
        let dir = tempfile::tempdir().unwrap();
        fake_proc(dir.path(), true);
        let s = Sampler::start(dir.path(), &["loop0".to_string()], MonitorConfig { interval_ms: 50 });
        std::thread::sleep(Duration::from_millis(120));
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/monitor/x86_64-6.18");
        std::fs::copy(src.join("diskstats.2"), dir.path().join("diskstats")).unwrap();
        std::thread::sleep(Duration::from_millis(110));
        let series = s.finish().unwrap();
        // Ticks at 50, 100, 150, 200 ms and the end at ~230.
        assert!((4..=6).contains(&series.t.len()), "{:?}", series.t);
        assert!(series.t.windows(2).all(|w| w[0] < w[1]), "{:?}", series.t);
        let r = &series.devices[0].r_s;
        assert_eq!(r.iter().filter(|&&x| x > 0.0).count(), 1, "one interval saw the reads: {r:?}");
        assert_eq!(series.pressure.as_ref().map(|p| p.io_some_pct.len()), Some(series.t.len()));
    }

    #[test]
    fn a_series_at_its_cap_goes_on_at_half_the_rate_and_keeps_every_count() {
        let dir = tempfile::tempdir().unwrap();
        fake_proc(dir.path(), true);
        let s = Sampler::start_capped(dir.path(), &["loop0".to_string()], MonitorConfig { interval_ms: 10 }, 8);
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/monitor/x86_64-6.18");
        std::thread::sleep(Duration::from_millis(150));
        std::fs::copy(src.join("diskstats.2"), dir.path().join("diskstats")).unwrap();
        std::thread::sleep(Duration::from_millis(250));
        let series = s.finish().unwrap();
        assert!(series.t.len() <= 8 && series.t.len() >= 4, "{:?}", series.t);
        assert!(series.interval_ms >= 40, "coarser at least twice: {} ms", series.interval_ms);
        assert!(series.t.windows(2).all(|w| w[0] < w[1]), "{:?}", series.t);
        let d = &series.devices[0];
        assert_eq!((d.r_s.len(), series.cpu.user_pct.len()), (series.t.len(), series.t.len()));
        // The reads between the two captures are in the series, all of them: the
        // rates times each entry's length add up to the captures' difference.
        let reads = |f: &str| {
            let text = std::fs::read_to_string(src.join(f)).unwrap();
            let l = text.lines().find(|l| l.split_whitespace().nth(2) == Some("loop0")).unwrap();
            l.split_whitespace().nth(3).unwrap().parse::<f64>().unwrap()
        };
        let lengths: Vec<f64> = std::iter::once(series.t[0]).chain(series.t.windows(2).map(|w| w[1] - w[0])).collect();
        let counted: f64 = d.r_s.iter().zip(&lengths).map(|(r, s)| r * s).sum();
        let want = reads("diskstats.2") - reads("diskstats.1");
        assert!(want > 0.0 && (counted - want).abs() < 1e-6 * want.max(1.0), "{counted} of {want} reads");
    }

    #[test]
    fn dropping_it_stops_the_thread_promptly() {
        let dir = tempfile::tempdir().unwrap();
        let s = Sampler::start(dir.path(), &[], MonitorConfig { interval_ms: 60_000 });
        let t0 = Instant::now();
        drop(s);
        assert!(t0.elapsed() < Duration::from_secs(1));
    }
}
