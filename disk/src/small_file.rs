//! Small files handled whole, through any [`Disk`] (io_uring, syscalls, the simulated
//! disk): [`replace_file`], the one durable "temp file, fdatasync, rename, sync the
//! directory" sequence of the workspace (cookies, the journal checkpoint, the entry
//! log's ledger-state file), and [`read_small_file`], the one bounded whole-file read
//! ([`read_small_text`] is the same read for callers without a `Disk`, such as the
//! configuration loader).
//!
//! Guarantees of [`replace_file`] (`path` = `<dir>/<name>`, temp = `<dir>/<name>.tmp`):
//! - **old or new, never a mix**: until the rename is durable a crash leaves `path`
//!   exactly as it was (old content, or absent); afterwards it holds exactly `data`.
//!   The new content is complete and durable in the temp file before the rename, so
//!   no crash point exposes a partial or torn file under `path`;
//! - `Ok` means `data` is durable under `path` (file data and length by the
//!   fdatasync, the name by the directory sync);
//! - a failed step is an error and the sequence stops there: in particular a failed
//!   fdatasync is never followed by the rename (after a failed fdatasync the kernel
//!   may have dropped the dirty pages: the temp file's content is unknown), and the
//!   temp file is removed (best effort). After an error, `path` holds the old content
//!   or, if only the directory sync failed, the new one without a durability promise;
//! - a temp file left by an earlier crash or failure is removed first, and the temp
//!   file is created with `create_new`, so its content is only ever this call's;
//! - **O_DIRECT** (`direct`): the write is one sector-aligned buffer, `data`
//!   zero-padded to a sector; when `data.len()` is not a multiple of [`SECTOR`] the
//!   file is then cut to `data.len()` *before* the fdatasync, so the file's length is
//!   exactly `data.len()` and durable with it. Callers whose format is padded pass
//!   the padding in `data`;
//! - one writer per `path` at a time (callers serialise replacements of one file);
//!   readers ignore `<name>.tmp`.
//!
//! Guarantees of [`read_small_file`]: it returns the whole file or an error: a file
//! larger than the caller's bound is [`TooLarge`] (kind `FileTooLarge`), a read that
//! returns fewer bytes than the file's length is `UnexpectedEof`, a missing file is
//! `NotFound`; the file is closed on every path, and a failed close is an error.

use crate::{round_up, run_one, AlignedBuf, Disk, Op, OpenOptions, SyscallDisk, SECTOR};
use std::io;
use std::path::{Path, PathBuf};

/// The steps of [`replace_file`], in order; an error names the one that failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplaceStep {
    /// Removing a temp file left by an earlier attempt.
    RemoveLeftover,
    /// Creating the temp file.
    Create,
    /// Writing the data (with its datasync when the data is sector-aligned).
    Write,
    /// Cutting the sector-padded file to the data's length.
    Truncate,
    /// fdatasync of the temp file.
    Datasync,
    /// Closing the temp file.
    Close,
    /// Renaming the temp file over the target.
    Rename,
    /// fsync of the directory.
    SyncDir,
}

impl ReplaceStep {
    /// The step in words, for messages.
    pub fn as_str(self) -> &'static str {
        match self {
            ReplaceStep::RemoveLeftover => "removing leftover temporary file",
            ReplaceStep::Create => "creating temporary file",
            ReplaceStep::Write => "writing temporary file",
            ReplaceStep::Truncate => "cutting temporary file to length",
            ReplaceStep::Datasync => "fdatasync of temporary file",
            ReplaceStep::Close => "closing temporary file",
            ReplaceStep::Rename => "renaming temporary file into place",
            ReplaceStep::SyncDir => "syncing directory",
        }
    }
}

/// A failed [`replace_file`]: the step, the path it addressed (the temp file, the
/// target for `Rename`, the directory for `SyncDir`) and the OS error (errno kept).
#[derive(Debug)]
pub struct ReplaceError {
    pub step: ReplaceStep,
    pub path: PathBuf,
    pub source: io::Error,
}

impl std::fmt::Display for ReplaceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {}: {}",
            self.step.as_str(),
            self.path.display(),
            self.source
        )
    }
}

impl std::error::Error for ReplaceError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// The temp file [`replace_file`] writes before renaming it to `path`: `<path>.tmp`.
pub fn temp_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(".tmp");
    PathBuf::from(name)
}

fn parent_or_dot(p: &Path) -> &Path {
    match p.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

/// Replaces `path` with `data` atomically and durably: remove a leftover
/// `<path>.tmp`, create it (`create_new`, O_DIRECT if `direct`), write `data`
/// zero-padded to a sector, cut it to `data.len()`, fdatasync, close, rename over
/// `path`, fsync the directory. See the module docs for the crash guarantees.
pub fn replace_file(
    disk: &mut dyn Disk,
    path: &Path,
    data: &[u8],
    direct: bool,
) -> Result<(), ReplaceError> {
    let tmp = temp_path(path);
    let fail = |step, at: &Path| {
        let at = at.to_path_buf();
        move |source| ReplaceError {
            step,
            path: at,
            source,
        }
    };
    match disk.remove(&tmp) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(fail(ReplaceStep::RemoveLeftover, &tmp)(e)),
    }
    let opts = OpenOptions {
        create: true,
        create_new: true,
        write: true,
        direct,
    };
    let file = disk
        .open(&tmp, opts)
        .map_err(fail(ReplaceStep::Create, &tmp))?;
    let written = write_synced(disk, file, data, &tmp);
    let closed = disk.close(file).map_err(fail(ReplaceStep::Close, &tmp));
    let dir = parent_or_dot(path);
    let r = written
        .and(closed)
        .and_then(|()| {
            disk.rename(&tmp, path)
                .map_err(fail(ReplaceStep::Rename, path))
        })
        .and_then(|()| disk.sync_dir(dir).map_err(fail(ReplaceStep::SyncDir, dir)));
    if r.is_err() {
        // Best effort: after a successful rename there is no temp file any more.
        let _ = disk.remove(&tmp);
    }
    r
}

