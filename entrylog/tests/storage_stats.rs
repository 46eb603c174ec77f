//! The entry log's DbLedgerStorage and GC stats fed by the work they describe
//! (docs/metrics.md §2): `add_entry` per add, `throttled_write` per add that waited for
//! write-cache space (success once inserted, failure once refused), read-ahead bytes and
//! time per batch, the configured read-ahead batch size, and `RECLAIM_FAILED_TO_DELETE`
//! for a segment file GC or compaction could not remove, which the next round retries.

mod common;

use bk_disk::{
    Checked, Completion, Disk, FaultEvent, Faults, FileId, Op, OpenOptions, SimFs, SpaceInfo,
};
use bk_entrylog::{DiskFactory, EntryLog, EntryLogConfig, EntryLogMetrics, EntrySelector, Error};
use common::*;
use parking_lot::{Condvar, Mutex};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn get(c: &std::sync::atomic::AtomicU64) -> u64 {
    EntryLogMetrics::get(c)
}

/// Closed: every write submitted through a [`GatedDisk`] waits until it opens again.
#[derive(Clone, Default)]
struct Gate(Arc<(Mutex<bool>, Condvar)>);

impl Gate {
    fn set_closed(&self, closed: bool) {
        *self.0 .0.lock() = closed;
        self.0 .1.notify_all();
    }
    fn pass(&self) {
        let mut closed = self.0 .0.lock();
        while *closed {
            self.0 .1.wait(&mut closed);
        }
    }
}

/// Opens the gate when dropped: declared after the log, it lets a held flush finish
/// before the log closes, also when the test fails (else closing would wait forever).
struct OpenOnDrop(Gate);

impl Drop for OpenOnDrop {
    fn drop(&mut self) {
        self.0.set_closed(false);
    }
}

/// A simulated disk whose writes wait at a [`Gate`]: holds a flush in progress.
struct GatedDisk {
    inner: Checked<bk_disk::SimDisk>,
    gate: Gate,
}

impl Disk for GatedDisk {
    fn open(&mut self, path: &Path, opts: OpenOptions) -> io::Result<FileId> {
        self.inner.open(path, opts)
    }
    fn close(&mut self, file: FileId) -> io::Result<()> {
        self.inner.close(file)
    }
    fn file_len(&mut self, file: FileId) -> io::Result<u64> {
        self.inner.file_len(file)
    }
    fn set_len(&mut self, file: FileId, len: u64) -> io::Result<()> {
        self.inner.set_len(file, len)
    }
    fn remove(&mut self, path: &Path) -> io::Result<()> {
        self.inner.remove(path)
    }
    fn rename(&mut self, from: &Path, to: &Path) -> io::Result<()> {
        self.inner.rename(from, to)
    }
    fn sync_dir(&mut self, dir: &Path) -> io::Result<()> {
        self.inner.sync_dir(dir)
    }
    fn create_dir_all(&mut self, dir: &Path) -> io::Result<()> {
        self.inner.create_dir_all(dir)
    }
    fn list_dir(&mut self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        self.inner.list_dir(dir)
    }
    fn space(&mut self, dir: &Path) -> io::Result<SpaceInfo> {
        self.inner.space(dir)
    }
    fn submit(&mut self, user_data: u64, op: Op) -> io::Result<()> {
        if matches!(op, Op::Write { .. } | Op::WriteDatasync { .. }) {
            self.gate.pass();
        }
        self.inner.submit(user_data, op)
    }
    fn reap(&mut self, min: usize) -> Vec<Completion> {
        self.inner.reap(min)
    }
    fn in_flight(&self) -> usize {
        self.inner.in_flight()
    }
}

fn gated_factory(fs: &SimFs, gate: &Gate) -> DiskFactory {
    let (fs, gate) = (fs.clone(), gate.clone());
    Arc::new(move || {
        Ok(Box::new(GatedDisk {
            inner: Checked::new(fs.disk()),
            gate: gate.clone(),
        }) as Box<dyn Disk>)
    })
}

