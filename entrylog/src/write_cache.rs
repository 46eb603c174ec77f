//! One half of the write cache: entries added since the last swap, by ledger and
//! entry id, with byte and entry counts. The entry log keeps two: the active half
//! takes adds, the other (behind an `Arc`, immutable) is being flushed and stays
//! readable until its segment is durable and indexed.
//!
//! Each entry is held with its entry CRC (`format::entry_crc`), computed once when the
//! entry arrived (by the bookie, which gives the journal record the same value), so the
//! flush writes it into the segment footer without a second pass over the payload.
//!
//! Invariant: `bytes` is the sum of payload lengths and `count` the number of entries
//! held; a duplicate add replaces the earlier copy (the later copy wins); every held
//! `crc` equals `entry_crc` of its ledger, entry and data (checked at flush in debug
//! builds).

use bytes::Bytes;
use foldhash::HashMap;
use std::collections::BTreeMap;

/// An entry as the cache holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CachedEntry {
    pub data: Bytes,
    /// `format::entry_crc(ledger, entry, &data)`.
    pub crc: u32,
}

/// One half of the write cache.
#[derive(Default, Debug)]
pub struct CacheHalf {
    ledgers: HashMap<u64, BTreeMap<u64, CachedEntry>>,
    bytes: usize,
    count: usize,
}

impl CacheHalf {
    /// Payload bytes held.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
    /// Entries held.
    pub fn count(&self) -> usize {
        self.count
    }
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
    /// Inserts (or replaces) an entry.
    pub fn put(&mut self, ledger: u64, entry: u64, data: Bytes, crc: u32) {
        let len = data.len();
        match self
            .ledgers
            .entry(ledger)
            .or_default()
            .insert(entry, CachedEntry { data, crc })
        {
            Some(old) => self.bytes = self.bytes - old.data.len() + len,
            None => {
                self.bytes += len;
                self.count += 1;
            }
        }
    }
    /// The entry, if held.
    pub fn get(&self, ledger: u64, entry: u64) -> Option<&Bytes> {
        self.ledgers.get(&ledger)?.get(&entry).map(|c| &c.data)
    }
    /// The highest entry held for the ledger.
    pub fn last(&self, ledger: u64) -> Option<(u64, &Bytes)> {
        self.ledgers
            .get(&ledger)?
            .last_key_value()
            .map(|(e, c)| (*e, &c.data))
    }
    /// Entry ids held for the ledger, ascending.
    pub fn entry_ids(&self, ledger: u64) -> impl Iterator<Item = u64> + '_ {
        self.ledgers
            .get(&ledger)
            .into_iter()
            .flat_map(|m| m.keys().copied())
    }
    /// Drops every entry of the ledger.
    pub fn remove_ledger(&mut self, ledger: u64) {
        if let Some(m) = self.ledgers.remove(&ledger) {
            self.count -= m.len();
            self.bytes -= m.values().map(|c| c.data.len()).sum::<usize>();
        }
    }
    /// Ledgers held, ascending, with their entries (ascending).
    pub fn sorted_ledgers(&self) -> Vec<(u64, &BTreeMap<u64, CachedEntry>)> {
        let mut v: Vec<_> = self.ledgers.iter().map(|(l, m)| (*l, m)).collect();
        v.sort_unstable_by_key(|(l, _)| *l);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accounting() {
        let mut c = CacheHalf::default();
        c.put(1, 2, Bytes::from_static(b"abc"), 0);
        c.put(1, 1, Bytes::from_static(b"a"), 0);
        c.put(1, 2, Bytes::from_static(b"abcdef"), 0);
        c.put(5, 0, Bytes::from_static(b"xy"), 0);
        assert_eq!((c.bytes(), c.count()), (9, 3));
        assert_eq!(c.last(1).map(|(e, _)| e), Some(2));
        assert_eq!(c.entry_ids(1).collect::<Vec<_>>(), vec![1, 2]);
        c.remove_ledger(1);
        assert_eq!((c.bytes(), c.count()), (2, 1));
        assert_eq!(c.sorted_ledgers().len(), 1);
    }
}
