//! A lab is shared (issue 26): what another user of a host can do to the
//! agent benchrig runs as root, or to the ledger that lets it format
//! without `wipe`. Each test plants what such a user could and checks that
//! benchrig is not fooled; each failed on the main before its fix.

use crate::common::hosts::*;
use crate::common::*;
use benchrig::status::CellStatus;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The users host's /root (its own mount namespace binds it there), where
/// the agent that sudo runs as root lives.
const ROOTS_AGENTS: &str = "/var/tmp/benchrig-lab/hosts/users/home/.cache/benchrig";
/// The login brlab-nopw's own agent dir (where main kept the agent sudo ran).
const LOGINS_AGENTS: &str = "/home/brlab-nopw/.cache/benchrig";
/// What a planted wrapper leaves when it runs: the uid it ran as.
const PWNED: &str = "/var/tmp/benchrig-lab/pwned";

/// The agent binaries in `dir` (`benchrig-agent-<sha256>`; not the stamps
/// their checks leave beside them, `<agent>.ok`).
fn agents_in(dir: &str) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return vec![] };
    entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            name.strip_prefix("benchrig-agent-").is_some_and(|sha| sha.len() == 64 && !sha.contains('.'))
        })
        .collect()
}

fn facts(b: &Bench) -> std::process::Output {
    let inv = repo().join("inventories/simlab-real.yml");
    lab_inventory();
    b.run(&["facts", "-i", inv.to_str().unwrap(), "-l", "users-nopw"])
}

#[test]
#[ignore = "needs the simulated lab (ci/test.sh)"]
fn the_agent_sudo_runs_is_roots_own_copy_checked_on_the_host_and_a_planted_wrapper_or_an_open_dir_is_never_run() {
    let _lab = uses(&[Users]);
    let b = Bench::new();
    let first = facts(&b);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));

    // Someone who can write where the agent lies puts a wrapper under its
    // name: it runs a payload, then the real agent, whose handshake (its
    // own report of its sha256) then passes.
    let agents: Vec<PathBuf> = [LOGINS_AGENTS, ROOTS_AGENTS].iter().flat_map(|d| agents_in(d)).collect();
    assert!(!agents.is_empty(), "the first session left no agent to replace");
    let mut real = Vec::new();
    for a in &agents {
        let keep =
            Path::new("/var/tmp/benchrig-lab").join(format!("real-{}", a.file_name().unwrap().to_string_lossy()));
        std::fs::copy(a, &keep).unwrap();
        // write(2) over it keeps its owner and mode.
        std::fs::write(a, format!("#!/bin/sh\nid -u > {PWNED}\nexec {} \"$@\"\n", keep.display())).unwrap();
        real.push(keep);
    }
    let _ = std::fs::remove_file(PWNED);
    let again = facts(&b);
    let ran = std::fs::read_to_string(PWNED).ok();
    let _ = std::fs::remove_file(PWNED);
    real.iter().for_each(|k| std::fs::remove_file(k).unwrap());
    assert_eq!(ran, None, "a planted wrapper ran (as uid {ran:?})");
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));

    // What ran is root's own copy, in root's own dir, and is what benchrig built.
    let sha = sha256_file(&repo().join("target/x86_64-unknown-linux-musl/agent/benchrig-agent"));
    let copy = Path::new(ROOTS_AGENTS).join(format!("benchrig-agent-{sha}"));
    for p in [Path::new(ROOTS_AGENTS), copy.as_path()] {
        let m = std::fs::symlink_metadata(p).unwrap();
        assert_eq!((m.uid(), m.mode() & 0o077), (0, 0), "{} is root's alone", p.display());
    }
    assert_eq!(sha256_file(&copy), sha);

    // A dir others may write: refused, naming it and why; nothing runs from it.
    std::fs::set_permissions(ROOTS_AGENTS, std::fs::Permissions::from_mode(0o757)).unwrap();
    let open = facts(&b);
    std::fs::set_permissions(ROOTS_AGENTS, std::fs::Permissions::from_mode(0o700)).unwrap();
    assert_ne!(open.status.code(), Some(0));
    let err = stderr(&open);
    assert!(
        err.contains(&format!(
            "{} is writable by group or others: another user could replace the agent",
            "/root/.cache/benchrig"
        )),
        "{err}"
    );
    assert_eq!(facts(&b).status.code(), Some(0));
}

