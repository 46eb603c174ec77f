//! `/api/v1/bookie/...` endpoints about this bookie: `state`, `is_ready`, `state/readonly`,
//! `info`, `last_log_mark`, `list_disk_file`, `gc` (docs/config.md §2); `gc_details` is in
//! compaction.rs.
//!
//! Shapes (keys exactly as the 4.17 handlers under bookkeeper-server's `server/http/service/`):
//! - `state`: `{"running","readOnly","shuttingDown","availableForHighPriorityWrites"}`, booleans;
//! - `is_ready`: 200 `OK` / 503 `Bookie is not fully started yet`;
//! - `state/readonly`: `{"readOnly": bool}`; PUT `{"readOnly": bool}` sets or clears
//!   [`ReadOnlyReason::Manual`] (400 as Java when forced read-only and asked writable, or
//!   `readOnlyModeEnabled=false` and asked read-only);
//! - `info`: `{"freeSpace","totalSpace"}` in bytes over the ledger directories' file systems;
//! - `last_log_mark`: one key per journal directory,
//!   `"LastLogMark: Journal Id - <id>(<hex id>)": "Pos - <mark>"` — ours names the journal's
//!   random id and the checkpointed record sequence number (Java: log file id and offset);
//! - `list_disk_file`: `{"journal files","entrylog files","index files"}`, tab-terminated
//!   names (our `.jseg` journal segments and `.seg` entry-log segments; our index lives in the
//!   segment footers, so "index files" is empty), `?file_type=journal|entrylog|index`;
//! - `gc`: GET `{"is_in_force_gc": "<bool>"}` (a string, as Java); PUT forces a round (a JSON
//!   string `"Triggered GC on BookieServer: <id>"`); its optional body `{"forceMajor",
//!   "forceMinor"}` says which compaction the forced round may run (gc_trigger.rs; a body
//!   that is not a JSON object 400 as Java); 405 for other methods.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use axum::body::Bytes;
use axum::extract::Query;
use axum::http::{Method, StatusCode};
use axum::response::Response;
use serde_json::{json as j, Map, Value};

use super::{json, not_started, text, wrong_method, Phase, Shared};
use crate::config::mapping::storage_config;
use crate::gc_trigger::ForcedCompaction;
use crate::mode::ReadOnlyReason;

/// `GET /api/v1/bookie/state`: answers 200 in every phase (the Helm liveness probe).
pub(super) async fn state(state: Shared, method: Method) -> Response {
    if method != Method::GET {
        return wrong_method("Only support GET method to retrieve bookie state.");
    }
    let phase = state.phase();
    let (read_only, high_priority) = match state.bookie() {
        Some(b) => (
            b.mode().reasons().published_read_only(),
            b.high_priority_writes_allowed(),
        ),
        None => (state.cfg.force_read_only_bookie, true),
    };
    json(
        StatusCode::OK,
        &j!({
            "running": phase != Phase::Starting,
            "readOnly": read_only,
            "shuttingDown": phase == Phase::ShuttingDown,
            "availableForHighPriorityWrites": high_priority,
        }),
    )
}

/// `GET /api/v1/bookie/is_ready`: the Helm readiness and startup probes.
pub(super) async fn is_ready(state: Shared, method: Method) -> Response {
    if method != Method::GET {
        return wrong_method("Only support GET method check if bookie is ready.");
    }
    if state.phase() == Phase::Running {
        text(StatusCode::OK, "OK")
    } else {
        not_started()
    }
}

