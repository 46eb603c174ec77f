//! `/api/v1/ledger/{list,metadata}`: the ledgers ZooKeeper holds metadata for, read as the
//! Java handlers read them (the hierarchical / long-hierarchical tree `gc_scan` walks).
//!
//! Shapes: `list` `{"<ledger id>": null, ...}` in ledger-id order (a failed or partial scan
//! is a 500, never a shorter list); `?print_metadata=true` is not built (501). `metadata?ledger_id=N`: `{"<id>": <metadata>}` (`ledger_metadata`
//! has the keys); 404 without `ledger_id` or on another method (as Java); 500 for a ledger
//! without metadata, metadata we cannot decode, or a malformed id (Java throws: its HTTP
//! server answers 500).

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
    if params.get("print_metadata").map(String::as_str) == Some("true") {
        return text(
            StatusCode::NOT_IMPLEMENTED,
            "print_metadata is not implemented by bookie-rs",
        );
    }
    let zk = zk_or_answer!(state);
    match crate::gc_scan::scan_live_ledgers(zk.client(), zk.root()).await {
        Ok(live) => {
            let mut out = Map::new();
            for id in live.ids() {
                out.insert(id.to_string(), Value::Null);
            }
            json(StatusCode::OK, &Value::Object(out))
        }
        Err(e) => text(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    }
}

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
        Ok(Some(bytes)) => match super::ledger_metadata::to_json(id, &bytes) {
            Ok(md) => {
                let mut out = Map::new();
                out.insert(id.to_string(), md);
                json(StatusCode::OK, &Value::Object(out))
            }
            Err(e) => text(
                StatusCode::INTERNAL_SERVER_ERROR,
                &format!("ledger {id}: {e}"),
            ),
        },
        Err(e) => text(StatusCode::INTERNAL_SERVER_ERROR, &e),
    }
}

/// The metadata bytes of ledger `id`, `None` if it has none.
async fn read_metadata(zk: &Zk, id: i64) -> Result<Option<Vec<u8>>, String> {
    let Ok(id) = u64::try_from(id) else {
        return Ok(None);
    };
    let path = crate::gc_scan::ledger_path(zk.root(), id);
    zk.data(&path).await
}
