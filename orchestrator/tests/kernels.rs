//! End-to-end tests of the kernel under test on the lab's kernel machine,
//! `kboot` (`ci/vm.sh up`): a guest booted by GRUB from its own disk,
//! bookworm's 6.1 its default entry, bookworm-backports' kernel beside it,
//! kexec-tools; its power cycle the qemu monitor's system_reset, its
//! console the serial log. The real binaries, the real agent, real boots
//! under TCG (about a minute each): few, and chosen. After every test the
//! guest must be back on its baseline with nothing of ours left.

mod common;

use benchrig::status::CellStatus;
use benchrig::store::CellRow;
use common::*;

const GUEST: &str = "kboot";

fn run(b: &Bench, head: &[&str], tail: &[&str]) -> std::process::Output {
    beside::GUESTS.run(b, head, tail)
}

fn on_guest(cmd: &str) -> String {
    beside::GUESTS.on(GUEST, cmd)
}

/// The guest's kernels: (its default, the other one its image has).
fn kernels() -> (String, String) {
    let running = on_guest("uname -r");
    let installed = on_guest("ls /boot | sed -n \"s/^vmlinuz-//p\"");
    let other = installed
        .lines()
        .find(|k| *k != running && !k.contains("cloud"))
        .expect("a second kernel on kboot")
        .to_string();
    (running, other)
}

