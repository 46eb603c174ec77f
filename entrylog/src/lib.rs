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

pub mod config;
pub mod disk_usage;
pub mod error;
pub mod format;
mod index;
pub mod metrics;
mod read_cache;
mod segment;
mod write_cache;

pub use bytes::Bytes;
pub use config::EntryLogConfig;
pub use disk_usage::{DirState, StorageMode};
pub use error::{Error, Result};
pub use metrics::{DirUsage, EntryLogMetrics, LatencyHistogram};

use bk_disk::{Disk, FileId, OpenOptions};
use disk_usage::Thresholds;
use format::{EntryLoc, LedgerStateRecord, StateFile};
use index::{Index, LedgerMeta, Run, SegmentMeta};
use metrics::EntryLogMetrics as M;
use parking_lot::{Condvar, Mutex};
use read_cache::ReadCache;
use segment::SegmentInput;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
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

/// Returned by [`EntryLog::begin_gc_scan`]: ledgers first seen after it are never
/// dropped by the [`EntryLog::gc`] call that uses it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GcScanToken(u64);

/// What a GC pass did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GcReport {
    pub deleted_ledgers: usize,
    pub removed_segments: usize,
    pub reclaimed_bytes: u64,
}

/// What a compaction pass did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CompactionReport {
    pub compacted_segments: usize,
    pub removed_segments: usize,
    pub bytes_copied: u64,
    pub reclaimed_bytes: u64,
}

const STATE_FILE: &str = "ledgers.state";

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
    checkpoints: u64,
    dir_states: Vec<DirState>,
    dir_free: Vec<u64>,
    closed: bool,
    flusher_backoff_until: Option<Instant>,
}

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
    /// For space checks and segment removal.
    aux_disk: Mutex<Box<dyn Disk>>,
    readers: Vec<Mutex<ReaderSlot>>,
    next_reader: AtomicUsize,
    read_cache: Mutex<ReadCache>,
    metrics: EntryLogMetrics,
    stop: AtomicBool,
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

fn explicit_lac_value(body: &[u8]) -> Option<u64> {
    let b: [u8; 8] = body.get(8..16)?.try_into().ok()?;
    let v = i64::from_be_bytes(b);
    (v >= 0).then_some(v as u64)
}

fn is_zero_key(k: &[u8]) -> bool {
    k.iter().all(|b| *b == 0)
}

impl EntryLog {
    /// Opens (or creates) the entry log over `dirs` (each a directory the entry log
    /// owns, e.g. `<ledgerDir>/current`). Deletes unfinished segment and state writes,
    /// loads every segment's trailer and footer, and the newest valid ledger-state file.
    /// A segment whose trailer or footer does not decode is `Error::Corruption`.
    pub fn open(dirs: Vec<PathBuf>, cfg: EntryLogConfig, factory: DiskFactory) -> Result<EntryLog> {
        cfg.validate().map_err(Error::InvalidInput)?;
        if dirs.is_empty() {
            return Err(Error::InvalidInput("no ledger directory".into()));
        }
        let mk =
            |what: &str| (factory)().map_err(|e| Error::io(format!("opening disk for {what}"), e));
        let mut disk = mk("start-up")?;
        let mut index = Index::default();
        let mut max_id = 0u64;
        let mut state: Option<StateFile> = None;
        let mut state_errors = Vec::new();
        let mut seg_files: Vec<(u64, usize, PathBuf)> = Vec::new();
        for (di, dir) in dirs.iter().enumerate() {
            disk.create_dir_all(dir)
                .map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
            let names = disk
                .list_dir(dir)
                .map_err(|e| Error::io(format!("listing {}", dir.display()), e))?;
            let mut removed = false;
            for n in names {
                let Some(name) = n.file_name().and_then(|s| s.to_str()).map(str::to_owned) else {
                    continue;
                };
                let path = dir.join(&name);
                if let Some((id, tmp)) = segment::parse_segment_name(&name) {
                    max_id = max_id.max(id);
                    if tmp {
                        disk.remove(&path)
                            .map_err(|e| Error::io(format!("removing {}", path.display()), e))?;
                        removed = true;
                    } else {
                        seg_files.push((id, di, path));
                    }
                } else if name == format!("{STATE_FILE}.tmp") {
                    disk.remove(&path)
                        .map_err(|e| Error::io(format!("removing {}", path.display()), e))?;
                    removed = true;
                } else if name == STATE_FILE {
                    match segment::read_small_file(disk.as_mut(), &path).and_then(|b| {
                        StateFile::decode(&b).map_err(|e| Error::Corruption {
                            path: path.clone(),
                            detail: e.to_string(),
                        })
                    }) {
                        Ok(s) => {
                            if state.as_ref().is_none_or(|cur| s.epoch > cur.epoch) {
                                state = Some(s);
                            }
                        }
                        Err(e) => state_errors.push(e),
                    }
                }
            }
            if removed {
                disk.sync_dir(dir)
                    .map_err(|e| Error::io(format!("syncing {}", dir.display()), e))?;
            }
        }
        if state.is_none() {
            if let Some(e) = state_errors.into_iter().next() {
                // Every copy of the ledger state is unreadable: starting without it
                // would forget fences and deletions.
                return Err(e);
            }
        }
        let state = state.unwrap_or_default();
        let tombstones: HashMap<u64, u64> = state.tombstones.iter().copied().collect();
        for rec in &state.ledgers {
            index.ledgers.insert(
                rec.ledger,
                LedgerMeta {
                    fenced: rec.fenced,
                    master_key: rec.master_key.clone(),
                    explicit_lac: rec.explicit_lac.clone().map(Bytes::from),
                    lac: rec.lac,
                    created_gen: 0,
                    runs: Vec::new(),
                },
            );
        }
        // Load footers, install in precedence order (seq, id).
        let mut loaded = Vec::with_capacity(seg_files.len());
        for (id, di, path) in seg_files {
            let (tr, runs, file_len) = segment::load_index(disk.as_mut(), &path)?;
            if tr.segment_id != id {
                return Err(Error::Corruption {
                    path,
                    detail: format!("trailer names segment {}", tr.segment_id),
                });
            }
            loaded.push((tr.seq, id, di, tr, runs, file_len));
        }
        loaded.sort_by_key(|x| (x.0, x.1));
        for (seq, id, di, tr, runs, file_len) in loaded {
            index.add_segment(
                id,
                SegmentMeta {
                    dir: di,
                    seq,
                    file_len,
                    data_bytes: tr.data_len,
                    live_bytes: 0,
                    ledgers: runs.iter().map(|r| r.ledger).collect(),
                    compacting: false,
                },
            );
            for r in runs {
                if tombstones.contains_key(&r.ledger) {
                    continue;
                }
                index.ledgers.entry(r.ledger).or_default();
                index.install_run(
                    r.ledger,
                    Run {
                        seg: id,
                        seq,
                        entries: r.entries,
                    },
                );
            }
        }
        let next_segment_id = state.next_segment_id.max(max_id + 1).max(1);
        let ndirs = dirs.len();
        let mut readers = Vec::with_capacity(cfg.readers);
        for _ in 0..cfg.readers {
            readers.push(Mutex::new(ReaderSlot {
                disk: mk("reads")?,
                files: HashMap::new(),
            }));
        }
        let aux = mk("maintenance")?;
        let metrics = EntryLogMetrics::default();
        M::set(&metrics.write_cache_max_size, cfg.write_cache_bytes as u64);
        let shared = Arc::new(Shared {
            read_cache: Mutex::new(ReadCache::new(cfg.read_cache_bytes)),
            dirs,
            factory: factory.clone(),
            inner: Mutex::new(Inner {
                index,
                tombstones,
                active: CacheHalf::default(),
                flushing: None,
                swaps: 0,
                flushed_swaps: 0,
                next_segment_id,
                generation: 1,
                state_epoch: state.epoch,
                checkpoints: state.checkpoints,
                dir_states: vec![DirState::Ok; ndirs],
                dir_free: vec![u64::MAX; ndirs],
                closed: false,
                flusher_backoff_until: None,
            }),
            cache_cv: Condvar::new(),
            flusher_cv: Condvar::new(),
            flush_lock: Mutex::new(disk),
            aux_disk: Mutex::new(aux),
            readers,
            next_reader: AtomicUsize::new(0),
            metrics,
            stop: AtomicBool::new(false),
            cfg,
        });
        shared.update_gauges();
        // Segments with nothing live (all their ledgers deleted) go now.
        shared.remove_dead_segments()?;
        let s2 = shared.clone();
        let flusher = std::thread::Builder::new()
            .name("entrylog-flusher".into())
            .spawn(move || s2.flusher_loop())
            .map_err(|e| Error::io("spawning the flusher thread", e))?;
        Ok(EntryLog {
            shared,
            flusher: Some(flusher),
        })
    }

