//! Replay of one journal directory: read the checkpoint, walk the chain of groups
//! from the oldest segment, hand every record above the checkpoint mark to the
//! caller, find the end of the log, and tell a torn tail from mid-log corruption.
//!
//! The rule (docs/durability.md "Journal" states it for operators):
//! a group at position P is a *valid continuation* when its header is intact, names
//! this journal and this segment, has `prev_seq == L` (L = last valid record so far)
//! and `first_seq > L`, and all its records are intact with consecutive seqs. When
//! the group at P is not a valid continuation, replay scans every sector-aligned
//! position after P (rest of the segment, then every later segment) for the first
//! *plausible header*: intact, this journal, its file's segment id, `first_seq > L`.
//! - none: P is the end of the log; whatever is at P is a torn tail (the one group
//!   that was in flight at the crash, never acknowledged) and is discarded;
//! - it is at offset 0 of a later segment and its `prev_seq == L`: the log continues
//!   there (the space between was left by a crash: writing resumes in a fresh
//!   segment after every recovery);
//! - its `prev_seq <= checkpoint mark`: everything that could be missing is at or
//!   below the mark (already in the entry log): the walk resumes there, and the
//!   damage is counted in [`DirReplay::damaged_below_mark`];
//! - otherwise: mid-log corruption, an error: the journal does not open.
//!
//! Why this is sound: the committer keeps at most one group in flight and writes a
//! group only after the previous group's write+fdatasync succeeded. So an intact
//! header with higher seqs after P proves the group at P was durable and
//! acknowledged: P cannot be a torn tail. Stale groups in a recycled file name an
//! older segment id and carry seqs at or below L, so they are never plausible.
//! What replay cannot tell apart: the *last* group damaged by the media after it was
//! acknowledged looks exactly like a torn tail (nothing follows it).

use crate::commit::LogPosition;
use crate::error::{FormatError, JournalError};
use crate::format::{self, decode_group_records, GroupHeader, GROUP_HEADER_LEN};
use crate::record::{RecordKind, TypedRecord};
use crate::Seq;
use bk_disk::{round_up, run_one, AlignedBuf, Disk, FileId, Op, OpenOptions, SECTOR};
use bytes::Bytes;
use std::path::{Path, PathBuf};

/// A record handed to the replay visitor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplayedRecord {
    /// The journal directory (index in the list given to `Journal::open`).
    pub journal_index: usize,
    pub seq: Seq,
    pub kind: RecordKind,
    pub payload: Bytes,
}

impl ReplayedRecord {
    /// The payload interpreted by kind (entry, fence, explicit LAC, master key).
    pub fn typed(&self) -> Result<TypedRecord, FormatError> {
        TypedRecord::decode(self.kind, self.payload.clone())
    }
}

/// Where a torn tail was cut off.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TornTail {
    pub position: LogPosition,
    /// Why the group there was not a valid continuation.
    pub reason: String,
}

/// What replay found in one journal directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirReplay {
    pub dir: PathBuf,
    pub journal_id: u64,
    /// The checkpoint mark read at open: records at or below it were not replayed.
    pub checkpoint_mark: Seq,
    /// Records handed to the visitor (seq > mark) and their payload bytes.
    pub records: u64,
    pub payload_bytes: u64,
    /// Bytes of segment files read.
    pub bytes_read: u64,
    /// Seq of the last valid record in the log (0: none).
    pub last_seq: Seq,
    /// The seq the next append gets.
    pub next_seq: Seq,
    /// Where the valid log ends.
    pub end: LogPosition,
    /// Set when something that was not a valid group sat at the end (a torn tail).
    pub torn_tail: Option<TornTail>,
    /// Spots of damage skipped because everything they could hold is <= the mark.
    pub damaged_below_mark: u64,
    /// The segment new groups go to (a fresh one after every open).
    pub write_segment: u64,
    /// True when the directory had no journal and one was created.
    pub created: bool,
}

/// What replay found in every journal directory, in the order of the dirs given.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Replay {
    pub dirs: Vec<DirReplay>,
}

