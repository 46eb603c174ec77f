//! `gc_metadata`: the metadata checks the garbage collector makes before it deletes a local
//! ledger, decided exactly as the Java bookie's `ScanAndCompareGarbageCollector` decides them
//! (docs/semantics.md §15):
//!
//! * **Over-replication** (`gcOverreplicatedLedgerWaitTime`, ms; 1 day by default; `<= 0`
//!   disables it): at most once per that interval, every local ledger whose metadata is
//!   CLOSED and whose ensembles (every segment of the ensembles map) do not contain this
//!   bookie's registered id is deleted. A pre-check reads the metadata; for each candidate the
//!   under-replication lock (`<root>/underreplication/locks/urL<id, 10 digits>`) must not
//!   exist, is then taken (an ephemeral znode, so no replication worker starts copying the
//!   ledger back to this bookie meanwhile), the metadata is read again, and only if it still
//!   says "closed, not a member" is the ledger deleted, while the lock is held.
//! * **`verifyMetadataOnGC`** (false by default): a local ledger missing from the metadata
//!   listing is deleted only if a read of its own metadata answers "no such ledger", or
//!   finds metadata whose ensembles do not contain this bookie.
//!
//! Guarantees (the reason this module exists): a ledger is never deleted on a failed, timed
//! out or unparsable metadata read (an error means keep, and is logged); an OPEN or
//! IN_RECOVERY ledger is never deleted as over-replicated (its ensemble may still change back
//! to this bookie); a ledger whose under-replication lock exists or cannot be taken is kept;
//! membership is an exact match of the registered bookie id in any ensemble.
//!
//! The ZooKeeper side is behind [`MetadataStore`] (bookie/src/gc_metadata_zk.rs implements it)
//! so every decision is unit-tested; bookie/src/gc.rs runs the steps and deletes.

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

use crate::admin::ledger_metadata::{self, LedgerState};

/// What GC reads and locks in the metadata store. A missing node is `Ok(None)` / `Ok(false)`,
/// distinct from a failed read (`Err`, the reason as text).
pub trait MetadataStore {
    /// The metadata znode bytes of `ledger`. The request is sent when the future is created
    /// (so a caller can issue several before awaiting them).
    fn read_metadata(
        &self,
        ledger: u64,
    ) -> impl Future<Output = Result<Option<Vec<u8>>, String>> + Send + 'static;
    /// Whether the under-replication lock of `ledger` exists (a replication worker holds it).
    fn lock_exists(&self, ledger: u64) -> impl Future<Output = Result<bool, String>> + Send;
    /// Takes the under-replication lock of `ledger`; an existing lock is an error.
    fn acquire_lock(&self, ledger: u64) -> impl Future<Output = Result<(), String>> + Send;
    /// Gives back a lock this bookie took (a lock already gone is not an error).
    fn release_lock(&self, ledger: u64) -> impl Future<Output = Result<(), String>> + Send;
}

/// Why a ledger is kept by a metadata check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Keep {
    /// This bookie is in some ensemble of the ledger.
    Member,
    /// The ledger is OPEN or IN_RECOVERY: its ensemble may change again.
    NotClosed(LedgerState),
    /// No metadata (the over-replication check leaves such ledgers to the listing pass).
    NoMetadata,
    /// The metadata read failed or timed out, or the znode does not parse.
    ReadFailed(String),
    /// A replication worker holds the ledger's under-replication lock.
    Locked,
    /// The lock could not be checked or taken.
    LockFailed(String),
}

/// A check's answer for one ledger.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Delete,
    Keep(Keep),
}

/// Java's `isNotBookieIncludedInLedgerEnsembles` on the outcome of one metadata read.
pub fn judge_overreplicated(read: &Result<Option<Vec<u8>>, String>, self_id: &str) -> Verdict {
    let data = match read {
        Ok(Some(data)) => data,
        Ok(None) => return Verdict::Keep(Keep::NoMetadata),
        Err(e) => return Verdict::Keep(Keep::ReadFailed(e.clone())),
    };
    match ledger_metadata::ensembles(data) {
        Err(e) => Verdict::Keep(Keep::ReadFailed(e)),
        Ok(md) if md.state != LedgerState::Closed => Verdict::Keep(Keep::NotClosed(md.state)),
        Ok(md) if md.has_member(self_id) => Verdict::Keep(Keep::Member),
        Ok(_) => Verdict::Delete,
    }
}

/// `verifyMetadataOnGC` on the outcome of one metadata read of a ledger missing from the
/// listing: delete when there is no metadata, or metadata without this bookie (Java checks
/// no state here); keep on any error.
pub fn judge_unlisted(read: &Result<Option<Vec<u8>>, String>, self_id: &str) -> Verdict {
    match read {
        Ok(None) => Verdict::Delete,
        Err(e) => Verdict::Keep(Keep::ReadFailed(e.clone())),
        Ok(Some(data)) => match ledger_metadata::ensembles(data) {
            Err(e) => Verdict::Keep(Keep::ReadFailed(e)),
            Ok(md) if md.has_member(self_id) => Verdict::Keep(Keep::Member),
            Ok(_) => Verdict::Delete,
        },
    }
}

/// `gcMetadataOpRateLimit`: at most `per_second` metadata operations a second, evenly
/// spaced (Guava's `RateLimiter.create(rate)` as Java uses it, without its burst).
#[derive(Debug)]
pub struct OpRate {
    gap: Duration,
    next: Option<Instant>,
}

impl OpRate {
    pub fn new(per_second: u32) -> OpRate {
        OpRate {
            gap: Duration::from_secs(1) / per_second.max(1),
            next: None,
        }
    }

