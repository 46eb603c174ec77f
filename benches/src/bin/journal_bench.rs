//! journal_bench: durable-append throughput and latency of bk-journal, and its replay
//! speed, on the io_uring and syscall backends (journal-vs-fio.sh runs fio for the
//! same shapes on the same directory first).
//!
//! Shapes, per backend:
//! - (a) `concurrent`: 1 KiB appends from 256 concurrent appenders (4 submitter threads
//!   x 64 outstanding appends each, as an async server would hold them), for
//!   `3 s x scale`: durable appends/s, appends per fdatasync, append p50/p99;
//! - (b) `large`: 5 MiB appends, 2 outstanding: MB/s, twice. First into fresh segments
//!   (each new segment is zero-filled before use, so about as many zero bytes are
//!   written as data: the first pass over an empty journal). Then, after a checkpoint
//!   has recycled those segments into the free pool, into recycled segments: the
//!   journal's steady state, and the same thing fio measures when it overwrites its
//!   pre-written file. The bench keeps `FREE_SEGMENTS` free segments
//!   (`journalMaxBackups`) so that the steady pass never needs a fresh one, and waits
//!   for the segments beyond them to be unlinked before it starts;
//! - (c) `paced`: a fixed 10,000 appends/s of 1 KiB for `3 s x scale` (issued in 1 ms
//!   ticks), latency measured from each append's *scheduled* time (no coordinated
//!   omission; includes up to 1 ms of pacing granularity): p50/p99/p99.9;
//! - (d) `replay`: reopen the journal written by (a)-(c) with no checkpoint and replay
//!   it: MB/s and records/s.
//!
//! A checkpoint runs every 5 s during (a)-(c) (mark, then checkpoint), as the
//! bookie's entry-log flush would, so segments are recycled as in production.
//!
//! Usage: `journal_bench [--dir DIR] [--backend uring|syscall|both] [--scale F]`.
//! DIR must be on the file system to measure.

// A benchmark tool, not the bookie: it writes reports and scratch directories with std::fs
// directly, so it is exempt from ARCHITECTURE.md invariant 1 (see clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use bk_disk::{open_disk, Disk, DiskConfig, DiskKind};
use bk_journal::bytes::Bytes;
use bk_journal::{DiskFactory, Journal, JournalConfig, Record};
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

