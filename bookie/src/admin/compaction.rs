//! `/api/v1/bookie/gc_details` and `/api/v1/bookie/gc/{suspend,resume}_compaction`: what the
//! GC loop's compactions did and are doing, and the operator's suspensions (gc_status.rs).
//!
//! Shapes (4.17 `GCDetailsService`, `SuspendCompactionService`, `ResumeCompactionService`):
//! - `gc_details` GET: a one-element list `[{"forceCompacting", "majorCompacting",
//!   "minorCompacting", "lastMajorCompactionTime", "lastMinorCompactionTime",
//!   "lastEntryLocationCompactionTime", "majorCompactionCounter", "minorCompactionCounter",
//!   "entryLocationCompactionCounter"}]`; our index has no separate location store to
//!   compact, so the entry-location fields stay 0 (Java's DbLedgerStorage value before its
//!   first location compaction);
//! - `suspend_compaction` GET: `{"isMajorGcSuspended": "<bool>", "isMinorGcSuspended":
//!   "<bool>"}` (strings, as Java); PUT `{"suspendMajor": bool, "suspendMinor": bool}` (at
//!   least one) answers a JSON string naming what was suspended; 400 with neither key;
//! - `resume_compaction` PUT `{"resumeMajor": bool, "resumeMinor": bool}`, the same way; GET
//!   is 404 as in Java (only PUT is served there).
//!
//! A body that is not a JSON object, or a key that is not a boolean, is 400 here (Java throws
//! and answers 500). Other methods: 404 with Java's text.

use axum::body::Bytes;
use axum::http::{Method, StatusCode};
use axum::response::Response;
use serde_json::{json as j, Map, Value};

use super::{json, text, wrong_method, Shared};
use crate::gc_status::CompactionKind;

/// `GET /api/v1/bookie/gc_details`.
pub(super) async fn gc_details(state: Shared, method: Method) -> Response {
    if method != Method::GET {
        return wrong_method(
            "Only support GET method to retrieve GC details. If you want to trigger gc, send a POST to gc endpoint.",
        );
    }
    let s = state.gc.status().snapshot();
    json(
        StatusCode::OK,
        &j!([{
            "forceCompacting": state.gc.is_in_force_gc(),
            "majorCompacting": s.major_compacting,
            "minorCompacting": s.minor_compacting,
            "lastMajorCompactionTime": s.last_major_ms,
            "lastMinorCompactionTime": s.last_minor_ms,
            "lastEntryLocationCompactionTime": 0,
            "majorCompactionCounter": s.major_counter,
            "minorCompactionCounter": s.minor_counter,
            "entryLocationCompactionCounter": 0,
        }]),
    )
}

/// `GET|PUT /api/v1/bookie/gc/suspend_compaction`.
pub(super) async fn suspend(state: Shared, method: Method, body: Bytes) -> Response {
    match method {
        Method::GET => {
            let st = state.gc.status();
            json(
                StatusCode::OK,
                &j!({
                    "isMajorGcSuspended": st.is_suspended(CompactionKind::Major).to_string(),
                    "isMinorGcSuspended": st.is_suspended(CompactionKind::Minor).to_string(),
                }),
            )
        }
        Method::PUT => change(&state, &body, true),
        _ => wrong_method(
            "Not found method. Should be PUT to suspend major or minor compaction, Or GET to get compaction state.",
        ),
    }
}

/// `PUT /api/v1/bookie/gc/resume_compaction`.
pub(super) async fn resume(state: Shared, method: Method, body: Bytes) -> Response {
    if method != Method::PUT {
        return wrong_method(
            "Not found method. Should be PUT to resume major or minor compaction, Or GET to get compaction state.",
        );
    }
    change(&state, &body, false)
}

/// Applies a suspend (`suspend = true`) or resume body.
fn change(state: &Shared, body: &Bytes, suspend: bool) -> Response {
    let (verb, major_key, minor_key) = if suspend {
        ("Suspend", "suspendMajor", "suspendMinor")
    } else {
        ("Resume", "resumeMajor", "resumeMinor")
    };
    if body.is_empty() {
        return text(StatusCode::BAD_REQUEST, "Empty request body");
    }
    let Ok(Value::Object(map)) = serde_json::from_slice::<Value>(body) else {
        return text(
            StatusCode::BAD_REQUEST,
            "Request body must be a JSON object",
        );
    };
    let (major, minor) = match (flag(&map, major_key), flag(&map, minor_key)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(k), _) | (_, Err(k)) => {
            return text(StatusCode::BAD_REQUEST, &format!("{k} must be a boolean"));
        }
    };
    if major.is_none() && minor.is_none() {
        return text(
            StatusCode::BAD_REQUEST,
            &format!("No {major_key} or {minor_key} params found"),
        );
    }
    let server = format!(
        "Bookie Server listening on {id} with id {id}",
        id = state.bookie_id
    );
    let mut output = String::new();
    if major == Some(true) {
        state
            .gc
            .status()
            .set_suspended(CompactionKind::Major, suspend);
        output = format!("{verb} majorGC on BookieServer: {server}");
    }
    if minor == Some(true) {
        state
            .gc
            .status()
            .set_suspended(CompactionKind::Minor, suspend);
        output.push_str(&format!(", {verb} minorGC on BookieServer: {server}"));
    }
    json(StatusCode::OK, &Value::String(output))
}

/// `Ok(None)` when absent (or null), `Err(key)` when not a boolean.
fn flag<'a>(map: &Map<String, Value>, key: &'a str) -> Result<Option<bool>, &'a str> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(key),
    }
}