/// One segment file seen at open.
pub(crate) struct SegFile {
    pub id: u64,
    pub path: PathBuf,
    pub len: u64,
    pub file: FileId,
    /// Seq of the last valid record the walk found in it.
    pub last_seq: Option<Seq>,
    cache_off: u64,
    cache: Option<AlignedBuf>,
}

/// Bytes read at a time.
const READ_CHUNK: usize = 1 << 20;
/// Reads of a group that fails validation before it is judged bad.
const GROUP_READ_ATTEMPTS: usize = 3;

impl SegFile {
    pub(crate) fn open(
        disk: &mut dyn Disk,
        id: u64,
        path: PathBuf,
        direct: bool,
    ) -> Result<SegFile, JournalError> {
        let opts = OpenOptions {
            create: false,
            create_new: false,
            write: false,
            direct,
        };
        let file = disk
            .open(&path, opts)
            .map_err(|e| JournalError::io("open segment", &path, e))?;
        let len = match disk.file_len(file) {
            Ok(l) => l,
            Err(e) => {
                let _ = disk.close(file);
                return Err(JournalError::io("size segment", &path, e));
            }
        };
        Ok(SegFile {
            id,
            path,
            len,
            file,
            last_seq: None,
            cache_off: 0,
            cache: None,
        })
    }

    /// The bytes [off, off+n) clamped to the file's end (shorter at end of file).
    fn get(
        &mut self,
        disk: &mut dyn Disk,
        off: u64,
        n: usize,
        read: &mut u64,
    ) -> Result<&[u8], JournalError> {
        let end = (off + n as u64).min(self.len);
        if off >= end {
            return Ok(&[]);
        }
        let covered = self
            .cache
            .as_ref()
            .is_some_and(|c| off >= self.cache_off && end <= self.cache_off + c.len() as u64);
        if !covered {
            let start = off - off % SECTOR as u64;
            let to_eof = round_up((self.len - start) as usize, SECTOR);
            let want = round_up(((end - start) as usize).max(READ_CHUNK.min(to_eof)), SECTOR);
            let mut buf = match self.cache.take() {
                Some(b) if b.capacity() >= want => b,
                _ => AlignedBuf::with_capacity(want),
            };
            buf.set_len(0);
            let c = run_one(
                disk,
                Op::Read {
                    file: self.file,
                    offset: start,
                    len: want,
                    buf,
                },
            );
            let got = c
                .result
                .map_err(|e| JournalError::io("read segment", &self.path, e))?;
            let mut buf = c.buf.ok_or_else(|| {
                JournalError::io(
                    "read segment",
                    &self.path,
                    std::io::Error::other("read completion without its buffer"),
                )
            })?;
            buf.set_len(got.min(buf.capacity()));
            *read += got as u64;
            self.cache_off = start;
            self.cache = Some(buf);
        }
        let c = self.cache.as_ref().map(|c| c.as_slice()).unwrap_or(&[]);
        let lo = (off - self.cache_off) as usize;
        let hi = ((end - self.cache_off) as usize).min(c.len());
        Ok(c.get(lo..hi).unwrap_or(&[]))
    }

    /// Forgets the cached bytes (the next access reads the device again).
    pub(crate) fn invalidate(&mut self) {
        self.cache = None;
    }

    pub(crate) fn close(&mut self, disk: &mut dyn Disk) {
        self.cache = None;
        let _ = disk.close(self.file);
    }
}

/// The header at `off` if it is plausible for this journal and segment.
fn plausible_header(
    seg: &mut SegFile,
    disk: &mut dyn Disk,
    off: u64,
    journal_id: u64,
    read: &mut u64,
) -> Result<Result<GroupHeader, FormatError>, JournalError> {
    let id = seg.id;
    let b = seg.get(disk, off, GROUP_HEADER_LEN, read)?;
    Ok(GroupHeader::decode(b).and_then(|h| h.check_place(journal_id, id).map(|()| h)))
}

