//! End-to-end tests on the lab's emulated old machines: Debian guests with
//! kernel 6.1 under qemu (`ci/vm.sh up`, after `ci/lab.sh up`), beside the
//! netns hosts whose 6.18 kernel has no ReiserFS, JFS or NFS, and the older
//! kernels: 5.10 (`old510`) and a 32-bit one (`old32`). The real
//! binaries, the real agent pushed over ssh, real mkfs, mounts and nfsd.
//! ci/test.sh runs them with `--ignored` once the guests are up.

mod common;

use benchrig::status::CellStatus;
use common::*;
use serde_json::Value as Json;

const GUESTS: [&str; 2] = ["old61", "old61b"];

fn run(b: &Bench, head: &[&str], tail: &[&str]) -> std::process::Output {
    beside::GUESTS.run(b, head, tail)
}

/// A command's output on a guest, over the same ssh the lab uses.
fn on_guest(guest: &str, cmd: &str) -> String {
    beside::GUESTS.on(guest, cmd)
}

#[test]
#[ignore = "needs the lab's guests (ci/test.sh)"]
fn facts_from_a_guest_show_kernel_6_1_with_reiserfs_jfs_and_nfs() {
    let b = Bench::new();
    let out = run(&b, &["facts"], &["-l", "old61:fast1", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let facts: Json = serde_json::from_str(&stdout(&out)).unwrap();
    let guest = &facts["old61"];
    assert!(guest["kernel"]["release"].as_str().unwrap().starts_with("6.1."), "{}", guest["kernel"]);
    assert_eq!(guest["arch"], "x86_64");
    assert!(guest["cpu"]["model"].as_str().unwrap_or_default().contains("QEMU"), "{}", guest["cpu"]);
    let has = |host: &Json, fs: &str| {
        ["filesystems", "module_filesystems"]
            .iter()
            .any(|k| host[k].as_array().is_some_and(|a| a.iter().any(|f| f == fs)))
    };
    for fs in ["reiserfs", "jfs", "xfs", "nfs", "nfsd"] {
        assert!(has(guest, fs), "old61 should support {fs}");
    }
    let tool = |host: &Json, name: &str| host["tools"].as_array().unwrap().iter().any(|t| t["name"] == name);
    for t in ["mkfs.reiserfs", "mkfs.jfs", "mount.nfs", "exportfs"] {
        assert!(tool(guest, t), "old61 lacks {t}");
    }
    // The netns host beside it: the 6.18 kernel, none of the old filesystems.
    let netns = &facts["fast1"];
    assert!(netns["kernel"]["release"].as_str().unwrap().starts_with("6.18"), "{}", netns["kernel"]);
    for fs in ["reiserfs", "jfs", "nfs", "nfsd"] {
        assert!(!has(netns, fs), "fast1 claims {fs}");
    }
}

#[test]
#[ignore = "needs the lab's guests (ci/test.sh)"]
fn reiserfs_and_jfs_cells_run_on_the_guest_and_are_unsupported_on_a_netns_host() {
    let b = Bench::new();
    let pb = b.write(
        "old-fs.yml",
        r#"
- name: old filesystems
  hosts: all
  matrix:
    fs: [reiserfs, jfs]
  repeat: 2
  setup:
    - filesystem: { device: "{{ scratch_devices[0].name }}", profile: "{{ fs }}" }
    - tree: { files: 60, dirs: 6, size: 4k, content: text }
  benchmark:
    - name: ls -lR
      list_tree: { cold: true }
"#,
    );
    let out = run(&b, &["run", pb.to_str().unwrap()], &["-l", "old61:fast1"]);
    assert_eq!(out.status.code(), Some(0));
    let s = b.store();
    let run = s.resolve_run("last").unwrap().id;
    let cells = s.cells(run).unwrap();
    assert_eq!(cells.len(), 4, "{cells:?}");
    let samples = s.samples(run).unwrap();
    for c in &cells {
        let fs = c.params["fs"].as_str().unwrap();
        match c.host.as_str() {
            "old61" => {
                assert_eq!(c.status, CellStatus::Ok, "{fs} on the guest: {:?}", c.reason);
                // Formatted with the profile's own mkfs, and it listed what it made.
                let info = c.info.as_ref().unwrap().as_object().unwrap();
                let setup = info.iter().find(|(k, _)| k.starts_with("setup[0]")).unwrap().1;
                assert_eq!(setup["fstype"], fs);
                let listed: Vec<_> = samples
                    .iter()
                    .filter(|x| x.cell_id == c.id && x.metric == "entries_per_s")
                    .map(|x| x.info.as_ref().unwrap()["files"].as_u64().unwrap())
                    .collect();
                assert_eq!(listed, [60, 60], "{fs}");
            }
            "fast1" => {
                assert_eq!(c.status, CellStatus::Unsupported, "{fs} on the 6.18 host");
                let why = c.reason.as_deref().unwrap_or_default();
                assert!(why.contains(&format!("no {fs} support")) && why.contains("6.18"), "{why}");
            }
            other => panic!("unexpected host {other}"),
        }
    }
}

#[test]
#[ignore = "needs the lab's guests (ci/test.sh)"]
fn ls_lr_over_kernel_nfs_in_both_directions_restarts_the_server_before_every_repetition() {
    let b = Bench::new();
    let pb = repo().join("playbooks/nfs-tree.yml");
    let nfsd_threads = |g: &str| on_guest(g, "cat /proc/fs/nfsd/threads 2>/dev/null || echo 0");
    let before: Vec<String> = GUESTS.iter().map(|g| nfsd_threads(g)).collect();
    // -v: the agents' info lines (each service restart) go to the run's log.
    let out = run(&b, &["-v", "run", pb.to_str().unwrap()], &["-l", "vm", "-e", "scale=0.05", "-e", "reps=2"]);
    assert_eq!(out.status.code(), Some(0));
    let log = stderr(&out);
    let s = b.store();
    let run = s.resolve_run("last").unwrap().id;
    let cells = s.cells(run).unwrap();
    let samples = s.samples(run).unwrap();
    let mut directions = std::collections::BTreeSet::new();
    for c in &cells {
        assert_eq!(c.status, CellStatus::Ok, "{} on {}: {:?}", c.key, c.host, c.reason);
        let (server, client) = (c.params["server"].as_str().unwrap(), c.params["client"].as_str().unwrap());
        directions.insert((server.to_string(), client.to_string()));
        let info = c.info.as_ref().unwrap().as_object().unwrap();
        let made = info.iter().find(|(k, _)| k.contains(" tree@")).unwrap().1["files"].as_u64().unwrap();
        let export = info.iter().find(|(k, _)| k.contains("export it@")).unwrap().1;
        let check = if c.params["server_check"] == "subtree" {
            "(rw,sync,no_root_squash,subtree_check)"
        } else {
            "no_subtree_check)"
        };
        assert!(export["export"].as_str().unwrap().ends_with(check), "{export}");
        // Nothing a client writes becomes a setuid program or a device on the server.
        let options = export["mount_options"].as_str().unwrap_or_default();
        assert!(options.split(',').any(|o| o == "nosuid") && options.split(',').any(|o| o == "nodev"), "{export}");
        // ls -lR on the client saw every file the server made.
        for x in samples.iter().filter(|x| x.cell_id == c.id && x.step == "ls -lR" && x.metric == "time") {
            assert_eq!(x.info.as_ref().unwrap()["files"].as_u64(), Some(made), "{}", c.key);
        }
    }
    let want: std::collections::BTreeSet<(String, String)> =
        [("old61", "old61b"), ("old61b", "old61")].iter().map(|(a, b)| (a.to_string(), b.to_string())).collect();
    assert_eq!(directions, want, "both directions");
    // One restart of the server before each repetition of each cell.
    for g in GUESTS {
        let restarts = log
            .lines()
            .filter(|l| l.contains("service nfs-server restarted") && l.contains(&format!("host=\"{g}\"")))
            .count();
        let reps: i64 = cells.iter().filter(|c| c.params["server"] == g).map(|c| c.repeat).sum();
        assert_eq!(restarts as i64, reps, "restarts of {g}'s server in the log");
    }
    // Torn down: nothing exported or mounted over NFS, and the server as
    // it was found (stopped, unless something else had started it).
    for (g, was) in GUESTS.iter().zip(&before) {
        assert_eq!(on_guest(g, "ls /etc/exports.d | grep benchrig || true"), "", "{g}");
        assert_eq!(on_guest(g, "exportfs -v"), "", "{g}");
        assert_eq!(on_guest(g, "findmnt -rn -t nfs,nfs4 || true"), "", "{g}");
        assert_eq!(&nfsd_threads(g), was, "{g}: nfsd threads");
    }
}

#[test]
#[ignore = "needs the lab's guests (ci/test.sh)"]
fn nfs_cells_with_a_netns_host_are_unsupported_with_the_reason() {
    let b = Bench::new();
    let pb = repo().join("playbooks/nfs-tree.yml");
    let out = run(&b, &["run", pb.to_str().unwrap()], &["-l", "old61:fast1", "-e", "scale=0.02", "-e", "reps=1"]);
    assert_eq!(out.status.code(), Some(0));
    let s = b.store();
    let run = s.resolve_run("last").unwrap().id;
    let cells = s.cells(run).unwrap();
    assert_eq!(cells.len(), 4);
    for c in &cells {
        assert_eq!(c.status, CellStatus::Unsupported, "{}: {:?}", c.key, c.reason);
        let why = c.reason.as_deref().unwrap_or_default();
        // fast1 can neither serve (no nfsd) nor mount (no nfs client).
        let expected = if c.params["server"] == "fast1" { "no nfsd support" } else { "no nfs support" };
        assert!(why.contains(expected), "{}: {why}", c.key);
    }
}

#[test]
#[ignore = "needs the lab's guests (ci/test.sh)"]
fn seed_000_on_the_guest_runs_the_papers_own_filesystems() {
    let b = Bench::new();
    let pb = repo().join("playbooks/acl-ea.yml");
    let profiles = r#"{"acl_profiles": ["ext2", "ext3", "reiserfs", "jfs", "xfs-256", "xfs-512"]}"#;
    let out =
        run(&b, &["run", pb.to_str().unwrap()], &["-l", "old61", "-e", "scale=0.005", "-e", "reps=1", "-e", profiles]);
    assert_eq!(out.status.code(), Some(0));
    let s = b.store();
    let run = s.resolve_run("last").unwrap().id;
    let cells = s.cells(run).unwrap();
    assert!(!cells.is_empty());
    // xfs-256 (the v4 format) is refused by 6.18 but not by 6.1: every one of the paper's set runs.
    for c in &cells {
        assert_eq!(c.status, CellStatus::Ok, "{} on {}: {:?}", c.key, c.host, c.reason);
    }
    let fs: std::collections::BTreeSet<&str> = cells.iter().map(|c| c.params["fs"].as_str().unwrap()).collect();
    assert_eq!(fs.len(), 6, "{fs:?}");
}

/// The guests with kernels older than the lab's: Debian 11's 5.10 (amd64)
/// and Debian 12's 32-bit kernel (linux-image-686 under qemu-system-i386),
/// each with one 1 GiB disk (inventories/simlab-vm.yml, group oldkernels).
#[test]
#[ignore = "needs the lab's guests (ci/test.sh)"]
fn the_quickstart_runs_unchanged_on_kernel_5_10_and_on_a_32_bit_kernel() {
    let b = Bench::new();
    let pb = repo().join("playbooks/quickstart.yml");
    let out = run(
        &b,
        &["run", pb.to_str().unwrap(), "--name", "old"],
        &["-l", "oldkernels", "-e", "size=16M", "-e", "reps=1"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let s = b.store();
    let run = s.resolve_run("old").unwrap().id;
    let cells = s.cells(run).unwrap();
    assert_eq!(cells.len(), 12, "{cells:?}");
    assert!(cells.iter().all(|c| c.status == CellStatus::Ok), "{cells:?}");
    // Every cold read reached the disk (drop_caches and the I/O counters
    // work there): its counters show the whole file read.
    for x in s.samples(run).unwrap().iter().filter(|x| x.step == "cold read" && x.metric == "throughput") {
        assert!(x.dev_read_bytes.unwrap() >= 16 << 20, "a cold read that did not reach the disk: {x:?}");
    }
    let report: Json = serde_json::from_str(&stdout(&b.run(&["report", "old", "--format", "json"]))).unwrap();
    let facts = |h: &str| report["hosts"].as_array().unwrap().iter().find(|x| x["name"] == h).unwrap()["facts"].clone();
    let (f32, f510) = (facts("old32"), facts("old510"));
    assert_eq!(f32["arch"], "i686", "a 32-bit kernel");
    // old32 is a Pentium III (qemu -cpu pentium3): no SSE2, so the i586 build.
    assert_eq!(f32["agent"]["build"], "i586-unknown-linux-musl", "{}", f32["agent"]);
    // (qemu's pentium3 has no brand string: the model name is what the
    // kernel's own table calls family 6 model 7.)
    assert!(!f32["cpu"]["model"].as_str().unwrap().is_empty(), "{}", f32["cpu"]);
    assert_eq!(f510["agent"]["build"], "x86_64-unknown-linux-musl", "{}", f510["agent"]);
    assert!(f32["kernel"]["release"].as_str().unwrap().ends_with("-686"), "{}", f32["kernel"]);
    assert!(f510["kernel"]["release"].as_str().unwrap().starts_with("5.10."), "{}", f510["kernel"]);
    for f in [&f32, &f510] {
        // 768 MiB of guest memory, less what the kernel keeps: read right
        // from a 32-bit kernel's /proc/meminfo and sysinfo too.
        let mem = f["memory"]["total_bytes"].as_u64().unwrap();
        assert!((600 << 20..=768 << 20).contains(&mem), "memory {mem} on {}", f["hostname"]);
        assert_eq!(f["cpu"]["count"], 1, "{}", f["cpu"]);
    }
}

#[test]
#[ignore = "needs the lab's guests (ci/test.sh)"]
fn old_filesystems_tune_and_monitors_on_kernel_5_10_and_on_a_32_bit_kernel() {
    let b = Bench::new();
    let pb = b.write(
        "old-kernels.yml",
        r#"
- name: old kernels
  hosts: oldkernels
  tune: { read_ahead_kb: 16 }
  matrix:
    fs: [ext2, ext3, jfs, reiserfs]
  setup:
    - filesystem: { device: vdb, profile: "{{ fs }}" }
  benchmark:
    - name: write
      seq_write: { size: 8M, bs: 64k }
    - name: cold read
      seq_read: { bs: 64k, cold: true }
    - name: read_ahead
      exec:
        command: "cat /sys/class/block/vdb/queue/read_ahead_kb"
        metrics: [{ name: read_ahead_kb, unit: KiB, regex: "(\\d+)" }]
"#,
    );
    let out = run(&b, &["run", pb.to_str().unwrap(), "--name", "oldfs"], &["-l", "oldkernels"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let s = b.store();
    let run = s.resolve_run("oldfs").unwrap().id;
    let cells = s.cells(run).unwrap();
    assert_eq!(cells.len(), 8, "{cells:?}");
    assert!(cells.iter().all(|c| c.status == CellStatus::Ok), "{cells:?}");
    let samples = s.samples(run).unwrap();
    for c in &cells {
        let ra: Vec<f64> =
            samples.iter().filter(|x| x.cell_id == c.id && x.metric == "read_ahead_kb").map(|x| x.value).collect();
        assert_eq!(ra, [16.0], "tune in effect on {} {}", c.host, c.key);
    }
    // Restored after the run.
    for g in ["old510", "old32"] {
        assert_ne!(on_guest(g, "cat /sys/class/block/vdb/queue/read_ahead_kb"), "16", "{g} kept the tuned read-ahead");
    }
    // The monitors saw the disk on both kernels.
    let show = stdout(&b.run(&["show", "oldfs"]));
    assert!(show.contains("vdb: %util"), "{show}");
}
