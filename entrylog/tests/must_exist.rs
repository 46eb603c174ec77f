//! The segment list of `ledgers.state` (entrylog/src/must_exist.rs) on the simulated
//! disk: power loss at the two crash points its ordering rests on, and the upgrade
//! from a state file without a list.
//! - A flush syncs and renames its segment before the state write that lists it: a
//!   crash between the two (or before the rename) starts normally; the segment is
//!   loaded unlisted and listed by the next state write.
//! - GC and compaction write a state without a segment before they unlink it (and
//!   compaction writes its output before that state): a crash
//!   between the two starts normally, the leftover file is removed at start-up and the
//!   deleted ledger stays deleted; a crash at that state write starts normally too.
//!   (The reverse order, unlink then state, fails both: a crash at the unlink brings
//!   the deleted ledger back, its tombstone not yet durable, and a crash at the state
//!   write leaves a listed segment missing, a false refusal. Swapping the two steps in
//!   `remove_dead_segments` fails both tests that way.)
//! - A format-1 state file (no list) is rewritten listing the segments at the first
//!   start, so a segment deleted after that start refuses the next one, even when the
//!   bookie crashed before any flush.

mod common;

use bk_disk::{Checked, Completion, Disk, FileId, Op, OpenOptions, SimFs, SpaceInfo};
use bk_entrylog::format::StateFile;
use bk_entrylog::{DiskFactory, EntryLog, EntrySelector, Error};
use common::*;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A namespace operation a crash point is named by.
enum Call<'a> {
    Open(&'a Path),
    Remove(&'a Path),
    /// The source of a rename.
    Rename(&'a Path),
}

type Point = Arc<dyn Fn(&Call<'_>) -> bool + Send + Sync>;

/// A disk that crashes the simulated file system just before the first call `point`
/// matches (that call then fails with ESTALE, like every later one).
struct CrashAt {
    inner: Checked<bk_disk::SimDisk>,
    fs: SimFs,
    point: Point,
    armed: Arc<AtomicBool>,
    hit: Arc<AtomicBool>,
}

impl CrashAt {
    fn check(&self, call: Call<'_>) {
        if self.armed.load(Ordering::SeqCst)
            && (self.point)(&call)
            && !self.hit.swap(true, Ordering::SeqCst)
        {
            self.fs.crash();
        }
    }
}

impl Disk for CrashAt {
    fn open(&mut self, path: &Path, opts: OpenOptions) -> io::Result<FileId> {
        self.check(Call::Open(path));
        self.inner.open(path, opts)
    }
    fn close(&mut self, file: FileId) -> io::Result<()> {
        self.inner.close(file)
    }
    fn file_len(&mut self, file: FileId) -> io::Result<u64> {
        self.inner.file_len(file)
    }
    fn set_len(&mut self, file: FileId, len: u64) -> io::Result<()> {
        self.inner.set_len(file, len)
    }
    fn remove(&mut self, path: &Path) -> io::Result<()> {
        self.check(Call::Remove(path));
        self.inner.remove(path)
    }
    fn rename(&mut self, from: &Path, to: &Path) -> io::Result<()> {
        self.check(Call::Rename(from));
        self.inner.rename(from, to)
    }
    fn sync_dir(&mut self, dir: &Path) -> io::Result<()> {
        self.inner.sync_dir(dir)
    }
    fn create_dir_all(&mut self, dir: &Path) -> io::Result<()> {
        self.inner.create_dir_all(dir)
    }
    fn list_dir(&mut self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        self.inner.list_dir(dir)
    }
    fn space(&mut self, dir: &Path) -> io::Result<SpaceInfo> {
        self.inner.space(dir)
    }
    fn submit(&mut self, user_data: u64, op: Op) -> io::Result<()> {
        self.inner.submit(user_data, op)
    }
    fn reap(&mut self, min: usize) -> Vec<Completion> {
        self.inner.reap(min)
    }
    fn in_flight(&self) -> usize {
        self.inner.in_flight()
    }
}

struct Crashing {
    factory: DiskFactory,
    armed: Arc<AtomicBool>,
    hit: Arc<AtomicBool>,
}

fn crash_at(fs: &SimFs, point: Point) -> Crashing {
    let armed = Arc::new(AtomicBool::new(false));
    let hit = Arc::new(AtomicBool::new(false));
    let (f, a, h) = (fs.clone(), armed.clone(), hit.clone());
    let factory: DiskFactory = Arc::new(move || {
        Ok(Box::new(CrashAt {
            inner: Checked::new(f.disk()),
            fs: f.clone(),
            point: point.clone(),
            armed: a.clone(),
            hit: h.clone(),
        }) as Box<dyn Disk>)
    });
    Crashing {
        factory,
        armed,
        hit,
    }
}

fn name(p: &Path) -> &str {
    p.file_name().and_then(|n| n.to_str()).unwrap_or("")
}

fn data(l: u64, e: u64) -> bk_entrylog::Bytes {
    entry(l, e, e as i64 - 1, 300, l * 1000 + e)
}

fn add_flushed(log: &EntryLog, l: u64, range: std::ops::Range<u64>) {
    log.set_master_key(l, &[l as u8; 20]).unwrap();
    for e in range {
        log.add_entry(l, e, data(l, e)).unwrap();
    }
    log.flush().unwrap();
}

fn state_path() -> PathBuf {
    dirs()[0].join("ledgers.state")
}

fn durable_state(fs: &SimFs) -> StateFile {
    StateFile::decode(&fs.durable_contents(&state_path()).unwrap()).unwrap()
}

fn listed(fs: &SimFs) -> Vec<u64> {
    let s = durable_state(fs);
    s.segments
        .expect("format 2 has a list")
        .iter()
        .map(|r| r.segment_id)
        .collect()
}

fn segment_files(fs: &SimFs) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs
        .durable_list_dir(&dirs()[0])
        .unwrap()
        .into_iter()
        .filter(|p| name(p).ends_with(".seg"))
        .map(|p| dirs()[0].join(name(&p)))
        .collect();
    v.sort();
    v
}

fn remove_durably(fs: &SimFs, path: &Path) {
    let mut d = fs.disk();
    d.remove(path).unwrap();
    d.sync_dir(path.parent().unwrap()).unwrap();
}

fn reopen(fs: &SimFs) -> bk_entrylog::Result<EntryLog> {
    EntryLog::open(dirs(), small_config(), sim_factory(fs))
}

fn refused_path(r: bk_entrylog::Result<EntryLog>) -> PathBuf {
    match r {
        Err(Error::Corruption { path, .. }) => path,
        Err(e) => panic!("expected a refusal naming a file, got {e}"),
        Ok(log) => panic!(
            "start-up was not refused; entry 1/0 answers {:?}",
            log.get_entry(1, EntrySelector::Id(0)).err()
        ),
    }
}

fn assert_entries(log: &EntryLog, l: u64, range: std::ops::Range<u64>, ctx: &str) {
    for e in range {
        let got = log
            .get_entry(l, EntrySelector::Id(e))
            .unwrap_or_else(|err| panic!("{ctx}: {l}/{e}: {err}"));
        assert_eq!(got, data(l, e), "{ctx}: {l}/{e}");
    }
}

/// Power loss in a flush of ledger 2 after ledger 1's flush, at `point`; the flush's
/// entries are not checkpointed (the journal would replay them).
/// `segment_durable`: the crash point is after the segment's rename and directory sync.
fn crash_in_second_flush(point: Point, segment_durable: bool, ctx: &str) {
    let fs = SimFs::new(7);
    let c = crash_at(&fs, point);
    let log = EntryLog::open(dirs(), small_config(), c.factory.clone()).unwrap();
    add_flushed(&log, 1, 0..20);
    c.armed.store(true, Ordering::SeqCst);
    log.set_master_key(2, &[2; 20]).unwrap();
    for e in 0..20 {
        log.add_entry(2, e, data(2, e)).unwrap();
    }
    assert!(log.flush().is_err(), "{ctx}: the flush survived the crash");
    assert!(
        c.hit.load(Ordering::SeqCst),
        "{ctx}: crash point never reached"
    );
    drop(log);
    let log = reopen(&fs).unwrap_or_else(|e| panic!("{ctx}: false refusal: {e}"));
    assert_entries(&log, 1, 0..20, ctx);
    if segment_durable {
        assert_entries(&log, 2, 0..20, ctx);
    }
    // Whatever ledger 2's segment left is either loaded whole or gone; the next flush
    // lists every segment loaded.
    log.add_entry(3, 0, data(3, 0)).unwrap();
    log.flush().unwrap();
    let files = segment_files(&fs);
    let ids: Vec<u64> = files
        .iter()
        .map(|p| bk_entrylog::parse_segment_name(name(p)).unwrap().0)
        .collect();
    assert_eq!(listed(&fs), ids, "{ctx}: the list is not the files");
    drop(log);
    reopen(&fs).unwrap_or_else(|e| panic!("{ctx}: reopen after the next flush: {e}"));
}

#[test]
fn crash_before_the_segment_rename_starts_normally() {
    crash_in_second_flush(
        Arc::new(|c| matches!(c, Call::Rename(from) if name(from).ends_with(".seg.tmp"))),
        false,
        "crash before the segment's rename",
    );
}

#[test]
fn crash_between_the_segment_and_the_state_write_starts_normally() {
    crash_in_second_flush(
        Arc::new(|c| matches!(c, Call::Open(p) if name(p) == "ledgers.state.tmp")),
        true,
        "crash after the segment, before the state write",
    );
}

/// Power loss while GC removes ledger 1's segment (ledger 1 deleted), at `point`.
/// `deletion_durable`: the crash point is after the state write with its tombstone.
fn crash_in_segment_removal(point: Point, deletion_durable: bool, ctx: &str) {
    let fs = SimFs::new(11);
    let c = crash_at(&fs, point);
    let log = EntryLog::open(dirs(), small_config(), c.factory.clone()).unwrap();
    add_flushed(&log, 1, 0..20);
    add_flushed(&log, 2, 0..20);
    let doomed = segment_files(&fs)[0].clone();
    c.armed.store(true, Ordering::SeqCst);
    assert!(
        log.delete_ledger(1).is_err(),
        "{ctx}: the deletion survived"
    );
    assert!(
        c.hit.load(Ordering::SeqCst),
        "{ctx}: crash point never reached"
    );
    drop(log);
    assert!(
        segment_files(&fs).contains(&doomed),
        "{ctx}: the crash should leave the file"
    );
    let log = reopen(&fs).unwrap_or_else(|e| panic!("{ctx}: false refusal: {e}"));
    match log.get_entry(1, EntrySelector::Id(0)) {
        Err(Error::NoLedger(1)) => {}
        // Not acknowledged (delete_ledger failed): GC deletes it again.
        Ok(_) if !deletion_durable => assert_entries(&log, 1, 0..20, ctx),
        other => panic!(
            "{ctx}: the deleted ledger came back: {:?}",
            other.map(|b| b.len())
        ),
    }
    assert_entries(&log, 2, 0..20, ctx);
    if deletion_durable {
        assert!(
            !segment_files(&fs).contains(&doomed),
            "{ctx}: start-up did not remove the dead file"
        );
    }
    drop(log);
    reopen(&fs).unwrap_or_else(|e| panic!("{ctx}: a second start: {e}"));
}

#[test]
fn crash_between_the_state_write_and_the_unlink() {
    crash_in_segment_removal(
        Arc::new(|c| matches!(c, Call::Remove(p) if name(p).ends_with(".seg"))),
        true,
        "crash at the unlink, after the state write",
    );
}

#[test]
fn crash_at_the_state_write_of_a_segment_removal() {
    crash_in_segment_removal(
        Arc::new(|c| matches!(c, Call::Open(p) if name(p) == "ledgers.state.tmp")),
        false,
        "crash at the state write of the removal",
    );
}

/// Power loss while compaction replaces ledger 1's segments (entry 5 re-added later,
/// so its first copy is dead), at `point`. Before the state write compaction returns an
/// error (nothing it did was promised); at the unlink of an input it returns Ok, since its
/// output and the state are durable and a file it cannot remove is counted and retried by
/// a later round (`bookie_RECLAIM_FAILED_TO_DELETE`). Either way every entry must read
/// back, and no start may be refused.
fn crash_in_compaction(point: Point, fails: bool, ctx: &str) {
    let fs = SimFs::new(13);
    let c = crash_at(&fs, point);
    let log = EntryLog::open(dirs(), small_config(), c.factory.clone()).unwrap();
    add_flushed(&log, 1, 0..20);
    let dup = entry(1, 5, 4, 500, 77);
    log.add_entry(1, 5, dup.clone()).unwrap();
    log.flush().unwrap();
    c.armed.store(true, Ordering::SeqCst);
    let result = log.compact(Some(0.99));
    assert_eq!(
        result.is_err(),
        fails,
        "{ctx}: compaction answered {:?}",
        result.map(|_| ())
    );
    assert!(
        c.hit.load(Ordering::SeqCst),
        "{ctx}: crash point never reached"
    );
    drop(log);
    let log = reopen(&fs).unwrap_or_else(|e| panic!("{ctx}: false refusal: {e}"));
    for e in 0..20 {
        let got = log.get_entry(1, EntrySelector::Id(e)).unwrap();
        assert_eq!(
            got,
            if e == 5 { dup.clone() } else { data(1, e) },
            "{ctx}: 1/{e}"
        );
    }
    drop(log);
    reopen(&fs).unwrap_or_else(|e| panic!("{ctx}: a second start: {e}"));
}

#[test]
fn crash_between_the_compaction_output_and_the_state_write() {
    crash_in_compaction(
        Arc::new(|c| matches!(c, Call::Open(p) if name(p) == "ledgers.state.tmp")),
        true,
        "crash after the compaction output, at the state write",
    );
}

#[test]
fn crash_between_the_compaction_state_write_and_the_unlink() {
    crash_in_compaction(
        Arc::new(|c| matches!(c, Call::Remove(p) if name(p).ends_with(".seg"))),
        false,
        "crash at the unlink of a compacted segment",
    );
}

/// `ledgers.state` in format 1: the format-2 file without its segment list.
fn as_format_1(s: &StateFile) -> Vec<u8> {
    let mut v1 = s.clone();
    v1.segments = Some(Vec::new());
    let b = v1.encode();
    // Header: magic 8, version 4, crc 4, body_len 8; the body ends with a u32 count 0.
    let body = &b[24..b.len() - 4];
    let mut out = b[..8].to_vec();
    out.extend_from_slice(&1u32.to_le_bytes());
    out.extend_from_slice(&crc32c::crc32c(body).to_le_bytes());
    out.extend_from_slice(&(body.len() as u64).to_le_bytes());
    out.extend_from_slice(body);
    let back = StateFile::decode(&out).expect("format 1 decodes");
    assert_eq!(back.segments, None);
    out
}

#[test]
fn an_upgraded_state_file_lists_the_segments_from_the_first_start() {
    let fs = SimFs::new(3);
    let log = EntryLog::open(dirs(), small_config(), sim_factory(&fs)).unwrap();
    add_flushed(&log, 1, 0..20);
    add_flushed(&log, 2, 0..20);
    log.set_fenced(2).unwrap();
    log.flush().unwrap();
    drop(log);
    let old = as_format_1(&durable_state(&fs));
    bk_disk::small_file::replace_file(&mut fs.disk(), &state_path(), &old, false).unwrap();
    assert_eq!(durable_state(&fs).segments, None);

    // First start of this version; power fails before any flush.
    let log = reopen(&fs).expect("a format-1 state file starts");
    fs.crash();
    drop(log);
    let files = segment_files(&fs);
    assert_eq!(files.len(), 2, "{files:?}");
    assert_eq!(
        durable_state(&fs).segments.map(|l| l.len()),
        Some(2),
        "the first start recorded no list"
    );

    remove_durably(&fs, &files[1]);
    assert_eq!(refused_path(reopen(&fs)), files[1]);
}

#[test]
fn an_upgrade_on_a_full_disk_still_starts_and_lists_the_segments_later() {
    let fs = SimFs::new(5);
    let log = EntryLog::open(dirs(), small_config(), sim_factory(&fs)).unwrap();
    add_flushed(&log, 1, 0..20);
    drop(log);
    let old = as_format_1(&durable_state(&fs));
    bk_disk::small_file::replace_file(&mut fs.disk(), &state_path(), &old, false).unwrap();

    fs.set_faults(bk_disk::Faults {
        enospc: 1.0,
        ..Default::default()
    });
    let log = reopen(&fs).unwrap_or_else(|e| panic!("a full disk refused the upgrade: {e}"));
    assert_entries(&log, 1, 0..20, "full disk");
    assert_eq!(durable_state(&fs).segments, None, "written on a full disk?");

    fs.set_faults(bk_disk::Faults::default());
    log.check_disk_usage().unwrap();
    add_flushed(&log, 2, 0..5);
    assert_eq!(listed(&fs).len(), 2, "the next state write has no list");
}

/// An older copy of `ledgers.state` put back (from before a fence) is refused, naming
/// the file, once the caller passes the epoch it recorded after the last flush
/// (`EntryLogConfig::min_state_epoch`, the bookie's journal checkpoint); the same copy
/// with no requirement, or the newest file with it, opens.
#[test]
fn a_state_file_older_than_the_recorded_epoch_is_refused() {
    let fs = SimFs::new(41);
    let log = EntryLog::open(dirs(), small_config(), sim_factory(&fs)).unwrap();
    add_flushed(&log, 1, 0..5);
    let older = fs.durable_contents(&state_path()).unwrap();
    assert!(log.set_fenced(1).unwrap());
    log.flush().unwrap();
    let recorded = log.durable_state_epoch();
    assert!(recorded > StateFile::decode(&older).unwrap().epoch);
    log.close().unwrap();
    let with_min = |min| {
        let cfg = bk_entrylog::EntryLogConfig {
            min_state_epoch: min,
            ..small_config()
        };
        EntryLog::open(dirs(), cfg, sim_factory(&fs))
    };
    // The newest file meets the requirement.
    with_min(recorded).unwrap().close().unwrap();
    // The older copy put back.
    let mut d = fs.disk();
    bk_disk::replace_file(&mut d, &state_path(), &older, false).unwrap();
    drop(d);
    assert_eq!(refused_path(with_min(recorded)), state_path());
    // Without the requirement it opens, and the fence is gone: what the check prevents.
    let log = with_min(0).unwrap();
    assert!(
        log.set_fenced(1).unwrap(),
        "the older copy forgot the fence"
    );
}
