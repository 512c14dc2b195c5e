//! Does a cell's data fit on its scratch devices (their bytes, and the
//! inodes mke2fs fixed), or in its ramdisk (its own size, in the host's
//! memory)? Decided from the host's facts
//! (`facts.scratch`, the memory its limits leave) before the host is
//! touched, so a cell that cannot fit is `unsupported` with the reason
//! instead of failing midway with ENOSPC (or the OOM killer), or — worse —
//! measuring something else (a device removed from a volume that held none
//! of the data moves nothing).
//!
//! Pure: it walks a cell's planned steps per host as the agent will run
//! them, keeping for each mount its devices and the bytes written to it.

use crate::human::mem;
use benchrig_wire::steps::{Action, Codec, CodecTool, FsProfile, RawOp};
use std::collections::BTreeMap;

/// The share of a filesystem's size that data may take: the rest is the
/// filesystem's own (journal, inodes, metadata, btrfs's chunk slack).
const FILL: f64 = 0.9;
/// The share of a volume that may hold data when a device is added or
/// removed: btrfs relocates chunk by chunk and needs free room to move each
/// one to. Measured on kernel 6.18 with 1 GiB devices: 470 MiB on one
/// device balances onto two and 512 MiB does not (ENOSPC); 512 MiB leaves
/// a 2-device raid0 volume and 640 MiB does not.
const RELOCATE: f64 = 0.45;

struct Mount<'a> {
    /// What steps name it by, as the agent does: its scratch device, a
    /// volume's first member (for its whole life), a ramdisk's or remote
    /// mount's name.
    name: &'a str,
    /// The scratch devices under it, whose sizes the facts state (none
    /// for a ramdisk or a remote mount).
    devices: Vec<&'a str>,
    /// A ramdisk's own size: a tmpfs holds data up to it, in the host's
    /// memory.
    in_memory: Option<u64>,
    /// The inodes its filesystem was made with, where mkfs fixes them
    /// (the ext family); XFS and btrfs make them as they go.
    inodes: Option<Inodes>,
    /// Bytes and inodes per file or tree written to it (written again, it
    /// replaces itself).
    files: BTreeMap<&'a str, Usage>,
}

#[derive(Clone, Copy, Default)]
struct Usage {
    bytes: u64,
    inodes: u64,
}

impl Mount<'_> {
    // Saturating: a tree's size saturates (`TreeArgs::disk_bytes`), and a
    // sum that wrapped would say it fits.
    fn data(&self) -> u64 {
        self.files.values().fold(0, |sum, u| sum.saturating_add(u.bytes))
    }

    fn inodes_used(&self) -> u64 {
        self.files.values().fold(0, |sum, u| sum.saturating_add(u.inodes))
    }
}

/// Mount `m` on the host, in place of one of its name: the agent releases
/// that first (a ramdisk, mount or filesystem made again starts empty).
fn put<'a>(on_host: &mut Vec<Mount<'a>>, m: Mount<'a>) {
    on_host.retain(|o| o.name != m.name);
    on_host.push(m);
}

/// An ext filesystem's inode table: how many, and the bytes per inode
/// mke2fs chose them by.
#[derive(Clone, Copy)]
struct Inodes {
    count: u64,
    ratio: Option<u64>,
}