/// `GET|PUT /api/v1/bookie/state/readonly`.
pub(super) async fn readonly(state: Shared, method: Method, body: Bytes) -> Response {
    if method != Method::GET && method != Method::PUT {
        return wrong_method("Unsupported method. Should be GET or PUT method");
    }
    let Some(bookie) = state.bookie() else {
        if method == Method::GET {
            return json(
                StatusCode::OK,
                &j!({ "readOnly": state.cfg.force_read_only_bookie }),
            );
        }
        return not_started();
    };
    if method == Method::PUT {
        let Some(want) = serde_json::from_slice::<Value>(&body)
            .ok()
            .and_then(|v| v.get("readOnly").and_then(Value::as_bool))
        else {
            return text(
                StatusCode::BAD_REQUEST,
                "Request body must be {\"readOnly\": true|false}",
            );
        };
        let read_only = bookie.mode().reasons().published_read_only();
        if !want && read_only && state.cfg.force_read_only_bookie {
            return text(
                StatusCode::BAD_REQUEST,
                "Bookie is in forceReadOnly mode, cannot transit to writable mode",
            );
        }
        if want && !read_only && !state.cfg.read_only_mode_enabled {
            return text(
                StatusCode::BAD_REQUEST,
                "Bookie is disabled ReadOnly mode, cannot transit to readOnly mode",
            );
        }
        // Only the operator's own reason moves: asking "writable" does not clear a full
        // disk, and "read-only" stays after the disk frees (mode.rs).
        let changed = bookie.mode().reasons().contains(ReadOnlyReason::Manual) != want;
        bookie.set_read_only(ReadOnlyReason::Manual, want);
        if changed {
            crate::bookie_status::persist_manual(&state.cfg, want).await;
        }
    }
    json(
        StatusCode::OK,
        &j!({ "readOnly": bookie.mode().reasons().published_read_only() }),
    )
}

