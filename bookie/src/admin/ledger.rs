//! `/api/v1/ledger/{list,metadata,delete}`: the ledgers ZooKeeper holds metadata for, read
//! (and deleted) as the Java handlers do (the hierarchical / long-hierarchical tree `gc_scan`
//! walks). `read` is in ledger_read.rs.
//!
//! Shapes: `list` `{"<ledger id>": null, ...}` in ledger-id order (a failed or partial scan
//! is a 500, never a shorter list); `?print_metadata=true` gives each ledger's znode as a
//! string decoded as Java's `new String(serDe.serialize(md), UTF_8)` decodes it (the same
//! bytes; java_string.rs has why Rust's lossy decoding would differ), with `&decode_meta=true` the
//! metadata JSON, `&page=p` 100 per page as Java counts them.
//! `metadata?ledger_id=N`: `{"<id>": <metadata>}` (`ledger_metadata` has the keys); 404 without `ledger_id` or on another method (as Java); 500 for a ledger
//! without metadata, metadata we cannot decode, or a malformed id (Java throws: its HTTP
//! server answers 500). `delete?ledger_id=N` (DELETE only): removes the metadata znode at any
//! version, then its parents that became empty (below the ledgers root), as the Java client's
//! `deleteLedger` does (`ZkUtils.asyncDeleteFullPathOptimistic`; the bookies' GC then removes
//! the data); answers the JSON string `"Deleted ledger: N"`, also when there was no such
//! ledger (Java logs "Returning success"); 404 without `ledger_id` or on another method; 500
//! for a malformed id or a failed ZooKeeper call.

use std::collections::HashMap;

use axum::extract::Query;
use axum::http::{Method, StatusCode};
use axum::response::Response;
use serde_json::{Map, Value};

use super::cluster::zk_or_answer;
use super::zk::Zk;
use super::{json, no_metadata_store, text, wrong_method, Shared};

