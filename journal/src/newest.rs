//! The newest-segment record of one journal directory (`newest-segment`, format in
//! `format::NewestRecord`): which segment must exist, so that losing the newest
//! segment(s) after a crash refuses start-up instead of replaying a shorter log
//! (the bookie would then answer "no such entry" for acknowledged entries:
//! ARCHITECTURE.md invariant 4). A lost middle segment is caught by the group chain
//! (`replay`); the newest has nothing after it to prove it existed.
//!
//! Guarantees (docs/durability.md, "What is detected and how"):
//! - before the first group written into a segment is submitted (so before any of
//!   its appends is acknowledged), the record names that segment and its length,
//!   durably: one write+fdatasync in place, the only cost on the commit path, once
//!   per segment switch. The segment's rename was made durable first (file first on
//!   creation): a crash between the two leaves a record naming the older segment;
//! - at open, when the record names segment R (> 0), some segment with id >= R must
//!   exist, else `JournalError::Corruption` naming segment R's file; when R itself
//!   exists its length must be the recorded one (a truncated newest segment);
//! - the recorded segment is never recycled while it is recorded: the committer skips
//!   it, and open rewrites the record (to the newest segment still holding records
//!   above the checkpoint mark, or 0) before it recycles anything (record first on
//!   removal). A spare or free segment is never recorded;
//! - upgrade: a journal without the file (written before this version) gets one at
//!   its first open, from what that open found, logged; a segment lost before that
//!   open cannot be known lost. A full file system at that point does not stop the
//!   open: the file is then created at the first segment switch.

use crate::error::JournalError;
use crate::format::{self, NewestRecord, NEWEST_FILE, NEWEST_LEN, NEWEST_SLOTS};
use crate::segments::run_checked;
use bk_disk::{AlignedBuf, Disk, Op, OpenOptions, SECTOR};
use std::path::{Path, PathBuf};

/// The record of one directory, as last read or written.
pub(crate) struct Newest {
    path: PathBuf,
    direct: bool,
    journal_id: u64,
    /// False until the file exists (a fresh directory before its first write, or an
    /// upgrade that found no room).
    exists: bool,
    /// The last record written or read (generation 0 and segment 0 when none).
    pub rec: NewestRecord,
}

fn corruption(path: &Path, reason: String) -> JournalError {
    JournalError::Corruption {
        path: path.to_path_buf(),
        offset: 0,
        reason,
    }
}

impl Newest {
    /// Reads the record of `dir`; `exists` is false when there is no file.
    pub(crate) fn read(
        disk: &mut dyn Disk,
        dir: &Path,
        journal_id: u64,
        present: bool,
        direct: bool,
    ) -> Result<Newest, JournalError> {
        let path = dir.join(NEWEST_FILE);
        let mut n = Newest {
            path,
            direct,
            journal_id,
            exists: false,
            rec: NewestRecord {
                journal_id,
                generation: 0,
                segment_id: 0,
                segment_len: 0,
            },
        };
        if !present {
            return Ok(n);
        }
        // Two reads: a damaged slot is confirmed by a second read from the device.
        let mut best = None;
        let mut why = String::new();
        for _ in 0..2 {
            let bytes =
                bk_disk::read_small_file(disk, &n.path, direct, NEWEST_SLOTS * SECTOR as u64)
                    .map_err(|e| JournalError::io("read newest-segment record", &n.path, e))?;
            for slot in 0..NEWEST_SLOTS as usize {
                let at = slot * SECTOR;
                let r = match NewestRecord::decode(bytes.get(at..).unwrap_or(&[])) {
                    Ok(r) if r.journal_id != journal_id => {
                        why = format!(
                            "slot {slot} names journal {:#x}, the checkpoint {journal_id:#x}",
                            r.journal_id
                        );
                        continue;
                    }
                    Ok(r) if r.generation % NEWEST_SLOTS != slot as u64 => {
                        why = format!("slot {slot} holds generation {}", r.generation);
                        continue;
                    }
                    Ok(r) => r,
                    Err(e) => {
                        why = format!("slot {slot}: {e}");
                        continue;
                    }
                };
                if best.is_none_or(|b: NewestRecord| r.generation > b.generation) {
                    best = Some(r);
                }
            }
            if best.is_some() {
                break;
            }
        }
        match best {
            Some(r) => {
                n.exists = true;
                n.rec = r;
                Ok(n)
            }
            None => Err(corruption(
                &n.path,
                format!(
                    "no intact slot ({why}): which journal segment must exist is unknown \
                     (refusing to start)"
                ),
            )),
        }
    }