/// Waits (generously) until `cond` holds.
fn wait_for(what: &str, cond: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

const BIG: usize = 40 * 1024;

/// A log whose first write-cache half is being flushed (held at the gate) and whose
/// active half is full: the next add of `BIG` bytes must wait for space.
fn log_with_a_held_flush(fs: &SimFs, gate: &Gate, max_throttle: Duration) -> Arc<EntryLog> {
    let cfg = EntryLogConfig {
        max_throttle,
        ..small_config() // 256 KiB: halves of 128 KiB
    };
    let log = Arc::new(EntryLog::open(dirs(), cfg, gated_factory(fs, gate)).expect("open"));
    gate.set_closed(true);
    let open_on_panic = OpenOnDrop(gate.clone());
    // Entries 0..3 fill the first half; entry 3 swaps it out to the (held) flusher;
    // 3..6 fill the active half again.
    for e in 0..6 {
        log.add_entry(1, e, entry(1, e, e as i64 - 1, BIG, e))
            .unwrap();
    }
    assert_eq!(get(&log.metrics().throttled_write_requests), 0);
    std::mem::forget(open_on_panic); // the caller's guard takes over
    log
}

#[test]
fn every_add_is_timed() {
    let fs = SimFs::new(1);
    let log = EntryLog::open(dirs(), small_config(), sim_factory(&fs)).unwrap();
    for e in 0..25 {
        log.add_entry(1, e, entry(1, e, e as i64 - 1, 100, e))
            .unwrap();
    }
    let m = log.metrics();
    assert_eq!(m.add_entry_latency.count(), 25);
    // A refused add is not recorded (Java records only successes).
    log.set_master_key(2, b"k").unwrap();
    let token = log.begin_gc_scan();
    log.gc(token, &|l| l != 2).unwrap();
    assert!(matches!(
        log.add_entry(2, 0, entry(2, 0, -1, 10, 0)),
        Err(Error::LedgerDeleted(2)) | Err(Error::NoLedger(2))
    ));
    assert_eq!(m.add_entry_latency.count(), 25);
    log.close().unwrap();
}

#[test]
fn a_throttled_add_records_its_wait_as_success_once_inserted() {
    let fs = SimFs::new(2);
    let gate = Gate::default();
    let log = log_with_a_held_flush(&fs, &gate, Duration::from_secs(60));
    let _open = OpenOnDrop(gate.clone());
    let adder = {
        let log = log.clone();
        std::thread::spawn(move || log.add_entry(1, 6, entry(1, 6, 5, BIG, 6)))
    };
    wait_for("the add to wait for space", || {
        get(&log.metrics().throttled_write_requests) == 1
    });
    std::thread::sleep(Duration::from_millis(20));
    gate.set_closed(false);
    adder
        .join()
        .unwrap()
        .expect("inserted once the flush is done");
    let m = log.metrics();
    assert_eq!(m.throttled_write_latency.count(), 1);
    assert!(
        m.throttled_write_latency.sum_us() >= 20_000,
        "waited at least the 20 ms the flush was held: {} µs",
        m.throttled_write_latency.sum_us()
    );
    assert_eq!(m.throttled_write_failed_latency.count(), 0);
    assert_eq!(m.add_entry_latency.count(), 7, "the throttled add too");
    assert_eq!(
        log.get_entry(1, EntrySelector::Id(6)).unwrap(),
        entry(1, 6, 5, BIG, 6)
    );
    Arc::try_unwrap(log).ok().unwrap().close().unwrap();
}

#[test]
fn a_throttled_add_refused_after_the_throttle_time_is_a_failure() {
    let fs = SimFs::new(3);
    let gate = Gate::default();
    let log = log_with_a_held_flush(&fs, &gate, Duration::from_millis(50));
    let _open = OpenOnDrop(gate.clone());
    let r = log.add_entry(1, 6, entry(1, 6, 5, BIG, 6));
    assert!(matches!(r, Err(Error::Throttled(_))), "{r:?}");
    let m = log.metrics();
    assert_eq!(get(&m.throttled_write_requests), 1);
    assert_eq!(get(&m.rejected_write_requests), 1);
    assert_eq!(m.throttled_write_latency.count(), 0);
    assert_eq!(m.throttled_write_failed_latency.count(), 1);
    assert!(m.throttled_write_failed_latency.sum_us() >= 50_000);
    assert_eq!(
        m.add_entry_latency.count(),
        6,
        "a refused add is not an add"
    );
    gate.set_closed(false);
    Arc::try_unwrap(log).ok().unwrap().close().unwrap();
}

#[test]
fn read_ahead_counts_its_bytes_and_time() {
    let fs = SimFs::new(4);
    let cfg = small_config(); // 8 entries per read-ahead
    let batch = cfg.readahead_entries as u64;
    let log = EntryLog::open(dirs(), cfg, sim_factory(&fs)).unwrap();
    assert_eq!(get(&log.metrics().readahead_max_batch_size), batch);
    for e in 0..40 {
        log.add_entry(1, e, entry(1, e, e as i64 - 1, 1000, e))
            .unwrap();
    }
    log.flush().unwrap();
    for e in 0..40 {
        assert_eq!(
            log.get_entry(1, EntrySelector::Id(e)).unwrap(),
            entry(1, e, e as i64 - 1, 1000, e)
        );
    }
    let m = log.metrics();
    let batches = get(&m.readahead_batch_count);
    let entries = get(&m.readahead_entries);
    assert!(batches >= 1, "sequential reads read ahead");
    // Every entry read ahead is 24 header bytes + 1000.
    assert_eq!(get(&m.readahead_bytes), entries * 1024);
    assert!(get(&m.readahead_time_ns) > 0);
    log.close().unwrap();
}

/// Paths of the segment files in the one ledger directory.
fn segment_files(fs: &SimFs) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs
        .disk()
        .list_dir(&dirs()[0])
        .unwrap()
        .into_iter()
        .filter(|p| p.extension().is_some_and(|x| x == "seg"))
        .map(|name| dirs()[0].join(name))
        .collect();
    v.sort();
    v
}

