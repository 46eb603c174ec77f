//! Byte formats of the entry log: entry data, the segment footer (the segment's own
//! index), the segment trailer, and the ledger-state file. Pure encode/decode, no I/O.
//!
//! Invariants: every decoder takes arbitrary bytes and returns a typed
//! [`FormatError`] instead of panicking (fuzzed by `fuzz/fuzz_targets/segment_*.rs`);
//! every encoder's output decodes back to the same value; every entry has a CRC32C
//! in its segment's footer that every read checks. All integers are little-endian. docs/formats.md
//! "Entry log segments" mirrors the layouts documented above each type here.

use std::fmt;

/// Largest entry payload accepted (the frame maximum of the wire protocol).
pub const MAX_ENTRY_BYTES: usize = 64 * 1024 * 1024;

/// Why bytes did not decode. Always a sign of corruption or of an unfinished write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatError(pub String);

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn err<T>(msg: impl Into<String>) -> Result<T, FormatError> {
    Err(FormatError(msg.into()))
}

/// Little-endian cursor over untrusted bytes; every read is bounds-checked.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }
    fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }
    fn bytes(&mut self, n: usize, what: &str) -> Result<&'a [u8], FormatError> {
        if self.remaining() < n {
            return err(format!(
                "truncated: {what} needs {n} bytes, {} left",
                self.remaining()
            ));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    fn u8(&mut self, what: &str) -> Result<u8, FormatError> {
        Ok(self.bytes(1, what)?[0])
    }
    fn u16(&mut self, what: &str) -> Result<u16, FormatError> {
        let b = self.bytes(2, what)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }
    fn u32(&mut self, what: &str) -> Result<u32, FormatError> {
        let b = self.bytes(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u64(&mut self, what: &str) -> Result<u64, FormatError> {
        let b = self.bytes(8, what)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }
}

fn le_u32(b: &[u8]) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[..4]);
    u32::from_le_bytes(a)
}

fn le_u64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_le_bytes(a)
}

// ---------------------------------------------------------------------------------
// Entry data
//
// A segment's data area holds the entries' payloads (each entry exactly as added),
// packed back to back from file offset 0 in (ledger, entry) order, with no header and
// no padding. What identifies and protects each payload lives in the footer: its
// offset, its length and its CRC32C (see `entry_crc`). Keeping the header out of the
// data area means a payload of 4096 bytes at a 4096-aligned offset is read with one
// 4 KiB I/O, and the in-memory index, which already holds offset and length, holds the
// CRC in what was padding of `EntryLoc`.
// ---------------------------------------------------------------------------------

/// CRC32C of an entry as stored in the footer: over ledger_id (u64 LE), entry_id
/// (u64 LE), then the payload. Mixing in the ids means a payload read from the wrong
/// place (a misdirected write or read) fails the check even if its bytes are intact.
///
/// The two ids go in as one 16-byte slice: the same CRC as feeding them one at a time, with
/// one call fewer per add (each call has its own head and tail loops).
pub fn entry_crc(ledger: u64, entry: u64, payload: &[u8]) -> u32 {
    let mut ids = [0u8; 16];
    ids[..8].copy_from_slice(&ledger.to_le_bytes());
    ids[8..].copy_from_slice(&entry.to_le_bytes());
    crc32c::crc32c_append(crc32c::crc32c(&ids), payload)
}

/// Checks the payload at the start of `data` against the entry's footer record
/// (length and CRC32C) and returns it.
pub fn check_entry<'a>(
    data: &'a [u8],
    ledger: u64,
    loc: &EntryLoc,
) -> Result<&'a [u8], FormatError> {
    let need = loc.len as usize;
    let Some(payload) = data.get(..need) else {
        return err(format!(
            "entry {ledger}/{} truncated: {} of {need} bytes",
            loc.entry,
            data.len()
        ));
    };
    let actual = entry_crc(ledger, loc.entry, payload);
    if actual != loc.crc {
        return err(format!(
            "entry checksum mismatch for ledger {ledger} entry {}: stored {:#010x}, \
             computed {actual:#010x}",
            loc.entry, loc.crc
        ));
    }
    Ok(payload)
}

