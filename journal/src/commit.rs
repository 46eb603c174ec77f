//! `GroupCommit`: the sans-I/O group-commit state machine of one journal directory.
//!
//! Inputs: appends (a record, or a barrier that writes nothing) with a caller token,
//! and the completion of the group write it asked for. Outputs: [`GroupWrite`]s (the
//! bytes of one group and where they go; the driver performs them as one
//! `Op::WriteDatasync`) and [`Ack`]s (token + result) in append order.
//!
//! Invariants (checked by the property tests in journal/tests/group_commit_props.rs):
//! - at most one group is in flight; the next group is cut only after the previous
//!   one completed successfully (replay's torn-tail rule depends on this);
//! - acks come out in append order; an `Ok` ack is produced only after the
//!   completion of the group holding the record (or, for a barrier, of every group
//!   holding an earlier record) reported success;
//! - after a failed completion (or [`GroupCommit::fail`]) every in-flight and pending
//!   append, and every later one, is acked with the same fatal error, never `Ok`;
//! - greedy: with nothing in flight and no `group_wait_max`, [`GroupCommit::poll`]
//!   cuts a group from whatever is pending;
//! - a group holds at most `group_records_max` records and `group_bytes_max` bytes of
//!   records, except that a single record larger than the cap forms a group alone;
//! - groups start at sector-aligned offsets, never overlap, and never cross the end
//!   of a segment (a group that does not fit goes to offset 0 of the next segment);
//!   no byte of an acknowledged group is ever rewritten;
//! - a group the driver reports as "no space" ([`GroupCommit::no_space`]: its segment
//!   could not be prepared, or its write failed with ENOSPC before any sync) is acked
//!   with `NoSpace`, never `Ok`, and so is every pending append; the log then resumes
//!   at offset 0 of a fresh segment chained to the last *durable* group (`prev_seq` =
//!   its last seq; the failed seqs are skipped, as after a crash), so the bytes of the
//!   failed group are never overwritten and replay sees the same shape as after a
//!   crash. Until [`GroupCommit::clear_no_space`] every append is acked `NoSpace`;
//! - segments may be shorter than `segment_bytes` (a full file system): the driver
//!   tells the length of the file it opened ([`GroupCommit::set_segment_len`]); a
//!   group cut for a new segment assumes `segment_bytes`, and the driver opens a file
//!   at least as long as that group.
//!
//! A record may come pre-encoded as a group of its own ([`GroupCommit::append_encoded`],
//! done by the journal for records larger than `group_bytes_max` on the appender's
//! thread): when the cut makes it a group alone, that buffer is the group's and only
//! the group and record headers are written into it, so the committer does not copy
//! a 5 MiB payload while the device waits.

use crate::format::{self, GroupHeader, GROUP_HEADER_LEN};
use crate::record::Record;
use crate::Seq;
use bk_disk::{round_up, AlignedBuf, SECTOR};
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Where a group goes: a segment id and a sector-aligned byte offset in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LogPosition {
    pub segment: u64,
    pub offset: u64,
}

/// Limits and identity the state machine needs.
#[derive(Clone, Debug)]
pub struct GroupCommitConfig {
    /// Written into every group header.
    pub journal_id: u64,
    /// Size of every segment file (a multiple of SECTOR).
    pub segment_bytes: u64,
    /// Cap on the record bytes of one group (a larger single record goes alone).
    pub group_bytes_max: usize,
    /// Cap on the records of one group; 0 = no cap.
    pub group_records_max: usize,
    /// None: greedy (cut as soon as nothing is in flight). Some(d): with nothing in
    /// flight, hold a group until a cap is reached or its oldest record waited `d`.
    pub group_wait_max: Option<Duration>,
}

impl GroupCommitConfig {
    /// The largest payload a record may have so that its group fits in a segment.
    pub fn record_payload_max(&self) -> usize {
        (self.segment_bytes as usize)
            .saturating_sub(GROUP_HEADER_LEN + format::RECORD_HEADER_LEN)
            .min(u32::MAX as usize - GROUP_HEADER_LEN - format::RECORD_HEADER_LEN)
    }
}

/// Where the state machine starts (after replay).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Start {
    /// Where the first group goes (offset 0 of a fresh segment after recovery).
    pub position: LogPosition,
    /// The seq of the last valid record in the log (the first group's `prev_seq`).
    pub prev_seq: Seq,
    /// The seq the next record gets (> prev_seq; may skip numbers after a recovery).
    pub next_seq: Seq,
}

