//! The mechanics, as pure arithmetic on a model clock (seconds since the
//! daemon started): given a request's arrival, offset, length and direction,
//! when does the disk complete it? No I/O and no sleeping here; `fs` does
//! both around [`Disk::complete`].
//!
//! HDD: one actuator over `tracks` tracks (one surface: a head switch costs
//! what a track-to-track seek costs, which is close enough here), zoned so
//! that a track's capacity falls linearly from the outer edge (offset 0, the
//! fastest) to the inner; a platter turning at `rpm` from time 0, a sector's
//! angle its place along its track; a read-ahead cache that keeps reading
//! after each read while the disk is idle; queue of one (each request starts
//! when it has arrived and the one before it is done).
//!
//! SSD: a fixed latency plus the transfer at a per-channel rate, `channels`
//! requests at once, each on the channel that frees first.

/// One request as the model sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Request {
    /// Seconds on the model clock.
    pub arrival: f64,
    pub offset: u64,
    pub len: u64,
    pub write: bool,
}

/// How a request was served, for the daemon's statistics and the tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Path {
    /// Seek, rotation, transfer.
    Mechanical,
    /// Continued the head's stream: no seek, no rotation, media rate.
    Stream,
    /// All of it already in the read-ahead cache: bus rate.
    CacheHit,
    /// The SSD profile.
    Flash,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Completion {
    pub start: f64,
    pub done: f64,
    pub path: Path,
}

#[derive(Clone, Debug, PartialEq)]
pub struct HddParams {
    /// Bytes: the image's size; the stroke spans it.
    pub capacity: u64,
    /// Average seek over random requests, seconds.
    pub avg_seek: f64,
    /// Seek to the next track, seconds.
    pub track_to_track: f64,
    pub rpm: f64,
    /// Media rate at the outer and the inner edge, bytes per second.
    pub outer_rate: f64,
    pub inner_rate: f64,
    /// Read-ahead: how far the disk reads past the last request, bytes.
    pub cache: u64,
    /// Interface rate for what comes from the cache, bytes per second.
    pub bus_rate: f64,
    /// Controller overhead per command, seconds.
    pub overhead: f64,
}

