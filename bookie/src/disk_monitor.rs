//! The disk-usage monitor (docs/semantics.md §14): every `diskCheckInterval` it asks storage
//! for the disk-usage mode and sets or clears the bookie's
//! [`ReadOnlyReason::LedgerDisksFull`]; `mode::publish_mode` carries the change to the
//! registration and the metrics. [`follow_storage_mode`] makes the same change at once
//! when a flush finds no room (or room again), without waiting for the next tick.
//!
//! Invariants:
//! - it only touches its own reason: `forceReadOnlyBookie`, a manual read-only or a full
//!   journal disk stay in force whatever the ledger disks say;
//! - with `readOnlyModeEnabled=false` a full disk is fatal: the bookie exits rather than
//!   keep taking writes it cannot store;
//! - high-priority (recovery) writes stay allowed while some ledger directory keeps
//!   `minUsableSizeForHighPriorityWrites` free;
//! - the loop ends when storage is shut down; a failed check is logged and retried at
//!   the next tick.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::config::BookieConfig;
use crate::handlers::Bookie;
use crate::mode::ReadOnlyReason;
use crate::storage::exit_on_fatal;
use crate::storage::real::RealStorage;

/// The monitor's settings (stock keys `diskCheckInterval`, `readOnlyModeEnabled`,
/// `minUsableSizeForHighPriorityWrites`).
pub struct DiskMonitorConfig {
    pub interval: Duration,
    pub read_only_mode_enabled: bool,
    pub ledger_dirs: Vec<PathBuf>,
    pub high_priority_min_free: u64,
}

impl DiskMonitorConfig {
    pub fn from_config(cfg: &BookieConfig) -> DiskMonitorConfig {
        DiskMonitorConfig {
            interval: cfg.disk_check_interval.max(Duration::from_millis(100)),
            read_only_mode_enabled: cfg.read_only_mode_enabled,
            ledger_dirs: cfg.ledger_dirs.clone(),
            high_priority_min_free: cfg.min_usable_size_for_high_priority_writes_bytes,
        }
    }
}

/// Sets or clears [`ReadOnlyReason::LedgerDisksFull`] for a storage mode; with
/// `readOnlyModeEnabled=false` a read-only storage is fatal instead (module docs).
fn apply_storage_mode(
    bookie: &Bookie,
    mode: bk_entrylog::StorageMode,
    read_only_mode_enabled: bool,
) {
    let read_only = mode == bk_entrylog::StorageMode::ReadOnly;
    if read_only && !read_only_mode_enabled {
        tracing::error!("no writable ledger directory and readOnlyModeEnabled=false");
        exit_on_fatal()("ledger directories full");
    }
    bookie.set_read_only(ReadOnlyReason::LedgerDisksFull, read_only);
}

/// Makes every storage-mode change reach the bookie at once: a flush that finds no room
/// for its next segment (or an ENOSPC) sets `LedgerDisksFull` before the next disk check,
/// and the flush that goes through once room is back clears it. Holds the bookie weakly
/// (storage outlives it in shutdown).
pub fn follow_storage_mode(
    storage: &RealStorage,
    bookie: &Arc<Bookie>,
    read_only_mode_enabled: bool,
) -> Result<(), crate::storage::StorageError> {
    let bookie = Arc::downgrade(bookie);
    storage.set_mode_listener(move |mode| {
        if let Some(b) = bookie.upgrade() {
            apply_storage_mode(&b, mode, read_only_mode_enabled);
        }
    })
}

/// Runs the monitor until storage shuts down (module docs).
pub async fn disk_monitor(storage: Arc<RealStorage>, bookie: Arc<Bookie>, cfg: DiskMonitorConfig) {
    let mut tick = tokio::time::interval(cfg.interval);
    loop {
        tick.tick().await;
        let st = storage.clone();
        let mode = tokio::task::spawn_blocking(move || st.check_disk_usage()).await;
        let mode = match mode {
            Ok(Ok(mode)) => mode,
            Ok(Err(e)) if !e.is_shut_down() => {
                tracing::warn!(error = %e, "disk usage check failed");
                continue;
            }
            _ => return,
        };
        // High-priority (recovery) writes stay allowed while some ledger dir has room
        // (minUsableSizeForHighPriorityWrites).
        let allowed = cfg.ledger_dirs.iter().any(|d| {
            crate::storage::free_bytes(d).is_ok_and(|free| free >= cfg.high_priority_min_free)
        });
        bookie.set_high_priority_writes_allowed(allowed);
        apply_storage_mode(&bookie, mode, cfg.read_only_mode_enabled);
    }
}
