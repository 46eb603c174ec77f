//! `bookie inspect verify`: the offline scrubber. Reads every entry-log segment and every
//! journal record and reports each problem with its file and offset (and ledger and
//! entry where one is known); exit 1 on any problem, 0 when everything checks.
//!
//! What is checked (the checks start-up and the read path make, all at once):
//! - entry log: each segment's length, trailer and footer CRCs and layout, the trailer's
//!   segment id against the file name, and every entry's length and CRC32C against its
//!   footer record; every copy of `ledgers.state` decodes; every segment the newest copy
//!   lists exists with its recorded length (docs/durability.md, "What is detected and how");
//! - journal: the checkpoint decodes; every group and record of every live segment
//!   (header CRC, journal and segment ids, record CRCs and seqs); the `prev_seq` chain
//!   from segment to segment; no segment missing above the checkpoint mark; and no
//!   intact group after a damaged one (mid-log damage). A damaged spot with nothing
//!   intact after it is a torn tail (the group in flight at a crash, or being written
//!   right now by a live bookie) and is a note, not a problem, as replay treats it.
//!
//! Beside a live bookie: a file removed meanwhile (GC, a checkpoint freeing journal
//! segments) is skipped; journal problems are confirmed by a second, fresh pass (a
//! group being written during the first pass reads back whole in the second), and a
//! missing listed segment by re-reading the state file.

use std::collections::HashSet;
use std::path::Path;

use serde_json::{json, Value};

use super::entrylog_scan::{self, check_entries, read_states};
use super::files::{Dirs, Reader};
use super::journal_scan::{
    self, later_header, scan_segment, scan_segment_from, Checkpoint, SegmentEnd,
};
use super::{InspectError, Output};

/// A finding that makes `verify` fail.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    pub file: String,
    pub offset: Option<u64>,
    pub ledger: Option<u64>,
    pub entry: Option<u64>,
    pub what: String,
}

impl Problem {
    fn at(file: &Path, offset: Option<u64>, what: impl Into<String>) -> Problem {
        Problem {
            file: file.display().to_string(),
            offset,
            ledger: None,
            entry: None,
            what: what.into(),
        }
    }

    fn line(&self) -> String {
        let mut s = format!("PROBLEM: file={}", self.file);
        if let Some(o) = self.offset {
            s += &format!(" offset={o}");
        }
        if let Some(l) = self.ledger {
            s += &format!(" ledger={l}");
        }
        if let Some(e) = self.entry {
            s += &format!(" entry={e}");
        }
        s + &format!(": {}", self.what)
    }

    fn json(&self) -> Value {
        json!({"file": self.file, "offset": self.offset, "ledger": self.ledger,
               "entry": self.entry, "problem": self.what})
    }
}

/// What was read, for the summary.
#[derive(Default)]
struct Counts {
    segments: u64,
    entries: u64,
    journal_segments: u64,
    journal_records: u64,
}

