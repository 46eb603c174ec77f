//! Adapters from bk-journal and bk-entrylog to the request path's narrow interfaces, and
//! [`open`], which brings a bookie's storage up in the order durability needs:
//!
//! 1. open the entry log (segments + ledger-state file; the state file is required
//!    when a journal checkpoint shows a flush completed);
//! 2. open the journal, replaying every record above each journal's checkpoint mark
//!    into the entry log (entries, master keys, fences, explicit LACs);
//! 3. flush the entry log, then checkpoint the journal at the mark taken after replay;
//!    on a full ledger disk the replayed entries stay in the write cache, the journal is
//!    not checkpointed, and the bookie starts read-only (docs/semantics.md §14);
//! 4. only then return — the caller binds the port afterwards.
//!
//! [`open_manual`] does steps 1 and 2 on given disks ([`StorageDisks`], e.g. the simulated
//! disk) with the journal's committers handed to the caller as drivers, for the
//! whole-bookie simulation (bookie/tests/sim_bookie.rs); the caller runs step 3,
//! [`flush_after_replay`], while it turns them.
//!
//! Wire ids are Java longs; the crates use `u64`. A negative ledger id is unknown to
//! every read (`NoLedger`) and invalid for every write; negative entry ids are invalid
//! for adds (they are the journal's meta-record ids in Java).
//!
//! The journal acknowledges every append after the fdatasync of its group: v3
//! DEFERRED_SYNC and `journalSyncData=false` are therefore answered *later* than Java
//! would (after sync), never earlier.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bk_entrylog::{
    Cancel, CompactionReport, EntryLog, EntryLogConfig, EntrySelector, GcReport, GcScanToken,
    StorageMode,
};
use bk_journal::{Journal, JournalConfig, JournalMark, Record, Seq, TypedRecord};
use bytes::Bytes;
use parking_lot::RwLock;

use super::{
    apply_replayed, AckMode, Checkpointer, Durable, EntryId, FatalHandler, JournalRecord,
    JournalSink, LedgerId, LedgerMeta, LedgerStorage, StorageError, Store,
};

fn ledger_for_read(ledger: LedgerId) -> Result<u64, StorageError> {
    u64::try_from(ledger).map_err(|_| StorageError::NoLedger(ledger))
}

fn ledger_for_write(ledger: LedgerId) -> Result<u64, StorageError> {
    u64::try_from(ledger).map_err(|_| StorageError::Invalid(format!("negative ledger id {ledger}")))
}

/// bk-entrylog as [`LedgerStorage`]. `close` takes the log out for an orderly shutdown;
/// calls after it fail with an I/O error.
pub struct EntryLogStorage {
    log: RwLock<Option<EntryLog>>,
}

impl EntryLogStorage {
    pub fn new(log: EntryLog) -> Self {
        EntryLogStorage {
            log: RwLock::new(Some(log)),
        }
    }

    fn with<T>(
        &self,
        f: impl FnOnce(&EntryLog) -> bk_entrylog::Result<T>,
    ) -> Result<T, StorageError> {
        let guard = self.log.read();
        let log = guard
            .as_ref()
            .ok_or_else(|| StorageError::from(bk_entrylog::Error::Closed))?;
        f(log).map_err(StorageError::from)
    }

    /// Closes the entry log (after a final flush by the caller).
    pub fn close(&self) -> Result<(), StorageError> {
        match self.log.write().take() {
            Some(log) => log.close().map_err(StorageError::from),
            None => Ok(()),
        }
    }
}

impl LedgerStorage for EntryLogStorage {
    fn ledger_meta(&self, ledger: LedgerId) -> Result<Option<LedgerMeta>, StorageError> {
        let Ok(id) = u64::try_from(ledger) else {
            return Ok(None);
        };
        self.with(|log| {
            if !log.ledger_exists(id) {
                return Ok(None);
            }
            Ok(Some(LedgerMeta {
                fenced: log.is_fenced(id)?,
                master_key: log.master_key(id)?.map(Bytes::from).unwrap_or_default(),
                explicit_lac: log.explicit_lac(id)?,
            }))
        })
    }

