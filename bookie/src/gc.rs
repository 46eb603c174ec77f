//! Garbage collection and compaction scheduling (docs/semantics.md §15): every `gcWaitTime`,
//! due compactions run; then, once per `gcOverreplicatedLedgerWaitTime`, local ledgers that
//! metadata no longer places on this bookie are deleted (the over-replication check,
//! bookie/src/gc_metadata.rs); then local ledgers without metadata are deleted (checked one by
//! one first with `verifyMetadataOnGC`).
//!
//! Invariants:
//! - the local snapshot (the GC token) is taken *before* the ZooKeeper scan, so a ledger
//!   created while the scan runs is never deleted by that round;
//! - any failure of the scan skips the round: a failed scan is never read as "no
//!   ledgers" (gc_scan.rs); a failed or partial metadata read keeps the ledger it was for
//!   (gc_metadata.rs), and a failure of the over-replication check as a whole (the
//!   under-replication tree cannot be prepared) skips the round, which retries it next time;
//! - an over-replicated ledger is deleted while this bookie holds its under-replication
//!   lock, so no replication worker copies it back here meanwhile;
//! - the bookie forgets the in-memory state of exactly the ledgers the round deleted
//!   (the ids the entry log reports), and logs them;
//! - a compaction kind the operator suspended (`gc/suspend_compaction`, gc_status.rs) is not
//!   started; every pass shows in `gc_details` while it runs and is counted when it ends;
//! - the loop ends when storage is shut down or its [`Cancel`] is cancelled (the first
//!   step of shutdown, docs/semantics.md §16); a compaction or GC pass in progress stops
//!   within one read batch or written entry (entrylog/src/compaction.rs), so shutdown
//!   never waits for a rate-limited compaction. It never runs in standalone mode (the
//!   caller spawns it only with a ZooKeeper registration).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use bk_entrylog::{Cancel, GcScanToken};
use prometheus_client::metrics::counter::Counter;
use tokio::time::Instant;

use crate::config::BookieConfig;
use crate::gc_metadata::{self, OpRate, OverReplicationSchedule};
use crate::gc_metadata_zk::ZkMetadata;
use crate::gc_status::{CompactionKind, GcStatus};
use crate::gc_trigger::{ForcedCompaction, GcTrigger};
use crate::handlers::Bookie;
use crate::registration::Registration;
use crate::storage::real::RealStorage;

/// One kind of compaction: its threshold, how often it is due, and how long a pass may
/// run before it starts no further group (`None` = unbounded).
#[derive(Clone, Copy, Debug, PartialEq)]
struct CompactionRule {
    threshold: f64,
    every: Duration,
    max_time: Option<Duration>,
}

/// Minor and major compaction schedule (stock keys `minor/majorCompactionThreshold`,
/// `minor/majorCompactionInterval`, `minor/majorCompactionMaxTimeMillis`; a threshold
/// <= 0 or no interval disables one).
pub struct CompactionSchedule {
    minor: Option<CompactionRule>,
    major: Option<CompactionRule>,
    /// What a forced round may run when the kind is off: with `forceAllowCompaction` and a
    /// threshold in (0, 1), that kind (Java's `isForce{Major,Minor}CompactionAllow`).
    forced_minor: Option<CompactionRule>,
    forced_major: Option<CompactionRule>,
}

impl CompactionSchedule {
    pub fn from_config(cfg: &BookieConfig) -> CompactionSchedule {
        let pick = |threshold: f64, interval: Option<Duration>, max_time: Option<Duration>| {
            interval
                .filter(|_| threshold > 0.0)
                .map(|every| CompactionRule {
                    threshold: threshold.min(1.0),
                    every,
                    max_time,
                })
        };
        let forced = |threshold: f64, max_time: Option<Duration>| {
            (cfg.force_allow_compaction && threshold > 0.0 && threshold < 1.0).then_some(
                CompactionRule {
                    threshold,
                    every: Duration::MAX,
                    max_time,
                },
            )
        };
        CompactionSchedule {
            minor: pick(
                cfg.minor_compaction_threshold,
                cfg.minor_compaction_interval,
                cfg.minor_compaction_max_time,
            ),
            major: pick(
                cfg.major_compaction_threshold,
                cfg.major_compaction_interval,
                cfg.major_compaction_max_time,
            ),
            forced_minor: forced(
                cfg.minor_compaction_threshold,
                cfg.minor_compaction_max_time,
            ),
            forced_major: forced(
                cfg.major_compaction_threshold,
                cfg.major_compaction_max_time,
            ),
        }
    }
}

