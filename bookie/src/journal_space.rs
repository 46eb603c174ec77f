//! The journal-disk watcher (docs/semantics.md §14): follows the journal's "waiting for
//! space" state and sets or clears the bookie's [`ReadOnlyReason::JournalDiskFull`];
//! `mode::publish_mode` carries the change to the registration and the metrics.
//!
//! Invariants:
//! - it only touches its own reason (a forced, manual or ledger-disk read-only stays);
//! - every change the journal reports is applied, in order (a `watch` channel: the
//!   latest value wins, so a bookie never stays read-only after the journal has space);
//! - it ends when the journal shuts down. A full journal disk never ends the process:
//!   only a failed fdatasync does (`storage::exit_on_fatal`).

use std::sync::Arc;

use crate::handlers::Bookie;
use crate::mode::ReadOnlyReason;
use crate::storage::real::RealStorage;

/// Runs until the journal shuts down (module docs).
pub async fn journal_space_watcher(storage: Arc<RealStorage>, bookie: Arc<Bookie>) {
    let Some(mut full) = storage.journal.disk_full_changes() else {
        return;
    };
    loop {
        let now = *full.borrow_and_update();
        bookie.set_read_only(ReadOnlyReason::JournalDiskFull, now);
        if full.changed().await.is_err() {
            return;
        }
    }
}