    fn is_fenced(&self, ledger: LedgerId) -> Result<bool, StorageError> {
        let Ok(id) = u64::try_from(ledger) else {
            return Ok(false);
        };
        // One lookup under one lock; an unknown ledger is not fenced.
        self.with(|log| match log.is_fenced(id) {
            Err(bk_entrylog::Error::NoLedger(_)) => Ok(false),
            r => r,
        })
    }

    fn set_master_key(&self, ledger: LedgerId, key: &[u8]) -> Result<(), StorageError> {
        let id = ledger_for_write(ledger)?;
        self.with(|log| log.set_master_key(id, key))
    }

    fn set_fenced(&self, ledger: LedgerId) -> Result<bool, StorageError> {
        let id = ledger_for_write(ledger)?;
        self.with(|log| log.set_fenced(id))
    }

    fn set_explicit_lac(&self, ledger: LedgerId, body: Bytes) -> Result<(), StorageError> {
        let id = ledger_for_write(ledger)?;
        self.with(|log| log.set_explicit_lac(id, body))
    }

    fn add_entry(&self, ledger: LedgerId, entry: EntryId, body: Bytes) -> Result<(), StorageError> {
        let id = ledger_for_write(ledger)?;
        let entry = u64::try_from(entry)
            .map_err(|_| StorageError::Invalid(format!("negative entry id {entry}")))?;
        self.with(|log| log.add_entry(id, entry, body))
    }

    fn add_entry_with_crc(
        &self,
        ledger: LedgerId,
        entry: EntryId,
        body: Bytes,
        crc: u32,
    ) -> Result<(), StorageError> {
        let id = ledger_for_write(ledger)?;
        let entry = u64::try_from(entry)
            .map_err(|_| StorageError::Invalid(format!("negative entry id {entry}")))?;
        self.with(|log| log.add_entry_with_crc(id, entry, body, crc))
    }

    fn add_replayed_entry(
        &self,
        ledger: LedgerId,
        entry: EntryId,
        body: Bytes,
    ) -> Result<(), StorageError> {
        let id = ledger_for_write(ledger)?;
        let entry = u64::try_from(entry)
            .map_err(|_| StorageError::Invalid(format!("negative entry id {entry}")))?;
        self.with(|log| log.add_replayed_entry(id, entry, body))
    }

    fn get_entry(&self, ledger: LedgerId, entry: EntryId) -> Result<Bytes, StorageError> {
        let id = ledger_for_read(ledger)?;
        let Ok(e) = u64::try_from(entry) else {
            // A negative id other than -1 (handled by the caller): the ledger decides
            // between ENOLEDGER and ENOENTRY.
            return self.with(|log| {
                if log.ledger_exists(id) {
                    Err(bk_entrylog::Error::NoEntry {
                        ledger: id,
                        entry: None,
                    })
                } else {
                    Err(bk_entrylog::Error::NoLedger(id))
                }
            });
        };
        self.with(|log| log.get_entry(id, EntrySelector::Id(e)))
    }

    fn last_entry(&self, ledger: LedgerId) -> Result<Bytes, StorageError> {
        let id = ledger_for_read(ledger)?;
        self.with(|log| log.get_entry(id, EntrySelector::Last))
    }

    fn entry_ids(&self, ledger: LedgerId) -> Result<Vec<EntryId>, StorageError> {
        let id = ledger_for_read(ledger)?;
        self.with(|log| log.entries_of_ledger(id))
            .map(|ids| ids.into_iter().map(|e| e as i64).collect())
    }

    fn needs_flush(&self) -> bool {
        // The entry log flushes a full write-cache half by itself; the checkpoint (which
        // trims the journal) runs on the flush interval.
        false
    }

    fn flush(&self) -> Result<(), StorageError> {
        self.with(|log| log.flush())
    }

    fn flush_paced(&self, hurry: &dyn Fn() -> bool) -> Result<(), StorageError> {
        self.with(|log| log.flush_paced(hurry))
    }

