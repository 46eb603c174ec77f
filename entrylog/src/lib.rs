//! bk-entrylog: the bookie's ledger storage (replaces Java's DbLedgerStorage, without
//! RocksDB). Entries go to a bounded write cache in two halves; a flush sorts one half
//! by (ledger, entry) and writes it as ONE segment file that carries its own index (a
//! footer plus a checksummed trailer). The in-memory index is rebuilt at start-up from
//! footers alone. Ledger state (master key, fenced, explicit LAC, LAC) and deletion
//! tombstones live in a small ledger-state file rewritten atomically at each flush.
//!
//! Guarantees (docs/durability.md "Entry log"):
//! - `flush()` returns Ok only when every entry added before the call is in a durable,
//!   indexed segment and the ledger state (incl. fences and deletions) is durable; only
//!   then may the bookie advance the journal checkpoint;
//! - every entry is stored with a CRC32C checked on every read; a mismatch is
//!   `Error::Corruption`, never `NoEntry`;
//! - a failed flush (ENOSPC, EIO) leaves the entries in the write cache and nothing
//!   visible on disk; a later flush retries;
//! - a deleted ledger stays deleted across restarts (tombstones);
//! - all file I/O goes through `bk_disk::Disk`.
//!
//! Threads: all methods take `&self` and may be called from many threads. Methods that
//! read or write the disk block; call them from blocking threads (e.g.
//! `tokio::task::spawn_blocking`). A background flusher thread flushes a full half.
//!
//! Modules: this file holds the [`EntryLog`] type, its shared state and the entry
//! API; `open` (start-up), `flush` (write cache -> segment, ledger-state file),
//! `read` (segment reads, read-ahead), `ledger_state` (master key, fence, LACs,
//! listing), `gc` (ledger deletion, dead-segment removal), `compaction`, `disk_usage`
//! (the read-only state machine), `report` (what GC and compaction return), `cancel`
//! (stopping them at shutdown), `segment` and `format` (the on-disk formats), `room`
//! (bounded segments, room per directory), `scrub` (checking one segment, pacing)
//! and `scrub_pass` (the pass over every segment), `corruption_report`, `index`, `write_cache`, `read_cache`, `metrics`.

pub mod cancel;
mod compaction;
pub mod config;
pub mod corruption_report;
pub mod disk_usage;
pub mod error;
mod flush;
mod flush_pace;
pub mod format;
mod gc;
mod index;
mod ledger_state;
pub mod metrics;
mod must_exist;
mod open;
mod read;
mod read_cache;
mod report;
mod room;
pub mod scrub;
mod scrub_pass;
mod segment;
mod write_cache;

pub use bytes::Bytes;
pub use cancel::Cancel;
pub use config::EntryLogConfig;
pub use corruption_report::{Corruption, FoundBy};
pub use disk_usage::{DirState, StorageMode};
pub use error::{Error, Result};
pub use gc::GcScanToken;
pub use metrics::{DirUsage, EntryLogMetrics, LatencyHistogram};
pub use report::{CompactionReport, GcReport};
pub use scrub::{ScrubRate, SCRUB_CHUNK_BYTES};
pub use scrub_pass::{ScrubProgress, ScrubReport};
/// Segment file names (`seg-<16 hex>.seg`), for offline readers such as `bookie inspect`.
pub use segment::{parse_segment_name, segment_name};

use bk_disk::{Disk, FileId};
use disk_usage::Thresholds;
use foldhash::HashMap;
use index::Index;
use metrics::EntryLogMetrics as M;
use parking_lot::{Condvar, Mutex};
use read_cache::ReadCache;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use write_cache::CacheHalf;

/// Creates a new `Disk` handle on the file system holding the ledger directories.
/// The entry log calls it once per reader, once for the flusher and once per
/// compaction run (each handle is used by one thread at a time).
pub type DiskFactory = Arc<dyn Fn() -> std::io::Result<Box<dyn Disk>> + Send + Sync>;

/// Which entry to read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntrySelector {
    /// A specific entry id.
    Id(u64),
    /// The highest entry id stored for the ledger (wire entry id -1).
    Last,
}

/// Name of the ledger-state file in every ledger directory (docs/formats.md).
pub const STATE_FILE: &str = "ledgers.state";

