//! The admin state machine in-process: the Helm probes' answers in each phase (no bookie,
//! no storage), the one-way shutdown, and the auditor vote parser.

use super::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

async fn get(addr: std::net::SocketAddr, path: &str) -> (u16, String) {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).await.unwrap();
    let text = String::from_utf8(buf).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    (
        head.split_whitespace().nth(1).unwrap().parse().unwrap(),
        body.to_string(),
    )
}

#[tokio::test]
async fn probes_follow_the_phase_and_shutdown_is_final() {
    let mut cfg = BookieConfig::defaults_standalone();
    cfg.http_server_enabled = true;
    cfg.http_server_host = "127.0.0.1".into();
    cfg.http_server_port = 0;
    cfg.metrics_enabled = true;
    let state = AdminState::new(Arc::new(cfg.clone()), "b:3181".into(), Metrics::new());
    let l = start_from_config(&cfg, state.clone()).await.unwrap();
    let a = l.admin_addr().unwrap();
    assert_eq!(l.metrics_addr(), Some(a), "one listener serves both");

    let (s, body) = get(a, "/api/v1/bookie/state").await;
    assert_eq!(s, 200);
    assert!(body.contains("\"running\": false"), "{body}");
    assert_eq!(get(a, "/api/v1/bookie/is_ready").await.0, 503);

    state.set_phase(Phase::Running);
    assert_eq!(get(a, "/api/v1/bookie/is_ready").await, (200, "OK".into()));
    assert!(get(a, "/api/v1/bookie/state")
        .await
        .1
        .contains("\"running\": true"));

    state.set_phase(Phase::ShuttingDown);
    assert_eq!(get(a, "/api/v1/bookie/is_ready").await.0, 503);
    let body = get(a, "/api/v1/bookie/state").await.1;
    assert!(body.contains("\"shuttingDown\": true"), "{body}");
    state.set_phase(Phase::Running);
    assert_eq!(
        state.phase(),
        Phase::ShuttingDown,
        "never back from shutdown"
    );
    assert_eq!(get(a, "/metrics").await.0, 200);
    l.shutdown();
}

#[tokio::test]
async fn metrics_only_port_when_the_admin_api_is_off() {
    let mut cfg = BookieConfig::defaults_standalone();
    cfg.prometheus_stats_http_address = "127.0.0.1".into();
    cfg.prometheus_stats_http_port = 0;
    cfg.metrics_enabled = true;
    let state = AdminState::new(Arc::new(cfg.clone()), String::new(), Metrics::new());
    let l = start_from_config(&cfg, state).await.unwrap();
    assert!(l.admin_addr().is_none());
    let m = l.metrics_addr().unwrap();
    assert_eq!(get(m, "/metrics").await.0, 200);
    assert_eq!(get(m, "/api/v1/bookie/state").await.0, 404);
    l.shutdown();
}

#[test]
fn auditor_vote_text_format() {
    assert_eq!(
        zk::parse_vote("bookieId: \"10.0.0.1:3181\"\n").as_deref(),
        Some("10.0.0.1:3181")
    );
    assert_eq!(zk::parse_vote("nothing"), None);
}
