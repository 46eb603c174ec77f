//! Fencing (docs/semantics.md §6): the fence flag, its journal record, and the shared future every
//! fencing read waits on.
//!
//! Invariant: a fencing read is answered only after the fence record is durable; a ledger
//! fenced before this process journaled anything is durable already.

use tokio::sync::watch;

use super::status::{status, At};
use super::{Bookie, Status};
use crate::storage::{AckMode, Durable, JournalRecord, LedgerId, StorageError};

impl Bookie {
    /// Fences a ledger (creating it if unknown) and returns a future for the durability
    /// of the fence record (already complete if the fence was durable before).
    pub(super) fn fence(&self, ledger: LedgerId, key: &[u8]) -> Result<Durable, Status> {
        if key.is_empty() {
            return Err(Status::Unauthorized);
        }
        let store = self.store.clone();
        self.with_write_handle(ledger, key, At::Storage, |state| {
            let changed = store
                .storage
                .set_fenced(ledger)
                .map_err(|e| status(&e, At::Storage))?;
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
}
