//! Issue 11, the fault matrix as a test: every kind of file the bookie writes × six kinds
//! of damage × {clean stop (SIGTERM), SIGKILL}, each tried with the real binary as a new
//! user would (stop, damage one file, start again).
//!
//! Two "golden" data dirs are written once, one per stop kind: a first run adds ledger 1
//! (200 entries) and ledger 2 (10 entries) and stops with SIGTERM (its final flush writes
//! them to an entry-log segment); a copy of that dir is kept as the "older copy" source
//! (so an older copy predates the fence). A second run fences ledger 2, adds ledger 3
//! (50 entries) and stops with SIGTERM (flushed) or SIGKILL (ledger 3 and the fence only
//! in the journal). Each cell copies the golden dir, damages one
//! file, starts the bookie and classifies the outcome as exactly one of
//! * `refused` — start-up refused, the log naming the damaged file;
//! * `EIO` — the bookie serves, every acknowledged entry reads byte-exact or answers EIO
//!   (v2 101), at least one answers EIO;
//! * `no effect` — the bookie serves every acknowledged entry byte-exact.
//!
//! Anything else is a violation: NoEntry / NoLedger (or any other error) for an
//! acknowledged entry, wrong bytes, an add accepted by the fenced ledger 2, a refusal that
//! does not name the file, a clean exit. The test fails unless the set of violating cells
//! equals [`KNOWN_VIOLATIONS`] (so a fix and a new violation both fail it), and prints the
//! matrix as the markdown table that docs/durability.md carries.
//!
//! Not covered: a deleted ledger coming back (a standalone bookie has no ZooKeeper, and
//! only the GC round deletes ledgers, docs/durability.md "When a ledger is deleted").

// Test code damages real directories directly; only production code is bound by
// ARCHITECTURE.md invariant 1 (see clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

mod common;

use std::collections::BTreeSet;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bk_proto::v2::{ErrorCode, Flags};
use bytes::Bytes;
use common::*;

mod host_disk;
mod ports;
use ports::free_port;

/// Cells (stop, file, damage) whose outcome is a violation today; see docs/durability.md
/// "The fault matrix". None: the last one (`ledgers.state` replaced by its copy from the
/// stop before ledger 2 was fenced, after a clean stop: ledger 2 took an add) is refused
/// since journal checkpoints record the state file's epoch.
const KNOWN_VIOLATIONS: &[(&str, &str, &str)] = &[];

/// The acknowledged entries of the golden dirs: (ledger, entries, payload of entry e).
const LEDGERS: &[(i64, i64)] = &[(1, 200), (2, 10), (3, 50)];

fn payload(ledger: i64, e: i64) -> Vec<u8> {
    match ledger {
        1 => vec![e as u8; 300],
        2 => b"fenced".to_vec(),
        _ => vec![(e as u8) ^ 0x5a; 100],
    }
}

fn expected(ledger: i64, e: i64) -> Bytes {
    entry(ledger, e, e - 1, &payload(ledger, e))
}

/// The one port every run uses: the cookie (`VERSION`) records the bookie's address, so
/// a start on another port is refused as a changed bookie id.
fn the_port() -> u16 {
    static PORT: std::sync::OnceLock<u16> = std::sync::OnceLock::new();
    *PORT.get_or_init(free_port)
}

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
            // Small journal segments: each cell copies the whole data dir.
            "--set",
            "journalMaxSizeMB=1",
            "--set",
            "journalPreAllocSizeMB=1",
            "--set",
            "nettyMaxFrameSize=1048576",
        ])
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn bookie")
}

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
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn signal(child: &Child, sig: i32) {
    // SAFETY: plain kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, sig) };
}

fn kill(mut child: Child) {
    signal(&child, libc::SIGKILL);
    let _ = child.wait();
}

