//! Journal acknowledgements delivered on the async runtime: one cross-thread wake-up per
//! journal group instead of one per add (bk_journal's `ack` module says why).
//!
//! The committer thread hands each group's [`AckBatch`] to an unbounded channel; a task on
//! the runtime receives it and sends the acknowledgements there. The channel holds at most
//! the acknowledgements of appends already admitted by the journal and holding request
//! permits, so it is bounded by those budgets. If the runtime is gone (shutdown), the
//! committer delivers the batch itself.

use bk_journal::{AckBatch, AckDelivery};

/// A delivery hook that sends each batch's acknowledgements on `runtime`.
pub fn on_runtime(runtime: &tokio::runtime::Handle) -> AckDelivery {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<AckBatch>();
    runtime.spawn(async move {
        while let Some(batch) = rx.recv().await {
            batch.deliver();
        }
    });
    AckDelivery::new(move |batch| {
        if let Err(undelivered) = tx.send(batch) {
            undelivered.0.deliver();
        }
    })
}
