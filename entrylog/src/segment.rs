//! Segment file I/O through the `Disk` trait: writing a whole segment sequentially
//! (large aligned writes, then fdatasync, then rename from `.tmp`, then directory
//! sync), loading a segment's trailer and footer, and reading entries back.
//!
//! Invariants: a file named `seg-<id>.seg` was fully written and datasynced before
//! the rename that gave it that name, so at start-up a `.seg` that does not decode is
//! corruption, while a `.seg.tmp` is an unfinished write to delete. Every entry read
//! back is checked against the length and CRC32C of its footer entry.

use crate::format::{self, EntryLoc, LedgerRun, Trailer, TRAILER_LEN};
use crate::write_cache::CachedEntry;
use crate::{Error, Result};
use bk_disk::{round_up, AlignedBuf, Disk, FileId, Op, OpenOptions, SECTOR};
use bytes::Bytes;
use std::io;
use std::path::Path;

/// File name of a segment.
pub fn segment_name(id: u64) -> String {
    format!("seg-{id:016x}.seg")
}

/// Parses `seg-<16 hex>.seg` or `seg-<16 hex>.seg.tmp`; returns (id, is_tmp).
pub fn parse_segment_name(name: &str) -> Option<(u64, bool)> {
    let rest = name.strip_prefix("seg-")?;
    let (hex, tmp) = if let Some(h) = rest.strip_suffix(".seg.tmp") {
        (h, true)
    } else {
        (rest.strip_suffix(".seg")?, false)
    };
    if hex.len() != 16 {
        return None;
    }
    u64::from_str_radix(hex, 16).ok().map(|id| (id, tmp))
}

fn corruption(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::Corruption {
        path: path.to_path_buf(),
        detail: e.to_string(),
    }
}

/// Entries to write into a segment: sorted by (ledger, entry), each with its entry CRC
/// (computed when it arrived, or verified when compaction read it back).
pub struct SegmentInput<'a> {
    pub ledgers: Vec<(u64, Vec<(u64, &'a CachedEntry)>)>,
}

/// What a written segment holds.
pub struct WrittenSegment {
    pub file_len: u64,
    pub data_len: u64,
    pub runs: Vec<LedgerRun>,
}

/// Sequential writer of aligned chunks with a bounded number in flight.
struct ChunkWriter<'d> {
    disk: &'d mut dyn Disk,
    file: FileId,
    chunk: usize,
    depth: usize,
    buf: AlignedBuf,
    buf_offset: u64,
    spare: Vec<AlignedBuf>,
    in_flight: usize,
    error: Option<io::Error>,
    /// Called with the bytes submitted so far before each chunk is submitted (a
    /// background flush sleeps there to keep its pace: `flush_pace`).
    pace: &'d dyn Fn(u64),
}

impl<'d> ChunkWriter<'d> {
    fn new(
        disk: &'d mut dyn Disk,
        file: FileId,
        chunk: usize,
        depth: usize,
        pace: &'d dyn Fn(u64),
    ) -> Self {
        ChunkWriter {
            disk,
            file,
            chunk,
            depth,
            buf: AlignedBuf::with_capacity(chunk),
            buf_offset: 0,
            spare: Vec::new(),
            in_flight: 0,
            error: None,
            pace,
        }
    }

    fn append(&mut self, mut data: &[u8]) -> io::Result<()> {
        while !data.is_empty() {
            let room = self.chunk - self.buf.len();
            let n = room.min(data.len());
            self.buf.extend_from_slice(&data[..n]);
            data = &data[n..];
            if self.buf.len() == self.chunk {
                self.submit_buf()?;
            }
        }
        Ok(())
    }

    fn reap(&mut self, min: usize) {
        for c in self.disk.reap(min) {
            self.in_flight -= 1;
            let want = c.buf.as_ref().map(|b| b.len());
            match c.result {
                Ok(n) if Some(n) == want => {}
                Ok(n) => {
                    self.error.get_or_insert(io::Error::new(
                        io::ErrorKind::WriteZero,
                        format!("short write: {n} of {want:?} bytes"),
                    ));
                }
                Err(e) => {
                    self.error.get_or_insert(e);
                }
            }
            if let Some(mut b) = c.buf {
                b.set_len(0);
                self.spare.push(b);
            }
        }
    }

    fn submit_buf(&mut self) -> io::Result<()> {
        while self.in_flight >= self.depth {
            self.reap(1);
        }
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        (self.pace)(self.buf_offset);
        let next = self
            .spare
            .pop()
            .unwrap_or_else(|| AlignedBuf::with_capacity(self.chunk));
        let buf = std::mem::replace(&mut self.buf, next);
        let len = buf.len() as u64;
        let offset = self.buf_offset;
        self.buf_offset += len;
        self.disk.submit(
            offset,
            Op::Write {
                file: self.file,
                offset,
                buf,
            },
        )?;
        self.in_flight += 1;
        Ok(())
    }

