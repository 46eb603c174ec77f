//! `metrics`: the bookie's Prometheus metrics with the Java bookie's stock names and shapes
//! (docs/config.md §3; what we export and why: docs/metrics.md), and the `/metrics` HTTP
//! endpoint. Submodules: `adapters` (journal, entry log, ledger dirs, memory), `process`
//! (`process_*`, build info), `gc_stats` and `zk_stats` (process-wide GC and ZooKeeper
//! client stats), `summary` (op-stat windows), `rollover` (when the windows close:
//! `prometheusStatsLatencyRolloverSeconds`), `http`.
//!
//! Exposition shape (decision, see ARCHITECTURE notes): the stock metrics are written exactly
//! like the Java bookie's `PrometheusTextFormat` (text format 0.0.4), so dashboards built for
//! Java bookies work unchanged:
//! * counters and gauges: `# TYPE <name> counter|gauge` then `<name>{labels} <value>`; counters
//!   keep their stock name (no `_total` suffix);
//! * op stats (latencies in milliseconds, or plain values for `*_BYTES` stats): `# TYPE <name>
//!   summary`, then for `success="false"` and `success="true"`: seven `quantile` lines (0.5, 0.75,
//!   0.95, 0.99, 0.999, 0.9999, 1.0; `NaN` when the last window was empty), `<name>_count` and
//!   `<name>_sum` (cumulative).
//!
//! prometheus-client 0.26 cannot produce that shape (it appends `_total` to every counter and has
//! no summary type), so the stock families are encoded here; prometheus-client's `Registry` is
//! still offered ([`Metrics::registry`]) for additional non-stock metrics, appended after the
//! stock ones with its Prometheus-text encoder.
//!
//! Invariants: recording never blocks, allocates or fails (atomics only); the exposition groups
//! all samples of one name under one `# TYPE` line; label values are escaped; a collector runs
//! only at scrape time and must not block.

pub mod adapters;
pub mod gc_stats;
pub mod http;
pub mod process;
pub mod rollover;
pub mod summary;
pub mod zk_stats;

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub use http::{serve, MetricsServer};
pub use summary::{OpSummary, OutcomeSnapshot, SummarySnapshot, QUANTILES};

macro_rules! named_enum {
    ($(#[$m:meta])* $vis:vis enum $name:ident { $($(#[$vm:meta])* $var:ident => $metric:literal,)* }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        $vis enum $name { $($(#[$vm])* $var,)* }
        impl $name {
            /// Every variant, in exposition order.
            pub const ALL: &'static [$name] = &[$($name::$var,)*];
            /// The exported metric name.
            pub fn metric_name(self) -> &'static str {
                match self { $($name::$var => $metric,)* }
            }
        }
    };
}

