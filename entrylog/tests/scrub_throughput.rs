//! Throughput of an unlimited scrub pass on the real file system (O_DIRECT, the entry
//! log's default), for docs/benchmarks.md "Scrubber". Ignored by default (it writes
//! `SCRUB_MB` MB, 400 by default, under `$TMPDIR`); run it in release:
//! `cargo test --release -p bk-entrylog --test scrub_throughput -- --ignored --nocapture`.
//! Prints one line per pass (bytes, entries, seconds, MB/s) and the median; asserts only
//! that every pass read everything and found nothing.

mod common;

use bk_disk::{open_disk, DiskConfig};
use bk_entrylog::{Cancel, DiskFactory, EntryLog, EntryLogConfig, ScrubProgress, ScrubRate};
use std::sync::Arc;
use std::time::Instant;

fn factory() -> DiskFactory {
    Arc::new(|| open_disk(&DiskConfig::default()).map(|o| o.disk))
}

#[test]
#[ignore]
fn unlimited_scrub_throughput() {
    let mb: u64 = std::env::var("SCRUB_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(400);
    let len: usize = std::env::var("SCRUB_ENTRY_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4096);
    let tmp = tempfile::tempdir().unwrap();
    let dirs = vec![tmp.path().to_path_buf()];
    let cfg = EntryLogConfig::default();
    let n = mb * 1_000_000 / len as u64;
    {
        let log = EntryLog::open(dirs.clone(), cfg.clone(), factory()).unwrap();
        for i in 0..n {
            let (l, e) = (1 + i / 10_000, i % 10_000);
            log.add_entry(l, e, common::entry(l, e, e as i64 - 1, len - 24, i))
                .unwrap();
        }
        log.close().unwrap();
    }
    let log = EntryLog::open(dirs, cfg, factory()).unwrap();
    let mut rates = Vec::new();
    for pass in 0..3 {
        let started = Instant::now();
        let r = log
            .scrub(
                ScrubRate::default(),
                &Cancel::new(),
                &ScrubProgress::default(),
            )
            .unwrap();
        let secs = started.elapsed().as_secs_f64();
        assert_eq!((r.entries, r.findings()), (n, 0), "{r:?}");
        let rate = r.bytes as f64 / 1e6 / secs;
        println!(
            "pass {pass}: {} bytes, {} entries of {len} B, {} segments, {secs:.2} s, {rate:.0} MB/s",
            r.bytes, r.entries, r.segments
        );
        rates.push(rate);
    }
    rates.sort_by(f64::total_cmp);
    println!(
        "median {:.0} MB/s (range {:.0}-{:.0})",
        rates[1], rates[0], rates[2]
    );
}