    /// Waits until the next operation may start.
    pub async fn acquire(&mut self) {
        let now = Instant::now();
        let at = self.next.map_or(now, |n| n.max(now));
        self.next = Some(at + self.gap);
        tokio::time::sleep_until(at).await;
    }
}

/// When the over-replication check is due: more than `interval` after the last one, the
/// first `interval` after the GC loop started (Java sets its clock at construction).
#[derive(Debug)]
pub struct OverReplicationSchedule {
    interval: Option<Duration>,
    last: Instant,
}

impl OverReplicationSchedule {
    pub fn new(interval: Option<Duration>) -> OverReplicationSchedule {
        OverReplicationSchedule {
            interval,
            last: Instant::now(),
        }
    }

    pub fn due(&self) -> bool {
        self.interval
            .is_some_and(|i| Instant::now().duration_since(self.last) > i)
    }

    /// A check completed (a check that failed as a whole is retried at the next round).
    pub fn done(&mut self) {
        self.last = Instant::now();
    }
}

/// Reads the metadata of `ledgers`, `window` requests in flight, each started under `rate`.
async fn read_all<S: MetadataStore>(
    store: &S,
    ledgers: &[u64],
    window: usize,
    rate: &mut OpRate,
) -> Vec<(u64, Result<Option<Vec<u8>>, String>)> {
    let mut out = Vec::with_capacity(ledgers.len());
    for chunk in ledgers.chunks(window.max(1)) {
        let mut futures = Vec::with_capacity(chunk.len());
        for &id in chunk {
            rate.acquire().await;
            futures.push((id, store.read_metadata(id)));
        }
        for (id, f) in futures {
            out.push((id, f.await));
        }
    }
    out
}

fn log_keep(ledger: u64, keep: &Keep, what: &str) {
    match keep {
        Keep::ReadFailed(e) => {
            tracing::warn!(ledger, error = %e, "{what}: metadata read failed; ledger kept")
        }
        Keep::LockFailed(e) => {
            tracing::warn!(ledger, error = %e, "{what}: under-replication lock failed; ledger kept")
        }
        other => tracing::debug!(ledger, reason = ?other, "{what}: ledger kept"),
    }
}

/// The pre-check of the over-replication pass: the local ledgers whose metadata says
/// "closed, not a member". Read errors keep the ledger (logged).
pub async fn overreplicated_candidates<S: MetadataStore>(
    store: &S,
    local: &[u64],
    self_id: &str,
    window: usize,
    rate: &mut OpRate,
) -> Vec<u64> {
    let mut out = Vec::new();
    for (id, read) in read_all(store, local, window, rate).await {
        match judge_overreplicated(&read, self_id) {
            Verdict::Delete => out.push(id),
            Verdict::Keep(k) => log_keep(id, &k, "over-replication pre-check"),
        }
    }
    out
}

/// One batch of candidates under lock: the ledgers whose lock this call took (the caller
/// releases them with [`release_locks`] after deleting, whatever happened) and, of those, the
/// ones to delete now (the metadata read again under the lock still says "closed, not a
/// member").
#[derive(Debug, Default, PartialEq, Eq)]
pub struct LockedBatch {
    pub locked: Vec<u64>,
    pub victims: Vec<u64>,
}

/// Locks each candidate (skipping any whose lock exists or cannot be taken) and re-reads its
/// metadata under the lock.
pub async fn lock_and_recheck<S: MetadataStore>(
    store: &S,
    candidates: &[u64],
    self_id: &str,
    rate: &mut OpRate,
) -> LockedBatch {
    let mut batch = LockedBatch::default();
    for &id in candidates {
        match store.lock_exists(id).await {
            Ok(false) => {}
            Ok(true) => {
                log_keep(id, &Keep::Locked, "over-replication check");
                continue;
            }
            Err(e) => {
                log_keep(id, &Keep::LockFailed(e), "over-replication check");
                continue;
            }
        }
        if let Err(e) = store.acquire_lock(id).await {
            log_keep(id, &Keep::LockFailed(e), "over-replication check");
            continue;
        }
        batch.locked.push(id);
    }
    for (id, read) in read_all(store, &batch.locked, batch.locked.len(), rate).await {
        match judge_overreplicated(&read, self_id) {
            Verdict::Delete => batch.victims.push(id),
            Verdict::Keep(k) => log_keep(id, &k, "over-replication check under lock"),
        }
    }
    batch
}

/// Releases the locks of a batch; a failure is logged (the lock is ephemeral: it goes with
/// the session at the latest).
pub async fn release_locks<S: MetadataStore>(store: &S, locked: &[u64]) {
    for &id in locked {
        if let Err(e) = store.release_lock(id).await {
            tracing::error!(ledger = id, error = %e, "could not remove the under-replication lock");
        }
    }
}

/// `verifyMetadataOnGC`: of the local ledgers missing from the listing, the ones to keep.
pub async fn verify_unlisted<S: MetadataStore>(
    store: &S,
    unlisted: &[u64],
    self_id: &str,
    window: usize,
    rate: &mut OpRate,
) -> Vec<u64> {
    let mut keep = Vec::new();
    for (id, read) in read_all(store, unlisted, window, rate).await {
        if let Verdict::Keep(k) = judge_unlisted(&read, self_id) {
            log_keep(id, &k, "verifyMetadataOnGC");
            keep.push(id);
        }
    }
    keep
}

#[cfg(test)]
#[path = "gc_metadata_tests.rs"]
mod tests;
