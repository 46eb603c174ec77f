//! Real-file-system helpers shared by the `syscall` and `uring` backends: opening a
//! file (with the O_DIRECT fallback), the synchronous namespace operations, and
//! `statvfs` (also public as [`file_system_space`], for callers that need the file
//! system's id). Nothing here keeps state.
//!
//! Invariants:
//! - `create_dir_all` makes every directory it creates durable: after each `mkdir`
//!   the parent directory is fsynced, so a crash cannot forget a created directory;
//! - `sync_dir` opens the directory read-only and fsyncs it;
//! - `open_file` asks for O_DIRECT when `opts.direct`; when the file system refuses
//!   O_DIRECT with EINVAL (tmpfs, some overlay set-ups) it reopens buffered and says
//!   so in its result, so the caller can record it.

use crate::{OpenOptions, SpaceInfo};
use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// An opened real file and whether it really uses O_DIRECT.
pub(crate) struct OpenedFile {
    pub file: File,
    /// True if O_DIRECT is in effect.
    pub direct: bool,
    /// True if O_DIRECT was asked for and refused (EINVAL), so the file is buffered.
    pub direct_refused: bool,
}

fn std_options(opts: OpenOptions, direct: bool) -> std::fs::OpenOptions {
    let mut o = std::fs::OpenOptions::new();
    o.read(true);
    if opts.write || opts.create || opts.create_new {
        o.write(true);
    }
    if opts.create_new {
        o.create_new(true);
    } else if opts.create {
        o.create(true);
    }
    let mut flags = libc::O_CLOEXEC;
    if direct {
        flags |= libc::O_DIRECT;
    }
    o.custom_flags(flags);
    o
}

/// Opens `path`, with O_DIRECT if asked and the file system allows it.
pub(crate) fn open_file(path: &Path, opts: OpenOptions) -> io::Result<OpenedFile> {
    if opts.direct {
        match std_options(opts, true).open(path) {
            Ok(file) => {
                return Ok(OpenedFile {
                    file,
                    direct: true,
                    direct_refused: false,
                })
            }
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                // The file system refuses O_DIRECT. With create_new the first attempt
                // may already have created the file: open it without create_new.
                let mut retry = opts;
                if retry.create_new && path.exists() {
                    retry.create_new = false;
                    retry.create = false;
                }
                let file = std_options(retry, false).open(path)?;
                return Ok(OpenedFile {
                    file,
                    direct: false,
                    direct_refused: true,
                });
            }
            Err(e) => return Err(e),
        }
    }
    let file = std_options(opts, false).open(path)?;
    Ok(OpenedFile {
        file,
        direct: false,
        direct_refused: false,
    })
}

/// fsyncs a directory, making its entries durable.
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    let d = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC)
        .open(dir)?;
    d.sync_all()
}

fn parent_or_dot(p: &Path) -> &Path {
    match p.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

/// Creates `dir` and its missing parents; after each creation the parent is fsynced.
pub(crate) fn create_dir_all(dir: &Path) -> io::Result<()> {
    // Collect the missing components, deepest first.
    let mut missing: Vec<&Path> = Vec::new();
    let mut cur = dir;
    loop {
        match std::fs::metadata(cur) {
            Ok(m) if m.is_dir() => break,
            Ok(_) => return Err(io::Error::from_raw_os_error(libc::ENOTDIR)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                missing.push(cur);
                match cur.parent() {
                    Some(p) if !p.as_os_str().is_empty() => cur = p,
                    _ => break,
                }
            }
            Err(e) => return Err(e),
        }
    }
    for d in missing.iter().rev() {
        match std::fs::create_dir(d) {
            Ok(()) => {}
            // Created concurrently by someone else: still sync the parent below.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
        sync_dir(parent_or_dot(d))?;
    }
    Ok(())
}

/// Names of the plain files in `dir`, sorted.
pub(crate) fn list_dir(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_file() {
            names.push(PathBuf::from(entry.file_name()));
        }
    }
    names.sort();
    Ok(names)
}

/// One `statvfs` of the file system holding a directory, with the file system's id,
/// so a caller summing over several directories counts each file system once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileSystemSpace {
    /// `statvfs.f_fsid`: equal for two directories on the same file system.
    pub fsid: u64,
    /// Total and free (available to this process) bytes.
    pub space: SpaceInfo,
}

/// `statvfs` of the file system holding `dir` (the real file system, whatever the
/// backend: the simulated disk answers [`crate::Disk::space`] itself). Sizes are in
/// `f_frsize` units, or `f_bsize` where a file system reports `f_frsize` as 0.
pub fn file_system_space(dir: &Path) -> io::Result<FileSystemSpace> {
    let c = CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: statvfs is plain old data; zeroed is a valid value to be overwritten.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: c is a valid NUL-terminated string and st a valid out-pointer.
    let rc = unsafe { libc::statvfs(c.as_ptr(), &mut st) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let unit = if st.f_frsize > 0 {
        st.f_frsize
    } else {
        st.f_bsize
    } as u64;
    Ok(FileSystemSpace {
        fsid: st.f_fsid as u64,
        space: SpaceInfo {
            total_bytes: (st.f_blocks as u64).saturating_mul(unit),
            free_bytes: (st.f_bavail as u64).saturating_mul(unit),
        },
    })
}

/// `statvfs` of the file system holding `dir` ([`crate::Disk::space`] of the real
/// backends).
pub(crate) fn space(dir: &Path) -> io::Result<SpaceInfo> {
    file_system_space(dir).map(|s| s.space)
}

/// fallocate(mode 0). Where the file system does not support it (EOPNOTSUPP), the
/// size is extended with ftruncate instead so the size semantics hold (no
/// preallocation then).
pub(crate) fn fallocate(file: &File, offset: u64, len: u64) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let off = i64::try_from(offset).map_err(|_| errno(libc::EINVAL))?;
    let ln = i64::try_from(len).map_err(|_| errno(libc::EINVAL))?;
    loop {
        // SAFETY: fd is a valid open descriptor owned by `file`.
        let rc = unsafe { libc::fallocate(file.as_raw_fd(), 0, off, ln) };
        if rc == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::EOPNOTSUPP) => {
                let end = offset.checked_add(len).ok_or_else(|| errno(libc::EINVAL))?;
                if file.metadata()?.len() < end {
                    file.set_len(end)?;
                }
                return Ok(());
            }
            _ => return Err(e),
        }
    }
}

/// An `io::Error` carrying `code`.
pub(crate) fn errno(code: i32) -> io::Error {
    io::Error::from_raw_os_error(code)
}
