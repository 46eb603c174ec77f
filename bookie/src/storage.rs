//! `storage`: the journal + entry log pair behind the request path.
//!
//! Owns the narrow interfaces the handlers use ([`LedgerStorage`] for ledger state and
//! entries, [`JournalSink`] for durability) and [`Store`], which pairs one storage with
//! its journals and keeps these invariants:
//!
//! - **Replay before serving.** [`Store::open`] replays every journal record written after
//!   the last checkpoint (entries, master keys, fences, explicit LACs) into the entry log
//!   before it returns; the server binds its port only after that.
//! - **Checkpoint order.** The background flusher takes each journal's checkpoint mark
//!   *before* flushing the entry log, and hands the mark back to the journal only after the
//!   flush returned `Ok`: the journal is never trimmed past data the entry log has not made
//!   durable (docs/durability.md).
//! - **A failed fsync is fatal.** A journal or flush failure is logged with its reason and
//!   goes to the [`FatalHandler`] (the binary exits non-zero); nothing retries an fsync.
//!   A full journal disk is not such a failure: `JournalError::NoSpace` means the record
//!   was not written (answered EREADONLY) and a checkpoint that found no space leaves the
//!   journal untrimmed (docs/semantics.md §14).
//! - **Nor is a full ledger disk.** A flush that fails for lack of space (ENOSPC, EDQUOT,
//!   or no directory with room for the next segment) leaves its entries in the write cache
//!   and the journal (no checkpoint is taken past them), the entry log reports read-only
//!   (the bookie's `LedgerDisksFull`), and the flusher retries later; docs/semantics.md §14.
//! - **Ledger -> journal mapping** is `ledger_id mod journals` (Java's `signSafeMod`, in
//!   `bk_journal::journal_index_for`), so all records of one ledger go through one FIFO
//!   journal and keep their order.
//!
//! The real implementations (bk-journal, bk-entrylog) are adapted in [`real`]; the
//! in-memory test double lives in [`mem`] and is never what the binary runs.

mod acks;
pub mod mem;
pub mod real;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

/// A ledger id as it appears on the wire (Java `long`).
pub type LedgerId = i64;
/// An entry id as it appears on the wire; `-1` only at the wire edge ("last entry").
pub type EntryId = i64;

