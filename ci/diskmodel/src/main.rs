//! The daemon: parse the disk's parameters, mount, serve until SIGTERM (or
//! an unmount), then print what it served.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use benchrig_diskmodel::backing::Backing;
use benchrig_diskmodel::fs::{DiskFs, Stats, FILE_NAME};
use benchrig_diskmodel::model::{Disk, Hdd, HddParams, Ssd, SsdParams};
use clap::{Parser, ValueEnum};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Profile {
    /// Seek, rotation, zoned transfer, read-ahead, queue of one.
    Hdd,
    /// A fixed latency and transfer per request, --channels at once.
    Ssd,
}

/// Serve IMAGE as MOUNTPOINT/disk with a disk's timing: put a loop device on
/// that file (`losetup --direct-io=on`) and it behaves like the disk modelled.
///
/// The HDD: seek(d) = t2t + (full − t2t)·sqrt((d−1)/(tracks−1)) over the image's
/// tracks, the full stroke chosen so that random requests average --seek;
/// a platter turning at --rpm (half a turn on average); transfer at a rate
/// falling linearly from --outer at offset 0 to --inner at the end; after a
/// read the disk reads on up to --cache KiB, so a sequential stream runs at
/// the media rate; a write that continues the last one streams too. One
/// request at a time, each answered at max(arrival, previous completion) +
/// service. Defaults: seed 000's IBM IDE disk.
///
/// The image is read and written with O_DIRECT (no page cache here) and the
/// file opened with FOPEN_DIRECT_IO (none in the kernel for it either). Runs
/// as root (mount(2) directly, no libfuse). SIGTERM or SIGINT unmounts
/// (lazily, if the loop device still holds the file) and exits once the file
/// is released, or 5 s on regardless (detach the loop device first), printing
/// how the requests were served.
#[derive(Parser, Debug)]
#[command(name = "benchrig-diskmodel", version)]
struct Args {
    /// The disk image (its size a multiple of 4096).
    #[arg(long)]
    image: PathBuf,
    /// An empty directory to mount on; the disk appears as MOUNTPOINT/disk.
    mountpoint: PathBuf,
    #[arg(long, value_enum, default_value_t = Profile::Hdd)]
    profile: Profile,
    /// HDD: average seek over random requests, ms.
    #[arg(long, default_value_t = 9.8)]
    seek: f64,
    /// HDD: track-to-track seek, ms.
    #[arg(long, default_value_t = 1.2)]
    t2t: f64,
    /// HDD: spindle speed, revolutions per minute.
    #[arg(long, default_value_t = 7200.0)]
    rpm: f64,
    /// HDD: media rate at the outer edge (offset 0), MB/s (10^6 bytes).
    #[arg(long, default_value_t = 40.0)]
    outer: f64,
    /// HDD: media rate at the inner edge (the image's end), MB/s.
    #[arg(long, default_value_t = 24.0)]
    inner: f64,
    /// HDD: read-ahead cache, KiB.
    #[arg(long, default_value_t = 2048)]
    cache: u64,
    /// HDD: interface rate for cache hits, MB/s.
    #[arg(long, default_value_t = 100.0)]
    bus: f64,
    /// HDD: controller overhead per command, ms.
    #[arg(long, default_value_t = 0.1)]
    overhead: f64,
    /// SSD: latency per request, µs.
    #[arg(long, default_value_t = 100.0)]
    latency: f64,
    /// SSD: transfer rate of one channel, MB/s.
    #[arg(long, default_value_t = 200.0)]
    rate: f64,
    /// SSD: requests served at once.
    #[arg(long, default_value_t = 4)]
    channels: usize,
}

fn model(a: &Args, capacity: u64) -> Result<Disk, String> {
    Ok(match a.profile {
        Profile::Hdd => {
            let d = Hdd::new(HddParams {
                capacity,
                avg_seek: a.seek * 1e-3,
                track_to_track: a.t2t * 1e-3,
                rpm: a.rpm,
                outer_rate: a.outer * 1e6,
                inner_rate: a.inner * 1e6,
                cache: a.cache << 10,
                bus_rate: a.bus * 1e6,
                overhead: a.overhead * 1e-3,
            })?;
            eprintln!(
                "benchrig-diskmodel: hdd, {} tracks, seek {:.1} ms average ({:.1} t2t, {:.1} full stroke), {:.0} rpm ({:.2} ms half a turn), {:.1}..{:.1} MB/s, {} KiB read-ahead; a cold random 4 KiB read {:.2} ms ({:.0} IOPS)",
                d.tracks(),
                a.seek,
                a.t2t,
                d.full_stroke() * 1e3,
                a.rpm,
                d.rotation() * 500.0,
                a.outer,
                a.inner,
                a.cache,
                d.mean_random_service(4096) * 1e3,
                1.0 / d.mean_random_service(4096)
            );
            Disk::Hdd(d)
        }
        Profile::Ssd => {
            let d = Ssd::new(SsdParams { latency: a.latency * 1e-6, rate: a.rate * 1e6, channels: a.channels })?;
            eprintln!(
                "benchrig-diskmodel: ssd, {} µs latency, {} MB/s a channel, {} channels",
                a.latency, a.rate, a.channels
            );
            Disk::Ssd(d)
        }
    })
}

