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
//!   error) until shutdown. Except "no space" where nothing was made durable (see
//!   `space`): appends then fail with `JournalError::NoSpace` until space returns,
//!   and a checkpoint that found no space leaves the mark where it was;
//! - budget is returned to admission only after the ack was sent.
//!
//! Where the code lives:
//! - this file: the messages ([`Msg`], [`Token`]) and the committer loop
//!   ([`Committer::turn`]): draining the channel, the order of the loop's work, waiting;
//! - `group`: submitting a group write, its completion, delivering acknowledgements;
//! - `checkpoint`: the checkpoint writer thread and what a persisted checkpoint frees
//!   (segment recycling);
//! - `spare`: building a spare segment in the background between group writes;
//! - `space`: waiting for space after "no space", and retrying until it returns.

mod checkpoint;
mod group;
mod space;
mod spare;

pub(crate) use checkpoint::CkptWriter;

use crate::commit::GroupCommit;
use crate::error::JournalError;
use crate::journal::Admission;
use crate::metrics::JournalMetrics;
use crate::newest::Newest;
use crate::record::Record;
use crate::segments::SegmentFiles;
use crate::space::SpaceState;
use crate::Seq;
use bk_disk::{AlignedBuf, Disk, FileId};
use crossbeam_channel::{Receiver, RecvTimeoutError, TryRecvError};
use group::InFlightGroup;
use space::SpaceWait;
use spare::SpareBuild;
use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
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
        storage_epoch: u64,
        reply: oneshot::Sender<Result<(), JournalError>>,
    },
    /// From the checkpoint writer: the checkpoint file for `mark` was persisted (or not).
    CheckpointDone {
        mark: Seq,
        /// The `storage_epoch` the file records.
        storage_epoch: u64,
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
/// How often the committer polls a spare operation while watching for appends.
const SPARE_POLL: Duration = Duration::from_micros(200);
/// Messages taken from the channel per loop turn (bounds the time between turns).
const DRAIN_MAX: usize = 8192;

/// A checkpoint asked of the committer: mark, storage epoch, where to answer.
type CheckpointRequest = (Seq, u64, oneshot::Sender<Result<(), JournalError>>);

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
    /// The highest seq of a group whose write+fdatasync succeeded (or that replay found
    /// and made durable at open): what a checkpoint file records as `durable`.
    durable: Seq,
    journal_id: u64,
    /// The newest-segment record: rewritten at each segment switch before the first
    /// group there; the segment it names is never recycled.
    newest: Newest,
    rx: Receiver<Msg>,
    admission: Arc<Admission>,
    metrics: Arc<JournalMetrics>,
    in_flight: Option<InFlightGroup>,
    checkpoints: VecDeque<CheckpointRequest>,
    /// The highest `storage_epoch` asked for (or read at open): what the next checkpoint
    /// file records.
    storage_epoch: u64,
    /// The `storage_epoch` of the newest checkpoint file persisted (or read at open). A
    /// checkpoint asked for with a higher epoch is written even when its mark has not
    /// moved: GC and compaction change the ledger state without any new journal record,
    /// and until the epoch is recorded an older copy of the state file would be accepted.
    persisted_storage_epoch: u64,
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
    /// Where the bookie sees that this directory waits for space.
    space: Arc<SpaceState>,
    no_space_retry: Duration,
    /// Set while waiting for space (appends refused with `NoSpace`).
    space_wait: Option<SpaceWait>,
    /// Where each group's acknowledgements go (`crate::ack`); None: sent here.
    pub(crate) ack_delivery: Option<crate::AckDelivery>,
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
        newest: Newest,
        rx: Receiver<Msg>,
        admission: Arc<Admission>,
        metrics: Arc<JournalMetrics>,
        direct: bool,
        ckpt: Option<CkptWriter>,
        space: Arc<SpaceState>,
        no_space_retry: Duration,
    ) -> Committer {
        Committer {
            index,
            dir,
            disk,
            gc,
            files,
            current: None,
            durable: live
                .values()
                .map(|(last, _)| *last)
                .max()
                .unwrap_or(mark)
                .max(mark),
            live,
            mark,
            journal_id,
            newest,
            rx,
            admission,
            metrics,
            in_flight: None,
            checkpoints: VecDeque::new(),
            storage_epoch: 0,
            persisted_storage_epoch: 0,
            shutdown: false,
            closed_admission: false,
            direct,
            spare_failed_at: None,
            spare: None,
            ckpt,
            ckpt_pending: 0,
            group_bytes_avg: 0.0,
            space,
            no_space_retry,
            space_wait: None,
            ack_delivery: None,
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

    /// One turn of the committer loop. With `block`, waits for work when there is
    /// none; without, returns instead. Returns false once shut down and drained.
    pub(crate) fn turn(&mut self, block: bool) -> bool {
        // One clock read for the messages drained together: each add's queue latency is
        // measured to the start of the drain that took it (a message that arrived during
        // the drain reads as zero), not one `clock_gettime` per add.
        let mut drained_at = None;
        for _ in 0..DRAIN_MAX {
            match self.rx.try_recv() {
                Ok(m) => self.handle(m, *drained_at.get_or_insert_with(Instant::now)),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    self.begin_shutdown();
                    break;
                }
            }
        }
        if self.in_flight.is_none() {
            self.run_checkpoints();
            self.retry_space();
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
                    Ok(m) => self.handle(m, Instant::now()),
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
        // Nothing in flight: wait for a message (or the held group's deadline, or the
        // next try for space).
        let deadline = match (self.gc.next_deadline(), self.space_retry_at()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let msg = match deadline {
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
            self.handle(m, Instant::now());
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

    /// Handles one message taken from the queue at `now`.
    fn handle(&mut self, m: Msg, now: Instant) {
        match m {
            Msg::Append {
                record,
                encoded,
                token,
                enqueued,
            } => {
                JournalMetrics::record_us(
                    &self.metrics.queue_latency_us,
                    now.saturating_duration_since(enqueued),
                );
                let _ = self
                    .gc
                    .append_encoded(record, encoded, token, enqueued.min(now));
            }
            Msg::Barrier { token, enqueued } => self.gc.barrier(token, enqueued.min(now)),
            Msg::Mark { reply } => {
                let _ = reply.send(self.gc.last_assigned());
            }
            Msg::Checkpoint {
                mark,
                storage_epoch,
                reply,
            } => self.checkpoints.push_back((mark, storage_epoch, reply)),
            Msg::CheckpointDone {
                mark,
                storage_epoch,
                result,
                reply,
            } => {
                self.ckpt_pending = self.ckpt_pending.saturating_sub(1);
                let r = self.checkpoint_persisted(mark, storage_epoch, result);
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
}