    /// True when the file exists (false: a journal from before this version).
    pub(crate) fn exists(&self) -> bool {
        self.exists
    }

    /// Refuses a journal whose recorded segment is lost: `segments` are the segment
    /// files found (id, path, length).
    pub(crate) fn check(&self, segments: &[(u64, PathBuf, u64)]) -> Result<(), JournalError> {
        let r = self.rec;
        if r.segment_id == 0 {
            return Ok(());
        }
        let dir = self.path.parent().unwrap_or(Path::new("."));
        let seg_path = dir.join(format::segment_file_name(r.segment_id));
        match segments.iter().find(|s| s.0 == r.segment_id) {
            Some((_, path, len)) if *len != r.segment_len => Err(corruption(
                path,
                format!(
                    "{len} bytes, but {} (generation {}) recorded {} bytes for the newest \
                     journal segment: the file was replaced or cut and may have held \
                     acknowledged records (refusing to start)",
                    self.path.display(),
                    r.generation,
                    r.segment_len
                ),
            )),
            Some(_) => Ok(()),
            None if segments.iter().any(|s| s.0 > r.segment_id) => Ok(()),
            None => Err(corruption(
                &seg_path,
                format!(
                    "missing: {} (generation {}) records it as the newest journal segment \
                     holding groups, and no segment at or above it exists; it may hold \
                     acknowledged records. Restore the file (refusing to start)",
                    self.path.display(),
                    r.generation
                ),
            )),
        }
    }

    /// Makes `segment` (0: none) of `len` bytes the recorded one, durably: one
    /// write+fdatasync of the next slot in place, or, when the file does not exist
    /// yet, its creation with both slots (`bk_disk::replace_file`). Errors: "no
    /// space" (nothing changed: the old record holds) as `JournalError::NoSpace`.
    pub(crate) fn record(
        &mut self,
        disk: &mut dyn Disk,
        segment: u64,
        len: u64,
    ) -> Result<(), JournalError> {
        let next = NewestRecord {
            journal_id: self.journal_id,
            generation: self.rec.generation + 1,
            segment_id: segment,
            segment_len: len,
        };
        if !self.exists {
            let mut both = vec![0u8; NEWEST_SLOTS as usize * SECTOR];
            for g in [next.generation, next.generation + 1] {
                let at = (g % NEWEST_SLOTS) as usize * SECTOR;
                let r = NewestRecord {
                    generation: g,
                    ..next
                };
                both[at..at + NEWEST_LEN].copy_from_slice(&r.encode());
            }
            bk_disk::replace_file(disk, &self.path, &both, self.direct).map_err(|e| {
                use bk_disk::ReplaceStep as S;
                match e.step {
                    S::Create | S::Write | S::Rename => {
                        JournalError::alloc("create newest-segment record", e.path, e.source)
                    }
                    _ => JournalError::io("create newest-segment record", e.path, e.source),
                }
            })?;
            self.exists = true;
            self.rec = NewestRecord {
                generation: next.generation + 1,
                ..next
            };
            return Ok(());
        }
        let opts = OpenOptions {
            create: false,
            create_new: false,
            write: true,
            direct: self.direct,
        };
        let file = disk
            .open(&self.path, opts)
            .map_err(|e| JournalError::io("open newest-segment record", &self.path, e))?;
        let mut buf = AlignedBuf::with_capacity(SECTOR);
        buf.set_len(SECTOR);
        buf.as_mut_slice().fill(0);
        buf.as_mut_slice()[..NEWEST_LEN].copy_from_slice(&next.encode());
        let r = run_checked(
            disk,
            Op::WriteDatasync {
                file,
                offset: (next.generation % NEWEST_SLOTS) * SECTOR as u64,
                buf,
            },
            "write+fdatasync newest-segment record",
            &self.path,
        );
        let closed = disk.close(file);
        r?;
        closed.map_err(|e| JournalError::io("close newest-segment record", &self.path, e))?;
        self.rec = next;
        Ok(())
    }
}
