//! Power cut: the bookkeeping that lets the chaos layer undo, on a real file system,
//! everything written since each file's last successful sync, and the cut itself.
//!
//! While a power cut is possible (a `power_cut` fault was ever added: [`Power::arm`]),
//! every [`ChaosDisk`](super::ChaosDisk) of the process keeps, in the shared [`Power`]:
//!
//! - per file (by path), a [`FileRecord`]: the file's length at its last successful sync
//!   (`synced_len`) and the *pre-images* of the sectors below it that were overwritten
//!   since: before a write (or a shrinking `set_len`) reaches the file, the layer reads
//!   the sectors it will change and keeps them, once per sector and sync *epoch* (an
//!   epoch ends when a sync of the file is submitted). A successful sync that covers
//!   every write (no write of that file in flight when it was submitted, the `Disk`
//!   contract's condition for a sync to cover a write) drops the pre-images of its epoch
//!   and earlier and moves `synced_len` to the length when it was submitted. A failed
//!   sync drops nothing;
//! - the files created since their directory's last `sync_dir` (a power cut may forget
//!   their directory entries; the simulated disk always does);
//! - how many writes (write, write+fdatasync, fallocate, truncate) are in flight through
//!   the layer, counted from *before* their pre-image is read, so that a cut beginning on
//!   another thread meanwhile waits for the write to land and then undoes it (a write that
//!   has passed the check can no longer slip in after the restore).
//!
//! The cut ([`ChaosDisk`](super::ChaosDisk) runs it when a `power_cut` fault fires):
//! every layer call from then on waits and fails (no completion is handed out, so no sync
//! that completed after the cut began is ever acknowledged); the in-flight writes are
//! waited for (each thread drains its own disk when it next enters the layer, bounded by
//! [`DRAIN_WAIT`]); then each file gets its earliest pre-image of every sector back, is
//! truncated (or extended) to `synced_len` and synced, the unsynced new files are
//! removed and their directories synced; the cut is logged; and the abort hook runs
//! (`std::process::abort` unless a test replaced it). What is left on disk is what the
//! simulated disk's durable image holds after the same operations: every unsynced write
//! lost, every synced one kept.
//!
//! Limits (docs/chaos.md §2): a remove or a rename is taken as durable at once (a real
//! cut may undo it; the layer cannot bring back an unlinked file's data); a failed sync is
//! not modelled as dropping the dirty pages (the simulated disk's "fsyncgate"); writes
//! made before the first `power_cut` fault was added are taken as synced.

use parking_lot::{Condvar, Mutex};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::SECTOR;

const S: u64 = SECTOR as u64;

/// Longest the cut waits for the writes in flight on other threads' disks to be reaped
/// (each thread drains its own when it next enters the layer).
pub const DRAIN_WAIT: Duration = Duration::from_secs(10);

/// What runs once the cut has restored the files: `std::process::abort` by default.
pub type PowerCutHook = Arc<dyn Fn() + Send + Sync>;

/// A sector's pre-images: (the epoch it was taken in, the sector's bytes), ascending.
type PreImages = Vec<(u64, Box<[u8]>)>;

/// One file to put back: its path, the earliest pre-image of each sector (index,
/// bytes), and its synced length.
pub(super) type FileRestore = (PathBuf, Vec<(u64, Box<[u8]>)>, u64);

/// One file's undo state (module docs).
#[derive(Debug)]
pub(super) struct FileRecord {
    /// Length at the last successful sync (or when the layer first saw the file armed).
    pub(super) synced_len: u64,
    /// Sectors below this are captured before they are overwritten: the larger of
    /// `synced_len` and the length at the last sync submitted.
    capture_len: u64,
    /// Current epoch: the count of syncs submitted.
    epoch: u64,
    /// Syncs with an epoch below this were applied (a late completion of an older sync
    /// changes nothing).
    applied_through: u64,
    /// Writes of this file in flight through the layer (all disks).
    writes_in_flight: u64,
    /// Sector index -> pre-images by the epoch they were taken in (ascending).
    pre: BTreeMap<u64, PreImages>,
}

impl FileRecord {
    fn new(len: u64) -> FileRecord {
        FileRecord {
            synced_len: len,
            capture_len: len,
            epoch: 0,
            applied_through: 0,
            writes_in_flight: 0,
            pre: BTreeMap::new(),
        }
    }

    /// The sectors of `first..end` (bytes) that need a pre-image now: below
    /// `capture_len` and not yet captured in this epoch.
    fn needed(&self, first: u64, end: u64) -> Option<(u64, u64)> {
        let end = end.min(self.capture_len.div_ceil(S) * S);
        let (lo, hi) = (first / S, end.div_ceil(S));
        let need: Vec<u64> = (lo..hi)
            .filter(|s| {
                !self
                    .pre
                    .get(s)
                    .is_some_and(|v| v.iter().any(|(e, _)| *e == self.epoch))
            })
            .collect();
        Some((*need.first()?, *need.last()? + 1))
    }