named_enum! {
    /// Op stats (summaries). `*Request` = end to end including queueing; without = processing.
    pub enum Op {
        AddEntryRequest => "bookkeeper_server_ADD_ENTRY_REQUEST",
        AddEntry => "bookkeeper_server_ADD_ENTRY",
        ReadEntryRequest => "bookkeeper_server_READ_ENTRY_REQUEST",
        ReadEntry => "bookkeeper_server_READ_ENTRY",
        ReadEntryFenceRequest => "bookkeeper_server_READ_ENTRY_FENCE_REQUEST",
        ReadEntryFenceRead => "bookkeeper_server_READ_ENTRY_FENCE_READ",
        ReadEntryFenceWait => "bookkeeper_server_READ_ENTRY_FENCE_WAIT",
        ReadEntryLongPollRequest => "bookkeeper_server_READ_ENTRY_LONG_POLL_REQUEST",
        ReadEntryLongPollPreWait => "bookkeeper_server_READ_ENTRY_LONG_POLL_PRE_WAIT",
        ReadEntryLongPollWait => "bookkeeper_server_READ_ENTRY_LONG_POLL_WAIT",
        ReadEntryLongPollRead => "bookkeeper_server_READ_ENTRY_LONG_POLL_READ",
        BatchReadEntryRequest => "bookkeeper_server_BATCH_READ_ENTRY_REQUEST",
        BatchReadEntry => "bookkeeper_server_BATCH_READ_ENTRY",
        WriteLacRequest => "bookkeeper_server_WRITE_LAC_REQUEST",
        WriteLac => "bookkeeper_server_WRITE_LAC",
        ReadLacRequest => "bookkeeper_server_READ_LAC_REQUEST",
        ReadLac => "bookkeeper_server_READ_LAC",
        GetBookieInfoRequest => "bookkeeper_server_GET_BOOKIE_INFO_REQUEST",
        GetBookieInfo => "bookkeeper_server_GET_BOOKIE_INFO",
        ForceLedgerRequest => "bookkeeper_server_FORCE_LEDGER_REQUEST",
        ForceLedger => "bookkeeper_server_FORCE_LEDGER",
        GetListOfEntriesOfLedgerRequest => "bookkeeper_server_GET_LIST_OF_ENTRIES_OF_LEDGER_REQUEST",
        GetListOfEntriesOfLedger => "bookkeeper_server_GET_LIST_OF_ENTRIES_OF_LEDGER",
        AddEntryBlockedWait => "bookkeeper_server_ADD_ENTRY_BLOCKED_WAIT",
        ReadEntryBlockedWait => "bookkeeper_server_READ_ENTRY_BLOCKED_WAIT",
        ReadEntrySchedulingDelay => "bookkeeper_server_READ_ENTRY_SCHEDULING_DELAY",
        WriteThreadQueuedLatency => "bookkeeper_server_WRITE_THREAD_QUEUED_LATENCY",
        ChannelWrite => "bookkeeper_server_CHANNEL_WRITE",
        BookieAddEntry => "bookie_BOOKIE_ADD_ENTRY",
        BookieRecoveryAddEntry => "bookie_BOOKIE_RECOVERY_ADD_ENTRY",
        BookieReadEntry => "bookie_BOOKIE_READ_ENTRY",
        BookieGetListOfEntriesOfLedger => "bookie_BOOKIE_GET_LIST_OF_ENTRIES_OF_LEDGER",
        /// Value stat: entry sizes in bytes (use `observe_value`).
        BookieAddEntryBytes => "bookie_BOOKIE_ADD_ENTRY_BYTES",
        /// Value stat: entry sizes in bytes (use `observe_value`).
        BookieReadEntryBytes => "bookie_BOOKIE_READ_ENTRY_BYTES",
    }
}

impl Op {
    /// Value stats record plain values; the others are latencies reported in milliseconds.
    pub fn is_value_stat(self) -> bool {
        matches!(self, Op::BookieAddEntryBytes | Op::BookieReadEntryBytes)
    }
}

named_enum! {
    /// Monotonic counters.
    pub enum Counter {
        AddEntryRejected => "bookkeeper_server_ADD_ENTRY_REJECTED",
        ReadEntryRejected => "bookkeeper_server_READ_ENTRY_REJECTED",
        WriteBytes => "bookie_WRITE_BYTES",
        ReadBytes => "bookie_READ_BYTES",
        BookieForceLedger => "bookie_BOOKIE_FORCE_LEDGER",
        /// A read of entry -1 answered no-entry (Java: `READ_LAST_ENTRY_NOENTRY_ERROR`).
        ReadLastEntryNoEntryError => "bookkeeper_server_READ_LAST_ENTRY_NOENTRY_ERROR",
    }
}

named_enum! {
    /// Gauges. The `bookie_rs_` ones are not stock (nothing equivalent in Java).
    pub enum Gauge {
        AddEntryInProgress => "bookkeeper_server_ADD_ENTRY_IN_PROGRESS",
        ReadEntryInProgress => "bookkeeper_server_READ_ENTRY_IN_PROGRESS",
        AddEntryBlocked => "bookkeeper_server_ADD_ENTRY_BLOCKED",
        ReadEntryBlocked => "bookkeeper_server_READ_ENTRY_BLOCKED",
        /// 1 writable, 0 read-only, -1 unregistered (set with `set_server_status`).
        ServerStatus => "bookie_SERVER_STATUS",
        JournalDirs => "bookie_JOURNAL_DIRS",
        JournalQueueMaxSize => "bookie_JOURNAL_QUEUE_MAX_SIZE",
        /// Bytes of add requests received and not yet answered.
        AddEntryInProgressBytes => "bookie_rs_add_entry_in_progress_bytes",
        /// Bytes of read responses being produced or written and not yet sent.
        ReadEntryInProgressBytes => "bookie_rs_read_entry_in_progress_bytes",
        /// Open client connections.
        Connections => "bookie_rs_connections",
    }
}

