//! `PUT /api/v1/autorecovery/bookie` on real `bookie` binaries registered in a real
//! ZooKeeper: Java's answers to requests it does not act on, then the recovery of a stopped
//! bookie. Four bookies; a closed ledger (E = W = 3, Qa = 2, CRC32C, a password) written to
//! three of them; one of the three stopped; the recovery asked of another. Afterwards no
//! ensemble lists the stopped bookie, the fourth bookie took its place, every entry reads
//! back from every member of the new ensemble with the bytes written (so the client's digest
//! is intact), and the stopped bookie's cookie is gone (`delete_cookie`).
//!
//! Then ledger recovery (admin/ledger_recovery.rs): a second ledger left OPEN by a writer
//! that stopped without closing it, its last entry acknowledged by two of three bookies only
//! (one of them the bookie then stopped), is fenced, its tail recovered and closed with the
//! right lastEntryId and length, and recovered like a closed ledger: a fifth bookie takes the
//! stopped one's place, every acknowledged entry reads back, an add to it answers fenced on
//! the survivors, and the cookie is deleted after the complete run.
//!
//! Skips (printing SKIPPED) only when ZooKeeper cannot be installed and BK_REQUIRE_ZK is unset.

// Test code sets up and inspects real directories directly; only production code is bound
// by ARCHITECTURE.md invariant 1 (see clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

mod ops_support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use bk_proto::v2::{ErrorCode, Flags};
use bk_proto::{DigestManager, DigestType, EntryHeader, MasterKey};
use bookie::admin::bookie_client::BookieClient;
use bookie::admin::ledger_metadata as md;
use bytes::Bytes;
use ops_support::*;

