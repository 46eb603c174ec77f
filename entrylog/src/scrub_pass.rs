//! The scrub pass over the whole entry log ([`crate::EntryLog::scrub`]): every finished
//! segment the index holds when the pass starts is checked with `scrub::check_segment`,
//! and what it finds is reported as a read's findings are (`corruption_report`: logged
//! once, counted, listed with `FoundBy::Scrub`).
//!
//! Guarantees:
//! - foreground work is not stalled: the pass reads through its own `Disk` handle (not
//!   the readers' pool), takes the index lock only to list the segments and to ask
//!   whether one is still there, never across I/O, and is paced (`scrub::Pace`);
//! - a segment removed by GC or compaction during the pass is skipped, not reported:
//!   one gone from the index before it is opened, one whose file is gone (`NotFound`),
//!   and one checked but gone from the index by the end of its check (what was found in
//!   a file that no longer holds live data is dropped);
//! - an I/O error reading a segment (EIO, not a vanished file) is counted in the report
//!   and logged, and the pass goes on with the next segment;
//! - progress (segments and bytes done of the totals) is visible while it runs
//!   ([`ScrubProgress`]), and the metrics of every pass are kept (`metrics.rs`).

use crate::corruption_report::FoundBy;
use crate::metrics::EntryLogMetrics as M;
use crate::scrub::{self, Finding, Pace};
use crate::{Error, Result, Shared};
use bk_disk::OpenOptions;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// What a running pass has done so far (read by the admin API while it runs).
#[derive(Debug, Default)]
pub struct ScrubProgress {
    pub segments_total: AtomicU64,
    pub segments_done: AtomicU64,
    pub bytes_total: AtomicU64,
    pub bytes_done: AtomicU64,
    pub entries_done: AtomicU64,
    pub findings: AtomicU64,
}

impl ScrubProgress {
    fn reset(&self, segments: u64, bytes: u64) {
        for c in [
            &self.segments_done,
            &self.bytes_done,
            &self.entries_done,
            &self.findings,
        ] {
            c.store(0, Ordering::Relaxed);
        }
        self.segments_total.store(segments, Ordering::Relaxed);
        self.bytes_total.store(bytes, Ordering::Relaxed);
    }
}

/// What a finished (or cancelled) pass did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScrubReport {
    /// Segments checked to the end.
    pub segments: u64,
    /// Segments removed by GC or compaction during the pass (not checked, or findings dropped).
    pub skipped: u64,
    pub bytes: u64,
    pub entries: u64,
    /// Corrupt entries found (each stored copy; reported before or not).
    pub corrupt_entries: u64,
    /// Segments whose trailer or footer does not check out.
    pub corrupt_indexes: u64,
    /// Segments that could not be read (I/O errors), with why.
    pub read_errors: Vec<String>,
    pub cancelled: bool,
}

impl ScrubReport {
    /// Corruptions found, of both kinds (Java's `detectedScrubErrors`).
    pub fn findings(&self) -> u64 {
        self.corrupt_entries + self.corrupt_indexes
    }
}

impl Shared {
    pub(crate) fn scrub(
        &self,
        pace: &mut dyn Pace,
        chunk: usize,
        progress: &ScrubProgress,
    ) -> Result<ScrubReport> {
        let segments: Vec<(u64, usize, u64)> = {
            let g = self.inner.lock();
            if g.closed {
                return Err(Error::Closed);
            }
            g.index
                .segments
                .iter()
                .map(|(id, s)| (*id, s.dir, s.file_len))
                .collect()
        };
        progress.reset(segments.len() as u64, segments.iter().map(|s| s.2).sum());
        let mut disk = (self.factory)().map_err(|e| Error::io("opening a scrub disk", e))?;
        let mut report = ScrubReport::default();
        for (id, dir, _) in segments {
            if self.stop.load(Ordering::SeqCst) {
                report.cancelled = true;
                break;
            }
            let still_there = |s: &Shared| s.inner.lock().index.segments.contains_key(&id);
            if !still_there(self) {
                report.skipped += 1;
                continue;
            }
            let path = self.seg_path(dir, id);
            let opts = OpenOptions {
                direct: self.cfg.direct_io,
                ..Default::default()
            };
            let checked = disk.open(&path, opts).and_then(|f| {
                let r = scrub::check_segment(
                    disk.as_mut(),
                    f,
                    id,
                    chunk,
                    pace,
                    report.bytes,
                    report.entries,
                );
                let _ = disk.close(f);
                r
            });
            let c = match checked {
                Ok(c) => c,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    report.skipped += 1;
                    continue;
                }
                Err(e) => {
                    tracing::error!(file = %path.display(), error = %e, "scrub: segment could not be read");
                    report.read_errors.push(format!("{}: {e}", path.display()));
                    M::add(&self.metrics.scrub_read_errors, 1);
                    continue;
                }
            };
            report.bytes += c.bytes;
            report.entries += c.entries;
            M::add(&self.metrics.scrub_bytes, c.bytes);
            M::add(&self.metrics.scrub_entries, c.entries);
            progress.bytes_done.fetch_add(c.bytes, Ordering::Relaxed);
            progress
                .entries_done
                .fetch_add(c.entries, Ordering::Relaxed);
            if c.cancelled {
                report.cancelled = true;
                break;
            }
            if !still_there(self) {
                // Removed meanwhile: what it held is no longer served.
                report.skipped += 1;
                continue;
            }
            for f in &c.findings {
                match f {
                    Finding::Entry {
                        ledger,
                        loc,
                        detail,
                    } => {
                        report.corrupt_entries += 1;
                        let why = crate::format::FormatError(detail.clone());
                        self.report_corrupt_entry(&path, id, *ledger, loc, &why, FoundBy::Scrub);
                    }
                    Finding::Index { offset, detail } => {
                        report.corrupt_indexes += 1;
                        self.report_corrupt_index(&path, id, *offset, detail, FoundBy::Scrub);
                    }
                }
            }
            M::add(&self.metrics.scrub_findings, c.findings.len() as u64);
            progress
                .findings
                .fetch_add(c.findings.len() as u64, Ordering::Relaxed);
            report.segments += 1;
            progress.segments_done.fetch_add(1, Ordering::Relaxed);
        }
        if !report.cancelled {
            M::add(&self.metrics.scrub_passes, 1);
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64);
            M::set(&self.metrics.scrub_last_completed_unix_ms, now);
        }
        Ok(report)
    }
}
