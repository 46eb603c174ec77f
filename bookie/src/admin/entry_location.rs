//! `GET|PUT /api/v1/bookie/entry_location_compact`: what a stock 4.17.3 bookie answers when its
//! ledger storage has no entry-location database (`TriggerLocationCompactService` over the
//! `LedgerStorage` interface defaults: `getEntryLocationDBPath()` an empty list,
//! `isEntryLocationCompacting(..)` an empty map, `entryLocationCompact()` a no-op; what
//! SortedLedgerStorage and InterleavedLedgerStorage inherit). bookie-rs keeps entry locations
//! in its segment footers and in memory, not in RocksDB, so these are its honest answers
//! (docs/config.md §2.2).
//!
//! Answers, as Java's handler builds them:
//! - GET: 200 `{}` (no location database, none compacting);
//! - PUT with a blank body: 400 `Empty request body` (plain text);
//! - PUT `{"entryLocationRocksDBCompact": false}` or without the key: 200
//!   `Not trigger Entry Location RocksDB compact.` (plain text);
//! - PUT `{"entryLocationRocksDBCompact": true}` without a non-blank `entryLocations`: 200, the
//!   JSON string `"Triggered entry Location RocksDB compact on bookie:<id>"` (nothing to do);
//! - with `entryLocations`: each comma-separated path must be a location database of this
//!   bookie, and there are none, so 400 with the JSON string `"Specified trigger compact
//!   entryLocations: <given> is invalid. Bookie entry location RocksDB path: []."` (a value
//!   that Java's `String.split(",")` splits into nothing, such as `","`, names no path and is
//!   the 200 `Triggered entry Location RocksDB: <given> compact on bookie:<id>.`);
//! - a body that is not JSON: 400, the JSON string `"Failed to deserialize Object from Json
//!   string"` (Java's `ParseJsonException` message); JSON that is not an object, a
//!   non-boolean `entryLocationRocksDBCompact` or a non-string `entryLocations` are 400 here
//!   with the same text (Java fails with a cast or null-pointer exception: 500);
//! - other methods: 405 with Java's text.

use axum::body::Bytes;
use axum::http::{Method, StatusCode};
use axum::response::Response;
use serde_json::Value;

use super::{json, text, Shared};

/// Java's `ParseJsonException` message for a body it cannot read as a map.
const BAD_JSON: &str = "Failed to deserialize Object from Json string";

/// `GET|PUT /api/v1/bookie/entry_location_compact`.
pub(super) async fn entry_location_compact(state: Shared, method: Method, body: Bytes) -> Response {
    match method {
        Method::GET => json(StatusCode::OK, &Value::Object(Default::default())),
        Method::PUT => {
            let (status, answer) = trigger(&state.bookie_id, &body);
            match answer {
                Answer::Plain(s) => text(status, &s),
                Answer::JsonString(s) => json(status, &Value::String(s)),
            }
        }
        _ => text(
            StatusCode::METHOD_NOT_ALLOWED,
            "Not found method. Should be PUT to trigger entry location compact, \
             Or GET to get entry location compact state.",
        ),
    }
}

/// How Java writes an answer body: some as they are, some through `JsonUtil.toJson`.
#[derive(Debug, PartialEq, Eq)]
enum Answer {
    Plain(String),
    JsonString(String),
}

/// The PUT decision, as `TriggerLocationCompactService` makes it with no location database.
fn trigger(bookie_id: &str, body: &[u8]) -> (StatusCode, Answer) {
    let bad = || {
        (
            StatusCode::BAD_REQUEST,
            Answer::JsonString(BAD_JSON.to_string()),
        )
    };
    let Ok(body) = std::str::from_utf8(body) else {
        return bad();
    };
    if body.trim().is_empty() {
        return (
            StatusCode::BAD_REQUEST,
            Answer::Plain("Empty request body".into()),
        );
    }
    let Ok(Value::Object(map)) = serde_json::from_str::<Value>(body) else {
        return bad();
    };
    let compact = match map.get("entryLocationRocksDBCompact") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return bad(),
    };
    let locations = match map.get("entryLocations") {
        None => "",
        Some(Value::String(s)) => s.as_str(),
        Some(_) => return bad(),
    };
    if !compact {
        return (
            StatusCode::OK,
            Answer::Plain("Not trigger Entry Location RocksDB compact.".into()),
        );
    }
    if locations.trim().is_empty() {
        return (
            StatusCode::OK,
            Answer::JsonString(format!(
                "Triggered entry Location RocksDB compact on bookie:{bookie_id}"
            )),
        );
    }
    if java_split_is_empty(locations.trim()) {
        // An empty set of paths is a subset of the (empty) location database paths.
        return (
            StatusCode::OK,
            Answer::JsonString(format!(
                "Triggered entry Location RocksDB: {locations} compact on bookie:{bookie_id}."
            )),
        );
    }
    (
        StatusCode::BAD_REQUEST,
        Answer::JsonString(format!(
            "Specified trigger compact entryLocations: {locations} is invalid. \
             Bookie entry location RocksDB path: []."
        )),
    )
}

/// Whether Java's `s.split(",")` gives no element: it drops trailing empty strings, so only
/// a non-empty string of commas alone splits into nothing (`""` splits into `[""]`).
fn java_split_is_empty(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b == b',')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(body: &str) -> (u16, Answer) {
        let (s, a) = trigger("127.0.0.1:3181", body.as_bytes());
        (s.as_u16(), a)
    }

    #[test]
    fn answers_as_java_without_a_location_database() {
        use Answer::*;
        assert_eq!(put(""), (400, Plain("Empty request body".into())));
        assert_eq!(put(" \n"), (400, Plain("Empty request body".into())));
        let not = (
            200,
            Plain("Not trigger Entry Location RocksDB compact.".into()),
        );
        assert_eq!(put(r#"{"entryLocationRocksDBCompact":false}"#), not);
        assert_eq!(put("{}"), not);
        assert_eq!(
            put(r#"{"entryLocationRocksDBCompact":true}"#),
            (
                200,
                JsonString(
                    "Triggered entry Location RocksDB compact on bookie:127.0.0.1:3181".into()
                )
            )
        );
        assert_eq!(
            put(r#"{"entryLocationRocksDBCompact":true,"entryLocations":"  "}"#).0,
            200
        );
        assert_eq!(
            put(r#"{"entryLocationRocksDBCompact":true,"entryLocations":"/d/current/locations"}"#),
            (
                400,
                JsonString(
                    "Specified trigger compact entryLocations: /d/current/locations is invalid. \
                     Bookie entry location RocksDB path: []."
                        .into()
                )
            )
        );
        assert_eq!(
            put(r#"{"entryLocationRocksDBCompact":true,"entryLocations":",,"}"#),
            (
                200,
                JsonString(
                    "Triggered entry Location RocksDB: ,, compact on bookie:127.0.0.1:3181.".into()
                )
            )
        );
        assert_eq!(
            put(r#"{"entryLocationRocksDBCompact":true,"entryLocations":",a"}"#).0,
            400
        );
        let bad = (400, JsonString(BAD_JSON.into()));
        assert_eq!(put("{not json"), bad);
        assert_eq!(put("[1]"), bad);
        assert_eq!(put(r#"{"entryLocationRocksDBCompact":"true"}"#), bad);
        assert_eq!(
            put(r#"{"entryLocationRocksDBCompact":true,"entryLocations":5}"#),
            bad
        );
    }
}