pub fn run(dirs: &Dirs) -> Result<Output, InspectError> {
    let mut r = Reader::new();
    let mut problems = Vec::new();
    let mut notes = Vec::new();
    let mut n = Counts::default();
    entry_log(&mut r, dirs, &mut problems, &mut notes, &mut n)?;
    for dir in &dirs.journal {
        let mut first = Vec::new();
        let mut jn = Counts::default();
        let mut jnotes = Vec::new();
        journal_dir(&mut r, dir, &mut first, &mut jnotes, &mut jn)?;
        if !first.is_empty() {
            // Confirm with a fresh pass: keep what both passes found at the same place.
            let mut second = Vec::new();
            let mut scratch = Vec::new();
            journal_dir(
                &mut r,
                dir,
                &mut second,
                &mut scratch,
                &mut Counts::default(),
            )?;
            let again: HashSet<(String, Option<u64>)> =
                second.iter().map(|p| (p.file.clone(), p.offset)).collect();
            first.retain(|p| again.contains(&(p.file.clone(), p.offset)));
        }
        problems.extend(first);
        notes.extend(jnotes);
        n.journal_segments += jn.journal_segments;
        n.journal_records += jn.journal_records;
    }
    let mut text = String::new();
    for p in &problems {
        text += &p.line();
        text += "\n";
    }
    for note in &notes {
        text += &format!("note: {note}\n");
    }
    let summary = format!(
        "{} entry-log segments, {} entries, {} journal segments, {} journal records read",
        n.segments, n.entries, n.journal_segments, n.journal_records
    );
    if problems.is_empty() {
        text += &format!("verify: OK: {summary}\n");
    } else {
        text += &format!("verify: {} PROBLEM(S): {summary}\n", problems.len());
    }
    Ok(Output {
        json: json!({
            "ok": problems.is_empty(),
            "problems": problems.iter().map(Problem::json).collect::<Vec<_>>(),
            "notes": notes,
            "entrylog_segments": n.segments,
            "entries": n.entries,
            "journal_segments": n.journal_segments,
            "journal_records": n.journal_records,
        }),
        text,
        code: if problems.is_empty() { 0 } else { 1 },
    })
}

fn entry_log(
    r: &mut Reader,
    dirs: &Dirs,
    problems: &mut Vec<Problem>,
    notes: &mut Vec<String>,
    n: &mut Counts,
) -> Result<(), InspectError> {
    let (lds, segs) = entrylog_scan::load_all(r, &dirs.ledger)
        .map_err(|e| InspectError::io("ledger directories", e))?;
    for s in &segs {
        n.segments += 1;
        match &s.index {
            Err(e) => problems.push(Problem::at(&s.path, Some(e.offset), &e.reason)),
            Ok((t, _)) => {
                if t.segment_id != s.id {
                    problems.push(Problem::at(
                        &s.path,
                        Some(s.size - bk_entrylog::format::TRAILER_LEN as u64),
                        format!(
                            "trailer names segment {}, the file name {}",
                            t.segment_id, s.id
                        ),
                    ));
                }
                n.entries += s.entry_count();
                let bad = match check_entries(r, s) {
                    Ok(b) => b,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                    Err(e) => {
                        problems.push(Problem::at(&s.path, None, format!("read failed: {e}")));
                        continue;
                    }
                };
                for b in bad {
                    problems.push(Problem {
                        file: s.path.display().to_string(),
                        offset: Some(b.offset),
                        ledger: Some(b.ledger),
                        entry: Some(b.entry),
                        what: b.reason,
                    });
                }
            }
        }
    }
    for d in &lds {
        for p in &d.in_progress {
            notes.push(format!("{} is being written (skipped)", p.display()));
        }
    }
    let (copies, best) = read_states(r, &lds);
    for c in &copies {
        if let Err(e) = &c.state {
            problems.push(Problem::at(&c.path, Some(0), format!("ledger state: {e}")));
        }
    }
    let Some(best) = best else {
        if !segs.is_empty() {
            let p = dirs.ledger.first().map(|d| d.join(bk_entrylog::STATE_FILE));
            problems.push(Problem::at(
                p.as_deref().unwrap_or(Path::new("ledgers.state")),
                None,
                "no readable ledger-state file while segments exist (start-up refuses)",
            ));
        }
        return Ok(());
    };
    let Ok(state) = &copies[best].state else {
        return Ok(());
    };
    for rec in state.segments.iter().flatten() {
        let Some(dir) = dirs.ledger.get(rec.dir_index as usize) else {
            problems.push(Problem::at(
                &copies[best].path,
                None,
                format!(
                    "lists segment {} in directory #{}, which is not configured",
                    rec.segment_id, rec.dir_index
                ),
            ));
            continue;
        };
        let path = dir.join(bk_entrylog::segment_name(rec.segment_id));
        if let Some(s) = segs
            .iter()
            .find(|s| s.id == rec.segment_id && s.dir_index == rec.dir_index as usize)
        {
            if s.size != rec.file_len {
                problems.push(Problem::at(
                    &path,
                    None,
                    format!(
                        "is {} bytes, the ledger state records {}",
                        s.size, rec.file_len
                    ),
                ));
            }
            continue;
        }
        match r.open(&path) {
            Ok(f) => r.close(f), // flushed after the listing
            Err(_) if still_listed(r, &copies[best].path, rec.segment_id) => {
                problems.push(Problem::at(
                    &path,
                    None,
                    "listed in the ledger state but missing (start-up refuses)",
                ));
            }
            Err(_) => {} // removed by GC after the listing, and unlisted first
        }
    }
    Ok(())
}

