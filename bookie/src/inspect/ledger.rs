//! `bookie inspect ledger <id>`: where a ledger's entries are and its state, the
//! equivalent of Java's `ledger` on DbLedgerStorage ("entry N\t:\t(log: L, pos: P)") with
//! its `--meta` lines (master key, fenced) always printed.
//!
//! Sources, as the bookie itself resolves them:
//! - the ledger state (fenced, master key, LAC, explicit LAC, deleted) from the newest
//!   valid `ledgers.state` copy;
//! - entry locations from every segment's footer; where an entry is in several
//!   segments, the copy in the highest (seq, segment id) wins (docs/formats.md);
//! - records above the journal checkpoint (not yet in any segment while the bookie runs:
//!   they sit in its write cache) are listed as `(journal: <file>, pos: P)`, and a fence
//!   or master key found only there is shown as such.
//!
//! Exit 1 when the bookie holds nothing of the ledger.

use std::collections::BTreeMap;

use serde_json::json;

use super::entrylog_scan::{self, read_states};
use super::files::{hex, Dirs, Reader};
use super::journal_scan::{self, Checkpoint};
use super::{InspectError, Output};
use bk_journal::RecordKind;

/// Where one entry is.
enum Loc {
    Segment {
        seq: u64,
        segment: u64,
        offset: u64,
        len: u32,
        path: String,
    },
    Journal {
        path: String,
        offset: u64,
        seq: u64,
        len: u32,
    },
}

pub fn run(dirs: &Dirs, ledger: u64) -> Result<Output, InspectError> {
    let mut r = Reader::new();
    let (lds, segs) = entrylog_scan::load_all(&mut r, &dirs.ledger)
        .map_err(|e| InspectError::io("ledger directories", e))?;
    let (copies, best) = read_states(&mut r, &lds);
    let state = best.and_then(|i| copies[i].state.as_ref().ok());
    let rec = state.and_then(|s| s.ledgers.iter().find(|l| l.ledger == ledger));
    let tombstone = state.and_then(|s| s.tombstones.iter().find(|(l, _)| *l == ledger));

    let mut locs: BTreeMap<u64, Loc> = BTreeMap::new();
    let mut unreadable = Vec::new();
    for s in &segs {
        let Ok((t, runs)) = &s.index else {
            unreadable.push(s.path.display().to_string());
            continue;
        };
        for run in runs.iter().filter(|run| run.ledger == ledger) {
            for e in &run.entries {
                let newer = match locs.get(&e.entry) {
                    Some(Loc::Segment { seq, segment, .. }) => (t.seq, s.id) > (*seq, *segment),
                    _ => true,
                };
                if newer {
                    locs.insert(
                        e.entry,
                        Loc::Segment {
                            seq: t.seq,
                            segment: s.id,
                            offset: e.offset,
                            len: e.len,
                            path: s.path.display().to_string(),
                        },
                    );
                }
            }
        }
    }
    // Records above the checkpoint mark: still only in the journal (or being flushed).
    let mut fenced_in_journal = false;
    let mut key_in_journal = None;
    for dir in &dirs.journal {
        let jd =
            journal_scan::open_dir(&mut r, dir).map_err(|e| InspectError::io(dir.display(), e))?;
        let (Some(jid), mark) = (
            jd.journal_id,
            match jd.checkpoint {
                Checkpoint::Present { mark, .. } => mark,
                _ => 0,
            },
        ) else {
            continue;
        };
        for (id, path) in &jd.segments {
            let s = match journal_scan::scan_segment(&mut r, *id, path, jid) {
                Ok(s) => s,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(InspectError::io(path.display(), e)),
            };
            for rec in s
                .records
                .iter()
                .filter(|x| x.ledger == Some(ledger) && x.seq > mark)
            {
                match rec.kind {
                    RecordKind::ENTRY => {
                        if let Some(e) = rec.entry {
                            locs.entry(e).or_insert(Loc::Journal {
                                path: path.display().to_string(),
                                offset: rec.offset,
                                seq: rec.seq,
                                len: rec.payload_len.saturating_sub(16),
                            });
                        }
                    }
                    RecordKind::FENCE => fenced_in_journal = true,
                    RecordKind::MASTER_KEY => key_in_journal = rec.master_key.clone(),
                    _ => {}
                }
            }
        }
    }

    let master_key = rec
        .and_then(|x| x.master_key.as_deref().map(hex))
        .or(key_in_journal.clone());
    let fenced = rec.is_some_and(|x| x.fenced) || fenced_in_journal;
    let mut text = format!("===== LEDGER: {ledger} =====\n");
    text += &format!(
        "master key   : {}\n",
        master_key.as_deref().unwrap_or("none")
    );
    text += &format!(
        "isFenced     : {fenced}{}\n",
        if fenced_in_journal && !rec.is_some_and(|x| x.fenced) {
            " (fence record in the journal, above the checkpoint)"
        } else {
            ""
        }
    );
    text += &format!(
        "lac          : {}\n",
        rec.and_then(|x| x.lac)
            .map_or("none".into(), |l| l.to_string())
    );
    text += &format!(
        "explicit lac : {}\n",
        rec.and_then(|x| x.explicit_lac.as_ref())
            .map_or("none".into(), |b| format!("{} bytes", b.len()))
    );
    text += &format!(
        "deleted      : {}\n",
        match tombstone {
            Some((_, at)) => format!("true (at checkpoint {at})"),
            None => "false".into(),
        }
    );
    text += &format!("entries      : {}\n", locs.len());
    let mut rows = Vec::new();
    for (e, loc) in &locs {
        match loc {
            Loc::Segment {
                segment,
                offset,
                len,
                seq,
                path,
            } => {
                text += &format!("entry {e}\t:\t(log: {segment}, pos: {offset})\n");
                rows.push(json!({"entry": e, "where": "segment", "segment": segment,
                                 "seq": seq, "offset": offset, "length": len, "file": path}));
            }
            Loc::Journal {
                path,
                offset,
                seq,
                len,
            } => {
                text += &format!("entry {e}\t:\t(journal: {path}, pos: {offset})\n");
                rows.push(json!({"entry": e, "where": "journal", "file": path,
                                 "offset": offset, "journal_seq": seq, "length": len}));
            }
        }
    }
    for p in &unreadable {
        text += &format!("(segment {p} has an unreadable index: run `bookie inspect verify`)\n");
    }
    let known = rec.is_some() || tombstone.is_some() || !locs.is_empty() || master_key.is_some();
    if !known {
        text += &format!("Ledger {ledger} is not on this bookie\n");
    }
    Ok(Output {
        text,
        json: json!({
            "ledger": ledger,
            "known": known,
            "master_key": master_key,
            "fenced": fenced,
            "fenced_in_journal_only": fenced_in_journal && !rec.is_some_and(|x| x.fenced),
            "lac": rec.and_then(|x| x.lac),
            "explicit_lac_length": rec.and_then(|x| x.explicit_lac.as_ref()).map(|b| b.len()),
            "deleted": tombstone.is_some(),
            "entries": rows,
            "unreadable_segments": unreadable,
        }),
        code: if known { 0 } else { 1 },
    })
}
