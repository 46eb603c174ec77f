//! `gc_scan`: owned by the operations engineer; being written.
