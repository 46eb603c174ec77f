//! Injected faults on the simulated disk: ENOSPC (capacity limit) during flushes and
//! the read-only state machine, a failed fdatasync during a flush, and read errors.
//! In every case the entry log must not lose or corrupt anything it accepted, must
//! answer I/O errors as `Io`/`Corruption` (never `NoEntry`), and a later flush retries.

mod common;

use bk_disk::{Faults, SimFs};
use bk_entrylog::{EntryLog, EntrySelector, Error, StorageMode};
use common::*;

fn open(fs: &SimFs) -> EntryLog {
    EntryLog::open(dirs(), small_config(), sim_factory(fs)).expect("open")
}

#[test]
fn enospc_during_flush_keeps_entries_and_goes_read_only() {
    let fs = SimFs::new(11);
    let cap = 1024 * 1024;
    fs.set_faults(Faults {
        capacity_bytes: Some(cap),
        ..Faults::default()
    });
    let log = open(&fs);
    assert_eq!(log.check_disk_usage().unwrap(), StorageMode::ReadWrite);
    let mut added = Vec::new();
    let mut failed = None;
    'outer: for round in 0..100u64 {
        for i in 0..10u64 {
            let e = round * 10 + i;
            let data = entry(1, e, e as i64 - 1, 9000, e);
            log.add_entry(1, e, data.clone()).unwrap();
            added.push((e, data));
        }
        if let Err(err) = log.flush() {
            assert!(err.is_no_space(), "flush failed with {err}, not ENOSPC");
            failed = Some(round);
            break 'outer;
        }
    }
    assert!(failed.is_some(), "capacity never reached");
    assert_eq!(
        log.storage_mode(),
        StorageMode::ReadOnly,
        "ENOSPC marks the dir full"
    );
    // Nothing lost: everything is still readable (the unflushed part from the cache).
    for (e, d) in &added {
        assert_eq!(
            &log.get_entry(1, EntrySelector::Id(*e)).unwrap(),
            d,
            "entry {e}"
        );
    }
    // Still read-only by usage.
    assert_eq!(log.check_disk_usage().unwrap(), StorageMode::ReadOnly);
    // Space comes back: the retry succeeds, usage drops below the LWM.
    fs.set_faults(Faults {
        capacity_bytes: Some(64 * cap),
        ..Faults::default()
    });
    // A full directory takes no segment until a disk check finds room again (the
    // bookie's disk monitor runs it every diskCheckInterval).
    assert!(
        log.flush().unwrap_err().is_no_space(),
        "still full until checked"
    );
    assert_eq!(
        log.check_disk_usage().unwrap(),
        StorageMode::ReadOnly,
        "flush pending"
    );
    log.flush().expect("flush retry after space is back");
    assert_eq!(log.check_disk_usage().unwrap(), StorageMode::ReadWrite);
    drop(log);
    fs.crash();
    let log = open(&fs);
    for (e, d) in &added {
        assert_eq!(
            &log.get_entry(1, EntrySelector::Id(*e)).unwrap(),
            d,
            "entry {e} after restart"
        );
    }
}

#[test]
fn usage_thresholds_with_hysteresis() {
    let fs = SimFs::new(12);
    let cap = 4 * 1024 * 1024;
    fs.set_faults(Faults {
        capacity_bytes: Some(cap),
        ..Faults::default()
    });
    let mut cfg = small_config();
    cfg.disk_usage_threshold = 0.5;
    cfg.disk_usage_warn_threshold = 0.4;
    cfg.disk_usage_lwm_threshold = 0.3;
    let log = EntryLog::open(dirs(), cfg, sim_factory(&fs)).unwrap();
    let mut l = 1;
    while log.check_disk_usage().unwrap() == StorageMode::ReadWrite {
        for e in 0..20 {
            log.add_entry(l, e, entry(l, e, -1, 10_000, e)).unwrap();
        }
        l += 1;
        assert!(l < 100);
        // Read-only before ENOSPC: the flush that finds no room below the threshold
        // for its next segment marks the directory full.
        if let Err(e) = log.flush() {
            assert!(e.is_no_space(), "{e}");
            break;
        }
    }
    assert_eq!(log.storage_mode(), StorageMode::ReadOnly);
    let usage = log.disk_usage().unwrap();
    assert!(usage[0].used_fraction > 0.45, "{usage:?}");
    // Delete ledgers until usage is between LWM and threshold: still read-only.
    let mut victim = 1;
    loop {
        log.delete_ledger(victim).unwrap();
        victim += 1;
        let u = log.disk_usage().unwrap()[0].used_fraction;
        if u < 0.3 {
            break;
        }
        if u < 0.5 {
            assert_eq!(
                log.storage_mode(),
                StorageMode::ReadOnly,
                "hysteresis at {u}"
            );
        }
        assert!(victim < l, "deletions never freed space");
    }
    // Below the LWM the directory takes segments again; writable once the flush that
    // was blocked for space has gone through.
    log.check_disk_usage().unwrap();
    log.flush().expect("the blocked flush goes through");
    assert_eq!(log.check_disk_usage().unwrap(), StorageMode::ReadWrite);
}

#[test]
fn failed_datasync_fails_the_flush_and_a_retry_is_durable() {
    let fs = SimFs::new(13);
    let log = open(&fs);
    for e in 0..30 {
        log.add_entry(2, e, entry(2, e, e as i64 - 1, 500, e))
            .unwrap();
    }
    log.set_fenced(2).unwrap();
    fs.set_faults(Faults {
        fail_sync_nth: Some(1),
        ..Faults::default()
    });
    assert!(
        log.flush().is_err(),
        "a failed fdatasync must fail the flush"
    );
    for e in 0..30 {
        assert!(log.get_entry(2, EntrySelector::Id(e)).is_ok());
    }
    fs.set_faults(Faults::default());
    log.flush().expect("retry");
    drop(log);
    fs.crash();
    let log = open(&fs);
    assert!(log.is_fenced(2).unwrap());
    for e in 0..30 {
        assert_eq!(
            log.get_entry(2, EntrySelector::Id(e)).unwrap(),
            entry(2, e, e as i64 - 1, 500, e)
        );
    }
}

#[test]
fn read_errors_are_io_errors_not_missing_entries() {
    let fs = SimFs::new(14);
    let log = open(&fs);
    for e in 0..5 {
        log.add_entry(3, e, entry(3, e, -1, 100, e)).unwrap();
    }
    log.flush().unwrap();
    drop(log);
    let log = open(&fs);
    fs.set_faults(Faults {
        read_eio: 1.0,
        ..Faults::default()
    });
    assert!(matches!(
        log.get_entry(3, EntrySelector::Id(2)),
        Err(Error::Io { .. })
    ));
    fs.set_faults(Faults {
        read_bit_flip: 1.0,
        ..Faults::default()
    });
    // The flipped bit lands anywhere in the 4 KiB read: each answer is either the right
    // entry (flip outside it) or Corruption, never wrong bytes or NoEntry.
    let want = entry(3, 2, -1, 100, 2);
    let mut corrupt = 0;
    for _ in 0..400 {
        match log.get_entry(3, EntrySelector::Id(2)) {
            Ok(b) => assert_eq!(b, want),
            Err(Error::Corruption { .. }) => corrupt += 1,
            Err(e) => panic!("unexpected {e}"),
        }
    }
    assert!(corrupt > 0, "no flip ever hit the record");
    fs.set_faults(Faults::default());
    assert!(log.get_entry(3, EntrySelector::Id(2)).is_ok());
}
