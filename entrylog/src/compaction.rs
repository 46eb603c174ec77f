//! Compaction: rewrites segments to return space to the file system and to keep the
//! number of segment files bounded. Two kinds of group, each rewritten into ONE new
//! segment, rate-limited (`compaction_rate_bytes_per_sec`):
//! - a segment whose live fraction fell below the threshold, alone;
//! - a run of small segments (each under `compaction_merge_below_bytes`) that are
//!   consecutive in precedence order among ALL segments, merged up to
//!   `compaction_target_segment_bytes` of live data.
//!
//! Invariants: the new segment takes the highest seq of its group. That never lets an
//! old copy overtake a newer one, because no segment outside the group has a seq
//! inside the group's range (groups are consecutive in (seq, id) order, and segments
//! being compacted elsewhere break a run). The new segment is durable (datasync,
//! rename, directory sync) before the index switches to it and before the old files
//! are removed; entries overwritten or ledgers deleted during the copy keep their newer
//! state (only copies still current at switch-over are installed).
//!
//! Max time (`minor/majorCompactionMaxTimeMillis`): checked before each group, as Java
//! checks before each entry log; the group in progress always finishes.
//!
//! Cancellation (a [`Cancel`], or the entry log closing): checked before each group,
//! after each read batch (at most 1 MiB of adjacent entries), before each entry written,
//! and the rate-limit sleep wakes on it. A group cancelled before its output segment is
//! durable is discarded: the `.tmp` is removed and the index and old files are untouched.
//! A group whose segment is already durable is installed (index switch, old files
//! removed: no further I/O than unlinks). Either way the state is one a crash could
//! also have left, which start-up already handles.

use crate::format::EntryLoc;
use crate::gc::DeadFile;
use crate::index::{Run, SegmentMeta};
use crate::metrics::EntryLogMetrics as M;
use crate::segment::{self, SegmentInput};
use crate::write_cache::CachedEntry;
use crate::{Cancel, CompactionReport, Error, Result, Shared};
use bk_disk::{Disk, OpenOptions};
use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// One live entry to copy: where its current copy is, and (after reading) its bytes.
struct LiveEntry {
    src: u64,
    offset: u64,
    /// The bytes read back and the CRC they were verified against.
    entry: CachedEntry,
}

impl Shared {
    /// Chooses groups (see the module docs) and marks their segments compacting.
    fn choose_groups(&self, threshold: f64) -> Vec<Vec<u64>> {
        let mut g = self.inner.lock();
        let segs = &g.index.segments;
        let mut low: Vec<(f64, u64)> = segs
            .iter()
            .filter(|(_, s)| !s.compacting && s.data_bytes > 0)
            .map(|(id, s)| (s.live_bytes as f64 / s.data_bytes as f64, *id))
            .filter(|(f, _)| *f < threshold)
            .collect();
        low.sort_by(|a, b| a.0.total_cmp(&b.0));
        let chosen: HashSet<u64> = low.iter().map(|(_, id)| *id).collect();
        let mut groups: Vec<Vec<u64>> = low.into_iter().map(|(_, id)| vec![id]).collect();
        // Runs of small segments, consecutive in (seq, id) order over all segments.
        let mut order: Vec<(u64, u64)> = segs.iter().map(|(id, s)| (s.seq, *id)).collect();
        order.sort_unstable();
        let mut cur: Vec<u64> = Vec::new();
        let mut cur_live = 0u64;
        let flush_run = |cur: &mut Vec<u64>, groups: &mut Vec<Vec<u64>>| {
            if cur.len() >= 2 {
                groups.push(std::mem::take(cur));
            }
            cur.clear();
        };
        for (_, id) in order {
            let Some(s) = segs.get(&id) else { continue };
            let small = s.file_len < self.cfg.compaction_merge_below_bytes;
            if !small || s.compacting || chosen.contains(&id) {
                flush_run(&mut cur, &mut groups);
                cur_live = 0;
                continue;
            }
            if cur_live + s.live_bytes > self.cfg.compaction_target_segment_bytes {
                flush_run(&mut cur, &mut groups);
                cur_live = 0;
            }
            cur.push(id);
            cur_live += s.live_bytes;
        }
        flush_run(&mut cur, &mut groups);
        for grp in &groups {
            for id in grp {
                if let Some(s) = g.index.segments.get_mut(id) {
                    s.compacting = true;
                }
            }
        }
        groups
    }

    /// True once `cancel` is cancelled or the entry log is closing.
    fn compaction_cancelled(&self, cancel: &Cancel) -> bool {
        cancel.is_cancelled() || self.stop.load(Ordering::SeqCst)
    }