    /// Adds (or replaces) an entry. Creates the ledger if unknown (without a master
    /// key: the bookie calls [`EntryLog::set_master_key`] first). The entry is readable
    /// at once and durable after the next successful [`EntryLog::flush`]. Blocks up to
    /// `max_throttle` while both cache halves are full, then `Error::Throttled`.
    pub fn add_entry(&self, ledger: u64, entry: u64, data: Bytes) -> Result<()> {
        self.shared.add_entry(ledger, entry, data)
    }

    /// Reads an entry: write cache, read cache, then segment (CRC-checked).
    pub fn get_entry(&self, ledger: u64, which: EntrySelector) -> Result<Bytes> {
        self.shared.get_entry(ledger, which)
    }

    /// Reads consecutive entries from `start`: the first is always returned (or its
    /// error); then entries `start+1, ...` while fewer than `max_count` (0 = no limit)
    /// and while the total of `4 + len` over returned entries stays within `max_bytes`;
    /// stops silently at the first entry that cannot be read (semantics.md 10.3: the
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

    /// Stores the master key (creating the ledger if unknown). An all-zero stored key is
    /// replaced; a different non-zero key is `MasterKeyConflict` (semantics.md 3).
    pub fn set_master_key(&self, ledger: u64, key: &[u8]) -> Result<()> {
        let mut g = self.shared.inner.lock();
        let g = &mut *g;
        Shared::check_not_deleted(g, ledger)?;
        let gen = g.generation;
        let meta = g.index.ledgers.entry(ledger).or_insert_with(|| LedgerMeta {
            created_gen: gen,
            ..Default::default()
        });
        match &meta.master_key {
            Some(k) if k.as_slice() == key => Ok(()),
            Some(k) if !is_zero_key(k) && !is_zero_key(key) => {
                Err(Error::MasterKeyConflict(ledger))
            }
            Some(k) if !is_zero_key(k) => Ok(()),
            _ => {
                meta.master_key = Some(key.to_vec());
                Ok(())
            }
        }
    }

    /// The stored master key.
    pub fn master_key(&self, ledger: u64) -> Result<Option<Vec<u8>>> {
        let g = self.shared.inner.lock();
        let m = g
            .index
            .ledgers
            .get(&ledger)
            .ok_or(Error::NoLedger(ledger))?;
        Ok(m.master_key.clone())
    }

    /// Fences the ledger (creating it if unknown). Returns true if this call changed it.
    /// Durable after the next successful `flush()`; the bookie journals the fence first.
    pub fn set_fenced(&self, ledger: u64) -> Result<bool> {
        let mut g = self.shared.inner.lock();
        let g = &mut *g;
        Shared::check_not_deleted(g, ledger)?;
        let gen = g.generation;
        let meta = g.index.ledgers.entry(ledger).or_insert_with(|| LedgerMeta {
            created_gen: gen,
            ..Default::default()
        });
        let changed = !meta.fenced;
        meta.fenced = true;
        Ok(changed)
    }