struct Args {
    dir: PathBuf,
    backends: Vec<DiskKind>,
    scale: f64,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        dir: PathBuf::from("."),
        backends: vec![DiskKind::Uring, DiskKind::Syscall],
        scale: 1.0,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut val = || it.next().ok_or_else(|| format!("{a} needs a value"));
        match a.as_str() {
            "--dir" => args.dir = PathBuf::from(val()?),
            "--backend" => {
                let v = val()?;
                args.backends = if v == "both" {
                    vec![DiskKind::Uring, DiskKind::Syscall]
                } else {
                    vec![v.parse()?]
                }
            }
            "--scale" => args.scale = val()?.parse().map_err(|e| format!("--scale: {e}"))?,
            "-h" | "--help" => {
                return Err(
                    "usage: journal_bench [--dir DIR] [--backend uring|syscall|both] [--scale F]"
                        .into(),
                )
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(args)
}

fn factory(kind: DiskKind) -> DiskFactory {
    Arc::new(move |_| {
        let o = open_disk(&DiskConfig {
            kind,
            ..DiskConfig::default()
        })?;
        Ok(o.disk as Box<dyn Disk>)
    })
}

/// Segment size of the bench's journal (the default).
const SEGMENT_BYTES: u64 = 128 << 20;
/// Free segments kept for reuse (`journalMaxBackups`): enough for the steady (b) pass.
const FREE_SEGMENTS: usize = 8;
/// Size of one (b) append.
const LARGE: usize = 5 << 20;

fn config() -> JournalConfig {
    JournalConfig {
        segment_bytes: SEGMENT_BYTES,
        free_segments_max: FREE_SEGMENTS,
        ..JournalConfig::default()
    }
}

fn pct(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// Runs a checkpoint (mark, then checkpoint) every 5 s until `stop`, as the
/// bookie's entry-log flush would (the Java default flushInterval is 60 s).
fn checkpointer(j: &Journal, stop: &AtomicBool) {
    loop {
        for _ in 0..25 {
            if stop.load(Ordering::Relaxed) {
                return;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        if let Ok(m) = j.mark_blocking() {
            if let Err(e) = j.checkpoint_blocking(&m) {
                eprintln!("checkpoint failed: {e}");
                return;
            }
        }
    }
}

fn concurrent(j: &Journal, secs: f64, payload: &Bytes) -> Result<(), String> {
    let m = j.metrics(0).ok_or("no metrics")?;
    m.reset_histograms();
    let before = m.snapshot();
    let deadline = Instant::now() + Duration::from_secs_f64(secs);
    let t = Instant::now();
    let total: u64 = std::thread::scope(|s| {
        let hs: Vec<_> = (0..4u64)
            .map(|w| {
                s.spawn(move || {
                    let mut q = VecDeque::with_capacity(64);
                    let mut n = 0u64;
                    let mut entry = w << 40;
                    loop {
                        let go = Instant::now() < deadline;
                        while go && q.len() < 64 {
                            q.push_back(j.append(1, Record::entry(1, entry, payload.clone())));
                            entry += 1;
                        }
                        let Some(f) = q.pop_front() else { break };
                        if f.wait().is_ok() {
                            n += 1;
                        }
                    }
                    n
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap_or(0)).sum()
    });
    let el = t.elapsed().as_secs_f64();
    let after = m.snapshot();
    let groups = after.groups - before.groups;
    println!(
        "  (a) 1 KiB x 256 concurrent: {:>9.0} durable appends/s  {:>6.1} appends/fdatasync  append p50 {} us p99 {} us  fdatasync p50 {} us",
        total as f64 / el,
        (after.records_acked - before.records_acked) as f64 / groups.max(1) as f64,
        after.append_latency_us.p50,
        after.append_latency_us.p99,
        after.sync_latency_us.p50,
    );
    Ok(())
}

fn large(j: &Journal, count: usize, what: &str) {
    let payload = Bytes::from(vec![0x5au8; LARGE]);
    let t = Instant::now();
    let mut q = VecDeque::new();
    let mut done = 0usize;
    for i in 0..count {
        q.push_back(j.append(1, Record::entry(1, i as u64, payload.clone())));
        if q.len() >= 2 {
            if let Some(f) = q.pop_front() {
                done += usize::from(f.wait().is_ok());
            }
        }
    }
    while let Some(f) = q.pop_front() {
        done += usize::from(f.wait().is_ok());
    }
    let el = t.elapsed().as_secs_f64();
    println!(
        "  (b) 5 MiB appends, {what}: {:>9.1} MB/s ({done} appends in {el:.2} s)",
        (done * LARGE) as f64 / el / 1e6
    );
}

fn paced(j: &Journal, secs: f64, rate: f64, payload: &Bytes) {
    if let Some(m) = j.metrics(0) {
        m.reset_histograms();
    }
    let n = (secs * rate) as u64;
    let interval = Duration::from_secs_f64(1.0 / rate);
    let (tx, rx) = std::sync::mpsc::sync_channel::<(Instant, bk_journal::AppendFuture)>(100_000);
    let start = Instant::now() + Duration::from_millis(10);
    let lat = std::thread::scope(|s| {
        let collector = s.spawn(move || {
            let mut lat = Vec::with_capacity(n as usize);
            for (sched, f) in rx {
                if f.wait().is_ok() {
                    lat.push(sched.elapsed().as_micros() as u64);
                }
            }
            lat
        });
        // Wake every 1 ms and issue every append scheduled up to now (a sleep per
        // append would make the pacer itself the bottleneck on a busy machine).
        let mut i = 0u64;
        'pace: while i < n {
            let now = Instant::now();
            while i < n {
                let sched = start + interval * i as u32;
                if sched > now {
                    break;
                }
                let f = j.append(1, Record::entry(1, i, payload.clone()));
                if tx.send((sched, f)).is_err() {
                    break 'pace;
                }
                i += 1;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        drop(tx);
        collector.join().unwrap_or_default()
    });
    let mut lat = lat;
    lat.sort_unstable();
    println!(
        "  (c) 1 KiB at {:.0}/s:        p50 {} us  p99 {} us  p99.9 {} us  max {} us ({} appends)",
        rate,
        pct(&lat, 0.5),
        pct(&lat, 0.99),
        pct(&lat, 0.999),
        lat.last().copied().unwrap_or(0),
        lat.len()
    );
    if let Some(m) = j.metrics(0).map(|m| m.snapshot()) {
        println!(
            "      committer-side (admission to ack sent): p50 {} us  p99 {} us  p99.9 {} us; fdatasync p50 {} us p99 {} us; {:.1} appends/fdatasync",
            m.append_latency_us.p50,
            m.append_latency_us.p99,
            m.append_latency_us.p999,
            m.sync_latency_us.p50,
            m.sync_latency_us.p99,
            m.group_records.mean
        );
    }
}

fn replay(dir: &Path, kind: DiskKind) -> Result<(), String> {
    let t = Instant::now();
    let mut records = 0u64;
    let mut bytes = 0u64;
    let (j, r) = Journal::open(&[dir.to_path_buf()], config(), factory(kind), &mut |rec| {
        records += 1;
        bytes += rec.payload.len() as u64;
        Ok(())
    })
    .map_err(|e| format!("reopen: {e}"))?;
    let el = t.elapsed().as_secs_f64();
    let read = r.dirs[0].bytes_read;
    println!(
        "  (d) replay: {:>9.1} MB/s read ({:.1} MB in {el:.2} s), {:.0} records/s, {:.1} MB payload",
        read as f64 / el / 1e6,
        read as f64 / 1e6,
        records as f64 / el,
        bytes as f64 / 1e6
    );
    j.shutdown();
    Ok(())
}

fn run(args: &Args, kind: DiskKind) -> Result<(), String> {
    let dir = args
        .dir
        .join(format!("journal-bench-{kind:?}").to_lowercase());
    let _ = std::fs::remove_dir_all(&dir);
    println!("journal_bench backend {kind:?} dir {}", dir.display());
    let (j, _) = Journal::open(
        std::slice::from_ref(&dir),
        config(),
        factory(kind),
        &mut |_| Ok(()),
    )
    .map_err(|e| format!("open: {e}"))?;
    let payload = Bytes::from(vec![0xa5u8; 1024]);
    let secs = 3.0 * args.scale;
    let stop = AtomicBool::new(false);
    let r = std::thread::scope(|s| {
        let ck = s.spawn(|| checkpointer(&j, &stop));
        let r = concurrent(&j, secs, &payload);
        // (c) before (b): after 200+ MB of 5 MiB writes the device keeps flushing
        // its cache for a while, which would be charged to the paced shape.
        paced(&j, secs, 10_000.0, &payload);
        // Cold: enough fresh segments to fill the free pool afterwards.
        let per_segment = (SEGMENT_BYTES as usize / (LARGE + 4096)).max(1);
        large(&j, per_segment * (FREE_SEGMENTS + 1), "fresh segments   ");
        // Recycle them: a checkpoint at the current mark frees every full segment.
        let checkpoint = || {
            j.mark_blocking()
                .map_err(|e| format!("mark: {e}"))
                .and_then(|m| {
                    j.checkpoint_blocking(&m)
                        .map_err(|e| format!("checkpoint: {e}"))
                })
        };
        // The segments beyond the free pool are unlinked by the checkpoint writer
        // thread after the checkpoint returns (on a discard-mounted file system each
        // unlink also trims 128 MiB). A second checkpoint, queued behind those
        // unlinks on that thread, keeps them out of the measured pass.
        let recycled = checkpoint().and_then(|_| {
            j.append(1, Record::entry(1, u64::MAX, Bytes::from_static(b"x")))
                .wait()
                .map_err(|e| format!("append: {e}"))?;
            checkpoint()
        });
        let before = j.metrics(0).map(|m| m.snapshot()).unwrap_or_default();
        // Steady: stays within the free pool (minus the current segment's tail).
        large(&j, per_segment * (FREE_SEGMENTS - 1), "recycled segments");
        let after = j.metrics(0).map(|m| m.snapshot()).unwrap_or_default();
        println!(
            "      steady pass: {} fresh segments created (0: every segment came from the free pool)",
            after.segments_created - before.segments_created
        );
        stop.store(true, Ordering::Relaxed);
        let _ = ck.join();
        r.and(recycled)
    });
    r?;
    let m = j.metrics(0).map(|m| m.snapshot()).unwrap_or_default();
    println!(
        "  segments created {} recycled {}, {} checkpoints, {:.1} MB written",
        m.segments_created,
        m.segments_recycled,
        m.checkpoints,
        m.bytes_written as f64 / 1e6
    );
    j.shutdown();
    // Replay everything since the last checkpoint: write one more uncheckpointed
    // stretch first so there is something to replay.
    let (j, _) = Journal::open(
        std::slice::from_ref(&dir),
        config(),
        factory(kind),
        &mut |_| Ok(()),
    )
    .map_err(|e| format!("open: {e}"))?;
    let big = Bytes::from(vec![0x11u8; 64 << 10]);
    let mut q = VecDeque::new();
    for i in 0..((1500.0 * args.scale) as u64).max(100) {
        q.push_back(j.append(1, Record::entry(1, i, big.clone())));
        if q.len() > 64 {
            if let Some(f) = q.pop_front() {
                let _ = f.wait();
            }
        }
    }
    while let Some(f) = q.pop_front() {
        let _ = f.wait();
    }
    j.shutdown();
    replay(&dir, kind)?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    for kind in args.backends.clone() {
        if let Err(e) = run(&args, kind) {
            eprintln!("journal_bench {kind:?}: {e}");
            std::process::exit(1);
        }
    }
}
