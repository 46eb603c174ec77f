//! `/api/v1/bookie/scrub` and `/api/v1/bookie/corruptions` (ours: Java has no scrub
//! endpoint; its `localconsistencycheck` is a shell command on a stopped bookie's files):
//! start a scrub pass and watch it (scrubber.rs), and list every corruption the bookie
//! detected since it started, by reads or by scrubs (entrylog/src/corruption_report.rs).
//!
//! Shapes (docs/operations.md "Scrubbing"):
//! - `GET scrub`: `{"running", "startedAt", "segmentsDone", "segmentsTotal", "bytesDone",
//!   "bytesTotal", "entriesDone", "corruptionsFound", "interval", "rateLimitEntries",
//!   "rateLimitBytes", "lastPass"}`; `lastPass` is null before the first pass ended, else
//!   `{"startedAt", "endedAt", "result" ("ok", "corruptions found", "unreadable segments",
//!   "cancelled", "failed"), "error", "segments", "skipped", "bytes", "entries",
//!   "corruptEntries", "corruptIndexes", "unreadableSegments"}` (times: ms since the epoch);
//! - `PUT|POST scrub`: 200 `{"started": true}`; 409 while a pass runs; 503 before storage
//!   opened;
//! - `GET corruptions`: `{"corruptions": [{"file", "offset", "ledgerId", "entryId",
//!   "foundBy" ("read" | "scrub"), "detectedAt", "detail"}], "unlisted"}` (`ledgerId` and
//!   `entryId` null for a trailer or footer); 503 before storage opened.
//!
//! Other methods: 404 with a text naming the served ones, as the Java-shaped endpoints.

use axum::http::{Method, StatusCode};
use axum::response::Response;
use serde_json::{json as j, Value};

use super::{json, not_started, text, wrong_method, Shared};
use crate::scrubber::{Ask, LastPass};

/// `GET|PUT|POST /api/v1/bookie/scrub`.
pub(super) async fn scrub(state: Shared, method: Method) -> Response {
    match method {
        Method::GET => status(&state),
        Method::PUT | Method::POST => match state.scrubber.ask() {
            Ask::Started => json(StatusCode::OK, &j!({"started": true})),
            Ask::AlreadyRunning => text(
                StatusCode::CONFLICT,
                "A scrub pass is already running: GET /api/v1/bookie/scrub shows its progress",
            ),
            Ask::NotServed => not_started(),
        },
        _ => wrong_method(
            "Not found method. Should be PUT or POST to start a scrub pass, or GET to get its state.",
        ),
    }
}

fn status(state: &Shared) -> Response {
    let s = state.scrubber.status();
    let sched = s.schedule;
    json(
        StatusCode::OK,
        &j!({
            "running": s.running,
            "startedAt": s.started_ms,
            "segmentsDone": s.segments_done,
            "segmentsTotal": s.segments_total,
            "bytesDone": s.bytes_done,
            "bytesTotal": s.bytes_total,
            "entriesDone": s.entries_done,
            "corruptionsFound": s.findings,
            "interval": sched.and_then(|x| x.interval).map(|d| d.as_secs()),
            "rateLimitEntries": sched.map(|x| x.rate.entries_per_sec),
            "rateLimitBytes": sched.map(|x| x.rate.bytes_per_sec),
            "lastPass": s.last.as_ref().map(last_pass),
        }),
    )
}

fn last_pass(p: &LastPass) -> Value {
    match &p.result {
        Ok(r) => {
            let result = if r.cancelled {
                "cancelled"
            } else if r.findings() > 0 {
                "corruptions found"
            } else if !r.read_errors.is_empty() {
                "unreadable segments"
            } else {
                "ok"
            };
            j!({
                "startedAt": p.started_ms, "endedAt": p.ended_ms, "result": result,
                "error": null, "segments": r.segments, "skipped": r.skipped,
                "bytes": r.bytes, "entries": r.entries,
                "corruptEntries": r.corrupt_entries, "corruptIndexes": r.corrupt_indexes,
                "unreadableSegments": r.read_errors,
            })
        }
        Err(e) => j!({
            "startedAt": p.started_ms, "endedAt": p.ended_ms, "result": "failed",
            "error": e,
        }),
    }
}

/// `GET /api/v1/bookie/corruptions`.
pub(super) async fn corruptions(state: Shared, method: Method) -> Response {
    if method != Method::GET {
        return wrong_method("Not found method. Should be GET to list detected corruptions.");
    }
    let Some((list, unlisted)) = state.scrubber.corruptions() else {
        return not_started();
    };
    let items: Vec<Value> = list
        .iter()
        .map(|c| {
            j!({
                "file": c.file.display().to_string(),
                "offset": c.offset,
                "ledgerId": c.ledger,
                "entryId": c.entry,
                "foundBy": c.found_by.as_str(),
                "detectedAt": c.unix_ms,
                "detail": c.detail,
            })
        })
        .collect();
    json(
        StatusCode::OK,
        &j!({"corruptions": items, "unlisted": unlisted}),
    )
}
