//! bk-disk: the only crate that touches files.
//!
//! Every other crate does file I/O through the [`Disk`] trait, which has the shape of
//! io_uring: the caller *submits* operations that own their buffers and later *reaps*
//! completions that hand the buffers back. Three backends implement it:
//!
//! - `uring`: one `io-uring` ring per owning thread, O_DIRECT, a write may be linked to
//!   an fdatasync, preallocation with fallocate;
//! - `syscall`: plain pread/pwrite/fdatasync, chosen where io_uring is unavailable
//!   (or by config); completes every operation at submit time;
//! - `sim`: a seeded, deterministic simulated disk for tests, with volatile and durable
//!   images and injectable faults (fault model documented in `sim/mod.rs`).
//!
//! `chaos::ChaosDisk` wraps a real backend in a running bookie that enabled chaos and
//! injects the faults the admin API or a fault plan asks for (docs/chaos.md).
//! `checked::Checked` wraps any backend in tests and asserts correct use: aligned
//! offsets and lengths, no overlapping in-flight writes, nothing after close.
//! `backend::open_disk` builds a production instance from a `DiskConfig`
//! (`DiskKind::Auto` = io_uring, falling back to syscalls where it cannot be set up).
//! `small_file` holds the one durable replace of a whole file ([`replace_file`]: temp
//! file, fdatasync, rename, directory sync) and the one bounded whole-file read
//! ([`read_small_file`], [`read_small_text`]) over any backend; [`file_system_space`]
//! is `statvfs` with the file system's id; `procfs` reads `/proc/self` for the
//! process metrics. `open_files` is the open-file table and the
//! namespace operations the two real-file-system backends share.
//!
//! Invariants every backend keeps:
//! - a completion is reaped exactly once for every submitted operation, with the
//!   `user_data` it was submitted with, and hands back the operation's buffer;
//! - a `Write` whose completion reports success is in the volatile image; it is durable
//!   only after a later successful `Fdatasync` (or `WriteDatasync`) of the same file;
//! - errors are `std::io::Error` carrying the OS errno (EIO, ENOSPC, ...), so callers
//!   classify them the same way for every backend;
//! - a write completes successfully only if every byte was written: a short write is
//!   reported as an error, never as a short count (io_uring: EIO; syscall: the errno
//!   of the retried remainder, e.g. ENOSPC or EFBIG, or EIO if it made no progress);
//! - operations in flight together have no defined order: an `Fdatasync` covers only
//!   writes already *completed* (reaped) when it was submitted — use `WriteDatasync`
//!   or reap the write first;
//! - **ENOSPC/EDQUOT from a `WriteDatasync` means its write half failed**, so no sync
//!   was issued and nothing of it was made durable ([`is_no_space`] tells): when the
//!   sync half fails with ENOSPC/EDQUOT (writeback found no space, the kernel may have
//!   dropped the pages) the completion carries an error that names the fdatasync and
//!   is not "no space" (kind `Other`), so a caller that treats "no space" as
//!   recoverable never mistakes a failed sync for one (ARCHITECTURE.md invariant 3);
//! - submit refuses a `FileId` that is not open (EBADF) and a `Read` whose `len`
//!   exceeds its buffer (EINVAL); `close` refuses while that file has operations
//!   not yet reaped (EBUSY); at most the queue depth (default [`DEFAULT_QUEUE_DEPTH`])
//!   operations may be unreaped, beyond that submit fails with EAGAIN.

// This crate is the one place allowed to touch files (ARCHITECTURE.md invariant 1): the
// workspace clippy.toml forbids std::fs, file-touching libc calls and std::fs::File
// everywhere else, and this lifts that for the whole crate.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::io;
use std::path::{Path, PathBuf};

mod fsutil;
mod open_files;

pub mod backend;
pub mod chaos;
pub mod checked;
pub mod procfs;
pub mod sim;
pub mod small_file;
pub mod syscall;
pub mod uring;

pub use backend::{open_disk, DiskConfig, DiskKind, OpenedDisk};
pub use checked::Checked;
pub use fsutil::{file_system_space, FileSystemSpace};
pub use sim::{FaultEvent, Faults, SimDisk, SimFs};
pub use small_file::{
    read_small_file, read_small_text, replace_file, ReplaceError, ReplaceStep, TooLarge,
};
pub use syscall::SyscallDisk;

/// True when `e` is the file system running out of space or quota (ENOSPC, EDQUOT).
/// From a `Write`, `Fallocate`, `open`/`rename` or a `WriteDatasync` it means the
/// operation changed nothing durable (the module invariants); a failed sync never
/// answers true.
pub fn is_no_space(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOSPC) | Some(libc::EDQUOT))
        || matches!(
            e.kind(),
            io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded
        )
}

