//! The host's records of what benchrig changed about its boot, in the
//! agent's work dir: the boot under way (`BOOT`, a `BootRecord`) and the
//! kernel packages installed (`PACKAGES`). Each is written, and synced,
//! before the change it describes, and removed once the change is undone.
//! They outlive the agent, the controller and the reboot, so that the next
//! agent tells `--resume` or `cleanup` what to bring back. Trusted, as the
//! journal is, only when no one but root or the agent's user could have
//! written them.

use crate::ledger::{not_private, open_private};
use benchrig_wire::messages::AgentError;
use rustix::fs::OFlags;
use serde::{de::DeserializeOwned, Serialize};
use std::io::{Read, Write};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// The boot under way.
pub const BOOT: &str = "boot.json";
/// The kernel packages benchrig installed and has not removed.
pub const PACKAGES: &str = "kernel-packages.json";

/// The record `name`, when there is one.
pub fn read<T: DeserializeOwned>(work_dir: &Path, name: &str) -> Result<Option<T>, String> {
    let p = work_dir.join(name);
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

/// Write the record `name`, durably, before the change it describes.
pub fn write<T: Serialize>(work_dir: &Path, name: &str, rec: &T) -> Result<(), AgentError> {
    let p = work_dir.join(name);
    let tmp = p.with_extension(format!("tmp.{}", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    let result = (|| {
        let mut f = open_private(&tmp, OFlags::CREATE | OFlags::EXCL)?;
        f.write_all(&serde_json::to_vec_pretty(rec).map_err(std::io::Error::other)?)?;
        f.sync_all()?;
        std::fs::rename(&tmp, &p)?;
        std::fs::File::open(work_dir)?.sync_all()
    })();
    result.map_err(|e| AgentError::failed(format!("writing the record {}: {e}", p.display())))
}

pub fn remove(work_dir: &Path, name: &str) -> Result<(), String> {
    let p = work_dir.join(name);
    match std::fs::remove_file(&p) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(format!("{}: {e}", p.display())),
        _ => Ok(()),
    }
}