/// Everything behind the state lock.
struct Inner {
    index: Index,
    /// Deleted ledgers -> `checkpoints` at deletion.
    tombstones: HashMap<u64, u64>,
    active: CacheHalf,
    /// The half being flushed, with its swap number.
    flushing: Option<(Arc<CacheHalf>, u64)>,
    swaps: u64,
    flushed_swaps: u64,
    next_segment_id: u64,
    /// Ledger-creation generation (see `begin_gc_scan`).
    generation: u64,
    state_epoch: u64,
    /// The epoch of the newest ledger-state file written durably (or loaded at open):
    /// what [`EntryLog::durable_state_epoch`] reports for the caller's checkpoint.
    durable_state_epoch: u64,
    checkpoints: u64,
    dir_states: Vec<DirState>,
    dir_free: Vec<u64>,
    closed: bool,
    flusher_backoff_until: Option<Instant>,
    flusher_backoff: Duration,
    /// When the active half took its first entry since the last swap (or the log
    /// opened): how long a half took to fill paces its flush (`flush_pace`).
    active_since: Instant,
    /// How long the flushing half took to fill.
    flushing_fill: Duration,
    /// First (ledger, entry) of the flushing half not yet in a segment (a flush is cut
    /// into bounded segments and may stop part way, for lack of space).
    flush_cursor: Option<(u64, u64)>,
    /// The last flush failed for lack of space and none has succeeded since: the log is
    /// read-only and a full cache refuses adds at once.
    no_space: bool,
    /// Segment files no longer listed whose removal failed (or was cancelled): retried
    /// by the next GC or compaction round (gc.rs).
    undeleted: Vec<gc::DeadFile>,
}

/// The wall clock of a scrub pass, woken by its cancel.
struct WallClock {
    started: Instant,
    cancel: Cancel,
}

impl scrub::Clock for WallClock {
    fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }
    fn sleep(&mut self, d: Duration) -> bool {
        !self.cancel.sleep(d)
    }
    fn cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }
}

/// Who is told of storage-mode changes, and what it was told last.
#[derive(Default)]
struct ModeWatch {
    last: Option<StorageMode>,
    listener: Option<ModeListener>,
}

/// Called with the new storage mode whenever it changes (from a flush, a state write
/// or a disk check), on the thread that saw the change; must be cheap and not block.
pub type ModeListener = Box<dyn Fn(StorageMode) + Send + Sync>;

struct ReaderSlot {
    disk: Box<dyn Disk>,
    files: HashMap<u64, FileId>,
}

struct Shared {
    dirs: Vec<PathBuf>,
    cfg: EntryLogConfig,
    factory: DiskFactory,
    inner: Mutex<Inner>,
    /// Signalled when cache space frees up or a flush is needed.
    cache_cv: Condvar,
    flusher_cv: Condvar,
    /// Serialises flushes and ledger-state writes.
    flush_lock: Mutex<Box<dyn Disk>>,
    /// Callers waiting for `flush_lock` other than the flusher: while any does, a paced
    /// background flush runs at full speed (`flush_pace`).
    flush_lock_waiters: AtomicUsize,
    /// For space checks and segment removal.
    aux_disk: Mutex<Box<dyn Disk>>,
    readers: Vec<Mutex<ReaderSlot>>,
    next_reader: AtomicUsize,
    read_cache: Mutex<ReadCache>,
    /// Signalled (with `read_cache`) when a read-ahead batch finishes, so readers of
    /// entries it covers take them from the cache instead of reading them again.
    readahead_cv: Condvar,
    metrics: EntryLogMetrics,
    /// Corrupt entries already logged and counted (`corruption_report`).
    corrupt_reported: Mutex<corruption_report::Reported>,
    stop: AtomicBool,
    /// Serialises mode notifications, so listeners see changes in order.
    mode_watch: Mutex<ModeWatch>,
}

/// The entry log. See the crate docs.
pub struct EntryLog {
    shared: Arc<Shared>,
    flusher: Option<std::thread::JoinHandle<()>>,
}

fn lac_field(data: &[u8]) -> Option<u64> {
    let b: [u8; 8] = data.get(16..24)?.try_into().ok()?;
    let v = i64::from_be_bytes(b);
    (v >= 0).then_some(v as u64)
}