// ---------------------------------------------------------------------------------
// Segment footer (the segment's index)
//
// Format:
//   0..4     ledger_count: u32 LE
//   then ledger_count ledger blocks, in strictly increasing ledger_id order:
//     ledger_id: u64 LE
//     entry_count: u32 LE (>= 1)
//     entry_count × { entry_id: u64 LE, offset: u64 LE, payload_len: u32 LE, crc32c: u32 LE }
//       entry ids strictly increasing; offset is the file offset of the payload;
//       offset + payload_len <= the trailer's data_len; crc32c is `entry_crc`.
// The footer's CRC32C is in the trailer.
// ---------------------------------------------------------------------------------

/// Where one entry's record lies in a segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EntryLoc {
    pub entry: u64,
    /// File offset of the payload.
    pub offset: u64,
    /// Payload length.
    pub len: u32,
    /// `entry_crc` of the payload (fills what would be padding: 24 bytes either way).
    pub crc: u32,
}

impl EntryLoc {
    /// Bytes the entry occupies in the segment's data area.
    pub fn stored_len(&self) -> u64 {
        self.len as u64
    }
}

/// One ledger's entries in a segment, sorted by entry id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LedgerRun {
    pub ledger: u64,
    pub entries: Vec<EntryLoc>,
}

pub(crate) const FOOTER_LEDGER_HEADER: usize = 12;
pub(crate) const FOOTER_ENTRY_LEN: usize = 24;

/// Bytes `encode_footer` writes for `runs`.
pub fn footer_len(runs: &[LedgerRun]) -> usize {
    4 + runs
        .iter()
        .map(|r| FOOTER_LEDGER_HEADER + FOOTER_ENTRY_LEN * r.entries.len())
        .sum::<usize>()
}

/// Encodes a footer. `runs` must be sorted by ledger with sorted entries.
pub fn encode_footer(runs: &[LedgerRun], out: &mut Vec<u8>) {
    out.extend_from_slice(&(runs.len() as u32).to_le_bytes());
    for r in runs {
        out.extend_from_slice(&r.ledger.to_le_bytes());
        out.extend_from_slice(&(r.entries.len() as u32).to_le_bytes());
        for e in &r.entries {
            out.extend_from_slice(&e.entry.to_le_bytes());
            out.extend_from_slice(&e.offset.to_le_bytes());
            out.extend_from_slice(&e.len.to_le_bytes());
            out.extend_from_slice(&e.crc.to_le_bytes());
        }
    }
}

/// Decodes and validates a footer against the segment's `data_len`.
pub fn decode_footer(buf: &[u8], data_len: u64) -> Result<Vec<LedgerRun>, FormatError> {
    let mut r = Reader::new(buf);
    let count = r.u32("ledger count")? as usize;
    if count > r.remaining() / (FOOTER_LEDGER_HEADER + FOOTER_ENTRY_LEN) {
        return err(format!(
            "footer claims {count} ledgers, too many for its size"
        ));
    }
    let mut runs = Vec::with_capacity(count);
    let mut prev_ledger: Option<u64> = None;
    for _ in 0..count {
        let ledger = r.u64("ledger id")?;
        if prev_ledger.is_some_and(|p| p >= ledger) {
            return err(format!(
                "footer ledgers not strictly increasing at {ledger}"
            ));
        }
        prev_ledger = Some(ledger);
        let n = r.u32("entry count")? as usize;
        if n == 0 {
            return err(format!("footer ledger {ledger} has no entries"));
        }
        if n > r.remaining() / FOOTER_ENTRY_LEN {
            return err(format!(
                "footer ledger {ledger} claims {n} entries, too many"
            ));
        }
        let mut entries = Vec::with_capacity(n);
        let mut prev_entry: Option<u64> = None;
        for _ in 0..n {
            let entry = r.u64("entry id")?;
            let offset = r.u64("entry offset")?;
            let len = r.u32("payload length")?;
            let crc = r.u32("entry crc")?;
            if prev_entry.is_some_and(|p| p >= entry) {
                return err(format!(
                    "footer ledger {ledger} entries not strictly increasing at {entry}"
                ));
            }
            prev_entry = Some(entry);
            let end = offset.checked_add(len as u64).filter(|&e| e <= data_len);
            if end.is_none() || len as usize > MAX_ENTRY_BYTES {
                return err(format!(
                    "footer entry {ledger}/{entry} at {offset}+{len} outside data of {data_len} bytes"
                ));
            }
            entries.push(EntryLoc {
                entry,
                offset,
                len,
                crc,
            });
        }
        runs.push(LedgerRun { ledger, entries });
    }
    if r.remaining() != 0 {
        return err(format!("{} trailing bytes after footer", r.remaining()));
    }
    Ok(runs)
}

