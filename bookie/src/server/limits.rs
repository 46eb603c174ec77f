//! In-progress limits: how many adds and reads, and how many request bytes, may be
//! between "decoded" and "answered", per connection and bookie-wide.
//!
//! A connection takes a [`Permit`] for each request *before* it reads more from its
//! socket; when any cap is reached the acquire waits, so the bookie stops reading that
//! socket (the stock `maxAddsInProgressLimit` / `maxReadsInProgressLimit` behaviour:
//! throttle by pausing reads, never an error). A permit is released when the response
//! has been queued for writing (or the connection is gone).
//!
//! Invariant: semaphores are always acquired in the order connection -> global count ->
//! global bytes, and every holder finishes without needing another permit, so waiting
//! cannot deadlock.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::handlers::Op;

/// Caps (stock keys in parentheses; 0 there means "off", which maps to the built-in cap
/// so that nothing is unbounded).
#[derive(Debug, Clone)]
pub struct LimitsConfig {
    /// Adds in progress, bookie-wide (`maxAddsInProgressLimit`).
    pub max_adds_in_progress: usize,
    /// Reads in progress, bookie-wide (`maxReadsInProgressLimit`).
    pub max_reads_in_progress: usize,
    /// Adds in progress per connection (`maxPendingAddRequestsPerThread`).
    pub max_adds_per_connection: usize,
    /// Reads in progress per connection (`maxPendingReadRequestsPerThread`).
    pub max_reads_per_connection: usize,
    /// Request bytes in progress, bookie-wide (`maxBytesInProgressLimit`, ours).
    pub max_bytes_in_progress: usize,
}

/// Built-in caps used when a stock key is 0 ("off").
pub const DEFAULT_MAX_IN_PROGRESS: usize = 100_000;
pub const DEFAULT_MAX_PER_CONNECTION: usize = 10_000;
pub const DEFAULT_MAX_BYTES_IN_PROGRESS: usize = 256 * 1024 * 1024;

impl Default for LimitsConfig {
    fn default() -> Self {
        LimitsConfig {
            max_adds_in_progress: DEFAULT_MAX_IN_PROGRESS,
            max_reads_in_progress: DEFAULT_MAX_IN_PROGRESS,
            max_adds_per_connection: DEFAULT_MAX_PER_CONNECTION,
            max_reads_per_connection: DEFAULT_MAX_PER_CONNECTION,
            max_bytes_in_progress: DEFAULT_MAX_BYTES_IN_PROGRESS,
        }
    }
}

impl LimitsConfig {
    /// Applies the stock "0 = off" convention.
    pub fn from_stock(
        max_adds_in_progress: usize,
        max_reads_in_progress: usize,
        max_adds_per_connection: usize,
        max_reads_per_connection: usize,
        max_bytes_in_progress: usize,
    ) -> Self {
        let or = |v: usize, d: usize| if v == 0 { d } else { v };
        LimitsConfig {
            max_adds_in_progress: or(max_adds_in_progress, DEFAULT_MAX_IN_PROGRESS),
            max_reads_in_progress: or(max_reads_in_progress, DEFAULT_MAX_IN_PROGRESS),
            max_adds_per_connection: or(max_adds_per_connection, DEFAULT_MAX_PER_CONNECTION),
            max_reads_per_connection: or(max_reads_per_connection, DEFAULT_MAX_PER_CONNECTION),
            max_bytes_in_progress: or(max_bytes_in_progress, DEFAULT_MAX_BYTES_IN_PROGRESS),
        }
    }
}

/// Which count a request uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Adds, write-LAC, force-ledger.
    Write,
    /// Reads of every kind, LAC reads, info requests.
    Read,
}

pub fn kind_of(op: &Op) -> Kind {
    match op {
        Op::Add(_) | Op::WriteLac { .. } | Op::ForceLedger { .. } => Kind::Write,
        _ => Kind::Read,
    }
}

/// The bookie-wide semaphores.
pub struct Limits {
    config: LimitsConfig,
    writes: Arc<Semaphore>,
    reads: Arc<Semaphore>,
    bytes: Arc<Semaphore>,
}

/// Permits held by one request; released on drop.
pub struct Permit {
    _connection: OwnedSemaphorePermit,
    _global: OwnedSemaphorePermit,
    _bytes: Option<OwnedSemaphorePermit>,
}