/// What mke2fs makes ext2/3/4 of `bytes` with, by mke2fs.conf's defaults
/// (Debian's, Fedora's and upstream's agree): an inode per `inode_ratio`
/// bytes of its size class or the profile's `-T` class, unless the profile
/// says `-i` or `-N` (the last of each counts, as for mke2fs). `None` for
/// another filesystem, or a `-T` class here unknown.
fn ext_inodes(profile: &FsProfile, bytes: u64) -> Option<Inodes> {
    if !matches!(profile.fstype.as_deref(), Some("ext2" | "ext3" | "ext4")) {
        return None;
    }
    let args = profile.mkfs.get(1..).unwrap_or_default();
    // `-N 1000` or `-N1000`; the last one given.
    let value = |flag: &str| -> Option<&str> {
        args.iter().enumerate().rev().find_map(|(i, a)| match a.strip_prefix(flag) {
            Some("") => args.get(i + 1).map(String::as_str),
            Some(v) => Some(v),
            None => None,
        })
    };
    // `-N 0` is mke2fs's default, as if not given.
    if let Some(count) = value("-N").and_then(|v| v.parse().ok()).filter(|&n: &u64| n > 0) {
        // mke2fs rounds it up to whole inode-table blocks: at least this.
        return Some(Inodes { count, ratio: None });
    }
    const MIB: u64 = 1 << 20;
    const TIB: u64 = 1 << 40;
    let class = match value("-T") {
        Some(t) => Some(t),
        None => Some(match bytes {
            b if b < 3 * MIB => "floppy",
            b if b < 512 * MIB => "small",
            b if b < 4 * TIB => "default",
            b if b < 16 * TIB => "big",
            _ => "huge",
        }),
    };
    let by_class = match class? {
        "floppy" => 8192,
        "small" | "news" => 4096,
        "default" => 16384,
        "big" => 32768,
        "huge" => 65536,
        "largefile" => MIB,
        "largefile4" => 4 * MIB,
        _ => return None,
    };
    let ratio = value("-i").and_then(|v| v.parse().ok()).unwrap_or(by_class).max(1);
    Some(Inodes { count: bytes / ratio, ratio: Some(ratio) })
}

impl Inodes {
    /// What is counted on of `count`: mke2fs gives each block group a whole
    /// number of inode-table blocks, which can come out a little under
    /// size / ratio (100 MiB: 25,584, not 25,600; 511 MiB: 0.2% under).
    fn margin(&self) -> u64 {
        if self.ratio.is_some() {
            self.count / 256
        } else {
            0
        }
    }
}

/// The inodes an empty ext filesystem has in use already: the first ten,
/// reserved, lost+found, and with the `orphan_file` feature its file.
const EXT_RESERVED_INODES: u64 = 12;

/// The block size a data file's last block is rounded to: mkfs's (ext4's
/// and XFS's) on a device the size of a scratch device.
const BLOCK: u64 = 4096;

/// A step as far as capacity cares: the host it runs on and its action.
/// (The planner's `PlannedStep` is one; a trait keeps this module below the
/// planner that calls it.)
pub trait HostStep {
    fn host(&self) -> &str;
    fn action(&self) -> &Action;
}