// ---------------------------------------------------------------------------------
// Segment trailer: the last TRAILER_LEN bytes of every segment file.
//
// Format (64 bytes):
//   0..8    magic "BKSEGTRL"
//   8..12   version: u32 LE (= 2; version 1 stored a 24-byte header before every
//           payload and is not read: no version-1 segment was ever deployed)
//   12..16  entry_count: u32 LE (entries in the segment)
//   16..24  segment_id: u64 LE (equals the id in the file name)
//   24..32  seq: u64 LE (precedence: a higher seq's copy of an entry wins; a compacted
//           segment keeps the seq of the segment it was compacted from)
//   32..40  data_len: u64 LE (entry payloads occupy [0, data_len))
//   40..48  footer_offset: u64 LE (>= data_len)
//   48..52  footer_len: u32 LE
//   52..56  footer_crc32c: u32 LE
//   56..60  reserved, zero
//   60..64  trailer_crc32c: u32 LE over bytes 0..60
// The file length is a multiple of 4096; bytes between the footer's end and the
// trailer are zero.
// ---------------------------------------------------------------------------------

/// Bytes of the trailer at the end of every segment.
pub const TRAILER_LEN: usize = 64;
const TRAILER_MAGIC: &[u8; 8] = b"BKSEGTRL";
const SEGMENT_VERSION: u32 = 2;

/// A decoded segment trailer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Trailer {
    pub entry_count: u32,
    pub segment_id: u64,
    pub seq: u64,
    pub data_len: u64,
    pub footer_offset: u64,
    pub footer_len: u32,
    pub footer_crc: u32,
}

impl Trailer {
    /// Encodes the trailer.
    pub fn encode(&self) -> [u8; TRAILER_LEN] {
        let mut t = [0u8; TRAILER_LEN];
        t[0..8].copy_from_slice(TRAILER_MAGIC);
        t[8..12].copy_from_slice(&SEGMENT_VERSION.to_le_bytes());
        t[12..16].copy_from_slice(&self.entry_count.to_le_bytes());
        t[16..24].copy_from_slice(&self.segment_id.to_le_bytes());
        t[24..32].copy_from_slice(&self.seq.to_le_bytes());
        t[32..40].copy_from_slice(&self.data_len.to_le_bytes());
        t[40..48].copy_from_slice(&self.footer_offset.to_le_bytes());
        t[48..52].copy_from_slice(&self.footer_len.to_le_bytes());
        t[52..56].copy_from_slice(&self.footer_crc.to_le_bytes());
        let crc = crc32c::crc32c(&t[0..60]);
        t[60..64].copy_from_slice(&crc.to_le_bytes());
        t
    }

