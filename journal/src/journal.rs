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
//!   waiting and later append fails with it.

use crate::commit::{GroupCommit, GroupCommitConfig, LogPosition, Start};
use crate::committer::{Committer, Msg, Token};
use crate::error::JournalError;
use crate::format::{self, classify_name, DirEntryKind};
use crate::metrics::JournalMetrics;
use crate::record::{Record, MASTER_KEY_LEN};
use crate::replay::{self, DirReplay, Replay, ReplayedRecord, SegFile};
use crate::segments::SegmentFiles;
use crate::{journal_index_for, Seq};
use bk_disk::{Disk, OpenOptions, SECTOR};
use bytes::Bytes;
use parking_lot::Mutex;
use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// Makes the `Disk` for journal directory `index` (each committer thread owns one:
/// an io_uring ring, a syscall disk, or a handle on a simulated file system).
pub type DiskFactory = Arc<dyn Fn(usize) -> std::io::Result<Box<dyn Disk>> + Send + Sync>;

/// Journal settings. Stock `bk_server.conf` keys map onto the fields as noted.
#[derive(Clone, Debug)]
pub struct JournalConfig {
    /// `journalMaxGroupWaitMSec`. None (the default): greedy, a group is written as
    /// soon as the device is free (the natural batching of one group in flight).
    /// Some(d): with the device free, hold a group until a cap is reached or its
    /// oldest record waited `d` (the Java behaviour; adds up to `d` latency).
    /// The bookie maps the stock key to Some only when it is set explicitly > 0 and
    /// `journalFlushWhenQueueEmpty` is false.
    pub group_wait_max: Option<Duration>,
    /// `journalBufferedWritesThreshold` (default 512 KiB): cap on the record bytes of
    /// one group (a single larger record forms a group alone).
    pub group_bytes_max: usize,
    /// `journalMaxGroupedEntriesToCommit` / `journalBufferedEntriesThreshold`
    /// (0 = no cap, the default): cap on records per group.
    pub group_records_max: usize,
    /// `journalMaxSizeMB` scaled down (default 128 MiB): size of every segment file,
    /// a multiple of 4096. Also bounds a record: payload <= segment_bytes - 76.
    pub segment_bytes: u64,
    /// `journalMaxMemorySizeMb` (default 64 MiB): bytes admitted and not yet
    /// acknowledged, per journal directory; beyond it appends wait.
    pub in_flight_bytes_max: usize,
    /// `journalQueueSize` (default 10000): appends admitted and not yet acknowledged,
    /// per journal directory.
    pub queue_records_max: usize,
    /// `journalMaxBackups` (default 2 here): free segment files kept for reuse;
    /// further segments freed by a checkpoint are deleted.
    pub free_segments_max: usize,
    /// Open segment files with O_DIRECT (default true; the sim ignores it).
    pub direct_io: bool,
}

impl Default for JournalConfig {
    fn default() -> Self {
        JournalConfig {
            group_wait_max: None,
            group_bytes_max: 512 * 1024,
            group_records_max: 0,
            segment_bytes: 128 << 20,
            in_flight_bytes_max: 64 << 20,
            queue_records_max: 10_000,
            free_segments_max: 2,
            direct_io: true,
        }
    }
}

/// The stock `bk_server.conf` journal keys, as the bookie read them (None: absent).
#[derive(Clone, Debug, Default)]
pub struct StockJournalKeys {
    /// `journalMaxGroupWaitMSec`
    pub journal_max_group_wait_msec: Option<i64>,
    /// `journalFlushWhenQueueEmpty`
    pub journal_flush_when_queue_empty: Option<bool>,
    /// `journalBufferedWritesThreshold` (bytes)
    pub journal_buffered_writes_threshold: Option<u64>,
    /// `journalMaxGroupedEntriesToCommit` (or `journalBufferedEntriesThreshold`)
    pub journal_max_grouped_entries_to_commit: Option<u64>,
    /// `journalMaxSizeMB`
    pub journal_max_size_mb: Option<u64>,
    /// `journalMaxMemorySizeMb`
    pub journal_max_memory_size_mb: Option<u64>,
    /// `journalQueueSize`
    pub journal_queue_size: Option<u64>,
    /// `journalMaxBackups`
    pub journal_max_backups: Option<u64>,
}