/// `bookie_SERVER_STATUS` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerStatus {
    Writable,
    ReadOnly,
    Unregistered,
}

/// A scrape-time callback adding samples (journal/entry-log figures, dir usage...).
pub type Collector = Arc<dyn Fn(&mut Scrape) + Send + Sync>;

struct Inner {
    ops: Vec<OpSummary>,
    counters: Vec<AtomicU64>,
    gauges: Vec<AtomicI64>,
    collectors: parking_lot::RwLock<Vec<Collector>>,
    registry: parking_lot::Mutex<prometheus_client::registry::Registry>,
}

/// The metrics registry the request path records into. Cheap to clone (shared).
#[derive(Clone)]
pub struct Metrics {
    inner: Arc<Inner>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

/// Handle to one op stat.
pub struct OpHandle<'a> {
    summary: &'a OpSummary,
}

impl OpHandle<'_> {
    /// Records a latency (reported in milliseconds).
    pub fn observe(&self, latency: Duration, success: bool) {
        let us = latency.as_micros().min(u64::MAX as u128) as u64;
        self.summary.record(us, success);
    }

    /// Records a plain value (value stats such as entry sizes).
    pub fn observe_value(&self, value: u64, success: bool) {
        self.summary.record(value, success);
    }
}

/// Adds to a gauge now and subtracts the same amount when dropped.
#[must_use = "the gauge is decremented when the guard drops"]
pub struct InProgress {
    metrics: Metrics,
    gauge: Gauge,
    amount: i64,
}

impl Drop for InProgress {
    fn drop(&mut self) {
        self.metrics.gauge_add(self.gauge, -self.amount);
    }
}

impl Metrics {
    pub fn new() -> Metrics {
        let m = Metrics {
            inner: Arc::new(Inner {
                ops: Op::ALL
                    .iter()
                    .map(|op| OpSummary::new(if op.is_value_stat() { 1.0 } else { 1000.0 }))
                    .collect(),
                counters: Counter::ALL.iter().map(|_| AtomicU64::new(0)).collect(),
                gauges: Gauge::ALL.iter().map(|_| AtomicI64::new(0)).collect(),
                collectors: parking_lot::RwLock::new(Vec::new()),
                registry: parking_lot::Mutex::new(prometheus_client::registry::Registry::default()),
            }),
        };
        m.set_server_status(ServerStatus::Unregistered);
        m
    }

