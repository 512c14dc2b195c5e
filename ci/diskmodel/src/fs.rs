//! The FUSE filesystem: a root directory holding one file, `disk`, the image.
//! Each read and write is timed by the model (arrival = when it reached this
//! daemon), done on the image, and answered no sooner than the model's
//! completion time. Opened with FOPEN_DIRECT_IO, so the kernel caches
//! nothing of the file either: every request the loop device sends lands here.

use std::ffi::OsStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, INodeNo, KernelConfig, LockOwner, OpenFlags,
    ReplyAttr, ReplyData, ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, Request,
    WriteFlags,
};

use crate::backing::Backing;
use crate::model::{Disk, Path, Request as ModelRequest};
use crate::wake::Waker;

pub const FILE_NAME: &str = "disk";
const FILE_INO: INodeNo = INodeNo(2);
const TTL: Duration = Duration::from_secs(3600);

/// Counts by how the model served each request, printed when the daemon ends.
#[derive(Default)]
pub struct Stats {
    pub mechanical: AtomicU64,
    pub stream: AtomicU64,
    pub cache_hit: AtomicU64,
    pub flash: AtomicU64,
    /// Requests whose I/O on the image took longer than the model allowed.
    pub late: AtomicU64,
    /// Nanoseconds the answers went out after the model's completion times,
    /// added up: this daemon's own tardiness (a busy host waking it late),
    /// apart from the image's.
    pub tardy_ns: AtomicU64,
}

impl Stats {
    fn count(&self, p: Path) {
        let c = match p {
            Path::Mechanical => &self.mechanical,
            Path::Stream => &self.stream,
            Path::CacheHit => &self.cache_hit,
            Path::Flash => &self.flash,
        };
        c.fetch_add(1, Ordering::Relaxed);
    }

    pub fn summary(&self) -> String {
        let g = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let served = g(&self.mechanical) + g(&self.stream) + g(&self.cache_hit) + g(&self.flash);
        format!(
            "requests: {} mechanical, {} streamed, {} from the cache, {} flash; {} late (the image was slower than the model); answered {:.0} µs after the model's time on average",
            g(&self.mechanical),
            g(&self.stream),
            g(&self.cache_hit),
            g(&self.flash),
            g(&self.late),
            g(&self.tardy_ns) as f64 / 1e3 / served.max(1) as f64
        )
    }
}

pub struct DiskFs {
    backing: Backing,
    model: Mutex<Disk>,
    epoch: Instant,
    created: SystemTime,
    pub stats: std::sync::Arc<Stats>,
    waker: Waker,
    /// BENCHRIG_DISKMODEL_TRACE=1: one line a request on stderr.
    trace: bool,
}

impl DiskFs {
    pub fn new(backing: Backing, model: Disk, stats: std::sync::Arc<Stats>) -> DiskFs {
        DiskFs {
            backing,
            model: Mutex::new(model),
            epoch: Instant::now(),
            created: SystemTime::now(),
            stats,
            waker: Waker::default(),
            trace: std::env::var_os("BENCHRIG_DISKMODEL_TRACE").is_some_and(|v| v == "1"),
        }
    }

    fn attr(&self, ino: INodeNo) -> Option<FileAttr> {
        let (kind, size, perm, nlink) = match ino {
            INodeNo::ROOT => (FileType::Directory, 0, 0o755, 2),
            FILE_INO => (FileType::RegularFile, self.backing.size(), 0o600, 1),
            _ => return None,
        };
        Some(FileAttr {
            ino,
            size,
            blocks: size.div_ceil(512),
            atime: self.created,
            mtime: self.created,
            ctime: self.created,
            crtime: self.created,
            kind,
            perm,
            nlink,
            uid: 0,
            gid: 0,
            rdev: 0,
            flags: 0,
            blksize: 4096,
        })
    }

