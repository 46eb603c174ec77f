//! How an operation answers: [`Status`], its v2 and v3 wire codes (docs/protocol.md §2.4), and
//! [`status`], the only mapping from a [`StorageError`] to a [`Status`].
//!
//! Invariants: v2 clients never see codes above 106 (the stock v2 decoder closes the
//! connection on them); corruption is EIO, never "no such entry".

use crate::storage::StorageError;

/// Result of an operation, independent of the protocol (v2 and v3 codes in docs/protocol.md §2.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    Ok,
    NoLedger,
    NoEntry,
    BadRequest,
    Io,
    Unauthorized,
    BadVersion,
    Fenced,
    ReadOnly,
    TooManyRequests,
    UnknownLedgerState,
}

impl Status {
    /// The v2 int32 code. Codes above 106 are never sent to v2 clients (the stock client
    /// closes the connection on them, docs/protocol.md §2.4): EUNKNOWNLEDGERSTATE becomes EIO.
    pub fn v2_code(self) -> i32 {
        match self {
            Status::Ok => 0,
            Status::NoLedger => 1,
            Status::NoEntry => 2,
            Status::BadRequest => 100,
            Status::Io => 101,
            Status::Unauthorized => 102,
            Status::BadVersion => 103,
            Status::Fenced => 104,
            Status::ReadOnly => 105,
            Status::TooManyRequests => 106,
            Status::UnknownLedgerState => 101,
        }
    }

    /// The v3 `StatusCode` value.
    pub fn v3_code(self) -> i32 {
        match self {
            Status::Ok => 0,
            Status::NoLedger => 402,
            Status::NoEntry => 403,
            Status::BadRequest => 404,
            Status::Io => 501,
            Status::Unauthorized => 502,
            Status::BadVersion => 503,
            Status::Fenced => 504,
            Status::ReadOnly => 505,
            Status::TooManyRequests => 506,
            Status::UnknownLedgerState => 507,
        }
    }
}

/// What an operation was doing when storage answered with an error. The same error is
/// answered differently in a few places (docs/semantics.md); [`status`] is the one place that
/// decides, so every variant of [`StorageError`] meets every context in one match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum At {
    /// Reading or changing ledger state or entries: the general rule.
    Storage,
    /// An ADD creating or writing its ledger: a ledger deleted by GC answers EFENCED
    /// (docs/semantics.md §6.5), so the writer moves on to a new ensemble.
    Add,
    /// The LAC a long-poll answer carries: a ledger with no entry and no explicit LAC has
    /// none, which Java answers EIO (its IOException), not ENOENTRY.
    Lac,
    /// Waiting for a journal record to be durable: whatever failed, the record's
    /// durability is unknown, so the answer is EIO.
    Journal,
    /// Reading the space of the ledger directories (GET_BOOKIE_INFO): EIO.
    DiskSpace,
}

/// The answer to a storage error met at `at` (see [`At`]). Corruption is always EIO,
/// never ENOENTRY (ARCHITECTURE.md invariant 4).
pub fn status(e: &StorageError, at: At) -> Status {
    // A full journal disk: the record was provably not written (bk_journal NoSpace), so
    // the writer is told to go elsewhere, as a read-only bookie tells it
    // (docs/semantics.md §14), whatever the context.
    if e.is_journal_no_space() {
        return Status::ReadOnly;
    }
    if matches!(at, At::Journal | At::DiskSpace) {
        return Status::Io;
    }
    match e {
        StorageError::LedgerDeleted(_) if at == At::Add => Status::Fenced,
        StorageError::NoLedger(_) | StorageError::LedgerDeleted(_) => Status::NoLedger,
        StorageError::NoEntry(..) if at == At::Lac => Status::Io,
        StorageError::NoEntry(..) => Status::NoEntry,
        StorageError::Throttled(_) => Status::TooManyRequests,
        StorageError::OutOfSpace => Status::ReadOnly,
        StorageError::Invalid(_) => Status::BadRequest,
        StorageError::MasterKeyConflict(_)
        | StorageError::Corruption(_)
        | StorageError::EntryLog(_)
        | StorageError::Journal(_)
        | StorageError::Replay(_)
        | StorageError::Lost(_)
        | StorageError::FileSystemSpace { .. } => Status::Io,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn context_decides_only_where_semantics_say_so() {
        let corrupt = StorageError::from(bk_entrylog::Error::Corruption {
            path: "seg".into(),
            detail: "crc".into(),
        });
        assert!(matches!(corrupt, StorageError::Corruption(_)));
        for at in [At::Storage, At::Add, At::Lac, At::Journal, At::DiskSpace] {
            // Invariant 4: corruption is never "no such entry".
            assert_eq!(status(&corrupt, at), Status::Io);
        }
        let deleted = StorageError::LedgerDeleted(7);
        assert_eq!(status(&deleted, At::Add), Status::Fenced);
        assert_eq!(status(&deleted, At::Storage), Status::NoLedger);
        let no_entry = StorageError::NoEntry(7, -1);
        assert_eq!(status(&no_entry, At::Storage), Status::NoEntry);
        assert_eq!(status(&no_entry, At::Lac), Status::Io);
        let invalid = StorageError::Invalid("negative ledger id".into());
        assert_eq!(status(&invalid, At::Storage), Status::BadRequest);
        assert_eq!(status(&invalid, At::Journal), Status::Io);
        let full = StorageError::from(bk_entrylog::Error::OutOfSpace);
        assert_eq!(status(&full, At::Add), Status::ReadOnly);
        assert!(full.is_no_space());
        let full = StorageError::Journal(bk_journal::JournalError::NoSpace("ENOSPC".into()));
        for at in [At::Storage, At::Add, At::Lac, At::Journal] {
            assert_eq!(status(&full, at), Status::ReadOnly);
        }
        let fatal = StorageError::Journal(bk_journal::JournalError::Fatal("EIO".into()));
        assert_eq!(status(&fatal, At::Journal), Status::Io);
        let closed = StorageError::EntryLog(Arc::new(bk_entrylog::Error::Closed));
        assert!(closed.is_shut_down());
        assert_eq!(status(&closed, At::Storage), Status::Io);
    }
}
