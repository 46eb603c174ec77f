//! Per-ledger state kept beside the entries: master key, fence flag, explicit LAC and
//! LAC, plus the ledger listing. All of it lives in the in-memory index and reaches
//! disk in the ledger-state file at the next flush.
//!
//! Invariants: an all-zero stored master key is replaced by the first non-zero one, a
//! different non-zero key is `MasterKeyConflict` (docs/semantics.md §3); writes to a deleted
//! ledger fail with `LedgerDeleted` so that journal replay cannot resurrect it.

use crate::index::LedgerMeta;
use crate::{format, Bytes, EntryLog, Error, Result, Shared};

fn explicit_lac_value(body: &[u8]) -> Option<u64> {
    let b: [u8; 8] = body.get(8..16)?.try_into().ok()?;
    let v = i64::from_be_bytes(b);
    (v >= 0).then_some(v as u64)
}

fn is_zero_key(k: &[u8]) -> bool {
    k.iter().all(|b| *b == 0)
}

impl EntryLog {
    /// Stores the master key (creating the ledger if unknown). An all-zero stored key is
    /// replaced; a different non-zero key is `MasterKeyConflict` (docs/semantics.md §3).
    pub fn set_master_key(&self, ledger: u64, key: &[u8]) -> Result<()> {
        let mut g = self.shared.inner.lock();
        let g = &mut *g;
        Shared::check_not_deleted(g, ledger)?;
        let gen = g.generation;
        let meta = g.index.ledgers.entry(ledger).or_insert_with(|| LedgerMeta {
            created_gen: gen,
            ..Default::default()
        });
        match &meta.master_key {
            Some(k) if k.as_slice() == key => Ok(()),
            Some(k) if !is_zero_key(k) && !is_zero_key(key) => {
                Err(Error::MasterKeyConflict(ledger))
            }
            Some(k) if !is_zero_key(k) => Ok(()),
            _ => {
                meta.master_key = Some(key.to_vec());
                Ok(())
            }
        }
    }

    /// The stored master key.
    pub fn master_key(&self, ledger: u64) -> Result<Option<Vec<u8>>> {
        let g = self.shared.inner.lock();
        let m = g
            .index
            .ledgers
            .get(&ledger)
            .ok_or(Error::NoLedger(ledger))?;
        Ok(m.master_key.clone())
    }

    /// Fences the ledger (creating it if unknown). Returns true if this call changed it.
    /// Durable after the next successful `flush()`; the bookie journals the fence first.
    pub fn set_fenced(&self, ledger: u64) -> Result<bool> {
        let mut g = self.shared.inner.lock();
        let g = &mut *g;
        Shared::check_not_deleted(g, ledger)?;
        let gen = g.generation;
        let meta = g.index.ledgers.entry(ledger).or_insert_with(|| LedgerMeta {
            created_gen: gen,
            ..Default::default()
        });
        let changed = !meta.fenced;
        meta.fenced = true;
        Ok(changed)
    }

    /// Whether the ledger is fenced.
    pub fn is_fenced(&self, ledger: u64) -> Result<bool> {
        let g = self.shared.inner.lock();
        Ok(g.index
            .ledgers
            .get(&ledger)
            .ok_or(Error::NoLedger(ledger))?
            .fenced)
    }

    /// Stores an explicit LAC body (creating the ledger if unknown); its LAC value
    /// (body bytes 8..16, big-endian) raises the ledger's LAC.
    pub fn set_explicit_lac(&self, ledger: u64, body: Bytes) -> Result<()> {
        if body.len() > format::MAX_EXPLICIT_LAC_BYTES {
            return Err(Error::InvalidInput(format!(
                "explicit LAC of {} bytes",
                body.len()
            )));
        }
        let mut g = self.shared.inner.lock();
        let g = &mut *g;
        Shared::check_not_deleted(g, ledger)?;
        let gen = g.generation;
        let meta = g.index.ledgers.entry(ledger).or_insert_with(|| LedgerMeta {
            created_gen: gen,
            ..Default::default()
        });
        if let Some(v) = explicit_lac_value(&body) {
            meta.lac = Some(meta.lac.map_or(v, |l| l.max(v)));
        }
        meta.explicit_lac = Some(body);
        Ok(())
    }

    /// The stored explicit LAC body, if any.
    pub fn explicit_lac(&self, ledger: u64) -> Result<Option<Bytes>> {
        let g = self.shared.inner.lock();
        Ok(g.index
            .ledgers
            .get(&ledger)
            .ok_or(Error::NoLedger(ledger))?
            .explicit_lac
            .clone())
    }

    /// The ledger's LAC: the maximum of the LAC fields (entry bytes 16..24) of entries
    /// added, and of explicit LACs; initialised from the last stored entry when not yet
    /// known (docs/semantics.md §8). None when nothing gives a LAC.
    pub fn lac(&self, ledger: u64) -> Result<Option<u64>> {
        self.shared.lac(ledger)
    }

    /// Whether the ledger exists (known and not deleted).
    pub fn ledger_exists(&self, ledger: u64) -> bool {
        self.shared.inner.lock().index.ledgers.contains_key(&ledger)
    }

    /// All ledger ids, ascending (for GC).
    pub fn ledgers(&self) -> Vec<u64> {
        let g = self.shared.inner.lock();
        let mut v: Vec<u64> = g.index.ledgers.keys().copied().collect();
        v.sort_unstable();
        v
    }

    /// The ids of the entries stored for the ledger, ascending (write cache and segments).
    pub fn entries_of_ledger(&self, ledger: u64) -> Result<Vec<u64>> {
        let g = self.shared.inner.lock();
        let m = g
            .index
            .ledgers
            .get(&ledger)
            .ok_or(Error::NoLedger(ledger))?;
        let mut v = m.entry_ids();
        v.extend(g.active.entry_ids(ledger));
        if let Some((f, _)) = &g.flushing {
            v.extend(f.entry_ids(ledger));
        }
        v.sort_unstable();
        v.dedup();
        Ok(v)
    }
}
