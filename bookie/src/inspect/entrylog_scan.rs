//! Offline reading of ledger directories for `bookie inspect`: the segment files, each
//! segment's trailer and footer (its index), the entries' bytes, and the ledger-state
//! file, decoded with `bk_entrylog::format` (docs/formats.md, "Entry log segments").
//!
//! What a scan guarantees:
//! - a finished segment (`seg-<id>.seg`) is never modified, so what is read is what
//!   the bookie serves; a `.seg.tmp` is being written and is only listed;
//! - an index that does not decode is kept as [`IndexError`] with the file offset of
//!   the part that failed (trailer or footer), never a panic;
//! - [`check_entries`] reads every entry's payload and checks its length and CRC32C
//!   against the footer with the online scrubber's check (`bk_entrylog::scrub`),
//!   reporting each failure with the entry's offset, ledger and entry id;
//! - the ledger state is the copy with the highest valid epoch over all directories
//!   (as start-up takes it); copies that do not decode are kept with why.

use std::path::{Path, PathBuf};

use bk_disk::SECTOR;
use bk_entrylog::format::{self, LedgerRun, StateFile, Trailer, TRAILER_LEN};
use bk_entrylog::scrub::Finding;
use bk_entrylog::{parse_segment_name, STATE_FILE};

use super::files::{Reader, RoFile};

/// A segment's index that does not decode: where and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexError {
    pub offset: u64,
    pub reason: String,
}

/// A finished segment file and its index.
#[derive(Clone, Debug)]
pub struct SegmentIndex {
    pub id: u64,
    pub dir_index: usize,
    pub path: PathBuf,
    pub size: u64,
    pub index: Result<(Trailer, Vec<LedgerRun>), IndexError>,
}

impl SegmentIndex {
    pub fn entry_count(&self) -> u64 {
        match &self.index {
            Ok((_, runs)) => runs.iter().map(|r| r.entries.len() as u64).sum(),
            Err(_) => 0,
        }
    }

    pub fn ledgers(&self) -> Vec<u64> {
        match &self.index {
            Ok((_, runs)) => runs.iter().map(|r| r.ledger).collect(),
            Err(_) => Vec::new(),
        }
    }
}

/// One ledger directory: its finished segments, the files being written, the state file.
#[derive(Clone, Debug)]
pub struct LedgerDir {
    pub dir: PathBuf,
    /// Finished segments: (id, path).
    pub segments: Vec<(u64, PathBuf)>,
    /// `.seg.tmp` files (a flush or compaction being written).
    pub in_progress: Vec<PathBuf>,
    pub has_state: bool,
    /// Other files.
    pub others: Vec<String>,
}

pub fn open_dir(r: &mut Reader, dir: &Path) -> std::io::Result<LedgerDir> {
    let names = r.list(dir)?;
    let mut d = LedgerDir {
        dir: dir.to_path_buf(),
        segments: Vec::new(),
        in_progress: Vec::new(),
        has_state: false,
        others: Vec::new(),
    };
    for name in names {
        match parse_segment_name(&name) {
            Some((id, false)) => d.segments.push((id, dir.join(&name))),
            Some((_, true)) => d.in_progress.push(dir.join(&name)),
            None if name == STATE_FILE => d.has_state = true,
            None => d.others.push(name),
        }
    }
    d.segments.sort();
    Ok(d)
}

/// Loads the trailer and footer of `path`. `Err(io)` only for I/O errors (a vanished
/// file is `NotFound`); a segment that does not decode is `Ok` with an [`IndexError`].
pub fn load_index(
    r: &mut Reader,
    id: u64,
    dir_index: usize,
    path: &Path,
) -> std::io::Result<SegmentIndex> {
    let mut f = r.open(path)?;
    let index = decode_index(r, &mut f);
    let size = f.len;
    r.close(f);
    Ok(SegmentIndex {
        id,
        dir_index,
        path: path.to_path_buf(),
        size,
        index: index?,
    })
}

fn decode_index(
    r: &mut Reader,
    f: &mut RoFile,
) -> std::io::Result<Result<(Trailer, Vec<LedgerRun>), IndexError>> {
    let len = f.len;
    if len < SECTOR as u64 || !len.is_multiple_of(SECTOR as u64) {
        return Ok(Err(IndexError {
            offset: len,
            reason: format!("segment length {len} is not a positive multiple of {SECTOR}"),
        }));
    }
    let at = len - TRAILER_LEN as u64;
    let b = r.read(f, at, TRAILER_LEN)?;
    let trailer = match Trailer::decode(b, len) {
        Ok(t) => t,
        Err(e) => {
            return Ok(Err(IndexError {
                offset: at,
                reason: format!("trailer: {e}"),
            }))
        }
    };
    let b = r.read(f, trailer.footer_offset, trailer.footer_len as usize)?;
    match format::decode_checked_footer(&trailer, b) {
        Ok(runs) => Ok(Ok((trailer, runs))),
        Err(e) => Ok(Err(IndexError {
            offset: trailer.footer_offset,
            reason: format!("footer: {e}"),
        })),
    }
}

