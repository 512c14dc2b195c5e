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
                format!(
                    "cannot record the new filesystem in {}: {e}; formatting over it will need `wipe: true`",
                    self.ledger.path().display()
                ),
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
        let field = |key: &str| out.stdout.lines().find_map(|l| l.strip_prefix(key)).map(str::to_string);
        match out.status {
            // 2: nothing found. 0: found. Anything else (8: ambivalent, 4: error) is not "blank".
            2 => {}
            0 => found.push(Signature {
                name: format!(
                    "{} (blkid)",
                    field("TYPE=").or_else(|| field("PTTYPE=")).as_deref().unwrap_or("unknown")
                ),
                uuid: field("UUID="),
            }),
            8 => found.push(Signature { name: "more than one (blkid: ambivalent result)".into(), uuid: None }),
            n => return Err(format!("blkid -p exited {n}: {}", out.reason())),
        }
        Ok(found)
    }

    fn exclusive(&self) -> Result<(), String> {
        exclusive_open(self.path)
    }

    fn made_here(&self) -> Option<Made> {
        self.ledger.lookup(&self.identity)
    }
}

/// Open a device exclusively and close it again: fails while anything claims it.
pub fn exclusive_open(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::EXCL.bits() as i32)
        .open(path)
        .map(drop)
        .map_err(|e| e.to_string())
}