    /// Decodes a trailer (the last 64 bytes of `buf`) and checks it against the file length.
    pub fn decode(buf: &[u8], file_len: u64) -> Result<Trailer, FormatError> {
        if buf.len() < TRAILER_LEN {
            return err(format!("trailer truncated: {} bytes", buf.len()));
        }
        let t = &buf[buf.len() - TRAILER_LEN..];
        if &t[0..8] != TRAILER_MAGIC {
            return err("bad trailer magic");
        }
        let stored = le_u32(&t[60..64]);
        let actual = crc32c::crc32c(&t[0..60]);
        if stored != actual {
            return err(format!(
                "trailer checksum mismatch: stored {stored:#010x}, computed {actual:#010x}"
            ));
        }
        let version = le_u32(&t[8..12]);
        if version != SEGMENT_VERSION {
            return err(format!("unsupported segment version {version}"));
        }
        let tr = Trailer {
            entry_count: le_u32(&t[12..16]),
            segment_id: le_u64(&t[16..24]),
            seq: le_u64(&t[24..32]),
            data_len: le_u64(&t[32..40]),
            footer_offset: le_u64(&t[40..48]),
            footer_len: le_u32(&t[48..52]),
            footer_crc: le_u32(&t[52..56]),
        };
        let footer_end = tr.footer_offset.checked_add(tr.footer_len as u64);
        let limit = file_len.saturating_sub(TRAILER_LEN as u64);
        if tr.footer_offset < tr.data_len || footer_end.is_none_or(|e| e > limit) {
            return err(format!(
                "trailer layout invalid: data {} footer {}+{} file {file_len}",
                tr.data_len, tr.footer_offset, tr.footer_len
            ));
        }
        Ok(tr)
    }
}

/// Decodes a footer whose bytes are `footer` and checks its CRC from the trailer.
pub fn decode_checked_footer(
    trailer: &Trailer,
    footer: &[u8],
) -> Result<Vec<LedgerRun>, FormatError> {
    if footer.len() != trailer.footer_len as usize {
        return err(format!(
            "footer is {} bytes, trailer says {}",
            footer.len(),
            trailer.footer_len
        ));
    }
    let crc = crc32c::crc32c(footer);
    if crc != trailer.footer_crc {
        return err(format!(
            "footer checksum mismatch: stored {:#010x}, computed {crc:#010x}",
            trailer.footer_crc
        ));
    }
    let runs = decode_footer(footer, trailer.data_len)?;
    let n: usize = runs.iter().map(|r| r.entries.len()).sum();
    if n != trailer.entry_count as usize {
        return err(format!(
            "footer holds {n} entries, trailer says {}",
            trailer.entry_count
        ));
    }
    Ok(runs)
}

/// Decodes a whole segment image: trailer from its last 64 bytes, footer from where the
/// trailer says, and checks every entry the footer lists (length and CRC32C).
/// Used by the fuzz target `segment_index` and by offline checks.
pub fn decode_segment(file: &[u8]) -> Result<(Trailer, Vec<LedgerRun>), FormatError> {
    let trailer = Trailer::decode(file, file.len() as u64)?;
    let start = trailer.footer_offset as usize;
    let end = start + trailer.footer_len as usize;
    let footer = file
        .get(start..end)
        .ok_or_else(|| FormatError("footer outside the file".into()))?;
    let runs = decode_checked_footer(&trailer, footer)?;
    for r in &runs {
        for e in &r.entries {
            let data = file
                .get(e.offset as usize..)
                .ok_or_else(|| FormatError("entry outside the file".into()))?;
            check_entry(data, r.ledger, e)?;
        }
    }
    Ok((trailer, runs))
}

