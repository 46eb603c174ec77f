//! The scrub pass over a whole entry log on the simulated disk: a flipped entry byte is
//! found, reported as a read's finding is (counted once, listed once with `FoundBy::Scrub`)
//! and found again by every pass; a flipped footer byte is an index finding; a segment
//! removed by deleting its ledger while the pass runs is skipped, not reported; and the
//! rate limit holds on a simulated clock (a read starts only once the rate allows what
//! the pass will have read after it).

mod common;

use bk_disk::SimFs;
use bk_entrylog::format::Trailer;
use bk_entrylog::scrub::{Clock, Pace, RatedPace};
use bk_entrylog::{
    EntryLog, EntryLogMetrics as M, EntrySelector, Error, FoundBy, ScrubProgress, ScrubRate,
};
use common::*;
use std::path::{Path, PathBuf};
use std::time::Duration;

const LEN: usize = 1000;

fn open(fs: &SimFs) -> EntryLog {
    EntryLog::open(dirs(), small_config(), sim_factory(fs)).expect("open")
}

/// Adds entries `0..n` of `ledger` and flushes them into one segment.
fn add_flushed(log: &EntryLog, ledger: u64, n: u64) {
    log.set_master_key(ledger, b"k").unwrap();
    for e in 0..n {
        log.add_entry(ledger, e, entry(ledger, e, e as i64 - 1, LEN, e))
            .unwrap();
    }
    log.flush().unwrap();
}

fn segment_files(fs: &SimFs) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs
        .durable_list_dir(&dirs()[0])
        .unwrap()
        .into_iter()
        .map(|p| dirs()[0].join(p))
        .filter(|p| p.extension().is_some_and(|x| x == "seg"))
        .collect();
    v.sort();
    v
}

/// File offset of `bytes` in `path`.
fn offset_of(fs: &SimFs, path: &Path, bytes: &[u8]) -> u64 {
    let c = fs.volatile_contents(path).unwrap();
    c.windows(bytes.len()).position(|w| w == bytes).unwrap() as u64
}

fn unpaced_scrub(log: &EntryLog) -> bk_entrylog::ScrubReport {
    log.scrub(
        ScrubRate::default(),
        &bk_entrylog::Cancel::new(),
        &ScrubProgress::default(),
    )
    .unwrap()
}

#[test]
fn a_flipped_entry_is_found_reported_once_and_found_by_every_pass() {
    let fs = SimFs::new(1);
    let log = open(&fs);
    add_flushed(&log, 1, 100);
    let seg = segment_files(&fs).remove(0);
    let at = offset_of(&fs, &seg, &entry(1, 50, 49, LEN, 50));
    fs.flip_bit(&seg, at + 100, 2).unwrap();

    let r = unpaced_scrub(&log);
    assert_eq!(
        (r.segments, r.entries, r.corrupt_entries),
        (1, 100, 1),
        "{r:?}"
    );
    assert_eq!(r.corrupt_indexes, 0);
    let (list, unlisted) = log.corruptions();
    assert_eq!(unlisted, 0);
    assert_eq!(list.len(), 1, "{list:?}");
    let c = &list[0];
    assert_eq!((c.ledger, c.entry, c.offset), (Some(1), Some(50), at));
    assert_eq!(c.found_by, FoundBy::Scrub);
    assert_eq!(c.file, seg);
    let m = log.metrics();
    assert_eq!(M::get(&m.corrupt_entries), 1);

    // Every pass finds it again; it is counted and listed once, and a read of it
    // afterwards (an EIO) does not add to either.
    let r = unpaced_scrub(&log);
    assert_eq!(r.corrupt_entries, 1);
    assert!(matches!(
        log.get_entry(1, EntrySelector::Id(50)),
        Err(Error::Corruption { .. })
    ));
    assert_eq!(log.corruptions().0.len(), 1);
    assert_eq!(M::get(&m.corrupt_entries), 1);
    assert_eq!(M::get(&m.scrub_findings), 2);
    assert_eq!(M::get(&m.scrub_passes), 2);
    assert!(M::get(&m.scrub_last_completed_unix_ms) > 0);
    assert!(M::get(&m.scrub_bytes) >= 2 * 100 * LEN as u64);
}

#[test]
fn a_clean_log_scrubs_clean_and_a_flipped_footer_is_an_index_finding() {
    let fs = SimFs::new(2);
    let log = open(&fs);
    add_flushed(&log, 1, 40);
    add_flushed(&log, 2, 40);
    let r = unpaced_scrub(&log);
    assert_eq!((r.segments, r.entries, r.findings()), (2, 80, 0), "{r:?}");
    assert!(log.corruptions().0.is_empty());

    let seg = segment_files(&fs).remove(1);
    let c = fs.volatile_contents(&seg).unwrap();
    let t = Trailer::decode(&c, c.len() as u64).unwrap();
    fs.flip_bit(&seg, t.footer_offset + 3, 0).unwrap();
    let r = unpaced_scrub(&log);
    assert_eq!((r.corrupt_indexes, r.corrupt_entries), (1, 0), "{r:?}");
    let (list, _) = log.corruptions();
    assert_eq!(list.len(), 1);
    assert_eq!((list[0].ledger, list[0].offset), (None, t.footer_offset));
    assert!(list[0].detail.contains("footer"), "{}", list[0].detail);
    assert_eq!(M::get(&log.metrics().corrupt_segment_indexes), 1);
    // Its entries are still served from the index read at start-up.
    assert!(log.get_entry(2, EntrySelector::Id(7)).is_ok());
}