/// Whether a header that failed to decode might be a real header hit by a transient
/// read error (so worth reading again): a checksum or field error, or a magic one or
/// two bits away from "BKJG". Zeros and unrelated bytes are not retried.
fn worth_rereading(e: &FormatError) -> bool {
    match e {
        FormatError::ChecksumMismatch { .. }
        | FormatError::BadVersion { .. }
        | FormatError::InvalidField { .. } => true,
        FormatError::BadMagic { found } => {
            let dist: u32 = found
                .iter()
                .zip(format::GROUP_MAGIC.iter())
                .map(|(a, b)| (a ^ b).count_ones())
                .sum();
            dist <= 2
        }
        _ => false,
    }
}

/// [`plausible_header`], but a header that fails in a way a transient read error
/// could explain is read again from the device (twice, one sector, bypassing the
/// cache) before the failure is believed. Where the log continues is decided by
/// these reads, so a flipped bit must not hide a segment's first group (seed 10977).
fn plausible_header_checked(
    seg: &mut SegFile,
    disk: &mut dyn Disk,
    off: u64,
    journal_id: u64,
    read: &mut u64,
) -> Result<Result<GroupHeader, FormatError>, JournalError> {
    let first = plausible_header(seg, disk, off, journal_id, read)?;
    let mut last_err = match first {
        Ok(h) => return Ok(Ok(h)),
        Err(e) if worth_rereading(&e) => e,
        Err(e) => return Ok(Err(e)),
    };
    for _ in 0..2 {
        let buf = AlignedBuf::with_capacity(SECTOR);
        let c = run_one(
            disk,
            Op::Read {
                file: seg.file,
                offset: off - off % SECTOR as u64,
                len: SECTOR,
                buf,
            },
        );
        let n = c
            .result
            .map_err(|e| JournalError::io("re-read segment header", &seg.path, e))?;
        *read += n as u64;
        let Some(b) = c.buf else { continue };
        let at = (off % SECTOR as u64) as usize;
        let bytes = b.as_slice().get(at..n.min(b.len())).unwrap_or(&[]);
        match GroupHeader::decode(bytes).and_then(|h| h.check_place(journal_id, seg.id).map(|()| h))
        {
            Ok(h) => {
                seg.invalidate();
                return Ok(Ok(h));
            }
            Err(e) => last_err = e,
        }
    }
    Ok(Err(last_err))
}

/// A group that is a valid continuation: header and record payload ranges.
struct ValidGroup {
    header: GroupHeader,
    records: Vec<(Seq, RecordKind, Bytes)>,
}

fn try_group(
    seg: &mut SegFile,
    disk: &mut dyn Disk,
    off: u64,
    journal_id: u64,
    last: Seq,
    read: &mut u64,
) -> Result<Result<ValidGroup, FormatError>, JournalError> {
    if off + GROUP_HEADER_LEN as u64 > seg.len {
        return Ok(Err(FormatError::Truncated {
            need: GROUP_HEADER_LEN,
            have: seg.len.saturating_sub(off) as usize,
        }));
    }
    let h = match plausible_header(seg, disk, off, journal_id, read)? {
        Ok(h) => h,
        Err(e) => return Ok(Err(e)),
    };
    if h.prev_seq != last.0 {
        return Ok(Err(FormatError::ChainMismatch {
            expected: last.0,
            found: h.prev_seq,
        }));
    }
    let glen = GROUP_HEADER_LEN + h.records_len as usize;
    if off + h.padded_len() > seg.len {
        return Ok(Err(FormatError::Truncated {
            need: glen,
            have: (seg.len - off) as usize,
        }));
    }
    let b = seg.get(disk, off, glen, read)?;
    let views = match format::decode_group_records(&h, b) {
        Ok(v) => v,
        Err(e) => return Ok(Err(e)),
    };
    let records = views
        .into_iter()
        .map(|v| (Seq(v.seq), v.kind, Bytes::copy_from_slice(&b[v.payload])))
        .collect();
    Ok(Ok(ValidGroup { header: h, records }))
}

/// The result of walking one directory's segments.
pub(crate) struct Walk {
    pub last_seq: Seq,
    /// The last valid group: (index in `segs`, offset, padded length).
    pub last_group: Option<(usize, u64, u64)>,
    /// Highest seq any plausible header claimed (torn groups included).
    pub highest_claimed: Seq,
    pub end: LogPosition,
    pub torn_tail: Option<TornTail>,
    pub damaged_below_mark: u64,
    pub records: u64,
    pub payload_bytes: u64,
    pub bytes_read: u64,
}

