//! The pool of free (recycled) segments a checkpoint leaves: a fixed pool keeps
//! `free_segments_max` files and retires the rest; a pool that follows checkpoints
//! (`free_segments_follow_checkpoints`) keeps as many as the latest checkpoint freed,
//! so the next interval writes into recycled files, and does not grow when a lighter
//! interval left files unused. Counted on the simulated disk's durable directory.

mod common;

use bk_disk::SimFs;
use bk_journal::{Journal, JournalConfig, Record};
use bytes::Bytes;
use common::*;
use std::path::Path;

/// Durable files in `dir` whose names satisfy `pred`.
fn count(fs: &SimFs, dir: &Path, pred: impl Fn(&str) -> bool) -> usize {
    fs.durable_list_dir(dir)
        .unwrap()
        .iter()
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(&pred))
        .count()
}

fn free_segments(fs: &SimFs, dir: &Path) -> usize {
    count(fs, dir, |n| n.starts_with("free-") && n.ends_with(".jseg"))
}

fn live_segments(fs: &SimFs, dir: &Path) -> usize {
    count(fs, dir, |n| !n.starts_with("free-") && n.ends_with(".jseg"))
}

/// Asserts that the pool holds `want` free segments, or one more: the committer builds
/// a spare in its idle gaps whenever the pool is empty and adds it when done, beyond any
/// cap, so a count taken at any moment may hold that one spare or not (timing).
fn assert_pool(fs: &SimFs, dir: &Path, want: usize) {
    let pool = free_segments(fs, dir);
    assert!(
        pool == want || pool == want + 1,
        "{pool} free segments kept, {want} expected (or one spare more)"
    );
}

/// Appends `n` records of 900 bytes (64 KiB segments: about 70 records each).
fn fill(j: &Journal, first: u64, n: u64) {
    for i in first..first + n {
        j.append_blocking(1, Record::entry(1, i, Bytes::from(vec![i as u8; 900])))
            .unwrap();
    }
}

/// Checkpoints everything appended so far; returns how many live segments it freed.
fn checkpoint_all(j: &Journal, fs: &SimFs, dir: &Path) -> usize {
    let before = live_segments(fs, dir);
    let mark = j.mark_blocking().unwrap();
    j.checkpoint_blocking(&mark).unwrap();
    before - live_segments(fs, dir)
}

#[test]
fn a_fixed_pool_keeps_its_size() {
    let fs = SimFs::new(41);
    let cfg = small_config();
    assert!(!cfg.free_segments_follow_checkpoints);
    let d = dirs(1);
    let (j, _, _) = open_collect(&d, &cfg, sim_factory(&fs)).unwrap();
    let leftover = free_segments(&fs, &d[0]);
    fill(&j, 0, 500);
    let freed = checkpoint_all(&j, &fs, &d[0]);
    assert!(freed >= 4, "500 records span more segments: {freed}");
    assert_pool(&fs, &d[0], 2.max(leftover));
    j.shutdown();
}

#[test]
fn a_followed_pool_keeps_what_the_checkpoint_freed_and_does_not_grow() {
    let fs = SimFs::new(42);
    let cfg = JournalConfig {
        free_segments_max: 1,
        free_segments_follow_checkpoints: true,
        ..small_config()
    };
    let d = dirs(1);
    let (j, _, _) = open_collect(&d, &cfg, sim_factory(&fs)).unwrap();
    fill(&j, 0, 500);
    // The start-up spare was used (the pool holds at most a spare built since).
    assert_pool(&fs, &d[0], 0);
    let freed = checkpoint_all(&j, &fs, &d[0]);
    assert!(freed >= 4, "500 records span more segments: {freed}");
    // Every segment the checkpoint freed is kept, not just the minimum of 1.
    assert_pool(&fs, &d[0], freed);

    // A lighter interval: fewer segments taken from the pool than it holds.
    fill(&j, 500, 100);
    let leftover = free_segments(&fs, &d[0]);
    assert!(leftover >= 1 && leftover <= freed, "{leftover} of {freed}");
    let freed2 = checkpoint_all(&j, &fs, &d[0]);
    assert!(freed2 >= 1);
    // The pool keeps what this checkpoint freed at most, counting what was left over:
    // it does not grow past the larger of the two (plus a spare finished late).
    let cap = freed2.max(1);
    assert_pool(&fs, &d[0], leftover.max((leftover + freed2).min(cap)));
    j.shutdown();

    // A reopen keeps the free files it finds.
    let kept = free_segments(&fs, &d[0]);
    let (j, _, _) = open_collect(&d, &cfg, sim_factory(&fs)).unwrap();
    assert!(free_segments(&fs, &d[0]) >= kept);
    j.shutdown();
}
