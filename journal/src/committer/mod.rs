//! The committer thread of one journal directory: owns its `Disk`, drives the
//! [`GroupCommit`] state machine, performs its group writes as linked
//! write+fdatasync operations, delivers acknowledgements through oneshot channels,
//! persists checkpoints and recycles segments.
//!
//! Invariants:
//! - at most one group write is in flight; synchronous work (segment preparation,
//!   checkpoint file, recycling, spare segments) runs only when none is, so no
//!   completion is ever lost to `run_one`;
//! - a failed or short group write, a failed segment preparation and a failed
//!   checkpoint are fatal: the reason is logged here, every pending and later append
//!   fails with `JournalError::Fatal`, and the thread keeps answering (with that
//!   error) until shutdown;
//! - budget is returned to admission only after the ack was sent.

use crate::commit::{CommitError, GroupCommit, GroupWrite};
use crate::error::JournalError;
use crate::format::CheckpointRecord;
use crate::journal::Admission;
use crate::metrics::JournalMetrics;
use crate::record::Record;
use crate::replay::write_checkpoint;
use crate::segments::SegmentFiles;
use crate::Seq;
use bk_disk::{AlignedBuf, Completion, Disk, FileId, Op};
use crossbeam_channel::{Receiver, RecvTimeoutError, TryRecvError};
use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// The caller's side of one append, carried through the state machine.
pub(crate) struct Token {
    pub reply: oneshot::Sender<Result<Seq, JournalError>>,
    /// Admission budget to return after the ack.
    pub charge: usize,
    pub barrier: bool,
}

/// Messages to a committer.
pub(crate) enum Msg {
    Append {
        record: Record,
        /// The record pre-encoded as a group of its own (large records only).
        encoded: Option<AlignedBuf>,
        token: Token,
        enqueued: Instant,
    },
    Barrier {
        token: Token,
        enqueued: Instant,
    },
    Mark {
        reply: oneshot::Sender<Seq>,
    },
    Checkpoint {
        mark: Seq,
        reply: oneshot::Sender<Result<(), JournalError>>,
    },
    /// From the checkpoint writer: the checkpoint file for `mark` was persisted (or not).
    CheckpointDone {
        mark: Seq,
        result: Result<(), JournalError>,
        reply: oneshot::Sender<Result<(), JournalError>>,
    },
    Shutdown,
}

impl Msg {
    /// Answers the message's caller with `err` (used when it cannot be served).
    pub(crate) fn fail(self, err: JournalError) {
        match self {
            Msg::Append { token, .. } | Msg::Barrier { token, .. } => {
                let _ = token.reply.send(Err(err));
            }
            Msg::Checkpoint { reply, .. } | Msg::CheckpointDone { reply, .. } => {
                let _ = reply.send(Err(err));
            }
            Msg::Mark { .. } | Msg::Shutdown => {}
        }
    }
}

const GROUP_USER_DATA: u64 = 1;
const SPARE_USER_DATA: u64 = 2;
/// Bytes per zero-fill write of a spare built in the background (small, so a group
/// queued behind it on the device waits little).
const SPARE_CHUNK: usize = 128 * 1024;
/// How often the committer polls a spare operation while watching for appends.
const SPARE_POLL: Duration = Duration::from_micros(200);
/// Messages taken from the channel per loop turn (bounds the time between turns).
const DRAIN_MAX: usize = 8192;
/// Groups of this many bytes or more (moving average) count as large: spares are then
/// only preallocated, not zero-filled (see segments.rs). A sixteenth of the segment
/// when that is smaller (the small segments of tests then take both paths).
const LARGE_GROUP_BYTES: u64 = 1 << 20;
/// How long to wait before retrying a failed spare-segment creation.
const SPARE_RETRY: Duration = Duration::from_secs(10);

