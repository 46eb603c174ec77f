//! Typed errors of the entry log. Corruption, I/O failure, invalid input and the
//! ledger-level answers (no ledger, no entry, deleted, key mismatch, throttled) are
//! distinct variants so the bookie maps each to its own protocol code: a checksum
//! mismatch is `Corruption` (EIO on the wire), never `NoEntry`.

use std::io;
use std::path::PathBuf;
use std::time::Duration;

/// Result of entry-log operations.
pub type Result<T> = std::result::Result<T, Error>;

/// Errors of the entry log.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The ledger is not known here (never created, or deleted). Wire: ENOLEDGER.
    #[error("no such ledger {0}")]
    NoLedger(u64),
    /// The ledger exists but the entry (or, for `Last`, any entry) is not stored.
    /// Wire: ENOENTRY.
    #[error("no entry {entry:?} in ledger {ledger} (None = last entry)")]
    NoEntry { ledger: u64, entry: Option<u64> },
    /// The ledger was deleted by garbage collection; writes to it are refused so that
    /// journal replay cannot resurrect it. Wire: EFENCED for adds, ENOLEDGER otherwise.
    #[error("ledger {0} was deleted")]
    LedgerDeleted(u64),
    /// A different, non-zero master key is stored for the ledger (docs/semantics.md §3: EIO).
    #[error("master key conflict for ledger {0}")]
    MasterKeyConflict(u64),
    /// The write cache stayed full for longer than the throttle time. Wire: ETOOMANYREQUESTS.
    #[error("write cache full for {0:?}; add rejected")]
    Throttled(Duration),
    /// The write cache is full and no ledger directory has room to flush it: the add is
    /// refused at once instead of waiting for a flush that cannot happen. Wire: EREADONLY.
    #[error("write cache full and no ledger directory has room to flush it")]
    OutOfSpace,
    /// The caller passed something out of range (entry too large, bad config).
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// Stored bytes fail their checksum or do not decode. Wire: EIO.
    #[error("corruption in {path}: {detail}")]
    Corruption { path: PathBuf, detail: String },
    /// The disk reported an error (EIO, ENOSPC, ...). Wire: EIO.
    #[error("I/O error while {context}: {source}")]
    Io {
        context: String,
        #[source]
        source: io::Error,
    },
    /// The entry log was closed.
    #[error("entry log is closed")]
    Closed,
}

impl Error {
    pub(crate) fn io(context: impl Into<String>, source: io::Error) -> Error {
        Error::Io {
            context: context.into(),
            source,
        }
    }

    /// True when the error is the file system running out of space (ENOSPC/EDQUOT).
    pub fn is_no_space(&self) -> bool {
        match self {
            Error::Io { source, .. } => {
                matches!(source.raw_os_error(), Some(ENOSPC) | Some(EDQUOT))
                    || source.kind() == io::ErrorKind::StorageFull
            }
            Error::OutOfSpace => true,
            _ => false,
        }
    }

    /// An ENOSPC error for "no directory has room for the next segment", so callers
    /// treat it like the file system's own ENOSPC (`is_no_space`).
    pub(crate) fn no_room(context: impl Into<String>) -> Error {
        Error::io(context, io::Error::from_raw_os_error(ENOSPC))
    }

    /// True for errors that are a storage failure (I/O or corruption): the bookie
    /// answers EIO.
    pub fn is_storage_failure(&self) -> bool {
        matches!(self, Error::Io { .. } | Error::Corruption { .. })
    }
}

const ENOSPC: i32 = 28;
const EDQUOT: i32 = 122;
