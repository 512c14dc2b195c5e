//! End-to-end tests on the lab's aarch64 host `arm1` (`ci/arm.sh up`, after
//! `ci/lab.sh up`): an arm64 Debian userland whose sshd, tools and the pushed
//! agent run under qemu-user, covered as `old` covers i686 in tests/lab/. The real
//! binaries, the real aarch64 agent pushed over ssh, real mkfs and mounts.
//! ci/test.sh runs them with `--ignored` once the host is up.

mod common;

use benchrig::status::{CellStatus, RunStatus};
use common::*;
use serde_json::Value as Json;

const ARM_ROOT: &str = "/var/tmp/benchrig-arm";

fn run(b: &Bench, head: &[&str], tail: &[&str]) -> std::process::Output {
    beside::ARM.run(b, head, tail)
}

/// A command's output on arm1, over the same ssh the lab uses.
fn on_arm(cmd: &str) -> String {
    beside::ARM.on("arm1", cmd)
}

fn agent_build(triple: &str) -> std::path::PathBuf {
    repo().join(format!("target/{triple}/agent/benchrig-agent"))
}

/// e_machine of an ELF file (183 = EM_AARCH64, 62 = EM_X86_64).
fn elf_machine(path: &std::path::Path) -> u16 {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(&bytes[..4], b"\x7fELF", "{} is not an ELF file", path.display());
    u16::from_le_bytes([bytes[18], bytes[19]])
}

#[test]
#[ignore = "needs the lab's aarch64 host (ci/test.sh)"]
fn facts_from_arm1_show_aarch64_the_machines_kernel_and_its_disk_and_it_runs_the_arm64_agent() {
    // The host itself, not only the agent, is aarch64: its shell's uname.
    assert_eq!(on_arm("uname -m"), "aarch64");
    let b = Bench::new();
    let out = run(&b, &["facts"], &["-l", "arm1:fast1", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let facts: Json = serde_json::from_str(&stdout(&out)).unwrap();
    let (arm, fast1) = (&facts["arm1"], &facts["fast1"]);
    assert_eq!(arm["arch"], "aarch64");
    assert_eq!(fast1["arch"], "x86_64");
    // Emulation in user space: the kernel is this machine's, the userland arm64 Debian 12.
    assert_eq!(arm["kernel"]["release"], fast1["kernel"]["release"]);
    assert!(arm["kernel"]["release"].as_str().unwrap().starts_with("6."), "{}", arm["kernel"]);
    assert_eq!(arm["distribution"]["id"], "debian");
    assert_eq!(arm["distribution"]["version_id"], "12");
    assert_eq!(arm["user"]["root"], true);

    // Deploy picked the aarch64 build by `uname -m`, and that is what runs.
    let sha = sha256_file(&agent_build("aarch64-unknown-linux-musl"));
    assert_eq!(arm["agent"]["sha256"], sha.as_str());
    assert_eq!(fast1["agent"]["sha256"], sha256_file(&agent_build("x86_64-unknown-linux-musl")).as_str());
    // The rootfs is visible from here: the pushed file is an aarch64 executable,
    // and no other build was pushed.
    let dir = std::path::Path::new(ARM_ROOT).join("rootfs/root/.cache/benchrig");
    assert_eq!(elf_machine(&dir.join(format!("benchrig-agent-{sha}"))), 183);
    let pushed: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("benchrig-agent-"))
        .collect();
    // The agent, and the stamp its verified start left beside it.
    assert_eq!(pushed.len(), 2, "{pushed:?}");
    for name in [format!("benchrig-agent-{sha}"), format!("benchrig-agent-{sha}.ok")] {
        assert!(pushed.contains(&name), "{name} not in {pushed:?}");
    }

    // Its scratch disk: the 1 GiB loop device over the run dir's image.
    let img = format!("{ARM_ROOT}/disks/d0.img");
    let disks = arm["block_devices"].as_array().unwrap();
    let d0 = disks.iter().find(|d| d["backing_file"] == img.as_str()).unwrap_or_else(|| panic!("{disks:?}"));
    assert_eq!(d0["size_bytes"], 1u64 << 30);
    assert_eq!(d0["rotational"], false);
    assert_eq!(on_arm("readlink -f /dev/lab/d0"), format!("/dev/{}", d0["name"].as_str().unwrap()));
    // The arm64 tools the quickstart needs (facts give the mkfs versions).
    let tools = arm["tools"].as_array().unwrap();
    for t in ["mkfs.ext4", "mkfs.xfs", "mkfs.btrfs", "mount", "blkid"] {
        let tool = tools.iter().find(|x| x["name"] == t).unwrap_or_else(|| panic!("arm1 lacks {t}: {tools:?}"));
        assert!(!t.starts_with("mkfs.") || tool["version"].is_string(), "{tool}");
    }
    for fs in ["ext4", "xfs", "btrfs"] {
        assert!(arm["filesystems"].as_array().unwrap().iter().any(|f| f == fs), "{fs}");
    }
}

#[test]
#[ignore = "needs the lab's aarch64 host (ci/test.sh)"]
fn quickstart_on_arm1_stores_every_sample() {
    let b = Bench::new();
    let pb = repo().join("playbooks/quickstart.yml");
    let out =
        run(&b, &["run", pb.to_str().unwrap()], &["-l", "arm1", "-e", "size=8M", "-e", "reps=2", "--name", "arm"]);
    assert_eq!(out.status.code(), Some(0));
    // The table at the end names every cell.
    let table = stdout(&out);
    for fs in ["ext4", "xfs", "btrfs"] {
        assert!(table.contains(&format!("fs={fs} bs=4k")) && table.contains(&format!("fs={fs} bs=1M")), "{table}");
    }
    let s = b.store();
    let run = s.resolve_run("arm").unwrap();
    assert_eq!(run.status, RunStatus::Ok);
    let cells = s.cells(run.id).unwrap();
    // 3 filesystems × 2 block sizes, every one ok.
    assert_eq!(cells.len(), 6, "{cells:?}");
    for c in &cells {
        assert_eq!(c.host, "arm1");
        assert_eq!(c.status, CellStatus::Ok, "{} on arm1: {:?}", c.key, c.reason);
    }
    let samples = s.samples(run.id).unwrap();
    for c in &cells {
        // 2 reps × (write + read) × (throughput + time).
        let n = samples.iter().filter(|x| x.cell_id == c.id).count();
        assert_eq!(n, 8, "cell {}", c.key);
        let info = c.info.as_ref().expect("setup recorded");
        let setup = info.as_object().unwrap().iter().find(|(k, _)| k.starts_with("setup[0]")).unwrap().1;
        assert!(setup["mkfs_command"].as_str().unwrap().starts_with("mkfs."), "{setup}");
        assert!(setup["mkfs_version"].is_string(), "{setup}");
        assert_eq!(setup["fstype"], c.params["fs"]);
    }
    // Every cold read came from the disk.
    for x in samples.iter().filter(|x| x.step == "cold read" && x.metric == "throughput") {
        assert!(x.dev_read_bytes.unwrap() >= 8 << 20, "a cold read that did not reach the disk: {x:?}");
    }
    let report: Json = serde_json::from_str(&stdout(&b.run(&["report", "arm", "--format", "json"]))).unwrap();
    assert_eq!(report["run"]["status"], "ok");
    assert_eq!(report["hosts"][0]["facts"]["arch"], "aarch64");
    // Nothing is left mounted on the host.
    assert_eq!(on_arm("grep -c benchrig/work/mnt /proc/mounts || true"), "0", "arm1 kept a mount");
}
