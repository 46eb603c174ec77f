//! A full file system under the journal, on the simulated disk (docs/semantics.md §14):
//! ENOSPC at a segment's preallocation and at a group write answers the appends
//! `NoSpace` (never acknowledged), the journal refuses appends while it waits, and
//! accepts them again by itself once space returns; start-up on a full disk comes up
//! waiting; a directory smaller than two segments runs with shorter segments; a
//! checkpoint that finds no space is not fatal. After each run every acknowledged
//! record is replayed byte for byte (also after a crash) and nothing answered
//! `NoSpace` is. A failed fdatasync stays fatal (journal/tests/sim.rs and the unit
//! tests cover that).

mod common;

use bk_disk::{Disk, Faults, SimFs};
use bk_journal::format::{classify_name, DirEntryKind};
use bk_journal::{Journal, JournalConfig, JournalError, ReplayedRecord, TypedRecord};
use bytes::Bytes;
use common::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn data(k: u64, len: usize) -> Bytes {
    Bytes::from(
        (0..len)
            .map(|i| (k as usize * 31 + i) as u8)
            .collect::<Vec<u8>>(),
    )
}

fn used_bytes(fs: &SimFs, dir: &Path) -> u64 {
    let s = fs.disk().space(dir).unwrap();
    s.total_bytes - s.free_bytes
}

fn set_capacity(fs: &SimFs, bytes: Option<u64>) {
    fs.set_faults(Faults {
        capacity_bytes: bytes,
        ..Faults::default()
    });
}

/// Entries replayed at open, by entry id.
fn replayed_entries(recs: &[ReplayedRecord]) -> BTreeMap<u64, Bytes> {
    recs.iter()
        .filter_map(|r| match r.typed().ok()? {
            TypedRecord::Entry { entry, data, .. } => Some((entry, data)),
            _ => None,
        })
        .collect()
}

/// Every acknowledged entry replays byte for byte; nothing answered NoSpace does.
fn check_replay(recs: &[ReplayedRecord], acked: &BTreeMap<u64, Bytes>, refused: &[u64]) {
    let got = replayed_entries(recs);
    for (k, d) in acked {
        assert_eq!(
            got.get(k),
            Some(d),
            "acknowledged entry {k} not replayed exactly"
        );
    }
    for k in refused {
        assert!(
            !got.contains_key(k),
            "entry {k} was answered NoSpace but replayed"
        );
    }
}

fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn config() -> JournalConfig {
    JournalConfig {
        segment_bytes: 64 * 1024,
        segment_bytes_min: 64 * 1024,
        ..small_config()
    }
}

/// Appends entries k.. until one is answered NoSpace; returns the acked ones.
fn append_until_full(j: &Journal, from: u64, acked: &mut BTreeMap<u64, Bytes>) -> u64 {
    for k in from..from + 10_000 {
        let d = data(k, 3000);
        match j.append_entry(1, k, d.clone()).wait() {
            Ok(_) => {
                acked.insert(k, d);
            }
            Err(JournalError::NoSpace(_)) => return k,
            Err(e) => panic!("entry {k}: {e}"),
        }
    }
    panic!("the journal never ran out of space");
}

#[test]
fn enospc_at_preallocation_refuses_appends_until_space_returns() {
    let fs = SimFs::new(1);
    let d = dirs(1);
    let cfg = config();
    let (j, _, _) = open_collect(&d, &cfg, sim_factory(&fs)).unwrap();
    // Room for the segments already there and two more (plus the 1 MiB the journal
    // leaves free), then no more: no checkpoint runs, so segments accumulate.
    set_capacity(
        &fs,
        Some(used_bytes(&fs, &d[0]) + (1 << 20) + 2 * 64 * 1024),
    );
    let mut acked = BTreeMap::new();
    let first_refused = append_until_full(&j, 0, &mut acked);
    assert!(!acked.is_empty());
    assert!(
        j.is_disk_full(),
        "NoSpace answered but the journal says it has space"
    );
    // While full, appends are refused at once, not queued.
    let mut refused = vec![first_refused];
    for k in first_refused + 1..first_refused + 5 {
        match j.append_entry(1, k, data(k, 100)).wait() {
            Err(JournalError::NoSpace(_)) => refused.push(k),
            other => panic!("entry {k} while full: {other:?}"),
        }
    }
    // Space returns: the journal notices by itself and accepts appends again.
    set_capacity(&fs, None);
    wait_until("the journal to have space again", || !j.is_disk_full());
    for k in first_refused + 5..first_refused + 55 {
        let d = data(k, 3000);
        j.append_entry(1, k, d.clone())
            .wait()
            .expect("append after space returned");
        acked.insert(k, d);
    }
    j.shutdown();
    let (j, _, recs) = open_collect(&d, &cfg, sim_factory(&fs)).unwrap();
    check_replay(&recs, &acked, &refused);
    j.shutdown();
}

