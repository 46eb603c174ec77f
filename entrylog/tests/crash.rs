//! Crash tests on the simulated disk: power loss after every single disk operation of
//! the flush, ledger-state, delete and compaction sequences. After each crash the
//! entry log is reopened and must hold everything flushed before (nothing
//! flushed-and-checkpointed is lost), keep deleted ledgers deleted and fenced ledgers
//! fenced; what the interrupted flush wrote may be present only if it is exactly right.

mod common;

use bk_disk::SimFs;
use bk_entrylog::{Bytes, EntryLog, EntrySelector, Error};
use common::*;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

fn base_entry(l: u64, e: u64) -> Bytes {
    entry(
        l,
        e,
        e as i64 - 1,
        200 + (e as usize * 37 % 900),
        l * 1000 + e,
    )
}

fn lac_body(ledger: u64, lac: i64) -> Bytes {
    let mut v = (ledger as i64).to_be_bytes().to_vec();
    v.extend_from_slice(&lac.to_be_bytes());
    Bytes::from(v)
}

/// Runs the scenario with a crash at the `crash_at`-th disk call after arming.
/// Returns false when the scenario completed before reaching it.
fn scenario(seed: u64, crash_at: u64) -> bool {
    let fs = SimFs::new(seed);
    let counter = Arc::new(AtomicU64::new(0));
    let arm = Arc::new(AtomicU64::new(0));
    let factory = crashing_factory(&fs, counter.clone(), arm.clone());
    let log = EntryLog::open(dirs(), small_config(), factory).expect("open");
    // Checkpointed base: ledgers 1..=4, 20 entries each; 2 fenced; 3 has an explicit LAC.
    for l in 1..=4 {
        log.set_master_key(l, &[l as u8; 20]).unwrap();
        for e in 0..20 {
            log.add_entry(l, e, base_entry(l, e)).unwrap();
        }
    }
    log.set_fenced(2).unwrap();
    log.set_explicit_lac(3, lac_body(3, 40)).unwrap();
    log.flush().unwrap();
    log.delete_ledger(4).unwrap();
    // Three small, fully live segments: compaction merges them (with the next flush's).
    for e in 20..23 {
        log.add_entry(3, e, base_entry(3, e)).unwrap();
        log.flush().unwrap();
    }
    // Pending work: more entries, a duplicate, a new ledger, a new fence.
    for e in 20..30 {
        log.add_entry(1, e, base_entry(1, e)).unwrap();
    }
    let dup = entry(3, 5, 4, 333, 99);
    log.add_entry(3, 5, dup.clone()).unwrap();
    log.set_master_key(5, &[5; 20]).unwrap();
    log.add_entry(5, 0, base_entry(5, 0)).unwrap();
    log.set_fenced(1).unwrap();

    arm.store(counter.load(Ordering::SeqCst) + crash_at, Ordering::SeqCst);
    let flushed = log.flush().is_ok();
    // Ledger 3's old entry 5 is now dead in the first segment; ledger 4's are all dead.
    let compaction = if flushed {
        log.compact(Some(0.99)).ok()
    } else {
        None
    };
    let compacted = compaction.is_some();
    let gc_done = compacted && {
        let t = log.begin_gc_scan();
        log.gc(t, &|l| l != 5).is_ok()
    };
    let crashed = counter.load(Ordering::SeqCst) >= arm.load(Ordering::SeqCst);
    if !crashed {
        let c = compaction.expect("compaction ran");
        assert!(
            c.compacted_segments >= 1 && c.reclaimed_bytes > 0,
            "compaction did nothing: {c:?}"
        );
        assert!(
            c.compacted_segments > c.output_segments,
            "no merge happened: {c:?}"
        );
    }
    drop(log);
    fs.crash();

    // Power fails again during recovery (start-up deletes unfinished files and dead
    // segments): at a different operation for each crash point.
    let c2 = Arc::new(AtomicU64::new(0));
    let a2 = Arc::new(AtomicU64::new(crash_at % 5 + 1));
    if let Ok(l) = EntryLog::open(dirs(), small_config(), crashing_factory(&fs, c2, a2)) {
        drop(l);
    }
    fs.crash();
    let log = EntryLog::open(dirs(), small_config(), sim_factory(&fs))
        .unwrap_or_else(|e| panic!("crash at {crash_at}: reopen failed: {e}"));
    let ctx = format!("seed {seed} crash at {crash_at} (flushed {flushed}, compacted {compacted})");
    for l in 1..=3 {
        assert_eq!(log.master_key(l).unwrap(), Some(vec![l as u8; 20]), "{ctx}");
        for e in 0..20 {
            let got = log
                .get_entry(l, EntrySelector::Id(e))
                .unwrap_or_else(|err| panic!("{ctx}: {l}/{e}: {err}"));
            if l == 3 && e == 5 {
                assert!(
                    got == base_entry(3, 5) || got == dup,
                    "{ctx}: 3/5 neither copy"
                );
                if flushed {
                    assert_eq!(got, dup, "{ctx}: flushed duplicate lost");
                }
            } else {
                assert_eq!(got, base_entry(l, e), "{ctx}: {l}/{e}");
            }
        }
    }
    for e in 20..23 {
        assert_eq!(
            log.get_entry(3, EntrySelector::Id(e)).unwrap(),
            base_entry(3, e),
            "{ctx}: 3/{e}"
        );
    }
    assert!(log.is_fenced(2).unwrap(), "{ctx}: fence lost");
    assert_eq!(log.explicit_lac(3).unwrap(), Some(lac_body(3, 40)), "{ctx}");
    assert!(
        matches!(
            log.get_entry(4, EntrySelector::Id(0)),
            Err(Error::NoLedger(4))
        ),
        "{ctx}: deleted ledger back"
    );
    for e in 20..30 {
        match log.get_entry(1, EntrySelector::Id(e)) {
            Ok(b) => assert_eq!(b, base_entry(1, e), "{ctx}"),
            Err(Error::NoEntry { .. }) => assert!(!flushed, "{ctx}: flushed entry 1/{e} lost"),
            Err(err) => panic!("{ctx}: 1/{e}: {err}"),
        }
    }
    if flushed {
        assert!(log.is_fenced(1).unwrap(), "{ctx}: flushed fence lost");
    }
    if gc_done {
        assert!(!log.ledger_exists(5), "{ctx}: gc deletion lost");
    } else if flushed {
        // An interrupted GC may or may not have made its deletion durable.
        match log.get_entry(5, EntrySelector::Last) {
            Ok(b) => assert_eq!(b, base_entry(5, 0), "{ctx}"),
            Err(Error::NoLedger(5)) => assert!(compacted, "{ctx}: ledger 5 lost before gc"),
            Err(e) => panic!("{ctx}: ledger 5: {e}"),
        }
    }
    // The reopened log works: flush something new.
    log.add_entry(3, 100, base_entry(3, 100)).unwrap();
    log.flush()
        .unwrap_or_else(|e| panic!("{ctx}: flush after recovery: {e}"));
    crashed
}

#[test]
fn crash_at_every_disk_operation_of_flush_compaction_and_gc() {
    let seeds: u64 = std::env::var("BK_SIM_SEEDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2);
    for seed in 0..seeds {
        let mut i = 1;
        while scenario(seed, i) {
            i += 1;
            assert!(i < 10_000, "scenario never completes");
        }
        assert!(
            i > 10,
            "the armed sequence should take several disk operations, took {i}"
        );
    }
}
