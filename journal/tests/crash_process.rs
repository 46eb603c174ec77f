//! Real crashes on the io_uring backend: the test re-executes its own binary as a
//! child (env `BK_JOURNAL_CRASH_CHILD=<dir>`) that appends entries as fast as it can
//! with 64 appends outstanding, checkpointing now and then, and prints
//! `ACK <entry id> <seq>` for each acknowledged append (and `CKPT <seq>` after each
//! successful checkpoint). The parent SIGKILLs it at a random moment, reopens the
//! journal, and checks that every acknowledged append above the checkpoint mark is
//! replayed with its exact bytes and seq. Three kill/recover rounds on the same
//! directory. Falls back to the syscall backend (and says so) where io_uring is
//! unavailable.

use bk_disk::{open_disk, Disk, DiskConfig, DiskKind};
use bk_journal::{DiskFactory, Journal, JournalConfig, ReplayedRecord, Seq, TypedRecord};
use bytes::Bytes;
use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

const CHILD_ENV: &str = "BK_JOURNAL_CRASH_CHILD";
const START_ENV: &str = "BK_JOURNAL_CRASH_START";

fn data_for(id: u64) -> Bytes {
    let len = 100 + (id.wrapping_mul(2_654_435_761) % 4000) as usize;
    Bytes::from(
        (0..len)
            .map(|k| (id.wrapping_mul(31).wrapping_add(k as u64 * 7) >> 3) as u8)
            .collect::<Vec<u8>>(),
    )
}

fn config() -> JournalConfig {
    JournalConfig {
        segment_bytes: 1 << 20,
        free_segments_max: 2,
        ..JournalConfig::default()
    }
}

fn factory() -> DiskFactory {
    Arc::new(|_i| {
        let opened = open_disk(&DiskConfig {
            kind: DiskKind::Auto,
            ..DiskConfig::default()
        })?;
        if let Some(e) = &opened.uring_error {
            eprintln!("io_uring unavailable ({e}); using the syscall backend");
        }
        Ok(opened.disk as Box<dyn Disk>)
    })
}

fn child_main(dir: &Path, start: u64) {
    let (j, _) = Journal::open(&[dir.to_path_buf()], config(), factory(), &mut |_| Ok(()))
        .expect("child: open journal");
    let out = std::io::stdout();
    let mut q = VecDeque::new();
    let mut id = start;
    let mut acked = 0u64;
    loop {
        while q.len() < 64 {
            q.push_back((id, j.append_entry(1, id, data_for(id))));
            id += 1;
        }
        let Some((aid, f)) = q.pop_front() else {
            continue;
        };
        let seq = f.wait().expect("child: append failed");
        {
            let mut o = out.lock();
            let _ = writeln!(o, "ACK {aid} {}", seq.0);
            let _ = o.flush();
        }
        acked += 1;
        if acked.is_multiple_of(3000) {
            let mark = j.mark_blocking().expect("child: mark");
            j.checkpoint_blocking(&mark).expect("child: checkpoint");
            let mut o = out.lock();
            let _ = writeln!(o, "CKPT {}", mark.seqs[0].0);
            let _ = o.flush();
        }
    }
}

#[test]
fn crash_child() {
    // Only does something when re-executed by `sigkill_at_random_moments`.
    if let Ok(dir) = std::env::var(CHILD_ENV) {
        let start = std::env::var(START_ENV)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(1);
        child_main(Path::new(&dir), start);
    }
}

#[test]
fn sigkill_at_random_moments() {
    let base = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let tmp = tempfile::tempdir_in(&base).expect("tempdir");
    let dir = tmp.path().join("journal");
    let exe = std::env::current_exe().expect("current exe");
    let mut next_id = 1u64;
    let mut acked: HashMap<u64, Seq> = HashMap::new();
    let mut last_ckpt = Seq(0);
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(7);
    eprintln!("crash test seed {seed}");
    for round in 0..3u64 {
        let mut child = Command::new(&exe)
            .args(["crash_child", "--exact", "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, &dir)
            .env(START_ENV, next_id.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn child");
        let stdout = child.stdout.take().expect("child stdout");
        let reader = std::thread::spawn(move || {
            let mut lines = Vec::new();
            for l in BufReader::new(stdout).lines() {
                match l {
                    Ok(l) => lines.push(l),
                    Err(_) => break,
                }
            }
            lines
        });
        // Kill after the child acknowledged something, at a random moment.
        let wait_ms = 300 + (seed.wrapping_mul(round + 1).wrapping_mul(0x9e37_79b9) >> 7) % 900;
        let t = Instant::now();
        std::thread::sleep(Duration::from_millis(wait_ms));
        child.kill().expect("SIGKILL child");
        let status = child.wait().expect("wait child");
        assert!(!status.success(), "child exited on its own: {status:?}");
        let lines = reader.join().expect("reader thread");
        let mut n = 0;
        for l in &lines {
            let parts: Vec<&str> = l.split_whitespace().collect();
            match parts.as_slice() {
                ["ACK", id, seq] => {
                    let id: u64 = id.parse().expect("ack id");
                    let seq: u64 = seq.parse().expect("ack seq");
                    acked.insert(id, Seq(seq));
                    next_id = next_id.max(id + 1);
                    n += 1;
                }
                ["CKPT", seq] => last_ckpt = Seq(seq.parse().expect("ckpt seq")),
                _ => {}
            }
        }
        // Ids handed to appends that were never acknowledged are not reused.
        next_id += 64;
        eprintln!(
            "round {round}: killed after {:?}, {n} acks reported",
            t.elapsed()
        );

        let mut replayed: HashMap<u64, (Seq, Bytes)> = HashMap::new();
        let (j, replay) = Journal::open(
            std::slice::from_ref(&dir),
            config(),
            factory(),
            &mut |r: &ReplayedRecord| match r.typed() {
                Ok(TypedRecord::Entry { entry, data, .. }) => {
                    replayed.insert(entry, (r.seq, data));
                    Ok(())
                }
                other => Err(format!("unexpected record {other:?}")),
            },
        )
        .expect("reopen after SIGKILL");
        let mark = replay.dirs[0].checkpoint_mark;
        assert!(
            mark >= last_ckpt,
            "checkpoint mark {mark} below the reported {last_ckpt}"
        );
        let mut checked = 0;
        for (id, seq) in &acked {
            if *seq <= mark {
                continue;
            }
            let (rseq, data) = replayed
                .get(id)
                .unwrap_or_else(|| panic!("acked entry {id} (seq {seq}) lost; mark {mark}"));
            assert_eq!(rseq, seq, "entry {id} replayed with another seq");
            assert_eq!(data, &data_for(*id), "entry {id} bytes differ");
            checked += 1;
        }
        for (id, (_, data)) in &replayed {
            assert_eq!(
                data,
                &data_for(*id),
                "replayed entry {id} was never appended like this"
            );
        }
        eprintln!("round {round}: {checked} acked entries above mark {mark} verified");
        j.shutdown();
    }
    assert!(!acked.is_empty(), "the child never acknowledged anything");
}
