//! End-to-end on the simulated lab: real sshd, real agent pushed over SSH,
//! real mkfs and mounts on loop devices. Run by ci/test.sh with the lab up:
//!     cargo test --workspace --test lab -- --ignored --test-threads=64
//! Each test names the hosts it uses first (common/hosts.rs), so that tests
//! on disjoint hosts run at once.

mod bisect;
#[path = "../common/mod.rs"]
mod common;
mod dead_agents;
mod real_hosts;
mod shared_lab;

use benchrig::status::{CellStatus, RunStatus};
use common::hosts::*;
use common::*;
use serde_json::Value as Json;

const LAB_HOSTS: [&str; 5] = ["old", "fast1", "fast2", "hdd", "soc"];

/// The table that lets lab tests run at once (pure; no lab needed).
#[test]
fn the_lab_table_starts_tests_on_disjoint_hosts_in_turn_and_lone_ones_last() {
    let parts = |p: &[Lab]| Claim::Parts(p.to_vec());
    // Nothing runs: the first on each host starts; fast1's second waits.
    let waiting = [(0, parts(&[Fast1, Fast2])), (1, parts(&[Fast1])), (2, parts(&[Hdd])), (3, Claim::Alone)];
    assert_eq!(starting(&[], &waiting), [0, 2]);
    // The others wait behind a held host, however early they asked.
    assert_eq!(starting(&[parts(&[Fast1])], &waiting[1..]), [2]);
    // At most RUNNING at once, whatever their hosts.
    let many: Vec<(u64, Claim)> =
        [Old, Hdd, Soc, Fast1, Fast2, ThisMachine].iter().enumerate().map(|(i, h)| (i as u64, parts(&[*h]))).collect();
    assert_eq!(starting(&[], &many).len(), RUNNING);
    // A lone test: not while another runs or waits, then by itself.
    assert_eq!(starting(&[parts(&[Hdd])], &[(3, Claim::Alone)]), Vec::<u64>::new());
    assert_eq!(starting(&[], &[(3, Claim::Alone), (4, parts(&[Old]))]), [4]);
    assert_eq!(starting(&[], &[(3, Claim::Alone), (5, Claim::Alone)]), [3]);
    assert_eq!(starting(&[Claim::Alone], &[(4, parts(&[Old])), (5, Claim::Alone)]), Vec::<u64>::new());
}

