//! `handlers`: one function per bookie operation, protocol-independent.
//!
//! The server decodes v2/v3 frames into an [`Op`], calls [`Bookie::dispatch`], and encodes
//! the [`Reply`] in the request's protocol. Behaviour follows
//! shared/reference/semantics.md (section numbers cited inline as "sem §n").
//!
//! Invariants:
//! - **Submission is synchronous, completion is a future.** `dispatch` performs every
//!   state change (storage insert, fence flag, journal enqueue) before it returns, so the
//!   order in which one connection submits requests for a ledger is the order of the
//!   ledger's journal records and storage inserts; only waiting (journal durability, disk
//!   reads, long polls) happens in the returned future.
//! - **No add, fence or write-LAC is answered EOK before its journal record is durable**
//!   (except v3 DEFERRED_SYNC adds, which the client asked to ack before sync).
//! - Per-ledger in-memory state ([`LedgerState`]: the write handle's master key, whether
//!   the key has been journaled since start, the in-flight fence, the cached LAC and its
//!   watchers) lives in sharded maps; a shard lock is never held across an await or a read.

use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use parking_lot::Mutex;
use tokio::sync::watch;

use crate::storage::{AckMode, Durable, EntryId, JournalRecord, LedgerId, StorageError, Store};

/// Result of an operation, independent of the protocol (v2 and v3 codes in protocol.md 2.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    Ok,
    NoLedger,
    NoEntry,
    BadRequest,
    Io,
    Unauthorized,
    BadVersion,
    Fenced,
    ReadOnly,
    TooManyRequests,
    UnknownLedgerState,
}

impl Status {
    /// The v2 int32 code. Codes above 106 are never sent to v2 clients (the stock client
    /// closes the connection on them, protocol.md 2.4): EUNKNOWNLEDGERSTATE becomes EIO.
    pub fn v2_code(self) -> i32 {
        match self {
            Status::Ok => 0,
            Status::NoLedger => 1,
            Status::NoEntry => 2,
            Status::BadRequest => 100,
            Status::Io => 101,
            Status::Unauthorized => 102,
            Status::BadVersion => 103,
            Status::Fenced => 104,
            Status::ReadOnly => 105,
            Status::TooManyRequests => 106,
            Status::UnknownLedgerState => 101,
        }
    }

    /// The v3 `StatusCode` value.
    pub fn v3_code(self) -> i32 {
        match self {
            Status::Ok => 0,
            Status::NoLedger => 402,
            Status::NoEntry => 403,
            Status::BadRequest => 404,
            Status::Io => 501,
            Status::Unauthorized => 502,
            Status::BadVersion => 503,
            Status::Fenced => 504,
            Status::ReadOnly => 505,
            Status::TooManyRequests => 506,
            Status::UnknownLedgerState => 507,
        }
    }
}

impl From<&StorageError> for Status {
    fn from(e: &StorageError) -> Status {
        match e {
            StorageError::NoLedger(_) | StorageError::LedgerDeleted(_) => Status::NoLedger,
            StorageError::NoEntry(..) => Status::NoEntry,
            StorageError::Throttled(_) => Status::TooManyRequests,
            StorageError::Invalid(_) => Status::BadRequest,
            StorageError::MasterKeyConflict(_)
            | StorageError::Corruption(_)
            | StorageError::EntryLog(_)
            | StorageError::Journal(_)
            | StorageError::Replay(_)
            | StorageError::Lost(_)
            | StorageError::Io(_) => Status::Io,
        }
    }
}

/// ADD (v2 ADDENTRY / v3 ADD_ENTRY).
#[derive(Debug, Clone)]
pub struct AddOp {
    pub master_key: Bytes,
    /// The whole entry (ledger id, entry id, LAC, length, digest, payload).
    pub body: Bytes,
    pub recovery: bool,
    pub high_priority: bool,
    /// v3 writeFlags DEFERRED_SYNC (ignored for recovery adds).
    pub deferred_sync: bool,
}

/// Long-poll parameters of a v3 READ_ENTRY (sem §10.2).
#[derive(Debug, Clone, Copy)]
pub struct LongPoll {
    pub previous_lac: i64,
    pub timeout: Option<Duration>,
    pub piggyback: bool,
}

