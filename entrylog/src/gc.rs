//! Garbage collection of deleted ledgers: the scan token that protects ledgers created
//! during a metadata scan, ledger deletion with durable tombstones, and removal of
//! segment files left with nothing live.
//!
//! Invariants: a ledger first seen after [`EntryLog::begin_gc_scan`] is never deleted by
//! the [`EntryLog::gc`] call that uses its token; a deletion is durable (tombstone in the
//! ledger-state file) before `gc` / `delete_ledger` returns, so journal replay cannot
//! bring the ledger back; a segment file is removed only once no live run points at it.
//!
//! Cancellation ([`EntryLog::gc_until`], a [`Cancel`]): checked before the deletions and
//! before each segment file is removed. Deletions already made are persisted before the
//! call returns; dead segment files not yet removed stay on disk, and hold nothing live
//! (their entries are superseded or tombstoned), so the next start finds them dead again
//! and the next GC or compaction removes them.
//!
//! A segment file that cannot be removed (the unlink fails) is logged, counted
//! (`RECLAIM_FAILED_TO_DELETE`) and kept in `Inner::undeleted`; the round goes on with
//! the other files, and every later GC or compaction round retries it, as Java's
//! GarbageCollectorThread keeps an entry log it could not delete and retries it. Its
//! ledgers keep their tombstones until it is gone; after a restart it is found dead
//! again like a file a cancel left behind.

use crate::metrics::EntryLogMetrics as M;
use crate::{Cancel, EntryLog, Error, GcReport, Result, Shared};
use bk_disk::Disk;
use std::collections::HashSet;
use std::path::Path;

/// Returned by [`EntryLog::begin_gc_scan`]: ledgers first seen after it are never
/// dropped by the [`EntryLog::gc`] call that uses it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GcScanToken(pub(crate) u64);

impl EntryLog {
    /// Deletes one ledger now and makes the deletion durable before returning.
    pub fn delete_ledger(&self, ledger: u64) -> Result<bool> {
        let deleted = self.shared.delete_ledgers(&[ledger]);
        // Removing segments writes the state (tombstones included) before unlinking.
        let (removed, _) = self.shared.remove_dead_segments(None)?;
        if removed == 0 {
            self.shared.persist_state(false)?;
        }
        Ok(deleted.len() == 1)
    }

    /// Starts a GC scan: ledgers first seen after this call are kept by `gc`.
    pub fn begin_gc_scan(&self) -> GcScanToken {
        let mut g = self.shared.inner.lock();
        g.generation += 1;
        GcScanToken(g.generation)
    }

    /// Deletes every ledger that existed before `token` was taken and for which
    /// `live(ledger)` is false; persists the deletions, and removes segment files left
    /// with nothing live. `live` is called under the index lock: it must be cheap
    /// (a set lookup).
    pub fn gc(&self, token: GcScanToken, live: &dyn Fn(u64) -> bool) -> Result<GcReport> {
        self.gc_until(token, live, &Cancel::new())
    }

    /// [`EntryLog::gc`] that stops when `cancel` is cancelled (module docs); the report
    /// says `cancelled`.
    pub fn gc_until(
        &self,
        token: GcScanToken,
        live: &dyn Fn(u64) -> bool,
        cancel: &Cancel,
    ) -> Result<GcReport> {
        if cancel.is_cancelled() {
            return Ok(GcReport {
                cancelled: true,
                ..GcReport::default()
            });
        }
        let victims: Vec<u64> = {
            let g = self.shared.inner.lock();
            g.index
                .ledgers
                .iter()
                .filter(|(l, m)| m.created_gen < token.0 && !live(**l))
                .map(|(l, _)| *l)
                .collect()
        };
        let deleted = self.shared.delete_ledgers_if(&victims, token);
        // Removing segments writes the state (tombstones included) before unlinking.
        let (removed, reclaimed) = self.shared.remove_dead_segments(Some(cancel))?;
        if !deleted.is_empty() && removed == 0 {
            self.shared.persist_state(false)?;
        }
        M::add(
            &self.shared.metrics.reclaimed_deletion_space_bytes,
            reclaimed,
        );
        Ok(GcReport {
            deleted_ledgers: deleted,
            removed_segments: removed,
            reclaimed_bytes: reclaimed,
            cancelled: cancel.is_cancelled(),
        })
    }
}

impl Shared {
    pub(crate) fn delete_ledgers(&self, ledgers: &[u64]) -> Vec<u64> {
        self.delete_ledgers_if(ledgers, GcScanToken(u64::MAX))
    }

    /// Deletes ledgers created before `token`; returns the ids deleted, ascending.
    pub(crate) fn delete_ledgers_if(&self, ledgers: &[u64], token: GcScanToken) -> Vec<u64> {
        let mut dropped = HashSet::new();
        {
            let mut g = self.inner.lock();
            let g = &mut *g;
            let at = g.checkpoints;
            for l in ledgers {
                if g.index
                    .ledgers
                    .get(l)
                    .is_some_and(|m| m.created_gen < token.0)
                {
                    g.index.remove_ledger(*l);
                    g.active.remove_ledger(*l);
                    g.tombstones.insert(*l, at);
                    dropped.insert(*l);
                }
            }
            self.update_gauges_locked(g);
        }
        self.read_cache.lock().remove_ledgers(&dropped);
        M::add(&self.metrics.deleted_ledger_total, dropped.len() as u64);
        let mut deleted: Vec<u64> = dropped.into_iter().collect();
        deleted.sort_unstable();
        deleted
    }

