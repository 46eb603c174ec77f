//! Compaction: segments whose live fraction fell below a threshold are rewritten with
//! only their live entries, rate-limited, then the old file is removed.
//!
//! Invariants: the new segment keeps the old one's seq (so newer copies of the same
//! entries in later flushes still win) and is durable (datasync, rename, directory
//! sync) before the index switches to it and before the old file is removed; entries
//! overwritten or ledgers deleted during the copy stay with their newer state.

use crate::format::EntryLoc;
use crate::index::{Run, SegmentMeta};
use crate::metrics::EntryLogMetrics as M;
use crate::segment::{self, SegmentInput};
use crate::{CompactionReport, Error, Result, Shared};
use bk_disk::{Disk, OpenOptions};
use bytes::Bytes;
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

impl Shared {
    pub(crate) fn compact(&self, threshold: f64) -> Result<CompactionReport> {
        let mut report = CompactionReport::default();
        let (removed, reclaimed) = self.remove_dead_segments()?;
        report.removed_segments += removed;
        report.reclaimed_bytes += reclaimed;
        let candidates: Vec<u64> = {
            let mut g = self.inner.lock();
            let mut c: Vec<(f64, u64)> = g
                .index
                .segments
                .iter()
                .filter(|(_, s)| !s.compacting && s.data_bytes > 0)
                .map(|(id, s)| (s.live_bytes as f64 / s.data_bytes as f64, *id))
                .filter(|(f, _)| *f < threshold)
                .collect();
            c.sort_by(|a, b| a.0.total_cmp(&b.0));
            for (_, id) in &c {
                if let Some(s) = g.index.segments.get_mut(id) {
                    s.compacting = true;
                }
            }
            c.into_iter().map(|(_, id)| id).collect()
        };
        if candidates.is_empty() {
            return Ok(report);
        }
        let mut disk = (self.factory)().map_err(|e| Error::io("opening disk for compaction", e))?;
        let started = Instant::now();
        let mut result = Ok(());
        let mut iter = candidates.iter();
        for &id in iter.by_ref() {
            if self.stop.load(Ordering::SeqCst) {
                break;
            }
            match self.compact_one(disk.as_mut(), id, started, &mut report) {
                Ok(()) => {}
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        // Release the segments not compacted.
        {
            let mut g = self.inner.lock();
            for id in &candidates {
                if let Some(s) = g.index.segments.get_mut(id) {
                    s.compacting = false;
                }
            }
            self.update_gauges_locked(&g);
        }
        result?;
        let (removed, reclaimed) = self.remove_dead_segments()?;
        report.removed_segments += removed;
        report.reclaimed_bytes += reclaimed;
        Ok(report)
    }

    fn compact_one(
        &self,
        disk: &mut dyn Disk,
        id: u64,
        started: Instant,
        report: &mut CompactionReport,
    ) -> Result<()> {
        // Live entries: current copies of existing ledgers held by this segment.
        let (seq, old_dir, old_len, live): (u64, usize, u64, Vec<(u64, Vec<EntryLoc>)>) = {
            let g = self.inner.lock();
            let Some(s) = g.index.segments.get(&id) else {
                return Ok(());
            };
            let mut live = Vec::new();
            for l in &s.ledgers {
                let Some(m) = g.index.ledgers.get(l) else {
                    continue;
                };
                let Some(run) = m.runs.iter().find(|r| r.seg == id) else {
                    continue;
                };
                let locs: Vec<EntryLoc> = run
                    .entries
                    .iter()
                    .filter(|e| {
                        m.lookup(e.entry)
                            .is_some_and(|(sg, loc, _, _)| sg == id && loc.offset == e.offset)
                    })
                    .copied()
                    .collect();
                if !locs.is_empty() {
                    live.push((*l, locs));
                }
            }
            (s.seq, s.dir, s.file_len, live)
        };
        let old_path = self.seg_path(old_dir, id);
        // Read live entries in batches of adjacent records, rate-limited.
        let file = disk
            .open(
                &old_path,
                OpenOptions {
                    direct: self.cfg.direct_io,
                    ..Default::default()
                },
            )
            .map_err(|e| Error::io(format!("opening {}", old_path.display()), e))?;
        let mut data: Vec<(u64, Vec<(u64, Bytes)>)> = Vec::with_capacity(live.len());
        let read = (|| -> Result<()> {
            for (l, locs) in &live {
                let mut out = Vec::with_capacity(locs.len());
                let mut i = 0;
                while i < locs.len() {
                    let mut j = i + 1;
                    let mut bytes = locs[i].record_len();
                    while j < locs.len()
                        && locs[j].offset == locs[j - 1].offset + locs[j - 1].record_len()
                        && bytes + locs[j].record_len() <= 1 << 20
                    {
                        bytes += locs[j].record_len();
                        j += 1;
                    }
                    let recs = segment::read_records(disk, file, &old_path, *l, &locs[i..j])?;
                    for (loc, b) in locs[i..j].iter().zip(recs) {
                        out.push((loc.entry, b));
                    }
                    report.bytes_copied += bytes;
                    M::add(&self.metrics.compaction_bytes_copied, bytes);
                    self.throttle(started, report.bytes_copied);
                    i = j;
                }
                data.push((*l, out));
            }
            Ok(())
        })();
        let _ = disk.close(file);
        read?;
        let (new_id, dir) = {
            let mut g = self.inner.lock();
            let nid = g.next_segment_id;
            g.next_segment_id += 1;
            (nid, Self::pick_dir(&g))
        };
        let written = if data.is_empty() {
            None
        } else {
            let input = SegmentInput {
                ledgers: data
                    .iter()
                    .map(|(l, v)| (*l, v.iter().map(|(e, b)| (*e, b)).collect()))
                    .collect(),
            };
            Some(segment::write_segment(
                disk,
                &self.dirs[dir],
                new_id,
                seq,
                &input,
                self.cfg.flush_write_bytes,
                self.cfg.flush_queue_depth,
                self.cfg.direct_io,
            )?)
        };
        // Switch the index over: the new run replaces the old one for entries whose
        // current copy is still the old segment's.
        {
            let mut g = self.inner.lock();
            let g = &mut *g;
            let mut new_live = 0u64;
            let new_file_len = written.as_ref().map_or(0, |w| w.file_len);
            if let Some(w) = &written {
                g.index.add_segment(
                    new_id,
                    SegmentMeta {
                        dir,
                        seq,
                        file_len: w.file_len,
                        data_bytes: w.data_len,
                        live_bytes: 0,
                        ledgers: w.runs.iter().map(|r| r.ledger).collect(),
                        compacting: false,
                    },
                );
                for r in &w.runs {
                    let Some(m) = g.index.ledgers.get_mut(&r.ledger) else {
                        continue;
                    };
                    let old_locs: HashMap<u64, u64> = live
                        .iter()
                        .find(|(l, _)| *l == r.ledger)
                        .map(|(_, v)| v.iter().map(|e| (e.entry, e.offset)).collect())
                        .unwrap_or_default();
                    let still: Vec<EntryLoc> = r
                        .entries
                        .iter()
                        .filter(|e| {
                            m.lookup(e.entry).is_some_and(|(sg, loc, _, _)| {
                                sg == id && old_locs.get(&e.entry) == Some(&loc.offset)
                            })
                        })
                        .copied()
                        .collect();
                    new_live += still.iter().map(|e| e.record_len()).sum::<u64>();
                    if let Some(pos) = m.runs.iter().position(|x| x.seg == id) {
                        if still.is_empty() {
                            m.runs.remove(pos);
                        } else {
                            m.runs[pos] = Run {
                                seg: new_id,
                                seq,
                                entries: still,
                            };
                        }
                    }
                }
                if let Some(s) = g.index.segments.get_mut(&new_id) {
                    s.live_bytes = new_live;
                }
            }
            // Whatever still points at the old segment is dead now.
            if let Some(s) = g.index.segments.get_mut(&id) {
                s.live_bytes = 0;
                for l in s.ledgers.clone() {
                    if let Some(m) = g.index.ledgers.get_mut(&l) {
                        m.runs.retain(|r| r.seg != id);
                    }
                }
            }
            g.index.remove_segment(id);
            report.reclaimed_bytes += old_len.saturating_sub(new_file_len);
            M::add(
                &self.metrics.reclaimed_compaction_space_bytes,
                old_len.saturating_sub(new_file_len),
            );
        }
        report.compacted_segments += 1;
        M::add(&self.metrics.compaction_total, 1);
        // The new segment is durable (write_segment synced it and its directory):
        // the old file may go.
        self.remove_segment_file(disk, id, &old_path)?;
        disk.sync_dir(&self.dirs[old_dir])
            .map_err(|e| Error::io(format!("syncing {}", self.dirs[old_dir].display()), e))?;
        Ok(())
    }

    /// Sleeps so that `copied` bytes since `started` stay within the compaction rate.
    fn throttle(&self, started: Instant, copied: u64) {
        let rate = self.cfg.compaction_rate_bytes_per_sec;
        if rate == 0 {
            return;
        }
        let due = Duration::from_secs_f64(copied as f64 / rate as f64);
        loop {
            let elapsed = started.elapsed();
            if due <= elapsed || self.stop.load(Ordering::SeqCst) {
                return;
            }
            std::thread::sleep((due - elapsed).min(Duration::from_millis(100)));
        }
    }
}