/// Walks `segs` (sorted by id, all open) as the module docs describe, calling
/// `visit` for each valid record with seq > `mark`. `durable` is the checkpoint's
/// record of the last seq known fsynced: a log that ends below it (while it is above
/// the mark) lost an acknowledged group, and is corruption, not a torn tail.
#[allow(clippy::too_many_arguments)]
pub(crate) fn walk(
    disk: &mut dyn Disk,
    journal_index: usize,
    segs: &mut [SegFile],
    journal_id: u64,
    mark: Seq,
    durable: Seq,
    visit: &mut dyn FnMut(Seq, RecordKind, Bytes) -> Result<(), String>,
) -> Result<Walk, JournalError> {
    let mut w = Walk {
        last_seq: mark,
        last_group: None,
        highest_claimed: mark,
        end: LogPosition {
            segment: segs.first().map(|s| s.id).unwrap_or(0),
            offset: 0,
        },
        torn_tail: None,
        damaged_below_mark: 0,
        records: 0,
        payload_bytes: 0,
        bytes_read: 0,
    };
    if segs.is_empty() {
        return Ok(w);
    }
    let mut read = 0u64;
    // Where the chain starts: the oldest segment's first group names its predecessor.
    let mut last = match plausible_header_checked(&mut segs[0], disk, 0, journal_id, &mut read)? {
        Ok(h) => {
            if h.prev_seq > mark.0 {
                return Err(JournalError::Corruption {
                    path: segs[0].path.clone(),
                    offset: 0,
                    reason: format!(
                        "the oldest segment continues from seq {} but the checkpoint mark is {}: \
                         segments holding seqs {}..={} are missing",
                        h.prev_seq,
                        mark.0,
                        mark.0 + 1,
                        h.prev_seq
                    ),
                });
            }
            Seq(h.prev_seq)
        }
        Err(_) => mark,
    };
    let mut cur = 0usize;
    let mut pos = 0u64;
    loop {
        let bad: FormatError = if pos < segs[cur].len {
            let mut attempt = try_group(&mut segs[cur], disk, pos, journal_id, last, &mut read)?;
            for _ in 1..GROUP_READ_ATTEMPTS {
                if attempt.is_ok() {
                    break;
                }
                // Read it again from the device before judging: a transient read
                // error (a flipped bit on the bus) must not make an acknowledged
                // last group look like a torn tail, nor a valid group like damage.
                segs[cur].invalidate();
                attempt = try_group(&mut segs[cur], disk, pos, journal_id, last, &mut read)?;
            }
            match attempt {
                Ok(g) => {
                    w.highest_claimed = w.highest_claimed.max(Seq(g.header.last_seq()));
                    for (seq, kind, payload) in g.records {
                        if seq > mark {
                            w.records += 1;
                            w.payload_bytes += payload.len() as u64;
                            visit(seq, kind, payload).map_err(|reason| {
                                JournalError::ReplayAborted {
                                    journal_index,
                                    seq: seq.0,
                                    reason,
                                }
                            })?;
                        }
                    }
                    last = Seq(g.header.last_seq());
                    segs[cur].last_seq = Some(last);
                    w.last_group = Some((cur, pos, g.header.padded_len()));
                    pos += g.header.padded_len();
                    continue;
                }
                Err(e) => e,
            }
        } else {
            FormatError::Truncated {
                need: GROUP_HEADER_LEN,
                have: 0,
            }
        };
        // Not a valid continuation at (cur, pos). A plausible header right here is
        // the header of the group that was in flight at the crash (a torn tail if
        // nothing follows); its seqs are never reused.
        let mut torn_here = false;
        if pos < segs[cur].len {
            if let Ok(h) =
                plausible_header_checked(&mut segs[cur], disk, pos, journal_id, &mut read)?
            {
                if h.first_seq > last.0 {
                    w.highest_claimed = w.highest_claimed.max(Seq(h.last_seq()));
                    torn_here = true;
                }
            }
        }
        let found = scan_for_header(disk, segs, cur, pos, journal_id, last, &mut read)?;
        match found {
            None => {
                if durable > mark && last < durable {
                    return Err(JournalError::Corruption {
                        path: segs[cur].path.clone(),
                        offset: pos,
                        reason: format!(
                            "the log ends after seq {} ({bad}), but the checkpoint records seqs up to \
                             {} as fsynced (acknowledged) and the mark is {}: an acknowledged group \
                             was damaged or lost, not torn by a crash",
                            last.0, durable.0, mark.0
                        ),
                    });
                }
                w.end = LogPosition {
                    segment: segs[cur].id,
                    offset: pos,
                };
                if torn_here {
                    w.torn_tail = Some(TornTail {
                        position: w.end,
                        reason: bad.to_string(),
                    });
                }
                break;
            }
            Some((k, off, h)) => {
                w.highest_claimed = w.highest_claimed.max(Seq(h.last_seq()));
                if off == 0 && k > cur && h.prev_seq == last.0 {
                    cur = k;
                    pos = 0;
                    continue;
                }
                if h.prev_seq <= mark.0 {
                    w.damaged_below_mark += 1;
                    tracing::warn!(
                        segment = %segs[cur].path.display(),
                        offset = pos,
                        "journal damage at or below the checkpoint mark skipped: {bad}"
                    );
                    last = Seq(h.prev_seq);
                    cur = k;
                    pos = off;
                    continue;
                }
                return Err(JournalError::Corruption {
                    path: segs[cur].path.clone(),
                    offset: pos,
                    reason: format!(
                        "invalid group ({bad}) after seq {} while a later group (seqs {}..={}, \
                         prev {}) is intact in {} at offset {off}: mid-log corruption",
                        last.0,
                        h.first_seq,
                        h.last_seq(),
                        h.prev_seq,
                        segs[k].path.display()
                    ),
                });
            }
        }
    }
    w.last_seq = last;
    w.bytes_read = read;
    Ok(w)
}

