//! Checkpoints of one journal directory: the checkpoint writer thread
//! ([`CkptWriter`]), which persists checkpoint files and unlinks freed segments off
//! the committer thread, and the committer's side: validating a checkpoint request
//! and, once its file is persisted, advancing the mark and recycling the segments
//! wholly at or below it.
//!
//! Invariants: a failed checkpoint file, recycling or directory sync is fatal (but a
//! checkpoint file that could not be written for lack of space, before its sync, only
//! leaves the mark where it was: `JournalError::NoSpace` to the caller); the
//! current segment and the one the newest-segment record names are never recycled;
//! the mark only moves forward.

use super::{Committer, Msg};
use crate::error::JournalError;
use crate::format::CheckpointRecord;
use crate::replay::write_checkpoint;
use crate::Seq;
use bk_disk::Disk;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use tokio::sync::oneshot;

/// Work for the checkpoint writer thread.
pub(crate) enum CkptWork {
    /// Persist a checkpoint file, then report `Msg::CheckpointDone`.
    Checkpoint(CkptJob),
    /// Unlink segment files a checkpoint freed beyond the free pool (already renamed
    /// to temporary names, which start-up removes if a crash comes first). Unlinking a
    /// large preallocated file takes milliseconds; dozens of them on the committer
    /// thread stalled group commit for over a second.
    Remove(Vec<PathBuf>),
}

/// Unlinks segment files freed by a checkpoint (under temporary names). A failure is
/// only logged: start-up removes temporary files.
fn remove_freed(disk: &mut dyn Disk, paths: Vec<PathBuf>) {
    for p in paths {
        if let Err(e) = disk.remove(&p) {
            tracing::warn!(path = %p.display(), "removing a freed journal segment: {e} (start-up removes it)");
        }
    }
}

/// A checkpoint for the checkpoint writer thread.
pub(crate) struct CkptJob {
    pub mark: Seq,
    pub rec: CheckpointRecord,
    pub reply: oneshot::Sender<Result<(), JournalError>>,
}

