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
//! - a segment file handed out for writing is preallocated over its whole length and
//!   every byte not yet written reads as zeros. Its length is `segment_bytes`, or less
//!   when the file system has no room for that ([`SegmentFiles::fit_len`]: what is
//!   free less [`SPACE_HEADROOM`], at least `segment_min`), and never less than the
//!   group it is taken for; so a group write never extends a file, and a journal
//!   directory smaller than two segments runs with shorter ones;
//! - ENOSPC/EDQUOT from creating, preallocating, zero-filling or renaming a file is
//!   [`JournalError::NoSpace`] (nothing acknowledged depends on such a file, and the
//!   half-made file is removed); a failed fdatasync of a new file stays an I/O error. Recycled files hold old groups; new
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
/// Free space a new segment leaves on the journal's file system, so that the
/// journal's own segments never take the room its checkpoint file needs.
pub(crate) const SPACE_HEADROOM: u64 = 1 << 20;

/// The most free segments a pool that follows checkpoints keeps
/// (`JournalConfig::free_segments_follow_checkpoints`): 8 GiB of the default 128 MiB
/// segments, so a checkpoint delayed for long (a full ledger disk) does not leave a
/// pool the size of everything it freed.
pub const FREE_SEGMENTS_FOLLOWED_MAX: usize = 64;

/// The free pool and segment-file operations of one journal directory.
pub(crate) struct SegmentFiles {
    pub dir: PathBuf,
    pub segment_bytes: u64,
    /// The shortest segment file made when space is short (`segment_bytes_min`).
    pub segment_min: u64,
    pub direct: bool,
    /// Free files (n, path, length), oldest first.
    pub free: Vec<(u64, PathBuf, u64)>,
    pub next_free_n: u64,
    /// Free files kept at most: [`SegmentFiles::recycle`] retires the rest.
    pub free_max: usize,
    /// With a pool that follows checkpoints, the fewest `free_max` becomes
    /// ([`SegmentFiles::follow_checkpoint`]); None for a fixed pool.
    pub free_follow_min: Option<usize>,
    /// Counters for metrics.
    pub created: u64,
    pub recycled: u64,
}

fn io_err(op: &'static str, path: &Path, e: std::io::Error) -> JournalError {
    JournalError::io(op, path, e)
}

