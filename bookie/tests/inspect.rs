//! `bookie inspect`: the real binary writes data through its real storage, then every
//! inspect subcommand's output (text and JSON) is checked against what was written, the
//! directories are byte-identical (every path, size and mtime, directories included)
//! before and after every inspect run, offline and beside a running bookie, and `verify`
//! passes on intact data and fails (exit 1, naming file and offset) after a flipped byte.

// Test code sets up and inspects real directories directly; only production code is bound
// by ARCHITECTURE.md invariant 1 (see clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use bk_proto::v2::{ErrorCode, Flags};
use bk_proto::v3::{self, RequestBody, StatusCode};
use bytes::Bytes;
use common::*;
use serde_json::Value;

mod host_disk;
mod ports;
use ports::free_port;

fn start(data: &Path, port: u16) -> Child {
    Command::new(env!("CARGO_BIN_EXE_bookie"))
        .args(host_disk::ARGS)
        .args(["--standalone", "--data-dir"])
        .arg(data)
        .args(["--port", &port.to_string()])
        .args([
            "--set",
            "dbStorage_writeCacheMaxSizeMb=16",
            "--set",
            "dbStorage_readAheadCacheMaxSizeMb=8",
            "--set",
            "flushInterval=600000",
            "--set",
            "journalMaxSizeMB=8",
        ])
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn bookie")
}

async fn connect_when_ready(child: &mut Child, port: u16) -> Client {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("bookie exited early: {status}");
        }
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return Client::connect(([127, 0, 0, 1], port).into()).await;
        }
        assert!(Instant::now() < deadline, "bookie did not start");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn sigterm(mut child: Child) {
    // SAFETY: plain kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "no exit after SIGTERM");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(status.success(), "exit status {status}");
}

/// Every path under `root` (directories too) with its size and mtime.
fn snapshot(root: &Path) -> BTreeMap<PathBuf, (u64, SystemTime)> {
    let mut out = BTreeMap::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let m = e.metadata().unwrap();
            if m.is_dir() {
                todo.push(e.path());
            }
            out.insert(e.path(), (m.len(), m.modified().unwrap()));
        }
    }
    out
}

/// Runs `bookie inspect --data-dir <data> <args>`: (exit code, stdout).
fn inspect(data: &Path, args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_bookie"))
        .arg("inspect")
        .arg("--data-dir")
        .arg(data)
        .args(args)
        .env("RUST_LOG", "warn")
        .output()
        .expect("run bookie inspect");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).expect("utf-8 output"),
    )
}

/// Runs `args` as text and as JSON, checking that neither changes anything under `data`.
fn inspect_both(data: &Path, args: &[&str]) -> (i32, String, Value) {
    let before = snapshot(data);
    let (code, text) = inspect(data, args);
    assert_eq!(
        snapshot(data),
        before,
        "`inspect {args:?}` changed the directories"
    );
    let mut j = args.to_vec();
    j.push("--json");
    let (jcode, json) = inspect(data, &j);
    assert_eq!(
        snapshot(data),
        before,
        "`inspect {j:?}` changed the directories"
    );
    assert_eq!(code, jcode, "text and JSON exit codes differ for {args:?}");
    let v: Value = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{args:?}: {e}: {json}"));
    (code, text, v)
}

/// What the test wrote: (ledger, entry) -> entry bytes.
type Written = BTreeMap<(u64, u64), Bytes>;

async fn add(c: &mut Client, written: &mut Written, ledger: i64, entries: std::ops::Range<i64>) {
    for e in entries {
        let payload = vec![(ledger * 7 + e) as u8; 50 + e as usize * 11];
        let body = entry(ledger, e, e - 1, &payload);
        let r = c.v2_add(Flags::NONE, key(), body.clone()).await;
        assert_eq!(r.error, ErrorCode::Ok);
        written.insert((ledger as u64, e as u64), body);
    }
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a u64: {v}"))
}

/// (ledger, entry) -> length of every entry record in `inspect journal --json`.
fn journal_entries(j: &Value) -> BTreeMap<(u64, u64), u64> {
    let mut out = BTreeMap::new();
    for jd in j["journals"].as_array().unwrap() {
        for s in jd["segments"].as_array().unwrap() {
            for r in s["records"].as_array().unwrap() {
                if r["kind"] == "entry" {
                    out.insert((u(&r["ledger"]), u(&r["entry"])), u(&r["length"]));
                }
            }
        }
    }
    out
}