impl JournalConfig {
    /// Maps the stock keys onto a config (defaults for absent keys):
    /// - group wait: greedy unless `journalMaxGroupWaitMSec` is set > 0 and
    ///   `journalFlushWhenQueueEmpty` is not true (the Java default 2 ms is not
    ///   applied when the key is absent: on a free device it is pure latency);
    /// - `journalMaxSizeMB` is the segment size, capped at 256 MiB (segments are reused,
    ///   so a smaller size only means more, cheaper recycling);
    /// - `journalMaxBackups` is the number of free segments kept for reuse.
    pub fn from_stock(k: &StockJournalKeys) -> JournalConfig {
        let d = JournalConfig::default();
        let wait = match (
            k.journal_max_group_wait_msec,
            k.journal_flush_when_queue_empty,
        ) {
            (Some(ms), flush) if ms > 0 && flush != Some(true) => {
                Some(Duration::from_millis(ms as u64))
            }
            _ => None,
        };
        let mb = |v: u64| (v.saturating_mul(1 << 20)) as usize;
        JournalConfig {
            group_wait_max: wait,
            group_bytes_max: k
                .journal_buffered_writes_threshold
                .filter(|v| *v > 0)
                .map_or(d.group_bytes_max, |v| v as usize),
            group_records_max: k
                .journal_max_grouped_entries_to_commit
                .map_or(d.group_records_max, |v| v as usize),
            segment_bytes: k
                .journal_max_size_mb
                .filter(|v| *v >= 1)
                .map_or(d.segment_bytes, |v| (v << 20).min(256 << 20)),
            in_flight_bytes_max: k
                .journal_max_memory_size_mb
                .filter(|v| *v > 0)
                .map_or(d.in_flight_bytes_max, mb),
            queue_records_max: k
                .journal_queue_size
                .filter(|v| *v > 0)
                .map_or(d.queue_records_max, |v| v as usize),
            free_segments_max: k
                .journal_max_backups
                .map_or(d.free_segments_max, |v| v as usize),
            direct_io: d.direct_io,
        }
    }

    fn validate(&self) -> Result<(), JournalError> {
        let bad = |m: &str| Err(JournalError::InvalidInput(m.to_string()));
        if !self.segment_bytes.is_multiple_of(SECTOR as u64)
            || self.segment_bytes < 4 * SECTOR as u64
        {
            return bad("segment_bytes must be a multiple of 4096 and at least 16 KiB");
        }
        if self.segment_bytes > u32::MAX as u64 {
            return bad("segment_bytes must be below 4 GiB");
        }
        if self.group_bytes_max == 0 || self.in_flight_bytes_max == 0 || self.queue_records_max == 0
        {
            return bad("group_bytes_max, in_flight_bytes_max and queue_records_max must be > 0");
        }
        Ok(())
    }

    /// Largest record payload accepted.
    pub fn record_payload_max(&self) -> usize {
        self.commit_config(0).record_payload_max()
    }

    fn commit_config(&self, journal_id: u64) -> GroupCommitConfig {
        GroupCommitConfig {
            journal_id,
            segment_bytes: self.segment_bytes,
            group_bytes_max: self.group_bytes_max,
            group_records_max: self.group_records_max,
            group_wait_max: self.group_wait_max,
        }
    }
}

/// A checkpoint mark: for each journal directory (by index), the seq up to which
/// the caller has put every record into the entry log.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JournalMark {
    pub seqs: Vec<Seq>,
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
}

/// The admission budget of one journal directory (see the module docs).
pub(crate) struct Admission {
    state: Mutex<AdmState>,
    bytes_max: usize,
    records_max: usize,
    tx: crossbeam_channel::Sender<Msg>,
    metrics: Arc<JournalMetrics>,
}

