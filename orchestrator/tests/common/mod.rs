//! Helpers for the end-to-end tests: the real `benchrig` binary against the
//! simulated lab that `ci/lab.sh up` builds (see ci/test.sh).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

pub fn lab_inventory() -> PathBuf {
    let inv = repo().join("inventories/simlab.yml");
    assert!(
        Path::new("/var/tmp/benchrig-lab/known_hosts").exists(),
        "the simulated lab is not up: run `ci/lab.sh up` (or ci/test.sh, which does it)"
    );
    inv
}

pub struct Bench {
    pub dir: tempfile::TempDir,
}

impl Bench {
    pub fn new() -> Self {
        Bench { dir: tempfile::tempdir().unwrap() }
    }

    pub fn db(&self) -> PathBuf {
        self.dir.path().join("results.db")
    }

    /// Run benchrig with this test's database, in this test's directory.
    pub fn run(&self, args: &[&str]) -> Output {
        let out = Command::new(env!("CARGO_BIN_EXE_benchrig"))
            .args(args)
            .env("BENCHRIG_DB", self.db())
            .current_dir(self.dir.path())
            .output()
            .expect("run benchrig");
        eprintln!(
            "$ benchrig {}\n--- exit {:?}\n--- stdout\n{}--- stderr\n{}",
            args.join(" "),
            out.status.code(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// Start benchrig in the background, in its own process group (as a
    /// terminal's foreground job would be), output captured.
    pub fn spawn(&self, args: &[&str], envs: &[(&str, &Path)]) -> std::process::Child {
        use std::os::unix::process::CommandExt;
        Command::new(env!("CARGO_BIN_EXE_benchrig"))
            .args(args)
            .env("BENCHRIG_DB", self.db())
            .envs(envs.iter().map(|(k, v)| (*k, *v)))
            .current_dir(self.dir.path())
            .process_group(0)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("start benchrig")
    }

    /// Poll the database until a cell of run `run` satisfies `pred`.
    pub fn wait_for_cell(&self, run: &str, what: &str, pred: impl Fn(&benchrig::store::CellRow) -> bool) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        loop {
            assert!(std::time::Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(std::time::Duration::from_millis(200));
            if !self.db().exists() {
                continue;
            }
            let Ok(r) = self.store().resolve_run(run) else { continue };
            if self.store().cells(r.id).unwrap().iter().any(&pred) {
                return;
            }
        }
    }

    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    pub fn store(&self) -> benchrig::store::Store {
        benchrig::store::Store::open(&self.db()).unwrap()
    }
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn sh(cmd: &str) -> String {
    let out = Command::new("sh").arg("-c").arg(cmd).output().unwrap();
    assert!(out.status.success(), "`{cmd}` failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

pub fn lab(args: &[&str]) -> String {
    sh(&format!("{} {}", repo().join("ci/lab.sh").display(), args.join(" ")))
}

/// A loop device over a fresh sparse image, detached on drop.
pub struct LoopDisk {
    pub dev: String,
    _img: tempfile::NamedTempFile,
}

impl LoopDisk {
    pub fn new(size_mb: u64) -> Self {
        let img = tempfile::Builder::new().prefix("brtest").suffix(".img").tempfile_in("/var/tmp").unwrap();
        img.as_file().set_len(size_mb << 20).unwrap();
        let dev = sh(&format!("losetup --find --show {}", img.path().display()));
        LoopDisk { dev, _img: img }
    }

    /// A loop device over a copy of this one's image: the same bytes on
    /// another device, as a disk image copied from another host would be.
    pub fn copy(&self) -> Self {
        let img = tempfile::Builder::new().prefix("brtest").suffix(".img").tempfile_in("/var/tmp").unwrap();
        sh(&format!("sync && cp --sparse=always {} {}", self._img.path().display(), img.path().display()));
        let dev = sh(&format!("losetup --find --show {}", img.path().display()));
        LoopDisk { dev, _img: img }
    }

    /// sha256 of the whole device: proof that nothing wrote to it.
    pub fn digest(&self) -> String {
        sh(&format!("sha256sum {} | cut -d' ' -f1", self.dev))
    }
}

impl Drop for LoopDisk {
    fn drop(&mut self) {
        let _ = Command::new("swapoff").arg(&self.dev).output();
        let _ = Command::new("losetup").args(["-d", &self.dev]).output();
    }
}

/// The lab inventory's connection settings for one host, with our own scratch devices.
pub fn inventory_for(host: &str, address: &str, scratch_yaml: &str) -> String {
    format!(
        "all:\n  vars:\n    ansible_user: root\n    ansible_ssh_private_key_file: /var/tmp/benchrig-lab/id_ed25519\n    \
         ansible_ssh_common_args: \"-o UserKnownHostsFile=/var/tmp/benchrig-lab/known_hosts\"\n  hosts:\n    {host}:\n      \
         ansible_host: {address}\n      scratch_devices:\n{scratch_yaml}"
    )
}