impl EntryLog {
    /// Adds (or replaces) an entry. Creates the ledger if unknown (without a master
    /// key: the bookie calls [`EntryLog::set_master_key`] first). The entry is readable
    /// at once and durable after the next successful [`EntryLog::flush`]. Blocks up to
    /// `max_throttle` while both cache halves are full, then `Error::Throttled`.
    /// While no directory has room to flush, a full cache refuses the add at once with
    /// `Error::OutOfSpace` instead.
    pub fn add_entry(&self, ledger: u64, entry: u64, data: Bytes) -> Result<()> {
        let crc = format::entry_crc(ledger, entry, &data);
        self.shared.add_entry(ledger, entry, data, crc, false)
    }

    /// [`EntryLog::add_entry`] with the entry's CRC already computed by the caller:
    /// `crc` must be [`format::entry_crc`]`(ledger, entry, &data)` (the journal record's
    /// payload CRC is the same function, so the bookie computes it once per add). It is
    /// written into the segment footer as given; a wrong one makes every later read of
    /// the entry fail its check (EIO), and debug builds assert it at flush.
    pub fn add_entry_with_crc(&self, ledger: u64, entry: u64, data: Bytes, crc: u32) -> Result<()> {
        self.shared.add_entry(ledger, entry, data, crc, false)
    }

    /// Start-up journal replay of an entry: skipped when a durable segment already holds
    /// that entry (so what replay puts in the write cache is what was not flushed when
    /// the bookie stopped), otherwise added like [`EntryLog::add_entry`] except that
    /// while no directory has room it is admitted over the cache bound, never refused:
    /// replay never fails for a full disk.
    pub fn add_replayed_entry(&self, ledger: u64, entry: u64, data: Bytes) -> Result<()> {
        {
            let g = self.shared.inner.lock();
            if g.index
                .ledgers
                .get(&ledger)
                .and_then(|m| m.lookup(entry))
                .is_some()
            {
                return Ok(());
            }
        }
        let crc = format::entry_crc(ledger, entry, &data);
        self.shared.add_entry(ledger, entry, data, crc, true)
    }

    /// Sets the one listener told of storage-mode changes (module `disk_usage`), and
    /// tells it the current mode at once.
    pub fn set_mode_listener(&self, listener: ModeListener) {
        {
            let mut w = self.shared.mode_watch.lock();
            w.listener = Some(listener);
            w.last = None;
        }
        self.shared.notify_mode();
    }

    /// Reads an entry: write cache, read cache, then segment (CRC-checked).
    pub fn get_entry(&self, ledger: u64, which: EntrySelector) -> Result<Bytes> {
        self.shared.get_entry(ledger, which)
    }

    /// Reads consecutive entries from `start`: the first is always returned (or its
    /// error); then entries `start+1, ...` while fewer than `max_count` (0 = no limit)
    /// and while the total of `4 + len` over returned entries stays within `max_bytes`;
    /// stops at the first entry that cannot be read, returning those before it (a
    /// corrupt one is logged and counted by the read; docs/semantics.md §10.3: the
    /// bookie passes `min(maxSize, maxBatchReadSize) - 36`).
    pub fn get_entries(
        &self,
        ledger: u64,
        start: u64,
        max_count: usize,
        max_bytes: usize,
    ) -> Result<Vec<Bytes>> {
        let first = self.get_entry(ledger, EntrySelector::Id(start))?;
        let mut total = 4 + first.len();
        let mut out = vec![first];
        let mut next = start;
        while max_count == 0 || out.len() < max_count {
            let Some(n) = next.checked_add(1) else { break };
            next = n;
            match self.get_entry(ledger, EntrySelector::Id(next)) {
                Ok(b) => {
                    if total + 4 + b.len() > max_bytes {
                        break;
                    }
                    total += 4 + b.len();
                    out.push(b);
                }
                Err(_) => break,
            }
        }
        Ok(out)
    }

    /// The epoch of the newest ledger-state file written durably (loaded at open, then
    /// raised by every flush, GC and compaction that wrote one). A caller that records it
    /// after a flush (the bookie, in its journal checkpoint) and passes it back as
    /// `EntryLogConfig::min_state_epoch` has an older copy of the file refused.
    pub fn durable_state_epoch(&self) -> u64 {
        self.shared.inner.lock().durable_state_epoch
    }