    /// Pads the last chunk to a sector, writes it, and waits for every write.
    fn finish(&mut self) -> io::Result<()> {
        let mut result = Ok(());
        if !self.buf.is_empty() {
            self.buf.pad_to_sector();
            result = self.submit_buf();
        }
        while self.in_flight > 0 {
            self.reap(self.in_flight);
        }
        result?;
        match self.error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// Submits one operation and waits for it; checks the byte count of writes.
fn run_op(disk: &mut dyn Disk, op: Op) -> io::Result<(usize, Option<AlignedBuf>)> {
    let c = bk_disk::run_one(disk, op);
    c.result.map(|n| (n, c.buf))
}

/// Writes `ops` then fdatasync; on error the caller removes the file.
fn datasync(disk: &mut dyn Disk, file: FileId) -> io::Result<()> {
    run_op(disk, Op::Fdatasync { file }).map(|_| ())
}

/// Writes a complete segment: `<dir>/seg-<id>.seg.tmp`, datasync, rename to
/// `seg-<id>.seg`, sync the directory. On failure the temporary file is removed
/// (best effort) and the error returned; nothing is left under the final name.
/// `pace` is called with the bytes submitted so far before each chunk is submitted (the
/// background flush sleeps there: `flush_pace`); `&|_| {}` for none.
#[allow(clippy::too_many_arguments)]
pub fn write_segment(
    disk: &mut dyn Disk,
    dir: &Path,
    id: u64,
    seq: u64,
    input: &SegmentInput<'_>,
    chunk: usize,
    depth: usize,
    direct: bool,
    pace: &dyn Fn(u64),
) -> Result<WrittenSegment> {
    let written = write_segment_until(
        disk,
        dir,
        id,
        seq,
        input,
        chunk,
        depth,
        direct,
        &|| false,
        pace,
    )?;
    // Never cancelled, so never None.
    written.ok_or_else(|| Error::io(format!("writing segment {id}"), io::ErrorKind::Other.into()))
}

/// [`write_segment`] that stops once `cancelled()` is true (checked before each entry):
/// then the temporary file is removed and `Ok(None)` returned; nothing is left under
/// either name.
#[allow(clippy::too_many_arguments)]
pub(crate) fn write_segment_until(
    disk: &mut dyn Disk,
    dir: &Path,
    id: u64,
    seq: u64,
    input: &SegmentInput<'_>,
    chunk: usize,
    depth: usize,
    direct: bool,
    cancelled: &dyn Fn() -> bool,
    pace: &dyn Fn(u64),
) -> Result<Option<WrittenSegment>> {
    let final_path = dir.join(segment_name(id));
    let tmp_path = dir.join(format!("{}.tmp", segment_name(id)));
    let file = disk
        .open(
            &tmp_path,
            OpenOptions {
                create: true,
                create_new: true,
                write: true,
                direct,
            },
        )
        .map_err(|e| Error::io(format!("creating {}", tmp_path.display()), e))?;
    let result = write_segment_body(disk, file, id, seq, input, chunk, depth, cancelled, pace);
    let close = disk.close(file);
    let outcome = result.and_then(|body| {
        let Some((file_len, data_len, runs)) = body else {
            let _ = disk.remove(&tmp_path);
            return Ok(None);
        };
        close.map_err(|e| Error::io(format!("closing {}", tmp_path.display()), e))?;
        disk.rename(&tmp_path, &final_path)
            .map_err(|e| Error::io(format!("renaming {}", tmp_path.display()), e))?;
        if let Err(e) = disk.sync_dir(dir) {
            let _ = disk.remove(&final_path);
            return Err(Error::io(format!("syncing directory {}", dir.display()), e));
        }
        Ok(Some(WrittenSegment {
            file_len,
            data_len,
            runs,
        }))
    });
    if outcome.is_err() {
        let _ = disk.remove(&tmp_path);
    }
    outcome
}

/// The segment's bytes and datasync; `Ok(None)` when cancelled before the last entry.
#[allow(clippy::too_many_arguments)]
fn write_segment_body(
    disk: &mut dyn Disk,
    file: FileId,
    id: u64,
    seq: u64,
    input: &SegmentInput<'_>,
    chunk: usize,
    depth: usize,
    cancelled: &dyn Fn() -> bool,
    pace: &dyn Fn(u64),
) -> Result<Option<(u64, u64, Vec<LedgerRun>)>> {
    let chunk = round_up(chunk.max(SECTOR), SECTOR);
    // Lay out first, so the file can be preallocated: offsets, lengths and the CRCs the
    // input carries now, the footer once all are known.
    let mut runs = Vec::with_capacity(input.ledgers.len());
    let mut offset = 0u64;
    let mut count = 0u32;
    for (ledger, entries) in &input.ledgers {
        let mut locs = Vec::with_capacity(entries.len());
        for (entry, cached) in entries {
            locs.push(EntryLoc {
                entry: *entry,
                offset,
                len: cached.data.len() as u32,
                crc: cached.crc,
            });
            offset += cached.data.len() as u64;
            count += 1;
        }
        runs.push(LedgerRun {
            ledger: *ledger,
            entries: locs,
        });
    }
    let data_len = offset;
    let footer_len = format::footer_len(&runs);
    let file_len = round_up((data_len as usize) + footer_len + TRAILER_LEN, SECTOR) as u64;
    let io_err = |what: &str| {
        let what = what.to_string();
        move |e: io::Error| Error::io(format!("{what} segment {id}"), e)
    };
    match run_op(
        disk,
        Op::Fallocate {
            file,
            offset: 0,
            len: file_len,
        },
    ) {
        Ok(_) => {}
        // Preallocation is an optimisation; only a lack of space is an answer.
        Err(e) if e.raw_os_error() == Some(28) => return Err(io_err("preallocating")(e)),
        Err(_) => {}
    }
    let mut w = ChunkWriter::new(disk, file, chunk, depth.max(1), pace);
    // Ok(false): cancelled.
    let mut write_all = |w: &mut ChunkWriter<'_>| -> io::Result<bool> {
        for ((ledger, entries), run) in input.ledgers.iter().zip(runs.iter_mut()) {
            for ((entry, cached), loc) in entries.iter().zip(run.entries.iter_mut()) {
                if cancelled() {
                    return Ok(false);
                }
                debug_assert_eq!(
                    loc.crc,
                    format::entry_crc(*ledger, *entry, &cached.data),
                    "the CRC held beside ledger {ledger} entry {entry}"
                );
                w.append(&cached.data)?;
            }
        }
        let mut footer = Vec::with_capacity(footer_len);
        format::encode_footer(&runs, &mut footer);
        debug_assert_eq!(footer.len(), footer_len);
        let trailer = Trailer {
            entry_count: count,
            segment_id: id,
            seq,
            data_len,
            footer_offset: data_len,
            footer_len: footer.len() as u32,
            footer_crc: crc32c::crc32c(&footer),
        };
        w.append(&footer)?;
        let pad = file_len as usize - data_len as usize - footer.len() - TRAILER_LEN;
        w.append(&vec![0u8; pad])?;
        w.append(&trailer.encode())?;
        Ok(true)
    };
    let written = write_all(&mut w);
    let finished = w.finish();
    let complete = written.map_err(io_err("writing"))?;
    finished.map_err(io_err("writing"))?;
    if !complete {
        return Ok(None);
    }
    datasync(disk, file).map_err(io_err("datasyncing"))?;
    Ok(Some((file_len, data_len, runs)))
}

/// Reads `[offset, offset+len)` of a file, sector-aligned around it. Returns the
/// buffer and the index of `offset` in it. A short read is reported as `UnexpectedEof`.
pub fn read_span(
    disk: &mut dyn Disk,
    file: FileId,
    offset: u64,
    len: usize,
) -> io::Result<(AlignedBuf, usize)> {
    let start = offset & !(SECTOR as u64 - 1);
    let skip = (offset - start) as usize;
    let span = round_up(skip + len, SECTOR);
    let buf = AlignedBuf::with_capacity(span);
    let (n, buf) = run_op(
        disk,
        Op::Read {
            file,
            offset: start,
            len: span,
            buf,
        },
    )?;
    let buf = buf.ok_or_else(|| io::Error::other("read completion without buffer"))?;
    if n < skip + len {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!("short read at {offset}: {n} of {} bytes", skip + len),
        ));
    }
    Ok((buf, skip))
}

