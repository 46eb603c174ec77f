//! Paced flushes (`EntryLog::flush_paced`, `EntryLogConfig::flush_pace_min_bytes_per_sec`):
//! a periodic flush keeps to its pace (twice the rate its half filled at), runs at full
//! speed when the caller hurries it or someone waits for a flush, and writes the same
//! durable segments as an unpaced flush. Timing is asserted only where the schedule sets
//! a floor, or against a schedule many times longer than the work.

mod common;

use bk_disk::SimFs;
use bk_entrylog::{EntryLog, EntryLogConfig, EntrySelector};
use common::*;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// 2 MiB of entries in 32 KiB adds to ledger 1.
const ENTRIES: u64 = 64;
const ENTRY_BYTES: usize = 32 * 1024;

fn config() -> EntryLogConfig {
    EntryLogConfig {
        write_cache_bytes: 64 * 1024 * 1024,
        flush_write_bytes: 64 * 1024,
        flush_pace_min_bytes_per_sec: 64 * 1024,
        ..small_config()
    }
}

/// Opens a log, adds the entries, then waits `fill`: the half "filled" over `fill`, so a
/// paced flush runs at about 2 MiB * 2 / fill.
fn filled(fs: &SimFs, fill: Duration) -> EntryLog {
    let log = EntryLog::open(dirs(), config(), sim_factory(fs)).expect("open");
    log.set_master_key(1, b"key").unwrap();
    for e in 0..ENTRIES {
        log.add_entry(1, e, entry(1, e, e as i64 - 1, ENTRY_BYTES, e))
            .unwrap();
    }
    std::thread::sleep(fill);
    log
}

fn assert_all_readable(log: &EntryLog) {
    for e in 0..ENTRIES {
        assert_eq!(
            log.get_entry(1, EntrySelector::Id(e)).unwrap(),
            entry(1, e, e as i64 - 1, ENTRY_BYTES, e),
            "entry {e}"
        );
    }
}

#[test]
fn a_paced_flush_keeps_to_twice_the_fill_rate() {
    let fs = SimFs::new(11);
    // Filled in 2 s: paced at ~2 MiB/s, so the last chunk is not due before ~1 s.
    let log = filled(&fs, Duration::from_secs(2));
    let t = Instant::now();
    log.flush_paced(&|| false).unwrap();
    let took = t.elapsed();
    assert!(
        took >= Duration::from_millis(800),
        "a paced flush of 2 MiB filled over 2 s took only {took:?}"
    );
    assert_all_readable(&log);
    drop(log);
    // Durable like any flush: reopened, every entry is in a segment.
    let log = EntryLog::open(dirs(), config(), sim_factory(&fs)).expect("reopen");
    assert_all_readable(&log);
}

#[test]
fn a_hurried_paced_flush_runs_at_full_speed() {
    let fs = SimFs::new(12);
    // Filled in 6 s: the schedule would take ~3 s; hurried, the simulated disk takes
    // milliseconds.
    let log = filled(&fs, Duration::from_secs(6));
    let t = Instant::now();
    log.flush_paced(&|| true).unwrap();
    let took = t.elapsed();
    assert!(
        took < Duration::from_millis(1500),
        "a hurried paced flush took {took:?}"
    );
    assert_all_readable(&log);
}

#[test]
fn an_explicit_flush_hurries_a_paced_one_it_waits_for() {
    let fs = SimFs::new(13);
    let log = Arc::new(filled(&fs, Duration::from_secs(6)));
    let paced = {
        let log = log.clone();
        std::thread::spawn(move || {
            let t = Instant::now();
            log.flush_paced(&|| false).unwrap();
            t.elapsed()
        })
    };
    // Let the paced flush take the lock and start keeping its ~3 s schedule.
    std::thread::sleep(Duration::from_millis(300));
    log.flush().unwrap();
    let paced_took = paced.join().unwrap();
    assert!(
        paced_took < Duration::from_millis(1800),
        "the paced flush kept its schedule ({paced_took:?}) while a flush waited for it"
    );
    assert_all_readable(&log);
}