/// The error a backend reports for the failed sync half of a `WriteDatasync`: as the
/// OS gave it, except that "no space" becomes an error naming the fdatasync (module
/// invariants), so it is never taken for a write that changed nothing.
pub(crate) fn sync_half_error(e: io::Error) -> io::Error {
    if is_no_space(&e) {
        io::Error::other(format!("fdatasync after the write failed: {e}"))
    } else {
        e
    }
}
pub use uring::UringDisk;

/// Default bound on operations submitted and not yet reaped, per disk instance. When
/// it is reached, [`Disk::submit`] fails with EAGAIN (`io::ErrorKind::WouldBlock`)
/// and the caller must reap first. Every backend applies the same bound.
pub const DEFAULT_QUEUE_DEPTH: usize = 128;

/// Alignment and granularity of every data operation: offsets and lengths of reads
/// and writes are multiples of this (what O_DIRECT needs on 4Kn and 512e devices).
pub const SECTOR: usize = 4096;

/// A heap buffer aligned to [`SECTOR`], whose capacity is a multiple of [`SECTOR`].
/// `len` bytes are valid; operations own it while in flight and hand it back.
pub struct AlignedBuf {
    ptr: std::ptr::NonNull<u8>,
    cap: usize,
    len: usize,
}

// SAFETY: AlignedBuf owns its allocation exclusively, like Vec<u8>.
unsafe impl Send for AlignedBuf {}
// SAFETY: shared references only allow reads of initialised bytes.
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    /// A zero-filled buffer of at least `capacity` bytes (rounded up to a sector), len 0.
    pub fn with_capacity(capacity: usize) -> Self {
        let cap = round_up(capacity.max(1), SECTOR);
        let layout = std::alloc::Layout::from_size_align(cap, SECTOR).expect("valid layout");
        // SAFETY: layout has non-zero size.
        let raw = unsafe { std::alloc::alloc_zeroed(layout) };
        let ptr =
            std::ptr::NonNull::new(raw).unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
        AlignedBuf { ptr, cap, len: 0 }
    }

    /// Capacity in bytes (a multiple of [`SECTOR`]).
    pub fn capacity(&self) -> usize {
        self.cap
    }

    /// Number of valid bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Sets the number of valid bytes. Bytes between the old and new length keep
    /// whatever they held (the buffer is zero-filled at allocation).
    ///
    /// Panics if `len > capacity`: that is a caller bug, not an I/O condition.
    pub fn set_len(&mut self, len: usize) {
        assert!(
            len <= self.cap,
            "AlignedBuf::set_len {len} > capacity {}",
            self.cap
        );
        self.len = len;
    }

    /// Appends bytes; returns false (and appends nothing) if they do not fit.
    pub fn extend_from_slice(&mut self, data: &[u8]) -> bool {
        if self.len + data.len() > self.cap {
            return false;
        }
        self.spare_mut()[..data.len()].copy_from_slice(data);
        self.len += data.len();
        true
    }

    /// Zero-fills up to the next sector boundary (the length becomes sector-aligned).
    pub fn pad_to_sector(&mut self) {
        let new_len = round_up(self.len, SECTOR);
        let old = self.len;
        self.full_mut()[old..new_len].fill(0);
        self.len = new_len;
    }

    /// The valid bytes.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr is valid for cap >= len initialised (zeroed at alloc) bytes.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// The valid bytes, mutable.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and &mut self gives exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    /// The whole capacity, mutable (for backends filling a read).
    pub fn full_mut(&mut self) -> &mut [u8] {
        // SAFETY: the allocation is cap bytes, all initialised.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.cap) }
    }

    /// The bytes past `len`, mutable.
    pub fn spare_mut(&mut self) -> &mut [u8] {
        let len = self.len;
        &mut self.full_mut()[len..]
    }

    /// Raw pointer for backends handing the buffer to the kernel.
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        let layout = std::alloc::Layout::from_size_align(self.cap, SECTOR).expect("valid layout");
        // SAFETY: allocated in with_capacity with this exact layout.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), layout) }
    }
}

impl std::fmt::Debug for AlignedBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AlignedBuf")
            .field("len", &self.len)
            .field("cap", &self.cap)
            .finish()
    }
}

/// Rounds `n` up to a multiple of `to` (a power of two).
pub const fn round_up(n: usize, to: usize) -> usize {
    (n + to - 1) & !(to - 1)
}

/// A file opened through a [`Disk`]; valid only on the disk that opened it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FileId(pub u32);

/// How to open a file.
#[derive(Clone, Copy, Debug, Default)]
pub struct OpenOptions {
    /// Create the file if missing (its directory entry is durable only after `sync_dir`).
    pub create: bool,
    /// Fail if the file exists (with `create`).
    pub create_new: bool,
    /// Open for writing as well as reading.
    pub write: bool,
    /// Bypass the page cache (O_DIRECT) where the backend supports it.
    pub direct: bool,
}