    /// One pass (see [`crate::EntryLog::compact_within`]): no group starts once `max_time`
    /// has passed since the pass began.
    pub(crate) fn compact(
        &self,
        threshold: f64,
        max_time: Option<Duration>,
        cancel: &Cancel,
    ) -> Result<CompactionReport> {
        let mut report = CompactionReport::default();
        let (removed, reclaimed) = self.remove_dead_segments(Some(cancel))?;
        report.removed_segments += removed;
        report.reclaimed_bytes += reclaimed;
        let groups = self.choose_groups(threshold);
        if groups.is_empty() {
            return Ok(report);
        }
        let mut result = (self.factory)()
            .map_err(|e| Error::io("opening disk for compaction", e))
            .map(|d| (d, Ok(())));
        if let Ok((disk, res)) = &mut result {
            let started = Instant::now();
            for grp in &groups {
                if self.compaction_cancelled(cancel) {
                    break;
                }
                if max_time.is_some_and(|max| started.elapsed() >= max) {
                    report.max_time_reached = true;
                    break;
                }
                let pass = Pass { started, cancel };
                if let Err(e) = self.compact_group(disk.as_mut(), grp, &pass, &mut report) {
                    *res = Err(e);
                    break;
                }
            }
        }
        // Release the segments not compacted.
        {
            let mut g = self.inner.lock();
            for id in groups.iter().flatten() {
                if let Some(s) = g.index.segments.get_mut(id) {
                    s.compacting = false;
                }
            }
            self.update_gauges_locked(&g);
        }
        result?.1?;
        let (removed, reclaimed) = self.remove_dead_segments(Some(cancel))?;
        report.removed_segments += removed;
        report.reclaimed_bytes += reclaimed;
        report.cancelled = self.compaction_cancelled(cancel);
        Ok(report)
    }