    /// The op stat `op`: `metrics.op(Op::AddEntryRequest).observe(latency, success)`.
    pub fn op(&self, op: Op) -> OpHandle<'_> {
        OpHandle {
            summary: &self.inner.ops[op as usize],
        }
    }

    pub fn inc(&self, c: Counter) {
        self.add(c, 1);
    }

    pub fn add(&self, c: Counter, n: u64) {
        self.inner.counters[c as usize].fetch_add(n, Ordering::Relaxed);
    }

    pub fn counter_value(&self, c: Counter) -> u64 {
        self.inner.counters[c as usize].load(Ordering::Relaxed)
    }

    pub fn gauge_add(&self, g: Gauge, n: i64) {
        self.inner.gauges[g as usize].fetch_add(n, Ordering::Relaxed);
    }

    pub fn gauge_set(&self, g: Gauge, v: i64) {
        self.inner.gauges[g as usize].store(v, Ordering::Relaxed);
    }

    pub fn gauge_value(&self, g: Gauge) -> i64 {
        self.inner.gauges[g as usize].load(Ordering::Relaxed)
    }

    /// `gauge += amount` until the guard drops (requests / bytes in flight).
    pub fn in_progress(&self, gauge: Gauge, amount: i64) -> InProgress {
        self.gauge_add(gauge, amount);
        InProgress {
            metrics: self.clone(),
            gauge,
            amount,
        }
    }

    pub fn set_server_status(&self, s: ServerStatus) {
        let v = match s {
            ServerStatus::Writable => 1,
            ServerStatus::ReadOnly => 0,
            ServerStatus::Unregistered => -1,
        };
        self.gauge_set(Gauge::ServerStatus, v);
    }

    /// Adds a scrape-time collector.
    pub fn add_collector(&self, c: impl Fn(&mut Scrape) + Send + Sync + 'static) {
        self.inner.collectors.write().push(Arc::new(c));
    }

    /// prometheus-client registry for extra, non-stock metrics (exported after the stock ones).
    pub fn registry(&self) -> parking_lot::MutexGuard<'_, prometheus_client::registry::Registry> {
        self.inner.registry.lock()
    }

    /// Closes the current quantile window of every op stat (`rollover` calls this every
    /// `prometheusStatsLatencyRolloverSeconds`).
    pub fn rotate(&self) {
        for s in &self.inner.ops {
            s.rotate();
        }
        gc_stats::GC_STATS.rotate();
        zk_stats::ZK_STATS.rotate();
    }

    /// The full exposition text (Prometheus text format 0.0.4).
    pub fn encode(&self) -> String {
        let mut s = Scrape::default();
        for c in Counter::ALL {
            s.counter(c.metric_name(), &[], self.counter_value(*c));
        }
        for g in Gauge::ALL {
            s.gauge(g.metric_name(), &[], self.gauge_value(*g) as f64);
        }
        for op in Op::ALL {
            s.summary(
                op.metric_name(),
                &[],
                &self.inner.ops[*op as usize].snapshot(),
            );
        }
        gc_stats::GC_STATS.collect(&mut s);
        zk_stats::ZK_STATS.collect(&mut s);
        let collectors: Vec<Collector> = self.inner.collectors.read().clone();
        for c in collectors {
            c(&mut s);
        }
        process::collect(&mut s);
        let mut out = s.finish();
        let mut extra = String::new();
        if prometheus_client::encoding::prometheus_text::encode(
            &mut extra,
            &self.inner.registry.lock(),
        )
        .is_ok()
        {
            out.push_str(&extra);
        }
        out
    }
}

/// One metric family being assembled.
struct Family {
    name: String,
    kind: &'static str,
    lines: String,
}

/// The exposition being built by a scrape; collectors add samples to it.
#[derive(Default)]
pub struct Scrape {
    families: Vec<Family>,
    index: HashMap<String, usize>,
}

fn escape_label_value(v: &str, out: &mut String) {
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

fn write_labels(out: &mut String, labels: &[(&str, &str)], first: bool) {
    for (i, (k, v)) in labels.iter().enumerate() {
        if i > 0 || !first {
            out.push(',');
        }
        out.push_str(k);
        out.push_str("=\"");
        escape_label_value(v, out);
        out.push('"');
    }
}

/// Formats a float the way Prometheus parses it (NaN, +Inf, -Inf, plain decimal otherwise).
pub fn format_value(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        }
    } else if v == v.trunc() && v.abs() < 1e15 {
        format!("{v:.1}")
    } else {
        format!("{v}")
    }
}

/// Turns a name into a valid metric name (Java sanitizes the same way: invalid chars -> `_`).
pub fn sanitize_name(name: &str) -> String {
    name.chars()
        .enumerate()
        .map(|(i, c)| {
            if c.is_ascii_alphanumeric() && !(i == 0 && c.is_ascii_digit()) || c == '_' || c == ':'
            {
                c
            } else {
                '_'
            }
        })
        .collect()
}

impl Scrape {
    fn family(&mut self, name: &str, kind: &'static str) -> &mut String {
        let i = match self.index.get(name) {
            Some(&i) => i,
            None => {
                self.families.push(Family {
                    name: name.to_string(),
                    kind,
                    lines: String::new(),
                });
                self.index.insert(name.to_string(), self.families.len() - 1);
                self.families.len() - 1
            }
        };
        &mut self.families[i].lines
    }

