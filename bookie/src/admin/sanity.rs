//! `GET /api/v1/bookie/sanity`: writes and reads back a ledger on this bookie, the local
//! equivalent of Java's `SanityTestCommand` (which a `BookieSanityService` runs through a
//! BookKeeper client pinned to the local bookie).
//!
//! What it does: takes a fresh ledger id from ZooKeeper's id generator (an ephemeral
//! sequential `<ledgers root>/idgen/ID-<n>`, deleted again, as Java's `ZkLedgerIdGenerator`
//! does, so no client ever gets the same id), adds [`ENTRIES`] entries `entry-<i>` (MAC digest,
//! empty password, as Java) through this bookie's own request path — each acknowledged only
//! after its journal fsync, like any add — then reads every entry back, verifies its digest
//! and compares the payload. Unlike Java it writes no ledger metadata: the ledger exists only
//! in this bookie's storage, and the next GC round deletes it (a local ledger without
//! metadata), where Java's client deletes its ledger's metadata itself.
//!
//! Shape: `{"passed": bool, "readOnly": bool}` (200 whichever way the test went, as Java);
//! `readOnly` is `forceReadOnlyBookie` (the test is then not run and `passed` is false, as
//! Java); a bookie in read-only mode for another reason fails the test (its adds are refused).
//! One test runs at a time; a second waits up to [`BUSY_WAIT`] and then answers 500; the
//! whole test is bounded by [`TEST_TIMEOUT`] (a timeout is `passed: false`). 503 before the
//! bookie is started or without ZooKeeper (no ledger id to take).

use std::sync::Arc;
use std::time::Duration;

use axum::http::{Method, StatusCode};
use axum::response::Response;
use bk_proto::{DigestManager, DigestType, EntryHeader, MasterKey};
use serde_json::json as j;
use tokio::sync::Semaphore;

use super::cluster::zk_or_answer;
use super::ledger_read::read_entry;
use super::zk::Zk;
use super::{json, no_metadata_store, not_started, text, wrong_method, Shared};
use crate::handlers::{AddOp, Bookie, Op, Reply, Status};

/// Entries written and read (Java's `SanityFlags.entries` default).
pub const ENTRIES: i64 = 10;
/// Bound for the whole test.
pub const TEST_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a second request waits for the running one (Java's 5 s).
pub const BUSY_WAIT: Duration = Duration::from_secs(5);

static ONE_AT_A_TIME: Semaphore = Semaphore::const_new(1);

/// `GET /api/v1/bookie/sanity`.
pub(super) async fn sanity(state: Shared, method: Method) -> Response {
    if method != Method::GET {
        return wrong_method("Only support GET method to retrieve bookie sanity state.");
    }
    if state.cfg.force_read_only_bookie {
        return json(StatusCode::OK, &j!({ "passed": false, "readOnly": true }));
    }
    let Some(bookie) = state.bookie().cloned() else {
        return not_started();
    };
    let zk = zk_or_answer!(state);
    let Ok(Ok(_permit)) = tokio::time::timeout(BUSY_WAIT, ONE_AT_A_TIME.acquire()).await else {
        return text(
            StatusCode::INTERNAL_SERVER_ERROR,
            "Timing out due to max number of sanity request are running concurrently",
        );
    };
    let passed = match tokio::time::timeout(TEST_TIMEOUT, run(&zk, &bookie)).await {
        Ok(Ok(ledger)) => {
            tracing::info!(ledger, entries = ENTRIES, "bookie sanity test succeeded");
            true
        }
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "bookie sanity test failed");
            false
        }
        Err(_) => {
            tracing::warn!(timeout = ?TEST_TIMEOUT, "bookie sanity test timed out");
            false
        }
    };
    json(StatusCode::OK, &j!({ "passed": passed, "readOnly": false }))
}

/// The test; returns the ledger it used.
async fn run(zk: &Zk, bookie: &Arc<Bookie>) -> Result<i64, String> {
    let ledger = fresh_ledger_id(zk).await?;
    let digest = DigestManager::new(DigestType::Hmac, b"");
    let key = MasterKey::from_password(b"").to_bytes();
    let mut length = 0i64;
    for entry in 0..ENTRIES {
        let payload = format!("entry-{entry}");
        length += payload.len() as i64;
        let header = EntryHeader {
            ledger_id: ledger,
            entry_id: entry,
            last_add_confirmed: entry - 1,
            length,
        };
        let reply = bookie
            .dispatch(Op::Add(AddOp {
                master_key: key.clone(),
                body: digest.build_entry(&header, payload.as_bytes()),
                recovery: false,
                high_priority: false,
                deferred_sync: false,
            }))
            .await;
        match reply {
            Reply::Add { status: Status::Ok } => {}
            other => {
                return Err(format!(
                    "add of entry {entry} of ledger {ledger}: {:?}",
                    other.status()
                ))
            }
        }
    }
    for entry in 0..ENTRIES {
        let body = read_entry(bookie, ledger, entry)
            .await?
            .ok_or_else(|| format!("entry {entry} of ledger {ledger} not found after its add"))?;
        let (_, payload) = digest.verify_entry(&body).map_err(|e| e.to_string())?;
        let want = format!("entry-{entry}");
        if payload.as_ref() != want.as_bytes() {
            return Err(format!(
                "Failed validation of received message - Expected: {want}, Actual: {}",
                String::from_utf8_lossy(&payload)
            ));
        }
    }
    Ok(ledger)
}

/// A ledger id no client will be given: Java's `ZkLedgerIdGenerator` (the hierarchical
/// layout's id source below 2^31) takes ids from the same sequence.
async fn fresh_ledger_id(zk: &Zk) -> Result<i64, String> {
    let prefix = zk.path("idgen/ID-");
    let seq = zk.create_ephemeral_sequential(&prefix).await?;
    if !(0..i64::from(i32::MAX)).contains(&seq) {
        return Err(format!(
            "ledger id sequence {seq} is past the 32-bit generator"
        ));
    }
    // The node only reserved the number; Java deletes it at once too.
    if let Err(e) = zk.delete(&format!("{prefix}{seq:010}")).await {
        tracing::warn!(error = %e, "sanity: could not delete the id generator node");
    }
    Ok(seq)
}