impl HddParams {
    /// Seed 000's disk: a 7200 rpm IDE disk of 2003 with a 9.8 ms average
    /// seek (the figure its paper gives), 40 MB/s outer to 24 MB/s inner,
    /// 2 MB of cache, ATA-100.
    pub fn seed000(capacity: u64) -> HddParams {
        HddParams {
            capacity,
            avg_seek: 9.8e-3,
            track_to_track: 1.2e-3,
            rpm: 7200.0,
            outer_rate: 40e6,
            inner_rate: 24e6,
            cache: 2 << 20,
            bus_rate: 100e6,
            overhead: 0.1e-3,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct SsdParams {
    /// Per request, seconds.
    pub latency: f64,
    /// Per channel, bytes per second.
    pub rate: f64,
    pub channels: usize,
}

/// The zoned geometry: track `t` (0 outermost) holds `c0 - k·t` bytes.
#[derive(Clone, Debug)]
struct Geometry {
    c0: f64,
    k: f64,
    tracks: f64,
    capacity: f64,
}

impl Geometry {
    fn new(p: &HddParams) -> Geometry {
        let rps = p.rpm / 60.0;
        let c0 = p.outer_rate / rps;
        let c1 = p.inner_rate / rps;
        // The tracks' capacities add up to the image: tracks·(c0+c1)/2.
        let tracks = (2.0 * p.capacity as f64 / (c0 + c1)).max(1.0);
        Geometry { c0, k: (c0 - c1) / tracks, tracks, capacity: p.capacity as f64 }
    }

    /// Where `offset` lies, in tracks (fractional) from the outer edge:
    /// the inverse of bytes(t) = c0·t − k·t²/2.
    fn track_pos(&self, offset: f64) -> f64 {
        let off = offset.clamp(0.0, self.capacity);
        if self.k.abs() < 1e-9 {
            return off / self.c0;
        }
        let disc = (self.c0 * self.c0 - 2.0 * self.k * off).max(0.0);
        ((self.c0 - disc.sqrt()) / self.k).min(self.tracks)
    }

    fn track(&self, offset: f64) -> u64 {
        (self.track_pos(offset).floor() as u64).min(self.tracks as u64)
    }

    fn capacity_of(&self, track: f64) -> f64 {
        self.c0 - self.k * track
    }

    /// The fraction of a turn at which `offset` passes under the head.
    fn angle(&self, offset: f64) -> f64 {
        self.track_pos(offset).fract()
    }
}

#[derive(Clone, Debug)]
pub struct Hdd {
    p: HddParams,
    geo: Geometry,
    /// Seconds: seek(d) = t2t + (full − t2t)·sqrt((d − 1)/(tracks − 1)) for d ≥ 1.
    full_stroke: f64,
    rps: f64,
    free_at: f64,
    head_track: u64,
    stream: Option<ReadStream>,
    /// Where the last write ended, when the one before this request was a
    /// write: a write that continues it streams from the write cache.
    write_end: Option<u64>,
}

/// The head reading on from `pos0` at `t0` at media rate, up to `limit`;
/// the cache holds `lo` up to where the head is.
#[derive(Clone, Copy, Debug)]
struct ReadStream {
    pos0: f64,
    t0: f64,
    limit: f64,
    lo: f64,
    rate: f64,
}

impl ReadStream {
    fn pos(&self, t: f64) -> f64 {
        (self.pos0 + (t - self.t0).max(0.0) * self.rate).min(self.limit)
    }
    /// When the head reaches `off` going straight on (ignoring the limit).
    fn reaches(&self, off: f64) -> f64 {
        self.t0 + (off - self.pos0) / self.rate
    }
}

/// Over pairs of offsets a, b uniform over the image (midpoint rule; more
/// bytes lie on the outer tracks, so this is not the uniform-track 8/15), with
/// d the tracks between them: (P(d ≥ 1), E[sqrt((d − 1)/(tracks − 1)); d ≥ 1]).
/// The mean seek is then t2t·P + (full − t2t)·E.
fn seek_moments(geo: &Geometry) -> (f64, f64) {
    const N: usize = 600;
    let span = (geo.tracks as u64).saturating_sub(1).max(1) as f64;
    let tracks: Vec<u64> = (0..N).map(|i| geo.track((i as f64 + 0.5) / N as f64 * geo.capacity)).collect();
    let (mut moved, mut sum) = (0u64, 0.0);
    for a in &tracks {
        for b in &tracks {
            let d = a.abs_diff(*b);
            if d > 0 {
                moved += 1;
                sum += ((d - 1) as f64 / span).sqrt();
            }
        }
    }
    let n = (N * N) as f64;
    (moved as f64 / n, sum / n)
}

impl Hdd {
    pub fn new(p: HddParams) -> Result<Hdd, String> {
        if p.avg_seek.is_nan() || p.track_to_track.is_nan() || p.avg_seek <= p.track_to_track || p.track_to_track < 0.0
        {
            return Err(format!(
                "the average seek ({} ms) must exceed the track-to-track seek ({} ms)",
                p.avg_seek * 1e3,
                p.track_to_track * 1e3
            ));
        }
        if [p.rpm, p.outer_rate, p.inner_rate, p.bus_rate].iter().any(|x| x.is_nan() || *x <= 0.0) {
            return Err("rpm and the media and bus rates must be positive".into());
        }
        if p.inner_rate > p.outer_rate {
            return Err("the inner media rate must not exceed the outer".into());
        }
        if p.capacity == 0 {
            return Err("the image is empty".into());
        }
        let geo = Geometry::new(&p);
        let (moved, e) = seek_moments(&geo);
        if e <= 0.0 {
            return Err("the image is too small for a seek curve (under two tracks)".into());
        }
        let full_stroke = p.track_to_track + (p.avg_seek - p.track_to_track * moved) / e;
        Ok(Hdd { rps: p.rpm / 60.0, geo, full_stroke, free_at: 0.0, head_track: 0, stream: None, write_end: None, p })
    }

    pub fn params(&self) -> &HddParams {
        &self.p
    }

    pub fn tracks(&self) -> u64 {
        self.geo.tracks as u64
    }

    pub fn full_stroke(&self) -> f64 {
        self.full_stroke
    }

    pub fn rotation(&self) -> f64 {
        1.0 / self.rps
    }

    /// Media rate at `offset`, bytes per second.
    pub fn media_rate(&self, offset: u64) -> f64 {
        self.geo.capacity_of(self.geo.track_pos(offset as f64)) * self.rps
    }

    pub fn seek_time(&self, from: u64, to: u64) -> f64 {
        let d = from.abs_diff(to);
        if d == 0 {
            0.0
        } else {
            let span = (self.geo.tracks as u64).saturating_sub(1).max(1) as f64;
            let x = ((d - 1) as f64 / span).min(1.0);
            self.p.track_to_track + (self.full_stroke - self.p.track_to_track) * x.sqrt()
        }
    }

    /// What a cold read of `len` bytes at a random offset costs on average:
    /// overhead, the average seek, half a turn, the transfer at the mean of
    /// 1/rate over the image. The tests hold the daemon to this.
    pub fn mean_random_service(&self, len: u64) -> f64 {
        const N: usize = 1000;
        let inv_rate: f64 = (0..N)
            .map(|i| 1.0 / self.media_rate(((i as f64 + 0.5) / N as f64 * self.geo.capacity) as u64))
            .sum::<f64>()
            / N as f64;
        self.p.overhead + self.p.avg_seek + 0.5 / self.rps + len as f64 * inv_rate
    }

    /// Seconds until `offset` comes under the head after time `t`.
    fn rotational_wait(&self, offset: f64, t: f64) -> f64 {
        let head = (t * self.rps).fract();
        (self.geo.angle(offset) - head).rem_euclid(1.0) / self.rps
    }

    fn mechanical(&self, start: f64, from_track: u64, off: u64, len: u64) -> f64 {
        let to = self.geo.track(off as f64);
        let settled = start + self.p.overhead + self.seek_time(from_track, to);
        let on_sector = settled + self.rotational_wait(off as f64, settled);
        on_sector + len as f64 / self.media_rate(off)
    }

    pub fn complete(&mut self, r: Request) -> Completion {
        let start = r.arrival.max(self.free_at);
        let (off, end) = (r.offset as f64, (r.offset + r.len) as f64);
        let from_track = match &self.stream {
            Some(s) => self.geo.track(s.pos(start)),
            None => self.head_track,
        };
        let (done, path) = if r.write {
            self.stream = None;
            let streaming = self.write_end == Some(r.offset);
            self.write_end = Some(r.offset + r.len);
            if streaming {
                (start + self.p.overhead + r.len as f64 / self.media_rate(r.offset), Path::Stream)
            } else {
                (self.mechanical(start, from_track, r.offset, r.len), Path::Mechanical)
            }
        } else {
            self.write_end = None;
            self.read(start, from_track, off, end, r)
        };
        self.free_at = done;
        self.head_track = self.geo.track(end);
        Completion { start, done, path }
    }

    fn read(&mut self, start: f64, from_track: u64, off: f64, end: f64, r: Request) -> (f64, Path) {
        let rate = self.media_rate(r.offset + r.len);
        let cache = self.p.cache as f64;
        if let Some(s) = self.stream.filter(|s| s.lo <= off && off <= s.pos(start)) {
            let head = s.pos(start);
            let paused = head >= s.limit && s.reaches(s.limit) < start;
            if end <= head {
                // All of it in the cache. The read-ahead goes on (after a
                // turn's wait to find its place again, if it had stopped).
                let done = start + self.p.overhead + r.len as f64 / self.p.bus_rate;
                let next = if paused {
                    let t0 = done + self.rotational_wait(s.limit, done);
                    ReadStream { pos0: s.limit, t0, limit: end + cache, lo: off, rate }
                } else {
                    ReadStream { limit: s.limit.max(end + cache), lo: off, ..s }
                };
                self.stream = Some(next);
                return (done, Path::CacheHit);
            }
            // The head is reading on into this request: done when it has
            // passed its end (picking up where it stopped, if it had).
            let reached = if paused {
                let t = start + self.p.overhead;
                t + self.rotational_wait(s.limit, t) + (end - s.limit) / rate
            } else {
                s.reaches(end)
            };
            let done = reached.max(start + self.p.overhead);
            self.stream = Some(ReadStream { pos0: end, t0: done, limit: end + cache, lo: off, rate });
            return (done, Path::Stream);
        }
        let done = self.mechanical(start, from_track, r.offset, r.len);
        self.stream = Some(ReadStream { pos0: end, t0: done, limit: end + cache, lo: off, rate });
        (done, Path::Mechanical)
    }
}

#[derive(Clone, Debug)]
pub struct Ssd {
    p: SsdParams,
    free_at: Vec<f64>,
}

impl Ssd {
    pub fn new(p: SsdParams) -> Result<Ssd, String> {
        if p.channels == 0 || p.rate.is_nan() || p.rate <= 0.0 || p.latency.is_nan() || p.latency < 0.0 {
            return Err("an SSD needs at least one channel, a positive rate and a latency ≥ 0".into());
        }
        Ok(Ssd { free_at: vec![0.0; p.channels], p })
    }

    pub fn params(&self) -> &SsdParams {
        &self.p
    }

    pub fn complete(&mut self, r: Request) -> Completion {
        let (i, free) =
            self.free_at.iter().copied().enumerate().min_by(|a, b| a.1.total_cmp(&b.1)).expect("one channel at least");
        let start = r.arrival.max(free);
        let done = start + self.p.latency + r.len as f64 / self.p.rate;
        self.free_at[i] = done;
        Completion { start, done, path: Path::Flash }
    }
}

/// Either profile, as the daemon holds it.
#[derive(Clone, Debug)]
pub enum Disk {
    Hdd(Hdd),
    Ssd(Ssd),
}

impl Disk {
    pub fn complete(&mut self, r: Request) -> Completion {
        match self {
            Disk::Hdd(d) => d.complete(r),
            Disk::Ssd(d) => d.complete(r),
        }
    }

    /// How many requests the disk serves at once (the daemon's threads).
    pub fn parallelism(&self) -> usize {
        match self {
            Disk::Hdd(_) => 1,
            Disk::Ssd(s) => s.p.channels,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    /// A small deterministic generator (xorshift), so the tests need no crate.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    fn hdd() -> Hdd {
        Hdd::new(HddParams::seed000(GIB)).unwrap()
    }

    #[test]
    fn the_seek_curve_averages_the_configured_seek_over_random_requests() {
        let d = hdd();
        let mut rng = Rng(0x9e3779b97f4a7c15);
        let n = 200_000;
        let mut sum = 0.0;
        for _ in 0..n {
            let (a, b) = (rng.below(GIB), rng.below(GIB));
            sum += d.seek_time(d.geo.track(a as f64), d.geo.track(b as f64));
        }
        let mean = sum / n as f64;
        assert!((mean - 9.8e-3).abs() < 0.1e-3, "mean seek {:.3} ms", mean * 1e3);
        // Track-to-track up to a full stroke a little under twice the average.
        assert_eq!(d.seek_time(10, 10), 0.0);
        assert!((d.seek_time(10, 11) - 1.2e-3).abs() < 0.05e-3);
        assert!(d.full_stroke() > 15e-3 && d.full_stroke() < 22e-3, "full stroke {}", d.full_stroke());
        assert!((d.seek_time(0, d.tracks()) - d.full_stroke()).abs() < 1e-6);
    }

    #[test]
    fn outer_tracks_are_faster_and_the_geometry_adds_up() {
        let d = hdd();
        assert!((d.media_rate(0) - 40e6).abs() < 1e3);
        assert!((d.media_rate(GIB - 1) - 24e6).abs() < 0.1e6, "{}", d.media_rate(GIB - 1));
        assert!(d.media_rate(GIB / 2) < d.media_rate(GIB / 4));
        // 7200 rpm at 40 MB/s: 333 kB a track on the outside.
        assert!((d.geo.capacity_of(0.0) - 40e6 / 120.0).abs() < 1.0);
        assert!((d.geo.track_pos(GIB as f64) - d.geo.tracks).abs() < 1e-6);
        assert_eq!(d.geo.track(0.0), 0);
    }

    #[test]
    fn random_cold_reads_pay_seek_half_a_turn_and_transfer_on_average() {
        let mut d = hdd();
        assert!((d.rotation() - 8.333e-3).abs() < 0.01e-3);
        let mut rng = Rng(42);
        let (n, len) = (20_000, 4096);
        let mut t = 0.0;
        let mut busy = 0.0;
        for _ in 0..n {
            // iodepth 1 with a little think time, as fio's psync has.
            t += 20e-6 + rng.below(1000) as f64 * 1e-6;
            let c = d.complete(Request { arrival: t, offset: rng.below(GIB / 4096) * 4096, len, write: false });
            assert_eq!(c.path, Path::Mechanical);
            busy += c.done - c.start;
            t = c.done;
        }
        let mean = busy / n as f64;
        let want = d.mean_random_service(len);
        assert!((want - 14.2e-3).abs() < 0.2e-3, "model's mean {:.3} ms", want * 1e3);
        assert!((mean - want).abs() / want < 0.02, "mean {:.3} ms vs {:.3} ms", mean * 1e3, want * 1e3);
    }

    #[test]
    fn a_sequential_stream_runs_at_media_speed_without_seek_or_rotation() {
        let mut d = hdd();
        let len = 128 << 10;
        let mut t = 0.0;
        let mut off = GIB / 2;
        let first = d.complete(Request { arrival: t, offset: off, len, write: false });
        assert_eq!(first.path, Path::Mechanical);
        t = first.done;
        let begin = t;
        let n = 200;
        for _ in 0..n {
            off += len;
            t += 30e-6; // the host's turnaround
            let c = d.complete(Request { arrival: t, offset: off, len, write: false });
            assert!(matches!(c.path, Path::Stream | Path::CacheHit), "{c:?}");
            t = c.done;
        }
        let rate = (n * len) as f64 / (t - begin);
        let media = d.media_rate(off);
        assert!((rate - media).abs() / media < 0.03, "{rate} B/s vs media {media}");
    }

    #[test]
    fn the_read_ahead_serves_small_sequential_reads_from_the_cache() {
        let mut d = hdd();
        let c = d.complete(Request { arrival: 0.0, offset: 0, len: 4096, write: false });
        // Idle for 10 ms: the head reads ~400 kB on.
        let hit = d.complete(Request { arrival: c.done + 10e-3, offset: 4096, len: 65536, write: false });
        assert_eq!(hit.path, Path::CacheHit);
        assert!(hit.done - hit.start < 1e-3);
        // Beyond the cache's reach: mechanical again.
        let far = d.complete(Request { arrival: hit.done + 1.0, offset: 64 << 20, len: 4096, write: false });
        assert_eq!(far.path, Path::Mechanical);
    }

    #[test]
    fn a_read_ahead_that_filled_the_cache_resumes_after_a_turn_at_most() {
        let mut d = hdd();
        let c = d.complete(Request { arrival: 0.0, offset: 0, len: 4096, write: false });
        // After a second the read-ahead stopped at 2 MiB past the read.
        let t = c.done + 1.0;
        let r = d.complete(Request { arrival: t, offset: 4096, len: 4 << 20, write: false });
        assert_eq!(r.path, Path::Stream);
        let rest = ((4 << 20) - (2 << 20)) as f64 / d.media_rate(4 << 20);
        let took = r.done - r.start;
        assert!(took >= rest && took <= rest + d.rotation() + 1e-3, "{took}");
    }

    #[test]
    fn queue_of_one_requests_wait_for_the_one_before() {
        let mut d = hdd();
        let a = d.complete(Request { arrival: 0.0, offset: 0, len: 4096, write: false });
        let b = d.complete(Request { arrival: 0.0, offset: GIB / 2, len: 4096, write: false });
        assert_eq!(b.start, a.done);
        assert!(b.done > a.done + 1e-3);
    }

    #[test]
    fn sequential_writes_stream_and_random_writes_seek() {
        let mut d = hdd();
        let a = d.complete(Request { arrival: 0.0, offset: 0, len: 65536, write: true });
        assert_eq!(a.path, Path::Mechanical);
        let b = d.complete(Request { arrival: a.done + 1e-3, offset: 65536, len: 65536, write: true });
        assert_eq!(b.path, Path::Stream);
        let c = d.complete(Request { arrival: b.done, offset: GIB / 3, len: 4096, write: true });
        assert_eq!(c.path, Path::Mechanical);
        // A write drops the read-ahead: reading what follows it is mechanical.
        let r = d.complete(Request { arrival: c.done, offset: GIB / 3 + 4096, len: 4096, write: false });
        assert_eq!(r.path, Path::Mechanical);
    }

    #[test]
    fn rotation_follows_the_platter() {
        let d = hdd();
        // The sector under the head at time t is reached at once; the one
        // just behind it a whole turn later.
        let off = 1000.0;
        let a = d.geo.angle(off);
        let t = a / d.rps + 5.0 * d.rotation();
        assert!(d.rotational_wait(off, t) < 1e-6 || d.rotational_wait(off, t) > d.rotation() - 1e-6);
        let w = d.rotational_wait(off, t + 1e-4);
        assert!((w - (d.rotation() - 1e-4)).abs() < 1e-6, "{w}");
    }

    #[test]
    fn an_ssd_serves_its_channels_in_parallel() {
        let mut s = Ssd::new(SsdParams { latency: 100e-6, rate: 200e6, channels: 2 }).unwrap();
        let a = s.complete(Request { arrival: 0.0, offset: 0, len: 4096, write: false });
        let b = s.complete(Request { arrival: 0.0, offset: 1 << 20, len: 4096, write: false });
        let c = s.complete(Request { arrival: 0.0, offset: 2 << 20, len: 4096, write: true });
        assert_eq!(a.done, b.done);
        assert!((a.done - (100e-6 + 4096.0 / 200e6)).abs() < 1e-12);
        assert_eq!(c.start, a.done);
    }

    #[test]
    fn nonsense_parameters_are_refused() {
        let mut p = HddParams::seed000(GIB);
        p.avg_seek = 1e-3;
        assert!(Hdd::new(p).unwrap_err().contains("track-to-track"));
        let mut p = HddParams::seed000(GIB);
        p.inner_rate = 50e6;
        assert!(Hdd::new(p).is_err());
        assert!(Ssd::new(SsdParams { latency: 1e-4, rate: 1e8, channels: 0 }).is_err());
    }
}