/// Why an append was not acknowledged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CommitError {
    /// A write or sync failed (or the driver failed): the journal stopped.
    Fatal(Arc<str>),
    /// The record cannot be written (too large for a segment).
    TooLarge { payload_len: usize, max: usize },
    /// The journal's file system is full: the record was not written (not fatal).
    NoSpace(Arc<str>),
}

/// One acknowledgement.
#[derive(Debug)]
pub struct Ack<T> {
    pub token: T,
    /// The record's seq; for a barrier, the seq of the last record appended before it.
    pub result: Result<Seq, CommitError>,
    /// When the append entered the state machine (for the append latency metric).
    pub enqueued: Instant,
    /// Encoded bytes of the record (0 for a barrier).
    pub bytes: usize,
}

/// A group to write with one `Op::WriteDatasync`.
#[derive(Debug)]
pub struct GroupWrite {
    /// Identifies the group in [`GroupCommit::complete`].
    pub id: u64,
    pub position: LogPosition,
    /// Sector-aligned, zero-padded bytes of the group.
    pub buf: AlignedBuf,
    pub first_seq: Seq,
    pub last_seq: Seq,
    /// Records in the group.
    pub records: usize,
    /// Bytes of records (headers + payloads) in the group.
    pub record_bytes: usize,
}

enum Item<T> {
    Record {
        seq: Seq,
        rec: Record,
        /// The record pre-encoded as a group of its own (`format::pre_encode_alone`).
        encoded: Option<AlignedBuf>,
        token: T,
        enqueued: Instant,
    },
    Barrier {
        after: Seq,
        token: T,
        enqueued: Instant,
    },
    /// An append refused as invalid, kept in the queue so its ack stays in order.
    Rejected {
        error: CommitError,
        token: T,
        enqueued: Instant,
    },
}

/// Largest group buffer kept for reuse by every ordinary group (4 MiB per journal).
const GROUP_BUF_REUSE_MAX: usize = 4 << 20;

struct InFlight<T> {
    id: u64,
    /// (token, result once the group is durable, enqueued, bytes) in append order.
    items: Vec<(T, Result<Seq, CommitError>, Instant, usize)>,
    last_seq: Seq,
}

/// The group-commit state machine. `T` is the caller's token (a oneshot sender in
/// the runtime, a number in tests).
pub struct GroupCommit<T> {
    cfg: GroupCommitConfig,
    pending: VecDeque<Item<T>>,
    pending_records: usize,
    pending_record_bytes: usize,
    in_flight: Option<InFlight<T>>,
    position: LogPosition,
    /// Seq of the last record placed in a group.
    prev_seq: Seq,
    next_seq: Seq,
    durable_seq: Seq,
    acks: VecDeque<Ack<T>>,
    failed: Option<Arc<str>>,
    next_group_id: u64,
    spare_buf: Option<AlignedBuf>,
    flush_now: bool,
    /// Length of the file of the segment at `position` (`segment_bytes` until the
    /// driver says otherwise).
    segment_len: u64,
    /// Set while the driver waits for space: every append is acked `NoSpace`.
    no_space: Option<Arc<str>>,
}

impl<T> GroupCommit<T> {
    pub fn new(cfg: GroupCommitConfig, start: Start) -> GroupCommit<T> {
        assert!(
            (cfg.segment_bytes as usize).is_multiple_of(SECTOR)
                && cfg.segment_bytes as usize >= 2 * SECTOR
        );
        assert!((start.position.offset as usize).is_multiple_of(SECTOR));
        assert!(start.next_seq > start.prev_seq);
        let cfg_segment_bytes = cfg.segment_bytes;
        GroupCommit {
            cfg,
            pending: VecDeque::new(),
            pending_records: 0,
            pending_record_bytes: 0,
            in_flight: None,
            position: start.position,
            prev_seq: start.prev_seq,
            next_seq: start.next_seq,
            durable_seq: start.prev_seq,
            acks: VecDeque::new(),
            failed: None,
            next_group_id: 1,
            spare_buf: None,
            flush_now: false,
            segment_len: cfg_segment_bytes,
            no_space: None,
        }
    }

    pub fn config(&self) -> &GroupCommitConfig {
        &self.cfg
    }

    /// Capacity of the reused buffer of ordinary groups: room for `group_bytes_max` of
    /// records (a group cut at the cap may pass it by its last record's header), at most
    /// [`GROUP_BUF_REUSE_MAX`]; groups larger than that get a buffer of their own size.
    fn ordinary_group_buf_bytes(&self) -> usize {
        round_up(
            self.cfg.group_bytes_max + GROUP_HEADER_LEN + format::RECORD_HEADER_LEN,
            SECTOR,
        )
        .min(GROUP_BUF_REUSE_MAX)
    }