#[test]
fn enospc_at_a_group_write_is_never_acked_and_the_log_continues() {
    for nth in [1u64, 2, 5, 9] {
        let fs = SimFs::new(nth);
        let d = dirs(1);
        let cfg = config();
        let (j, _, _) = open_collect(&d, &cfg, sim_factory(&fs)).unwrap();
        let mut acked = BTreeMap::new();
        for k in 0..20 {
            let d = data(k, 2000);
            j.append_entry(1, k, d.clone()).wait().unwrap();
            acked.insert(k, d);
        }
        fs.set_faults(Faults {
            enospc_write_nth: Some(nth),
            ..Faults::default()
        });
        let mut refused = Vec::new();
        let mut k = 20;
        while refused.is_empty() {
            let d = data(k, 2000);
            match j.append_entry(1, k, d.clone()).wait() {
                Ok(_) => {
                    acked.insert(k, d);
                }
                Err(JournalError::NoSpace(_)) => refused.push(k),
                Err(e) => panic!("nth {nth}: entry {k}: {e}"),
            }
            k += 1;
            if k % 100 == 0 {
                // The Nth write may have been a background spare's zero-fill (a spare
                // failure only drops the spare): arm the fault again.
                fs.set_faults(Faults {
                    enospc_write_nth: Some(nth),
                    ..Faults::default()
                });
            }
            assert!(
                k < 2000,
                "nth {nth}: the injected ENOSPC never hit a group write"
            );
        }
        fs.set_faults(Faults::default());
        // The write failed before any sync: the journal resumes by itself.
        wait_until("the journal to accept appends again", || !j.is_disk_full());
        for _ in 0..30 {
            let d = data(k, 2000);
            j.append_entry(1, k, d.clone())
                .wait()
                .unwrap_or_else(|e| panic!("nth {nth}: entry {k} after recovery: {e}"));
            acked.insert(k, d);
            k += 1;
        }
        // Power loss: acknowledged records survive, the refused one is not replayed,
        // and the log (a failed group, then a fresh segment) opens without corruption.
        fs.crash();
        drop(j);
        let (j, _, recs) = open_collect(&d, &cfg, sim_factory(&fs))
            .unwrap_or_else(|e| panic!("nth {nth}: reopen after the crash: {e}"));
        check_replay(&recs, &acked, &refused);
        j.shutdown();
    }
}

#[test]
fn start_up_on_a_full_disk_comes_up_waiting_for_space() {
    let fs = SimFs::new(3);
    let d = dirs(1);
    let cfg = config();
    let (j, _, _) = open_collect(&d, &cfg, sim_factory(&fs)).unwrap();
    let mut acked = BTreeMap::new();
    for k in 0..40 {
        let d = data(k, 3000);
        j.append_entry(1, k, d.clone()).wait().unwrap();
        acked.insert(k, d);
    }
    j.shutdown();
    // No segment to write into: a spare the committer finished building in the background
    // before the shutdown would be one (whether it exists depends on timing), so remove it.
    let mut disk = fs.disk();
    for name in disk.list_dir(&d[0]).unwrap() {
        if let DirEntryKind::Free(_) = classify_name(&name.to_string_lossy()) {
            disk.remove(&d[0].join(&name)).unwrap();
        }
    }
    // Full: not even the 1 MiB headroom is left, so no segment can be made at open.
    set_capacity(&fs, Some(used_bytes(&fs, &d[0]) + 8192));
    let (j, _, recs) = open_collect(&d, &cfg, sim_factory(&fs)).expect("open on a full disk");
    check_replay(&recs, &acked, &[]);
    assert!(
        j.is_disk_full(),
        "a journal with no segment to write says it has space"
    );
    assert!(matches!(
        j.append_entry(1, 100, data(100, 10)).wait(),
        Err(JournalError::NoSpace(_))
    ));
    set_capacity(&fs, None);
    wait_until("space", || !j.is_disk_full());
    let d101 = data(101, 10);
    j.append_entry(1, 101, d101.clone()).wait().unwrap();
    acked.insert(101, d101);
    j.shutdown();
    let (j, _, recs) = open_collect(&d, &cfg, sim_factory(&fs)).unwrap();
    check_replay(&recs, &acked, &[100]);
    j.shutdown();
}