/// A spare segment being pre-written in the background, one operation at a time,
/// interleaved with group writes (different files).
struct SpareBuild {
    file: FileId,
    n: u64,
    tmp: PathBuf,
    allocated: bool,
    /// Bytes zero-filled so far.
    written: u64,
    synced: bool,
    op_in_flight: bool,
    buf: Option<AlignedBuf>,
}

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

    fn stop(&mut self) {
        self.tx = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

struct InFlightGroup {
    id: u64,
    segment: u64,
    last_seq: Seq,
    records: usize,
    record_bytes: usize,
    padded: usize,
    started: Instant,
}

pub(crate) struct Committer {
    index: usize,
    dir: PathBuf,
    disk: Box<dyn Disk>,
    gc: GroupCommit<Token>,
    files: SegmentFiles,
    /// The segment being written and its open file.
    current: Option<(u64, FileId)>,
    /// Segments holding records: id -> (last durable seq, file length).
    live: BTreeMap<u64, (Seq, u64)>,
    mark: Seq,
    journal_id: u64,
    rx: Receiver<Msg>,
    admission: Arc<Admission>,
    metrics: Arc<JournalMetrics>,
    in_flight: Option<InFlightGroup>,
    checkpoints: VecDeque<(Seq, oneshot::Sender<Result<(), JournalError>>)>,
    shutdown: bool,
    closed_admission: bool,
    direct: bool,
    spare_failed_at: Option<Instant>,
    spare: Option<SpareBuild>,
    /// None: checkpoint files are written inline (manual drivers, deterministic).
    ckpt: Option<CkptWriter>,
    ckpt_pending: usize,
    /// Moving average of the padded bytes of recent groups.
    group_bytes_avg: f64,
}

impl Committer {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        index: usize,
        dir: PathBuf,
        disk: Box<dyn Disk>,
        gc: GroupCommit<Token>,
        files: SegmentFiles,
        live: BTreeMap<u64, (Seq, u64)>,
        mark: Seq,
        journal_id: u64,
        rx: Receiver<Msg>,
        admission: Arc<Admission>,
        metrics: Arc<JournalMetrics>,
        direct: bool,
        ckpt: Option<CkptWriter>,
    ) -> Committer {
        Committer {
            index,
            dir,
            disk,
            gc,
            files,
            current: None,
            live,
            mark,
            journal_id,
            rx,
            admission,
            metrics,
            in_flight: None,
            checkpoints: VecDeque::new(),
            shutdown: false,
            closed_admission: false,
            direct,
            spare_failed_at: None,
            spare: None,
            ckpt,
            ckpt_pending: 0,
            group_bytes_avg: 0.0,
        }
    }

    pub(crate) fn run(mut self) {
        while self.turn(true) {}
        self.finish();
    }

    /// True when nothing is pending, in flight or queued (channel empty).
    pub(crate) fn is_quiet(&self) -> bool {
        self.in_flight.is_none()
            && self.gc.is_idle()
            && self.checkpoints.is_empty()
            && self.rx.is_empty()
            && self.spare.is_none()
            && self.ckpt_pending == 0
    }

    fn spare_op_in_flight(&self) -> bool {
        self.spare.as_ref().is_some_and(|s| s.op_in_flight)
    }

    /// Waits for the background spare's operation, so that synchronous work
    /// (`run_one`) can follow without swallowing its completion.
    fn quiesce_spare(&mut self) {
        while self.spare_op_in_flight() {
            for c in self.disk.reap(1) {
                self.on_completion(c);
            }
        }
    }

    /// One turn of the committer loop. With `block`, waits for work when there is
    /// none; without, returns instead. Returns false once shut down and drained.
    pub(crate) fn turn(&mut self, block: bool) -> bool {
        for _ in 0..DRAIN_MAX {
            match self.rx.try_recv() {
                Ok(m) => self.handle(m),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    self.begin_shutdown();
                    break;
                }
            }
        }
        if self.in_flight.is_none() {
            self.run_checkpoints();
            if let Some(gw) = self.gc.poll(Instant::now()) {
                self.submit_group(gw);
            }
        }
        self.deliver_acks();
        self.step_spare();
        if self.in_flight.is_some() || (self.spare_op_in_flight() && !self.rx.is_empty()) {
            let completions = self.disk.reap(1);
            for c in completions {
                self.on_completion(c);
            }
            self.deliver_acks();
            return true;
        }
        if self.shutdown
            && self.gc.is_idle()
            && self.checkpoints.is_empty()
            && self.ckpt_pending == 0
        {
            self.abandon_spare();
            return false;
        }
        if self.spare_op_in_flight() {
            // Only the background spare is busy: poll its completion while watching
            // for appends, so one arriving now is not queued behind a spare chunk.
            if block {
                match self.rx.recv_timeout(SPARE_POLL) {
                    Ok(m) => self.handle(m),
                    Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => self.begin_shutdown(),
                }
                for c in self.disk.reap(0) {
                    self.on_completion(c);
                }
            } else {
                for c in self.disk.reap(1) {
                    self.on_completion(c);
                }
            }
            return true;
        }
        if !block {
            return true;
        }
        // Nothing in flight: wait for a message (or the held group's deadline).
        let msg = match self.gc.next_deadline() {
            Some(deadline) => match self.rx.recv_deadline(deadline) {
                Ok(m) => Some(m),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => {
                    self.begin_shutdown();
                    None
                }
            },
            None if self.gc.is_idle() => match self.rx.recv() {
                Ok(m) => Some(m),
                Err(_) => {
                    self.begin_shutdown();
                    None
                }
            },
            None => None,
        };
        if let Some(m) = msg {
            self.handle(m);
        }
        true
    }

    /// Closes the open segment (end of the thread).
    pub(crate) fn finish(&mut self) {
        if let Some(w) = self.ckpt.as_mut() {
            w.stop();
        }
        self.abandon_spare();
        if let Some((_, f)) = self.current.take() {
            if let Err(e) = self.disk.close(f) {
                tracing::warn!(dir = %self.dir.display(), "closing journal segment at shutdown: {e}");
            }
        }
    }

    fn begin_shutdown(&mut self) {
        self.shutdown = true;
        self.gc.set_flush_now(true);
    }

    fn handle(&mut self, m: Msg) {
        let now = Instant::now();
        match m {
            Msg::Append {
                record,
                encoded,
                token,
                enqueued,
            } => {
                let _ = self
                    .gc
                    .append_encoded(record, encoded, token, enqueued.min(now));
            }
            Msg::Barrier { token, enqueued } => self.gc.barrier(token, enqueued.min(now)),
            Msg::Mark { reply } => {
                let _ = reply.send(self.gc.last_assigned());
            }
            Msg::Checkpoint { mark, reply } => self.checkpoints.push_back((mark, reply)),
            Msg::CheckpointDone {
                mark,
                result,
                reply,
            } => {
                self.ckpt_pending = self.ckpt_pending.saturating_sub(1);
                let r = self.checkpoint_persisted(mark, result);
                let _ = reply.send(r);
            }
            Msg::Shutdown => self.begin_shutdown(),
        }
    }

    /// A fatal failure: log it here, stop the state machine, close admission.
    fn fatal(&mut self, reason: String) {
        tracing::error!(
            journal = self.index,
            dir = %self.dir.display(),
            "FATAL journal failure, no further appends are acknowledged: {reason}"
        );
        self.gc.fail(reason);
    }

    fn submit_group(&mut self, gw: GroupWrite) {
        let seg = gw.position.segment;
        if self.current.map(|c| c.0) != Some(seg) {
            if let Some((old, f)) = self.current.take() {
                if let Err(e) = self.disk.close(f) {
                    let reason = format!("closing journal segment {old}: {e}");
                    self.gc.complete(gw.id, Err(reason.clone()), Some(gw.buf));
                    self.fatal(reason);
                    return;
                }
            }
            self.quiesce_spare();
            if self.files.free.is_empty() {
                self.finish_spare_now();
            }
            match self.files.take_for(self.disk.as_mut(), seg) {
                Ok(f) => {
                    self.current = Some((seg, f));
                    self.live.insert(seg, (Seq(0), self.files.segment_bytes));
                    self.metrics
                        .segments_created
                        .store(self.files.created, Ordering::Relaxed);
                }
                Err(e) => {
                    let reason = format!("preparing journal segment {seg}: {e}");
                    self.gc.complete(gw.id, Err(reason.clone()), Some(gw.buf));
                    self.fatal(reason);
                    return;
                }
            }
        }
        let Some((_, file)) = self.current else {
            return;
        };
        let padded = gw.buf.len();
        self.in_flight = Some(InFlightGroup {
            id: gw.id,
            segment: seg,
            last_seq: gw.last_seq,
            records: gw.records,
            record_bytes: gw.record_bytes,
            padded,
            started: Instant::now(),
        });
        let op = Op::WriteDatasync {
            file,
            offset: gw.position.offset,
            buf: gw.buf,
        };
        if let Err(e) = self.disk.submit(GROUP_USER_DATA, op) {
            self.in_flight = None;
            let reason = format!(
                "submitting write+fdatasync of journal segment {seg} at {}: {e}",
                gw.position.offset
            );
            self.gc.complete(gw.id, Err(reason.clone()), None);
            self.fatal(reason);
        }
    }

    fn on_completion(&mut self, c: Completion) {
        if c.user_data == SPARE_USER_DATA {
            self.on_spare_completion(c);
            return;
        }
        if c.user_data != GROUP_USER_DATA {
            tracing::warn!(
                user_data = c.user_data,
                "unexpected journal disk completion"
            );
            return;
        }
        let Some(g) = self.in_flight.take() else {
            return;
        };
        let result = match c.result {
            Ok(n) if n == g.padded => Ok(()),
            Ok(n) => Err(format!(
                "short write+fdatasync of journal segment {}: {n} of {} bytes",
                g.segment, g.padded
            )),
            Err(e) => Err(format!(
                "write+fdatasync of journal segment {} ({} bytes, up to seq {}) failed: {e}",
                g.segment, g.padded, g.last_seq
            )),
        };
        match result {
            Ok(()) => {
                JournalMetrics::record_us(&self.metrics.sync_latency_us, g.started.elapsed());
                JournalMetrics::record_value(&self.metrics.group_records, g.records as u64);
                JournalMetrics::record_value(&self.metrics.group_bytes, g.record_bytes as u64);
                self.metrics
                    .bytes_written
                    .fetch_add(g.padded as u64, Ordering::Relaxed);
                self.metrics.groups.fetch_add(1, Ordering::Relaxed);
                self.group_bytes_avg = 0.75 * self.group_bytes_avg + 0.25 * g.padded as f64;
                if let Some(e) = self.live.get_mut(&g.segment) {
                    e.0 = g.last_seq;
                }
                // A large record's buffer goes back to the appenders' pool; the
                // state machine keeps ordinary group buffers itself.
                let mut buf = c.buf;
                if buf
                    .as_ref()
                    .is_some_and(|b| b.capacity() > self.gc.config().group_bytes_max * 2)
                {
                    if let Some(b) = buf.take() {
                        self.admission.return_large_buf(b);
                    }
                }
                self.gc.complete(g.id, Ok(()), buf);
            }
            Err(reason) => {
                self.gc.complete(g.id, Err(reason.clone()), c.buf);
                self.fatal(reason);
            }
        }
    }

    fn deliver_acks(&mut self) {
        if !self.gc.has_acks() {
            return;
        }
        let now = Instant::now();
        let mut bytes = 0usize;
        let mut records = 0usize;
        let mut ok_records = 0u64;
        let mut barriers = 0u64;
        let acks: Vec<_> = self.gc.drain_acks().collect();
        {
            let mut lat = self.metrics.append_latency_us.lock();
            for ack in &acks {
                if ack.result.is_ok() {
                    if ack.token.barrier {
                        barriers += 1;
                    } else {
                        ok_records += 1;
                        let us =
                            (now.saturating_duration_since(ack.enqueued).as_micros() as u64).max(1);
                        let _ = lat.record(us.min(3_600_000_000));
                    }
                }
            }
        }
        for ack in acks {
            bytes += ack.token.charge;
            records += 1;
            let r = ack.result.map_err(|e| match e {
                CommitError::Fatal(r) => JournalError::Fatal(r),
                CommitError::TooLarge { payload_len, max } => JournalError::InvalidInput(format!(
                    "record payload of {payload_len} bytes exceeds the maximum {max}"
                )),
            });
            let _ = ack.token.reply.send(r);
        }
        self.metrics
            .records_acked
            .fetch_add(ok_records, Ordering::Relaxed);
        self.metrics.barriers.fetch_add(barriers, Ordering::Relaxed);
        if let (Some(reason), false) = (self.gc.failed(), self.closed_admission) {
            self.closed_admission = true;
            self.admission.close(JournalError::Fatal(reason.clone()));
        }
        self.admission.release(bytes, records);
    }

    fn run_checkpoints(&mut self) {
        if !self.checkpoints.is_empty() && self.ckpt.is_none() {
            self.quiesce_spare();
        }
        while let Some((mark, reply)) = self.checkpoints.pop_front() {
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
                        let r = self.checkpoint_persisted(mark, written);
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

    /// Validates a checkpoint request; returns the record to persist, or None when
    /// the mark is not above the persisted one (nothing to do).
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
        if mark <= self.mark {
            return Ok(None);
        }
        Ok(Some(CheckpointRecord {
            journal_id: self.journal_id,
            mark: mark.0,
        }))
    }

    /// After the checkpoint file for `mark` was written (or failed to be): a failure
    /// is fatal; on success the mark advances and the segments wholly at or below it
    /// are recycled (never the current one), then the directory is synced.
    fn checkpoint_persisted(
        &mut self,
        mark: Seq,
        written: Result<(), JournalError>,
    ) -> Result<(), JournalError> {
        if let Err(e) = written {
            let reason = format!("persisting checkpoint mark {mark}: {e}");
            self.fatal(reason.clone());
            return Err(JournalError::Fatal(reason.into()));
        }
        if let Some(reason) = self.gc.failed() {
            return Err(JournalError::Fatal(reason.clone()));
        }
        if mark <= self.mark {
            return Ok(());
        }
        self.mark = mark;
        self.metrics.checkpoints.fetch_add(1, Ordering::Relaxed);
        let current = self.current.map(|c| c.0);
        let done: Vec<(u64, u64)> = self
            .live
            .iter()
            .filter(|(id, (last, _))| Some(**id) != current && *last <= mark)
            .map(|(id, (_, len))| (*id, *len))
            .collect();
        if done.is_empty() {
            return Ok(());
        }
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

    /// Keeps one spare segment ready: when the free pool is empty, starts building
    /// one in the background and advances it one operation at a time (fallocate,
    /// zero-fill chunks, fdatasync, then rename + directory sync). A failure here is
    /// not fatal (nothing acknowledged depends on it): the spare is dropped and
    /// retried later; a rotation with an empty pool creates a segment synchronously.
    fn step_spare(&mut self) {
        if self.spare.is_none() {
            if !self.files.free.is_empty()
                || self.gc.failed().is_some()
                || self.shutdown
                || self
                    .spare_failed_at
                    .is_some_and(|t| t.elapsed() < SPARE_RETRY)
            {
                return;
            }
            match self.files.begin_spare(self.disk.as_mut()) {
                Ok((file, n, tmp)) => {
                    self.spare = Some(SpareBuild {
                        file,
                        n,
                        tmp,
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
        let seg_bytes = self.files.segment_bytes;
        // Spare work fills the gaps: only while no group is in flight or pending,
        // unless the current segment is three quarters full (then it is needed soon).
        let urgent = self.gc.position().offset >= seg_bytes / 4 * 3;
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
            let mut buf = sp
                .buf
                .take()
                .filter(|b| b.capacity() >= n)
                .unwrap_or_else(|| AlignedBuf::with_capacity(SPARE_CHUNK));
            buf.set_len(n);
            buf.as_mut_slice().fill(0);
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

    fn on_spare_completion(&mut self, c: Completion) {
        let seg_bytes = self.files.segment_bytes;
        let Some(sp) = self.spare.as_mut() else {
            return;
        };
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
    fn finish_spare_now(&mut self) {
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
            .finish_spare(self.disk.as_mut(), sp.file, sp.n, &sp.tmp)
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
    fn abandon_spare(&mut self) {
        self.quiesce_spare();
        if let Some(sp) = self.spare.take() {
            let _ = self.disk.close(sp.file);
            let _ = self.disk.remove(&sp.tmp);
        }
    }
}
