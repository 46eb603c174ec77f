//! `start_tls`: the server's half of the START_TLS upgrade of one connection (docs/tls.md §1)
//! and the authorization decision right after its handshake (docs/tls.md §3).
//!
//! The reader calls, in order: [`Outstanding::drained`] (every request of this connection
//! already read has queued its response, so nothing clear-text follows the EOK), queues the
//! EOK, closes its response queue and takes the write half back from the writer (which has
//! written everything up to the EOK), then [`upgrade`]: reunite the halves, hold the TLS
//! buffers' bytes in the byte budget, run the handshake (bounded in time), ask the
//! authorizer, and split the session into new halves.
//!
//! Guarantees: a failed or timed-out handshake is an `Err` for this connection only; the
//! budget bytes are held from before the handshake until the connection closes.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::Notify;

use super::conn_io::{ConnReader, ConnWriter};
use super::limits::BufferBudget;
use super::Shared;
use crate::tls::upgrade::{self, TLS_BUFFER_BYTES};

/// Requests of one connection read and not yet queued as responses.
#[derive(Default)]
pub(super) struct Outstanding {
    count: AtomicUsize,
    none: Notify,
}

/// One request counted in [`Outstanding`] until dropped.
pub(super) struct OutstandingGuard(Arc<Outstanding>);

impl Outstanding {
    pub(super) fn guard(self: &Arc<Self>) -> OutstandingGuard {
        self.count.fetch_add(1, Ordering::AcqRel);
        OutstandingGuard(self.clone())
    }

    /// Waits until no request of this connection is outstanding.
    pub(super) async fn drained(&self) {
        loop {
            let none = self.none.notified();
            if self.count.load(Ordering::Acquire) == 0 {
                return;
            }
            none.await;
        }
    }
}

impl Drop for OutstandingGuard {
    fn drop(&mut self) {
        if self.0.count.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.none.notify_waiters();
        }
    }
}

/// A connection after its handshake.
pub(super) struct Upgraded {
    pub(super) reader: ConnReader,
    pub(super) writer: ConnWriter,
    /// The TLS buffers' share of the byte budget, held while the connection lives.
    pub(super) budget: BufferBudget,
    /// The authorizer accepted the client (always true without an authorizer).
    pub(super) authorized: bool,
}

/// Runs the handshake on the connection whose halves are `reader` and `writer` (the bytes
/// after START_TLS already read are `prefix`), then the authorizer. `Err` is the reason the
/// connection must close.
pub(super) async fn upgrade(
    shared: &Shared,
    reader: ConnReader,
    writer: ConnWriter,
    prefix: Bytes,
) -> Result<Upgraded, String> {
    let (ConnReader::Plain(r), ConnWriter::Plain(w)) = (reader, writer) else {
        return Err("START_TLS on a connection that is not plain TCP".into());
    };
    let ctx = shared
        .config
        .tls
        .clone()
        .ok_or("START_TLS upgrade without a TLS context")?;
    let stream = r
        .reunite(w)
        .map_err(|e| format!("reuniting the connection's halves: {e}"))?;
    // Handshakes in progress hold their buffers' bytes too: a flood of them waits here.
    let mut budget = shared.limits.buffer_budget();
    budget.cover(TLS_BUFFER_BYTES).await;
    let tls = upgrade::accept(&ctx, stream, prefix, shared.config.tls_handshake_timeout).await?;
    let authorized = match &shared.config.authorizer {
        None => true,
        Some(authorizer) => {
            let chain = upgrade::peer_chain(&tls);
            match authorizer.authorize(chain.as_deref()) {
                Ok(principal) => {
                    tracing::info!(%principal, "TLS connection authorized");
                    true
                }
                Err(reason) => {
                    // Java logs "AuthZ failed" at error and keeps the connection.
                    tracing::error!(%reason, "AuthZ failed: connection stays unauthorized");
                    false
                }
            }
        }
    };
    let (r, w) = tokio::io::split(tls);
    Ok(Upgraded {
        reader: ConnReader::Tls(r),
        writer: ConnWriter::Tls(w),
        budget,
        authorized,
    })
}
