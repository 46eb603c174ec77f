//! Basic behaviour of the entry log on the simulated disk: add/read through the write
//! cache and segments, last entry, ledger state across restart, large entries, batch
//! reads, entries_of_ledger, GC generation rule, bit-flip detection.

mod common;

use bk_disk::SimFs;
use bk_entrylog::{EntryLog, EntrySelector, Error};
use common::*;

fn open(fs: &SimFs) -> EntryLog {
    EntryLog::open(dirs(), small_config(), sim_factory(fs)).expect("open")
}

#[test]
fn add_read_flush_restart() {
    let fs = SimFs::new(1);
    let log = open(&fs);
    log.set_master_key(1, b"key-1").unwrap();
    for e in 0..50 {
        log.add_entry(1, e, entry(1, e, e as i64 - 1, 1000, e))
            .unwrap();
    }
    assert_eq!(
        log.get_entry(1, EntrySelector::Id(7)).unwrap(),
        entry(1, 7, 6, 1000, 7)
    );
    assert_eq!(log.lac(1).unwrap(), Some(48));
    log.flush().unwrap();
    assert_eq!(
        log.get_entry(1, EntrySelector::Id(7)).unwrap(),
        entry(1, 7, 6, 1000, 7)
    );
    assert_eq!(
        log.get_entry(1, EntrySelector::Last).unwrap(),
        entry(1, 49, 48, 1000, 49)
    );
    assert!(log.set_fenced(1).unwrap());
    log.set_explicit_lac(
        1,
        bytes::Bytes::from(
            vec![0u8; 8]
                .into_iter()
                .chain(60i64.to_be_bytes())
                .collect::<Vec<_>>(),
        ),
    )
    .unwrap();
    log.flush().unwrap();
    drop(log);
    fs.crash();
    let log = open(&fs);
    assert!(log.is_fenced(1).unwrap());
    assert_eq!(log.master_key(1).unwrap().as_deref(), Some(&b"key-1"[..]));
    assert_eq!(log.lac(1).unwrap(), Some(60));
    for e in 0..50 {
        assert_eq!(
            log.get_entry(1, EntrySelector::Id(e)).unwrap(),
            entry(1, e, e as i64 - 1, 1000, e)
        );
    }
    assert!(matches!(
        log.get_entry(1, EntrySelector::Id(50)),
        Err(Error::NoEntry { .. })
    ));
    assert!(matches!(
        log.get_entry(2, EntrySelector::Id(0)),
        Err(Error::NoLedger(2))
    ));
    assert_eq!(
        log.entries_of_ledger(1).unwrap(),
        (0..50).collect::<Vec<_>>()
    );
    let batch = log.get_entries(1, 10, 5, usize::MAX).unwrap();
    assert_eq!(batch.len(), 5);
    let batch = log.get_entries(1, 45, 0, usize::MAX).unwrap();
    assert_eq!(batch.len(), 5);
    let batch = log.get_entries(1, 0, 0, 3 * 1028).unwrap();
    assert_eq!(batch.len(), 3, "max bytes counts 4 + len per entry");
    assert!(
        log.metrics()
            .read_cache_hits
            .load(std::sync::atomic::Ordering::Relaxed)
            > 0
    );
}

#[test]
fn large_entries_flush_through() {
    let fs = SimFs::new(2);
    let log = open(&fs); // 256 KiB cache: 128 KiB halves
    let big = entry(3, 0, -1, 600 * 1024, 1);
    log.add_entry(3, 0, big.clone()).unwrap();
    log.add_entry(3, 1, entry(3, 1, 0, 10, 2)).unwrap();
    let big2 = entry(3, 2, 1, 300 * 1024, 3);
    log.add_entry(3, 2, big2.clone()).unwrap();
    assert_eq!(log.get_entry(3, EntrySelector::Id(0)).unwrap(), big);
    log.flush().unwrap();
    assert_eq!(log.get_entry(3, EntrySelector::Id(0)).unwrap(), big);
    assert_eq!(log.get_entry(3, EntrySelector::Last).unwrap(), big2);
}

