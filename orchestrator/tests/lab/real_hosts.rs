//! Hosts as real labs have them (ci/lab.sh's shape column): a login that is
//! not root and becomes root through sudo, a host reachable only through a
//! bastion whose home cannot run programs, a busybox userland. Each runs the
//! shipped quickstart, unchanged, on a 1 GiB disk with no `wipe`.

use crate::common::hosts::*;
use crate::common::*;
use benchrig::status::CellStatus;
use std::process::{Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

const QUICK: [&str; 4] = ["-e", "size=16M", "-e", "reps=1"];

fn real_inventory() -> String {
    lab_inventory();
    repo().join("inventories/simlab-real.yml").display().to_string()
}

fn quickstart() -> String {
    repo().join("playbooks/quickstart.yml").display().to_string()
}

/// Each cell's (host, key, status, reason) of the run named `name`.
fn cells_of(b: &Bench, name: &str) -> Vec<(String, String, CellStatus, String)> {
    let s = b.store();
    let run = s.resolve_run(name).unwrap();
    s.cells(run.id).unwrap().into_iter().map(|c| (c.host, c.key, c.status, c.reason.unwrap_or_default())).collect()
}

/// Everything of a run that is kept or shown: the database's files and
/// what benchrig printed, reported and logged.
fn kept_and_shown(b: &Bench, outs: &[&Output]) -> String {
    let mut all = String::new();
    for entry in std::fs::read_dir(b.dir.path()).unwrap().flatten() {
        if entry.file_name().to_string_lossy().starts_with("results.db") {
            all.push_str(&String::from_utf8_lossy(&std::fs::read(entry.path()).unwrap()));
        }
    }
    for o in outs {
        all.push_str(&stdout(o));
        all.push_str(&stderr(o));
    }
    for f in ["json", "html"] {
        all.push_str(&stdout(&b.run(&["report", "last", "--format", f])));
    }
    all
}

/// Watch every process's argument list and environment on this machine
/// (the lab's hosts share its process table) for `needle` until stopped;
/// what it saw.
fn watch_processes(needle: String) -> (Arc<AtomicBool>, std::thread::JoinHandle<Vec<String>>) {
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let seen = std::thread::spawn(move || {
        let mut seen = Vec::new();
        let mut looked = 0;
        while !s.load(Ordering::Relaxed) || looked == 0 {
            for p in std::fs::read_dir("/proc").unwrap().flatten() {
                for file in ["cmdline", "environ"] {
                    if let Ok(bytes) = std::fs::read(p.path().join(file)) {
                        if String::from_utf8_lossy(&bytes).contains(&needle) {
                            seen.push(format!("{}/{file}", p.path().display()));
                        }
                    }
                }
            }
            looked += 1;
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert!(looked > 5, "the process table was looked at only {looked} times");
        seen
    });
    (stop, seen)
}

/// benchrig with `stdin` as its standard input (not a terminal).
fn run_with_stdin(b: &Bench, args: &[&str], stdin: &str) -> Output {
    use std::io::Write;
    let mut child =
        b.command(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    transcript(args, &out);
    out
}

#[test]
#[ignore = "needs the simulated lab (ci/test.sh)"]
fn a_login_that_is_not_root_becomes_root_through_sudo_with_or_without_a_password() {
    let _lab = uses(&[Users]);
    let b = Bench::new();
    let (inv, pb) = (real_inventory(), quickstart());
    let password = std::fs::read_to_string("/var/tmp/benchrig-lab/become-password").unwrap().trim().to_string();

    // --ask-become-pass with no terminal reads a line of stdin; brlab-nopw's
    // sudo asks for none. The password is in no process's arguments or
    // environment, here or on the host, while the run goes on.
    let (stop, seen) = watch_processes(password.clone());
    let mut args = vec!["run", &pb, "-i", &inv, "-l", "users-nopw:users-pw", "-K", "--name", "sudo"];
    args.extend(QUICK);
    let out = run_with_stdin(&b, &args, &format!("{password}\n"));
    stop.store(true, Ordering::Relaxed);
    assert_eq!(seen.join().unwrap(), Vec::<String>::new(), "the password showed in a process");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let cells = cells_of(&b, "sudo");
    assert_eq!(cells.len(), 12);
    assert!(cells.iter().all(|c| c.2 == CellStatus::Ok), "{cells:?}");
    // The agents ran as root, from root's own copy on the host (the
    // users host's /root is the lab's hosts/users/home).
    let report: serde_json::Value =
        serde_json::from_str(&stdout(&b.run(&["report", "sudo", "--format", "json"]))).unwrap();
    for h in report["hosts"].as_array().unwrap() {
        assert_eq!(h["facts"]["user"]["name"], "root", "{h}");
    }
    assert!(
        sh("ls /var/tmp/benchrig-lab/hosts/users/home/.cache/benchrig").contains("benchrig-agent-"),
        "root's agent dir"
    );

    // The password as a variable (here -e, which is stored with the run for
    // --resume): the run is ok and the password is not stored.
    let pw_var = format!("ansible_become_password={password}");
    let mut args = vec!["run", &pb, "-i", &inv, "-l", "users-pw", "-e", &pw_var, "--name", "var"];
    args.extend(QUICK);
    let by_var = b.run(&args);
    assert_eq!(by_var.status.code(), Some(0), "{}", stderr(&by_var));

    // A wrong one: the host is unreachable, said in one line naming it.
    let wrong = "not-the-password-7781";
    let wrong_var = format!("ansible_become_password={wrong}");
    let refused = b.run(&["run", &pb, "-i", &inv, "-l", "users-pw", "-e", &wrong_var, "--name", "wrong"]);
    assert_eq!(refused.status.code(), Some(benchrig::exit_code::UNREACHABLE));
    let err = stderr(&refused);
    assert!(err.contains("[users-pw]") && err.contains("sudo refused the become password"), "{err}");
    assert!(cells_of(&b, "wrong").iter().all(|c| c.2 == CellStatus::Unreachable));
    // None at all, where sudo asks for one: says how to give it.
    let none = b.run(&["run", &pb, "-i", &inv, "-l", "users-pw", "--name", "none"]);
    assert_eq!(none.status.code(), Some(benchrig::exit_code::UNREACHABLE));
    assert!(
        stderr(&none).contains("sudo asks for a password: set ansible_become_password or run with --ask-become-pass")
    );
    let everything = kept_and_shown(&b, &[&out, &by_var, &refused, &none]);
    assert!(!everything.contains(&password), "the password was kept or shown");
    assert!(!everything.contains(wrong), "the wrong password was kept or shown");

    // su is refused before any host is touched, naming the option.
    let su = b.run(&["run", &pb, "-i", &inv, "-l", "users-pw", "-e", "ansible_become_method=su", "--name", "su"]);
    assert_eq!(su.status.code(), Some(benchrig::exit_code::USAGE));
    assert!(stderr(&su).contains("host `users-pw`: ansible_become_method `su` is not supported"), "{}", stderr(&su));
    assert!(b.store().resolve_run("su").is_err(), "a refused plan makes no run");
}

#[test]
#[ignore = "needs the simulated lab (ci/test.sh)"]
fn a_host_behind_a_bastion_is_reached_by_proxyjump_and_by_an_ssh_config_alias_and_steps_around_its_noexec_home() {
    use std::os::unix::process::CommandExt;
    let _lab = uses(&[Jump, Behind]);
    lab_inventory();
    let inv = repo().join("inventories/simlab-bastion.yml").display().to_string();
    let pb = quickstart();
    // Only the bastion reaches it.
    let direct = "timeout 10 ssh -F /dev/null -i /var/tmp/benchrig-lab/id_ed25519 -o UserKnownHostsFile=/var/tmp/benchrig-lab/known_hosts \
                  -o BatchMode=yes -o ConnectTimeout=3 root@10.77.1.2 true 2>/dev/null && echo reached || echo not reached";
    assert_eq!(sh(direct), "not reached");
    // Its home cannot run programs; no agent there or in the fallback yet.
    assert!(lab(&["ssh", "behind", "'grep \" /root \" /proc/mounts'"]).contains("noexec"));
    lab(&["ssh", "behind", "rm -rf /root/.cache/benchrig /var/tmp/benchrig-0"]);

    // benchrig as the lab's operator, whose ~/.ssh the ProxyJump and the
    // alias read (`ssh` looks the user's home up, not $HOME).
    let b = Bench::new();
    let op = |args: &[&str]| {
        let (uid, gid) = (sh("id -u brlab-op").parse().unwrap(), sh("id -g brlab-op").parse().unwrap());
        std::os::unix::fs::chown(b.dir.path(), Some(uid), Some(gid)).unwrap();
        let out = b
            .command(args)
            .uid(uid)
            .gid(gid)
            .env("HOME", sh("getent passwd brlab-op | cut -d: -f6"))
            .env("USER", "brlab-op")
            .output()
            .unwrap();
        transcript(args, &out);
        out
    };
    let mut args = vec!["run", &pb, "-i", &inv, "--name", "bastion"];
    args.extend(QUICK);
    let out = op(&args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let cells = cells_of(&b, "bastion");
    assert_eq!(cells.len(), 12);
    assert!(cells.iter().all(|c| c.2 == CellStatus::Ok), "{cells:?}");
    let err = stderr(&out);
    let said: Vec<&str> = err.lines().filter(|l| l.contains("mounted noexec")).collect();
    assert!(!said.is_empty() && said.len() <= 2, "one line per host session that found it: {err}");
    assert!(said[0].contains("the agent runs from /var/tmp/benchrig-0 instead (benchrig_remote_dir chooses)"), "{err}");
    assert!(lab(&["ssh", "behind", "ls /var/tmp/benchrig-0"]).contains("benchrig-agent-"));
    // The next run finds the agent where it went, and says nothing.
    let again = op(&["run", &pb, "-i", &inv, "-l", "behind", "-e", "size=8M", "-e", "reps=1"]);
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    assert!(!stderr(&again).contains("noexec"), "{}", stderr(&again));
    assert!(stdout(&again).contains("agent already there") || stderr(&again).contains("agent already there"));

    // A benchrig_remote_dir that cannot run programs either: said, no fallback.
    let named =
        op(&["run", &pb, "-i", &inv, "-l", "behind", "-e", "benchrig_remote_dir=/root/agents", "--name", "named"]);
    assert_eq!(named.status.code(), Some(benchrig::exit_code::CELL_FAILED), "{}", stderr(&named));
    let err = stderr(&named);
    assert!(
        err.contains(
            "/root/agents is on a filesystem mounted noexec, where the agent cannot run; benchrig_remote_dir must name"
        ),
        "{err}"
    );
}

#[test]
#[ignore = "needs the simulated lab (ci/test.sh)"]
fn a_busybox_host_runs_the_quickstart_with_the_mkfs_it_has() {
    let _lab = uses(&[Tiny]);
    let b = Bench::new();
    let inv = real_inventory();
    // What the host is: busybox's sh, and no bash, coreutils, python, xfs or btrfs tools.
    assert_eq!(lab(&["ssh", "tiny", "readlink /bin/sh"]), "/bin/busybox");
    let has = lab(&["ssh", "tiny", "'for t in bash python3 mkfs.xfs mkfs.btrfs; do command -v $t || echo no-$t; done; readlink /bin/ls; readlink /bin/stat'"]);
    assert_eq!(
        has, "no-bash\nno-python3\nno-mkfs.xfs\nno-mkfs.btrfs\n/bin/busybox\n/bin/busybox",
        "coreutils are busybox applets"
    );
    // A build an older benchrig uploaded in 2000 and nobody started since.
    let old = format!("benchrig-agent-{}", "f".repeat(64));
    let plant = format!(
        "'mkdir -p /root/.cache/benchrig && cd /root/.cache/benchrig && for f in {old} {old}.ok; do echo x > $f && touch -d \"2000-01-01 00:00:00\" $f; done && ls'"
    );
    assert!(lab(&["ssh", "tiny", &plant]).contains(&format!("{old}.ok")));
    let pb = quickstart();
    let mut args = vec!["run", &pb, "-i", &inv, "-l", "tiny", "--name", "tiny"];
    args.extend(QUICK);
    let out = b.run(&args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let builds = lab(&["ssh", "tiny", "'ls /root/.cache/benchrig'"]);
    assert!(!builds.contains(&old), "the unused build stays: {builds}");
    assert!(builds.contains("benchrig-agent-"), "the running build went: {builds}");
    let cells = cells_of(&b, "tiny");
    assert_eq!(cells.len(), 6);
    for (_, key, status, reason) in &cells {
        let fs = key.split("fs=").nth(1).and_then(|k| k.split(' ').next()).unwrap();
        match fs {
            "ext4" => assert_eq!(*status, CellStatus::Ok, "{key}: {reason}"),
            _ => {
                assert_eq!(*status, CellStatus::Unsupported, "{key}");
                let package = if fs == "xfs" { "xfsprogs" } else { "btrfs-progs" };
                assert_eq!(reason, &format!("mkfs.{fs} is not installed on tiny (Debian package {package})"), "{key}");
            }
        }
    }
    // busybox's `[ -nt ]` keeps the agent's check from being redone: the
    // start that verified it left its stamp.
    assert!(lab(&["ssh", "tiny", "'ls /root/.cache/benchrig'"]).contains(".ok"), "no stamp beside the agent");

    // Host keys unchecked and forgotten, as many inventories have it: ssh's
    // own "Permanently added …" goes to its log, not into the agent's stderr.
    let direct = sh("ssh -F /dev/null -i /var/tmp/benchrig-lab/id_ed25519 -o StrictHostKeyChecking=no \
                     -o UserKnownHostsFile=/dev/null -o BatchMode=yes root@10.77.0.33 true 2>&1");
    assert!(direct.contains("Permanently added"), "ssh itself says it here: {direct}");
    let unchecked = b.write(
        "unchecked.yml",
        &std::fs::read_to_string(&inv).unwrap().replace(
            "ansible_ssh_common_args: \"-o UserKnownHostsFile=/var/tmp/benchrig-lab/known_hosts\"",
            "ansible_ssh_common_args: \"-o UserKnownHostsFile=/dev/null\"\n    ansible_host_key_checking: false",
        ),
    );
    assert!(std::fs::read_to_string(&unchecked).unwrap().contains("host_key_checking: false"));
    let out = b.run(&["facts", "-i", unchecked.to_str().unwrap(), "-l", "tiny"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!stderr(&out).contains("Permanently added"), "{}", stderr(&out));
}

/// `/dev/disk/by-*` names for a loop disk's parts (this machine has no
/// udev, so the test makes the links; the lab's hosts share its /dev),
/// removed on drop.
struct DiskLinks(Vec<std::path::PathBuf>);

impl DiskLinks {
    fn link(&mut self, kind: &str, name: &str, target: &str) -> String {
        let dir = std::path::Path::new("/dev/disk").join(kind);
        std::fs::create_dir_all(&dir).unwrap();
        let link = dir.join(name);
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(format!("../../{}", target.trim_start_matches("/dev/")), &link).unwrap();
        self.0.push(link.clone());
        link.display().to_string()
    }
}

impl Drop for DiskLinks {
    fn drop(&mut self) {
        for l in &self.0 {
            let _ = std::fs::remove_file(l);
        }
        for kind in ["by-id", "by-partuuid", "by-label", "by-uuid"] {
            let _ = std::fs::remove_dir(std::path::Path::new("/dev/disk").join(kind));
        }
        let _ = std::fs::remove_dir("/dev/disk");
    }
}

#[test]
#[ignore = "needs the simulated lab (ci/test.sh)"]
fn a_partition_named_by_partuuid_is_used_while_its_sibling_is_mounted_and_the_whole_disk_by_id_is_refused() {
    let _lab = uses(&[Fast2]);
    let b = Bench::new();
    lab_inventory();
    // A 1 GiB disk: a GPT with a 200 MiB partition, mounted on the host, and
    // a 600 MiB one for benchrig.
    let disk = LoopDisk::new(1024);
    // The kernel may scan the new table itself (a loop device set up with
    // partscan) or not; partx adds what it did not.
    sh(&format!(
        "printf 'label: gpt\\nsize=200MiB\\nsize=600MiB\\n' | sfdisk -q --no-reread {0} && \
         {{ partx -a {0} 2>/dev/null; test -b {0}p2; }}",
        disk.dev
    ));
    let (p1, p2) = (format!("{}p1", disk.dev), format!("{}p2", disk.dev));
    sh(&format!("mkfs.ext4 -q {p1}"));
    let partuuid = sh(&format!("blkid -p -o value -s PART_ENTRY_UUID {p2}"));
    let mut links = DiskLinks(vec![]);
    let by_partuuid = links.link("by-partuuid", &partuuid, &p2);
    let by_id = links.link("by-id", &format!("brlab-test-{}", std::process::id()), &disk.dev);
    lab(&["ssh", "fast2", &format!("'mkdir -p /mnt/sibling && mount -o ro {p1} /mnt/sibling'")]);
    let held = || lab(&["ssh", "fast2", "'grep -c /mnt/sibling /proc/mounts || true'"]);
    let unmount = scopeguard(|| {
        let _ = lab(&["ssh", "fast2", "'umount /mnt/sibling; true'"]);
    });
    let scratch =
        format!("        - {{ path: {by_partuuid}, name: part }}\n        - {{ path: {by_id}, name: whole }}\n");
    let inv = b.write("inv.yml", &inventory_for("fast2", "10.77.0.13", &scratch));
    let pb = quickstart();
    let mut args = vec!["run", &pb, "-i", inv.to_str().unwrap(), "--name", "part"];
    args.extend(QUICK);
    let out = b.run(&args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let cells = cells_of(&b, "part");
    assert!(cells.len() == 6 && cells.iter().all(|c| c.2 == CellStatus::Ok), "{cells:?}");
    // The link was resolved once, to the partition, and that is what mkfs got.
    let report: serde_json::Value =
        serde_json::from_str(&stdout(&b.run(&["report", "part", "--format", "json"]))).unwrap();
    let text = report.to_string();
    assert!(text.contains(&format!("\"device\":\"{p2}\"")), "the setup names {p2}: {text}");
    assert_eq!(held(), "1", "the sibling stays mounted");

    // The whole disk, by id: refused, its mounted partition named.
    let whole = b.write(
        "whole.yml",
        "- hosts: all\n  setup:\n    - filesystem: {device: whole, profile: ext4}\n  benchmark:\n    - noop:\n  teardown:\n    - unmount:\n",
    );
    let refused = b.run(&["run", whole.to_str().unwrap(), "-i", inv.to_str().unwrap(), "--name", "whole"]);
    assert_eq!(refused.status.code(), Some(benchrig::exit_code::CELL_FAILED));
    let cells = cells_of(&b, "whole");
    assert!(cells[0].3.contains("refused by rule `mounted`") && cells[0].3.contains(&p1), "{cells:?}");
    assert_eq!(sh(&format!("blkid -p -o value -s TYPE {p1}")), "ext4", "the mounted partition is untouched");
    drop(unmount);
}

#[test]
#[ignore = "needs the simulated lab (ci/test.sh)"]
fn a_disk_named_by_label_or_uuid_keeps_its_name_through_every_format_and_a_stale_link_is_refused() {
    let _lab = uses(&[Fast2]);
    let b = Bench::new();
    lab_inventory();
    // As an admin leaves them: one disk labelled, one known by its xfs's UUID.
    let (labelled, known) = (LoopDisk::new(1024), LoopDisk::new(1024));
    sh(&format!("mkfs.ext4 -q -L br-scratch {} && mkfs.xfs -q {}", labelled.dev, known.dev));
    let probe = |dev: &str, tag: &str| sh(&format!("blkid -p -o value -s {tag} {dev}"));
    let uuid = probe(&known.dev, "UUID");
    let mut links = DiskLinks(vec![]);
    let by_label = links.link("by-label", "br-scratch", &labelled.dev);
    let by_uuid = links.link("by-uuid", &uuid, &known.dev);
    // A link udev has not caught up with: no device carries this label.
    let stale = links.link("by-label", "br-stale", &known.dev);
    let pb = quickstart();
    let run = |name: &str, entry: &str, extra: &[&str]| {
        let scratch = format!("        - {{ {entry} }}\n");
        let inv = b.write(&format!("{name}.yml"), &inventory_for("fast2", "10.77.0.13", &scratch));
        let mut args = vec!["run", &pb, "-i", inv.to_str().unwrap(), "--name", name];
        args.extend(QUICK);
        args.extend(extra);
        let out = b.run(&args);
        (cells_of(&b, name), stderr(&out))
    };
    let all = |cells: &[(String, String, CellStatus, String)], status: CellStatus, reason: &str| {
        !cells.is_empty() && cells.iter().all(|c| c.2 == status && c.3.contains(reason))
    };

    // Without `wipe`, the admin's filesystem is theirs: refused, untouched.
    let (cells, err) = run("careful", &format!("path: {by_label}, name: lab"), &[]);
    assert!(all(&cells, CellStatus::Failed, "did not make on this device"), "{cells:?}\n{err}");
    assert_eq!((probe(&labelled.dev, "TYPE"), probe(&labelled.dev, "LABEL")), ("ext4".into(), "br-scratch".into()));

    // With it: every cell, and each format gave the new filesystem the label.
    let (cells, err) = run("wiped", &format!("path: {by_label}, name: lab, wipe: true"), &[]);
    assert!(cells.len() == 6 && all(&cells, CellStatus::Ok, ""), "{cells:?}\n{err}");
    assert_eq!(probe(&labelled.dev, "LABEL"), "br-scratch");
    let report = stdout(&b.run(&["report", "wiped", "--format", "json"]));
    assert!(report.contains("mkfs_command") && !report.contains("-L br-scratch"), "a name is not configuration");

    // The next night, careful again: the name still leads there, and the ledger knows the filesystem.
    let xfs = ["-e", r#"{"benchrig_profiles": ["xfs"]}"#];
    let (cells, err) = run("again", &format!("path: {by_label}, name: lab"), &xfs);
    assert!(cells.len() == 2 && all(&cells, CellStatus::Ok, ""), "{cells:?}\n{err}");

    // By UUID: kept where mkfs takes one; btrfs refuses to reuse it, and says so.
    let two = ["-e", r#"{"benchrig_profiles": ["ext4", "btrfs"]}"#];
    let (cells, err) = run("uuid", &format!("path: {by_uuid}, name: uid, wipe: true"), &two);
    let (ext4, btrfs): (Vec<_>, Vec<_>) = cells.iter().cloned().partition(|c| c.1.contains("ext4"));
    assert!(ext4.len() == 2 && all(&ext4, CellStatus::Ok, ""), "{cells:?}\n{err}");
    assert!(all(&btrfs, CellStatus::Unsupported, "non-unique UUID"), "{cells:?}");
    assert_eq!((probe(&known.dev, "TYPE"), probe(&known.dev, "UUID")), ("ext4".into(), uuid.clone()));

    // A stale link: refused by its own rule, even with `wipe`, and nothing written.
    let (cells, err) = run("stale", &format!("path: {stale}, name: old, wipe: true"), &two);
    assert!(all(&cells, CellStatus::Failed, "refused by rule `stale_link`"), "{cells:?}\n{err}");
    assert!(cells[0].3.contains("label `br-stale`"), "{cells:?}");
    assert_eq!((probe(&known.dev, "TYPE"), probe(&known.dev, "UUID")), ("ext4".into(), uuid));
}