    /// Live entries (current copies of existing ledgers) of one segment, by ledger.
    fn live_entries_of(&self, id: u64) -> Vec<(u64, Vec<EntryLoc>)> {
        let g = self.inner.lock();
        let Some(s) = g.index.segments.get(&id) else {
            return Vec::new();
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
        live
    }

    /// Reads one segment's live entries into `out`, in batches of adjacent records;
    /// stops early (leaving `out` partial) once the pass is cancelled.
    fn read_live(
        &self,
        disk: &mut dyn Disk,
        id: u64,
        out: &mut BTreeMap<u64, BTreeMap<u64, LiveEntry>>,
        pass: &Pass<'_>,
        report: &mut CompactionReport,
    ) -> Result<()> {
        let live = self.live_entries_of(id);
        if live.is_empty() {
            return Ok(());
        }
        let dir = self
            .inner
            .lock()
            .index
            .segments
            .get(&id)
            .map_or(0, |s| s.dir);
        let path = self.seg_path(dir, id);
        let file = disk
            .open(
                &path,
                OpenOptions {
                    direct: self.cfg.direct_io,
                    ..Default::default()
                },
            )
            .map_err(|e| Error::io(format!("opening {}", path.display()), e))?;
        let read = (|| -> Result<()> {
            for (l, locs) in &live {
                let dst = out.entry(*l).or_default();
                let mut i = 0;
                while i < locs.len() {
                    let mut j = i + 1;
                    let mut bytes = locs[i].stored_len();
                    while j < locs.len()
                        && locs[j].offset == locs[j - 1].offset + locs[j - 1].stored_len()
                        && bytes + locs[j].stored_len() <= 1 << 20
                    {
                        bytes += locs[j].stored_len();
                        j += 1;
                    }
                    let recs = segment::read_entries(disk, file, &path, *l, &locs[i..j])?;
                    for (loc, data) in locs[i..j].iter().zip(recs) {
                        dst.insert(
                            loc.entry,
                            LiveEntry {
                                src: id,
                                offset: loc.offset,
                                entry: CachedEntry { data, crc: loc.crc },
                            },
                        );
                    }
                    report.bytes_copied += bytes;
                    report.entries_copied += (j - i) as u64;
                    M::add(&self.metrics.compaction_bytes_copied, bytes);
                    if self.throttle(pass, report) {
                        return Ok(());
                    }
                    i = j;
                }
            }
            Ok(())
        })();
        let _ = disk.close(file);
        read
    }

    /// Rewrites a group of segments into one new segment (module docs).
    fn compact_group(
        &self,
        disk: &mut dyn Disk,
        ids: &[u64],
        pass: &Pass<'_>,
        report: &mut CompactionReport,
    ) -> Result<()> {
        let (seq, old): (u64, Vec<(u64, usize, u64)>) = {
            let g = self.inner.lock();
            let old: Vec<(u64, usize, u64)> = ids
                .iter()
                .filter_map(|id| g.index.segments.get(id).map(|s| (*id, s.dir, s.file_len)))
                .collect();
            let seq = ids
                .iter()
                .filter_map(|id| g.index.segments.get(id).map(|s| s.seq))
                .max();
            match seq {
                Some(seq) => (seq, old),
                None => return Ok(()),
            }
        };
        let mut data: BTreeMap<u64, BTreeMap<u64, LiveEntry>> = BTreeMap::new();
        for (id, _, _) in &old {
            self.read_live(disk, *id, &mut data, pass, report)?;
            if self.compaction_cancelled(pass.cancel) {
                // Nothing written yet: the copies are dropped, the group stays as it is.
                return Ok(());
            }
        }
        data.retain(|_, m| !m.is_empty());
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
                    .map(|(l, m)| (*l, m.iter().map(|(e, le)| (*e, &le.entry)).collect()))
                    .collect(),
            };
            match segment::write_segment_until(
                disk,
                &self.dirs[dir],
                new_id,
                seq,
                &input,
                self.cfg.flush_write_bytes,
                self.cfg.flush_queue_depth,
                self.cfg.direct_io,
                &|| self.compaction_cancelled(pass.cancel),
                &|_| {},
            )? {
                Some(w) => Some(w),
                // Cancelled mid-write: the .tmp is gone, the group stays as it is.
                None => return Ok(()),
            }
        };
        // Switch the index over: for each ledger the group's runs are replaced by one
        // run holding the copies that are still current.
        let src: HashSet<u64> = ids.iter().copied().collect();
        // The old segment files, counted (their ledgers) until they are removed.
        let mut forgotten: Vec<DeadFile> = Vec::new();
        {
            let mut g = self.inner.lock();
            let g = &mut *g;
            let mut new_live = 0u64;
            let new_file_len = written.as_ref().map_or(0, |w| w.file_len);
            let mut touched: HashSet<u64> = HashSet::new();
            for (id, _, _) in &old {
                if let Some(s) = g.index.segments.get(id) {
                    touched.extend(s.ledgers.iter().copied());
                }
            }
            let mut new_runs: BTreeMap<u64, Vec<EntryLoc>> = BTreeMap::new();
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
                    let (Some(m), Some(copied)) =
                        (g.index.ledgers.get(&r.ledger), data.get(&r.ledger))
                    else {
                        continue;
                    };
                    let still: Vec<EntryLoc> = r
                        .entries
                        .iter()
                        .filter(|e| {
                            copied.get(&e.entry).is_some_and(|le| {
                                m.lookup(e.entry).is_some_and(|(sg, loc, _, _)| {
                                    sg == le.src && loc.offset == le.offset
                                })
                            })
                        })
                        .copied()
                        .collect();
                    new_live += still.iter().map(|e| e.stored_len()).sum::<u64>();
                    new_runs.insert(r.ledger, still);
                }
            }
            for l in touched {
                let Some(m) = g.index.ledgers.get_mut(&l) else {
                    continue;
                };
                m.runs.retain(|r| !src.contains(&r.seg));
                if let Some(still) = new_runs.remove(&l).filter(|v| !v.is_empty()) {
                    let pos = m.runs.partition_point(|r| (r.seq, r.seg) <= (seq, new_id));
                    m.runs.insert(
                        pos,
                        Run {
                            seg: new_id,
                            seq,
                            entries: still,
                        },
                    );
                }
            }
            if let Some(s) = g.index.segments.get_mut(&new_id) {
                s.live_bytes = new_live;
            }
            let old_len: u64 = old.iter().map(|x| x.2).sum();
            for (id, _, _) in &old {
                if let Some(m) = g.index.forget_segment(*id) {
                    forgotten.push(DeadFile {
                        id: *id,
                        dir: m.dir,
                        len: m.file_len,
                        ledgers: m.ledgers,
                    });
                }
            }
            report.reclaimed_bytes += old_len.saturating_sub(new_file_len);
            M::add(
                &self.metrics.reclaimed_compaction_space_bytes,
                old_len.saturating_sub(new_file_len),
            );
        }
        report.compacted_segments += old.len();
        report.output_segments += usize::from(written.is_some());
        M::add(&self.metrics.compaction_total, old.len() as u64);
        // The new segment is durable (write_segment synced it and its directory): the
        // old files may go, once the ledger-state file no longer lists them
        // (docs/durability.md, "What is detected and how").
        self.persist_state(false)?;
        // A file that cannot be removed is counted and retried later (gc.rs).
        self.remove_files(disk, forgotten, None)?;
        Ok(())
    }

    /// Sleeps so that what the pass copied since it started stays within the compaction
    /// rates (bytes and entries per second; 0 = no limit). Returns whether the pass is
    /// cancelled; a cancel wakes the sleep at once (closing the log within 100 ms).
    fn throttle(&self, pass: &Pass<'_>, report: &CompactionReport) -> bool {
        let secs = |done: u64, rate: u64| {
            if rate == 0 {
                0.0
            } else {
                done as f64 / rate as f64
            }
        };
        let due = Duration::from_secs_f64(
            secs(report.bytes_copied, self.cfg.compaction_rate_bytes_per_sec).max(secs(
                report.entries_copied,
                self.cfg.compaction_rate_entries_per_sec,
            )),
        );
        loop {
            if self.compaction_cancelled(pass.cancel) {
                return true;
            }
            let elapsed = pass.started.elapsed();
            if due <= elapsed {
                return false;
            }
            pass.cancel
                .sleep((due - elapsed).min(Duration::from_millis(100)));
        }
    }
}

/// One compaction pass: when it started (for the rate limit) and its cancellation.
struct Pass<'a> {
    started: Instant,
    cancel: &'a Cancel,
}
