//! Helpers shared by the agent's integration tests.

/// Fail the calling test unless it runs as root. A test that needs root
/// calls this first: one that cannot run fails, saying why, and never
/// passes without having checked anything.
pub fn require_root(why: &str) {
    assert!(rustix::process::geteuid().is_root(), "this test needs root ({why}); run it as root, as ci/test.sh does");
}

/// A loop device over a sparse file under /var/tmp, detached on drop.
#[allow(dead_code)] // not every test binary attaches one
pub struct Loop {
    pub dev: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

#[allow(dead_code)]
impl Loop {
    pub fn new(mib: u64) -> Loop {
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let img = dir.path().join("disk.img");
        std::fs::File::create(&img).unwrap().set_len(mib << 20).unwrap();
        let out = std::process::Command::new("losetup").args(["--find", "--show"]).arg(&img).output().unwrap();
        assert!(out.status.success(), "losetup: {}", String::from_utf8_lossy(&out.stderr));
        Loop { dev: std::path::PathBuf::from(String::from_utf8(out.stdout).unwrap().trim()), _dir: dir }
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = std::process::Command::new("losetup").arg("-d").arg(&self.dev).status();
    }
}
