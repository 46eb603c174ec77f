//! The operations the bookie serves, as the server decodes them from v2 and v3 frames
//! ([`Op`]), and their answers before encoding ([`Reply`]).

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;

use super::Status;
use crate::storage::{EntryId, LedgerId};

/// ADD (v2 ADDENTRY / v3 ADD_ENTRY).
#[derive(Debug, Clone)]
pub struct AddOp {
    pub master_key: Bytes,
    /// The whole entry (ledger id, entry id, LAC, length, digest, payload).
    pub body: Bytes,
    pub recovery: bool,
    pub high_priority: bool,
    /// v3 writeFlags DEFERRED_SYNC (ignored for recovery adds).
    pub deferred_sync: bool,
}

/// Long-poll parameters of a v3 READ_ENTRY (docs/semantics.md §10.2).
#[derive(Debug, Clone, Copy)]
pub struct LongPoll {
    pub previous_lac: i64,
    pub timeout: Option<Duration>,
    pub piggyback: bool,
}

/// READ (v2 READENTRY / v3 READ_ENTRY).
#[derive(Debug, Clone)]
pub struct ReadOp {
    pub ledger: LedgerId,
    /// -1 = the last stored entry.
    pub entry: EntryId,
    /// `Some(key)` for a fencing read; `Some(empty)` when fencing was asked without a key.
    pub fence: Option<Bytes>,
    /// Set for v3 long-poll reads (`previousLAC` present, not fencing).
    pub long_poll: Option<LongPoll>,
    /// v2 flag 0x0004 / v3 `priority > 0` (a scheduling hint only; reads are never refused).
    pub high_priority: bool,
}

/// v2 BATCH_READ_ENTRY.
#[derive(Debug, Clone)]
pub struct BatchReadOp {
    pub ledger: LedgerId,
    pub start: EntryId,
    pub max_count: i32,
    pub max_size: i64,
    pub fence: Option<Bytes>,
}

/// Every operation the bookie serves.
#[derive(Debug, Clone)]
pub enum Op {
    Add(AddOp),
    Read(ReadOp),
    BatchRead(BatchReadOp),
    WriteLac {
        ledger: LedgerId,
        master_key: Bytes,
        body: Bytes,
    },
    ReadLac {
        ledger: LedgerId,
    },
    ForceLedger {
        ledger: LedgerId,
    },
    GetBookieInfo {
        requested: i64,
    },
    ListEntries {
        ledger: LedgerId,
    },
}

/// The answer to an [`Op`]; the server adds the echo fields of the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    Add {
        status: Status,
    },
    Read {
        status: Status,
        /// The entry id to put in the response (the request's, except for piggyback).
        entry: EntryId,
        body: Option<Bytes>,
        max_lac: Option<i64>,
        lac_update_timestamp: Option<i64>,
    },
    BatchRead {
        status: Status,
        entries: Vec<Bytes>,
    },
    WriteLac {
        status: Status,
    },
    ReadLac {
        status: Status,
        lac_body: Option<Bytes>,
        last_entry: Option<Bytes>,
    },
    ForceLedger {
        status: Status,
    },
    BookieInfo {
        status: Status,
        total: Option<i64>,
        free: Option<i64>,
    },
    ListEntries {
        status: Status,
        availability: Option<Bytes>,
    },
}

impl Reply {
    pub fn status(&self) -> Status {
        match self {
            Reply::Add { status }
            | Reply::Read { status, .. }
            | Reply::BatchRead { status, .. }
            | Reply::WriteLac { status }
            | Reply::ReadLac { status, .. }
            | Reply::ForceLedger { status }
            | Reply::BookieInfo { status, .. }
            | Reply::ListEntries { status, .. } => *status,
        }
    }
}

/// A reply still being produced (journal wait, disk read, long poll).
pub type Pending = Pin<Box<dyn Future<Output = Reply> + Send + 'static>>;