    fn state_epoch(&self) -> u64 {
        self.with(|log| Ok(log.durable_state_epoch())).unwrap_or(0)
    }

    fn checkpoint_confirmed(&self) {
        let _ = self.with(|log| {
            log.checkpoint_confirmed();
            Ok(())
        });
    }
}

/// bk-journal as [`JournalSink`] and [`Checkpointer`].
pub struct JournalAdapter {
    journal: RwLock<Option<Journal>>,
}

impl JournalAdapter {
    pub fn new(journal: Journal) -> Self {
        JournalAdapter {
            journal: RwLock::new(Some(journal)),
        }
    }

    /// Stops the journal: what was admitted is written and acknowledged, later appends
    /// fail. Blocking.
    pub fn shutdown(&self) {
        if let Some(j) = self.journal.write().take() {
            j.shutdown();
        }
    }
}

impl JournalAdapter {
    /// Number of journal directories (0 once shut down).
    pub fn journals(&self) -> usize {
        self.journal.read().as_ref().map_or(0, |j| j.journals())
    }

    /// Follows "some journal directory waits for space" (None once shut down).
    pub fn disk_full_changes(&self) -> Option<tokio::sync::watch::Receiver<bool>> {
        Some(self.journal.read().as_ref()?.disk_full_changes())
    }

    /// The metrics of journal directory `index`.
    pub fn metrics(&self, index: usize) -> Option<Arc<bk_journal::JournalMetrics>> {
        self.journal.read().as_ref()?.metrics(index).cloned()
    }
}

impl JournalSink for JournalAdapter {
    fn append(&self, record: JournalRecord, _ack: AckMode) -> Durable {
        let guard = self.journal.read();
        let Some(journal) = guard.as_ref() else {
            return super::durable_ready(Err(bk_journal::JournalError::ShutDown.into()));
        };
        let ledger = match u64::try_from(record.ledger()) {
            Ok(l) => l,
            Err(_) => {
                return super::durable_ready(Err(StorageError::Invalid(format!(
                    "negative ledger id {}",
                    record.ledger()
                ))))
            }
        };
        let fut = match record {
            JournalRecord::Entry {
                entry, body, crc, ..
            } => match u64::try_from(entry) {
                Ok(e) => journal.append(
                    ledger,
                    match crc {
                        Some(crc) => Record::entry_with_crc(ledger, e, body, crc),
                        None => Record::entry(ledger, e, body),
                    },
                ),
                Err(_) => {
                    return super::durable_ready(Err(StorageError::Invalid(format!(
                        "negative entry id {entry}"
                    ))))
                }
            },
            JournalRecord::MasterKey { key, .. } => {
                let Ok(key) = <[u8; bk_journal::MASTER_KEY_LEN]>::try_from(key.as_ref()) else {
                    return super::durable_ready(Err(StorageError::Invalid(format!(
                        "master key of {} bytes",
                        key.len()
                    ))));
                };
                journal.append(ledger, Record::master_key(ledger, key))
            }
            JournalRecord::Fence { .. } => journal.append(ledger, Record::fence(ledger)),
            JournalRecord::ExplicitLac { body, .. } => {
                journal.append(ledger, Record::explicit_lac(ledger, body))
            }
            JournalRecord::ForceBarrier { .. } => journal.force_ledger(ledger),
        };
        Box::pin(async move { fut.await.map(|_seq| ()).map_err(StorageError::Journal) })
    }
}

impl Checkpointer for JournalAdapter {
    fn mark(&self) -> Result<Vec<u64>, StorageError> {
        let guard = self.journal.read();
        let journal = guard
            .as_ref()
            .ok_or(StorageError::Journal(bk_journal::JournalError::ShutDown))?;
        let mark = journal.mark_blocking().map_err(StorageError::Journal)?;
        Ok(mark.seqs.iter().map(|s| s.0).collect())
    }