// ---------------------------------------------------------------------------------
// Ledger-state file (`ledgers.state` in every ledger directory)
//
// Format:
//   0..8    magic "BKLSTATE"
//   8..12   version: u32 LE (= 2; version 1 is read too: it has no segment list)
//   12..16  body_crc32c: u32 LE over the body
//   16..24  body_len: u64 LE
//   24..    body:
//     epoch: u64 LE            (increases with every write; the highest valid copy wins)
//     checkpoints: u64 LE      (count of completed `flush()` calls, i.e. checkpoints; with
//                              `checkpoints_confirmed_by_caller`, of the checkpoints the
//                              caller confirmed: `EntryLog::checkpoint_confirmed`)
//     next_segment_id: u64 LE
//     ledger_count: u32 LE
//     ledger_count × ledger record, ledger ids strictly increasing:
//       ledger_id: u64 LE
//       flags: u8   bit0 fenced, bit1 has master key, bit2 has explicit LAC, bit3 has LAC
//       lac: u64 LE (meaningful when bit3)
//       key_len: u16 LE, key bytes          (present when bit1)
//       elac_len: u32 LE, explicit LAC body (present when bit2)
//     tombstone_count: u32 LE
//     tombstone_count × { ledger_id: u64 LE, checkpoints_at_deletion: u64 LE }
//     (version 2 only) segment_count: u32 LE
//     segment_count × segment record, segment ids strictly increasing:
//       segment_id: u64 LE, seq: u64 LE, file_len: u64 LE, dir_index: u32 LE, reserved u32 (0)
//     The segments the entry log relies on when the file was written: every one of them
//     must exist at start-up with that length (a segment is dropped from this list, durably,
//     before its file is removed); a segment on disk that is not listed is newer than the
//     file (flushed after it) and is loaded as usual.
//   then zero padding to a multiple of 4096 (ignored).
// ---------------------------------------------------------------------------------

const STATE_MAGIC: &[u8; 8] = b"BKLSTATE";
const STATE_VERSION: u32 = 2;
/// The version without a segment list (still read, so an upgrade starts).
const STATE_VERSION_NO_SEGMENTS: u32 = 1;
const STATE_SEGMENT_RECORD_LEN: usize = 32;
const STATE_HEADER_LEN: usize = 24;
/// Largest explicit LAC body kept (a LAC body is 16 bytes plus a digest).
pub const MAX_EXPLICIT_LAC_BYTES: usize = 64 * 1024;

/// Persisted state of one ledger.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LedgerStateRecord {
    pub ledger: u64,
    pub fenced: bool,
    pub master_key: Option<Vec<u8>>,
    pub explicit_lac: Option<Vec<u8>>,
    pub lac: Option<u64>,
}

/// A segment the entry log relies on, as recorded in the ledger-state file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SegmentRecord {
    pub segment_id: u64,
    pub seq: u64,
    pub file_len: u64,
    /// Index of its ledger directory in the configured list (for messages).
    pub dir_index: u32,
}

/// The whole ledger-state file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StateFile {
    pub epoch: u64,
    pub checkpoints: u64,
    pub next_segment_id: u64,
    pub ledgers: Vec<LedgerStateRecord>,
    /// (ledger, `checkpoints` at deletion)
    pub tombstones: Vec<(u64, u64)>,
    /// The segments that must exist; `None` when read from a version-1 file.
    pub segments: Option<Vec<SegmentRecord>>,
}

