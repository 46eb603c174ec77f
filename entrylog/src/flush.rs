//! The write path: adds into the active write-cache half (with throttling), swapping
//! halves, the background flusher, `flush()` (the checkpoint flush; paced or not:
//! `flush_pace`) and the ledger-state file writes.
//!
//! Invariants: at most one half is being flushed and flushes are serialised by
//! `flush_lock`; a half is dropped only after its segment is durable and installed in
//! the index; `flush()` returns Ok only after every half holding entries added before
//! the call is durable and the ledger state written after them is durable.

use crate::disk_usage::DirState;
use crate::flush_pace::Pace;
use crate::format::{LedgerStateRecord, SegmentRecord, StateFile};
use crate::index::{LedgerMeta, Run, SegmentMeta};
use crate::metrics::EntryLogMetrics as M;
use crate::room;
use crate::segment::{self, SegmentInput};
use crate::{lac_field, Error, Inner, Result, Shared, STATE_FILE};
use bk_disk::Disk;
use bytes::Bytes;
use std::cell::Cell;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// An add waiting for write-cache space: records `throttled_write` once, as a success
/// when [`Throttle::inserted`] is called, else (any early return) as a failure.
struct Throttle<'a> {
    metrics: &'a M,
    started: Instant,
    deadline: Instant,
    inserted: bool,
}

impl<'a> Throttle<'a> {
    fn start(metrics: &'a M, max: Duration) -> Self {
        let started = Instant::now();
        Throttle {
            metrics,
            started,
            deadline: started + max,
            inserted: false,
        }
    }

    fn inserted(mut self) {
        self.inserted = true;
    }
}

impl Drop for Throttle<'_> {
    fn drop(&mut self) {
        let waited = self.started.elapsed();
        if self.inserted {
            self.metrics.throttled_write_latency.record(waited);
        } else {
            self.metrics.throttled_write_failed_latency.record(waited);
        }
    }
}

impl Shared {
    /// `replayed`: a journal record applied at start-up. While no directory has room,
    /// a full cache refuses an add at once (`OutOfSpace`, EREADONLY on the wire) instead
    /// of waiting; a replayed entry is admitted over the bound instead (it is already
    /// acknowledged, and what the journal holds above its checkpoint that is not in a
    /// segment was in the write cache when the bookie stopped).
    pub(crate) fn add_entry(
        &self,
        ledger: u64,
        entry: u64,
        data: Bytes,
        crc: u32,
        replayed: bool,
    ) -> Result<()> {
        if data.len() > self.cfg.max_entry_bytes {
            return Err(Error::InvalidInput(format!(
                "entry of {} bytes exceeds the maximum {}",
                data.len(),
                self.cfg.max_entry_bytes
            )));
        }
        let started = Instant::now();
        let half = self.cfg.write_cache_bytes / 2;
        let mut g = self.inner.lock();
        // While set, the add is throttled (`throttled_write` from its start).
        let mut throttle: Option<Throttle<'_>> = None;
        loop {
            Self::check_not_deleted(&g, ledger)?;
            let used = g.active.bytes();
            if used == 0 || used + data.len() <= half {
                break;
            }
            if g.flushing.is_none() {
                self.swap_locked(&mut g);
                continue;
            }
            if g.no_space {
                if replayed {
                    break;
                }
                M::add(&self.metrics.rejected_write_requests, 1);
                return Err(Error::OutOfSpace);
            }
            let d = throttle
                .get_or_insert_with(|| {
                    M::add(&self.metrics.throttled_write_requests, 1);
                    Throttle::start(&self.metrics, self.cfg.max_throttle)
                })
                .deadline;
            if self.cache_cv.wait_until(&mut g, d).timed_out() && g.flushing.is_some() {
                M::add(&self.metrics.rejected_write_requests, 1);
                return Err(Error::Throttled(self.cfg.max_throttle));
            }
        }
        if let Some(t) = throttle {
            t.inserted();
        }
        let lac = lac_field(&data);
        g.active.put(ledger, entry, data, crc);
        let gen = g.generation;
        let meta = g.index.ledgers.entry(ledger).or_insert_with(|| LedgerMeta {
            created_gen: gen,
            ..Default::default()
        });
        if let Some(v) = lac {
            meta.lac = Some(meta.lac.map_or(v, |l| l.max(v)));
        }
        // Flush-through: a full half goes to the flusher at once.
        if g.active.bytes() >= half && g.flushing.is_none() {
            self.swap_locked(&mut g);
        }
        self.update_cache_gauges_locked(&g);
        drop(g);
        self.read_cache.lock().remove(ledger, entry);
        self.metrics.add_entry_latency.record(started.elapsed());
        Ok(())
    }

