//! The kernel settings that change results, where they live in /sys and
//! /proc, read for facts and named by `tune` (which writes the same files).
//! A file that is absent reads as `None`: recorded as absent, never guessed.

use crate::sysfs::SysView;
use benchrig_wire::facts::{HostTuning, QueueFacts};
use std::collections::BTreeMap;
use std::fs;
use std::path::PathBuf;

/// The active word of a sysfs choice list (`none mq-deadline [bfq]` → bfq,
/// `always [madvise] never` → madvise); a file without brackets is its value.
pub fn bracketed(text: &str) -> String {
    text.split_whitespace()
        .find(|w| w.starts_with('['))
        .map(|w| w.trim_matches(|c| c == '[' || c == ']').to_string())
        .unwrap_or_else(|| text.trim().to_string())
}

pub fn cpufreq_dir(view: &SysView) -> PathBuf {
    view.sys.join("devices/system/cpu/cpufreq")
}

/// `policy*` directories of cpufreq, sorted by number.
pub fn cpufreq_policies(view: &SysView) -> Vec<PathBuf> {
    let mut p: Vec<(u32, PathBuf)> = fs::read_dir(cpufreq_dir(view))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let n = e.file_name().to_string_lossy().strip_prefix("policy")?.parse().ok()?;
            Some((n, e.path()))
        })
        .collect();
    p.sort();
    p.into_iter().map(|(_, d)| d).collect()
}

pub fn thp_dir(view: &SysView) -> PathBuf {
    view.sys.join("kernel/mm/transparent_hugepage")
}

pub fn vm_sysctl(view: &SysView, name: &str) -> PathBuf {
    view.proc_.join("sys/vm").join(name)
}

/// `/proc/sys/<name with dots as slashes>` (`vm.swappiness`).
pub fn sysctl_path(view: &SysView, name: &str) -> PathBuf {
    view.proc_.join("sys").join(name.replace('.', "/"))
}

pub fn queue_dir(view: &SysView, dev: &str) -> PathBuf {
    view.class_block(dev).join("queue")
}

/// One value per policy, or the common one.
fn per_policy(view: &SysView, file: &str) -> Option<String> {
    let values: Vec<(String, String)> = cpufreq_policies(view)
        .iter()
        .filter_map(|d| {
            let name = d.file_name()?.to_string_lossy().into_owned();
            Some((name, view.read(&d.join(file))?))
        })
        .collect();
    let first = values.first()?.1.clone();
    if values.iter().all(|(_, v)| *v == first) {
        Some(first)
    } else {
        Some(values.iter().map(|(p, v)| format!("{p}={v}")).collect::<Vec<_>>().join(" "))
    }
}

/// Boost on: the generic `cpufreq/boost`, else intel_pstate's inverted `no_turbo`.
pub fn boost(view: &SysView) -> Option<bool> {
    if let Some(b) = view.read(&cpufreq_dir(view).join("boost")) {
        return Some(b == "1");
    }
    view.read(&view.sys.join("devices/system/cpu/intel_pstate/no_turbo")).map(|v| v == "0")
}

pub fn host_tuning(view: &SysView) -> HostTuning {
    let cpu = view.sys.join("devices/system/cpu");
    let num = |name: &str| view.read(&vm_sysctl(view, name)).and_then(|v| v.parse().ok());
    let mut mitigations = BTreeMap::new();
    for e in fs::read_dir(cpu.join("vulnerabilities")).into_iter().flatten().flatten() {
        if let Some(v) = view.read(&e.path()) {
            mitigations.insert(e.file_name().to_string_lossy().into_owned(), v);
        }
    }
    HostTuning {
        cpufreq_driver: per_policy(view, "scaling_driver"),
        governor: per_policy(view, "scaling_governor"),
        boost: boost(view),
        smt_control: view.read(&cpu.join("smt/control")),
        smt_active: view.read(&cpu.join("smt/active")).map(|v| v == "1"),
        thp_enabled: view.read(&thp_dir(view).join("enabled")).map(|s| bracketed(&s)),
        thp_defrag: view.read(&thp_dir(view).join("defrag")).map(|s| bracketed(&s)),
        swappiness: num("swappiness"),
        dirty_ratio: num("dirty_ratio"),
        dirty_background_ratio: num("dirty_background_ratio"),
        dirty_bytes: num("dirty_bytes"),
        dirty_background_bytes: num("dirty_background_bytes"),
        cmdline: view.read(&view.proc_.join("cmdline")),
        mitigations,
    }
}

/// The device whose request queue serves `dev`: a partition's disk.
pub fn queue_owner(view: &SysView, dev: &str) -> String {
    if view.is_partition(dev) {
        view.parent_disk(dev).unwrap_or_else(|| dev.to_string())
    } else {
        dev.to_string()
    }
}

pub fn queue(view: &SysView, dev: &str) -> QueueFacts {
    let dev = queue_owner(view, dev);
    let q = queue_dir(view, &dev);
    let read = |f: &str| view.read(&q.join(f));
    QueueFacts {
        scheduler: read("scheduler").map(|s| bracketed(&s)),
        read_ahead_kb: read("read_ahead_kb").and_then(|v| v.parse().ok()),
        nr_requests: read("nr_requests").and_then(|v| v.parse().ok()),
        write_cache: read("write_cache"),
        rotational: read("rotational").map(|r| r == "1"),
        device: dev,
    }
}

