//! Adapters from bk-journal and bk-entrylog to the request path's narrow interfaces
//! ([`super::JournalSink`], [`super::Checkpointer`], [`super::LedgerStorage`]).
//! Filled in as those crates land.
