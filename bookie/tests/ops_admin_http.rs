//! The admin HTTP API of the real `bookie` binary (`httpServerEnabled=true`), as the Apache
//! Pulsar Helm chart uses it: its three probes (liveness `GET /api/v1/bookie/state`,
//! readiness and startup `GET /api/v1/bookie/is_ready`; the kubelet counts 200-399 as
//! success) against a starting, a ready and a read-only bookie, and the JSON keys of each
//! endpoint against the stock 4.17 handlers' (docs/config.md §2).
//!
//! "Starting" is made observable without timing: the bookie is pointed at a ZooKeeper
//! address that accepts connections and never answers, so it stays in start-up step 1
//! (node.rs) for `zkTimeout` + 5 s, the same phase as a long journal replay.
//! The ZooKeeper endpoints need a real ZooKeeper; that test skips (printing SKIPPED) only
//! when ZooKeeper cannot be installed and BK_REQUIRE_ZK is unset.

// Test code sets up and inspects real directories directly; only production code is bound
// by ARCHITECTURE.md invariant 1 (see clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

mod ops_support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use ops_support::*;
use serde_json::Value;

mod host_disk;
mod ports;
use ports::free_port;

/// One HTTP/1.1 request; `None` when the connection is refused or fails.
fn http(addr: SocketAddr, method: &str, path: &str, body: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(20))).ok()?;
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: bookie\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).ok()?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).ok()?;
    let text = String::from_utf8_lossy(&buf).to_string();
    let (head, body) = text.split_once("\r\n\r\n")?;
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    Some((status, body.to_string()))
}

fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    http(addr, "GET", path, "").unwrap_or_else(|| panic!("GET {path}: no answer"))
}

fn json_of(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"))
}

/// The sorted keys of a JSON object.
fn keys(v: &Value) -> Vec<String> {
    let mut k: Vec<String> = v
        .as_object()
        .unwrap_or_else(|| panic!("not an object: {v}"))
        .keys()
        .cloned()
        .collect();
    k.sort();
    k
}

fn sorted(k: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = k.iter().map(|s| s.to_string()).collect();
    v.sort();
    v
}

/// The Helm chart's probes, as (liveness, readiness, startup) status codes.
fn probes(addr: SocketAddr) -> (u16, u16, u16) {
    (
        get(addr, "/api/v1/bookie/state").0,
        get(addr, "/api/v1/bookie/is_ready").0,
        get(addr, "/api/v1/bookie/is_ready").0,
    )
}

struct Bookie {
    child: Child,
    admin: SocketAddr,
}

impl Bookie {
    fn spawn(args: &[&str], http_port: u16) -> Bookie {
        let child = Command::new(env!("CARGO_BIN_EXE_bookie"))
            .args(host_disk::ARGS)
            .args(args)
            .args([
                "--set",
                "httpServerEnabled=true",
                "--set",
                "statsProviderClass=org.apache.bookkeeper.stats.prometheus.PrometheusMetricsProvider",
                "--set",
                "httpServerHost=127.0.0.1",
                "--set",
                &format!("httpServerPort={http_port}"),
            ])
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn bookie");
        Bookie {
            child,
            admin: SocketAddr::from(([127, 0, 0, 1], http_port)),
        }
    }