    /// Appends a record; returns its seq. On `Err` the token has been acked with
    /// the same error (so acks stay in append order).
    pub fn append(&mut self, rec: Record, token: T, now: Instant) -> Result<Seq, CommitError> {
        self.append_encoded(rec, None, token, now)
    }

    /// [`GroupCommit::append`] with the record already encoded as a group of its own
    /// by the appender (`format::pre_encode_alone`). When the record does form a group
    /// alone (it is larger than `group_bytes_max`), that buffer becomes the group's,
    /// and the cut only fills in the two headers; otherwise the buffer is ignored.
    pub fn append_encoded(
        &mut self,
        rec: Record,
        encoded: Option<AlignedBuf>,
        token: T,
        now: Instant,
    ) -> Result<Seq, CommitError> {
        if let Some(reason) = &self.failed {
            let e = CommitError::Fatal(reason.clone());
            self.push_ack(token, Err(e.clone()), now, 0);
            return Err(e);
        }
        if let Some(reason) = &self.no_space {
            let e = CommitError::NoSpace(reason.clone());
            self.push_ack(token, Err(e.clone()), now, 0);
            return Err(e);
        }
        let max = self.cfg.record_payload_max();
        if rec.payload_len() > max {
            let e = CommitError::TooLarge {
                payload_len: rec.payload_len(),
                max,
            };
            // Acked in append order: after everything appended before it.
            if self.pending.is_empty() && self.in_flight.is_none() {
                self.push_ack(token, Err(e.clone()), now, 0);
            } else {
                self.pending.push_back(Item::Rejected {
                    error: e.clone(),
                    token,
                    enqueued: now,
                });
            }
            return Err(e);
        }
        let seq = self.next_seq;
        self.next_seq = Seq(seq.0 + 1);
        self.pending_records += 1;
        self.pending_record_bytes += format::record_encoded_len(&rec);
        self.pending.push_back(Item::Record {
            seq,
            rec,
            encoded,
            token,
            enqueued: now,
        });
        Ok(seq)
    }

    /// Appends a barrier: acked once every record appended before it is durable.
    /// Writes nothing.
    pub fn barrier(&mut self, token: T, now: Instant) {
        if let Some(reason) = &self.failed {
            let e = CommitError::Fatal(reason.clone());
            self.push_ack(token, Err(e), now, 0);
            return;
        }
        if let Some(reason) = &self.no_space {
            let e = CommitError::NoSpace(reason.clone());
            self.push_ack(token, Err(e), now, 0);
            return;
        }
        let after = Seq(self.next_seq.0 - 1);
        if self.pending.is_empty() && self.in_flight.is_none() {
            self.push_ack(token, Ok(after), now, 0);
        } else {
            self.pending.push_back(Item::Barrier {
                after,
                token,
                enqueued: now,
            });
        }
    }

    fn push_ack(
        &mut self,
        token: T,
        result: Result<Seq, CommitError>,
        enqueued: Instant,
        bytes: usize,
    ) {
        self.acks.push_back(Ack {
            token,
            result,
            enqueued,
            bytes,
        });
    }

    /// Forces the next group to be cut without waiting for `group_wait_max`
    /// (shutdown, or a caller that wants everything durable now).
    pub fn set_flush_now(&mut self, on: bool) {
        self.flush_now = on;
    }

    /// Acks barriers and rejected appends at the head of the queue when nothing is
    /// in flight: everything before them is durable.
    fn ack_leading_barriers(&mut self) {
        while self.in_flight.is_none() {
            match self.pending.front() {
                Some(Item::Barrier { .. }) | Some(Item::Rejected { .. }) => {}
                _ => return,
            }
            match self.pending.pop_front() {
                Some(Item::Barrier {
                    after,
                    token,
                    enqueued,
                }) => self.push_ack(token, Ok(after), enqueued, 0),
                Some(Item::Rejected {
                    error,
                    token,
                    enqueued,
                }) => self.push_ack(token, Err(error), enqueued, 0),
                _ => return,
            }
        }
    }

