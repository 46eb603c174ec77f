//! Opening one journal directory: classify its files, read (or create) the
//! checkpoint, replay the segments, make the replayed tail durable, recycle what no
//! longer holds live records, and compute where writing resumes.
//!
//! Invariants: nothing is written after the replayed log before the last replayed
//! group and the checkpoint file were re-persisted (see `replay::resync_last_group`);
//! the newest segment the record names exists (`newest`), and the record is
//! rewritten to what stays live before anything is recycled;
//! writing always resumes at offset 0 of a segment id above every existing one; a
//! full file system does not stop the open (replay only reads): when no segment can
//! be prepared for writing, the journal starts waiting for space (`Opened::no_space`).

use crate::commit::{LogPosition, Start};
use crate::config::JournalConfig;
use crate::error::JournalError;
use crate::format::{self, classify_name, DirEntryKind};
use crate::newest::Newest;
use crate::replay::{self, DirReplay, ReplayedRecord, SegFile};
use crate::segments::{SegmentFiles, FREE_SEGMENTS_FOLLOWED_MAX};
use crate::Seq;
use bk_disk::{Disk, OpenOptions};
use std::collections::BTreeMap;
use std::path::Path;

/// What `open_dir` hands to the committer thread.
pub(crate) struct Opened {
    pub replay: DirReplay,
    pub disk: Box<dyn Disk>,
    pub files: SegmentFiles,
    pub live: BTreeMap<u64, (Seq, u64)>,
    pub start: Start,
    pub journal_id: u64,
    pub mark: Seq,
    /// The checkpoint's `storage_epoch` (kept by every later checkpoint, never lowered).
    pub storage_epoch: u64,
    /// The newest-segment record, as rewritten at open.
    pub newest: Newest,
    /// Set when no segment could be prepared for lack of space: the committer starts
    /// refusing appends (`NoSpace`) and retries until space returns.
    pub no_space: Option<String>,
}

fn corruption(path: &Path, reason: String) -> JournalError {
    JournalError::Corruption {
        path: path.to_path_buf(),
        offset: 0,
        reason,
    }
}

