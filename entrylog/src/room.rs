//! Room for the next segment (docs/semantics.md §14): how a flush is cut into bounded
//! segments and which ledger directory may take the next one.
//!
//! Guarantees:
//! - a flush never writes a segment larger than `segment_max_bytes` (`logSizeLimit`) nor
//!   larger than the room its directory has left below `diskUsageThreshold`; a single
//!   entry larger than either still goes alone into one segment where it fits;
//! - a directory whose room is below what the next segment needs (its first entry) is
//!   marked `Full` before anything is written to it, so a flush turns the log read-only
//!   before the file system answers ENOSPC; an ENOSPC that comes anyway is handled the
//!   same way by the caller;
//! - when no directory has room, the answer is an ENOSPC error (`Error::is_no_space`),
//!   and the entries stay in the write cache.

use crate::disk_usage::DirState;
use crate::format::{FOOTER_ENTRY_LEN, FOOTER_LEDGER_HEADER, TRAILER_LEN};
use crate::segment::SegmentInput;
use crate::write_cache::CachedEntry;
use crate::{Error, Result, Shared};
use bk_disk::{round_up, Disk, SECTOR};
use std::collections::BTreeMap;

/// Slack per segment for file-system metadata (extent blocks, the directory entry).
const FS_SLACK: u64 = 64 * 1024;

/// Bytes a directory keeps free: what `diskUsageThreshold` leaves of its total.
pub(crate) fn reserve(total: u64, threshold: f64) -> u64 {
    total.saturating_sub((total as f64 * threshold).floor() as u64)
}

/// Room below the threshold in a directory with `total` and `free` bytes.
pub(crate) fn room(total: u64, free: u64, threshold: f64) -> u64 {
    free.saturating_sub(reserve(total, threshold))
}

/// An upper bound of the disk space a segment of `data` payload bytes in `entries`
/// entries of `ledgers` ledgers takes.
pub(crate) fn segment_bytes(data: u64, entries: u64, ledgers: u64) -> u64 {
    let file = data
        + 4
        + FOOTER_LEDGER_HEADER as u64 * ledgers
        + FOOTER_ENTRY_LEN as u64 * entries
        + TRAILER_LEN as u64;
    round_up(file as usize, SECTOR) as u64 + FS_SLACK
}