    /// Whether the ledger is fenced.
    pub fn is_fenced(&self, ledger: u64) -> Result<bool> {
        let g = self.shared.inner.lock();
        Ok(g.index
            .ledgers
            .get(&ledger)
            .ok_or(Error::NoLedger(ledger))?
            .fenced)
    }

    /// Stores an explicit LAC body (creating the ledger if unknown); its LAC value
    /// (body bytes 8..16, big-endian) raises the ledger's LAC.
    pub fn set_explicit_lac(&self, ledger: u64, body: Bytes) -> Result<()> {
        if body.len() > format::MAX_EXPLICIT_LAC_BYTES {
            return Err(Error::InvalidInput(format!(
                "explicit LAC of {} bytes",
                body.len()
            )));
        }
        let mut g = self.shared.inner.lock();
        let g = &mut *g;
        Shared::check_not_deleted(g, ledger)?;
        let gen = g.generation;
        let meta = g.index.ledgers.entry(ledger).or_insert_with(|| LedgerMeta {
            created_gen: gen,
            ..Default::default()
        });
        if let Some(v) = explicit_lac_value(&body) {
            meta.lac = Some(meta.lac.map_or(v, |l| l.max(v)));
        }
        meta.explicit_lac = Some(body);
        Ok(())
    }

    /// The stored explicit LAC body, if any.
    pub fn explicit_lac(&self, ledger: u64) -> Result<Option<Bytes>> {
        let g = self.shared.inner.lock();
        Ok(g.index
            .ledgers
            .get(&ledger)
            .ok_or(Error::NoLedger(ledger))?
            .explicit_lac
            .clone())
    }

    /// The ledger's LAC: the maximum of the LAC fields (entry bytes 16..24) of entries
    /// added, and of explicit LACs; initialised from the last stored entry when not yet
    /// known (semantics.md 8). None when nothing gives a LAC.
    pub fn lac(&self, ledger: u64) -> Result<Option<u64>> {
        self.shared.lac(ledger)
    }

    /// Whether the ledger exists (known and not deleted).
    pub fn ledger_exists(&self, ledger: u64) -> bool {
        self.shared.inner.lock().index.ledgers.contains_key(&ledger)
    }

    /// All ledger ids, ascending (for GC).
    pub fn ledgers(&self) -> Vec<u64> {
        let g = self.shared.inner.lock();
        let mut v: Vec<u64> = g.index.ledgers.keys().copied().collect();
        v.sort_unstable();
        v
    }

    /// The ids of the entries stored for the ledger, ascending (write cache and segments).
    pub fn entries_of_ledger(&self, ledger: u64) -> Result<Vec<u64>> {
        let g = self.shared.inner.lock();
        let m = g
            .index
            .ledgers
            .get(&ledger)
            .ok_or(Error::NoLedger(ledger))?;
        let mut v = m.entry_ids();
        v.extend(g.active.entry_ids(ledger));
        if let Some((f, _)) = &g.flushing {
            v.extend(f.entry_ids(ledger));
        }
        v.sort_unstable();
        v.dedup();
        Ok(v)
    }

    /// Deletes one ledger now and makes the deletion durable before returning.
    pub fn delete_ledger(&self, ledger: u64) -> Result<bool> {
        let n = self.shared.delete_ledgers(&[ledger]);
        self.shared.persist_state(false)?;
        self.shared.remove_dead_segments()?;
        Ok(n == 1)
    }

    /// Flushes: every entry added before the call is written to a durable, indexed
    /// segment, then the ledger state is made durable. Returns when all of it is
    /// durable; the bookie may then persist its journal checkpoint mark and trim.
    /// The bookie must call it from one loop: capture mark, flush(), persist mark.
    pub fn flush(&self) -> Result<()> {
        self.shared.flush()
    }

    /// Starts a GC scan: ledgers first seen after this call are kept by `gc`.
    pub fn begin_gc_scan(&self) -> GcScanToken {
        let mut g = self.shared.inner.lock();
        g.generation += 1;
        GcScanToken(g.generation)
    }

    /// Deletes every ledger that existed before `token` was taken and for which
    /// `live(ledger)` is false; persists the deletions, and removes segment files left
    /// with nothing live. `live` is called under the index lock: it must be cheap
    /// (a set lookup).
    pub fn gc(&self, token: GcScanToken, live: &dyn Fn(u64) -> bool) -> Result<GcReport> {
        let victims: Vec<u64> = {
            let g = self.shared.inner.lock();
            g.index
                .ledgers
                .iter()
                .filter(|(l, m)| m.created_gen < token.0 && !live(**l))
                .map(|(l, _)| *l)
                .collect()
        };
        let deleted = self.shared.delete_ledgers_if(&victims, token);
        if deleted > 0 {
            self.shared.persist_state(false)?;
        }
        let (removed, reclaimed) = self.shared.remove_dead_segments()?;
        M::add(
            &self.shared.metrics.reclaimed_deletion_space_bytes,
            reclaimed,
        );
        Ok(GcReport {
            deleted_ledgers: deleted,
            removed_segments: removed,
            reclaimed_bytes: reclaimed,
        })
    }

    /// Compacts segments whose live fraction is below `threshold` (None = the
    /// configured `compaction_threshold`): live entries are copied, at most
    /// `compaction_rate_bytes_per_sec`, into a new durable segment that keeps the old
    /// one's precedence; then the index switches over and the old file is removed.
    pub fn compact(&self, threshold: Option<f64>) -> Result<CompactionReport> {
        self.shared
            .compact(threshold.unwrap_or(self.shared.cfg.compaction_threshold))
    }

    /// Re-reads the space of every directory and updates the disk-usage state machine.
    pub fn check_disk_usage(&self) -> Result<StorageMode> {
        self.shared.check_disk_usage()
    }

    /// The storage mode from the last check (or an ENOSPC seen since).
    pub fn storage_mode(&self) -> StorageMode {
        disk_usage::mode_of(&self.shared.inner.lock().dir_states)
    }

