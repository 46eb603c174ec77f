//! Byte formats of the journal: record header, group header, checkpoint file, the
//! newest-segment record, and the
//! names of the files in a journal directory. docs/formats.md ("Journal") mirrors
//! this file; keep them in step.
//!
//! All integers are little-endian. CRCs are CRC32C (Castagnoli).
//!
//! Invariants:
//! - every decoder here takes arbitrary bytes and returns a [`FormatError`] rather
//!   than panic (fuzzed by `fuzz/fuzz_targets/journal_record.rs`);
//! - every encoder is checked by decoding what it wrote (unit tests and debug asserts).

use crate::error::FormatError;
use crate::record::{Record, RecordKind};
use bk_disk::{round_up, AlignedBuf, SECTOR};

// ---------------------------------------------------------------------------------
// Record
// ---------------------------------------------------------------------------------

/// Bytes of a record header.
pub const RECORD_HEADER_LEN: usize = 20;

/// A record header.
///
/// Format (20 bytes, then `payload_len` bytes of payload, no padding between records):
/// ```text
///  0..4   payload_len u32
///  4      kind        u8   (never 0)
///  5      flags       u8   (0; readers reject other values)
///  6..8   reserved    u16  (0; readers reject other values)
///  8..16  seq         u64  (sequence number, > 0, +1 per record within a group)
/// 16..20  crc         u32  = crc32c_append(crc32c(payload), header bytes 0..16)
/// ```
/// The CRC covers the payload first and then the 16 header bytes before it, so the
/// payload's CRC can be computed once on the appending thread and the header folded
/// in by the committer once the sequence number is known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordHeader {
    pub payload_len: u32,
    pub kind: RecordKind,
    pub seq: u64,
    pub crc: u32,
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}
fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(a)
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

impl RecordHeader {
    fn fields(&self) -> [u8; 16] {
        let mut h = [0u8; 16];
        h[0..4].copy_from_slice(&self.payload_len.to_le_bytes());
        h[4] = self.kind.0;
        h[8..16].copy_from_slice(&self.seq.to_le_bytes());
        h
    }

    /// The CRC this header must carry for a payload whose CRC32C is `payload_crc`.
    pub fn compute_crc(&self, payload_crc: u32) -> u32 {
        crc32c::crc32c_append(payload_crc, &self.fields())
    }

    pub fn encode(&self) -> [u8; RECORD_HEADER_LEN] {
        let mut out = [0u8; RECORD_HEADER_LEN];
        out[..16].copy_from_slice(&self.fields());
        out[16..20].copy_from_slice(&self.crc.to_le_bytes());
        out
    }

    /// Decodes the 20 header bytes (checks the reserved fields, not the CRC).
    pub fn decode(b: &[u8]) -> Result<RecordHeader, FormatError> {
        if b.len() < RECORD_HEADER_LEN {
            return Err(FormatError::Truncated {
                need: RECORD_HEADER_LEN,
                have: b.len(),
            });
        }
        if b[4] == 0 {
            return Err(FormatError::InvalidField {
                field: "record kind",
                value: 0,
            });
        }
        if b[5] != 0 || u16_at(b, 6) != 0 {
            return Err(FormatError::InvalidField {
                field: "record flags/reserved",
                value: u64::from(b[5]) | u64::from(u16_at(b, 6)) << 8,
            });
        }
        Ok(RecordHeader {
            payload_len: u32_at(b, 0),
            kind: RecordKind(b[4]),
            seq: u64_at(b, 8),
            crc: u32_at(b, 16),
        })
    }
}

/// Encoded size of a record (header + payload).
pub fn record_encoded_len(rec: &Record) -> usize {
    RECORD_HEADER_LEN + rec.payload_len()
}

/// The header of `rec` as record number `seq`.
pub fn encode_record_header(seq: u64, rec: &Record) -> [u8; RECORD_HEADER_LEN] {
    let mut h = RecordHeader {
        payload_len: rec.payload_len() as u32,
        kind: rec.kind(),
        seq,
        crc: 0,
    };
    h.crc = h.compute_crc(rec.payload_crc());
    h.encode()
}

