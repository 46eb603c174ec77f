//! In-progress limits: how many adds and reads, and how many request bytes, may be
//! between "decoded" and "answered", per connection and bookie-wide.
//!
//! A connection takes a [`Permit`] for each request *before* it reads more from its
//! socket; when any cap is reached the acquire waits, so the bookie stops reading that
//! socket (the stock `maxAddsInProgressLimit` / `maxReadsInProgressLimit` behaviour:
//! throttle by pausing reads, never an error). A permit is released when the response
//! has been queued for writing (or the connection is gone).
//!
//! Bytes a connection has read but not yet handed out as a request (its receive
//! buffer) take from the same global byte budget *before* the socket is read
//! ([`BufferBudget`]), so at the cap the bookie stops reading sockets for partial frames
//! as for whole ones. When a frame is complete its bytes move into the request's
//! [`Permit`]: each byte is counted exactly once while it is in memory.
//!
//! A frame larger than [`SMALL_FRAME_BYTES`] is reserved whole, as soon as its prefix
//! is seen, from a *partial-frame share* (3/4 of the byte budget) and then from the
//! budget; its buffer is then allocated once to exactly the frame. Small requests
//! therefore always find at least 1/4 of the budget however many peers hold large
//! frames half-sent, and the peers beyond the share are simply not read (their bytes
//! stay in the kernel's socket buffers).
//!
//! Invariant (no deadlock): a reader waits holding at most its buffer's budget permits;
//! it takes the partial share in one acquire and never waits for more of it while holding
//! some (a holder of the share needs only its peer's bytes to finish its frame, then hands
//! the bytes on); request counts are taken in the order connection -> global count while
//! holding the frame's bytes, and every count holder finishes without another permit.
//! Known limit: a reader that holds a few KiB of an unfinished small frame waits for the
//! rest of it while holding them; enough such stalled peers (1/4 of the budget's worth)
//! could still fill the budget. Closing peers that stall at the cap is the next step.
//!
//! Taking permits ([`acquire_permits`], also used by `send_budget`): every request takes
//! several, so the free case goes first, one compare-and-swap without the waiter that
//! the awaited form builds and polls (docs/benchmarks.md, "A cheaper user-space path per
//! add").

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::{AcquireError, OwnedSemaphorePermit, Semaphore};

use crate::handlers::Op;

/// Takes `n` permits of `sem`, waiting while they are not free. Trying first never
/// overtakes a queued waiter: tokio's semaphore hands released permits to queued waiters
/// before any become free, so free permits exist only while nobody waits for them (the
/// awaited form's first poll makes the same check). Fails only if `sem` is closed.
pub(super) async fn acquire_permits(
    sem: &Arc<Semaphore>,
    n: u32,
) -> Result<OwnedSemaphorePermit, AcquireError> {
    match sem.clone().try_acquire_many_owned(n) {
        Ok(p) => Ok(p),
        Err(_) => sem.clone().acquire_many_owned(n).await,
    }
}

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

/// Budget bytes a request holds at least while it is in progress, whatever its frame:
/// what its task, its reply's future and a long poll's wait cost besides the frame
/// (docs/memory.md §2), so the count of requests in progress is bounded by the byte
/// budget as well as by the count caps.
pub const REQUEST_OVERHEAD_BYTES: usize = 1024;

/// Frames up to this size (prefix included) are read in ordinary chunks; larger ones
/// are reserved whole from the partial-frame share before their payload is read.
pub const SMALL_FRAME_BYTES: usize = 64 * 1024;

/// Share of the byte budget that frames larger than [`SMALL_FRAME_BYTES`] may hold
/// while they are being received: numerator / denominator.
pub const PARTIAL_SHARE: (usize, usize) = (3, 4);