fn terminate(mut child: Child) {
    signal(&child, libc::SIGTERM);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(s) = child.try_wait().expect("try_wait") {
            assert!(s.success(), "SIGTERM exit status {s}");
            return;
        }
        assert!(Instant::now() < deadline, "no exit after SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    }
}

async fn serving(data: &Path) -> (Child, Client) {
    let port = the_port();
    match started(start(data, port), port).await {
        Started::Serving(c) => (c, Client::connect(([127, 0, 0, 1], port).into()).await),
        Started::Exited(s, err) => panic!("golden bookie exited at start-up ({s}): {err}"),
    }
}

async fn add_all(c: &mut Client, ledger: i64, count: i64) {
    for e in 0..count {
        let r = c.v2_add(Flags::NONE, key(), expected(ledger, e)).await;
        assert_eq!(r.error, ErrorCode::Ok, "golden add {ledger}/{e}");
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let p = e.path();
        if p.is_dir() {
            copy_dir(&p, &to.join(e.file_name()));
        } else {
            std::fs::copy(&p, to.join(e.file_name())).unwrap();
        }
    }
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files(&p, out);
        } else {
            out.push(p);
        }
    }
}

/// Writes the golden dirs under `root`: `older` (after the first, SIGTERM-stopped run)
/// and `term` / `kill` (after the second run, stopped each way). Every run happens in
/// `root/live` (the cookie records the directories, so a bookie only starts there).
async fn golden(root: &Path) {
    let live = root.join("live");
    {
        let (child, mut c) = serving(&live).await;
        add_all(&mut c, 1, 200).await;
        add_all(&mut c, 2, 10).await;
        drop(c);
        terminate(child);
    }
    std::fs::rename(&live, root.join("older")).unwrap();
    for stop in ["term", "kill"] {
        copy_dir(&root.join("older"), &live);
        let (child, mut c) = serving(&live).await;
        // Fenced in the second run: an older copy of a state file predates the fence.
        assert_eq!(c.v2_fence(2, key()).await.error, ErrorCode::Ok);
        add_all(&mut c, 3, 50).await;
        drop(c);
        if stop == "term" {
            terminate(child);
        } else {
            kill(child);
        }
        std::fs::rename(&live, root.join(stop)).unwrap();
    }
}

/// The kinds of file, each found in a data dir by its path; a segment appears three times
/// (damaged in its data, footer or trailer region).
#[derive(Clone, Copy, PartialEq)]
enum Region {
    Whole,
    /// The journal segment's own groups (a recycled segment keeps stale groups of its
    /// former id after them, which no damage test should be about).
    JournalGroups,
    SegData,
    SegFooter,
    SegTrailer,
}

struct FileKind {
    name: &'static str,
    region: Region,
    find: fn(&Path) -> Option<PathBuf>,
}

fn pick(dir: &Path, pred: impl Fn(&Path) -> bool) -> Option<PathBuf> {
    let mut all = Vec::new();
    files(dir, &mut all);
    all.sort();
    all.into_iter().rfind(|p| pred(p))
}

fn name_of(p: &Path) -> &str {
    p.file_name().and_then(|n| n.to_str()).unwrap_or("")
}

fn journal_segment(d: &Path) -> Option<PathBuf> {
    // The newest journal segment holding groups; after a clean stop every segment has been
    // recycled, so the free one stands in.
    pick(&d.join("journal"), |p| {
        name_of(p).ends_with(".jseg") && !name_of(p).starts_with("free-")
    })
    .or_else(|| pick(&d.join("journal"), |p| name_of(p).ends_with(".jseg")))
}

fn entrylog_segment(d: &Path) -> Option<PathBuf> {
    // The segment holding ledgers 1 and 2 (the first flush's), oldest by name.
    let mut all = Vec::new();
    files(&d.join("ledgers"), &mut all);
    all.sort();
    all.into_iter().find(|p| name_of(p).ends_with(".seg"))
}

