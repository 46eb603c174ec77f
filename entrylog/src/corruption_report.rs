//! The one place a detected corruption is reported, whoever found it (a read or the
//! scrubber): logged once per stored copy (segment, offset) at `error` level with the
//! file, offset, ledger and entry; counted once in `EntryLogMetrics::corrupt_entries`
//! (an entry, `bookie_rs_entrylog_corrupt_entries`) or `corrupt_segment_indexes` (a
//! trailer or footer, `bookie_rs_entrylog_corrupt_segment_indexes`); and listed for the
//! operator ([`Corruption`], `EntryLog::corruptions`, admin `GET /api/v1/bookie/corruptions`).
//!
//! Guarantees: repeated reads of the same corrupt copy (a client retrying, a
//! read-ahead batch and then the entry's own read, every scrub pass) log, count and
//! list it once; the set of reported copies is bounded (`MAX_REMEMBERED`): past the
//! bound a copy may be reported again, never not at all; the list keeps the first
//! `MAX_LISTED` reports and counts the ones it had no room for.

use crate::format::{EntryLoc, FormatError};
use crate::metrics::EntryLogMetrics as M;
use crate::Shared;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// Corrupt copies remembered for de-duplication (16 bytes each).
const MAX_REMEMBERED: usize = 64 * 1024;

/// Reports kept in the operator's list (a few hundred bytes each).
const MAX_LISTED: usize = 10_000;

/// Who found a corruption.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FoundBy {
    /// A read (a client's, or a read-ahead batch).
    Read,
    /// The background scrubber (or one started by the operator).
    Scrub,
}

impl FoundBy {
    pub fn as_str(self) -> &'static str {
        match self {
            FoundBy::Read => "read",
            FoundBy::Scrub => "scrub",
        }
    }
}

/// One detected corruption, as listed for the operator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Corruption {
    pub file: PathBuf,
    /// File offset of the entry's payload, or of the trailer or footer.
    pub offset: u64,
    /// The entry's ledger and id; `None` for a trailer or footer (the whole segment).
    pub ledger: Option<u64>,
    pub entry: Option<u64>,
    pub found_by: FoundBy,
    /// When it was reported (milliseconds since the Unix epoch).
    pub unix_ms: u64,
    pub detail: String,
}

/// The corrupt copies reported so far: (segment, offset), and the operator's list.
#[derive(Default)]
pub(crate) struct Reported {
    seen: HashSet<(u64, u64)>,
    listed: Vec<Corruption>,
    unlisted: u64,
}

impl Reported {
    /// True when this copy was not reported before (and remembers it).
    fn first_time(&mut self, seg: u64, offset: u64) -> bool {
        if self.seen.len() >= MAX_REMEMBERED {
            self.seen.clear();
        }
        self.seen.insert((seg, offset))
    }

    fn list(&mut self, c: Corruption) {
        if self.listed.len() < MAX_LISTED {
            self.listed.push(c);
        } else {
            self.unlisted += 1;
        }
    }

    /// The list, and how many reports it had no room for.
    pub(crate) fn listed(&self) -> (Vec<Corruption>, u64) {
        (self.listed.clone(), self.unlisted)
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
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
        found_by: FoundBy,
    ) {
        {
            let mut r = self.corrupt_reported.lock();
            if !r.first_time(seg, loc.offset) {
                return;
            }
            r.list(Corruption {
                file: path.to_path_buf(),
                offset: loc.offset,
                ledger: Some(ledger),
                entry: Some(loc.entry),
                found_by,
                unix_ms: now_ms(),
                detail: why.to_string(),
            });
        }
        M::add(&self.metrics.corrupt_entries, 1);
        tracing::error!(
            file = %path.display(),
            offset = loc.offset,
            len = loc.len,
            ledger,
            entry = loc.entry,
            detail = %why,
            found_by = found_by.as_str(),
            "corrupt entry in an entry-log segment: it answers EIO; its neighbours are served"
        );
    }

    /// Reports a segment whose trailer or footer (at `offset`) does not check out.
    pub(crate) fn report_corrupt_index(
        &self,
        path: &Path,
        seg: u64,
        offset: u64,
        detail: &str,
        found_by: FoundBy,
    ) {
        {
            let mut r = self.corrupt_reported.lock();
            if !r.first_time(seg, offset) {
                return;
            }
            r.list(Corruption {
                file: path.to_path_buf(),
                offset,
                ledger: None,
                entry: None,
                found_by,
                unix_ms: now_ms(),
                detail: detail.to_string(),
            });
        }
        M::add(&self.metrics.corrupt_segment_indexes, 1);
        tracing::error!(
            file = %path.display(),
            offset,
            detail,
            found_by = found_by.as_str(),
            "corrupt index (trailer or footer) in an entry-log segment: its entries are \
             still served (CRC-checked) from the index read at start-up; the next start-up \
             refuses the segment"
        );
    }
}
