//! Start-up of the entry log: removes unfinished segment and state writes, loads every
//! segment's trailer and footer, installs runs in precedence order (seq, id), and takes
//! the newest valid ledger-state file.
//!
//! Invariants: a final-named segment that fails its checks stops start-up with
//! `Error::Corruption` (never dropped silently); when every copy of the ledger state is
//! unreadable, or missing while segments exist, start-up fails rather than forget
//! fences and deletions; a segment the ledger-state file lists that is missing stops
//! start-up (`must_exist`); a state file without a segment list (format 1) is
//! rewritten at once listing the segments found; runs of tombstoned ledgers are not
//! installed.

use crate::format::StateFile;
use crate::index::{Index, LedgerMeta, Run, SegmentMeta};
use crate::metrics::EntryLogMetrics as M;
use crate::must_exist::{self, FoundSegment};
use crate::read_cache::ReadCache;
use crate::write_cache::CacheHalf;
use crate::{
    segment, Bytes, DirState, DiskFactory, EntryLog, EntryLogConfig, EntryLogMetrics, Error, Inner,
    ReaderSlot, Result, Shared, STATE_FILE,
};
use parking_lot::{Condvar, Mutex};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::Arc;

impl EntryLog {
    /// Opens (or creates) the entry log over `dirs` (each a directory the entry log
    /// owns, e.g. `<ledgerDir>/current`). Deletes unfinished segment and state writes,
    /// loads every segment's trailer and footer, and the newest valid ledger-state file.
    /// A segment whose trailer or footer does not decode is `Error::Corruption`.
    pub fn open(dirs: Vec<PathBuf>, cfg: EntryLogConfig, factory: DiskFactory) -> Result<EntryLog> {
        cfg.validate().map_err(Error::InvalidInput)?;
        if dirs.is_empty() {
            return Err(Error::InvalidInput("no ledger directory".into()));
        }
        let mk =
            |what: &str| (factory)().map_err(|e| Error::io(format!("opening disk for {what}"), e));
        let mut disk = mk("start-up")?;
        let mut index = Index::default();
        let mut max_id = 0u64;
        let mut state: Option<StateFile> = None;
        let mut state_path: Option<PathBuf> = None;
        let mut state_errors = Vec::new();
        let mut seg_files: Vec<(u64, usize, PathBuf)> = Vec::new();
        for (di, dir) in dirs.iter().enumerate() {
            disk.create_dir_all(dir)
                .map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
            let names = disk
                .list_dir(dir)
                .map_err(|e| Error::io(format!("listing {}", dir.display()), e))?;
            let mut removed = false;
            for n in names {
                let Some(name) = n.file_name().and_then(|s| s.to_str()).map(str::to_owned) else {
                    continue;
                };
                let path = dir.join(&name);
                if let Some((id, tmp)) = segment::parse_segment_name(&name) {
                    max_id = max_id.max(id);
                    if tmp {
                        disk.remove(&path)
                            .map_err(|e| Error::io(format!("removing {}", path.display()), e))?;
                        removed = true;
                    } else {
                        seg_files.push((id, di, path));
                    }
                } else if name == format!("{STATE_FILE}.tmp") {
                    disk.remove(&path)
                        .map_err(|e| Error::io(format!("removing {}", path.display()), e))?;
                    removed = true;
                } else if name == STATE_FILE {
                    match segment::read_small_file(disk.as_mut(), &path).and_then(|b| {
                        StateFile::decode(&b).map_err(|e| Error::Corruption {
                            path: path.clone(),
                            detail: e.to_string(),
                        })
                    }) {
                        Ok(s) => {
                            if state.as_ref().is_none_or(|cur| s.epoch > cur.epoch) {
                                state = Some(s);
                                state_path = Some(path.clone());
                            }
                        }
                        Err(e) => state_errors.push(e),
                    }
                }
            }
            if removed {
                disk.sync_dir(dir)
                    .map_err(|e| Error::io(format!("syncing {}", dir.display()), e))?;
            }
        }
        if state.is_none() {
            if let Some(e) = state_errors.into_iter().next() {
                // Every copy of the ledger state is unreadable: starting without it
                // would forget fences and deletions.
                return Err(e);
            }
        }
        must_exist::check_state_present(
            &dirs,
            state.is_some(),
            seg_files.len(),
            cfg.require_state_file,
        )?;
        if let (Some(s), Some(path)) = (&state, &state_path) {
            must_exist::check_state_epoch(path, s.epoch, cfg.min_state_epoch)?;
        }
        // A state file from before the segment list (format 1) names no segment.
        let unrecorded = state.as_ref().is_some_and(|s| s.segments.is_none());
        let state = state.unwrap_or_default();
        let tombstones: foldhash::HashMap<u64, u64> = state.tombstones.iter().copied().collect();
        for rec in &state.ledgers {
            index.ledgers.insert(
                rec.ledger,
                LedgerMeta {
                    fenced: rec.fenced,
                    master_key: rec.master_key.clone(),
                    explicit_lac: rec.explicit_lac.clone().map(Bytes::from),
                    lac: rec.lac,
                    created_gen: 0,
                    runs: Vec::new(),
                },
            );
        }
        // Load footers, install in precedence order (seq, id).
        let mut loaded = Vec::with_capacity(seg_files.len());
        for (id, di, path) in seg_files {
            let (tr, runs, file_len) = segment::load_index(disk.as_mut(), &path)?;
            if tr.segment_id != id {
                return Err(Error::Corruption {
                    path,
                    detail: format!("trailer names segment {}", tr.segment_id),
                });
            }
            loaded.push((tr.seq, id, di, tr, runs, file_len, path));
        }
        let found: HashMap<u64, FoundSegment<'_>> = loaded
            .iter()
            .map(|x| {
                (
                    x.1,
                    FoundSegment {
                        path: &x.6,
                        file_len: x.5,
                    },
                )
            })
            .collect();
        must_exist::check_recorded_segments(&dirs, &state, &found)?;
        drop(found);
        loaded.sort_by_key(|x| (x.0, x.1));
        for (seq, id, di, tr, runs, file_len, _) in loaded {
            index.add_segment(
                id,
                SegmentMeta {
                    dir: di,
                    seq,
                    file_len,
                    data_bytes: tr.data_len,
                    live_bytes: 0,
                    ledgers: runs.iter().map(|r| r.ledger).collect(),
                    compacting: false,
                },
            );
            for r in runs {
                if tombstones.contains_key(&r.ledger) {
                    continue;
                }
                index.ledgers.entry(r.ledger).or_default();
                index.install_run(
                    r.ledger,
                    Run {
                        seg: id,
                        seq,
                        entries: r.entries,
                    },
                );
            }
        }
        let next_segment_id = state.next_segment_id.max(max_id + 1).max(1);
        let ndirs = dirs.len();
        let mut readers = Vec::with_capacity(cfg.readers);
        for _ in 0..cfg.readers {
            readers.push(Mutex::new(ReaderSlot {
                disk: mk("reads")?,
                files: Default::default(),
            }));
        }
        let aux = mk("maintenance")?;
        let metrics = EntryLogMetrics::default();
        M::set(&metrics.write_cache_max_size, cfg.write_cache_bytes as u64);
        M::set(
            &metrics.readahead_max_batch_size,
            cfg.readahead_entries as u64,
        );
        let shared = Arc::new(Shared {
            read_cache: Mutex::new(ReadCache::new(cfg.read_cache_bytes)),
            readahead_cv: Condvar::new(),
            dirs,
            factory: factory.clone(),
            inner: Mutex::new(Inner {
                index,
                tombstones,
                active: CacheHalf::default(),
                flushing: None,
                swaps: 0,
                flushed_swaps: 0,
                next_segment_id,
                generation: 1,
                state_epoch: state.epoch,
                durable_state_epoch: state.epoch,
                checkpoints: state.checkpoints,
                dir_states: vec![DirState::Ok; ndirs],
                dir_free: vec![u64::MAX; ndirs],
                closed: false,
                flusher_backoff_until: None,
                flusher_backoff: std::time::Duration::ZERO,
                active_since: std::time::Instant::now(),
                flushing_fill: std::time::Duration::ZERO,
                flush_cursor: None,
                no_space: false,
                undeleted: Vec::new(),
            }),
            cache_cv: Condvar::new(),
            flusher_cv: Condvar::new(),
            flush_lock: Mutex::new(disk),
            flush_lock_waiters: AtomicUsize::new(0),
            aux_disk: Mutex::new(aux),
            readers,
            next_reader: AtomicUsize::new(0),
            metrics,
            corrupt_reported: Mutex::default(),
            stop: AtomicBool::new(false),
            mode_watch: Default::default(),
            cfg,
        });
        shared.update_gauges();
        // Segments with nothing live (all their ledgers deleted) go now.
        let (removed, _) = shared.remove_dead_segments(None)?;
        if unrecorded && removed == 0 {
            must_exist::record_after_upgrade(&shared)?;
        }
        let s2 = shared.clone();
        let flusher = std::thread::Builder::new()
            .name("entrylog-flusher".into())
            .spawn(move || s2.flusher_loop())
            .map_err(|e| Error::io("spawning the flusher thread", e))?;
        Ok(EntryLog {
            shared,
            flusher: Some(flusher),
        })
    }
}