    fn sample(out: &mut String, name: &str, labels: &[(&str, &str)], value: &str) {
        out.push_str(name);
        if !labels.is_empty() {
            out.push('{');
            write_labels(out, labels, true);
            out.push('}');
        }
        out.push(' ');
        out.push_str(value);
        out.push('\n');
    }

    /// A counter sample (stock name, no `_total`).
    pub fn counter(&mut self, name: &str, labels: &[(&str, &str)], value: u64) {
        let out = self.family(name, "counter");
        Self::sample(out, name, labels, &value.to_string());
    }

    /// A counter sample with a fractional value (`process_cpu_seconds_total`).
    pub fn counter_f64(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        let out = self.family(name, "counter");
        Self::sample(out, name, labels, &format_value(value));
    }

    /// A gauge sample.
    pub fn gauge(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        let out = self.family(name, "gauge");
        let v = if value == value.trunc() && value.abs() < 1e15 {
            format!("{}", value as i64)
        } else {
            format_value(value)
        };
        Self::sample(out, name, labels, &v);
    }

    /// An op-stat summary in the Java bookie's shape.
    pub fn summary(&mut self, name: &str, labels: &[(&str, &str)], snap: &SummarySnapshot) {
        let out = self.family(name, "summary");
        for (success, o) in [("false", &snap.failure), ("true", &snap.success)] {
            for (q, v) in QUANTILES.iter().zip(o.quantiles) {
                let _ = write!(
                    out,
                    "{name}{{success=\"{success}\",quantile=\"{}\"",
                    format_value(*q)
                );
                write_labels(out, labels, false);
                let _ = writeln!(out, "}} {}", format_value(v));
            }
            let _ = write!(out, "{name}_count{{success=\"{success}\"");
            write_labels(out, labels, false);
            let _ = writeln!(out, "}} {}", o.count);
            let _ = write!(out, "{name}_sum{{success=\"{success}\"");
            write_labels(out, labels, false);
            let _ = writeln!(out, "}} {}", format_value(o.sum));
        }
    }

