//! A device on this host as the safety rules and the ledger see it: the
//! [`DeviceProbe`] the rules ask (signatures, exclusive open, what the
//! ledger says benchrig made there), and the ledger entry for the
//! filesystem it carries once benchrig has written one.

use crate::cmd;
use crate::ledger::{self, Ledger, Made};
use crate::outbox::StepCtx;
use crate::safety::DeviceProbe;
use crate::signature::{self, Signature};
use crate::state::HostState;
use benchrig_wire::messages::LogLevel;
use std::fs::File;
use std::io::{Seek, SeekFrom};
use std::path::Path;

/// The real device behind the safety rules' probes.
pub struct RealDevice<'a> {
    path: &'a Path,
    /// Its stable identity, the ledger's key.
    pub identity: String,
    ledger: &'a Ledger,
}

impl<'a> RealDevice<'a> {
    /// The device with kernel name `dev` at `path`.
    pub fn new(st: &'a HostState, dev: &str, path: &'a Path) -> Self {
        RealDevice { path, identity: st.view.stable_identity(dev), ledger: &st.ledger }
    }

    /// Record in the ledger the filesystem UUID the device carries, if any;
    /// false when it has none. A ledger that cannot be written is logged,
    /// not an error: formatting over the device then needs `wipe`, and the
    /// refusal says why.
    pub fn record_filesystem(&self, ctx: &StepCtx) -> bool {
        let found = self.signatures().unwrap_or_default();
        // Our table's name for it where it knows the filesystem, else blkid's.
        let Some(fs) = found.iter().find(|s| s.uuid.is_some()) else { return false };
        let made = Made {
            fstype: fs.name.clone(),
            uuid: fs.uuid.clone().unwrap_or_default(),
            made_at: ledger::now(),
            path: self.path.to_string_lossy().into_owned(),
            previous: None,
        };
        if let Err(e) = self.ledger.record(&self.identity, made) {
            ctx.log(
                LogLevel::Warn,
                format!("cannot record the new filesystem: {e}; formatting over it will need `wipe: true`"),
            );
        }
        true
    }
}

impl DeviceProbe for RealDevice<'_> {
    /// Our own magic table, then blkid's view (which knows more) where the host has it.
    fn signatures(&self) -> Result<Vec<Signature>, String> {
        let mut f = File::open(self.path).map_err(|e| e.to_string())?;
        let size = f.seek(SeekFrom::End(0)).map_err(|e| e.to_string())?;
        let mut found = signature::probe(&mut f, size).map_err(|e| e.to_string())?;
        if cmd::which("blkid").is_none() {
            return Ok(found);
        }
        let out = cmd::run(&["blkid", "-p", "-o", "export", &self.path.to_string_lossy()])?;
        match out.status {
            // 2: nothing found. 0: found. Anything else (8: ambivalent, 4: error) is not "blank".
            2 => {}
            0 => found.extend(blkid_found(&out.stdout)),
            8 => found.push(Signature { name: "more than one (blkid: ambivalent result)".into(), uuid: None }),
            n => return Err(format!("blkid -p exited {n}: {}", out.reason())),
        }
        Ok(found)
    }

    fn exclusive(&self) -> Result<(), String> {
        crate::undo::exclusive_open(self.path)
    }

    fn disk_holds_esp(&self, disk: &str) -> bool {
        let Ok(mut f) = File::open(Path::new("/dev").join(disk)) else { return false };
        let Ok(size) = f.seek(SeekFrom::End(0)) else { return false };
        signature::has_esp(&mut f, size).unwrap_or(false)
    }

    fn made_here(&self) -> Result<Option<Made>, String> {
        self.ledger.lookup(&self.identity).map_err(|e| e.to_string())
    }
}

/// What `blkid -p -o export` found, when it exits 0. On a partition it
/// always prints the partition's entry in its disk's table (`PART_ENTRY_*`):
/// that is where the partition is, not something on it, so a blank
/// partition, the scratch space a real lab hands out, is blank.
fn blkid_found(export: &str) -> Option<Signature> {
    let field = |key: &str| export.lines().find_map(|l| l.strip_prefix(key)).map(str::to_string);
    let content =
        export.lines().any(|l| !l.trim().is_empty() && !l.starts_with("DEVNAME=") && !l.starts_with("PART_ENTRY_"));
    content.then(|| Signature {
        name: format!("{} (blkid)", field("TYPE=").or_else(|| field("PTTYPE=")).as_deref().unwrap_or("unknown")),
        uuid: field("UUID="),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// blkid 2.38's output (util-linux, Debian 12) for a blank GPT
    /// partition, and for one with ext4 on it.
    #[test]
    fn a_partitions_table_entry_is_no_signature_but_what_is_on_it_is() {
        let blank = "DEVNAME=/dev/loop18p2\nPART_ENTRY_SCHEME=gpt\nPART_ENTRY_UUID=0a1fff6e-565d-0241-a032-1d5679d8b7f2\n\
                     PART_ENTRY_TYPE=0fc63daf-8483-4772-8e79-3d69d8477de4\nPART_ENTRY_NUMBER=2\nPART_ENTRY_OFFSET=411648\n\
                     PART_ENTRY_SIZE=1228800\nPART_ENTRY_DISK=7:18\n";
        assert_eq!(blkid_found(blank).map(|s| s.name), None);
        let ext4 = format!("{blank}UUID=5a7c0e4e-1f2b-4f7e-9a55-0c8b7e2d9f11\nBLOCK_SIZE=1024\nVERSION=1.0\nTYPE=ext4\nUSAGE=filesystem\n");
        let s = blkid_found(&ext4).unwrap();
        assert_eq!(
            (s.name.as_str(), s.uuid.as_deref()),
            ("ext4 (blkid)", Some("5a7c0e4e-1f2b-4f7e-9a55-0c8b7e2d9f11"))
        );
        let table = "DEVNAME=/dev/loop18\nPTUUID=db3534e4-47c2-dc43-848e-dce56a6d7c9d\nPTTYPE=gpt\n";
        assert_eq!(blkid_found(table).unwrap().name, "gpt (blkid)");
    }
}