    /// Closes every reader's handle on a segment, then removes the file (one already
    /// gone counts as removed, as Java's `removeEntryLog` counts it).
    fn remove_segment_file(&self, disk: &mut dyn Disk, seg: u64, path: &Path) -> Result<()> {
        for r in &self.readers {
            let mut r = r.lock();
            if let Some(f) = r.files.remove(&seg) {
                let _ = r.disk.close(f);
            }
        }
        match disk.remove(path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Error::io(format!("removing {}", path.display()), e)),
        }
    }

    /// Removes segment files the ledger-state file no longer lists, then syncs their
    /// directories and releases their ledgers' references (tombstones may expire).
    /// Stops before the next file once `cancel` is cancelled. A file whose removal
    /// fails, or that a cancel left, joins `Inner::undeleted` for the next round; a
    /// failure is logged and counted (module docs), never an error. Returns (count,
    /// bytes) of the files removed.
    pub(crate) fn remove_files(
        &self,
        disk: &mut dyn Disk,
        files: Vec<DeadFile>,
        cancel: Option<&Cancel>,
    ) -> Result<(usize, u64)> {
        let mut dirs = HashSet::new();
        let mut removed = Vec::new();
        let mut kept = Vec::new();
        for f in files {
            if cancel.is_some_and(Cancel::is_cancelled) {
                kept.push(f);
                continue;
            }
            match self.remove_segment_file(disk, f.id, &self.seg_path(f.dir, f.id)) {
                Ok(()) => {
                    dirs.insert(f.dir);
                    removed.push(f);
                }
                Err(e) => {
                    M::add(&self.metrics.reclaim_failed_to_delete, 1);
                    tracing::warn!(
                        error = %e,
                        segment = f.id,
                        "could not remove a segment file that holds nothing live; retrying at the next GC round"
                    );
                    kept.push(f);
                }
            }
        }
        let mut g = self.inner.lock();
        g.undeleted.extend(kept);
        drop(g);
        for d in dirs {
            disk.sync_dir(&self.dirs[d])
                .map_err(|e| Error::io(format!("syncing {}", self.dirs[d].display()), e))?;
        }
        // The files are gone for good: their ledgers' tombstones may now expire (not
        // those of files left behind).
        let mut g = self.inner.lock();
        for f in &removed {
            g.index.release_refs(&f.ledgers);
        }
        Ok((removed.len(), removed.iter().map(|f| f.len).sum()))
    }

    /// Removes segments with no live bytes (not being compacted). Returns (count, bytes)
    /// of the files removed; stops before the next file once `cancel` is cancelled
    /// (module docs): a file left behind is no longer listed in the state, exactly as
    /// after a crash between the state write and the unlink, and its ledgers keep their
    /// tombstones.
    pub(crate) fn remove_dead_segments(&self, cancel: Option<&Cancel>) -> Result<(usize, u64)> {
        if cancel.is_some_and(Cancel::is_cancelled) {
            return Ok((0, 0));
        }
        let (dead, retries): (Vec<DeadFile>, Vec<DeadFile>) = {
            let mut g = self.inner.lock();
            let ids: Vec<u64> = g
                .index
                .segments
                .iter()
                .filter(|(_, s)| s.live_bytes == 0 && !s.compacting)
                .map(|(id, _)| *id)
                .collect();
            let mut v = Vec::new();
            for id in ids {
                // Drop any (dead) runs still pointing at it.
                if let Some(s) = g.index.segments.get(&id) {
                    for l in s.ledgers.clone() {
                        if let Some(m) = g.index.ledgers.get_mut(&l) {
                            m.runs.retain(|r| r.seg != id);
                        }
                    }
                }
                if let Some(s) = g.index.forget_segment(id) {
                    v.push(DeadFile {
                        id,
                        dir: s.dir,
                        len: s.file_len,
                        ledgers: s.ledgers,
                    });
                }
            }
            self.update_gauges_locked(&g);
            (v, std::mem::take(&mut g.undeleted))
        };
        if dead.is_empty() && retries.is_empty() {
            return Ok((0, 0));
        }
        // The ledger-state file lists the segments that must exist: drop these from it
        // durably before their files go (docs/durability.md, "What is detected and how").
        // Files to retry are listed no longer already.
        if !dead.is_empty() {
            if let Err(e) = self.persist_state(false) {
                self.inner.lock().undeleted.extend(retries);
                return Err(e);
            }
        }
        let mut disk = self.aux_disk.lock();
        let files = retries.into_iter().chain(dead).collect();
        self.remove_files(disk.as_mut(), files, cancel)
    }
}

/// A segment file the index no longer lists and that is still to be removed.
pub(crate) struct DeadFile {
    pub(crate) id: u64,
    pub(crate) dir: usize,
    /// The file's length (reclaimed once it is removed).
    pub(crate) len: u64,
    /// The ledgers it names (references released once it is removed).
    pub(crate) ledgers: Vec<u64>,
}