/// A kernel package kboot does not have (`ci/vm.sh kernel-deb`: Debian's
/// backports cloud kernel, downloaded once into the image cache).
fn kernel_deb() -> String {
    let out = std::process::Command::new(repo().join("ci/vm.sh")).arg("kernel-deb").output().unwrap();
    assert!(out.status.success(), "ci/vm.sh kernel-deb: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// Run a playbook (its text) on kboot, `candidate` its other kernel, with
/// more `-e` pairs: the output, and the run's cells as stored.
fn run_on_kboot(
    b: &Bench,
    name: &str,
    playbook: &str,
    other: &str,
    extra: &[&str],
) -> (std::process::Output, i64, Vec<CellRow>) {
    let pb = b.write(&format!("{name}.yml"), playbook);
    let candidate = format!("candidate={other}");
    let mut tail = vec!["-l", GUEST, "-e", &candidate];
    for e in extra {
        tail.extend(["-e", e]);
    }
    let out = run(b, &["run", pb.to_str().unwrap(), "--name", name], &tail);
    let s = b.store();
    let run = s.resolve_run(name).unwrap().id;
    let cells = s.cells(run).unwrap();
    (out, run, cells)
}

/// Back on `baseline`, with no one-shot entry, no `next_entry`, no boot
/// record, no kexec image loaded and no kernel package of ours.
fn assert_back_on(baseline: &str) {
    // dpkg -l's second letter n: not installed (anything else: files or config left).
    let left = on_guest("dpkg -l 'linux-image-*cloud*' 2>/dev/null | grep '^[a-z][^n]' || true");
    assert!(left.is_empty(), "a kernel package of ours left: {left}");
    assert_eq!(on_guest("find / -xdev -name kernel-packages.json | wc -l"), "0", "a package record left");
    assert_eq!(on_guest("uname -r"), baseline, "kboot is not back on its baseline");
    assert!(!on_guest("cat /proc/cmdline").contains("benchrig.boot="), "still a boot of ours");
    let custom = on_guest("cat /boot/grub/custom.cfg 2>/dev/null || true");
    assert!(!custom.contains("benchrig"), "a one-shot entry left: {custom}");
    let env = on_guest("grub-editenv - list");
    assert!(!env.contains("next_entry=benchrig"), "a next_entry of ours left: {env}");
    assert_eq!(on_guest("find / -xdev -name boot.json -path \"*benchrig*\" | wc -l"), "0", "a boot record left");
    assert_eq!(on_guest("cat /sys/kernel/kexec_loaded"), "0", "a kexec image left loaded");
}

#[test]
#[ignore = "needs the lab's guests (ci/test.sh)"]
fn a_play_runs_on_the_other_kernel_by_kexec_and_by_one_shot_grub_and_the_guest_comes_back() {
    let (baseline, other) = kernels();
    let b = Bench::new();
    let playbook = r#"
- name: by kexec
  hosts: kernellab
  kernel: { package: "{{ deb }}", boot: kexec, cmdline: "benchrig.test=kexec" }
  benchmark:
    - name: kernel
      exec:
        command: "uname -r; cat /proc/cmdline"
        metrics: [{ name: words, unit: count, regex: "(\\d+)\\." }]
- name: by grub
  hosts: kernellab
  kernel: { release: "{{ candidate }}", boot: reboot }
  benchmark:
    - noop:
- name: not installed
  hosts: kernellab
  kernel: { release: 9.9.9-none, boot: reboot }
  benchmark:
    - noop:
- name: baseline
  hosts: kernellab
  kernel: { release: baseline }
  benchmark:
    - noop:
"#;
    let deb = kernel_deb();
    let from = format!("deb={deb}");
    let (out, run, cells) = run_on_kboot(&b, "k", playbook, &other, &[&from]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let s = b.store();
    let cell =
        |play: &str| cells.iter().find(|c| c.play == play).unwrap_or_else(|| panic!("no cell of {play}: {cells:?}"));
    let kernel = |play: &str| cell(play).info.as_ref().map(|i| i["kernel"].clone()).unwrap_or_default();
    // The package's kernel: the release its file name carries.
    let cloud = deb.rsplit('/').next().unwrap().strip_prefix("linux-image-").unwrap().split('_').next().unwrap();
    for (play, how, release) in [("by kexec", "kexec", cloud), ("by grub", "reboot", other.as_str())] {
        assert_eq!(cell(play).status, CellStatus::Ok, "{play}: {:?}", cell(play));
        let k = kernel(play);
        assert_eq!(k["release"], release, "{play}: {k}");
        assert_eq!(k["boot"], how, "{play}: {k}");
        assert_eq!(k["sha256"].as_str().unwrap().len(), 64, "{play}: {k}");
        assert!(k["cmdline"].as_str().unwrap().contains("benchrig.boot="), "{play}: {k}");
        assert!(k["boot_seconds"].as_f64().unwrap() > 1.0, "{play}: {k}");
    }
    assert!(kernel("by kexec")["cmdline"].as_str().unwrap().contains("benchrig.test=kexec"));
    let k = kernel("by kexec");
    assert!(k["package"].as_str().unwrap().starts_with(&format!("linux-image-{cloud} ")), "{k}");
    assert!(k["install_seconds"].as_f64().unwrap() > 0.0, "{k}");
    assert!(err.contains(&format!("removed kernel package linux-image-{cloud}")), "{err}");
    // What the cell measured ran on that kernel.
    let ran = s.samples(run).unwrap();
    assert!(ran.iter().any(|x| x.cell_id == cell("by kexec").id), "the kexec cell measured nothing");
    let missing = cell("not installed");
    assert_eq!(missing.status, CellStatus::Unsupported, "{missing:?}");
    assert!(missing.reason.as_deref().unwrap().contains("9.9.9-none is not installed"), "{missing:?}");
    let base = cell("baseline");
    assert_eq!(base.status, CellStatus::Ok, "{base:?}");
    assert_eq!(kernel("baseline")["release"], baseline.as_str());
    assert_eq!(kernel("baseline")["boot"], "none", "the baseline needs no boot");
    assert!(err.contains(&format!("back on kernel {baseline}")), "{err}");
    assert_back_on(&baseline);
}

#[test]
#[ignore = "needs the lab's guests (ci/test.sh)"]
fn a_one_shot_the_host_ignores_boots_the_wrong_kernel_which_is_a_boot_failure_not_a_measurement() {
    let (baseline, other) = kernels();
    // The fault: grub-reboot does nothing, so the reboot lands on the default.
    on_guest("printf \"#!/bin/sh\\nexit 0\\n\" >/usr/local/sbin/grub-reboot && chmod 755 /usr/local/sbin/grub-reboot");
    let b = Bench::new();
    let playbook = r#"
- name: ignored one-shot
  hosts: kernellab
  kernel: { release: "{{ candidate }}", boot: reboot }
  benchmark:
    - noop:
"#;
    let (out, run, cells) = run_on_kboot(&b, "ig", playbook, &other, &[]);
    on_guest("rm -f /usr/local/sbin/grub-reboot");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(6), "a kernel that did not boot exits 6: {err}");
    let s = b.store();
    assert_eq!(cells.len(), 1, "{cells:?}");
    let c = &cells[0];
    assert_eq!(c.status, CellStatus::NotBooted, "{c:?}");
    let why = c.reason.as_deref().unwrap();
    assert!(why.contains(&format!("came up on kernel {baseline} instead of {other}")), "{why}");
    assert!(s.samples(run).unwrap().is_empty(), "nothing is measured on the wrong kernel");
    let table = stdout(&b.run(&["show", "ig"]));
    assert!(table.contains("not_booted"), "{table}");
    assert_back_on(&baseline);
}

#[test]
#[ignore = "needs the lab's guests (ci/test.sh)"]
fn a_kernel_that_never_answers_is_power_cycled_back_and_its_cells_are_not_booted_with_the_console() {
    let (baseline, other) = kernels();
    let b = Bench::new();
    // The fault: a root that does not exist, so the initramfs gives up and
    // waits at its shell, up but never answering SSH.
    let playbook = r#"
- name: no root
  hosts: kernellab
  kernel: { release: "{{ candidate }}", boot: kexec, cmdline: "root=/dev/vdz" }
  benchmark:
    - noop:
"#;
    let (out, _, cells) = run_on_kboot(&b, "hang", playbook, &other, &["benchrig_boot_timeout=120"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(6), "{err}");
    assert!(err.contains("power-cycling it"), "{err}");
    assert_eq!(cells.len(), 1, "{cells:?}");
    let c = &cells[0];
    assert_eq!(c.status, CellStatus::NotBooted, "{c:?}");
    let why = c.reason.as_deref().unwrap();
    assert!(why.contains("did not come back within 120 s"), "{why}");
    // The console was kept, its worst line first.
    let k = &c.info.as_ref().unwrap()["kernel"];
    let console: Vec<&str> = k["console"].as_array().unwrap().iter().filter_map(|l| l.as_str()).collect();
    assert!(console.iter().any(|l| l.contains("/dev/vdz")), "{console:?}");
    let worst = k["panic"].as_str().unwrap_or_default();
    assert!(worst.contains("Gave up waiting for root") || worst.contains("vdz"), "{k}");
    assert!(why.contains("console:"), "{why}");
    assert_back_on(&baseline);
}

/// Whether `cmd` succeeds on the guest now (no panic when it is down).
fn guest_answers(cmd: &str) -> bool {
    let vm = repo().join("ci/vm.sh");
    std::process::Command::new(vm).args(["ssh", GUEST, cmd]).output().is_ok_and(|o| o.status.success())
}

/// Poll `what` every second until it holds, for `secs` at most.
fn until(secs: u64, what: &str, mut f: impl FnMut() -> bool) {
    let end = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while !f() {
        assert!(std::time::Instant::now() < end, "{what}: not within {secs} s");
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
}

#[test]
#[ignore = "needs the lab's guests (ci/test.sh)"]
fn a_controller_killed_during_a_boot_leaves_a_host_that_cleanup_brings_back() {
    let (baseline, other) = kernels();
    let b = Bench::new();
    let pb = b.write(
        "killed.yml",
        r#"
- name: killed
  hosts: kernellab
  kernel: { release: "{{ candidate }}", boot: kexec }
  benchmark:
    - noop:
"#,
    );
    let candidate = format!("candidate={other}");
    let mut args = vec!["run", pb.to_str().unwrap()];
    let inv = beside::GUESTS.inventories();
    args.extend(inv.iter().map(String::as_str));
    args.extend(["-l", GUEST, "-e", &candidate]);
    let running = b.spawn(&args, &[]);
    // The boot is written down before it is armed, and fired a second
    // after the agent's goodbye: the host stops answering.
    until(120, "the boot record", || guest_answers("find / -xdev -name boot.json -path \"*benchrig*\" | grep -q ."));
    until(60, "the host going down", || !guest_answers("true"));
    rustix::process::kill_process_group(
        rustix::process::Pid::from_raw(running.id() as i32).unwrap(),
        rustix::process::Signal::KILL,
    )
    .unwrap();
    let _ = running.wait_with_output();
    until(240, "the host up on the candidate", || guest_answers("grep -q benchrig.boot= /proc/cmdline"));
    assert_eq!(on_guest("uname -r"), other, "the kill left it on the candidate");
    // The killed run's lease stays until it lapses: released by hand, as
    // `cleanup` says to, then cleanup brings the host back.
    assert_eq!(stdout(&b.run(&["lab", "release", GUEST])).trim(), format!("{GUEST}: released"));
    let out = beside::GUESTS.run(&b, &["cleanup"], &["-l", GUEST]);
    let (said, err) = (stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(0), "{said}{err}");
    assert!(err.contains(&format!("back on kernel {baseline} from benchrig's boot of {other}")), "{err}");
    assert_back_on(&baseline);
}

#[test]
#[ignore = "needs the lab's guests (ci/test.sh)"]
fn a_package_that_does_not_fit_in_boot_is_undone_and_its_cells_fail_with_nothing_booted() {
    let (baseline, _) = kernels();
    // The fault: a full /boot. A copy of it on a filesystem with a few MB
    // to spare, mounted over it: the kernel's files do not fit.
    on_guest(
        "set -e; used=$(du -sm /boot | cut -f1); rm -f /var/tmp/boot.img; truncate -s $((used + 6))M /var/tmp/boot.img; \
         mkfs.ext2 -q -F /var/tmp/boot.img; mkdir -p /var/tmp/bootcopy; mount -o loop /var/tmp/boot.img /var/tmp/bootcopy; \
         cp -a /boot/. /var/tmp/bootcopy/; umount /var/tmp/bootcopy; mount -o loop /var/tmp/boot.img /boot",
    );
    struct Unmount;
    impl Drop for Unmount {
        fn drop(&mut self) {
            beside::GUESTS.on(GUEST, "umount /boot; rm -f /var/tmp/boot.img; echo done");
        }
    }
    let unmount = Unmount;
    let b = Bench::new();
    let playbook = r#"
- name: full boot
  hosts: kernellab
  kernel: { package: "{{ deb }}", boot: kexec }
  benchmark:
    - noop:
"#;
    let from = format!("deb={}", kernel_deb());
    let (out, _, cells) = run_on_kboot(&b, "full", playbook, "-", &[&from]);
    drop(unmount);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "a failed install fails its cells: {err}");
    assert_eq!(cells.len(), 1, "{cells:?}");
    let c = &cells[0];
    assert_eq!(c.status, CellStatus::Failed, "{c:?}");
    let why = c.reason.as_deref().unwrap();
    assert!(why.contains("installing linux-image-") && why.contains("dpkg --install failed"), "{why}");
    assert!(why.contains("No space left on device"), "the tool's own words: {why}");
    assert!(!err.contains("booting kernel"), "nothing was booted: {err}");
    assert_back_on(&baseline);
}

#[test]
#[ignore = "needs the lab's guests (ci/test.sh)"]
fn a_kernel_that_panics_with_a_power_command_that_fails_leaves_the_host_quarantined_for_cleanup() {
    let (baseline, other) = kernels();
    let b = Bench::new();
    // The faults: no initramfs init, so the kernel cannot mount its root
    // and panics; and a power command that fails.
    let playbook = r#"
- name: panics
  hosts: kernellab
  kernel: { release: "{{ candidate }}", boot: kexec, cmdline: "rdinit=/benchrig-none" }
  benchmark:
    - noop:
"#;
    let extra = [r#"{"benchrig_boot_timeout": 60, "benchrig_power_cycle": "echo the PDU is unreachable >&2; exit 1"}"#];
    let (out, _, cells) = run_on_kboot(&b, "panic", playbook, &other, &extra);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(4), "a host not back is unreachable: {err}");
    let said = err.lines().find(|l| l.contains("console:")).unwrap_or_default();
    assert!(said.contains("Kernel panic - not syncing"), "the panic line is said: {err}");
    assert!(err.contains("the power cycle failed") && err.contains("the PDU is unreachable"), "{err}");
    assert_eq!(cells.len(), 1, "{cells:?}");
    assert_ne!(cells[0].status, CellStatus::Ok, "{:?}", cells[0]);
    let hosts = stdout(&b.run(&["lab", "list"]));
    assert!(hosts.contains("not back on its own kernel after a kernel test"), "quarantined, saying why: {hosts}");
    // A person resets it (its default entry boots); cleanup finds the
    // record and finishes the way back; the host goes back into the lab.
    let vm = repo().join("ci/vm.sh");
    assert!(std::process::Command::new(vm).args(["power", GUEST]).status().unwrap().success());
    until(240, "the host up again", || guest_answers("true"));
    assert_eq!(on_guest("uname -r"), baseline, "a reset boots the default entry");
    let out = beside::GUESTS.run(&b, &["cleanup"], &["-l", GUEST]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{}{err}", stdout(&out));
    assert!(err.contains(&format!("back on kernel {baseline} from benchrig's boot of {other}")), "{err}");
    assert_back_on(&baseline);
    assert!(stdout(&b.run(&["lab", "unquarantine", GUEST])).contains("back in the lab"));
}

#[test]
#[ignore = "needs the lab's guests (ci/test.sh)"]
fn a_kernel_that_boots_without_sshd_is_power_cycled_back_and_its_cells_are_not_booted() {
    let (baseline, other) = kernels();
    let b = Bench::new();
    // The fault: the kernel and systemd come up, sshd never does.
    let playbook = r#"
- name: no sshd
  hosts: kernellab
  kernel: { release: "{{ candidate }}", boot: kexec, cmdline: "systemd.mask=ssh.service" }
  benchmark:
    - noop:
"#;
    let (out, _, cells) = run_on_kboot(&b, "nossh", playbook, &other, &["benchrig_boot_timeout=120"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(6), "{err}");
    assert!(err.contains("power-cycling it"), "{err}");
    let c = &cells[0];
    assert_eq!(c.status, CellStatus::NotBooted, "{c:?}");
    assert!(c.reason.as_deref().unwrap().contains("did not come back within 120 s"), "{c:?}");
    // The console shows a system that came up: its serial getty's banner.
    let k = &c.info.as_ref().unwrap()["kernel"];
    let console: Vec<&str> = k["console"].as_array().unwrap().iter().filter_map(|l| l.as_str()).collect();
    assert!(console.iter().any(|l| l.contains("login:") || l.contains("Debian GNU/Linux 12")), "{console:?}");
    assert_back_on(&baseline);
}
