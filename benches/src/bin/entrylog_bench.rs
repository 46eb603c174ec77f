//! entrylog_bench: throughput and latency of bk-entrylog on a real directory.
//!
//! Shapes (each printed as one line):
//! - flush throughput: 64 KiB and 5 MiB entries added then `flush()`ed (MB/s, wall
//!   time from the first add to the durable flush, background flushes included);
//! - cold random reads: 4 KiB entries read at random by 32 threads (queue depth 32,
//!   O_DIRECT so the page cache does not help), IOPS and p50/p99;
//! - sequential catch-up: one reader walking a ledger of 1 KiB and of 64 KiB
//!   entries from a freshly opened log (read-ahead into the read cache), entries/s, MB/s;
//! - GC: dropping 16,000 ledgers (time of `gc`);
//! - peak RSS (VmHWM) against the configured cache sizes.
//!
//! Usage: `entrylog_bench [--dir DIR] [--scale F] [--backend uring|syscall|auto]
//! [--readers N] [--only flush,random,catchup,gc] [--write-cache-mib N]`
//! (`--readers`: `EntryLogConfig::readers` of the random-read shape, default 32;
//! `--only`: run only those shapes, `--random-only` is `--only random`;
//! `--write-cache-mib`: the write cache, default 256 (compare.sh gives both bookies 256),
//! of which each flush writes half;
//! `--flush-write-kib`, `--flush-depth`: the flush's write size and queue depth).
//! DIR must be on the file system to measure; the bench creates and removes
//! `DIR/entrylog-bench`. `--scale` multiplies data sizes (default 1 = 1 GiB written
//! per flush shape); keep it small on shared machines.

// A benchmark tool, not the bookie: it writes reports and scratch directories with std::fs
// directly, so it is exempt from ARCHITECTURE.md invariant 1 (see clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use bk_disk::{open_disk, DiskConfig, DiskKind};
use bk_entrylog::{Bytes, DiskFactory, EntryLog, EntryLogConfig, EntrySelector};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

struct Args {
    dir: PathBuf,
    scale: f64,
    kind: DiskKind,
    /// `EntryLogConfig::readers` for the random-read shape (default 32, the queue depth).
    readers: usize,
    /// Shapes to run (`--only flush,random,catchup,gc`; all by default).
    only: Option<Vec<String>>,
    /// Write cache size in MiB (`--write-cache-mib`, default 256; a flush writes half).
    write_cache_mib: usize,
    /// `EntryLogConfig::flush_write_bytes` / `flush_queue_depth` overrides
    /// (`--flush-write-kib`, `--flush-depth`).
    flush_write_kib: Option<usize>,
    flush_depth: Option<usize>,
}

impl Args {
    fn runs(&self, shape: &str) -> bool {
        self.only
            .as_ref()
            .is_none_or(|o| o.iter().any(|s| s == shape))
    }
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        dir: PathBuf::from("."),
        scale: 1.0,
        kind: DiskKind::Auto,
        readers: 32,
        only: None,
        write_cache_mib: 256,
        flush_write_kib: None,
        flush_depth: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut val = || it.next().ok_or_else(|| format!("{k} needs a value"));
        match k.as_str() {
            "--dir" => a.dir = PathBuf::from(val()?),
            "--scale" => a.scale = val()?.parse().map_err(|e| format!("--scale: {e}"))?,
            "--backend" => a.kind = val()?.parse()?,
            "--readers" => {
                a.readers = val()?.parse().map_err(|e| format!("--readers: {e}"))?;
            }
            "--random-only" => a.only = Some(vec!["random".into()]),
            "--only" => a.only = Some(val()?.split(',').map(str::to_string).collect()),
            "--flush-write-kib" => {
                a.flush_write_kib = Some(val()?.parse().map_err(|e| format!("{k}: {e}"))?);
            }
            "--flush-depth" => {
                a.flush_depth = Some(val()?.parse().map_err(|e| format!("{k}: {e}"))?);
            }
            "--write-cache-mib" => {
                a.write_cache_mib = val()?
                    .parse()
                    .map_err(|e| format!("--write-cache-mib: {e}"))?;
            }
            _ => {
                return Err("usage: entrylog_bench [--dir DIR] [--scale F] \
                     [--backend uring|syscall|auto] [--readers N] [--random-only] \
                     [--only flush,random,catchup,gc] [--write-cache-mib N] \
                     [--flush-write-kib N] [--flush-depth N]"
                    .into())
            }
        }
    }
    Ok(a)
}

