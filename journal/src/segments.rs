//! Segment files of one journal directory: creating them (preallocated, zero-filled
//! when asked), recycling or retiring them after a checkpoint, and handing them out
//! for new segment ids.
//!
//! Files (see `format`): live segments `<16 hex id>.jseg`; free segments
//! `free-<16 hex n>.jseg` (no live record: recycled after a checkpoint, dead after a
//! crash, or spares); files being built, and segments retired by a checkpoint and
//! waiting to be unlinked, end in `.tmp`.
//!
//! Invariants:
//! - a segment file handed out for writing is `segment_bytes` long and preallocated;
//!   every byte not yet written reads as zeros. Recycled files hold old groups; new
//!   ones are zero-filled where time allowed: a group written into an unwritten extent
//!   makes its fdatasync also commit the extent conversion (docs/measured-here.md §2: ~1.5x
//!   for small groups), so spares are zero-filled in the background while the
//!   journal's groups are small. Under large groups the zero-fill is skipped (it would
//!   double the bytes written, for a conversion cost that is small next to a 1 MiB+
//!   write), and a segment switch never waits for one: it takes the spare as far as it
//!   got, or a new file that is only preallocated;
//! - a file is renamed to a live name and the rename made durable (`sync_dir`)
//!   before any group is written into it, so a durable group is always found under
//!   the segment id its header names;
//! - only files holding no record above the checkpoint mark are recycled or removed;
//! - every synchronous operation here runs while the owning thread has no other
//!   operation in flight on its disk (so `run_one` never swallows a completion).

use crate::error::JournalError;
use crate::format::{free_file_name, segment_file_name, TMP_SUFFIX};
use bk_disk::{run_one, AlignedBuf, Disk, FileId, Op, OpenOptions};
use std::path::{Path, PathBuf};

/// Bytes written per zero-fill write.
const ZERO_CHUNK: usize = 1 << 20;

/// The free pool and segment-file operations of one journal directory.
pub(crate) struct SegmentFiles {
    pub dir: PathBuf,
    pub segment_bytes: u64,
    pub direct: bool,
    /// Free files (n, path), oldest first.
    pub free: Vec<(u64, PathBuf)>,
    pub next_free_n: u64,
    pub free_max: usize,
    /// Counters for metrics.
    pub created: u64,
    pub recycled: u64,
}

fn io_err(op: &'static str, path: &Path, e: std::io::Error) -> JournalError {
    JournalError::io(op, path, e)
}

/// Runs one operation and maps a failure to a journal I/O error.
pub(crate) fn run_checked(
    disk: &mut dyn Disk,
    op: Op,
    what: &'static str,
    path: &Path,
) -> Result<Option<AlignedBuf>, JournalError> {
    let expect = match &op {
        Op::Write { buf, .. } | Op::WriteDatasync { buf, .. } => Some(buf.len()),
        _ => None,
    };
    let c = run_one(disk, op);
    match c.result {
        Ok(n) => {
            if let Some(want) = expect {
                if n != want {
                    return Err(io_err(
                        what,
                        path,
                        std::io::Error::other(format!("short write: {n} of {want} bytes")),
                    ));
                }
            }
            Ok(c.buf)
        }
        Err(e) => Err(io_err(what, path, e)),
    }
}

impl SegmentFiles {
    pub fn path_of(&self, id: u64) -> PathBuf {
        self.dir.join(segment_file_name(id))
    }

    fn write_opts(&self) -> OpenOptions {
        OpenOptions {
            create: false,
            create_new: false,
            write: true,
            direct: self.direct,
        }
    }

    /// Creates a file at `path` of `segment_bytes`, preallocated and synced; with
    /// `zero_fill`, every byte is also written with zeros (without, unwritten bytes
    /// read as zeros). The directory entry is NOT synced here.
    fn create(
        &mut self,
        disk: &mut dyn Disk,
        path: &Path,
        zero_fill: bool,
    ) -> Result<(), JournalError> {
        let opts = OpenOptions {
            create: true,
            create_new: false,
            write: true,
            direct: self.direct,
        };
        let file = disk
            .open(path, opts)
            .map_err(|e| io_err("create segment", path, e))?;
        let r = self.prepare(disk, file, path, zero_fill);
        let c = disk.close(file);
        r?;
        c.map_err(|e| io_err("close segment", path, e))?;
        self.created += 1;
        Ok(())
    }

    fn prepare(
        &mut self,
        disk: &mut dyn Disk,
        file: FileId,
        path: &Path,
        zero_fill: bool,
    ) -> Result<(), JournalError> {
        disk.set_len(file, 0)
            .map_err(|e| io_err("truncate new segment", path, e))?;
        run_checked(
            disk,
            Op::Fallocate {
                file,
                offset: 0,
                len: self.segment_bytes,
            },
            "fallocate segment",
            path,
        )?;
        if zero_fill {
            let chunk = ZERO_CHUNK.min(self.segment_bytes as usize);
            let mut buf = AlignedBuf::with_capacity(chunk);
            let mut off = 0u64;
            while off < self.segment_bytes {
                let n = ((self.segment_bytes - off) as usize).min(chunk);
                buf.set_len(n);
                buf.as_mut_slice().fill(0);
                let back = run_checked(
                    disk,
                    Op::Write {
                        file,
                        offset: off,
                        buf,
                    },
                    "zero-fill segment",
                    path,
                )?;
                buf = back.unwrap_or_else(|| AlignedBuf::with_capacity(chunk));
                off += n as u64;
            }
        }
        run_checked(disk, Op::Fdatasync { file }, "fdatasync new segment", path)?;
        Ok(())
    }

