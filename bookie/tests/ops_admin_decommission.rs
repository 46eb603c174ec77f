//! `PUT /api/v1/autorecovery/decommission` on a real `bookie` binary registered in a real
//! ZooKeeper: the answers to bad requests as Java's `DecommissionService` gives them, a
//! registered bookie refused in the background, and for a shut-down bookie B listed by a
//! ledger's ensemble the background task that waits until the metadata no longer stores an
//! entry on B (as re-replication rewrites it) and only then logs its completion. The log is
//! the one witness: Java's HTTP decommission changes nothing else (the cookie stays).
//!
//! Skips (printing SKIPPED) only when ZooKeeper cannot be installed and BK_REQUIRE_ZK is unset.

// Test code sets up and inspects real directories directly; only production code is bound
// by ARCHITECTURE.md invariant 1 (see clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

mod ops_support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use ops_support::*;

mod host_disk;
mod ports;
use ports::free_port;

/// One HTTP/1.1 request (blocking).
fn http(addr: SocketAddr, method: &str, path: &str, body: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: bookie\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).ok()?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).ok()?;
    let text = String::from_utf8_lossy(&buf).to_string();
    let (head, body) = text.split_once("\r\n\r\n")?;
    Some((
        head.split_whitespace().nth(1)?.parse().ok()?,
        body.to_string(),
    ))
}

fn call(a: SocketAddr, method: &str, path: &str, body: &str) -> (u16, String) {
    tokio::task::block_in_place(|| http(a, method, path, body))
        .unwrap_or_else(|| panic!("{method} {path}: no answer"))
}

