//! The runtime API the bookie calls: [`Journal::open`] (replay, then one committer
//! thread per journal directory), appends (async or blocking), barriers
//! (force-ledger), checkpoint marks, shutdown.
//!
//! Admission (bounded memory): each journal directory has a budget of bytes and
//! records that are admitted and not yet acknowledged
//! ([`JournalConfig::in_flight_bytes_max`], [`JournalConfig::queue_records_max`]).
//! An append that does not fit waits, in call order, in the admission queue; its
//! [`AppendFuture`] resolves only once it was admitted and then acknowledged, and
//! [`AppendFuture::admitted`] lets a connection handler stop reading its socket
//! until the record is admitted (backpressure to TCP).
//!
//! Invariants:
//! - within one journal directory, sequence numbers follow call order of `append`
//!   (admission is FIFO, and admitted records enter the channel under its lock);
//! - the committer channel never holds more than `queue_records_max` appends plus a
//!   few control messages, so a `try_send` of an admitted append never finds it full;
//! - once a committer failed, its admission is closed with the `Fatal` error: every
//!   waiting and later append fails with it;
//! - while a committer waits for space its admission refuses with `NoSpace` (waiting
//!   appends too), and accepts again once it has a segment to write into.

use crate::commit::GroupCommit;
use crate::committer::{CkptWriter, Committer, Msg, Token};
use crate::config::JournalConfig;
use crate::error::JournalError;
use crate::format;
use crate::metrics::JournalMetrics;
use crate::open::open_dir;
use crate::record::{Record, MASTER_KEY_LEN};
use crate::replay::{Replay, ReplayedRecord};
use crate::space::SpaceState;
use crate::{journal_index_for, Seq};
use bk_disk::AlignedBuf;
use bk_disk::Disk;
use bytes::Bytes;
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;
use tokio::sync::oneshot;

/// Makes the `Disk` for journal directory `index` (each committer thread owns one:
/// an io_uring ring, a syscall disk, or a handle on a simulated file system).
pub type DiskFactory = Arc<dyn Fn(usize) -> std::io::Result<Box<dyn Disk>> + Send + Sync>;

/// A checkpoint mark: for each journal directory (by index), the seq up to which
/// the caller has put every record into the entry log; and, for
/// [`Journal::checkpoint`], the caller's storage generation that the mark relies on,
/// recorded in each checkpoint file (`format::CheckpointRecord::storage_epoch`; 0 =
/// none; a lower value than one recorded before is ignored). [`Journal::mark`] returns
/// 0 there: the caller sets it after its flush.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JournalMark {
    pub seqs: Vec<Seq>,
    pub storage_epoch: u64,
}

/// Bytes charged to the admission budget per append besides its encoded size.
const APPEND_OVERHEAD: usize = 64;
/// Channel slots for control messages (mark, checkpoint, shutdown).
const CONTROL_SLACK: usize = 64;

struct Waiting {
    msg: Msg,
    charge: usize,
    admitted: Option<oneshot::Sender<()>>,
}

struct AdmState {
    used_bytes: usize,
    used_records: usize,
    waiting: VecDeque<Waiting>,
    closed: Option<JournalError>,
    /// Set while the committer waits for space (not sticky, unlike `closed`).
    refusing: Option<JournalError>,
}

/// The admission budget of one journal directory (see the module docs).
pub(crate) struct Admission {
    state: Mutex<AdmState>,
    bytes_max: usize,
    records_max: usize,
    tx: crossbeam_channel::Sender<Msg>,
    metrics: Arc<JournalMetrics>,
    /// Group buffers of large records, handed back by the committer after their
    /// write and reused by appenders for the next large record (a fresh 5 MiB buffer
    /// per append costs page faults on the appender's thread). At most
    /// `LARGE_BUFS_MAX` buffers.
    large_bufs: Mutex<Vec<AlignedBuf>>,
}

/// Large-record group buffers kept for reuse per journal directory.
const LARGE_BUFS_MAX: usize = 4;

impl Admission {
    /// A kept buffer of at least `capacity` bytes (and not much more), if any.
    fn take_large_buf(&self, capacity: usize) -> Option<AlignedBuf> {
        let mut v = self.large_bufs.lock();
        let i = v
            .iter()
            .position(|b| b.capacity() >= capacity && b.capacity() <= capacity * 2)?;
        Some(v.swap_remove(i))
    }