    fn checkpoint(&self, mark: &[u64], storage_epoch: u64) -> Result<(), StorageError> {
        let guard = self.journal.read();
        let journal = guard
            .as_ref()
            .ok_or(StorageError::Journal(bk_journal::JournalError::ShutDown))?;
        journal
            .checkpoint_blocking(&JournalMark {
                seqs: mark.iter().map(|s| Seq(*s)).collect(),
                storage_epoch,
            })
            .map_err(StorageError::Journal)
    }
}

/// Where and how to open the real storage.
#[derive(Clone)]
pub struct RealStorageConfig {
    pub journal_dirs: Vec<PathBuf>,
    /// Entry-log directories (`<ledgerDir>/current`).
    pub ledger_dirs: Vec<PathBuf>,
    pub journal: JournalConfig,
    pub entry_log: EntryLogConfig,
    pub disk: bk_disk::DiskConfig,
    /// The chaos layer every journal and entry-log disk is wrapped in (docs/chaos.md);
    /// `None` (chaos off): the real backend, unwrapped.
    pub chaos: Option<Arc<bk_disk::chaos::Chaos>>,
}

/// What [`open`] returns: the store for the handlers, and the maintenance operations
/// (GC, compaction, disk usage) and shutdown the process needs.
pub struct RealStorage {
    pub store: Arc<Store>,
    entry_log: Arc<EntryLogStorage>,
    pub journal: Arc<JournalAdapter>,
    /// Records replayed from the journal at start-up.
    pub replayed: u64,
}

impl RealStorage {
    /// Final flush + checkpoint, then journal and entry log shut down. Blocking. On full
    /// ledger disks the final flush cannot happen: that is not a failure, the unflushed
    /// entries are in the journal (not trimmed) and the next start replays them.
    pub fn shutdown(&self) -> Result<(), StorageError> {
        let result = self.store.flush_and_checkpoint();
        self.journal.shutdown();
        let closed = self.entry_log.close();
        let full = |r: Result<(), StorageError>| match r {
            Err(e) if e.is_no_space() => {
                tracing::warn!(error = %e, "ledger disks full at shutdown: unflushed entries stay in the journal for the next start");
                Ok(())
            }
            other => other,
        };
        full(result).and(full(closed))
    }

    /// Bytes in the write cache and the read cache now (the entry log's gauges), for the
    /// memory metrics; zeros once the entry log is closed.
    pub fn cache_bytes(&self) -> (u64, u64) {
        self.entry_log
            .with(|log| {
                let m = log.metrics();
                Ok((
                    bk_entrylog::EntryLogMetrics::get(&m.write_cache_size),
                    bk_entrylog::EntryLogMetrics::get(&m.read_cache_size),
                ))
            })
            .unwrap_or((0, 0))
    }

    /// The ids of every ledger stored here, ascending (the GC's local snapshot).
    pub fn ledgers(&self) -> Result<Vec<u64>, StorageError> {
        self.entry_log.with(|log| Ok(log.ledgers()))
    }

    /// Usage of every ledger directory now, without a disk check (the metrics read it at
    /// scrape time); `None` once the entry log is closed.
    pub fn dir_usages(&self) -> Option<Vec<bk_entrylog::DirUsage>> {
        self.entry_log.with(|log| log.dir_usages()).ok()
    }

    /// One scrub pass over the entry log (bk_entrylog `EntryLog::scrub`; blocks: call it
    /// from a blocking thread). The log stays open until it returns: cancel it first.
    pub fn scrub(
        &self,
        rate: bk_entrylog::ScrubRate,
        cancel: &Cancel,
        progress: &bk_entrylog::ScrubProgress,
    ) -> Result<bk_entrylog::ScrubReport, StorageError> {
        self.entry_log.with(|log| log.scrub(rate, cancel, progress))
    }

    /// Every corruption detected since start, and how many the list had no room for;
    /// `None` once the entry log is closed.
    pub fn corruptions(&self) -> Option<(Vec<bk_entrylog::Corruption>, u64)> {
        self.entry_log.with(|log| Ok(log.corruptions())).ok()
    }

