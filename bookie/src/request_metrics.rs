//! Request-path metrics: a [`RequestObserver`] that records every request the server
//! serves into the stock Java bookie metrics (docs/config.md §3): per-operation latency
//! summaries, in-progress gauges, byte counters and the connection gauge.
//!
//! Invariant: every `started` is matched by one `finished` for the same kind, so the
//! in-progress gauges return to zero when the bookie is idle.

use std::time::Duration;

use crate::handlers::Status;
use crate::metrics::{self, Counter, Gauge, Metrics};
use crate::server::{RequestKind, RequestObserver};

/// Records the request path into the stock metrics (docs/config.md §3).
pub struct MetricsObserver(pub Metrics);

fn request_op(kind: RequestKind) -> metrics::Op {
    use metrics::Op;
    match kind {
        RequestKind::Add | RequestKind::RecoveryAdd => Op::AddEntryRequest,
        RequestKind::Read => Op::ReadEntryRequest,
        RequestKind::FenceRead => Op::ReadEntryFenceRequest,
        RequestKind::LongPollRead => Op::ReadEntryLongPollRequest,
        RequestKind::BatchRead => Op::BatchReadEntryRequest,
        RequestKind::WriteLac => Op::WriteLacRequest,
        RequestKind::ReadLac => Op::ReadLacRequest,
        RequestKind::ForceLedger => Op::ForceLedgerRequest,
        RequestKind::GetBookieInfo => Op::GetBookieInfoRequest,
        RequestKind::ListEntries => Op::GetListOfEntriesOfLedgerRequest,
    }
}

fn is_add(kind: RequestKind) -> bool {
    matches!(kind, RequestKind::Add | RequestKind::RecoveryAdd)
}

fn is_entry_read(kind: RequestKind) -> bool {
    matches!(
        kind,
        RequestKind::Read
            | RequestKind::FenceRead
            | RequestKind::LongPollRead
            | RequestKind::BatchRead
    )
}

impl RequestObserver for MetricsObserver {
    fn started(&self, kind: RequestKind, request_bytes: usize) {
        if is_add(kind) {
            self.0.gauge_add(Gauge::AddEntryInProgress, 1);
            self.0
                .gauge_add(Gauge::AddEntryInProgressBytes, request_bytes as i64);
        } else if is_entry_read(kind) {
            self.0.gauge_add(Gauge::ReadEntryInProgress, 1);
        }
    }

    fn finished(
        &self,
        kind: RequestKind,
        latency: Duration,
        status: Status,
        request_bytes: usize,
        response_bytes: usize,
    ) {
        let ok = status == Status::Ok;
        self.0.op(request_op(kind)).observe(latency, ok);
        if is_add(kind) {
            self.0.gauge_add(Gauge::AddEntryInProgress, -1);
            self.0
                .gauge_add(Gauge::AddEntryInProgressBytes, -(request_bytes as i64));
            let op = if kind == RequestKind::RecoveryAdd {
                metrics::Op::BookieRecoveryAddEntry
            } else {
                metrics::Op::BookieAddEntry
            };
            self.0.op(op).observe(latency, ok);
            self.0
                .op(metrics::Op::BookieAddEntryBytes)
                .observe_value(request_bytes as u64, ok);
            if ok {
                self.0.add(Counter::WriteBytes, request_bytes as u64);
            }
        } else if is_entry_read(kind) {
            self.0.gauge_add(Gauge::ReadEntryInProgress, -1);
            self.0.op(metrics::Op::BookieReadEntry).observe(latency, ok);
            self.0
                .op(metrics::Op::BookieReadEntryBytes)
                .observe_value(response_bytes as u64, ok);
            if ok {
                self.0.add(Counter::ReadBytes, response_bytes as u64);
            }
        } else if kind == RequestKind::ForceLedger && ok {
            self.0.inc(Counter::BookieForceLedger);
        }
    }

    fn connections(&self, delta: i64) {
        self.0.gauge_add(Gauge::Connections, delta);
    }
}
