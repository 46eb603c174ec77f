//! The read path: write cache (both halves), then the read cache, then the index and
//! the segment file through a pool of reader handles (each owns one `Disk`), with
//! read-ahead for sequential readers and LAC initialisation from the last entry.
//! A read-ahead batch is registered as in flight while it is read: a concurrent
//! reader of an entry it covers waits for it (once) and takes the entry from the
//! cache, and a new batch stops before entries already cached or in flight, so a
//! catch-up reader at queue depth N reads each byte once instead of N batches.
//!
//! Invariants: every byte returned from a segment passed the length and CRC32C check
//! against its footer entry (else `Error::Corruption`), each entry of a read-ahead
//! batch on its own: a corrupt entry fails only itself and is reported
//! (`corruption_report`), its intact neighbours are cached and served; the read cache only answers for the current copy
//! of an entry; the index lock is never held during disk I/O.

use crate::corruption_report::FoundBy;
use crate::format::{EntryLoc, FormatError};
use crate::metrics::EntryLogMetrics as M;
use crate::{lac_field, segment, EntrySelector, Error, ReaderSlot, Result, Shared};
use bk_disk::OpenOptions;
use bytes::Bytes;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::Instant;

enum ReadPlan {
    Done(Bytes),
    /// A read-ahead batch in flight covers this entry: wait for it, then plan again.
    Wait(u64),
    Disk {
        seg: u64,
        path: PathBuf,
        locs: Vec<EntryLoc>,
        entry: u64,
    },
}

impl Shared {
    fn plan_read(&self, ledger: u64, which: EntrySelector, may_wait: bool) -> Result<ReadPlan> {
        let g = self.inner.lock();
        let meta = g
            .index
            .ledgers
            .get(&ledger)
            .ok_or(Error::NoLedger(ledger))?;
        let flushing = g.flushing.as_ref().map(|(f, _)| f);
        let entry = match which {
            EntrySelector::Id(e) => e,
            EntrySelector::Last => {
                let a = g.active.last(ledger).map(|(e, _)| e);
                let f = flushing.and_then(|f| f.last(ledger)).map(|(e, _)| e);
                let s = meta.last().map(|x| x.1.entry);
                [a, f, s]
                    .into_iter()
                    .flatten()
                    .max()
                    .ok_or(Error::NoEntry {
                        ledger,
                        entry: None,
                    })?
            }
        };
        if let Some(b) = g
            .active
            .get(ledger, entry)
            .or_else(|| flushing.and_then(|f| f.get(ledger, entry)))
        {
            M::add(&self.metrics.write_cache_hits, 1);
            return Ok(ReadPlan::Done(b.clone()));
        }
        M::add(&self.metrics.write_cache_misses, 1);
        let Some((seg, loc, ri, i)) = meta.lookup(entry) else {
            return Err(Error::NoEntry {
                ledger,
                entry: Some(entry),
            });
        };
        let mut rc = self.read_cache.lock();
        if let Some(b) = rc.get(ledger, entry, seg, loc.offset) {
            rc.note_read(ledger, entry);
            M::add(&self.metrics.read_cache_hits, 1);
            return Ok(ReadPlan::Done(b));
        }
        if may_wait && rc.inflight_covers(ledger, entry) {
            return Ok(ReadPlan::Wait(entry));
        }
        M::add(&self.metrics.read_cache_misses, 1);
        let sequential = rc.note_read(ledger, entry);
        let mut locs = vec![loc];
        if sequential && self.cfg.readahead_entries > 1 {
            let run = &meta.runs[ri];
            let mut bytes = loc.stored_len();
            for next in run.entries.iter().skip(i + 1) {
                // Only current copies: a later run may hold a newer copy.
                let current = meta
                    .lookup(next.entry)
                    .is_some_and(|(s, l, _, _)| s == seg && l.offset == next.offset);
                if !current
                    || rc.inflight_covers(ledger, next.entry)
                    || rc.get(ledger, next.entry, seg, next.offset).is_some()
                    || locs.len() >= self.cfg.readahead_entries
                    || bytes + next.stored_len() > self.cfg.readahead_bytes as u64
                {
                    break;
                }
                bytes += next.stored_len();
                locs.push(*next);
            }
        }
        if let (true, Some(last)) = (locs.len() > 1, locs.last()) {
            rc.start_inflight(ledger, entry, last.entry);
        }
        drop(rc);
        let dir = g.index.segments.get(&seg).map_or(0, |s| s.dir);
        Ok(ReadPlan::Disk {
            seg,
            path: self.seg_path(dir, seg),
            locs,
            entry,
        })
    }