    /// Keeps the pre-image `data` of sectors `lo..` (zero-padded where the read was short).
    fn keep(&mut self, lo: u64, hi: u64, data: &[u8]) {
        for s in lo..hi {
            let v = self.pre.entry(s).or_default();
            if v.iter().any(|(e, _)| *e == self.epoch) {
                continue;
            }
            let at = ((s - lo) * S) as usize;
            let mut sec = vec![0u8; SECTOR].into_boxed_slice();
            if at < data.len() {
                let n = (data.len() - at).min(SECTOR);
                sec[..n].copy_from_slice(&data[at..at + n]);
            }
            v.push((self.epoch, sec));
        }
    }

    /// Bytes of pre-images held.
    fn held(&self) -> usize {
        self.pre.values().map(|v| v.len() * SECTOR).sum()
    }
}

/// A sync submitted through the layer: applied on success if it covered every write.
#[derive(Clone, Copy, Debug)]
pub(super) struct SyncMark {
    /// Pre-images of this epoch and earlier become useless.
    epoch: u64,
    /// The file's length when the sync was submitted.
    len: u64,
}

#[derive(Default)]
struct State {
    /// The cut has begun: nothing changes any more.
    cutting: bool,
    /// The cut has restored the files (and the hook returned, in a test).
    done: bool,
    files: HashMap<PathBuf, FileRecord>,
    created: BTreeSet<PathBuf>,
    /// Writes in flight through the layer, all files.
    in_flight: u64,
}

/// The shared power-cut state of one bookie (module docs).
pub struct Power {
    armed: AtomicBool,
    off: AtomicBool,
    state: Mutex<State>,
    changed: Condvar,
    hook: Mutex<Option<PowerCutHook>>,
}

impl Default for Power {
    fn default() -> Self {
        Power {
            armed: AtomicBool::new(false),
            off: AtomicBool::new(false),
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
            hook: Mutex::new(None),
        }
    }
}

/// What the restore has to do, taken from the state once the cut has begun.
pub(super) struct RestorePlan {
    /// Path, earliest pre-image per sector, synced length; sorted by path.
    pub(super) files: Vec<FileRestore>,
    /// Unsynced new files to remove, sorted.
    pub(super) created: Vec<PathBuf>,
}

impl Power {
    /// From now on the layer keeps what a cut needs (never disarmed: a cut added later
    /// relies on the records kept since).
    pub fn arm(&self) {
        if !self.armed.swap(true, Ordering::SeqCst) {
            tracing::warn!(
                "chaos: power cut armed: the layer now keeps pre-images of overwritten synced data"
            );
        }
    }

    pub fn armed(&self) -> bool {
        self.armed.load(Ordering::Acquire)
    }

    /// True once a cut has begun.
    pub fn off(&self) -> bool {
        self.off.load(Ordering::Acquire)
    }

    /// Replaces what runs after the restore (tests: record the cut instead of aborting).
    pub fn set_hook(&self, hook: PowerCutHook) {
        *self.hook.lock() = Some(hook);
    }

    /// Whether `path` has a record (it was changed since the layer was armed).
    pub(super) fn has_record(&self, path: &Path) -> bool {
        self.state.lock().files.contains_key(path)
    }

    /// Ensures a record for `path`; `len` is its length taken as synced when new.
    /// A record made while a write of the file is entered counts that write in flight.
    pub(super) fn ensure_record(&self, path: &Path, len: u64, entered: bool) {
        self.state
            .lock()
            .files
            .entry(path.to_path_buf())
            .or_insert_with(|| {
                let mut r = FileRecord::new(len);
                r.writes_in_flight = u64::from(entered);
                r
            });
    }

    /// The sector range (first, end) of `first..end` bytes that needs a pre-image.
    pub(super) fn needed(&self, path: &Path, first: u64, end: u64) -> Option<(u64, u64)> {
        self.state.lock().files.get(path)?.needed(first, end)
    }

    /// Keeps a pre-image. Also once the cut has begun: a write entered before it still
    /// lands, and the restore plan is taken only after every entered write is done.
    pub(super) fn keep(&self, path: &Path, lo: u64, hi: u64, data: &[u8]) {
        if let Some(r) = self.state.lock().files.get_mut(path) {
            r.keep(lo, hi, data);
        }
    }

    /// A write of `path` is about to be prepared and submitted: counted in flight from
    /// now (before its pre-image is read), so a cut that begins meanwhile waits for it.
    /// False once the cut has begun: the write must not be made.
    pub(super) fn enter_write(&self, path: &Path) -> bool {
        let mut st = self.state.lock();
        if st.cutting {
            return false;
        }
        st.in_flight += 1;
        if let Some(r) = st.files.get_mut(path) {
            r.writes_in_flight += 1;
        }
        true
    }

    /// A write entered with [`Power::enter_write`] is done without a completion to see
    /// (refused, not queued, or synchronous like `set_len`).
    pub(super) fn leave_write(&self, path: &Path) {
        let mut st = self.state.lock();
        st.in_flight = st.in_flight.saturating_sub(1);
        if let Some(r) = st.files.get_mut(path) {
            r.writes_in_flight = r.writes_in_flight.saturating_sub(1);
        }
        self.changed.notify_all();
    }

