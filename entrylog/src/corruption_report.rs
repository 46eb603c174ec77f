//! The one place a detected corrupt entry is reported: logged once per stored copy
//! (segment, offset) at `error` level with the file, offset, ledger and entry, and
//! counted once in `EntryLogMetrics::corrupt_entries` (exported as
//! `bookie_rs_entrylog_corrupt_entries`, docs/config.md §3).
//!
//! Guarantees: repeated reads of the same corrupt copy (a client retrying, a
//! read-ahead batch and then the entry's own read) log and count it once; the set of
//! reported copies is bounded (`MAX_REMEMBERED`); past the bound a copy may be
//! reported again, never not at all.

use crate::format::{EntryLoc, FormatError};
use crate::metrics::EntryLogMetrics as M;
use crate::Shared;
use std::collections::HashSet;
use std::path::Path;

/// Corrupt copies remembered for de-duplication (16 bytes each).
const MAX_REMEMBERED: usize = 64 * 1024;

/// The corrupt copies reported so far: (segment, offset).
#[derive(Default)]
pub(crate) struct Reported {
    seen: HashSet<(u64, u64)>,
}

impl Reported {
    /// True when this copy was not reported before (and remembers it).
    fn first_time(&mut self, seg: u64, offset: u64) -> bool {
        if self.seen.len() >= MAX_REMEMBERED {
            self.seen.clear();
        }
        self.seen.insert((seg, offset))
    }
}

impl Shared {
    /// Reports a corrupt entry found in `path` (segment `seg`) at `loc`.
    pub(crate) fn report_corrupt_entry(
        &self,
        path: &Path,
        seg: u64,
        ledger: u64,
        loc: &EntryLoc,
        why: &FormatError,
    ) {
        if !self.corrupt_reported.lock().first_time(seg, loc.offset) {
            return;
        }
        M::add(&self.metrics.corrupt_entries, 1);
        tracing::error!(
            file = %path.display(),
            offset = loc.offset,
            len = loc.len,
            ledger,
            entry = loc.entry,
            detail = %why,
            "corrupt entry in an entry-log segment: it answers EIO; its neighbours are served"
        );
    }
}
