//! In-memory index: ledger -> persisted state and the runs of its entries in
//! segments; segment id -> its metadata (directory, seq, live bytes). Rebuilt at
//! start-up from segment footers and the ledger-state file only.
//!
//! Invariants:
//! - a ledger's `runs` are sorted by (seq, segment id); for an entry stored in several
//!   runs, the last run holding it (highest precedence) is the current copy;
//! - `SegmentMeta::live_bytes` is the sum of payload lengths of the current copies
//!   held by the segment whose ledger still exists; it only decreases after install;
//! - `seg_refs[ledger]` counts segments whose footer names the ledger (dead or not,
//!   and forgotten ones until their file is removed), so a deletion tombstone is kept
//!   while any footer could resurrect the ledger.

use crate::format::EntryLoc;
use bytes::Bytes;
use foldhash::HashMap;
use std::collections::BTreeMap;

/// A ledger's entries in one segment.
#[derive(Clone, Debug)]
pub struct Run {
    pub seg: u64,
    pub seq: u64,
    pub entries: Vec<EntryLoc>,
}

impl Run {
    fn first(&self) -> u64 {
        self.entries.first().map_or(u64::MAX, |e| e.entry)
    }
    fn last(&self) -> u64 {
        self.entries.last().map_or(0, |e| e.entry)
    }
    pub fn find(&self, entry: u64) -> Option<usize> {
        if self.entries.is_empty() || entry < self.first() || entry > self.last() {
            return None;
        }
        self.entries.binary_search_by_key(&entry, |e| e.entry).ok()
    }
}

/// Everything the entry log knows about one ledger.
#[derive(Clone, Debug, Default)]
pub struct LedgerMeta {
    pub fenced: bool,
    pub master_key: Option<Vec<u8>>,
    pub explicit_lac: Option<Bytes>,
    /// Highest LAC seen (entry LAC fields and explicit LAC), None until known.
    pub lac: Option<u64>,
    /// Generation counter value when the ledger was first seen by this process.
    pub created_gen: u64,
    pub runs: Vec<Run>,
}

impl LedgerMeta {
    /// The current copy of an entry: (segment, location, run index, index in run).
    pub fn lookup(&self, entry: u64) -> Option<(u64, EntryLoc, usize, usize)> {
        for (ri, r) in self.runs.iter().enumerate().rev() {
            if let Some(i) = r.find(entry) {
                return Some((r.seg, r.entries[i], ri, i));
            }
        }
        None
    }
    /// The highest entry id stored in segments, with its current copy.
    pub fn last(&self) -> Option<(u64, EntryLoc, usize, usize)> {
        let max = self
            .runs
            .iter()
            .filter(|r| !r.entries.is_empty())
            .map(|r| r.last())
            .max()?;
        self.lookup(max)
    }
    /// All entry ids in segments, ascending, without duplicates.
    pub fn entry_ids(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self
            .runs
            .iter()
            .flat_map(|r| r.entries.iter().map(|e| e.entry))
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }
}

/// One segment file.
#[derive(Clone, Debug)]
pub struct SegmentMeta {
    pub dir: usize,
    pub seq: u64,
    pub file_len: u64,
    /// Bytes of entry payloads (the data area).
    pub data_bytes: u64,
    /// Bytes of current copies of entries of existing ledgers.
    pub live_bytes: u64,
    /// Ledgers named in the footer.
    pub ledgers: Vec<u64>,
    /// Being compacted: neither GC nor another compaction removes it meanwhile.
    pub compacting: bool,
}

/// The index proper.
#[derive(Default)]
pub struct Index {
    pub ledgers: HashMap<u64, LedgerMeta>,
    pub segments: BTreeMap<u64, SegmentMeta>,
    pub seg_refs: HashMap<u64, u32>,
}

impl Index {
    /// Adds a segment's metadata (its runs are installed with [`Index::install_run`]).
    pub fn add_segment(&mut self, id: u64, meta: SegmentMeta) {
        for l in &meta.ledgers {
            *self.seg_refs.entry(*l).or_default() += 1;
        }
        self.segments.insert(id, meta);
    }

    /// Removes a segment's metadata (its runs must already be gone or dead) but keeps
    /// counting it in `seg_refs` while its file still exists: call
    /// [`Index::release_refs`] with its ledgers once the file is removed (until then,
    /// the tombstones of its ledgers are kept).
    pub fn forget_segment(&mut self, id: u64) -> Option<SegmentMeta> {
        self.segments.remove(&id)
    }

