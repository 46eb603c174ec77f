//! Issue 11, "know what must exist", tried as a new user would with the real binary:
//! start a standalone bookie, add entries and fence a ledger, stop it with SIGTERM,
//! delete one file, start it again. A deleted entry-log segment or a deleted
//! `ledgers.state` must refuse start-up, the refusal naming the file; the bookie must
//! never come up answering "no such entry" for acknowledged entries, or accepting adds
//! to a ledger fenced before the stop. `bookie inspect verify` reports the lost segment.
//! A deleted journal `checkpoint` refuses start-up too (the journal's own check, pinned
//! here as the same user-level fault), and so does the newest journal segment deleted
//! after SIGKILL with acknowledged adds not yet flushed (`journal/src/newest.rs`: before
//! it, the bookie started and answered NoLedger for entry 0 and for entry -1).
//!
//! Both failed on the code before `entrylog/src/must_exist.rs` (checks disabled): the
//! bookie started, entry 0 answered 2 (NoEntry) and the fenced ledger took an add (0).

// Test code damages real directories directly; only production code is bound by
// ARCHITECTURE.md invariant 1 (see clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

mod common;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bk_proto::v2::{ErrorCode, Flags};
use common::*;

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
        ])
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn bookie")
}

/// What a start ended in: the process exited (status, stderr), or it serves.
enum Started {
    Exited(std::process::ExitStatus, String),
    Serving(Child),
}

async fn started(mut child: Child, port: u16) -> Started {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            let mut err = String::new();
            if let Some(mut s) = child.stderr.take() {
                let _ = s.read_to_string(&mut err);
            }
            return Started::Exited(status, err);
        }
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return Started::Serving(child);
        }
        assert!(
            Instant::now() < deadline,
            "bookie neither served nor exited"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn serving(child: Child, port: u16) -> (Child, Client) {
    match started(child, port).await {
        Started::Serving(c) => (c, Client::connect(([127, 0, 0, 1], port).into()).await),
        Started::Exited(s, err) => panic!("bookie exited at start-up ({s}): {err}"),
    }
}

fn signal(child: &mut Child, sig: i32) {
    // SAFETY: plain kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, sig) };
}

fn stop(mut child: Child) {
    signal(&mut child, libc::SIGTERM);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(s) = child.try_wait().expect("try_wait") {
            assert!(s.success(), "SIGTERM exit status {s}");
            return;
        }
        assert!(Instant::now() < deadline, "no exit after SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn files_named(dir: &Path, pred: &dyn Fn(&str) -> bool, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files_named(&p, pred, out);
        } else if p.file_name().and_then(|n| n.to_str()).is_some_and(pred) {
            out.push(p);
        }
    }
}

/// A bookie that held ledger 1 (200 entries) and ledger 2 (10 entries, fenced), stopped
/// with SIGTERM (its final flush wrote segments and the state file).
async fn stopped_bookie(data: &Path, port: u16) {
    let (child, mut c) = serving(start(data, port), port).await;
    for e in 0..200 {
        let r = c
            .v2_add(Flags::NONE, key(), entry(1, e, e - 1, &[e as u8; 300]))
            .await;
        assert_eq!(r.error, ErrorCode::Ok);
    }
    for e in 0..10 {
        let r = c
            .v2_add(Flags::NONE, key(), entry(2, e, e - 1, b"fenced"))
            .await;
        assert_eq!(r.error, ErrorCode::Ok);
    }
    assert_eq!(c.v2_fence(2, key()).await.error, ErrorCode::Ok);
    drop(c);
    stop(child);
}