    /// Moves the active half to flushing and wakes the flusher. Requires no flushing half.
    pub(crate) fn swap_locked(&self, g: &mut Inner) {
        debug_assert!(g.flushing.is_none());
        if g.active.is_empty() {
            return;
        }
        g.swaps += 1;
        let now = Instant::now();
        g.flushing_fill = now.saturating_duration_since(g.active_since);
        g.active_since = now;
        let half = std::mem::take(&mut g.active);
        g.flushing = Some((Arc::new(half), g.swaps));
        self.flusher_cv.notify_all();
    }

    pub(crate) fn flusher_loop(&self) {
        loop {
            {
                let mut g = self.inner.lock();
                loop {
                    if self.stop.load(Ordering::SeqCst) {
                        return;
                    }
                    let ready = g.flushing.is_some()
                        && g.flusher_backoff_until.is_none_or(|t| Instant::now() >= t);
                    if ready {
                        break;
                    }
                    let wait = g
                        .flusher_backoff_until
                        .map_or(Duration::from_millis(500), |t| {
                            t.saturating_duration_since(Instant::now())
                        });
                    self.flusher_cv
                        .wait_for(&mut g, wait.max(Duration::from_millis(1)));
                }
            }
            let started = Instant::now();
            let mut disk = self.flush_lock.lock();
            let pace = {
                let g = self.inner.lock();
                if g.flushing.is_none() {
                    continue; // a flush() call got there first
                }
                self.pace_of_flushing(&g)
            };
            let r = self
                .flush_flushing(disk.as_mut(), pace.as_ref(), &|| false)
                .and_then(|_| self.persist_state_with(disk.as_mut(), false));
            drop(disk);
            match &r {
                Ok(()) => {
                    M::add(&self.metrics.flush_count, 1);
                    self.metrics.flush_latency.record(started.elapsed());
                }
                Err(_) => M::add(&self.metrics.flush_failures, 1),
            }
            self.after_flush_attempt(&r);
            let mut g = self.inner.lock();
            g.flusher_backoff_until = match &r {
                Ok(()) => {
                    g.flusher_backoff = Duration::ZERO;
                    None
                }
                Err(e) if e.is_no_space() => {
                    // Retried with backoff (1 s doubling to 30 s), and at once when a
                    // disk check finds room again (`check_disk_usage`); logged when the
                    // state changes (`after_flush_attempt`), not at every retry.
                    g.flusher_backoff = (g.flusher_backoff * 2)
                        .clamp(Duration::from_secs(1), Duration::from_secs(30));
                    Some(Instant::now() + g.flusher_backoff)
                }
                Err(e) => {
                    tracing::warn!(error = %e, "background flush failed; entries stay in the write cache");
                    Some(Instant::now() + Duration::from_millis(1000))
                }
            };
        }
    }

    /// The pace of writing the flushing half (`flush_pace`): None when pacing is off or
    /// no half is being flushed.
    fn pace_of_flushing(&self, g: &Inner) -> Option<Pace> {
        let (half, _) = g.flushing.as_ref()?;
        Pace::for_half(
            half.bytes() as u64,
            g.flushing_fill,
            self.cfg.flush_pace_min_bytes_per_sec,
        )
    }

    /// Records whether flushing is blocked for lack of space: sets or clears `no_space`,
    /// wakes adds waiting for cache space (they are refused at once while blocked), logs
    /// the change and tells the mode listener.
    pub(crate) fn after_flush_attempt(&self, r: &Result<()>) {
        let blocked = matches!(r, Err(e) if e.is_no_space());
        let changed = {
            let mut g = self.inner.lock();
            if r.is_err() && !blocked {
                return;
            }
            std::mem::replace(&mut g.no_space, blocked) != blocked
        };
        if changed {
            if let Err(e) = r {
                tracing::warn!(error = %e, "ledger directories full: flushes wait for space; unflushed entries stay in the write cache and the journal");
            } else {
                tracing::info!("ledger directories have room again: write cache flushed");
            }
            self.cache_cv.notify_all();
        }
        self.notify_mode();
    }

