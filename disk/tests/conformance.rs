//! Runs the shared conformance suite (tests/common) against every backend, bare and
//! wrapped in `Checked`.

mod common;

use bk_disk::{Disk, SimFs, SyscallDisk};
use std::path::Path;

/// A scratch directory on the real file system (ext4 here, so O_DIRECT works).
fn scratch() -> tempfile::TempDir {
    let base = std::env::var_os("BK_DISK_TEST_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    tempfile::tempdir_in(base).unwrap()
}

#[test]
fn syscall_conformance() {
    let t = scratch();
    let mut d = SyscallDisk::new();
    common::conformance(&mut d, t.path());
}

#[test]
fn syscall_queue_bound() {
    let t = scratch();
    let mut d = SyscallDisk::with_queue_depth(4);
    common::queue_bound(&mut d, t.path(), 4);
}

#[test]
fn sim_conformance_many_seeds() {
    let seeds: u64 = std::env::var("BK_SIM_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    for seed in 0..seeds {
        let fs = SimFs::new(seed);
        let mut d = fs.disk();
        d.create_dir_all(Path::new("/root")).unwrap();
        common::conformance(&mut d, Path::new("/root"));
    }
}

#[test]
fn sim_queue_bound() {
    let fs = SimFs::new(1);
    let mut d = fs.disk();
    d.set_queue_depth(4);
    common::queue_bound(&mut d, Path::new("/"), 4);
}
