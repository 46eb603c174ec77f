//! `SpaceState`: whether a journal is waiting for space, for the bookie to see
//! (docs/semantics.md §14). Each committer sets its directory's flag when a group could
//! not be written for lack of space (nothing of it durable, its appends answered
//! `JournalError::NoSpace`) and clears it when a segment could be prepared again.
//!
//! Invariants: the published value is "some journal directory is waiting for space";
//! every change of it is sent on one `watch` channel, in the order the flags changed
//! (the flags and the send are under one lock).

use parking_lot::Mutex;
use std::sync::Arc;
use tokio::sync::watch;

/// The "disk full" flags of a journal's directories (see the module docs).
pub(crate) struct SpaceState {
    full: Mutex<Vec<bool>>,
    tx: watch::Sender<bool>,
}

impl SpaceState {
    pub(crate) fn new(dirs: usize) -> Arc<SpaceState> {
        Arc::new(SpaceState {
            full: Mutex::new(vec![false; dirs]),
            tx: watch::Sender::new(false),
        })
    }

    /// Sets or clears the flag of directory `index`.
    pub(crate) fn set(&self, index: usize, full: bool) {
        let mut flags = self.full.lock();
        if let Some(f) = flags.get_mut(index) {
            *f = full;
        }
        let any = flags.iter().any(|f| *f);
        self.tx
            .send_if_modified(|v| std::mem::replace(v, any) != any);
    }

    /// True while some directory waits for space.
    pub(crate) fn is_full(&self) -> bool {
        *self.tx.borrow()
    }

    /// Follows the "some directory waits for space" value.
    pub(crate) fn subscribe(&self) -> watch::Receiver<bool> {
        self.tx.subscribe()
    }
}
