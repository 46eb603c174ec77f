//! After the schedule: every entry copy a bookie acknowledged is read back from that bookie
//! and compared byte for byte with what was sent. The classes:
//!
//! - **verified**: the same bytes;
//! - **detected**: EIO from a bookie the drill injected read faults into (bit flips, EIO on
//!   reads): the corruption was reported, not served;
//! - **lost**: anything else the bookie answers (ENOENTRY, ENOLEDGER, EIO without an injected
//!   read fault, other bytes): it promised the entry was durable and cannot give it back;
//! - **unreachable**: no answer after three tries: not proven either way.
//!
//! Any lost or unreachable copy fails the drill. An entry whose every acknowledged copy is
//! lost is also counted on its own (what a reader of the ledger would have lost).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use serde::Serialize;
use tokio::sync::Semaphore;

use super::load::{fingerprint, Load, Record, REQUEST_TIMEOUT};
use crate::client::RequestError;

/// Reads in flight while verifying.
const VERIFY_DEPTH: usize = 32;
/// Tries per copy before it counts as unreachable.
const TRIES: usize = 3;

/// What verification found.
#[derive(Debug, Default, Clone, Serialize, PartialEq)]
pub struct Verdict {
    /// Entries acknowledged (A of W answered OK).
    pub acknowledged_entries: u64,
    /// Entry copies checked: (entry, bookie) pairs where the bookie answered OK.
    pub copies: u64,
    pub verified: u64,
    pub detected: u64,
    pub lost: u64,
    pub unreachable: u64,
    /// Acknowledged entries none of whose acknowledged copies was verified or detected.
    pub entries_lost: u64,
    /// Up to 20 lost copies: "ledger L entry E on bookie B: why".
    pub examples: Vec<String>,
}

enum Class {
    Verified,
    Detected,
    Lost(String),
    Unreachable(String),
}

async fn check(load: &Load, r: &Record, b: usize, read_faults: bool) -> Class {
    let mut last = String::new();
    for attempt in 0..TRIES {
        if attempt > 0 {
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        }
        let Some(conn) = load.conn(b).await else {
            last = "no connection".into();
            tokio::time::sleep(std::time::Duration::from_millis(250)).await;
            continue;
        };
        match conn.read(r.ledger, r.entry, REQUEST_TIMEOUT).await {
            Ok(bytes) if bytes.len() == r.len && fingerprint(&bytes) == r.fingerprint => {
                return Class::Verified
            }
            Ok(bytes) => {
                return Class::Lost(format!(
                    "other bytes ({} B, {} B acknowledged)",
                    bytes.len(),
                    r.len
                ))
            }
            Err(RequestError::Bookie("EIO")) if read_faults => return Class::Detected,
            Err(RequestError::Bookie(code)) => return Class::Lost(format!("answered {code}")),
            Err(e) => last = e.to_string(),
        }
    }
    Class::Unreachable(last)
}

/// Verifies every acknowledged copy; `read_faults[b]`: the drill injected read faults into
/// bookie b.
pub async fn verify(load: &Arc<Load>, read_faults: &[bool]) -> Verdict {
    load.disconnect_all().await;
    let records: Vec<Arc<Record>> = load
        .records
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    let sem = Arc::new(Semaphore::new(VERIFY_DEPTH));
    let mut tasks = Vec::new();
    for r in records {
        let mask = r.acked_by.load(Ordering::SeqCst);
        if mask == 0 {
            continue;
        }
        let acknowledged = r.acknowledged.load(Ordering::SeqCst);
        let (load, sem, read_faults) = (load.clone(), sem.clone(), read_faults.to_vec());
        tasks.push(tokio::spawn(async move {
            let mut out = Vec::new();
            for b in (0..64).filter(|b| mask & (1u64 << b) != 0) {
                let _permit = sem.acquire().await;
                let faults = read_faults.get(b).copied().unwrap_or(false);
                out.push((b, check(&load, &r, b, faults).await));
            }
            (r, acknowledged, out)
        }));
    }
    let mut v = Verdict::default();
    for t in tasks {
        let Ok((r, acknowledged, copies)) = t.await else {
            v.unreachable += 1;
            continue;
        };
        v.acknowledged_entries += u64::from(acknowledged);
        // Served intact, or its corruption reported: not silently gone.
        let mut readable = false;
        for (b, class) in copies {
            v.copies += 1;
            match class {
                Class::Verified => {
                    v.verified += 1;
                    readable = true;
                }
                Class::Detected => {
                    v.detected += 1;
                    readable = true;
                }
                Class::Lost(why) => {
                    v.lost += 1;
                    if v.examples.len() < 20 {
                        v.examples.push(format!(
                            "ledger {} entry {} on bookie {b}: {why}",
                            r.ledger, r.entry
                        ));
                    }
                }
                Class::Unreachable(why) => {
                    v.unreachable += 1;
                    if v.examples.len() < 20 {
                        v.examples.push(format!(
                            "ledger {} entry {} on bookie {b}: unreachable ({why})",
                            r.ledger, r.entry
                        ));
                    }
                }
            }
        }
        if acknowledged && !readable {
            v.entries_lost += 1;
        }
    }
    v
}

impl Verdict {
    /// No copy lost, none unverified, and something was acknowledged at all.
    pub fn passed(&self) -> bool {
        self.lost == 0 && self.unreachable == 0 && self.acknowledged_entries > 0
    }
}