/// Replays one journal directory and prepares its segment files for writing.
pub(crate) fn open_dir(
    mut disk: Box<dyn Disk>,
    index: usize,
    dir: &Path,
    config: &JournalConfig,
    visit: &mut dyn FnMut(&ReplayedRecord) -> Result<(), String>,
) -> Result<Opened, JournalError> {
    let d: &mut dyn Disk = disk.as_mut();
    d.create_dir_all(dir)
        .map_err(|e| JournalError::io("create journal directory", dir, e))?;
    let names = d
        .list_dir(dir)
        .map_err(|e| JournalError::io("list journal directory", dir, e))?;
    let mut segments = Vec::new();
    let mut free = Vec::new();
    let mut has_checkpoint = false;
    let mut has_newest = false;
    let mut dir_dirty = false;
    for p in &names {
        let Some(name) = p.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let path = dir.join(name);
        match classify_name(name) {
            DirEntryKind::Segment(id) => segments.push((id, path)),
            DirEntryKind::Free(n) => free.push((n, path)),
            DirEntryKind::Checkpoint => has_checkpoint = true,
            DirEntryKind::Newest => has_newest = true,
            DirEntryKind::Temporary => {
                d.remove(&path)
                    .map_err(|e| JournalError::io("remove temporary file", &path, e))?;
                dir_dirty = true;
            }
            DirEntryKind::Cookie => {}
            DirEntryKind::Unknown => {
                tracing::warn!(path = %path.display(), "unknown file in journal directory left alone")
            }
        }
    }
    segments.sort();
    free.sort();
    let mut created = false;
    let ckpt = if has_checkpoint {
        replay::read_checkpoint(d, dir, config.direct_io)?
    } else if segments.is_empty() {
        let mut journal_id = 0u64;
        while journal_id == 0 {
            journal_id = rand::random();
        }
        let c = format::CheckpointRecord {
            journal_id,
            mark: 0,
            durable: 0,
            storage_epoch: 0,
        };
        replay::write_checkpoint(d, dir, c, config.direct_io)?;
        created = true;
        c
    } else {
        return Err(corruption(
            &dir.join(format::CHECKPOINT_FILE),
            "journal segments exist but the checkpoint file is missing".into(),
        ));
    };
    let journal_id = ckpt.journal_id;
    let mark = Seq(ckpt.mark);
    let mut newest = Newest::read(d, dir, journal_id, has_newest && !created, config.direct_io)?;

    let mut segs = Vec::with_capacity(segments.len());
    for (id, path) in &segments {
        match SegFile::open(d, *id, path.clone(), config.direct_io) {
            Ok(s) => segs.push(s),
            Err(e) => {
                for s in &mut segs {
                    s.close(d);
                }
                return Err(e);
            }
        }
    }
    let found: Vec<(u64, std::path::PathBuf, u64)> =
        segs.iter().map(|s| (s.id, s.path.clone(), s.len)).collect();
    if let Err(e) = newest.check(&found) {
        for s in &mut segs {
            s.close(d);
        }
        return Err(e);
    }
    let mut visit_rec = |seq: Seq, kind, payload| {
        visit(&ReplayedRecord {
            journal_index: index,
            seq,
            kind,
            payload,
        })
    };
    let durable = Seq(ckpt.durable);
    let walked = replay::walk(
        d,
        index,
        &mut segs,
        journal_id,
        mark,
        durable,
        &mut visit_rec,
    );
    // Make what replay handed out durable before anything new is written after it
    // (see `resync_last_group`): the last group (when it matters, i.e. it holds
    // records above the mark) and the checkpoint file itself (its rename may not
    // have been synced by a life that stopped on a failed sync).
    let resynced = match &walked {
        Ok(w) => match w.last_group {
            Some((k, off, len)) if segs[k].last_seq.is_some_and(|l| l > mark) => {
                replay::resync_last_group(d, &mut segs[k], off, len, config.direct_io)
            }
            _ => Ok(()),
        },
        Err(_) => Ok(()),
    };
    for s in &mut segs {
        s.close(d);
    }
    let w = walked?;
    resynced?;
    if !created {
        // Every group the walk accepted is durable now (the last one resynced above), so
        // the rewritten file may claim them all.
        let ckpt = format::CheckpointRecord {
            durable: ckpt.durable.max(w.last_seq.0),
            ..ckpt
        };
        match replay::write_checkpoint(d, dir, ckpt, config.direct_io) {
            Ok(()) => {}
            // A full file system: the file read above stays, and syncing the directory
            // makes its name durable, which is what rewriting it is for.
            Err(JournalError::NoSpace(reason)) => {
                tracing::warn!(dir = %dir.display(), "checkpoint not rewritten at open: {reason}");
                d.sync_dir(dir)
                    .map_err(|e| JournalError::io("sync journal directory", dir, e))?;
            }
            Err(e) => return Err(e),
        }
    }

    let mut files = SegmentFiles {
        dir: dir.to_path_buf(),
        segment_bytes: config.segment_bytes,
        segment_min: config.segment_min(),
        direct: config.direct_io,
        free: Vec::new(),
        next_free_n: free.last().map(|(n, _)| n + 1).unwrap_or(0),
        // A pool that follows checkpoints keeps what it finds (up to its most): the
        // files are there already; the first checkpoint sets its size.
        free_max: if config.free_segments_follow_checkpoints {
            FREE_SEGMENTS_FOLLOWED_MAX.max(config.free_segments_max)
        } else {
            config.free_segments_max
        },
        free_follow_min: config
            .free_segments_follow_checkpoints
            .then_some(config.free_segments_max),
        created: 0,
        recycled: 0,
    };
    // Free files of the wrong size (config changed) are removed.
    for (n, path) in free {
        let len = file_len(d, &path, config.direct_io)?;
        if files.reusable_len(len) && files.free.len() < files.free_max {
            files.free.push((n, path, len));
        } else {
            d.remove(&path)
                .map_err(|e| JournalError::io("remove free segment", &path, e))?;
            dir_dirty = true;
        }
    }
    // Live: segments holding a valid record above the mark. Everything else holds
    // nothing replay needs: recycle it, after the newest-segment record names the
    // newest live one (record first on removal: a crash in between leaves a record
    // whose segment still exists).
    let mut live = BTreeMap::new();
    for s in &segs {
        if let Some(last) = s.last_seq.filter(|l| *l > mark) {
            live.insert(s.id, (last, s.len));
        }
    }
    let (keep, keep_len) = live
        .iter()
        .next_back()
        .map_or((0, 0), |(id, (_, len))| (*id, *len));
    if !newest.exists() || newest.rec.segment_id != keep || newest.rec.segment_len != keep_len {
        if !newest.exists() && !created {
            tracing::info!(
                dir = %dir.display(),
                "journal has no {} (written before this version): recording the newest \
                 segment now, so that a lost newest segment refuses start-up from here on",
                format::NEWEST_FILE
            );
        }
        match newest.record(d, keep, keep_len) {
            Ok(()) => {}
            // Nothing changed: the old record holds (none, when the file was not
            // created), so the segment it names is not recycled; the record follows
            // at the first segment switch.
            Err(JournalError::NoSpace(reason)) => {
                tracing::warn!(
                    dir = %dir.display(),
                    "no room to rewrite {} at open, rewritten at the first segment switch: {reason}",
                    format::NEWEST_FILE
                );
            }
            Err(e) => return Err(e),
        }
    }
    let recorded = newest.rec.segment_id;
    for s in &segs {
        if !live.contains_key(&s.id) && (s.id != recorded || recorded == 0) {
            files.recycle(d, &s.path, s.len)?;
            dir_dirty = true;
        }
    }
    if dir_dirty {
        files.sync_dir(d)?;
    }
    let write_segment = segments.last().map(|(id, _)| id + 1).unwrap_or(1);
    let next_seq = Seq(w.last_seq.0.max(mark.0).max(w.highest_claimed.0) + 1);
    let start = Start {
        position: LogPosition {
            segment: write_segment,
            offset: 0,
        },
        prev_seq: w.last_seq,
        next_seq,
    };
    let mut no_space = None;
    if files.free.is_empty() {
        match files.make_spare(d, true) {
            Ok(()) => {}
            Err(JournalError::NoSpace(reason)) => {
                tracing::warn!(
                    dir = %dir.display(),
                    "no room for a journal segment at start-up, appends wait for space: {reason}"
                );
                no_space = Some(reason.to_string());
            }
            Err(e) => return Err(e),
        }
    }
    let replay = DirReplay {
        dir: dir.to_path_buf(),
        journal_id,
        checkpoint_mark: mark,
        records: w.records,
        payload_bytes: w.payload_bytes,
        bytes_read: w.bytes_read,
        last_seq: w.last_seq,
        next_seq,
        end: w.end,
        torn_tail: w.torn_tail,
        damaged_below_mark: w.damaged_below_mark,
        write_segment,
        created,
    };
    tracing::info!(
        dir = %dir.display(),
        records = replay.records,
        last_seq = replay.last_seq.0,
        mark = mark.0,
        torn_tail = replay.torn_tail.is_some(),
        "journal replayed"
    );
    Ok(Opened {
        replay,
        disk,
        files,
        live,
        start,
        journal_id,
        mark,
        storage_epoch: ckpt.storage_epoch,
        newest,
        no_space,
    })
}

fn file_len(d: &mut dyn Disk, path: &Path, direct: bool) -> Result<u64, JournalError> {
    let f = d
        .open(
            path,
            OpenOptions {
                create: false,
                create_new: false,
                write: false,
                direct,
            },
        )
        .map_err(|e| JournalError::io("open free segment", path, e))?;
    let len = d.file_len(f);
    let _ = d.close(f);
    len.map_err(|e| JournalError::io("size free segment", path, e))
}