/// Blocks the signals that end the daemon in every thread (the session's
/// threads inherit the mask) and waits for them on one thread of its own,
/// which unmounts (lazily). The session then ends once the kernel releases
/// the file; if it has not within 5 s, the daemon exits all the same, which
/// aborts the FUSE connection (whatever still has the file open gets
/// ENOTCONN: stop the daemon after detaching the loop device, as the lab's
/// `down` does). A loop device still on the file keeps the connection open
/// however long one waits, so waiting alone could hang a teardown.
fn unmount_on_signal(mountpoint: PathBuf, stats: Arc<Stats>) -> std::io::Result<()> {
    // SAFETY: plain libc signal-set calls on a local set.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
            libc::sigaddset(&mut set, s);
        }
        let r = libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        if r != 0 {
            return Err(std::io::Error::from_raw_os_error(r));
        }
        let path = std::ffi::CString::new(mountpoint.as_os_str().as_encoded_bytes()).map_err(std::io::Error::other)?;
        std::thread::spawn(move || {
            let mut sig = 0;
            while libc::sigwait(&set, &mut sig) != 0 {}
            eprintln!("benchrig-diskmodel: signal {sig}: unmounting {}", mountpoint.display());
            libc::umount2(path.as_ptr(), libc::MNT_DETACH);
            std::thread::sleep(std::time::Duration::from_secs(5));
            eprintln!("benchrig-diskmodel: the kernel still holds the file 5 s on: exiting; {}", stats.summary());
            std::process::exit(0);
        });
    }
    Ok(())
}

fn main() -> ExitCode {
    // A daemon outlives its starter: hold none of its descriptors (a
    // `flock LOCK ci/lab.sh up` would otherwise stay locked for as long as
    // the disks are up).
    // SAFETY: close_range on descriptors this process has not opened itself.
    unsafe { libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32) };
    // A session of its own, so a Ctrl-C or hang-up of the shell that
    // started it does not reach it (ci/lab.sh starts it with `&`, and
    // setsid(1) would fork, hiding the daemon's pid). EPERM when it already
    // leads a group: then it has a session of its own already or its
    // starter meant it to stay; either way nothing to do.
    // SAFETY: setsid has no preconditions.
    unsafe { libc::setsid() };
    let args = Args::parse();
    // Wake on time: the default 50 µs timer slack is added to every sleep,
    // and so to every request.
    // SAFETY: prctl with an integer argument.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
    let run = || -> Result<Arc<Stats>, String> {
        let backing = Backing::open(&args.image).map_err(|e| format!("{}: {e}", args.image.display()))?;
        if !backing.direct() {
            eprintln!(
                "benchrig-diskmodel: {}: no O_DIRECT on this filesystem; dropping each range from the page cache instead",
                args.image.display()
            );
        }
        let disk = model(&args, backing.size())?;
        let threads = disk.parallelism();
        let stats = Arc::new(Stats::default());
        let fs = DiskFs::new(backing, disk, stats.clone());
        let mut config = fuser::Config::default();
        config.mount_options.extend([
            fuser::MountOption::FSName("benchrig-diskmodel".into()),
            fuser::MountOption::Subtype("benchrig-diskmodel".into()),
            fuser::MountOption::NoDev,
            fuser::MountOption::NoSuid,
        ]);
        // allow_other: the loop device and the lab hosts reach the file too.
        config.acl = fuser::SessionACL::All;
        config.n_threads = Some(threads);
        unmount_on_signal(args.mountpoint.clone(), stats.clone()).map_err(|e| format!("signals: {e}"))?;
        let session = fuser::Session::new(fs, &args.mountpoint, &config)
            .map_err(|e| format!("mount on {}: {e}", args.mountpoint.display()))?;
        eprintln!(
            "benchrig-diskmodel: serving {} as {}",
            args.image.display(),
            args.mountpoint.join(FILE_NAME).display()
        );
        session.run().map_err(|e| format!("session: {e}"))?;
        Ok(stats)
    };
    match run() {
        Ok(stats) => {
            eprintln!("benchrig-diskmodel: unmounted; {}", stats.summary());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("benchrig-diskmodel: {e}");
            ExitCode::FAILURE
        }
    }
}
