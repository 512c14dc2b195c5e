//! Making the next read cold: `sync` first (drop_caches frees only clean
//! pages), then drop the page cache as root, or evict the file's pages with
//! `posix_fadvise(DONTNEED)` when not root.

use std::fs::File;
use std::path::Path;

/// Which method was used, for the record.
pub fn make_cold(file: Option<&Path>) -> Result<&'static str, String> {
    rustix::fs::sync();
    if rustix::process::geteuid().is_root() && drop_caches().is_ok() {
        return Ok("drop_caches");
    }
    let Some(file) = file else {
        return Err("cannot drop caches (not root) and no file was given to evict".into());
    };
    evict(file)?;
    Ok("fadvise_dontneed")
}

pub fn drop_caches() -> std::io::Result<()> {
    std::fs::write("/proc/sys/vm/drop_caches", "3\n")
}

fn evict(path: &Path) -> Result<(), String> {
    let f = File::open(path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    // Dirty pages cannot be dropped; write them first.
    rustix::fs::fdatasync(&f).map_err(|e| format!("fdatasync {}: {e}", path.display()))?;
    rustix::fs::fadvise(&f, 0, None, rustix::fs::Advice::DontNeed)
        .map_err(|e| format!("fadvise {}: {e}", path.display()))
}
