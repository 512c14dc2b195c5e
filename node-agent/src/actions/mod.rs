//! Setup and teardown actions, one per file: what prepares a target for a
//! workload and undoes it. Measured workloads live in `workloads/`; which
//! function serves which `Action` is `dispatch`'s table.

pub(crate) mod cleanup;
pub(crate) mod drop_caches;
pub(crate) mod filesystem;
pub(crate) mod mount;
pub(crate) mod nfs_export;
pub(crate) mod ramdisk;
pub(crate) mod service;
pub(crate) mod unmount;
pub(crate) mod volume;

/// `~/x` in an inventory path means the agent user's home, as in a shell.
pub(crate) fn expand_home(path: &str) -> std::path::PathBuf {
    match (path.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => std::path::Path::new(&home).join(rest),
        _ => path.into(),
    }
}
