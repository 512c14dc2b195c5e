//! The rules a scratch device must pass right before mkfs.
//!
//! The orchestrator only asks for devices listed in the host's
//! `scratch_devices`, but the agent is the one about to write, on the host,
//! at that moment: it checks again. A refusal names its rule and changes
//! nothing.
//!
//! The rules, in the order a person wants to hear them ([`check`]; that the
//! name is listed is `scratch::listed`'s): not behind a system mount, not
//! mounted, not a partition of the system disk (unless `wipe` and the
//! disk's `serial`), not swap, no holders (md, dm, LVM), not claimed (an
//! `O_EXCL` open fails while the kernel holds the device, in any mount
//! namespace), the expected serial, writable, and, unless `wipe`, no
//! partitions and no signature but the filesystem benchrig made there last
//! (by UUID, from the `ledger`). Before these, `scratch` makes sure a
//! `kind: image` is a regular file, and lets one benchrig created (its
//! `.benchrig` marker) be formatted over without `wipe`. The kernel's view
//! comes through `sysfs::SysView` and the device through [`DeviceProbe`],
//! so tests run every rule on fake trees.

use crate::ledger::Made;
use crate::signature::Signature;
use crate::sysfs::{kernel_name, SysView};
use benchrig_wire::scratch::ScratchDevice;

pub use crate::sysfs::Device;

#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct Refusal {
    pub rule: &'static str,
    pub message: String,
}

fn refuse(rule: &'static str, message: String) -> Refusal {
    Refusal { rule, message }
}

/// What the rules need from the device itself; faked in tests so they need no disk.
pub trait DeviceProbe {
    /// Every filesystem, RAID, LVM, LUKS, swap or partition-table signature on it.
    fn signatures(&self) -> Result<Vec<Signature>, String>;
    /// Open the device exclusively (O_EXCL) and close it again: the kernel
    /// refuses while anything claims it, in any mount namespace (a mount, a
    /// btrfs/md/dm member, swap, a lazily unmounted filesystem).
    fn exclusive(&self) -> Result<(), String>;
    /// What the host's format ledger says benchrig last made on this
    /// device; why it cannot say, when it cannot be trusted or read.
    fn made_here(&self) -> Result<Option<Made>, String>;
    /// Whether the disk `disk` (a kernel name) holds an EFI system partition.
    fn disk_holds_esp(&self, disk: &str) -> bool;
}

/// Mountpoints whose backing device is never scratch.
const SYSTEM_MOUNTS: &[&str] = &["/", "/boot", "/boot/efi", "/usr", "/var", "/home"];