const KINDS: &[FileKind] = &[
    FileKind {
        name: "journal segment (`*.jseg`)",
        region: Region::JournalGroups,
        find: journal_segment,
    },
    FileKind {
        name: "free journal segment (`free-*.jseg`)",
        region: Region::Whole,
        find: |d| pick(&d.join("journal"), |p| name_of(p).starts_with("free-")),
    },
    FileKind {
        name: "journal `checkpoint`",
        region: Region::Whole,
        find: |d| pick(&d.join("journal"), |p| name_of(p) == "checkpoint"),
    },
    FileKind {
        name: "journal `newest-segment`",
        region: Region::Whole,
        find: |d| pick(&d.join("journal"), |p| name_of(p) == "newest-segment"),
    },
    FileKind {
        name: "journal cookie (`VERSION`)",
        region: Region::Whole,
        find: |d| pick(&d.join("journal"), |p| name_of(p) == "VERSION"),
    },
    FileKind {
        name: "ledgers cookie (`VERSION`)",
        region: Region::Whole,
        find: |d| pick(&d.join("ledgers"), |p| name_of(p) == "VERSION"),
    },
    FileKind {
        name: "`ledgers.state`",
        region: Region::Whole,
        find: |d| pick(&d.join("ledgers"), |p| name_of(p) == "ledgers.state"),
    },
    FileKind {
        name: "entry-log segment (`*.seg`), data",
        region: Region::SegData,
        find: entrylog_segment,
    },
    FileKind {
        name: "entry-log segment, footer",
        region: Region::SegFooter,
        find: entrylog_segment,
    },
    FileKind {
        name: "entry-log segment, trailer",
        region: Region::SegTrailer,
        find: entrylog_segment,
    },
];

const DAMAGES: &[&str] = &[
    "delete",
    "truncate to 0",
    "truncate mid",
    "zero 4 KiB",
    "flip 1 bit",
    "older copy",
];

/// Where in the file the in-place damages land: (truncate-at, zero-from, flip-byte). For a
/// whole file, the middle of its written bytes (up to its last non-zero byte: the state
/// files are padded to 4 KiB and journal segments preallocated, and damage to the zero
/// tail alone would prove little).
fn offsets(file: &[u8], region: Region) -> (usize, usize, usize) {
    let len = file.len();
    match region {
        Region::Whole => {
            let written = file.iter().rposition(|&b| b != 0).map_or(1, |i| i + 1);
            let mid = written / 2;
            (mid, mid & !4095, mid)
        }
        Region::JournalGroups => {
            let mid = journal_groups_len(file) / 2;
            (mid, mid & !4095, mid)
        }
        Region::SegData => (40, 0, 100),
        Region::SegFooter | Region::SegTrailer => {
            let t = &file[len - 64..];
            let footer_off = u64::from_le_bytes(t[40..48].try_into().unwrap()) as usize;
            let footer_len = u32::from_le_bytes(t[48..52].try_into().unwrap()) as usize;
            assert!(footer_off + footer_len <= len - 64, "trailer layout");
            if region == Region::SegFooter {
                let mid = footer_off + footer_len / 2;
                (mid, footer_off & !4095, mid)
            } else {
                (len - 32, len - 4096, len - 64 + 20)
            }
        }
    }
}

/// Bytes from offset 0 up to the end of the last group (docs/formats.md "Group") that
/// carries the same segment id as the first one.
fn journal_groups_len(file: &[u8]) -> usize {
    let u64_at = |o: usize| u64::from_le_bytes(file[o..o + 8].try_into().unwrap());
    let mut end = 0;
    while end + 56 <= file.len()
        && &file[end..end + 4] == b"BKJG"
        && (end == 0 || u64_at(end + 16) == u64_at(16))
    {
        let records = u32::from_le_bytes(file[end + 44..end + 48].try_into().unwrap()) as usize;
        end = (end + 56 + records).div_ceil(4096) * 4096;
    }
    end.max(1)
}

/// Damages `file` (in the cell's dir); `older` is the same file in the older copy. Returns
/// false when the damage does not apply (no older copy of the file).
fn damage(file: &Path, older: &Path, region: Region, kind: &str) -> bool {
    let bytes = std::fs::read(file).unwrap();
    let (cut, zero_at, flip_at) = offsets(&bytes, region);
    eprintln!(
        "{} ({} bytes): cut {cut}, zero {zero_at}, flip {flip_at}",
        file.display(),
        bytes.len()
    );
    match kind {
        "delete" => std::fs::remove_file(file).unwrap(),
        "truncate to 0" => std::fs::File::options()
            .write(true)
            .open(file)
            .unwrap()
            .set_len(0)
            .unwrap(),
        "truncate mid" => std::fs::File::options()
            .write(true)
            .open(file)
            .unwrap()
            .set_len(cut as u64)
            .unwrap(),
        "zero 4 KiB" => {
            let mut b = bytes;
            let end = (zero_at + 4096).min(b.len());
            b[zero_at..end].fill(0);
            std::fs::write(file, b).unwrap();
        }
        "flip 1 bit" => {
            let mut b = bytes;
            b[flip_at] ^= 0x10;
            std::fs::write(file, b).unwrap();
        }
        "older copy" => {
            if !older.exists() {
                return false;
            }
            std::fs::copy(older, file).unwrap();
        }
        other => unreachable!("{other}"),
    }
    true
}

