//! The image file underneath, read and written with O_DIRECT so that this
//! daemon keeps no page cache of its own (what the host caches is the loop
//! device's business, as it would be a real disk's). Where the filesystem
//! refuses O_DIRECT, the file is opened plainly and each range is dropped
//! from the page cache after use (POSIX_FADV_DONTNEED).

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::Path;
use std::sync::Mutex;

/// O_DIRECT's alignment: of buffers, offsets and lengths.
const ALIGN: u64 = 4096;

pub struct Backing {
    file: File,
    size: u64,
    direct: bool,
    /// Held over read-modify-write of unaligned writes (the loop device
    /// sends none; a `dd` onto the file might).
    rmw: Mutex<()>,
}

/// A zeroed heap buffer aligned for O_DIRECT.
struct Aligned {
    ptr: *mut u8,
    layout: Layout,
}

impl Aligned {
    fn new(len: u64) -> Aligned {
        let layout = Layout::from_size_align(len.max(ALIGN) as usize, ALIGN as usize).expect("a sane buffer size");
        // SAFETY: the layout's size is non-zero.
        let ptr = unsafe { alloc_zeroed(layout) };
        assert!(!ptr.is_null(), "out of memory for a {len}-byte I/O buffer");
        Aligned { ptr, layout }
    }
    fn as_mut(&mut self) -> &mut [u8] {
        // SAFETY: ptr is valid for layout.size() bytes, owned by self.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.layout.size()) }
    }
}

impl Drop for Aligned {
    fn drop(&mut self) {
        // SAFETY: allocated in new with this layout.
        unsafe { dealloc(self.ptr, self.layout) }
    }
}

fn down(x: u64) -> u64 {
    x / ALIGN * ALIGN
}
fn up(x: u64) -> u64 {
    x.div_ceil(ALIGN) * ALIGN
}

impl Backing {
    pub fn open(path: &Path) -> io::Result<Backing> {
        let open = |flags| OpenOptions::new().read(true).write(true).custom_flags(flags).open(path);
        let (file, direct) = match open(libc::O_DIRECT) {
            Ok(f) => (f, true),
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => (open(0)?, false),
            Err(e) => return Err(e),
        };
        let size = file.metadata()?.len();
        if size == 0 || !size.is_multiple_of(ALIGN) {
            return Err(io::Error::other(format!(
                "{}: the image's size ({size} bytes) must be a non-zero multiple of {ALIGN}",
                path.display()
            )));
        }
        Ok(Backing { file, size, direct, rmw: Mutex::new(()) })
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    pub fn direct(&self) -> bool {
        self.direct
    }

    fn forget(&self, offset: u64, len: u64) {
        if !self.direct {
            // SAFETY: a valid descriptor; advice only.
            unsafe {
                libc::posix_fadvise(
                    self.file.as_raw_fd(),
                    offset as libc::off_t,
                    len as libc::off_t,
                    libc::POSIX_FADV_DONTNEED,
                );
            }
        }
    }

    /// Reads `len` bytes at `offset` (fewer at the end of the image).
    pub fn read(&self, offset: u64, len: u64) -> io::Result<Vec<u8>> {
        let end = (offset + len).min(self.size);
        if offset >= end {
            return Ok(Vec::new());
        }
        let (a, b) = (down(offset), up(end));
        let mut buf = Aligned::new(b - a);
        let got = read_full(&self.file, &mut buf.as_mut()[..(b - a) as usize], a)?;
        self.forget(a, b - a);
        let from = (offset - a) as usize;
        let to = ((end - a) as usize).min(got);
        Ok(buf.as_mut()[from.min(to)..to].to_vec())
    }

    pub fn write(&self, offset: u64, data: &[u8]) -> io::Result<usize> {
        let end = (offset + data.len() as u64).min(self.size);
        if offset >= end {
            return Err(io::Error::from_raw_os_error(libc::ENOSPC));
        }
        let n = (end - offset) as usize;
        let data = &data[..n];
        if offset.is_multiple_of(ALIGN) && (n as u64).is_multiple_of(ALIGN) {
            let mut buf = Aligned::new(n as u64);
            buf.as_mut()[..n].copy_from_slice(data);
            self.file.write_all_at(&buf.as_mut()[..n], offset)?;
        } else {
            // Read-modify-write of the aligned blocks around it.
            let _held = self.rmw.lock().unwrap_or_else(|p| p.into_inner());
            let (a, b) = (down(offset), up(end));
            let mut buf = Aligned::new(b - a);
            let span = &mut buf.as_mut()[..(b - a) as usize];
            read_full(&self.file, span, a)?;
            span[(offset - a) as usize..(end - a) as usize].copy_from_slice(data);
            self.file.write_all_at(span, a)?;
        }
        self.forget(offset, n as u64);
        Ok(n)
    }

    pub fn sync(&self) -> io::Result<()> {
        self.file.sync_data()
    }

    /// fallocate(2) on the image: the loop device's discard punches holes.
    pub fn fallocate(&self, mode: i32, offset: u64, len: u64) -> io::Result<()> {
        // SAFETY: a valid descriptor.
        let r = unsafe { libc::fallocate(self.file.as_raw_fd(), mode, offset as libc::off_t, len as libc::off_t) };
        if r == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }
}

fn read_full(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match file.read_at(&mut buf[got..], offset + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}