#[test]
fn a_directory_smaller_than_two_segments_runs_with_shorter_ones() {
    let fs = SimFs::new(4);
    let dd = dirs(1);
    let cfg = JournalConfig {
        segment_bytes: 512 * 1024,
        segment_bytes_min: 64 * 1024,
        ..small_config()
    };
    // Room for about 1.3 segments beside the 1 MiB headroom, from the start.
    fs.disk().create_dir_all(&dd[0]).unwrap();
    set_capacity(&fs, Some((1 << 20) + 700 * 1024));
    let (j, _, _) = open_collect(&dd, &cfg, sim_factory(&fs)).expect("open");
    let mut acked = BTreeMap::new();
    // Far more than fits at once: checkpoints (as the bookie's flusher makes them)
    // recycle the segments behind the writer. When both segments still hold records
    // above the mark, the journal waits for space until the next checkpoint.
    let mut waits = 0;
    for k in 0..1500u64 {
        let d = data(k, 3000);
        loop {
            match j.append_entry(1, k, d.clone()).wait() {
                Ok(_) => break,
                Err(JournalError::NoSpace(_)) => {
                    waits += 1;
                    assert!(waits < 200, "entry {k}: no space after {waits} checkpoints");
                    let mark = j.mark_blocking().unwrap();
                    j.checkpoint_blocking(&mark).unwrap();
                    wait_until("a recycled segment", || !j.is_disk_full());
                }
                Err(e) => panic!("entry {k}: {e}"),
            }
        }
        acked.insert(k, d);
        if k % 20 == 19 && k < 1490 {
            let mark = j.mark_blocking().unwrap();
            j.checkpoint_blocking(&mark).unwrap();
        }
    }
    assert!(!j.is_disk_full());
    j.shutdown();
    let lens: Vec<u64> = fs
        .durable_list_dir(&dd[0])
        .unwrap()
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "jseg"))
        .map(|p| fs.durable_contents(&dd[0].join(p)).unwrap().len() as u64)
        .collect();
    assert!(
        lens.iter().any(|l| *l < 512 * 1024),
        "no segment shorter than segment_bytes: {lens:?}"
    );
    set_capacity(&fs, None);
    let (j, _, recs) = open_collect(&dd, &cfg, sim_factory(&fs)).unwrap();
    // Entries above the last checkpoint replay; the rest were checkpointed.
    let got = replayed_entries(&recs);
    for (k, v) in &got {
        assert_eq!(acked.get(k), Some(v), "replayed entry {k} differs");
    }
    assert!(
        got.contains_key(&1499),
        "the last acknowledged entry was not replayed"
    );
    j.shutdown();
}

#[test]
fn a_checkpoint_on_a_full_disk_is_not_fatal() {
    let fs = SimFs::new(5);
    let d: Vec<PathBuf> = dirs(1);
    let cfg = config();
    let (j, _, _) = open_collect(&d, &cfg, sim_factory(&fs)).unwrap();
    let mut acked = BTreeMap::new();
    for k in 0..10 {
        let d = data(k, 100);
        j.append_entry(1, k, d.clone()).wait().unwrap();
        acked.insert(k, d);
    }
    let mark = j.mark_blocking().unwrap();
    // Not one more sector: the checkpoint's temp file cannot be written.
    set_capacity(&fs, Some(used_bytes(&fs, &d[0])));
    match j.checkpoint_blocking(&mark) {
        Err(JournalError::NoSpace(_)) => {}
        other => panic!("checkpoint on a full disk: {other:?}"),
    }
    set_capacity(&fs, None);
    j.checkpoint_blocking(&mark)
        .expect("checkpoint once space returned");
    let d10 = data(10, 100);
    j.append_entry(1, 10, d10.clone()).wait().unwrap();
    j.shutdown();
    let (j, _, recs) = open_collect(&d, &cfg, sim_factory(&fs)).unwrap();
    let got = replayed_entries(&recs);
    assert_eq!(got.get(&10), Some(&d10));
    assert!(
        !got.contains_key(&9),
        "checkpointed entry replayed: the mark did not advance"
    );
    j.shutdown();
}