/// Starts the damaged bookie: it must exit non-zero with `file` in its log. If it
/// serves instead, says what it answers (the bug) before failing.
async fn assert_refused_naming(data: &Path, port: u16, file: &Path) {
    match started(start(data, port), port).await {
        Started::Exited(status, err) => {
            assert!(!status.success(), "exit status {status}: {err}");
            let name = file.display().to_string();
            assert!(err.contains(&name), "refusal does not name {name}: {err}");
        }
        Started::Serving(mut child) => {
            let mut c = Client::connect(([127, 0, 0, 1], port).into()).await;
            let read0 = c.v2_read(1, 0).await.error;
            let read_last = c.v2_read(1, -1).await.error;
            let add = c
                .v2_add(Flags::NONE, key(), entry(2, 10, 9, b"after"))
                .await
                .error;
            signal(&mut child, libc::SIGKILL);
            let _ = child.wait();
            panic!(
                "started without {}: ledger 1 entry 0 answered {read0:?}, entry -1 \
                 {read_last:?}; an add to fenced ledger 2 answered {add:?}",
                file.display()
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleted_segment_refuses_start_up_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    stopped_bookie(dir.path(), port).await;
    let mut segs = Vec::new();
    files_named(dir.path(), &|n| n.ends_with(".seg"), &mut segs);
    assert!(!segs.is_empty(), "the final flush wrote no segment");
    segs.sort();
    let (code, out) = verify(dir.path());
    assert_eq!(code, 0, "verify before the damage: {out}");
    std::fs::remove_file(&segs[0]).unwrap();
    assert_refused_naming(dir.path(), port, &segs[0]).await;
    // The offline check names the lost file the same way.
    let (code, out) = verify(dir.path());
    assert_eq!(code, 1, "{out}");
    let line = format!(
        "PROBLEM: file={}: listed in the ledger state but missing",
        segs[0].display()
    );
    assert!(out.contains(&line), "{out}");
}

/// `bookie inspect --data-dir <data> verify`: (exit code, stdout).
fn verify(data: &Path) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_bookie"))
        .arg("inspect")
        .arg("--data-dir")
        .arg(data)
        .arg("verify")
        .env("RUST_LOG", "warn")
        .output()
        .expect("run bookie inspect");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleted_state_file_refuses_start_up_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    stopped_bookie(dir.path(), port).await;
    let mut states = Vec::new();
    files_named(dir.path(), &|n| n == "ledgers.state", &mut states);
    assert_eq!(states.len(), 1, "{states:?}");
    std::fs::remove_file(&states[0]).unwrap();
    assert_refused_naming(dir.path(), port, &states[0]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_undamaged_restart_serves_and_keeps_the_fence() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    stopped_bookie(dir.path(), port).await;
    let (mut child, mut c) = serving(start(dir.path(), port), port).await;
    let r = c.v2_read(1, 199).await;
    assert_eq!(
        (r.error, r.entry),
        (ErrorCode::Ok, entry(1, 199, 198, &[199u8; 300]))
    );
    let r = c
        .v2_add(Flags::NONE, key(), entry(2, 10, 9, b"after"))
        .await;
    assert_eq!(r.error, ErrorCode::Fenced);
    signal(&mut child, libc::SIGKILL);
    let _ = child.wait();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleted_journal_checkpoint_refuses_start_up_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    stopped_bookie(dir.path(), port).await;
    let mut cps = Vec::new();
    files_named(
        &dir.path().join("journal"),
        &|n| n == "checkpoint",
        &mut cps,
    );
    assert_eq!(cps.len(), 1, "{cps:?}");
    std::fs::remove_file(&cps[0]).unwrap();
    assert_refused_naming(dir.path(), port, &cps[0]).await;
}

/// SIGKILL after 50 acknowledged adds (well inside the write cache, so no flush wrote
/// them to a segment: the journal holds the only copy), then the only journal segment
/// is deleted: start-up must refuse naming it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleted_newest_journal_segment_after_sigkill_refuses_start_up_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let (mut child, mut c) = serving(start(dir.path(), port), port).await;
    for e in 0..50 {
        let r = c
            .v2_add(Flags::NONE, key(), entry(1, e, e - 1, &[e as u8; 300]))
            .await;
        assert_eq!(r.error, ErrorCode::Ok);
    }
    drop(c);
    signal(&mut child, libc::SIGKILL);
    let _ = child.wait();
    let mut segs = Vec::new();
    files_named(
        &dir.path().join("journal"),
        &|n| n.ends_with(".jseg") && !n.starts_with("free-"),
        &mut segs,
    );
    segs.sort();
    let newest = segs.last().expect("a journal segment").clone();
    assert!(
        newest.ends_with("current/0000000000000001.jseg"),
        "{segs:?}"
    );
    std::fs::remove_file(&newest).unwrap();
    assert_refused_naming(dir.path(), port, &newest).await;
}