/// Errors of the storage layer, classified the way the handlers answer them
/// (`handlers::status` maps each variant to a wire code; nothing else does).
///
/// Failures of the journal and the entry log keep their source error (`source()`), so a
/// log line shows the path, offset or errno where it happened. Invariant 4
/// (ARCHITECTURE.md): corruption is its own variant and is answered EIO, never ENOENTRY.
/// `Clone` because one fence's durability is awaited by every read that fenced
/// (sources that are not `Clone` are shared through an `Arc`).
#[derive(Debug, Clone, thiserror::Error)]
pub enum StorageError {
    /// The ledger is not known to this bookie.
    #[error("no such ledger {0}")]
    NoLedger(LedgerId),
    /// The ledger was deleted by GC: adds answer EFENCED, everything else ENOLEDGER.
    #[error("ledger {0} was deleted")]
    LedgerDeleted(LedgerId),
    /// The ledger is known but the entry is not stored.
    #[error("no such entry {1} in ledger {0}")]
    NoEntry(LedgerId, EntryId),
    /// The stored master key differs from a non-zero request key (Java IllegalOpException,
    /// answered EIO).
    #[error("master key of ledger {0} conflicts with the stored key")]
    MasterKeyConflict(LedgerId),
    /// The write cache is full and no ledger directory has room to flush it (answered
    /// EREADONLY: the bookie is read-only for full ledger disks).
    #[error("ledger storage full: write cache full and no ledger directory has room")]
    OutOfSpace,
    /// The write cache stayed full this long (answered ETOOMANYREQUESTS).
    #[error("storage throttled: write cache full for {0:?}")]
    Throttled(Duration),
    /// Stored data failed its checksum or structure check (answered EIO, never ENOENTRY).
    #[error("entry log {0}")]
    Corruption(#[source] Arc<bk_entrylog::Error>),
    /// The entry log failed to read or write its files, or is closed (answered EIO).
    #[error("entry log: {0}")]
    EntryLog(#[source] Arc<bk_entrylog::Error>),
    /// The journal failed (fsync, write) or is shut down; a failed fsync is fatal for the
    /// process (answered EIO).
    #[error("{0}")]
    Journal(#[from] bk_journal::JournalError),
    /// A journal record found at start-up could not be applied to the entry log;
    /// start-up stops.
    #[error("replaying journal record: {0}")]
    Replay(#[source] Box<StorageError>),
    /// The task or waiter that was to carry a result went away (a panicked blocking
    /// task, a dropped durability waiter): the outcome is unknown (answered EIO).
    #[error("{0} was lost")]
    Lost(&'static str),
    /// The file system of a ledger directory could not be asked for its space
    /// (statvfs; answered EIO).
    #[error("statvfs {}: {source}", dir.display())]
    FileSystemSpace {
        dir: std::path::PathBuf,
        #[source]
        source: Arc<std::io::Error>,
    },
    /// The request cannot be stored as given (answered EBADREQ).
    #[error("invalid input: {0}")]
    Invalid(String),
}

impl From<bk_entrylog::Error> for StorageError {
    /// Ledger-level answers become their own variants; corruption stays corruption.
    fn from(e: bk_entrylog::Error) -> StorageError {
        use bk_entrylog::Error as E;
        match e {
            E::NoLedger(l) => StorageError::NoLedger(l as i64),
            E::NoEntry { ledger, entry } => {
                StorageError::NoEntry(ledger as i64, entry.map_or(-1, |e| e as i64))
            }
            E::LedgerDeleted(l) => StorageError::LedgerDeleted(l as i64),
            E::MasterKeyConflict(l) => StorageError::MasterKeyConflict(l as i64),
            E::Throttled(d) => StorageError::Throttled(d),
            E::OutOfSpace => StorageError::OutOfSpace,
            E::InvalidInput(s) => StorageError::Invalid(s),
            e @ E::Corruption { .. } => StorageError::Corruption(Arc::new(e)),
            e @ (E::Io { .. } | E::Closed) => StorageError::EntryLog(Arc::new(e)),
        }
    }
}

impl StorageError {
    /// True when the entry log is closed or the journal shut down (orderly shutdown):
    /// background loops stop on it instead of logging a failure.
    /// True when the journal refused for lack of space: the record was not written, or
    /// the checkpoint not persisted; nothing was lost and the journal recovers by itself.
    pub fn is_journal_no_space(&self) -> bool {
        matches!(self, StorageError::Journal(e) if e.is_no_space())
    }

    pub fn is_shut_down(&self) -> bool {
        match self {
            StorageError::EntryLog(e) => matches!(**e, bk_entrylog::Error::Closed),
            StorageError::Journal(e) => matches!(e, bk_journal::JournalError::ShutDown),
            _ => false,
        }
    }

    /// True when the entry log failed for lack of space (ENOSPC, EDQUOT, no directory
    /// with room): not fatal, the bookie turns read-only and retries (module docs).
    pub fn is_no_space(&self) -> bool {
        match self {
            StorageError::OutOfSpace => true,
            StorageError::EntryLog(e) => e.is_no_space(),
            StorageError::Replay(e) => e.is_no_space(),
            _ => false,
        }
    }
}

/// Resolves when a journal record is durable (or handed to the OS, for ack-before-sync).
pub type Durable = Pin<Box<dyn Future<Output = Result<(), StorageError>> + Send + 'static>>;

/// A durable future that is already complete.
pub fn durable_ready(result: Result<(), StorageError>) -> Durable {
    Box::pin(std::future::ready(result))
}

/// A record the request path writes to the journal.
///
/// On the journal each becomes one bk-journal record: a kind byte and a payload whose
/// layout journal/src/record.rs owns (docs/formats.md), written through `real.rs`. It is
/// not Java's journal format (no negative meta-entry ids):
/// - `Entry` (kind 1): `ledger u64 LE | entry u64 LE | entry bytes as received` (the
///   entry's own `ledgerId entryId lac len` header, digest and payload);
/// - `Fence` (kind 2): `ledger u64 LE`;
/// - `ExplicitLac` (kind 3): `ledger u64 LE | explicit LAC body`;
/// - `MasterKey` (kind 4): `ledger u64 LE | key [u8; 20]` (other key lengths are refused);
/// - `ForceBarrier`: not written; completes after everything queued before it in the
///   ledger's journal is durable.
///
/// Start-up replay reads them back through `bk_journal::TypedRecord` and applies them
/// with [`apply_replayed`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JournalRecord {
    Entry {
        ledger: LedgerId,
        entry: EntryId,
        body: Bytes,
        /// [`entry_crc`] of this entry when the caller computed it already (an add gives
        /// the entry log the same value); None: the journal computes it.
        crc: Option<u32>,
    },
    MasterKey {
        ledger: LedgerId,
        key: Bytes,
    },
    Fence {
        ledger: LedgerId,
    },
    ExplicitLac {
        ledger: LedgerId,
        body: Bytes,
    },
    ForceBarrier {
        ledger: LedgerId,
    },
}

impl JournalRecord {
    pub fn ledger(&self) -> LedgerId {
        match self {
            JournalRecord::Entry { ledger, .. }
            | JournalRecord::MasterKey { ledger, .. }
            | JournalRecord::Fence { ledger }
            | JournalRecord::ExplicitLac { ledger, .. }
            | JournalRecord::ForceBarrier { ledger } => *ledger,
        }
    }
}

/// When a journal append is acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckMode {
    /// After the group holding the record is fdatasync'd (the default).
    Sync,
    /// After the record is handed to the OS (v3 DEFERRED_SYNC; never for recovery adds).
    BeforeSync,
}

/// A group-committed write-ahead log.
///
/// Requirement: `append` enqueues the record **at call time** (not when the returned future
/// is first polled), so records appended by one caller keep their order in the journal.
pub trait JournalSink: Send + Sync + 'static {
    fn append(&self, record: JournalRecord, ack: AckMode) -> Durable;
}

/// Persisted per-ledger state (Java `LedgerData`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LedgerMeta {
    pub fenced: bool,
    /// Empty for a ledger created without a key (never happens from the wire).
    pub master_key: Bytes,
    /// The explicit LAC body as written by WRITE_LAC.
    pub explicit_lac: Option<Bytes>,
}

/// Ledger storage: the entry log, its index and per-ledger state. Methods take `&self`
/// (implementations lock internally) and may block on disk I/O for reads.
pub trait LedgerStorage: Send + Sync + 'static {
    /// The ledger's persisted state, `None` if the ledger is unknown.
    fn ledger_meta(&self, ledger: LedgerId) -> Result<Option<LedgerMeta>, StorageError>;
    /// Whether the ledger is fenced (false when it is unknown): what every add checks, so
    /// an implementation answers it without building a [`LedgerMeta`].
    fn is_fenced(&self, ledger: LedgerId) -> Result<bool, StorageError> {
        Ok(self.ledger_meta(ledger)?.is_some_and(|m| m.fenced))
    }
    /// Creates the ledger with `key`, or checks `key` against the stored one: a stored
    /// all-zero key is replaced; a different non-zero key -> `MasterKeyConflict`.
    fn set_master_key(&self, ledger: LedgerId, key: &[u8]) -> Result<(), StorageError>;
    /// Marks the ledger fenced; returns whether it changed. The ledger must exist.
    fn set_fenced(&self, ledger: LedgerId) -> Result<bool, StorageError>;
    /// Stores the explicit LAC body. The ledger must exist.
    fn set_explicit_lac(&self, ledger: LedgerId, body: Bytes) -> Result<(), StorageError>;
    /// Inserts an entry (readable at once). A duplicate id overwrites. The ledger must exist.
    fn add_entry(&self, ledger: LedgerId, entry: EntryId, body: Bytes) -> Result<(), StorageError>;
    /// [`LedgerStorage::add_entry`] with the entry's [`entry_crc`] already computed: the
    /// real storage keeps it for the segment footer instead of computing it again at flush.
    fn add_entry_with_crc(
        &self,
        ledger: LedgerId,
        entry: EntryId,
        body: Bytes,
        _crc: u32,
    ) -> Result<(), StorageError> {
        self.add_entry(ledger, entry, body)
    }
    /// Journal replay of an entry: as `add_entry`, except that the real storage skips an
    /// entry a durable segment already holds and never refuses one for a full disk.
    fn add_replayed_entry(
        &self,
        ledger: LedgerId,
        entry: EntryId,
        body: Bytes,
    ) -> Result<(), StorageError> {
        self.add_entry(ledger, entry, body)
    }
    /// One entry; `NoLedger` if the ledger is unknown, `NoEntry` if not stored.
    fn get_entry(&self, ledger: LedgerId, entry: EntryId) -> Result<Bytes, StorageError>;
    /// The stored entry with the highest id; `NoLedger` / `NoEntry` as above.
    fn last_entry(&self, ledger: LedgerId) -> Result<Bytes, StorageError>;
    /// Ids of all stored entries, ascending; `NoLedger` if unknown.
    fn entry_ids(&self, ledger: LedgerId) -> Result<Vec<EntryId>, StorageError>;
    /// True when the write cache wants a flush now (filled past its threshold).
    fn needs_flush(&self) -> bool;
    /// Makes everything inserted so far durable in the entry log and its index.
    fn flush(&self) -> Result<(), StorageError>;
    /// [`LedgerStorage::flush`] at a pace that spares the device (the periodic
    /// checkpoint's: bk_entrylog's `flush_pace`), at full speed once `hurry()` is true.
    fn flush_paced(&self, hurry: &dyn Fn() -> bool) -> Result<(), StorageError> {
        let _ = hurry;
        self.flush()
    }
    /// The generation of the durable per-ledger state (the entry log's `ledgers.state`
    /// epoch) after the last flush: recorded with each journal checkpoint, so that an
    /// older copy of the state file put back is refused at start-up. 0: not tracked.
    fn state_epoch(&self) -> u64 {
        0
    }
    /// Every journal's checkpoint after the last [`LedgerStorage::flush`] is persisted (none
    /// deferred): the storage may count it (the entry log lets a deleted ledger's tombstone
    /// go only two such checkpoints after the deletion).
    fn checkpoint_confirmed(&self) {}
}

