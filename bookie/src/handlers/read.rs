//! READ and v2 BATCH_READ (docs/semantics.md §10), with fencing reads (docs/semantics.md §6.2).
//!
//! Reads block on disk, so they run on tokio's blocking pool; a panic there is answered
//! EIO. A fencing read's answer waits for the fence record to be durable.
//!
//! **Stricter than Java:** a fencing read that finds no entry (the fence of a ledger this
//! bookie holds nothing of, as ledger recovery sends) is answered ENOENTRY only once the
//! fence record is durable, EIO if it failed. Java answers ENOENTRY at once, and ledger
//! recovery counts that answer as a fenced bookie, so a crash before the fence's fsync could
//! leave the ledger unfenced on a bookie that said it fenced it (found by the whole-bookie
//! simulation, seeds 2041 and 3647; docs/semantics.md §6.2). Other read errors are answered
//! at once, as Java.
//!
//! `bookkeeper_server_READ_ENTRY_FENCE_WAIT` (docs/metrics.md §2) times the wait of a fencing
//! read whose entry was read, as Java's `ReadEntryProcessorV3` does: from the entry read done
//! to the fence's durability known, success when durable, failure when the fence record
//! failed. The wait of an ENOENTRY answer is not recorded, so the metric counts what Java's
//! counts.

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;

use super::status::{status, At};
use super::{blocking, ready, BatchReadOp, Bookie, Pending, ReadOp, Reply, Status};
use crate::metrics::Op;
use crate::storage::{Durable, EntryId, LedgerId, StorageError};

impl Bookie {
    /// Reads one entry (-1 = last stored entry).
    pub(super) fn read_entry(
        &self,
        ledger: LedgerId,
        entry: EntryId,
    ) -> Result<Bytes, StorageError> {
        if entry == -1 {
            self.store.storage.last_entry(ledger)
        } else {
            self.store.storage.get_entry(ledger, entry)
        }
    }

    pub(super) fn read(self: &Arc<Self>, read: ReadOp) -> Pending {
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
                let reader = me.clone();
                let read = blocking(move || reader.read_entry(ledger, entry))
                    .await
                    .unwrap_or_else(|| Err(StorageError::Lost("read task")));
                match read {
                    // Stricter than Java (module docs): "no entry" is a fencing answer too.
                    Err(e @ StorageError::NoEntry(..)) => match fence_durable.await {
                        Ok(()) => err(status(&e, At::Storage)),
                        Err(fe) => err(status(&fe, At::Journal)),
                    },
                    Err(e) => err(status(&e, At::Storage)),
                    Ok(body) => match me.fence_wait(fence_durable).await {
                        // docs/semantics.md §6.2: v3 fence responses carry body but no maxLAC.
                        Ok(()) => Reply::Read {
                            status: Status::Ok,
                            entry,
                            body: Some(body),
                            max_lac: None,
                            lac_update_timestamp: None,
                        },
                        Err(e) => err(status(&e, At::Journal)),
                    },
                }
            });
        }
        let me = self.clone();
        match read.long_poll {
            None => Box::pin(async move {
                blocking(move || match me.read_entry(ledger, entry) {
                    Err(e) => err(status(&e, At::Storage)),
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

    /// v2 batch read (docs/semantics.md §10.3, the 4.17.x selection: first entry always, then stop at
    /// the first entry that would exceed maxSize or cannot be read).
    pub(super) fn batch_read(self: &Arc<Self>, batch: BatchReadOp) -> Pending {
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
            let reader = me.clone();
            let selected = blocking(move || reader.select_batch(&batch))
                .await
                .unwrap_or(Err(Status::Io));
            let entries = match selected {
                Ok(entries) => entries,
                // As for a single fencing read: "no entry" only once the fence is durable.
                Err(Status::NoEntry) => {
                    if let Some(durable) = fence_durable {
                        if let Err(e) = durable.await {
                            return fail(status(&e, At::Journal));
                        }
                    }
                    return fail(Status::NoEntry);
                }
                Err(status) => return fail(status),
            };
            if let Some(durable) = fence_durable {
                if let Err(e) = me.fence_wait(durable).await {
                    return fail(status(&e, At::Journal));
                }
            }
            Reply::BatchRead {
                status: Status::Ok,
                entries,
            }
        })
    }

    /// Waits for a fencing read's fence to be durable, recording the wait (module docs).
    async fn fence_wait(&self, durable: Durable) -> Result<(), StorageError> {
        let since = Instant::now();
        let result = durable.await;
        self.record_wait(Op::ReadEntryFenceWait, since, result.is_ok());
        result
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
                Err(e) if entries.is_empty() => return Err(status(&e, At::Storage)),
                Err(_) => break,
            }
            match id.checked_add(1) {
                Some(next) if batch.start != -1 => id = next,
                _ => break,
            }
        }
        Ok(entries)
    }
}