/// The entries of a flushing half not yet in a segment: from `cursor` (the first
/// (ledger, entry) not written) on, in (ledger, entry) order, ledgers for which `keep`
/// is false (deleted since) left out.
pub(crate) fn pending<'a>(
    sorted: &[(u64, &'a BTreeMap<u64, CachedEntry>)],
    cursor: Option<(u64, u64)>,
    keep: impl Fn(u64) -> bool,
) -> Vec<(u64, Vec<(u64, &'a CachedEntry)>)> {
    let (cl, ce) = cursor.unwrap_or((0, 0));
    sorted
        .iter()
        .filter(|(l, _)| *l >= cl && keep(*l))
        .map(|(l, m)| {
            let from = if *l == cl { ce } else { 0 };
            (
                *l,
                m.range(from..).map(|(e, b)| (*e, b)).collect::<Vec<_>>(),
            )
        })
        .filter(|(_, v)| !v.is_empty())
        .collect()
}

/// Cuts the next segment off `pending`: as many entries as fit in `limit` bytes (at
/// least one). Returns the segment and the cursor of the first entry left over (None
/// when everything was taken).
pub(crate) fn cut<'a>(
    pending: Vec<(u64, Vec<(u64, &'a CachedEntry)>)>,
    limit: u64,
) -> (SegmentInput<'a>, Option<(u64, u64)>) {
    let (mut data, mut entries, mut ledgers) = (0u64, 0u64, 0u64);
    let mut out: Vec<(u64, Vec<(u64, &'a CachedEntry)>)> = Vec::new();
    for (l, list) in pending {
        let mut taken = Vec::new();
        for (e, b) in list {
            let fits = segment_bytes(
                data + b.data.len() as u64,
                entries + 1,
                ledgers + u64::from(taken.is_empty()),
            ) <= limit;
            if !fits && entries > 0 {
                if !taken.is_empty() {
                    out.push((l, taken));
                }
                return (SegmentInput { ledgers: out }, Some((l, e)));
            }
            data += b.data.len() as u64;
            entries += 1;
            if taken.is_empty() {
                ledgers += 1;
            }
            taken.push((e, b));
        }
        out.push((l, taken));
    }
    (SegmentInput { ledgers: out }, None)
}

impl Shared {
    /// A directory with room for at least `need` bytes, and that room. The best
    /// candidate (`pick_dir`) has its space read again; one without room is marked
    /// `Full` and the next is tried. ENOSPC when every directory is full.
    pub(crate) fn pick_dir_with_room(
        &self,
        disk: &mut dyn Disk,
        need: u64,
    ) -> Result<(usize, u64)> {
        loop {
            let dir = {
                let g = self.inner.lock();
                let d = Self::pick_dir(&g);
                if g.dir_states[d] == DirState::Full {
                    return Err(Error::no_room(format!(
                        "flushing: no ledger directory has room for a segment of {need} bytes"
                    )));
                }
                d
            };
            let space = disk
                .space(&self.dirs[dir])
                .map_err(|e| Error::io(format!("statvfs {}", self.dirs[dir].display()), e))?;
            let room = room(
                space.total_bytes,
                space.free_bytes,
                self.cfg.disk_usage_threshold,
            );
            let mut g = self.inner.lock();
            g.dir_free[dir] = space.free_bytes;
            if room >= need {
                return Ok((dir, room));
            }
            tracing::warn!(
                dir = %self.dirs[dir].display(),
                free = space.free_bytes,
                need,
                "ledger directory full: no room for the next segment"
            );
            g.dir_states[dir] = DirState::Full;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn cached(fill: u8, len: usize) -> CachedEntry {
        CachedEntry {
            data: Bytes::from(vec![fill; len]),
            crc: 0,
        }
    }

    #[test]
    fn cut_bounds_segments_and_resumes_at_the_cursor() {
        let mut a = BTreeMap::new();
        let mut b = BTreeMap::new();
        for e in 0..10u64 {
            a.insert(e, cached(1, 100_000));
            b.insert(e, cached(2, 100_000));
        }
        let sorted = vec![(1u64, &a), (2u64, &b)];
        let limit = segment_bytes(300_000, 3, 1);
        let mut cursor = None;
        let mut segments = Vec::new();
        loop {
            let p = pending(&sorted, cursor, |_| true);
            if p.is_empty() {
                break;
            }
            let (input, next) = cut(p, limit);
            let n: usize = input.ledgers.iter().map(|(_, v)| v.len()).sum();
            let data: u64 = input
                .ledgers
                .iter()
                .flat_map(|(_, v)| v.iter().map(|(_, b)| b.data.len() as u64))
                .sum();
            assert!(
                segment_bytes(data, n as u64, input.ledgers.len() as u64) <= limit,
                "segment within the limit"
            );
            segments.push(n);
            cursor = next;
            if next.is_none() {
                break;
            }
        }
        assert_eq!(segments.iter().sum::<usize>(), 20, "every entry once");
        assert!(segments.len() >= 7, "{segments:?}");
        // One entry larger than the limit still goes, alone.
        let mut big = BTreeMap::new();
        big.insert(0u64, cached(0, 1_000_000));
        let (input, next) = cut(pending(&[(3, &big)], None, |_| true), limit);
        assert_eq!((input.ledgers.len(), next), (1, None));
        // Deleted ledgers are left out.
        assert_eq!(pending(&sorted, None, |l| l == 2).len(), 1);
    }

    #[test]
    fn room_keeps_the_threshold_free() {
        assert_eq!(room(1000, 100, 0.95), 50);
        assert_eq!(room(1000, 40, 0.95), 0);
        assert_eq!(room(1000, 40, 1.0), 40);
    }
}