/// The one CRC32C of an entry an add computes: over `ledger u64 LE | entry u64 LE | body`.
/// It is both the journal record's payload CRC (docs/formats.md, the `Entry` payload above)
/// and the entry log's footer CRC (`bk_entrylog::format::entry_crc`), so the add path
/// passes it to both instead of reading the payload twice (issue 15). Ids are
/// non-negative by the time storage sees them; a negative one is refused there.
pub fn entry_crc(ledger: LedgerId, entry: EntryId, body: &[u8]) -> u32 {
    bk_entrylog::format::entry_crc(ledger as u64, entry as u64, body)
}

/// Journal replay: one record found after the last checkpoint, as `Store::open` applies it.
pub fn apply_replayed(
    storage: &dyn LedgerStorage,
    record: &JournalRecord,
) -> Result<(), StorageError> {
    match record {
        JournalRecord::Entry {
            ledger,
            entry,
            body,
            ..
        } => {
            if storage.ledger_meta(*ledger)?.is_none() {
                // Entry without a preceding key record (key journaled before the last
                // checkpoint but the ledger state lost): create with an all-zero key, which
                // the first writer's key replaces (Java `setMasterKey` rule).
                storage.set_master_key(*ledger, &[0u8; 20])?;
            }
            storage.add_replayed_entry(*ledger, *entry, body.clone())
        }
        JournalRecord::MasterKey { ledger, key } => {
            match storage.set_master_key(*ledger, key) {
                // A later key record wins over an older one for the same ledger (replay
                // cannot tell which request was answered): never fail start-up on it.
                Err(StorageError::MasterKeyConflict(_)) => Ok(()),
                other => other,
            }
        }
        JournalRecord::Fence { ledger } => {
            if storage.ledger_meta(*ledger)?.is_none() {
                storage.set_master_key(*ledger, &[0u8; 20])?;
            }
            storage.set_fenced(*ledger).map(|_| ())
        }
        JournalRecord::ExplicitLac { ledger, body } => {
            if storage.ledger_meta(*ledger)?.is_none() {
                storage.set_master_key(*ledger, &[0u8; 20])?;
            }
            storage.set_explicit_lac(*ledger, body.clone())
        }
        JournalRecord::ForceBarrier { .. } => Ok(()),
    }
}