/// Apply every rule, in the order a person would want to hear them.
pub fn check(view: &SysView, entry: &ScratchDevice, dev: &Device, probe: &dyn DeviceProbe) -> Result<(), Refusal> {
    // The device and its partitions: a rule that holds for any of them holds for the device.
    let mut family = vec![dev.name.clone()];
    family.extend(view.partitions(&dev.name));

    let mounts = view.mounts_of(&family);
    if let Some(m) = mounts.iter().find(|m| SYSTEM_MOUNTS.contains(&m.target.as_str())) {
        return Err(refuse("root", format!("{} backs the system mount {} ({})", dev.name, m.target, m.source)));
    }
    if let Some(m) = mounts.first() {
        return Err(refuse("mounted", format!("{} is mounted at {} ({})", m.source, m.target, m.fstype)));
    }
    system_disk(view, entry, dev, probe)?;
    if let Some(s) = view.swaps().into_iter().find(|s| kernel_name(s).is_some_and(|n| family.contains(&n))) {
        return Err(refuse("swap", format!("{s} is an active swap area")));
    }
    for member in &family {
        let holders = view.holders(member);
        if !holders.is_empty() {
            return Err(refuse(
                "holders",
                format!("{member} is held by {} (md, dm or LVM uses it)", holders.join(", ")),
            ));
        }
    }
    if let Err(e) = probe.exclusive() {
        return Err(refuse("in_use", format!("{} is in use: {e}", dev.name)));
    }
    if let Some(want) = &entry.serial {
        // A partition's serial is its disk's.
        let disk = if view.is_partition(&dev.name) { view.parent_disk(&dev.name) } else { None };
        let disk = disk.as_deref().unwrap_or(&dev.name);
        let have = view.serial(disk).or_else(|| view.wwn(disk));
        if have.as_deref().map(str::trim) != Some(want.trim()) {
            return Err(refuse(
                "serial",
                format!(
                    "{} reports serial {} but the inventory expects {want}",
                    dev.name,
                    have.as_deref().unwrap_or("(none)")
                ),
            ));
        }
    }
    if view.read(&view.class_block(&dev.name).join("ro")).as_deref() == Some("1") {
        return Err(refuse("read_only", format!("{} is read-only", dev.name)));
    }
    if !entry.wipe {
        let parts = &family[1..];
        if !parts.is_empty() {
            return Err(refuse(
                "signature",
                format!(
                    "{} has partitions ({}); set `wipe: true` to allow formatting over them",
                    dev.name,
                    parts.join(", ")
                ),
            ));
        }
        let found = probe
            .signatures()
            .map_err(|e| refuse("signature", format!("cannot read {} to look for signatures: {e}", dev.name)))?;
        if !found.is_empty() {
            own_filesystem(&dev.name, &found, probe.made_here().as_ref().map(Option::as_ref))
                .map_err(|m| refuse("signature", m))?;
        }
    }
    Ok(())
}

/// A partition of the disk the machine runs or boots from (a sibling holds
/// a system mount, or the disk an EFI system partition): one wrong
/// partition number away from `/`. Only with `wipe` and the disk's
/// `serial`, which say someone looked at this very disk.
fn system_disk(view: &SysView, entry: &ScratchDevice, dev: &Device, probe: &dyn DeviceProbe) -> Result<(), Refusal> {
    let Some(disk) = view.is_partition(&dev.name).then(|| view.parent_disk(&dev.name)).flatten() else {
        return Ok(());
    };
    if entry.wipe && entry.serial.is_some() {
        return Ok(());
    }
    let siblings: Vec<String> = view.partitions(&disk).into_iter().filter(|p| *p != dev.name).collect();
    let system = view
        .mounts_of(&siblings)
        .into_iter()
        .find(|m| SYSTEM_MOUNTS.contains(&m.target.as_str()) || m.target == "/efi")
        .map(|m| format!("the system mount {} ({})", m.target, m.source));
    let what = system.or_else(|| probe.disk_holds_esp(&disk).then(|| "an EFI system partition".to_string()));
    match what {
        Some(what) => Err(refuse(
            "system_disk",
            format!(
                "{} is a partition of {disk}, which holds {what}; to use it anyway, list it with `wipe: true` and {disk}'s `serial`",
                dev.name
            ),
        )),
        None => Ok(()),
    }
}

/// A device that carries signatures may be formatted without `wipe` only
/// when every one of them is the filesystem benchrig last made on it: the
/// same UUID the ledger recorded at mkfs. Otherwise the refusal says what
/// is there and what benchrig knows of the device.
fn own_filesystem(dev: &str, found: &[Signature], made: Result<Option<&Made>, &String>) -> Result<(), String> {
    let what = |s: &Signature| match &s.uuid {
        Some(u) => format!("{} signature (UUID {u})", s.name),
        None => format!("{} signature", s.name),
    };
    let proceed = "if nothing on it is needed, set `wipe: true` on its scratch_devices entry, or clear it on the host (`wipefs -a`)";
    let made = made.map_err(|why| {
        format!("{dev} carries a {}, and {why}, so nothing vouches that benchrig made it; {proceed}", what(&found[0]))
    })?;
    let Some(made) = made else {
        return Err(format!(
            "{dev} carries a {} that benchrig did not make on this device; {proceed}",
            what(&found[0])
        ));
    };
    let ours = format!("the {} (UUID {}) benchrig made on it {}", made.fstype, made.uuid, date(made.made_at));
    // All of them one filesystem benchrig made: the one it made last, or,
    // when that mkfs was announced but never confirmed, the one before.
    let is = |uuid: &str| found.iter().all(|s| s.uuid.as_deref() == Some(uuid));
    if made.uuids().any(is) {
        return Ok(());
    }
    let mine = |s: &Signature| s.uuid.as_deref().is_some_and(|u| made.uuids().any(|m| m == u));
    match found.iter().find(|s| !mine(s)) {
        Some(other) if found.iter().any(mine) => {
            Err(format!("{dev} carries {ours}, but also a {}; {proceed}", what(other)))
        }
        Some(other) => Err(format!("{dev} carries a {}, not {ours}: it was made again since; {proceed}", what(other))),
        None => {
            let all: Vec<String> = found.iter().map(what).collect();
            Err(format!("{dev} carries the remains of two filesystems benchrig made ({}); {proceed}", all.join(", ")))
        }
    }
}

