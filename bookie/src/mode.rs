//! The bookie's mode — writable or read-only — and *why* it is read-only
//! (docs/semantics.md §14).
//!
//! Several independent causes can make a bookie read-only: the operator
//! (`forceReadOnlyBookie`, `--readonly`, the admin API), full ledger directories (the disk
//! monitor, or an ENOSPC from a flush), a full journal disk, and shutdown. Each cause sets
//! or clears only its own [`ReadOnlyReason`]; the bookie is read-only while any reason is
//! set. A single flag would let one cause clear another's state (the disk monitor seeing
//! free ledger space must not make a bookie writable whose journal disk is full).
//!
//! Invariants:
//! - setting or clearing a reason is lock-free and cheap: the add path reads one atomic;
//! - every change of the reason set is observable through [`BookieMode::subscribe`]; the
//!   one task that publishes the mode to ZooKeeper and the metrics is [`publish_mode`], so
//!   no cause publishes on its own and transitions are never published out of order;
//! - [`ReadOnlyReason::ShuttingDown`] refuses adds but is never published as a read-only
//!   registration (the registration is deleted at shutdown instead).

use std::fmt;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::metrics::{Metrics, ServerStatus};
use crate::registration::Registration;

/// One cause of read-only mode; each is a bit in [`BookieMode`]'s set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadOnlyReason {
    /// `forceReadOnlyBookie=true` or `--readonly`: for the life of the process.
    Forced,
    /// Set by the operator at run time (admin API `state/readonly`).
    Manual,
    /// Every ledger directory is full (disk monitor, or ENOSPC from a flush or compaction).
    LedgerDisksFull,
    /// A journal write or preallocation failed with ENOSPC (nothing was written).
    JournalDiskFull,
    /// The bookie is stopping: adds are refused while in-flight requests drain.
    ShuttingDown,
}

impl ReadOnlyReason {
    /// Every reason, in display order.
    pub const ALL: [ReadOnlyReason; 5] = [
        ReadOnlyReason::Forced,
        ReadOnlyReason::Manual,
        ReadOnlyReason::LedgerDisksFull,
        ReadOnlyReason::JournalDiskFull,
        ReadOnlyReason::ShuttingDown,
    ];

    fn bit(self) -> u32 {
        1 << (self as u32)
    }

    /// The name used in logs and the admin API.
    pub fn name(self) -> &'static str {
        match self {
            ReadOnlyReason::Forced => "forced",
            ReadOnlyReason::Manual => "manual",
            ReadOnlyReason::LedgerDisksFull => "ledger-disks-full",
            ReadOnlyReason::JournalDiskFull => "journal-disk-full",
            ReadOnlyReason::ShuttingDown => "shutting-down",
        }
    }
}

/// A set of [`ReadOnlyReason`]s; empty means writable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Reasons(u32);

impl Reasons {
    pub fn contains(self, reason: ReadOnlyReason) -> bool {
        self.0 & reason.bit() != 0
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Read-only as ZooKeeper and the metrics should show it: shutdown alone does not count.
    pub fn published_read_only(self) -> bool {
        self.0 & !ReadOnlyReason::ShuttingDown.bit() != 0
    }

    pub fn iter(self) -> impl Iterator<Item = ReadOnlyReason> {
        ReadOnlyReason::ALL
            .into_iter()
            .filter(move |r| self.contains(*r))
    }
}

impl fmt::Display for Reasons {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return f.write_str("writable");
        }
        for (i, r) in self.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            f.write_str(r.name())?;
        }
        Ok(())
    }
}

/// The bookie's current reasons for being read-only (module docs).
pub struct BookieMode {
    bits: AtomicU32,
    changes: watch::Sender<Reasons>,
}

impl BookieMode {
    /// Writable, or read-only for good when `forced`.
    pub fn new(forced: bool) -> BookieMode {
        let initial = if forced {
            ReadOnlyReason::Forced.bit()
        } else {
            0
        };
        BookieMode {
            bits: AtomicU32::new(initial),
            changes: watch::Sender::new(Reasons(initial)),
        }
    }

    pub fn is_read_only(&self) -> bool {
        self.bits.load(Ordering::Acquire) != 0
    }