/// The devices under block device `dev` whose queues shape its I/O: its
/// own queue's device and, for a loop device, the device its backing file
/// lives on (the lab's disks are loop devices over files).
pub fn devices_under(view: &SysView, dev: &str) -> Vec<String> {
    let mut out = vec![queue_owner(view, dev)];
    if let Some(file) = view.read(&view.class_block(dev).join("loop/backing_file")) {
        if let Some(d) = view.device_for_path(std::path::Path::new(&file)) {
            let d = queue_owner(view, &d);
            if !out.contains(&d) {
                out.push(d);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> (tempfile::TempDir, SysView) {
        let dir = tempfile::tempdir().unwrap();
        let view = SysView::at(dir.path());
        (dir, view)
    }

    fn write(view: &SysView, path: PathBuf, text: &str) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
        let _ = view;
    }

    #[test]
    fn host_settings_on_a_machine_with_cpufreq_smt_and_thp() {
        let (_d, v) = tree();
        let cpu = v.sys.join("devices/system/cpu");
        for (p, gov) in [("policy0", "performance"), ("policy1", "performance")] {
            write(&v, cpu.join("cpufreq").join(p).join("scaling_governor"), &format!("{gov}\n"));
            write(&v, cpu.join("cpufreq").join(p).join("scaling_driver"), "intel_pstate\n");
        }
        write(&v, cpu.join("intel_pstate/no_turbo"), "1\n");
        write(&v, cpu.join("smt/control"), "on\n");
        write(&v, cpu.join("smt/active"), "1\n");
        write(&v, cpu.join("vulnerabilities/meltdown"), "Mitigation: PTI\n");
        write(&v, cpu.join("vulnerabilities/l1tf"), "Not affected\n");
        write(&v, v.sys.join("kernel/mm/transparent_hugepage/enabled"), "always [madvise] never\n");
        write(&v, v.sys.join("kernel/mm/transparent_hugepage/defrag"), "always defer defer+madvise [madvise] never\n");
        write(&v, v.proc_.join("sys/vm/swappiness"), "60\n");
        write(&v, v.proc_.join("sys/vm/dirty_ratio"), "20\n");
        write(&v, v.proc_.join("sys/vm/dirty_bytes"), "0\n");
        write(&v, v.proc_.join("cmdline"), "BOOT_IMAGE=/vmlinuz root=/dev/sda1 mitigations=auto\n");
        let t = host_tuning(&v);
        assert_eq!(t.governor.as_deref(), Some("performance"));
        assert_eq!(t.cpufreq_driver.as_deref(), Some("intel_pstate"));
        assert_eq!(t.boost, Some(false), "no_turbo=1 is boost off");
        assert_eq!((t.smt_control.as_deref(), t.smt_active), (Some("on"), Some(true)));
        assert_eq!((t.thp_enabled.as_deref(), t.thp_defrag.as_deref()), (Some("madvise"), Some("madvise")));
        assert_eq!(
            (t.swappiness, t.dirty_ratio, t.dirty_bytes, t.dirty_background_ratio),
            (Some(60), Some(20), Some(0), None)
        );
        assert_eq!(t.cmdline.as_deref(), Some("BOOT_IMAGE=/vmlinuz root=/dev/sda1 mitigations=auto"));
        assert_eq!(t.mitigations.get("meltdown").map(String::as_str), Some("Mitigation: PTI"));
        assert_eq!(t.mitigations.len(), 2);
        // Policies that differ are each named; the generic boost file wins over intel_pstate's.
        write(&v, cpu.join("cpufreq/policy1/scaling_governor"), "powersave\n");
        write(&v, cpu.join("cpufreq/boost"), "1\n");
        let t = host_tuning(&v);
        assert_eq!(t.governor.as_deref(), Some("policy0=performance policy1=powersave"));
        assert_eq!(t.boost, Some(true));
    }

    #[test]
    fn a_vm_without_cpufreq_or_smt_records_them_absent() {
        let (_d, v) = tree();
        write(&v, v.proc_.join("sys/vm/swappiness"), "10\n");
        let t = host_tuning(&v);
        assert_eq!(
            (t.governor, t.cpufreq_driver, t.boost, t.smt_control, t.smt_active),
            (None, None, None, None, None)
        );
        assert_eq!((t.thp_enabled, t.swappiness), (None, Some(10)));
        assert!(t.mitigations.is_empty());
    }

    #[test]
    fn a_partition_reads_its_disks_queue() {
        let (_d, v) = tree();
        let q = v.sys.join("class/block/sda/queue");
        write(&v, q.join("scheduler"), "none [mq-deadline] kyber bfq\n");
        write(&v, q.join("read_ahead_kb"), "128\n");
        write(&v, q.join("nr_requests"), "64\n");
        write(&v, q.join("write_cache"), "write back\n");
        write(&v, q.join("rotational"), "1\n");
        write(&v, v.sys.join("class/block/sda/dev"), "8:0\n");
        write(&v, v.sys.join("class/block/sda/sda1/partition"), "1\n");
        // sysfs puts a partition under its disk; /sys/class/block/sda1 links there.
        std::os::unix::fs::symlink(v.sys.join("class/block/sda/sda1"), v.sys.join("class/block/sda1")).unwrap();
        let want = QueueFacts {
            device: "sda".into(),
            scheduler: Some("mq-deadline".into()),
            read_ahead_kb: Some(128),
            nr_requests: Some(64),
            write_cache: Some("write back".into()),
            rotational: Some(true),
        };
        assert_eq!(queue(&v, "sda"), want);
        assert_eq!(queue(&v, "sda1"), want);
        // A device without a queue directory has every setting absent.
        assert_eq!(queue(&v, "loop9"), QueueFacts { device: "loop9".into(), ..Default::default() });
    }

    #[test]
    fn bracketed_words() {
        assert_eq!(bracketed("none [mq-deadline] kyber"), "mq-deadline");
        assert_eq!(bracketed("none\n"), "none");
    }
}