/// Why the cell's data cannot fit, or `None` if it can or the sizes are unknown.
/// `size(host, scratch)` is what that scratch device holds, `memory(host)`
/// what the host's memory holds for the agent (its limits).
pub fn shortfall<'a, S: HostStep + 'a>(
    steps: impl IntoIterator<Item = &'a S>,
    size: impl Fn(&str, &str) -> Option<u64>,
    memory: impl Fn(&str) -> Option<u64>,
) -> Option<String> {
    let mut mounts: BTreeMap<&str, Vec<Mount>> = BTreeMap::new();
    for step in steps {
        let host = step.host();
        let capacity = |devices: &[&str]| devices.iter().map(|d| size(host, d)).sum::<Option<u64>>();
        let on_host = mounts.entry(host).or_default();
        let mount = |name: &'a str, devices: Vec<&'a str>| Mount {
            name,
            devices,
            in_memory: None,
            inodes: None,
            files: BTreeMap::new(),
        };
        let written: Option<Written> = match step.action() {
            Action::Filesystem(a) => {
                let inodes = size(host, &a.device).and_then(|b| ext_inodes(&a.profile, b));
                put(on_host, Mount { inodes, ..mount(&a.device, vec![a.device.as_str()]) });
                None
            }
            Action::Volume(a) => {
                let name = a.devices.first().map_or("", String::as_str);
                put(on_host, mount(name, a.devices.iter().map(String::as_str).collect()));
                None
            }
            // Targets too (a workload without one takes the newest): a
            // ramdisk of its own size, a remote mount of one nothing here
            // states (nothing is decided on it).
            Action::Ramdisk(a) => {
                put(on_host, Mount { in_memory: Some(a.size.0), ..mount(&a.name, vec![]) });
                None
            }
            Action::Mount(a) => {
                put(on_host, mount(&a.name, vec![]));
                None
            }
            Action::Unmount(a) => {
                match &a.device {
                    Some(d) => on_host.retain(|m| m.name != d),
                    None => on_host.clear(),
                }
                None
            }
            Action::SeqWrite(a) => Some(Written::kept(a.target.as_deref(), &a.file, a.size.0)),
            // A job's files, in its directory: size × numjobs per job
            // (unknown for a job file on the host: nothing decided).
            Action::Fio(a) => {
                let bytes = a.job().ok().flatten().and_then(|j| j.data_bytes());
                bytes.map(|b| Written::kept(a.target.as_deref(), &a.dir, b))
            }
            // The file it reads back, at most its size once compressed. The
            // host's compressor reads a plain copy, removed after it: both
            // are there at once.
            Action::ColdRead(a) => {
                let plain_too = a.tool == CodecTool::External && a.codec != Codec::Raw;
                let transient = if plain_too { a.size.0 } else { 0 };
                Some(Written { transient, ..Written::kept(a.target.as_deref(), &a.file, a.size.0) })
            }
            // Its files, its directories and the directory it is in.
            Action::Tree(a) => match (a.disk_bytes(BLOCK), a.scaled_counts()) {
                (Some(bytes), Ok((files, dirs))) => Some(Written {
                    // `dirs` counts the tree's own directory.
                    usage: Usage { bytes, inodes: files + dirs },
                    ..Written::kept(a.target.as_deref(), &a.dir, bytes)
                }),
                _ => None,
            },
            // As much as the tree it copies, where that tree was built.
            Action::CopyTree(a) => pick(on_host, Some(&a.from))
                .and_then(|m| m.files.get(a.from_dir.as_str()).copied())
                .map(|usage| Written { usage, ..Written::kept(a.to.as_deref(), &a.to_dir, usage.bytes) }),
            Action::VolumeAdd(a) | Action::VolumeRemove(a) => {
                // Only a volume of scratch devices is one (the agent fails the rest).
                let Some(m) = pick(on_host, a.volume.as_deref()).filter(|m| !m.devices.is_empty()) else { continue };
                let adding = matches!(step.action(), Action::VolumeAdd(_));
                // The tighter side: a balance spreads data from the devices
                // there before; a removal packs it onto those left after.
                let before = m.devices.clone();
                if adding {
                    m.devices.push(a.device.as_str());
                } else {
                    m.devices.retain(|d| *d != a.device);
                }
                let (tight, when) = if adding { (&before, "before") } else { (&m.devices, "after") };
                let (data, cap) = (m.data(), capacity(tight));
                if let Some(cap) = cap.filter(|&c| data as f64 > c as f64 * RELOCATE) {
                    return Some(format!(
                        "{} of data cannot be relocated when {} {}: the volume has {} ({}) {when} it, and btrfs needs room to move it: at most {:.0}% of that, {}",
                        mem(data),
                        if adding { "adding" } else { "removing" },
                        a.device,
                        mem(cap),
                        tight.join(" + "),
                        RELOCATE * 100.0,
                        mem((cap as f64 * RELOCATE) as u64)
                    ));
                }
                None
            }
            Action::Raw(a) if a.op != RawOp::Read || a.to.is_some() => {
                let written = a.to.as_deref().unwrap_or(&a.device);
                if let Some(cap) = size(host, written).filter(|&c| a.size.0 > c) {
                    return Some(format!("{} does not fit on {written} ({})", mem(a.size.0), mem(cap)));
                }
                None
            }
            Action::Raw(a) => {
                if let Some(cap) = size(host, &a.device).filter(|&c| a.size.0 > c) {
                    return Some(format!("{} cannot be read from {} ({})", mem(a.size.0), a.device, mem(cap)));
                }
                None
            }
            // Every action is listed, no `_` arm: one that writes data
            // (`writes data` in its row) must say how much, and where.
            Action::NfsExport(_)
            | Action::Service(_)
            | Action::DropCaches(_)
            | Action::SeqRead(_)
            | Action::AclCheck(_)
            | Action::ListTree(_)
            | Action::ReadTree(_)
            | Action::Exec(_)
            | Action::Cleanup(_)
            | Action::Noop(_)
            | Action::Tune(_) => None,
        };
        let Some(w) = written else { continue };
        let Some(m) = pick(on_host, w.target) else { continue };
        m.files.insert(w.file, w.usage);
        let data = m.data().saturating_add(w.transient);
        if let Some(size) = m.in_memory {
            if data > size {
                return Some(format!("{} of data does not fit in ramdisk `{}` ({})", mem(data), m.name, mem(size)));
            }
            // Every ramdisk of the host holds its data in memory at once.
            let ramdisks: Vec<&Mount> = on_host.iter().filter(|r| r.in_memory.is_some() && r.data() > 0).collect();
            let in_memory = ramdisks.iter().fold(w.transient, |sum, r| sum.saturating_add(r.data()));
            if let Some(ram) = memory(host).filter(|&r| in_memory as f64 > r as f64 * FILL) {
                let names: Vec<String> = ramdisks.iter().map(|r| format!("`{}`", r.name)).collect();
                return Some(format!(
                    "{} of data in ramdisk{} {} does not fit in {host}'s memory ({}, of which {:.0}% may hold it)",
                    mem(in_memory),
                    if names.len() > 1 { "s" } else { "" },
                    names.join(" and "),
                    mem(ram),
                    FILL * 100.0
                ));
            }
            continue;
        }
        if let Some(i) = m.inodes.filter(|i| m.inodes_used().saturating_add(EXT_RESERVED_INODES + i.margin()) > i.count)
        {
            let per = i.ratio.map(|r| format!(" (one per {r} bytes of its size)")).unwrap_or_default();
            let margin = match i.margin() {
                0 => String::new(),
                n => format!(" and {n} a margin for mke2fs's rounding"),
            };
            return Some(format!(
                "{} files and directories do not fit on {}: its filesystem has about {} inodes{per}, of which {EXT_RESERVED_INODES} are its own{margin}",
                m.inodes_used(),
                m.devices.join(" + "),
                i.count
            ));
        }
        let cap = capacity(&m.devices).filter(|_| !m.devices.is_empty());
        if let Some(cap) = cap.filter(|&c| data as f64 > c as f64 * FILL) {
            return Some(format!(
                "{} of data does not fit on {} ({}, of which {:.0}% may hold data)",
                mem(data),
                m.devices.join(" + "),
                mem(cap),
                FILL * 100.0
            ));
        }
    }
    None
}