/// The checkpoint writer of one journal directory: a thread with its own `Disk`
/// that writes the checkpoint file (write + fdatasync + rename + directory sync)
/// so those syncs never stall group commit, and reports back over the committer's
/// own channel (`Msg::CheckpointDone`).
pub(crate) struct CkptWriter {
    tx: Option<crossbeam_channel::Sender<CkptWork>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl CkptWriter {
    pub(crate) fn spawn(
        index: usize,
        dir: PathBuf,
        mut disk: Box<dyn Disk>,
        direct: bool,
        committer: crossbeam_channel::Sender<Msg>,
    ) -> std::io::Result<CkptWriter> {
        let (tx, rx) = crossbeam_channel::bounded::<CkptWork>(16);
        let thread = std::thread::Builder::new()
            .name(format!("journal-ckpt-{index}"))
            .spawn(move || {
                for work in rx {
                    let job = match work {
                        CkptWork::Checkpoint(job) => job,
                        CkptWork::Remove(paths) => {
                            remove_freed(disk.as_mut(), paths);
                            continue;
                        }
                    };
                    let result = write_checkpoint(disk.as_mut(), &dir, job.rec, direct);
                    let msg = Msg::CheckpointDone {
                        mark: job.mark,
                        storage_epoch: job.rec.storage_epoch,
                        result,
                        reply: job.reply,
                    };
                    if let Err(e) = committer.send(msg) {
                        e.into_inner().fail(JournalError::ShutDown);
                    }
                }
            })?;
        Ok(CkptWriter {
            tx: Some(tx),
            thread: Some(thread),
        })
    }

    pub(super) fn stop(&mut self) {
        self.tx = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Committer {
    pub(super) fn run_checkpoints(&mut self) {
        if !self.checkpoints.is_empty() && self.ckpt.is_none() {
            self.quiesce_spare();
        }
        while let Some((mark, storage_epoch, reply)) = self.checkpoints.pop_front() {
            self.storage_epoch = self.storage_epoch.max(storage_epoch);
            match self.checkpoint(mark) {
                Ok(Some(rec)) => match self.ckpt.as_ref().and_then(|w| w.tx.clone()) {
                    Some(tx) => {
                        self.ckpt_pending += 1;
                        if let Err(e) = tx.send(CkptWork::Checkpoint(CkptJob { mark, rec, reply }))
                        {
                            self.ckpt_pending -= 1;
                            if let CkptWork::Checkpoint(job) = e.into_inner() {
                                let _ = job.reply.send(Err(JournalError::ShutDown));
                            }
                        }
                    }
                    None => {
                        let written =
                            write_checkpoint(self.disk.as_mut(), &self.dir, rec, self.direct);
                        let r = self.checkpoint_persisted(mark, rec.storage_epoch, written);
                        let _ = reply.send(r);
                    }
                },
                Ok(None) => {
                    let _ = reply.send(Ok(()));
                }
                Err(e) => {
                    let _ = reply.send(Err(e));
                }
            }
        }
    }

    /// The storage epoch the checkpoint file read at open records: kept (never lowered)
    /// by every later checkpoint.
    pub(crate) fn keep_storage_epoch(&mut self, epoch: u64) {
        self.storage_epoch = self.storage_epoch.max(epoch);
        self.persisted_storage_epoch = self.persisted_storage_epoch.max(epoch);
    }

    /// Validates a checkpoint request; returns the record to persist, or None when
    /// neither the mark nor the storage epoch is above the persisted one (nothing to do).
    /// A record written for a newer epoch alone keeps the persisted mark (never lowered).
    fn checkpoint(&mut self, mark: Seq) -> Result<Option<CheckpointRecord>, JournalError> {
        if let Some(reason) = self.gc.failed() {
            return Err(JournalError::Fatal(reason.clone()));
        }
        if mark > self.gc.last_assigned() {
            return Err(JournalError::InvalidInput(format!(
                "checkpoint mark {mark} is beyond the last appended seq {}",
                self.gc.last_assigned()
            )));
        }
        let newer_epoch = self.storage_epoch > self.persisted_storage_epoch;
        if mark <= self.mark && !newer_epoch {
            return Ok(None);
        }
        Ok(Some(CheckpointRecord {
            journal_id: self.journal_id,
            mark: mark.max(self.mark).0,
            // Read only after that group's fdatasync succeeded, and no group is
            // acknowledged before that: a group in flight at a crash holds seqs above it.
            durable: self.durable.0,
            storage_epoch: self.storage_epoch,
        }))
    }

    /// After the checkpoint file for `mark` was written (or failed to be): a failure
    /// is fatal; on success the mark advances and the segments wholly at or below it
    /// are recycled (never the current one), then the directory is synced.
    pub(super) fn checkpoint_persisted(
        &mut self,
        mark: Seq,
        storage_epoch: u64,
        written: Result<(), JournalError>,
    ) -> Result<(), JournalError> {
        if let Err(e) = written {
            if e.is_no_space() {
                // The old checkpoint file is in place (replace_file failed before its
                // rename, or at it): the mark stays where it was, nothing is lost, and
                // a later checkpoint tries again.
                tracing::warn!(dir = %self.dir.display(), "checkpoint mark {mark} not persisted: {e}");
                return Err(e);
            }
            let reason = format!("persisting checkpoint mark {mark}: {e}");
            self.fatal(reason.clone());
            return Err(JournalError::Fatal(reason.into()));
        }
        if let Some(reason) = self.gc.failed() {
            return Err(JournalError::Fatal(reason.clone()));
        }
        self.persisted_storage_epoch = self.persisted_storage_epoch.max(storage_epoch);
        if mark <= self.mark {
            return Ok(());
        }
        self.mark = mark;
        self.metrics.checkpoints.fetch_add(1, Ordering::Relaxed);
        let current = self.current.map(|c| c.0);
        // The segment the newest-segment record names must exist (crate::newest).
        let recorded = self.newest.rec.segment_id;
        let done: Vec<(u64, u64)> = self
            .live
            .iter()
            .filter(|(id, (last, _))| Some(**id) != current && **id != recorded && *last <= mark)
            .map(|(id, (_, len))| (*id, *len))
            .collect();
        if done.is_empty() {
            return Ok(());
        }
        self.files.follow_checkpoint(done.len());
        let mut doomed = Vec::new();
        for (id, len) in &done {
            let path = self.files.path_of(*id);
            match self.files.recycle(self.disk.as_mut(), &path, *len) {
                Ok(Some(tmp)) => doomed.push(tmp),
                Ok(None) => {}
                Err(e) => {
                    let reason = format!("recycling journal segment {id}: {e}");
                    self.fatal(reason.clone());
                    return Err(JournalError::Fatal(reason.into()));
                }
            }
            self.live.remove(id);
        }
        if let Err(e) = self.files.sync_dir(self.disk.as_mut()) {
            let reason = format!("syncing journal directory after recycling: {e}");
            self.fatal(reason.clone());
            return Err(JournalError::Fatal(reason.into()));
        }
        if !doomed.is_empty() {
            // Unlinked by the checkpoint writer; inline without one (manual drivers)
            // or when its queue is full.
            let leftover = match self.ckpt.as_ref().and_then(|w| w.tx.as_ref()) {
                Some(tx) => match tx.try_send(CkptWork::Remove(doomed)) {
                    Ok(()) => Vec::new(),
                    Err(e) => match e.into_inner() {
                        CkptWork::Remove(paths) => paths,
                        CkptWork::Checkpoint(_) => Vec::new(),
                    },
                },
                None => doomed,
            };
            remove_freed(self.disk.as_mut(), leftover);
        }
        self.metrics
            .segments_recycled
            .store(self.files.recycled, Ordering::Relaxed);
        Ok(())
    }
}
