//! Offline reading of journal directories for `bookie inspect`: the checkpoint, the
//! segment files, and the groups and records of each segment, decoded with
//! `bk_journal::format` (docs/formats.md, "Journal").
//!
//! What a scan guarantees:
//! - a segment is walked from offset 0 group by group, each group checked as replay
//!   checks it (header CRC, this journal, this segment, `prev_seq` chain within the
//!   segment, every record's CRC and seq); the walk stops at the first place that is not
//!   a valid group, and that place and why are kept ([`SegmentEnd`]);
//! - [`later_header`] finds the first plausible group header after such a place (the
//!   evidence replay uses to tell mid-log damage from a torn tail, docs/durability.md);
//! - nothing is judged here: `verify` decides what is a problem, `journal` prints.

use std::path::{Path, PathBuf};

use bk_disk::SECTOR;
use bk_journal::format::{
    self, classify_name, decode_group_records, CheckpointRecord, DirEntryKind, GroupHeader,
    CHECKPOINT_FILE, GROUP_HEADER_LEN, RECORD_HEADER_LEN,
};
use bk_journal::{RecordKind, TypedRecord};
use bytes::Bytes;

use super::files::{hex, Reader, RoFile};

/// Bound on a checkpoint file read (the writer produces one sector).
const CHECKPOINT_BYTES_MAX: u64 = 1 << 20;

/// The checkpoint file of a journal directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Checkpoint {
    /// No `checkpoint` file (a journal that never checkpointed).
    Absent,
    Present {
        journal_id: u64,
        mark: u64,
        /// The last seq known fsynced when the file was written (the mark for a
        /// version 1 file): a log ending below it lost an acknowledged group.
        durable: u64,
    },
    /// The file exists but does not decode (or cannot be read): why.
    Damaged(String),
}

/// One decoded record of a segment.
#[derive(Clone, Debug)]
pub struct RecordInfo {
    pub seq: u64,
    pub kind: RecordKind,
    /// File offset of the record header.
    pub offset: u64,
    pub payload_len: u32,
    /// The ledger the record is about (every kind the bookie writes names one).
    pub ledger: Option<u64>,
    /// Entry records: the entry id and the first 24 bytes of the BookKeeper entry
    /// (ledger, entry, LAC).
    pub entry: Option<u64>,
    pub entry_bytes: Option<Bytes>,
    /// Master-key records: the key, hex.
    pub master_key: Option<String>,
    /// Explicit-LAC records: the LAC body length.
    pub explicit_lac_len: Option<usize>,
}

impl RecordInfo {
    pub fn kind_name(&self) -> &'static str {
        match self.kind {
            RecordKind::ENTRY => "entry",
            RecordKind::FENCE => "fence",
            RecordKind::EXPLICIT_LAC => "explicit_lac",
            RecordKind::MASTER_KEY => "master_key",
            _ => "other",
        }
    }

    /// The LAC an entry carries (BookKeeper entry bytes 16..24, big-endian).
    pub fn entry_lac(&self) -> Option<i64> {
        let b: [u8; 8] = self.entry_bytes.as_ref()?.get(16..24)?.try_into().ok()?;
        Some(i64::from_be_bytes(b))
    }
}

/// Where and why a segment's walk stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SegmentEnd {
    /// The end of the file.
    EndOfFile,
    /// Zeros (never written since the segment was made).
    Unused,
    /// A header of an older segment (the file was recycled).
    Stale,
    /// Something that is not a valid group: why.
    Invalid(String),
}

impl SegmentEnd {
    pub fn describe(&self) -> String {
        match self {
            SegmentEnd::EndOfFile => "end of file".into(),
            SegmentEnd::Unused => "unused (zeros)".into(),
            SegmentEnd::Stale => "stale bytes of a recycled segment".into(),
            SegmentEnd::Invalid(why) => format!("invalid group: {why}"),
        }
    }
}

/// One live segment file and what its walk found.
#[derive(Clone, Debug)]
pub struct SegmentScan {
    pub id: u64,
    pub path: PathBuf,
    pub size: u64,
    pub groups: u64,
    pub records: Vec<RecordInfo>,
    /// `prev_seq` of the first valid group (where the segment continues the log from).
    pub first_prev_seq: Option<u64>,
    /// Seq of the last valid record.
    pub last_seq: Option<u64>,
    /// Where the walk stopped, and why.
    pub end_offset: u64,
    pub end: SegmentEnd,
}