    /// The caller's checkpoint after a successful [`EntryLog::flush`] is durable (its
    /// journal mark persisted). Counts it when the log was opened with
    /// `EntryLogConfig::checkpoints_confirmed_by_caller` (persisted with the next state
    /// write); otherwise a no-op, each flush counting itself.
    pub fn checkpoint_confirmed(&self) {
        if self.shared.cfg.checkpoints_confirmed_by_caller {
            self.shared.inner.lock().checkpoints += 1;
        }
    }

    /// Flushes: every entry added before the call is written to a durable, indexed
    /// segment, then the ledger state is made durable. Returns when all of it is
    /// durable; the bookie may then persist its journal checkpoint mark and trim.
    /// The bookie must call it from one loop: capture mark, flush(), persist mark.
    pub fn flush(&self) -> Result<()> {
        self.shared.flush(None)
    }

    /// [`EntryLog::flush`] at a pace (`flush_pace`; `EntryLogConfig::flush_pace_min_bytes_per_sec`)
    /// so that the halves it writes do not reach the device in one burst: for a periodic
    /// checkpoint, which nothing waits for. Runs at full speed once `hurry()` is true (the
    /// caller's reasons) or the log's own reasons hold (someone waits for a flush or a
    /// state write, the active half is half full, the log is stopping).
    pub fn flush_paced(&self, hurry: &dyn Fn() -> bool) -> Result<()> {
        self.shared.flush(Some(hurry))
    }

    /// Compacts segments whose live fraction is below `threshold` (None = the
    /// configured `compaction_threshold`) and merges runs of small segments: live
    /// entries are copied, within the compaction rates (bytes and entries per second),
    /// into a new durable segment; then the index switches over and the old files are
    /// removed.
    pub fn compact(&self, threshold: Option<f64>) -> Result<CompactionReport> {
        self.compact_until(threshold, &Cancel::new())
    }

    /// [`EntryLog::compact`] that stops when `cancel` is cancelled (checked per read
    /// batch and per entry written; the rate-limit sleep wakes on it): a group whose
    /// output segment is not durable yet is discarded (its `.tmp` removed, the index
    /// untouched), one already durable is installed. The report says `cancelled`.
    pub fn compact_until(
        &self,
        threshold: Option<f64>,
        cancel: &Cancel,
    ) -> Result<CompactionReport> {
        self.compact_within(threshold, None, cancel)
    }

    /// [`EntryLog::compact_until`] that starts no further group once the pass has run for
    /// `max_time` (stock `minor/majorCompactionMaxTimeMillis`; `None` = unbounded). As
    /// Java's GC thread checks its max time before each entry log, the check is before each
    /// group: a group in progress is finished, so every pass makes progress. The report
    /// says `max_time_reached`.
    pub fn compact_within(
        &self,
        threshold: Option<f64>,
        max_time: Option<std::time::Duration>,
        cancel: &Cancel,
    ) -> Result<CompactionReport> {
        self.shared.compact(
            threshold.unwrap_or(self.shared.cfg.compaction_threshold),
            max_time,
            cancel,
        )
    }

    /// One scrub pass (entrylog/src/scrub_pass.rs): checks every finished segment (trailer,
    /// footer, every entry's CRC32C) at `rate`, reporting what it finds as reads do
    /// ([`EntryLog::corruptions`]). Stops early (report `cancelled`) when `cancel` is
    /// cancelled or the log closes; `progress` shows how far it is while it runs.
    pub fn scrub(
        &self,
        rate: ScrubRate,
        cancel: &Cancel,
        progress: &ScrubProgress,
    ) -> Result<ScrubReport> {
        let mut pace = scrub::RatedPace {
            rate,
            clock: WallClock {
                started: Instant::now(),
                cancel: cancel.clone(),
            },
        };
        self.shared.scrub(&mut pace, SCRUB_CHUNK_BYTES, progress)
    }

    /// [`EntryLog::scrub`] paced by `pace`, reading `chunk` bytes at a time (tests: a
    /// simulated clock).
    pub fn scrub_paced(
        &self,
        pace: &mut dyn scrub::Pace,
        chunk: usize,
        progress: &ScrubProgress,
    ) -> Result<ScrubReport> {
        self.shared.scrub(pace, chunk, progress)
    }