/// Writes the last valid group again, in place with the same bytes, and syncs it.
///
/// Why: after a failed fdatasync Linux marks the dirty pages clean ("fsyncgate"), so
/// a restart without a machine crash can read a group that is not durable and will
/// never become durable by another fsync. If writing resumed after it, a later
/// crash would lose it and leave a chain that points at it, which replay must call
/// corruption. Rewriting it (same bytes: nothing acknowledged changes) and syncing
/// makes what replay handed out durable before anything is written after it. Only
/// the last group can be in that state: a failed sync stops the journal.
pub(crate) fn resync_last_group(
    disk: &mut dyn Disk,
    seg: &mut SegFile,
    offset: u64,
    len: u64,
    direct: bool,
) -> Result<(), JournalError> {
    // The bytes written back must be the group replay validated: read them again
    // and validate them again (a transient read error here would otherwise be
    // written to the media: found by simulation seed 10196).
    let mut read = 0u64;
    let mut buf = AlignedBuf::with_capacity(len as usize);
    let mut valid = false;
    for _ in 0..3 {
        seg.invalidate();
        let bytes = seg.get(disk, offset, len as usize, &mut read)?;
        let intact = bytes.len() as u64 == len
            && GroupHeader::decode(bytes)
                .and_then(|h| decode_group_records(&h, bytes).map(|_| ()))
                .is_ok();
        if intact {
            buf.set_len(0);
            let ok = buf.extend_from_slice(bytes);
            debug_assert!(ok);
            valid = true;
            break;
        }
    }
    if !valid {
        return Err(JournalError::io(
            "re-read last group",
            &seg.path,
            std::io::Error::other(format!(
                "the group at offset {offset} replay validated does not read back intact"
            )),
        ));
    }
    let opts = OpenOptions {
        create: false,
        create_new: false,
        write: true,
        direct,
    };
    let file = disk
        .open(&seg.path, opts)
        .map_err(|e| JournalError::io("open segment to resync", &seg.path, e))?;
    let r = crate::segments::run_checked(
        disk,
        Op::WriteDatasync { file, offset, buf },
        "rewrite+fdatasync last group",
        &seg.path,
    );
    let closed = disk.close(file);
    r?;
    closed.map_err(|e| JournalError::io("close segment", &seg.path, e))?;
    Ok(())
}

