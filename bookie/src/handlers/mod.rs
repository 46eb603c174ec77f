//! `handlers`: the bookie operations, protocol-independent. This file holds the
//! [`Bookie`] type and [`Bookie::dispatch`]; each operation family has its own file.
//!
//! The server decodes v2/v3 frames into an [`Op`], calls [`Bookie::dispatch`], and encodes
//! the [`Reply`] in the request's protocol. Behaviour follows
//! docs/semantics.md, whose section numbers are cited inline.
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
//! - **One mapping from storage errors to answers**: [`status::status`]; the wire codes of
//!   each [`Status`] are in `status.rs` too.
//! - The only metrics recorded here are the waits inside a request that the server cannot
//!   see (the fence wait, the long-poll pre-wait and wait; docs/metrics.md §2), into the
//!   registry given by [`Bookie::record_waits_into`]; without one nothing is recorded.
//!
//! Files: `ops` (requests and replies), `status` (answers and their wire codes),
//! `ledger_state` (per-ledger state, write handle), `add` (ADD, FORCE_LEDGER), `fence`,
//! `read` (READ, BATCH_READ), `long_poll`, `lac` (the LAC, WRITE_LAC, READ_LAC), `info`
//! (GET_BOOKIE_INFO, GET_LIST_OF_ENTRIES_OF_LEDGER).

mod add;
mod fence;
mod info;
mod lac;
mod ledger_state;
mod long_poll;
mod ops;
mod read;
pub mod status;

use foldhash::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use parking_lot::Mutex;

use crate::metrics::{self, Metrics};
use crate::mode::{BookieMode, ReadOnlyReason};
use crate::storage::{LedgerId, Store};
use ledger_state::LedgerState;

pub use ops::{AddOp, BatchReadOp, LongPoll, Op, Pending, ReadOp, Reply};
pub use status::Status;

/// Runs storage work that may block on disk on tokio's blocking pool (the entry log's
/// reads block). A panic there becomes an EIO answer, never a dead connection.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    tokio::task::spawn_blocking(f).await.ok()
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

const SHARDS: usize = 64;

/// The bookie's request-serving core.
pub struct Bookie {
    store: Arc<Store>,
    options: BookieOptions,
    shards: Vec<Mutex<HashMap<LedgerId, LedgerState>>>,
    mode: Arc<BookieMode>,
    high_priority_writes_allowed: AtomicBool,
    /// Where the in-request waits are recorded (module docs); unset: not recorded.
    wait_metrics: OnceLock<Metrics>,
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
        let mode = Arc::new(BookieMode::new(options.read_only));
        Arc::new(Bookie {
            store,
            options,
            shards: (0..SHARDS)
                .map(|_| Mutex::new(HashMap::default()))
                .collect(),
            mode,
            high_priority_writes_allowed: AtomicBool::new(true),
            wait_metrics: OnceLock::new(),
        })
    }

    /// Records the waits inside requests (`READ_ENTRY_FENCE_WAIT`,
    /// `READ_ENTRY_LONG_POLL_PRE_WAIT`, `READ_ENTRY_LONG_POLL_WAIT`) into `metrics` from now
    /// on. The first registry given is kept; a later call changes nothing.
    pub fn record_waits_into(&self, metrics: Metrics) {
        let _ = self.wait_metrics.set(metrics);
    }

    /// Records the wait `op` that began at `since`, if waits are recorded.
    fn record_wait(&self, op: metrics::Op, since: Instant, success: bool) {
        if let Some(m) = self.wait_metrics.get() {
            m.op(op).observe(since.elapsed(), success);
        }
    }

    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// True while any [`ReadOnlyReason`] holds: adds and write-LACs get EREADONLY.
    pub fn is_read_only(&self) -> bool {
        self.mode.is_read_only()
    }

    /// The mode and its reasons (docs/semantics.md §14); shared with whoever publishes it.
    pub fn mode(&self) -> &Arc<BookieMode> {
        &self.mode
    }

    /// Sets or clears one cause of read-only mode; returns true when the set changed.
    /// `forceReadOnlyBookie` ([`ReadOnlyReason::Forced`]) is never cleared.
    pub fn set_read_only(&self, reason: ReadOnlyReason, on: bool) -> bool {
        if reason == ReadOnlyReason::Forced && !on && self.options.read_only {
            return false;
        }
        self.mode.set(reason, on)
    }

    /// Whether high-priority (recovery) adds are accepted while read-only.
    pub fn high_priority_writes_allowed(&self) -> bool {
        self.high_priority_writes_allowed.load(Ordering::Acquire)
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
}
