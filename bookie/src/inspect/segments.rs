//! `bookie inspect segments`: the files on disk, the equivalent of Java's
//! `listfilesondisc` (its three sections, one path per line), with what each file holds:
//! journal segments (live, free, being built) with sizes; entry-log segments with size,
//! entry count, ledgers and precedence seq (from the trailer and footer); segments being
//! written; the ledger-state file's epoch and counts. Our index lives in each segment's
//! footer, so the index section lists nothing.

use serde_json::{json, Value};

use super::entrylog_scan::{self, read_states};
use super::files::{Dirs, Reader};
use super::journal_scan;
use super::{InspectError, Output};

fn size_of(r: &mut Reader, path: &std::path::Path) -> Option<u64> {
    let f = r.open(path).ok()?;
    let len = f.len;
    r.close(f);
    Some(len)
}

fn ledger_list(ls: &[u64]) -> String {
    ls.iter().map(u64::to_string).collect::<Vec<_>>().join(",")
}

pub fn run(dirs: &Dirs) -> Result<Output, InspectError> {
    let mut r = Reader::new();
    let mut text = String::from("--------- Printing the list of Journal Files ---------\n");
    let mut journal_files = Vec::new();
    for dir in &dirs.journal {
        let jd =
            journal_scan::open_dir(&mut r, dir).map_err(|e| InspectError::io(dir.display(), e))?;
        let mut rows: Vec<(String, &str)> = jd
            .segments
            .iter()
            .map(|(_, p)| (p.display().to_string(), "live segment"))
            .collect();
        rows.extend(
            jd.others
                .iter()
                .map(|(n, k)| (dir.join(n).display().to_string(), *k)),
        );
        for (path, kind) in rows {
            let Some(size) = size_of(&mut r, std::path::Path::new(&path)) else {
                continue;
            };
            text += &format!("{path}\tsize={size}\t{kind}\n");
            journal_files.push(json!({"path": path, "size": size, "kind": kind}));
        }
    }
    text += "\n--------- Printing the list of EntryLog/Ledger Files ---------\n";
    let (lds, segs) = entrylog_scan::load_all(&mut r, &dirs.ledger)
        .map_err(|e| InspectError::io("ledger directories", e))?;
    let mut seg_rows = Vec::new();
    for s in &segs {
        let row: Value = match &s.index {
            Ok((t, _)) => {
                text += &format!(
                    "{}\tsize={}\tentries={}\tledgers={}\tseq={}\n",
                    s.path.display(),
                    s.size,
                    s.entry_count(),
                    ledger_list(&s.ledgers()),
                    t.seq
                );
                json!({
                    "path": s.path.display().to_string(), "segment": s.id, "size": s.size,
                    "entries": s.entry_count(), "ledgers": s.ledgers(), "seq": t.seq,
                    "data_len": t.data_len, "state": "finished",
                })
            }
            Err(e) => {
                text += &format!(
                    "{}\tsize={}\tUNREADABLE INDEX at offset {}: {}\n",
                    s.path.display(),
                    s.size,
                    e.offset,
                    e.reason
                );
                json!({
                    "path": s.path.display().to_string(), "segment": s.id, "size": s.size,
                    "state": "unreadable", "error_offset": e.offset, "error": e.reason,
                })
            }
        };
        seg_rows.push(row);
    }
    for d in &lds {
        for p in &d.in_progress {
            let Some(size) = size_of(&mut r, p) else {
                continue;
            };
            text += &format!("{}\tsize={size}\tbeing written\n", p.display());
            seg_rows.push(
                json!({"path": p.display().to_string(), "size": size, "state": "being written"}),
            );
        }
    }
    let (copies, best) = read_states(&mut r, &lds);
    let mut state_rows = Vec::new();
    for (i, c) in copies.iter().enumerate() {
        let size = size_of(&mut r, &c.path).unwrap_or(0);
        match &c.state {
            Ok(s) => {
                text += &format!(
                    "{}\tsize={size}\tledger state: epoch={} ledgers={} tombstones={} segments={}{}\n",
                    c.path.display(),
                    s.epoch,
                    s.ledgers.len(),
                    s.tombstones.len(),
                    s.segments.as_ref().map_or("unlisted".into(), |v| v.len().to_string()),
                    if Some(i) == best { " (newest)" } else { "" }
                );
                state_rows.push(json!({
                    "path": c.path.display().to_string(), "size": size, "epoch": s.epoch,
                    "ledgers": s.ledgers.len(), "tombstones": s.tombstones.len(),
                    "segments": s.segments.as_ref().map(|v| v.len()), "newest": Some(i) == best,
                }));
            }
            Err(e) => {
                text += &format!(
                    "{}\tsize={size}\tledger state: UNREADABLE: {e}\n",
                    c.path.display()
                );
                state_rows
                    .push(json!({"path": c.path.display().to_string(), "size": size, "error": e}));
            }
        }
    }
    text += "\n--------- Printing the list of Index Files ---------\n";
    text += "(none: each entry-log segment carries its index in its footer)\n";
    Ok(Output {
        text,
        json: json!({
            "journal_files": journal_files,
            "entrylog_files": seg_rows,
            "ledger_state_files": state_rows,
            "index_files": [],
        }),
        code: 0,
    })
}