/// Called once with the reason when durability is lost (failed fsync, failed flush).
pub type FatalHandler = Arc<dyn Fn(&str) + Send + Sync>;

/// The handler the binary uses: log and exit non-zero without unwinding.
pub fn exit_on_fatal() -> FatalHandler {
    Arc::new(|reason: &str| {
        tracing::error!(reason, "fatal storage failure; exiting");
        eprintln!("bookie: fatal storage failure: {reason}");
        std::process::exit(70);
    })
}

/// The checkpoint side of a journal: what the flusher needs.
pub trait Checkpointer: Send + Sync + 'static {
    /// Opaque position (one number per journal directory): everything journaled before
    /// it is covered once the entry log has been flushed after taking it.
    fn mark(&self) -> Result<Vec<u64>, StorageError>;
    /// The entry log has durably flushed everything up to `mark`, in a state of
    /// generation `storage_epoch` ([`LedgerStorage::state_epoch`]); the journal may trim,
    /// and records the epoch.
    fn checkpoint(&self, mark: &[u64], storage_epoch: u64) -> Result<(), StorageError>;
}

/// One ledger storage paired with its journals; what the handlers hold.
pub struct Store {
    pub storage: Arc<dyn LedgerStorage>,
    pub journal: Arc<dyn JournalSink>,
    checkpointers: Vec<Arc<dyn Checkpointer>>,
    fatal: FatalHandler,
    flush_lock: parking_lot::Mutex<()>,
    /// Callers of [`Store::flush_and_checkpoint`] waiting for `flush_lock`: while any
    /// does, a paced periodic checkpoint runs at full speed.
    checkpoint_waiters: std::sync::atomic::AtomicUsize,
}