/// The metadata checks of a GC round (bookie/src/gc_metadata.rs) and their settings.
pub struct GcMetadataOptions {
    /// `gcOverreplicatedLedgerWaitTime`; None (a value <= 0) disables the check.
    pub overreplicated_wait: Option<Duration>,
    /// `gcOverreplicatedLedgerMaxConcurrentRequests`: metadata reads in flight, and locks held
    /// at once.
    pub max_concurrent: usize,
    /// `gcMetadataOpRateLimit`: metadata operations a second.
    pub op_rate: u32,
    /// `verifyMetadataOnGC`.
    pub verify_metadata_on_gc: bool,
    /// Bound on each metadata call (2 x `zkTimeout`, as Java).
    pub op_timeout: Duration,
    /// `bookie_rs_gc_overreplicated_ledgers_deleted_total`.
    pub overreplicated_deleted: Counter,
}

impl GcMetadataOptions {
    pub fn from_config(cfg: &BookieConfig, overreplicated_deleted: Counter) -> GcMetadataOptions {
        GcMetadataOptions {
            overreplicated_wait: cfg.gc_overreplicated_ledger_wait_time,
            max_concurrent: cfg.gc_overreplicated_ledger_max_concurrent_requests,
            op_rate: cfg.gc_metadata_op_rate_limit,
            verify_metadata_on_gc: cfg.verify_metadata_on_gc,
            op_timeout: cfg.zk_timeout * 2,
            overreplicated_deleted,
        }
    }
}

/// Deletes `victims` (ledgers known before `token`) now; forgets them in the bookie and
/// returns the ids deleted. Blocking work on the blocking pool.
async fn delete_now(
    storage: &Arc<RealStorage>,
    bookie: &Bookie,
    token: GcScanToken,
    victims: HashSet<u64>,
    cancel: &Cancel,
) -> Result<Vec<u64>, String> {
    let (st, c) = (storage.clone(), cancel.clone());
    let report =
        tokio::task::spawn_blocking(move || st.gc(token, &|id| !victims.contains(&id), &c))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())?;
    for id in &report.deleted_ledgers {
        bookie.forget_ledger(*id as i64);
    }
    Ok(report.deleted_ledgers)
}

/// The over-replication check (gc_metadata.rs): pre-check every local ledger, then per batch
/// of `max_concurrent` candidates lock, re-check, delete, release. `Err` when the check could
/// not run as a whole (the round is skipped and the check retried at the next one).
#[allow(clippy::too_many_arguments)]
async fn remove_overreplicated(
    storage: &Arc<RealStorage>,
    bookie: &Bookie,
    store: &ZkMetadata,
    token: GcScanToken,
    self_id: &str,
    opts: &GcMetadataOptions,
    rate: &mut OpRate,
    cancel: &Cancel,
) -> Result<Vec<u64>, String> {
    store.prepare().await?;
    let local = storage.ledgers().map_err(|e| e.to_string())?;
    tracing::info!(
        local_ledgers = local.len(),
        "start removing over-replicated ledgers"
    );
    let window = opts.max_concurrent.max(1);
    let candidates =
        gc_metadata::overreplicated_candidates(store, &local, self_id, window, rate).await;
    let mut deleted = Vec::new();
    for chunk in candidates.chunks(window) {
        if cancel.is_cancelled() {
            break;
        }
        let batch = gc_metadata::lock_and_recheck(store, chunk, self_id, rate).await;
        let result = if batch.victims.is_empty() {
            Ok(Vec::new())
        } else {
            let victims = batch.victims.iter().copied().collect();
            delete_now(storage, bookie, token, victims, cancel).await
        };
        // Released only after the deletion is durable (or failed).
        gc_metadata::release_locks(store, &batch.locked).await;
        let ids = result?;
        opts.overreplicated_deleted.inc_by(ids.len() as u64);
        deleted.extend(ids);
    }
    if deleted.is_empty() {
        tracing::info!("no over-replicated ledgers found");
    } else {
        tracing::info!(ledgers = ?deleted, "removed over-replicated ledgers");
    }
    Ok(deleted)
}