/// Appends the encoding of `rec` with sequence number `seq` to `out`.
/// Returns false (and appends nothing) if it does not fit.
pub fn encode_record(out: &mut AlignedBuf, seq: u64, rec: &Record) -> bool {
    let len = record_encoded_len(rec);
    if out.len() + len > out.capacity() || rec.payload_len() > u32::MAX as usize {
        return false;
    }
    let (prefix, body) = rec.payload_parts();
    let ok = out.extend_from_slice(&encode_record_header(seq, rec))
        && out.extend_from_slice(prefix)
        && out.extend_from_slice(body);
    debug_assert!(ok);
    ok
}

/// A group of one record, encoded ahead of time by the appender's thread: group
/// header and record header left as zeros (the committer fills them in when it cuts
/// the group: they depend on the position and the seq), then the payload; capacity
/// for the padding to the sector. Used for records too large to share a group, so
/// that copying them into an aligned buffer overlaps the group write in flight.
/// `buf`, when given and large enough, is reused (its contents are replaced).
pub fn pre_encode_alone(rec: &Record, buf: Option<AlignedBuf>) -> Option<AlignedBuf> {
    if rec.payload_len() > u32::MAX as usize {
        return None;
    }
    let total = GROUP_HEADER_LEN + record_encoded_len(rec);
    let padded = round_up(total, SECTOR);
    let mut b = match buf {
        Some(b) if b.capacity() >= padded => b,
        _ => AlignedBuf::with_capacity(padded),
    };
    b.set_len(0);
    let (prefix, body) = rec.payload_parts();
    let ok = b.extend_from_slice(&[0u8; GROUP_HEADER_LEN + RECORD_HEADER_LEN])
        && b.extend_from_slice(prefix)
        && b.extend_from_slice(body);
    ok.then_some(b)
}

/// Decodes one record at the start of `b`, checking its CRC.
/// Returns the header, the payload and the number of bytes consumed.
pub fn decode_record(b: &[u8]) -> Result<(RecordHeader, &[u8], usize), FormatError> {
    let h = RecordHeader::decode(b)?;
    let end = RECORD_HEADER_LEN + h.payload_len as usize;
    let payload = b
        .get(RECORD_HEADER_LEN..end)
        .ok_or(FormatError::Truncated {
            need: end,
            have: b.len(),
        })?;
    let computed = h.compute_crc(crc32c::crc32c(payload));
    if computed != h.crc {
        return Err(FormatError::ChecksumMismatch {
            stored: h.crc,
            computed,
        });
    }
    Ok((h, payload, end))
}

// ---------------------------------------------------------------------------------
// Group
// ---------------------------------------------------------------------------------

/// Bytes of a group header.
pub const GROUP_HEADER_LEN: usize = 56;
/// Magic at the start of every group.
pub const GROUP_MAGIC: [u8; 4] = *b"BKJG";
/// The group format version this code writes and reads.
pub const FORMAT_VERSION: u16 = 1;

const _: () = assert!(GROUP_HEADER_LEN <= SECTOR);
const _: () = assert!(RECORD_HEADER_LEN == 20);

/// The header of a group (one write + fdatasync of the group commit).
///
/// A group starts at a sector-aligned offset of a segment file:
/// ```text
///  0..4   magic        "BKJG"
///  4..6   version      u16 (1)
///  6..8   reserved     u16 (0)
///  8..16  journal_id   u64  random, fixed when the journal directory was created
/// 16..24  segment_id   u64  the id in the segment file's name
/// 24..32  prev_seq     u64  seq of the last record before this group in the log (0: none)
/// 32..40  first_seq    u64  seq of the group's first record; > prev_seq
/// 40..44  record_count u32  >= 1
/// 44..48  records_len  u32  bytes of records after the header
/// 48..52  reserved     u32  (0)
/// 52..56  header_crc   u32  crc32c(bytes 0..52)
/// 56..    record_count records (seq first_seq, first_seq+1, ...), records_len bytes,
///         then zeros up to the next multiple of SECTOR (where the next group starts).
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupHeader {
    pub journal_id: u64,
    pub segment_id: u64,
    pub prev_seq: u64,
    pub first_seq: u64,
    pub record_count: u32,
    pub records_len: u32,
}