/// A journal directory: checkpoint, live segments (by id), and the other files.
#[derive(Clone, Debug)]
pub struct JournalDir {
    pub checkpoint: Checkpoint,
    /// The journal's id: the checkpoint's, else the first decodable group header's.
    pub journal_id: Option<u64>,
    /// Live segment files: (id, path).
    pub segments: Vec<(u64, PathBuf)>,
    /// Free (recycled or spare) segment files and files being built: (name, kind).
    pub others: Vec<(String, &'static str)>,
}

/// Reads the checkpoint file of `dir`.
pub fn read_checkpoint(r: &mut Reader, dir: &Path) -> Checkpoint {
    let path = dir.join(CHECKPOINT_FILE);
    match r.read_small(&path, CHECKPOINT_BYTES_MAX) {
        Ok(bytes) => match CheckpointRecord::decode(&bytes) {
            Ok(c) => Checkpoint::Present {
                journal_id: c.journal_id,
                mark: c.mark,
                durable: c.durable,
            },
            Err(e) => Checkpoint::Damaged(e.to_string()),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Checkpoint::Absent,
        Err(e) => Checkpoint::Damaged(format!("cannot read: {e}")),
    }
}

/// Lists `dir`: its checkpoint, its live segments and its other files.
pub fn open_dir(r: &mut Reader, dir: &Path) -> std::io::Result<JournalDir> {
    let names = r.list(dir)?;
    let checkpoint = read_checkpoint(r, dir);
    let mut segments = Vec::new();
    let mut others = Vec::new();
    for name in names {
        match classify_name(&name) {
            DirEntryKind::Segment(id) => segments.push((id, dir.join(&name))),
            DirEntryKind::Free(_) => others.push((name, "free segment")),
            DirEntryKind::Temporary => others.push((name, "temporary")),
            DirEntryKind::Checkpoint => {}
            DirEntryKind::Newest => others.push((name, "newest-segment record")),
            DirEntryKind::Cookie => others.push((name, "cookie")),
            DirEntryKind::Unknown => others.push((name, "not the journal's")),
        }
    }
    segments.sort();
    let mut jd = JournalDir {
        journal_id: match checkpoint {
            Checkpoint::Present { journal_id, .. } => Some(journal_id),
            _ => None,
        },
        checkpoint,
        segments,
        others,
    };
    if jd.journal_id.is_none() {
        jd.journal_id = first_journal_id(r, &jd.segments);
    }
    Ok(jd)
}

/// The journal id in the first decodable group header at offset 0 of a segment.
fn first_journal_id(r: &mut Reader, segs: &[(u64, PathBuf)]) -> Option<u64> {
    for (_, path) in segs {
        let Ok(mut f) = r.open(path) else { continue };
        let id = r
            .read(&mut f, 0, GROUP_HEADER_LEN)
            .ok()
            .and_then(|b| GroupHeader::decode(b).ok())
            .map(|h| h.journal_id);
        r.close(f);
        if id.is_some() {
            return id;
        }
    }
    None
}

/// The header at `off` if it is a plausible group of this journal and segment.
fn header_at(
    r: &mut Reader,
    f: &mut RoFile,
    off: u64,
    journal_id: u64,
    segment: u64,
) -> std::io::Result<Result<GroupHeader, (SegmentEnd, String)>> {
    let b = r.read(f, off, GROUP_HEADER_LEN)?;
    if b.len() < GROUP_HEADER_LEN {
        return Ok(Err((SegmentEnd::EndOfFile, String::new())));
    }
    if b.iter().all(|x| *x == 0) {
        return Ok(Err((SegmentEnd::Unused, String::new())));
    }
    match GroupHeader::decode(b) {
        Ok(h) => match h.check_place(journal_id, segment) {
            Ok(()) => Ok(Ok(h)),
            Err(bk_journal::FormatError::WrongSegment { found, .. }) if found < segment => {
                Ok(Err((SegmentEnd::Stale, String::new())))
            }
            Err(e) => Ok(Err((SegmentEnd::Invalid(e.to_string()), e.to_string()))),
        },
        Err(e) => Ok(Err((SegmentEnd::Invalid(e.to_string()), e.to_string()))),
    }
}

/// Walks one segment's groups (see the module docs).
pub fn scan_segment(
    r: &mut Reader,
    id: u64,
    path: &Path,
    journal_id: u64,
) -> std::io::Result<SegmentScan> {
    scan_segment_from(r, id, path, journal_id, 0)
}

/// [`scan_segment`] from the group at `start` (to resume after a damaged spot).
pub fn scan_segment_from(
    r: &mut Reader,
    id: u64,
    path: &Path,
    journal_id: u64,
    start: u64,
) -> std::io::Result<SegmentScan> {
    let mut f = r.open(path)?;
    let out = walk(r, &mut f, id, journal_id, start);
    r.close(f);
    out
}

fn walk(
    r: &mut Reader,
    f: &mut RoFile,
    id: u64,
    journal_id: u64,
    start: u64,
) -> std::io::Result<SegmentScan> {
    let mut s = SegmentScan {
        id,
        path: f.path.clone(),
        size: f.len,
        groups: 0,
        records: Vec::new(),
        first_prev_seq: None,
        last_seq: None,
        end_offset: 0,
        end: SegmentEnd::EndOfFile,
    };
    let mut pos = start;
    loop {
        s.end_offset = pos;
        if pos + GROUP_HEADER_LEN as u64 > f.len {
            s.end = SegmentEnd::EndOfFile;
            break;
        }
        let h = match header_at(r, f, pos, journal_id, id)? {
            Ok(h) => h,
            Err((end, _)) => {
                s.end = end;
                break;
            }
        };
        if let Some(last) = s.last_seq {
            if h.prev_seq != last {
                s.end = SegmentEnd::Invalid(format!(
                    "group continues from seq {} but the previous group ended at seq {last}",
                    h.prev_seq
                ));
                break;
            }
        }
        let glen = GROUP_HEADER_LEN + h.records_len as usize;
        if pos + h.padded_len() > f.len {
            s.end = SegmentEnd::Invalid(format!(
                "group of {glen} bytes runs past the end of the file ({} bytes)",
                f.len
            ));
            break;
        }
        let b = r.read(f, pos, glen)?;
        let views = match decode_group_records(&h, b) {
            Ok(v) => v,
            Err(e) => {
                s.end = SegmentEnd::Invalid(format!("records of the group: {e}"));
                break;
            }
        };
        for v in views {
            let payload = Bytes::copy_from_slice(&b[v.payload.clone()]);
            s.records.push(record_info(
                v.seq,
                v.kind,
                pos + (v.payload.start - RECORD_HEADER_LEN) as u64,
                payload,
            ));
        }
        s.groups += 1;
        s.first_prev_seq.get_or_insert(h.prev_seq);
        s.last_seq = Some(h.last_seq());
        pos += h.padded_len();
    }
    Ok(s)
}

fn record_info(seq: u64, kind: RecordKind, offset: u64, payload: Bytes) -> RecordInfo {
    let mut ri = RecordInfo {
        seq,
        kind,
        offset,
        payload_len: payload.len() as u32,
        ledger: None,
        entry: None,
        entry_bytes: None,
        master_key: None,
        explicit_lac_len: None,
    };
    match TypedRecord::decode(kind, payload) {
        Ok(TypedRecord::Entry {
            ledger,
            entry,
            data,
        }) => {
            ri.ledger = Some(ledger);
            ri.entry = Some(entry);
            // The first 24 bytes hold ledger, entry and LAC: enough for every listing.
            ri.entry_bytes = Some(data.slice(..data.len().min(24)));
        }
        Ok(TypedRecord::Fence { ledger }) => ri.ledger = Some(ledger),
        Ok(TypedRecord::ExplicitLac { ledger, body }) => {
            ri.ledger = Some(ledger);
            ri.explicit_lac_len = Some(body.len());
        }
        Ok(TypedRecord::MasterKey { ledger, key }) => {
            ri.ledger = Some(ledger);
            ri.master_key = Some(hex(&key));
        }
        Ok(TypedRecord::Other { .. }) | Err(_) => {}
    }
    ri
}

/// The first plausible header (this journal, its file's segment, `first_seq > last`)
/// strictly after `after` in `path`: (offset, header). Scans sector by sector.
pub fn later_header(
    r: &mut Reader,
    path: &Path,
    segment: u64,
    journal_id: u64,
    after: u64,
    last: u64,
) -> std::io::Result<Option<(u64, GroupHeader)>> {
    let mut f = r.open(path)?;
    let mut off = after - after % SECTOR as u64 + SECTOR as u64;
    let mut found = None;
    while off + GROUP_HEADER_LEN as u64 <= f.len {
        let b = r.read(&mut f, off, GROUP_HEADER_LEN)?;
        if let Ok(h) = GroupHeader::decode(b) {
            if h.check_place(journal_id, segment).is_ok() && h.first_seq > last {
                found = Some((off, h));
                break;
            }
        }
        off += SECTOR as u64;
    }
    r.close(f);
    Ok(found)
}

/// The name Java's tools would print for a segment: its file name.
pub fn segment_file_name(id: u64) -> String {
    format::segment_file_name(id)
}
