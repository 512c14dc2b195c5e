//! The host's record of a boot under way (`BootRecord`), in the agent's
//! work dir: written, and synced, before anything about the boot changes,
//! removed once the host is verified back on its baseline. It outlives the
//! agent, the controller and the reboot, so that the next agent tells
//! `--resume` or `cleanup` what to bring back. Trusted, as the journal is,
//! only when no one but root or the agent's user could have written it.

use crate::ledger::{not_private, open_private};
use benchrig_wire::boot::BootRecord;
use benchrig_wire::messages::AgentError;
use rustix::fs::OFlags;
use std::io::{Read, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

fn path(work_dir: &Path) -> PathBuf {
    work_dir.join("boot.json")
}

/// The record, when there is one.
pub fn read(work_dir: &Path) -> Result<Option<BootRecord>, String> {
    let p = path(work_dir);
    let mut f = match open_private(&p, OFlags::empty()) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: {e}", p.display())),
    };
    let m = f.metadata().map_err(|e| format!("{}: {e}", p.display()))?;
    if let Some(why) = not_private(m.uid(), m.mode(), false) {
        return Err(format!("{} {why}: not believed", p.display()));
    }
    let mut text = String::new();
    f.read_to_string(&mut text).map_err(|e| format!("{}: {e}", p.display()))?;
    serde_json::from_str(&text).map(Some).map_err(|e| format!("{}: damaged: {e}", p.display()))
}

/// Write the record, durably, before the boot it describes is armed.
pub fn write(work_dir: &Path, rec: &BootRecord) -> Result<(), AgentError> {
    let p = path(work_dir);
    let tmp = p.with_extension(format!("tmp.{}", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    let result = (|| {
        let mut f = open_private(&tmp, OFlags::CREATE | OFlags::EXCL)?;
        f.write_all(&serde_json::to_vec_pretty(rec).map_err(std::io::Error::other)?)?;
        f.sync_all()?;
        std::fs::rename(&tmp, &p)?;
        std::fs::File::open(work_dir)?.sync_all()
    })();
    result.map_err(|e| AgentError::failed(format!("writing the boot record {}: {e}", p.display())))
}

pub fn remove(work_dir: &Path) -> Result<(), String> {
    match std::fs::remove_file(path(work_dir)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(format!("{}: {e}", path(work_dir).display())),
        _ => Ok(()),
    }
}