/// Deletes `ledger` at the `at`-th wait of the pass.
struct DeleteAt<'a> {
    log: &'a EntryLog,
    ledger: u64,
    at: usize,
    calls: usize,
}

impl Pace for DeleteAt<'_> {
    fn wait(&mut self, _: u64, _: u64) -> bool {
        self.calls += 1;
        if self.calls == self.at {
            assert!(self.log.delete_ledger(self.ledger).unwrap());
        }
        true
    }
}

#[test]
fn a_segment_removed_during_the_pass_is_skipped_not_reported() {
    // Wait 1: before the first segment's trailer (the second is removed before its
    // turn); wait 5: after the second segment's trailer was read (removed during its
    // check: its findings are dropped). Segment 1 has 3 waits: trailer, footer, one chunk.
    for at in [1, 5] {
        let fs = SimFs::new(3);
        let log = open(&fs);
        add_flushed(&log, 1, 10);
        add_flushed(&log, 2, 10);
        let segs = segment_files(&fs);
        assert_eq!(segs.len(), 2);
        let off = offset_of(&fs, &segs[1], &entry(2, 3, 2, LEN, 3));
        fs.flip_bit(&segs[1], off + 1, 0).unwrap();
        let mut pace = DeleteAt {
            log: &log,
            ledger: 2,
            at,
            calls: 0,
        };
        let r = log
            .scrub_paced(&mut pace, 64 * 1024, &ScrubProgress::default())
            .unwrap();
        assert_eq!((r.segments, r.skipped), (1, 1), "at {at}: {r:?}");
        assert_eq!(r.findings(), 0, "at {at}: {r:?}");
        assert!(log.corruptions().0.is_empty(), "at {at}");
        assert_eq!(M::get(&log.metrics().corrupt_entries), 0);
        assert!(segment_files(&fs).len() == 1, "the segment was removed");
    }
}

/// A simulated clock: sleeping advances it.
#[derive(Default)]
struct SimClock {
    now: Duration,
}

impl Clock for SimClock {
    fn elapsed(&self) -> Duration {
        self.now
    }
    fn sleep(&mut self, d: Duration) -> bool {
        self.now += d;
        true
    }
    fn cancelled(&self) -> bool {
        false
    }
}

/// The rated pace, recording (bytes read once the next read is done, time the wait
/// returned, i.e. when that read starts).
struct Recording {
    inner: RatedPace<SimClock>,
    seen: Vec<(u64, Duration)>,
}

impl Pace for Recording {
    fn wait(&mut self, bytes: u64, entries: u64) -> bool {
        let go = self.inner.wait(bytes, entries);
        self.seen.push((bytes, self.inner.clock.now));
        go
    }
}

#[test]
fn the_byte_rate_holds_on_a_simulated_clock() {
    let fs = SimFs::new(4);
    let log = open(&fs);
    for l in 1..=4 {
        add_flushed(&log, l, 100); // about 100 KB a segment
    }
    let rate = 100_000; // bytes/s
    let chunk = 16 * 1024;
    let mut pace = Recording {
        inner: RatedPace {
            rate: ScrubRate {
                bytes_per_sec: rate,
                entries_per_sec: 0.0,
            },
            clock: SimClock::default(),
        },
        seen: Vec::new(),
    };
    let progress = ScrubProgress::default();
    let r = log.scrub_paced(&mut pace, chunk, &progress).unwrap();
    assert_eq!((r.segments, r.entries, r.findings()), (4, 400, 0), "{r:?}");
    // A read starts only when what the pass will have read after it is within what the
    // rate allows by then: never ahead of the rate.
    for (bytes, t) in &pace.seen {
        assert!(
            *bytes as f64 <= rate as f64 * t.as_secs_f64() + 1.0,
            "{bytes} bytes read by {t:?}"
        );
    }
    let end = pace.inner.clock.now.as_secs_f64();
    let floor = r.bytes as f64 / rate as f64;
    assert!(
        end + 1e-6 >= floor,
        "{} bytes in {end} s simulated",
        r.bytes
    );
    assert!(
        end <= r.bytes as f64 / rate as f64 + 0.2,
        "not slower than the rate: {end}"
    );
    assert_eq!(
        progress
            .bytes_done
            .load(std::sync::atomic::Ordering::Relaxed),
        r.bytes
    );
}