/// Starts the damaged bookie and classifies what it does. `Err` is a violation.
async fn outcome(data: &Path, file: &Path) -> Result<String, String> {
    let port = the_port();
    match started(start(data, port), port).await {
        Started::Exited(status, err) => {
            if status.success() {
                return Err(format!("exited 0 at start-up: {err}"));
            }
            if err.contains(&file.display().to_string()) {
                Ok("refused".into())
            } else {
                let last = err.lines().last().unwrap_or("").to_string();
                Err(format!("refused without naming the file: {last}"))
            }
        }
        Started::Serving(child) => {
            let mut c = Client::connect(([127, 0, 0, 1], port).into()).await;
            let mut eio = 0;
            let mut bad = Vec::new();
            for &(ledger, count) in LEDGERS {
                for e in 0..count {
                    let r = c.v2_read(ledger, e).await;
                    match r.error {
                        ErrorCode::Ok if r.entry == expected(ledger, e) => {}
                        ErrorCode::Ok => bad.push(format!("{ledger}/{e} wrong bytes")),
                        ErrorCode::Io => eio += 1,
                        other => bad.push(format!("{ledger}/{e} {other:?}")),
                    }
                }
            }
            let add = c.v2_add(Flags::NONE, key(), expected(2, 10)).await.error;
            if add == ErrorCode::Ok {
                bad.push("fenced ledger 2 accepted an add".into());
            }
            drop(c);
            kill(child);
            if !bad.is_empty() {
                let n = bad.len();
                bad.truncate(2);
                return Err(format!("{n} bad: {}", bad.join(", ")));
            }
            Ok(if eio > 0 {
                format!("EIO ({eio} entries)")
            } else {
                "no effect".into()
            })
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_file_every_damage_both_stops() {
    let root = tempfile::tempdir().unwrap();
    golden(root.path()).await;
    let older = root.path().join("older");
    let mut found = BTreeSet::new();
    let mut table = String::from("| Stop | File | ");
    table += &DAMAGES.join(" | ");
    table += " |\n|---|---|";
    table += &"---|".repeat(DAMAGES.len());
    table += "\n";
    for (stop, label) in [("term", "SIGTERM"), ("kill", "SIGKILL")] {
        let gold = root.path().join(stop);
        let mut written = Vec::new();
        files(&gold, &mut written);
        written.sort();
        eprintln!("{label} golden dir: {written:?}");
        for kind in KINDS {
            table += &format!("| {label} | {} |", kind.name);
            let Some(path) = (kind.find)(&gold) else {
                table += &" n/a (no such file) |".repeat(DAMAGES.len());
                table += "\n";
                continue;
            };
            let rel = path.strip_prefix(&gold).unwrap().to_path_buf();
            for &dmg in DAMAGES {
                let cell = root.path().join("live");
                copy_dir(&gold, &cell);
                let file = cell.join(&rel);
                let text = if !damage(&file, &older.join(&rel), kind.region, dmg) {
                    "n/a (no older copy)".to_string()
                } else {
                    match outcome(&cell, &file).await {
                        Ok(o) => o,
                        Err(v) => {
                            found.insert((label, kind.name, dmg));
                            format!("**VIOLATION**: {v}")
                        }
                    }
                };
                eprintln!("{label} | {} | {dmg}: {text}", kind.name);
                table += &format!(" {} |", text.replace('|', "/"));
                std::fs::remove_dir_all(&cell).unwrap();
            }
            table += "\n";
        }
    }
    println!("{table}");
    let known: BTreeSet<_> = KNOWN_VIOLATIONS.iter().copied().collect();
    assert_eq!(
        found, known,
        "violating cells differ from the known list\n{table}"
    );
}