    /// Keeps a large-record group buffer for reuse (dropped when enough are kept).
    pub(crate) fn return_large_buf(&self, buf: AlignedBuf) {
        let mut v = self.large_bufs.lock();
        if v.len() < LARGE_BUFS_MAX {
            v.push(buf);
        }
    }

    fn fits(&self, st: &AdmState, charge: usize) -> bool {
        st.used_records < self.records_max
            && (st.used_bytes + charge <= self.bytes_max || st.used_bytes == 0)
    }

    fn send(&self, msg: Msg) {
        match self.tx.try_send(msg) {
            Ok(()) => {}
            Err(crossbeam_channel::TrySendError::Full(m)) => {
                // Cannot happen for admitted appends (see the module invariants);
                // block briefly rather than drop.
                if let Err(e) = self.tx.send(m) {
                    e.into_inner().fail(JournalError::ShutDown);
                }
            }
            Err(crossbeam_channel::TrySendError::Disconnected(m)) => m.fail(JournalError::ShutDown),
        }
    }

    /// Admits `msg` now, or queues it; returns a receiver that fires at admission
    /// when it had to wait.
    fn submit(&self, msg: Msg, charge: usize) -> Option<oneshot::Receiver<()>> {
        let mut st = self.state.lock();
        if let Some(e) = &st.closed {
            let e = e.clone();
            drop(st);
            msg.fail(e);
            return None;
        }
        if let Some(e) = &st.refusing {
            let e = e.clone();
            drop(st);
            msg.fail(e);
            return None;
        }
        if st.waiting.is_empty() && self.fits(&st, charge) {
            st.used_bytes += charge;
            st.used_records += 1;
            self.gauges(&st);
            self.send(msg);
            return None;
        }
        let (tx, rx) = oneshot::channel();
        st.waiting.push_back(Waiting {
            msg,
            charge,
            admitted: Some(tx),
        });
        Some(rx)
    }

    fn gauges(&self, st: &AdmState) {
        self.metrics
            .memory_used_bytes
            .store(st.used_bytes as u64, Ordering::Relaxed);
        self.metrics
            .queue_depth
            .store(st.used_records as u64, Ordering::Relaxed);
    }

    /// Returns budget of acknowledged appends and admits waiting ones in order.
    pub(crate) fn release(&self, bytes: usize, records: usize) {
        let mut st = self.state.lock();
        st.used_bytes = st.used_bytes.saturating_sub(bytes);
        st.used_records = st.used_records.saturating_sub(records);
        while let Some(w) = st.waiting.front() {
            if st.closed.is_some() || st.refusing.is_some() || !self.fits(&st, w.charge) {
                break;
            }
            let Some(mut w) = st.waiting.pop_front() else {
                break;
            };
            st.used_bytes += w.charge;
            st.used_records += 1;
            self.send(w.msg);
            if let Some(a) = w.admitted.take() {
                let _ = a.send(());
            }
        }
        self.gauges(&st);
    }

    /// While `err` is Some, refuses every waiting and later append with it (the
    /// committer waits for space); None accepts appends again.
    pub(crate) fn refuse(&self, err: Option<JournalError>) {
        let waiting: Vec<Waiting> = {
            let mut st = self.state.lock();
            st.refusing = err.clone();
            if err.is_some() {
                st.waiting.drain(..).collect()
            } else {
                Vec::new()
            }
        };
        if let Some(err) = err {
            for w in waiting {
                w.msg.fail(err.clone());
            }
        }
    }

    /// Refuses every waiting and later append with `err`.
    pub(crate) fn close(&self, err: JournalError) {
        let waiting: Vec<Waiting> = {
            let mut st = self.state.lock();
            if st.closed.is_none() {
                st.closed = Some(err.clone());
            }
            st.waiting.drain(..).collect()
        };
        for w in waiting {
            w.msg.fail(err.clone());
        }
    }
}

/// The acknowledgement of one append or barrier. Resolves to the record's seq (for
/// a barrier: the seq of the last record appended before it) once durable.
pub struct AppendFuture {
    rx: oneshot::Receiver<Result<Seq, JournalError>>,
    admitted: Option<oneshot::Receiver<()>>,
}

