//! Garbage collection and compaction scheduling (docs/semantics.md §15): every `gcWaitTime`,
//! due compactions run, then local ledgers without metadata are deleted.
//!
//! Invariants:
//! - the local snapshot (the GC token) is taken *before* the ZooKeeper scan, so a ledger
//!   created while the scan runs is never deleted by that round;
//! - any failure of the scan skips the round: a failed scan is never read as "no
//!   ledgers" (gc_scan.rs);
//! - the bookie forgets the in-memory state of exactly the ledgers the round deleted
//!   (the ids the entry log reports), and logs them;
//! - a compaction kind the operator suspended (`gc/suspend_compaction`, gc_status.rs) is not
//!   started; every pass shows in `gc_details` while it runs and is counted when it ends;
//! - the loop ends when storage is shut down or its [`Cancel`] is cancelled (the first
//!   step of shutdown, docs/semantics.md §16); a compaction or GC pass in progress stops
//!   within one read batch or written entry (entrylog/src/compaction.rs), so shutdown
//!   never waits for a rate-limited compaction. It never runs in standalone mode (the
//!   caller spawns it only with a ZooKeeper registration).

use std::sync::Arc;
use std::time::Duration;

use bk_entrylog::Cancel;
use tokio::time::Instant;

use crate::config::BookieConfig;
use crate::gc_status::{CompactionKind, GcStatus};
use crate::gc_trigger::GcTrigger;
use crate::handlers::Bookie;
use crate::registration::Registration;
use crate::storage::real::RealStorage;

/// Minor and major compaction schedule (stock keys `minor/majorCompactionThreshold`,
/// `minor/majorCompactionInterval`; a threshold <= 0 or no interval disables one).
pub struct CompactionSchedule {
    minor: Option<(f64, Duration)>,
    major: Option<(f64, Duration)>,
}

impl CompactionSchedule {
    pub fn from_config(cfg: &BookieConfig) -> CompactionSchedule {
        let pick = |threshold: f64, interval: Option<Duration>| {
            interval
                .filter(|_| threshold > 0.0)
                .map(|i| (threshold.min(1.0), i))
        };
        CompactionSchedule {
            minor: pick(
                cfg.minor_compaction_threshold,
                cfg.minor_compaction_interval,
            ),
            major: pick(
                cfg.major_compaction_threshold,
                cfg.major_compaction_interval,
            ),
        }
    }
}

/// Runs due compactions after a GC round (Java's GC thread does both in one loop).
async fn compact_if_due(
    storage: &Arc<RealStorage>,
    schedule: &CompactionSchedule,
    status: &GcStatus,
    last_minor: &mut Instant,
    last_major: &mut Instant,
    cancel: &Cancel,
) {
    let now = Instant::now();
    // A suspended kind is not due (Java's `!suspendMajor` / `!suspendMinor`).
    let major = schedule
        .major
        .filter(|_| !status.is_suspended(CompactionKind::Major));
    let minor = schedule
        .minor
        .filter(|_| !status.is_suspended(CompactionKind::Minor));
    let (threshold, kind) = match (major, minor) {
        (Some((t, every)), _) if now.duration_since(*last_major) >= every => {
            *last_major = now;
            *last_minor = now;
            (t, CompactionKind::Major)
        }
        (_, Some((t, every))) if now.duration_since(*last_minor) >= every => {
            *last_minor = now;
            (t, CompactionKind::Minor)
        }
        _ => return,
    };
    let _pass = status.begin(kind);
    let (st, c) = (storage.clone(), cancel.clone());
    // Reported by the blocking task itself: shutdown aborts this task, and the pass it
    // cancelled still says how far it got.
    let _ = tokio::task::spawn_blocking(move || match st.compact(threshold, &c) {
        Ok(report) if report.cancelled => {
            tracing::info!(?report, threshold, "compaction cancelled by shutdown");
        }
        Ok(report) if report.compacted_segments > 0 || report.removed_segments > 0 => {
            tracing::info!(?report, threshold, "compaction done");
        }
        Err(e) if !e.is_shut_down() => tracing::warn!(error = %e, "compaction failed"),
        _ => {}
    })
    .await;
}

/// The GC loop: one round every `interval`, or when `trigger` asks (module docs).
pub async fn gc_loop(
    storage: Arc<RealStorage>,
    bookie: Arc<Bookie>,
    registration: Arc<Registration>,
    interval: Duration,
    compaction: CompactionSchedule,
    cancel: Cancel,
    trigger: Arc<GcTrigger>,
) {
    trigger.serve();
    let mut tick = tokio::time::interval(interval);
    tick.tick().await;
    let mut last_minor = Instant::now();
    let mut last_major = last_minor;
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = trigger.asked() => {}
        }
        if cancel.is_cancelled() {
            return;
        }
        let _round = trigger.begin_round();
        compact_if_due(
            &storage,
            &compaction,
            trigger.status(),
            &mut last_minor,
            &mut last_major,
            &cancel,
        )
        .await;
        if cancel.is_cancelled() {
            return;
        }
        // Fails only once the entry log is closed.
        let Ok(token) = storage.begin_gc_scan() else {
            return;
        };
        let client = match registration.client() {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(error = %e, "GC skipped: no ZooKeeper client");
                continue;
            }
        };
        let live =
            match crate::gc_scan::scan_live_ledgers(&client, registration.ledgers_root()).await {
                Ok(live) => live,
                Err(e) => {
                    tracing::warn!(error = %e, "GC skipped: ledger scan failed");
                    continue;
                }
            };
        let (st, c) = (storage.clone(), cancel.clone());
        let result =
            tokio::task::spawn_blocking(move || st.gc(token, &|id| live.contains(id), &c)).await;
        match result {
            Ok(Ok(report)) => {
                for id in &report.deleted_ledgers {
                    bookie.forget_ledger(*id as i64);
                }
                if !report.deleted_ledgers.is_empty() || report.removed_segments > 0 {
                    tracing::info!(
                        deleted_ledgers = ?report.deleted_ledgers,
                        removed_segments = report.removed_segments,
                        reclaimed_bytes = report.reclaimed_bytes,
                        "GC round done"
                    );
                } else {
                    tracing::debug!(?report, "GC round done");
                }
            }
            Ok(Err(e)) if !e.is_shut_down() => tracing::warn!(error = %e, "GC failed"),
            _ => return,
        }
    }
}