    pub(crate) fn get_entry(&self, ledger: u64, which: EntrySelector) -> Result<Bytes> {
        let mut may_wait = true;
        let mut attempt = 0;
        loop {
            let (seg, path, locs, entry) = match self.plan_read(ledger, which, may_wait)? {
                ReadPlan::Done(b) => return Ok(b),
                ReadPlan::Wait(entry) => {
                    // Wait once: the batch's end always signals (see `InflightBatch`).
                    may_wait = false;
                    let mut rc = self.read_cache.lock();
                    while rc.inflight_covers(ledger, entry) {
                        self.readahead_cv.wait(&mut rc);
                    }
                    continue;
                }
                ReadPlan::Disk {
                    seg,
                    path,
                    locs,
                    entry,
                } => (seg, path, locs, entry),
            };
            let _batch = (locs.len() > 1).then(|| InflightBatch {
                shared: self,
                ledger,
                first: entry,
            });
            let started = Instant::now();
            match self.read_from_disk(seg, &path, ledger, &locs) {
                Ok(v) => {
                    self.metrics.read_entry_latency.record(started.elapsed());
                    debug_assert_eq!(locs[0].entry, entry);
                    debug_assert_eq!(v.len(), locs.len());
                    let mut v = v.into_iter().zip(locs.iter());
                    let first = v.next();
                    if locs.len() > 1 {
                        // Each neighbour on its own: the intact ones are cached, a
                        // corrupt one is reported and left to answer for itself.
                        M::add(&self.metrics.readahead_batch_count, 1);
                        let mut rc = self.read_cache.lock();
                        for (r, l) in v {
                            match r {
                                Ok(b) => {
                                    M::add(&self.metrics.readahead_entries, 1);
                                    M::add(&self.metrics.readahead_bytes, b.len() as u64);
                                    rc.insert(ledger, l.entry, seg, l.offset, b);
                                }
                                Err(e) => self.report_corrupt_entry(
                                    &path,
                                    seg,
                                    ledger,
                                    l,
                                    &e,
                                    FoundBy::Read,
                                ),
                            }
                        }
                        M::set(&self.metrics.read_cache_size, rc.bytes() as u64);
                        M::set(&self.metrics.read_cache_count, rc.count() as u64);
                        drop(rc);
                        // The batch is one disk read with the missed entry: its time
                        // and the caching of the read-ahead entries.
                        let ns = started.elapsed().as_nanos().min(u64::MAX as u128) as u64;
                        M::add(&self.metrics.readahead_time_ns, ns);
                    }
                    return match first {
                        Some((Ok(b), _)) => Ok(b),
                        Some((Err(e), l)) => {
                            self.report_corrupt_entry(&path, seg, ledger, l, &e, FoundBy::Read);
                            Err(Error::Corruption {
                                path,
                                detail: e.to_string(),
                            })
                        }
                        None => Err(Error::Corruption {
                            path,
                            detail: format!("read of entry {ledger}/{entry} returned nothing"),
                        }),
                    };
                }
                // The segment was compacted away between planning and reading: retry.
                Err(Error::Io { source, .. })
                    if attempt == 0 && source.kind() == std::io::ErrorKind::NotFound =>
                {
                    attempt += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }

    fn with_reader<R>(&self, f: impl FnOnce(&mut ReaderSlot) -> R) -> R {
        let n = self.readers.len();
        let start = self.next_reader.fetch_add(1, Ordering::Relaxed);
        for k in 0..n {
            if let Some(mut r) = self.readers[(start + k) % n].try_lock() {
                return f(&mut r);
            }
        }
        let mut r = self.readers[start % n].lock();
        f(&mut r)
    }

    fn read_from_disk(
        &self,
        seg: u64,
        path: &Path,
        ledger: u64,
        locs: &[EntryLoc],
    ) -> Result<Vec<std::result::Result<Bytes, FormatError>>> {
        let direct = self.cfg.direct_io;
        self.with_reader(|r| {
            let file = match r.files.get(&seg) {
                Some(f) => *f,
                None => {
                    // Bound open files: all readers together keep about 512.
                    if r.files.len() >= (512 / self.readers.len()).max(16) {
                        for (_, f) in r.files.drain() {
                            let _ = r.disk.close(f);
                        }
                    }
                    let f = r
                        .disk
                        .open(
                            path,
                            OpenOptions {
                                direct,
                                ..Default::default()
                            },
                        )
                        .map_err(|e| Error::io(format!("opening {}", path.display()), e))?;
                    r.files.insert(seg, f);
                    f
                }
            };
            segment::read_entries_each(r.disk.as_mut(), file, path, ledger, locs)
        })
    }

    pub(crate) fn lac(&self, ledger: u64) -> Result<Option<u64>> {
        {
            let g = self.inner.lock();
            let m = g
                .index
                .ledgers
                .get(&ledger)
                .ok_or(Error::NoLedger(ledger))?;
            if m.lac.is_some() {
                return Ok(m.lac);
            }
        }
        let last = match self.get_entry(ledger, EntrySelector::Last) {
            Ok(b) => b,
            Err(Error::NoEntry { .. }) => return Ok(None),
            Err(e) => return Err(e),
        };
        let v = lac_field(&last);
        let mut g = self.inner.lock();
        let m = g
            .index
            .ledgers
            .get_mut(&ledger)
            .ok_or(Error::NoLedger(ledger))?;
        if let Some(v) = v {
            m.lac = Some(m.lac.map_or(v, |l| l.max(v)));
        }
        Ok(m.lac)
    }
}

/// A read-ahead batch registered in flight; dropping it (after its entries are
/// cached, or on error or panic) unregisters it and wakes the readers waiting on it.
struct InflightBatch<'a> {
    shared: &'a Shared,
    ledger: u64,
    first: u64,
}

impl Drop for InflightBatch<'_> {
    fn drop(&mut self) {
        self.shared
            .read_cache
            .lock()
            .end_inflight(self.ledger, self.first);
        self.shared.readahead_cv.notify_all();
    }
}