/// Loads a segment's trailer and footer.
pub fn load_index(disk: &mut dyn Disk, path: &Path) -> Result<(Trailer, Vec<LedgerRun>, u64)> {
    let file = disk
        .open(path, OpenOptions::default())
        .map_err(|e| Error::io(format!("opening {}", path.display()), e))?;
    let r = load_index_open(disk, file, path);
    let _ = disk.close(file);
    r
}

fn load_index_open(
    disk: &mut dyn Disk,
    file: FileId,
    path: &Path,
) -> Result<(Trailer, Vec<LedgerRun>, u64)> {
    let file_len = disk
        .file_len(file)
        .map_err(|e| Error::io(format!("sizing {}", path.display()), e))?;
    if file_len < SECTOR as u64 || file_len % SECTOR as u64 != 0 {
        return Err(corruption(
            path,
            format!("segment length {file_len} is not a positive multiple of {SECTOR}"),
        ));
    }
    let last = file_len - SECTOR as u64;
    let (buf, skip) = read_span(disk, file, last, SECTOR).map_err(|e| read_err(path, e))?;
    let trailer = Trailer::decode(&buf.as_slice()[skip..skip + SECTOR], file_len)
        .map_err(|e| corruption(path, e))?;
    let (fbuf, fskip) = read_span(
        disk,
        file,
        trailer.footer_offset,
        trailer.footer_len as usize,
    )
    .map_err(|e| read_err(path, e))?;
    let footer = &fbuf.as_slice()[fskip..fskip + trailer.footer_len as usize];
    let runs = format::decode_checked_footer(&trailer, footer).map_err(|e| corruption(path, e))?;
    Ok((trailer, runs, file_len))
}

