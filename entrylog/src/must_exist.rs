//! What must exist at start-up: the checks that turn a missing `ledgers.state` or a
//! missing or replaced segment file into a refusal to start, naming the file, instead
//! of "no such ledger / no such entry" for entries that were acknowledged.
//!
//! Guarantees (docs/durability.md, "What is detected and how"):
//! - the ledger-state file may be absent only from a fresh entry log: with any
//!   final-named segment present (or the caller saying state existed,
//!   `EntryLogConfig::require_state_file`) its absence is `Error::Corruption` naming it;
//! - every segment the newest ledger-state file lists (format version 2,
//!   `format::SegmentRecord`) exists with the recorded length, else `Error::Corruption`
//!   naming the segment file. Segments on disk that it does not list are newer than it
//!   and are loaded as usual; a version-1 file (no list) skips this check;
//! - upgrade: a version-1 file is replaced during `EntryLog::open` by one listing every
//!   segment found (and loaded) there, logged, so from the first start of this version
//!   on a lost segment is detected, even if the bookie stops before its next flush
//!   (on a full disk: from the next state write that finds room).
//!   A segment lost before that start cannot be detected (nothing recorded it); refusing
//!   every upgrade instead would make the check unusable.

use crate::format::StateFile;
use crate::{segment, Error, Result, Shared, STATE_FILE};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Refuses a missing ledger-state file unless the entry log is fresh.
/// `segments` counts the final-named segment files found.
pub(crate) fn check_state_present(
    dirs: &[PathBuf],
    state_found: bool,
    segments: usize,
    required: bool,
) -> Result<()> {
    if state_found || (segments == 0 && !required) {
        return Ok(());
    }
    let why = if segments > 0 {
        format!("{segments} segment files exist")
    } else {
        "the journal has a checkpoint, so a flush wrote it".to_string()
    };
    Err(Error::Corruption {
        path: dirs[0].join(STATE_FILE),
        detail: format!(
            "missing from every ledger directory while {why}: starting without it would \
             forget fences, master keys and deletions; restore the file (refusing to start)"
        ),
    })
}

/// Refuses a ledger-state file older than the caller relies on (`min`, from the journal
/// checkpoint that followed the flush which wrote a state file of that epoch): an older
/// copy put back would silently forget the fences, master keys and deletions since.
pub(crate) fn check_state_epoch(path: &Path, epoch: u64, min: u64) -> Result<()> {
    if epoch >= min {
        return Ok(());
    }
    Err(Error::Corruption {
        path: path.to_path_buf(),
        detail: format!(
            "epoch {epoch} is older than epoch {min}, which the journal checkpoint records as \
             flushed: an older copy of the file (it would forget the fences, master keys and \
             deletions since); restore the newest copy (refusing to start)"
        ),
    })
}

/// Where a segment file was found at start-up.
pub(crate) struct FoundSegment<'a> {
    pub path: &'a Path,
    pub file_len: u64,
}

/// Checks every segment the ledger-state file lists against the files found.
pub(crate) fn check_recorded_segments(
    dirs: &[PathBuf],
    state: &StateFile,
    found: &HashMap<u64, FoundSegment<'_>>,
) -> Result<()> {
    let Some(recorded) = &state.segments else {
        return Ok(());
    };
    for r in recorded {
        match found.get(&r.segment_id) {
            None => {
                let dir = dirs.get(r.dir_index as usize).unwrap_or(&dirs[0]);
                return Err(Error::Corruption {
                    path: dir.join(segment::segment_name(r.segment_id)),
                    detail: format!(
                        "missing: {STATE_FILE} (epoch {}) lists this segment (seq {}, {} bytes) \
                         and its entries were acknowledged; restore the file (refusing to start)",
                        state.epoch, r.seq, r.file_len
                    ),
                });
            }
            Some(f) if f.file_len != r.file_len => {
                return Err(Error::Corruption {
                    path: f.path.to_path_buf(),
                    detail: format!(
                        "{} bytes, but {STATE_FILE} (epoch {}) recorded {} bytes: the file was \
                         replaced or cut (refusing to start)",
                        f.file_len, state.epoch, r.file_len
                    ),
                });
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// Upgrade from a ledger-state file without a segment list: writes one that lists
/// every segment loaded at this start (module docs). A full disk does not stop
/// start-up (it never does): the list then comes with the next state write that finds
/// room, and until then a lost segment goes undetected, as before the upgrade.
pub(crate) fn record_after_upgrade(shared: &Shared) -> Result<()> {
    let segments = shared.inner.lock().index.segments.len();
    tracing::info!(
        segments,
        "{STATE_FILE} has no segment list (format 1, written before this version): \
         recording the segments found now, so that a segment lost from here on refuses \
         start-up"
    );
    match shared.persist_state(false) {
        Err(e) if e.is_no_space() => {
            tracing::warn!(
                error = %e,
                "no room to record the segment list in {STATE_FILE} at start-up; \
                 it is written with the next state write that finds room"
            );
            Ok(())
        }
        r => r,
    }
}