/// `GET /api/v1/ledger/list`.
pub(super) async fn list(
    state: Shared,
    method: Method,
    Query(params): Query<HashMap<String, String>>,
) -> Response {
    if method != Method::GET {
        return wrong_method("Not found method. Should be GET method");
    }
    let print = params.get("print_metadata").map(String::as_str) == Some("true");
    let decode = params.get("decode_meta").map(String::as_str) == Some("true");
    let page = match params
        .get("page")
        .filter(|_| print)
        .map(|p| p.parse::<i64>())
    {
        None => -1,
        Some(Ok(p)) => p,
        Some(Err(_)) => return text(StatusCode::INTERNAL_SERVER_ERROR, "page: not a number"),
    };
    let zk = zk_or_answer!(state);
    let live = match crate::gc_scan::scan_live_ledgers(zk.client(), zk.root()).await {
        Ok(live) => live,
        Err(e) => return text(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    };
    let mut out = Map::new();
    if !print {
        for id in live.ids() {
            out.insert(id.to_string(), Value::Null);
        }
        return json(StatusCode::OK, &Value::Object(out));
    }
    // Java's paging, off-by-one included: ledgers are counted from 1 and page p keeps the
    // counts (p-1)*100 ..= (p-1)*100+99, so page 1 holds 99 ledgers.
    let (first, last) = if page > 0 {
        let first = (page - 1) * LIST_PAGE;
        (first, first + LIST_PAGE - 1)
    } else {
        (0, 0)
    };
    for (n, &id) in live.ids().iter().enumerate() {
        let count = n as i64 + 1;
        if last != 0 && !(first..=last).contains(&count) {
            continue;
        }
        let path = crate::gc_scan::ledger_path(zk.root(), id);
        let (data, ctime) = match zk.data_and_ctime(&path).await {
            Ok(Some(d)) => d,
            // Deleted since the scan: Java's read fails the whole listing too.
            Ok(None) => {
                return text(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    &format!("No such ledger exists on Metadata Server: {id}"),
                )
            }
            Err(e) => return text(StatusCode::INTERNAL_SERVER_ERROR, &e),
        };
        let value = if decode {
            match super::ledger_metadata::to_json_with_znode_ctime(id as i64, &data, ctime) {
                Ok(v) => v,
                Err(e) => {
                    return text(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        &format!("ledger {id}: {e}"),
                    )
                }
            }
        } else {
            Value::String(super::java_string::utf8_lossy(&data))
        };
        out.insert(id.to_string(), value);
    }
    json(StatusCode::OK, &Value::Object(out))
}

/// Ledgers per page of `list?print_metadata=true&page=p` (Java's `LIST_LEDGER_BATCH_SIZE`).
const LIST_PAGE: i64 = 100;

/// `GET /api/v1/ledger/metadata?ledger_id=N`.
pub(super) async fn metadata(
    state: Shared,
    method: Method,
    Query(params): Query<HashMap<String, String>>,
) -> Response {
    let Some(raw_id) = params.get("ledger_id").filter(|_| method == Method::GET) else {
        return wrong_method("Not found method. Should be GET method");
    };
    let Ok(id) = raw_id.parse::<i64>() else {
        return text(
            StatusCode::INTERNAL_SERVER_ERROR,
            &format!("invalid ledger_id {raw_id:?}"),
        );
    };
    let zk = zk_or_answer!(state);
    match read_metadata(&zk, id).await {
        Ok(None) => text(
            StatusCode::INTERNAL_SERVER_ERROR,
            &format!("No such ledger exists on Metadata Server: {id}"),
        ),
        Ok(Some((bytes, ctime))) => {
            match super::ledger_metadata::to_json_with_znode_ctime(id, &bytes, ctime) {
                Ok(md) => {
                    let mut out = Map::new();
                    out.insert(id.to_string(), md);
                    json(StatusCode::OK, &Value::Object(out))
                }
                Err(e) => text(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    &format!("ledger {id}: {e}"),
                ),
            }
        }
        Err(e) => text(StatusCode::INTERNAL_SERVER_ERROR, &e),
    }
}

/// The metadata bytes of ledger `id` and its znode's creation time, `None` if it has none.
async fn read_metadata(zk: &Zk, id: i64) -> Result<Option<(Vec<u8>, i64)>, String> {
    let Ok(id) = u64::try_from(id) else {
        return Ok(None);
    };
    let path = crate::gc_scan::ledger_path(zk.root(), id);
    zk.data_and_ctime(&path).await
}

/// `DELETE /api/v1/ledger/delete?ledger_id=N`.
pub(super) async fn delete(
    state: Shared,
    method: Method,
    Query(params): Query<HashMap<String, String>>,
) -> Response {
    if method != Method::DELETE {
        return wrong_method("Not found method. Should be DELETE method");
    }
    let Some(raw_id) = params.get("ledger_id") else {
        return wrong_method("Not ledger found. Should provide ledger_id=<id>");
    };
    let Ok(id) = raw_id.parse::<u64>() else {
        return text(
            StatusCode::INTERNAL_SERVER_ERROR,
            &format!("invalid ledger_id {raw_id:?}"),
        );
    };
    let zk = zk_or_answer!(state);
    let path = crate::gc_scan::ledger_path(zk.root(), id);
    match zk.delete(&path).await {
        Ok(existed) => {
            if existed {
                tracing::info!(ledger = id, "ledger deleted through the admin API");
                delete_empty_parents(&zk, &path).await;
            } else {
                tracing::warn!(
                    ledger = id,
                    "ledger delete: no such ledger, returning success"
                );
            }
            json(
                StatusCode::OK,
                &Value::String(format!("Deleted ledger: {id}")),
            )
        }
        Err(e) => text(StatusCode::INTERNAL_SERVER_ERROR, &e),
    }
}

/// Deletes the parents of `path` from the nearest up while they are empty, never the ledgers
/// root; stops at the first that is not empty (ZooKeeper refuses to delete it) or fails.
pub(super) async fn delete_empty_parents(zk: &Zk, path: &str) {
    let mut p = path;
    while let Some((parent, _)) = p.rsplit_once('/') {
        if parent.len() <= zk.root().len() {
            return;
        }
        match zk.children(parent).await {
            Ok(Some(c)) if c.is_empty() => {}
            _ => return,
        }
        if zk.delete(parent).await.is_err() {
            return;
        }
        p = parent;
    }
}