/// READ (v2 READENTRY / v3 READ_ENTRY).
#[derive(Debug, Clone)]
pub struct ReadOp {
    pub ledger: LedgerId,
    /// -1 = the last stored entry.
    pub entry: EntryId,
    /// `Some(key)` for a fencing read; `Some(empty)` when fencing was asked without a key.
    pub fence: Option<Bytes>,
    /// Set for v3 long-poll reads (`previousLAC` present, not fencing).
    pub long_poll: Option<LongPoll>,
    /// v2 flag 0x0004 / v3 `priority > 0` (a scheduling hint only; reads are never refused).
    pub high_priority: bool,
}

/// v2 BATCH_READ_ENTRY.
#[derive(Debug, Clone)]
pub struct BatchReadOp {
    pub ledger: LedgerId,
    pub start: EntryId,
    pub max_count: i32,
    pub max_size: i64,
    pub fence: Option<Bytes>,
}

/// Every operation the bookie serves.
#[derive(Debug, Clone)]
pub enum Op {
    Add(AddOp),
    Read(ReadOp),
    BatchRead(BatchReadOp),
    WriteLac {
        ledger: LedgerId,
        master_key: Bytes,
        body: Bytes,
    },
    ReadLac {
        ledger: LedgerId,
    },
    ForceLedger {
        ledger: LedgerId,
    },
    GetBookieInfo {
        requested: i64,
    },
    ListEntries {
        ledger: LedgerId,
    },
}

/// The answer to an [`Op`]; the server adds the echo fields of the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    Add {
        status: Status,
    },
    Read {
        status: Status,
        /// The entry id to put in the response (the request's, except for piggyback).
        entry: EntryId,
        body: Option<Bytes>,
        max_lac: Option<i64>,
        lac_update_timestamp: Option<i64>,
    },
    BatchRead {
        status: Status,
        entries: Vec<Bytes>,
    },
    WriteLac {
        status: Status,
    },
    ReadLac {
        status: Status,
        lac_body: Option<Bytes>,
        last_entry: Option<Bytes>,
    },
    ForceLedger {
        status: Status,
    },
    BookieInfo {
        status: Status,
        total: Option<i64>,
        free: Option<i64>,
    },
    ListEntries {
        status: Status,
        availability: Option<Bytes>,
    },
}

impl Reply {
    pub fn status(&self) -> Status {
        match self {
            Reply::Add { status }
            | Reply::Read { status, .. }
            | Reply::BatchRead { status, .. }
            | Reply::WriteLac { status }
            | Reply::ReadLac { status, .. }
            | Reply::ForceLedger { status }
            | Reply::BookieInfo { status, .. }
            | Reply::ListEntries { status, .. } => *status,
        }
    }
}

/// A reply still being produced (journal wait, disk read, long poll).
pub type Pending = Pin<Box<dyn Future<Output = Reply> + Send + 'static>>;

/// Runs storage work that may block on disk on tokio's blocking pool (the entry log's
/// reads block). A panic there becomes an EIO answer, never a dead connection.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    tokio::task::spawn_blocking(f).await.ok()
}

/// Status of a failed add: a GC-deleted ledger answers EFENCED (sem §6.5).
fn add_status(e: &StorageError) -> Status {
    match e {
        StorageError::LedgerDeleted(_) => Status::Fenced,
        other => Status::from(other),
    }
}

fn ready(reply: Reply) -> Pending {
    Box::pin(std::future::ready(reply))
}

/// Bookie-wide settings the handlers need (from bk_server.conf via `config`).
#[derive(Debug, Clone)]
pub struct BookieOptions {
    /// `journalFormatVersionToWrite >= 6`: journal explicit LACs (else only a barrier).
    pub journal_explicit_lac: bool,
    /// `journalWriteData`: false = ack adds after the storage insert (data not journaled).
    pub journal_write_data: bool,
    /// `maxBatchReadSize`.
    pub max_batch_read_size: u64,
    /// Ledger directories (GET_BOOKIE_INFO sums their file systems).
    pub ledger_dirs: Vec<PathBuf>,
    /// `forceReadOnlyBookie`.
    pub read_only: bool,
}