    pub fn sync_dir(&self, disk: &mut dyn Disk) -> Result<(), JournalError> {
        disk.sync_dir(&self.dir)
            .map_err(|e| io_err("sync journal directory", &self.dir, e))
    }

    /// Makes a new free (pre-written) segment file, durable with its name.
    pub fn make_spare(&mut self, disk: &mut dyn Disk) -> Result<(), JournalError> {
        let n = self.next_free_n;
        self.next_free_n += 1;
        let final_path = self.dir.join(free_file_name(n));
        let tmp = self.dir.join(format!("{}{TMP_SUFFIX}", free_file_name(n)));
        self.create(disk, &tmp, true)?;
        disk.rename(&tmp, &final_path)
            .map_err(|e| io_err("rename spare segment", &tmp, e))?;
        self.sync_dir(disk)?;
        self.free.push((n, final_path));
        Ok(())
    }

    /// Starts building a spare without blocking: creates its temporary file (empty).
    /// The caller fallocates, zero-fills and syncs it with asynchronous operations,
    /// then calls [`SegmentFiles::finish_spare`]. Returns (file, n, tmp path).
    pub fn begin_spare(
        &mut self,
        disk: &mut dyn Disk,
    ) -> Result<(FileId, u64, PathBuf), JournalError> {
        let n = self.next_free_n;
        self.next_free_n += 1;
        let tmp = self.dir.join(format!("{}{TMP_SUFFIX}", free_file_name(n)));
        let opts = OpenOptions {
            create: true,
            create_new: false,
            write: true,
            direct: self.direct,
        };
        let file = disk
            .open(&tmp, opts)
            .map_err(|e| io_err("create spare segment", &tmp, e))?;
        if let Err(e) = disk.set_len(file, 0) {
            let _ = disk.close(file);
            return Err(io_err("truncate spare segment", &tmp, e));
        }
        Ok((file, n, tmp))
    }

    /// Completes a spare whose bytes are all written and synced: close, rename to
    /// its free name, sync the directory, add it to the pool.
    pub fn finish_spare(
        &mut self,
        disk: &mut dyn Disk,
        file: FileId,
        n: u64,
        tmp: &Path,
    ) -> Result<(), JournalError> {
        disk.close(file)
            .map_err(|e| io_err("close spare segment", tmp, e))?;
        let to = self.dir.join(free_file_name(n));
        disk.rename(tmp, &to)
            .map_err(|e| io_err("rename spare segment", tmp, e))?;
        self.sync_dir(disk)?;
        self.created += 1;
        self.free.push((n, to));
        Ok(())
    }

    /// Opens segment `id` for writing: a free file renamed to its name (durably), or
    /// a new preallocated file when the pool is empty.
    pub fn take_for(&mut self, disk: &mut dyn Disk, id: u64) -> Result<FileId, JournalError> {
        let path = self.path_of(id);
        match self.free.pop() {
            Some((_, free_path)) => {
                disk.rename(&free_path, &path)
                    .map_err(|e| io_err("rename free segment", &free_path, e))?;
            }
            None => {
                let tmp = self
                    .dir
                    .join(format!("{}{TMP_SUFFIX}", segment_file_name(id)));
                self.create(disk, &tmp, false)?;
                disk.rename(&tmp, &path)
                    .map_err(|e| io_err("rename new segment", &tmp, e))?;
            }
        }
        self.sync_dir(disk)?;
        disk.open(&path, self.write_opts())
            .map_err(|e| io_err("open segment", &path, e))
    }

    /// Recycles a segment file holding no live record into the free pool, or, when
    /// the pool is full or the size is wrong, renames it to a temporary name and
    /// returns that path for the caller to unlink later (start-up removes temporary
    /// files, so a crash in between loses nothing). The caller syncs the directory
    /// afterwards.
    pub fn recycle(
        &mut self,
        disk: &mut dyn Disk,
        path: &Path,
        len: u64,
    ) -> Result<Option<PathBuf>, JournalError> {
        if self.free.len() < self.free_max && len == self.segment_bytes {
            let n = self.next_free_n;
            self.next_free_n += 1;
            let to = self.dir.join(free_file_name(n));
            disk.rename(path, &to)
                .map_err(|e| io_err("recycle segment", path, e))?;
            self.free.push((n, to));
            self.recycled += 1;
            Ok(None)
        } else {
            let mut tmp = path.as_os_str().to_owned();
            tmp.push(TMP_SUFFIX);
            let tmp = PathBuf::from(tmp);
            disk.rename(path, &tmp)
                .map_err(|e| io_err("retire segment", path, e))?;
            Ok(Some(tmp))
        }
    }
}
