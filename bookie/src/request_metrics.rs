//! Request-path metrics: a [`RequestObserver`] that records every request the server
//! serves into the stock Java bookie metrics (docs/metrics.md §2): per-operation latency
//! summaries, in-progress gauges, byte counters and the connection gauge.
//!
//! What is recorded where, as the Java request processors record it:
//! - `*_REQUEST`: from decode to the response queued (Java: enqueue to response sent);
//! - the processing stat without `_REQUEST` (`ADD_ENTRY`, `READ_ENTRY`, `WRITE_LAC`, ...):
//!   from dispatch (permits held) to the response queued (Java: from the worker thread
//!   taking the request);
//! - `WRITE_THREAD_QUEUED_LATENCY` (adds) and `READ_ENTRY_SCHEDULING_DELAY` (reads): the
//!   wait between the two (Java: time in the worker pool's queue).
//!
//! - `*_BLOCKED` / `*_BLOCKED_WAIT`: a request that found its in-progress permits taken
//!   (counts or byte budget) while it waits, and how long it waited (Java: the adds /
//!   reads semaphore of `maxAddsInProgressLimit` / `maxReadsInProgressLimit`).
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

/// The processing stat of a request kind (module docs).
fn processing_op(kind: RequestKind) -> metrics::Op {
    use metrics::Op;
    match kind {
        RequestKind::Add | RequestKind::RecoveryAdd => Op::AddEntry,
        RequestKind::Read => Op::ReadEntry,
        RequestKind::FenceRead => Op::ReadEntryFenceRead,
        RequestKind::LongPollRead => Op::ReadEntryLongPollRead,
        RequestKind::BatchRead => Op::BatchReadEntry,
        RequestKind::WriteLac => Op::WriteLac,
        RequestKind::ReadLac => Op::ReadLac,
        RequestKind::ForceLedger => Op::ForceLedger,
        RequestKind::GetBookieInfo => Op::GetBookieInfo,
        RequestKind::ListEntries => Op::GetListOfEntriesOfLedger,
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
        processing: Duration,
        status: Status,
        request_bytes: usize,
        response_bytes: usize,
    ) {
        let ok = status == Status::Ok;
        let queued = latency.saturating_sub(processing);
        self.0.op(request_op(kind)).observe(latency, ok);
        self.0.op(processing_op(kind)).observe(processing, ok);
        if kind == RequestKind::FenceRead {
            // A fence read is a read too (Java records READ_ENTRY for it as well).
            self.0.op(metrics::Op::ReadEntry).observe(processing, ok);
        }
        if is_add(kind) {
            self.0
                .op(metrics::Op::WriteThreadQueuedLatency)
                .observe(queued, true);
        } else if is_entry_read(kind) {
            self.0
                .op(metrics::Op::ReadEntrySchedulingDelay)
                .observe(queued, true);
        }
        if is_add(kind) {
            self.0.gauge_add(Gauge::AddEntryInProgress, -1);
            self.0
                .gauge_add(Gauge::AddEntryInProgressBytes, -(request_bytes as i64));
            let op = if kind == RequestKind::RecoveryAdd {
                metrics::Op::BookieRecoveryAddEntry
            } else {
                metrics::Op::BookieAddEntry
            };
            self.0.op(op).observe(processing, ok);
            self.0
                .op(metrics::Op::BookieAddEntryBytes)
                .observe_value(request_bytes as u64, ok);
            if ok {
                self.0.add(Counter::WriteBytes, request_bytes as u64);
            }
        } else if is_entry_read(kind) {
            self.0.gauge_add(Gauge::ReadEntryInProgress, -1);
            self.0
                .op(metrics::Op::BookieReadEntry)
                .observe(processing, ok);
            self.0
                .op(metrics::Op::BookieReadEntryBytes)
                .observe_value(response_bytes as u64, ok);
            if ok {
                self.0.add(Counter::ReadBytes, response_bytes as u64);
            }
        } else if kind == RequestKind::ForceLedger && ok {
            self.0.inc(Counter::BookieForceLedger);
        } else if kind == RequestKind::ListEntries {
            self.0
                .op(metrics::Op::BookieGetListOfEntriesOfLedger)
                .observe(processing, ok);
        }
    }

    fn connections(&self, delta: i64) {
        self.0.gauge_add(Gauge::Connections, delta);
    }

    fn channel_write(&self, took: Duration, ok: bool) {
        self.0.op(metrics::Op::ChannelWrite).observe(took, ok);
    }

    fn read_last_entry_no_entry(&self) {
        self.0.inc(Counter::ReadLastEntryNoEntryError);
    }

    fn blocked(&self, kind: RequestKind) {
        if let Some((gauge, _)) = blocked_series(kind) {
            self.0.gauge_add(gauge, 1);
        }
    }

    fn unblocked(&self, kind: RequestKind, waited: Option<Duration>) {
        if let Some((gauge, wait)) = blocked_series(kind) {
            self.0.gauge_add(gauge, -1);
            if let Some(waited) = waited {
                self.0.op(wait).observe(waited, true);
            }
        }
    }
}

