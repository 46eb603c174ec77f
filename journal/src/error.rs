//! The journal's typed errors: corruption, I/O failure, invalid input and the fatal
//! stop are distinct variants, each with the structure a caller or an operator needs.
//!
//! Invariant: a [`JournalError::Fatal`] is sticky. Once a committer has seen a failed
//! write or fdatasync, every pending and every later append of that journal directory
//! fails with the same `Fatal` (the reason is logged once, where it happened).
//! A [`JournalError::NoSpace`] is not sticky: it answers the appends of a group whose
//! segment could not be prepared or whose write failed with ENOSPC/EDQUOT before any
//! sync (nothing of it is durable, nothing is acknowledged), and every append while
//! the directory waits for space; appends are accepted again once space returns.

use std::io;
use std::path::PathBuf;
use std::sync::Arc;

/// Why the bytes at some place of the journal are not what the format says.
/// Produced by the decoders in [`crate::format`]; never a panic.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FormatError {
    #[error("too short: need {need} bytes, have {have}")]
    Truncated { need: usize, have: usize },
    #[error("bad magic {found:02x?}")]
    BadMagic { found: [u8; 4] },
    #[error("unsupported format version {found}")]
    BadVersion { found: u16 },
    #[error("checksum mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    ChecksumMismatch { stored: u32, computed: u32 },
    #[error("field {field} has invalid value {value}")]
    InvalidField { field: &'static str, value: u64 },
    #[error("belongs to journal {found:#018x}, expected {expected:#018x}")]
    WrongJournal { expected: u64, found: u64 },
    #[error("belongs to segment {found}, expected {expected}")]
    WrongSegment { expected: u64, found: u64 },
    #[error("sequence {found} where {expected} was expected")]
    SequenceMismatch { expected: u64, found: u64 },
    #[error("previous sequence {found} where {expected} was expected")]
    ChainMismatch { expected: u64, found: u64 },
}

/// Errors of the journal crate.
#[derive(Debug, Clone, thiserror::Error)]
pub enum JournalError {
    /// An I/O operation failed outside the commit path (open, replay, checkpoint).
    #[error("journal I/O failed: {op} {path}: {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: Arc<io::Error>,
    },
    /// The journal on disk is damaged in a way replay must not paper over: bad
    /// checkpoint, or a damaged group in the middle of the log (a valid group follows).
    #[error("journal corrupted: {path} at offset {offset}: {reason}")]
    Corruption {
        path: PathBuf,
        offset: u64,
        reason: String,
    },
    /// The caller asked for something the journal cannot do (record too large, ...).
    #[error("invalid journal input: {0}")]
    InvalidInput(String),
    /// A write or fdatasync of this journal failed: nothing more is acknowledged.
    /// The bookie must exit.
    #[error("journal stopped after a fatal I/O failure: {0}")]
    Fatal(Arc<str>),
    /// The journal's file system is full (ENOSPC/EDQUOT where nothing was made
    /// durable: a segment's preallocation, a write before its sync, a checkpoint's
    /// temporary file). The append was NOT written and never will be: the caller may
    /// retry elsewhere. The journal retries by itself and accepts appends again when
    /// space returns (docs/semantics.md §14). Not fatal.
    #[error("journal disk full, record not written: {0}")]
    NoSpace(Arc<str>),
    /// The journal was shut down before the request was served.
    #[error("journal is shut down")]
    ShutDown,
    /// The replay visitor given to `Journal::open` refused a record.
    #[error("replay aborted by the caller at journal {journal_index} sequence {seq}: {reason}")]
    ReplayAborted {
        journal_index: usize,
        seq: u64,
        reason: String,
    },
}

impl JournalError {
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        JournalError::Io {
            op,
            path: path.into(),
            source: Arc::new(source),
        }
    }

    /// True for errors that mean "the journal no longer acknowledges anything".
    pub fn is_fatal(&self) -> bool {
        matches!(self, JournalError::Fatal(_))
    }

    /// True for [`JournalError::NoSpace`]: nothing was written, the journal recovers
    /// by itself when space returns.
    pub fn is_no_space(&self) -> bool {
        matches!(self, JournalError::NoSpace(_))
    }

    /// A "no space" I/O failure of an operation that changed nothing durable
    /// (`bk_disk::is_no_space`) becomes `NoSpace`; anything else stays `Io`.
    pub(crate) fn alloc(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        let path = path.into();
        if bk_disk::is_no_space(&source) {
            JournalError::NoSpace(format!("{op} {}: {source}", path.display()).into())
        } else {
            JournalError::io(op, path, source)
        }
    }
}
