//! `GET /api/v1/bookie/sanity`: writes and reads back a ledger on this bookie, the local
//! equivalent of Java's `SanityTestCommand` (which a `BookieSanityService` runs through a
//! BookKeeper client pinned to the local bookie).
//!
//! What it does: takes a fresh ledger id from ZooKeeper's id generator (an ephemeral
//! sequential `<ledgers root>/idgen/ID-<n>`, deleted again, as Java's `ZkLedgerIdGenerator`
//! does, so no client ever gets the same id), writes that ledger's metadata (open, ensemble =
//! this bookie, quorums 1, MAC digest, empty password, as Java's client creates it), adds
//! [`ENTRIES`] entries `entry-<i>` through this bookie's own request path — each acknowledged
//! only after its journal fsync, like any add — then reads every entry back, verifies its
//! digest and compares the payload, and deletes the metadata again (GC then removes the data,
//! as after any ledger delete). The metadata is what keeps GC off the ledger while the test
//! runs: a local ledger without metadata is garbage (the first version, without it, had its
//! ledger deleted by a GC round mid-test: `Fenced` on an add, found by s14_admin_http). The
//! metadata is deleted whichever way the test ends, a failure to delete it is logged.
//!
//! Shape: `{"passed": bool, "readOnly": bool}` (200 whichever way the test went, as Java);
//! `readOnly` is `forceReadOnlyBookie` (the test is then not run and `passed` is false, as
//! Java); a bookie in read-only mode for another reason fails the test (its adds are refused).
//! One test runs at a time; a second waits up to [`BUSY_WAIT`] and then answers 500; the
//! writes and reads are bounded by [`TEST_TIMEOUT`] (a timeout is `passed: false`), each
//! ZooKeeper call by `zkTimeout`. 503 before the
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
    let Ok(Ok(permit)) = tokio::time::timeout(BUSY_WAIT, ONE_AT_A_TIME.acquire()).await else {
        return text(
            StatusCode::INTERNAL_SERVER_ERROR,
            "Timing out due to max number of sanity request are running concurrently",
        );
    };
    // A task of its own: the test (and the metadata clean-up) runs to its end even when the
    // caller goes away.
    let id = state.bookie_id.clone();
    let test = tokio::spawn(async move {
        let _permit = permit;
        run(&zk, &bookie, &id).await
    });
    let passed = match test.await {
        Ok(Ok(ledger)) => {
            tracing::info!(ledger, entries = ENTRIES, "bookie sanity test succeeded");
            true
        }
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "bookie sanity test failed");
            false
        }
        Err(e) => {
            tracing::warn!(error = %e, "bookie sanity test task failed");
            false
        }
    };
    json(StatusCode::OK, &j!({ "passed": passed, "readOnly": false }))
}

/// The test; returns the ledger it used.
async fn run(zk: &Zk, bookie: &Arc<Bookie>, bookie_id: &str) -> Result<i64, String> {
    let ledger = fresh_ledger_id(zk).await?;
    let path = crate::gc_scan::ledger_path(zk.root(), ledger as u64);
    let ctime = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    let md = super::ledger_metadata::encode_open_single(bookie_id, 2, b"", ctime);
    if !zk.create_persistent(&path, &md).await? {
        return Err(format!(
            "{path} exists: ledger id {ledger} was given out twice"
        ));
    }
    let result = match tokio::time::timeout(TEST_TIMEOUT, write_and_read(bookie, ledger)).await {
        Ok(r) => r,
        Err(_) => Err(format!("timed out after {TEST_TIMEOUT:?}")),
    };
    match zk.delete(&path).await {
        Ok(_) => super::ledger::delete_empty_parents(zk, &path).await,
        Err(e) => {
            tracing::warn!(error = %e, ledger, "sanity: could not delete the test ledger's metadata")
        }
    }
    result.map(|()| ledger)
}

/// Adds the entries and reads them back.
async fn write_and_read(bookie: &Arc<Bookie>, ledger: i64) -> Result<(), String> {
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
    Ok(())
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