    /// Waits until `path` answers at all (the admin server is up).
    fn wait_answering(&mut self, path: &str) -> (u16, String) {
        let start = Instant::now();
        loop {
            if let Some(r) = http(self.admin, "GET", path, "") {
                return r;
            }
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!("bookie exited early: {status}");
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "admin API never answered"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until `is_ready` answers 200.
    fn wait_ready(&mut self) {
        let start = Instant::now();
        while http(self.admin, "GET", "/api/v1/bookie/is_ready", "").map(|r| r.0) != Some(200) {
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!("bookie exited early: {status}");
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "bookie never ready"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn stop(mut self) -> std::process::ExitStatus {
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            if start.elapsed() > Duration::from_secs(30) {
                let _ = self.child.kill();
                panic!("bookie did not stop on SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Bookie {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn standalone_args(dir: &Path) -> Vec<String> {
    vec![
        "--standalone".into(),
        "--data-dir".into(),
        dir.display().to_string(),
        "--port".into(),
        free_port().to_string(),
    ]
}

fn as_strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

#[test]
fn helm_probes_on_a_starting_bookie() {
    // A "ZooKeeper" that accepts and never answers: start-up waits in step 1.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let zk = silent.local_addr().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let mut bookie = Bookie::spawn(
        &[
            "--data-dir",
            &tmp.path().display().to_string(),
            "--port",
            &free_port().to_string(),
            "--set",
            &format!("metadataServiceUri=zk+hierarchical://{zk}/ledgers"),
            "--set",
            "zkTimeout=30000",
            // A cluster bookie on a host whose name may resolve to 127.0.0.1 (as Java, it
            // refuses loopback without this).
            "--allow-loopback",
        ],
        free_port(),
    );
    let (status, body) = bookie.wait_answering("/api/v1/bookie/state");
    assert_eq!(status, 200, "liveness passes while starting: {body}");
    let state = json_of(&body);
    assert_eq!(state["running"], false, "{state}");
    assert_eq!(state["shuttingDown"], false, "{state}");
    let (live, ready, startup) = probes(bookie.admin);
    assert_eq!((live, ready, startup), (200, 503, 503), "starting bookie");
    let (_, body) = get(bookie.admin, "/api/v1/bookie/is_ready");
    assert_eq!(body, "Bookie is not fully started yet");
    // Endpoints that need the bookie or ZooKeeper say so, and make nothing up.
    assert_eq!(
        http(
            bookie.admin,
            "PUT",
            "/api/v1/bookie/state/readonly",
            r#"{"readOnly":true}"#
        )
        .unwrap()
        .0,
        503
    );
    assert_eq!(get(bookie.admin, "/api/v1/bookie/list_bookies").0, 503);
    assert_eq!(get(bookie.admin, "/api/v1/ledger/list").0, 503);
    assert_eq!(
        http(bookie.admin, "PUT", "/api/v1/bookie/gc", "")
            .unwrap()
            .0,
        503
    );
    println!("starting bookie: liveness {live}, readiness {ready}, startup {startup}");
    drop(silent);
}

#[test]
fn helm_probes_and_json_shapes_on_a_ready_bookie() {
    let tmp = tempfile::tempdir().unwrap();
    let args = standalone_args(tmp.path());
    let mut bookie = Bookie::spawn(&as_strs(&args), free_port());
    bookie.wait_ready();
    let a = bookie.admin;
    let (live, ready, startup) = probes(a);
    assert_eq!((live, ready, startup), (200, 200, 200), "ready bookie");
    println!("ready bookie: liveness {live}, readiness {ready}, startup {startup}");

    let state = json_of(&get(a, "/api/v1/bookie/state").1);
    assert_eq!(
        keys(&state),
        sorted(&[
            "running",
            "readOnly",
            "shuttingDown",
            "availableForHighPriorityWrites"
        ])
    );
    assert_eq!(state["running"], true);
    assert_eq!(state["readOnly"], false);
    assert_eq!(get(a, "/api/v1/bookie/is_ready").1, "OK");

    // The operator's read-only toggle (ReadOnlyReason::Manual); still live and ready.
    let (s, body) = http(
        a,
        "PUT",
        "/api/v1/bookie/state/readonly",
        r#"{"readOnly":true}"#,
    )
    .unwrap();
    assert_eq!(
        (s, json_of(&body)["readOnly"].clone()),
        (200, Value::Bool(true))
    );
    assert_eq!(json_of(&get(a, "/api/v1/bookie/state").1)["readOnly"], true);
    assert_eq!(probes(a), (200, 200, 200), "manually read-only bookie");
    let (s, body) = http(
        a,
        "PUT",
        "/api/v1/bookie/state/readonly",
        r#"{"readOnly":false}"#,
    )
    .unwrap();
    assert_eq!(
        (s, json_of(&body)["readOnly"].clone()),
        (200, Value::Bool(false))
    );
    let (s, body) = get(a, "/api/v1/bookie/state/readonly");
    assert_eq!((s, keys(&json_of(&body))), (200, sorted(&["readOnly"])));
    assert_eq!(
        http(a, "PUT", "/api/v1/bookie/state/readonly", "nonsense")
            .unwrap()
            .0,
        400
    );

    let (s, body) = get(a, "/api/v1/bookie/info");
    let info = json_of(&body);
    assert_eq!(
        (s, keys(&info)),
        (200, sorted(&["freeSpace", "totalSpace"]))
    );
    assert!(info["totalSpace"].as_u64().unwrap() >= info["freeSpace"].as_u64().unwrap());
    assert!(info["totalSpace"].as_u64().unwrap() > 0);

    let (s, body) = get(a, "/api/v1/bookie/last_log_mark");
    let mark = json_of(&body);
    assert_eq!(s, 200);
    assert_eq!(keys(&mark).len(), 1, "one journal directory: {mark}");
    for (k, v) in mark.as_object().unwrap() {
        assert!(k.starts_with("LastLogMark: Journal Id - "), "{k}");
        assert!(v.as_str().unwrap().starts_with("Pos - "), "{v}");
    }

    let (s, body) = get(a, "/api/v1/bookie/list_disk_file");
    assert_eq!(
        (s, keys(&json_of(&body))),
        (
            200,
            sorted(&["journal files", "entrylog files", "index files"])
        )
    );
    let (_, body) = get(a, "/api/v1/bookie/list_disk_file?file_type=journal");
    assert_eq!(keys(&json_of(&body)), sorted(&["journal files"]));

    let (s, body) = get(a, "/api/v1/bookie/gc");
    assert_eq!(
        (s, json_of(&body)),
        (200, serde_json::json!({"is_in_force_gc": "false"}))
    );
    // Standalone: no GC loop (GC needs the metadata store), so a forced round is refused.
    assert_eq!(http(a, "PUT", "/api/v1/bookie/gc", "").unwrap().0, 503);
    assert_eq!(http(a, "POST", "/api/v1/bookie/gc", "").unwrap().0, 405);
    let (s, body) = get(a, "/api/v1/bookie/gc_details");
    let details = json_of(&body);
    assert_eq!(s, 200);
    assert_eq!(
        keys(&details[0]),
        sorted(&[
            "forceCompacting",
            "majorCompacting",
            "minorCompacting",
            "lastMajorCompactionTime",
            "lastMinorCompactionTime",
            "lastEntryLocationCompactionTime",
            "majorCompactionCounter",
            "minorCompactionCounter",
            "entryLocationCompactionCounter"
        ])
    );

    let (s, body) = get(a, "/api/v1/config/server_config");
    let conf = json_of(&body);
    assert_eq!(s, 200);
    assert_eq!(conf["httpServerEnabled"], "true", "{conf}");
    assert!(conf["journalDirectories"].is_string(), "{conf}");

    // Same port: /metrics and /heartbeat, as the Helm chart scrapes them.
    let (s, body) = get(a, "/metrics");
    assert!(
        s == 200 && body.contains("bookie_SERVER_STATUS 1"),
        "{s} {body}"
    );
    assert_eq!(http(a, "POST", "/metrics", "").unwrap().0, 403);
    assert_eq!(get(a, "/heartbeat"), (200, "OK\n".to_string()));
    // Java's wrong-method answers (404), a path it does not know (404).
    assert_eq!(http(a, "POST", "/api/v1/bookie/state", "").unwrap().0, 404);
    assert_eq!(get(a, "/api/v1/bookie/nope").0, 404);
    assert_eq!(
        get(a, "/api/v1/bookie/expand_storage"),
        (404, "Not found method. Should be PUT method".to_string())
    );
    // Standalone: start-up's check of the directories alone, again.
    assert_eq!(
        http(a, "PUT", "/api/v1/bookie/expand_storage", "").unwrap(),
        (200, "Success expand storage".to_string())
    );

    assert!(bookie.stop().success());
}

#[test]
fn helm_probes_on_a_read_only_bookie() {
    let tmp = tempfile::tempdir().unwrap();
    let mut args = standalone_args(tmp.path());
    args.push("--readonly".into());
    let mut bookie = Bookie::spawn(&as_strs(&args), free_port());
    bookie.wait_ready();
    let a = bookie.admin;
    let (live, ready, startup) = probes(a);
    // Java: a read-only bookie is running, so live and ready (it still serves reads).
    assert_eq!((live, ready, startup), (200, 200, 200), "read-only bookie");
    println!("read-only bookie: liveness {live}, readiness {ready}, startup {startup}");
    assert_eq!(json_of(&get(a, "/api/v1/bookie/state").1)["readOnly"], true);
    assert_eq!(
        json_of(&get(a, "/api/v1/bookie/state/readonly").1)["readOnly"],
        true
    );
    // forceReadOnlyBookie: asking for writable is refused as Java refuses it.
    let (s, body) = http(
        a,
        "PUT",
        "/api/v1/bookie/state/readonly",
        r#"{"readOnly":false}"#,
    )
    .unwrap();
    assert_eq!(s, 400, "{body}");
    assert_eq!(json_of(&get(a, "/api/v1/bookie/state").1)["readOnly"], true);
    assert!(get(a, "/metrics").1.contains("bookie_SERVER_STATUS 0"));
    assert!(bookie.stop().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeeper_endpoints_answer_from_zookeeper() {
    let Some(server) = zk_server("zookeeper_endpoints_answer_from_zookeeper") else {
        return;
    };
    let obs = observer(server).await;
    let root = "/adminhttp/ledgers";
    init_cluster(&obs, root, Some("admin-instance")).await;
    let tmp = tempfile::tempdir().unwrap();
    let port = free_port();
    let id = format!("127.0.0.1:{port}");
    let args = vec![
        "--data-dir".to_string(),
        tmp.path().display().to_string(),
        "--port".into(),
        port.to_string(),
        "--set".into(),
        format!(
            "metadataServiceUri=zk+hierarchical://{}{root}",
            server.connect
        ),
        "--set".into(),
        "advertisedAddress=127.0.0.1".into(),
        "--set".into(),
        "allowLoopback=true".into(),
        "--set".into(),
        "zkTimeout=4000".into(),
        "--set".into(),
        "gcWaitTime=600000".into(),
    ];
    let mut node = Bookie::spawn(&as_strs(&args), free_port());
    let a = node.admin;
    tokio::task::block_in_place(|| node.wait_ready());
    let call = |method: &'static str, path: String, body: &'static str| {
        tokio::task::spawn_blocking(move || http(a, method, &path, body).unwrap())
    };
    let get = |path: &str| call("GET", path.to_string(), "");

    let (s, body) = get("/api/v1/bookie/list_bookies").await.unwrap();
    assert_eq!(
        (s, json_of(&body)),
        (200, serde_json::json!({ id.clone(): null }))
    );
    let (s, body) = get("/api/v1/bookie/list_bookies?type=rw&print_hostnames=true")
        .await
        .unwrap();
    assert_eq!(
        (s, json_of(&body)),
        (200, serde_json::json!({ id.clone(): "127.0.0.1" }))
    );
    let (s, body) = get("/api/v1/bookie/list_bookies?type=ro").await.unwrap();
    assert_eq!((s, json_of(&body)), (200, serde_json::json!({})));

    let (s, body) = get("/api/v1/bookie/list_bookie_info").await.unwrap();
    let info = json_of(&body);
    assert_eq!(
        (s, keys(&info)),
        (200, sorted(&[id.as_str(), "ClusterInfo: "])),
        "{body}"
    );
    let line = info[&id].as_str().unwrap();
    assert!(
        line.starts_with(": {Free: ") && line.ends_with("},"),
        "{line}"
    );

    let (s, body) = get("/api/v1/bookie/cluster_info").await.unwrap();
    let info = json_of(&body);
    assert_eq!(s, 200, "{body}");
    assert_eq!(
        keys(&info),
        sorted(&[
            "auditorElected",
            "auditorId",
            "clusterUnderReplicated",
            "ledgerReplicationEnabled",
            "totalBookiesCount",
            "writableBookiesCount",
            "readonlyBookiesCount",
            "unavailableBookiesCount"
        ])
    );
    assert_eq!(info["writableBookiesCount"], 1, "{info}");
    assert_eq!(info["totalBookiesCount"], 1, "{info}");
    assert_eq!(info["auditorElected"], false, "{info}");
    assert_eq!(info["ledgerReplicationEnabled"], true, "{info}");

    let (s, body) = get("/api/v1/ledger/list").await.unwrap();
    assert_eq!((s, json_of(&body)), (200, serde_json::json!({})));
    let md = bookie::admin::ledger_metadata::encode_for_tests(&[&id], Some(4));
    let path = bookie::gc_scan::ledger_path(root, 7);
    obs.mkdir(path.rsplit_once('/').unwrap().0, &open())
        .await
        .unwrap();
    obs.create(&path, &md, &open()).await.unwrap();
    let (s, body) = get("/api/v1/ledger/list").await.unwrap();
    assert_eq!((s, json_of(&body)), (200, serde_json::json!({ "7": null })));
    assert_eq!(get("/api/v1/ledger/metadata").await.unwrap().0, 404);
    assert_eq!(
        get("/api/v1/ledger/metadata?ledger_id=8").await.unwrap().0,
        500
    );
    let (s, body) = get("/api/v1/ledger/metadata?ledger_id=7").await.unwrap();
    let md = json_of(&body);
    assert_eq!(s, 200, "{body}");
    assert_eq!(keys(&md), sorted(&["7"]));
    assert_eq!(
        keys(&md["7"]),
        sorted(&[
            "ledgerId",
            "metadataFormatVersion",
            "ensembleSize",
            "writeQuorumSize",
            "ackQuorumSize",
            "lastEntryId",
            "length",
            "digestType",
            "password",
            "state",
            "closed",
            "ctime",
            "ctoken",
            "customMetadata",
            "allEnsembles"
        ])
    );
    assert_eq!(md["7"]["allEnsembles"]["0"][0]["id"], id.as_str());
    assert_eq!(md["7"]["state"], "CLOSED");

    let (s, body) = get("/api/v1/autorecovery/status").await.unwrap();
    assert_eq!(
        (s, json_of(&body)),
        (200, serde_json::json!({"enabled": true}))
    );
    // No election node: Java's NoNode text (an empty election is "No auditor elected").
    let (s, body) = get("/api/v1/autorecovery/who_is_auditor").await.unwrap();
    assert_eq!(s, 404);
    assert!(body.starts_with("Exception when get."), "{body}");

    // A forced GC round starts and ends (the loop runs with a metadata store).
    let (s, body) = call("PUT", "/api/v1/bookie/gc".into(), "").await.unwrap();
    assert_eq!(s, 200, "{body}");
    assert!(json_of(&body)
        .as_str()
        .unwrap()
        .starts_with("Triggered GC on BookieServer: "));
    let start = Instant::now();
    loop {
        let (_, body) = get("/api/v1/bookie/gc").await.unwrap();
        if json_of(&body)["is_in_force_gc"] == "false" {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "forced GC never ended"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // The read-only toggle reaches ZooKeeper.
    let (s, _) = call(
        "PUT",
        "/api/v1/bookie/state/readonly".into(),
        r#"{"readOnly":true}"#,
    )
    .await
    .unwrap();
    assert_eq!(s, 200);
    let start = Instant::now();
    loop {
        let (_, body) = get("/api/v1/bookie/list_bookies?type=ro").await.unwrap();
        if json_of(&body).get(&id).is_some() {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "never read-only in ZooKeeper"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let status = tokio::task::block_in_place(|| node.stop());
    assert!(status.success());
}
