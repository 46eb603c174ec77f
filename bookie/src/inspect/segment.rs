//! `bookie inspect segment <id> [--ledger L [--entry E]]`: the entries of one entry-log
//! segment, the equivalent of Java's `readlog`: one "--------- Lid=.., Eid=..,
//! ByteOffset=.., EntrySize=.. ---------" block per entry, in file order, with its LAC
//! (read from the entry's bytes) and whether its CRC32C matches its footer record.
//! Exit 1 when the index does not decode or an entry fails its check.

use serde_json::json;

use super::entrylog_scan::{self, load_index, read_entries};
use super::files::{Dirs, Reader};
use super::{InspectError, Output};

pub fn run(
    dirs: &Dirs,
    id: u64,
    ledger: Option<u64>,
    entry: Option<u64>,
) -> Result<Output, InspectError> {
    let mut r = Reader::new();
    let mut at = None;
    for (di, dir) in dirs.ledger.iter().enumerate() {
        let d =
            entrylog_scan::open_dir(&mut r, dir).map_err(|e| InspectError::io(dir.display(), e))?;
        if let Some((_, p)) = d.segments.iter().find(|(sid, _)| *sid == id) {
            at = Some((di, p.clone()));
            break;
        }
    }
    let Some((di, path)) = at else {
        return Err(InspectError::Usage(format!(
            "no entry-log segment {} in {:?}",
            bk_entrylog::segment_name(id),
            dirs.ledger
        )));
    };
    let seg = load_index(&mut r, id, di, &path).map_err(|e| InspectError::io(path.display(), e))?;
    let mut text = format!(
        "Scan entry log {id} ({}) in {}\n",
        bk_entrylog::segment_name(id),
        path.parent()
            .map(|p| p.display().to_string())
            .unwrap_or_default()
    );
    let (trailer, entries) = match &seg.index {
        Ok((t, _)) => {
            let keep =
                |l: u64, e: u64| ledger.is_none_or(|x| x == l) && entry.is_none_or(|x| x == e);
            let es = read_entries(&mut r, &seg, &keep)
                .map_err(|e| InspectError::io(path.display(), e))?;
            (t, es)
        }
        Err(e) => {
            text += &format!("UNREADABLE INDEX at offset {}: {}\n", e.offset, e.reason);
            return Ok(Output {
                text,
                json: json!({"segment": id, "file": path.display().to_string(), "size": seg.size,
                             "error_offset": e.offset, "error": e.reason}),
                code: 1,
            });
        }
    };
    text += &format!(
        "size={} entries={} seq={} data_len={} footer_offset={} footer_len={}\n",
        seg.size,
        trailer.entry_count,
        trailer.seq,
        trailer.data_len,
        trailer.footer_offset,
        trailer.footer_len
    );
    let mut bad = 0;
    let mut rows = Vec::new();
    for e in &entries {
        text += &format!(
            "--------- Lid={}, Eid={}, ByteOffset={}, EntrySize={} ---------\nType:           DATA\nLastConfirmed:  {}\n",
            e.ledger,
            e.entry,
            e.offset,
            e.len,
            e.lac.map_or("?".into(), |l| l.to_string())
        );
        match &e.crc_ok {
            Ok(()) => text += "CRC32C:         ok\n\n",
            Err(why) => {
                bad += 1;
                text += &format!("CRC32C:         MISMATCH: {why}\n\n");
            }
        }
        rows.push(json!({
            "ledger": e.ledger, "entry": e.entry, "offset": e.offset, "length": e.len,
            "lac": e.lac, "crc_ok": e.crc_ok.is_ok(),
            "error": e.crc_ok.as_ref().err(),
        }));
    }
    if entries.is_empty() {
        if let Some(l) = ledger {
            text += &format!(
                "LedgerId {l}{} is not available in the entry log {id} ({})\n",
                entry.map_or(String::new(), |e| format!(" EntryId {e}")),
                bk_entrylog::segment_name(id)
            );
        }
    }
    Ok(Output {
        text,
        json: json!({
            "segment": id,
            "file": path.display().to_string(),
            "size": seg.size,
            "seq": trailer.seq,
            "entry_count": trailer.entry_count,
            "data_len": trailer.data_len,
            "entries": rows,
        }),
        code: if bad > 0 { 1 } else { 0 },
    })
}
