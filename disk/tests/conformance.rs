//! Runs the shared conformance suite (tests/common) against every backend, bare and
//! wrapped in `Checked`; the misuse checks run on bare backends only (`Checked`
//! panics on misuse instead, see tests/checked.rs).

mod common;

use bk_disk::{Checked, Disk, SimFs, SyscallDisk, UringDisk};
use std::path::Path;

/// A scratch directory on the real file system (ext4 here, so O_DIRECT works).
/// `BK_DISK_TEST_DIR` picks another file system.
fn scratch() -> tempfile::TempDir {
    let base = std::env::var_os("BK_DISK_TEST_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    tempfile::tempdir_in(base).unwrap()
}

fn sim_seeds() -> u64 {
    std::env::var("BK_SIM_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20)
}

/// A uring disk, or None (with a printed SKIPPED notice) where io_uring is unavailable;
/// with `BK_REQUIRE_URING` set, unavailability fails the test instead.
fn uring() -> Option<UringDisk> {
    match UringDisk::new(bk_disk::DEFAULT_QUEUE_DEPTH) {
        Ok(d) => Some(d),
        Err(e) if std::env::var_os("BK_REQUIRE_URING").is_some() => {
            panic!("io_uring unavailable ({e}) but BK_REQUIRE_URING is set")
        }
        Err(e) => {
            eprintln!("SKIPPED: io_uring unavailable here ({e}); uring test not run");
            None
        }
    }
}

#[test]
fn syscall_conformance() {
    let t = scratch();
    let mut d = SyscallDisk::new();
    common::conformance(&mut d, t.path());
    common::misuse(&mut d, t.path());
    assert_eq!(d.direct_refusals(), 0, "ext4 takes O_DIRECT");
}

#[test]
fn syscall_conformance_checked() {
    let t = scratch();
    let mut d = Checked::new(SyscallDisk::new());
    common::conformance(&mut d, t.path());
}

#[test]
fn syscall_queue_bound() {
    let t = scratch();
    let mut d = SyscallDisk::with_queue_depth(4);
    common::queue_bound(&mut d, t.path(), 4);
}

#[test]
fn uring_conformance() {
    let Some(mut d) = uring() else { return };
    let t = scratch();
    common::conformance(&mut d, t.path());
    common::misuse(&mut d, t.path());
}

/// The same contract with syncs run inline (`UringDisk::set_inline_sync`, the journal's mode).
#[test]
fn uring_inline_sync_conformance() {
    let Some(mut d) = uring() else { return };
    d.set_inline_sync(true);
    let t = scratch();
    common::conformance(&mut Checked::new(d), t.path());
}

#[test]
fn uring_conformance_checked() {
    let Some(d) = uring() else { return };
    let t = scratch();
    common::conformance(&mut Checked::new(d), t.path());
}

#[test]
fn uring_queue_bound() {
    if uring().is_none() {
        return;
    }
    let t = scratch();
    let mut d = UringDisk::new(4).unwrap();
    common::queue_bound(&mut d, t.path(), 4);
}

#[test]
fn sim_conformance_many_seeds() {
    for seed in 0..sim_seeds() {
        let fs = SimFs::new(seed);
        let mut d = fs.disk();
        d.create_dir_all(Path::new("/root")).unwrap();
        common::conformance(&mut d, Path::new("/root"));
        common::misuse(&mut d, Path::new("/root"));
    }
}

#[test]
fn sim_conformance_checked() {
    for seed in 0..sim_seeds() {
        let fs = SimFs::new(seed);
        let mut d = Checked::new(fs.disk());
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