    /// When [`GroupCommit::poll`] should next be called if nothing else happens
    /// (only with `group_wait_max` and a held group).
    pub fn next_deadline(&self) -> Option<Instant> {
        let wait = self.cfg.group_wait_max?;
        if self.in_flight.is_some() || self.failed.is_some() {
            return None;
        }
        self.pending.iter().find_map(|i| match i {
            Item::Record { enqueued, .. } => Some(*enqueued + wait),
            Item::Barrier { .. } | Item::Rejected { .. } => None,
        })
    }

    fn caps_reached(&self) -> bool {
        self.pending_record_bytes >= self.cfg.group_bytes_max
            || (self.cfg.group_records_max > 0
                && self.pending_records >= self.cfg.group_records_max)
    }

    /// Returns the next group to write, if one should be written now.
    pub fn poll(&mut self, now: Instant) -> Option<GroupWrite> {
        if self.failed.is_some() || self.no_space.is_some() {
            return None;
        }
        self.ack_leading_barriers();
        if self.in_flight.is_some() || self.pending_records == 0 {
            return None;
        }
        if let (Some(wait), false) = (self.cfg.group_wait_max, self.flush_now) {
            let oldest = self.next_deadline().map(|d| d - wait);
            let waited_enough = oldest.is_none_or(|o| now.saturating_duration_since(o) >= wait);
            if !waited_enough && !self.caps_reached() {
                return None;
            }
        }
        Some(self.cut())
    }

    /// How many pending items (records and the barriers among them) form the next
    /// group given `avail` bytes left in the segment: (items, records, record bytes).
    fn choose(&self, avail: u64) -> (usize, usize, usize) {
        let mut take_items = 0usize;
        let mut records = 0usize;
        let mut bytes = 0usize;
        for (i, item) in self.pending.iter().enumerate() {
            if let Item::Record { rec, .. } = item {
                let sz = format::record_encoded_len(rec);
                if records > 0 {
                    let over_bytes = bytes + sz > self.cfg.group_bytes_max;
                    let over_count =
                        self.cfg.group_records_max > 0 && records >= self.cfg.group_records_max;
                    if over_bytes || over_count {
                        break;
                    }
                }
                if round_up(GROUP_HEADER_LEN + bytes + sz, SECTOR) as u64 > avail {
                    break;
                }
                bytes += sz;
                records += 1;
            }
            take_items = i + 1;
        }
        (take_items, records, bytes)
    }

    /// Chooses the group's records (caps, segment fit) and encodes it.
    fn cut(&mut self) -> GroupWrite {
        let seg = self.cfg.segment_bytes;
        let left = self.segment_len.saturating_sub(self.position.offset);
        let (mut take_items, mut records, mut bytes) = self.choose(left);
        if records == 0 {
            // The first record does not fit in what is left of this segment.
            self.position = LogPosition {
                segment: self.position.segment + 1,
                offset: 0,
            };
            self.segment_len = seg;
            (take_items, records, bytes) = self.choose(seg);
            assert!(records > 0, "a record larger than a segment passed append");
        }
        // Trailing barriers right after the last chosen record join the group only
        // if they were counted; barriers after a record that was left out stay.
        let total = GROUP_HEADER_LEN + bytes;
        let padded = round_up(total, SECTOR);
        // A group of one pre-encoded record: its buffer is the group's (no copy here).
        let pre = if records == 1 {
            self.pending
                .iter_mut()
                .take(take_items)
                .find_map(|i| match i {
                    Item::Record { encoded, .. } => Some(encoded.take()),
                    _ => None,
                })
                .flatten()
                .filter(|b| b.len() == total && b.capacity() >= padded)
        } else {
            None
        };
        let pre_encoded = pre.is_some();
        let mut buf = match pre {
            Some(b) => b,
            None => {
                // One buffer serves every ordinary group: sized for the largest one, it
                // is reused whatever this group's size (a fresh buffer per group size
                // cost the committer a page fault per 4 KiB it copied in).
                let floor = self.ordinary_group_buf_bytes();
                let mut b = match self.spare_buf.take() {
                    Some(b)
                        if b.capacity() >= padded
                            && (b.capacity() <= padded * 4 || b.capacity() <= floor) =>
                    {
                        b
                    }
                    _ => AlignedBuf::with_capacity(padded.max(floor)),
                };
                b.set_len(0);
                // Reserve the header space; fill it once the records are known.
                let ok = b.extend_from_slice(&[0u8; GROUP_HEADER_LEN]);
                debug_assert!(ok);
                b
            }
        };
        let mut items = Vec::with_capacity(take_items);
        let mut first_seq = None;
        let mut last_seq = self.prev_seq;
        for _ in 0..take_items {
            let Some(item) = self.pending.pop_front() else {
                break;
            };
            match item {
                Item::Record {
                    seq,
                    rec,
                    token,
                    enqueued,
                    ..
                } => {
                    let sz = format::record_encoded_len(&rec);
                    if pre_encoded {
                        let at = GROUP_HEADER_LEN..GROUP_HEADER_LEN + format::RECORD_HEADER_LEN;
                        buf.as_mut_slice()[at]
                            .copy_from_slice(&format::encode_record_header(seq.0, &rec));
                    } else {
                        let ok = format::encode_record(&mut buf, seq.0, &rec);
                        assert!(ok, "group buffer sized for its records");
                    }
                    first_seq.get_or_insert(seq);
                    last_seq = seq;
                    self.pending_records -= 1;
                    self.pending_record_bytes -= sz;
                    items.push((token, Ok(seq), enqueued, sz));
                }
                Item::Barrier {
                    after,
                    token,
                    enqueued,
                } => items.push((token, Ok(after), enqueued, 0)),
                Item::Rejected {
                    error,
                    token,
                    enqueued,
                } => items.push((token, Err(error), enqueued, 0)),
            }
        }
        let first_seq = first_seq.unwrap_or(last_seq);
        let header = GroupHeader {
            journal_id: self.cfg.journal_id,
            segment_id: self.position.segment,
            prev_seq: self.prev_seq.0,
            first_seq: first_seq.0,
            record_count: records as u32,
            records_len: bytes as u32,
        };
        buf.as_mut_slice()[..GROUP_HEADER_LEN].copy_from_slice(&header.encode());
        debug_assert_eq!(buf.len(), total);
        buf.pad_to_sector();
        debug_assert_eq!(buf.len(), padded);
        let position = self.position;
        self.position.offset += padded as u64;
        self.prev_seq = last_seq;
        let id = self.next_group_id;
        self.next_group_id += 1;
        self.in_flight = Some(InFlight {
            id,
            items,
            last_seq,
        });
        GroupWrite {
            id,
            position,
            buf,
            first_seq,
            last_seq,
            records,
            record_bytes: bytes,
        }
    }