fn config(a: &Args) -> EntryLogConfig {
    let d = EntryLogConfig::default();
    EntryLogConfig {
        flush_write_bytes: a.flush_write_kib.map_or(d.flush_write_bytes, |k| k << 10),
        flush_queue_depth: a.flush_depth.unwrap_or(d.flush_queue_depth),
        write_cache_bytes: a.write_cache_mib << 20,
        read_cache_bytes: 64 << 20,
        readahead_entries: 1000,
        readahead_bytes: 4 << 20,
        readers: 32,
        direct_io: true,
        ..EntryLogConfig::default()
    }
}

fn factory(kind: DiskKind) -> DiskFactory {
    Arc::new(move || {
        open_disk(&DiskConfig {
            kind,
            ..DiskConfig::default()
        })
        .map(|o| o.disk)
    })
}

fn payload(ledger: u64, entry: u64, len: usize) -> Bytes {
    let mut v = vec![0u8; len.max(24)];
    v[0..8].copy_from_slice(&(ledger as i64).to_be_bytes());
    v[8..16].copy_from_slice(&(entry as i64).to_be_bytes());
    v[16..24].copy_from_slice(&(entry as i64 - 1).to_be_bytes());
    let mut x = ledger.wrapping_mul(31).wrapping_add(entry) | 1;
    for b in v[24..].iter_mut().step_by(64) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
    Bytes::from(v)
}