    /// Starts a GC round: ledgers first seen after this call survive the [`Self::gc`]
    /// that uses the token, whatever the metadata scan missed.
    pub fn begin_gc_scan(&self) -> Result<GcScanToken, StorageError> {
        self.entry_log.with(|log| Ok(log.begin_gc_scan()))
    }

    /// Deletes every ledger known before `token` for which `live` is false, durably
    /// (tombstones), and removes segments left with nothing live. `live` runs under the
    /// index lock: a set lookup. Stops early once `cancel` is cancelled (the report says
    /// so). Blocking.
    pub fn gc(
        &self,
        token: GcScanToken,
        live: &dyn Fn(u64) -> bool,
        cancel: &Cancel,
    ) -> Result<GcReport, StorageError> {
        let before = self.store.storage.state_epoch();
        let report = self
            .entry_log
            .with(|log| log.gc_until(token, live, cancel))?;
        self.record_state_epoch(before)?;
        Ok(report)
    }

    /// After GC or compaction wrote a new ledger-state file (its epoch rose above `before`):
    /// a checkpoint records the new epoch at once, so that an older copy of the state file
    /// (one still listing a deleted ledger or a removed segment) is refused at start-up.
    /// The window left is a crash between the state write and this checkpoint
    /// (docs/durability.md §"Ledger state epochs").
    fn record_state_epoch(&self, before: u64) -> Result<(), StorageError> {
        if self.store.storage.state_epoch() > before {
            self.store.flush_and_checkpoint()?;
        }
        Ok(())
    }

    /// Compacts segments whose live fraction is below `threshold`; stops within one read
    /// batch or written entry once `cancel` is cancelled (a group not yet durable is
    /// discarded), and starts no group once it has run for `max_time` (`None` = unbounded).
    /// Blocking, and holds the entry log open meanwhile: [`Self::shutdown`] waits for it,
    /// so cancel first.
    pub fn compact(
        &self,
        threshold: f64,
        max_time: Option<Duration>,
        cancel: &Cancel,
    ) -> Result<CompactionReport, StorageError> {
        let before = self.store.storage.state_epoch();
        let report = self
            .entry_log
            .with(|log| log.compact_within(Some(threshold), max_time, cancel))?;
        self.record_state_epoch(before)?;
        Ok(report)
    }

    /// Re-reads the space of the ledger directories and returns the storage mode the
    /// disk-usage thresholds give (read-only while a directory is full). Blocking.
    pub fn check_disk_usage(&self) -> Result<StorageMode, StorageError> {
        self.entry_log.with(|log| log.check_disk_usage())
    }

    /// The storage mode now (from the last check, or a flush that found no room).
    pub fn storage_mode(&self) -> Result<StorageMode, StorageError> {
        self.entry_log.with(|log| Ok(log.storage_mode()))
    }

    /// Sets the one listener told of every storage-mode change (at once, from the thread
    /// that saw it: a flush that found no room, a disk check), and tells it the mode now.
    pub fn set_mode_listener(
        &self,
        listener: impl Fn(StorageMode) + Send + Sync + 'static,
    ) -> Result<(), StorageError> {
        self.entry_log.with(|log| {
            log.set_mode_listener(Box::new(listener));
            Ok(())
        })
    }
}

/// The entry log's metrics while it is open (nothing once closed).
impl crate::metrics::adapters::EntryLogSource for Arc<RealStorage> {
    fn visit(&self, f: &mut dyn FnMut(&bk_entrylog::EntryLogMetrics)) {
        let _ = self.entry_log.with(|log| {
            f(log.metrics());
            Ok(())
        });
    }
}