    /// Every corruption detected since the log opened, by reads and scrubs, each stored
    /// copy once, oldest first; and how many more there were than the list holds.
    pub fn corruptions(&self) -> (Vec<Corruption>, u64) {
        self.shared.corrupt_reported.lock().listed()
    }

    /// Re-reads the space of every directory and updates the disk-usage state machine.
    pub fn check_disk_usage(&self) -> Result<StorageMode> {
        self.shared.check_disk_usage()
    }

    /// The storage mode from the last check (or an ENOSPC seen since).
    pub fn storage_mode(&self) -> StorageMode {
        self.shared.mode()
    }

    /// Usage of every directory (re-reads space).
    pub fn disk_usage(&self) -> Result<Vec<DirUsage>> {
        self.shared.check_disk_usage()?;
        self.shared.dir_usages()
    }

    /// Usage of every directory now (statvfs), with the state of the last check; unlike
    /// [`EntryLog::disk_usage`] it changes no state (the metrics read it at scrape time).
    pub fn dir_usages(&self) -> Result<Vec<DirUsage>> {
        self.shared.dir_usages()
    }

    /// Test aid: (segment, seq, entry ids) of each run of a ledger, in precedence order.
    #[doc(hidden)]
    pub fn debug_runs(&self, ledger: u64) -> Vec<(u64, u64, Vec<u64>)> {
        let g = self.shared.inner.lock();
        g.index.ledgers.get(&ledger).map_or(Vec::new(), |m| {
            m.runs
                .iter()
                .map(|r| (r.seg, r.seq, r.entries.iter().map(|e| e.entry).collect()))
                .collect()
        })
    }

    /// Metrics for export.
    pub fn metrics(&self) -> &EntryLogMetrics {
        &self.shared.metrics
    }

    /// Flushes and stops the flusher thread. Further calls fail with `Closed`.
    pub fn close(mut self) -> Result<()> {
        let r = self.shared.flush(None);
        self.stop_flusher();
        r
    }

    fn stop_flusher(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        {
            let mut g = self.shared.inner.lock();
            g.closed = true;
        }
        self.shared.flusher_cv.notify_all();
        self.shared.cache_cv.notify_all();
        if let Some(h) = self.flusher.take() {
            let _ = h.join();
        }
    }
}

impl Drop for EntryLog {
    /// Stops the flusher without flushing: what is not flushed is in the journal.
    fn drop(&mut self) {
        self.stop_flusher();
    }
}

impl Shared {
    fn check_not_deleted(g: &Inner, ledger: u64) -> Result<()> {
        if g.closed {
            return Err(Error::Closed);
        }
        if g.tombstones.contains_key(&ledger) {
            return Err(Error::LedgerDeleted(ledger));
        }
        Ok(())
    }

    fn seg_path(&self, dir: usize, id: u64) -> PathBuf {
        self.dirs[dir].join(segment::segment_name(id))
    }

    fn update_gauges(&self) {
        let g = self.inner.lock();
        self.update_gauges_locked(&g);
    }

    /// Write-cache gauges only (cheap: called on every add).
    fn update_cache_gauges_locked(&self, g: &Inner) {
        let m = &self.metrics;
        let (fb, fc) = g
            .flushing
            .as_ref()
            .map_or((0, 0), |(f, _)| (f.bytes(), f.count()));
        M::set(&m.write_cache_size, (g.active.bytes() + fb) as u64);
        M::set(&m.write_cache_count, (g.active.count() + fc) as u64);
    }

    fn update_gauges_locked(&self, g: &Inner) {
        let m = &self.metrics;
        self.update_cache_gauges_locked(g);
        M::set(&m.active_segments, g.index.segments.len() as u64);
        M::set(
            &m.segment_space_bytes,
            g.index.segments.values().map(|s| s.file_len).sum(),
        );
        M::set(&m.active_ledgers, g.index.ledgers.len() as u64);
        M::set(
            &m.entries_count,
            g.index
                .ledgers
                .values()
                .flat_map(|l| l.runs.iter())
                .map(|r| r.entries.len() as u64)
                .sum(),
        );
    }

