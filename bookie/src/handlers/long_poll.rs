//! v3 long-poll reads (docs/semantics.md §10.2): wait (bounded by the request's timeout) until the LAC
//! passes `previousLAC` or the ledger is fenced, then answer with the LAC and, unless
//! piggybacking finds nothing new, an entry.
//!
//! Invariant: no shard lock is held while waiting; the wait is on the ledger's LAC signal.
//!
//! Metrics (docs/metrics.md §2), as Java's `LongPollReadEntryProcessorV3` records them, only
//! for a poll with a timeout:
//! - `bookkeeper_server_READ_ENTRY_LONG_POLL_PRE_WAIT`: from the poll's start to the moment
//!   it parks on the LAC signal, or finds the LAC already past `previousLAC` and does not
//!   park; always a success. A poll refused before (no ledger, an I/O error) records none.
//! - `bookkeeper_server_READ_ENTRY_LONG_POLL_WAIT`: the time parked, only for a poll that
//!   parked: success when woken (the LAC passed `previousLAC`, or the ledger was fenced or
//!   deleted), failure when the timeout expired.

use std::sync::Arc;
use std::time::Instant;

use super::ledger_state::LedgerState;
use super::status::{status, At};
use super::{blocking, Bookie, LongPoll, Reply, Status};
use crate::metrics::Op;
use crate::storage::{EntryId, LedgerId, StorageError};

impl Bookie {
    /// The LAC a long poll starts from: `Ok(None)` when the ledger has no LAC yet.
    fn long_poll_known_lac(&self, ledger: LedgerId) -> Result<Option<i64>, Status> {
        match self.store.storage.ledger_meta(ledger) {
            Ok(Some(_)) => {}
            Ok(None) => return Err(Status::NoLedger),
            Err(e) => return Err(status(&e, At::Storage)),
        }
        match self.last_add_confirmed(ledger) {
            Ok(lac) => Ok(Some(lac)),
            Err(StorageError::NoEntry(..)) => Ok(None),
            Err(e) => Err(status(&e, At::Storage)),
        }
    }

    /// v3 long-poll read (docs/semantics.md §10.2).
    pub(super) async fn long_poll(
        self: Arc<Self>,
        ledger: LedgerId,
        entry: EntryId,
        lp: LongPoll,
    ) -> Reply {
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
            let pre_wait = Instant::now();
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
                self.record_wait(Op::ReadEntryLongPollPreWait, pre_wait, true);
                let parked = Instant::now();
                let woke = tokio::time::timeout(
                    timeout,
                    rx.wait_for(|s| s.lac > previous || s.fence_generation != start_generation),
                )
                .await;
                let mut woken = false;
                if let Ok(Ok(signal)) = woke {
                    woken = true;
                    if signal.lac > previous {
                        lac_update_timestamp = Some(signal.update_ms);
                    }
                }
                self.record_wait(Op::ReadEntryLongPollWait, parked, woken);
            } else {
                // Already past previousLAC: answered without parking.
                self.record_wait(Op::ReadEntryLongPollPreWait, pre_wait, true);
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
            Err(e) => return err(status(&e, At::Lac)),
        };
        if !lp.piggyback {
            return match self.read_entry(ledger, entry) {
                Err(e) => err(status(&e, At::Storage)),
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
                Err(e) => err(status(&e, At::Storage)),
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
}