#[test]
fn bit_flip_is_corruption() {
    let fs = SimFs::new(3);
    let log = open(&fs);
    for e in 0..4 {
        log.add_entry(9, e, entry(9, e, -1, 100, e)).unwrap();
    }
    log.flush().unwrap();
    drop(log);
    let seg = fs
        .durable_list_dir(&dirs()[0])
        .unwrap()
        .into_iter()
        .find(|p| p.to_string_lossy().ends_with(".seg"))
        .unwrap();
    let path = dirs()[0].join(seg);
    // Entries are 124 bytes, stored back to back: entry 2 starts at 2 * 124.
    fs.flip_bit(&path, 2 * 124 + 50, 3).unwrap();
    let log = open(&fs);
    assert!(matches!(
        log.get_entry(9, EntrySelector::Id(2)),
        Err(Error::Corruption { .. })
    ));
    assert!(log.get_entry(9, EntrySelector::Id(1)).is_ok());
    assert!(log.get_entry(9, EntrySelector::Id(3)).is_ok());
    // A flip in entry 3's first byte (its ledger id, as BookKeeper entries begin).
    fs.flip_bit(&path, 3 * 124, 0).unwrap();
    let log2 = open(&fs);
    drop(log);
    assert!(matches!(
        log2.get_entry(9, EntrySelector::Id(3)),
        Err(Error::Corruption { .. })
    ));
}

#[test]
fn gc_keeps_ledgers_created_during_scan() {
    let fs = SimFs::new(4);
    let log = open(&fs);
    for l in 1..=10 {
        log.add_entry(l, 0, entry(l, 0, -1, 10, l)).unwrap();
    }
    log.flush().unwrap();
    let token = log.begin_gc_scan();
    // Created while the bookie scans metadata: not in the live set, must survive.
    log.add_entry(11, 0, entry(11, 0, -1, 10, 11)).unwrap();
    log.set_master_key(12, b"k").unwrap();
    let report = log.gc(token, &|l| l <= 5).unwrap();
    assert_eq!(report.deleted_ledgers, vec![6, 7, 8, 9, 10]);
    assert_eq!(log.ledgers(), vec![1, 2, 3, 4, 5, 11, 12]);
    assert!(matches!(
        log.add_entry(7, 1, entry(7, 1, 0, 1, 1)),
        Err(Error::LedgerDeleted(7))
    ));
    drop(log);
    fs.crash();
    let log = open(&fs);
    // Ledger 11 exists (its state was persisted by the GC state write) but its
    // unflushed entry is gone: the journal would replay it.
    assert_eq!(log.ledgers(), vec![1, 2, 3, 4, 5, 11, 12]);
    assert!(matches!(
        log.get_entry(7, EntrySelector::Id(0)),
        Err(Error::NoLedger(7))
    ));
}

#[test]
fn dropping_16000_ledgers_is_not_quadratic() {
    let fs = SimFs::new(5);
    let mut cfg = small_config();
    cfg.write_cache_bytes = 64 * 1024 * 1024;
    let log = EntryLog::open(dirs(), cfg, sim_factory(&fs)).unwrap();
    for l in 0..16_000u64 {
        log.set_master_key(l, &[1; 20]).unwrap();
        log.add_entry(l, 0, entry(l, 0, -1, 16, l)).unwrap();
        log.add_entry(l, 1, entry(l, 1, 0, 16, l)).unwrap();
    }
    log.flush().unwrap();
    let token = log.begin_gc_scan();
    let started = std::time::Instant::now();
    let report = log.gc(token, &|l| l >= 16_000).unwrap();
    let took = started.elapsed();
    assert_eq!(report.deleted_ledgers.len(), 16_000);
    assert_eq!(
        report.removed_segments, 1,
        "the segment had only those ledgers"
    );
    eprintln!(
        "gc of 16000 ledgers took {took:?} (index, tombstones, state write, segment removal)"
    );
    // A guard against quadratic deletion, not a benchmark: linear work takes ~0.5 s here
    // even on a loaded CI machine, a quadratic one minutes; the bound is far from both so
    // machine noise cannot fail it.
    assert!(took < std::time::Duration::from_secs(15), "took {took:?}");
    assert!(log.ledgers().is_empty());
}