impl Store {
    pub fn new(
        storage: Arc<dyn LedgerStorage>,
        journal: Arc<dyn JournalSink>,
        checkpointers: Vec<Arc<dyn Checkpointer>>,
        fatal: FatalHandler,
    ) -> Arc<Self> {
        Arc::new(Store {
            storage,
            journal,
            checkpointers,
            fatal,
            flush_lock: parking_lot::Mutex::new(()),
            checkpoint_waiters: std::sync::atomic::AtomicUsize::new(0),
        })
    }

    /// Appends a journal record; a journal failure is reported to the fatal handler as
    /// well as returned (the caller answers EIO, the process then exits), except a full
    /// journal disk (the record was not written; the caller answers EREADONLY).
    pub fn journal(&self, record: JournalRecord, ack: AckMode) -> Durable {
        let fut = self.journal.append(record, ack);
        let fatal = self.fatal.clone();
        Box::pin(async move {
            let result = fut.await;
            if let Err(e) = &result {
                if !e.is_journal_no_space() {
                    fatal(&format!("journal append failed: {e}"));
                }
            }
            result
        })
    }

    /// Flush the entry log, then checkpoint every journal at the mark taken before it.
    /// A failure goes to the fatal handler, except a lack of space (returned, not fatal:
    /// no checkpoint is taken, the journal keeps everything above the last one).
    pub fn flush_and_checkpoint(&self) -> Result<(), StorageError> {
        use std::sync::atomic::Ordering::SeqCst;
        self.checkpoint_waiters.fetch_add(1, SeqCst);
        let one_at_a_time = self.flush_lock.lock();
        self.checkpoint_waiters.fetch_sub(1, SeqCst);
        self.checkpoint_locked(None, one_at_a_time)
    }