impl Admission {
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
            if st.closed.is_some() || !self.fits(&st, w.charge) {
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

/// What `open_dir` hands to the committer thread.
struct Opened {
    replay: DirReplay,
    disk: Box<dyn Disk>,
    files: SegmentFiles,
    live: BTreeMap<u64, (Seq, u64)>,
    start: Start,
    journal_id: u64,
    mark: Seq,
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
                }),
                bytes_max: config.in_flight_bytes_max,
                records_max: config.queue_records_max,
                tx: tx.clone(),
                metrics: metrics.clone(),
            });
            let gc: GroupCommit<Token> =
                GroupCommit::new(config.commit_config(o.journal_id), o.start);
            let committer = Committer::new(
                i,
                o.replay.dir.clone(),
                o.disk,
                gc,
                o.files,
                o.live,
                o.mark,
                o.journal_id,
                rx,
                admission.clone(),
                metrics.clone(),
                config.direct_io,
            );
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
        let charge = format::record_encoded_len(&record) + APPEND_OVERHEAD;
        let msg = Msg::Append {
            record,
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
        Ok(JournalMark { seqs })
    }

    /// Blocking [`Journal::mark`].
    pub fn mark_blocking(&self) -> Result<JournalMark, JournalError> {
        let mut seqs = Vec::with_capacity(self.dirs.len());
        for i in 0..self.dirs.len() {
            let rx = self.control(i, |reply| Msg::Mark { reply })?;
            seqs.push(rx.blocking_recv().map_err(|_| JournalError::ShutDown)?);
        }
        Ok(JournalMark { seqs })
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
            rxs.push(self.control(i, |reply| Msg::Checkpoint { mark: seq, reply })?);
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

fn corruption(path: &Path, reason: String) -> JournalError {
    JournalError::Corruption {
        path: path.to_path_buf(),
        offset: 0,
        reason,
    }
}

/// Replays one journal directory and prepares its segment files for writing.
fn open_dir(
    mut disk: Box<dyn Disk>,
    index: usize,
    dir: &Path,
    config: &JournalConfig,
    visit: &mut dyn FnMut(&ReplayedRecord) -> Result<(), String>,
) -> Result<Opened, JournalError> {
    let d: &mut dyn Disk = disk.as_mut();
    d.create_dir_all(dir)
        .map_err(|e| JournalError::io("create journal directory", dir, e))?;
    let names = d
        .list_dir(dir)
        .map_err(|e| JournalError::io("list journal directory", dir, e))?;
    let mut segments = Vec::new();
    let mut free = Vec::new();
    let mut has_checkpoint = false;
    let mut dir_dirty = false;
    for p in &names {
        let Some(name) = p.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let path = dir.join(name);
        match classify_name(name) {
            DirEntryKind::Segment(id) => segments.push((id, path)),
            DirEntryKind::Free(n) => free.push((n, path)),
            DirEntryKind::Checkpoint => has_checkpoint = true,
            DirEntryKind::Temporary => {
                d.remove(&path)
                    .map_err(|e| JournalError::io("remove temporary file", &path, e))?;
                dir_dirty = true;
            }
            DirEntryKind::Unknown => {
                tracing::warn!(path = %path.display(), "unknown file in journal directory left alone")
            }
        }
    }
    segments.sort();
    free.sort();
    let mut created = false;
    let ckpt = if has_checkpoint {
        replay::read_checkpoint(d, dir, config.direct_io)?
    } else if segments.is_empty() {
        let mut journal_id = 0u64;
        while journal_id == 0 {
            journal_id = rand::random();
        }
        let c = format::CheckpointRecord {
            journal_id,
            mark: 0,
        };
        replay::write_checkpoint(d, dir, c, config.direct_io)?;
        created = true;
        c
    } else {
        return Err(corruption(
            &dir.join(format::CHECKPOINT_FILE),
            "journal segments exist but the checkpoint file is missing".into(),
        ));
    };
    let journal_id = ckpt.journal_id;
    let mark = Seq(ckpt.mark);

    let mut segs = Vec::with_capacity(segments.len());
    for (id, path) in &segments {
        match SegFile::open(d, *id, path.clone(), config.direct_io) {
            Ok(s) => segs.push(s),
            Err(e) => {
                for s in &mut segs {
                    s.close(d);
                }
                return Err(e);
            }
        }
    }
    let mut visit_rec = |seq: Seq, kind, payload| {
        visit(&ReplayedRecord {
            journal_index: index,
            seq,
            kind,
            payload,
        })
    };
    let walked = replay::walk(d, index, &mut segs, journal_id, mark, &mut visit_rec);
    // Make what replay handed out durable before anything new is written after it
    // (see `resync_last_group`): the last group (when it matters, i.e. it holds
    // records above the mark) and the checkpoint file itself (its rename may not
    // have been synced by a life that stopped on a failed sync).
    let resynced = match &walked {
        Ok(w) => match w.last_group {
            Some((k, off, len)) if segs[k].last_seq.is_some_and(|l| l > mark) => {
                replay::resync_last_group(d, &mut segs[k], off, len, config.direct_io)
            }
            _ => Ok(()),
        },
        Err(_) => Ok(()),
    };
    for s in &mut segs {
        s.close(d);
    }
    let w = walked?;
    resynced?;
    if !created {
        replay::write_checkpoint(d, dir, ckpt, config.direct_io)?;
    }

    let mut files = SegmentFiles {
        dir: dir.to_path_buf(),
        segment_bytes: config.segment_bytes,
        direct: config.direct_io,
        free: Vec::new(),
        next_free_n: free.last().map(|(n, _)| n + 1).unwrap_or(0),
        free_max: config.free_segments_max,
        created: 0,
        recycled: 0,
    };
    // Free files of the wrong size (config changed) are removed.
    for (n, path) in free {
        let len = file_len(d, &path, config.direct_io)?;
        if len == config.segment_bytes && files.free.len() < files.free_max {
            files.free.push((n, path));
        } else {
            d.remove(&path)
                .map_err(|e| JournalError::io("remove free segment", &path, e))?;
            dir_dirty = true;
        }
    }
    // Live: segments holding a valid record above the mark. Everything else holds
    // nothing replay needs: recycle it.
    let mut live = BTreeMap::new();
    for s in &segs {
        match s.last_seq {
            Some(last) if last > mark => {
                live.insert(s.id, (last, s.len));
            }
            _ => {
                files.recycle(d, &s.path, s.len)?;
                dir_dirty = true;
            }
        }
    }
    if dir_dirty {
        files.sync_dir(d)?;
    }
    let write_segment = segments.last().map(|(id, _)| id + 1).unwrap_or(1);
    let next_seq = Seq(w.last_seq.0.max(mark.0).max(w.highest_claimed.0) + 1);
    let start = Start {
        position: LogPosition {
            segment: write_segment,
            offset: 0,
        },
        prev_seq: w.last_seq,
        next_seq,
    };
    if files.free.is_empty() {
        files.make_spare(d)?;
    }
    let replay = DirReplay {
        dir: dir.to_path_buf(),
        journal_id,
        checkpoint_mark: mark,
        records: w.records,
        payload_bytes: w.payload_bytes,
        bytes_read: w.bytes_read,
        last_seq: w.last_seq,
        next_seq,
        end: w.end,
        torn_tail: w.torn_tail,
        damaged_below_mark: w.damaged_below_mark,
        write_segment,
        created,
    };
    tracing::info!(
        dir = %dir.display(),
        records = replay.records,
        last_seq = replay.last_seq.0,
        mark = mark.0,
        torn_tail = replay.torn_tail.is_some(),
        "journal replayed"
    );
    Ok(Opened {
        replay,
        disk,
        files,
        live,
        start,
        journal_id,
        mark,
    })
}

fn file_len(d: &mut dyn Disk, path: &Path, direct: bool) -> Result<u64, JournalError> {
    let f = d
        .open(
            path,
            OpenOptions {
                create: false,
                create_new: false,
                write: false,
                direct,
            },
        )
        .map_err(|e| JournalError::io("open free segment", path, e))?;
    let len = d.file_len(f);
    let _ = d.close(f);
    len.map_err(|e| JournalError::io("size free segment", path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stock_keys_map_onto_the_config() {
        let c = JournalConfig::from_stock(&StockJournalKeys::default());
        assert_eq!(c.group_wait_max, None);
        assert_eq!(c.group_bytes_max, 512 * 1024);
        let c = JournalConfig::from_stock(&StockJournalKeys {
            journal_max_group_wait_msec: Some(1),
            journal_buffered_writes_threshold: Some(65536),
            journal_max_grouped_entries_to_commit: Some(100),
            journal_max_size_mb: Some(2048),
            journal_queue_size: Some(500),
            ..StockJournalKeys::default()
        });
        assert_eq!(c.group_wait_max, Some(Duration::from_millis(1)));
        assert_eq!(c.group_bytes_max, 65536);
        assert_eq!(c.group_records_max, 100);
        assert_eq!(c.segment_bytes, 256 << 20);
        assert_eq!(c.queue_records_max, 500);
        assert!(c.validate().is_ok());
        let c = JournalConfig::from_stock(&StockJournalKeys {
            journal_max_group_wait_msec: Some(2),
            journal_flush_when_queue_empty: Some(true),
            ..StockJournalKeys::default()
        });
        assert_eq!(c.group_wait_max, None);
    }
}