    /// Stops counting a removed segment file that named `ledgers`.
    pub fn release_refs(&mut self, ledgers: &[u64]) {
        for l in ledgers {
            if let Some(c) = self.seg_refs.get_mut(l) {
                *c -= 1;
                if *c == 0 {
                    self.seg_refs.remove(l);
                }
            }
        }
    }

    /// Installs a run of the highest precedence so far for this ledger (a flush, or a
    /// segment loaded at start-up in precedence order). Copies it supersedes stop
    /// counting as live in their segments. The ledger must exist.
    pub fn install_run(&mut self, ledger: u64, run: Run) {
        let Some(meta) = self.ledgers.get_mut(&ledger) else {
            return;
        };
        let mut live = 0u64;
        let (first, last) = (run.first(), run.last());
        let overlaps = meta
            .runs
            .iter()
            .any(|r| r.first() <= last && r.last() >= first);
        for e in &run.entries {
            live += e.stored_len();
            if overlaps {
                if let Some((seg, old, _, _)) = meta.lookup(e.entry) {
                    if let Some(s) = self.segments.get_mut(&seg) {
                        s.live_bytes = s.live_bytes.saturating_sub(old.stored_len());
                    }
                }
            }
        }
        if let Some(s) = self.segments.get_mut(&run.seg) {
            s.live_bytes += live;
        }
        let pos = meta
            .runs
            .partition_point(|r| (r.seq, r.seg) <= (run.seq, run.seg));
        meta.runs.insert(pos, run);
    }

    /// Removes a ledger: its runs stop counting as live. Returns its metadata.
    pub fn remove_ledger(&mut self, ledger: u64) -> Option<LedgerMeta> {
        let meta = self.ledgers.remove(&ledger)?;
        // Subtract each current copy once: walk runs newest first, skipping ids seen.
        let mut seen = std::collections::HashSet::new();
        for r in meta.runs.iter().rev() {
            let mut dead = 0;
            for e in &r.entries {
                if meta.runs.len() == 1 || seen.insert(e.entry) {
                    dead += e.stored_len();
                }
            }
            if let Some(s) = self.segments.get_mut(&r.seg) {
                s.live_bytes = s.live_bytes.saturating_sub(dead);
            }
        }
        Some(meta)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loc(entry: u64, offset: u64) -> EntryLoc {
        EntryLoc {
            entry,
            offset,
            len: 6,
            crc: 0,
        }
    }

    fn seg(ledgers: Vec<u64>) -> SegmentMeta {
        SegmentMeta {
            dir: 0,
            seq: 0,
            file_len: 4096,
            data_bytes: 0,
            live_bytes: 0,
            ledgers,
            compacting: false,
        }
    }

    #[test]
    fn newest_copy_wins_and_live_bytes_follow() {
        let mut ix = Index::default();
        ix.ledgers.insert(1, LedgerMeta::default());
        ix.add_segment(10, seg(vec![1]));
        ix.add_segment(11, seg(vec![1]));
        ix.install_run(
            1,
            Run {
                seg: 10,
                seq: 10,
                entries: vec![loc(0, 0), loc(1, 6)],
            },
        );
        ix.install_run(
            1,
            Run {
                seg: 11,
                seq: 11,
                entries: vec![loc(1, 0), loc(2, 6)],
            },
        );
        let m = &ix.ledgers[&1];
        assert_eq!(m.lookup(1).map(|x| x.0), Some(11));
        assert_eq!(m.lookup(0).map(|x| x.0), Some(10));
        assert_eq!(m.last().map(|x| x.1.entry), Some(2));
        assert_eq!(m.entry_ids(), vec![0, 1, 2]);
        // Entries of 6 bytes: segment 10 keeps entry 0's, segment 11 holds 1 and 2.
        assert_eq!(ix.segments[&10].live_bytes, 6);
        assert_eq!(ix.segments[&11].live_bytes, 12);
        ix.remove_ledger(1);
        assert_eq!(ix.segments[&10].live_bytes, 0);
        assert_eq!(ix.segments[&11].live_bytes, 0);
        assert_eq!(ix.seg_refs[&1], 2);
        for id in [10, 11] {
            let m = ix.forget_segment(id).unwrap();
            ix.release_refs(&m.ledgers);
        }
        assert!(ix.seg_refs.is_empty());
    }
}
