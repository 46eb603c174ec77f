//! Shared helpers for entry-log tests: simulated-disk factories (optionally crashing
//! the simulated file system after the Nth disk call), small configs and entry
//! builders that carry a LAC field like real BookKeeper entries.
#![allow(dead_code)]

use bk_disk::{Checked, Completion, Disk, FileId, Op, OpenOptions, SimFs, SpaceInfo};
use bk_entrylog::{Bytes, DiskFactory, EntryLogConfig};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A disk that counts every call across all handles sharing `counter`, and crashes
/// the simulated file system when the count reaches `crash_at`.
pub struct CrashingDisk {
    inner: Checked<bk_disk::SimDisk>,
    fs: SimFs,
    counter: Arc<AtomicU64>,
    crash_at: Arc<AtomicU64>,
}

impl CrashingDisk {
    fn tick(&self) {
        let n = self.counter.fetch_add(1, Ordering::SeqCst) + 1;
        if n == self.crash_at.load(Ordering::SeqCst) {
            self.fs.crash();
        }
    }
}

impl Disk for CrashingDisk {
    fn open(&mut self, path: &Path, opts: OpenOptions) -> io::Result<FileId> {
        self.tick();
        self.inner.open(path, opts)
    }
    fn close(&mut self, file: FileId) -> io::Result<()> {
        self.inner.close(file)
    }
    fn file_len(&mut self, file: FileId) -> io::Result<u64> {
        self.inner.file_len(file)
    }
    fn set_len(&mut self, file: FileId, len: u64) -> io::Result<()> {
        self.tick();
        self.inner.set_len(file, len)
    }
    fn remove(&mut self, path: &Path) -> io::Result<()> {
        self.tick();
        self.inner.remove(path)
    }
    fn rename(&mut self, from: &Path, to: &Path) -> io::Result<()> {
        self.tick();
        self.inner.rename(from, to)
    }
    fn sync_dir(&mut self, dir: &Path) -> io::Result<()> {
        self.tick();
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
        self.tick();
        self.inner.submit(user_data, op)
    }
    fn reap(&mut self, min: usize) -> Vec<Completion> {
        self.inner.reap(min)
    }
    fn in_flight(&self) -> usize {
        self.inner.in_flight()
    }
}

/// Handles on `fs`, wrapped in the usage checker.
pub fn sim_factory(fs: &SimFs) -> DiskFactory {
    let fs = fs.clone();
    Arc::new(move || Ok(Box::new(Checked::new(fs.disk())) as Box<dyn Disk>))
}

/// Handles that crash `fs` at the `crash_at`-th counted call (0 = never).
pub fn crashing_factory(
    fs: &SimFs,
    counter: Arc<AtomicU64>,
    crash_at: Arc<AtomicU64>,
) -> DiskFactory {
    let fs = fs.clone();
    Arc::new(move || {
        Ok(Box::new(CrashingDisk {
            inner: Checked::new(fs.disk()),
            fs: fs.clone(),
            counter: counter.clone(),
            crash_at: crash_at.clone(),
        }) as Box<dyn Disk>)
    })
}

pub fn dirs() -> Vec<PathBuf> {
    vec![PathBuf::from("/ledgers/current")]
}

/// Small caches so tests exercise swaps, flush-through and read-ahead.
pub fn small_config() -> EntryLogConfig {
    EntryLogConfig {
        write_cache_bytes: 256 * 1024,
        read_cache_bytes: 128 * 1024,
        readahead_entries: 8,
        readahead_bytes: 64 * 1024,
        max_throttle: std::time::Duration::from_secs(5),
        flush_write_bytes: 16 * 1024,
        flush_queue_depth: 3,
        readers: 2,
        direct_io: false,
        compaction_rate_bytes_per_sec: 0,
        ..EntryLogConfig::default()
    }
}

/// An entry as a BookKeeper client builds it: ledger id, entry id, LAC (big-endian)
/// then a payload of `len` bytes derived from `seed`.
pub fn entry(ledger: u64, entry: u64, lac: i64, len: usize, seed: u64) -> Bytes {
    let mut v = Vec::with_capacity(24 + len);
    v.extend_from_slice(&(ledger as i64).to_be_bytes());
    v.extend_from_slice(&(entry as i64).to_be_bytes());
    v.extend_from_slice(&lac.to_be_bytes());
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    for _ in 0..len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.push(x as u8);
    }
    Bytes::from(v)
}