impl Default for BookieOptions {
    fn default() -> Self {
        BookieOptions {
            journal_explicit_lac: true,
            journal_write_data: true,
            max_batch_read_size: 5 * 1024 * 1024,
            ledger_dirs: Vec::new(),
            read_only: false,
        }
    }
}

/// What long-poll watchers see: bumped on every LAC increase and on fence.
#[derive(Debug, Clone, Copy, Default)]
struct LacSignal {
    /// Highest LAC seen (i64::MIN = not assigned).
    lac: i64,
    /// Incremented when the ledger is fenced (watchers are woken with "LAC = MAX").
    fence_generation: u64,
    /// Wall-clock ms of the last LAC increase.
    update_ms: i64,
}

type FenceResult = Option<Result<(), StorageError>>;

/// In-memory state of one ledger (Java `LedgerDescriptor` + `TransientLedgerInfo`).
struct LedgerState {
    /// Master key of the write handle (set by the first add/fence/write-LAC since start).
    write_key: Option<Bytes>,
    /// The key record has been journaled since process start.
    key_journaled: bool,
    /// Durability of the fence record this process journaled (None = not fenced here).
    fence: Option<watch::Receiver<FenceResult>>,
    /// Cached LAC; `None` until first needed (then read from the last entry).
    lac: Option<i64>,
    signal: watch::Sender<LacSignal>,
}

impl LedgerState {
    fn new() -> Self {
        LedgerState {
            write_key: None,
            key_journaled: false,
            fence: None,
            lac: None,
            signal: watch::channel(LacSignal {
                lac: i64::MIN,
                fence_generation: 0,
                update_ms: 0,
            })
            .0,
        }
    }