    /// A sync of `path` is submitted (`own`: 1 for a write+fdatasync, whose own write is
    /// counted in flight already); `len` is the file's length it covers. The mark to apply at a
    /// successful completion, or None when a write of the file is in flight: such a sync
    /// may not cover it (the `Disk` contract), so it is not taken as covering anything.
    pub(super) fn sync_started(&self, path: &Path, len: u64, own: u64) -> Option<SyncMark> {
        let mut st = self.state.lock();
        let r = st.files.get_mut(path)?;
        let mark = SyncMark {
            epoch: r.epoch,
            len,
        };
        r.epoch += 1;
        r.capture_len = r.capture_len.max(len);
        (r.writes_in_flight == own).then_some(mark)
    }

    /// An operation tracked at submit completed with success `ok`. False when the cut
    /// has begun: its completion must not be handed out as a success.
    pub(super) fn completed(
        &self,
        path: &Path,
        write: bool,
        sync: Option<SyncMark>,
        ok: bool,
    ) -> bool {
        let mut st = self.state.lock();
        if write {
            st.in_flight = st.in_flight.saturating_sub(1);
        }
        let cutting = st.cutting;
        if let Some(r) = st.files.get_mut(path) {
            if write {
                r.writes_in_flight = r.writes_in_flight.saturating_sub(1);
            }
            if let (Some(m), true, false) = (sync, ok, cutting) {
                if m.epoch >= r.applied_through {
                    r.applied_through = m.epoch + 1;
                    r.synced_len = m.len;
                    r.capture_len = r.capture_len.max(m.len);
                    r.pre.retain(|_, v| {
                        v.retain(|(e, _)| *e > m.epoch);
                        !v.is_empty()
                    });
                }
            }
        }
        if write {
            self.changed.notify_all();
        }
        !cutting
    }

    /// `path` was created by an open (it did not exist).
    pub(super) fn created(&self, path: &Path) {
        let mut st = self.state.lock();
        if !st.cutting {
            st.created.insert(path.to_path_buf());
        }
    }

    /// `dir` was synced: its entries are durable.
    pub(super) fn dir_synced(&self, dir: &Path) {
        let mut st = self.state.lock();
        if !st.cutting {
            st.created.retain(|p| p.parent() != Some(dir));
        }
    }

    pub(super) fn removed(&self, path: &Path) {
        let mut st = self.state.lock();
        if !st.cutting {
            st.files.remove(path);
            st.created.remove(path);
        }
    }

    /// A rename, taken as durable at once (module docs): the record follows the file,
    /// and a new file renamed is no longer forgotten by a cut.
    pub(super) fn renamed(&self, from: &Path, to: &Path) {
        let mut st = self.state.lock();
        if st.cutting {
            return;
        }
        st.created.remove(from);
        st.created.remove(to);
        st.files.remove(to);
        if let Some(r) = st.files.remove(from) {
            st.files.insert(to.to_path_buf(), r);
        }
    }

    /// Begins the cut. True for the one caller that must run it; false if it had begun.
    pub(super) fn begin(&self) -> bool {
        let mut st = self.state.lock();
        if st.cutting {
            return false;
        }
        st.cutting = true;
        self.off.store(true, Ordering::Release);
        true
    }

    /// Waits (at most [`DRAIN_WAIT`]) until no write is in flight through the layer;
    /// returns how many still are.
    pub(super) fn wait_landed(&self) -> u64 {
        let deadline = Instant::now() + DRAIN_WAIT;
        let mut st = self.state.lock();
        while st.in_flight > 0 {
            if self.changed.wait_until(&mut st, deadline).timed_out() {
                break;
            }
        }
        st.in_flight
    }

    /// What the restore must do (once the cut has begun, nothing changes it).
    pub(super) fn plan(&self) -> RestorePlan {
        let st = self.state.lock();
        let mut files: Vec<_> = st
            .files
            .iter()
            .filter(|(p, _)| !st.created.contains(*p))
            .map(|(p, r)| {
                let pre = r
                    .pre
                    .iter()
                    .filter_map(|(s, v)| v.first().map(|(_, b)| (*s, b.clone())))
                    .collect();
                (p.clone(), pre, r.synced_len)
            })
            .collect();
        files.sort_by(|a, b| a.0.cmp(&b.0));
        RestorePlan {
            files,
            created: st.created.iter().cloned().collect(),
        }
    }

    /// Pre-image bytes held now (all files), for the log and tests.
    pub fn held_bytes(&self) -> usize {
        self.state.lock().files.values().map(FileRecord::held).sum()
    }

    /// The restore is done: wake the waiters, then run the hook (default: abort).
    pub(super) fn finish(&self) {
        {
            let mut st = self.state.lock();
            st.done = true;
            self.changed.notify_all();
        }
        let hook = self.hook.lock().clone();
        match hook {
            Some(h) => h(),
            None => std::process::abort(),
        }
    }

    /// Blocks until the cut has restored the files (in production the abort ends it).
    pub(super) fn wait_done(&self) {
        let mut st = self.state.lock();
        while !st.done {
            self.changed.wait(&mut st);
        }
    }
}