fn lengths(w: &Written) -> BTreeMap<(u64, u64), u64> {
    w.iter().map(|(k, b)| (*k, b.len() as u64)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offline_views_match_what_was_written_and_verify_finds_a_flipped_byte() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let port = free_port();
    let mut p = start(data, port);
    let mut c = connect_when_ready(&mut p, port).await;
    let mut written = Written::new();
    add(&mut c, &mut written, 1, 0..20).await;
    add(&mut c, &mut written, 2, 0..10).await;
    add(&mut c, &mut written, 3, 0..5).await;
    assert_eq!(c.v2_fence(2, key()).await.error, ErrorCode::Ok);
    let mut c3 = Client::connect(([127, 0, 0, 1], port).into()).await;
    let lac = bk_proto::DigestManager::new(bk_proto::DigestType::Crc32c, b"").build_lac_body(3, 3);
    let r = c3
        .v3_call(
            None,
            RequestBody::WriteLac(v3::WriteLacRequest {
                ledger_id: 3,
                lac: 3,
                master_key: Bytes::copy_from_slice(&key().0),
                body: lac.clone(),
            }),
        )
        .await;
    assert_eq!(v3_status(&r), StatusCode::Eok);
    drop((c, c3));
    // An orderly shutdown flushes everything into a segment and checkpoints the journal.
    sigterm(p).await;

    // lastmark: the checkpoint covers the last journal record.
    let (code, text, lm) = inspect_both(data, &["lastmark"]);
    assert_eq!(code, 0, "{text}");
    let j0 = &lm["journals"][0];
    assert_eq!(j0["state"], "present", "{lm}");
    let mark = u(&j0["mark"]);
    let jid = u(&j0["journal_id"]);
    assert!(
        text.contains(&format!(
            "LastLogMark : Journal Id - {jid}({jid:x}), Pos - {mark}"
        )),
        "{text}"
    );

    // journal: every entry written is a record with its length; the fence and the
    // explicit LAC are there; the highest seq is the checkpoint mark.
    let (code, text, jr) = inspect_both(data, &["journal"]);
    assert_eq!(code, 0, "{text}");
    assert_eq!(journal_entries(&jr), lengths(&written));
    let records: Vec<&Value> = jr["journals"][0]["segments"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["records"].as_array().unwrap())
        .collect();
    assert!(records
        .iter()
        .any(|r| r["kind"] == "fence" && r["ledger"] == 2));
    assert!(records
        .iter()
        .any(|r| r["kind"] == "explicit_lac" && r["ledger"] == 3));
    assert_eq!(records.iter().map(|r| u(&r["seq"])).max(), Some(mark));
    assert!(records.iter().all(|r| r["checkpointed"] == true));
    assert!(text.contains("Journal Version : 1"), "{text}");
    assert_eq!(
        text.matches("Type:           DATA").count(),
        written.len(),
        "{text}"
    );
    assert!(text.contains("Lid=2, Eid=-8192,"), "{text}");
    let e15 = &written[&(1, 15)];
    let r15 = records
        .iter()
        .find(|r| r["ledger"] == 1 && r["entry"] == 15)
        .expect("record of entry 1/15");
    let line = format!(
        "--------- Lid=1, Eid=15, ByteOffset={}, EntrySize={} ---------\nType:           DATA\nLastConfirmed:  14\n",
        u(&r15["offset"]),
        e15.len()
    );
    assert!(text.contains(&line), "{line} not in {text}");
    // ByteOffset is the record header's offset: the entry's bytes follow the 20-byte
    // header and the 16 bytes of ledger and entry ids.
    let seg15 = jr["journals"][0]["segments"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["records"].as_array().unwrap().contains(r15))
        .unwrap();
    let jfile = std::fs::read(seg15["file"].as_str().unwrap()).unwrap();
    let at = u(&r15["offset"]) as usize + 36;
    assert_eq!(&jfile[at..at + e15.len()], &e15[..]);

    // journal --segment: only that segment.
    let seg0 = u(&jr["journals"][0]["segments"][0]["segment"]);
    let (code, _, one) = inspect_both(data, &["journal", "--segment", &seg0.to_string()]);
    assert_eq!(code, 0);
    assert_eq!(one["journals"][0]["segments"].as_array().unwrap().len(), 1);

    // segments: the entry-log files hold exactly the entries and ledgers written.
    let (code, text, sg) = inspect_both(data, &["segments"]);
    assert_eq!(code, 0, "{text}");
    let files: Vec<&Value> = sg["entrylog_files"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["state"] == "finished")
        .collect();
    assert!(!files.is_empty(), "{sg}");
    assert_eq!(
        files.iter().map(|f| u(&f["entries"])).sum::<u64>(),
        written.len() as u64
    );
    let ledgers: BTreeSet<u64> = files
        .iter()
        .flat_map(|f| f["ledgers"].as_array().unwrap().iter().map(u))
        .collect();
    assert_eq!(ledgers, BTreeSet::from([1, 2, 3]));
    assert!(text.contains("--------- Printing the list of EntryLog/Ledger Files ---------"));
    for f in &files {
        let path = f["path"].as_str().unwrap();
        let size = std::fs::metadata(path).unwrap().len();
        assert_eq!(u(&f["size"]), size);
        assert!(
            text.contains(&format!(
                "{path}\tsize={size}\tentries={}",
                u(&f["entries"])
            )),
            "{text}"
        );
    }

    // segment <id>: every entry with its length, LAC and a good CRC.
    let mut seen = BTreeMap::new();
    let mut where_is = BTreeMap::new();
    for f in &files {
        let id = u(&f["segment"]).to_string();
        let (code, text, s) = inspect_both(data, &["segment", &id]);
        assert_eq!(code, 0, "{text}");
        for e in s["entries"].as_array().unwrap() {
            let k = (u(&e["ledger"]), u(&e["entry"]));
            assert_eq!(e["crc_ok"], true);
            assert_eq!(e["lac"].as_i64(), Some(k.1 as i64 - 1));
            seen.insert(k, u(&e["length"]));
            where_is.insert(
                k,
                (f["path"].as_str().unwrap().to_string(), u(&e["offset"])),
            );
        }
        assert!(text.contains("LastConfirmed:  "), "{text}");
    }
    assert_eq!(seen, lengths(&written));
    let (path, off) = where_is[&(1, 5)].clone();
    let on_disk = std::fs::read(&path).unwrap();
    let body = &written[&(1, 5)];
    assert_eq!(&on_disk[off as usize..off as usize + body.len()], &body[..]);

    // ledger <id>: locations as `segment` gave them, and the state.
    let (code, text, l2) = inspect_both(data, &["ledger", "2"]);
    assert_eq!(code, 0, "{text}");
    assert_eq!(l2["fenced"], true);
    assert!(text.contains("isFenced     : true"), "{text}");
    assert_eq!(l2["master_key"].as_str(), Some(hex(&key().0).as_str()));
    assert_eq!(l2["deleted"], false);
    let locs = l2["entries"].as_array().unwrap();
    assert_eq!(locs.len(), 10);
    for l in locs {
        assert_eq!(l["where"], "segment");
        let (_, off) = &where_is[&(2, u(&l["entry"]))];
        assert_eq!(u(&l["offset"]), *off);
        assert!(text.contains(&format!(
            "entry {}\t:\t(log: {}, pos: {off})",
            u(&l["entry"]),
            u(&l["segment"])
        )));
    }
    let (code, _, l3) = inspect_both(data, &["ledger", "3"]);
    assert_eq!(code, 0);
    assert_eq!(l3["fenced"], false);
    assert_eq!(l3["explicit_lac_length"].as_u64(), Some(lac.len() as u64));
    let (code, _, l99) = inspect_both(data, &["ledger", "99"]);
    assert_eq!((code, &l99["known"]), (1, &Value::Bool(false)));

    // A directory that is not there is an error, never an empty, healthy bookie.
    let (code, out) = inspect(&data.join("elsewhere"), &["verify"]);
    assert_eq!(code, 3, "{out}");

    // verify passes on intact data ...
    let (code, text, v) = inspect_both(data, &["verify"]);
    assert_eq!(code, 0, "{text}");
    assert_eq!(v["ok"], true);
    assert_eq!(u(&v["entries"]), written.len() as u64);
    assert!(text.contains("verify: OK"), "{text}");

    // ... and fails, naming file, offset, ledger and entry, after one flipped byte.
    let mut bytes = on_disk.clone();
    bytes[off as usize + 30] ^= 0x01;
    std::fs::write(&path, &bytes).unwrap();
    let (code, text, v) = inspect_both(data, &["verify"]);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains(&format!(
            "PROBLEM: file={path} offset={off} ledger=1 entry=5"
        )),
        "{text}"
    );
    let probs = v["problems"].as_array().unwrap();
    assert_eq!(probs.len(), 1, "{v}");
    assert_eq!(probs[0]["file"].as_str(), Some(path.as_str()));
    assert_eq!(u(&probs[0]["offset"]), off);
    std::fs::write(&path, &on_disk).unwrap();

    // A flipped byte in a journal record that later groups follow is mid-log damage.
    let jseg = jr["journals"][0]["segments"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| u(&s["groups"]) >= 2)
        .expect("a journal segment with two groups")
        .clone();
    let jpath = jseg["file"].as_str().unwrap().to_string();
    let first = &jseg["records"][0];
    let jbytes = std::fs::read(&jpath).unwrap();
    let mut flipped = jbytes.clone();
    flipped[u(&first["offset"]) as usize + 22] ^= 0x40;
    std::fs::write(&jpath, &flipped).unwrap();
    let (code, text, _) = inspect_both(data, &["verify"]);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains(&format!("PROBLEM: file={jpath} offset=0")),
        "{text}"
    );
    assert!(text.contains("damage in the middle of the log"), "{text}");
    std::fs::write(&jpath, &jbytes).unwrap();
    let (code, text, _) = inspect_both(data, &["verify"]);
    assert_eq!(code, 0, "{text}");
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Waits until nothing under `root` changes for a second (a live bookie builds spare
/// journal segments in idle gaps); at most 60 s.
async fn settled(root: &Path) {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut last = snapshot(root);
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = snapshot(root);
        if now == last {
            return;
        }
        assert!(Instant::now() < deadline, "the directories never settled");
        last = now;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn beside_a_running_bookie_nothing_changes_and_journal_only_entries_show() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let port = free_port();
    let mut p = start(data, port);
    let mut c = connect_when_ready(&mut p, port).await;
    let mut flushed = Written::new();
    add(&mut c, &mut flushed, 7, 0..10).await;
    drop(c);
    sigterm(p).await;
    // Restarted: new adds stay in the write cache and the journal (no flush for 10 min).
    let mut p = start(data, port);
    let mut c = connect_when_ready(&mut p, port).await;
    let mut journal_only = Written::new();
    add(&mut c, &mut journal_only, 7, 10..15).await;
    settled(data).await;

    for args in [
        &["lastmark"][..],
        &["journal"],
        &["segments"],
        &["verify"],
        &["ledger", "7"],
    ] {
        let (code, text, _) = inspect_both(data, args);
        assert_eq!(code, 0, "{args:?}: {text}");
    }
    let (_, _, l7) = inspect_both(data, &["ledger", "7"]);
    let mut segment = BTreeSet::new();
    let mut journal = BTreeSet::new();
    for e in l7["entries"].as_array().unwrap() {
        match e["where"].as_str().unwrap() {
            "segment" => segment.insert(u(&e["entry"])),
            "journal" => journal.insert(u(&e["entry"])),
            w => panic!("{w}"),
        };
    }
    assert_eq!(segment, (0..10).collect());
    assert_eq!(journal, (10..15).collect());
    let (_, _, sg) = inspect_both(data, &["segments"]);
    let id = u(&sg["entrylog_files"][0]["segment"]).to_string();
    let (code, _, s) = inspect_both(data, &["segment", &id]);
    assert_eq!(code, 0);
    assert_eq!(s["entries"].as_array().unwrap().len(), 10);
    // The journal view shows the unflushed entries above the checkpoint mark.
    let (_, _, jr) = inspect_both(data, &["journal"]);
    let all = journal_entries(&jr);
    for k in journal_only.keys() {
        assert!(all.contains_key(k), "{k:?} missing from the journal view");
    }
    // The bookie is unaffected: it still serves every entry.
    for ((l, e), body) in flushed.iter().chain(journal_only.iter()) {
        let r = c.v2_read(*l as i64, *e as i64).await;
        assert_eq!((r.error, &r.entry), (ErrorCode::Ok, body));
    }
    drop(c);
    sigterm(p).await;
}