/// An entry whose bytes fail their footer record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadEntry {
    pub ledger: u64,
    pub entry: u64,
    pub offset: u64,
    pub reason: String,
}

/// One entry as read back: (ledger, entry, offset, length, LAC from its bytes, CRC ok).
#[derive(Clone, Debug)]
pub struct EntryRead {
    pub ledger: u64,
    pub entry: u64,
    pub offset: u64,
    pub len: u32,
    pub lac: Option<i64>,
    pub crc_ok: Result<(), String>,
}

/// Reads every entry of `seg` (those `keep` accepts), checking each against its footer
/// record, in file order.
pub fn read_entries(
    r: &mut Reader,
    seg: &SegmentIndex,
    keep: &dyn Fn(u64, u64) -> bool,
) -> std::io::Result<Vec<EntryRead>> {
    let Ok((_, runs)) = &seg.index else {
        return Ok(Vec::new());
    };
    let mut f = r.open(&seg.path)?;
    let mut out = Vec::new();
    for run in runs {
        for loc in &run.entries {
            if !keep(run.ledger, loc.entry) {
                continue;
            }
            let data = r.read(&mut f, loc.offset, loc.len as usize)?;
            let lac = data
                .get(16..24)
                .and_then(|b| <[u8; 8]>::try_from(b).ok())
                .map(i64::from_be_bytes);
            let crc_ok = format::check_entry(data, run.ledger, loc)
                .map(|_| ())
                .map_err(|e| e.to_string());
            out.push(EntryRead {
                ledger: run.ledger,
                entry: loc.entry,
                offset: loc.offset,
                len: loc.len,
                lac,
                crc_ok,
            });
        }
    }
    r.close(f);
    Ok(out)
}

/// The entries of `seg` that fail their checks: the online scrubber's check
/// (`bk_entrylog::scrub::check_segment`), so `verify` and a scrub pass judge alike. Its
/// index findings are left out: [`load_index`] reported them already.
pub fn check_entries(r: &mut Reader, seg: &SegmentIndex) -> std::io::Result<Vec<BadEntry>> {
    if seg.index.is_err() {
        return Ok(Vec::new());
    }
    Ok(r.check_segment(&seg.path, seg.id)?
        .findings
        .into_iter()
        .filter_map(|f| match f {
            Finding::Entry {
                ledger,
                loc,
                detail,
            } => Some(BadEntry {
                ledger,
                entry: loc.entry,
                offset: loc.offset,
                reason: detail,
            }),
            Finding::Index { .. } => None,
        })
        .collect())
}

/// One copy of the ledger-state file.
#[derive(Clone, Debug)]
pub struct StateCopy {
    pub path: PathBuf,
    pub state: Result<StateFile, String>,
}

/// Every copy of the ledger-state file, and the index of the one start-up would take
/// (highest valid epoch).
pub fn read_states(r: &mut Reader, dirs: &[LedgerDir]) -> (Vec<StateCopy>, Option<usize>) {
    let mut copies = Vec::new();
    for d in dirs.iter().filter(|d| d.has_state) {
        let path = d.dir.join(STATE_FILE);
        let state = match r.read_small(&path, u64::MAX) {
            Ok(b) => StateFile::decode(&b).map_err(|e| e.to_string()),
            Err(e) => Err(format!("cannot read: {e}")),
        };
        copies.push(StateCopy { path, state });
    }
    let best = copies
        .iter()
        .enumerate()
        .filter_map(|(i, c)| c.state.as_ref().ok().map(|s| (s.epoch, i)))
        .max()
        .map(|(_, i)| i);
    (copies, best)
}

/// Lists every ledger directory and loads every finished segment's index (segments
/// that vanish meanwhile are skipped).
pub fn load_all(
    r: &mut Reader,
    dirs: &[PathBuf],
) -> std::io::Result<(Vec<LedgerDir>, Vec<SegmentIndex>)> {
    let mut lds = Vec::new();
    let mut segs = Vec::new();
    for (di, dir) in dirs.iter().enumerate() {
        let d = open_dir(r, dir)?;
        for (id, path) in &d.segments {
            match load_index(r, *id, di, path) {
                Ok(s) => segs.push(s),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        lds.push(d);
    }
    Ok((lds, segs))
}