    /// The periodic [`Store::flush_and_checkpoint`]: the entry-log flush is paced
    /// (bk_entrylog's `flush_pace`: a write-cache half written in one burst stalls the
    /// journal's fdatasyncs where both share a device) and runs at full speed once `stop`
    /// is set or another checkpoint waits.
    pub fn periodic_checkpoint(
        &self,
        stop: &std::sync::atomic::AtomicBool,
    ) -> Result<(), StorageError> {
        let one_at_a_time = self.flush_lock.lock();
        let hurry = || {
            stop.load(std::sync::atomic::Ordering::SeqCst)
                || self
                    .checkpoint_waiters
                    .load(std::sync::atomic::Ordering::SeqCst)
                    > 0
        };
        self.checkpoint_locked(Some(&hurry), one_at_a_time)
    }

    /// The body of a checkpoint; `_one_at_a_time` is `flush_lock`'s guard.
    fn checkpoint_locked(
        &self,
        paced: Option<&dyn Fn() -> bool>,
        _one_at_a_time: parking_lot::MutexGuard<'_, ()>,
    ) -> Result<(), StorageError> {
        let result: Result<(), StorageError> = (|| {
            let marks = self
                .checkpointers
                .iter()
                .map(|c| c.mark())
                .collect::<Result<Vec<_>, _>>()?;
            match paced {
                Some(hurry) => self.storage.flush_paced(hurry)?,
                None => self.storage.flush()?,
            }
            let storage_epoch = self.storage.state_epoch();
            let mut all_persisted = true;
            for (c, mark) in self.checkpointers.iter().zip(marks) {
                match c.checkpoint(&mark, storage_epoch) {
                    // The entry log is durable; the journal keeps its records (not
                    // trimmed) until a later checkpoint finds space. Nothing is lost.
                    Err(e) if e.is_journal_no_space() => {
                        all_persisted = false;
                        tracing::warn!(error = %e, "journal checkpoint deferred: journal disk full")
                    }
                    r => r?,
                }
            }
            // Only now: a deferred checkpoint leaves records in the journal that a restart
            // replays, so it must not count towards dropping a tombstone.
            if all_persisted {
                self.storage.checkpoint_confirmed();
            }
            Ok(())
        })();
        match &result {
            Err(e) if e.is_no_space() => {}
            Err(e) => (self.fatal)(&format!("entry log flush / checkpoint failed: {e}")),
            Ok(()) => {}
        }
        result
    }

    /// Starts the background flusher: flushes when the write cache asks for it (checked
    /// every `poll`) or every `interval`, until `stop` is set. Runs on its own thread
    /// because flushing blocks on disk I/O. A flush that fails for lack of space is
    /// retried at the next interval (logged when it starts and stops failing); any other
    /// failure has gone to the fatal handler and ends the thread.
    pub fn spawn_flusher(
        self: &Arc<Self>,
        interval: Duration,
        poll: Duration,
        stop: Arc<std::sync::atomic::AtomicBool>,
    ) -> std::io::Result<std::thread::JoinHandle<()>> {
        let store = self.clone();
        std::thread::Builder::new()
            .name("bookie-flusher".into())
            .spawn(move || {
                let mut last = std::time::Instant::now();
                let mut full = false;
                while !stop.load(std::sync::atomic::Ordering::Acquire) {
                    std::thread::sleep(poll);
                    if store.storage.needs_flush() || last.elapsed() >= interval {
                        match store.periodic_checkpoint(&stop) {
                            Ok(()) => {
                                if std::mem::take(&mut full) {
                                    tracing::info!("checkpoint flush succeeded again; journal checkpoint advanced");
                                }
                            }
                            Err(e) if e.is_no_space() => {
                                if !std::mem::replace(&mut full, true) {
                                    tracing::warn!(error = %e, "checkpoint flush waits for ledger disk space; the journal is kept from the last checkpoint");
                                }
                            }
                            Err(_) => return,
                        }
                        last = std::time::Instant::now();
                    }
                }
            })
    }
}

/// Total and free bytes over the distinct file systems of `dirs` (GET_BOOKIE_INFO).
pub fn disk_space(dirs: &[std::path::PathBuf]) -> Result<(u64, u64), StorageError> {
    let mut seen = std::collections::HashSet::new();
    let (mut total, mut free) = (0u64, 0u64);
    for dir in dirs {
        let s = statvfs(dir)?;
        if seen.insert(s.fsid) {
            total = total.saturating_add(s.total);
            free = free.saturating_add(s.free);
        }
    }
    Ok((total, free))
}

