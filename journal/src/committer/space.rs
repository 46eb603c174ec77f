//! Waiting for space: what the committer does after "no space" (ENOSPC/EDQUOT where
//! nothing was made durable: a segment that could not be prepared, a group write that
//! failed before its sync).
//!
//! Why this is not fatal (ARCHITECTURE.md "Decisions", docs/semantics.md §14): the
//! failed operation wrote nothing an acknowledgement depends on. A new segment file
//! holds no record; a group write is one write+fdatasync whose sync is issued only
//! after the whole write succeeded (`bk_disk`: ENOSPC from it means the write half
//! failed, a failed sync never reports ENOSPC), and every earlier group was synced
//! before it was written. So the group's appends are answered `NoSpace` (never
//! acknowledged: the client retries on another bookie), the log resumes at a fresh
//! segment chained to the last durable group, and nothing is retried that could
//! hide a lost write. A failed fdatasync stays fatal.
//!
//! Invariants:
//! - while waiting, every append (queued, waiting for admission, or new) is answered
//!   `NoSpace`, the directory's flag in [`SpaceState`] is set, and no group is cut;
//! - every `no_space_retry` the committer tries to get a segment to write into (a
//!   free segment, recycled by a checkpoint, or a new preallocated one); once it has
//!   one it accepts appends again and clears the flag;
//! - a failure other than "no space" while retrying is logged and retried, never
//!   fatal: the retry writes nothing an acknowledgement depends on.

use super::Committer;
use crate::error::JournalError;
use bk_disk::AlignedBuf;
use std::time::Instant;

/// The committer's state while it waits for space.
pub(super) struct SpaceWait {
    since: Instant,
    next_try: Instant,
    reason: String,
}

impl Committer {
    /// At start-up, when no segment could be prepared: refuse appends until space returns.
    pub(crate) fn start_waiting_for_space(&mut self, reason: String) {
        self.gc.refuse_for_space(reason.clone());
        self.wait_for_space(reason);
    }

    /// Group `id` was not written for lack of space (see the module docs): its appends
    /// and every pending one are answered `NoSpace`, writing resumes at offset 0 of
    /// `resume_segment`, and appends are refused until space returns.
    pub(super) fn enter_no_space(
        &mut self,
        id: u64,
        reason: String,
        resume_segment: u64,
        buf: Option<AlignedBuf>,
    ) {
        self.gc.no_space(id, reason.clone(), resume_segment, buf);
        self.wait_for_space(reason);
    }

    fn wait_for_space(&mut self, reason: String) {
        let now = Instant::now();
        if self.space_wait.is_none() {
            tracing::warn!(
                journal = self.index,
                dir = %self.dir.display(),
                "journal disk full: appends are refused (not written) until space returns: {reason}"
            );
        }
        self.space_wait = Some(SpaceWait {
            since: self.space_wait.as_ref().map_or(now, |w| w.since),
            next_try: now + self.no_space_retry,
            reason: reason.clone(),
        });
        self.admission
            .refuse(Some(JournalError::NoSpace(reason.into())));
        self.space.set(self.index, true);
    }

    /// When the next try for space is due, while waiting for it.
    pub(super) fn space_retry_at(&self) -> Option<Instant> {
        self.space_wait.as_ref().map(|w| w.next_try)
    }

    /// While waiting for space and a try is due: get a segment to write into (a free
    /// one, or a new preallocated one); with one, accept appends again.
    pub(super) fn retry_space(&mut self) {
        let Some(wait) = self.space_wait.as_mut() else {
            return;
        };
        if self.in_flight.is_some() || Instant::now() < wait.next_try {
            return;
        }
        wait.next_try = Instant::now() + self.no_space_retry;
        if self.gc.failed().is_some() || self.shutdown {
            return;
        }
        self.quiesce_spare();
        if self.files.free.is_empty() {
            if let Err(e) = self.files.make_spare(self.disk.as_mut(), false) {
                if !e.is_no_space() {
                    tracing::warn!(dir = %self.dir.display(), "retrying a journal segment: {e}");
                }
                return;
            }
        }
        let Some(wait) = self.space_wait.take() else {
            return;
        };
        self.gc.clear_no_space();
        self.admission.refuse(None);
        self.space.set(self.index, false);
        tracing::info!(
            journal = self.index,
            dir = %self.dir.display(),
            waited_ms = wait.since.elapsed().as_millis() as u64,
            "journal has space again, appends accepted (was: {})",
            wait.reason
        );
    }

    /// True while waiting for space.
    pub(super) fn waiting_for_space(&self) -> bool {
        self.space_wait.is_some()
    }
}
