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

mod compaction;
pub mod config;
pub mod disk_usage;
pub mod error;
mod flush;
pub mod format;
mod index;
pub mod metrics;
mod read;
mod read_cache;
mod segment;
mod write_cache;

pub use bytes::Bytes;
pub use config::EntryLogConfig;
pub use disk_usage::{DirState, StorageMode};
pub use error::{Error, Result};
pub use metrics::{DirUsage, EntryLogMetrics, LatencyHistogram};

use bk_disk::{Disk, FileId};
use disk_usage::Thresholds;
use format::StateFile;
use index::{Index, LedgerMeta, Run, SegmentMeta};
use metrics::EntryLogMetrics as M;
use parking_lot::{Condvar, Mutex};
use read_cache::ReadCache;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;
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
    /// Segments rewritten (their files are gone).
    pub compacted_segments: usize,
    /// New segments written (a merge turns several segments into one).
    pub output_segments: usize,
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
    /// Signalled (with `read_cache`) when a read-ahead batch finishes, so readers of
    /// entries it covers take them from the cache instead of reading them again.
    readahead_cv: Condvar,
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
            readahead_cv: Condvar::new(),
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
    /// configured `compaction_threshold`) and merges runs of small segments: live
    /// entries are copied, at most `compaction_rate_bytes_per_sec`, into a new durable
    /// segment; then the index switches over and the old files are removed.
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
}