/// Free bytes (available to this process) on the file system holding `dir`.
pub fn free_bytes(dir: &std::path::Path) -> Result<u64, StorageError> {
    statvfs(dir).map(|s| s.free)
}

struct FsSpace {
    fsid: u64,
    total: u64,
    free: u64,
}

fn statvfs(dir: &std::path::Path) -> Result<FsSpace, StorageError> {
    use std::os::unix::ffi::OsStrExt;
    if dir.as_os_str().as_bytes().contains(&0) {
        return Err(StorageError::Invalid(format!(
            "path with NUL: {}",
            dir.display()
        )));
    }
    let s = bk_disk::file_system_space(dir).map_err(|e| StorageError::FileSystemSpace {
        dir: dir.to_path_buf(),
        source: Arc::new(e),
    })?;
    Ok(FsSpace {
        fsid: s.fsid,
        total: s.space.total_bytes,
        free: s.space.free_bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one CRC an add computes is the value both stores would have computed
    /// themselves: the journal record's payload CRC and the entry log's footer CRC.
    #[test]
    fn entry_crc_is_the_journals_and_the_entry_logs() {
        let body = Bytes::from(vec![0xa5u8; 1024]);
        let (l, e) = (0x7fff_ffff_ffff_fff0_i64, 12_i64);
        let crc = entry_crc(l, e, &body);
        assert_eq!(
            crc,
            bk_journal::Record::entry(l as u64, e as u64, body.clone()).payload_crc()
        );
        assert_eq!(
            crc,
            bk_entrylog::format::entry_crc(l as u64, e as u64, &body)
        );
    }
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// In-memory storage whose flush fails with a chosen entry-log error.
    struct FailingFlush {
        inner: mem::MemStorage,
        error: parking_lot::Mutex<Option<fn() -> bk_entrylog::Error>>,
        confirmed: AtomicUsize,
    }

    impl LedgerStorage for FailingFlush {
        fn ledger_meta(&self, l: LedgerId) -> Result<Option<LedgerMeta>, StorageError> {
            self.inner.ledger_meta(l)
        }
        fn set_master_key(&self, l: LedgerId, key: &[u8]) -> Result<(), StorageError> {
            self.inner.set_master_key(l, key)
        }
        fn set_fenced(&self, l: LedgerId) -> Result<bool, StorageError> {
            self.inner.set_fenced(l)
        }
        fn set_explicit_lac(&self, l: LedgerId, body: Bytes) -> Result<(), StorageError> {
            self.inner.set_explicit_lac(l, body)
        }
        fn add_entry(&self, l: LedgerId, e: EntryId, body: Bytes) -> Result<(), StorageError> {
            self.inner.add_entry(l, e, body)
        }
        fn get_entry(&self, l: LedgerId, e: EntryId) -> Result<Bytes, StorageError> {
            self.inner.get_entry(l, e)
        }
        fn last_entry(&self, l: LedgerId) -> Result<Bytes, StorageError> {
            self.inner.last_entry(l)
        }
        fn entry_ids(&self, l: LedgerId) -> Result<Vec<EntryId>, StorageError> {
            self.inner.entry_ids(l)
        }
        fn needs_flush(&self) -> bool {
            false
        }
        fn flush(&self) -> Result<(), StorageError> {
            match *self.error.lock() {
                Some(make) => Err(make().into()),
                None => Ok(()),
            }
        }
        fn checkpoint_confirmed(&self) {
            self.confirmed.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[derive(Default)]
    struct CountingCheckpointer {
        checkpoints: AtomicUsize,
        journal_full: std::sync::atomic::AtomicBool,
    }

    impl Checkpointer for CountingCheckpointer {
        fn mark(&self) -> Result<Vec<u64>, StorageError> {
            Ok(vec![1])
        }
        fn checkpoint(&self, _mark: &[u64], _storage_epoch: u64) -> Result<(), StorageError> {
            if self.journal_full.load(Ordering::SeqCst) {
                return Err(bk_journal::JournalError::NoSpace("journal disk full".into()).into());
            }
            self.checkpoints.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }
    }

    fn enospc() -> bk_entrylog::Error {
        bk_entrylog::Error::Io {
            context: "writing segment".into(),
            source: std::io::Error::from_raw_os_error(28),
        }
    }

    fn eio() -> bk_entrylog::Error {
        bk_entrylog::Error::Io {
            context: "fdatasync segment".into(),
            source: std::io::Error::from_raw_os_error(5),
        }
    }

    /// A flush that fails for lack of space takes no checkpoint (the journal keeps the
    /// unflushed entries) and is not fatal; an EIO stays fatal; a later good flush
    /// checkpoints.
    #[test]
    fn no_space_flush_keeps_the_journal_and_is_not_fatal() {
        let storage = Arc::new(FailingFlush {
            inner: mem::MemStorage::new(),
            error: parking_lot::Mutex::new(Some(enospc)),
            confirmed: AtomicUsize::new(0),
        });
        let cp = Arc::new(CountingCheckpointer::default());
        let fatal_calls = Arc::new(AtomicUsize::new(0));
        let fatal: FatalHandler = {
            let n = fatal_calls.clone();
            Arc::new(move |_| {
                n.fetch_add(1, Ordering::SeqCst);
            })
        };
        let store = Store::new(
            storage.clone(),
            Arc::new(mem::MemJournal::new()),
            vec![cp.clone()],
            fatal,
        );
        let e = store.flush_and_checkpoint().unwrap_err();
        assert!(e.is_no_space(), "{e}");
        assert_eq!(cp.checkpoints.load(Ordering::SeqCst), 0, "no checkpoint");
        assert_eq!(fatal_calls.load(Ordering::SeqCst), 0, "ENOSPC is not fatal");
        *storage.error.lock() = Some(eio);
        assert!(!store.flush_and_checkpoint().unwrap_err().is_no_space());
        assert_eq!(cp.checkpoints.load(Ordering::SeqCst), 0);
        assert_eq!(fatal_calls.load(Ordering::SeqCst), 1, "EIO stays fatal");
        *storage.error.lock() = None;
        store.flush_and_checkpoint().unwrap();
        assert_eq!(cp.checkpoints.load(Ordering::SeqCst), 1);
        assert_eq!(storage.confirmed.load(Ordering::SeqCst), 1);
    }

    /// A journal checkpoint deferred for a full journal disk is not fatal and the flush
    /// succeeds, but the storage is not told the checkpoint is done: the journal still
    /// holds the records a restart replays, so a deleted ledger's tombstone must stay
    /// (sim_bookie's regression_seed_14207).
    #[test]
    fn a_deferred_journal_checkpoint_is_not_confirmed_to_the_storage() {
        let storage = Arc::new(FailingFlush {
            inner: mem::MemStorage::new(),
            error: parking_lot::Mutex::new(None),
            confirmed: AtomicUsize::new(0),
        });
        let cp = Arc::new(CountingCheckpointer::default());
        cp.journal_full.store(true, Ordering::SeqCst);
        let fatal: FatalHandler = Arc::new(|reason| panic!("not fatal: {reason}"));
        let store = Store::new(
            storage.clone(),
            Arc::new(mem::MemJournal::new()),
            vec![cp.clone()],
            fatal,
        );
        store.flush_and_checkpoint().unwrap();
        assert_eq!(storage.confirmed.load(Ordering::SeqCst), 0, "deferred");
        cp.journal_full.store(false, Ordering::SeqCst);
        store.flush_and_checkpoint().unwrap();
        assert_eq!(storage.confirmed.load(Ordering::SeqCst), 1, "persisted");
    }

    #[test]
    fn disk_space_of_tmp_is_nonzero() {
        let dir = tempfile::tempdir().unwrap();
        let (total, free) =
            disk_space(&[dir.path().to_path_buf(), dir.path().to_path_buf()]).expect("statvfs");
        assert!(total > 0 && free <= total);
        let (t1, _) = disk_space(&[dir.path().to_path_buf()]).unwrap();
        assert_eq!(t1, total, "same fs counted once");
    }
}