    /// Usage of every directory (re-reads space).
    pub fn disk_usage(&self) -> Result<Vec<DirUsage>> {
        self.shared.check_disk_usage()?;
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
        let r = self.shared.flush();
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

enum ReadPlan {
    Done(Bytes),
    Disk {
        seg: u64,
        path: PathBuf,
        locs: Vec<EntryLoc>,
        entry: u64,
    },
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

    fn update_gauges_locked(&self, g: &Inner) {
        let m = &self.metrics;
        let (fb, fc) = g
            .flushing
            .as_ref()
            .map_or((0, 0), |(f, _)| (f.bytes(), f.count()));
        M::set(&m.write_cache_size, (g.active.bytes() + fb) as u64);
        M::set(&m.write_cache_count, (g.active.count() + fc) as u64);
        M::set(&m.active_segments, g.index.segments.len() as u64);
        M::set(
            &m.segment_space_bytes,
            g.index.segments.values().map(|s| s.file_len).sum(),
        );
        M::set(&m.active_ledgers, g.index.ledgers.len() as u64);
    }

    fn add_entry(&self, ledger: u64, entry: u64, data: Bytes) -> Result<()> {
        if data.len() > self.cfg.max_entry_bytes {
            return Err(Error::InvalidInput(format!(
                "entry of {} bytes exceeds the maximum {}",
                data.len(),
                self.cfg.max_entry_bytes
            )));
        }
        let half = self.cfg.write_cache_bytes / 2;
        let mut g = self.inner.lock();
        let mut deadline: Option<Instant> = None;
        loop {
            Self::check_not_deleted(&g, ledger)?;
            let used = g.active.bytes();
            if used == 0 || used + data.len() <= half {
                break;
            }
            if g.flushing.is_none() {
                self.swap_locked(&mut g);
                continue;
            }
            let d = *deadline.get_or_insert_with(|| {
                M::add(&self.metrics.throttled_write_requests, 1);
                Instant::now() + self.cfg.max_throttle
            });
            if self.cache_cv.wait_until(&mut g, d).timed_out() && g.flushing.is_some() {
                M::add(&self.metrics.rejected_write_requests, 1);
                return Err(Error::Throttled(self.cfg.max_throttle));
            }
        }
        let lac = lac_field(&data);
        g.active.put(ledger, entry, data);
        let gen = g.generation;
        let meta = g.index.ledgers.entry(ledger).or_insert_with(|| LedgerMeta {
            created_gen: gen,
            ..Default::default()
        });
        if let Some(v) = lac {
            meta.lac = Some(meta.lac.map_or(v, |l| l.max(v)));
        }
        // Flush-through: a full half goes to the flusher at once.
        if g.active.bytes() >= half && g.flushing.is_none() {
            self.swap_locked(&mut g);
        }
        self.update_gauges_locked(&g);
        drop(g);
        self.read_cache.lock().remove(ledger, entry);
        Ok(())
    }

    /// Moves the active half to flushing and wakes the flusher. Requires no flushing half.
    fn swap_locked(&self, g: &mut Inner) {
        debug_assert!(g.flushing.is_none());
        if g.active.is_empty() {
            return;
        }
        g.swaps += 1;
        let half = std::mem::take(&mut g.active);
        g.flushing = Some((Arc::new(half), g.swaps));
        self.flusher_cv.notify_all();
    }

    fn flusher_loop(&self) {
        loop {
            {
                let mut g = self.inner.lock();
                loop {
                    if self.stop.load(Ordering::SeqCst) {
                        return;
                    }
                    let ready = g.flushing.is_some()
                        && g.flusher_backoff_until.is_none_or(|t| Instant::now() >= t);
                    if ready {
                        break;
                    }
                    let wait = g
                        .flusher_backoff_until
                        .map_or(Duration::from_millis(500), |t| {
                            t.saturating_duration_since(Instant::now())
                        });
                    self.flusher_cv
                        .wait_for(&mut g, wait.max(Duration::from_millis(1)));
                }
            }
            let started = Instant::now();
            let mut disk = self.flush_lock.lock();
            let r = self
                .flush_flushing(disk.as_mut())
                .and_then(|_| self.persist_state_with(disk.as_mut(), false));
            drop(disk);
            match &r {
                Ok(()) => {
                    M::add(&self.metrics.flush_count, 1);
                    self.metrics.flush_latency.record(started.elapsed());
                }
                Err(_) => M::add(&self.metrics.flush_failures, 1),
            }
            let mut g = self.inner.lock();
            g.flusher_backoff_until = match r {
                Ok(()) => None,
                Err(e) => {
                    tracing::warn!(error = %e, "background flush failed; entries stay in the write cache");
                    Some(Instant::now() + Duration::from_millis(1000))
                }
            };
        }
    }

    fn flush(&self) -> Result<()> {
        let started = Instant::now();
        let mut disk = self.flush_lock.lock();
        let target = {
            let mut g = self.inner.lock();
            if g.closed {
                return Err(Error::Closed);
            }
            if g.flushing.is_none() {
                self.swap_locked(&mut g);
            }
            // Everything added before this call: the flushing half and, if not
            // empty, the active half (which takes the next swap number).
            g.swaps + u64::from(!g.active.is_empty())
        };
        let r = (|| {
            loop {
                let pending = {
                    let mut g = self.inner.lock();
                    if g.flushed_swaps >= target {
                        break;
                    }
                    if g.flushing.is_none() {
                        self.swap_locked(&mut g);
                    }
                    g.flushing.is_some()
                };
                if !pending {
                    break;
                }
                self.flush_flushing(disk.as_mut())?;
            }
            self.persist_state_with(disk.as_mut(), true)
        })();
        drop(disk);
        match &r {
            Ok(()) => {
                M::add(&self.metrics.flush_count, 1);
                self.metrics.flush_latency.record(started.elapsed());
            }
            Err(_) => M::add(&self.metrics.flush_failures, 1),
        }
        r
    }

    /// Picks the directory for a new segment: not full, most free space at the last
    /// check; ties rotate with the segment id so equal directories share the load.
    fn pick_dir(g: &Inner) -> usize {
        let n = g.dir_states.len();
        let first = (g.next_segment_id % n as u64) as usize;
        let mut best = first;
        for i in (first..n).chain(0..first) {
            let better_state = (g.dir_states[i] != DirState::Full) as u8
                > (g.dir_states[best] != DirState::Full) as u8;
            let same_state =
                (g.dir_states[i] == DirState::Full) == (g.dir_states[best] == DirState::Full);
            if better_state || (same_state && g.dir_free[i] > g.dir_free[best]) {
                best = i;
            }
        }
        best
    }

    /// Writes the flushing half as one segment and installs it. Caller holds flush_lock.
    fn flush_flushing(&self, disk: &mut dyn Disk) -> Result<()> {
        let (half, swap_no, id, dir) = {
            let mut g = self.inner.lock();
            let Some((half, swap_no)) = g.flushing.clone() else {
                return Ok(());
            };
            let id = g.next_segment_id;
            g.next_segment_id += 1;
            (half, swap_no, id, Self::pick_dir(&g))
        };
        let input = {
            let g = self.inner.lock();
            SegmentInput {
                ledgers: half
                    .sorted_ledgers()
                    .into_iter()
                    .filter(|(l, _)| g.index.ledgers.contains_key(l))
                    .map(|(l, m)| (l, m.iter().map(|(e, b)| (*e, b)).collect()))
                    .collect(),
            }
        };
        let written = if input.ledgers.is_empty() {
            None
        } else {
            match segment::write_segment(
                disk,
                &self.dirs[dir],
                id,
                id,
                &input,
                self.cfg.flush_write_bytes,
                self.cfg.flush_queue_depth,
                self.cfg.direct_io,
            ) {
                Ok(w) => Some(w),
                Err(e) => {
                    if e.is_no_space() {
                        self.inner.lock().dir_states[dir] = DirState::Full;
                    }
                    return Err(e);
                }
            }
        };
        drop(input);
        let mut g = self.inner.lock();
        if let Some(w) = written {
            M::add(&self.metrics.flush_bytes, w.data_len);
            g.index.add_segment(
                id,
                SegmentMeta {
                    dir,
                    seq: id,
                    file_len: w.file_len,
                    data_bytes: w.data_len,
                    live_bytes: 0,
                    ledgers: w.runs.iter().map(|r| r.ledger).collect(),
                    compacting: false,
                },
            );
            for r in w.runs {
                if g.index.ledgers.contains_key(&r.ledger) {
                    g.index.install_run(
                        r.ledger,
                        Run {
                            seg: id,
                            seq: id,
                            entries: r.entries,
                        },
                    );
                }
            }
        }
        g.flushing = None;
        g.flushed_swaps = swap_no;
        self.update_gauges_locked(&g);
        drop(g);
        self.cache_cv.notify_all();
        Ok(())
    }

    fn persist_state(&self, checkpoint: bool) -> Result<()> {
        let mut disk = self.flush_lock.lock();
        self.persist_state_with(disk.as_mut(), checkpoint)
    }

    /// Writes the ledger-state file to every directory (at least one must succeed).
    /// Caller holds flush_lock (passes its disk).
    fn persist_state_with(&self, disk: &mut dyn Disk, checkpoint: bool) -> Result<()> {
        let (bytes, epoch, checkpoints) = {
            let mut g = self.inner.lock();
            let g = &mut *g;
            g.state_epoch += 1;
            let checkpoints = g.checkpoints + checkpoint as u64;
            // A tombstone is dropped once no footer names the ledger and a checkpoint
            // has completed after the one following the deletion (so the journal no
            // longer holds records of it).
            let refs = &g.index.seg_refs;
            g.tombstones
                .retain(|l, at| refs.contains_key(l) || checkpoints < *at + 2);
            let mut ledgers: Vec<LedgerStateRecord> = g
                .index
                .ledgers
                .iter()
                .map(|(l, m)| LedgerStateRecord {
                    ledger: *l,
                    fenced: m.fenced,
                    master_key: m.master_key.clone(),
                    explicit_lac: m.explicit_lac.as_ref().map(|b| b.to_vec()),
                    lac: m.lac,
                })
                .collect();
            ledgers.sort_unstable_by_key(|r| r.ledger);
            let mut tombstones: Vec<(u64, u64)> =
                g.tombstones.iter().map(|(a, b)| (*a, *b)).collect();
            tombstones.sort_unstable();
            let s = StateFile {
                epoch: g.state_epoch,
                checkpoints,
                next_segment_id: g.next_segment_id,
                ledgers,
                tombstones,
            };
            (s.encode(), g.state_epoch, checkpoints)
        };
        let mut ok = false;
        let mut last_err = None;
        for (di, dir) in self.dirs.iter().enumerate() {
            match segment::replace_file(disk, dir, STATE_FILE, &bytes, self.cfg.direct_io) {
                Ok(()) => ok = true,
                Err(e) => {
                    if e.is_no_space() {
                        self.inner.lock().dir_states[di] = DirState::Full;
                    }
                    tracing::warn!(error = %e, epoch, "writing ledger state failed in one directory");
                    last_err = Some(e);
                }
            }
        }
        if !ok {
            return Err(last_err.unwrap_or(Error::InvalidInput("no directory".into())));
        }
        if checkpoint {
            let mut g = self.inner.lock();
            g.checkpoints = g.checkpoints.max(checkpoints);
        }
        Ok(())
    }

    fn delete_ledgers(&self, ledgers: &[u64]) -> usize {
        self.delete_ledgers_if(ledgers, GcScanToken(u64::MAX))
    }

    /// Deletes ledgers created before `token`; returns how many were deleted.
    fn delete_ledgers_if(&self, ledgers: &[u64], token: GcScanToken) -> usize {
        let mut dropped = HashSet::new();
        {
            let mut g = self.inner.lock();
            let g = &mut *g;
            let at = g.checkpoints;
            for l in ledgers {
                if g.index
                    .ledgers
                    .get(l)
                    .is_some_and(|m| m.created_gen < token.0)
                {
                    g.index.remove_ledger(*l);
                    g.active.remove_ledger(*l);
                    g.tombstones.insert(*l, at);
                    dropped.insert(*l);
                }
            }
            self.update_gauges_locked(g);
        }
        self.read_cache.lock().remove_ledgers(&dropped);
        M::add(&self.metrics.deleted_ledger_total, dropped.len() as u64);
        dropped.len()
    }

    /// Closes every reader's handle on a segment, then removes the file.
    fn remove_segment_file(&self, disk: &mut dyn Disk, seg: u64, path: &Path) -> Result<()> {
        for r in &self.readers {
            let mut r = r.lock();
            if let Some(f) = r.files.remove(&seg) {
                let _ = r.disk.close(f);
            }
        }
        match disk.remove(path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Error::io(format!("removing {}", path.display()), e)),
        }
    }

    /// Removes segments with no live bytes (not being compacted). Returns (count, bytes).
    fn remove_dead_segments(&self) -> Result<(usize, u64)> {
        let dead: Vec<(u64, usize, u64)> = {
            let mut g = self.inner.lock();
            let ids: Vec<u64> = g
                .index
                .segments
                .iter()
                .filter(|(_, s)| s.live_bytes == 0 && !s.compacting)
                .map(|(id, _)| *id)
                .collect();
            let mut v = Vec::new();
            for id in ids {
                // Drop any (dead) runs still pointing at it.
                if let Some(s) = g.index.segments.get(&id) {
                    for l in s.ledgers.clone() {
                        if let Some(m) = g.index.ledgers.get_mut(&l) {
                            m.runs.retain(|r| r.seg != id);
                        }
                    }
                }
                if let Some(s) = g.index.remove_segment(id) {
                    v.push((id, s.dir, s.file_len));
                }
            }
            self.update_gauges_locked(&g);
            v
        };
        if dead.is_empty() {
            return Ok((0, 0));
        }
        let mut disk = self.aux_disk.lock();
        let mut dirs = HashSet::new();
        let mut bytes = 0;
        for (id, dir, len) in &dead {
            self.remove_segment_file(disk.as_mut(), *id, &self.seg_path(*dir, *id))?;
            dirs.insert(*dir);
            bytes += len;
        }
        for d in dirs {
            disk.sync_dir(&self.dirs[d])
                .map_err(|e| Error::io(format!("syncing {}", self.dirs[d].display()), e))?;
        }
        Ok((dead.len(), bytes))
    }

    fn plan_read(&self, ledger: u64, which: EntrySelector) -> Result<ReadPlan> {
        let g = self.inner.lock();
        let meta = g
            .index
            .ledgers
            .get(&ledger)
            .ok_or(Error::NoLedger(ledger))?;
        let flushing = g.flushing.as_ref().map(|(f, _)| f);
        let entry = match which {
            EntrySelector::Id(e) => e,
            EntrySelector::Last => {
                let a = g.active.last(ledger).map(|(e, _)| e);
                let f = flushing.and_then(|f| f.last(ledger)).map(|(e, _)| e);
                let s = meta.last().map(|x| x.1.entry);
                [a, f, s]
                    .into_iter()
                    .flatten()
                    .max()
                    .ok_or(Error::NoEntry {
                        ledger,
                        entry: None,
                    })?
            }
        };
        if let Some(b) = g
            .active
            .get(ledger, entry)
            .or_else(|| flushing.and_then(|f| f.get(ledger, entry)))
        {
            M::add(&self.metrics.write_cache_hits, 1);
            return Ok(ReadPlan::Done(b.clone()));
        }
        M::add(&self.metrics.write_cache_misses, 1);
        let Some((seg, loc, ri, i)) = meta.lookup(entry) else {
            return Err(Error::NoEntry {
                ledger,
                entry: Some(entry),
            });
        };
        let mut rc = self.read_cache.lock();
        if let Some(b) = rc.get(ledger, entry, seg, loc.offset) {
            rc.note_read(ledger, entry);
            M::add(&self.metrics.read_cache_hits, 1);
            return Ok(ReadPlan::Done(b));
        }
        M::add(&self.metrics.read_cache_misses, 1);
        let sequential = rc.note_read(ledger, entry);
        drop(rc);
        let mut locs = vec![loc];
        if sequential && self.cfg.readahead_entries > 1 {
            let run = &meta.runs[ri];
            let mut bytes = loc.record_len();
            for next in run.entries.iter().skip(i + 1) {
                // Only current copies: a later run may hold a newer copy.
                let current = meta
                    .lookup(next.entry)
                    .is_some_and(|(s, l, _, _)| s == seg && l.offset == next.offset);
                if !current
                    || locs.len() >= self.cfg.readahead_entries
                    || bytes + next.record_len() > self.cfg.readahead_bytes as u64
                {
                    break;
                }
                bytes += next.record_len();
                locs.push(*next);
            }
        }
        let dir = g.index.segments.get(&seg).map_or(0, |s| s.dir);
        Ok(ReadPlan::Disk {
            seg,
            path: self.seg_path(dir, seg),
            locs,
            entry,
        })
    }

    fn get_entry(&self, ledger: u64, which: EntrySelector) -> Result<Bytes> {
        for attempt in 0..2 {
            let (seg, path, locs, entry) = match self.plan_read(ledger, which)? {
                ReadPlan::Done(b) => return Ok(b),
                ReadPlan::Disk {
                    seg,
                    path,
                    locs,
                    entry,
                } => (seg, path, locs, entry),
            };
            let started = Instant::now();
            match self.read_from_disk(seg, &path, ledger, &locs) {
                Ok(mut v) => {
                    self.metrics.read_entry_latency.record(started.elapsed());
                    if v.len() > 1 {
                        M::add(&self.metrics.readahead_batch_count, 1);
                        M::add(&self.metrics.readahead_entries, v.len() as u64 - 1);
                        let mut rc = self.read_cache.lock();
                        for (l, b) in locs.iter().zip(v.iter()).skip(1) {
                            rc.insert(ledger, l.entry, seg, l.offset, b.clone());
                        }
                        M::set(&self.metrics.read_cache_size, rc.bytes() as u64);
                        M::set(&self.metrics.read_cache_count, rc.count() as u64);
                    }
                    debug_assert_eq!(locs[0].entry, entry);
                    v.truncate(1);
                    return v.pop().ok_or(Error::NoEntry {
                        ledger,
                        entry: Some(entry),
                    });
                }
                // The segment was compacted away between planning and reading: retry.
                Err(Error::Io { source, .. })
                    if attempt == 0 && source.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        Err(Error::NoEntry {
            ledger,
            entry: None,
        })
    }

    fn with_reader<R>(&self, f: impl FnOnce(&mut ReaderSlot) -> R) -> R {
        let n = self.readers.len();
        let start = self.next_reader.fetch_add(1, Ordering::Relaxed);
        for k in 0..n {
            if let Some(mut r) = self.readers[(start + k) % n].try_lock() {
                return f(&mut r);
            }
        }
        let mut r = self.readers[start % n].lock();
        f(&mut r)
    }

    fn read_from_disk(
        &self,
        seg: u64,
        path: &Path,
        ledger: u64,
        locs: &[EntryLoc],
    ) -> Result<Vec<Bytes>> {
        let direct = self.cfg.direct_io;
        self.with_reader(|r| {
            let file = match r.files.get(&seg) {
                Some(f) => *f,
                None => {
                    // Bound open files: all readers together keep about 512.
                    if r.files.len() >= (512 / self.readers.len()).max(16) {
                        for (_, f) in r.files.drain() {
                            let _ = r.disk.close(f);
                        }
                    }
                    let f = r
                        .disk
                        .open(
                            path,
                            OpenOptions {
                                direct,
                                ..Default::default()
                            },
                        )
                        .map_err(|e| Error::io(format!("opening {}", path.display()), e))?;
                    r.files.insert(seg, f);
                    f
                }
            };
            segment::read_records(r.disk.as_mut(), file, path, ledger, locs)
        })
    }

    fn lac(&self, ledger: u64) -> Result<Option<u64>> {
        {
            let g = self.inner.lock();
            let m = g
                .index
                .ledgers
                .get(&ledger)
                .ok_or(Error::NoLedger(ledger))?;
            if m.lac.is_some() {
                return Ok(m.lac);
            }
        }
        let last = match self.get_entry(ledger, EntrySelector::Last) {
            Ok(b) => b,
            Err(Error::NoEntry { .. }) => return Ok(None),
            Err(e) => return Err(e),
        };
        let v = lac_field(&last);
        let mut g = self.inner.lock();
        let m = g
            .index
            .ledgers
            .get_mut(&ledger)
            .ok_or(Error::NoLedger(ledger))?;
        if let Some(v) = v {
            m.lac = Some(m.lac.map_or(v, |l| l.max(v)));
        }
        Ok(m.lac)
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
        for (i, s) in spaces.iter().enumerate() {
            let used = if s.total_bytes == 0 {
                1.0
            } else {
                1.0 - s.free_bytes as f64 / s.total_bytes as f64
            };
            g.dir_states[i] = disk_usage::next_dir_state(t, g.dir_states[i], used);
            g.dir_free[i] = s.free_bytes;
        }
        Ok(disk_usage::mode_of(&g.dir_states))
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

    fn compact(&self, threshold: f64) -> Result<CompactionReport> {
        let mut report = CompactionReport::default();
        let (removed, reclaimed) = self.remove_dead_segments()?;
        report.removed_segments += removed;
        report.reclaimed_bytes += reclaimed;
        let candidates: Vec<u64> = {
            let mut g = self.inner.lock();
            let mut c: Vec<(f64, u64)> = g
                .index
                .segments
                .iter()
                .filter(|(_, s)| !s.compacting && s.data_bytes > 0)
                .map(|(id, s)| (s.live_bytes as f64 / s.data_bytes as f64, *id))
                .filter(|(f, _)| *f < threshold)
                .collect();
            c.sort_by(|a, b| a.0.total_cmp(&b.0));
            for (_, id) in &c {
                if let Some(s) = g.index.segments.get_mut(id) {
                    s.compacting = true;
                }
            }
            c.into_iter().map(|(_, id)| id).collect()
        };
        if candidates.is_empty() {
            return Ok(report);
        }
        let mut disk = (self.factory)().map_err(|e| Error::io("opening disk for compaction", e))?;
        let started = Instant::now();
        let mut result = Ok(());
        let mut iter = candidates.iter();
        for &id in iter.by_ref() {
            if self.stop.load(Ordering::SeqCst) {
                break;
            }
            match self.compact_one(disk.as_mut(), id, started, &mut report) {
                Ok(()) => {}
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        // Release the segments not compacted.
        {
            let mut g = self.inner.lock();
            for id in &candidates {
                if let Some(s) = g.index.segments.get_mut(id) {
                    s.compacting = false;
                }
            }
            self.update_gauges_locked(&g);
        }
        result?;
        let (removed, reclaimed) = self.remove_dead_segments()?;
        report.removed_segments += removed;
        report.reclaimed_bytes += reclaimed;
        Ok(report)
    }

    fn compact_one(
        &self,
        disk: &mut dyn Disk,
        id: u64,
        started: Instant,
        report: &mut CompactionReport,
    ) -> Result<()> {
        // Live entries: current copies of existing ledgers held by this segment.
        let (seq, old_dir, old_len, live): (u64, usize, u64, Vec<(u64, Vec<EntryLoc>)>) = {
            let g = self.inner.lock();
            let Some(s) = g.index.segments.get(&id) else {
                return Ok(());
            };
            let mut live = Vec::new();
            for l in &s.ledgers {
                let Some(m) = g.index.ledgers.get(l) else {
                    continue;
                };
                let Some(run) = m.runs.iter().find(|r| r.seg == id) else {
                    continue;
                };
                let locs: Vec<EntryLoc> = run
                    .entries
                    .iter()
                    .filter(|e| {
                        m.lookup(e.entry)
                            .is_some_and(|(sg, loc, _, _)| sg == id && loc.offset == e.offset)
                    })
                    .copied()
                    .collect();
                if !locs.is_empty() {
                    live.push((*l, locs));
                }
            }
            (s.seq, s.dir, s.file_len, live)
        };
        let old_path = self.seg_path(old_dir, id);
        // Read live entries in batches of adjacent records, rate-limited.
        let file = disk
            .open(
                &old_path,
                OpenOptions {
                    direct: self.cfg.direct_io,
                    ..Default::default()
                },
            )
            .map_err(|e| Error::io(format!("opening {}", old_path.display()), e))?;
        let mut data: Vec<(u64, Vec<(u64, Bytes)>)> = Vec::with_capacity(live.len());
        let read = (|| -> Result<()> {
            for (l, locs) in &live {
                let mut out = Vec::with_capacity(locs.len());
                let mut i = 0;
                while i < locs.len() {
                    let mut j = i + 1;
                    let mut bytes = locs[i].record_len();
                    while j < locs.len()
                        && locs[j].offset == locs[j - 1].offset + locs[j - 1].record_len()
                        && bytes + locs[j].record_len() <= 1 << 20
                    {
                        bytes += locs[j].record_len();
                        j += 1;
                    }
                    let recs = segment::read_records(disk, file, &old_path, *l, &locs[i..j])?;
                    for (loc, b) in locs[i..j].iter().zip(recs) {
                        out.push((loc.entry, b));
                    }
                    report.bytes_copied += bytes;
                    M::add(&self.metrics.compaction_bytes_copied, bytes);
                    self.throttle(started, report.bytes_copied);
                    i = j;
                }
                data.push((*l, out));
            }
            Ok(())
        })();
        let _ = disk.close(file);
        read?;
        let (new_id, dir) = {
            let mut g = self.inner.lock();
            let nid = g.next_segment_id;
            g.next_segment_id += 1;
            (nid, Self::pick_dir(&g))
        };
        let written = if data.is_empty() {
            None
        } else {
            let input = SegmentInput {
                ledgers: data
                    .iter()
                    .map(|(l, v)| (*l, v.iter().map(|(e, b)| (*e, b)).collect()))
                    .collect(),
            };
            Some(segment::write_segment(
                disk,
                &self.dirs[dir],
                new_id,
                seq,
                &input,
                self.cfg.flush_write_bytes,
                self.cfg.flush_queue_depth,
                self.cfg.direct_io,
            )?)
        };
        // Switch the index over: the new run replaces the old one for entries whose
        // current copy is still the old segment's.
        {
            let mut g = self.inner.lock();
            let g = &mut *g;
            let mut new_live = 0u64;
            let new_file_len = written.as_ref().map_or(0, |w| w.file_len);
            if let Some(w) = &written {
                g.index.add_segment(
                    new_id,
                    SegmentMeta {
                        dir,
                        seq,
                        file_len: w.file_len,
                        data_bytes: w.data_len,
                        live_bytes: 0,
                        ledgers: w.runs.iter().map(|r| r.ledger).collect(),
                        compacting: false,
                    },
                );
                for r in &w.runs {
                    let Some(m) = g.index.ledgers.get_mut(&r.ledger) else {
                        continue;
                    };
                    let old_locs: HashMap<u64, u64> = live
                        .iter()
                        .find(|(l, _)| *l == r.ledger)
                        .map(|(_, v)| v.iter().map(|e| (e.entry, e.offset)).collect())
                        .unwrap_or_default();
                    let still: Vec<EntryLoc> = r
                        .entries
                        .iter()
                        .filter(|e| {
                            m.lookup(e.entry).is_some_and(|(sg, loc, _, _)| {
                                sg == id && old_locs.get(&e.entry) == Some(&loc.offset)
                            })
                        })
                        .copied()
                        .collect();
                    new_live += still.iter().map(|e| e.record_len()).sum::<u64>();
                    if let Some(pos) = m.runs.iter().position(|x| x.seg == id) {
                        if still.is_empty() {
                            m.runs.remove(pos);
                        } else {
                            m.runs[pos] = Run {
                                seg: new_id,
                                seq,
                                entries: still,
                            };
                        }
                    }
                }
                if let Some(s) = g.index.segments.get_mut(&new_id) {
                    s.live_bytes = new_live;
                }
            }
            // Whatever still points at the old segment is dead now.
            if let Some(s) = g.index.segments.get_mut(&id) {
                s.live_bytes = 0;
                for l in s.ledgers.clone() {
                    if let Some(m) = g.index.ledgers.get_mut(&l) {
                        m.runs.retain(|r| r.seg != id);
                    }
                }
            }
            g.index.remove_segment(id);
            report.reclaimed_bytes += old_len.saturating_sub(new_file_len);
            M::add(
                &self.metrics.reclaimed_compaction_space_bytes,
                old_len.saturating_sub(new_file_len),
            );
        }
        report.compacted_segments += 1;
        M::add(&self.metrics.compaction_total, 1);
        // The new segment is durable (write_segment synced it and its directory):
        // the old file may go.
        self.remove_segment_file(disk, id, &old_path)?;
        disk.sync_dir(&self.dirs[old_dir])
            .map_err(|e| Error::io(format!("syncing {}", self.dirs[old_dir].display()), e))?;
        Ok(())
    }

    /// Sleeps so that `copied` bytes since `started` stay within the compaction rate.
    fn throttle(&self, started: Instant, copied: u64) {
        let rate = self.cfg.compaction_rate_bytes_per_sec;
        if rate == 0 {
            return;
        }
        let due = Duration::from_secs_f64(copied as f64 / rate as f64);
        loop {
            let elapsed = started.elapsed();
            if due <= elapsed || self.stop.load(Ordering::SeqCst) {
                return;
            }
            std::thread::sleep((due - elapsed).min(Duration::from_millis(100)));
        }
    }
}