struct Node {
    child: Child,
    admin: SocketAddr,
    port: u16,
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn spawn(server: &ZkServer, root: &str, dir: &std::path::Path, log: &std::path::Path) -> Node {
    let extra: &[&str] = &[];
    let (port, http_port) = (free_port(), free_port());
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_bookie"));
    cmd.args(host_disk::ARGS);
    cmd.args(["--data-dir", &dir.display().to_string()])
        .args(["--port", &port.to_string()]);
    let mut sets = vec![
        format!(
            "metadataServiceUri=zk+hierarchical://{}{root}",
            server.connect
        ),
        "advertisedAddress=127.0.0.1".into(),
        "allowLoopback=true".into(),
        "zkTimeout=4000".into(),
        "httpServerEnabled=true".into(),
        "httpServerHost=127.0.0.1".into(),
        format!("httpServerPort={http_port}"),
    ];
    sets.extend(extra.iter().map(|s| s.to_string()));
    for s in &sets {
        cmd.args(["--set", s]);
    }
    let log_file = std::fs::File::create(log).expect("log file");
    let child = cmd
        .env("RUST_LOG", "info")
        .stdout(log_file.try_clone().expect("log file"))
        .stderr(log_file)
        .spawn()
        .expect("spawn bookie");
    let mut node = Node {
        child,
        admin: SocketAddr::from(([127, 0, 0, 1], http_port)),
        port,
    };
    let start = Instant::now();
    while http(node.admin, "GET", "/api/v1/bookie/is_ready", "").map(|r| r.0) != Some(200) {
        if let Some(status) = node.child.try_wait().unwrap() {
            panic!("bookie exited early: {status}");
        }
        assert!(start.elapsed() < Duration::from_secs(60), "never ready");
        std::thread::sleep(Duration::from_millis(50));
    }
    node
}

/// Waits (at most `within`) until the bookie's log holds `needle`.
fn wait_for_log(log: &std::path::Path, needle: &str, within: Duration) {
    let start = Instant::now();
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if text.contains(needle) {
            return;
        }
        assert!(
            start.elapsed() < within,
            "{needle:?} not logged within {within:?}:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn log_has(log: &std::path::Path, needle: &str) -> bool {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .contains(needle)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decommission_completes_only_once_no_ledger_stores_on_the_bookie() {
    let Some(server) = zk_server("decommission_completes_only_once_no_ledger_stores_on_the_bookie")
    else {
        return;
    };
    let obs = observer(server).await;
    let root = "/admindecom/ledgers";
    init_cluster(&obs, root, Some("decom-instance")).await;
    // An elected auditor and a stored delay: what triggering an audit needs (else Java gives up).
    obs.mkdir(&format!("{root}/underreplication/auditorelection"), &open())
        .await
        .unwrap();
    obs.create(
        &format!("{root}/underreplication/auditorelection/V_0000000001"),
        b"bookieId: \"127.0.0.1:9\"\n",
        &open(),
    )
    .await
    .unwrap();
    let delay = format!("{root}/underreplication/lostBookieRecoveryDelay");
    obs.create(&delay, b"0", &open()).await.unwrap();
    let delay_version = obs.get_data(&delay).await.unwrap().1.version;

    // Ledger 9, closed, 3 entries, ensemble {B, C} with E = W = 2: B stores all of it.
    let (b, c) = ("127.0.0.1:4", "127.0.0.1:5");
    let md = bookie::admin::ledger_metadata::encode_for_tests(&[b, c], Some(2));
    let path = bookie::gc_scan::ledger_path(root, 9);
    obs.mkdir(path.rsplit_once('/').unwrap().0, &open())
        .await
        .unwrap();
    obs.create(&path, &md, &open()).await.unwrap();

    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("bookie.log");
    let node = tokio::task::block_in_place(|| spawn(server, root, &tmp.path().join("data"), &log));
    let a = node.admin;
    let me = format!("127.0.0.1:{}", node.port);
    const PATH: &str = "/api/v1/autorecovery/decommission";

    // Java's answers to requests it does not act on.
    assert_eq!(
        call(a, "GET", PATH, ""),
        (404, "Not found method. Should be PUT method".into())
    );
    assert_eq!(
        call(a, "PUT", PATH, ""),
        (404, "Null request body for DecommissionService.".into())
    );
    assert_eq!(
        call(a, "PUT", PATH, r#"{"bookie":"x"}"#),
        (404, "Request body not contains bookie_src.".into())
    );
    let (s, body) = call(a, "PUT", PATH, r#"{"bookie_src":"a b"}"#);
    assert_eq!(s, 404, "{body}");
    assert!(
        body.starts_with("Exception when send decommission command."),
        "{body}"
    );

    // A registered bookie (this one) is refused, in the background, as Java does.
    let (s, body) = call(a, "PUT", PATH, &format!(r#"{{"bookie_src":"{me}"}}"#));
    assert_eq!(
        (s, body),
        (
            200,
            format!("Success send decommission Bookie command {me}")
        )
    );
    tokio::task::block_in_place(|| {
        wait_for_log(
            &log,
            &format!("Error handling decommissionBookie: {me}."),
            Duration::from_secs(30),
        )
    });
    assert_eq!(
        obs.get_data(&delay).await.unwrap().1.version,
        delay_version,
        "no audit triggered for a registered bookie"
    );

    // B: answered at once; the audit is triggered (the delay rewritten with its own value).
    let (s, body) = call(a, "PUT", PATH, &format!(r#"{{"bookie_src":"{b}"}}"#));
    assert_eq!(
        (s, body),
        (200, format!("Success send decommission Bookie command {b}"))
    );
    let start = Instant::now();
    loop {
        let (data, stat) = obs.get_data(&delay).await.unwrap();
        if stat.version > delay_version {
            assert_eq!(
                (data.as_slice(), stat.version),
                (&b"0"[..], delay_version + 1)
            );
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no audit triggered"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // After Java's 30 s for the auditor, the task finds ledger 9 still stored on B and waits.
    tokio::task::block_in_place(|| {
        wait_for_log(
            &log,
            "Count of Ledgers which need to be rereplicated: 1",
            Duration::from_secs(90),
        )
    });
    assert!(!log_has(&log, "Complete decommissioning bookie."));
    tokio::task::block_in_place(|| std::thread::sleep(Duration::from_secs(4)));
    assert!(
        !log_has(&log, "Complete decommissioning bookie."),
        "completed while ledger 9 still stores on B"
    );

    // Re-replication moves the ledger to D: the metadata no longer lists B.
    let moved = bookie::admin::ledger_metadata::encode_for_tests(&[c, "127.0.0.1:6"], Some(2));
    obs.set_data(&path, &moved, None).await.unwrap();
    tokio::task::block_in_place(|| {
        wait_for_log(
            &log,
            "Complete decommissioning bookie.",
            Duration::from_secs(60),
        )
    });
    assert!(!log_has(
        &log,
        &format!("Error handling decommissionBookie: {b}.")
    ));
    drop(node);
}
