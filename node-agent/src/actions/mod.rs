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
pub(crate) mod tune;
pub(crate) mod unmount;
pub(crate) mod volume;