#[test]
fn concurrent_readers_during_adds_flushes_and_compaction() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::Arc;
    let fs = SimFs::new(6);
    let log = Arc::new(open(&fs));
    let written = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let mut readers = Vec::new();
    for t in 0..4u64 {
        let (log, written, done) = (log.clone(), written.clone(), done.clone());
        readers.push(std::thread::spawn(move || {
            let mut x = t + 1;
            let mut reads = 0;
            while !done.load(Ordering::SeqCst) {
                let n = written.load(Ordering::SeqCst);
                if n == 0 {
                    continue;
                }
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let e = if t == 0 { reads % n } else { (x >> 33) % n };
                let l = e % 3;
                let got = log.get_entry(l, EntrySelector::Id(e)).unwrap();
                assert_eq!(got, entry(l, e, -1, 700, e), "reader {t} entry {l}/{e}");
                reads += 1;
            }
            reads
        }));
    }
    for e in 0..1500u64 {
        log.add_entry(e % 3, e, entry(e % 3, e, -1, 700, e))
            .unwrap();
        // A duplicate of an old entry with the same content keeps answers stable
        // while compaction has something to do.
        if e % 7 == 0 {
            let d = e / 2;
            log.add_entry(d % 3, d, entry(d % 3, d, -1, 700, d))
                .unwrap();
        }
        written.store(e + 1, Ordering::SeqCst);
        if e % 200 == 199 {
            log.flush().unwrap();
            log.compact(Some(0.95)).unwrap();
        }
    }
    done.store(true, Ordering::SeqCst);
    let total: u64 = readers.into_iter().map(|h| h.join().unwrap()).sum();
    assert!(total > 100, "readers made progress: {total}");
}

#[test]
fn several_directories_share_segments_and_state() {
    let fs = SimFs::new(7);
    let two = vec![
        std::path::PathBuf::from("/d0/current"),
        std::path::PathBuf::from("/d1/current"),
    ];
    let log = EntryLog::open(two.clone(), small_config(), sim_factory(&fs)).unwrap();
    for round in 0..6u64 {
        for e in 0..10 {
            let id = round * 10 + e;
            log.add_entry(round % 2, id, entry(round % 2, id, -1, 300, id))
                .unwrap();
        }
        log.flush().unwrap();
    }
    log.set_fenced(1).unwrap();
    log.flush().unwrap();
    drop(log);
    fs.crash();
    let segs = |d: &std::path::Path| {
        fs.durable_list_dir(d)
            .unwrap()
            .iter()
            .filter(|n| n.to_string_lossy().ends_with(".seg"))
            .count()
    };
    assert!(
        segs(&two[0]) > 0 && segs(&two[1]) > 0,
        "segments spread over both directories"
    );
    let log = EntryLog::open(two, small_config(), sim_factory(&fs)).unwrap();
    assert!(log.is_fenced(1).unwrap());
    for round in 0..6u64 {
        for e in 0..10 {
            let id = round * 10 + e;
            assert_eq!(
                log.get_entry(round % 2, EntrySelector::Id(id)).unwrap(),
                entry(round % 2, id, -1, 300, id)
            );
        }
    }
}