/// What the journal checkpoints say about the entry log before it opens: whether any
/// has a mark above 0 (a checkpoint the bookie wrote after a flush; a fresh journal's
/// mark is 0), and the highest `ledgers.state` epoch one records as flushed. A file that
/// cannot be read says nothing here: `Journal::open` reports it.
fn journal_checkpoint_facts(
    dirs: &[PathBuf],
    disks: &bk_journal::DiskFactory,
    direct: bool,
) -> (bool, u64) {
    let mut any = false;
    let mut epoch = 0;
    for (i, dir) in dirs.iter().enumerate() {
        let Ok(mut disk) = disks(i) else {
            continue;
        };
        let path = dir.join(bk_journal::format::CHECKPOINT_FILE);
        if let Some(c) = bk_disk::read_small_file(disk.as_mut(), &path, direct, 1 << 20)
            .ok()
            .and_then(|b| bk_journal::format::CheckpointRecord::decode(&b).ok())
        {
            any |= c.mark > 0;
            epoch = epoch.max(c.storage_epoch);
        }
    }
    (any, epoch)
}

/// The disks the storage runs on: the real backends (`config.disk`) for a bookie, a
/// simulated disk (`bk_disk::SimFs`) for the whole-bookie simulation.
#[derive(Clone)]
pub struct StorageDisks {
    pub entry_log: bk_entrylog::DiskFactory,
    pub journal: bk_journal::DiskFactory,
}

impl StorageDisks {
    /// The real backends `config.disk` names (io_uring or syscalls), one instance per
    /// caller, wrapped in the chaos layer when `config.chaos` is set (docs/chaos.md).
    pub fn real(config: &RealStorageConfig) -> StorageDisks {
        let chaos = config.chaos.clone();
        let entry_log = real_disk_factory(config.disk, chaos.clone());
        // The committer waits for each group's sync anyway: it makes the fdatasync call
        // itself instead of handing it to an io_uring worker thread (bk_disk's uring.rs).
        let journal = real_disk_factory(
            bk_disk::DiskConfig {
                inline_sync: true,
                ..config.disk
            },
            chaos,
        );
        StorageDisks {
            entry_log,
            journal: Arc::new(move |_index| journal()),
        }
    }
}

/// Opens one real backend instance as `disk` says, wrapped in the chaos layer when `chaos`
/// is set (docs/chaos.md).
fn real_disk_factory(
    disk: bk_disk::DiskConfig,
    chaos: Option<Arc<bk_disk::chaos::Chaos>>,
) -> bk_entrylog::DiskFactory {
    Arc::new(move || {
        let d = bk_disk::open_disk(&disk)?.disk;
        Ok(match &chaos {
            Some(c) => bk_disk::chaos::wrap(d, c),
            None => d,
        })
    })
}

/// Opens the entry log, replays the journal into it, flushes and checkpoints (module
/// docs). Blocking; call before binding the port.
pub fn open(config: &RealStorageConfig, fatal: FatalHandler) -> Result<RealStorage, StorageError> {
    let (storage, _drivers) = open_parts(config, &StorageDisks::real(config), fatal, false)?;
    flush_after_replay(&storage.store)?;
    Ok(storage)
}

/// [`open`] on the given disks with the journal's committers driven by the caller
/// (`bk_journal::Driver`, one per journal directory), for a deterministic simulation:
/// nothing runs in a journal thread. Step 3 (flush and checkpoint) is left to the caller,
/// who must turn the drivers while it runs on another thread ([`flush_after_replay`]);
/// every other blocking call that reaches the journal (a flush's checkpoint,
/// [`RealStorage::shutdown`]) needs the same.
pub fn open_manual(
    config: &RealStorageConfig,
    disks: &StorageDisks,
    fatal: FatalHandler,
) -> Result<(RealStorage, Vec<bk_journal::Driver>), StorageError> {
    open_parts(config, disks, fatal, true)
}