impl StateFile {
    /// Encodes the file (unpadded).
    pub fn encode(&self) -> Vec<u8> {
        let mut body = Vec::with_capacity(64 + self.ledgers.len() * 48);
        body.extend_from_slice(&self.epoch.to_le_bytes());
        body.extend_from_slice(&self.checkpoints.to_le_bytes());
        body.extend_from_slice(&self.next_segment_id.to_le_bytes());
        body.extend_from_slice(&(self.ledgers.len() as u32).to_le_bytes());
        for l in &self.ledgers {
            body.extend_from_slice(&l.ledger.to_le_bytes());
            let flags = (l.fenced as u8)
                | ((l.master_key.is_some() as u8) << 1)
                | ((l.explicit_lac.is_some() as u8) << 2)
                | ((l.lac.is_some() as u8) << 3);
            body.push(flags);
            body.extend_from_slice(&l.lac.unwrap_or(0).to_le_bytes());
            if let Some(k) = &l.master_key {
                body.extend_from_slice(&(k.len() as u16).to_le_bytes());
                body.extend_from_slice(k);
            }
            if let Some(e) = &l.explicit_lac {
                body.extend_from_slice(&(e.len() as u32).to_le_bytes());
                body.extend_from_slice(e);
            }
        }
        body.extend_from_slice(&(self.tombstones.len() as u32).to_le_bytes());
        for (l, e) in &self.tombstones {
            body.extend_from_slice(&l.to_le_bytes());
            body.extend_from_slice(&e.to_le_bytes());
        }
        let segments = self.segments.as_deref().unwrap_or_default();
        body.extend_from_slice(&(segments.len() as u32).to_le_bytes());
        for sg in segments {
            body.extend_from_slice(&sg.segment_id.to_le_bytes());
            body.extend_from_slice(&sg.seq.to_le_bytes());
            body.extend_from_slice(&sg.file_len.to_le_bytes());
            body.extend_from_slice(&sg.dir_index.to_le_bytes());
            body.extend_from_slice(&0u32.to_le_bytes());
        }
        let mut out = Vec::with_capacity(STATE_HEADER_LEN + body.len());
        out.extend_from_slice(STATE_MAGIC);
        out.extend_from_slice(&STATE_VERSION.to_le_bytes());
        out.extend_from_slice(&crc32c::crc32c(&body).to_le_bytes());
        out.extend_from_slice(&(body.len() as u64).to_le_bytes());
        out.extend_from_slice(&body);
        out
    }