#[test]
fn five_mib_entries_with_a_sixteen_mib_cache() {
    let fs = SimFs::new(8);
    let mut cfg = small_config();
    cfg.write_cache_bytes = 16 << 20;
    let log = EntryLog::open(dirs(), cfg, sim_factory(&fs)).unwrap();
    for e in 0..6u64 {
        log.add_entry(4, e, entry(4, e, e as i64 - 1, 5 << 20, e))
            .unwrap();
    }
    log.flush().unwrap();
    for e in 0..6u64 {
        assert_eq!(
            log.get_entry(4, EntrySelector::Id(e)).unwrap(),
            entry(4, e, e as i64 - 1, 5 << 20, e)
        );
    }
    assert!(matches!(
        log.add_entry(4, 9, bytes::Bytes::from(vec![0u8; 64 * 1024 * 1024 + 1])),
        Err(Error::InvalidInput(_))
    ));
}

#[test]
fn a_corrupt_finished_segment_stops_start_up() {
    let fs = SimFs::new(9);
    let log = open(&fs);
    log.add_entry(1, 0, entry(1, 0, -1, 10, 0)).unwrap();
    log.flush().unwrap();
    drop(log);
    let seg = fs
        .durable_list_dir(&dirs()[0])
        .unwrap()
        .into_iter()
        .find(|p| p.to_string_lossy().ends_with(".seg"))
        .unwrap();
    let path = dirs()[0].join(seg);
    let len = fs.durable_contents(&path).unwrap().len() as u64;
    fs.flip_bit(&path, len - 30, 1).unwrap(); // inside the trailer
    match EntryLog::open(dirs(), small_config(), sim_factory(&fs)) {
        Err(Error::Corruption { path: p, .. }) => assert_eq!(p, path),
        Err(e) => panic!("expected corruption, got {e}"),
        Ok(_) => panic!("a corrupt segment was accepted"),
    }
}

#[test]
fn compaction_is_rate_limited_and_reclaims_space() {
    use std::sync::atomic::Ordering::Relaxed;
    let fs = SimFs::new(10);
    let mut cfg = small_config();
    cfg.compaction_rate_bytes_per_sec = 1_000_000;
    let log = EntryLog::open(dirs(), cfg, sim_factory(&fs)).unwrap();
    for e in 0..50 {
        for l in 1..=4u64 {
            log.add_entry(l, e, entry(l, e, -1, 2000, e)).unwrap();
        }
    }
    log.flush().unwrap();
    let token = log.begin_gc_scan();
    log.gc(token, &|l| l == 1).unwrap(); // 3/4 of every segment is garbage
    let started = std::time::Instant::now();
    let rep = log.compact(Some(0.5)).unwrap();
    let took = started.elapsed();
    assert!(rep.compacted_segments >= 1, "{rep:?}");
    assert!(rep.bytes_copied >= 50 * 2024, "{rep:?}");
    assert!(rep.reclaimed_bytes > 0, "{rep:?}");
    // ~100 KB at 1 MB/s: at least 0.08 s.
    assert!(
        took >= std::time::Duration::from_millis(80),
        "not rate-limited: {took:?}"
    );
    let m = log.metrics();
    assert_eq!(
        m.compaction_total.load(Relaxed),
        rep.compacted_segments as u64
    );
    assert!(m.reclaimed_compaction_space_bytes.load(Relaxed) > 0);
    for e in 0..50 {
        assert_eq!(
            log.get_entry(1, EntrySelector::Id(e)).unwrap(),
            entry(1, e, -1, 2000, e)
        );
    }
    let segs = fs
        .durable_list_dir(&dirs()[0])
        .unwrap()
        .into_iter()
        .filter(|p| p.to_string_lossy().ends_with(".seg"))
        .count();
    assert_eq!(
        segs, rep.compacted_segments,
        "the old segment files are gone"
    );
}