/// A data operation. It owns its buffer until its completion is reaped.
#[derive(Debug)]
pub enum Op {
    /// Write `buf[..buf.len()]` at `offset`. Offset and length are sector-aligned.
    Write {
        file: FileId,
        offset: u64,
        buf: AlignedBuf,
    },
    /// A write followed by an fdatasync of the same file, linked: the sync runs only if
    /// the write fully succeeded. Completes once, with the write's byte count or the
    /// first error.
    WriteDatasync {
        file: FileId,
        offset: u64,
        buf: AlignedBuf,
    },
    /// Read `len` bytes at `offset` into `buf` (which must have capacity for `len`).
    /// Offset and length are sector-aligned. The completion's count may be short at end
    /// of file; `buf.len()` is set to the count read.
    Read {
        file: FileId,
        offset: u64,
        len: usize,
        buf: AlignedBuf,
    },
    /// Make every completed write to `file` durable (fdatasync).
    Fdatasync { file: FileId },
    /// Reserve `len` bytes at `offset` (fallocate, mode 0: extends the file size).
    Fallocate { file: FileId, offset: u64, len: u64 },
}

impl Op {
    /// The file this operation addresses.
    pub fn file(&self) -> FileId {
        match self {
            Op::Write { file, .. }
            | Op::WriteDatasync { file, .. }
            | Op::Read { file, .. }
            | Op::Fdatasync { file }
            | Op::Fallocate { file, .. } => *file,
        }
    }
}

/// The result of one submitted operation.
#[derive(Debug)]
pub struct Completion {
    /// The value given to [`Disk::submit`].
    pub user_data: u64,
    /// Bytes transferred (0 for sync and fallocate), or the OS error.
    pub result: io::Result<usize>,
    /// The operation's buffer, handed back (None for sync and fallocate).
    pub buf: Option<AlignedBuf>,
}

/// Total and free bytes of the file system holding a directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpaceInfo {
    pub total_bytes: u64,
    /// Bytes available to this (unprivileged) process, as `statvfs.f_bavail`.
    pub free_bytes: u64,
}

/// File I/O in the shape of io_uring. One instance is owned by one thread; to share
/// a file system between threads, each thread opens its own instance (for io_uring,
/// its own ring; for the simulated disk, a handle on the same simulated file system).
///
/// Namespace operations (open, remove, rename, directory sync, listing) are rare and
/// synchronous. Data operations are asynchronous: [`Disk::submit`] queues, and
/// [`Disk::reap`] returns completions in any order.
pub trait Disk: Send {
    /// Opens (or creates) a file.
    fn open(&mut self, path: &Path, opts: OpenOptions) -> io::Result<FileId>;
    /// Closes a file. No operation on it may be in flight.
    fn close(&mut self, file: FileId) -> io::Result<()>;
    /// Current size of an open file.
    fn file_len(&mut self, file: FileId) -> io::Result<u64>;
    /// Truncates or extends an open file (extension reads as zeros).
    fn set_len(&mut self, file: FileId, len: u64) -> io::Result<()>;
    /// Removes a file (durable after `sync_dir` of its directory).
    fn remove(&mut self, path: &Path) -> io::Result<()>;
    /// Renames a file, atomically replacing `to` (durable after `sync_dir`).
    fn rename(&mut self, from: &Path, to: &Path) -> io::Result<()>;
    /// Makes the directory's entries (creates, removes, renames) durable.
    fn sync_dir(&mut self, dir: &Path) -> io::Result<()>;
    /// Creates a directory and its parents (durable: parents are synced).
    fn create_dir_all(&mut self, dir: &Path) -> io::Result<()>;
    /// The names of the plain files in a directory, sorted.
    fn list_dir(&mut self, dir: &Path) -> io::Result<Vec<PathBuf>>;
    /// Space of the file system holding `dir`.
    fn space(&mut self, dir: &Path) -> io::Result<SpaceInfo>;

    /// Queues a data operation. An error here means the operation was not queued and its
    /// buffer is dropped; I/O errors are reported in its completion instead.
    /// Submit-time errors: EBADF (file not open), EINVAL (`Read` longer than its
    /// buffer), EAGAIN (queue depth reached: reap first).
    fn submit(&mut self, user_data: u64, op: Op) -> io::Result<()>;
    /// Returns at least `min` completions (blocking until they are available), plus any
    /// others already available. `min` larger than [`Disk::in_flight`] is clamped.
    fn reap(&mut self, min: usize) -> Vec<Completion>;
    /// Operations submitted and not yet reaped.
    fn in_flight(&self) -> usize;
}

/// Convenience: submit one operation and wait for its completion. Only for callers
/// with nothing else in flight on this disk (start-up, recovery, tests).
pub fn run_one(disk: &mut dyn Disk, op: Op) -> Completion {
    const USER_DATA: u64 = u64::MAX;
    if let Err(e) = disk.submit(USER_DATA, op) {
        return Completion {
            user_data: USER_DATA,
            result: Err(e),
            buf: None,
        };
    }
    loop {
        for c in disk.reap(1) {
            if c.user_data == USER_DATA {
                return c;
            }
        }
    }
}