/// Runs due compactions after a GC round (Java's GC thread does both in one loop). A forced
/// round (`forced`) runs major, else minor, compaction whatever the interval, as Java's
/// `runWithFlags(force = true, ...)`, including a kind that is off when
/// `forceAllowCompaction` allows it (gc_trigger.rs for what the ask may hold back).
async fn compact_if_due(
    storage: &Arc<RealStorage>,
    schedule: &CompactionSchedule,
    status: &GcStatus,
    forced: Option<ForcedCompaction>,
    last_minor: &mut Instant,
    last_major: &mut Instant,
    cancel: &Cancel,
) {
    let now = Instant::now();
    // A kind held back is not due (Java's `!suspendMajor` / `!suspendMinor`): suspended by
    // the operator, or for a forced round what its ask said (forceMajor / forceMinor).
    let wanted = |kind: CompactionKind, asked: Option<Option<bool>>| match asked {
        Some(Some(on)) => on,
        _ => !status.is_suspended(kind),
    };
    let force = forced.is_some();
    let major = if force {
        schedule.major.or(schedule.forced_major)
    } else {
        schedule.major
    }
    .filter(|_| wanted(CompactionKind::Major, forced.map(|f| f.major)));
    let minor = if force {
        schedule.minor.or(schedule.forced_minor)
    } else {
        schedule.minor
    }
    .filter(|_| wanted(CompactionKind::Minor, forced.map(|f| f.minor)));
    let (kind, pass_kind) = match (major, minor) {
        (Some(k), _) if force || now.duration_since(*last_major) >= k.every => {
            *last_major = now;
            *last_minor = now;
            (k, CompactionKind::Major)
        }
        (_, Some(k)) if force || now.duration_since(*last_minor) >= k.every => {
            *last_minor = now;
            (k, CompactionKind::Minor)
        }
        _ => return,
    };
    crate::metrics::gc_stats::GC_STATS.compaction_pass(matches!(pass_kind, CompactionKind::Major));
    let _pass = status.begin(pass_kind);
    let (st, c) = (storage.clone(), cancel.clone());
    let threshold = kind.threshold;
    // Reported by the blocking task itself: shutdown aborts this task, and the pass it
    // cancelled still says how far it got.
    let _ = tokio::task::spawn_blocking(move || match st.compact(threshold, kind.max_time, &c) {
        Ok(report) if report.cancelled => {
            tracing::info!(?report, threshold, "compaction cancelled by shutdown");
        }
        Ok(report) if report.max_time_reached => {
            tracing::info!(?report, threshold, max_time = ?kind.max_time,
                "compaction stopped at its max time; the rest waits for the next pass");
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
#[allow(clippy::too_many_arguments)]
pub async fn gc_loop(
    storage: Arc<RealStorage>,
    bookie: Arc<Bookie>,
    registration: Arc<Registration>,
    interval: Duration,
    compaction: CompactionSchedule,
    metadata: GcMetadataOptions,
    cancel: Cancel,
    trigger: Arc<GcTrigger>,
) {
    trigger.serve();
    let mut overreplication = OverReplicationSchedule::new(metadata.overreplicated_wait);
    let mut rate = OpRate::new(metadata.op_rate);
    let self_id = registration.bookie_id().to_string();
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
        let round = trigger.begin_round();
        let _runtime = crate::metrics::gc_stats::GC_STATS.time_round();
        compact_if_due(
            &storage,
            &compaction,
            trigger.status(),
            round.forced,
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
        let store = ZkMetadata::new(
            client.clone(),
            registration.ledgers_root(),
            &self_id,
            metadata.op_timeout,
        );
        if overreplication.due() {
            match remove_overreplicated(
                &storage, &bookie, &store, token, &self_id, &metadata, &mut rate, &cancel,
            )
            .await
            {
                Ok(_) => overreplication.done(),
                Err(e) => {
                    tracing::warn!(error = %e, "GC skipped: over-replication check failed");
                    continue;
                }
            }
        }
        let live =
            match crate::gc_scan::scan_live_ledgers(&client, registration.ledgers_root()).await {
                Ok(live) => live,
                Err(e) => {
                    tracing::warn!(error = %e, "GC skipped: ledger scan failed");
                    continue;
                }
            };
        let verified: HashSet<u64> = if metadata.verify_metadata_on_gc {
            let Ok(local) = storage.ledgers() else {
                return;
            };
            let unlisted: Vec<u64> = local.into_iter().filter(|id| !live.contains(*id)).collect();
            gc_metadata::verify_unlisted(
                &store,
                &unlisted,
                &self_id,
                metadata.max_concurrent,
                &mut rate,
            )
            .await
            .into_iter()
            .collect()
        } else {
            HashSet::new()
        };
        let (st, c) = (storage.clone(), cancel.clone());
        let result = tokio::task::spawn_blocking(move || {
            st.gc(token, &|id| live.contains(id) || verified.contains(&id), &c)
        })
        .await;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::BookieArgs;
    use clap::Parser;

    fn schedule_of(text: &str) -> CompactionSchedule {
        let args = BookieArgs {
            standalone: true,
            ..Default::default()
        };
        let (cfg, _) = BookieConfig::from_text_and_args(Some(text), None, &args).unwrap();
        CompactionSchedule::from_config(&cfg)
    }

    #[test]
    fn max_time_keys_bound_their_kind_of_pass_and_non_positive_is_unbounded() {
        let s = schedule_of("minorCompactionMaxTimeMillis=1500\nmajorCompactionMaxTimeMillis=0\n");
        assert_eq!(s.minor.unwrap().max_time, Some(Duration::from_millis(1500)));
        assert_eq!(
            s.major.unwrap().max_time,
            None,
            "0 is unbounded, as in Java"
        );
        let d = schedule_of("");
        assert_eq!(
            (d.minor.unwrap().max_time, d.major.unwrap().max_time),
            (None, None)
        );
    }

    fn options(extra: &str) -> Result<GcMetadataOptions, String> {
        let text = format!("metadataServiceUri=zk+hierarchical://localhost:2181/ledgers\n{extra}");
        let args = BookieArgs::try_parse_from(["bookie"]).unwrap();
        BookieConfig::from_text_and_args(Some(&text), None, &args)
            .map(|(c, _)| GcMetadataOptions::from_config(&c, Counter::default()))
            .map_err(|e| e.to_string())
    }

    #[test]
    fn metadata_options_follow_the_stock_keys() {
        let d = options("").unwrap();
        assert_eq!(d.overreplicated_wait, Some(Duration::from_secs(86_400)));
        assert_eq!((d.max_concurrent, d.op_rate), (1000, 1000));
        assert!(!d.verify_metadata_on_gc);
        assert_eq!(d.op_timeout, Duration::from_secs(20));
        // Java enables the check only for a wait > 0.
        for off in ["0", "-1"] {
            let o = options(&format!("gcOverreplicatedLedgerWaitTime={off}\n")).unwrap();
            assert_eq!(o.overreplicated_wait, None, "{off}");
        }
        let o = options(
            "gcOverreplicatedLedgerWaitTime=5000\nverifyMetadataOnGC=true\n\
             gcOverreplicatedLedgerMaxConcurrentRequests=7\ngcMetadataOpRateLimit=50\nzkTimeout=4000\n",
        )
        .unwrap();
        assert_eq!(o.overreplicated_wait, Some(Duration::from_secs(5)));
        assert!(o.verify_metadata_on_gc);
        assert_eq!((o.max_concurrent, o.op_rate), (7, 50));
        assert_eq!(o.op_timeout, Duration::from_secs(8));
        for key in [
            "gcOverreplicatedLedgerMaxConcurrentRequests",
            "gcMetadataOpRateLimit",
        ] {
            let e = options(&format!("{key}=0\n")).err().unwrap();
            assert!(e.contains(key), "{e}");
        }
    }
}