impl AppendFuture {
    /// The result if it is already there (non-blocking; for drivers of
    /// [`Journal::open_manual`]). After it returned Some, the future is spent.
    pub fn try_result(&mut self) -> Option<Result<Seq, JournalError>> {
        match self.rx.try_recv() {
            Ok(r) => Some(r),
            Err(oneshot::error::TryRecvError::Empty) => None,
            Err(oneshot::error::TryRecvError::Closed) => Some(Err(JournalError::ShutDown)),
        }
    }

    fn ready(r: Result<Seq, JournalError>) -> AppendFuture {
        let (tx, rx) = oneshot::channel();
        let _ = tx.send(r);
        AppendFuture { rx, admitted: None }
    }

    /// Resolves once the append is admitted into the committer's queue (at once
    /// when the budget allowed it at call time). A connection handler awaits this
    /// before reading its next request: that is the backpressure.
    pub async fn admitted(&mut self) {
        if let Some(rx) = self.admitted.take() {
            let _ = rx.await;
        }
    }

    /// Blocks the calling thread until the append is acknowledged. Not to be called
    /// from inside an async runtime.
    pub fn wait(self) -> Result<Seq, JournalError> {
        self.rx
            .blocking_recv()
            .unwrap_or(Err(JournalError::ShutDown))
    }
}

impl Future for AppendFuture {
    type Output = Result<Seq, JournalError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match Pin::new(&mut self.rx).poll(cx) {
            Poll::Ready(Ok(r)) => Poll::Ready(r),
            Poll::Ready(Err(_)) => Poll::Ready(Err(JournalError::ShutDown)),
            Poll::Pending => Poll::Pending,
        }
    }
}

struct DirHandle {
    dir: PathBuf,
    admission: Arc<Admission>,
    tx: crossbeam_channel::Sender<Msg>,
    thread: Option<std::thread::JoinHandle<()>>,
    metrics: Arc<JournalMetrics>,
}

/// The journal of a bookie: one write-ahead log per journal directory.
pub struct Journal {
    dirs: Vec<DirHandle>,
    config: JournalConfig,
    space: Arc<SpaceState>,
}

/// The committer of one journal directory when the caller drives it
/// ([`Journal::open_manual`]).
pub struct Driver(Committer);

impl Driver {
    /// One non-blocking turn: take queued messages, cut/submit a group when the
    /// device is free, reap one completion when a group is in flight, send acks.
    pub fn turn(&mut self) {
        self.0.turn(false);
    }

    /// Turns until nothing is queued, pending or in flight (at most `max_turns`).
    pub fn run_until_quiet(&mut self, max_turns: usize) {
        for _ in 0..max_turns {
            self.0.turn(false);
            if self.0.is_quiet() {
                return;
            }
        }
    }

    /// Nothing queued, pending or in flight.
    pub fn is_quiet(&self) -> bool {
        self.0.is_quiet()
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        self.0.finish();
    }
}

impl Journal {
    /// Opens (creating when empty) the journal directories `dirs`: replays each one
    /// in order, calling `visit` for every record above its checkpoint mark, then
    /// starts one committer thread per directory.
    ///
    /// `visit` returning Err aborts the open with [`JournalError::ReplayAborted`].
    /// Mid-log corruption aborts it with [`JournalError::Corruption`].
    pub fn open(
        dirs: &[PathBuf],
        config: JournalConfig,
        disks: DiskFactory,
        visit: &mut dyn FnMut(&ReplayedRecord) -> Result<(), String>,
    ) -> Result<(Journal, Replay), JournalError> {
        let (j, r, drivers) = Self::open_inner(dirs, config, disks, visit, true)?;
        debug_assert!(drivers.is_empty());
        Ok((j, r))
    }

    /// Like [`Journal::open`] but starts no thread: the caller runs each journal's
    /// committer by calling [`Driver::turn`]. For deterministic simulation tests
    /// (with a simulated disk, one thread drives everything, so a seed replays
    /// exactly). The blocking calls (`append_blocking`, `mark_blocking`, ...) would
    /// wait forever unless another thread turns the drivers.
    pub fn open_manual(
        dirs: &[PathBuf],
        config: JournalConfig,
        disks: DiskFactory,
        visit: &mut dyn FnMut(&ReplayedRecord) -> Result<(), String>,
    ) -> Result<(Journal, Replay, Vec<Driver>), JournalError> {
        Self::open_inner(dirs, config, disks, visit, false)
    }