/// Writes `data` (padded to a sector) at offset 0 of the new, empty `file`, cuts the
/// file to `data.len()` and makes both durable.
fn write_synced(
    disk: &mut dyn Disk,
    file: crate::FileId,
    data: &[u8],
    tmp: &Path,
) -> Result<(), ReplaceError> {
    let err = |step| {
        move |source| ReplaceError {
            step,
            path: tmp.to_path_buf(),
            source,
        }
    };
    let aligned = data.len().is_multiple_of(SECTOR);
    if !data.is_empty() {
        let mut buf = AlignedBuf::with_capacity(data.len());
        if !buf.extend_from_slice(data) {
            return Err(err(ReplaceStep::Write)(io::Error::other(
                "data larger than its buffer",
            )));
        }
        buf.pad_to_sector();
        let want = buf.len();
        // Sector-aligned data needs no cut: write and datasync as one linked operation.
        let op = if aligned {
            Op::WriteDatasync {
                file,
                offset: 0,
                buf,
            }
        } else {
            Op::Write {
                file,
                offset: 0,
                buf,
            }
        };
        let n = run_one(disk, op).result.map_err(err(ReplaceStep::Write))?;
        if n != want {
            return Err(err(ReplaceStep::Write)(io::Error::new(
                io::ErrorKind::WriteZero,
                format!("short write {n} of {want}"),
            )));
        }
        if aligned {
            return Ok(());
        }
        disk.set_len(file, data.len() as u64)
            .map_err(err(ReplaceStep::Truncate))?;
    }
    run_one(disk, Op::Fdatasync { file })
        .result
        .map_err(err(ReplaceStep::Datasync))?;
    Ok(())
}

/// A file larger than the bound its reader gave (the payload of an `io::Error` of
/// kind `FileTooLarge` from [`read_small_file`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TooLarge {
    /// The file's length.
    pub len: u64,
    /// The reader's bound.
    pub max: u64,
}

impl std::fmt::Display for TooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} bytes is more than the {} expected",
            self.len, self.max
        )
    }
}

impl std::error::Error for TooLarge {}

impl TooLarge {
    /// The `TooLarge` inside `e`, if `e` is one.
    pub fn of(e: &io::Error) -> Option<TooLarge> {
        e.get_ref()?.downcast_ref::<TooLarge>().copied()
    }
}

/// Reads the whole of `path` (at most `max_bytes`, O_DIRECT if `direct`) through
/// `disk`. Errors: `NotFound` if it does not exist, [`TooLarge`] (kind
/// `FileTooLarge`) above `max_bytes`, `UnexpectedEof` if fewer bytes than its length
/// could be read, any I/O error of the open, read or close.
pub fn read_small_file(
    disk: &mut dyn Disk,
    path: &Path,
    direct: bool,
    max_bytes: u64,
) -> io::Result<Vec<u8>> {
    let opts = OpenOptions {
        direct,
        ..OpenOptions::default()
    };
    let file = disk.open(path, opts)?;
    let read = (|| {
        let len = disk.file_len(file)?;
        if len > max_bytes {
            return Err(io::Error::new(
                io::ErrorKind::FileTooLarge,
                TooLarge {
                    len,
                    max: max_bytes,
                },
            ));
        }
        if len == 0 {
            return Ok(Vec::new());
        }
        let len = usize::try_from(len).map_err(|_| io::Error::from(io::ErrorKind::OutOfMemory))?;
        let want = round_up(len, SECTOR);
        let c = run_one(
            disk,
            Op::Read {
                file,
                offset: 0,
                len: want,
                buf: AlignedBuf::with_capacity(want),
            },
        );
        let n = c.result?;
        let buf = c
            .buf
            .ok_or_else(|| io::Error::other("read completion without buffer"))?;
        if n < len {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("short read: {n} of {len} bytes"),
            ));
        }
        Ok(buf.as_slice()[..len].to_vec())
    })();
    let closed = disk.close(file);
    let bytes = read?;
    closed?;
    Ok(bytes)
}

/// [`read_small_file`] of a UTF-8 text file on the real file system (plain system
/// calls, no O_DIRECT), for callers that have no [`Disk`] (the configuration loader).
/// Text that is not UTF-8 is `InvalidData`, as with `std::fs::read_to_string`.
pub fn read_small_text(path: &Path, max_bytes: u64) -> io::Result<String> {
    let bytes = read_small_file(&mut SyscallDisk::new(), path, false, max_bytes)?;
    String::from_utf8(bytes).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            "stream did not contain valid UTF-8",
        )
    })
}
