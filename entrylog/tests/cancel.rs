//! Cancelling compaction and GC (the bookie does it at SIGTERM, docs/semantics.md §16):
//! a cancelled pass returns promptly, even from its rate-limit sleep or in the middle of
//! writing its output segment, leaves no `.tmp` behind, keeps every live entry readable
//! byte-exact, and the entry log reopens and compacts normally afterwards. Also: the
//! entries-per-second rate (`compactionRateByEntries`) is honoured.

mod common;

use bk_disk::{Checked, Completion, Disk, FileId, Op, OpenOptions, SimDisk, SimFs, SpaceInfo};
use bk_entrylog::{Cancel, DiskFactory, EntryLog, EntrySelector};
use common::{dirs, entry, sim_factory, small_config};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const ENTRIES: u64 = 100;
const LEN: usize = 2000;

/// Four ledgers interleaved over a few segments, then ledgers 2-4 deleted: 3/4 of every
/// segment is garbage and ledger 1 is what compaction copies.
fn fill_and_delete(log: &EntryLog) {
    for e in 0..ENTRIES {
        for l in 1..=4u64 {
            log.add_entry(l, e, entry(l, e, -1, LEN, e)).unwrap();
        }
        if e % 25 == 24 {
            log.flush().unwrap();
        }
    }
    log.flush().unwrap();
    let token = log.begin_gc_scan();
    let rep = log.gc(token, &|l| l == 1).unwrap();
    assert_eq!(rep.deleted_ledgers, vec![2, 3, 4]);
}

fn assert_ledger_1_intact(log: &EntryLog) {
    for e in 0..ENTRIES {
        assert_eq!(
            log.get_entry(1, EntrySelector::Id(e)).unwrap(),
            entry(1, e, -1, LEN, e),
            "entry {e}"
        );
    }
}

/// The files of the ledger directory as the running process sees them, sorted.
fn files(fs: &SimFs) -> Vec<PathBuf> {
    let mut v = fs.disk().list_dir(&dirs()[0]).unwrap();
    v.sort();
    v
}

fn tmp_files(fs: &SimFs) -> Vec<PathBuf> {
    files(fs)
        .into_iter()
        .filter(|p| p.to_string_lossy().ends_with(".tmp"))
        .collect()
}

#[test]
fn cancel_wakes_a_rate_limited_compaction_and_loses_nothing() {
    let fs = SimFs::new(21);
    let mut cfg = small_config();
    // ~200 KB to copy at 1 KB/s: the first read batch (one segment's 50 KB) alone is
    // due ~50 s later, so only a sleep that wakes on the cancel returns in time.
    cfg.compaction_rate_bytes_per_sec = 1_000;
    let log = Arc::new(EntryLog::open(dirs(), cfg.clone(), sim_factory(&fs)).unwrap());
    fill_and_delete(&log);
    let cancel = Cancel::new();
    let compaction = {
        let (log, cancel) = (log.clone(), cancel.clone());
        std::thread::spawn(move || {
            let started = Instant::now();
            (log.compact_until(Some(0.5), &cancel), started.elapsed())
        })
    };
    std::thread::sleep(Duration::from_millis(300));
    cancel.cancel();
    let (rep, took) = compaction.join().unwrap();
    let rep = rep.unwrap();
    assert!(rep.cancelled, "{rep:?}");
    assert_eq!(rep.compacted_segments, 0, "{rep:?}");
    assert!(rep.bytes_copied > 0, "the copy had started: {rep:?}");
    assert!(took < Duration::from_secs(10), "took {took:?} after cancel");
    assert!(tmp_files(&fs).is_empty(), "{:?}", tmp_files(&fs));
    assert_ledger_1_intact(&log);

    // Reopened, the log holds everything, and an uncancelled compaction finishes.
    let log = Arc::into_inner(log).unwrap();
    log.close().unwrap();
    cfg.compaction_rate_bytes_per_sec = 0;
    let log = EntryLog::open(dirs(), cfg, sim_factory(&fs)).unwrap();
    assert_ledger_1_intact(&log);
    let rep = log.compact(Some(0.5)).unwrap();
    assert!(!rep.cancelled && rep.compacted_segments > 0, "{rep:?}");
    assert_ledger_1_intact(&log);
}

/// A disk that cancels `cancel` when a segment's `.tmp` is opened while `armed`: the
/// compaction is then cancelled between creating its output file and its first entry.
struct CancelOnTmpOpen {
    inner: Checked<SimDisk>,
    armed: Arc<AtomicBool>,
    cancel: Cancel,
}