#[test]
fn compaction_merges_small_segments() {
    let fs = SimFs::new(11);
    let log = open(&fs);
    let count_segs = || {
        fs.durable_list_dir(&dirs()[0])
            .unwrap()
            .into_iter()
            .filter(|p| p.to_string_lossy().ends_with(".seg"))
            .count()
    };
    for round in 0..20u64 {
        for l in 1..=3u64 {
            log.add_entry(l, round, entry(l, round, round as i64 - 1, 500, round))
                .unwrap();
        }
        // Overwrite an older entry now and then: newer copies must keep winning.
        if round % 4 == 3 {
            log.add_entry(2, round - 2, entry(2, round - 2, 0, 77, 1000 + round))
                .unwrap();
        }
        log.flush().unwrap();
    }
    assert_eq!(count_segs(), 20);
    let rep = log.compact(Some(0.0)).unwrap();
    assert_eq!(rep.compacted_segments, 20, "{rep:?}");
    assert_eq!(rep.output_segments, 1, "{rep:?}");
    assert_eq!(count_segs(), 1);
    let want = |l: u64, e: u64| {
        if l == 2 && e % 4 == 1 && e + 2 < 20 {
            entry(2, e, 0, 77, 1000 + e + 2)
        } else {
            entry(l, e, e as i64 - 1, 500, e)
        }
    };
    let check = |log: &EntryLog| {
        for l in 1..=3u64 {
            for e in 0..20u64 {
                assert_eq!(
                    log.get_entry(l, EntrySelector::Id(e)).unwrap(),
                    want(l, e),
                    "{l}/{e}"
                );
            }
        }
    };
    check(&log);
    drop(log);
    fs.crash();
    let log = open(&fs);
    check(&log);
}

/// A deleted ledger's tombstone goes two checkpoints after the deletion: by default each
/// completed flush counts as one; with `checkpoints_confirmed_by_caller` (the bookie, whose
/// journal checkpoint after a flush can be deferred) only the caller's confirmations
/// count, so flushes alone keep it (an add to the ledger is still refused as deleted).
#[test]
fn tombstones_expire_after_two_checkpoints_counted_or_confirmed() {
    for confirmed in [false, true] {
        let fs = SimFs::new(71);
        let cfg = bk_entrylog::EntryLogConfig {
            checkpoints_confirmed_by_caller: confirmed,
            ..small_config()
        };
        let log = EntryLog::open(dirs(), cfg, sim_factory(&fs)).expect("open");
        log.add_entry(2, 0, entry(2, 0, -1, 100, 0)).unwrap();
        assert!(log.delete_ledger(2).unwrap());
        let refused = |log: &EntryLog| {
            matches!(
                log.add_entry(2, 1, entry(2, 1, 0, 100, 1)),
                Err(Error::LedgerDeleted(2))
            )
        };
        for _ in 0..3 {
            log.flush().unwrap();
        }
        assert_eq!(
            refused(&log),
            confirmed,
            "after 3 flushes (confirmed: {confirmed})"
        );
        if confirmed {
            log.checkpoint_confirmed();
            log.flush().unwrap();
            assert!(refused(&log), "one confirmation is not enough");
            log.checkpoint_confirmed();
            log.flush().unwrap();
            assert!(!refused(&log), "gone after two confirmations");
        }
    }
}

/// An entry added with its CRC given (the bookie's add path: one CRC for journal and entry
/// log) is written with that CRC and reads back after a flush and a restart, as one whose
/// CRC the entry log computed; in debug builds the flush also asserts the CRC is right.
#[test]
fn entries_added_with_their_crc_read_back_after_flush_and_restart() {
    let fs = SimFs::new(3);
    let log = open(&fs);
    log.set_master_key(4, b"key-4").unwrap();
    for e in 0..20 {
        let data = entry(4, e, e as i64 - 1, 700, e);
        let crc = bk_entrylog::format::entry_crc(4, e, &data);
        if e % 2 == 0 {
            log.add_entry_with_crc(4, e, data, crc).unwrap();
        } else {
            log.add_entry(4, e, data).unwrap();
        }
    }
    log.flush().unwrap();
    drop(log);
    fs.crash();
    let log = open(&fs);
    for e in 0..20 {
        assert_eq!(
            log.get_entry(4, EntrySelector::Id(e)).unwrap(),
            entry(4, e, e as i64 - 1, 700, e)
        );
    }
}