    fn open_inner(
        dirs: &[PathBuf],
        config: JournalConfig,
        disks: DiskFactory,
        visit: &mut dyn FnMut(&ReplayedRecord) -> Result<(), String>,
        threads: bool,
    ) -> Result<(Journal, Replay, Vec<Driver>), JournalError> {
        config.validate()?;
        if dirs.is_empty() {
            return Err(JournalError::InvalidInput("no journal directory".into()));
        }
        let mut opened = Vec::with_capacity(dirs.len());
        for (i, dir) in dirs.iter().enumerate() {
            let disk = disks(i).map_err(|e| JournalError::io("create disk", dir, e))?;
            opened.push(open_dir(disk, i, dir, &config, visit)?);
        }
        let space = SpaceState::new(dirs.len());
        let mut replay = Replay::default();
        let mut handles = Vec::with_capacity(dirs.len());
        let mut drivers = Vec::new();
        for (i, o) in opened.into_iter().enumerate() {
            replay.dirs.push(o.replay.clone());
            let metrics = Arc::new(JournalMetrics::default());
            metrics
                .segments_created
                .store(o.files.created, Ordering::Relaxed);
            let (tx, rx) = crossbeam_channel::bounded(config.queue_records_max + CONTROL_SLACK);
            let admission = Arc::new(Admission {
                state: Mutex::new(AdmState {
                    used_bytes: 0,
                    used_records: 0,
                    waiting: VecDeque::new(),
                    closed: None,
                    refusing: None,
                }),
                bytes_max: config.in_flight_bytes_max,
                records_max: config.queue_records_max,
                large_bufs: Mutex::new(Vec::new()),
                tx: tx.clone(),
                metrics: metrics.clone(),
            });
            let gc: GroupCommit<Token> =
                GroupCommit::new(config.commit_config(o.journal_id), o.start);
            let ckpt = if threads {
                let disk = disks(i).map_err(|e| JournalError::io("create disk", &dirs[i], e))?;
                Some(
                    CkptWriter::spawn(i, dirs[i].clone(), disk, config.direct_io, tx.clone())
                        .map_err(|e| JournalError::io("spawn checkpoint thread", &dirs[i], e))?,
                )
            } else {
                None
            };
            let no_space = o.no_space.clone();
            let mut committer = Committer::new(
                i,
                o.replay.dir.clone(),
                o.disk,
                gc,
                o.files,
                o.live,
                o.mark,
                o.journal_id,
                o.newest,
                rx,
                admission.clone(),
                metrics.clone(),
                config.direct_io,
                ckpt,
                space.clone(),
                config.no_space_retry,
            );
            committer.keep_storage_epoch(o.storage_epoch);
            committer.ack_delivery = config.ack_delivery.clone();
            if let Some(reason) = no_space {
                committer.start_waiting_for_space(reason);
            }
            let thread = if threads {
                Some(
                    std::thread::Builder::new()
                        .name(format!("journal-{i}"))
                        .spawn(move || committer.run())
                        .map_err(|e| JournalError::io("spawn committer thread", &dirs[i], e))?,
                )
            } else {
                drivers.push(Driver(committer));
                None
            };
            handles.push(DirHandle {
                dir: dirs[i].clone(),
                admission,
                tx,
                thread,
                metrics,
            });
        }
        Ok((
            Journal {
                dirs: handles,
                config,
                space,
            },
            replay,
            drivers,
        ))
    }

    /// Number of journal directories.
    pub fn journals(&self) -> usize {
        self.dirs.len()
    }

    /// The directory of journal `index`.
    pub fn dir(&self, index: usize) -> Option<&Path> {
        self.dirs.get(index).map(|d| d.dir.as_path())
    }

    /// The journal index ledger `ledger` maps to.
    pub fn index_for(&self, ledger: u64) -> usize {
        journal_index_for(ledger, self.dirs.len())
    }

    /// The metrics of journal `index`.
    pub fn metrics(&self, index: usize) -> Option<&Arc<JournalMetrics>> {
        self.dirs.get(index).map(|d| &d.metrics)
    }