impl Limits {
    pub fn new(config: &LimitsConfig) -> Self {
        let cap = |v: usize| v.clamp(1, Semaphore::MAX_PERMITS);
        Limits {
            writes: Arc::new(Semaphore::new(cap(config.max_adds_in_progress))),
            reads: Arc::new(Semaphore::new(cap(config.max_reads_in_progress))),
            bytes: Arc::new(Semaphore::new(
                cap(config.max_bytes_in_progress).min(u32::MAX as usize),
            )),
            config: config.clone(),
        }
    }

    /// Per-connection semaphores sharing this bookie's global ones.
    pub fn connection(self: &Arc<Self>) -> ConnectionLimits {
        let cap = |v: usize| v.clamp(1, Semaphore::MAX_PERMITS);
        ConnectionLimits {
            global: self.clone(),
            writes: Arc::new(Semaphore::new(cap(self.config.max_adds_per_connection))),
            reads: Arc::new(Semaphore::new(cap(self.config.max_reads_per_connection))),
        }
    }

    /// Permits currently free (tests and metrics): (writes, reads, bytes).
    pub fn available(&self) -> (usize, usize, usize) {
        (
            self.writes.available_permits(),
            self.reads.available_permits(),
            self.bytes.available_permits(),
        )
    }
}

/// One connection's semaphores.
pub struct ConnectionLimits {
    global: Arc<Limits>,
    writes: Arc<Semaphore>,
    reads: Arc<Semaphore>,
}

impl ConnectionLimits {
    /// Waits until a request of `kind` carrying `bytes` request bytes may proceed.
    pub async fn acquire(&self, kind: Kind, bytes: usize) -> Permit {
        let (conn, global) = match kind {
            Kind::Write => (&self.writes, &self.global.writes),
            Kind::Read => (&self.reads, &self.global.reads),
        };
        // The semaphores are never closed, so acquire cannot fail; if it ever did, we
        // would rather wait forever on this connection than run unbounded.
        let connection = match conn.clone().acquire_owned().await {
            Ok(p) => p,
            Err(_) => std::future::pending().await,
        };
        let global = match global.clone().acquire_owned().await {
            Ok(p) => p,
            Err(_) => std::future::pending().await,
        };
        let want = bytes
            .min(self.global.config.max_bytes_in_progress)
            .min(u32::MAX as usize) as u32;
        let bytes = if want == 0 {
            None
        } else {
            match self.global.bytes.clone().acquire_many_owned(want).await {
                Ok(p) => Some(p),
                Err(_) => std::future::pending().await,
            }
        };
        Permit {
            _connection: connection,
            _global: global,
            _bytes: bytes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn per_connection_cap_blocks_until_release() {
        let limits = Arc::new(Limits::new(&LimitsConfig {
            max_adds_per_connection: 2,
            ..LimitsConfig::default()
        }));
        let conn = limits.connection();
        let a = conn.acquire(Kind::Write, 10).await;
        let _b = conn.acquire(Kind::Write, 10).await;
        let third = tokio::time::timeout(Duration::from_millis(50), conn.acquire(Kind::Write, 10));
        assert!(third.await.is_err(), "third add must wait at the cap");
        // Reads are counted separately.
        let _r = conn.acquire(Kind::Read, 10).await;
        drop(a);
        let third = tokio::time::timeout(Duration::from_secs(1), conn.acquire(Kind::Write, 10));
        assert!(third.await.is_ok());
    }

    #[tokio::test]
    async fn byte_budget_is_global() {
        let limits = Arc::new(Limits::new(&LimitsConfig {
            max_bytes_in_progress: 100,
            ..LimitsConfig::default()
        }));
        let c1 = limits.connection();
        let c2 = limits.connection();
        let big = c1.acquire(Kind::Write, 1000).await; // clamped to the whole budget
        let blocked = tokio::time::timeout(Duration::from_millis(50), c2.acquire(Kind::Read, 1));
        assert!(blocked.await.is_err());
        drop(big);
        assert_eq!(limits.available().2, 100);
    }

    #[test]
    fn zero_means_builtin_cap() {
        let c = LimitsConfig::from_stock(0, 5, 0, 0, 0);
        assert_eq!(c.max_adds_in_progress, DEFAULT_MAX_IN_PROGRESS);
        assert_eq!(c.max_reads_in_progress, 5);
    }
}
