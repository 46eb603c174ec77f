//! In-memory test doubles for [`LedgerStorage`] and [`JournalSink`].
//!
//! Only tests use these (the binary always runs bk-journal + bk-entrylog). They implement
//! the same contracts as the real crates: master-key rules, fence flag, explicit LAC,
//! overwrite on duplicate add, and a journal whose acknowledgements can be held back
//! (`MemJournal::hold`) so tests can prove that nothing is answered before durability.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use bytes::Bytes;
use parking_lot::Mutex;

use super::{
    AckMode, Checkpointer, Durable, EntryId, JournalRecord, JournalSink, LedgerId, LedgerMeta,
    LedgerStorage, StorageError,
};

/// What `fail_reads` returns: an entry-log I/O error, as a failing disk would give.
fn injected_read_failure() -> StorageError {
    StorageError::from(bk_entrylog::Error::Io {
        context: "injected read failure".into(),
        source: std::io::Error::other("injected"),
    })
}

#[derive(Default)]
struct MemLedger {
    meta: LedgerMeta,
    entries: BTreeMap<EntryId, Bytes>,
}

/// Ledger storage in a map. `fail_reads` turns every read into an I/O error.
#[derive(Default)]
pub struct MemStorage {
    ledgers: Mutex<HashMap<LedgerId, MemLedger>>,
    pub fail_reads: AtomicBool,
    pub flushes: AtomicU64,
    /// Every add blocks this many milliseconds (a stand-in for a throttling write cache).
    pub add_delay_ms: AtomicU64,
}

impl MemStorage {
    pub fn new() -> Self {
        Self::default()
    }
}

impl LedgerStorage for MemStorage {
    fn ledger_meta(&self, ledger: LedgerId) -> Result<Option<LedgerMeta>, StorageError> {
        Ok(self.ledgers.lock().get(&ledger).map(|l| l.meta.clone()))
    }

    fn set_master_key(&self, ledger: LedgerId, key: &[u8]) -> Result<(), StorageError> {
        let mut ledgers = self.ledgers.lock();
        let l = ledgers.entry(ledger).or_insert_with(|| MemLedger {
            meta: LedgerMeta {
                master_key: Bytes::copy_from_slice(key),
                ..LedgerMeta::default()
            },
            entries: BTreeMap::new(),
        });
        let stored = &l.meta.master_key;
        if stored.iter().all(|b| *b == 0) {
            l.meta.master_key = Bytes::copy_from_slice(key);
        } else if stored.as_ref() != key && !key.iter().all(|b| *b == 0) {
            return Err(StorageError::MasterKeyConflict(ledger));
        }
        Ok(())
    }

    fn set_fenced(&self, ledger: LedgerId) -> Result<bool, StorageError> {
        let mut ledgers = self.ledgers.lock();
        let l = ledgers
            .get_mut(&ledger)
            .ok_or(StorageError::NoLedger(ledger))?;
        let changed = !l.meta.fenced;
        l.meta.fenced = true;
        Ok(changed)
    }

    fn set_explicit_lac(&self, ledger: LedgerId, body: Bytes) -> Result<(), StorageError> {
        let mut ledgers = self.ledgers.lock();
        let l = ledgers
            .get_mut(&ledger)
            .ok_or(StorageError::NoLedger(ledger))?;
        l.meta.explicit_lac = Some(body);
        Ok(())
    }

    fn add_entry(&self, ledger: LedgerId, entry: EntryId, body: Bytes) -> Result<(), StorageError> {
        let delay = self.add_delay_ms.load(Ordering::Relaxed);
        if delay > 0 {
            std::thread::sleep(std::time::Duration::from_millis(delay));
        }
        let mut ledgers = self.ledgers.lock();
        let l = ledgers
            .get_mut(&ledger)
            .ok_or(StorageError::NoLedger(ledger))?;
        l.entries.insert(entry, body);
        Ok(())
    }

    fn get_entry(&self, ledger: LedgerId, entry: EntryId) -> Result<Bytes, StorageError> {
        if self.fail_reads.load(Ordering::Relaxed) {
            return Err(injected_read_failure());
        }
        let ledgers = self.ledgers.lock();
        let l = ledgers.get(&ledger).ok_or(StorageError::NoLedger(ledger))?;
        l.entries
            .get(&entry)
            .cloned()
            .ok_or(StorageError::NoEntry(ledger, entry))
    }

    fn last_entry(&self, ledger: LedgerId) -> Result<Bytes, StorageError> {
        if self.fail_reads.load(Ordering::Relaxed) {
            return Err(injected_read_failure());
        }
        let ledgers = self.ledgers.lock();
        let l = ledgers.get(&ledger).ok_or(StorageError::NoLedger(ledger))?;
        l.entries
            .values()
            .next_back()
            .cloned()
            .ok_or(StorageError::NoEntry(ledger, -1))
    }

    fn entry_ids(&self, ledger: LedgerId) -> Result<Vec<EntryId>, StorageError> {
        let ledgers = self.ledgers.lock();
        let l = ledgers.get(&ledger).ok_or(StorageError::NoLedger(ledger))?;
        Ok(l.entries.keys().copied().collect())
    }

    fn needs_flush(&self) -> bool {
        false
    }

    fn flush(&self) -> Result<(), StorageError> {
        self.flushes.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

/// A journal that records what was appended. While `hold` is set, acknowledgements wait
/// until it is cleared (a test's stand-in for a slow fsync); `fail` fails every append.
pub struct MemJournal {
    pub records: Mutex<Vec<(JournalRecord, AckMode)>>,
    release: tokio::sync::watch::Sender<bool>,
    pub fail: AtomicBool,
}

impl Default for MemJournal {
    fn default() -> Self {
        MemJournal {
            records: Mutex::new(Vec::new()),
            release: tokio::sync::watch::channel(true).0,
            fail: AtomicBool::new(false),
        }
    }
}

impl MemJournal {
    pub fn new() -> Self {
        Self::default()
    }

    /// Holds back (true) or releases (false) every acknowledgement.
    pub fn hold(&self, hold: bool) {
        self.release.send_replace(!hold);
    }

    /// The records appended so far.
    pub fn snapshot(&self) -> Vec<JournalRecord> {
        self.records.lock().iter().map(|(r, _)| r.clone()).collect()
    }
}

impl JournalSink for MemJournal {
    fn append(&self, record: JournalRecord, ack: AckMode) -> Durable {
        self.records.lock().push((record, ack));
        if self.fail.load(Ordering::Relaxed) {
            return super::durable_ready(Err(StorageError::Journal(
                bk_journal::JournalError::Fatal("injected fsync failure".into()),
            )));
        }
        let mut released = self.release.subscribe();
        Box::pin(async move {
            released
                .wait_for(|r| *r)
                .await
                .map_err(|_| StorageError::Journal(bk_journal::JournalError::ShutDown))?;
            Ok(())
        })
    }
}

impl Checkpointer for MemJournal {
    fn mark(&self) -> Result<Vec<u64>, StorageError> {
        Ok(vec![self.records.lock().len() as u64])
    }

    fn checkpoint(&self, _mark: &[u64], _storage_epoch: u64) -> Result<(), StorageError> {
        Ok(())
    }
}