    /// Times one request by the model, runs `io`, then waits for the model's
    /// completion time.
    fn timed<T>(&self, offset: u64, len: u64, write: bool, io: impl FnOnce() -> T) -> T {
        let arrival = self.epoch.elapsed().as_secs_f64();
        let c = {
            let mut m = self.model.lock().unwrap_or_else(|p| p.into_inner());
            m.complete(ModelRequest { arrival, offset, len, write })
        };
        self.stats.count(c.path);
        if self.trace {
            eprintln!(
                "{arrival:.6} {} {offset} +{len}: {:?}, start {:.6}, done {:.6} ({:.3} ms)",
                if write { 'W' } else { 'R' },
                c.path,
                c.start,
                c.done,
                (c.done - c.start) * 1e3
            );
        }
        let out = io();
        let due = self.epoch + Duration::from_secs_f64(c.done);
        if Instant::now() >= due {
            self.stats.late.fetch_add(1, Ordering::Relaxed);
        }
        self.waker.wait_until(due);
        let tardy = Instant::now().saturating_duration_since(due);
        self.stats.tardy_ns.fetch_add(tardy.as_nanos() as u64, Ordering::Relaxed);
        out
    }
}

fn errno(e: std::io::Error) -> Errno {
    Errno::from_i32(e.raw_os_error().unwrap_or(libc::EIO))
}

impl Filesystem for DiskFs {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        // Up to 1 MiB a request, as a disk's queue would take it; the kernel
        // may grant less.
        let _ = config.set_max_write(1 << 20);
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        match (parent, name.to_str()) {
            (INodeNo::ROOT, Some(FILE_NAME)) => {
                reply.entry(&TTL, &self.attr(FILE_INO).expect("the file's attributes"), fuser::Generation(0))
            }
            _ => reply.error(Errno::ENOENT),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match self.attr(ino) {
            Some(a) => reply.attr(&TTL, &a),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        _mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<fuser::TimeOrNow>,
        _mtime: Option<fuser::TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        // A disk's size is fixed; times and modes are not kept.
        match (self.attr(ino), size) {
            (Some(a), Some(s)) if s != a.size => reply.error(Errno::EPERM),
            (Some(a), _) => reply.attr(&TTL, &a),
            (None, _) => reply.error(Errno::ENOENT),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        if ino == FILE_INO {
            reply.opened(FileHandle(0), FopenFlags::FOPEN_DIRECT_IO);
        } else {
            reply.error(Errno::EISDIR);
        }
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        if ino != FILE_INO {
            return reply.error(Errno::EISDIR);
        }
        let len = u64::from(size).min(self.backing.size().saturating_sub(offset));
        if len == 0 {
            return reply.data(&[]);
        }
        match self.timed(offset, len, false, || self.backing.read(offset, len)) {
            Ok(data) => reply.data(&data),
            Err(e) => reply.error(errno(e)),
        }
    }

    fn write(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        if ino != FILE_INO {
            return reply.error(Errno::EISDIR);
        }
        let len = (data.len() as u64).min(self.backing.size().saturating_sub(offset));
        if len == 0 {
            return reply.error(Errno::ENOSPC);
        }
        match self.timed(offset, len, true, || self.backing.write(offset, data)) {
            Ok(n) => reply.written(n as u32),
            Err(e) => reply.error(errno(e)),
        }
    }

    fn flush(&self, _req: &Request, _ino: INodeNo, _fh: FileHandle, _lock_owner: LockOwner, reply: ReplyEmpty) {
        reply.ok();
    }

    fn fsync(&self, _req: &Request, _ino: INodeNo, _fh: FileHandle, _datasync: bool, reply: ReplyEmpty) {
        // The model's disk has no volatile write cache to flush (writes are
        // timed as they come); the image's own durability is the host's.
        match self.backing.sync() {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(errno(e)),
        }
    }

    fn fallocate(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        if ino != FILE_INO {
            return reply.error(Errno::EISDIR);
        }
        // Discard and zeroing from the loop device: untimed (a TRIM is not
        // what these experiments measure), the image stays sparse.
        match self.backing.fallocate(mode, offset, length) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(errno(e)),
        }
    }

    fn readdir(&self, _req: &Request, ino: INodeNo, _fh: FileHandle, offset: u64, mut reply: ReplyDirectory) {
        if ino != INodeNo::ROOT {
            return reply.error(Errno::ENOTDIR);
        }
        let entries = [
            (INodeNo::ROOT, FileType::Directory, "."),
            (INodeNo::ROOT, FileType::Directory, ".."),
            (FILE_INO, FileType::RegularFile, FILE_NAME),
        ];
        for (i, (ino, kind, name)) in entries.into_iter().enumerate().skip(offset as usize) {
            if reply.add(ino, (i + 1) as u64, kind, name) {
                break;
            }
        }
        reply.ok();
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        let blocks = self.backing.size() / 4096;
        reply.statfs(blocks, 0, 0, 2, 0, 4096, 255, 4096);
    }
}