    /// Raises the cached LAC; wakes watchers if it grew.
    fn raise_lac(&mut self, lac: i64) {
        let new = self.lac.map_or(lac, |cur| cur.max(lac));
        if self.lac != Some(new) {
            self.lac = Some(new);
            let now = now_ms();
            self.signal.send_modify(|s| {
                s.lac = new;
                s.update_ms = now;
            });
        }
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

const SHARDS: usize = 64;

/// The bookie's request-serving core.
pub struct Bookie {
    store: Arc<Store>,
    options: BookieOptions,
    shards: Vec<Mutex<HashMap<LedgerId, LedgerState>>>,
    read_only: AtomicBool,
    high_priority_writes_allowed: AtomicBool,
}

/// Reads an i64 (big-endian) at `at`, if present.
fn be_i64(bytes: &[u8], at: usize) -> Option<i64> {
    let raw: [u8; 8] = bytes.get(at..at + 8)?.try_into().ok()?;
    Some(i64::from_be_bytes(raw))
}

/// Length of a master key (SHA-1).
pub const MASTER_KEY_LENGTH: usize = 20;

/// Entry header size (ledger id, entry id, LAC, length).
pub const ENTRY_METADATA_LENGTH: usize = 32;

impl Bookie {
    pub fn new(store: Arc<Store>, options: BookieOptions) -> Arc<Bookie> {
        let read_only = options.read_only;
        Arc::new(Bookie {
            store,
            options,
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
            read_only: AtomicBool::new(read_only),
            high_priority_writes_allowed: AtomicBool::new(true),
        })
    }

    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    pub fn is_read_only(&self) -> bool {
        self.read_only.load(Ordering::Acquire)
    }

    /// Enters (true) or leaves read-only mode (sem §14). `forceReadOnlyBookie` wins.
    pub fn set_read_only(&self, read_only: bool) {
        self.read_only
            .store(read_only || self.options.read_only, Ordering::Release);
    }

    pub fn set_high_priority_writes_allowed(&self, allowed: bool) {
        self.high_priority_writes_allowed
            .store(allowed, Ordering::Release);
    }

    /// Drops all in-memory state of a ledger deleted by GC; watchers are woken.
    pub fn forget_ledger(&self, ledger: LedgerId) {
        if let Some(state) = self.shard(ledger).lock().remove(&ledger) {
            state.signal.send_modify(|s| s.fence_generation += 1);
        }
    }

    fn shard(&self, ledger: LedgerId) -> &Mutex<HashMap<LedgerId, LedgerState>> {
        &self.shards[(ledger as u64 % SHARDS as u64) as usize]
    }

    /// Starts an operation: all state changes happen now, waiting happens in the future.
    pub fn dispatch(self: &Arc<Self>, op: Op) -> Pending {
        match op {
            Op::Add(add) => self.add(add),
            Op::Read(read) => self.read(read),
            Op::BatchRead(batch) => self.batch_read(batch),
            Op::WriteLac {
                ledger,
                master_key,
                body,
            } => self.write_lac(ledger, master_key, body),
            Op::ReadLac { ledger } => {
                let me = self.clone();
                Box::pin(async move {
                    blocking(move || me.read_lac(ledger))
                        .await
                        .unwrap_or(Reply::ReadLac {
                            status: Status::Io,
                            lac_body: None,
                            last_entry: None,
                        })
                })
            }
            Op::ForceLedger { ledger } => self.force_ledger(ledger),
            Op::GetBookieInfo { requested } => ready(self.bookie_info(requested)),
            Op::ListEntries { ledger } => {
                let me = self.clone();
                Box::pin(async move {
                    blocking(move || me.list_entries(ledger))
                        .await
                        .unwrap_or(Reply::ListEntries {
                            status: Status::Io,
                            availability: None,
                        })
                })
            }
        }
    }

    /// Gets or creates the write handle of a ledger (sem §3): the first request since start
    /// creates it with its key (checked against the stored key by storage); later requests
    /// must carry exactly that key (EUA otherwise). Returns the shard guard's work result.
    fn with_write_handle<T>(
        &self,
        ledger: LedgerId,
        key: &[u8],
        if_deleted: Status,
        f: impl FnOnce(&mut LedgerState) -> Result<T, Status>,
    ) -> Result<T, Status> {
        // Master keys are SHA-1 sized on every stock client; the journal's key record
        // holds exactly 20 bytes.
        if key.len() != MASTER_KEY_LENGTH {
            return Err(Status::BadRequest);
        }
        let mut shard = self.shard(ledger).lock();
        let state = shard.entry(ledger).or_insert_with(LedgerState::new);
        match &state.write_key {
            Some(existing) if existing.as_ref() != key => return Err(Status::Unauthorized),
            Some(_) => {}
            None => {
                self.store
                    .storage
                    .set_master_key(ledger, key)
                    .map_err(|e| match e {
                        StorageError::LedgerDeleted(_) => if_deleted,
                        other => Status::from(&other),
                    })?;
                state.write_key = Some(Bytes::copy_from_slice(key));
            }
        }
        f(state)
    }

    /// Journals the master-key record once per ledger per process (sem §3).
    fn journal_key_if_needed(&self, ledger: LedgerId, state: &mut LedgerState) {
        if !state.key_journaled {
            if let Some(key) = &state.write_key {
                // Its durability is covered by the record that follows it in the same
                // FIFO journal; a failure there is reported through that record.
                drop(self.store.journal(
                    JournalRecord::MasterKey {
                        ledger,
                        key: key.clone(),
                    },
                    AckMode::Sync,
                ));
                state.key_journaled = true;
            }
        }
    }

    fn writes_blocked(&self, high_priority: bool) -> bool {
        self.is_read_only()
            && !(high_priority && self.high_priority_writes_allowed.load(Ordering::Acquire))
    }

    // ---------------------------------------------------------------- add (sem §4, §5, §7)

    fn add(&self, add: AddOp) -> Pending {
        let reply = |status| Reply::Add { status };
        if self.writes_blocked(add.high_priority) {
            return ready(reply(Status::ReadOnly));
        }
        let body = add.body;
        // Java's storage reads ledger id, entry id and LAC (bytes 0..24); a shorter entry
        // fails there with an unexpected exception, answered EBADREQ.
        let (Some(ledger), Some(entry), Some(entry_lac)) =
            (be_i64(&body, 0), be_i64(&body, 8), be_i64(&body, 16))
        else {
            return ready(reply(Status::BadRequest));
        };
        let store = self.store.clone();
        let write_data = self.options.journal_write_data;
        let submitted = self.with_write_handle(ledger, &add.master_key, Status::Fenced, |state| {
            if !add.recovery {
                let meta = store
                    .storage
                    .ledger_meta(ledger)
                    .map_err(|e| Status::from(&e))?;
                if meta.is_some_and(|m| m.fenced) {
                    return Err(Status::Fenced);
                }
            }
            store
                .storage
                .add_entry(ledger, entry, body.clone())
                .map_err(|e| add_status(&e))?;
            if state.lac.is_some() {
                state.raise_lac(entry_lac);
            }
            self.journal_key_if_needed(ledger, state);
            if !write_data {
                return Ok(crate::storage::durable_ready(Ok(())));
            }
            let ack = if add.deferred_sync && !add.recovery {
                AckMode::BeforeSync
            } else {
                AckMode::Sync
            };
            Ok(store.journal(
                JournalRecord::Entry {
                    ledger,
                    entry,
                    body: body.clone(),
                },
                ack,
            ))
        });
        match submitted {
            Err(status) => ready(reply(status)),
            Ok(durable) => Box::pin(async move {
                match durable.await {
                    Ok(()) => reply(Status::Ok),
                    Err(_) => reply(Status::Io),
                }
            }),
        }
    }

    // ------------------------------------------------------------- fence (sem §6)

    /// Fences a ledger (creating it if unknown) and returns a future for the durability
    /// of the fence record (already complete if the fence was durable before).
    fn fence(&self, ledger: LedgerId, key: &[u8]) -> Result<Durable, Status> {
        if key.is_empty() {
            return Err(Status::Unauthorized);
        }
        let store = self.store.clone();
        self.with_write_handle(ledger, key, Status::NoLedger, |state| {
            let changed = store
                .storage
                .set_fenced(ledger)
                .map_err(|e| Status::from(&e))?;
            if changed {
                state.signal.send_modify(|s| s.fence_generation += 1);
                self.journal_key_if_needed(ledger, state);
                let durable = store.journal(JournalRecord::Fence { ledger }, AckMode::Sync);
                let (tx, rx) = watch::channel(None);
                state.fence = Some(rx);
                tokio::spawn(async move {
                    let result = durable.await;
                    tx.send_replace(Some(result));
                });
            }
            Ok(match state.fence.clone() {
                // Fenced before this process journaled anything: durable already (replayed
                // from the journal or persisted in the entry log).
                None => crate::storage::durable_ready(Ok(())),
                Some(mut rx) => Box::pin(async move {
                    let done = rx
                        .wait_for(|r| r.is_some())
                        .await
                        .map_err(|_| StorageError::Lost("fence durability waiter"))?;
                    done.clone()
                        .unwrap_or(Err(StorageError::Lost("fence result")))
                }),
            })
        })
    }

    // ------------------------------------------------------------- reads (sem §10)

    /// Reads one entry (-1 = last stored entry).
    fn read_entry(&self, ledger: LedgerId, entry: EntryId) -> Result<Bytes, StorageError> {
        if entry == -1 {
            self.store.storage.last_entry(ledger)
        } else {
            self.store.storage.get_entry(ledger, entry)
        }
    }

    /// The bookie's LAC for a ledger (sem §8): cached max, initialised from the last entry.
    fn last_add_confirmed(&self, ledger: LedgerId) -> Result<i64, StorageError> {
        if let Some(lac) = self.shard(ledger).lock().get(&ledger).and_then(|s| s.lac) {
            return Ok(lac);
        }
        let meta = self
            .store
            .storage
            .ledger_meta(ledger)?
            .ok_or(StorageError::NoLedger(ledger))?;
        let from_entry = match self.store.storage.last_entry(ledger) {
            Ok(last) => be_i64(&last, 16),
            Err(StorageError::NoEntry(..)) => None,
            Err(e) => return Err(e),
        };
        let from_explicit = meta.explicit_lac.as_deref().and_then(|b| be_i64(b, 8));
        let lac = match (from_entry, from_explicit) {
            (Some(a), Some(b)) => a.max(b),
            (Some(a), None) | (None, Some(a)) => a,
            // Java: the no-entry exception is an IOException here (answered EIO).
            (None, None) => return Err(StorageError::NoEntry(ledger, -1)),
        };
        let mut shard = self.shard(ledger).lock();
        let state = shard.entry(ledger).or_insert_with(LedgerState::new);
        state.raise_lac(lac);
        Ok(state.lac.unwrap_or(lac))
    }

    fn read(self: &Arc<Self>, read: ReadOp) -> Pending {
        let ledger = read.ledger;
        let entry = read.entry;
        let err = move |status| Reply::Read {
            status,
            entry,
            body: None,
            max_lac: None,
            lac_update_timestamp: None,
        };
        if let Some(key) = &read.fence {
            let fence_durable = match self.fence(ledger, key) {
                Ok(d) => d,
                Err(status) => return ready(err(status)),
            };
            let me = self.clone();
            return Box::pin(async move {
                let read = blocking(move || me.read_entry(ledger, entry))
                    .await
                    .unwrap_or_else(|| Err(StorageError::Lost("read task")));
                match read {
                    Err(e) => err(Status::from(&e)),
                    Ok(body) => match fence_durable.await {
                        // sem §6.2: v3 fence responses carry body but no maxLAC.
                        Ok(()) => Reply::Read {
                            status: Status::Ok,
                            entry,
                            body: Some(body),
                            max_lac: None,
                            lac_update_timestamp: None,
                        },
                        Err(_) => err(Status::Io),
                    },
                }
            });
        }
        let me = self.clone();
        match read.long_poll {
            None => Box::pin(async move {
                blocking(move || match me.read_entry(ledger, entry) {
                    Err(e) => err(Status::from(&e)),
                    Ok(body) => Reply::Read {
                        status: Status::Ok,
                        entry,
                        body: Some(body),
                        max_lac: me.last_add_confirmed(ledger).ok(),
                        lac_update_timestamp: None,
                    },
                })
                .await
                .unwrap_or_else(|| err(Status::Io))
            }),
            Some(lp) => Box::pin(me.long_poll(ledger, entry, lp)),
        }
    }

    /// The LAC a long poll starts from: `Ok(None)` when the ledger has no LAC yet.
    fn long_poll_known_lac(&self, ledger: LedgerId) -> Result<Option<i64>, Status> {
        match self.store.storage.ledger_meta(ledger) {
            Ok(Some(_)) => {}
            Ok(None) => return Err(Status::NoLedger),
            Err(e) => return Err(Status::from(&e)),
        }
        match self.last_add_confirmed(ledger) {
            Ok(lac) => Ok(Some(lac)),
            Err(StorageError::NoEntry(..)) => Ok(None),
            Err(e) => Err(Status::from(&e)),
        }
    }

    /// v3 long-poll read (sem §10.2).
    async fn long_poll(self: Arc<Self>, ledger: LedgerId, entry: EntryId, lp: LongPoll) -> Reply {
        let err = move |status| Reply::Read {
            status,
            entry,
            body: None,
            max_lac: None,
            lac_update_timestamp: None,
        };
        let mut lac_update_timestamp = None;
        if let Some(timeout) = lp.timeout {
            // Register a watcher unless the LAC is already past previousLAC.
            let me = self.clone();
            let known = match blocking(move || me.long_poll_known_lac(ledger)).await {
                Some(Ok(known)) => known,
                Some(Err(status)) => return err(status),
                None => return err(Status::Io),
            };
            if known.is_none_or(|lac| lac <= lp.previous_lac) {
                let mut rx = {
                    let mut shard = self.shard(ledger).lock();
                    shard
                        .entry(ledger)
                        .or_insert_with(LedgerState::new)
                        .signal
                        .subscribe()
                };
                let start_generation = rx.borrow().fence_generation;
                let previous = lp.previous_lac;
                let woke = tokio::time::timeout(
                    timeout,
                    rx.wait_for(|s| s.lac > previous || s.fence_generation != start_generation),
                )
                .await;
                if let Ok(Ok(signal)) = woke {
                    if signal.lac > previous {
                        lac_update_timestamp = Some(signal.update_ms);
                    }
                }
            }
        }
        blocking(move || self.long_poll_answer(ledger, entry, lp, lac_update_timestamp))
            .await
            .unwrap_or_else(|| err(Status::Io))
    }

    /// Step 3 of a long poll: the answer once woken (or at once without timeOut).
    fn long_poll_answer(
        &self,
        ledger: LedgerId,
        entry: EntryId,
        lp: LongPoll,
        lac_update_timestamp: Option<i64>,
    ) -> Reply {
        let err = move |status| Reply::Read {
            status,
            entry,
            body: None,
            max_lac: None,
            lac_update_timestamp: None,
        };
        let known_lac = match self.last_add_confirmed(ledger) {
            Ok(lac) => lac,
            Err(StorageError::NoEntry(..)) => return err(Status::Io),
            Err(e) => return err(Status::from(&e)),
        };
        if !lp.piggyback {
            return match self.read_entry(ledger, entry) {
                Err(e) => err(Status::from(&e)),
                Ok(body) => Reply::Read {
                    status: Status::Ok,
                    entry,
                    body: Some(body),
                    max_lac: Some(known_lac),
                    lac_update_timestamp,
                },
            };
        }
        if entry != -1 {
            return err(Status::BadRequest);
        }
        if known_lac > lp.previous_lac {
            let next = lp.previous_lac.saturating_add(1);
            match self.read_entry(ledger, next) {
                Ok(body) => Reply::Read {
                    status: Status::Ok,
                    entry: next,
                    body: Some(body),
                    max_lac: Some(known_lac),
                    lac_update_timestamp,
                },
                Err(StorageError::NoEntry(..)) => Reply::Read {
                    status: Status::Ok,
                    entry,
                    body: None,
                    max_lac: Some(known_lac),
                    lac_update_timestamp,
                },
                Err(e) => err(Status::from(&e)),
            }
        } else {
            Reply::Read {
                status: Status::Ok,
                entry,
                body: None,
                max_lac: Some(known_lac),
                lac_update_timestamp,
            }
        }
    }

    /// v2 batch read (sem §10.3, the 4.17.x selection: first entry always, then stop at
    /// the first entry that would exceed maxSize or cannot be read).
    fn batch_read(self: &Arc<Self>, batch: BatchReadOp) -> Pending {
        let fail = |status| Reply::BatchRead {
            status,
            entries: Vec::new(),
        };
        let fence_durable = match &batch.fence {
            Some(key) => match self.fence(batch.ledger, key) {
                Ok(d) => Some(d),
                Err(status) => return ready(fail(status)),
            },
            None => None,
        };
        let me = self.clone();
        Box::pin(async move {
            let selected = blocking(move || me.select_batch(&batch))
                .await
                .unwrap_or(Err(Status::Io));
            let entries = match selected {
                Ok(entries) => entries,
                Err(status) => return fail(status),
            };
            if let Some(durable) = fence_durable {
                if durable.await.is_err() {
                    return fail(Status::Io);
                }
            }
            Reply::BatchRead {
                status: Status::Ok,
                entries,
            }
        })
    }

    /// The entries of a batch read, or the first entry's error.
    fn select_batch(&self, batch: &BatchReadOp) -> Result<Vec<Bytes>, Status> {
        let max_size = if batch.max_size <= 0 {
            self.options.max_batch_read_size
        } else {
            (batch.max_size as u64).min(self.options.max_batch_read_size)
        };
        let mut size: u64 = 36;
        let mut entries = Vec::new();
        let mut id = batch.start;
        loop {
            if batch.max_count > 0 && entries.len() >= batch.max_count as usize {
                break;
            }
            match self.read_entry(batch.ledger, id) {
                Ok(body) => {
                    let add = 4 + body.len() as u64;
                    if !entries.is_empty() && size + add > max_size {
                        break;
                    }
                    size += add;
                    entries.push(body);
                }
                Err(e) if entries.is_empty() => return Err(Status::from(&e)),
                Err(_) => break,
            }
            match id.checked_add(1) {
                Some(next) if batch.start != -1 => id = next,
                _ => break,
            }
        }
        Ok(entries)
    }

    // ---------------------------------------------------------------- LAC (sem §9)

    fn write_lac(&self, ledger: LedgerId, key: Bytes, body: Bytes) -> Pending {
        let reply = |status| Reply::WriteLac { status };
        if self.is_read_only() {
            return ready(reply(Status::ReadOnly));
        }
        let store = self.store.clone();
        let journal_lac = self.options.journal_explicit_lac;
        let submitted = self.with_write_handle(ledger, &key, Status::NoLedger, |state| {
            store
                .storage
                .set_explicit_lac(ledger, body.clone())
                .map_err(|e| Status::from(&e))?;
            if let Some(lac) = be_i64(&body, 8) {
                state.raise_lac(lac);
            }
            self.journal_key_if_needed(ledger, state);
            let record = if journal_lac {
                JournalRecord::ExplicitLac {
                    ledger,
                    body: body.clone(),
                }
            } else {
                JournalRecord::ForceBarrier { ledger }
            };
            Ok(store.journal(record, AckMode::Sync))
        });
        match submitted {
            Err(status) => ready(reply(status)),
            Ok(durable) => Box::pin(async move {
                match durable.await {
                    Ok(()) => reply(Status::Ok),
                    Err(_) => reply(Status::Io),
                }
            }),
        }
    }

    fn read_lac(&self, ledger: LedgerId) -> Reply {
        let fail = |status| Reply::ReadLac {
            status,
            lac_body: None,
            last_entry: None,
        };
        let meta = match self.store.storage.ledger_meta(ledger) {
            Ok(Some(meta)) => meta,
            Ok(None) => return fail(Status::NoLedger),
            Err(e) => return fail(Status::from(&e)),
        };
        let last_entry = match self.store.storage.last_entry(ledger) {
            Ok(e) => Some(e),
            Err(StorageError::NoEntry(..)) => None,
            Err(e) => return fail(Status::from(&e)),
        };
        let status = match (&meta.explicit_lac, &last_entry) {
            (None, None) => Status::NoEntry,
            // Java quirk kept: explicit LAC but no entry -> EIO with lacBody (sem §9).
            (Some(_), None) => Status::Io,
            _ => Status::Ok,
        };
        Reply::ReadLac {
            status,
            lac_body: meta.explicit_lac,
            last_entry,
        }
    }

    // ------------------------------------------------------- force ledger (sem §11)

    fn force_ledger(&self, ledger: LedgerId) -> Pending {
        let durable = self
            .store
            .journal(JournalRecord::ForceBarrier { ledger }, AckMode::Sync);
        Box::pin(async move {
            Reply::ForceLedger {
                status: match durable.await {
                    Ok(()) => Status::Ok,
                    Err(_) => Status::Io,
                },
            }
        })
    }

    // ------------------------------------------------------- bookie info (sem §12)

    fn bookie_info(&self, requested: i64) -> Reply {
        match crate::storage::disk_space(&self.options.ledger_dirs) {
            Ok((total, free)) => Reply::BookieInfo {
                status: Status::Ok,
                total: (requested & 0x1 != 0).then_some(total.min(i64::MAX as u64) as i64),
                free: (requested & 0x2 != 0).then_some(free.min(i64::MAX as u64) as i64),
            },
            Err(_) => Reply::BookieInfo {
                status: Status::Io,
                total: None,
                free: None,
            },
        }
    }

    // ---------------------------------------------- list of entries (sem §13)

    fn list_entries(&self, ledger: LedgerId) -> Reply {
        match self.store.storage.entry_ids(ledger) {
            Ok(ids) => Reply::ListEntries {
                status: Status::Ok,
                availability: Some(bk_proto::availability::encode_availability(ids)),
            },
            Err(e) => Reply::ListEntries {
                status: Status::from(&e),
                availability: None,
            },
        }
    }
}