/// The first plausible header with `first_seq > last` strictly after (cur, pos):
/// from the next sector of `cur`, then every later segment from offset 0.
fn scan_for_header(
    disk: &mut dyn Disk,
    segs: &mut [SegFile],
    cur: usize,
    pos: u64,
    journal_id: u64,
    last: Seq,
    read: &mut u64,
) -> Result<Option<(usize, u64, GroupHeader)>, JournalError> {
    for (k, seg) in segs.iter_mut().enumerate().skip(cur) {
        let mut off = if k == cur { pos + SECTOR as u64 } else { 0 };
        off -= off % SECTOR as u64;
        while off + GROUP_HEADER_LEN as u64 <= seg.len {
            if let Ok(h) = plausible_header_checked(seg, disk, off, journal_id, read)? {
                if h.first_seq > last.0 {
                    return Ok(Some((k, off, h)));
                }
            }
            off += SECTOR as u64;
        }
    }
    Ok(None)
}

/// Bound on the checkpoint file a reader accepts: far above the one sector the writer
/// produces, so a garbage file cannot make replay allocate without limit.
const MAX_CHECKPOINT_FILE_BYTES: u64 = 1 << 20;

/// Reads the checkpoint file of `dir`.
pub(crate) fn read_checkpoint(
    disk: &mut dyn Disk,
    dir: &Path,
    direct: bool,
) -> Result<format::CheckpointRecord, JournalError> {
    let path = dir.join(format::CHECKPOINT_FILE);
    // Two attempts: a checksum failure is confirmed by a second read from the
    // device before the journal refuses to open (a transient read error is not
    // corruption).
    let mut last_err = None;
    for _ in 0..2 {
        let bytes = bk_disk::read_small_file(disk, &path, direct, MAX_CHECKPOINT_FILE_BYTES)
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => JournalError::io("open checkpoint", &path, e),
                _ => JournalError::io("read checkpoint", &path, e),
            })?;
        match format::CheckpointRecord::decode(&bytes) {
            Ok(c) => return Ok(c),
            Err(e) => last_err = Some(e),
        }
    }
    Err(JournalError::Corruption {
        path: path.clone(),
        offset: 0,
        reason: format!(
            "checkpoint file: {}",
            last_err.map(|e| e.to_string()).unwrap_or_default()
        ),
    })
}

/// Writes the checkpoint file durably (`bk_disk::replace_file`: the record, padded to
/// its one sector, goes to `checkpoint.tmp`, fdatasync, rename over `checkpoint`,
/// directory sync).
pub(crate) fn write_checkpoint(
    disk: &mut dyn Disk,
    dir: &Path,
    rec: format::CheckpointRecord,
    direct: bool,
) -> Result<(), JournalError> {
    let path = dir.join(format::CHECKPOINT_FILE);
    debug_assert_eq!(
        bk_disk::small_file::temp_path(&path),
        dir.join(format::CHECKPOINT_TMP_FILE)
    );
    let mut sector = [0u8; SECTOR];
    sector[..format::CHECKPOINT_LEN].copy_from_slice(&rec.encode());
    bk_disk::replace_file(disk, &path, &sector, direct).map_err(|e| {
        use bk_disk::ReplaceStep as S;
        let op = match e.step {
            S::RemoveLeftover | S::Create => "create checkpoint",
            S::Write | S::Truncate | S::Datasync => "write+fdatasync checkpoint",
            S::Close => "close checkpoint",
            S::Rename => "rename checkpoint",
            S::SyncDir => "sync journal directory",
        };
        // The old checkpoint stays in place until the rename: "no space" creating,
        // writing (before its sync: bk_disk::is_no_space) or renaming the temp file
        // lost nothing, the mark just does not advance.
        match e.step {
            S::Create | S::Write | S::Rename => JournalError::alloc(op, e.path, e.source),
            _ => JournalError::io(op, e.path, e.source),
        }
    })
}
