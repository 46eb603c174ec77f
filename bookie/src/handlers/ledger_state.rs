//! Per-ledger in-memory state (Java `LedgerDescriptor` + `TransientLedgerInfo`) and the
//! write handle (docs/semantics.md §3).
//!
//! Invariants: the first add, fence or write-LAC since start creates the write handle with
//! its master key (checked against the stored key); later ones must carry exactly that
//! key (EUA otherwise); the key record is journaled once per ledger per process, before
//! the first record that depends on it. A shard lock is never held across an await.

use bytes::Bytes;
use tokio::sync::watch;

use super::status::{status, At};
use super::{Bookie, Status, MASTER_KEY_LENGTH};
use crate::storage::{AckMode, JournalRecord, LedgerId, StorageError};

/// What long-poll watchers see: bumped on every LAC increase and on fence.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct LacSignal {
    /// Highest LAC seen (i64::MIN = not assigned).
    pub(super) lac: i64,
    /// Incremented when the ledger is fenced (watchers are woken with "LAC = MAX").
    pub(super) fence_generation: u64,
    /// Wall-clock ms of the last LAC increase.
    pub(super) update_ms: i64,
}

pub(super) type FenceResult = Option<Result<(), StorageError>>;

/// In-memory state of one ledger (Java `LedgerDescriptor` + `TransientLedgerInfo`).
pub(super) struct LedgerState {
    /// Master key of the write handle (set by the first add/fence/write-LAC since start).
    pub(super) write_key: Option<Bytes>,
    /// The key record has been journaled since process start.
    pub(super) key_journaled: bool,
    /// Durability of the fence record this process journaled (None = not fenced here).
    pub(super) fence: Option<watch::Receiver<FenceResult>>,
    /// Cached LAC; `None` until first needed (then read from the last entry).
    pub(super) lac: Option<i64>,
    pub(super) signal: watch::Sender<LacSignal>,
}

impl LedgerState {
    pub(super) fn new() -> Self {
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
    pub(super) fn raise_lac(&mut self, lac: i64) {
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

impl Bookie {
    /// Gets or creates the write handle of a ledger (docs/semantics.md §3): the first request since start
    /// creates it with its key (checked against the stored key by storage); later requests
    /// must carry exactly that key (EUA otherwise). A storage failure creating it is
    /// answered as met `at` (ADD and the others differ on a deleted ledger). Returns the
    /// work's result, computed under the shard lock.
    pub(super) fn with_write_handle<T>(
        &self,
        ledger: LedgerId,
        key: &[u8],
        at: At,
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
                    .map_err(|e| status(&e, at))?;
                state.write_key = Some(Bytes::copy_from_slice(key));
            }
        }
        f(state)
    }

    /// Journals the master-key record once per ledger per process (docs/semantics.md §3).
    pub(super) fn journal_key_if_needed(&self, ledger: LedgerId, state: &mut LedgerState) {
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
}
