//! The newest-segment record on the simulated disk (issue 11, "know what must
//! exist"): a lost or cut newest journal segment after a crash refuses the open,
//! naming the file, where replay alone would end the log early and lose acknowledged
//! records silently; and no crash point around a segment switch, open's recycling or
//! an upgrade makes a healthy journal refuse to open.

mod common;

use bk_disk::{Disk, Faults, OpenOptions, SimFs, SECTOR};
use bk_journal::format::{segment_file_name, NEWEST_FILE};
use bk_journal::{Journal, JournalConfig, JournalError, Record, Seq};
use bytes::Bytes;
use common::*;
use std::path::{Path, PathBuf};

fn append_n(j: &Journal, from: u64, n: u64, len: usize) -> Vec<Seq> {
    (from..from + n)
        .map(|i| {
            j.append_blocking(1, Record::entry(1, i, Bytes::from(vec![i as u8; len])))
                .unwrap()
        })
        .collect()
}

/// Final-named segment ids in `dir`, sorted.
fn segment_ids(fs: &SimFs, dir: &Path) -> Vec<u64> {
    let mut d = fs.disk();
    let mut ids: Vec<u64> = d
        .list_dir(dir)
        .unwrap()
        .iter()
        .filter_map(|p| {
            let n = p.file_name()?.to_str()?;
            let hex = n.strip_suffix(".jseg")?;
            (hex.len() == 16).then(|| u64::from_str_radix(hex, 16).ok())?
        })
        .collect();
    ids.sort();
    ids
}

/// Segments large enough that these tests' appends stay in segment 1.
fn one_segment_config() -> JournalConfig {
    JournalConfig {
        segment_bytes: 1 << 20,
        ..small_config()
    }
}

fn seg_path(dir: &Path, id: u64) -> PathBuf {
    dir.join(segment_file_name(id))
}

fn refused_naming(
    r: Result<(Journal, bk_journal::Replay, Vec<bk_journal::ReplayedRecord>), JournalError>,
    path: &Path,
) {
    match r {
        Err(JournalError::Corruption {
            path: p, reason, ..
        }) => {
            assert_eq!(p, path, "refusal names another file: {reason}");
        }
        Err(e) => panic!("refused, but not naming {}: {e}", path.display()),
        Ok((_, r, recs)) => panic!(
            "opened without {}: {} records replayed, last seq {}",
            path.display(),
            recs.len(),
            r.dirs[0].last_seq
        ),
    }
}

/// A crash after 50 acknowledged appends into the only segment, which is then
/// deleted: the journal must not open as if it had been empty.
#[test]
fn deleted_only_segment_after_crash_refuses_open_naming_it() {
    let fs = SimFs::new(11);
    let cfg = one_segment_config();
    let d = dirs(1);
    let (j, _, _) = open_collect(&d, &cfg, sim_factory(&fs)).unwrap();
    append_n(&j, 0, 50, 100);
    j.shutdown();
    fs.crash();
    assert_eq!(segment_ids(&fs, &d[0]), vec![1]);
    fs.disk().remove(&seg_path(&d[0], 1)).unwrap();
    refused_naming(
        open_collect(&d, &cfg, sim_factory(&fs)),
        &seg_path(&d[0], 1),
    );
}

/// Several segments: deleting the newest, or the two newest, refuses naming the
/// newest; deleting a middle one was caught before (the group chain).
#[test]
fn deleted_newest_segments_refuse_open_naming_the_newest() {
    for lose in [1usize, 2] {
        let fs = SimFs::new(12);
        let cfg = small_config();
        let d = dirs(1);
        let (j, _, _) = open_collect(&d, &cfg, sim_factory(&fs)).unwrap();
        append_n(&j, 0, 300, 700);
        j.shutdown();
        fs.crash();
        let ids = segment_ids(&fs, &d[0]);
        assert!(ids.len() >= 3, "{ids:?}");
        let newest = *ids.last().unwrap();
        for id in &ids[ids.len() - lose..] {
            fs.disk().remove(&seg_path(&d[0], *id)).unwrap();
        }
        refused_naming(
            open_collect(&d, &cfg, sim_factory(&fs)),
            &seg_path(&d[0], newest),
        );
    }
}

/// A newest segment cut short (to 0, or in the middle) refuses naming it.
#[test]
fn truncated_newest_segment_refuses_open_naming_it() {
    for keep in [0u64, 8 * SECTOR as u64] {
        let fs = SimFs::new(13);
        let cfg = small_config();
        let d = dirs(1);
        let (j, _, _) = open_collect(&d, &cfg, sim_factory(&fs)).unwrap();
        append_n(&j, 0, 30, 2000);
        j.shutdown();
        fs.crash();
        let newest = *segment_ids(&fs, &d[0]).last().unwrap();
        let path = seg_path(&d[0], newest);
        let mut disk = fs.disk();
        let f = disk
            .open(
                &path,
                OpenOptions {
                    create: false,
                    create_new: false,
                    write: true,
                    direct: false,
                },
            )
            .unwrap();
        disk.set_len(f, keep).unwrap();
        disk.close(f).unwrap();
        refused_naming(open_collect(&d, &cfg, sim_factory(&fs)), &path);
    }
}

