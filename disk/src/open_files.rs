//! `OpenFiles`: the table of real files a backend on the real file system (`syscall`,
//! `uring`) has open, and the namespace half of [`crate::Disk`] both backends share
//! (the macro [`real_namespace_ops`]). The data half (submit, reap) is each backend's own.
//!
//! Invariants:
//! - a [`FileId`] names at most one open file; ids are handed out in increasing order
//!   (wrapping) and never reused while the file they name is open;
//! - `close` refuses (EBUSY) while the file has completions not yet reaped: the
//!   backend counts them in [`RealFile::unreaped`] (+1 at submit, -1 at reap), so a
//!   descriptor the kernel may still use is never closed;
//! - an open that asked for O_DIRECT and got a buffered file (the file system refused
//!   O_DIRECT) is counted in [`OpenFiles::direct_refusals`];
//! - a `FileId` that is not open is EBADF.

use crate::fsutil::{self, errno};
use crate::{FileId, OpenOptions};
use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::path::Path;

/// One open real file.
pub(crate) struct RealFile {
    pub file: File,
    /// True if O_DIRECT is in effect.
    pub direct: bool,
    /// Completions of this file not yet reaped (maintained by the backend).
    pub unreaped: usize,
}

/// The open files of one backend instance. See the module docs.
#[derive(Default)]
pub(crate) struct OpenFiles {
    files: HashMap<FileId, RealFile>,
    next_id: u32,
    direct_refusals: u64,
}

impl OpenFiles {
    /// Opens `path` (O_DIRECT if asked and allowed) and gives it a fresh id.
    pub fn open(&mut self, path: &Path, opts: OpenOptions) -> io::Result<FileId> {
        let opened = fsutil::open_file(path, opts)?;
        if opened.direct_refused {
            self.direct_refusals += 1;
        }
        let id = loop {
            let id = FileId(self.next_id);
            self.next_id = self.next_id.wrapping_add(1);
            if !self.files.contains_key(&id) {
                break id;
            }
        };
        self.files.insert(
            id,
            RealFile {
                file: opened.file,
                direct: opened.direct,
                unreaped: 0,
            },
        );
        Ok(id)
    }

    /// Closes `file`; EBUSY while it has unreaped completions.
    pub fn close(&mut self, file: FileId) -> io::Result<()> {
        if self.get(file)?.unreaped > 0 {
            return Err(errno(libc::EBUSY));
        }
        self.files.remove(&file);
        Ok(())
    }

    /// Current size of `file`.
    pub fn file_len(&self, file: FileId) -> io::Result<u64> {
        Ok(self.get(file)?.file.metadata()?.len())
    }

    /// Truncates or extends `file`.
    pub fn set_len(&self, file: FileId, len: u64) -> io::Result<()> {
        self.get(file)?.file.set_len(len)
    }

    /// The open file `file`, or EBADF.
    pub fn get(&self, file: FileId) -> io::Result<&RealFile> {
        self.files.get(&file).ok_or_else(|| errno(libc::EBADF))
    }

    /// The open file `file`, mutable, or EBADF.
    pub fn get_mut(&mut self, file: FileId) -> io::Result<&mut RealFile> {
        self.files.get_mut(&file).ok_or_else(|| errno(libc::EBADF))
    }

    /// Counts one reaped completion of `file` (if it is still open).
    pub fn reaped(&mut self, file: FileId) {
        if let Some(f) = self.files.get_mut(&file) {
            f.unreaped -= 1;
        }
    }

    /// How many opens asked for O_DIRECT and got a buffered file.
    pub fn direct_refusals(&self) -> u64 {
        self.direct_refusals
    }

    /// Whether an open file really uses O_DIRECT.
    pub fn is_direct(&self, file: FileId) -> Option<bool> {
        self.files.get(&file).map(|f| f.direct)
    }
}

/// Expands, inside an `impl Disk for ...` block, to the namespace methods (`open`,
/// `close`, `file_len`, `set_len`, `remove`, `rename`, `sync_dir`, `create_dir_all`,
/// `list_dir`, `space`) of a backend on the real file system whose [`OpenFiles`] is
/// the field named by the argument. They are synchronous system calls, the same for
/// every such backend (see `fsutil` for what each guarantees).
macro_rules! real_namespace_ops {
    ($files:ident) => {
        fn open(
            &mut self,
            path: &::std::path::Path,
            opts: $crate::OpenOptions,
        ) -> ::std::io::Result<$crate::FileId> {
            self.$files.open(path, opts)
        }

        fn close(&mut self, file: $crate::FileId) -> ::std::io::Result<()> {
            self.$files.close(file)
        }

        fn file_len(&mut self, file: $crate::FileId) -> ::std::io::Result<u64> {
            self.$files.file_len(file)
        }

        fn set_len(&mut self, file: $crate::FileId, len: u64) -> ::std::io::Result<()> {
            self.$files.set_len(file, len)
        }

        fn remove(&mut self, path: &::std::path::Path) -> ::std::io::Result<()> {
            ::std::fs::remove_file(path)
        }

        fn rename(
            &mut self,
            from: &::std::path::Path,
            to: &::std::path::Path,
        ) -> ::std::io::Result<()> {
            ::std::fs::rename(from, to)
        }

        fn sync_dir(&mut self, dir: &::std::path::Path) -> ::std::io::Result<()> {
            $crate::fsutil::sync_dir(dir)
        }

        fn create_dir_all(&mut self, dir: &::std::path::Path) -> ::std::io::Result<()> {
            $crate::fsutil::create_dir_all(dir)
        }

        fn list_dir(
            &mut self,
            dir: &::std::path::Path,
        ) -> ::std::io::Result<Vec<::std::path::PathBuf>> {
            $crate::fsutil::list_dir(dir)
        }

        fn space(&mut self, dir: &::std::path::Path) -> ::std::io::Result<$crate::SpaceInfo> {
            $crate::fsutil::space(dir)
        }
    };
}
pub(crate) use real_namespace_ops;
