//! Choosing a backend at start-up: [`open_disk`] builds one [`Disk`] instance per
//! calling thread from a [`DiskConfig`].
//!
//! `DiskKind::Auto` (the default) tries io_uring and falls back to plain syscalls
//! when the ring cannot be set up (ENOSYS on old kernels, EPERM where
//! `kernel.io_uring_disabled` or a seccomp profile blocks it, EOPNOTSUPP when an
//! opcode we use is missing); the reason is kept in [`OpenedDisk::uring_error`] so
//! the caller can log it once. `DiskKind::Uring` fails instead of falling back, and
//! `DiskKind::Syscall` never touches io_uring.

use crate::{Disk, SyscallDisk, UringDisk, DEFAULT_QUEUE_DEPTH};
use std::io;
use std::str::FromStr;

/// Which backend to use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DiskKind {
    /// io_uring only; fail if unavailable.
    Uring,
    /// Plain pread/pwrite/fdatasync.
    Syscall,
    /// io_uring if it can be set up, else syscalls.
    #[default]
    Auto,
}

impl FromStr for DiskKind {
    type Err = String;
    /// Accepts `uring` (or `io_uring`), `syscall`, `auto`, case-insensitively.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "uring" | "io_uring" | "iouring" => Ok(DiskKind::Uring),
            "syscall" | "sync" | "psync" => Ok(DiskKind::Syscall),
            "auto" => Ok(DiskKind::Auto),
            other => Err(format!(
                "unknown disk backend {other:?} (expected uring, syscall or auto)"
            )),
        }
    }
}

/// Backend choice and sizing.
#[derive(Clone, Copy, Debug)]
pub struct DiskConfig {
    pub kind: DiskKind,
    /// Bound on operations submitted and not yet reaped (see [`DEFAULT_QUEUE_DEPTH`]).
    pub queue_depth: usize,
    /// io_uring: run syncs as fdatasync(2) on the owning thread, not on the kernel's io-wq
    /// workers (`UringDisk::set_inline_sync`; for a thread that waits for its syncs, such
    /// as the journal's committer). The syscall backend always does.
    pub inline_sync: bool,
}

impl Default for DiskConfig {
    fn default() -> Self {
        DiskConfig {
            kind: DiskKind::Auto,
            queue_depth: DEFAULT_QUEUE_DEPTH,
            inline_sync: false,
        }
    }
}

/// A disk instance and what was chosen.
pub struct OpenedDisk {
    pub disk: Box<dyn Disk>,
    /// The backend in use: `Uring` or `Syscall`, never `Auto`.
    pub kind: DiskKind,
    /// Why io_uring was not used, when `Auto` fell back.
    pub uring_error: Option<io::Error>,
}

fn uring(config: &DiskConfig) -> io::Result<UringDisk> {
    let mut d = UringDisk::new(config.queue_depth)?;
    d.set_inline_sync(config.inline_sync);
    Ok(d)
}

/// Builds one disk instance (one ring) for the calling thread.
pub fn open_disk(config: &DiskConfig) -> io::Result<OpenedDisk> {
    match config.kind {
        DiskKind::Uring => Ok(OpenedDisk {
            disk: Box::new(uring(config)?),
            kind: DiskKind::Uring,
            uring_error: None,
        }),
        DiskKind::Syscall => Ok(OpenedDisk {
            disk: Box::new(SyscallDisk::with_queue_depth(config.queue_depth)),
            kind: DiskKind::Syscall,
            uring_error: None,
        }),
        DiskKind::Auto => match uring(config) {
            Ok(d) => Ok(OpenedDisk {
                disk: Box::new(d),
                kind: DiskKind::Uring,
                uring_error: None,
            }),
            Err(e) => Ok(OpenedDisk {
                disk: Box::new(SyscallDisk::with_queue_depth(config.queue_depth)),
                kind: DiskKind::Syscall,
                uring_error: Some(e),
            }),
        },
    }
}