/// After a checkpoint covering everything, open recycles every segment and the
/// record follows (no false refusal, at this open or the next); writing then goes
/// on, and a lost newest segment is caught again.
#[test]
fn record_follows_recycling_at_open() {
    let fs = SimFs::new(14);
    let cfg = small_config();
    let d = dirs(1);
    let (j, _, _) = open_collect(&d, &cfg, sim_factory(&fs)).unwrap();
    append_n(&j, 0, 200, 700);
    let mark = j.mark_blocking().unwrap();
    j.checkpoint_blocking(&mark).unwrap();
    j.shutdown();
    fs.crash();
    let (j, _, recs) = open_collect(&d, &cfg, sim_factory(&fs)).unwrap();
    assert!(recs.is_empty());
    assert!(segment_ids(&fs, &d[0]).is_empty(), "all recycled");
    j.shutdown();
    fs.crash();
    let (j, _, _) = open_collect(&d, &cfg, sim_factory(&fs)).unwrap();
    append_n(&j, 1000, 20, 100);
    j.shutdown();
    fs.crash();
    let newest = *segment_ids(&fs, &d[0]).last().unwrap();
    fs.disk().remove(&seg_path(&d[0], newest)).unwrap();
    refused_naming(
        open_collect(&d, &cfg, sim_factory(&fs)),
        &seg_path(&d[0], newest),
    );
}

/// A spare (free segment) pre-created but never used is never required: a crash
/// with it in place, and its loss, change nothing.
#[test]
fn unused_spare_is_not_required() {
    let fs = SimFs::new(15);
    let cfg = small_config();
    let d = dirs(1);
    let (j, _, _) = open_collect(&d, &cfg, sim_factory(&fs)).unwrap();
    j.shutdown();
    fs.crash();
    let (j, _, recs) = open_collect(&d, &cfg, sim_factory(&fs)).unwrap();
    assert!(recs.is_empty());
    j.shutdown();
    fs.crash();
    let mut disk = fs.disk();
    let free: Vec<PathBuf> = disk
        .list_dir(&d[0])
        .unwrap()
        .into_iter()
        .filter(|p| p.to_string_lossy().contains("free-"))
        .collect();
    assert!(!free.is_empty(), "a spare was built");
    for p in &free {
        disk.remove(&d[0].join(p.file_name().unwrap())).unwrap();
    }
    let (j, _, recs) = open_collect(&d, &cfg, sim_factory(&fs)).unwrap();
    assert!(recs.is_empty());
    // And the first segment written after that is required.
    append_n(&j, 0, 5, 100);
    j.shutdown();
    fs.crash();
    fs.disk().remove(&seg_path(&d[0], 1)).unwrap();
    refused_naming(
        open_collect(&d, &cfg, sim_factory(&fs)),
        &seg_path(&d[0], 1),
    );
}

/// Upgrade: a journal without the record (as written before this version) opens,
/// and gets one, so that its newest segment is required from then on.
#[test]
fn journal_without_record_opens_and_gets_one() {
    let fs = SimFs::new(16);
    let cfg = one_segment_config();
    let d = dirs(1);
    let (j, _, _) = open_collect(&d, &cfg, sim_factory(&fs)).unwrap();
    append_n(&j, 0, 40, 100);
    j.shutdown();
    fs.crash();
    fs.disk().remove(&d[0].join(NEWEST_FILE)).unwrap();
    let (j, _, recs) = open_collect(&d, &cfg, sim_factory(&fs)).unwrap();
    assert_eq!(recs.len(), 40);
    j.shutdown();
    fs.crash();
    assert!(fs.durable_contents(&d[0].join(NEWEST_FILE)).is_ok());
    fs.disk().remove(&seg_path(&d[0], 1)).unwrap();
    refused_naming(
        open_collect(&d, &cfg, sim_factory(&fs)),
        &seg_path(&d[0], 1),
    );
}

/// One damaged slot: the other is used. Both damaged: refused naming the record.
#[test]
fn damaged_record_slots() {
    let fs = SimFs::new(17);
    let cfg = one_segment_config();
    let d = dirs(1);
    let (j, _, _) = open_collect(&d, &cfg, sim_factory(&fs)).unwrap();
    append_n(&j, 0, 10, 100);
    j.shutdown();
    fs.crash();
    let rec = d[0].join(NEWEST_FILE);
    fs.flip_bit(&rec, 20, 1).unwrap();
    let (j, _, recs) = open_collect(&d, &cfg, sim_factory(&fs)).unwrap();
    assert_eq!(recs.len(), 10);
    j.shutdown();
    fs.crash();
    // Other bits than the first flip's, which the reopen may have overwritten.
    fs.flip_bit(&rec, 21, 2).unwrap();
    fs.flip_bit(&rec, SECTOR as u64 + 21, 2).unwrap();
    refused_naming(open_collect(&d, &cfg, sim_factory(&fs)), &rec);
}