impl GroupHeader {
    /// Seq of the group's last record.
    pub fn last_seq(&self) -> u64 {
        self.first_seq + u64::from(self.record_count) - 1
    }

    /// Bytes the group occupies in its segment, padding included.
    pub fn padded_len(&self) -> u64 {
        bk_disk::round_up(GROUP_HEADER_LEN + self.records_len as usize, SECTOR) as u64
    }

    pub fn encode(&self) -> [u8; GROUP_HEADER_LEN] {
        let mut b = [0u8; GROUP_HEADER_LEN];
        b[0..4].copy_from_slice(&GROUP_MAGIC);
        b[4..6].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
        b[8..16].copy_from_slice(&self.journal_id.to_le_bytes());
        b[16..24].copy_from_slice(&self.segment_id.to_le_bytes());
        b[24..32].copy_from_slice(&self.prev_seq.to_le_bytes());
        b[32..40].copy_from_slice(&self.first_seq.to_le_bytes());
        b[40..44].copy_from_slice(&self.record_count.to_le_bytes());
        b[44..48].copy_from_slice(&self.records_len.to_le_bytes());
        let crc = crc32c::crc32c(&b[0..52]);
        b[52..56].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Decodes and checks a group header on its own (magic, version, CRC, field
    /// ranges). Whether it belongs here (journal, segment, chain) is checked by
    /// [`GroupHeader::check_place`].
    pub fn decode(b: &[u8]) -> Result<GroupHeader, FormatError> {
        if b.len() < GROUP_HEADER_LEN {
            return Err(FormatError::Truncated {
                need: GROUP_HEADER_LEN,
                have: b.len(),
            });
        }
        let mut magic = [0u8; 4];
        magic.copy_from_slice(&b[0..4]);
        if magic != GROUP_MAGIC {
            return Err(FormatError::BadMagic { found: magic });
        }
        let version = u16_at(b, 4);
        if version != FORMAT_VERSION {
            return Err(FormatError::BadVersion { found: version });
        }
        let stored = u32_at(b, 52);
        let computed = crc32c::crc32c(&b[0..52]);
        if stored != computed {
            return Err(FormatError::ChecksumMismatch { stored, computed });
        }
        if u16_at(b, 6) != 0 || u32_at(b, 48) != 0 {
            return Err(FormatError::InvalidField {
                field: "group reserved",
                value: u64::from(u16_at(b, 6)) | u64::from(u32_at(b, 48)) << 16,
            });
        }
        let h = GroupHeader {
            journal_id: u64_at(b, 8),
            segment_id: u64_at(b, 16),
            prev_seq: u64_at(b, 24),
            first_seq: u64_at(b, 32),
            record_count: u32_at(b, 40),
            records_len: u32_at(b, 44),
        };
        if h.record_count == 0 {
            return Err(FormatError::InvalidField {
                field: "record_count",
                value: 0,
            });
        }
        if h.first_seq <= h.prev_seq || h.first_seq.checked_add(u64::from(h.record_count)).is_none()
        {
            return Err(FormatError::InvalidField {
                field: "first_seq",
                value: h.first_seq,
            });
        }
        if (h.records_len as usize) < h.record_count as usize * RECORD_HEADER_LEN {
            return Err(FormatError::InvalidField {
                field: "records_len",
                value: u64::from(h.records_len),
            });
        }
        Ok(h)
    }

    /// Checks that this header belongs to `journal_id` and `segment_id`.
    pub fn check_place(&self, journal_id: u64, segment_id: u64) -> Result<(), FormatError> {
        if self.journal_id != journal_id {
            return Err(FormatError::WrongJournal {
                expected: journal_id,
                found: self.journal_id,
            });
        }
        if self.segment_id != segment_id {
            return Err(FormatError::WrongSegment {
                expected: segment_id,
                found: self.segment_id,
            });
        }
        Ok(())
    }
}

/// One record of a decoded group: its sequence number, kind and payload range
/// within the group's bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordView {
    pub seq: u64,
    pub kind: RecordKind,
    pub payload: std::ops::Range<usize>,
}

/// Decodes the records of a group. `b` starts at the group header and holds at
/// least `GROUP_HEADER_LEN + records_len` bytes. Every record must be intact, carry
/// the next sequence number, and together they must fill `records_len` exactly.
pub fn decode_group_records(h: &GroupHeader, b: &[u8]) -> Result<Vec<RecordView>, FormatError> {
    let end = GROUP_HEADER_LEN + h.records_len as usize;
    if b.len() < end {
        return Err(FormatError::Truncated {
            need: end,
            have: b.len(),
        });
    }
    let mut at = GROUP_HEADER_LEN;
    let mut out = Vec::with_capacity((h.record_count as usize).min(4096));
    for i in 0..u64::from(h.record_count) {
        let (rh, _payload, used) = decode_record(&b[at..end])?;
        let expected = h.first_seq + i;
        if rh.seq != expected {
            return Err(FormatError::SequenceMismatch {
                expected,
                found: rh.seq,
            });
        }
        out.push(RecordView {
            seq: rh.seq,
            kind: rh.kind,
            payload: at + RECORD_HEADER_LEN..at + used,
        });
        at += used;
    }
    if at != end {
        return Err(FormatError::InvalidField {
            field: "records_len (slack after last record)",
            value: (end - at) as u64,
        });
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------
// Checkpoint file
// ---------------------------------------------------------------------------------

/// Name of the checkpoint file in a journal directory.
pub const CHECKPOINT_FILE: &str = "checkpoint";
/// Name of the temporary file a new checkpoint is written to before the rename.
pub const CHECKPOINT_TMP_FILE: &str = "checkpoint.tmp";
/// Magic at the start of the checkpoint file.
pub const CHECKPOINT_MAGIC: [u8; 8] = *b"BKJCHKPT";
/// Bytes of the checkpoint record this code writes (version 2; the file is one
/// zero-padded sector).
pub const CHECKPOINT_LEN: usize = 52;
/// Bytes of a version 1 checkpoint record (before `durable` existed).
const CHECKPOINT_V1_LEN: usize = 36;
/// The checkpoint version this code writes; it reads 1 and 2.
pub const CHECKPOINT_VERSION: u16 = 2;

/// The durable checkpoint mark of one journal directory, and the last seq known durable
/// in the journal when it was written.
///
/// File `checkpoint`, one sector (4096 bytes), zero-padded. Version 2 (written since
/// issue 11):
/// ```text
///  0..8   magic       "BKJCHKPT"
///  8..10  version     u16 (2)
/// 10..12  reserved    u16 (0)
/// 12..16  reserved    u32 (0)
/// 16..24  journal_id  u64  the journal's random id (also in every group header)
/// 24..32  mark        u64  every record with seq <= mark is durable in the entry log
/// 32..40  durable     u64  every record with seq <= durable was in a group whose
///                          write+fdatasync had succeeded (so it may have been
///                          acknowledged) when this file was written
/// 40..48  storage_epoch u64 opaque to the journal: the caller's storage generation that
///                          the mark relies on (the bookie: the epoch of the entry log's
///                          `ledgers.state` written by the flush before this checkpoint;
///                          0 = none); never lowered
/// 48..52  crc         u32  crc32c(bytes 0..48)
/// ```
/// Version 1 has neither `durable` nor `storage_epoch` and its crc at 32..36 covers bytes
/// 0..32; it reads as `durable == mark` (nothing known beyond the mark), `storage_epoch` 0. Replay refuses a log that ends
/// below `durable` while `durable > mark` (docs/durability.md, recovery step 4): that is
/// an acknowledged group damaged or lost, not a torn tail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CheckpointRecord {
    pub journal_id: u64,
    pub mark: u64,
    pub durable: u64,
    pub storage_epoch: u64,
}

impl CheckpointRecord {
    pub fn encode(&self) -> [u8; CHECKPOINT_LEN] {
        let mut b = [0u8; CHECKPOINT_LEN];
        b[0..8].copy_from_slice(&CHECKPOINT_MAGIC);
        b[8..10].copy_from_slice(&CHECKPOINT_VERSION.to_le_bytes());
        b[16..24].copy_from_slice(&self.journal_id.to_le_bytes());
        b[24..32].copy_from_slice(&self.mark.to_le_bytes());
        b[32..40].copy_from_slice(&self.durable.to_le_bytes());
        b[40..48].copy_from_slice(&self.storage_epoch.to_le_bytes());
        let crc = crc32c::crc32c(&b[0..48]);
        b[48..52].copy_from_slice(&crc.to_le_bytes());
        b
    }

    pub fn decode(b: &[u8]) -> Result<CheckpointRecord, FormatError> {
        if b.len() < CHECKPOINT_V1_LEN {
            return Err(FormatError::Truncated {
                need: CHECKPOINT_V1_LEN,
                have: b.len(),
            });
        }
        if b[0..8] != CHECKPOINT_MAGIC {
            let mut found = [0u8; 4];
            found.copy_from_slice(&b[0..4]);
            return Err(FormatError::BadMagic { found });
        }
        let version = u16_at(b, 8);
        let crc_at = match version {
            1 => 32,
            2 if b.len() >= CHECKPOINT_LEN => 48,
            2 => {
                return Err(FormatError::Truncated {
                    need: CHECKPOINT_LEN,
                    have: b.len(),
                })
            }
            _ => return Err(FormatError::BadVersion { found: version }),
        };
        let stored = u32_at(b, crc_at);
        let computed = crc32c::crc32c(&b[0..crc_at]);
        if stored != computed {
            return Err(FormatError::ChecksumMismatch { stored, computed });
        }
        let mark = u64_at(b, 24);
        Ok(CheckpointRecord {
            journal_id: u64_at(b, 16),
            mark,
            durable: if version == 1 { mark } else { u64_at(b, 32) },
            storage_epoch: if version == 1 { 0 } else { u64_at(b, 40) },
        })
    }
}

// ---------------------------------------------------------------------------------
// Newest-segment record
// ---------------------------------------------------------------------------------

/// Name of the newest-segment record in a journal directory.
pub const NEWEST_FILE: &str = "newest-segment";
/// Magic at the start of each slot of the newest-segment record.
pub const NEWEST_MAGIC: [u8; 8] = *b"BKJNEWST";
/// Bytes of one slot's record (each slot is one zero-padded sector).
pub const NEWEST_LEN: usize = 52;
/// Slots of the newest-segment file (one sector each, written alternately).
pub const NEWEST_SLOTS: u64 = 2;

/// Which segment must exist: the newest segment the journal wrote (or is about to
/// write) groups into, made durable before the first group written there is
/// acknowledged (`crate::newest`).
///
/// File `newest-segment`, two sectors (8192 bytes); the record with generation `g`
/// is in slot `g % 2` (bytes `(g % 2) * 4096 ..`), zero-padded, overwritten in place
/// with one write+fdatasync; a reader takes the intact slot of the higher generation
/// (a write torn by a crash leaves the other slot intact):
/// ```text
///  0..8   magic        "BKJNEWST"
///  8..10  version      u16 (1)
/// 10..16  reserved     (0)
/// 16..24  journal_id   u64  the journal's random id (as in the checkpoint)
/// 24..32  generation   u64  +1 per write
/// 32..40  segment_id   u64  the newest segment holding groups (0: none required)
/// 40..48  segment_len  u64  that segment file's length (files never change length)
/// 48..52  crc          u32  crc32c(bytes 0..48)
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NewestRecord {
    pub journal_id: u64,
    pub generation: u64,
    pub segment_id: u64,
    pub segment_len: u64,
}

impl NewestRecord {
    pub fn encode(&self) -> [u8; NEWEST_LEN] {
        let mut b = [0u8; NEWEST_LEN];
        b[0..8].copy_from_slice(&NEWEST_MAGIC);
        b[8..10].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
        b[16..24].copy_from_slice(&self.journal_id.to_le_bytes());
        b[24..32].copy_from_slice(&self.generation.to_le_bytes());
        b[32..40].copy_from_slice(&self.segment_id.to_le_bytes());
        b[40..48].copy_from_slice(&self.segment_len.to_le_bytes());
        let crc = crc32c::crc32c(&b[0..48]);
        b[48..52].copy_from_slice(&crc.to_le_bytes());
        b
    }

    pub fn decode(b: &[u8]) -> Result<NewestRecord, FormatError> {
        if b.len() < NEWEST_LEN {
            return Err(FormatError::Truncated {
                need: NEWEST_LEN,
                have: b.len(),
            });
        }
        if b[0..8] != NEWEST_MAGIC {
            let mut found = [0u8; 4];
            found.copy_from_slice(&b[0..4]);
            return Err(FormatError::BadMagic { found });
        }
        let version = u16_at(b, 8);
        if version != FORMAT_VERSION {
            return Err(FormatError::BadVersion { found: version });
        }
        let stored = u32_at(b, 48);
        let computed = crc32c::crc32c(&b[0..48]);
        if stored != computed {
            return Err(FormatError::ChecksumMismatch { stored, computed });
        }
        Ok(NewestRecord {
            journal_id: u64_at(b, 16),
            generation: u64_at(b, 24),
            segment_id: u64_at(b, 32),
            segment_len: u64_at(b, 40),
        })
    }
}

// ---------------------------------------------------------------------------------
// File names
// ---------------------------------------------------------------------------------

/// Suffix of segment files.
pub const SEGMENT_SUFFIX: &str = ".jseg";
/// Prefix of free (recycled or pre-written, holding no live record) segment files.
pub const FREE_PREFIX: &str = "free-";
/// Suffix of files being built (deleted at open).
pub const TMP_SUFFIX: &str = ".tmp";
/// The bookie's cookie, which the Java directory layout keeps in the journal's own
/// directory (`<journalDirectory>/current/VERSION`): not the journal's, left alone silently.
pub const COOKIE_FILE: &str = "VERSION";

/// A live segment file is named by its id: 16 lower-case hex digits + ".jseg".
pub fn segment_file_name(id: u64) -> String {
    format!("{id:016x}{SEGMENT_SUFFIX}")
}

/// A free segment file: "free-" + 16 hex digits + ".jseg".
pub fn free_file_name(n: u64) -> String {
    format!("{FREE_PREFIX}{n:016x}{SEGMENT_SUFFIX}")
}

/// What a file name in a journal directory is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DirEntryKind {
    Segment(u64),
    Free(u64),
    Checkpoint,
    /// [`NEWEST_FILE`].
    Newest,
    Temporary,
    /// [`COOKIE_FILE`].
    Cookie,
    Unknown,
}

/// Classifies a file name of a journal directory.
pub fn classify_name(name: &str) -> DirEntryKind {
    if name == CHECKPOINT_FILE {
        return DirEntryKind::Checkpoint;
    }
    if name == COOKIE_FILE {
        return DirEntryKind::Cookie;
    }
    if name == NEWEST_FILE {
        return DirEntryKind::Newest;
    }
    if name.ends_with(TMP_SUFFIX) {
        return DirEntryKind::Temporary;
    }
    let Some(stem) = name.strip_suffix(SEGMENT_SUFFIX) else {
        return DirEntryKind::Unknown;
    };
    let (free, hex) = match stem.strip_prefix(FREE_PREFIX) {
        Some(h) => (true, h),
        None => (false, stem),
    };
    if hex.len() != 16 || !hex.bytes().all(|c| c.is_ascii_hexdigit()) {
        return DirEntryKind::Unknown;
    }
    match u64::from_str_radix(hex, 16) {
        Ok(v) if free => DirEntryKind::Free(v),
        Ok(v) => DirEntryKind::Segment(v),
        Err(_) => DirEntryKind::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    #[test]
    fn record_round_trip_and_crc() {
        let rec = Record::entry(1, 2, Bytes::from_static(b"abc"));
        let mut buf = AlignedBuf::with_capacity(SECTOR);
        assert!(encode_record(&mut buf, 42, &rec));
        let (h, p, used) = decode_record(buf.as_slice()).unwrap();
        assert_eq!(used, buf.len());
        assert_eq!(h.seq, 42);
        assert_eq!(h.kind, RecordKind::ENTRY);
        assert_eq!(p, &rec.payload()[..]);
        for i in 0..buf.len() {
            let mut b = buf.as_slice().to_vec();
            b[i] ^= 1;
            assert!(decode_record(&b).is_err(), "flip at {i} undetected");
        }
    }

    #[test]
    fn group_header_round_trip() {
        let h = GroupHeader {
            journal_id: 0xdead_beef,
            segment_id: 3,
            prev_seq: 10,
            first_seq: 11,
            record_count: 2,
            records_len: 60,
        };
        let b = h.encode();
        assert_eq!(GroupHeader::decode(&b).unwrap(), h);
        for i in 0..b.len() {
            let mut c = b;
            c[i] ^= 0x10;
            assert!(GroupHeader::decode(&c).is_err(), "flip at {i} undetected");
        }
        assert!(GroupHeader::decode(&[0u8; 56]).is_err());
    }

    #[test]
    fn checkpoint_round_trip() {
        let c = CheckpointRecord {
            journal_id: 9,
            mark: 77,
            durable: 90,
            storage_epoch: 12,
        };
        assert_eq!(CheckpointRecord::decode(&c.encode()).unwrap(), c);
        for i in 0..CHECKPOINT_LEN {
            let mut b = c.encode();
            b[i] ^= 1;
            assert!(
                CheckpointRecord::decode(&b).is_err(),
                "flip at {i} undetected"
            );
        }
        assert!(CheckpointRecord::decode(&c.encode()[..48]).is_err());
    }

    #[test]
    fn checkpoint_version_1_reads_as_nothing_known_beyond_the_mark() {
        // A version 1 file as written before `durable` existed.
        let mut b = [0u8; 36];
        b[0..8].copy_from_slice(&CHECKPOINT_MAGIC);
        b[8..10].copy_from_slice(&1u16.to_le_bytes());
        b[16..24].copy_from_slice(&9u64.to_le_bytes());
        b[24..32].copy_from_slice(&77u64.to_le_bytes());
        let crc = crc32c::crc32c(&b[0..32]);
        b[32..36].copy_from_slice(&crc.to_le_bytes());
        let c = CheckpointRecord::decode(&b).unwrap();
        assert_eq!(
            (c.journal_id, c.mark, c.durable, c.storage_epoch),
            (9, 77, 77, 0)
        );
        let mut bad = b;
        bad[20] ^= 4;
        assert!(CheckpointRecord::decode(&bad).is_err());
        let mut v3 = c.encode();
        v3[8..10].copy_from_slice(&3u16.to_le_bytes());
        assert!(matches!(
            CheckpointRecord::decode(&v3),
            Err(FormatError::BadVersion { found: 3 })
        ));
    }

    #[test]
    fn newest_round_trip() {
        let r = NewestRecord {
            journal_id: 9,
            generation: 3,
            segment_id: 17,
            segment_len: 1 << 20,
        };
        let b = r.encode();
        assert_eq!(NewestRecord::decode(&b).unwrap(), r);
        for i in 0..b.len() {
            let mut c = b;
            c[i] ^= 4;
            assert!(NewestRecord::decode(&c).is_err(), "flip at {i} undetected");
        }
    }

    #[test]
    fn names() {
        assert_eq!(
            classify_name(&segment_file_name(5)),
            DirEntryKind::Segment(5)
        );
        assert_eq!(classify_name(&free_file_name(7)), DirEntryKind::Free(7));
        assert_eq!(classify_name("checkpoint"), DirEntryKind::Checkpoint);
        assert_eq!(classify_name("newest-segment"), DirEntryKind::Newest);
        assert_eq!(classify_name("x.jseg.tmp"), DirEntryKind::Temporary);
        assert_eq!(
            classify_name("VERSION"),
            DirEntryKind::Cookie,
            "the bookie's cookie"
        );
        assert_eq!(classify_name("zz.jseg"), DirEntryKind::Unknown);
        assert_eq!(
            classify_name("+00000000000000a.jseg"),
            DirEntryKind::Unknown
        );
    }
}