/// Steps 1 and 2 of the module docs; with `manual`, the journal is opened with drivers
/// for the caller.
fn open_parts(
    config: &RealStorageConfig,
    disks: &StorageDisks,
    fatal: FatalHandler,
    manual: bool,
) -> Result<(RealStorage, Vec<bk_journal::Driver>), StorageError> {
    let entry_log_disks = disks.entry_log.clone();
    let journal_disks = disks.journal.clone();
    // A journal checkpoint above 0 follows a completed entry-log flush, which wrote
    // `ledgers.state`: its absence then is a lost file, not a fresh bookie; and a state
    // file older than the epoch a checkpoint records is an older copy put back.
    let mut entry_log_config = config.entry_log.clone();
    let (has_checkpoint, state_epoch) = journal_checkpoint_facts(
        &config.journal_dirs,
        &journal_disks,
        config.journal.direct_io,
    );
    entry_log_config.require_state_file = has_checkpoint;
    entry_log_config.min_state_epoch = state_epoch;
    // The journal checkpoint after a flush can be deferred (full journal disk): only a
    // persisted one may count towards dropping a tombstone.
    entry_log_config.checkpoints_confirmed_by_caller = true;
    let log = EntryLog::open(
        config.ledger_dirs.clone(),
        entry_log_config,
        entry_log_disks,
    )
    .map_err(StorageError::from)?;
    let entry_log = Arc::new(EntryLogStorage::new(log));
    let mut replayed = 0u64;
    let mut replay_error: Option<StorageError> = None;
    let (journal, _replay, drivers) = {
        let storage: &dyn LedgerStorage = entry_log.as_ref();
        let mut visit = |rec: &bk_journal::ReplayedRecord| -> Result<(), String> {
            let typed = rec.typed().map_err(|e| e.to_string())?;
            let record = match typed {
                TypedRecord::Entry {
                    ledger,
                    entry,
                    data,
                } => JournalRecord::Entry {
                    ledger: ledger as i64,
                    entry: entry as i64,
                    body: data,
                    crc: None,
                },
                TypedRecord::Fence { ledger } => JournalRecord::Fence {
                    ledger: ledger as i64,
                },
                TypedRecord::ExplicitLac { ledger, body } => JournalRecord::ExplicitLac {
                    ledger: ledger as i64,
                    body,
                },
                TypedRecord::MasterKey { ledger, key } => JournalRecord::MasterKey {
                    ledger: ledger as i64,
                    key: Bytes::copy_from_slice(&key),
                },
                TypedRecord::Other { kind, .. } => {
                    return Err(format!("unknown journal record kind {}", kind.0))
                }
            };
            match apply_replayed(storage, &record) {
                Ok(()) => {}
                // A ledger deleted by GC after this record was journaled stays deleted.
                Err(StorageError::LedgerDeleted(_)) => {}
                Err(e) => {
                    let msg = format!("replaying journal record: {e}");
                    replay_error = Some(StorageError::Replay(Box::new(e)));
                    return Err(msg);
                }
            }
            replayed += 1;
            Ok(())
        };
        let opened = if manual {
            Journal::open_manual(
                &config.journal_dirs,
                config.journal.clone(),
                journal_disks,
                &mut visit,
            )
        } else {
            let mut journal_config = config.journal.clone();
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                journal_config.ack_delivery = Some(super::acks::on_runtime(&runtime));
            }
            Journal::open(
                &config.journal_dirs,
                journal_config,
                journal_disks,
                &mut visit,
            )
            .map(|(j, r)| (j, r, Vec::new()))
        };
        opened.map_err(|e| match replay_error.take() {
            Some(apply_failed) => apply_failed,
            None => StorageError::Journal(e),
        })?
    };
    let journal = Arc::new(JournalAdapter::new(journal));
    let store = Store::new(
        entry_log.clone(),
        journal.clone(),
        vec![journal.clone()],
        fatal,
    );
    Ok((
        RealStorage {
            store,
            entry_log,
            journal,
            replayed,
        },
        drivers,
    ))
}

/// Step 3 of the module docs: makes the replayed state durable in the entry log and
/// trims the journal. On full ledger disks nothing is trimmed: the bookie comes up
/// read-only, serving the replayed entries from the write cache, and the flusher retries.
pub fn flush_after_replay(store: &Store) -> Result<(), StorageError> {
    match store.flush_and_checkpoint() {
        Ok(()) => Ok(()),
        Err(e) if e.is_no_space() => {
            tracing::warn!(
                error = %e,
                "ledger disks full at start-up: replayed entries stay in the write cache, the journal is not trimmed; starting read-only"
            );
            Ok(())
        }
        Err(e) => Err(e),
    }
}
