//! Bounded read cache filled by read-ahead, plus the per-ledger "last entry read"
//! used to detect sequential (catch-up) readers.
//!
//! Invariants: `bytes` never exceeds the configured capacity after an insert
//! (eviction is FIFO); the sequential-reader map holds at most `MAX_TRACKED` ledgers;
//! every cached entry remembers the (segment, offset) of the copy it was read from,
//! and a lookup hits only if that is still the current copy, so a newer copy of the
//! same entry (a duplicate add) or a stale read-ahead can never be served.
//! Read-ahead batches in flight are registered here (at most one per reader
//! thread), so concurrent readers of one ledger (a catch-up reader at queue depth
//! > 1) wait for the batch covering their entry instead of each reading a batch.

use bytes::Bytes;
use foldhash::HashMap;
use std::collections::{HashSet, VecDeque};

const MAX_TRACKED: usize = 16 * 1024;

/// FIFO-evicted cache of entries read ahead.
#[derive(Default)]
pub struct ReadCache {
    map: HashMap<(u64, u64), (u64, u64, Bytes)>,
    order: VecDeque<(u64, u64)>,
    bytes: usize,
    capacity: usize,
    /// ledger -> (last entry read, length of the sequential run ending there)
    last_read: HashMap<u64, (u64, u32)>,
    /// Read-ahead batches being read: (ledger, first entry, last entry). One per
    /// reader thread at most (registered and removed by the thread reading it).
    inflight: Vec<(u64, u64, u64)>,
}

impl ReadCache {
    pub fn new(capacity: usize) -> Self {
        ReadCache {
            capacity,
            ..Default::default()
        }
    }
    pub fn bytes(&self) -> usize {
        self.bytes
    }
    pub fn count(&self) -> usize {
        self.map.len()
    }
    /// The cached entry, if it was read from copy (`seg`, `offset`).
    pub fn get(&self, ledger: u64, entry: u64, seg: u64, offset: u64) -> Option<Bytes> {
        match self.map.get(&(ledger, entry)) {
            Some((s, o, b)) if *s == seg && *o == offset => Some(b.clone()),
            _ => None,
        }
    }
    /// Inserts, evicting the oldest entries to stay within capacity. Entries larger
    /// than half the capacity are not cached.
    pub fn insert(&mut self, ledger: u64, entry: u64, seg: u64, offset: u64, data: Bytes) {
        if data.len() > self.capacity / 2 {
            return;
        }
        self.remove(ledger, entry);
        while self.bytes + data.len() > self.capacity {
            let Some(k) = self.order.pop_front() else {
                break;
            };
            if let Some(old) = self.map.remove(&k) {
                self.bytes -= old.2.len();
            }
        }
        self.bytes += data.len();
        self.map.insert((ledger, entry), (seg, offset, data));
        self.order.push_back((ledger, entry));
        // Keep the order queue from growing without bound through stale keys.
        if self.order.len() > 2 * self.map.len() + 1024 {
            let map = &self.map;
            self.order.retain(|k| map.contains_key(k));
        }
    }
    pub fn remove(&mut self, ledger: u64, entry: u64) {
        if let Some(old) = self.map.remove(&(ledger, entry)) {
            self.bytes -= old.2.len();
        }
    }
    /// Drops all entries of the given ledgers (one pass).
    pub fn remove_ledgers(&mut self, ledgers: &HashSet<u64>) {
        if ledgers.is_empty() {
            return;
        }
        let mut freed = 0;
        self.map.retain(|(l, _), v| {
            let keep = !ledgers.contains(l);
            if !keep {
                freed += v.2.len();
            }
            keep
        });
        self.bytes -= freed;
        self.order.retain(|(l, _)| !ledgers.contains(l));
        self.last_read.retain(|l, _| !ledgers.contains(l));
    }
    /// Whether a read-ahead batch being read covers `entry` of `ledger`.
    pub fn inflight_covers(&self, ledger: u64, entry: u64) -> bool {
        self.inflight
            .iter()
            .any(|&(l, a, b)| l == ledger && a <= entry && entry <= b)
    }
    /// Registers a read-ahead batch being read (`first..=last`).
    pub fn start_inflight(&mut self, ledger: u64, first: u64, last: u64) {
        self.inflight.push((ledger, first, last));
    }
    /// Removes a batch registered by `start_inflight`.
    pub fn end_inflight(&mut self, ledger: u64, first: u64) {
        if let Some(i) = self
            .inflight
            .iter()
            .position(|&(l, a, _)| l == ledger && a == first)
        {
            self.inflight.swap_remove(i);
        }
    }
    /// Records a read of `entry` and says whether it continues a sequential scan: the
    /// two previous reads of this ledger were `entry - 2` and `entry - 1` (one match
    /// is too often a coincidence among random readers, and read-ahead is costly).
    pub fn note_read(&mut self, ledger: u64, entry: u64) -> bool {
        let prev = self.last_read.get(&ledger).copied();
        let run = match prev {
            Some((last, run)) if entry.checked_sub(1) == Some(last) => run.saturating_add(1),
            _ => 0,
        };
        if self.last_read.len() >= MAX_TRACKED && prev.is_none() {
            self.last_read.clear();
        }
        self.last_read.insert(ledger, (entry, run));
        run >= 2
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_fifo() {
        let mut c = ReadCache::new(10);
        for e in 0..10 {
            c.insert(1, e, 5, e, Bytes::from_static(b"abc"));
            assert!(c.bytes() <= 10);
        }
        assert!(c.get(1, 9, 5, 9).is_some());
        assert!(c.get(1, 9, 6, 9).is_none(), "another copy is a miss");
        assert!(c.get(1, 0, 5, 0).is_none());
        c.insert(1, 99, 5, 0, Bytes::from(vec![0; 6]));
        assert!(
            c.get(1, 99, 5, 0).is_none(),
            "larger than half is not cached"
        );
        assert!(!c.note_read(2, 5));
        assert!(!c.note_read(2, 6), "one step is not yet a scan");
        assert!(c.note_read(2, 7));
        assert!(!c.note_read(2, 3));
        c.remove_ledgers(&[1].into_iter().collect());
        assert_eq!(c.bytes(), 0);
        c.start_inflight(3, 10, 20);
        assert!(c.inflight_covers(3, 10) && c.inflight_covers(3, 20));
        assert!(!c.inflight_covers(3, 21) && !c.inflight_covers(4, 15));
        c.end_inflight(3, 10);
        assert!(!c.inflight_covers(3, 15));
    }
}