impl Disk for CancelOnTmpOpen {
    fn open(&mut self, path: &Path, opts: OpenOptions) -> io::Result<FileId> {
        if self.armed.load(Ordering::SeqCst) && path.to_string_lossy().ends_with(".seg.tmp") {
            self.cancel.cancel();
        }
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
        self.inner.submit(user_data, op)
    }
    fn reap(&mut self, min: usize) -> Vec<Completion> {
        self.inner.reap(min)
    }
    fn in_flight(&self) -> usize {
        self.inner.in_flight()
    }
}

#[test]
fn cancel_while_writing_the_output_discards_it() {
    let fs = SimFs::new(22);
    let armed = Arc::new(AtomicBool::new(false));
    let cancel = Cancel::new();
    let factory: DiskFactory = {
        let (fs, armed, cancel) = (fs.clone(), armed.clone(), cancel.clone());
        Arc::new(move || {
            Ok(Box::new(CancelOnTmpOpen {
                inner: Checked::new(fs.disk()),
                armed: armed.clone(),
                cancel: cancel.clone(),
            }) as Box<dyn Disk>)
        })
    };
    let log = EntryLog::open(dirs(), small_config(), factory).unwrap();
    fill_and_delete(&log);
    let segments_before = files(&fs);
    armed.store(true, Ordering::SeqCst);
    let rep = log.compact_until(Some(0.5), &cancel).unwrap();
    assert!(rep.cancelled, "{rep:?}");
    assert!(rep.bytes_copied > 0, "it got as far as writing: {rep:?}");
    assert_eq!(
        (rep.compacted_segments, rep.output_segments),
        (0, 0),
        "{rep:?}"
    );
    assert!(tmp_files(&fs).is_empty(), "{:?}", tmp_files(&fs));
    assert_eq!(files(&fs), segments_before, "the group stays as it was");
    assert_ledger_1_intact(&log);
    log.close().unwrap();
    let log = EntryLog::open(dirs(), small_config(), sim_factory(&fs)).unwrap();
    assert_ledger_1_intact(&log);
}

#[test]
fn cancelled_gc_deletes_nothing() {
    let fs = SimFs::new(23);
    let log = EntryLog::open(dirs(), small_config(), sim_factory(&fs)).unwrap();
    log.add_entry(1, 0, entry(1, 0, -1, 10, 0)).unwrap();
    log.flush().unwrap();
    let cancel = Cancel::new();
    cancel.cancel();
    let token = log.begin_gc_scan();
    let rep = log.gc_until(token, &|_| false, &cancel).unwrap();
    assert!(rep.cancelled && rep.deleted_ledgers.is_empty(), "{rep:?}");
    assert!(log.ledger_exists(1));
}

#[test]
fn compaction_honours_an_entries_per_second_rate() {
    let fs = SimFs::new(24);
    let mut cfg = small_config();
    cfg.compaction_rate_entries_per_sec = 200;
    let log = EntryLog::open(dirs(), cfg, sim_factory(&fs)).unwrap();
    fill_and_delete(&log);
    let started = Instant::now();
    let rep = log.compact(Some(0.5)).unwrap();
    let took = started.elapsed();
    assert_eq!(rep.entries_copied, ENTRIES, "{rep:?}");
    // 100 entries at 200 per second: at least 0.4 s.
    assert!(
        took >= Duration::from_millis(400),
        "not rate-limited: {took:?}"
    );
    assert_ledger_1_intact(&log);
}

/// `minor/majorCompactionMaxTimeMillis`: a pass starts no group once it has run for its
/// max time (checked before each group, as Java checks before each entry log), so the
/// group in progress finishes and the rest waits for the next pass.
#[test]
fn compaction_max_time_stops_a_pass_between_groups() {
    let fs = SimFs::new(25);
    let mut cfg = small_config();
    // 25 live entries a segment at 40 entries/s: each group takes at least 0.6 s, twice
    // the max time, so the pass stops after its first group.
    cfg.compaction_rate_entries_per_sec = 40;
    let log = EntryLog::open(dirs(), cfg, sim_factory(&fs)).unwrap();
    fill_and_delete(&log);
    let rep = log
        .compact_within(Some(0.5), Some(Duration::from_millis(300)), &Cancel::new())
        .unwrap();
    assert!(rep.max_time_reached && !rep.cancelled, "{rep:?}");
    assert_eq!(
        rep.compacted_segments, 1,
        "one group, then the max time: {rep:?}"
    );
    assert!(tmp_files(&fs).is_empty(), "{:?}", tmp_files(&fs));
    assert_ledger_1_intact(&log);
    // The next, unbounded pass compacts what the bounded one left.
    let rest = log.compact_within(Some(0.5), None, &Cancel::new()).unwrap();
    assert!(!rest.max_time_reached, "{rest:?}");
    assert!(rest.compacted_segments >= 1, "segments were left: {rest:?}");
    assert_ledger_1_intact(&log);
}
