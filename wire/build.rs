//! The commit the binaries are built from, for `--version` (`benchrig`'s and
//! the agent's): `BENCHRIG_COMMIT` if the builder sets it (a release from a
//! source tarball), else `git` in the source tree, else "unknown".

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=BENCHRIG_COMMIT");
    let git = |args: &[&str]| {
        let out = Command::new("git").args(args).current_dir(env!("CARGO_MANIFEST_DIR")).output().ok()?;
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    let commit = std::env::var("BENCHRIG_COMMIT")
        .ok()
        .filter(|c| !c.is_empty())
        .or_else(|| git(&["rev-parse", "--short=12", "HEAD"]));
    println!("cargo:rustc-env=BENCHRIG_COMMIT={}", commit.as_deref().unwrap_or("unknown"));
    // The Rust target this is built for: which agent build a host runs.
    println!("cargo:rustc-env=BENCHRIG_TARGET={}", std::env::var("TARGET").unwrap_or_default());
    // Built again when HEAD moves (a commit, a checkout); not on every
    // change to the index, which would rebuild everything after a `git add`.
    if let Some(git_dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        for f in ["HEAD", "packed-refs"] {
            println!("cargo:rerun-if-changed={}", Path::new(&git_dir).join(f).display());
        }
        if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"]) {
            println!("cargo:rerun-if-changed={}", Path::new(&git_dir).join(r).display());
        }
    }
}
