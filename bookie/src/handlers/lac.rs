//! The last-add-confirmed (docs/semantics.md §8) and the explicit-LAC operations WRITE_LAC and
//! READ_LAC (docs/semantics.md §9).
//!
//! The bookie's LAC is the maximum of what adds and explicit LACs carried, initialised
//! from the last stored entry; a WRITE_LAC is answered only after its journal record
//! (or, for journal format < 6, a barrier) is durable.

use bytes::Bytes;

use super::ledger_state::LedgerState;
use super::status::{status, At};
use super::{be_i64, ready, Bookie, Pending, Reply, Status};
use crate::storage::{AckMode, JournalRecord, LedgerId, StorageError};

impl Bookie {
    /// The bookie's LAC for a ledger (docs/semantics.md §8): cached max, initialised from the last entry.
    pub(super) fn last_add_confirmed(&self, ledger: LedgerId) -> Result<i64, StorageError> {
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

    pub(super) fn write_lac(&self, ledger: LedgerId, key: Bytes, body: Bytes) -> Pending {
        let reply = |status| Reply::WriteLac { status };
        if self.is_read_only() {
            return ready(reply(Status::ReadOnly));
        }
        let store = self.store.clone();
        let journal_lac = self.options.journal_explicit_lac;
        let submitted = self.with_write_handle(ledger, &key, At::Storage, |state| {
            store
                .storage
                .set_explicit_lac(ledger, body.clone())
                .map_err(|e| status(&e, At::Storage))?;
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
                    Err(e) => reply(status(&e, At::Journal)),
                }
            }),
        }
    }

    pub(super) fn read_lac(&self, ledger: LedgerId) -> Reply {
        let fail = |status| Reply::ReadLac {
            status,
            lac_body: None,
            last_entry: None,
        };
        let meta = match self.store.storage.ledger_meta(ledger) {
            Ok(Some(meta)) => meta,
            Ok(None) => return fail(Status::NoLedger),
            Err(e) => return fail(status(&e, At::Storage)),
        };
        let last_entry = match self.store.storage.last_entry(ledger) {
            Ok(e) => Some(e),
            Err(StorageError::NoEntry(..)) => None,
            Err(e) => return fail(status(&e, At::Storage)),
        };
        let status = match (&meta.explicit_lac, &last_entry) {
            (None, None) => Status::NoEntry,
            // Java quirk kept: explicit LAC but no entry -> EIO with lacBody (docs/semantics.md §9).
            (Some(_), None) => Status::Io,
            _ => Status::Ok,
        };
        Reply::ReadLac {
            status,
            lac_body: meta.explicit_lac,
            last_entry,
        }
    }
}