/// Every crash point of a run with segment switches and open-time recycling: the
/// N-th file sync, or the N-th directory sync, fails (the journal stops: fatal),
/// then power is lost. Each reopen (twice, so open's own rewrite is crossed too)
/// must succeed and replay every acknowledged record: a crash between a segment's
/// rename and its record, between the record and the segment's first group, or
/// between open's record rewrite and its recycling never reads as a lost segment.
#[test]
fn no_crash_point_refuses_a_healthy_journal() {
    let cfg = JournalConfig {
        segment_bytes: 16 * 1024,
        free_segments_max: 1,
        ..small_config()
    };
    let d = dirs(1);
    let mut points = 0;
    for dir_sync in [false, true] {
        for n in 1..=80u64 {
            let fs = SimFs::new(100 + n);
            let (j, _, _) = open_collect(&d, &cfg, sim_factory(&fs)).unwrap();
            let mut f = Faults::default();
            if dir_sync {
                f.fail_sync_dir_nth = Some(n);
            } else {
                f.fail_sync_nth = Some(n);
            }
            fs.set_faults(f);
            let mut acked = Vec::new();
            let mut failed = false;
            for i in 0..60u64 {
                if i == 30 {
                    match j.mark_blocking() {
                        Ok(m) => {
                            if j.checkpoint_blocking(&m).is_err() {
                                failed = true;
                            }
                        }
                        Err(_) => failed = true,
                    }
                }
                match j.append_blocking(1, Record::entry(1, i, Bytes::from(vec![i as u8; 1500]))) {
                    Ok(s) => {
                        assert!(!failed, "ack after a failure");
                        acked.push(s);
                    }
                    Err(_) => failed = true,
                }
            }
            j.shutdown();
            fs.set_faults(Faults::default());
            fs.crash();
            points += usize::from(failed);
            for _ in 0..2 {
                let (j, r, recs) = open_collect(&d, &cfg, sim_factory(&fs))
                    .unwrap_or_else(|e| panic!("dir_sync {dir_sync} n {n}: {e}"));
                let mark = r.dirs[0].checkpoint_mark;
                let got: std::collections::HashSet<Seq> = recs.iter().map(|r| r.seq).collect();
                for s in acked.iter().filter(|s| **s > mark) {
                    assert!(got.contains(s), "dir_sync {dir_sync} n {n}: lost acked {s}");
                }
                j.shutdown();
                fs.crash();
            }
        }
    }
    assert!(points > 60, "only {points} runs hit their failure");
}

/// Every crash point of an open that rewrites the record and recycles: segments
/// fully below the checkpoint mark (all of them, or all but the newest), the N-th file or directory sync of the open fails
/// (the open fails, or the journal goes fatal soon after), power is lost; the next
/// open must succeed. Writing the record after the recycling instead fails here (a
/// record naming a recycled segment).
#[test]
fn no_crash_point_of_open_refuses_a_healthy_journal() {
    let cfg = JournalConfig {
        segment_bytes: 16 * 1024,
        free_segments_max: 1,
        ..small_config()
    };
    let d = dirs(1);
    let mut hit = 0;
    for (dir_sync, tail) in [(false, false), (true, false), (false, true), (true, true)] {
        for n in 1..=12u64 {
            let fs = SimFs::new(300 + n);
            let (j, _, _) = open_collect(&d, &cfg, sim_factory(&fs)).unwrap();
            append_n(&j, 0, 40, 1500);
            let m = j.mark_blocking().unwrap();
            j.checkpoint_blocking(&m).unwrap();
            if tail {
                append_n(&j, 40, 1, 10);
            }
            j.shutdown();
            fs.crash();
            let mut f = Faults::default();
            if dir_sync {
                f.fail_sync_dir_nth = Some(n);
            } else {
                f.fail_sync_nth = Some(n);
            }
            fs.set_faults(f);
            match open_collect(&d, &cfg, sim_factory(&fs)) {
                Ok((j, _, _)) => j.shutdown(),
                Err(_) => hit += 1,
            }
            fs.set_faults(Faults::default());
            fs.crash();
            let (j, _, recs) = open_collect(&d, &cfg, sim_factory(&fs))
                .unwrap_or_else(|e| panic!("dir_sync {dir_sync} n {n}: {e}"));
            assert!(
                !tail || recs.iter().any(|r| r.seq == Seq(41)),
                "dir_sync {dir_sync} n {n}: lost the record above the mark"
            );
            j.shutdown();
        }
    }
    assert!(hit >= 3, "only {hit} opens hit their failure");
}
