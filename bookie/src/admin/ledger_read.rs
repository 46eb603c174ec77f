//! `GET /api/v1/ledger/read?ledger_id=N[&start_entry_id=a][&end_entry_id=b][&page=p]`: a
//! ledger's entries, as Java's `ReadLedgerEntryService` answers them, read from **this
//! bookie's own storage** (Java reads through a BookKeeper client from the ensemble; bookie-rs
//! has no client, so an entry this bookie does not hold — a striped ledger, E > W — is a 500
//! naming it, never a shorter answer).
//!
//! What is read: the ledger's metadata from ZooKeeper gives the digest type and password
//! (every entry's digest is verified; a mismatch is a 500, never an entry) and, for a closed
//! ledger, the last entry; an open ledger is read up to the LAC carried by the last entry
//! stored here (Java reads up to the ensemble's last add confirmed, the same value when this
//! bookie is in the ensemble's write set). Pages are 1,000 entries (`page` from 1), as Java.
//!
//! Shape: `{"<entry id>": "<payload as US-ASCII>", ...}` (bytes >= 0x80 become U+FFFD, as
//! Java's `new String(bytes, US_ASCII)`), plus `"Entries for page: ": "<p>"` with `page`.
//! Status: 404 without `ledger_id` or on another method; 500 for a malformed number, a ledger
//! without metadata, a conflicting range, or an entry missing or corrupt here.
//!
//! Bounds: at most [`MAX_ENTRIES`] entries and [`MAX_BYTES`] payload bytes per answer (Java
//! has none; a larger range is a 400 asking for `page` or `end_entry_id`).

use std::collections::HashMap;

use axum::extract::Query;
use axum::http::{Method, StatusCode};
use axum::response::Response;
use bk_proto::{DigestManager, DigestType};
use serde_json::{Map, Value};

use super::cluster::zk_or_answer;
use super::zk::Zk;
use super::{json, no_metadata_store, not_started, text, wrong_method, Shared};
use crate::handlers::{Op, ReadOp, Reply, Status};

/// Entries per page (Java's `ENTRIES_PER_PAE`).
const ENTRIES_PER_PAGE: i64 = 1000;
/// Most entries in one answer.
pub const MAX_ENTRIES: i64 = 10_000;
/// Most payload bytes in one answer.
pub const MAX_BYTES: usize = 32 * 1024 * 1024;