/// For operations that change nothing durable when they fail: "no space" becomes
/// [`JournalError::NoSpace`].
fn alloc_err(op: &'static str, path: &Path, e: std::io::Error) -> JournalError {
    JournalError::alloc(op, path, e)
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
    // A failed Fdatasync is never "no space" here (it stays an I/O error); for the
    // other operations no space means nothing was made durable (bk_disk::is_no_space).
    let changes_nothing_on_enospc = !matches!(op, Op::Fdatasync { .. });
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
        Err(e) if changes_nothing_on_enospc => Err(alloc_err(what, path, e)),
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

    /// The length of the next new segment file: `segment_bytes`, or what the file
    /// system has free less [`SPACE_HEADROOM`] (sector-aligned), and at least `need`
    /// and `segment_min`; `NoSpace` when not even that fits. A file system that cannot
    /// be asked gets `segment_bytes` (the preallocation then decides).
    pub fn fit_len(&self, disk: &mut dyn Disk, need: u64) -> Result<u64, JournalError> {
        let full = self.segment_bytes;
        let min = self.segment_min.max(need).min(full);
        let Ok(space) = disk.space(&self.dir) else {
            return Ok(full);
        };
        let avail = space.free_bytes.saturating_sub(SPACE_HEADROOM);
        let len = full.min(avail - avail % bk_disk::SECTOR as u64);
        if len < min {
            return Err(JournalError::NoSpace(
                format!(
                    "{} bytes free on the file system of {}, a journal segment needs {} plus {} spare",
                    space.free_bytes,
                    self.dir.display(),
                    min,
                    SPACE_HEADROOM
                )
                .into(),
            ));
        }
        Ok(len)
    }

    /// Creates a file at `path` of `len` bytes, preallocated and synced; with
    /// `zero_fill`, every byte is also written with zeros (without, unwritten bytes
    /// read as zeros). The directory entry is NOT synced here. On failure the file
    /// is removed (it holds nothing).
    fn create(
        &mut self,
        disk: &mut dyn Disk,
        path: &Path,
        len: u64,
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
            .map_err(|e| alloc_err("create segment", path, e))?;
        let r = self.prepare(disk, file, path, len, zero_fill);
        let c = disk.close(file);
        let r = r.and_then(|()| c.map_err(|e| io_err("close segment", path, e)));
        if r.is_err() {
            let _ = disk.remove(path);
        }
        r?;
        self.created += 1;
        Ok(())
    }

    fn prepare(
        &mut self,
        disk: &mut dyn Disk,
        file: FileId,
        path: &Path,
        len: u64,
        zero_fill: bool,
    ) -> Result<(), JournalError> {
        disk.set_len(file, 0)
            .map_err(|e| io_err("truncate new segment", path, e))?;
        run_checked(
            disk,
            Op::Fallocate {
                file,
                offset: 0,
                len,
            },
            "fallocate segment",
            path,
        )?;
        if zero_fill {
            let chunk = ZERO_CHUNK.min(len as usize);
            let mut buf = AlignedBuf::with_capacity(chunk);
            let mut off = 0u64;
            while off < len {
                let n = ((len - off) as usize).min(chunk);
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

    /// Makes a new free segment file (zero-filled when `zero_fill`) as long as
    /// [`SegmentFiles::fit_len`] allows, durable with its name.
    pub fn make_spare(&mut self, disk: &mut dyn Disk, zero_fill: bool) -> Result<(), JournalError> {
        let len = self.fit_len(disk, 0)?;
        let n = self.next_free_n;
        self.next_free_n += 1;
        let final_path = self.dir.join(free_file_name(n));
        let tmp = self.dir.join(format!("{}{TMP_SUFFIX}", free_file_name(n)));
        self.create(disk, &tmp, len, zero_fill)?;
        if let Err(e) = disk.rename(&tmp, &final_path) {
            let _ = disk.remove(&tmp);
            return Err(alloc_err("rename spare segment", &tmp, e));
        }
        self.sync_dir(disk)?;
        self.free.push((n, final_path, len));
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
            .map_err(|e| alloc_err("create spare segment", &tmp, e))?;
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
        len: u64,
    ) -> Result<(), JournalError> {
        disk.close(file)
            .map_err(|e| io_err("close spare segment", tmp, e))?;
        let to = self.dir.join(free_file_name(n));
        disk.rename(tmp, &to)
            .map_err(|e| alloc_err("rename spare segment", tmp, e))?;
        self.sync_dir(disk)?;
        self.created += 1;
        self.free.push((n, to, len));
        Ok(())
    }

    /// Opens segment `id` for writing a first group of `need` bytes: the newest free
    /// file at least that long, renamed to its name (durably), or a new preallocated
    /// file ([`SegmentFiles::fit_len`]) when none is. Returns the file and its length.
    pub fn take_for(
        &mut self,
        disk: &mut dyn Disk,
        id: u64,
        need: u64,
    ) -> Result<(FileId, u64), JournalError> {
        let path = self.path_of(id);
        let len = match self.free.iter().rposition(|f| f.2 >= need) {
            Some(i) => {
                let (n, free_path, len) = self.free.remove(i);
                if let Err(e) = disk.rename(&free_path, &path) {
                    let err = alloc_err("rename free segment", &free_path, e);
                    self.free.insert(i, (n, free_path, len));
                    return Err(err);
                }
                len
            }
            None => {
                let len = self.fit_len(disk, need)?;
                let tmp = self
                    .dir
                    .join(format!("{}{TMP_SUFFIX}", segment_file_name(id)));
                self.create(disk, &tmp, len, false)?;
                if let Err(e) = disk.rename(&tmp, &path) {
                    let _ = disk.remove(&tmp);
                    return Err(alloc_err("rename new segment", &tmp, e));
                }
                len
            }
        };
        self.sync_dir(disk)?;
        let f = disk
            .open(&path, self.write_opts())
            .map_err(|e| io_err("open segment", &path, e))?;
        Ok((f, len))
    }

    /// True when a file of `len` bytes may join the free pool (a segment length this
    /// configuration could have made).
    pub fn reusable_len(&self, len: u64) -> bool {
        len <= self.segment_bytes
            && len >= self.segment_min
            && len.is_multiple_of(bk_disk::SECTOR as u64)
    }

    /// Before a checkpoint's `freed` segments are recycled: a pool that follows
    /// checkpoints keeps as many as this one frees (the next interval will likely take
    /// as many new segments), between its minimum and [`FREE_SEGMENTS_FOLLOWED_MAX`].
    /// Files already in the pool count: what a lighter interval left unused is kept
    /// instead of newly freed ones, so the pool shrinks with the load.
    pub fn follow_checkpoint(&mut self, freed: usize) {
        if let Some(min) = self.free_follow_min {
            self.free_max = freed.clamp(min, FREE_SEGMENTS_FOLLOWED_MAX.max(min));
        }
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
        if self.free.len() < self.free_max && self.reusable_len(len) {
            let n = self.next_free_n;
            self.next_free_n += 1;
            let to = self.dir.join(free_file_name(n));
            disk.rename(path, &to)
                .map_err(|e| io_err("recycle segment", path, e))?;
            self.free.push((n, to, len));
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