/// Whether the state file at `path`, read again now, still lists `segment`.
fn still_listed(r: &mut Reader, path: &Path, segment: u64) -> bool {
    let Ok(b) = r.read_small(path, u64::MAX) else {
        return true;
    };
    match bk_entrylog::format::StateFile::decode(&b) {
        Ok(s) => s.segments.iter().flatten().any(|x| x.segment_id == segment),
        Err(_) => true,
    }
}

fn journal_dir(
    r: &mut Reader,
    dir: &Path,
    problems: &mut Vec<Problem>,
    notes: &mut Vec<String>,
    n: &mut Counts,
) -> Result<(), InspectError> {
    let jd = journal_scan::open_dir(r, dir).map_err(|e| InspectError::io(dir.display(), e))?;
    let (mark, durable) = match &jd.checkpoint {
        Checkpoint::Present { mark, durable, .. } => (Some(*mark), *durable),
        Checkpoint::Absent => (None, 0),
        Checkpoint::Damaged(why) => {
            problems.push(Problem::at(
                &dir.join(bk_journal::format::CHECKPOINT_FILE),
                Some(0),
                format!("checkpoint: {why}"),
            ));
            (None, 0)
        }
    };
    let Some(jid) = jd.journal_id else {
        return Ok(()); // no checkpoint and no group anywhere: nothing written yet
    };
    let mut scans = Vec::new();
    for (id, path) in &jd.segments {
        match scan_segment(r, *id, path, jid) {
            Ok(s) => scans.push(s),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(InspectError::io(path.display(), e)),
        }
    }
    let mut last: Option<u64> = None;
    // Where the log ends: (segment, offset), for the "ends below durable" check.
    let mut log_end: Option<(std::path::PathBuf, u64)> = None;
    let n_scans = scans.len();
    for (i, s) in scans.into_iter().enumerate() {
        n.journal_segments += 1;
        if let (Some(prev), Some(first)) = (s.first_prev_seq, s.records.first()) {
            match last {
                None => {
                    if let Some(m) = mark.filter(|m| prev > *m) {
                        problems.push(Problem::at(
                            &s.path,
                            Some(0),
                            format!(
                                "the oldest segment continues from seq {prev} but the checkpoint mark is {m}: \
                                 segments holding seqs {}..={prev} are missing",
                                m + 1
                            ),
                        ));
                    }
                }
                Some(l) if l != prev => problems.push(Problem::at(
                    &s.path,
                    Some(0),
                    format!(
                        "first group (seq {}) continues from seq {prev}, but the log before it ends at seq {l}",
                        first.seq
                    ),
                )),
                Some(_) => {}
            }
        }
        // The segment piece by piece: after a damaged spot, resume at the next intact group.
        let mut piece = s;
        loop {
            n.journal_records += piece.records.len() as u64;
            if let Some(l) = piece.last_seq {
                last = Some(l);
            }
            log_end = Some((piece.path.clone(), piece.end_offset));
            if piece.end == SegmentEnd::EndOfFile {
                break;
            }
            // Unlike replay, the floor is the chain so far, not the checkpoint mark: damage
            // to records already in the entry log is still damage a scrubber reports.
            let floor = last.unwrap_or(0);
            let later = match later_header(r, &piece.path, piece.id, jid, piece.end_offset, floor) {
                Ok(l) => l,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
                Err(e) => return Err(InspectError::io(piece.path.display(), e)),
            };
            let Some((off, h)) = later else {
                if let SegmentEnd::Invalid(why) = &piece.end {
                    let whose = if i + 1 == n_scans {
                        "torn tail (the group in flight at a crash, or being written now)"
                    } else {
                        "torn group before a restart (the log continues in the next segment)"
                    };
                    notes.push(format!(
                        "{} offset {}: {whose}: {why}",
                        piece.path.display(),
                        piece.end_offset
                    ));
                }
                break;
            };
            problems.push(Problem::at(
                &piece.path,
                Some(piece.end_offset),
                format!(
                    "{} after seq {floor}, while a later group (seqs {}..={}) is intact at offset {off}: \
                     damage in the middle of the log, {}",
                    piece.end.describe(),
                    h.first_seq,
                    h.last_seq(),
                    if mark.is_some_and(|m| h.prev_seq <= m) {
                        "at or below the checkpoint mark (replay skips it: those records are in the entry log)"
                    } else {
                        "above the checkpoint mark (the journal will refuse to open)"
                    }
                ),
            ));
            piece = match scan_segment_from(r, piece.id, &piece.path, jid, off) {
                Ok(p) => p,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
                Err(e) => return Err(InspectError::io(piece.path.display(), e)),
            };
        }
    }
    // The checkpoint's `durable` (format version 2): seqs up to it were fsynced, so a log
    // ending below it lost an acknowledged group (replay refuses it too).
    let m = mark.unwrap_or(0);
    let ended = last.unwrap_or(m).max(m);
    if durable > m && ended < durable {
        let (path, offset) =
            log_end.unwrap_or_else(|| (dir.join(bk_journal::format::CHECKPOINT_FILE), 0));
        problems.push(Problem::at(
            &path,
            Some(offset),
            format!(
                "the log ends after seq {ended}, but the checkpoint records seqs up to {durable} as fsynced \
                 (acknowledged): an acknowledged group was damaged or lost (the journal will refuse to open)"
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    //! The journal judgement on hand-made segments: a torn last group is a note (what a
    //! live bookie's group in flight looks like), a broken chain between segments and a
    //! damaged group with an intact one after it are problems at their offsets.
    use super::*;
    use bk_disk::{AlignedBuf, SECTOR};
    use bk_journal::format::{encode_record, segment_file_name, CheckpointRecord, GroupHeader};
    use bk_journal::Record;
    use std::path::PathBuf;

    const JID: u64 = 0xfeed;

    /// One group of `n` entry records of ledger 1, seqs `first..first+n`, padded.
    fn group(segment: u64, prev: u64, first: u64, n: u64) -> Vec<u8> {
        let mut recs = AlignedBuf::with_capacity(SECTOR * 4);
        for s in first..first + n {
            let rec = Record::entry(1, s, bytes::Bytes::from(vec![s as u8; 100]));
            assert!(encode_record(&mut recs, s, &rec));
        }
        let h = GroupHeader {
            journal_id: JID,
            segment_id: segment,
            prev_seq: prev,
            first_seq: first,
            record_count: n as u32,
            records_len: recs.len() as u32,
        };
        let mut g = h.encode().to_vec();
        g.extend_from_slice(recs.as_slice());
        g.resize(g.len().next_multiple_of(SECTOR), 0);
        g
    }

    fn write_segment(dir: &Path, id: u64, groups: &[Vec<u8>]) -> PathBuf {
        let mut b: Vec<u8> = groups.concat();
        b.resize(16 * SECTOR, 0);
        let p = dir.join(segment_file_name(id));
        std::fs::write(&p, b).unwrap();
        p
    }

    fn judge(dir: &Path) -> (Vec<Problem>, Vec<String>) {
        let (mut p, mut n) = (Vec::new(), Vec::new());
        journal_dir(
            &mut Reader::new(),
            dir,
            &mut p,
            &mut n,
            &mut Counts::default(),
        )
        .unwrap();
        (p, n)
    }

    #[test]
    fn torn_last_group_is_a_note_damage_before_an_intact_group_is_a_problem() {
        let d = tempfile::tempdir().unwrap();
        let cp = CheckpointRecord {
            journal_id: JID,
            mark: 2,
            durable: 2,
            storage_epoch: 0,
        };
        let mut sector = cp.encode().to_vec();
        sector.resize(SECTOR, 0);
        std::fs::write(d.path().join("checkpoint"), sector).unwrap();
        let mut torn = group(1, 5, 6, 2);
        torn[200] ^= 0xff; // a record of the group in flight, half written
        write_segment(
            d.path(),
            1,
            &[group(1, 0, 1, 3), group(1, 3, 4, 2), torn.clone()],
        );
        let (p, n) = judge(d.path());
        assert!(p.is_empty(), "{p:?}");
        assert_eq!(n.len(), 1, "{n:?}");
        assert!(n[0].contains("offset 8192: torn tail"), "{n:?}");

        // The same damage with an intact group after it: mid-log damage, at its offset.
        let seg = write_segment(d.path(), 1, &[group(1, 0, 1, 3), torn, group(1, 7, 8, 1)]);
        let (p, _) = judge(d.path());
        assert_eq!(p.len(), 1, "{p:?}");
        assert_eq!(
            (p[0].file.as_str(), p[0].offset),
            (seg.to_str().unwrap(), Some(4096))
        );
        assert!(p[0].what.contains("above the checkpoint mark"), "{p:?}");
    }

    #[test]
    fn a_log_ending_below_the_checkpoints_durable_is_a_problem() {
        // Groups 1..=6 were fsynced when the checkpoint (mark 2) was written; the last one
        // is damaged, so the log ends at seq 4: an acknowledged group lost, as replay says.
        let d = tempfile::tempdir().unwrap();
        let cp = CheckpointRecord {
            journal_id: JID,
            mark: 2,
            durable: 6,
            storage_epoch: 0,
        };
        let mut sector = cp.encode().to_vec();
        sector.resize(SECTOR, 0);
        std::fs::write(d.path().join("checkpoint"), sector).unwrap();
        let mut damaged = group(1, 5, 6, 2);
        damaged[200] ^= 0xff;
        let seg = write_segment(
            d.path(),
            1,
            &[group(1, 0, 1, 3), group(1, 3, 4, 2), damaged],
        );
        let (p, _) = judge(d.path());
        assert_eq!(p.len(), 1, "{p:?}");
        assert_eq!(
            (p[0].file.as_str(), p[0].offset),
            (seg.to_str().unwrap(), Some(8192))
        );
        assert!(p[0].what.contains("up to 6 as fsynced"), "{p:?}");
    }

    #[test]
    fn a_chain_broken_between_segments_is_a_problem() {
        let d = tempfile::tempdir().unwrap();
        write_segment(d.path(), 1, &[group(1, 0, 1, 3)]);
        let second = write_segment(d.path(), 2, &[group(2, 5, 6, 1)]);
        let (p, _) = judge(d.path());
        assert_eq!(p.len(), 1, "{p:?}");
        assert_eq!(
            (p[0].file.as_str(), p[0].offset),
            (second.to_str().unwrap(), Some(0))
        );
        assert!(p[0].what.contains("ends at seq 3"), "{p:?}");
        // Continuing from seq 3 is the intact chain.
        write_segment(d.path(), 2, &[group(2, 3, 4, 1)]);
        assert!(judge(d.path()).0.is_empty());
    }
}