/// `GET /api/v1/ledger/read`.
pub(super) async fn read(
    state: Shared,
    method: Method,
    Query(params): Query<HashMap<String, String>>,
) -> Response {
    if method != Method::GET || !params.contains_key("ledger_id") {
        return wrong_method("Not found method. Should be GET method, with ledger_id provided");
    }
    let number = |key: &str, default: i64| -> Result<i64, String> {
        params.get(key).map_or(Ok(default), |v| {
            v.parse::<i64>()
                .map_err(|_| format!("{key}: not a number: {v:?}"))
        })
    };
    let (ledger, mut start, mut end, page) = match (
        number("ledger_id", 0),
        number("start_entry_id", 0),
        number("end_entry_id", -1),
        number("page", -1),
    ) {
        (Ok(l), Ok(s), Ok(e), Ok(p)) => (l, s, e, p),
        (Err(e), ..) | (_, Err(e), ..) | (_, _, Err(e), _) | (.., Err(e)) => {
            return text(StatusCode::INTERNAL_SERVER_ERROR, &e)
        }
    };
    let mut out = Map::new();
    if page > 0 {
        let first = (page - 1) * ENTRIES_PER_PAGE;
        let last = first + ENTRIES_PER_PAGE - 1;
        if start == 0 || start < first {
            start = first;
        }
        if end == -1 || end > last {
            end = last;
        }
        out.insert("Entries for page: ".into(), Value::String(page.to_string()));
    }
    if end != -1 && start > end {
        return text(
            StatusCode::INTERNAL_SERVER_ERROR,
            &format!(
                "parameter for start_entry_id: {start} and end_entry_id: {end} conflict with page={page}"
            ),
        );
    }
    if ledger < 0 || start < 0 {
        return text(
            StatusCode::INTERNAL_SERVER_ERROR,
            "ledger_id and start_entry_id must not be negative",
        );
    }
    let zk = zk_or_answer!(state);
    let Some(bookie) = state.bookie().cloned() else {
        return not_started();
    };
    let params = match read_params(&zk, ledger).await {
        Ok(p) => p,
        Err(e) => return text(StatusCode::INTERNAL_SERVER_ERROR, &e),
    };
    let digest = match DigestType::from_i32(params.digest_type) {
        Ok(d) => DigestManager::new(d, &params.password),
        Err(e) => return text(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    };
    // The last readable entry: the closed ledger's last entry, else the local LAC.
    let last = match params.closed_last_entry {
        Some(last) => last,
        None => match read_entry(&bookie, ledger, -1).await {
            Ok(Some(body)) => match digest.verify_entry(&body) {
                Ok((header, _)) => header.last_add_confirmed,
                Err(e) => return text(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
            },
            Ok(None) => -1,
            Err(e) => return text(StatusCode::INTERNAL_SERVER_ERROR, &e),
        },
    };
    let stop = if end == -1 { last } else { end.min(last) };
    if stop - start + 1 > MAX_ENTRIES {
        return text(
            StatusCode::BAD_REQUEST,
            &format!(
                "entries {start}..={stop} are more than {MAX_ENTRIES} in one answer: use page= or end_entry_id="
            ),
        );
    }
    let mut bytes = 0usize;
    for entry in start..=stop {
        let body = match read_entry(&bookie, ledger, entry).await {
            Ok(Some(b)) => b,
            // Java stops at the first missing entry when no end was given.
            Ok(None) if end == -1 => break,
            Ok(None) => {
                return text(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    &format!("entry {entry} of ledger {ledger} is not stored on this bookie"),
                )
            }
            Err(e) => return text(StatusCode::INTERNAL_SERVER_ERROR, &e),
        };
        let payload = match digest.verify_entry(&body) {
            Ok((header, payload)) if header.ledger_id == ledger && header.entry_id == entry => {
                payload
            }
            Ok((header, _)) => {
                return text(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    &format!(
                        "entry {entry} of ledger {ledger}: stored entry says {}/{}",
                        header.ledger_id, header.entry_id
                    ),
                )
            }
            Err(e) => return text(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
        };
        bytes += payload.len();
        if bytes > MAX_BYTES {
            return text(
                StatusCode::BAD_REQUEST,
                &format!(
                    "more than {MAX_BYTES} payload bytes in one answer: use page= or end_entry_id="
                ),
            );
        }
        out.insert(
            entry.to_string(),
            Value::String(super::java_string::us_ascii(&payload)),
        );
    }
    json(StatusCode::OK, &Value::Object(out))
}

/// The metadata a read needs; an error when the ledger has none.
async fn read_params(zk: &Zk, ledger: i64) -> Result<super::ledger_metadata::ReadParams, String> {
    let path = crate::gc_scan::ledger_path(zk.root(), ledger as u64);
    let data = zk
        .data(&path)
        .await?
        .ok_or_else(|| format!("No such ledger exists on Metadata Server: {ledger}"))?;
    super::ledger_metadata::read_params(&data).map_err(|e| format!("ledger {ledger}: {e}"))
}

/// One stored entry (`entry` -1: the last one), `None` when this bookie has no such entry
/// or ledger; any other status is an error naming it.
pub(super) async fn read_entry(
    bookie: &std::sync::Arc<crate::handlers::Bookie>,
    ledger: i64,
    entry: i64,
) -> Result<Option<bytes::Bytes>, String> {
    let reply = bookie
        .dispatch(Op::Read(ReadOp {
            ledger,
            entry,
            fence: None,
            long_poll: None,
            high_priority: false,
        }))
        .await;
    match reply {
        Reply::Read {
            status: Status::Ok,
            body: Some(body),
            ..
        } => Ok(Some(body)),
        Reply::Read {
            status: Status::NoEntry | Status::NoLedger,
            ..
        } => Ok(None),
        other => Err(format!(
            "reading entry {entry} of ledger {ledger} from this bookie: {:?}",
            other.status()
        )),
    }
}
