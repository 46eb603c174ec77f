//! `bookie inspect lastmark`: the durable checkpoint of every journal directory, the
//! equivalent of Java's `lastmark` ("LastLogMark : Journal Id - <id>(<hex>.txn), Pos -
//! <offset>"). Ours names the journal's random id and the checkpointed record sequence
//! number: every record with seq <= mark is durable in the entry log (docs/formats.md,
//! "Checkpoint file"), the same pair `/api/v1/bookie/last_log_mark` answers.
//!
//! A missing checkpoint prints mark 0 and says so; a damaged one is printed as damaged
//! (exit 1), never as a zero mark.

use serde_json::json;

use super::files::{Dirs, Reader};
use super::journal_scan::{read_checkpoint, Checkpoint};
use super::{InspectError, Output};

pub fn run(dirs: &Dirs) -> Result<Output, InspectError> {
    let mut r = Reader::new();
    let mut text = String::new();
    let mut rows = Vec::new();
    let mut code = 0;
    for dir in &dirs.journal {
        // A missing directory is an error, not "no checkpoint yet".
        r.list(dir)
            .map_err(|e| InspectError::io("journal directory", e))?;
        let cp = read_checkpoint(&mut r, dir);
        match &cp {
            Checkpoint::Present {
                journal_id, mark, ..
            } => {
                text += &format!(
                    "LastLogMark : Journal Id - {journal_id}({journal_id:x}), Pos - {mark}  [{}]\n",
                    dir.display()
                );
                rows.push(json!({
                    "dir": dir.display().to_string(),
                    "state": "present",
                    "journal_id": journal_id,
                    "journal_id_hex": format!("{journal_id:x}"),
                    "mark": mark,
                }));
            }
            Checkpoint::Absent => {
                text += &format!(
                    "LastLogMark : Journal Id - 0(0), Pos - 0  [{}: no checkpoint yet]\n",
                    dir.display()
                );
                rows.push(json!({
                    "dir": dir.display().to_string(),
                    "state": "absent",
                    "journal_id": null,
                    "mark": 0,
                }));
            }
            Checkpoint::Damaged(why) => {
                code = 1;
                text += &format!(
                    "LastLogMark : DAMAGED checkpoint in {}: {why}\n",
                    dir.display()
                );
                rows.push(json!({
                    "dir": dir.display().to_string(),
                    "state": "damaged",
                    "error": why,
                }));
            }
        }
    }
    Ok(Output {
        text,
        json: json!({ "journals": rows }),
        code,
    })
}
