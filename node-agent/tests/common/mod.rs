//! Helpers shared by the agent's integration tests.

/// Fail the calling test unless it runs as root. A test that needs root
/// calls this first: one that cannot run fails, saying why, and never
/// passes without having checked anything.
pub fn require_root(why: &str) {
    assert!(rustix::process::geteuid().is_root(), "this test needs root ({why}); run it as root, as ci/test.sh does");
}