    /// Decodes a state file (trailing padding allowed).
    pub fn decode(buf: &[u8]) -> Result<StateFile, FormatError> {
        let mut r = Reader::new(buf);
        if r.bytes(8, "state magic")? != STATE_MAGIC {
            return err("bad ledger-state magic");
        }
        let version = r.u32("state version")?;
        if version != STATE_VERSION && version != STATE_VERSION_NO_SEGMENTS {
            return err(format!("unsupported ledger-state version {version}"));
        }
        let crc = r.u32("state crc")?;
        let body_len = r.u64("state body length")?;
        if body_len > r.remaining() as u64 {
            return err(format!("ledger-state body of {body_len} bytes truncated"));
        }
        let body = r.bytes(body_len as usize, "state body")?;
        let actual = crc32c::crc32c(body);
        if actual != crc {
            return err(format!(
                "ledger-state checksum mismatch: stored {crc:#010x}, computed {actual:#010x}"
            ));
        }
        let mut r = Reader::new(body);
        let epoch = r.u64("epoch")?;
        let checkpoints = r.u64("checkpoints")?;
        let next_segment_id = r.u64("next segment id")?;
        let n = r.u32("ledger count")? as usize;
        if n > r.remaining() / 17 {
            return err(format!("ledger-state claims {n} ledgers, too many"));
        }
        let mut ledgers = Vec::with_capacity(n);
        let mut prev: Option<u64> = None;
        for _ in 0..n {
            let ledger = r.u64("ledger id")?;
            if prev.is_some_and(|p| p >= ledger) {
                return err(format!("ledger-state ids not increasing at {ledger}"));
            }
            prev = Some(ledger);
            let flags = r.u8("flags")?;
            if flags & !0x0f != 0 {
                return err(format!("ledger {ledger}: unknown flags {flags:#x}"));
            }
            let lac = r.u64("lac")?;
            let master_key = if flags & 2 != 0 {
                let kl = r.u16("key length")? as usize;
                Some(r.bytes(kl, "master key")?.to_vec())
            } else {
                None
            };
            let explicit_lac = if flags & 4 != 0 {
                let el = r.u32("explicit lac length")? as usize;
                if el > MAX_EXPLICIT_LAC_BYTES {
                    return err(format!("ledger {ledger}: explicit LAC of {el} bytes"));
                }
                Some(r.bytes(el, "explicit lac")?.to_vec())
            } else {
                None
            };
            ledgers.push(LedgerStateRecord {
                ledger,
                fenced: flags & 1 != 0,
                master_key,
                explicit_lac,
                lac: (flags & 8 != 0).then_some(lac),
            });
        }
        let t = r.u32("tombstone count")? as usize;
        if t > r.remaining() / 16 {
            return err(format!("ledger-state claims {t} tombstones, too many"));
        }
        let mut tombstones = Vec::with_capacity(t);
        for _ in 0..t {
            tombstones.push((r.u64("tombstone ledger")?, r.u64("tombstone epoch")?));
        }
        let segments = if version == STATE_VERSION_NO_SEGMENTS {
            None
        } else {
            let n = r.u32("segment count")? as usize;
            if n > r.remaining() / STATE_SEGMENT_RECORD_LEN {
                return err(format!("ledger-state claims {n} segments, too many"));
            }
            let mut v: Vec<SegmentRecord> = Vec::with_capacity(n);
            for _ in 0..n {
                let rec = SegmentRecord {
                    segment_id: r.u64("segment id")?,
                    seq: r.u64("segment seq")?,
                    file_len: r.u64("segment length")?,
                    dir_index: r.u32("segment directory")?,
                };
                if r.u32("segment reserved")? != 0 {
                    return err(format!("segment {}: reserved bytes set", rec.segment_id));
                }
                if v.last().is_some_and(|p| p.segment_id >= rec.segment_id) {
                    return err(format!(
                        "ledger-state segment ids not increasing at {}",
                        rec.segment_id
                    ));
                }
                v.push(rec);
            }
            Some(v)
        };
        if r.remaining() != 0 {
            return err(format!(
                "{} trailing bytes in ledger-state body",
                r.remaining()
            ));
        }
        Ok(StateFile {
            epoch,
            checkpoints,
            next_segment_id,
            ledgers,
            tombstones,
            segments,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `entry_crc(7, 9, b"hello entry")` as written by every earlier release.
    const ENTRY_CRC_HELLO: u32 = 0xEF94_0ACD;

    /// The footer's CRC is a format: ledger id, entry id and payload fed one after the
    /// other, whatever the number of calls that computes it.
    #[test]
    fn entry_crc_is_the_crc_of_ids_then_payload() {
        for len in [0usize, 1, 7, 8, 9, 63, 1024, 1100, 5000] {
            let payload: Vec<u8> = (0..len).map(|i| (i * 31 + len) as u8).collect();
            for (ledger, entry) in [(0u64, 0u64), (7, 9), (u64::MAX, 1 << 40)] {
                let chained = crc32c::crc32c_append(
                    crc32c::crc32c_append(
                        crc32c::crc32c(&ledger.to_le_bytes()),
                        &entry.to_le_bytes(),
                    ),
                    &payload,
                );
                assert_eq!(entry_crc(ledger, entry, &payload), chained, "len {len}");
            }
        }
        assert_eq!(entry_crc(7, 9, b"hello entry"), ENTRY_CRC_HELLO);
    }

    #[test]
    fn entry_check_round_trip_and_bit_flip() {
        let payload = b"hello entry".to_vec();
        let loc = EntryLoc {
            entry: 9,
            offset: 0,
            len: payload.len() as u32,
            crc: entry_crc(7, 9, &payload),
        };
        assert_eq!(check_entry(&payload, 7, &loc).unwrap(), &payload[..]);
        for bit in 0..payload.len() * 8 {
            let mut bad = payload.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            assert!(check_entry(&bad, 7, &loc).is_err());
        }
        // Another ledger's or entry's copy of the same bytes does not pass.
        assert!(check_entry(&payload, 8, &loc).is_err());
        assert!(check_entry(&payload, 7, &EntryLoc { entry: 8, ..loc }).is_err());
        // Too few bytes is an error, not a panic.
        assert!(check_entry(&payload[..3], 7, &loc).is_err());
    }

    #[test]
    fn footer_and_trailer_round_trip() {
        let runs = vec![
            LedgerRun {
                ledger: 1,
                entries: vec![
                    EntryLoc {
                        entry: 0,
                        offset: 0,
                        len: 10,
                        crc: 0xdead_beef,
                    },
                    EntryLoc {
                        entry: 5,
                        offset: 34,
                        len: 1,
                        crc: 1,
                    },
                ],
            },
            LedgerRun {
                ledger: 3,
                entries: vec![EntryLoc {
                    entry: 2,
                    offset: 59,
                    len: 0,
                    crc: 0,
                }],
            },
        ];
        let mut f = Vec::new();
        encode_footer(&runs, &mut f);
        assert_eq!(f.len(), footer_len(&runs));
        let tr = Trailer {
            entry_count: 3,
            segment_id: 4,
            seq: 4,
            data_len: 83,
            footer_offset: 83,
            footer_len: f.len() as u32,
            footer_crc: crc32c::crc32c(&f),
        };
        let enc = tr.encode();
        assert_eq!(Trailer::decode(&enc, 4096).unwrap(), tr);
        assert_eq!(decode_checked_footer(&tr, &f).unwrap(), runs);
        // Any truncation or flip fails cleanly.
        for cut in 0..f.len() {
            assert!(decode_checked_footer(&tr, &f[..cut]).is_err());
        }
        for bit in 0..enc.len() * 8 {
            let mut bad = enc;
            bad[bit / 8] ^= 1 << (bit % 8);
            assert!(Trailer::decode(&bad, 4096).is_err());
        }
    }

    #[test]
    fn state_file_round_trip() {
        let s = StateFile {
            epoch: 3,
            checkpoints: 2,
            next_segment_id: 10,
            ledgers: vec![
                LedgerStateRecord {
                    ledger: 1,
                    fenced: true,
                    master_key: Some(vec![1, 2, 3]),
                    explicit_lac: Some(vec![9; 24]),
                    lac: Some(5),
                },
                LedgerStateRecord {
                    ledger: 2,
                    ..Default::default()
                },
            ],
            tombstones: vec![(4, 2)],
            segments: Some(vec![
                SegmentRecord {
                    segment_id: 3,
                    seq: 3,
                    file_len: 8192,
                    dir_index: 0,
                },
                SegmentRecord {
                    segment_id: 7,
                    seq: 5,
                    file_len: 4096,
                    dir_index: 1,
                },
            ]),
        };
        let mut enc = s.encode();
        assert_eq!(StateFile::decode(&enc).unwrap(), s);
        enc.resize(4096, 0);
        assert_eq!(StateFile::decode(&enc).unwrap(), s);
        for cut in 0..60 {
            assert!(StateFile::decode(&enc[..cut]).is_err());
        }
        enc[30] ^= 1;
        assert!(StateFile::decode(&enc).is_err());
    }

    #[test]
    fn state_file_version_1_reads_without_segment_list() {
        let s = StateFile {
            epoch: 1,
            next_segment_id: 2,
            ..Default::default()
        };
        let v2 = s.encode();
        // Version 1 is version 2 without the trailing segment count.
        let body = &v2[STATE_HEADER_LEN..v2.len() - 4];
        let mut v1 = Vec::new();
        v1.extend_from_slice(STATE_MAGIC);
        v1.extend_from_slice(&1u32.to_le_bytes());
        v1.extend_from_slice(&crc32c::crc32c(body).to_le_bytes());
        v1.extend_from_slice(&(body.len() as u64).to_le_bytes());
        v1.extend_from_slice(body);
        let d = StateFile::decode(&v1).unwrap();
        assert_eq!(d.segments, None);
        assert_eq!(d.epoch, 1);
        assert_eq!(StateFile::decode(&v2).unwrap().segments, Some(vec![]));
    }
}