fn fresh_dir(root: &Path, name: &str) -> PathBuf {
    let d = root.join("entrylog-bench").join(name);
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn open(a: &Args, dir: &Path) -> Result<EntryLog, String> {
    EntryLog::open(vec![dir.to_path_buf()], config(a), factory(a.kind)).map_err(|e| e.to_string())
}

fn fill(log: &EntryLog, ledgers: u64, count: u64, len: usize) -> Result<u64, String> {
    let mut bytes = 0;
    for e in 0..count {
        let l = e % ledgers;
        let p = payload(l, e / ledgers, len);
        bytes += p.len() as u64;
        log.add_entry(l, e / ledgers, p)
            .map_err(|e| e.to_string())?;
    }
    log.flush().map_err(|e| e.to_string())?;
    Ok(bytes)
}

/// `prebuilt`: build every payload before the clock starts (the throughput figure:
/// in a bookie the payloads arrive from the network); otherwise build each one just
/// before its add (the memory pass: the bench then holds one payload at a time, so
/// the peak RSS is the entry log's).
fn bench_flush(a: &Args, len: usize, prebuilt: bool) -> Result<(), String> {
    let dir = fresh_dir(&a.dir, &format!("flush-{len}"));
    let log = open(a, &dir)?;
    let total = (1024.0 * a.scale * (1 << 20) as f64) as u64;
    let count = (total / len as u64).max(4);
    let ledgers = 8;
    let ids = (0..count).map(move |e| (e % ledgers, e / ledgers));
    let payloads: Box<dyn Iterator<Item = (u64, u64, Bytes)>> = if prebuilt {
        let v: Vec<_> = ids.map(|(l, e)| (l, e, payload(l, e, len))).collect();
        Box::new(v.into_iter())
    } else {
        Box::new(ids.map(move |(l, e)| (l, e, payload(l, e, len))))
    };
    let t = Instant::now();
    let mut bytes = 0;
    for (l, e, p) in payloads {
        bytes += p.len() as u64;
        log.add_entry(l, e, p).map_err(|e| e.to_string())?;
    }
    log.flush().map_err(|e| e.to_string())?;
    let secs = t.elapsed().as_secs_f64();
    let m = log.metrics();
    println!(
        "flush {:>8} B entries{}: {count} entries, {:.1} MiB in {secs:.2}s = {:.1} MB/s ({} flushes, p50 flush {} us)",
        len,
        if prebuilt { "" } else { " (memory pass, payloads built inline)" },
        bytes as f64 / (1 << 20) as f64,
        bytes as f64 / secs / 1e6,
        m.flush_count.load(Ordering::Relaxed),
        m.flush_latency.quantile_us(0.5)
    );
    drop(log);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// Random reads of `len`-byte entries. A segment stores payloads back to back (their
/// CRCs are in the footer), so 4,096-byte entries each fill exactly one 4 KiB block
/// and a cold read is one 4 KiB I/O, what fio's 4k random read does; 4,000-byte
/// entries mostly straddle two blocks (an 8 KiB read), which shows what packing costs
/// sizes that are not a multiple of the block.
fn bench_random_reads(a: &Args, len: usize) -> Result<(), String> {
    let dir = fresh_dir(&a.dir, &format!("random-{len}"));
    let count = ((64.0 * a.scale * (1 << 20) as f64) as u64 / len as u64).max(1024);
    {
        let log = open(a, &dir)?;
        fill(&log, 16, count, len)?;
    }
    // Cold: no read-ahead, so every read goes to the disk (O_DIRECT).
    let cfg = EntryLogConfig {
        readahead_entries: 1,
        readers: a.readers,
        ..config(a)
    };
    let log = Arc::new(
        EntryLog::open(vec![dir.clone()], cfg, factory(a.kind)).map_err(|e| e.to_string())?,
    );
    let per_ledger = count / 16;
    let done = Arc::new(AtomicU64::new(0));
    let dur = Duration::from_secs_f64((3.0 * a.scale).clamp(1.0, 10.0));
    let t = Instant::now();
    let mut threads = Vec::new();
    for th in 0..32u64 {
        let (log, done) = (log.clone(), done.clone());
        threads.push(std::thread::spawn(move || -> Result<Vec<u32>, String> {
            let mut x = th * 7919 + 1;
            let mut lat = Vec::new();
            while t.elapsed() < dur {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let l = x % 16;
                let e = (x >> 8) % per_ledger;
                let s = Instant::now();
                log.get_entry(l, EntrySelector::Id(e))
                    .map_err(|e| e.to_string())?;
                lat.push(s.elapsed().as_micros() as u32);
                done.fetch_add(1, Ordering::Relaxed);
            }
            Ok(lat)
        }));
    }
    let mut lat = Vec::new();
    for h in threads {
        lat.extend(h.join().map_err(|_| "reader panicked")??);
    }
    let secs = t.elapsed().as_secs_f64();
    lat.sort_unstable();
    let q = |p: f64| {
        lat.get(((lat.len() as f64 * p) as usize).min(lat.len().saturating_sub(1)))
            .copied()
            .unwrap_or(0)
    };
    println!(
        "random reads of {len} B entries, QD32, {} readers: {} reads in {secs:.2}s = {:.0} IOPS, p50 {} us, p99 {} us (read cache hits {})",
        a.readers,
        lat.len(),
        lat.len() as f64 / secs,
        q(0.5),
        q(0.99),
        log.metrics().read_cache_hits.load(Ordering::Relaxed)
    );
    drop(log);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

fn bench_catch_up(a: &Args, len: usize) -> Result<(), String> {
    let dir = fresh_dir(&a.dir, &format!("catchup-{len}"));
    let count = ((64.0 * a.scale * (1 << 20) as f64) as u64 / len as u64).max(1000);
    {
        let log = open(a, &dir)?;
        fill(&log, 1, count, len)?;
    }
    let log = open(a, &dir)?;
    let t = Instant::now();
    let mut bytes = 0u64;
    for e in 0..count {
        bytes += log
            .get_entry(0, EntrySelector::Id(e))
            .map_err(|e| e.to_string())?
            .len() as u64;
    }
    let secs = t.elapsed().as_secs_f64();
    let m = log.metrics();
    println!(
        "catch-up {:>6} B entries: {count} entries in {secs:.2}s = {:.0} entries/s, {:.1} MB/s (read-ahead batches {}, cache hits {})",
        len,
        count as f64 / secs,
        bytes as f64 / secs / 1e6,
        m.readahead_batch_count.load(Ordering::Relaxed),
        m.read_cache_hits.load(Ordering::Relaxed)
    );
    drop(log);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

fn bench_gc(a: &Args) -> Result<(), String> {
    let dir = fresh_dir(&a.dir, "gc");
    let log = open(a, &dir)?;
    for l in 0..16_000u64 {
        log.set_master_key(l, &[1; 20]).map_err(|e| e.to_string())?;
        for e in 0..4 {
            log.add_entry(l, e, payload(l, e, 100))
                .map_err(|e| e.to_string())?;
        }
    }
    log.flush().map_err(|e| e.to_string())?;
    let token = log.begin_gc_scan();
    let t = Instant::now();
    let rep = log.gc(token, &|_| false).map_err(|e| e.to_string())?;
    println!(
        "gc: dropped {} ledgers in {:.1} ms ({} segments removed, {} bytes reclaimed)",
        rep.deleted_ledgers.len(),
        t.elapsed().as_secs_f64() * 1e3,
        rep.removed_segments,
        rep.reclaimed_bytes
    );
    drop(log);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

fn peak_rss_kib() -> u64 {
    status_kib("VmHWM:")
}

/// A `/proc/self/status` field in KiB (0 when unreadable).
fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

/// Returns freed heap memory to the OS, then resets VmHWM to the current RSS
/// (`/proc/self/clear_refs`, value 5; Linux 4.0+).
fn reset_peak_rss() {
    // SAFETY: malloc_trim only releases free memory of the glibc allocator.
    unsafe { libc::malloc_trim(0) };
    if let Err(e) = std::fs::write("/proc/self/clear_refs", "5") {
        eprintln!("note: could not reset the peak RSS ({e}); it includes the pre-built payloads");
    }
}

fn main() {
    let a = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let run = || -> Result<(), String> {
        if a.runs("flush") {
            bench_flush(&a, 64 << 10, true)?;
            bench_flush(&a, 5 << 20, true)?;
        }
        // The pre-built payloads (256 MiB x scale) are gone: start the peak-RSS
        // figure afresh, so that it measures the entry log and not the bench.
        reset_peak_rss();
        let rss_at_reset = status_kib("VmRSS:") / 1024;
        let mut phase_peaks = Vec::new();
        if a.runs("random") {
            bench_random_reads(&a, 4096)?;
            bench_random_reads(&a, 4000)?;
            phase_peaks.push(format!("random {}", peak_rss_kib() / 1024));
        }
        if a.runs("catchup") {
            bench_catch_up(&a, 1 << 10)?;
            bench_catch_up(&a, 64 << 10)?;
            phase_peaks.push(format!("catch-up {}", peak_rss_kib() / 1024));
        }
        if a.runs("gc") {
            bench_gc(&a)?;
            phase_peaks.push(format!("gc {}", peak_rss_kib() / 1024));
        }
        if a.runs("flush") {
            bench_flush(&a, 64 << 10, false)?;
            phase_peaks.push(format!("64 KiB flush {}", peak_rss_kib() / 1024));
            bench_flush(&a, 5 << 20, false)?;
            phase_peaks.push(format!("5 MiB flush {}", peak_rss_kib() / 1024));
        }
        let c = config(&a);
        println!(
            "peak RSS {} MiB (since the throughput passes; {rss_at_reset} MiB at that point; peak after each pass, MiB: {}); configured write cache {} MiB + read cache {} MiB (+ one 64 MiB max entry)",
            peak_rss_kib() / 1024,
            phase_peaks.join(", "),
            c.write_cache_bytes >> 20,
            c.read_cache_bytes >> 20
        );
        Ok(())
    };
    let r = run();
    let _ = std::fs::remove_dir_all(a.dir.join("entrylog-bench"));
    if let Err(e) = r {
        eprintln!("entrylog_bench failed: {e}");
        std::process::exit(1);
    }
}