    pub fn reasons(&self) -> Reasons {
        Reasons(self.bits.load(Ordering::Acquire))
    }

    /// Sets (`on`) or clears one reason. Returns true when the set changed; a change is
    /// logged with the reasons that remain.
    pub fn set(&self, reason: ReadOnlyReason, on: bool) -> bool {
        let before = if on {
            self.bits.fetch_or(reason.bit(), Ordering::AcqRel)
        } else {
            self.bits.fetch_and(!reason.bit(), Ordering::AcqRel)
        };
        let after = if on {
            before | reason.bit()
        } else {
            before & !reason.bit()
        };
        if before == after {
            return false;
        }
        // The watch value is recomputed from the atomic, so concurrent setters cannot
        // leave a stale set behind.
        self.changes
            .send_replace(Reasons(self.bits.load(Ordering::Acquire)));
        tracing::warn!(
            reason = reason.name(),
            set = on,
            now = %Reasons(after),
            "bookie mode changed"
        );
        true
    }

    /// A receiver that sees every change of the reason set.
    pub fn subscribe(&self) -> watch::Receiver<Reasons> {
        self.changes.subscribe()
    }
}

/// The registration / metrics status of a bookie with these reasons.
pub fn server_status(reasons: Reasons) -> ServerStatus {
    if reasons.published_read_only() {
        ServerStatus::ReadOnly
    } else {
        ServerStatus::Writable
    }
}

/// Publishes every mode change to the metrics (`bookie_SERVER_STATUS`) and, when
/// registered, to ZooKeeper (the read-only node). A failed ZooKeeper update is retried
/// every second until it succeeds or the mode changes again (the registration also
/// remembers the wanted mode for its re-registration after a session expiry). Runs until
/// aborted, or until the mode's sender is gone.
pub async fn publish_mode(
    mode: Arc<BookieMode>,
    registration: Option<Arc<Registration>>,
    metrics: Metrics,
) {
    let mut changes = mode.subscribe();
    let mut published: Option<bool> = None;
    loop {
        let reasons = *changes.borrow_and_update();
        let read_only = reasons.published_read_only();
        metrics.set_server_status(server_status(reasons));
        if published != Some(read_only) {
            match &registration {
                Some(reg) => match reg.set_read_only(read_only).await {
                    Ok(()) => published = Some(read_only),
                    Err(e) => {
                        tracing::error!(error = %e, read_only, "could not publish the mode; retrying");
                        tokio::select! {
                            _ = tokio::time::sleep(Duration::from_secs(1)) => continue,
                            r = changes.changed() => if r.is_err() { return } else { continue },
                        }
                    }
                },
                None => published = Some(read_only),
            }
        }
        if changes.changed().await.is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_cause_cannot_clear_another() {
        let m = BookieMode::new(false);
        assert!(!m.is_read_only());
        assert!(m.set(ReadOnlyReason::JournalDiskFull, true));
        assert!(m.set(ReadOnlyReason::LedgerDisksFull, true));
        assert!(m.set(ReadOnlyReason::LedgerDisksFull, false));
        assert!(m.is_read_only(), "the journal reason remains");
        assert!(!m.set(ReadOnlyReason::LedgerDisksFull, false), "no change");
        assert!(m.set(ReadOnlyReason::JournalDiskFull, false));
        assert!(!m.is_read_only());
    }

    #[test]
    fn forced_stays_and_shutdown_is_not_published() {
        let m = BookieMode::new(true);
        assert!(m.reasons().published_read_only());
        let m = BookieMode::new(false);
        m.set(ReadOnlyReason::ShuttingDown, true);
        assert!(m.is_read_only());
        assert!(!m.reasons().published_read_only());
        assert_eq!(m.reasons().to_string(), "shutting-down");
    }

    #[test]
    fn subscribers_see_changes() {
        let m = BookieMode::new(false);
        let mut rx = m.subscribe();
        rx.borrow_and_update();
        m.set(ReadOnlyReason::Manual, true);
        assert!(rx.has_changed().unwrap());
        assert!(rx.borrow_and_update().contains(ReadOnlyReason::Manual));
    }
}
