//! Read-only file access for `bookie inspect`: the directories the configuration names,
//! listing them, and reading files through `bk_disk` without ever writing.
//!
//! Guarantees (safe beside a live bookie, docs/operations.md §1):
//! - every open is `OpenOptions { write: false, create: false, .. }` on the plain-syscall
//!   backend (no O_DIRECT, no io_uring ring): nothing is created, truncated, renamed or
//!   locked, so file lists, sizes and mtimes stay as they were (only atimes may move,
//!   as with any reader);
//! - the bookie takes no lock an inspector could contend for, and we take none;
//! - a file that vanishes between the listing and the open (a segment removed by GC or
//!   a journal segment freed by a checkpoint) is reported as `NotFound` to the caller,
//!   which skips it rather than calling it damage;
//! - reads go through a window of [`WINDOW`] bytes, so walking a 128 MiB segment header
//!   by header costs 128 reads, and a read past the end is clamped, never an error.

use std::io;
use std::path::{Path, PathBuf};

use bk_disk::{round_up, run_one, AlignedBuf, Disk, FileId, Op, OpenOptions, SyscallDisk, SECTOR};

use bk_entrylog::scrub::{check_segment, SegmentCheck, Unpaced};
use bk_entrylog::SCRUB_CHUNK_BYTES;

use crate::config::mapping::storage_config;
use crate::config::BookieConfig;

/// Bytes read at a time.
pub const WINDOW: usize = 1 << 20;

/// The directories a bookie with this configuration owns: the `current/` subdirectory of
/// every configured journal and ledger directory (as `config::mapping` gives them to the
/// journal and the entry log).
#[derive(Clone, Debug)]
pub struct Dirs {
    pub journal: Vec<PathBuf>,
    pub ledger: Vec<PathBuf>,
}

impl Dirs {
    pub fn from_config(cfg: &BookieConfig) -> Dirs {
        let sc = storage_config(cfg);
        Dirs {
            journal: sc.journal_dirs,
            ledger: sc.ledger_dirs,
        }
    }
}

/// The one disk every inspection reads through.
pub struct Reader {
    disk: SyscallDisk,
}

impl Default for Reader {
    fn default() -> Self {
        Self::new()
    }
}

impl Reader {
    pub fn new() -> Reader {
        Reader {
            disk: SyscallDisk::new(),
        }
    }

    /// The plain-file names in `dir`, sorted. A missing directory is an error (`NotFound`):
    /// a wrong `--conf` must not look like an empty, healthy bookie.
    pub fn list(&mut self, dir: &Path) -> io::Result<Vec<String>> {
        let paths = self
            .disk
            .list_dir(dir)
            .map_err(|e| io::Error::new(e.kind(), format!("listing {}: {e}", dir.display())))?;
        let mut names: Vec<String> = paths
            .iter()
            .filter_map(|p| p.file_name().and_then(|n| n.to_str()).map(str::to_owned))
            .collect();
        names.sort();
        Ok(names)
    }

    /// Opens `path` for reading only.
    pub fn open(&mut self, path: &Path) -> io::Result<RoFile> {
        let opts = OpenOptions {
            create: false,
            create_new: false,
            write: false,
            direct: false,
        };
        let id = self.disk.open(path, opts)?;
        let len = match self.disk.file_len(id) {
            Ok(l) => l,
            Err(e) => {
                let _ = self.disk.close(id);
                return Err(e);
            }
        };
        Ok(RoFile {
            id,
            path: path.to_path_buf(),
            len,
            window_off: 0,
            window: None,
        })
    }

    /// The whole of a small file (at most `max` bytes).
    pub fn read_small(&mut self, path: &Path, max: u64) -> io::Result<Vec<u8>> {
        bk_disk::read_small_file(&mut self.disk, path, false, max)
    }

    /// The bytes `[off, off+n)` of `f`, clamped to its end.
    pub fn read<'a>(&mut self, f: &'a mut RoFile, off: u64, n: usize) -> io::Result<&'a [u8]> {
        f.read_at(&mut self.disk, off, n)
    }

    /// Checks the finished segment at `path` (named for segment `id`) as the online
    /// scrubber does (`bk_entrylog::scrub::check_segment`: trailer, footer, every entry's
    /// length and CRC32C), unpaced.
    pub fn check_segment(&mut self, path: &Path, id: u64) -> io::Result<SegmentCheck> {
        let f = self.open(path)?;
        let r = check_segment(
            &mut self.disk,
            f.id,
            id,
            SCRUB_CHUNK_BYTES,
            &mut Unpaced,
            0,
            0,
        );
        self.close(f);
        r
    }

    pub fn close(&mut self, f: RoFile) {
        let _ = self.disk.close(f.id);
    }
}

/// A file opened read-only, with its length at open and a read window.
pub struct RoFile {
    id: FileId,
    pub path: PathBuf,
    pub len: u64,
    window_off: u64,
    window: Option<AlignedBuf>,
}

impl RoFile {
    fn read_at(&mut self, disk: &mut dyn Disk, off: u64, n: usize) -> io::Result<&[u8]> {
        let end = off.saturating_add(n as u64).min(self.len);
        if off >= end {
            return Ok(&[]);
        }
        let covered = self
            .window
            .as_ref()
            .is_some_and(|w| off >= self.window_off && end <= self.window_off + w.len() as u64);
        if !covered {
            let start = off - off % SECTOR as u64;
            let want = round_up(((end - start) as usize).max(WINDOW), SECTOR);
            let c = run_one(
                disk,
                Op::Read {
                    file: self.id,
                    offset: start,
                    len: want,
                    buf: AlignedBuf::with_capacity(want),
                },
            );
            let got = c.result?;
            let mut buf = c
                .buf
                .ok_or_else(|| io::Error::other("read completion without its buffer"))?;
            buf.set_len(got.min(buf.capacity()));
            self.window_off = start;
            self.window = Some(buf);
        }
        let w = self.window.as_ref().map(|w| w.as_slice()).unwrap_or(&[]);
        let lo = (off - self.window_off) as usize;
        let hi = ((end - self.window_off) as usize).min(w.len());
        Ok(w.get(lo..hi).unwrap_or(&[]))
    }
}

/// Lower-case hex of `b`.
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