#[test]
fn a_segment_gc_cannot_remove_is_counted_and_retried_at_the_next_round() {
    let fs = SimFs::new(5);
    let log = EntryLog::open(dirs(), small_config(), sim_factory(&fs)).unwrap();
    // Ledgers 1, 2 and 3, one segment each.
    for l in 1..=3 {
        log.set_master_key(l, b"k").unwrap();
        for e in 0..10 {
            log.add_entry(l, e, entry(l, e, e as i64 - 1, 500, e))
                .unwrap();
        }
        log.flush().unwrap();
    }
    assert_eq!(segment_files(&fs).len(), 3);
    // Remove 1 is the ledger-state write's leftover-temp-file removal; 2 is the
    // first segment file's.
    fs.set_faults(Faults {
        fail_remove_nth: Some(2),
        ..Default::default()
    });
    let token = log.begin_gc_scan();
    let report = log
        .gc(token, &|l| l == 3)
        .expect("a failed removal fails no round");
    assert_eq!(report.deleted_ledgers, vec![1, 2]);
    assert_eq!(report.removed_segments, 1, "the round went on: {report:?}");
    let m = log.metrics();
    assert_eq!(get(&m.reclaim_failed_to_delete), 1);
    let left = segment_files(&fs);
    assert_eq!(left.len(), 2, "{left:?}");
    let failed = match fs.fault_log().as_slice() {
        [FaultEvent::RemoveEio { path }] => path.clone(),
        other => panic!("{other:?}"),
    };
    assert!(left.contains(&failed));
    let reclaimed = get(&m.reclaimed_deletion_space_bytes);
    // The next round (nothing new to delete) removes it.
    let token = log.begin_gc_scan();
    let report = log.gc(token, &|l| l == 3).unwrap();
    assert_eq!(report.removed_segments, 1, "{report:?}");
    assert_eq!(get(&m.reclaim_failed_to_delete), 1);
    assert!(get(&m.reclaimed_deletion_space_bytes) > reclaimed);
    assert_eq!(segment_files(&fs).len(), 1);
    assert!(matches!(
        log.get_entry(1, EntrySelector::Id(0)),
        Err(Error::NoLedger(1)) | Err(Error::LedgerDeleted(1))
    ));
    assert_eq!(
        log.get_entry(3, EntrySelector::Id(9)).unwrap(),
        entry(3, 9, 8, 500, 9)
    );
    log.close().unwrap();
    // Nothing came back.
    let log = EntryLog::open(dirs(), small_config(), sim_factory(&fs)).unwrap();
    assert!(log.get_entry(1, EntrySelector::Id(0)).is_err());
    assert_eq!(segment_files(&fs).len(), 1);
    log.close().unwrap();
}

#[test]
fn a_compacted_segment_that_cannot_be_removed_is_counted_and_retried() {
    let fs = SimFs::new(6);
    let log = EntryLog::open(dirs(), small_config(), sim_factory(&fs)).unwrap();
    // One segment, three quarters of it ledger 2's.
    for l in [1u64, 2, 2, 2] {
        log.set_master_key(l, b"k").unwrap();
    }
    for e in 0..10 {
        log.add_entry(1, e, entry(1, e, e as i64 - 1, 500, e))
            .unwrap();
    }
    for e in 0..30 {
        log.add_entry(2, e, entry(2, e, e as i64 - 1, 500, e))
            .unwrap();
    }
    log.flush().unwrap();
    let before = segment_files(&fs);
    assert_eq!(before.len(), 1);
    let token = log.begin_gc_scan();
    log.gc(token, &|l| l == 1).unwrap();
    fs.set_faults(Faults {
        fail_remove_nth: Some(2), // after the state write's (see above)
        ..Default::default()
    });
    let rep = log
        .compact(Some(0.5))
        .expect("a failed removal fails no pass");
    assert_eq!(rep.compacted_segments, 1, "{rep:?}");
    assert_eq!(get(&log.metrics().reclaim_failed_to_delete), 1);
    assert_eq!(
        fs.fault_log(),
        vec![FaultEvent::RemoveEio {
            path: before[0].clone()
        }]
    );
    // The pass's closing sweep of dead files retried it.
    assert_eq!(rep.removed_segments, 1, "{rep:?}");
    let now = segment_files(&fs);
    assert_eq!(now.len(), 1, "{now:?}");
    assert!(!now.contains(&before[0]));
    assert_eq!(
        log.get_entry(1, EntrySelector::Id(9)).unwrap(),
        entry(1, 9, 8, 500, 9)
    );
    log.close().unwrap();
}
