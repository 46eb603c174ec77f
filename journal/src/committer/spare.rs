//! The spare segment: when the free pool is empty, the committer builds the next
//! segment in the background, one operation at a time between group writes
//! (fallocate, zero-fill chunks, fdatasync, then rename + directory sync), so a
//! segment switch rarely waits for a new file.
//!
//! Invariants: at most one spare operation is in flight, and synchronous work waits
//! for it first ([`Committer::quiesce_spare`]) so no completion is lost to `run_one`;
//! a spare failure is never fatal (nothing acknowledged depends on it): the spare is
//! dropped and retried after `SPARE_RETRY`. A spare is as long as the file system
//! allows (`SegmentFiles::fit_len`: `segment_bytes`, or less down to `segment_min`),
//! so a journal directory smaller than two segments still gets one.

use super::{Committer, SPARE_USER_DATA};
use bk_disk::{AlignedBuf, Completion, FileId, Op};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Bytes per zero-fill write of a spare built in the background (small, so a group
/// queued behind it on the device waits little).
const SPARE_CHUNK: usize = 128 * 1024;
/// Groups of this many bytes or more (moving average) count as large: spares are then
/// only preallocated, not zero-filled (see segments.rs). A sixteenth of the segment
/// when that is smaller (the small segments of tests then take both paths).
const LARGE_GROUP_BYTES: u64 = 1 << 20;
/// How long to wait before retrying a failed spare-segment creation.
const SPARE_RETRY: Duration = Duration::from_secs(10);

/// A spare segment being pre-written in the background, one operation at a time,
/// interleaved with group writes (different files).
pub(super) struct SpareBuild {
    file: FileId,
    n: u64,
    tmp: PathBuf,
    /// The file's length (what fit when it was begun).
    len: u64,
    allocated: bool,
    /// Bytes zero-filled so far.
    written: u64,
    synced: bool,
    op_in_flight: bool,
    buf: Option<AlignedBuf>,
}

impl Committer {
    pub(super) fn spare_op_in_flight(&self) -> bool {
        self.spare.as_ref().is_some_and(|s| s.op_in_flight)
    }

    /// Waits for the background spare's operation, so that synchronous work
    /// (`run_one`) can follow without swallowing its completion.
    pub(super) fn quiesce_spare(&mut self) {
        while self.spare_op_in_flight() {
            for c in self.disk.reap(1) {
                self.on_completion(c);
            }
        }
    }

    /// Keeps one spare segment ready: when the free pool is empty, starts building
    /// one in the background and advances it one operation at a time (fallocate,
    /// zero-fill chunks, fdatasync, then rename + directory sync). A failure here is
    /// not fatal (nothing acknowledged depends on it): the spare is dropped and
    /// retried later; a rotation with an empty pool creates a segment synchronously.
    pub(super) fn step_spare(&mut self) {
        if self.spare.is_none() {
            if !self.files.free.is_empty()
                || self.gc.failed().is_some()
                || self.shutdown
                || self.waiting_for_space()
                || self
                    .spare_failed_at
                    .is_some_and(|t| t.elapsed() < SPARE_RETRY)
            {
                return;
            }
            let len = match self.files.fit_len(self.disk.as_mut(), 0) {
                Ok(len) => len,
                Err(e) => {
                    self.spare_failed(format!("{e}"));
                    return;
                }
            };
            match self.files.begin_spare(self.disk.as_mut()) {
                Ok((file, n, tmp)) => {
                    self.spare = Some(SpareBuild {
                        file,
                        n,
                        tmp,
                        len,
                        allocated: false,
                        written: 0,
                        synced: false,
                        op_in_flight: false,
                        buf: None,
                    })
                }
                Err(e) => {
                    self.spare_failed(format!("{e}"));
                    return;
                }
            }
        }
        // Spare work fills the gaps: only while no group is in flight or pending,
        // unless the current segment is three quarters full (then it is needed soon).
        let urgent = self.gc.position().offset >= self.gc.segment_len() / 4 * 3;
        let idle = self.in_flight.is_none() && self.gc.is_idle();
        if !(urgent || idle) {
            return;
        }
        let Some(sp) = self.spare.as_mut() else {
            return;
        };
        if sp.op_in_flight {
            return;
        }
        let seg_bytes = sp.len;
        let large = LARGE_GROUP_BYTES.min(seg_bytes / 16) as f64;
        if sp.allocated && sp.written < seg_bytes && self.group_bytes_avg >= large {
            // Large groups: the rest stays preallocated (reads as zeros).
            sp.written = seg_bytes;
        }
        let op = if !sp.allocated {
            Op::Fallocate {
                file: sp.file,
                offset: 0,
                len: seg_bytes,
            }
        } else if sp.written < seg_bytes {
            let n = ((seg_bytes - sp.written) as usize).min(SPARE_CHUNK);
            // Zeroed once: `with_capacity` allocates zeroed memory, and this buffer is
            // only ever the source of these writes, which never change it, so the one
            // coming back from the previous chunk is still all zeros (re-zeroing it
            // was 128 KiB of memset per chunk; docs/benchmarks.md, "CPU per add").
            let mut buf = sp
                .buf
                .take()
                .filter(|b| b.capacity() >= n)
                .unwrap_or_else(|| AlignedBuf::with_capacity(SPARE_CHUNK));
            buf.set_len(n);
            debug_assert!(buf.as_slice().iter().all(|&b| b == 0));
            Op::Write {
                file: sp.file,
                offset: sp.written,
                buf,
            }
        } else if !sp.synced {
            Op::Fdatasync { file: sp.file }
        } else {
            self.install_spare();
            return;
        };
        match self.disk.submit(SPARE_USER_DATA, op) {
            Ok(()) => sp.op_in_flight = true,
            Err(e) => self.drop_spare(format!("submitting spare segment work: {e}")),
        }
    }

    pub(super) fn on_spare_completion(&mut self, c: Completion) {
        let Some(sp) = self.spare.as_mut() else {
            return;
        };
        let seg_bytes = sp.len;
        sp.op_in_flight = false;
        match c.result {
            Ok(n) => {
                if !sp.allocated {
                    sp.allocated = true;
                } else if sp.written < seg_bytes {
                    sp.written += n as u64;
                    sp.buf = c.buf;
                } else {
                    sp.synced = true;
                }
            }
            Err(e) => self.drop_spare(format!("pre-writing a spare journal segment: {e}")),
        }
    }

    /// At a segment switch with an empty free pool: makes the spare being built a
    /// free segment now, as far as its zero-fill got (the rest is preallocated and
    /// reads as zeros), instead of waiting for a new file to be zero-filled. A spare
    /// not yet preallocated is dropped (the switch then preallocates a new file).
    /// Requires no spare operation in flight.
    pub(super) fn finish_spare_now(&mut self) {
        let Some(sp) = self.spare.as_ref() else {
            return;
        };
        debug_assert!(!sp.op_in_flight);
        if !sp.allocated {
            self.abandon_spare();
            return;
        }
        let file = sp.file;
        let synced = sp.synced;
        if !synced {
            let c = bk_disk::run_one(self.disk.as_mut(), Op::Fdatasync { file });
            if let Err(e) = c.result {
                self.drop_spare(format!("syncing a spare journal segment: {e}"));
                return;
            }
        }
        self.install_spare();
    }

    /// Moves the finished (synced) spare into the free pool: close, rename, directory
    /// sync. On failure the file is removed and a new spare is tried later.
    fn install_spare(&mut self) {
        let Some(sp) = self.spare.take() else {
            return;
        };
        match self
            .files
            .finish_spare(self.disk.as_mut(), sp.file, sp.n, &sp.tmp, sp.len)
        {
            Ok(()) => {
                self.spare_failed_at = None;
                self.metrics
                    .segments_created
                    .store(self.files.created, Ordering::Relaxed);
            }
            Err(e) => {
                let _ = self.disk.remove(&sp.tmp);
                self.spare_failed(format!("{e}"));
            }
        }
    }

    fn spare_failed(&mut self, reason: String) {
        tracing::warn!(dir = %self.dir.display(), "{reason}; retrying later");
        self.spare_failed_at = Some(Instant::now());
    }

    /// Drops the spare being built (its operation must have completed).
    fn drop_spare(&mut self, reason: String) {
        if let Some(sp) = self.spare.take() {
            let _ = self.disk.close(sp.file);
            let _ = self.disk.remove(&sp.tmp);
        }
        self.spare_failed(reason);
    }

    /// Stops building the spare (shutdown): waits for its operation, removes it.
    pub(super) fn abandon_spare(&mut self) {
        self.quiesce_spare();
        if let Some(sp) = self.spare.take() {
            let _ = self.disk.close(sp.file);
            let _ = self.disk.remove(&sp.tmp);
        }
    }
}