/// What a step writes on its target.
struct Written<'a> {
    /// The mount's name; the newest mount when absent.
    target: Option<&'a str>,
    /// The file or directory it writes there: written again, it replaces itself.
    file: &'a str,
    /// What stays.
    usage: Usage,
    /// Bytes there besides while the step runs, then gone.
    transient: u64,
}

impl<'a> Written<'a> {
    /// One file (or one job's directory of files) of `bytes`.
    fn kept(target: Option<&'a str>, file: &'a str, bytes: u64) -> Written<'a> {
        Written { target, file, usage: Usage { bytes, inodes: 1 }, transient: 0 }
    }
}

/// The mount a step works on: the one of that name, or the newest, as the
/// agent picks it (`HostState::target`).
fn pick<'m, 'a>(mounts: &'m mut [Mount<'a>], name: Option<&str>) -> Option<&'m mut Mount<'a>> {
    match name {
        Some(n) => mounts.iter_mut().rev().find(|m| m.name == n),
        None => mounts.last_mut(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::PlannedStep;
    use benchrig_wire::steps::ACTION_NAMES;
    use serde_json::json;

    fn step(action: &str, args: serde_json::Value) -> PlannedStep {
        PlannedStep {
            name: action.into(),
            action: Action::from_parts(action, args).unwrap(),
            host: "h".into(),
            ignore_errors: false,
            timeout: None,
        }
    }

    const GIB: u64 = 1 << 30;

    fn gib_each(_: &str, d: &str) -> Option<u64> {
        (d != "unknown").then_some(GIB)
    }

    fn no_memory(_: &str) -> Option<u64> {
        None
    }

    #[test]
    fn a_tree_needs_an_inode_per_file_and_directory_where_mke2fs_fixed_them() {
        let tree = |fstype: &str, mkfs: &[&str]| {
            vec![
                step("filesystem", json!({"device": "a", "profile": {"name": fstype, "fstype": fstype, "mkfs": mkfs}})),
                // 70,000 files of 1 KiB: 273 MiB of blocks, which 1 GiB holds.
                step("tree", json!({"files": 70000, "dirs": 100, "size": "1k"})),
            ]
        };
        let why = shortfall(&tree("ext4", &["mkfs.ext4"]), gib_each, no_memory);
        assert_eq!(
            why.as_deref(),
            Some("70100 files and directories do not fit on a: its filesystem has about 65536 inodes (one per 16384 bytes of its size), of which 12 are its own and 256 a margin for mke2fs's rounding")
        );
        assert_eq!(shortfall(&tree("ext4", &["mkfs.ext4", "-i", "8192"]), gib_each, no_memory), None);
        assert_eq!(shortfall(&tree("ext2", &["mkfs.ext2", "-N100000"]), gib_each, no_memory), None);
        // `-N 0` is mke2fs's default count, not none.
        assert!(shortfall(&tree("ext4", &["mkfs.ext4", "-N", "0"]), gib_each, no_memory)
            .unwrap()
            .contains("65536 inodes"));
        assert_eq!(shortfall(&tree("ext4", &["mkfs.ext4", "-N", "0", "-i", "8192"]), gib_each, no_memory), None);
        let few = shortfall(&tree("ext3", &["mkfs.ext3", "-N", "5000"]), gib_each, no_memory).unwrap();
        assert!(few.ends_with("its filesystem has about 5000 inodes, of which 12 are its own"), "{few}");
        // The last -i counts, as for mke2fs; -T picks a class's ratio.
        assert_eq!(shortfall(&tree("ext4", &["mkfs.ext4", "-i", "4096", "-i", "8192"]), gib_each, no_memory), None);
        assert!(shortfall(&tree("ext4", &["mkfs.ext4", "-i", "8192", "-i", "16384"]), gib_each, no_memory).is_some());
        assert_eq!(shortfall(&tree("ext4", &["mkfs.ext4", "-T", "small"]), gib_each, no_memory), None);
        assert!(shortfall(&tree("ext4", &["mkfs.ext4", "-T", "largefile"]), gib_each, no_memory).is_some());
        // XFS and btrfs make inodes as they go; a -T class here unknown decides nothing.
        assert_eq!(shortfall(&tree("xfs", &["mkfs.xfs"]), gib_each, no_memory), None);
        assert_eq!(shortfall(&tree("ext4", &["mkfs.ext4", "-T", "mine"]), gib_each, no_memory), None);
        // Under 512 MiB mke2fs takes its "small" class: one per 4 KiB.
        let small = |_: &str, _: &str| Some(400 << 20);
        assert_eq!(shortfall(&tree("ext4", &["mkfs.ext4"]), small, no_memory), None);
    }

    #[test]
    fn a_ramdisk_holds_its_own_size_and_no_more_than_the_hosts_memory() {
        let steps = |size: &str, tree_files: u64| {
            vec![
                step("ramdisk", json!({"name": "ram", "size": size})),
                // 12 KiB files: 3 blocks each.
                step("tree", json!({"target": "ram", "files": tree_files, "dirs": 1, "size": "12k"})),
            ]
        };
        // 1000 files × 12 KiB = 11.7 MiB.
        assert_eq!(shortfall(&steps("52M", 1000), gib_each, no_memory), None);
        let why = shortfall(&steps("8M", 1000), gib_each, no_memory);
        assert_eq!(why.as_deref(), Some("11 MiB of data does not fit in ramdisk `ram` (8 MiB)"));
        let small_host = |_: &str| Some(10 << 20);
        let why = shortfall(&steps("52M", 1000), gib_each, small_host).unwrap();
        assert!(why.starts_with("11 MiB of data in ramdisk `ram` does not fit in h's memory (10 MiB"), "{why}");
        // Two ramdisks of 7 MiB each: each fits 10 MiB alone, not both at once.
        let two = vec![
            step("ramdisk", json!({"name": "r1", "size": "8M"})),
            step("seq_write", json!({"target": "r1", "size": "7M"})),
            step("ramdisk", json!({"name": "r2", "size": "8M"})),
            step("seq_write", json!({"target": "r2", "size": "7M"})),
        ];
        assert_eq!(shortfall(&two[..2], gib_each, small_host), None);
        let why = shortfall(&two, gib_each, small_host).unwrap();
        assert!(why.starts_with("14 MiB of data in ramdisks `r1` and `r2` does not fit in h's memory"), "{why}");
        // One made again (as before_each does) starts empty: the agent
        // releases the old one first, so its data is not counted twice.
        let again = vec![two[0].clone(), two[1].clone(), two[0].clone(), two[1].clone()];
        assert_eq!(shortfall(&again, gib_each, small_host), None);
    }

    fn remove_from_two(data: &str) -> Vec<PlannedStep> {
        vec![
            step("volume", json!({"devices": ["a", "b"], "data": "raid0"})),
            step("seq_write", json!({"size": data})),
            step("volume_remove", json!({"device": "b"})),
            step("unmount", json!({})),
        ]
    }

    #[test]
    fn data_that_leaves_room_on_the_remaining_volume_fits() {
        assert_eq!(shortfall(&remove_from_two("448M"), gib_each, no_memory), None);
        let why = shortfall(&remove_from_two("512M"), gib_each, no_memory).unwrap();
        assert_eq!(
            why,
            "512 MiB of data cannot be relocated when removing b: the volume has 1.0 GiB (a) after it, and btrfs needs room to move it: at most 45% of that, 460 MiB"
        );
    }

    #[test]
    fn adding_a_device_counts_it() {
        let add = |data: &str| {
            vec![
                step("volume", json!({"devices": ["a"]})),
                step("seq_write", json!({"size": data})),
                step("volume_add", json!({"device": "b"})),
            ]
        };
        assert_eq!(shortfall(&add("448M"), gib_each, no_memory), None);
        let why = shortfall(&add("512M"), gib_each, no_memory).unwrap();
        assert!(why.contains("when adding b: the volume has 1.0 GiB (a) before it"), "{why}");
        assert!(shortfall(&add("1100M"), gib_each, no_memory)
            .unwrap()
            .starts_with("1.1 GiB of data does not fit on a (1.0 GiB"));
    }

    #[test]
    fn a_file_written_again_replaces_itself_and_unmount_forgets() {
        let steps = vec![
            step(
                "filesystem",
                json!({"device": "a", "profile": {"name": "ext4", "fstype": "ext4", "mkfs": ["mkfs.ext4"]}}),
            ),
            step("seq_write", json!({"size": "600M"})),
            step("seq_write", json!({"size": "600M"})),
            step("seq_write", json!({"size": "300M", "file": "other"})),
            step("unmount", json!({})),
            step(
                "filesystem",
                json!({"device": "a", "profile": {"name": "ext4", "fstype": "ext4", "mkfs": ["mkfs.ext4"]}}),
            ),
            step("seq_write", json!({"size": "900M"})),
        ];
        assert_eq!(shortfall(&steps, gib_each, no_memory), None);
        let mut more = steps.clone();
        more.push(step("seq_write", json!({"size": "100M", "file": "third"})));
        assert!(shortfall(&more, gib_each, no_memory).unwrap().contains("of which 90% may hold data"));
    }

    #[test]
    fn unknown_sizes_decide_nothing() {
        let steps = vec![step("volume", json!({"devices": ["unknown"]})), step("seq_write", json!({"size": "100G"}))];
        assert_eq!(shortfall(&steps, gib_each, no_memory), None);
    }

    #[test]
    fn raw_transfers_fit_their_devices() {
        assert_eq!(
            shortfall(&[step("raw", json!({"op": "write", "device": "a", "size": "1G"}))], gib_each, no_memory),
            None
        );
        let copy = step("raw", json!({"op": "copy", "device": "a", "to": "b", "size": "2G"}));
        assert_eq!(shortfall(&[copy], gib_each, no_memory).unwrap(), "2.0 GiB does not fit on b (1.0 GiB)");
        let read = step("raw", json!({"op": "read", "device": "a", "size": "2G"}));
        assert!(shortfall(&[read], gib_each, no_memory).unwrap().contains("cannot be read from a"));
    }

    #[test]
    fn a_fio_job_fits_with_every_clone_of_every_job() {
        let fio = |jobs: serde_json::Value| {
            vec![
                step(
                    "filesystem",
                    json!({"device": "a", "profile": {"name": "ext4", "fstype": "ext4", "mkfs": ["mkfs.ext4"]}}),
                ),
                step("fio", json!({"jobs": jobs})),
            ]
        };
        // 2 × 256M + 200M = 712 MiB: fits in 90% of 1 GiB (921 MiB).
        assert_eq!(
            shortfall(&fio(json!({"a": {"size": "256M", "numjobs": 2}, "b": {"size": "200M"}})), gib_each, no_memory),
            None
        );
        let why =
            shortfall(&fio(json!({"a": {"size": "256M", "numjobs": 3}, "b": {"size": "200M"}})), gib_each, no_memory);
        assert_eq!(why.as_deref(), Some("968 MiB of data does not fit on a (1.0 GiB, of which 90% may hold data)"));
        // Repetitions of one job rewrite its files; a job file on the host decides nothing.
        let mut twice = fio(json!({"a": {"size": "600M"}}));
        twice.push(twice[1].clone());
        assert_eq!(shortfall(&twice, gib_each, no_memory), None);
        let on_host = vec![twice[0].clone(), step("fio", json!({"job_file": "/etc/big.fio"}))];
        assert_eq!(shortfall(&on_host, gib_each, no_memory), None);
    }

    fn ext4_on(device: &str) -> PlannedStep {
        step(
            "filesystem",
            json!({"device": device, "profile": {"name": "ext4", "fstype": "ext4", "mkfs": ["mkfs.ext4"]}}),
        )
    }

    #[test]
    fn every_action_whose_row_writes_data_is_weighed() {
        // For each, 2 GiB or more onto a 1 GiB device.
        let too_big = |name: &str| -> Vec<PlannedStep> {
            match name {
                "seq_write" => vec![ext4_on("a"), step("seq_write", json!({"size": "2G"}))],
                "fio" => vec![ext4_on("a"), step("fio", json!({"jobs": {"j": {"size": "2G"}}}))],
                "tree" => vec![ext4_on("a"), step("tree", json!({"files": 2048, "dirs": 8, "size": "1M"}))],
                "copy_tree" => vec![
                    step("ramdisk", json!({"name": "ram", "size": "3G"})),
                    step("tree", json!({"target": "ram", "files": 1024, "dirs": 8, "size": "2M"})),
                    ext4_on("a"),
                    step("copy_tree", json!({"from": "ram", "to": "a"})),
                ],
                "cold_read" => vec![ext4_on("a"), step("cold_read", json!({"size": "2G", "codec": "lzo"}))],
                "raw" => vec![step("raw", json!({"op": "write", "device": "a", "size": "2G"}))],
                other => {
                    panic!("`{other}` writes data (its row says): weigh it in `shortfall` and give it a case here")
                }
            }
        };
        let writers: Vec<&str> = ACTION_NAMES.iter().copied().filter(|n| Action::writes_data(n)).collect();
        assert!(writers.len() >= 6, "{writers:?}");
        for name in writers {
            let steps = too_big(name);
            let why = shortfall(&steps, gib_each, no_memory);
            assert!(why.as_deref().is_some_and(|w| w.contains("does not fit on a")), "{name}: {why:?}");
        }
    }

    #[test]
    fn a_tree_and_its_copy_count_files_times_size_on_their_own_targets() {
        let steps = |files: u64, scale: f64| {
            vec![
                step("ramdisk", json!({"name": "ram", "size": "3G"})),
                step("tree", json!({"target": "ram", "files": files, "dirs": 8, "size": "1M", "scale": scale})),
                ext4_on("a"),
                step("copy_tree", json!({"from": "ram", "to": "a"})),
            ]
        };
        // 900 MiB fits in 90% of 1 GiB (921.6 MiB); 1000 do not. On the
        // ramdisk, whose size no scratch device states, nothing is decided.
        assert_eq!(shortfall(&steps(900, 1.0), gib_each, no_memory), None);
        assert_eq!(
            shortfall(&steps(500, 2.0), gib_each, no_memory).unwrap(),
            "1000 MiB of data does not fit on a (1.0 GiB, of which 90% may hold data)"
        );
        // A copy of a tree never built (or built where nothing is known) decides nothing.
        let mut unknown = steps(2000, 1.0);
        unknown.remove(1);
        assert_eq!(shortfall(&unknown, gib_each, no_memory), None);
    }

    #[test]
    fn a_workload_without_a_target_writes_to_the_newest_mount_a_ramdisk_included() {
        let on_ram = vec![
            ext4_on("a"),
            step("ramdisk", json!({"name": "ram", "size": "3G"})),
            step("seq_write", json!({"size": "2G"})),
        ];
        assert_eq!(shortfall(&on_ram, gib_each, no_memory), None);
        let named = vec![on_ram[0].clone(), on_ram[1].clone(), step("seq_write", json!({"size": "2G", "target": "a"}))];
        assert!(shortfall(&named, gib_each, no_memory).is_some());
    }

    #[test]
    fn the_host_s_compressor_needs_room_for_the_plain_copy_beside_its_output() {
        let cold =
            |tool: &str| vec![ext4_on("a"), step("cold_read", json!({"size": "600M", "codec": "gzip", "tool": tool}))];
        assert_eq!(shortfall(&cold("builtin"), gib_each, no_memory), None);
        let why = shortfall(&cold("external"), gib_each, no_memory).unwrap();
        assert!(why.starts_with("1.2 GiB of data does not fit on a"), "{why}");
        // Once compressed, only the compressed file stays.
        let mut after = cold("external");
        after[1] = step("cold_read", json!({"size": "400M", "codec": "gzip", "tool": "external"}));
        after.push(step("seq_write", json!({"size": "400M"})));
        assert_eq!(shortfall(&after, gib_each, no_memory), None);
    }

    #[test]
    fn a_tree_s_small_files_take_a_whole_block_each() {
        // XFS: its inodes are made as needed (ext4 on 1 GiB has 65,536).
        let xfs = step(
            "filesystem",
            json!({"device": "a", "profile": {"name": "xfs", "fstype": "xfs", "mkfs": ["mkfs.xfs"]}}),
        );
        let tree = |size: &str| vec![xfs.clone(), step("tree", json!({"files": 200_000, "dirs": 100, "size": size}))];
        // 200 000 × 100 B is 19 MiB of data, but 781 MiB of 4 KiB blocks.
        assert_eq!(shortfall(&tree("100"), gib_each, no_memory), None);
        let why = shortfall(&tree("5000"), gib_each, no_memory).unwrap();
        assert!(why.starts_with("1.5 GiB of data does not fit on a"), "{why}");
        let absurd =
            vec![ext4_on("a"), step("tree", json!({"files": u64::MAX, "dirs": 1, "size": "1G", "scale": 1e-12}))];
        assert!(shortfall(&absurd, gib_each, no_memory).is_some(), "saturates, never wraps");
    }

    #[test]
    fn a_volume_keeps_its_first_member_s_name_and_only_a_volume_relocates() {
        // As the agent: removing the first member leaves the volume its name.
        let mut steps = vec![
            step("volume", json!({"devices": ["a", "b", "c"]})),
            step("volume_remove", json!({"device": "a"})),
            step("seq_write", json!({"size": "1900M", "target": "a"})),
        ];
        let why = shortfall(&steps, gib_each, no_memory).unwrap();
        assert!(why.contains("does not fit on b + c (2.0 GiB"), "{why}");
        steps.insert(2, step("unmount", json!({"device": "a"})));
        assert_eq!(shortfall(&steps, gib_each, no_memory), None, "unmounted by that name");
        // A ramdisk named like a scratch device is not a volume to relocate on.
        let ram = vec![
            step("ramdisk", json!({"name": "a", "size": "3G"})),
            step("seq_write", json!({"size": "2G"})),
            step("volume_remove", json!({"device": "b"})),
        ];
        assert_eq!(shortfall(&ram, gib_each, no_memory), None);
    }
}
