//! Bookie and ledger listings: GET_BOOKIE_INFO (docs/semantics.md §12: total and free bytes over the
//! ledger directories' file systems) and GET_LIST_OF_ENTRIES_OF_LEDGER (docs/semantics.md §13: the
//! availability bitmap of stored entries, which Java's DbLedgerStorage never answers).

use super::status::{status, At};
use super::{Bookie, Reply, Status};
use crate::storage::LedgerId;

impl Bookie {
    pub(super) fn bookie_info(&self, requested: i64) -> Reply {
        match crate::storage::disk_space(&self.options.ledger_dirs) {
            Ok((total, free)) => Reply::BookieInfo {
                status: Status::Ok,
                total: (requested & 0x1 != 0).then_some(total.min(i64::MAX as u64) as i64),
                free: (requested & 0x2 != 0).then_some(free.min(i64::MAX as u64) as i64),
            },
            Err(e) => Reply::BookieInfo {
                status: status(&e, At::DiskSpace),
                total: None,
                free: None,
            },
        }
    }

    pub(super) fn list_entries(&self, ledger: LedgerId) -> Reply {
        match self.store.storage.entry_ids(ledger) {
            Ok(ids) => Reply::ListEntries {
                status: Status::Ok,
                availability: Some(bk_proto::availability::encode_availability(ids)),
            },
            Err(e) => Reply::ListEntries {
                status: status(&e, At::Storage),
                availability: None,
            },
        }
    }
}