/// `GET /api/v1/bookie/info`.
pub(super) async fn info(state: Shared, method: Method) -> Response {
    if method != Method::GET {
        return wrong_method("Only GET is supported.");
    }
    let dirs = state.cfg.ledger_dirs.clone();
    match tokio::task::spawn_blocking(move || crate::storage::disk_space(&dirs)).await {
        Ok(Ok((total, free))) => json(
            StatusCode::OK,
            &j!({ "freeSpace": free, "totalSpace": total }),
        ),
        Ok(Err(e)) => text(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
        Err(e) => text(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    }
}

/// `GET /api/v1/bookie/last_log_mark`: each journal directory's durable checkpoint.
pub(super) async fn last_log_mark(state: Shared, method: Method) -> Response {
    if method != Method::GET {
        return wrong_method("Not found method. Should be GET method");
    }
    let dirs = storage_config(&state.cfg).journal_dirs;
    let read = tokio::task::spawn_blocking(move || -> Result<Map<String, Value>, String> {
        let mut disk = bk_disk::SyscallDisk::new();
        let mut out = Map::new();
        for dir in &dirs {
            let (id, mark) = read_checkpoint(&mut disk, dir)?;
            out.insert(
                format!("LastLogMark: Journal Id - {id}({id:x})"),
                Value::String(format!("Pos - {mark}")),
            );
        }
        Ok(out)
    })
    .await;
    match read {
        Ok(Ok(out)) => json(StatusCode::OK, &Value::Object(out)),
        // Java answers a failure to read the mark 404 "ERROR handling request: ...".
        Ok(Err(e)) => text(
            StatusCode::NOT_FOUND,
            &format!("ERROR handling request: {e}"),
        ),
        Err(e) => text(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    }
}

/// (journal id, checkpointed seq) of one journal directory; (0, 0) before the first
/// checkpoint. A damaged checkpoint is an error, never a zero mark.
fn read_checkpoint(disk: &mut bk_disk::SyscallDisk, dir: &Path) -> Result<(u64, u64), String> {
    use bk_journal::format::{CheckpointRecord, CHECKPOINT_FILE};
    let path = dir.join(CHECKPOINT_FILE);
    match bk_disk::read_small_file(disk, &path, false, 64 * 1024) {
        Ok(bytes) => CheckpointRecord::decode(&bytes)
            .map(|c| (c.journal_id, c.mark))
            .map_err(|e| format!("{}: {e}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok((0, 0)),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// `GET /api/v1/bookie/list_disk_file[?file_type=journal|entrylog|index]`.
pub(super) async fn list_disk_file(
    state: Shared,
    method: Method,
    Query(params): Query<HashMap<String, String>>,
) -> Response {
    if method != Method::GET {
        return wrong_method("Not found method. Should be GET method");
    }
    let kind = params.get("file_type").cloned();
    let all = !matches!(kind.as_deref(), Some("journal" | "entrylog" | "index"));
    let sc = storage_config(&state.cfg);
    let listed = tokio::task::spawn_blocking(move || -> std::io::Result<Map<String, Value>> {
        let mut disk = bk_disk::SyscallDisk::new();
        let mut out = Map::new();
        if all || kind.as_deref() == Some("journal") {
            let names = list_files(&mut disk, &sc.journal_dirs, |n| {
                n.ends_with(bk_journal::format::SEGMENT_SUFFIX)
                    && !n.starts_with(bk_journal::format::FREE_PREFIX)
            })?;
            out.insert("journal files".into(), Value::String(names));
        }
        if all || kind.as_deref() == Some("entrylog") {
            let names = list_files(&mut disk, &sc.ledger_dirs, |n| n.ends_with(".seg"))?;
            out.insert("entrylog files".into(), Value::String(names));
        }
        if all || kind.as_deref() == Some("index") {
            out.insert("index files".into(), Value::String(String::new()));
        }
        Ok(out)
    })
    .await;
    match listed {
        Ok(Ok(out)) => json(StatusCode::OK, &Value::Object(out)),
        Ok(Err(e)) => text(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
        Err(e) => text(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    }
}

/// The names in `dirs` that `keep` accepts, sorted, each followed by a tab (Java's shape).
fn list_files(
    disk: &mut bk_disk::SyscallDisk,
    dirs: &[PathBuf],
    keep: impl Fn(&str) -> bool,
) -> std::io::Result<String> {
    use bk_disk::Disk;
    let mut names = Vec::new();
    for dir in dirs {
        let entries = match disk.list_dir(dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        for p in entries {
            if let Some(name) = p.file_name().and_then(|n| n.to_str()) {
                if keep(name) {
                    names.push(name.to_string());
                }
            }
        }
    }
    names.sort();
    Ok(names.iter().map(|n| format!("{n}\t")).collect())
}

/// `GET|PUT /api/v1/bookie/gc`.
pub(super) async fn gc(state: Shared, method: Method, body: Bytes) -> Response {
    match method {
        Method::GET => json(
            StatusCode::OK,
            &j!({ "is_in_force_gc": state.gc.is_in_force_gc().to_string() }),
        ),
        Method::PUT => {
            let compaction = match forced_compaction(&body) {
                Ok(c) => c,
                Err(e) => {
                    return text(
                        StatusCode::BAD_REQUEST,
                        &format!("Failed to handle the request, exception: {e}"),
                    )
                }
            };
            if !state.gc.force_compaction(compaction) {
                return text(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "GC is not running: off in standalone mode, or the bookie is not started yet",
                );
            }
            json(
                StatusCode::OK,
                &Value::String(format!("Triggered GC on BookieServer: {}", state.bookie_id)),
            )
        }
        _ => text(
            StatusCode::METHOD_NOT_ALLOWED,
            "Not allowed method. Should be PUT to trigger GC, Or GET to get Force GC state.",
        ),
    }
}

/// The `forceMajor` / `forceMinor` of a `PUT /api/v1/bookie/gc` body, read as Java's
/// `TriggerGCService`: a blank body or a missing key leaves the kind to the operator's
/// suspension; a value counts as true iff its text is `true` in any case
/// (`Boolean.parseBoolean(value.toString())`); a body that is not a JSON object is a 400.
fn forced_compaction(body: &[u8]) -> Result<ForcedCompaction, String> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(ForcedCompaction::default());
    }
    let value: Value = serde_json::from_slice(body).map_err(|e| e.to_string())?;
    let Value::Object(map) = value else {
        return Err(format!("not a JSON object: {value}"));
    };
    let flag = |key: &str| {
        map.get(key).map(|v| match v {
            Value::String(s) => s.eq_ignore_ascii_case("true"),
            other => other.to_string().eq_ignore_ascii_case("true"),
        })
    };
    Ok(ForcedCompaction {
        major: flag("forceMajor"),
        minor: flag("forceMinor"),
    })
}