    /// Reports the completion of group `id`. `buf` (the group's buffer, handed back
    /// by the disk) is kept for reuse. A failure is fatal.
    pub fn complete(&mut self, id: u64, result: Result<(), String>, buf: Option<AlignedBuf>) {
        let Some(fl) = self.in_flight.take() else {
            self.fail(format!("completion of group {id} with no group in flight"));
            return;
        };
        if fl.id != id {
            let msg = format!(
                "completion of group {id} while group {} is in flight",
                fl.id
            );
            self.in_flight = Some(fl);
            self.fail(msg);
            return;
        }
        if let Some(b) = buf {
            self.spare_buf = Some(b);
        }
        match result {
            Ok(()) => {
                if self.failed.is_some() {
                    // Already failed by the driver while in flight: no Ok after that.
                    let e = CommitError::Fatal(self.failed.clone().unwrap_or_else(|| "".into()));
                    for (token, _, enq, b) in fl.items {
                        self.push_ack(token, Err(e.clone()), enq, b);
                    }
                    return;
                }
                self.durable_seq = fl.last_seq;
                for (token, r, enq, b) in fl.items {
                    self.push_ack(token, r, enq, b);
                }
                self.ack_leading_barriers();
            }
            Err(reason) => {
                self.in_flight = Some(fl);
                self.fail(reason);
            }
        }
    }

