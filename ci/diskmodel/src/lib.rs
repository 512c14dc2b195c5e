//! benchrig-diskmodel: the simulated lab's model disks. A FUSE filesystem
//! serving one disk image as the file `disk`, each request delayed by a
//! mechanical model of an HDD (seek, rotation, zoned transfer, read-ahead,
//! queue of one) or by an SSD's latency and channels. The lab puts its loop
//! device on top of that file. ARCHITECTURE.md says why it is hand-written.

pub mod backing;
pub mod fs;
pub mod model;
pub mod wake;