/// The users host's ssd-like loop disk for brlab-nopw, no `wipe`.
fn inventory_as_login(dev: &str) -> String {
    format!(
        "all:\n  vars:\n    ansible_ssh_private_key_file: /var/tmp/benchrig-lab/id_ed25519\n    \
         ansible_ssh_common_args: \"-o UserKnownHostsFile=/var/tmp/benchrig-lab/known_hosts\"\n  hosts:\n    users-nopw:\n      \
         ansible_host: 10.77.0.31\n      ansible_user: brlab-nopw\n      ansible_become: true\n      scratch_devices:\n        \
         - {{ path: {dev}, name: d0 }}\n"
    )
}

#[test]
#[ignore = "needs the simulated lab (ci/test.sh)"]
fn a_ledger_a_sudo_login_could_write_vouches_for_nothing_and_its_forged_entry_formats_nothing() {
    // The lab's hosts share this machine's /var/lib, so every root agent
    // of every test reads the ledger this test makes the login's.
    let _lab = alone("makes the machine's /var/lib/benchrig, every lab host's ledger dir, a login's");
    const DIR: &str = "/var/lib/benchrig";
    let saved = std::fs::read(format!("{DIR}/formatted.json")).ok();
    let _restore = scopeguard(move || {
        let _ = std::fs::remove_file(format!("{DIR}/f.new"));
        let _ = std::process::Command::new("chown").args(["-R", "root:root", DIR]).status();
        let _ = std::fs::set_permissions(DIR, std::fs::Permissions::from_mode(0o755));
        match &saved {
            Some(text) => {
                let _ = std::fs::remove_file(format!("{DIR}/formatted.json"));
                let _ = std::fs::write(format!("{DIR}/formatted.json"), text);
            }
            None => {
                let _ = std::fs::remove_file(format!("{DIR}/formatted.json"));
            }
        }
    });
    let b = Bench::new();
    lab_inventory();
    let disk = LoopDisk::new(1024);
    let inv = b.write("inv.yml", &inventory_as_login(&disk.dev));
    let pb = repo().join("playbooks/quickstart.yml");
    let run = |name: &str| {
        let out = b.run(&[
            "run",
            pb.to_str().unwrap(),
            "-i",
            inv.to_str().unwrap(),
            "-e",
            "size=16M",
            "-e",
            "reps=1",
            "--name",
            name,
        ]);
        let s = b.store();
        let cells = s.cells(s.resolve_run(name).unwrap().id).unwrap();
        (out, cells)
    };
    // A blank disk: benchrig formats it and records each filesystem it made.
    let (out, cells) = run("blank");
    assert!(cells.iter().all(|c| c.status == CellStatus::Ok), "{cells:?}\n{}", stderr(&out));
    let recorded = sh(&format!("blkid -p -s UUID -o value {}", disk.dev));
    assert!(sh(&format!("cat {DIR}/formatted.json")).contains(&recorded));

    // The login is given the dir (as the old example's benchrig_remote_dir
    // needed), someone's data lands on the disk, and the login vouches for
    // it in root's ledger.
    sh(&format!("chown brlab-nopw {DIR}"));
    sh(&format!("mkfs.ext4 -q -F -L someones-data {}", disk.dev));
    let theirs = sh(&format!("blkid -p -s UUID -o value {}", disk.dev));
    // (The file is 0600 now; its entry's key, the device's identity, is
    // what sysfs shows anyone. Here root reads it for the login.)
    sh(&format!(
        "sed s/{recorded}/{theirs}/ {DIR}/formatted.json | runuser -u brlab-nopw -- sh -c 'rm -f {DIR}/f.new && cat > {DIR}/f.new && mv -f {DIR}/f.new {DIR}/formatted.json'"
    ));
    assert!(sh(&format!("cat {DIR}/formatted.json")).contains(&theirs), "the forgery took");
    let before = disk.digest();
    let (out, cells) = run("forged");
    assert_eq!(disk.digest(), before, "the forged entry let benchrig format someone's data");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    for c in &cells {
        let why = c.reason.clone().unwrap_or_default();
        assert_eq!(c.status, CellStatus::Failed, "{why}");
        assert!(why.contains("refused by rule `signature`"), "{why}");
        assert!(
            why.contains(&format!("the format ledger {DIR}/formatted.json is not trusted: {DIR} is owned by uid")),
            "{why}"
        );
    }
    // Given back to root, the file the login wrote is still the login's: refused too.
    sh(&format!("chown root {DIR}"));
    let (_, cells) = run("file");
    assert_eq!(disk.digest(), before);
    assert!(cells.iter().all(|c| c.reason.as_deref().unwrap_or_default().contains("it is owned by uid")), "{cells:?}");
}