    /// The text: one `# TYPE` line per name, its samples grouped below it.
    pub fn finish(self) -> String {
        let mut out = String::new();
        for f in self.families {
            let _ = writeln!(out, "# TYPE {} {}", f.name, f.kind);
            out.push_str(&f.lines);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stock_names_and_java_shape() {
        let m = Metrics::new();
        m.op(Op::AddEntryRequest)
            .observe(Duration::from_micros(1706), true);
        m.op(Op::AddEntryRequest)
            .observe(Duration::from_micros(500), false);
        m.op(Op::BookieAddEntryBytes).observe_value(1024, true);
        m.add(Counter::WriteBytes, 4096);
        m.set_server_status(ServerStatus::Writable);
        let g = m.in_progress(Gauge::AddEntryInProgress, 1);
        m.rotate();
        let text = m.encode();
        assert!(
            text.contains("# TYPE bookie_WRITE_BYTES counter\nbookie_WRITE_BYTES 4096\n"),
            "{text}"
        );
        assert!(text.contains("# TYPE bookie_SERVER_STATUS gauge\nbookie_SERVER_STATUS 1\n"));
        assert!(text.contains("bookkeeper_server_ADD_ENTRY_IN_PROGRESS 1\n"));
        drop(g);
        assert_eq!(m.gauge_value(Gauge::AddEntryInProgress), 0);
        assert!(text.contains("# TYPE bookkeeper_server_ADD_ENTRY_REQUEST summary\n"));
        let p50_line = "bookkeeper_server_ADD_ENTRY_REQUEST{success=\"true\",quantile=\"0.5\"} ";
        let p50: f64 = text
            .split(p50_line)
            .nth(1)
            .and_then(|r| r.lines().next())
            .unwrap()
            .parse()
            .unwrap();
        assert!(
            (p50 - 1.706).abs() / 1.706 < 0.03,
            "p50 {p50} within the bucket error of 1.706 ms"
        );
        assert!(text.contains(
            "bookkeeper_server_ADD_ENTRY_REQUEST{success=\"true\",quantile=\"1.0\"} 1.706\n"
        ));
        assert!(text.contains("bookkeeper_server_ADD_ENTRY_REQUEST_count{success=\"true\"} 1\n"));
        assert!(text.contains("bookkeeper_server_ADD_ENTRY_REQUEST_sum{success=\"true\"} 1.706\n"));
        assert!(text.contains("bookkeeper_server_ADD_ENTRY_REQUEST_count{success=\"false\"} 1\n"));
        assert!(
            text.contains("bookkeeper_server_READ_ENTRY{success=\"true\",quantile=\"0.99\"} NaN\n")
        );
        assert!(text
            .contains("bookie_BOOKIE_ADD_ENTRY_BYTES{success=\"true\",quantile=\"1.0\"} 1024.0\n"));
        // Stock counters keep their names; the one `_total` is the Prometheus client's
        // own `process_cpu_seconds_total`, as Java exports it.
        assert!(
            text.lines()
                .filter(|l| l.contains("_total"))
                .all(|l| l.contains("process_cpu_seconds_total")),
            "{text}"
        );
        for op in Op::ALL {
            assert_eq!(
                text.matches(&format!("# TYPE {} summary\n", op.metric_name()))
                    .count(),
                1
            );
        }
    }

    #[test]
    fn collectors_group_families_and_escape_labels() {
        let m = Metrics::new();
        for idx in ["0", "1"] {
            let idx = idx.to_string();
            m.add_collector(move |s| {
                s.counter(
                    "bookie_journal_JOURNAL_WRITE_BYTES",
                    &[("journalIndex", &idx)],
                    7,
                );
                s.gauge(
                    "bookie_journal_JOURNAL_MEMORY_USED",
                    &[("journalIndex", &idx)],
                    3.0,
                );
            });
        }
        m.add_collector(|s| s.gauge("x_gauge", &[("dir", "a\"b\\c\nd")], 0.25));
        let text = m.encode();
        assert_eq!(
            text.matches("# TYPE bookie_journal_JOURNAL_WRITE_BYTES counter")
                .count(),
            1
        );
        assert!(text.contains(
            "# TYPE bookie_journal_JOURNAL_WRITE_BYTES counter\nbookie_journal_JOURNAL_WRITE_BYTES{journalIndex=\"0\"} 7\n\
             bookie_journal_JOURNAL_WRITE_BYTES{journalIndex=\"1\"} 7\n"
        ), "{text}");
        assert!(
            text.contains("x_gauge{dir=\"a\\\"b\\\\c\\nd\"} 0.25\n"),
            "{text}"
        );
        let labelled = {
            let mut s = Scrape::default();
            s.summary(
                "bookie_journal_JOURNAL_SYNC",
                &[("journalIndex", "0")],
                &OpSummary::new(1000.0).snapshot(),
            );
            s.finish()
        };
        assert!(labelled.contains("bookie_journal_JOURNAL_SYNC{success=\"false\",quantile=\"0.5\",journalIndex=\"0\"} NaN\n"));
        assert!(labelled.contains(
            "bookie_journal_JOURNAL_SYNC_count{success=\"true\",journalIndex=\"0\"} 0\n"
        ));
    }

    #[test]
    fn extra_prometheus_client_metrics_are_appended() {
        let m = Metrics::new();
        let c: prometheus_client::metrics::counter::Counter = Default::default();
        m.registry()
            .register("bookie_rs_gc_runs", "GC rounds", c.clone());
        c.inc();
        let text = m.encode();
        assert!(text.contains("bookie_rs_gc_runs_total 1"), "{text}");
    }

    #[test]
    fn value_formatting_and_names() {
        assert_eq!(format_value(f64::NAN), "NaN");
        assert_eq!(format_value(f64::INFINITY), "+Inf");
        assert_eq!(format_value(0.0), "0.0");
        assert_eq!(format_value(1.5), "1.5");
        assert_eq!(
            sanitize_name("bookie_ledger_dir_/data/bk-1_usage"),
            "bookie_ledger_dir__data_bk_1_usage"
        );
    }
}