    /// Read-only while the directory states say so (`readOnlyModeOnAnyDiskFullEnabled`)
    /// or while flushing is blocked for lack of space.
    fn mode_locked(&self, g: &Inner) -> StorageMode {
        if g.no_space {
            return StorageMode::ReadOnly;
        }
        disk_usage::mode_of(&g.dir_states, self.cfg.read_only_on_any_dir_full)
    }

    fn mode(&self) -> StorageMode {
        self.mode_locked(&self.inner.lock())
    }

    /// Tells the listener the current mode if it changed since it was last told.
    pub(crate) fn notify_mode(&self) {
        let mut w = self.mode_watch.lock();
        let mode = self.mode();
        if w.last != Some(mode) {
            w.last = Some(mode);
            if let Some(l) = &w.listener {
                l(mode);
            }
        }
    }

    fn check_disk_usage(&self) -> Result<StorageMode> {
        let t = Thresholds {
            full: self.cfg.disk_usage_threshold,
            warn: self.cfg.disk_usage_warn_threshold,
            lwm: self.cfg.disk_usage_lwm_threshold,
        };
        let mut spaces = Vec::with_capacity(self.dirs.len());
        {
            let mut disk = self.aux_disk.lock();
            for d in &self.dirs {
                spaces.push(
                    disk.space(d)
                        .map_err(|e| Error::io(format!("statvfs {}", d.display()), e))?,
                );
            }
        }
        let mut g = self.inner.lock();
        let mut room_again = false;
        let mut changed = Vec::new();
        for (i, s) in spaces.iter().enumerate() {
            let used = if s.total_bytes == 0 {
                1.0
            } else {
                1.0 - s.free_bytes as f64 / s.total_bytes as f64
            };
            let prev = g.dir_states[i];
            let mut next = disk_usage::next_dir_state(t, prev, used);
            // A directory that turned full for lack of room for the next segment stays
            // full until that room is there (else it would flap at the threshold).
            let need = room::segment_bytes(self.cfg.flush_write_bytes as u64, 1, 1);
            if prev == DirState::Full && room::room(s.total_bytes, s.free_bytes, t.full) < need {
                next = DirState::Full;
            }
            room_again |= prev == DirState::Full && next != DirState::Full;
            if next != prev {
                changed.push((i, prev, next, used));
            }
            g.dir_states[i] = next;
            g.dir_free[i] = s.free_bytes;
        }
        if room_again {
            // Retry a flush blocked for space now, not at the end of its backoff.
            g.flusher_backoff_until = None;
            g.flusher_backoff = Duration::ZERO;
            self.flusher_cv.notify_all();
        }
        let mode = self.mode_locked(&g);
        drop(g);
        for (i, prev, next, used) in changed {
            // diskUsageWarnThreshold / diskUsageThreshold / diskUsageLwmThreshold, as
            // Java's LedgerDirsMonitor names each directory that crosses one.
            let dir = self.dirs[i].display();
            match next {
                DirState::AlmostFull => {
                    tracing::warn!(%dir, used, "ledger directory almost full (above diskUsageWarnThreshold)")
                }
                DirState::Full => {
                    tracing::warn!(%dir, used, "ledger directory full (above diskUsageThreshold, or no room for a segment)")
                }
                DirState::Ok => {
                    tracing::info!(%dir, used, ?prev, "ledger directory usage back below diskUsageWarnThreshold")
                }
            }
        }
        self.notify_mode();
        Ok(mode)
    }

    fn dir_usages(&self) -> Result<Vec<DirUsage>> {
        let mut disk = self.aux_disk.lock();
        let states = self.inner.lock().dir_states.clone();
        let mut out = Vec::new();
        for (i, d) in self.dirs.iter().enumerate() {
            let s = disk
                .space(d)
                .map_err(|e| Error::io(format!("statvfs {}", d.display()), e))?;
            out.push(DirUsage {
                path: d.clone(),
                used_fraction: if s.total_bytes == 0 {
                    1.0
                } else {
                    1.0 - s.free_bytes as f64 / s.total_bytes as f64
                },
                total_bytes: s.total_bytes,
                free_bytes: s.free_bytes,
                state: states[i],
            });
        }
        Ok(out)
    }
}
