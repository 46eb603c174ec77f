//! Where acknowledgements are sent from: [`AckBatch`] (one group's acknowledgements) and
//! [`AckDelivery`] (a hook that takes each batch to the caller's side).
//!
//! By default the committer thread sends every acknowledgement itself. Each send wakes the
//! task awaiting that append, and a wake from a thread outside an async runtime costs the
//! runtime a system call (an eventfd write) and a turn of its event loop: measured here,
//! one `write` per durable add, and the writers of the connections then found one response
//! each to send (0.9 `sendto` per add). With an [`AckDelivery`] the committer hands the
//! whole group over in one call; the bookie's hook moves it onto its runtime with one
//! wake-up and sends the acknowledgements there, where waking a task is a queue push, so
//! the group's responses are queued before any connection writer runs and go out
//! together (ARCHITECTURE.md, Journal).
//!
//! Invariant: a batch holds acknowledgements of records whose group write+fdatasync has
//! completed (or failed); handing it over never makes anything durable earlier. A batch
//! that is dropped undelivered fails its appends with `ShutDown` (their senders close).

use crate::error::JournalError;
use crate::Seq;
use std::fmt;
use std::sync::Arc;
use tokio::sync::oneshot;

/// The result an append's future resolves to.
pub(crate) type AckResult = Result<Seq, JournalError>;

/// One group's acknowledgements, in append order, not yet sent.
pub struct AckBatch(pub(crate) Vec<(oneshot::Sender<AckResult>, AckResult)>);

impl AckBatch {
    /// Sends every acknowledgement (in append order) to its append's future.
    pub fn deliver(self) {
        for (reply, result) in self.0 {
            let _ = reply.send(result);
        }
    }

    /// Acknowledgements in the batch.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Takes each group's [`AckBatch`] from the committer thread to where it is delivered
/// (module docs). It must not block: the committer calls it between group writes.
#[derive(Clone)]
pub struct AckDelivery(Arc<dyn Fn(AckBatch) + Send + Sync>);

impl AckDelivery {
    pub fn new(hand_over: impl Fn(AckBatch) + Send + Sync + 'static) -> AckDelivery {
        AckDelivery(Arc::new(hand_over))
    }

    pub(crate) fn hand_over(&self, batch: AckBatch) {
        (self.0)(batch)
    }
}

impl fmt::Debug for AckDelivery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AckDelivery")
    }
}