    /// Reports that group `id` (in flight) was not written for lack of space: its
    /// segment could not be prepared, or its write failed with ENOSPC/EDQUOT before
    /// any sync, so none of it is durable. Its appends and every pending one are acked
    /// `NoSpace` (never `Ok`); writing resumes at offset 0 of `resume_segment` chained
    /// to the last durable group; every later append is acked `NoSpace` until
    /// [`GroupCommit::clear_no_space`]. `buf` (the group's buffer) is kept for reuse.
    pub fn no_space(
        &mut self,
        id: u64,
        reason: String,
        resume_segment: u64,
        buf: Option<AlignedBuf>,
    ) {
        let fl = match self.in_flight.take() {
            Some(fl) if fl.id == id => fl,
            other => {
                self.in_flight = other;
                self.fail(format!(
                    "no-space report for group {id}, not the one in flight"
                ));
                return;
            }
        };
        if let Some(b) = buf {
            self.spare_buf = Some(b);
        }
        let reason: Arc<str> = reason.into();
        let e = CommitError::NoSpace(reason.clone());
        for (token, r, enq, b) in fl.items {
            let r = match r {
                Err(rejected) => Err(rejected),
                Ok(_) => Err(e.clone()),
            };
            self.push_ack(token, r, enq, b);
        }
        while let Some(item) = self.pending.pop_front() {
            match item {
                Item::Record {
                    token,
                    enqueued,
                    rec,
                    ..
                } => {
                    let b = format::record_encoded_len(&rec);
                    self.push_ack(token, Err(e.clone()), enqueued, b)
                }
                Item::Barrier {
                    token, enqueued, ..
                } => self.push_ack(token, Err(e.clone()), enqueued, 0),
                Item::Rejected {
                    error,
                    token,
                    enqueued,
                } => self.push_ack(token, Err(error), enqueued, 0),
            }
        }
        self.pending_records = 0;
        self.pending_record_bytes = 0;
        self.prev_seq = self.durable_seq;
        debug_assert!(resume_segment >= self.position.segment);
        self.position = LogPosition {
            segment: resume_segment,
            offset: 0,
        };
        self.segment_len = self.cfg.segment_bytes;
        self.no_space = Some(reason);
    }

    /// Refuses appends for lack of space with nothing in flight or pending (a driver
    /// that found no segment to write into at start-up).
    pub fn refuse_for_space(&mut self, reason: String) {
        debug_assert!(self.is_idle());
        self.no_space = Some(reason.into());
    }

    /// Space is back: appends are accepted again.
    pub fn clear_no_space(&mut self) {
        self.no_space = None;
    }

    /// The reason appends are refused for lack of space, while they are.
    pub fn no_space_reason(&self) -> Option<&Arc<str>> {
        self.no_space.as_ref()
    }

    /// The length of the file of the segment the next group goes to, as opened by
    /// the driver (at least the bytes already written into it).
    pub fn set_segment_len(&mut self, len: u64) {
        debug_assert!(len >= self.position.offset);
        self.segment_len = len.max(self.position.offset);
    }

    /// Length of the current segment's file (see [`GroupCommit::set_segment_len`]).
    pub fn segment_len(&self) -> u64 {
        self.segment_len
    }

    /// Stops the journal: the in-flight group and every pending append are acked
    /// with `Fatal(reason)`, and so is every later append.
    pub fn fail(&mut self, reason: String) {
        if self.failed.is_none() {
            self.failed = Some(reason.into());
        }
        let e = CommitError::Fatal(self.failed.clone().unwrap_or_else(|| "".into()));
        if let Some(fl) = self.in_flight.take() {
            for (token, _, enq, b) in fl.items {
                self.push_ack(token, Err(e.clone()), enq, b);
            }
        }
        while let Some(item) = self.pending.pop_front() {
            match item {
                Item::Record {
                    token,
                    enqueued,
                    rec,
                    ..
                } => {
                    let b = format::record_encoded_len(&rec);
                    self.push_ack(token, Err(e.clone()), enqueued, b)
                }
                Item::Barrier {
                    token, enqueued, ..
                }
                | Item::Rejected {
                    token, enqueued, ..
                } => self.push_ack(token, Err(e.clone()), enqueued, 0),
            }
        }
        self.pending_records = 0;
        self.pending_record_bytes = 0;
    }

    /// Takes the acks produced so far, in append order.
    pub fn drain_acks(&mut self) -> std::collections::vec_deque::Drain<'_, Ack<T>> {
        self.acks.drain(..)
    }

    pub fn has_acks(&self) -> bool {
        !self.acks.is_empty()
    }

    /// The fatal reason, once failed.
    pub fn failed(&self) -> Option<&Arc<str>> {
        self.failed.as_ref()
    }

    /// Id of the group in flight.
    pub fn in_flight(&self) -> Option<u64> {
        self.in_flight.as_ref().map(|f| f.id)
    }

    /// Nothing pending and nothing in flight.
    pub fn is_idle(&self) -> bool {
        self.pending.is_empty() && self.in_flight.is_none()
    }

    /// Appends (records and barriers) not yet in a group.
    pub fn pending_len(&self) -> usize {
        self.pending.len()
    }

    /// Seq of the last record whose group completed successfully.
    pub fn durable_seq(&self) -> Seq {
        self.durable_seq
    }

    /// Seq of the last record appended.
    pub fn last_assigned(&self) -> Seq {
        Seq(self.next_seq.0 - 1)
    }

    /// Where the next group would go (before rotation).
    pub fn position(&self) -> LogPosition {
        self.position
    }
}