    /// Takes `flush_lock` for a caller other than the flusher: counted while it waits,
    /// so a paced background flush holding the lock runs at full speed (`flush_pace`).
    fn lock_flush(&self) -> parking_lot::MutexGuard<'_, Box<dyn Disk>> {
        self.flush_lock_waiters.fetch_add(1, Ordering::SeqCst);
        let disk = self.flush_lock.lock();
        self.flush_lock_waiters.fetch_sub(1, Ordering::SeqCst);
        disk
    }

    /// True when a paced background flush should run at full speed: the log is
    /// stopping, someone waits for `flush_lock`, or the active half is half full.
    fn flush_hurried(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
            || self.flush_lock_waiters.load(Ordering::SeqCst) > 0
            || self.inner.lock().active.bytes() >= self.cfg.write_cache_bytes / 4
    }

    /// `paced`: keep to `flush_pace` until this or [`Shared::flush_hurried`] says hurry.
    pub(crate) fn flush(&self, paced: Option<&dyn Fn() -> bool>) -> Result<()> {
        let started = Instant::now();
        // A paced flush does not hurry the background flush it waits for.
        let mut disk = match paced {
            Some(_) => self.flush_lock.lock(),
            None => self.lock_flush(),
        };
        let target = {
            let mut g = self.inner.lock();
            if g.closed {
                return Err(Error::Closed);
            }
            if g.flushing.is_none() {
                self.swap_locked(&mut g);
            }
            // Everything added before this call: the flushing half and, if not
            // empty, the active half (which takes the next swap number).
            g.swaps + u64::from(!g.active.is_empty())
        };
        let r = (|| {
            loop {
                let (pending, pace) = {
                    let mut g = self.inner.lock();
                    if g.flushed_swaps >= target {
                        break;
                    }
                    if g.flushing.is_none() {
                        self.swap_locked(&mut g);
                    }
                    let pace = paced.and_then(|_| self.pace_of_flushing(&g));
                    (g.flushing.is_some(), pace)
                };
                if !pending {
                    break;
                }
                self.flush_flushing(disk.as_mut(), pace.as_ref(), paced.unwrap_or(&|| false))?;
            }
            self.persist_state_with(disk.as_mut(), true)
        })();
        drop(disk);
        self.after_flush_attempt(&r);
        match &r {
            Ok(()) => {
                M::add(&self.metrics.flush_count, 1);
                self.metrics.flush_latency.record(started.elapsed());
            }
            Err(_) => M::add(&self.metrics.flush_failures, 1),
        }
        r
    }

    /// Picks the directory for a new segment: not full, most free space at the last
    /// check; ties rotate with the segment id so equal directories share the load.
    pub(crate) fn pick_dir(g: &Inner) -> usize {
        let n = g.dir_states.len();
        let first = (g.next_segment_id % n as u64) as usize;
        let mut best = first;
        for i in (first..n).chain(0..first) {
            let better_state = (g.dir_states[i] != DirState::Full) as u8
                > (g.dir_states[best] != DirState::Full) as u8;
            let same_state =
                (g.dir_states[i] == DirState::Full) == (g.dir_states[best] == DirState::Full);
            if better_state || (same_state && g.dir_free[i] > g.dir_free[best]) {
                best = i;
            }
        }
        best
    }

    /// Writes the flushing half as segments of bounded size (`room`) and installs each as
    /// it becomes durable; the half is dropped once all of it is. A failure (ENOSPC, EIO)
    /// leaves the rest in the half, and the next call resumes at its cursor. Caller holds
    /// flush_lock. With `pace`, the writes keep to it until `hurry()` or
    /// [`Shared::flush_hurried`] is true (`flush_pace`).
    pub(crate) fn flush_flushing(
        &self,
        disk: &mut dyn Disk,
        pace: Option<&Pace>,
        hurry: &dyn Fn() -> bool,
    ) -> Result<()> {
        // Bytes of this half written by earlier segments of this call, and whether the
        // pace was given up (it is not taken up again).
        let written = Cell::new(0u64);
        let hurried = Cell::new(pace.is_none());
        loop {
            let (half, swap_no, cursor) = {
                let g = self.inner.lock();
                let Some((half, swap_no)) = g.flushing.clone() else {
                    return Ok(());
                };
                (half, swap_no, g.flush_cursor)
            };
            let sorted = half.sorted_ledgers();
            let pending = {
                let g = self.inner.lock();
                room::pending(&sorted, cursor, |l| g.index.ledgers.contains_key(&l))
            };
            let next = match pending.first().and_then(|(_, v)| v.first()) {
                None => None,
                Some((_, first)) => {
                    let need = room::segment_bytes(first.data.len() as u64, 1, 1);
                    let (dir, room) = self.pick_dir_with_room(disk, need)?;
                    let (input, next) =
                        room::cut(pending, room.min(self.cfg.segment_max_bytes).max(need));
                    let keep_pace = |done: u64| {
                        if let (Some(p), false) = (pace, hurried.get()) {
                            if p.wait(written.get() + done, &|| hurry() || self.flush_hurried()) {
                                hurried.set(true);
                            }
                        }
                    };
                    let data_len = self.write_and_install(disk, dir, &input, &keep_pace)?;
                    written.set(written.get() + data_len);
                    next
                }
            };
            let mut g = self.inner.lock();
            g.flush_cursor = next;
            if next.is_none() {
                g.flushing = None;
                g.flushed_swaps = swap_no;
            }
            self.update_gauges_locked(&g);
            drop(g);
            if next.is_none() {
                self.cache_cv.notify_all();
                return Ok(());
            }
        }
    }

    /// Writes one segment into `dir` and installs it in the index.
    fn write_and_install(
        &self,
        disk: &mut dyn Disk,
        dir: usize,
        input: &SegmentInput<'_>,
        pace: &dyn Fn(u64),
    ) -> Result<u64> {
        let id = {
            let mut g = self.inner.lock();
            g.next_segment_id += 1;
            g.next_segment_id - 1
        };
        let w = match segment::write_segment(
            disk,
            &self.dirs[dir],
            id,
            id,
            input,
            self.cfg.flush_write_bytes,
            self.cfg.flush_queue_depth,
            self.cfg.direct_io,
            pace,
        ) {
            Ok(w) => w,
            Err(e) => {
                if e.is_no_space() {
                    self.inner.lock().dir_states[dir] = DirState::Full;
                }
                return Err(e);
            }
        };
        let data_len = w.data_len;
        let mut g = self.inner.lock();
        M::add(&self.metrics.flush_bytes, w.data_len);
        g.index.add_segment(
            id,
            SegmentMeta {
                dir,
                seq: id,
                file_len: w.file_len,
                data_bytes: w.data_len,
                live_bytes: 0,
                ledgers: w.runs.iter().map(|r| r.ledger).collect(),
                compacting: false,
            },
        );
        for r in w.runs {
            if g.index.ledgers.contains_key(&r.ledger) {
                g.index.install_run(
                    r.ledger,
                    Run {
                        seg: id,
                        seq: id,
                        entries: r.entries,
                    },
                );
            }
        }
        Ok(data_len)
    }

    pub(crate) fn persist_state(&self, checkpoint: bool) -> Result<()> {
        let mut disk = self.lock_flush();
        self.persist_state_with(disk.as_mut(), checkpoint)
    }

    /// Writes the ledger-state file to every directory (at least one must succeed).
    /// Caller holds flush_lock (passes its disk).
    pub(crate) fn persist_state_with(&self, disk: &mut dyn Disk, checkpoint: bool) -> Result<()> {
        let (bytes, epoch, checkpoints) = {
            let mut g = self.inner.lock();
            let g = &mut *g;
            g.state_epoch += 1;
            // Counted by the flush itself, unless the caller confirms its checkpoints.
            let counted = checkpoint && !self.cfg.checkpoints_confirmed_by_caller;
            let checkpoints = g.checkpoints + counted as u64;
            // A tombstone is dropped once no footer names the ledger and a checkpoint
            // has completed after the one following the deletion (so the journal no
            // longer holds records of it).
            let refs = &g.index.seg_refs;
            g.tombstones
                .retain(|l, at| refs.contains_key(l) || checkpoints < *at + 2);
            let mut ledgers: Vec<LedgerStateRecord> = g
                .index
                .ledgers
                .iter()
                .map(|(l, m)| LedgerStateRecord {
                    ledger: *l,
                    fenced: m.fenced,
                    master_key: m.master_key.clone(),
                    explicit_lac: m.explicit_lac.as_ref().map(|b| b.to_vec()),
                    lac: m.lac,
                })
                .collect();
            ledgers.sort_unstable_by_key(|r| r.ledger);
            let mut tombstones: Vec<(u64, u64)> =
                g.tombstones.iter().map(|(a, b)| (*a, *b)).collect();
            tombstones.sort_unstable();
            // BTreeMap order: ascending ids, as the format wants.
            let segments = g
                .index
                .segments
                .iter()
                .map(|(id, m)| SegmentRecord {
                    segment_id: *id,
                    seq: m.seq,
                    file_len: m.file_len,
                    dir_index: m.dir as u32,
                })
                .collect();
            let s = StateFile {
                epoch: g.state_epoch,
                checkpoints,
                next_segment_id: g.next_segment_id,
                ledgers,
                tombstones,
                segments: Some(segments),
            };
            (s.encode(), g.state_epoch, checkpoints)
        };
        let mut ok = false;
        let mut last_err = None;
        for (di, dir) in self.dirs.iter().enumerate() {
            match segment::replace_file(disk, dir, STATE_FILE, &bytes, self.cfg.direct_io) {
                Ok(()) => ok = true,
                Err(e) => {
                    if e.is_no_space() {
                        self.inner.lock().dir_states[di] = DirState::Full;
                    }
                    tracing::warn!(error = %e, epoch, "writing ledger state failed in one directory");
                    last_err = Some(e);
                }
            }
        }
        if !ok {
            return Err(last_err.unwrap_or(Error::InvalidInput("no directory".into())));
        }
        {
            let mut g = self.inner.lock();
            g.durable_state_epoch = g.durable_state_epoch.max(epoch);
            if checkpoint {
                g.checkpoints = g.checkpoints.max(checkpoints);
            }
        }
        Ok(())
    }
}
