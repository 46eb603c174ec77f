//! ADD (docs/semantics.md §4, §5, §7) and FORCE_LEDGER (docs/semantics.md §11): the write path.
//!
//! Invariant: an add is answered EOK only after its journal record is durable (except a
//! v3 DEFERRED_SYNC add, and `journalWriteData=false`), and its storage insert happens
//! before the journal enqueue, both before `dispatch` returns.

use std::sync::atomic::Ordering;

use super::status::{status, At};
use super::{be_i64, ready, AddOp, Bookie, Pending, Reply, Status};
use crate::storage::{AckMode, JournalRecord, LedgerId};

impl Bookie {
    fn writes_blocked(&self, high_priority: bool) -> bool {
        self.is_read_only()
            && !(high_priority && self.high_priority_writes_allowed.load(Ordering::Acquire))
    }

    pub(super) fn add(&self, add: AddOp) -> Pending {
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
        let submitted = self.with_write_handle(ledger, &add.master_key, At::Add, |state| {
            if !add.recovery {
                let fenced = store
                    .storage
                    .is_fenced(ledger)
                    .map_err(|e| status(&e, At::Storage))?;
                if fenced {
                    return Err(Status::Fenced);
                }
            }
            // One pass over the payload for both copies (journal record, segment footer).
            let crc = crate::storage::entry_crc(ledger, entry, &body);
            store
                .storage
                .add_entry_with_crc(ledger, entry, body.clone(), crc)
                .map_err(|e| status(&e, At::Add))?;
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
                    crc: Some(crc),
                },
                ack,
            ))
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

    pub(super) fn force_ledger(&self, ledger: LedgerId) -> Pending {
        let durable = self
            .store
            .journal(JournalRecord::ForceBarrier { ledger }, AckMode::Sync);
        Box::pin(async move {
            Reply::ForceLedger {
                status: match durable.await {
                    Ok(()) => Status::Ok,
                    Err(e) => status(&e, At::Journal),
                },
            }
        })
    }
}