    pub fn config(&self) -> &JournalConfig {
        &self.config
    }

    /// True while some journal directory waits for space: its appends fail with
    /// [`JournalError::NoSpace`] (not written), and it accepts them again by itself
    /// once a segment can be prepared (space freed, or a checkpoint recycled one).
    pub fn is_disk_full(&self) -> bool {
        self.space.is_full()
    }

    /// Follows [`Journal::is_disk_full`]: every change is sent, in order.
    pub fn disk_full_changes(&self) -> tokio::sync::watch::Receiver<bool> {
        self.space.subscribe()
    }

    /// Appends `record` to the journal of `ledger`. Never blocks: the returned
    /// future resolves once the record is durable (or with the error that stopped
    /// it). Seqs follow call order within a journal directory.
    pub fn append(&self, ledger: u64, record: Record) -> AppendFuture {
        self.append_to(self.index_for(ledger), record)
    }

    /// Appends to journal directory `index` directly.
    pub fn append_to(&self, index: usize, record: Record) -> AppendFuture {
        let Some(d) = self.dirs.get(index) else {
            return AppendFuture::ready(Err(JournalError::InvalidInput(format!(
                "no journal {index}"
            ))));
        };
        let max = self.config.record_payload_max();
        if record.payload_len() > max {
            return AppendFuture::ready(Err(JournalError::InvalidInput(format!(
                "record payload of {} bytes exceeds the maximum {max} (segment_bytes)",
                record.payload_len()
            ))));
        }
        let (tx, rx) = oneshot::channel();
        let encoded_len = format::record_encoded_len(&record);
        let charge = encoded_len + APPEND_OVERHEAD;
        // A record too large to share a group is copied into its aligned group
        // buffer here, on the appender's thread, so that the copy overlaps the group
        // the committer has in flight instead of delaying the next one.
        let encoded = if encoded_len >= self.config.group_bytes_max {
            let want = bk_disk::round_up(format::GROUP_HEADER_LEN + encoded_len, bk_disk::SECTOR);
            format::pre_encode_alone(&record, d.admission.take_large_buf(want))
        } else {
            None
        };
        let msg = Msg::Append {
            record,
            encoded,
            token: Token {
                reply: tx,
                charge,
                barrier: false,
            },
            enqueued: Instant::now(),
        };
        let admitted = d.admission.submit(msg, charge);
        AppendFuture { rx, admitted }
    }

    /// Journals an entry (see [`Record::entry`]).
    pub fn append_entry(&self, ledger: u64, entry: u64, data: Bytes) -> AppendFuture {
        self.append(ledger, Record::entry(ledger, entry, data))
    }

    /// Journals a fence.
    pub fn append_fence(&self, ledger: u64) -> AppendFuture {
        self.append(ledger, Record::fence(ledger))
    }

    /// Journals an explicit LAC body.
    pub fn append_explicit_lac(&self, ledger: u64, body: Bytes) -> AppendFuture {
        self.append(ledger, Record::explicit_lac(ledger, body))
    }

    /// Journals a ledger master key.
    pub fn append_master_key(&self, ledger: u64, key: [u8; MASTER_KEY_LEN]) -> AppendFuture {
        self.append(ledger, Record::master_key(ledger, key))
    }

    /// A barrier in the journal of `ledger` (FORCE_LEDGER): resolves once every
    /// record appended to that journal before it is durable. Writes nothing.
    pub fn force_ledger(&self, ledger: u64) -> AppendFuture {
        let index = self.index_for(ledger);
        let Some(d) = self.dirs.get(index) else {
            return AppendFuture::ready(Err(JournalError::ShutDown));
        };
        let (tx, rx) = oneshot::channel();
        let msg = Msg::Barrier {
            token: Token {
                reply: tx,
                charge: APPEND_OVERHEAD,
                barrier: true,
            },
            enqueued: Instant::now(),
        };
        let admitted = d.admission.submit(msg, APPEND_OVERHEAD);
        AppendFuture { rx, admitted }
    }

    /// Blocking append (for threads outside an async runtime).
    pub fn append_blocking(&self, ledger: u64, record: Record) -> Result<Seq, JournalError> {
        self.append(ledger, record).wait()
    }