/// `*_BLOCKED` (requests now waiting for their in-progress permits) and
/// `*_BLOCKED_WAIT` (how long one waited) of adds and entry reads; Java has none for
/// the other kinds.
fn blocked_series(kind: RequestKind) -> Option<(Gauge, metrics::Op)> {
    if is_add(kind) {
        Some((Gauge::AddEntryBlocked, metrics::Op::AddEntryBlockedWait))
    } else if is_entry_read(kind) {
        Some((Gauge::ReadEntryBlocked, metrics::Op::ReadEntryBlockedWait))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Op;

    fn count(m: &Metrics, op: Op) -> u64 {
        m.encode()
            .lines()
            .find_map(|l| {
                l.strip_prefix(&format!("{}_count{{success=\"true\"}} ", op.metric_name()))?
                    .parse()
                    .ok()
            })
            .unwrap_or_else(|| panic!("{} missing", op.metric_name()))
    }

    #[test]
    fn every_request_kind_feeds_its_request_and_processing_stats() {
        let m = Metrics::new();
        let o = MetricsObserver(m.clone());
        let cases = [
            (RequestKind::Add, Op::AddEntryRequest, Op::AddEntry),
            (RequestKind::RecoveryAdd, Op::AddEntryRequest, Op::AddEntry),
            (RequestKind::Read, Op::ReadEntryRequest, Op::ReadEntry),
            (
                RequestKind::FenceRead,
                Op::ReadEntryFenceRequest,
                Op::ReadEntryFenceRead,
            ),
            (
                RequestKind::LongPollRead,
                Op::ReadEntryLongPollRequest,
                Op::ReadEntryLongPollRead,
            ),
            (RequestKind::WriteLac, Op::WriteLacRequest, Op::WriteLac),
            (RequestKind::ReadLac, Op::ReadLacRequest, Op::ReadLac),
            (
                RequestKind::ForceLedger,
                Op::ForceLedgerRequest,
                Op::ForceLedger,
            ),
            (
                RequestKind::GetBookieInfo,
                Op::GetBookieInfoRequest,
                Op::GetBookieInfo,
            ),
            (
                RequestKind::ListEntries,
                Op::GetListOfEntriesOfLedgerRequest,
                Op::GetListOfEntriesOfLedger,
            ),
        ];
        for (kind, request, processing) in cases {
            let (r0, p0) = (count(&m, request), count(&m, processing));
            o.started(kind, 100);
            o.finished(
                kind,
                Duration::from_millis(3),
                Duration::from_millis(2),
                Status::Ok,
                100,
                50,
            );
            assert_eq!(count(&m, request), r0 + 1, "{kind:?} -> {request:?}");
            assert_eq!(count(&m, processing), p0 + 1, "{kind:?} -> {processing:?}");
        }
        // Adds: bookie layer, bytes, queueing; reads (plain and fence) likewise.
        assert_eq!(count(&m, Op::BookieAddEntry), 1);
        assert_eq!(count(&m, Op::BookieRecoveryAddEntry), 1);
        assert_eq!(count(&m, Op::BookieGetListOfEntriesOfLedger), 1);
        assert_eq!(count(&m, Op::WriteThreadQueuedLatency), 2);
        assert_eq!(count(&m, Op::ReadEntry), 2, "plain read + fence read");
        assert_eq!(count(&m, Op::BookieReadEntry), 3);
        assert_eq!(count(&m, Op::ReadEntrySchedulingDelay), 3);
        assert_eq!(m.counter_value(Counter::WriteBytes), 200);
        assert_eq!(m.counter_value(Counter::ReadBytes), 150);
        assert_eq!(m.gauge_value(Gauge::AddEntryInProgress), 0);
        assert_eq!(m.gauge_value(Gauge::ReadEntryInProgress), 0);
        // Processing time is the dispatch-to-reply part: 2 ms, queueing the other 1 ms.
        m.rotate();
        let text = m.encode();
        assert!(
            text.contains("bookkeeper_server_ADD_ENTRY{success=\"true\",quantile=\"1.0\"} 2.0\n"),
            "{text}"
        );
        assert!(text.contains(
            "bookkeeper_server_WRITE_THREAD_QUEUED_LATENCY{success=\"true\",quantile=\"1.0\"} 1.0\n"
        ));
    }

    #[test]
    fn blocked_requests_feed_the_blocked_gauges_and_waits() {
        let m = Metrics::new();
        let o = MetricsObserver(m.clone());
        o.blocked(RequestKind::Add);
        o.blocked(RequestKind::FenceRead);
        o.blocked(RequestKind::WriteLac); // no stock series for it
        assert_eq!(m.gauge_value(Gauge::AddEntryBlocked), 1);
        assert_eq!(m.gauge_value(Gauge::ReadEntryBlocked), 1);
        o.unblocked(RequestKind::Add, Some(Duration::from_millis(4)));
        o.unblocked(RequestKind::FenceRead, None); // abandoned: no wait recorded
        o.unblocked(RequestKind::WriteLac, Some(Duration::from_millis(4)));
        assert_eq!(m.gauge_value(Gauge::AddEntryBlocked), 0);
        assert_eq!(m.gauge_value(Gauge::ReadEntryBlocked), 0);
        assert_eq!(count(&m, Op::AddEntryBlockedWait), 1);
        assert_eq!(count(&m, Op::ReadEntryBlockedWait), 0);
    }

    #[test]
    fn socket_writes_feed_channel_write() {
        let m = Metrics::new();
        let o = MetricsObserver(m.clone());
        o.channel_write(Duration::from_millis(1), true);
        o.channel_write(Duration::from_millis(1), false);
        assert_eq!(count(&m, Op::ChannelWrite), 1);
        assert!(m
            .encode()
            .contains("bookkeeper_server_CHANNEL_WRITE_count{success=\"false\"} 1\n"));
    }

    #[test]
    fn a_last_entry_read_without_entries_is_counted() {
        let m = Metrics::new();
        MetricsObserver(m.clone()).read_last_entry_no_entry();
        assert_eq!(m.counter_value(Counter::ReadLastEntryNoEntryError), 1);
        assert!(m
            .encode()
            .contains("bookkeeper_server_READ_LAST_ENTRY_NOENTRY_ERROR 1\n"));
    }

    #[test]
    fn failures_are_counted_as_failures() {
        let m = Metrics::new();
        let o = MetricsObserver(m.clone());
        o.started(RequestKind::Read, 24);
        o.finished(
            RequestKind::Read,
            Duration::from_millis(1),
            Duration::from_millis(1),
            Status::NoEntry,
            24,
            24,
        );
        let text = m.encode();
        assert!(text.contains("bookkeeper_server_READ_ENTRY_count{success=\"false\"} 1\n"));
        assert!(text.contains("bookkeeper_server_READ_ENTRY_REQUEST_count{success=\"false\"} 1\n"));
        assert_eq!(m.counter_value(Counter::ReadBytes), 0);
    }
}
