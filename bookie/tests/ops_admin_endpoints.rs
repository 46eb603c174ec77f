//! The admin endpoints that act (not only read) on a real `bookie` binary registered in a real
//! ZooKeeper: `sanity`, `ledger/read` and `ledger/delete`, `ledger/list?print_metadata`,
//! `gc_details` with compaction passes counted and `gc/{suspend,resume}_compaction` stopping
//! and restarting them, a forced `gc` running the compaction its body asks for
//! (`forceMajor`/`forceMinor`, `forceAllowCompaction`), and the auto-recovery switches (`status` PUT,
//! `list_under_replicated_ledger`, `lost_bookie_recovery_delay`, `trigger_audit`),
//! `expand_storage` (the start-up cookie check again: what it accepts, refuses and rewrites)
//! and `entry_location_compact` (Java's answers without a location database), each
//! checked against what it must have changed in ZooKeeper or storage. The shapes against
//! the stock Java bookie are checked by tests/interop's s14_admin_http.
//!
//! Skips (printing SKIPPED) only when ZooKeeper cannot be installed and BK_REQUIRE_ZK is unset.

// Test code sets up and inspects real directories directly; only production code is bound
// by ARCHITECTURE.md invariant 1 (see clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

mod ops_support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bk_proto::v2::{self, Flags};
use bk_proto::{DigestManager, DigestType, EntryHeader, MasterKey};
use bytes::BytesMut;
use ops_support::*;
use serde_json::{json, Value};

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