    fn control<T>(
        &self,
        index: usize,
        make: impl FnOnce(oneshot::Sender<T>) -> Msg,
    ) -> Result<oneshot::Receiver<T>, JournalError> {
        let d = self
            .dirs
            .get(index)
            .ok_or_else(|| JournalError::InvalidInput(format!("no journal {index}")))?;
        let (tx, rx) = oneshot::channel();
        d.tx.send(make(tx)).map_err(|_| JournalError::ShutDown)?;
        Ok(rx)
    }

    /// The current mark: per journal, the seq of the last record appended (admitted)
    /// before this call. Contract for checkpoints: the caller must have put every
    /// record up to this mark into the entry log before calling (the Java bookie
    /// inserts into ledger storage before journaling, which gives this).
    pub async fn mark(&self) -> Result<JournalMark, JournalError> {
        let mut rxs = Vec::with_capacity(self.dirs.len());
        for i in 0..self.dirs.len() {
            rxs.push(self.control(i, |reply| Msg::Mark { reply })?);
        }
        let mut seqs = Vec::with_capacity(rxs.len());
        for rx in rxs {
            seqs.push(rx.await.map_err(|_| JournalError::ShutDown)?);
        }
        Ok(JournalMark {
            seqs,
            storage_epoch: 0,
        })
    }

    /// Blocking [`Journal::mark`].
    pub fn mark_blocking(&self) -> Result<JournalMark, JournalError> {
        let mut seqs = Vec::with_capacity(self.dirs.len());
        for i in 0..self.dirs.len() {
            let rx = self.control(i, |reply| Msg::Mark { reply })?;
            seqs.push(rx.blocking_recv().map_err(|_| JournalError::ShutDown)?);
        }
        Ok(JournalMark {
            seqs,
            storage_epoch: 0,
        })
    }

    fn send_checkpoints(
        &self,
        mark: &JournalMark,
    ) -> Result<Vec<oneshot::Receiver<Result<(), JournalError>>>, JournalError> {
        if mark.seqs.len() != self.dirs.len() {
            return Err(JournalError::InvalidInput(format!(
                "mark has {} seqs for {} journals",
                mark.seqs.len(),
                self.dirs.len()
            )));
        }
        let mut rxs = Vec::with_capacity(self.dirs.len());
        for (i, seq) in mark.seqs.iter().enumerate() {
            let seq = *seq;
            let storage_epoch = mark.storage_epoch;
            rxs.push(self.control(i, |reply| Msg::Checkpoint {
                mark: seq,
                storage_epoch,
                reply,
            })?);
        }
        Ok(rxs)
    }

    /// Persists `mark` (each journal its own checkpoint file, written durably) and
    /// then recycles the segments wholly at or below it. Call only after the entry
    /// log holding every record up to `mark` is durable. A failure is fatal for that
    /// journal (its checkpoint file could not be synced).
    pub async fn checkpoint(&self, mark: &JournalMark) -> Result<(), JournalError> {
        let rxs = self.send_checkpoints(mark)?;
        let mut first_err = None;
        for rx in rxs {
            if let Err(e) = rx.await.unwrap_or(Err(JournalError::ShutDown)) {
                first_err.get_or_insert(e);
            }
        }
        first_err.map_or(Ok(()), Err)
    }

    /// Blocking [`Journal::checkpoint`].
    pub fn checkpoint_blocking(&self, mark: &JournalMark) -> Result<(), JournalError> {
        let rxs = self.send_checkpoints(mark)?;
        let mut first_err = None;
        for rx in rxs {
            if let Err(e) = rx.blocking_recv().unwrap_or(Err(JournalError::ShutDown)) {
                first_err.get_or_insert(e);
            }
        }
        first_err.map_or(Ok(()), Err)
    }

    /// Stops accepting appends (they fail with `ShutDown`), writes and acknowledges
    /// what was already admitted, and joins the committer threads. Blocking.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        for d in &self.dirs {
            d.admission.close(JournalError::ShutDown);
            let _ = d.tx.send(Msg::Shutdown);
        }
        for d in &mut self.dirs {
            if let Some(t) = d.thread.take() {
                if t.join().is_err() {
                    tracing::error!(dir = %d.dir.display(), "journal committer thread panicked");
                }
            }
        }
    }
}

impl Drop for Journal {
    fn drop(&mut self) {
        self.stop();
    }
}