/// A short read of bytes the footer promises is corruption (a truncated file); any
/// other read error is an I/O error.
pub fn read_err(path: &Path, e: io::Error) -> Error {
    if e.kind() == io::ErrorKind::UnexpectedEof {
        corruption(path, e)
    } else {
        Error::io(format!("reading {}", path.display()), e)
    }
}

/// Reads consecutive entries `locs` (adjacent in the file, ascending) of `ledger`
/// in one read and verifies each one against its CRC32C; the first corrupt one fails
/// the whole call (compaction copies all or nothing).
pub fn read_entries(
    disk: &mut dyn Disk,
    file: FileId,
    path: &Path,
    ledger: u64,
    locs: &[EntryLoc],
) -> Result<Vec<Bytes>> {
    read_entries_each(disk, file, path, ledger, locs)?
        .into_iter()
        .map(|r| r.map_err(|e| corruption(path, e)))
        .collect()
}

/// Like [`read_entries`], but verifies each entry on its own: the outer error is the
/// read itself failing; each entry is its payload or why it failed its check, so one
/// corrupt entry does not fail its neighbours (the read path's read-ahead).
pub fn read_entries_each(
    disk: &mut dyn Disk,
    file: FileId,
    path: &Path,
    ledger: u64,
    locs: &[EntryLoc],
) -> Result<Vec<std::result::Result<Bytes, format::FormatError>>> {
    let (Some(first), Some(last)) = (locs.first(), locs.last()) else {
        return Ok(Vec::new());
    };
    let end = last.offset + last.stored_len();
    let (buf, skip) = read_span(disk, file, first.offset, (end - first.offset) as usize)
        .map_err(|e| read_err(path, e))?;
    let data = buf.as_slice();
    Ok(locs
        .iter()
        .map(|l| {
            let at = skip + (l.offset - first.offset) as usize;
            format::check_entry(&data[at..], ledger, l).map(Bytes::copy_from_slice)
        })
        .collect())
}

/// Reads a whole small file (the ledger-state file). It has no size bound of its own
/// (it grows with the number of ledgers); a short read is corruption.
pub fn read_small_file(disk: &mut dyn Disk, path: &Path) -> Result<Vec<u8>> {
    bk_disk::read_small_file(disk, path, false, u64::MAX).map_err(|e| match e.kind() {
        io::ErrorKind::UnexpectedEof => read_err(path, e),
        _ => Error::io(format!("reading {}", path.display()), e),
    })
}

/// Replaces `<dir>/<name>` atomically with `data` zero-padded to a sector (the
/// ledger-state format's padding), through `bk_disk::replace_file`: write
/// `<name>.tmp`, datasync, rename, sync the directory.
pub fn replace_file(
    disk: &mut dyn Disk,
    dir: &Path,
    name: &str,
    data: &[u8],
    direct: bool,
) -> Result<()> {
    let path = dir.join(name);
    let mut padded = Vec::with_capacity(round_up(data.len(), SECTOR));
    padded.extend_from_slice(data);
    padded.resize(round_up(data.len(), SECTOR), 0);
    bk_disk::replace_file(disk, &path, &padded, direct).map_err(|e| match e.step {
        bk_disk::ReplaceStep::Create => {
            Error::io(format!("creating {}", e.path.display()), e.source)
        }
        _ => Error::io(format!("writing {}", path.display()), e.source),
    })
}