const PATH: &str = "/api/v1/autorecovery/bookie";
const ENTRIES: i64 = 40;
const PASSWORD: &[u8] = b"recovery-pw";

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
    id: String,
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn spawn(server: &ZkServer, root: &str, dir: &Path, log: &Path) -> Node {
    let (port, http_port) = (free_port(), free_port());
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_bookie"));
    cmd.args(host_disk::ARGS);
    cmd.args(["--data-dir", &dir.display().to_string()])
        .args(["--port", &port.to_string()]);
    let sets = [
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
        id: format!("127.0.0.1:{port}"),
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

/// Waits (at most `within`) until the log holds `needle`.
fn wait_for_log(log: &Path, needle: &str, within: Duration) {
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

/// Waits (at most `within`) until the log holds `needle` `count` times.
fn wait_for_log_count(log: &Path, needle: &str, count: usize, within: Duration) {
    let start = Instant::now();
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if text.matches(needle).count() >= count {
            return;
        }
        assert!(
            start.elapsed() < within,
            "{needle:?} not logged {count} times within {within:?}:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn log_has(log: &Path, needle: &str) -> bool {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .contains(needle)
}

/// The entries of `ledger` as a client builds them (CRC32C over metadata and payload).
fn entries(ledger: i64) -> Vec<Bytes> {
    let digest = DigestManager::new(DigestType::Crc32c, PASSWORD);
    let mut length = 0;
    (0..ENTRIES)
        .map(|e| {
            let payload = format!("ledger {ledger} entry {e} ").repeat(8 + e as usize);
            length += payload.len() as i64;
            let header = EntryHeader {
                ledger_id: ledger,
                entry_id: e,
                last_add_confirmed: e - 1,
                length,
            };
            digest.build_entry(&header, payload.as_bytes())
        })
        .collect()
}

/// Adds every entry to every bookie of `ensemble` (E = W).
async fn write(ensemble: &[&str], entries: &[Bytes]) {
    let key = MasterKey::from_password(PASSWORD);
    for b in ensemble {
        let c = BookieClient::connect(b).await.expect("connect");
        for e in entries {
            let code = c.add(&key, e.clone(), Flags::NONE).await.expect("add");
            assert_eq!(code, ErrorCode::Ok, "add to {b}");
        }
    }
}

/// The ensembles of ledger `id` as its metadata lists them.
async fn ensembles(obs: &zookeeper_client::Client, root: &str, id: u64) -> Vec<(i64, Vec<String>)> {
    let path = bookie::gc_scan::ledger_path(root, id);
    let (data, _) = obs.get_data(&path).await.unwrap();
    md::ensembles(&data).unwrap().ensembles
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recovery_moves_every_entry_of_a_stopped_bookie_and_rewrites_the_ensembles() {
    let Some(server) =
        zk_server("recovery_moves_every_entry_of_a_stopped_bookie_and_rewrites_the_ensembles")
    else {
        return;
    };
    let obs = observer(server).await;
    let root = "/adminrecovery/ledgers";
    init_cluster(&obs, root, Some("recovery-instance")).await;

    let tmp = tempfile::tempdir().unwrap();
    let logs: Vec<_> = (0..5)
        .map(|i| tmp.path().join(format!("b{i}.log")))
        .collect();
    let mut nodes: Vec<Option<Node>> = (0..4)
        .map(|i| {
            Some(tokio::task::block_in_place(|| {
                spawn(server, root, &tmp.path().join(format!("b{i}")), &logs[i])
            }))
        })
        .collect();
    let ids: Vec<String> = nodes
        .iter()
        .map(|n| n.as_ref().unwrap().id.clone())
        .collect();
    let admin = nodes[0].as_ref().unwrap().admin;

    // Java's answers to requests it does not act on.
    assert_eq!(
        call(admin, "GET", PATH, ""),
        (404, "No request body provide.".into())
    );
    assert_eq!(
        call(admin, "PUT", PATH, ""),
        (404, "No request body provide.".into())
    );
    let (s, body) = call(admin, "PUT", PATH, "nope");
    assert_eq!(s, 404, "{body}");
    assert!(body.starts_with("ERROR parameters: "), "{body}");
    let valid = format!(r#"{{"bookie_src":["{}"],"delete_cookie":true}}"#, ids[1]);
    assert_eq!(
        call(admin, "GET", PATH, &valid),
        (404, "Not found method. Should be PUT method".into())
    );
    assert_eq!(
        call(admin, "PUT", PATH, r#"{"bookie_src":[]}"#),
        (404, "Not found method. Should be PUT method".into())
    );

    // Ledger 7: closed, E = W = 3, Qa = 2, on b0, b1, b2.
    let ensemble = [ids[0].as_str(), ids[1].as_str(), ids[2].as_str()];
    let written = entries(7);
    write(&ensemble, &written).await;
    let length: i64 = written.iter().map(|e| (e.len() - 32 - 4) as i64).sum();
    let path = bookie::gc_scan::ledger_path(root, 7);
    obs.mkdir(path.rsplit_once('/').unwrap().0, &open())
        .await
        .unwrap();
    let closed = md::encode_closed_for_tests(&ensemble, 3, 2, ENTRIES - 1, length, 3, PASSWORD);
    obs.create(&path, &closed, &open()).await.unwrap();
    assert!(
        obs.get_data(&format!("{root}/cookies/{}", ids[1]))
            .await
            .is_ok(),
        "b1 has a cookie before"
    );

    // b1 stops; b0 is asked to recover it.
    drop(nodes[1].take());
    let (s, body) = call(admin, "PUT", PATH, &valid);
    assert_eq!(
        (s, body.as_str()),
        (200, "Success send recovery request command.")
    );
    tokio::task::block_in_place(|| {
        wait_for_log(
            &logs[0],
            "Complete recovering bookie",
            Duration::from_secs(120),
        )
    });
    assert!(
        !log_has(&logs[0], "Exception occurred while recovering bookie"),
        "{}",
        std::fs::read_to_string(&logs[0]).unwrap()
    );

    // The metadata: b3 in b1's place, nothing else changed.
    let after = ensembles(&obs, root, 7).await;
    assert_eq!(
        after,
        vec![(0, vec![ids[0].clone(), ids[3].clone(), ids[2].clone()])],
        "b1 replaced by b3 at its index"
    );
    let (data, _) = obs.get_data(&path).await.unwrap();
    let mut want = md::to_json(7, &closed).unwrap();
    want["allEnsembles"]["0"][1]["id"] = ids[3].clone().into();
    assert_eq!(
        md::to_json(7, &data).unwrap(),
        want,
        "only the ensemble changed"
    );

    // Every entry reads back, byte for byte (digest intact), from every member of the new ensemble.
    let digest = DigestManager::new(DigestType::Crc32c, PASSWORD);
    for b in [&ids[0], &ids[3], &ids[2]] {
        let c = BookieClient::connect(b).await.expect("connect");
        for (e, want) in written.iter().enumerate() {
            let got = c
                .read(7, e as i64)
                .await
                .expect("read")
                .unwrap_or_else(|code| panic!("entry {e} from {b}: {code:?}"));
            assert_eq!(&got, want, "entry {e} from {b}");
            digest.verify_entry_for(&got, 7, e as i64).unwrap();
        }
    }
    // delete_cookie: the stopped bookie's cookie is gone.
    assert!(
        matches!(
            obs.get_data(&format!("{root}/cookies/{}", ids[1])).await,
            Err(zookeeper_client::Error::NoNode)
        ),
        "b1's cookie deleted"
    );

    // Ledger 8: OPEN, E = W = 3, Qa = 2 on b0, b2, b3, as a writer leaves it that stops
    // without closing: entries 0..=8 on all three, entry 9 acknowledged by b0 and b2 only.
    let ensemble8 = [ids[0].as_str(), ids[2].as_str(), ids[3].as_str()];
    let written8 = &entries(8)[..10];
    write(&ensemble8, &written8[..9]).await;
    write(&[ids[0].as_str(), ids[2].as_str()], &written8[9..]).await;
    let length8 = EntryHeader::parse(&written8[9]).unwrap().length;
    let path8 = bookie::gc_scan::ledger_path(root, 8);
    let open8 = md::encode_open_for_tests(&ensemble8, 3, 2, 3, PASSWORD);
    obs.create(&path8, &open8, &open()).await.unwrap();

    // b2 stops; a fifth bookie joins, and b1's registration is gone (so b4 is the only
    // writable bookie outside either ensemble); b0 is asked to recover b2.
    drop(nodes[2].take());
    let b4 = tokio::task::block_in_place(|| spawn(server, root, &tmp.path().join("b4"), &logs[4]));
    for gone in [&ids[1], &ids[2]] {
        let node = format!("{root}/available/{gone}");
        let start = Instant::now();
        while obs.check_stat(&node).await.unwrap().is_some() {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "{node} still registered"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    let src = format!(r#"{{"bookie_src":["{}"],"delete_cookie":true}}"#, ids[2]);
    assert_eq!(call(admin, "PUT", PATH, &src).0, 200);
    tokio::task::block_in_place(|| {
        wait_for_log_count(
            &logs[0],
            "Complete recovering bookie",
            2,
            Duration::from_secs(120),
        )
    });
    assert!(
        !log_has(&logs[0], "Exception occurred while recovering bookie"),
        "{}",
        std::fs::read_to_string(&logs[0]).unwrap()
    );

    // The fencing reads heard LAC 8 (entry 9's header), and entry 9 was recovered past it.
    assert!(
        log_has(
            &logs[0],
            "Closing recovered ledger 8: lastAddConfirmed 8 from the fencing reads, 1 entries \
             recovered past it, last entry 9"
        ),
        "{}",
        std::fs::read_to_string(&logs[0]).unwrap()
    );
    // Ledger 8 closed at its last acknowledged entry, with its length; b4 in b2's place.
    let (data8, _) = obs.get_data(&path8).await.unwrap();
    let json8 = md::to_json(8, &data8).unwrap();
    assert_eq!(json8["state"], "CLOSED", "{json8}");
    assert_eq!(json8["lastEntryId"], 9, "{json8}");
    assert_eq!(json8["length"], length8, "{json8}");
    let new8 = vec![ids[0].clone(), b4.id.clone(), ids[3].clone()];
    assert_eq!(ensembles(&obs, root, 8).await, vec![(0, new8.clone())]);
    assert_eq!(
        ensembles(&obs, root, 7).await,
        vec![(0, vec![ids[0].clone(), ids[3].clone(), b4.id.clone()])],
        "the closed ledger moved off b2 as well"
    );
    // Every acknowledged entry reads back from every member of the new ensemble.
    for b in &new8 {
        let c = BookieClient::connect(b).await.expect("connect");
        for (e, want) in written8.iter().enumerate() {
            let got = c
                .read(8, e as i64)
                .await
                .expect("read")
                .unwrap_or_else(|code| panic!("entry {e} of ledger 8 from {b}: {code:?}"));
            assert_eq!(&got, want, "entry {e} of ledger 8 from {b}");
        }
    }
    // Fenced on the survivors: the old writer's next add is refused.
    let next = DigestManager::new(DigestType::Crc32c, PASSWORD).build_entry(
        &EntryHeader {
            ledger_id: 8,
            entry_id: 10,
            last_add_confirmed: 9,
            length: length8 + 3,
        },
        b"new",
    );
    for b in [&ids[0], &ids[3]] {
        let c = BookieClient::connect(b).await.expect("connect");
        let code = c
            .add(
                &MasterKey::from_password(PASSWORD),
                next.clone(),
                Flags::NONE,
            )
            .await
            .expect("add");
        assert_eq!(code, ErrorCode::Fenced, "an add to ledger 8 on {b}");
    }
    assert!(
        matches!(
            obs.get_data(&format!("{root}/cookies/{}", ids[2])).await,
            Err(zookeeper_client::Error::NoNode)
        ),
        "b2's cookie deleted after the complete run"
    );
    drop(b4);
    drop(nodes);
}
