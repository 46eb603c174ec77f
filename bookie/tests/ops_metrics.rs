//! The `/metrics` endpoint over real HTTP: stock names and the Java exposition shape, journal
//! and entry-log collectors, status codes, start-up from configuration, and a structural check
//! of the text format (every sample belongs to a family declared once by `# TYPE`).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use bookie::config::{BookieArgs, BookieConfig};
use bookie::metrics::adapters::{entrylog_collector, journal_collector};
use bookie::metrics::{serve, Counter, Gauge, Metrics, MetricsServer, Op, ServerStatus};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

async fn http(addr: std::net::SocketAddr, method: &str, path: &str) -> (u16, String, String) {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(format!("{method} {path} HTTP/1.1\r\nHost: x\r\nAccept: */*\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut buf = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut buf))
        .await
        .unwrap()
        .unwrap();
    let text = String::from_utf8(buf).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let status: u16 = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    (status, head.to_string(), body.to_string())
}

/// Every sample line names a family declared (once) by an earlier `# TYPE` line; summaries may
/// add `_count` / `_sum`; values parse as Prometheus floats.
fn check_structure(text: &str) {
    let mut declared: Vec<(String, String)> = Vec::new();
    let mut seen = HashSet::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap();
            assert!(seen.insert(name.to_string()), "duplicate TYPE for {name}");
            declared.push((name.to_string(), kind.to_string()));
            continue;
        }
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        let name_end = line.find(['{', ' ']).unwrap();
        let name = &line[..name_end];
        let (family, kind) = declared
            .last()
            .unwrap_or_else(|| panic!("sample before any TYPE: {line}"));
        let ok = name == family
            || (kind == "summary"
                && (name == format!("{family}_count") || name == format!("{family}_sum")))
            || (kind == "counter" && name == format!("{family}_total"));
        assert!(ok, "sample {name} outside its family {family}");
        let value = line.rsplit(' ').next().unwrap();
        assert!(
            value == "NaN" || value == "+Inf" || value == "-Inf" || value.parse::<f64>().is_ok(),
            "value in {line}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scrape_over_http_has_stock_names_and_java_shape() {
    let metrics = Metrics::new();
    let journal = Arc::new(bk_journal::JournalMetrics::default());
    journal
        .bytes_written
        .store(8192, std::sync::atomic::Ordering::Relaxed);
    metrics.add_collector(journal_collector(journal.clone(), 0));
    metrics.add_collector(entrylog_collector(
        Arc::new(bk_entrylog::EntryLogMetrics::default()),
        &["/data/ledgers/current".into()],
    ));
    let server = serve(
        metrics.clone(),
        "127.0.0.1:0".parse().unwrap(),
        Duration::from_secs(3600),
    )
    .await
    .unwrap();

    metrics.set_server_status(ServerStatus::ReadOnly);
    for i in 0..100u64 {
        metrics
            .op(Op::AddEntryRequest)
            .observe(Duration::from_micros(1000 + i * 10), true);
        metrics
            .op(Op::ReadEntryRequest)
            .observe(Duration::from_micros(200), i % 10 != 0);
    }
    metrics.inc(Counter::AddEntryRejected);
    let _in_flight = metrics.in_progress(Gauge::ReadEntryInProgress, 3);
    metrics.rotate(); // close the quantile window (the server does it every rollover period)

    let (status, head, body) = http(server.local_addr(), "GET", "/metrics").await;
    assert_eq!(status, 200);
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: text/plain; version=0.0.4"),
        "{head}"
    );
    check_structure(&body);
    for name in [
        "bookie_SERVER_STATUS 0",
        "bookkeeper_server_ADD_ENTRY_REJECTED 1",
        "bookkeeper_server_READ_ENTRY_IN_PROGRESS 3",
        "bookkeeper_server_ADD_ENTRY_REQUEST_count{success=\"true\"} 100",
        "bookkeeper_server_READ_ENTRY_REQUEST_count{success=\"false\"} 10",
        "bookkeeper_server_READ_ENTRY_REQUEST{success=\"true\",quantile=\"0.99\"} 0.2",
        "# TYPE bookkeeper_server_ADD_ENTRY summary",
        "# TYPE bookie_BOOKIE_ADD_ENTRY_BYTES summary",
        "bookie_journal_JOURNAL_WRITE_BYTES{journalIndex=\"0\"} 8192",
        "bookie_journal_JOURNAL_ADD_ENTRY{success=\"true\",quantile=\"0.5\",journalIndex=\"0\"} NaN",
        "# TYPE bookie_ledgers_count gauge",
        "# TYPE bookie_write_cache_size gauge",
        "# TYPE bookie_flush summary",
    ] {
        assert!(body.contains(name), "missing {name:?} in\n{body}");
    }
    // The p99 of 1.0..1.99 ms adds (last window) is about 1.98 ms.
    let line = body
        .lines()
        .find(|l| {
            l.starts_with("bookkeeper_server_ADD_ENTRY_REQUEST{success=\"true\",quantile=\"0.99\"}")
        })
        .unwrap();
    let p99: f64 = line.rsplit(' ').next().unwrap().parse().unwrap();
    assert!((p99 - 1.98).abs() < 0.07, "{line}");

    assert_eq!(http(server.local_addr(), "POST", "/metrics").await.0, 403);
    assert_eq!(http(server.local_addr(), "GET", "/nope").await.0, 404);
    let (status, _, body) = http(server.local_addr(), "GET", "/heartbeat").await;
    assert_eq!((status, body.as_str()), (200, "OK\n"));
    server.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endpoint_follows_configuration() {
    let args = BookieArgs {
        standalone: true,
        metrics_port: Some("0".into()),
        ..Default::default()
    };
    let (mut cfg, _) = BookieConfig::from_text_and_args(None, None, &args).unwrap();
    cfg.prometheus_stats_http_address = "127.0.0.1".into();
    let server = MetricsServer::start_from_config(&cfg, Metrics::new())
        .await
        .unwrap()
        .expect("enabled by --metrics-port");
    let (status, _, body) = http(server.local_addr(), "GET", "/metrics").await;
    assert_eq!(status, 200);
    assert!(
        body.contains("bookie_SERVER_STATUS -1"),
        "unregistered at start"
    );
    server.shutdown();

    cfg.metrics_enabled = false;
    assert!(MetricsServer::start_from_config(&cfg, Metrics::new())
        .await
        .unwrap()
        .is_none());
    cfg.metrics_enabled = true;
    cfg.http_server_enabled = true;
    cfg.http_server_host = "127.0.0.1".into();
    cfg.http_server_port = 0;
    let server = MetricsServer::start_from_config(&cfg, Metrics::new())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(http(server.local_addr(), "GET", "/metrics").await.0, 200);
    server.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_or_garbage_requests_do_not_hurt_the_endpoint() {
    let metrics = Metrics::new();
    let server = serve(
        metrics,
        "127.0.0.1:0".parse().unwrap(),
        Duration::from_secs(60),
    )
    .await
    .unwrap();
    let mut s = tokio::net::TcpStream::connect(server.local_addr())
        .await
        .unwrap();
    let _ = s.write_all(&vec![b'A'; 20_000]).await;
    let mut buf = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut buf)).await;
    // 431 (head too large) from hyper; the hand-written server answered 400.
    let reply = String::from_utf8_lossy(&buf);
    assert!(
        reply.starts_with("HTTP/1.1 431") || reply.starts_with("HTTP/1.1 400"),
        "{}",
        String::from_utf8_lossy(&buf)
    );
    assert_eq!(http(server.local_addr(), "GET", "/metrics").await.0, 200);
    server.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_rotates_quantile_windows() {
    let metrics = Metrics::new();
    let server = serve(
        metrics.clone(),
        "127.0.0.1:0".parse().unwrap(),
        Duration::from_millis(100),
    )
    .await
    .unwrap();
    let prefix = "bookkeeper_server_WRITE_LAC{success=\"true\",quantile=\"1.0\"} ";
    let started = std::time::Instant::now();
    loop {
        metrics
            .op(Op::WriteLac)
            .observe(Duration::from_millis(3), true);
        let (_, _, body) = http(server.local_addr(), "GET", "/metrics").await;
        let line = body
            .lines()
            .find(|l| l.starts_with(prefix))
            .unwrap()
            .to_string();
        if line.ends_with(" 3.0") {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "window never rotated: {line}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    server.shutdown();
}