/// The bookie-wide semaphores.
pub struct Limits {
    config: LimitsConfig,
    writes: Arc<Semaphore>,
    reads: Arc<Semaphore>,
    bytes: Arc<Semaphore>,
    /// Permits of `bytes` (capped at u32::MAX).
    bytes_total: usize,
    /// The partial-frame share: large frames being received.
    partial: Arc<Semaphore>,
    partial_total: usize,
    /// Budget bytes held by connections' receive buffers (not yet requests).
    buffered: AtomicUsize,
    /// Connections waiting for the partial-frame share.
    partial_waiters: AtomicUsize,
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
        let bytes_total = cap(config.max_bytes_in_progress).min(u32::MAX as usize);
        let partial_total = (bytes_total / PARTIAL_SHARE.1 * PARTIAL_SHARE.0).max(1);
        Limits {
            writes: Arc::new(Semaphore::new(cap(config.max_adds_in_progress))),
            reads: Arc::new(Semaphore::new(cap(config.max_reads_in_progress))),
            bytes: Arc::new(Semaphore::new(bytes_total)),
            bytes_total,
            partial: Arc::new(Semaphore::new(partial_total)),
            partial_total,
            buffered: AtomicUsize::new(0),
            partial_waiters: AtomicUsize::new(0),
            config: config.clone(),
        }
    }

    /// The byte accounting of one connection's receive buffer.
    pub fn buffer_budget(self: &Arc<Self>) -> BufferBudget {
        BufferBudget {
            limits: self.clone(),
            bytes: None,
            partial: None,
        }
    }

    /// Budget bytes now held by receive buffers (read, not yet handed out as requests).
    pub fn buffered_bytes(&self) -> usize {
        self.buffered.load(Ordering::Relaxed)
    }

    /// Bytes of the partial-frame share now reserved by large frames being received.
    pub fn partial_bytes(&self) -> usize {
        self.partial_total - self.partial.available_permits()
    }

    /// Size of the partial-frame share.
    pub fn partial_share(&self) -> usize {
        self.partial_total
    }

    /// Whether the byte budget is tight: connections wait for the partial-frame share,
    /// or less than a quarter of the budget is free. Readers then read small chunks, so
    /// a peer that turns out to be sending a large frame holds little while it waits.
    pub fn bytes_tight(&self) -> bool {
        self.partial_waiters.load(Ordering::Relaxed) > 0
            || self.bytes.available_permits() < self.bytes_total / 4
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

    /// Size of the byte budget.
    pub fn budget_bytes(&self) -> usize {
        self.bytes_total
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
    /// Waits until a request of `kind` may proceed, its bytes already held (taken from
    /// the connection's [`BufferBudget`] when its frame was complete).
    pub async fn admit(&self, kind: Kind, bytes: Option<OwnedSemaphorePermit>) -> Permit {
        self.admit_holding(kind, bytes, REQUEST_OVERHEAD_BYTES)
            .await
    }

    /// [`ConnectionLimits::admit`], topping the request's bytes up to `at_least` (capped
    /// at the budget) from the global budget after the counts.
    async fn admit_holding(
        &self,
        kind: Kind,
        bytes: Option<OwnedSemaphorePermit>,
        at_least: usize,
    ) -> Permit {
        let (conn, global) = match kind {
            Kind::Write => (&self.writes, &self.global.writes),
            Kind::Read => (&self.reads, &self.global.reads),
        };
        // The semaphores are never closed, so acquire cannot fail; if it ever did, we
        // would rather wait forever on this connection than run unbounded.
        let connection = match acquire_permits(conn, 1).await {
            Ok(p) => p,
            Err(_) => std::future::pending().await,
        };
        let global = match acquire_permits(global, 1).await {
            Ok(p) => p,
            Err(_) => std::future::pending().await,
        };
        // A request costs memory beyond its frame (its task, its reply's future, a
        // long poll's wait): at least REQUEST_OVERHEAD_BYTES of the budget each.
        let held = bytes.as_ref().map_or(0, |p| p.num_permits());
        let at_least = at_least.min(self.global.bytes_total);
        let bytes = if held < at_least {
            let more = (at_least - held) as u32;
            match acquire_permits(&self.global.bytes, more).await {
                Ok(p) => match bytes {
                    Some(mut b) => {
                        b.merge(p);
                        Some(b)
                    }
                    None => Some(p),
                },
                Err(_) => std::future::pending().await,
            }
        } else {
            bytes
        };
        Permit {
            _connection: connection,
            _global: global,
            _bytes: bytes,
        }
    }

    /// Waits until a request of `kind` carrying `bytes` request bytes may proceed: the
    /// counts as [`ConnectionLimits::admit`], then the bytes (at least
    /// [`REQUEST_OVERHEAD_BYTES`]) from the global budget.
    pub async fn acquire(&self, kind: Kind, bytes: usize) -> Permit {
        self.admit_holding(kind, None, bytes.max(REQUEST_OVERHEAD_BYTES))
            .await
    }
}

/// One connection's share of the byte budget for its receive buffer. The reader keeps
/// `held() >= buffer capacity` at every await point: it calls [`BufferBudget::cover`]
/// (or [`BufferBudget::reserve_frame`]) *before* it allocates or reads, and
/// [`BufferBudget::take`] moves a complete frame's bytes into its request.
pub struct BufferBudget {
    limits: Arc<Limits>,
    bytes: Option<OwnedSemaphorePermit>,
    /// The partial-frame share held for the large frame now being received.
    partial: Option<OwnedSemaphorePermit>,
}

impl BufferBudget {
    /// Budget bytes held for the buffer.
    pub fn held(&self) -> usize {
        self.bytes.as_ref().map_or(0, |p| p.num_permits())
    }

    /// Whether the frame being received holds the partial-frame share.
    pub fn has_frame_reservation(&self) -> bool {
        self.partial.is_some()
    }

    fn add(&mut self, p: OwnedSemaphorePermit) {
        self.limits
            .buffered
            .fetch_add(p.num_permits(), Ordering::Relaxed);
        match &mut self.bytes {
            Some(held) => held.merge(p),
            None => self.bytes = Some(p),
        }
    }

    /// Waits until at least `n` budget bytes are held (`n` is capped at the budget).
    pub async fn cover(&mut self, n: usize) {
        let n = n.min(self.limits.bytes_total);
        let held = self.held();
        if n <= held {
            return;
        }
        let want = (n - held) as u32;
        match acquire_permits(&self.limits.bytes, want).await {
            Ok(p) => self.add(p),
            Err(_) => std::future::pending().await,
        }
    }

    /// Gives back budget bytes above `n`.
    pub fn shrink_to(&mut self, n: usize) {
        let held = self.held();
        if n < held {
            if let Some(p) = self.bytes.as_mut().and_then(|p| p.split(held - n)) {
                self.limits.buffered.fetch_sub(held - n, Ordering::Relaxed);
                drop(p);
            }
        }
    }

    /// Reserves a large frame of `total` bytes whole: the partial-frame share first (one
    /// acquire, never topped up), then the budget. Call it holding only the bytes of the
    /// frame already buffered.
    pub async fn reserve_frame(&mut self, total: usize) {
        let share = total.min(self.limits.partial_total) as u32;
        let partial = match self.limits.partial.clone().try_acquire_many_owned(share) {
            Ok(p) => p,
            Err(_) => {
                let limits = self.limits.clone();
                limits.partial_waiters.fetch_add(1, Ordering::Relaxed);
                let _waiting = Waiting(&limits.partial_waiters);
                match limits.partial.clone().acquire_many_owned(share).await {
                    Ok(p) => p,
                    Err(_) => std::future::pending().await,
                }
            }
        };
        self.partial = Some(partial);
        self.cover(total).await;
    }

    /// Moves a complete frame's `n` bytes out of the buffer's budget, for its request;
    /// the partial-frame share of a large frame is given back.
    pub fn take(&mut self, n: usize) -> Option<OwnedSemaphorePermit> {
        self.partial = None;
        let held = self.held();
        let n = n.min(held);
        if n == 0 {
            return None;
        }
        self.limits.buffered.fetch_sub(n, Ordering::Relaxed);
        if n == held {
            self.bytes.take()
        } else {
            self.bytes.as_mut().and_then(|p| p.split(n))
        }
    }
}

impl Drop for BufferBudget {
    fn drop(&mut self) {
        self.shrink_to(0);
    }
}

/// Decrements a waiter count when the wait ends or is cancelled.
struct Waiting<'a>(&'a AtomicUsize);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Trying first must not let a small request overtake a larger one queued before it,
    /// though some permits are free when the small one asks.
    #[tokio::test]
    async fn permits_tried_first_do_not_overtake_a_queued_waiter() {
        let sem = Arc::new(Semaphore::new(10));
        let held = acquire_permits(&sem, 6).await.unwrap();
        let big = tokio::spawn({
            let sem = sem.clone();
            async move { acquire_permits(&sem, 8).await.unwrap() }
        });
        while sem.available_permits() > 0 {
            tokio::task::yield_now().await; // the big one queues, holding the 4 free
        }
        let small = tokio::time::timeout(Duration::from_millis(50), acquire_permits(&sem, 1));
        assert!(
            small.await.is_err(),
            "the small request overtook the queued one"
        );
        drop(held);
        let big = big.await.unwrap();
        assert_eq!(big.num_permits(), 8);
        assert_eq!(acquire_permits(&sem, 2).await.unwrap().num_permits(), 2);
    }

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