/// Seconds since the epoch as a UTC date and time (the agent has no date crate).
fn date(secs: u64) -> String {
    // Howard Hinnant's civil_from_days.
    let days = (secs / 86400) as i64 + 719_468;
    let (era, doe) = (days.div_euclid(146_097), days.rem_euclid(146_097));
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let t = secs % 86400;
    format!("on {year:04}-{month:02}-{day:02} {:02}:{:02} UTC", t / 3600, t / 60 % 60)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::path::{Path, PathBuf};

    /// A fake machine: `vda` (root, with vda1 mounted at /), `sdb` blank scratch,
    /// `sdc` with a partition used as swap, `sdd` held by dm-0, `sde` with serial,
    /// `sdf` mounted at /data, `sdg` with a partition.
    struct Fake {
        _dir: tempfile::TempDir,
        view: SysView,
    }

    fn dev_dir(root: &Path, name: &str, parent: Option<&str>, majmin: &str) -> PathBuf {
        let real = match parent {
            Some(p) => root.join("sys/devices/virtual/block").join(p).join(name),
            None => root.join("sys/devices/virtual/block").join(name),
        };
        fs::create_dir_all(real.join("holders")).unwrap();
        fs::write(real.join("dev"), format!("{majmin}\n")).unwrap();
        if parent.is_some() {
            fs::write(real.join("partition"), "1\n").unwrap();
        }
        let class = root.join("sys/class/block");
        fs::create_dir_all(&class).unwrap();
        std::os::unix::fs::symlink(&real, class.join(name)).unwrap();
        real
    }

    fn fake() -> Fake {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        dev_dir(r, "vda", None, "254:0");
        dev_dir(r, "vda1", Some("vda"), "254:1");
        dev_dir(r, "vda2", Some("vda"), "254:2");
        dev_dir(r, "sdb", None, "8:16");
        dev_dir(r, "sdc", None, "8:32");
        dev_dir(r, "sdc2", Some("sdc"), "8:34");
        let sdd = dev_dir(r, "sdd", None, "8:48");
        fs::create_dir_all(sdd.join("holders/dm-0")).unwrap();
        let sde = dev_dir(r, "sde", None, "8:64");
        fs::create_dir_all(sde.join("device")).unwrap();
        fs::write(sde.join("device/serial"), "WD-REAL\n").unwrap();
        dev_dir(r, "sdf", None, "8:80");
        dev_dir(r, "sdg", None, "8:96");
        dev_dir(r, "sdg1", Some("sdg"), "8:97");
        fs::create_dir_all(r.join("proc/self")).unwrap();
        fs::write(
            r.join("proc/self/mountinfo"),
            "22 1 254:1 / / rw - ext4 /dev/vda1 rw\n95 22 8:80 / /data rw - xfs /dev/sdf rw\n",
        )
        .unwrap();
        fs::write(r.join("proc/swaps"), "Filename Type Size Used Priority\n/dev/sdc2 partition 100 0 -2\n").unwrap();
        let view = SysView::at(r);
        Fake { _dir: dir, view }
    }

    fn entry(name: &str) -> ScratchDevice {
        ScratchDevice {
            path: format!("/dev/{name}"),
            name: "s".into(),
            serial: None,
            wipe: false,
            kind: Default::default(),
            size: None,
        }
    }

    fn dev(f: &Fake, name: &str) -> Device {
        let (major, minor) = f.view.dev_numbers(name).unwrap();
        Device { name: name.into(), major, minor }
    }

    /// A device as the probes see it: its signatures, whether something
    /// claims it, and what the ledger says benchrig made on it.
    struct Probe {
        signatures: Result<Vec<Signature>, String>,
        claimed: bool,
        made: Result<Option<Made>, String>,
        esp: bool,
    }

    impl DeviceProbe for Probe {
        fn signatures(&self) -> Result<Vec<Signature>, String> {
            self.signatures.clone()
        }
        fn made_here(&self) -> Result<Option<Made>, String> {
            self.made.clone()
        }
        fn disk_holds_esp(&self, _disk: &str) -> bool {
            self.esp
        }
        fn exclusive(&self) -> Result<(), String> {
            if self.claimed {
                Err("Device or resource busy".into())
            } else {
                Ok(())
            }
        }
    }

    const BLANK: Probe = Probe { signatures: Ok(Vec::new()), claimed: false, made: Ok(None), esp: false };

    fn sig(name: &str, uuid: Option<&str>) -> Signature {
        Signature { name: name.into(), uuid: uuid.map(str::to_string) }
    }

    fn made(uuid: &str) -> Option<Made> {
        Some(Made {
            fstype: "ext2/ext3/ext4".into(),
            uuid: uuid.into(),
            made_at: 1_764_578_096,
            path: "/dev/sdb".into(),
            previous: None,
        })
    }

    fn carrying(signatures: Vec<Signature>, made: Option<Made>) -> Probe {
        Probe { signatures: Ok(signatures), claimed: false, made: Ok(made), esp: false }
    }

    fn rule(r: Result<(), Refusal>) -> &'static str {
        r.err().map(|e| e.rule).unwrap_or("accepted")
    }

    #[test]
    fn blank_listed_disk_is_accepted() {
        let f = fake();
        assert_eq!(rule(check(&f.view, &entry("sdb"), &dev(&f, "sdb"), &BLANK)), "accepted");
    }

    #[test]
    fn the_disk_behind_root_is_refused_even_with_wipe() {
        let f = fake();
        let mut e = entry("vda");
        e.wipe = true;
        let r = check(&f.view, &e, &dev(&f, "vda"), &BLANK);
        assert_eq!(rule(r.clone()), "root");
        assert!(r.unwrap_err().message.contains("/dev/vda1"));
        assert_eq!(rule(check(&f.view, &e, &dev(&f, "vda1"), &BLANK)), "root");
    }

    /// (On the main before, vda2 beside `/` on vda1 was formatted like any
    /// spare partition.)
    #[test]
    fn a_partition_of_the_system_disk_needs_wipe_and_the_disks_serial() {
        let f = fake();
        let r = check(&f.view, &entry("vda2"), &dev(&f, "vda2"), &BLANK);
        assert_eq!(rule(r.clone()), "system_disk");
        let m = r.unwrap_err().message;
        assert!(m.contains("vda2 is a partition of vda, which holds the system mount / (/dev/vda1)"), "{m}");
        assert!(m.contains("`wipe: true` and vda's `serial`"), "{m}");
        let mut wiped = entry("vda2");
        wiped.wipe = true;
        assert_eq!(rule(check(&f.view, &wiped, &dev(&f, "vda2"), &BLANK)), "system_disk", "wipe alone is not enough");
        // A disk with an ESP, none of it mounted: the same.
        let esp = Probe { esp: true, ..BLANK };
        let r = check(&f.view, &entry("sdg1"), &dev(&f, "sdg1"), &esp);
        assert!(r.unwrap_err().message.contains("holds an EFI system partition"));
        assert_eq!(rule(check(&f.view, &entry("sdg1"), &dev(&f, "sdg1"), &BLANK)), "accepted");
    }

    #[test]
    fn mounted_device_is_refused() {
        let f = fake();
        let mut e = entry("sdf");
        e.wipe = true;
        assert_eq!(rule(check(&f.view, &e, &dev(&f, "sdf"), &BLANK)), "mounted");
    }

    #[test]
    fn disk_whose_partition_is_swap_is_refused() {
        let f = fake();
        let mut e = entry("sdc");
        e.wipe = true;
        assert_eq!(rule(check(&f.view, &e, &dev(&f, "sdc"), &BLANK)), "swap");
    }

    #[test]
    fn held_device_is_refused() {
        let f = fake();
        let mut e = entry("sdd");
        e.wipe = true;
        assert_eq!(rule(check(&f.view, &e, &dev(&f, "sdd"), &BLANK)), "holders");
    }

    #[test]
    fn serial_must_match() {
        let f = fake();
        let mut e = entry("sde");
        e.serial = Some("WD-OTHER".into());
        let r = check(&f.view, &e, &dev(&f, "sde"), &BLANK);
        assert_eq!(rule(r.clone()), "serial");
        assert!(r.unwrap_err().message.contains("WD-REAL"));
        e.serial = Some("WD-REAL".into());
        assert_eq!(rule(check(&f.view, &e, &dev(&f, "sde"), &BLANK)), "accepted");
        // A device with no serial at all does not match one the inventory expects.
        let mut e = entry("sdb");
        e.serial = Some("X".into());
        assert_eq!(rule(check(&f.view, &e, &dev(&f, "sdb"), &BLANK)), "serial");
    }

    #[test]
    fn signature_needs_wipe() {
        let f = fake();
        let ext4 = carrying(vec![sig("ext2/ext3/ext4", Some("u-1"))], None);
        let mut e = entry("sdb");
        let r = check(&f.view, &e, &dev(&f, "sdb"), &ext4);
        assert_eq!(rule(r.clone()), "signature");
        let m = r.unwrap_err().message;
        assert!(m.contains("ext2/ext3/ext4 signature (UUID u-1) that benchrig did not make on this device"), "{m}");
        assert!(m.contains("wipe: true") && m.contains("wipefs -a"), "{m}");
        e.wipe = true;
        assert_eq!(rule(check(&f.view, &e, &dev(&f, "sdb"), &ext4)), "accepted");
    }

    #[test]
    fn the_filesystem_benchrig_made_here_needs_no_wipe() {
        let f = fake();
        let ours = carrying(vec![sig("ext2/ext3/ext4", Some("u-1")), sig("ext4 (blkid)", Some("u-1"))], made("u-1"));
        assert_eq!(rule(check(&f.view, &entry("sdb"), &dev(&f, "sdb"), &ours)), "accepted");
    }

    #[test]
    fn a_mkfs_lost_midway_leaves_either_filesystem_benchrigs() {
        // The ledger names the UUID before mkfs runs: the device carries the
        // new one (mkfs ran), or the one before (it never did), not a mix.
        let f = fake();
        let announced = made("u-new").map(|m| Made { previous: Some("u-old".into()), ..m });
        for uuid in ["u-new", "u-old"] {
            let p = carrying(vec![sig("xfs", Some(uuid)), sig("xfs (blkid)", Some(uuid))], announced.clone());
            assert_eq!(rule(check(&f.view, &entry("sdb"), &dev(&f, "sdb"), &p)), "accepted", "{uuid}");
        }
        let mixed = carrying(vec![sig("xfs", Some("u-new")), sig("btrfs", Some("u-old"))], announced.clone());
        assert_eq!(rule(check(&f.view, &entry("sdb"), &dev(&f, "sdb"), &mixed)), "signature");
        let other = carrying(vec![sig("xfs", Some("u-3"))], announced);
        assert!(check(&f.view, &entry("sdb"), &dev(&f, "sdb"), &other)
            .unwrap_err()
            .message
            .contains("made again since"));
    }

    #[test]
    fn a_ledger_that_cannot_be_trusted_vouches_for_nothing_and_says_why() {
        let f = fake();
        let why = "the format ledger /var/lib/benchrig/formatted.json is not trusted: /var/lib/benchrig is owned by uid 1000, neither root nor the agent's user (uid 0)";
        let forged = Probe { made: Err(why.into()), ..carrying(vec![sig("ext2/ext3/ext4", Some("u-1"))], None) };
        let m = check(&f.view, &entry("sdb"), &dev(&f, "sdb"), &forged).unwrap_err().message;
        assert!(m.contains(why) && m.contains("nothing vouches that benchrig made it"), "{m}");
        assert!(m.contains("set `wipe: true`"), "{m}");
        // A blank device needs no ledger.
        let blank = Probe { made: Err(why.into()), ..BLANK };
        assert_eq!(rule(check(&f.view, &entry("sdb"), &dev(&f, "sdb"), &blank)), "accepted");
    }

    #[test]
    fn a_filesystem_made_again_since_is_refused() {
        // mkfs by hand after benchrig's: another UUID, whatever its label says.
        let f = fake();
        let remade = carrying(vec![sig("ext2/ext3/ext4", Some("u-2"))], made("u-1"));
        let r = check(&f.view, &entry("sdb"), &dev(&f, "sdb"), &remade);
        let m = r.unwrap_err().message;
        assert!(
            m.contains("(UUID u-2), not the ext2/ext3/ext4 (UUID u-1) benchrig made on it on 2025-12-01 08:34 UTC"),
            "{m}"
        );
        assert!(m.contains("made again since"), "{m}");
    }

    #[test]
    fn the_filesystem_benchrig_made_beside_another_signature_is_refused() {
        let f = fake();
        for other in [sig("LVM2_member", None), sig("LVM2_member (blkid)", Some("pv-9"))] {
            let both = carrying(vec![sig("ext2/ext3/ext4", Some("u-1")), other], made("u-1"));
            let m = check(&f.view, &entry("sdb"), &dev(&f, "sdb"), &both).unwrap_err().message;
            assert!(m.contains("but also a LVM2_member"), "{m}");
        }
    }

    #[test]
    fn a_signature_without_uuid_is_never_taken_for_benchrigs() {
        // A partition table, RAID or swap has no filesystem UUID to match.
        let f = fake();
        for name in ["dos partition table or boot sector", "linux_raid_member (1.2)", "swap"] {
            let p = carrying(vec![sig(name, None)], made("u-1"));
            assert_eq!(rule(check(&f.view, &entry("sdb"), &dev(&f, "sdb"), &p)), "signature", "{name}");
        }
    }

    #[test]
    fn partitions_are_refused_whatever_the_ledger_says() {
        let f = fake();
        let p = carrying(vec![sig("ext2/ext3/ext4", Some("u-1"))], made("u-1"));
        let r = check(&f.view, &entry("sdg"), &dev(&f, "sdg"), &p);
        assert_eq!(rule(r.clone()), "signature");
        assert!(r.unwrap_err().message.contains("has partitions (sdg1)"));
    }

    #[test]
    fn a_device_claimed_elsewhere_is_refused_even_with_wipe() {
        // Mounted in another mount namespace, or a member of a btrfs volume: invisible to
        // mountinfo here, but the kernel will not open it exclusively.
        let f = fake();
        let mut e = entry("sdb");
        e.wipe = true;
        let claimed = Probe { signatures: Ok(Vec::new()), claimed: true, made: Ok(None), esp: false };
        assert_eq!(rule(check(&f.view, &e, &dev(&f, "sdb"), &claimed)), "in_use");
    }

    #[test]
    fn unreadable_device_is_refused_not_assumed_blank() {
        let f = fake();
        let broken = Probe { signatures: Err("EIO".to_string()), claimed: false, made: Ok(made("u-1")), esp: false };
        assert_eq!(rule(check(&f.view, &entry("sdb"), &dev(&f, "sdb"), &broken)), "signature");
    }
}