fn json_of(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"))
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

fn spawn(server: &ZkServer, root: &str, dir: &std::path::Path, extra: &[&str]) -> Node {
    spawn_with_args(server, root, dir, extra, &[])
}

/// [`spawn`] with more flags after `--data-dir` (e.g. `--ledger-dirs`, which wins over it).
fn spawn_with_args(
    server: &ZkServer,
    root: &str,
    dir: &std::path::Path,
    extra: &[&str],
    args: &[&str],
) -> Node {
    let (port, http_port) = (free_port(), free_port());
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_bookie"));
    cmd.args(host_disk::ARGS);
    cmd.args(["--data-dir", &dir.display().to_string()])
        .args(["--port", &port.to_string()])
        .args(args);
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
    let child = cmd
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
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

/// Adds `payloads` as entries 0.. of `ledger` over the v2 protocol (CRC32C, password "pw":
/// what `encode_for_tests` metadata says).
fn add_entries(port: u16, ledger: i64, payloads: &[&str]) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let digest = DigestManager::new(DigestType::Crc32c, b"pw");
    let mut length = 0;
    for (i, p) in payloads.iter().enumerate() {
        length += p.len() as i64;
        let header = EntryHeader {
            ledger_id: ledger,
            entry_id: i as i64,
            last_add_confirmed: i as i64 - 1,
            length,
        };
        let entry = digest.build_entry(&header, p.as_bytes());
        let req = v2::AddRequest::new(Flags::NONE, MasterKey::from_password(b"pw"), entry).unwrap();
        let mut b = BytesMut::new();
        v2::Request::AddEntry(req).encode(&mut b).unwrap();
        s.write_all(&b).unwrap();
        let mut len = [0u8; 4];
        s.read_exact(&mut len).unwrap();
        let mut frame = vec![0u8; u32::from_be_bytes(len) as usize];
        s.read_exact(&mut frame).unwrap();
        match bk_proto::decode_response_v2(frame.into()).unwrap() {
            v2::Response::AddEntry(r) => assert_eq!(r.error, v2::ErrorCode::Ok, "add {i}"),
            other => panic!("add {i}: {other:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acting_endpoints_change_zookeeper_and_storage_as_java_does() {
    let Some(server) = zk_server("acting_endpoints_change_zookeeper_and_storage_as_java_does")
    else {
        return;
    };
    let obs = observer(server).await;
    let root = "/adminacts/ledgers";
    init_cluster(&obs, root, Some("acts-instance")).await;
    let tmp = tempfile::tempdir().unwrap();
    let node =
        tokio::task::block_in_place(|| spawn(server, root, tmp.path(), &["gcWaitTime=600000"]));
    let a = node.admin;
    let id = format!("127.0.0.1:{}", node.port);

    // sanity: written and read back here, under an id the generator gave out and took back.
    let (s, body) = call(a, "GET", "/api/v1/bookie/sanity", "");
    assert_eq!(
        (s, json_of(&body)),
        (200, json!({"passed": true, "readOnly": false}))
    );
    let idgen = obs.list_children(&format!("{root}/idgen")).await.unwrap();
    assert!(idgen.is_empty(), "the id node is deleted again: {idgen:?}");
    let (_, body) = call(a, "GET", "/api/v1/ledger/list", "");
    assert_eq!(
        json_of(&body),
        json!({}),
        "the test ledger's metadata is deleted again"
    );

    // A closed ledger of 3 entries on this bookie, with its metadata.
    let md = bookie::admin::ledger_metadata::encode_for_tests(&[&id], Some(2));
    let path = bookie::gc_scan::ledger_path(root, 7);
    obs.mkdir(path.rsplit_once('/').unwrap().0, &open())
        .await
        .unwrap();
    obs.create(&path, &md, &open()).await.unwrap();
    tokio::task::block_in_place(|| add_entries(node.port, 7, &["zero", "one", "two\u{e9}"]));

    let (s, body) = call(a, "GET", "/api/v1/ledger/read?ledger_id=7", "");
    assert_eq!(
        (s, json_of(&body)),
        (
            200,
            json!({"0": "zero", "1": "one", "2": "two\u{FFFD}\u{FFFD}"})
        ),
        "US-ASCII as Java decodes it"
    );
    let (s, body) = call(
        a,
        "GET",
        "/api/v1/ledger/read?ledger_id=7&start_entry_id=1&end_entry_id=1",
        "",
    );
    assert_eq!((s, json_of(&body)), (200, json!({"1": "one"})));
    let (_, body) = call(a, "GET", "/api/v1/ledger/read?ledger_id=7&page=1", "");
    assert_eq!(json_of(&body)["Entries for page: "], "1", "{body}");
    assert_eq!(
        call(a, "GET", "/api/v1/ledger/read?ledger_id=8", "").0,
        500,
        "no metadata"
    );
    assert_eq!(call(a, "GET", "/api/v1/ledger/read", "").0, 404);

    let (s, body) = call(a, "GET", "/api/v1/ledger/list?print_metadata=true", "");
    let listed = json_of(&body);
    assert_eq!(s, 200);
    assert!(
        listed["7"]
            .as_str()
            .unwrap()
            .starts_with("BookieMetadataFormatVersion\t3\n"),
        "{body}"
    );
    let (_, body) = call(
        a,
        "GET",
        "/api/v1/ledger/list?print_metadata=true&decode_meta=true",
        "",
    );
    assert_eq!(json_of(&body)["7"]["lastEntryId"], 2, "{body}");

    // delete: the znode and its emptied parents go; deleting again is still a success.
    assert_eq!(
        call(a, "GET", "/api/v1/ledger/delete?ledger_id=7", "").0,
        404
    );
    let (s, body) = call(a, "DELETE", "/api/v1/ledger/delete?ledger_id=7", "");
    assert_eq!((s, json_of(&body)), (200, json!("Deleted ledger: 7")));
    assert_eq!(obs.check_stat(&path).await.unwrap(), None);
    let parent = path.rsplit_once('/').unwrap().0;
    assert_eq!(
        obs.check_stat(parent).await.unwrap(),
        None,
        "emptied parent deleted"
    );
    assert!(
        obs.check_stat(root).await.unwrap().is_some(),
        "never the root"
    );
    assert_eq!(
        call(a, "DELETE", "/api/v1/ledger/delete?ledger_id=7", "").0,
        200
    );
    assert_eq!(call(a, "DELETE", "/api/v1/ledger/delete", "").0, 404);

    // Auto-recovery switch.
    let disable = format!("{root}/underreplication/disable");
    let (s, body) = call(a, "PUT", "/api/v1/autorecovery/status?enabled=false", "");
    assert_eq!((s, json_of(&body)), (200, json!({"enabled": false})));
    assert!(obs.check_stat(&disable).await.unwrap().is_some());
    let (_, body) = call(a, "GET", "/api/v1/autorecovery/status", "");
    assert_eq!(json_of(&body), json!({"enabled": false}));
    let (_, body) = call(a, "PUT", "/api/v1/autorecovery/status?enabled=true", "");
    assert_eq!(json_of(&body), json!({"enabled": true}));
    assert_eq!(obs.check_stat(&disable).await.unwrap(), None);
    assert_eq!(call(a, "PUT", "/api/v1/autorecovery/status", "").0, 400);

    // Under-replicated ledgers, as ZkLedgerUnderreplicationManager lays them out.
    let urls = "/api/v1/autorecovery/list_under_replicated_ledger";
    assert_eq!(call(a, "GET", urls, "").0, 404);
    let url = format!("{root}/underreplication/ledgers/0000/0000/0000/0007/urL0000000007");
    obs.mkdir(url.rsplit_once('/').unwrap().0, &open())
        .await
        .unwrap();
    obs.create(&url, b"replica: \"127.0.0.1:1\"\nctime: 5\n", &open())
        .await
        .unwrap();
    let (s, body) = call(a, "GET", urls, "");
    assert_eq!((s, json_of(&body)), (200, json!([7])));
    let (_, body) = call(a, "GET", &format!("{urls}?printmissingreplica=true"), "");
    assert_eq!(json_of(&body), json!({"7": ["127.0.0.1:1"]}));
    assert_eq!(
        call(a, "GET", &format!("{urls}?missingreplica=127.0.0.1:9"), "").0,
        404
    );
    assert_eq!(
        call(
            a,
            "GET",
            &format!("{urls}?excludingmissingreplica=127.0.0.1:1"),
            ""
        )
        .0,
        404
    );

    // Lost-bookie recovery delay, and the audit trigger (no auditor election here).
    let delay = "/api/v1/autorecovery/lost_bookie_recovery_delay";
    assert_eq!(call(a, "GET", delay, "").0, 404);
    assert_eq!(call(a, "PUT", delay, r#"{"delay_seconds": 7}"#).0, 200);
    let (s, body) = call(a, "GET", delay, "");
    assert_eq!(
        (s, body.as_str()),
        (200, "lostBookieRecoveryDelay value: 7")
    );
    let stored = obs
        .get_data(&format!("{root}/underreplication/lostBookieRecoveryDelay"))
        .await
        .unwrap()
        .0;
    assert_eq!(stored, b"7");
    assert_eq!(
        call(a, "PUT", "/api/v1/autorecovery/trigger_audit", "").0,
        404
    );
    let (s, body) = call(a, "GET", "/api/v1/autorecovery/who_is_auditor", "");
    assert_eq!(s, 404);
    assert!(
        body.contains("NoNode for /adminacts/ledgers/underreplication/auditorelection"),
        "{body}"
    );
}

/// Compaction passes show in `gc_details` and stop while suspended. Compaction is due every
/// round (minor interval 1 s, major 2 s; rounds every second, and the forced ones waited for at least 1.5 s
/// after the last), so a pass counted while suspended would be a suspension that does not
/// hold.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn suspended_compaction_does_not_run_and_gc_details_counts_passes() {
    let Some(server) = zk_server("suspended_compaction_does_not_run_and_gc_details_counts_passes")
    else {
        return;
    };
    let obs = observer(server).await;
    let root = "/admincompact/ledgers";
    init_cluster(&obs, root, Some("compact-instance")).await;
    let tmp = tempfile::tempdir().unwrap();
    let node = tokio::task::block_in_place(|| {
        spawn(
            server,
            root,
            tmp.path(),
            &[
                // Intervals may not be shorter than gcWaitTime (as Java refuses them).
                "gcWaitTime=1000",
                "minorCompactionInterval=1",
                "majorCompactionInterval=2",
            ],
        )
    });
    let a = node.admin;
    let details = || json_of(&call(a, "GET", "/api/v1/bookie/gc_details", "").1)[0].clone();
    let counters = |d: &Value| {
        (
            d["majorCompactionCounter"].as_u64().unwrap(),
            d["minorCompactionCounter"].as_u64().unwrap(),
        )
    };
    // One forced round, at least 1.5 s after the previous one, waited for to its end.
    let round = || {
        std::thread::sleep(Duration::from_millis(1500));
        assert_eq!(call(a, "PUT", "/api/v1/bookie/gc", "").0, 200);
        let start = Instant::now();
        while json_of(&call(a, "GET", "/api/v1/bookie/gc", "").1)["is_in_force_gc"] != "false" {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "forced GC never ended"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    let before = details();
    assert!(
        before["lastMajorCompactionTime"].as_u64().unwrap() > 0,
        "{before}"
    );
    tokio::task::block_in_place(round);
    let after = details();
    let (major, minor) = counters(&after);
    assert!(
        major + minor > counters(&before).0 + counters(&before).1,
        "a pass counted: {after}"
    );
    assert_eq!(after["majorCompacting"], false);

    let (s, body) = call(
        a,
        "PUT",
        "/api/v1/bookie/gc/suspend_compaction",
        r#"{"suspendMajor": true, "suspendMinor": true}"#,
    );
    assert_eq!(s, 200, "{body}");
    assert!(json_of(&body)
        .as_str()
        .unwrap()
        .starts_with("Suspend majorGC on BookieServer: "));
    let (_, body) = call(a, "GET", "/api/v1/bookie/gc/suspend_compaction", "");
    assert_eq!(
        json_of(&body),
        json!({"isMajorGcSuspended": "true", "isMinorGcSuspended": "true"})
    );
    let suspended = counters(&details());
    tokio::task::block_in_place(round);
    tokio::task::block_in_place(round);
    assert_eq!(counters(&details()), suspended, "no pass while suspended");

    assert_eq!(
        call(a, "PUT", "/api/v1/bookie/gc/suspend_compaction", "{}").0,
        400
    );
    assert_eq!(
        call(a, "GET", "/api/v1/bookie/gc/resume_compaction", "").0,
        404
    );
    let (s, _) = call(
        a,
        "PUT",
        "/api/v1/bookie/gc/resume_compaction",
        r#"{"resumeMajor": true, "resumeMinor": true}"#,
    );
    assert_eq!(s, 200);
    tokio::task::block_in_place(round);
    let resumed = counters(&details());
    assert!(
        resumed.0 + resumed.1 > suspended.0 + suspended.1,
        "passes again after resume"
    );
}

/// `PUT /api/v1/bookie/gc` with `forceMajor` / `forceMinor` (Java's `TriggerGCService`):
/// with both compaction kinds off (no interval) and `forceAllowCompaction=true`, a forced
/// round runs the kind its body asks for, and `gc_details` counts that pass and no other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forced_gc_runs_the_compaction_its_body_asks_for() {
    let Some(server) = zk_server("forced_gc_runs_the_compaction_its_body_asks_for") else {
        return;
    };
    let obs = observer(server).await;
    let root = "/adminforce/ledgers";
    init_cluster(&obs, root, Some("force-instance")).await;
    let tmp = tempfile::tempdir().unwrap();
    let node = tokio::task::block_in_place(|| {
        spawn(
            server,
            root,
            tmp.path(),
            &[
                "gcWaitTime=600000",
                "majorCompactionInterval=0",
                "majorCompactionThreshold=0.8",
                "minorCompactionInterval=0",
                "minorCompactionThreshold=0.2",
                "forceAllowCompaction=true",
            ],
        )
    });
    let a = node.admin;
    let counters = || {
        let d = json_of(&call(a, "GET", "/api/v1/bookie/gc_details", "").1)[0].clone();
        (
            d["majorCompactionCounter"].as_u64().unwrap(),
            d["minorCompactionCounter"].as_u64().unwrap(),
        )
    };
    let forced = |body: &str| {
        let (s, answer) = call(a, "PUT", "/api/v1/bookie/gc", body);
        assert_eq!(s, 200, "{answer}");
        let start = Instant::now();
        while json_of(&call(a, "GET", "/api/v1/bookie/gc", "").1)["is_in_force_gc"] != "false" {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "forced GC never ended"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    assert_eq!(counters(), (0, 0), "compaction is off on its schedule");
    tokio::task::block_in_place(|| forced(r#"{"forceMajor": true, "forceMinor": false}"#));
    assert_eq!(counters(), (1, 0), "one forced major pass");
    tokio::task::block_in_place(|| forced(r#"{"forceMajor": "false", "forceMinor": "TRUE"}"#));
    assert_eq!(counters(), (1, 1), "then one forced minor pass");
    tokio::task::block_in_place(|| forced(r#"{"forceMajor": false, "forceMinor": false}"#));
    assert_eq!(counters(), (1, 1), "neither asked: none");
    let (s, body) = call(a, "PUT", "/api/v1/bookie/gc", "not json");
    assert_eq!(s, 400, "{body}");
    assert!(
        body.starts_with("Failed to handle the request, exception: "),
        "{body}"
    );
    drop(node);
}

/// The cookies as they are now: the ZooKeeper cookie's bytes and every dir's `VERSION`.
async fn cookies_now(
    obs: &zookeeper_client::Client,
    znode: &str,
    dirs: &[std::path::PathBuf],
) -> Vec<Vec<u8>> {
    let mut out = vec![obs.get_data(znode).await.unwrap().0];
    for d in dirs {
        out.push(std::fs::read(d.join("current/VERSION")).unwrap());
    }
    out
}

/// `znode`'s cookie with its ledger dirs replaced by `ledgers` (written behind the bookie's back).
async fn rewrite_ledger_dirs(
    obs: &zookeeper_client::Client,
    znode: &str,
    ledgers: &[std::path::PathBuf],
) {
    let (bytes, stat) = obs.get_data(znode).await.unwrap();
    let mut c = bookie::cookie::Cookie::parse(&bytes, znode).unwrap();
    c.ledger_dirs = bookie::cookie::encode_dirs(ledgers);
    obs.set_data(znode, c.to_text().as_bytes(), Some(stat.version))
        .await
        .unwrap();
}

/// `expand_storage` runs start-up's cookie check on the running bookie: 200 on matching
/// cookies; 500 when the ZooKeeper cookie was changed behind the bookie's back, writing
/// nothing, unless `allowStorageExpansion=true` and the stored ledger dirs are a subset of
/// the configured ones (then every cookie is rewritten to the configuration's, as at
/// start-up). `entry_location_compact` answers as a Java bookie without a location database.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expand_storage_checks_cookies_as_start_up_does() {
    let Some(server) = zk_server("expand_storage_checks_cookies_as_start_up_does") else {
        return;
    };
    let obs = observer(server).await;
    let expand = "/api/v1/bookie/expand_storage";
    let failure = "Exception while updating cookie for storage expansion";
    for allow in [false, true] {
        let root = format!("/adminexpand{allow}/ledgers");
        init_cluster(&obs, &root, Some("expand-instance")).await;
        let tmp = tempfile::tempdir().unwrap();
        let ledgers = [tmp.path().join("l1"), tmp.path().join("l2")];
        let list = format!("{},{}", ledgers[0].display(), ledgers[1].display());
        let set = format!("allowStorageExpansion={allow}");
        let node = tokio::task::block_in_place(|| {
            spawn_with_args(
                server,
                &root,
                tmp.path(),
                &[&set],
                &["--ledger-dirs", &list],
            )
        });
        let a = node.admin;
        let znode = format!("{root}/cookies/127.0.0.1:{}", node.port);
        let mut dirs = vec![tmp.path().join("journal")];
        dirs.extend(ledgers.iter().cloned());
        let good = cookies_now(&obs, &znode, &dirs).await;

        assert_eq!(
            call(a, "GET", expand, ""),
            (404, "Not found method. Should be PUT method".into())
        );
        assert_eq!(
            call(a, "PUT", expand, ""),
            (200, "Success expand storage".into()),
            "allowStorageExpansion={allow}: matching cookies"
        );
        assert_eq!(
            cookies_now(&obs, &znode, &dirs).await,
            good,
            "nothing to rewrite"
        );

        // Another dir list in ZooKeeper: refused whatever the expansion rules, nothing written.
        rewrite_ledger_dirs(&obs, &znode, &[ledgers[0].clone(), tmp.path().join("l3")]).await;
        let changed = cookies_now(&obs, &znode, &dirs).await;
        assert_eq!(call(a, "PUT", expand, ""), (500, failure.into()));
        assert_eq!(
            cookies_now(&obs, &znode, &dirs).await,
            changed,
            "nothing written"
        );

        // A subset of the configured dirs: an expansion, allowed only with the key.
        rewrite_ledger_dirs(&obs, &znode, &ledgers[..1]).await;
        let subset = cookies_now(&obs, &znode, &dirs).await;
        if allow {
            assert_eq!(
                call(a, "PUT", expand, ""),
                (200, "Success expand storage".into())
            );
            assert_eq!(
                cookies_now(&obs, &znode, &dirs).await,
                good,
                "the ZooKeeper cookie lists every configured dir again"
            );
        } else {
            assert_eq!(call(a, "PUT", expand, ""), (500, failure.into()));
            assert_eq!(
                cookies_now(&obs, &znode, &dirs).await,
                subset,
                "nothing written"
            );
        }

        // No cookie in ZooKeeper while every dir has one: refused, none created.
        let version = obs.get_data(&znode).await.unwrap().1.version;
        obs.delete(&znode, Some(version)).await.unwrap();
        assert_eq!(call(a, "PUT", expand, ""), (500, failure.into()));
        assert_eq!(obs.check_stat(&znode).await.unwrap(), None, "not recreated");

        // No location database: Java's answers for a storage without one.
        let elc = "/api/v1/bookie/entry_location_compact";
        let (s, body) = call(a, "GET", elc, "");
        assert_eq!((s, json_of(&body)), (200, json!({})));
        let (s, body) = call(a, "PUT", elc, r#"{"entryLocationRocksDBCompact":true}"#);
        assert_eq!(
            (s, json_of(&body)),
            (
                200,
                json!(format!(
                    "Triggered entry Location RocksDB compact on bookie:127.0.0.1:{}",
                    node.port
                ))
            )
        );
        assert_eq!(call(a, "PUT", elc, "").0, 400);
        assert_eq!(call(a, "DELETE", elc, "").0, 405);
    }
}