#[test]
#[ignore = "needs the simulated lab (ci/test.sh)"]
fn facts_from_every_host_and_the_old_one_runs_the_32_bit_agent() {
    let _lab = uses(&EVERY_HOST);
    let b = Bench::new();
    let inv = lab_inventory();
    let out = b.run(&["facts", "-i", inv.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let facts: Json = serde_json::from_str(&stdout(&out)).unwrap();
    let hosts: Vec<&String> = facts.as_object().unwrap().keys().collect();
    assert_eq!(hosts, ["old", "fast1", "fast2", "hdd", "soc"]);
    assert_eq!(facts["old"]["arch"], "i686");
    assert_eq!(facts["fast1"]["arch"], "x86_64");
    let i686 = sha256_file(&repo().join("target/i686-unknown-linux-musl/agent/benchrig-agent"));
    let x64 = sha256_file(&repo().join("target/x86_64-unknown-linux-musl/agent/benchrig-agent"));
    assert_eq!(facts["old"]["agent"]["sha256"], i686.as_str());
    assert_eq!(facts["fast2"]["agent"]["sha256"], x64.as_str());
    // The old host's limits are visible in its facts (exactly: see the next test).
    let quota = facts["old"]["limits"]["cpu_quota"].as_f64().unwrap();
    assert!((0.05..0.2).contains(&quota), "old host CPU quota {quota}");
    assert!(facts["old"]["block_devices"].as_array().unwrap().iter().any(|d| d["rotational"] == true));
    let soc_quota = facts["soc"]["limits"]["cpu_quota"].as_f64().unwrap();
    assert!((0.1..0.2).contains(&soc_quota), "soc CPU quota {soc_quota}");
    assert!(facts["hdd"]["limits"]["cpu_quota"].is_null(), "hdd has the whole CPU");
    for h in LAB_HOSTS {
        assert!(facts[h]["filesystems"].as_array().unwrap().iter().any(|f| f == "xfs"));
        assert!(facts[h]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "mkfs.ext4" && t["version"].is_string()));
        assert_eq!(facts[h]["user"]["root"], true);
    }
}

/// ci/lab.sh's host table: `old` 12000 of 100000 us and 512M, `soc` 15000
/// and 1G, the others nothing. The lab mounts its v1 hierarchies on a tmpfs
/// in each host's mount namespace, and the machine's totals are far larger.
#[test]
#[ignore = "needs the simulated lab (ci/test.sh)"]
fn facts_report_the_limits_each_lab_host_really_has() {
    let _lab = uses(&[Old, Soc, Fast1]);
    let b = Bench::new();
    let inv = lab_inventory();
    let out = b.run(&["facts", "-i", inv.to_str().unwrap(), "-l", "old:soc:fast1", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let facts: Json = serde_json::from_str(&stdout(&out)).unwrap();
    let old = &facts["old"]["limits"];
    assert_eq!(old["memory_bytes"], 512u64 << 20, "{old}");
    assert_eq!(old["cpu_quota"], 0.12, "{old}");
    assert_eq!(old["effective_memory_bytes"], 512u64 << 20, "{old}");
    assert_eq!(old["effective_cpus"], 0.12, "{old}");
    assert!(facts["old"]["memory"]["total_bytes"].as_u64().unwrap() > 1 << 30, "the machine's total stays");
    let soc = &facts["soc"]["limits"];
    assert_eq!((soc["memory_bytes"].as_u64(), soc["cpu_quota"].as_f64()), (Some(1 << 30), Some(0.15)), "{soc}");
    let fast1 = &facts["fast1"]["limits"];
    for key in ["memory_bytes", "memory_swap_bytes", "cpu_quota", "cpuset", "cpuset_cpus", "affinity_cpus"] {
        assert!(fast1[key].is_null(), "fast1 has no {key} limit: {fast1}");
    }
    assert_eq!(fast1["effective_memory_bytes"], facts["fast1"]["memory"]["total_bytes"]);
    assert_eq!(fast1["effective_cpus"].as_f64(), fast1["online_cpus"].as_f64());
    // And people see them.
    let out = b.run(&["facts", "-i", inv.to_str().unwrap(), "-l", "old:fast1"]);
    let text = stdout(&out);
    assert!(text.contains("  limits: memory 512 MiB, CPU quota 0.12 → effective 512 MiB, 0.12 CPU\n"), "{text}");
    assert!(text.contains("  limits: none\n"), "{text}");
}

#[test]
#[ignore = "needs the simulated lab (ci/test.sh)"]
fn a_second_session_does_not_upload_the_agent_again() {
    let _lab = uses(&[Fast1]);
    let b = Bench::new();
    let inv = lab_inventory();
    let sha = sha256_file(&repo().join("target/x86_64-unknown-linux-musl/agent/benchrig-agent"));
    // fast1's home is the lab's hosts/fast1/home, visible from here.
    let agent = format!("/var/tmp/benchrig-lab/hosts/fast1/home/.cache/benchrig/benchrig-agent-{sha}");
    let inode = || sh(&format!("stat -c '%i %Y' {agent}"));
    assert_eq!(b.run(&["facts", "-i", inv.to_str().unwrap(), "-l", "fast1"]).status.code(), Some(0));
    let first = inode();
    assert_eq!(b.run(&["facts", "-i", inv.to_str().unwrap(), "-l", "fast1"]).status.code(), Some(0));
    assert_eq!(inode(), first, "the agent was written again");
    // And a missing one is uploaded (so the check above can fail).
    std::fs::remove_file(&agent).unwrap();
    assert_eq!(b.run(&["facts", "-i", inv.to_str().unwrap(), "-l", "fast1"]).status.code(), Some(0));
    assert!(std::path::Path::new(&agent).exists());
}

#[test]
#[ignore = "needs the simulated lab (ci/test.sh)"]
fn quickstart_over_ssh_on_every_host_stores_every_sample() {
    let _lab = uses(&EVERY_HOST);
    let b = Bench::new();
    let inv = lab_inventory();
    let pb = repo().join("playbooks/quickstart.yml");
    let out = b.run(&[
        "run",
        pb.to_str().unwrap(),
        "-i",
        inv.to_str().unwrap(),
        "-e",
        "size=8M",
        "-e",
        "reps=2",
        "--name",
        "e2e",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let s = b.store();
    let run = s.resolve_run("e2e").unwrap();
    assert_eq!(run.status, RunStatus::Ok);
    let cells = s.cells(run.id).unwrap();
    // 5 hosts × 3 filesystems × 2 block sizes, every one ok.
    assert_eq!(cells.len(), 30);
    assert!(cells.iter().all(|c| c.status == CellStatus::Ok), "{cells:?}");
    let samples = s.samples(run.id).unwrap();
    for c in &cells {
        // 2 reps × (write + read) × (throughput + time).
        let n = samples.iter().filter(|x| x.cell_id == c.id).count();
        assert_eq!(n, 8, "cell {} on {}", c.key, c.host);
        let info = c.info.as_ref().expect("setup recorded");
        let setup = info.as_object().unwrap().iter().find(|(k, _)| k.starts_with("setup[0]")).unwrap().1;
        assert!(setup["mkfs_command"].as_str().unwrap().starts_with("mkfs."));
        assert!(setup["mkfs_version"].is_string());
    }
    // Every cold read came from the disk, not the page cache: its device
    // counters show the whole file read. (Its speed is not checked: cgroup
    // v1 blk-throttle lets a few MiB through at full speed when a slice
    // starts, which on an 8 MiB file is most of it.)
    for x in samples.iter().filter(|x| x.step == "cold read" && x.metric == "throughput") {
        assert!(x.dev_read_bytes.unwrap() >= 8 << 20, "a cold read that did not reach the disk: {x:?}");
    }
    // `show` and `report` see the same run.
    let show = stdout(&b.run(&["show", "e2e"]));
    assert!(show.contains("fs=xfs bs=4k") && show.contains("old"), "{show}");
    let report: Json = serde_json::from_str(&stdout(&b.run(&["report", "e2e", "--format", "json"]))).unwrap();
    assert_eq!(report["run"]["status"], "ok");
    assert_eq!(report["cells"].as_array().unwrap().len(), 30 * 2, "one entry per cell and measured step");
    assert_eq!(report["hosts"][0]["facts"]["arch"], "i686");
    // Nothing is left mounted in the hosts (their mount namespaces are private).
    for h in LAB_HOSTS {
        assert_eq!(lab(&["ssh", h, "grep -c benchrig/work/mnt /proc/mounts || true"]), "0", "{h} kept a mount");
    }
}

#[test]
#[ignore = "needs the simulated lab (ci/test.sh)"]
fn safety_rules_refuse_on_real_devices_and_leave_them_intact() {
    let _lab = uses(&[Fast2]);
    let b = Bench::new();
    lab_inventory();
    let (mounted, swap, serial, blank) = (LoopDisk::new(64), LoopDisk::new(64), LoopDisk::new(64), LoopDisk::new(64));
    // mkfs.xfs wants 300 MB at least.
    let sig = LoopDisk::new(320);
    sh(&format!("mkfs.ext4 -q -F {}", mounted.dev));
    sh(&format!("mkswap {} >/dev/null && swapon {}", swap.dev, swap.dev));
    sh(&format!("mkfs.xfs -q -f {}", sig.dev));
    // Mounted inside fast2's own mount namespace, where its agent looks;
    // read-only so the filesystem itself writes nothing while we watch.
    lab(&["ssh", "fast2", &format!("'mkdir -p /mnt/held && mount -o ro {} /mnt/held'", mounted.dev)]);
    // The swap device's slots are the kernel's to write (the lab's memory
    // cgroups swap), so only its signature page is held still.
    let digests = || [mounted.digest(), swap.header_digest(), sig.digest(), serial.digest()];
    let before = digests();
    let scratch = format!(
        "        - {{ path: {}, name: mounted, wipe: true }}\n        - {{ path: {}, name: swap, wipe: true }}\n        \
         - {{ path: {}, name: sig }}\n        - {{ path: {}, name: serial, serial: WD-NOT-THIS-ONE }}\n        - {{ path: {}, name: blank }}\n",
        mounted.dev, swap.dev, sig.dev, serial.dev, blank.dev
    );
    let inv = b.write("inv.yml", &inventory_for("fast2", "10.77.0.13", &scratch));
    let pb = b.write(
        "safety.yml",
        "- hosts: all\n  matrix:\n    dev: [mounted, swap, sig, serial, blank]\n  setup:\n    - filesystem: {device: \"{{ dev }}\", profile: ext4}\n  \
         benchmark:\n    - noop:\n  teardown:\n    - unmount:\n",
    );
    let out = b.run(&["run", pb.to_str().unwrap(), "-i", inv.to_str().unwrap()]);
    let after = digests();
    assert!(
        sh("swapon --show=NAME --noheadings").lines().any(|l| l.trim() == swap.dev),
        "the swap device is no longer in use"
    );
    lab(&["ssh", "fast2", "umount /mnt/held"]);
    assert_eq!(out.status.code(), Some(2), "refusals are failed cells");
    let s = b.store();
    let cells = s.cells(s.resolve_run("last").unwrap().id).unwrap();
    let reason = |dev: &str| {
        let c = cells.iter().find(|c| c.params["dev"] == dev).unwrap();
        (c.status.to_string(), c.reason.clone().unwrap_or_default())
    };
    for (dev, rule) in [("mounted", "mounted"), ("swap", "swap"), ("sig", "signature"), ("serial", "serial")] {
        let (status, why) = reason(dev);
        assert_eq!(status, "failed", "{dev}");
        assert!(why.contains(&format!("refused by rule `{rule}`")), "{dev}: {why}");
    }
    assert_eq!(reason("blank"), ("ok".to_string(), String::new()));
    assert_eq!(before, after, "a refused device was written to");
    assert!(
        sh(&format!("blkid -p -o value -s TYPE {} || true", blank.dev)).contains("ext4"),
        "the accepted blank device was formatted"
    );
}

/// The quickstart's cells on `host` with one 1 GiB scratch device and no `wipe`:
/// the run's status and each cell's (status, reason).
fn quickstart_on(b: &Bench, host: &str, address: &str, dev: &LoopDisk, name: &str) -> (i32, Vec<(String, String)>) {
    let inv = if host == "localhost" {
        format!("all:\n  hosts:\n    localhost:\n      ansible_connection: local\n      scratch_devices:\n        - {{ path: {}, name: d0 }}\n", dev.dev)
    } else {
        inventory_for(host, address, &format!("        - {{ path: {}, name: d0 }}\n", dev.dev))
    };
    let inv = b.write(&format!("{name}.yml"), &inv);
    let pb = repo().join("playbooks/quickstart.yml");
    let args = ["run", pb.to_str().unwrap(), "-i", inv.to_str().unwrap(), "-e", "size=32M", "-e", "reps=2"];
    let out = b.run(&[&args[..], &["--name", name]].concat());
    let s = b.store();
    let cells = s.cells(s.resolve_run(name).unwrap().id).unwrap();
    (
        out.status.code().unwrap(),
        cells.into_iter().map(|c| (c.status.to_string(), c.reason.unwrap_or_default())).collect(),
    )
}

#[test]
#[ignore = "needs the simulated lab (ci/test.sh)"]
fn without_wipe_benchrig_formats_over_its_own_filesystem_and_nothing_else() {
    let _lab = uses(&[Fast1, Fast2]);
    let b = Bench::new();
    lab_inventory();
    let disk = LoopDisk::new(1024);
    // A blank device, no `wipe`: every cell formats over the one before it.
    let (code, cells) = quickstart_on(&b, "fast2", "10.77.0.13", &disk, "own");
    assert_eq!(cells.len(), 6);
    assert!(cells.iter().all(|(s, _)| s == "ok"), "{cells:?}");
    assert_eq!(code, 0);

    // The same bytes on another device (an image benchrig formatted
    // elsewhere, copied here): not benchrig's on this device.
    let copy = disk.copy();
    let before = copy.digest();
    let (code, cells) = quickstart_on(&b, "fast1", "10.77.0.12", &copy, "copied");
    assert_eq!(code, 2);
    for (status, why) in &cells {
        assert_eq!(status, "failed");
        assert!(
            why.contains("refused by rule `signature`") && why.contains("that benchrig did not make on this device"),
            "{why}"
        );
        assert!(why.contains("wipe: true"), "the refusal says how to proceed: {why}");
    }
    assert_eq!(copy.digest(), before, "a refused device was written to");

    // Made again by hand since: refused, and the refusal says so.
    sh(&format!("mkfs.ext4 -q -F {}", disk.dev));
    let before = disk.digest();
    let (code, cells) = quickstart_on(&b, "fast2", "10.77.0.13", &disk, "remade");
    assert_eq!(code, 2);
    for (status, why) in &cells {
        assert_eq!(status, "failed");
        assert!(why.contains("refused by rule `signature`") && why.contains("made again since"), "{why}");
    }
    assert_eq!(disk.digest(), before, "a refused device was written to");
}

#[test]
#[ignore = "needs the simulated lab (ci/test.sh)"]
fn volume_scaling_completes_on_four_1_gib_devices_and_measures_the_data_moved() {
    let _lab = uses(&[Fast2]);
    // The shipped playbook as it is, on a host configured the careful way:
    // four 1 GiB devices, no `wipe`, no sizes in the inventory.
    let b = Bench::new();
    lab_inventory();
    let disks: Vec<LoopDisk> = (0..4).map(|_| LoopDisk::new(1024)).collect();
    let scratch: String =
        disks.iter().enumerate().map(|(i, d)| format!("        - {{ path: {}, name: d{i} }}\n", d.dev)).collect();
    let inv = b.write("inv.yml", &inventory_for("fast2", "10.77.0.13", &scratch));
    let pb = repo().join("playbooks/volume-scaling.yml");
    let (pb, inv) = (pb.to_str().unwrap(), inv.to_str().unwrap());
    let out = b.run(&["run", pb, "-i", inv, "-e", "reps=1", "--name", "small"]);
    let s = b.store();
    let run = s.resolve_run("small").unwrap();
    let cells = s.cells(run.id).unwrap();
    // raw 3 ops × 2 devices, volumes 4 × 2 profiles − 1, add 3, remove 3.
    assert_eq!(cells.len(), 19);
    assert!(cells.iter().all(|c| c.status == CellStatus::Ok), "{cells:?}");
    assert_eq!(out.status.code(), Some(0));
    // Every add and remove moved the volume's data (raid0: all of it), and
    // its speed is what moved per second, not the data on the volume.
    let samples = s.samples(run.id).unwrap();
    let moves: Vec<_> = samples.iter().filter(|x| x.step == "add" || x.step == "remove").collect();
    assert_eq!(moves.iter().filter(|x| x.metric == "relocated").count(), 6);
    for x in moves.iter().filter(|x| x.metric == "throughput") {
        let info = x.info.as_ref().expect("the step's info");
        let (data, moved) = (info["data_bytes"].as_f64().unwrap(), info["relocated_bytes"].as_f64().unwrap());
        assert!(data > 300e6, "the data is sized from the 1 GiB devices, not tiny: {data}");
        assert!(moved >= 0.9 * data && moved <= 3.0 * data, "{} moved {moved} of {data}", x.step);
        let time = moves.iter().find(|y| y.cell_id == x.cell_id && y.metric == "time").unwrap().value;
        assert!((x.value - moved / 1e6 / time).abs() < 1e-6 * x.value.max(1.0), "throughput is moved / time");
    }

    // Data that cannot be moved is unsupported, with the reason, before the host is touched.
    let out = b.run(&["run", pb, "-i", inv, "-e", "reps=1", "-e", "volume_size=512M", "--name", "big"]);
    assert_eq!(out.status.code(), Some(0), "unsupported cells are no failure");
    let cells = s.cells(s.resolve_run("big").unwrap().id).unwrap();
    let unsupported: Vec<_> = cells.iter().filter(|c| c.status == CellStatus::Unsupported).collect();
    assert_eq!(unsupported.len(), 2, "add to 1 device and remove from 2: {cells:?}");
    for c in unsupported {
        let why = c.reason.as_deref().unwrap_or_default();
        assert!(why.contains("512 MiB of data cannot be relocated") && why.contains("at most 45%"), "{why}");
    }
}

#[test]
#[ignore = "needs root and the agent builds (ci/test.sh)"]
fn without_wipe_a_device_benchrig_copied_a_filesystem_onto_is_benchrigs_to_format() {
    let _lab = uses(&[ThisMachine]);
    require_root("it attaches loop devices");
    // volume-scaling.yml's raw copy puts a copy of d0's filesystem on d1; d1's
    // next mkfs must not be refused for a filesystem benchrig wrote there.
    let b = Bench::new();
    let (d0, d1) = (LoopDisk::new(320), LoopDisk::new(320));
    let inv = format!(
        "all:\n  hosts:\n    localhost:\n      ansible_connection: local\n      scratch_devices:\n        \
         - {{ path: {}, name: d0 }}\n        - {{ path: {}, name: d1 }}\n",
        d0.dev, d1.dev
    );
    let inv = b.write("inv.yml", &inv);
    let pb = b.write(
        "copy.yml",
        "- hosts: all\n  setup:\n    - filesystem: {device: d0, profile: ext4}\n  benchmark:\n    - noop:\n  teardown:\n    - unmount:\n\
         - hosts: all\n  benchmark:\n    - raw: {op: copy, device: d0, to: d1, size: 8M}\n\
         - hosts: all\n  setup:\n    - filesystem: {device: d1, profile: xfs}\n  benchmark:\n    - noop:\n  teardown:\n    - unmount:\n",
    );
    let out = b.run(&["run", pb.to_str().unwrap(), "-i", inv.to_str().unwrap()]);
    let s = b.store();
    let cells = s.cells(s.resolve_run("last").unwrap().id).unwrap();
    assert_eq!(cells.len(), 3);
    assert!(cells.iter().all(|c| c.status == CellStatus::Ok), "{cells:?}");
    assert_eq!(out.status.code(), Some(0));
    assert!(sh(&format!("blkid -p -o value -s TYPE {}", d1.dev)).contains("xfs"));
}

#[test]
#[ignore = "needs root and the agent builds (ci/test.sh)"]
fn without_wipe_the_quickstart_on_this_machine_completes_on_a_blank_device() {
    let _lab = uses(&[ThisMachine]);
    require_root("it attaches loop devices");
    let b = Bench::new();
    let disk = LoopDisk::new(1024);
    let (code, cells) = quickstart_on(&b, "localhost", "", &disk, "local");
    assert_eq!(cells.len(), 6);
    assert!(cells.iter().all(|(s, _)| s == "ok"), "{cells:?}");
    assert_eq!(code, 0);
}

#[test]
#[ignore = "needs the simulated lab (ci/test.sh)"]
fn a_device_missing_from_scratch_devices_is_an_error_before_any_host_is_touched() {
    let _lab = uses(&[Fast1]);
    let b = Bench::new();
    let inv = lab_inventory();
    let pb = b.write("bad.yml", "- hosts: fast1\n  setup:\n    - filesystem: {device: sdz, profile: ext4}\n");
    let out = b.run(&["run", pb.to_str().unwrap(), "-i", inv.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.yml:3:") && err.contains("no scratch device `sdz`"), "{err}");
    assert!(!b.db().exists() || b.store().runs().unwrap().is_empty(), "a run was started");
}

/// Command-line words, as a shell splits a line without quotes.
fn words(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

/// Samples per cell of a run, by cell id.
fn sample_counts(s: &benchrig::store::Store, run: i64) -> std::collections::BTreeMap<i64, usize> {
    let mut n = std::collections::BTreeMap::new();
    for x in s.samples(run).unwrap() {
        *n.entry(x.cell_id).or_default() += 1;
    }
    n
}

/// Every cell of `run` ok, with all its repetitions: (write + read) ×
/// (throughput + time) for each, as a quickstart cell has, and each
/// repetition once.
fn quickstart_complete(s: &benchrig::store::Store, run: i64) {
    let cells = s.cells(run).unwrap();
    assert!(cells.iter().all(|c| c.status == CellStatus::Ok), "{cells:?}");
    let samples = s.samples(run).unwrap();
    for c in &cells {
        let mut reps: Vec<i64> = samples.iter().filter(|x| x.cell_id == c.id).map(|x| x.repetition).collect();
        reps.sort();
        let want: Vec<i64> = (1..=c.repeat).flat_map(|r| [r; 4]).collect();
        assert_eq!(reps, want, "cell {} on {}", c.key, c.host);
    }
}

#[test]
#[ignore = "needs the simulated lab (ci/test.sh)"]
fn a_host_that_dies_mid_run_is_unreachable_the_others_finish_and_resume_completes_it() {
    // `lab.sh up` sets every lab host's cgroups and disks again.
    let _lab = uses(&EVERY_HOST);
    let b = Bench::new();
    let inv = lab_inventory();
    let pb = repo().join("playbooks/quickstart.yml");
    let inv = inv.to_str().unwrap();
    // No reconnect rounds at the end: fast2 stays down until the run is over.
    let more = words("-e size=64M -e reps=2 -e benchrig_reconnects=0 --name crash");
    let args = [&["run", pb.to_str().unwrap(), "-i", inv][..], &more].concat();
    let child = b.spawn(&args, &[]);
    // Wait until fast2 has finished a cell, then kill everything in it.
    b.wait_for_cell("crash", "fast2 to finish a cell", |c| c.host == "fast2" && c.status == CellStatus::Ok);
    lab(&["crash", "fast2"]);
    let out = child.wait_with_output().unwrap();
    eprintln!("{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    lab(&["up"]);
    assert_eq!(out.status.code(), Some(4), "an unreachable host makes exit code 4");
    let s = b.store();
    let run = s.resolve_run("crash").unwrap();
    assert_eq!(run.status, RunStatus::Unreachable);
    let hosts = s.hosts(run.id).unwrap();
    let status = |h: &str| hosts.iter().find(|x| x.name == h).unwrap().status.to_string();
    for h in LAB_HOSTS {
        assert_eq!(status(h), if h == "fast2" { "unreachable" } else { "ok" }, "{h}");
    }
    let cells = s.cells(run.id).unwrap();
    assert!(cells.iter().filter(|c| c.host != "fast2").all(|c| c.status == CellStatus::Ok));
    let fast2: Vec<_> = cells.iter().filter(|c| c.host == "fast2").collect();
    assert!(fast2.iter().any(|c| c.status == CellStatus::Ok), "what fast2 reported before dying is kept");
    assert!(fast2
        .iter()
        .any(|c| c.status == CellStatus::Unreachable && c.reason.as_deref().unwrap_or("").contains("unreachable")));
    assert!(fast2.iter().all(|c| c.status != CellStatus::Failed), "a dead host fails no cell: {fast2:?}");
    assert_eq!(fast2.len(), 6, "every planned cell of fast2 is accounted for");

    // fast2 is back: the resume runs only its missing cells, in place.
    let before = sample_counts(&s, run.id);
    let kept: Vec<i64> = fast2.iter().filter(|c| c.status == CellStatus::Ok).map(|c| c.id).collect();
    let resumed = b.run(&["run", "--resume", "crash"]);
    eprintln!("{}", stderr(&resumed));
    assert_eq!(resumed.status.code(), Some(0), "{}", stdout(&resumed));
    let after = sample_counts(&s, run.id);
    for c in cells.iter().filter(|c| c.host != "fast2" || kept.contains(&c.id)) {
        assert_eq!(after.get(&c.id), before.get(&c.id), "cell {} on {} was measured again", c.key, c.host);
    }
    assert_eq!(s.cells(run.id).unwrap().len(), cells.len(), "the same cells, in place");
    quickstart_complete(&s, run.id);
    assert_eq!(s.resolve_run("crash").unwrap().status, RunStatus::Ok);
    let attempts = s.attempts(run.id).unwrap();
    assert_eq!(attempts.len(), 2);
    assert_eq!((attempts[1].hosts.as_slice(), attempts[1].status), (&["fast2".to_string()][..], RunStatus::Ok));
    let second: Vec<i64> =
        s.samples(run.id).unwrap().iter().filter(|x| x.attempt == Some(2)).map(|x| x.cell_id).collect();
    assert!(!second.is_empty() && second.iter().all(|id| cells.iter().any(|c| c.id == *id && c.host == "fast2")));
    // The report shows every cell once, and both attempts.
    let report: Json = serde_json::from_str(&stdout(&b.run(&["report", "crash", "--format", "json"]))).unwrap();
    assert_eq!(report["run"]["status"], "ok");
    assert_eq!(report["cells"].as_array().unwrap().len(), cells.len() * 2, "one entry per cell and measured step");
    assert_eq!(report["attempts"].as_array().unwrap().len(), 2);
    assert!(stdout(&b.run(&["show", "crash"])).contains("attempt 2: "), "the table ends with the attempts");
    let csv = stdout(&b.run(&["report", "crash", "--format", "csv"]));
    assert!(csv.lines().next().unwrap().ends_with(",attempt"), "{csv}");
    assert!(csv.lines().any(|l| l.contains(",fast2,") && l.ends_with(",2")), "a sample of the resume says so");
    assert!(csv.lines().filter(|l| !l.contains(",fast2,")).skip(1).all(|l| l.ends_with(",1")));
}

/// What an agent killed between a cold step's freeze and its thaw leaves on
/// a lab host: a frozen filesystem, mounted nowhere once the host's mount
/// namespace is gone, that holds its disk busy (a CI run lost seven tests to
/// it: every later mkfs on fast2's ssd0 failed with EBUSY). `crash` stands
/// for a reboot, so the disk comes back free. On fast2's ssd1, which the
/// tests' playbooks leave alone; wiped again at the end.
#[test]
#[ignore = "needs the simulated lab (ci/test.sh)"]
fn a_host_crashed_with_a_filesystem_frozen_gets_its_disk_back() {
    // `lab.sh up` sets every lab host's cgroups and disks again.
    let _lab = uses(&EVERY_HOST);
    let link = "/var/tmp/benchrig-lab/dev/fast2-ssd1";
    lab(&[
        "ssh",
        "fast2",
        &format!(
            "'mkfs.ext4 -q -F {link} && mkdir -p /mnt/frozen && mount {link} /mnt/frozen && fsfreeze -f /mnt/frozen'"
        ),
    ]);
    let dev = sh(&format!("readlink -f {link}"));
    // ext4 keeps /proc/fs/ext4/<device> for as long as the filesystem lives.
    let ext4_alive = || std::path::Path::new("/proc/fs/ext4").join(dev.trim_start_matches("/dev/")).exists();
    assert!(ext4_alive(), "the frozen ext4 is alive");
    lab(&["crash", "fast2"]);
    lab(&["up"]);
    // O_EXCL on a block device: EBUSY while a filesystem holds it
    // (<asm-generic/fcntl.h>, the value on x86 and arm).
    const O_EXCL: i32 = 0o200;
    use std::os::unix::fs::OpenOptionsExt;
    let free = std::fs::OpenOptions::new().read(true).custom_flags(O_EXCL).open(&dev).map(drop);
    let alive = ext4_alive();
    sh(&format!("wipefs -q -a {dev}"));
    assert!(free.is_ok(), "{dev} is still busy after the crash and up: {:?}", free.err());
    assert!(!alive, "the ext4 on {dev} is still alive in the kernel");
}

#[test]
#[ignore = "needs the simulated lab (ci/test.sh)"]
fn a_host_lost_mid_run_and_back_gets_the_cells_it_lost_before_the_run_ends() {
    let _lab = alone("crashes fast2, then lab.sh up");
    let b = Bench::new();
    let inv = lab_inventory();
    let pb = repo().join("playbooks/quickstart.yml");
    let more = words("-l fast1:fast2 -e size=64M --name back");
    let args = [&["run", pb.to_str().unwrap(), "-i", inv.to_str().unwrap()][..], &more].concat();
    let child = b.spawn(&args, &[]);
    b.wait_for_cell("back", "fast2 to finish a cell", |c| c.host == "fast2" && c.status == CellStatus::Ok);
    b.wait_for_cell("back", "fast2 to start another", |c| c.host == "fast2" && c.status == CellStatus::Running);
    lab(&["crash", "fast2"]);
    let lost = std::time::Instant::now();
    lab(&["up"]);
    eprintln!("fast2 was back {:.1} s after it was killed", lost.elapsed().as_secs_f64());
    let out = child.wait_with_output().unwrap();
    let log = stderr(&out);
    eprintln!("{}\n{log}", stdout(&out));
    assert!(log.contains("[fast2]   lost the host"), "fast2 was lost mid-run");
    assert!(log.contains("[fast2] running the cells it lost"), "and its lost cells ran again");
    assert_eq!(out.status.code(), Some(0), "every cell made it: the lost one ran again once fast2 was back");
    let s = b.store();
    let run = s.resolve_run("back").unwrap();
    quickstart_complete(&s, run.id);
    assert_eq!(s.cells(run.id).unwrap().len(), 12);
    assert!(s.hosts(run.id).unwrap().iter().all(|h| h.status.to_string() == "ok"));
}

#[test]
#[ignore = "needs root and the agent builds (ci/test.sh)"]
fn quickstart_with_no_inventory_runs_on_this_machine() {
    let _lab = uses(&[ThisMachine]);
    require_root("the default scratch of this machine is loop-backed");
    let b = Bench::new();
    let home = b.dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let quickstart = || {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_benchrig"))
            .args(["run", repo().join("playbooks/quickstart.yml").to_str().unwrap(), "-e", "size=8M", "-e", "reps=1"])
            .env("BENCHRIG_DB", b.db())
            .env("HOME", &home)
            .current_dir(b.dir.path())
            .output()
            .unwrap();
        eprintln!("{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert_eq!(out.status.code(), Some(0));
        out
    };
    let out = quickstart();
    // The run closed the database: SQLite folded its WAL into the file, so
    // copying benchrig.db alone copies every run.
    for leftover in ["-wal", "-shm"] {
        let f = format!("{}{leftover}", b.db().display());
        assert!(!std::path::Path::new(&f).exists(), "the run left {f}: its database was not closed");
    }
    // Without -i it said, before starting, what it measures and where the results go.
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no inventory (-i): measuring this machine, on a 4 GiB sparse image")
            && err.contains(&format!("results into {}", b.db().display())),
        "{err}"
    );
    assert!(!err.contains(" left\n"), "a first run has no stored times to estimate from: {err}");
    let s = b.store();
    let cells = s.cells(s.resolve_run("last").unwrap().id).unwrap();
    assert_eq!(cells.len(), 6);
    assert!(cells.iter().all(|c| c.host == "localhost" && c.status == CellStatus::Ok));
    // A second run estimates what is left on the host from the first.
    let again = quickstart();
    let err = String::from_utf8_lossy(&again.stderr);
    assert!(
        err.lines().any(|l| l.contains("cell 1/6 fs=ext4 bs=4k") && l.contains(" · ≈") && l.ends_with(" left")),
        "{err}"
    );
    // Teardown detached the image's loop device.
    let img = home.join(".cache/benchrig/scratch0.img");
    assert!(img.exists());
    assert_eq!(sh(&format!("losetup -j {} | wc -l", img.display())), "0");
}

/// Start a run in its own process group, wait until a cell is running, then
/// Ctrl-C the group as a terminal would (agents started locally get it too).
/// Ctrl-C a run once a cell runs, and check it tore down and left no agent
/// in `netns` (the network namespace of the host it ran on: /run/netns/… for
/// a lab host, /proc/self/ns/net for this machine).
fn interrupt_a_run(b: &Bench, args: &[&str], envs: &[(&str, &std::path::Path)], netns: &str) {
    let args: Vec<&str> = args.iter().copied().chain(["--name", "int"]).collect();
    let agents_before = agents_in(netns);
    let child = b.spawn(&args, envs);
    b.wait_for_cell("int", "a cell to start running", |c| c.status == CellStatus::Running);
    std::thread::sleep(std::time::Duration::from_millis(500));
    sh(&format!("kill -INT -{}", child.id()));
    let out = child.wait_with_output().unwrap();
    eprintln!("{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(130));
    let s = b.store();
    let run = s.resolve_run("int").unwrap();
    assert_eq!(run.status, RunStatus::Interrupted);
    let cells = s.cells(run.id).unwrap();
    assert!(cells.iter().all(|c| c.status != CellStatus::Running && c.status != CellStatus::Pending), "{cells:?}");
    assert!(
        cells.iter().any(|c| c.status == CellStatus::Skipped && c.reason.as_deref() == Some("interrupted")),
        "{cells:?}"
    );
    // No agent process of this run left on its host (the lab shares one PID
    // space, so the host is its network namespace; the test holds the host,
    // and agents already running there belong to someone else).
    std::thread::sleep(std::time::Duration::from_secs(1));
    let left: Vec<String> = agents_in(netns).into_iter().filter(|a| !agents_before.contains(a)).collect();
    assert!(left.is_empty(), "an agent was left running: {left:?}");
}

/// The benchrig agents in the network namespace `netns`, as `pgrep -a` lists
/// them (pid and command line).
fn agents_in(netns: &str) -> Vec<String> {
    use std::os::unix::fs::MetadataExt;
    let ns = |p: &str| std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()));
    let want = ns(netns);
    assert!(want.is_some(), "no network namespace {netns}");
    let listed: Vec<String> = sh("pgrep -a -f 'benchrig-agent-[0-9a-f]{64} serve' || true")
        .lines()
        .filter(|l| l.split_whitespace().next().is_some_and(|pid| ns(&format!("/proc/{pid}/ns/net")) == want))
        .map(str::to_string)
        .collect();
    // A child the agent has forked shows the agent's command line until it
    // execs (its mkfs, mount or step): not a second agent.
    let pid_of = |l: &str| l.split_whitespace().next().unwrap_or("").to_string();
    let pids: Vec<String> = listed.iter().map(|l| pid_of(l)).collect();
    let parent_of = |pid: &str| {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        stat.rsplit_once(") ").and_then(|(_, rest)| rest.split_whitespace().nth(1)).unwrap_or("").to_string()
    };
    listed.into_iter().filter(|l| !pids.contains(&parent_of(&pid_of(l)))).collect()
}

#[test]
#[ignore = "needs the simulated lab (ci/test.sh)"]
fn ctrl_c_over_ssh_tears_down_and_leaves_no_mount_or_agent_behind_and_resume_completes_it() {
    let _lab = uses(&[Fast1]);
    let b = Bench::new();
    let inv = lab_inventory();
    let pb = repo().join("playbooks/quickstart.yml");
    interrupt_a_run(
        &b,
        &["run", pb.to_str().unwrap(), "-i", inv.to_str().unwrap(), "-l", "fast1", "-e", "size=512M", "-e", "reps=2"],
        &[],
        "/run/netns/brlab-fast1",
    );
    assert_eq!(
        lab(&["ssh", "fast1", "grep -c benchrig/work/mnt /proc/mounts || true"]),
        "0",
        "a mount was left behind"
    );
    let s = b.store();
    let run = s.resolve_run("int").unwrap().id;
    let before = sample_counts(&s, run);
    let done: Vec<i64> = s.cells(run).unwrap().iter().filter(|c| c.status == CellStatus::Ok).map(|c| c.id).collect();
    let resumed = b.run(&["run", "--resume", "int"]);
    eprintln!("{}", stderr(&resumed));
    assert_eq!(resumed.status.code(), Some(0), "{}", stdout(&resumed));
    quickstart_complete(&s, run);
    let after = sample_counts(&s, run);
    for id in done {
        assert_eq!(after[&id], before[&id], "a cell done before the interrupt was measured again");
    }
    assert_eq!(s.cells(run).unwrap().len(), 6);
}

#[test]
#[ignore = "needs the simulated lab (ci/test.sh)"]
fn a_killed_run_resumes_once_its_leases_lapse_from_what_is_stored_and_refuses_a_moved_device() {
    let _lab = alone("a 10 s lease must outlive the gap between kill and resume");
    let b = Bench::new();
    let inv = lab_inventory();
    // On PostgreSQL, as a lab's runners share it.
    let pg = PgDatabase::new("benchrig_resume");
    let db = ["--db", pg.url.as_str()];
    // A copy of the playbook, edited after the kill: the resume plans from the stored text.
    let pb = b.write("quickstart.yml", &std::fs::read_to_string(repo().join("playbooks/quickstart.yml")).unwrap());
    let more = words("-l fast1 -e size=64M -e reps=2 --lease-term 10s --name killed");
    let args = [&["run", pb.to_str().unwrap(), "-i", inv.to_str().unwrap()][..], &more, &db].concat();
    let child = b.spawn(&args, &[]);
    pg.wait_for_cell("killed", "a cell to finish", |c| c.status == CellStatus::Ok);
    pg.wait_for_cell("killed", "the next to start", |c| c.status == CellStatus::Running);
    sh(&format!("kill -KILL {}", child.id()));
    let killed = std::time::Instant::now();
    drop(child.wait_with_output());
    let s = pg.store();
    let run = s.resolve_run("killed").unwrap();
    assert_eq!(run.status, RunStatus::Running, "killed: nothing could record its end");
    std::fs::write(&pb, "- this is not: [the playbook that ran\n").unwrap();

    // The inventory moved fast1's first disk: its cells would land elsewhere.
    let moved = b.write(
        "moved.yml",
        &std::fs::read_to_string(&inv).unwrap().replace("dev/fast1-ssd0, name: ssd0", "dev/fast1-spare, name: ssd0"),
    );
    let refused = b.run(&[&["run", "--resume", "killed", "-i", moved.to_str().unwrap()][..], &db].concat());
    assert_eq!(refused.status.code(), Some(1), "{}", stderr(&refused));
    let why = stderr(&refused);
    assert!(
        why.contains("would now be planned differently")
            && why.contains("scratch device `ssd0` of host fast1")
            && why.contains("fast1-spare"),
        "{why}"
    );
    assert_eq!(s.attempts(run.id).unwrap().len(), 1, "a refused resume starts no attempt");

    let before = sample_counts(&s, run.id);
    let done: Vec<i64> = s.cells(run.id).unwrap().iter().filter(|c| c.status == CellStatus::Ok).map(|c| c.id).collect();
    let resumed = b.run(&[&["run", "--resume", "killed"][..], &db].concat());
    let waited = killed.elapsed();
    let log = stderr(&resumed);
    eprintln!("{log}\nresumed {:.1} s after the kill", waited.as_secs_f64());
    assert_eq!(resumed.status.code(), Some(0), "{}", stdout(&resumed));
    assert!(log.contains("run 1's own leases are still held"), "it waited for the killed run's leases: {log}");
    assert!(waited > std::time::Duration::from_secs(5), "it took fast1 before the lease lapsed");
    quickstart_complete(&s, run.id);
    let after = sample_counts(&s, run.id);
    for id in done {
        assert_eq!(after[&id], before[&id], "a cell done before the kill was measured again");
    }
    let attempts = s.attempts(run.id).unwrap();
    let seen: Vec<(RunStatus, bool)> = attempts.iter().map(|a| (a.status, a.finished.is_some())).collect();
    assert_eq!(seen, [(RunStatus::Interrupted, false), (RunStatus::Ok, true)], "the killed attempt never ended");
    assert!(s.leases().unwrap().is_empty(), "the resume let go of fast1");
}

#[test]
#[ignore = "needs root and the agent builds (ci/test.sh)"]
fn ctrl_c_on_this_machine_detaches_the_image_and_unmounts() {
    let _lab = uses(&[ThisMachine]);
    require_root("the default scratch of this machine is loop-backed");
    let b = Bench::new();
    let home = b.dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let pb = repo().join("playbooks/quickstart.yml");
    interrupt_a_run(&b, &["run", pb.to_str().unwrap(), "-e", "size=1G"], &[("HOME", &home)], "/proc/self/ns/net");
    let img = home.join(".cache/benchrig/scratch0.img");
    assert_eq!(sh(&format!("losetup -j {} | wc -l", img.display())), "0", "the image is still attached");
    assert_eq!(sh(&format!("grep -c {} /proc/mounts || true", home.display())), "0", "a mount was left behind");
}

#[test]
#[ignore = "needs root and the agent builds (ci/test.sh)"]
fn quickstart_as_an_ordinary_user_uses_a_plain_directory() {
    let _lab = uses(&[ThisMachine]);
    require_root("it switches to an unprivileged user");
    let b = Bench::new();
    let work = b.dir.path();
    sh(&format!("chown -R 65534:65534 {}", work.display()));
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(env!("CARGO_BIN_EXE_benchrig"))
        .args(["run", repo().join("playbooks/quickstart.yml").to_str().unwrap(), "-e", "size=8M", "-e", "reps=2"])
        .env("BENCHRIG_DB", b.db())
        .env("HOME", work)
        .current_dir(work)
        .output()
        .unwrap();
    eprintln!("{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(0));
    let s = b.store();
    let run = s.resolve_run("last").unwrap();
    let cells = s.cells(run.id).unwrap();
    let shown: Vec<String> = cells.iter().map(|c| format!("{} {}", c.params["fs"], c.status)).collect();
    assert_eq!(shown, ["\"existing\" ok", "\"existing\" ok"]);
    // Cold reads without root evict the file with fadvise; the samples say so.
    let report: Json = serde_json::from_str(&stdout(&b.run(&["report", "last"]))).unwrap();
    assert_eq!(report["hosts"][0]["facts"]["user"]["root"], false);
    // The per-cell directory inside ./benchrig-scratch is gone after teardown.
    let left: Vec<_> = std::fs::read_dir(work.join("benchrig-scratch")).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}

/// Run a seed playbook at a reduced size: it must finish with every cell ok,
/// or unsupported with a reason.
fn seed_playbook_runs(playbook: &str, limit: &str, extra: &[&str]) -> (Bench, i64) {
    let b = Bench::new();
    let inv = lab_inventory();
    let pb = repo().join("playbooks").join(playbook);
    let mut args = vec!["run", pb.to_str().unwrap(), "-i", inv.to_str().unwrap(), "-l", limit];
    for e in extra {
        args.extend(["-e", e]);
    }
    let out = b.run(&args);
    assert_eq!(out.status.code(), Some(0), "{playbook} did not finish cleanly");
    let s = b.store();
    let run = s.resolve_run("last").unwrap().id;
    let cells = s.cells(run).unwrap();
    assert!(!cells.is_empty(), "{playbook} planned no cells");
    for c in &cells {
        match c.status.as_str() {
            "ok" => {}
            "unsupported" => assert!(c.reason.as_deref().is_some_and(|r| !r.is_empty()), "{c:?}"),
            other => panic!("{playbook}: cell {} on {} is {other}: {:?}", c.key, c.host, c.reason),
        }
    }
    (b, run)
}

#[test]
#[ignore = "needs the simulated lab (ci/test.sh)"]
fn seed_000_acl_ea_runs_reduced() {
    let _lab = uses(&[Fast1]);
    let (b, run) = seed_playbook_runs(
        "acl-ea.yml",
        "fast1",
        &["scale=0.01", "reps=2", r#"{"acl_profiles": ["ext4", "ext4-128", "xfs-256", "jfs"]}"#],
    );
    let cells = b.store().cells(run).unwrap();
    let status =
        |fs: &str| cells.iter().filter(|c| c.params["fs"] == fs).map(|c| c.status.to_string()).collect::<Vec<_>>();
    assert!(status("ext4-128").iter().all(|s| s == "ok"));
    // xfs-256 needs the v4 format, which this kernel refuses; the kernel has
    // no jfs at all, which is the reason given (not the missing mkfs.jfs).
    assert!(status("xfs-256").iter().all(|s| s == "unsupported"));
    assert!(status("jfs").iter().all(|s| s == "unsupported"));
    let jfs_why: Vec<_> = cells.iter().filter(|c| c.params["fs"] == "jfs").filter_map(|c| c.reason.clone()).collect();
    assert!(!jfs_why.is_empty() && jfs_why.iter().all(|r| r.contains("has no jfs support")), "{jfs_why:?}");
}

#[test]
#[ignore = "needs the simulated lab (ci/test.sh)"]
fn seed_001_remote_tree_runs_reduced_in_both_directions() {
    let _lab = uses(&[Fast1, Fast2]);
    let (b, run) = seed_playbook_runs("remote-tree.yml", "fast1:fast2", &["scale=0.05", "reps=2"]);
    let cells = b.store().cells(run).unwrap();
    let pairs: std::collections::BTreeSet<(String, String)> = cells
        .iter()
        .map(|c| (c.params["server"].as_str().unwrap().to_string(), c.params["client"].as_str().unwrap().to_string()))
        .collect();
    let want: std::collections::BTreeSet<(String, String)> =
        [("fast1", "fast2"), ("fast2", "fast1")].iter().map(|(a, b)| (a.to_string(), b.to_string())).collect();
    assert_eq!(pairs, want, "both directions");
    // tar read through sshfs every byte the server's tree has.
    let samples = b.store().samples(run).unwrap();
    let tar: Vec<_> = samples.iter().filter(|s| s.step == "tar" && s.metric == "throughput").collect();
    assert!(!tar.is_empty());
    for s in tar {
        let read = s.info.as_ref().unwrap()["file_bytes"].as_u64().unwrap();
        let cell = cells.iter().find(|c| c.id == s.cell_id).unwrap();
        let info = cell.info.as_ref().unwrap();
        let made = info
            .as_object()
            .unwrap()
            .iter()
            .find_map(|(k, v)| k.contains(" tree@").then(|| v["bytes"].as_u64().unwrap()))
            .unwrap();
        assert_eq!(read, made, "tar through sshfs read {read} bytes of a {made}-byte tree");
    }
}

#[test]
#[ignore = "needs the simulated lab (ci/test.sh)"]
fn seed_003_volume_scaling_runs_reduced() {
    let _lab = uses(&[Fast2]);
    let (b, run) = seed_playbook_runs("volume-scaling.yml", "fast2", &["scale=0.1", "reps=1"]);
    let cells = b.store().cells(run).unwrap();
    assert!(cells.iter().any(|c| c.play.contains("Add") && c.status == CellStatus::Ok));
    assert!(cells.iter().any(|c| c.play.contains("Remove") && c.status == CellStatus::Ok));
    assert!(cells.iter().any(|c| c.params["op"] == "copy" && c.status == CellStatus::Ok));
}

#[test]
#[ignore = "needs the simulated lab (ci/test.sh)"]
fn seed_004_compressed_read_runs_reduced() {
    let _lab = uses(&[Hdd]);
    let (b, run) =
        seed_playbook_runs("compressed-read.yml", "hdd", &["reps=1", r#"{"sizes": ["64k", "1M"]}"#, "scale=0.25"]);
    // Every cold read started with none of its file in memory, and its
    // counters show the file came from the disk: all of it for a file the
    // codec compressed; something for btrfs compress=, which stores fewer
    // bytes than the file has.
    let cells = b.store().cells(run).unwrap();
    for s in b.store().samples(run).unwrap().iter().filter(|s| s.metric == "throughput") {
        let info = s.info.as_ref().unwrap();
        assert_eq!(info["resident_pages_at_start"], 0, "{s:?}");
        let btrfs_compress = cells.iter().any(|c| c.id == s.cell_id && c.params.get("fs").is_some());
        let stored = info["compressed_bytes"].as_u64().unwrap();
        let read = s.dev_read_bytes.unwrap() as u64;
        assert!(if btrfs_compress { read > 0 } else { read >= stored }, "{s:?}");
    }
}

/// The UUID of a filesystem from its stored `dumpe2fs -h`.
fn dumped_uuid(dump: &str) -> String {
    let line = dump.lines().find(|l| l.starts_with("Filesystem UUID:")).unwrap_or_else(|| panic!("no UUID in {dump}"));
    line.trim_start_matches("Filesystem UUID:").trim().to_string()
}

#[test]
#[ignore = "needs the simulated lab (ci/test.sh)"]
fn seed_004_compressed_read_makes_one_filesystem_per_round_with_fresh_round_and_one_per_visit_with_cell() {
    let _lab = uses(&[Hdd]);
    // The playbook as shipped (`fresh: round` by default on its first play), small.
    let small = ["reps=2", r#"{"sizes": ["64k"]}"#, "scale=0.25"];
    let mut runs = Vec::new();
    for fresh in ["round", "cell"] {
        let policy = format!("fresh={fresh}");
        let (b, run) = seed_playbook_runs("compressed-read.yml", "hdd", &[&small[..], &[policy.as_str()]].concat());
        let s = b.store();
        let cells: Vec<_> = s.cells(run).unwrap().into_iter().filter(|c| c.play_index == 0).collect();
        let ok: Vec<_> = cells.iter().filter(|c| c.status == CellStatus::Ok).collect();
        assert!(ok.len() >= 8, "the agent's own decoders' 8 cells at least: {cells:?}");
        let samples = s.samples(run).unwrap();
        for c in &ok {
            let mut reps: Vec<i64> = samples.iter().filter(|x| x.cell_id == c.id).map(|x| x.repetition).collect();
            reps.sort();
            reps.dedup();
            assert_eq!(reps, [1, 2], "cell {} has the samples of both repetitions", c.key);
            assert_eq!(c.steps.as_ref().unwrap()["fresh"], fresh, "the policy is stored with the cell");
        }
        // One `dumpe2fs -h` is stored per mkfs, with the cell it was made for.
        let dumps: Vec<_> = s
            .artifacts(run)
            .unwrap()
            .into_iter()
            .filter(|a| a.name.ends_with("fs_dump") && cells.iter().any(|c| c.id == a.cell_id))
            .collect();
        let mut uuids: Vec<String> = dumps.iter().map(|a| dumped_uuid(&a.content)).collect();
        uuids.sort();
        uuids.dedup();
        assert_eq!(uuids.len(), dumps.len(), "each dump is of its own mkfs");
        if fresh == "round" {
            assert_eq!(dumps.len(), 2, "one mkfs per round: every cell shares the ext4 setup");
            for c in &ok {
                let made_for = c.info.as_ref().unwrap()["fresh"]["setup_made_for"].as_str().unwrap();
                assert!(cells.iter().any(|o| o.key == made_for), "{made_for}");
            }
        } else {
            for c in &ok {
                let mine = dumps.iter().filter(|a| a.cell_id == c.id).count();
                assert_eq!(mine, 2, "one mkfs per visit: cell {}", c.key);
            }
        }
        runs.push(ok.len());
    }
    assert_eq!(runs[0], runs[1], "the same cells ran either way");
}

#[test]
#[ignore = "needs the simulated lab (ci/test.sh)"]
fn what_the_agent_writes_is_what_the_host_tools_read() {
    let _lab = uses(&[Fast1]);
    let b = Bench::new();
    let inv = lab_inventory();
    let pb = b.write(
        "check.yml",
        r#"
- hosts: fast1
  setup:
    - filesystem: { device: ssd0, profile: ext4 }
    - tree: { files: 300, dirs: 17, size: 6k, acl_entries: 6, acl_uid: 1234 }
  benchmark:
    - name: getfacl
      exec: { command: "getfacl -n --omit-header \"$(find tree -type f | sort | head -1)\"", target: ssd0 }
    - name: read builtin
      read_tree: { reader: builtin }
    - name: read gnu tar
      read_tree: { reader: gnu_tar }
    - name: cold
      cold_read: { size: 6M, codec: raw, content: random }
"#,
    );
    let out = b.run(&["run", pb.to_str().unwrap(), "-i", inv.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let s = b.store();
    let run = s.resolve_run("last").unwrap().id;
    let cell = &s.cells(run).unwrap()[0];
    let tree_bytes = cell
        .info
        .as_ref()
        .unwrap()
        .as_object()
        .unwrap()
        .iter()
        .find_map(|(k, v)| k.contains(" tree@").then(|| v["bytes"].as_u64().unwrap()))
        .unwrap();
    let samples = s.samples(run).unwrap();
    let info = |step: &str| samples.iter().find(|x| x.step == step).unwrap().info.clone().unwrap();
    // The ACL the agent wrote as raw xattr bytes is the one getfacl reads.
    let acl = info("getfacl")["stdout"].as_str().unwrap().to_string();
    for line in ["user::rw-", "user:1234:r--", "user:1235:r--", "group::r--", "mask::r--", "other::---"] {
        assert!(acl.lines().any(|l| l.starts_with(line)), "getfacl printed:\n{acl}");
    }
    // Both readers read exactly the tree's bytes.
    assert_eq!(info("read builtin")["file_bytes"].as_u64().unwrap(), tree_bytes);
    assert_eq!(info("read gnu tar")["file_bytes"].as_u64().unwrap(), tree_bytes);
    // A cold read's device counters show the file came from the disk.
    let cold = samples.iter().find(|x| x.step == "cold" && x.metric == "throughput").unwrap();
    assert!(cold.dev_read_bytes.unwrap() >= 6 << 20, "{cold:?}");
}

/// The inventory of the lab with `group_vars/` beside it, as a lab keeps them.
fn lab_inventory_with_group_vars(b: &Bench) -> std::path::PathBuf {
    let dir = b.dir.path().join("inv");
    std::fs::create_dir_all(dir.join("group_vars")).unwrap();
    std::fs::copy(lab_inventory(), dir.join("simlab.yml")).unwrap();
    let data = repo().join("orchestrator/tests/data/habits");
    std::fs::copy(data.join("group_vars/fast.yml"), dir.join("group_vars/fast.yml")).unwrap();
    dir.join("simlab.yml")
}

#[test]
#[ignore = "needs the simulated lab (ci/test.sh)"]
fn ansible_habits_on_the_lab_limit_extra_vars_serial_tags_timeout_and_fatal_errors() {
    let _lab = uses(&[Fast1, Fast2]);
    let b = Bench::new();
    let inv = lab_inventory_with_group_vars(&b);
    let inv = inv.to_str().unwrap();
    let pb = repo().join("orchestrator/tests/data/habits/playbook.yml");
    let pb = pb.to_str().unwrap();

    // The group variable `size` reaches the `fast` hosts and no others.
    assert_eq!(b.run(&["plan", pb, "-i", inv, "-l", "fast"]).status.code(), Some(0));
    let out = b.run(&["plan", pb, "-i", inv, "-l", "hdd"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("undefined variable `size`"), "{}", stderr(&out));
    // Tags: `never` steps are listed only when asked for.
    let tasks = stdout(&b.run(&["run", pb, "-i", inv, "-l", "fast", "--list-tasks"]));
    assert!(tasks.contains("benchmark: each device  TAGS: [loops]") && !tasks.contains("debug only"), "{tasks}");
    let tasks = stdout(&b.run(&["run", pb, "-i", inv, "-l", "fast", "--list-tasks", "-t", "debug"]));
    assert!(tasks.contains("debug only") && !tasks.contains("each device"), "{tasks}");

    // -l picks the fast hosts, -e beats their group variable.
    let out = b.run(&["run", pb, "-i", inv, "-l", "fast", "-e", "size=6M", "--name", "habits"]);
    assert_eq!(out.status.code(), Some(2), "the second play fails on purpose");
    let log = format!("{}{}", stdout(&out), stderr(&out));
    let s = b.store();
    let run = s.resolve_run("habits").unwrap().id;
    let cells = s.cells(run).unwrap();
    let hosts: std::collections::BTreeSet<&str> = cells.iter().map(|c| c.host.as_str()).collect();
    assert_eq!(hosts.into_iter().collect::<Vec<_>>(), ["fast1", "fast2"]);

    let first: Vec<_> = cells.iter().filter(|c| c.play_index == 0).collect();
    assert_eq!(first.len(), 4);
    for c in &first {
        assert_eq!(c.status, CellStatus::Ok, "{c:?}");
        let steps = c.steps.as_ref().expect("steps stored with the cell");
        let bench = steps["benchmark"].as_array().unwrap();
        assert_eq!(bench[0]["action"]["args"]["size"], 6 << 20, "-e size=6M wins: {bench:?}");
        let names: Vec<&str> = bench.iter().map(|s| s["name"].as_str().unwrap()).collect();
        let devices: Vec<String> = if c.host == "fast1" { (0..4).collect() } else { vec![0, 1] }
            .into_iter()
            .map(|i| format!("each device (ssd{i})"))
            .collect();
        let mut expected = vec!["write".to_string()];
        if c.params["fs"] == "btrfs" {
            expected.push("btrfs only".into());
        }
        expected.extend(devices);
        expected.push("too slow".into());
        assert_eq!(names, expected, "when, loop and never-tags on {}", c.key);
        assert_eq!(bench.last().unwrap()["timeout"], 2.0);
    }
    // serial: 1 — fast1's cells all ended before fast2's began.
    let t = |s: &Option<String>| {
        time::OffsetDateTime::parse(s.as_deref().unwrap(), &time::format_description::well_known::Rfc3339).unwrap()
    };
    let fast1_end = first.iter().filter(|c| c.host == "fast1").map(|c| t(&c.finished)).max().unwrap();
    let fast2_start = first.iter().filter(|c| c.host == "fast2").map(|c| t(&c.started)).min().unwrap();
    assert!(fast1_end <= fast2_start, "serial: 1 ran the hosts together");
    // cell_order: interleaved — repetition 1 of both cells before repetition 2 of either.
    let samples = s.samples(run).unwrap();
    let fast1: Vec<i64> = first.iter().filter(|c| c.host == "fast1").map(|c| c.id).collect();
    let order: Vec<(i64, i64)> = samples
        .iter()
        .filter(|x| fast1.contains(&x.cell_id) && x.step == "write" && x.metric == "throughput")
        .map(|x| (x.cell_id, x.repetition))
        .collect();
    assert_eq!(order, [(fast1[0], 1), (fast1[1], 1), (fast1[0], 2), (fast1[1], 2)]);
    assert_eq!(first[0].info.as_ref().unwrap()["schedule"], serde_json::json!({"cell_order": "interleaved"}));
    // timeout + ignore_errors: the step was cancelled, the cell went on, no sleep is left.
    assert!(log.contains("too slow: timed out after 2 s"), "{log}");
    assert_eq!(sh("pgrep -fx 'sleep 60' | wc -l"), "0");

    // any_errors_fatal: the first failure stops the play and the playbook.
    let second: Vec<_> = cells.iter().filter(|c| c.play_index == 1).collect();
    assert_eq!(second.len(), 4);
    for c in &second {
        let (status, reason) = (c.status.as_str(), c.reason.as_deref().unwrap_or_default());
        if c.params["attempt"] == 1 {
            assert_eq!(status, "failed", "{c:?}");
        } else {
            assert!(status == "skipped" && reason.contains("any_errors_fatal"), "{c:?}");
        }
    }
    let third: Vec<_> = cells.iter().filter(|c| c.play_index == 2).collect();
    assert_eq!(third.len(), 2);
    assert!(third.iter().all(|c| c.status == CellStatus::Skipped), "{third:?}");
}

#[test]
#[ignore = "needs the simulated lab (ci/test.sh)"]
fn max_fail_percentage_stops_the_playbook_after_a_failed_batch() {
    let _lab = uses(&[Fast1, Fast2]);
    let b = Bench::new();
    let inv = lab_inventory();
    let pb = repo().join("orchestrator/tests/data/habits/max-fail.yml");
    let out = b.run(&["run", pb.to_str().unwrap(), "-i", inv.to_str().unwrap(), "--name", "maxfail"]);
    assert_eq!(out.status.code(), Some(2));
    let s = b.store();
    let cells = s.cells(s.resolve_run("maxfail").unwrap().id).unwrap();
    let got: Vec<(i64, &str, &str)> =
        cells.iter().map(|c| (c.play_index, c.host.as_str(), c.status.as_str())).collect();
    assert_eq!(
        got,
        [(0, "fast1", "failed"), (0, "fast2", "skipped"), (1, "fast1", "skipped"), (1, "fast2", "skipped")],
        "{cells:?}"
    );
    assert!(cells[1].reason.as_deref().unwrap().contains("over max_fail_percentage 0%"), "{cells:?}");
}

#[test]
#[ignore = "needs the agent builds (ci/test.sh)"]
fn compare_finds_a_planted_regression_and_nothing_in_noise() {
    let _lab = uses(&[ThisMachine]);
    let b = Bench::new();
    let pb = repo().join("orchestrator/tests/data/compare/speed.yml");
    let pb = pb.to_str().unwrap();
    for (name, speed) in [("base", "100"), ("same", "100"), ("slower", "80")] {
        let out = b.run(&["run", pb, "-e", &format!("speed={speed}"), "--name", name]);
        assert_eq!(out.status.code(), Some(0));
    }
    // Verdicts are read on the declared metric: the `time` exec adds is the
    // wall time of one `echo`, which swings several-fold with the machine's
    // load (a real difference, but not this test's).
    // The metric is the fifth column (host, play, cell, step, metric), the
    // verdict the one the header calls VERDICT (every cell holds a word or "-").
    let verdict = |text: &str, md: bool| -> String {
        let cols = |l: &str| -> Vec<String> {
            if md {
                l.split('|').map(|c| c.trim().to_string()).filter(|c| !c.is_empty()).collect()
            } else {
                l.split("  ").map(|c| c.trim().to_string()).filter(|c| !c.is_empty()).collect()
            }
        };
        let header = text.lines().map(cols).find(|c| c.first().map(String::as_str) == Some("HOST"));
        let at = header.and_then(|h| h.iter().position(|c| c == "VERDICT")).unwrap_or_else(|| panic!("{text}"));
        let row = text.lines().map(cols).find(|c| c.get(4).map(String::as_str) == Some("speed"));
        row.and_then(|c| c.get(at).cloned()).unwrap_or_else(|| panic!("no speed row in {text}"))
    };
    let out = b.run(&["compare", "base", "slower", "--fail-on-regression", "--threshold", "5"]);
    assert_eq!(out.status.code(), Some(3), "a 20% drop must fail the job");
    assert_eq!(verdict(&stdout(&out), false), "regressed", "{}", stdout(&out));
    let out = b.run(&["compare", "base", "same", "--threshold", "5", "--format", "md"]);
    let md = stdout(&out);
    assert!(md.contains("| HOST | PLAY |"), "{md}");
    assert_eq!(verdict(&md, true), "unchanged", "{md}");
    // A run against itself: nothing regressed, so the job passes.
    let out = b.run(&["compare", "base", "base", "--fail-on-regression"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout(&out).contains("0 regressed, 0 improved, 2 unchanged"), "{}", stdout(&out));
}

#[test]
#[ignore = "needs the agent builds (ci/test.sh)"]
fn a_failed_cell_on_this_machine_exits_2() {
    let _lab = uses(&[ThisMachine]);
    let b = Bench::new();
    // One cell of two fails: the run goes on, and its exit code says so.
    let pb = b.write(
        "fails.yml",
        "- name: fails\n  hosts: all\n  matrix:\n    status: [0, 1]\n  benchmark:\n    - name: exit\n      \
         exec:\n        command: \"exit {{ status }}\"\n",
    );
    let out = b.run(&["run", pb.to_str().unwrap(), "--name", "fails"]);
    assert_eq!(out.status.code(), Some(2), "a failed cell makes exit code 2");
    let s = b.store();
    let run = s.resolve_run("fails").unwrap();
    assert_eq!(run.status, RunStatus::Failed);
    let mut statuses: Vec<String> = s.cells(run.id).unwrap().into_iter().map(|c| c.status.to_string()).collect();
    statuses.sort();
    assert_eq!(statuses, ["failed", "ok"]);
}

#[test]
#[ignore = "needs the agent builds (ci/test.sh)"]
fn a_failed_cell_runs_again_on_resume_only_with_retry_failed() {
    let _lab = uses(&[ThisMachine]);
    let b = Bench::new();
    let fixed = b.dir.path().join("fixed");
    // Cell `broken=1` fails until the file `fixed` exists; `broken=0` never does.
    let pb = b.write(
        "flaky.yml",
        &format!(
            "- name: flaky\n  hosts: all\n  matrix:\n    broken: [0, 1]\n  repeat: 2\n  benchmark:\n    - name: check\n      \
             exec:\n        command: \"test {{{{ broken }}}} = 0 || test -e {}\"\n",
            fixed.display()
        ),
    );
    assert_eq!(b.run(&["run", pb.to_str().unwrap(), "--name", "flaky"]).status.code(), Some(2));
    let s = b.store();
    let run = s.resolve_run("flaky").unwrap().id;
    let ok_cell =
        |s: &benchrig::store::Store| s.cells(run).unwrap().into_iter().find(|c| c.params["broken"] == 0).unwrap();
    let before = sample_counts(&s, run);
    // Without --retry-failed a failed cell is a result: nothing is left to run.
    let again = b.run(&["run", "--resume", "flaky"]);
    assert_eq!(again.status.code(), Some(2), "{}", stderr(&again));
    assert!(stderr(&again).contains("nothing left to run"), "{}", stderr(&again));
    assert_eq!(s.attempts(run).unwrap().len(), 1, "nothing ran, so no attempt");
    std::fs::write(&fixed, "").unwrap();
    let retried = b.run(&["run", "--resume", "flaky", "--retry-failed"]);
    assert_eq!(retried.status.code(), Some(0), "{}", stderr(&retried));
    let cells = s.cells(run).unwrap();
    assert!(cells.iter().all(|c| c.status == CellStatus::Ok), "{cells:?}");
    assert_eq!(cells.len(), 2, "in place");
    let after = sample_counts(&s, run);
    assert_eq!(after[&ok_cell(&s).id], before[&ok_cell(&s).id], "the ok cell was not measured again");
    let retried_cell = cells.iter().find(|c| c.params["broken"] == 1).unwrap();
    assert_eq!(after[&retried_cell.id], 2, "two repetitions of one metric (time)");
    assert_eq!(s.resolve_run("flaky").unwrap().status, RunStatus::Ok);
}

/// Run tests/data/fresh/shared.yml here with `-e` pairs; its exit code and
/// the setup/teardown log it wrote, a line each.
fn run_shared_setups(b: &Bench, name: &str, extra: &[(&str, &str)]) -> (Option<i32>, Vec<String>) {
    let pb = repo().join("orchestrator/tests/data/fresh/shared.yml");
    let log = b.dir.path().join(format!("{name}.log"));
    let log_var = format!("log={}", log.display());
    let mut args = vec!["run", pb.to_str().unwrap(), "--name", name, "-e", &log_var];
    let pairs: Vec<String> = extra.iter().map(|(k, v)| format!("{k}={v}")).collect();
    for p in &pairs {
        args.extend(["-e", p]);
    }
    let out = b.run(&args);
    let lines = std::fs::read_to_string(&log).unwrap_or_default().lines().map(str::to_string).collect();
    (out.status.code(), lines)
}

#[test]
#[ignore = "needs the agent builds (ci/test.sh)"]
fn fresh_round_makes_one_setup_per_round_for_the_cells_with_identical_setups() {
    let _lab = uses(&[ThisMachine]);
    let b = Bench::new();
    let s = b.store();
    // Six cells (left and right, three each), two rounds: one setup per visit...
    let (code, log) = run_shared_setups(&b, "per-cell", &[("fresh", "cell")]);
    assert_eq!(code, Some(0));
    assert_eq!(log.iter().filter(|l| l.starts_with("up")).count(), 12, "{log:?}");
    // ... or one per round and setup: left's three cells, then right's.
    let (code, log) = run_shared_setups(&b, "per-round", &[]);
    assert_eq!(code, Some(0));
    let round = ["up left", "down left", "up right", "down right"];
    assert_eq!(log, [round, round].concat(), "one setup and one teardown per group");
    let run = s.resolve_run("per-round").unwrap().id;
    let cells = s.cells(run).unwrap();
    let samples = s.samples(run).unwrap();
    for c in &cells {
        assert_eq!(c.status, CellStatus::Ok, "{c:?}");
        let mut reps: Vec<i64> =
            samples.iter().filter(|x| x.cell_id == c.id && x.metric == "speed").map(|x| x.repetition).collect();
        reps.sort();
        assert_eq!(reps, [1, 2], "every cell has its samples: {}", c.key);
        assert_eq!(c.steps.as_ref().unwrap()["fresh"], "round");
        let made_for = c.info.as_ref().unwrap()["fresh"]["setup_made_for"].as_str().unwrap().to_string();
        let first_of_its_place = cells.iter().find(|o| o.params["place"] == c.params["place"]).unwrap();
        assert_eq!(made_for, first_of_its_place.key, "left's cells on left's setup, right's on right's");
        assert!(
            c.info.as_ref().unwrap().get("setup[0] make@localhost").is_some(),
            "the setup's info is with every cell"
        );
    }
    // The policy is shown with the results, and beside a comparison's verdicts.
    let shown = stdout(&b.run(&["show", "per-round"]));
    assert!(shown.contains("play `shared`: fresh: round"), "{shown}");
    let md = stdout(&b.run(&["report", "per-round", "--format", "md"]));
    assert!(md.contains("fresh: round"), "{md}");
    assert!(!stdout(&b.run(&["show", "per-cell"])).contains("fresh:"), "the default goes unsaid");
    let compared = stdout(&b.run(&["compare", "per-cell", "per-round"]));
    assert!(compared.contains("(fresh: cell → round)"), "{compared}");

    // A failed measured step ends its cell; the cells after it run on a new setup.
    let (code, log) = run_shared_setups(&b, "one-fails", &[("fail", "2")]);
    assert_eq!(code, Some(2), "a failed cell makes exit code 2");
    let first = ["up left", "down left", "up left", "down left", "up right", "down right", "up right", "down right"];
    assert_eq!(log, [&first[..], &round[..]].concat(), "n=2 fails, n=3 on a new setup; round 2 without n=2");
    let run = s.resolve_run("one-fails").unwrap().id;
    for c in s.cells(run).unwrap() {
        let want = if c.params["n"] == 2 { CellStatus::Failed } else { CellStatus::Ok };
        assert_eq!(c.status, want, "{c:?}");
    }
}

#[test]
#[ignore = "needs the agent builds (ci/test.sh)"]
fn a_test_that_panics_stops_the_run_it_started() {
    let _lab = uses(&[ThisMachine]);
    let b = Bench::new();
    let home = b.dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    // The test's directory in every process of the run (the agent lives
    // under $HOME, the step's shell names it), to find any left behind.
    let marker = b.dir.path().display().to_string();
    let pb = b.write(
        "slow.yml",
        &format!("- name: slow\n  hosts: all\n  benchmark:\n    - name: wait\n      exec:\n        command: \"sleep 600; : {marker}\"\n"),
    );
    let pid = std::cell::Cell::new(0);
    let started = std::time::Instant::now();
    let failed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let child = b.spawn(&["run", pb.to_str().unwrap(), "--name", "slow"], &[("HOME", &home)]);
        pid.set(child.id());
        b.wait_for_cell("slow", "the step to start", |c| c.status == CellStatus::Running);
        std::thread::sleep(std::time::Duration::from_millis(500));
        panic!("the test fails while its run is going");
    }));
    assert!(failed.is_err());
    assert!(started.elapsed() < TEARDOWN_GRACE, "the run was killed, not interrupted");
    assert!(!std::path::Path::new(&format!("/proc/{}", pid.get())).exists(), "benchrig is still there");
    // Interrupted, so it tore down and stored what happened.
    assert_eq!(b.store().resolve_run("slow").unwrap().status, RunStatus::Interrupted);
    std::thread::sleep(std::time::Duration::from_secs(1));
    // pgrep itself, not through sh, whose command line would match.
    let left = std::process::Command::new("pgrep").args(["-a", "-f", &marker]).output().unwrap();
    assert_eq!(stdout(&left), "", "a process of the run was left behind");
}

#[test]
#[ignore = "needs the agent builds (ci/test.sh)"]
fn adaptive_repetition_stops_when_the_interval_is_narrow_and_warm_up_is_not_recorded() {
    let _lab = uses(&[ThisMachine]);
    let b = Bench::new();
    let pb = repo().join("orchestrator/tests/data/compare/adaptive.yml");
    let out = b.run(&["run", pb.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    // Interleaved: each visit is a fresh setup, and each opens with its warm-up (4 + 8 visits).
    assert_eq!(stderr(&out).matches("warm-up:").count(), 12, "{}", stderr(&out));
    let s = b.store();
    let run = s.resolve_run("last").unwrap().id;
    let samples = s.samples(run).unwrap();
    let cells = s.cells(run).unwrap();
    let reps = |noise: i64| -> Vec<i64> {
        let id = cells.iter().find(|c| c.params["noise"] == noise).unwrap().id;
        samples.iter().filter(|x| x.cell_id == id && x.metric == "speed").map(|x| x.repetition).collect()
    };
    // Always 100: a CI95 of ±0% once the minimum of 4 is in.
    assert_eq!(reps(1), [1, 2, 3, 4]);
    let steady = cells.iter().find(|c| c.params["noise"] == 1).unwrap();
    assert_eq!(steady.info.as_ref().unwrap()["repetitions"]["recorded"], 4, "{steady:?}");
    // 100..299 (sd ~29% of the mean): ±5% needs some 130 samples, so all 8
    // run (four draws within ±6 of each other, the chance of stopping, is ~0.1%).
    assert_eq!(reps(200), (1..=8).collect::<Vec<_>>());
}

#[test]
#[ignore = "needs the agent builds (ci/test.sh)"]
fn history_names_the_run_a_step_arrived_with_and_compare_finds_its_own_baseline() {
    let _lab = uses(&[ThisMachine]);
    let b = Bench::new();
    let pb = repo().join("orchestrator/tests/data/compare/speed.yml");
    let pb = pb.to_str().unwrap();
    // Six nights at 100 MB/s, then two at 80.
    for night in 1..=8 {
        let speed = if night <= 6 { "100" } else { "80" };
        let out = b.run(&["run", pb, "-e", &format!("speed={speed}"), "--name", &format!("night-{night}")]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
    let history = |more: &[&str]| b.run(&[&["history", "--metric", "speed"][..], more].concat());
    let out = history(&["--format", "json", "--name", "night-*"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let doc: Json = serde_json::from_str(&stdout(&out)).unwrap();
    let series = doc["series"].as_array().unwrap();
    assert_eq!(series.len(), 1, "one series: the speed of the one cell");
    assert_eq!(series[0]["points"].as_array().unwrap().len(), 8);
    let changes = series[0]["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert_eq!(changes[0]["run"]["name"], "night-7", "the night the step arrived");
    assert_eq!(changes[0]["direction"], "regression");
    let pct = changes[0]["change_pct"].as_f64().unwrap();
    assert!((-22.0..=-18.0).contains(&pct), "{pct}");
    let ci = changes[0]["ci_pct"].as_array().unwrap();
    assert!(ci[0].as_f64().unwrap() < pct && pct < ci[1].as_f64().unwrap(), "{ci:?}");
    assert!(changes[0]["pvalue"].as_f64().unwrap() < 0.001);
    // The gate: a regression within the last two nights fails the job; the
    // first six alone are steady; a table and markdown say the same.
    assert_eq!(history(&["--fail-on-regression", "--since", "2"]).status.code(), Some(3));
    assert_eq!(history(&["--fail-on-regression", "--since", "2", "--name", "night-[1-6]"]).status.code(), Some(0));
    let table = stdout(&history(&[]));
    assert!(table.contains("night-7") && table.contains("regression") && table.contains("1 regression(s)"), "{table}");
    let md = stdout(&history(&["--format", "md"]));
    assert!(md.contains("| SERIES | RUN |") && md.contains("night-7"), "{md}");
    // NEW alone: compared with the newest earlier ok run of the playbook on the same hosts.
    let out = b.run(&["compare", "night-8"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("baseline: run 7,"), "{}", stderr(&out));
    assert!(stdout(&out).contains("run 8 against run 7"), "{}", stdout(&out));
    let out = b.run(&["compare", "night-1"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("no automatic baseline"), "{}", stderr(&out));
}

#[test]
#[ignore = "needs the simulated lab (ci/test.sh)"]
fn the_nightly_script_passes_steady_nights_and_fails_the_night_a_disk_got_slower() {
    let _lab = alone("throttles fast1, then lab.sh up; steady nights must not look regressed");
    let b = Bench::new();
    let inv = lab_inventory();
    let out = b.dir.path().join("out");
    let db = b.db();
    let night = |date: &str| {
        let script = repo().join("ci/nightly/nightly.sh");
        let args = [
            "-i",
            inv.to_str().unwrap(),
            "--db",
            db.to_str().unwrap(),
            "-p",
            "playbooks/quickstart.yml",
            "-o",
            out.to_str().unwrap(),
            "--date",
            date,
            "-e",
            "size=256M",
            "-e",
            r#"{"benchrig_profiles": ["ext4"]}"#,
            // The lab's disks are files on a shared 2-core machine: a 256M write
            // swings 280–480 MB/s from rep to rep and a cold read 300–530 when
            // anything else on the machine does I/O, so three reps of two
            // steady nights can differ by a third at p < 0.01. A lab that
            // noisy gates on a wide change; the slowed night is a tenth as
            // fast (-90%), far past it.
            "--threshold",
            "40",
            // A short history: a step is judged at p < 0.01 rather than Otava's 0.001.
            "--history",
            "--max-pvalue 0.01",
            "--benchrig",
            env!("CARGO_BIN_EXE_benchrig"),
        ];
        let mut cmd = std::process::Command::new(script);
        // Only fast1, whose disk the last night slows down.
        cmd.args(args).args(["-e", "reps=3", "-l", "fast1"]).current_dir(repo());
        let started = std::time::Instant::now();
        let o = cmd.output().unwrap();
        eprintln!(
            "night {date}: exit {:?} in {:.1} s\n{}",
            o.status.code(),
            started.elapsed().as_secs_f64(),
            stderr(&o)
        );
        o
    };
    for date in ["2026-11-01", "2026-11-02", "2026-11-03", "2026-11-04"] {
        assert_eq!(night(date).status.code(), Some(0), "a steady night passes");
    }
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(summary.contains("nightly-quickstart-2026-11-04") && summary.contains("0 regressed"), "{summary}");
    // The fifth night fast1's disk is a tenth as fast.
    lab(&["throttle", "fast1", "52428800", "41943040"]);
    let slow = night("2026-11-05");
    lab(&["up"]);
    assert_eq!(slow.status.code(), Some(3), "a real slowdown fails the night");
    let name = "nightly-quickstart-2026-11-05";
    let junit = std::fs::read_to_string(out.join(format!("{name}.junit.xml"))).unwrap();
    let doc = roxmltree::Document::parse(&junit).unwrap();
    let failed: Vec<_> = doc.descendants().filter(|n| n.has_tag_name("failure")).collect();
    assert!(!failed.is_empty(), "the slowed cells fail in JUnit: {junit}");
    let history: Json =
        serde_json::from_str(&std::fs::read_to_string(out.join(format!("{name}.history.json"))).unwrap()).unwrap();
    let changes: Vec<&Json> = history["series"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["host"] == "fast1" && s["metric"] == "throughput")
        .flat_map(|s| s["changes"].as_array().unwrap())
        .collect();
    assert!(!changes.is_empty(), "history finds the step");
    assert!(changes.iter().all(|c| c["run"]["name"] == name && c["direction"] == "regression"), "{changes:?}");
    for f in ["html", "md", "compare.md", "history.md", "history.html"] {
        assert!(out.join(format!("{name}.{f}")).exists(), "{f}");
    }
}

#[test]
#[ignore = "needs the agent builds (ci/test.sh)"]
fn every_report_format_parses_back() {
    let _lab = uses(&[ThisMachine]);
    let b = Bench::new();
    let pb = repo().join("orchestrator/tests/data/compare/speed.yml");
    let pb = pb.to_str().unwrap();
    for (name, speed) in [("base", "100"), ("slower", "80")] {
        assert_eq!(b.run(&["run", pb, "-e", &format!("speed={speed}"), "--name", name]).status.code(), Some(0));
    }
    // CSV: a row per sample (5 repetitions × speed and time), numbers that read back.
    let csv_text = stdout(&b.run(&["report", "slower", "--format", "csv"]));
    let mut rd = csv::Reader::from_reader(csv_text.as_bytes());
    let rows: Vec<csv::StringRecord> = rd.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 10, "{csv_text}");
    let headers = rd.headers().unwrap().clone();
    let col = |name: &str| headers.iter().position(|h| h == name).unwrap();
    let speeds: Vec<f64> =
        rows.iter().filter(|r| &r[col("metric")] == "speed").map(|r| r[col("value")].parse().unwrap()).collect();
    assert_eq!(speeds.len(), 5);
    assert!(speeds.iter().all(|v| (80.0..=82.0).contains(v)), "{speeds:?}");
    // JUnit: one case per cell; with the baseline, the regression fails it.
    for (baseline, failures) in [(None, 0), (Some("base"), 1)] {
        let mut args = vec!["report", "slower", "--format", "junit"];
        if let Some(base) = baseline {
            args.extend(["--baseline", base, "--threshold", "5"]);
        }
        let xml = stdout(&b.run(&args));
        let doc = roxmltree::Document::parse(&xml).unwrap();
        let cases: Vec<_> = doc.descendants().filter(|n| n.has_tag_name("testcase")).collect();
        assert_eq!(cases.len(), 1, "{xml}");
        let failed: Vec<_> = doc.descendants().filter(|n| n.has_tag_name("failure")).collect();
        assert_eq!(failed.len(), failures, "{xml}");
        if failures > 0 {
            assert!(failed[0].attribute("message").unwrap().contains("measure speed: -"), "{xml}");
        }
    }
    // Markdown: a header row, a separator, one row per metric.
    let md = stdout(&b.run(&["report", "slower", "--format", "md"]));
    let table: Vec<&str> = md.lines().filter(|l| l.starts_with('|')).collect();
    assert_eq!(table.len(), 4, "{md}");
    assert!(table[0].starts_with("| host | cell |") && table.iter().any(|l| l.contains("| speed |")), "{md}");
}

#[test]
#[ignore = "needs the agent builds (ci/test.sh)"]
fn the_html_report_is_one_file_with_a_chart_per_metric() {
    let _lab = uses(&[ThisMachine]);
    let b = Bench::new();
    let pb = repo().join("orchestrator/tests/data/compare/adaptive.yml");
    assert_eq!(b.run(&["run", pb.to_str().unwrap(), "--name", "h"]).status.code(), Some(0));
    let html = stdout(&b.run(&["report", "h", "--format", "html"]));
    // Self-contained: nothing fetched from anywhere.
    for external in ["<script", "<link", "src=\"http", "href=\"http", "@import", "url("] {
        assert!(!html.contains(external), "{external} in the report");
    }
    // `noise` is the one numeric axis: a line chart per metric (speed, time), each an SVG with
    // a path per host series, and error bars; the warning list names the noisy cell.
    // The monitors' timelines follow the play's table, under their own heading.
    let (charts, monitors) = html.split_once("<h4>What the monitors saw</h4>").expect("the steps were monitored");
    let svgs: Vec<&str> = charts.split("<svg").skip(1).map(|s| s.split("</svg>").next().unwrap()).collect();
    assert_eq!(svgs.len(), 2, "{html}");
    assert!(monitors.contains("measure: repetition 1 over time") && monitors.contains("<svg"), "{monitors}");
    let x_label = regex::Regex::new(r"<text[^>]*>\s*noise\s*</text>").unwrap();
    for svg in &svgs {
        assert!(svg.contains("<polyline") || svg.contains("<path"), "no line drawn");
        assert!(x_label.is_match(svg), "the x axis is named after the matrix axis");
    }
    assert!(html.contains("<h2>Hosts</h2>") && html.contains("localhost"));
    assert!(html.contains("<th>host</th><th>noise</th><th>step</th>"), "a column per matrix axis");
    assert!(html.contains("noise=200 measure speed: CV"), "{html}");
}

#[test]
#[ignore = "needs the agent builds and a PostgreSQL server (ci/test.sh)"]
fn runs_in_postgres_compare_and_move_to_sqlite_as_anywhere() {
    let _lab = uses(&[ThisMachine]);
    let pg = PgDatabase::new("benchrig_e2e");
    let url = pg.url.clone();

    let b = Bench::new();
    let pb = repo().join("orchestrator/tests/data/compare/speed.yml");
    let pb = pb.to_str().unwrap();
    for (run, speed) in [("base", "100"), ("slower", "80")] {
        let out = b.run(&["run", pb, "-e", &format!("speed={speed}"), "--name", run, "--db", &url]);
        assert_eq!(out.status.code(), Some(0));
    }
    let out = b.run(&["compare", "base", "slower", "--threshold", "5", "--fail-on-regression", "--db", &url]);
    assert_eq!(out.status.code(), Some(3), "the regression is found in PostgreSQL too");
    // From the shared database to a laptop's SQLite file, and the same report.
    let export = b.dir.path().join("slower.json");
    assert_eq!(b.run(&["export", "slower", "--db", &url, "-o", export.to_str().unwrap()]).status.code(), Some(0));
    assert_eq!(b.run(&["import", export.to_str().unwrap()]).status.code(), Some(0));
    let from_pg = stdout(&b.run(&["report", "slower", "--format", "csv", "--db", &url]));
    let from_sqlite = stdout(&b.run(&["report", "slower", "--format", "csv"]));
    let rows = |t: &str| t.lines().skip(1).map(|l| l.split_once(',').unwrap().1.to_string()).collect::<Vec<_>>();
    assert_eq!(rows(&from_pg), rows(&from_sqlite), "the same samples, but for the run id");
    assert_eq!(rows(&from_pg).len(), 10);
}

#[test]
#[ignore = "needs the simulated lab and a PostgreSQL server (ci/test.sh)"]
fn two_runs_never_measure_on_one_host_at_once_and_a_quarantined_host_is_left_out() {
    let _lab = alone("its runs race each other on leases within seconds");
    let inv = lab_inventory();
    let inv = inv.to_str().unwrap();
    let pg = PgDatabase::new("benchrig_leases");
    let b = Bench::new();
    let pb = b.write(
        "hold.yml",
        "- name: hold\n  hosts: all\n  repeat: 2\n  benchmark:\n    - exec: {command: \"sleep 2\"}\n",
    );
    let pb = pb.to_str().unwrap();
    let run = |name: &str, limit: &str, more: &[&str]| {
        b.run(&[&["run", pb, "-i", inv, "-l", limit, "--name", name, "--db", &pg.url][..], more].concat())
    };
    let held_by = |host: &str| pg.store().leases().unwrap().into_iter().find(|l| l.host == host && l.holder.is_some());

    // a holds fast1 and fast2 while it runs.
    let a = b.spawn(&["run", pb, "-i", inv, "-l", "fast1:fast2", "--name", "a", "--db", &pg.url], &[]);
    let started = std::time::Instant::now();
    while held_by("fast2").is_none() {
        assert!(started.elapsed() < std::time::Duration::from_secs(30), "run a never took its hosts");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    // b wants fast2 and soc, and will not wait: it exits at once, naming
    // the holder, and takes nothing (not even soc, which is free).
    let asked = std::time::Instant::now();
    let busy = run("b", "fast2:soc", &["--wait-for-hosts", "0"]);
    assert_eq!(busy.status.code(), Some(5), "{}", stderr(&busy));
    assert!(asked.elapsed() < std::time::Duration::from_secs(5), "it did not wait");
    let why = stderr(&busy);
    assert!(why.contains("host fast2 is held by run ") && why.contains("--wait-for-hosts"), "{why}");
    assert!(held_by("soc").is_none(), "all or nothing");
    // A runner whose clock is 5 minutes ahead (faketime) sees the same:
    // a's lease expires by the database's clock, not by either runner's.
    // (On the main before, it took a's live lease for a lapsed one.)
    let ahead = b
        .command(&["run", pb, "-i", inv, "-l", "fast2", "--name", "ahead", "--db", &pg.url, "--wait-for-hosts", "0"])
        .env("FAKETIME", "+5m")
        .env("FAKETIME_DONT_FAKE_MONOTONIC", "1")
        .env("LD_PRELOAD", "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1")
        .output()
        .unwrap();
    transcript(&["run", "ahead (FAKETIME=+5m)"], &ahead);
    assert_eq!(ahead.status.code(), Some(5), "a runner 5 min ahead took a live lease: {}", stderr(&ahead));
    assert!(stderr(&ahead).contains("host fast2 is held by run "), "{}", stderr(&ahead));
    // c waits for a to finish, then runs.
    let c = run("c", "fast2:soc", &["--wait-for-hosts", "5m"]);
    assert_eq!(c.status.code(), Some(0), "{}", stderr(&c));
    assert!(stderr(&c).contains("waiting up to 5m"), "{}", stderr(&c));
    assert_eq!(a.wait_with_output().unwrap().status.code(), Some(0));
    let s = pg.store();
    let cells = |name: &str, host: &str| {
        let run = s.resolve_run(name).unwrap();
        s.cells(run.id).unwrap().into_iter().filter(|c| c.host == host).collect::<Vec<_>>()
    };
    let a_done = cells("a", "fast2").iter().filter_map(|c| c.finished.clone()).max().unwrap();
    let c_began = cells("c", "fast2").iter().filter_map(|c| c.started.clone()).min().unwrap();
    assert!(a_done < c_began, "fast2 was measured by both at once: a until {a_done}, c from {c_began}");
    assert!(s.resolve_run("b").is_err(), "a run refused its hosts stores nothing");
    assert!(s.leases().unwrap().is_empty(), "every run let go of its hosts");

    // Quarantined: the next run leaves soc out, saying why, and is ok.
    let lab_cmd = |args: &[&str]| b.run(&[&["lab"][..], args, &["--db", &pg.url]].concat());
    assert_eq!(lab_cmd(&["quarantine", "soc", "--reason", "fan replaced"]).status.code(), Some(0));
    assert!(stdout(&lab_cmd(&[])).contains("fan replaced"));
    let q = run("q", "fast1:soc", &[]);
    assert_eq!(q.status.code(), Some(0), "{}", stderr(&q));
    let hosts = s.hosts(s.resolve_run("q").unwrap().id).unwrap();
    let soc = hosts.iter().find(|h| h.name == "soc").unwrap();
    assert_eq!((soc.status.to_string(), soc.reason.as_deref()), ("skipped".into(), Some("quarantined: fan replaced")));
    let soc_cells = cells("q", "soc");
    assert!(!soc_cells.is_empty() && soc_cells.iter().all(|c| c.status == CellStatus::Skipped));
    assert_eq!(soc_cells[0].reason.as_deref(), Some("host soc is quarantined: fan replaced"));
    assert!(cells("q", "fast1").iter().all(|c| c.status == CellStatus::Ok));
    let report = stdout(&b.run(&["report", "q", "--format", "json", "--db", &pg.url]));
    assert!(report.contains("quarantined: fan replaced"), "the report says why");
    assert_eq!(lab_cmd(&["unquarantine", "soc"]).status.code(), Some(0));
    assert_eq!(stdout(&lab_cmd(&[])).trim(), "no host is held or quarantined");
}

/// read_ahead_kb of lab host `hdd`'s disk `hdd0` (the lab shares this machine's kernel, so sysfs here is its).
fn hdd0_read_ahead_kb() -> u64 {
    let dev = sh("basename \"$(readlink -f /var/tmp/benchrig-lab/dev/hdd-hdd0)\"");
    sh(&format!("cat /sys/class/block/{dev}/queue/read_ahead_kb")).parse().unwrap()
}

/// A play tuning hdd0's read-ahead to 16 KiB whose measured step reads it back.
fn tune_playbook(b: &Bench, sleep: u32) -> std::path::PathBuf {
    b.write(
        "tune.yml",
        &format!(
            r#"- name: tuned
  hosts: hdd
  tune: {{ read_ahead_kb: 16 }}
  setup:
    - filesystem: {{ device: hdd0, profile: ext4 }}
  benchmark:
    - name: read_ahead
      exec:
        command: "sleep {sleep}; cat /sys/class/block/$(basename $(readlink -f /var/tmp/benchrig-lab/dev/hdd-hdd0))/queue/read_ahead_kb"
        metrics: [{{ name: read_ahead_kb, unit: KiB, regex: "(\\d+)" }}]
"#
        ),
    )
}

#[test]
#[ignore = "needs the simulated lab (ci/test.sh)"]
fn tune_read_ahead_is_in_effect_during_the_cell_and_restored_after_it_and_after_ctrl_c() {
    let _lab = uses(&[Hdd]);
    let b = Bench::new();
    let inv = lab_inventory();
    let before = hdd0_read_ahead_kb();
    assert_ne!(before, 16, "the test needs a read-ahead other than the one it sets");
    let pb = tune_playbook(&b, 0);
    let out = b.run(&["run", pb.to_str().unwrap(), "-i", inv.to_str().unwrap(), "--name", "tuned"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let s = b.store();
    let run = s.resolve_run("tuned").unwrap().id;
    let samples = s.samples(run).unwrap();
    let ra: Vec<f64> = samples.iter().filter(|x| x.metric == "read_ahead_kb").map(|x| x.value).collect();
    assert_eq!(ra, [16.0], "in effect while the cell ran");
    assert_eq!(hdd0_read_ahead_kb(), before, "restored after the visit");
    // What was applied, and what it replaced, is stored with the cell.
    let cell = &s.cells(run).unwrap()[0];
    let info = cell.info.as_ref().unwrap();
    let tune = info.get("setup[0] tune@hdd").unwrap_or_else(|| panic!("{info}"));
    assert_eq!(tune["tune"][0]["applied"], "16");
    assert_eq!(tune["tune"][0]["previous"], before.to_string());
    let shown = stdout(&b.run(&["show", "tuned"]));
    assert!(shown.contains(&format!("= 16 (was {before})")), "show names the tuning: {shown}");

    // Ctrl-C while the measured step runs, the setting in effect: restored too.
    // (59 s, not 60: the habits test, which may run meanwhile, counts the
    // machine's `sleep 60`s.)
    let child =
        b.spawn(&["run", tune_playbook(&b, 59).to_str().unwrap(), "-i", inv.to_str().unwrap(), "--name", "int"], &[]);
    let start = std::time::Instant::now();
    while hdd0_read_ahead_kb() != 16 {
        assert!(start.elapsed().as_secs() < 120, "tune never took effect");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    b.wait_for_cell("int", "the cell to run", |c| c.status == CellStatus::Running);
    std::thread::sleep(std::time::Duration::from_millis(500));
    sh(&format!("kill -INT -{}", child.id()));
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(hdd0_read_ahead_kb(), before, "restored after Ctrl-C");
}

/// A loop device over a sparse 64 MiB image on an 8 MiB tmpfs: writing past
/// 8 MiB fails in the backing filesystem, and the kernel's block layer logs
/// each failed request ("critical space allocation error, dev loopN, sector
/// …") — a real kernel message, nothing written into /dev/kmsg by us.
struct FullDisk {
    dir: tempfile::TempDir,
    dev: String,
}

impl FullDisk {
    fn new() -> Self {
        require_root("it mounts a tmpfs and attaches a loop device");
        let dir = tempfile::Builder::new().prefix("brfull").tempdir_in("/var/tmp").unwrap();
        let d = dir.path().display();
        sh(&format!("mount -t tmpfs -o size=8M brfull {d} && truncate -s 64M {d}/img"));
        let dev = sh(&format!("losetup --find --show {d}/img"));
        FullDisk { dir, dev }
    }
}

impl Drop for FullDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("losetup").args(["-d", &self.dev]).output();
        let _ = std::process::Command::new("umount").arg(self.dir.path()).output();
    }
}

#[test]
#[ignore = "needs the simulated lab (ci/test.sh)"]
fn an_io_error_the_kernel_logs_during_a_cell_is_flagged_in_every_report_and_only_for_its_host() {
    let _lab = uses(&[Fast1, Fast2]);
    let b = Bench::new();
    let full = FullDisk::new();
    let dev = full.dev.trim_start_matches("/dev/").to_string();
    // fast2 lists the failing device; fast1, measuring at the same time on the same kernel, does not.
    let inv = b.write(
        "inv.yml",
        &format!(
            "all:\n  vars:\n    ansible_user: root\n    ansible_ssh_private_key_file: /var/tmp/benchrig-lab/id_ed25519\n    \
             ansible_ssh_common_args: \"-o UserKnownHostsFile=/var/tmp/benchrig-lab/known_hosts\"\n  hosts:\n    \
             fast1:\n      ansible_host: 10.77.0.12\n    fast2:\n      ansible_host: 10.77.0.13\n      \
             scratch_devices:\n        - {{ path: {}, name: full, wipe: true }}\n",
            full.dev
        ),
    );
    let pb = b.write(
        "full.yml",
        &format!(
            r#"- name: full
  hosts: all
  benchmark:
    - name: write
      exec:
        command: "{{{{ 'sleep 1; dd if=/dev/zero of={} bs=1M count=32 conv=fsync' if inventory_hostname == 'fast2' else 'sleep 6' }}}}; echo done 1"
        ignore_status: true
        metrics: [{{ name: done, unit: x, regex: "done (\\d+)" }}]
"#,
            full.dev
        ),
    );
    let out = b.run(&["run", pb.to_str().unwrap(), "-i", inv.to_str().unwrap(), "--name", "full"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let s = b.store();
    let run = s.resolve_run("full").unwrap().id;
    let cells = s.cells(run).unwrap();
    let rows = s.kernel_log(run).unwrap();
    let notes = |host: &str| {
        let c = cells.iter().find(|c| c.host == host).unwrap();
        benchrig::report::cell_notes::kernel_log(&rows, c.id)
    };
    let logged = notes("fast2");
    assert!(!logged.is_empty(), "the kernel's error was not recorded: {:?}", cells);
    let wanted = format!("error, dev {dev}, sector");
    // The block layer's line for each failed request, and the page cache's "Buffer I/O error on dev …".
    assert!(logged.iter().all(|(h, l)| h == "fast2" && l.text.contains(&format!("dev {dev}"))), "{logged:?}");
    assert!(logged.iter().any(|(_, l)| l.text.contains(&wanted)), "{logged:?}");
    assert_eq!(logged[0].1.kind, benchrig_wire::kernel_log::KernelLogKind::IoError);
    assert!(notes("fast1").iter().all(|(_, l)| !l.text.contains(&format!("dev {dev},"))), "fast1 does not list {dev}");
    // Flagged in every report.
    let show = stdout(&b.run(&["show", "full"]));
    assert!(show.contains("KERNEL LOG fast2") && show.contains(&wanted), "{show}");
    for (format, needle) in [
        ("md", "I/O error on fast2"),
        ("html", "I/O error on fast2"),
        ("json", "\"kernel_log\""),
        ("junit", "kernel_log"),
    ] {
        let r = stdout(&b.run(&["report", "full", "--format", format]));
        assert!(r.contains(needle) && r.contains(&wanted), "{format}: {r}");
    }
}

/// fio's JSON of each repetition of a cell, as stored (an artifact per repetition).
fn fio_outputs(s: &benchrig::store::Store, run: i64, cell: i64) -> Vec<(i64, Json)> {
    let mut out: Vec<(i64, Json)> = s
        .artifacts(run)
        .unwrap()
        .into_iter()
        .filter(|a| a.cell_id == cell && a.name.ends_with(": fio_output"))
        .map(|a| {
            let rep = a.name.strip_prefix("rep ").and_then(|r| r.split(' ').next()).unwrap().parse().unwrap();
            (rep, serde_json::from_str(&a.content).expect("fio's JSON"))
        })
        .collect();
    out.sort_by_key(|(rep, _)| *rep);
    out
}

#[test]
#[ignore = "needs the simulated lab (ci/test.sh)"]
fn a_fio_job_on_two_hosts_gives_each_host_the_figures_of_its_own_fio() {
    let _lab = uses(&[Fast1, Fast2]);
    let b = Bench::new();
    let inv = lab_inventory();
    let pb = b.write(
        "fio.yml",
        r#"
- name: fio two hosts
  hosts: fast1:fast2
  repeat: 2
  setup:
    - filesystem: { device: ssd0, profile: ext4 }
  benchmark:
    - fio:
        global: { ioengine: psync }
        jobs:
          rr: { rw: randread, bs: 4k, size: 16M }
          # A criterion no real disk meets: IOPS the same in each of 3 seconds
          # (with 1 s, one sample, any criterion is met). Never attained, and flagged.
          # A write with `ss_ramp` all but rules out fio 3.33's division by
          # zero (workloads/fio.rs's known_crash): with a ramp, fio divides
          # only once it is over, a second or more after the job's start and
          # its last check. Only a check in the moment between fio marking the
          # job running and the job starting its clock can cut that short, and
          # a write, which lays no file out first, keeps that moment short.
          steady: { rw: write, bs: 64k, size: 16M, time_based: ~, runtime: 4, ss: "iops:0%", ss_dur: 3, ss_ramp: 1, stonewall: ~ }
  teardown:
    - unmount: { device: ssd0 }
"#,
    );
    let out = b.run(&["run", pb.to_str().unwrap(), "-i", inv.to_str().unwrap(), "--name", "fio2"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let s = b.store();
    let run = s.resolve_run("fio2").unwrap().id;
    let mut cells = s.cells(run).unwrap();
    // Stored as each host connected: in either order.
    cells.sort_by(|a, b| a.host.cmp(&b.host));
    assert_eq!(cells.iter().map(|c| c.host.as_str()).collect::<Vec<_>>(), ["fast1", "fast2"]);
    assert!(cells.iter().all(|c| c.status == CellStatus::Ok), "{cells:?}");
    let samples = s.samples(run).unwrap();
    let value = |cell: i64, rep: i64, metric: &str| {
        samples
            .iter()
            .find(|x| x.cell_id == cell && x.repetition == rep && x.metric == metric)
            .unwrap_or_else(|| panic!("no {metric} in rep {rep} of cell {cell}"))
            .value
    };
    // The oracle: each host's own fio JSON, read with explicit paths.
    let figures = |doc: &Json| {
        let rr = &doc["jobs"][0];
        assert_eq!(rr["jobname"], "rr");
        [
            rr["read"]["bw_bytes"].as_f64().unwrap() / 1e6,
            rr["read"]["iops"].as_f64().unwrap(),
            rr["read"]["clat_ns"]["mean"].as_f64().unwrap() / 1e3,
            rr["read"]["clat_ns"]["percentile"]["99.000000"].as_f64().unwrap() / 1e3,
            doc["jobs"][1]["write"]["iops"].as_f64().unwrap(),
        ]
    };
    let names = ["rr.read.bw", "rr.read.iops", "rr.read.clat_mean", "rr.read.clat_p99", "steady.write.iops"];
    let outputs: Vec<Vec<(i64, Json)>> = cells.iter().map(|c| fio_outputs(&s, run, c.id)).collect();
    for (c, own) in cells.iter().zip(&outputs) {
        assert_eq!(
            own.iter().map(|(r, _)| *r).collect::<Vec<_>>(),
            [1, 2],
            "one fio output per repetition on {}",
            c.host
        );
        for (rep, doc) in own {
            let stored: Vec<f64> = names.iter().map(|n| value(c.id, *rep, n)).collect();
            assert_eq!(stored, figures(doc), "{} rep {rep}: stored metrics are its fio's figures", c.host);
            assert!(!samples.iter().any(|x| x.cell_id == c.id && x.metric.starts_with("rr.write")), "rr only read");
            // fio worked in the target's directory on that host's mount.
            let dir = doc["global options"]["directory"].as_str().unwrap();
            assert!(dir.ends_with("/mnt/ssd0/fio"), "{dir}");
        }
    }
    // Each host's figures are its own, not the other's.
    for ((rep, a), (_, b)) in outputs[0].iter().zip(&outputs[1]) {
        assert_ne!(figures(a), figures(b), "fast1 and fast2 rep {rep}");
        // IOPS alone can tie (4096 I/Os over the same whole milliseconds); the mean latency does not.
        let stored = |i: usize| value(cells[i].id, *rep, "rr.read.clat_mean");
        assert_ne!(stored(0), stored(1));
        assert_eq!(stored(1), figures(b)[2]);
    }
    // Steady state: recorded per job in the step's info, and flagged.
    for x in samples.iter().filter(|x| x.metric == "steady.write.iops") {
        let ss = &x.info.as_ref().unwrap()["steady_state"];
        assert_eq!(ss[0]["job"], "steady");
        assert_eq!(ss[0]["attained"], false, "{ss}");
    }
    let md = stdout(&b.run(&["report", "fio2", "--format", "md"]));
    for host in ["fast1", "fast2"] {
        let line = format!(
            "{host} - fio: fio job `steady` did not attain steady state (iops:0.000000%) in repetition(s) 1, 2"
        );
        assert!(md.contains(&line), "{md}");
    }
    let show = stdout(&b.run(&["show", "fio2"]));
    assert!(show.contains("steady state not attained rep 1,2"), "{show}");
    assert!(
        !show.lines().any(|l| l.contains("rr.read.iops") && l.contains("steady state")),
        "rr had no criterion: {show}"
    );
}

#[test]
#[ignore = "needs the simulated lab (ci/test.sh)"]
fn the_shipped_fio_playbook_runs_and_on_the_host_without_fio_its_cells_are_unsupported() {
    let _lab = uses(&[Old, Fast2]);
    // old lacks fio (ci/lab.sh's `lacks` column): bound away in its mount namespace only.
    assert_eq!(lab(&["ssh", "old", "test -x /usr/bin/fio && echo present || echo absent"]), "absent");
    assert_eq!(lab(&["ssh", "fast2", "test -x /usr/bin/fio && echo present || echo absent"]), "present");
    assert!(std::path::Path::new("/usr/bin/fio").exists(), "this machine keeps its fio");
    let b = Bench::new();
    let inv = lab_inventory();
    let pb = repo().join("playbooks/fio.yml");
    let args =
        ["run", pb.to_str().unwrap(), "-i", inv.to_str().unwrap(), "-l", "old:fast2", "-e", "reps=1", "-e", "size=16M"];
    let out = b.run(&[&args[..], &["--name", "nofio"]].concat());
    assert_eq!(out.status.code(), Some(0), "an unsupported cell is no failure: {}", stderr(&out));
    let s = b.store();
    let run = s.resolve_run("nofio").unwrap();
    assert_eq!(run.status, RunStatus::Ok);
    let cells = s.cells(run.id).unwrap();
    let old = cells.iter().find(|c| c.host == "old").unwrap();
    assert_eq!(old.status, CellStatus::Unsupported);
    assert!(old.reason.as_deref().unwrap_or_default().contains("fio is not installed on old"), "{old:?}");
    let fast2 = cells.iter().find(|c| c.host == "fast2").unwrap();
    assert_eq!(fast2.status, CellStatus::Ok, "{fast2:?}");
    let samples = s.samples(run.id).unwrap();
    for m in ["randread.read.iops", "randread.read.clat_p99_9", "seqwrite.write.bw"] {
        assert!(samples.iter().any(|x| x.cell_id == fast2.id && x.metric == m && x.value > 0.0), "no {m}");
    }
    assert!(!samples.iter().any(|x| x.cell_id == old.id), "old measured nothing");
    let show = stdout(&b.run(&["show", "nofio"]));
    let line = show.lines().find(|l| l.starts_with("old")).unwrap_or_default();
    assert!(line.contains("unsupported") && line.contains("fio is not installed on old"), "{show}");
}

/// Issue 16's monitors end to end: a cold 256 MB read on `hdd` (model
/// disks, ci/diskmodel: 60 MB/s at the outer edge to 35 at the inner) is
/// watched every half second; its rMB/s is within the model's media rates
/// and the step's own throughput, and the reader's stalls on I/O are
/// recorded (PSI); the series is stored per step, and `show`, the JSON and
/// HTML reports carry them. The same run with `monitors: false` stores no
/// series and no summary. (%util and the stalls are printed, not judged:
/// the model disk shows ~100% busy as a real one does, where the old
/// blk-throttle "HDD" showed 5–15%, and PSI's
/// host-wide share is weighted over both CPUs by how busy each is, so one
/// stalled reader reads 99% on a quiet machine and 44–76% beside other
/// builds; the verdict must follow the figures either way.)
#[test]
#[ignore = "needs the simulated lab (ci/test.sh)"]
fn a_cold_read_on_the_hdd_host_is_seen_by_its_monitors_at_the_model_disks_rate_and_monitors_false_stores_none() {
    let _lab = alone("reads at the model disk's rate, which other load would slow");
    let b = Bench::new();
    let inv = lab_inventory();
    let pb = repo().join("orchestrator/tests/data/monitors/cold-read.yml");
    let out = b.run(&["run", pb.to_str().unwrap(), "-i", inv.to_str().unwrap(), "--name", "on"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let s = b.store();
    let run = s.resolve_run("on").unwrap().id;
    let cells = s.cells(run).unwrap();
    assert_eq!(cells[0].steps.as_ref().unwrap()["monitors"], serde_json::json!({"interval_ms": 500}));
    let series = s.monitor_series(run).unwrap();
    let steps: Vec<&str> = series.iter().map(|x| x.step.as_str()).collect();
    assert_eq!(steps, ["write", "cold read"], "a series per measured step, none for setup or teardown");
    let read = &series[1].series;
    assert_eq!(read.interval_ms, 500);
    assert!(read.t.len() >= 6, "several seconds at 0.5 s: {:?}", read.t);
    assert_eq!(read.devices.len(), 1, "the one disk under the file: {:?}", read.devices);
    let dev = read.devices[0].device.clone();
    assert!(dev.starts_with("loop"), "{dev}");

    let throughput = s.samples(run).unwrap().into_iter().find(|x| x.step == "cold read").unwrap().value;
    let figure = |name: &str| {
        let m = s.monitor_samples(run).unwrap().into_iter().find(|x| x.step == "cold read" && x.metric == name);
        m.unwrap_or_else(|| panic!("no monitor metric {name}")).value
    };
    let (util, rmb, stalled) =
        (figure(&format!("%util {dev}")), figure(&format!("rMB/s {dev}")), figure("io_pressure"));
    eprintln!(
        "cold read: throughput {throughput:.1} MB/s; monitors: %util {util:.1}, rMB/s {rmb:.1}, I/O stalled {stalled:.1}%"
    );
    // ci/lab.sh's model for hdd: outer=60, inner=35 (MB/s); a sequential
    // stream runs at the media rate of where the file lies.
    let (outer, inner) = (60.0, 35.0);
    assert!(
        (0.9 * inner..=1.05 * outer).contains(&rmb),
        "rMB/s {rmb:.1} is within the model disk's media rates ({inner}..{outer} MB/s)"
    );
    assert!(stalled > 10.0, "the reader's stalls on the disk are seen: {stalled:.1}%");
    assert!((0.0..=105.0).contains(&util), "%util is a share: {util:.1}");
    // The monitors' MB/s is the device's over the step's time; the step's
    // own is the file's bytes over the same time.
    assert!((rmb / throughput - 1.0).abs() < 0.15, "rMB/s {rmb:.1} against the step's {throughput:.1} MB/s");
    let model: Json = serde_json::from_str(&stdout(&b.run(&["report", "on", "--format", "json"]))).unwrap();
    let entry = model["cells"].as_array().unwrap().iter().find(|c| c["step"] == "cold read").unwrap();
    let headline = entry["monitors"]["headline"].as_str().unwrap();
    assert!(headline.starts_with(&format!("{dev}: %util ")), "{headline}");
    let shown: f64 =
        headline.split("rMB/s ").nth(1).and_then(|t| t.split([',', ';', ' ']).next()).unwrap().parse().unwrap();
    assert!((shown - rmb).abs() < 0.15, "the headline's rMB/s {shown} is the monitors' {rmb:.1}: {headline}");
    assert!(headline.contains("; I/O stalled "), "{headline}");
    let bound = util >= 90.0 || stalled >= 90.0;
    // (Another verdict may stand beside it: CPU-bound too, on a machine busy with other work.)
    let verdicts: Vec<&str> = headline.rsplit_once("→ ").map_or(vec![], |(_, v)| v.split(", ").collect());
    assert_eq!(verdicts.contains(&"disk-bound"), bound, "the verdict follows the figures: {headline}");
    assert!(stdout(&b.run(&["show", "on"])).contains(&format!("cold read: {dev}: %util")), "a line under show's table");
    let html = stdout(&b.run(&["report", "on", "--format", "html"]));
    assert!(html.contains("<h4>What the monitors saw</h4>") && html.contains("cold read: repetition 1 over time"));

    let out = b.run(&["run", pb.to_str().unwrap(), "-i", inv.to_str().unwrap(), "--name", "off", "-e", "every=false"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let off = s.resolve_run("off").unwrap().id;
    assert_eq!(s.cells(off).unwrap()[0].steps.as_ref().unwrap()["monitors"], Json::Null);
    assert!(s.monitor_series(off).unwrap().is_empty(), "monitors: false stores no series");
    assert!(s.monitor_samples(off).unwrap().is_empty(), "and no summary");
    let results = |r: i64| s.samples(r).unwrap().iter().map(|x| (x.step.clone(), x.metric.clone())).collect::<Vec<_>>();
    assert_eq!(results(off), results(run), "the results themselves are as with monitors");
}
