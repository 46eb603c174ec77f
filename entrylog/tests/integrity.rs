//! Regression tests for the on-disk faults of issue 11, on real temporary directories:
//! a deleted segment, a deleted `ledgers.state`, and one corrupt entry among intact
//! neighbours. Each test is named after the defect it pins down; each failed on the
//! code before the fix (a deleted segment and a deleted state file opened normally;
//! the corrupt entry failed entries 2..=50 and cut the batch read to 2 entries).

// Test code damages real files directly; only production code is bound by
// ARCHITECTURE.md invariant 1 (see clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

mod common;

use bk_disk::{open_disk, DiskConfig};
use bk_entrylog::{DiskFactory, EntryLog, EntryLogConfig, EntryLogMetrics, EntrySelector, Error};
use common::entry;
use std::path::{Path, PathBuf};
use std::sync::Arc;

const LEN: usize = 1000;

fn factory() -> DiskFactory {
    Arc::new(|| open_disk(&DiskConfig::default()).map(|o| o.disk))
}

/// A real temporary directory on the host's file system: these tests are not about disk
/// thresholds, so they must not turn read-only (ENOSPC on flush) when the host is above the
/// default 95 % (CI's disk can be).
fn config() -> EntryLogConfig {
    EntryLogConfig {
        write_cache_bytes: 8 * 1024 * 1024,
        read_cache_bytes: 4 * 1024 * 1024,
        readers: 2,
        disk_usage_threshold: 1.0,
        disk_usage_warn_threshold: 1.0,
        disk_usage_lwm_threshold: 1.0,
        ..EntryLogConfig::default()
    }
}

fn open(dir: &Path) -> bk_entrylog::Result<EntryLog> {
    EntryLog::open(vec![dir.to_path_buf()], config(), factory())
}

fn data(l: u64, e: u64) -> bk_entrylog::Bytes {
    // entry() adds a 24-byte header; LEN bytes in all.
    entry(l, e, e as i64 - 1, LEN - 24, l * 1000 + e)
}

/// Adds entries `range` of ledger `l` and flushes them into one segment.
fn add_flushed(log: &EntryLog, l: u64, range: std::ops::Range<u64>) {
    log.set_master_key(l, &[7; 20]).unwrap();
    for e in range {
        log.add_entry(l, e, data(l, e)).unwrap();
    }
    log.flush().unwrap();
}

fn segments(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|d| d.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "seg"))
        .collect();
    v.sort();
    v
}

fn corruption_path(r: bk_entrylog::Result<EntryLog>) -> PathBuf {
    match r {
        Err(Error::Corruption { path, detail }) => {
            eprintln!("refused as expected: {} {detail}", path.display());
            path
        }
        Err(e) => panic!("expected a corruption refusal, got {e}"),
        Ok(log) => {
            let a0 = log.get_entry(1, EntrySelector::Id(0)).err();
            let a150 = log.get_entry(1, EntrySelector::Id(150)).err();
            panic!("start-up was not refused; entry 1/0 answers {a0:?}, 1/150 {a150:?}")
        }
    }
}

#[test]
fn deleted_segment_refuses_start_up_naming_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let log = open(dir).unwrap();
    add_flushed(&log, 1, 0..100);
    add_flushed(&log, 1, 100..200);
    log.close().unwrap();
    let segs = segments(dir);
    assert_eq!(segs.len(), 2, "{segs:?}");
    std::fs::remove_file(&segs[1]).unwrap();
    assert_eq!(corruption_path(open(dir)), segs[1]);
    // Still refused the next time: nothing was rewritten by the refused start.
    assert_eq!(corruption_path(open(dir)), segs[1]);
}

#[test]
fn segments_removed_by_gc_and_compaction_are_not_missed() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let log = open(dir).unwrap();
    for l in 1..=4 {
        add_flushed(&log, l, 0..20);
    }
    let token = log.begin_gc_scan();
    log.gc(token, &|l| l % 2 == 0).unwrap();
    log.compact(Some(1.0)).unwrap();
    log.close().unwrap();
    let log = open(dir).expect("no listed segment may be missing after GC and compaction");
    for l in [2u64, 4] {
        for e in 0..20 {
            assert_eq!(log.get_entry(l, EntrySelector::Id(e)).unwrap(), data(l, e));
        }
    }
}

#[test]
fn deleted_state_file_refuses_start_up_and_keeps_the_fence() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let log = open(dir).unwrap();
    add_flushed(&log, 1, 0..10);
    log.set_fenced(1).unwrap();
    log.flush().unwrap();
    log.close().unwrap();
    let state = dir.join("ledgers.state");
    std::fs::remove_file(&state).unwrap();
    assert_eq!(corruption_path(open(dir)), state);
}

#[test]
fn deleted_state_file_without_segments_refuses_when_state_existed() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let log = open(dir).unwrap();
    log.set_fenced(5).unwrap();
    log.flush().unwrap();
    log.close().unwrap();
    let state = dir.join("ledgers.state");
    std::fs::remove_file(&state).unwrap();
    let required = EntryLogConfig {
        require_state_file: true,
        ..config()
    };
    let r = EntryLog::open(vec![dir.to_path_buf()], required, factory());
    assert_eq!(corruption_path(r), state);
    // Without the caller's word, an empty directory is a fresh entry log.
    assert!(open(dir).unwrap().ledgers().is_empty());
}

#[test]
fn corrupt_entry_fails_only_itself_and_is_counted_once() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let log = open(dir).unwrap();
    add_flushed(&log, 1, 0..100);
    log.close().unwrap();
    let seg = segments(dir).remove(0);
    // One ledger, equal lengths: entry 50's payload starts at 50 * LEN. Flip 4 bytes.
    let mut bytes = std::fs::read(&seg).unwrap();
    for b in &mut bytes[50 * LEN + 100..50 * LEN + 104] {
        *b ^= 0xff;
    }
    std::fs::write(&seg, &bytes).unwrap();
    let log = open(dir).unwrap();
    for pass in 0..3 {
        let mut failed = Vec::new();
        for e in 0..100 {
            match log.get_entry(1, EntrySelector::Id(e)) {
                Ok(b) => assert_eq!(b, data(1, e), "pass {pass} entry {e}"),
                Err(Error::Corruption { .. }) => failed.push(e),
                Err(err) => panic!("pass {pass} entry {e}: {err} (must be corruption)"),
            }
        }
        assert_eq!(failed, vec![50], "pass {pass}: only entry 50 may fail");
    }
    // A batch read from 0 returns the entries before the corrupt one.
    let batch = log.get_entries(1, 0, 0, usize::MAX).unwrap();
    assert_eq!(batch.len(), 50);
    assert!(matches!(
        log.get_entries(1, 50, 0, usize::MAX),
        Err(Error::Corruption { .. })
    ));
    assert_eq!(log.get_entries(1, 51, 0, usize::MAX).unwrap().len(), 49);
    assert_eq!(EntryLogMetrics::get(&log.metrics().corrupt_entries), 1);
}
