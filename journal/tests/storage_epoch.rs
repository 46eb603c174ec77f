//! The storage epoch a checkpoint records (issue 11, "never a deleted ledger back"): a
//! checkpoint asked for with a higher epoch is written even when its mark has not moved
//! (GC and compaction change the ledger state without a journal record), a lower epoch
//! never lowers the recorded one, and the epoch read at open is kept by later checkpoints.

mod common;

use bk_journal::format::{CheckpointRecord, CHECKPOINT_FILE};
use bk_journal::{JournalMark, Record};
use bytes::Bytes;
use common::*;

/// The journal's mark now, with `epoch` as the storage epoch it relies on.
fn at(j: &bk_journal::Journal, epoch: u64) -> JournalMark {
    JournalMark {
        storage_epoch: epoch,
        ..j.mark_blocking().unwrap()
    }
}

/// The checkpoint file of journal directory `dir`, as a crash now would find it.
fn recorded(fs: &bk_disk::SimFs, dir: &std::path::Path) -> CheckpointRecord {
    let mut disk = fs.disk();
    let bytes = bk_disk::read_small_file(&mut disk, &dir.join(CHECKPOINT_FILE), false, 1 << 20)
        .expect("checkpoint file");
    CheckpointRecord::decode(&bytes).expect("checkpoint decodes")
}

#[test]
fn a_newer_epoch_is_recorded_without_a_new_mark_and_never_lowered() {
    let fs = bk_disk::SimFs::new(41);
    let dirs = dirs(1);
    let cfg = small_config();
    let (j, _, _) = open_collect(&dirs, &cfg, sim_factory(&fs)).unwrap();
    for i in 0..5 {
        j.append_blocking(1, Record::entry(7, i, Bytes::from(vec![i as u8; 100])))
            .unwrap();
    }
    let mark = at(&j, 3);
    j.checkpoint_blocking(&mark).unwrap();
    let first = recorded(&fs, &dirs[0]);
    assert_eq!((first.mark, first.storage_epoch), (mark.seqs[0].0, 3));

    // Same mark, higher epoch (a GC round wrote a state file): written.
    j.checkpoint_blocking(&at(&j, 5)).unwrap();
    let second = recorded(&fs, &dirs[0]);
    assert_eq!((second.mark, second.storage_epoch), (first.mark, 5));

    // Same mark, lower epoch: the recorded one stays.
    j.checkpoint_blocking(&at(&j, 4)).unwrap();
    assert_eq!(recorded(&fs, &dirs[0]).storage_epoch, 5);
    j.shutdown();

    // Reopened: the epoch read at open is kept by a later checkpoint that asks for less.
    let (j, _, _) = open_collect(&dirs, &cfg, sim_factory(&fs)).unwrap();
    j.append_blocking(1, Record::entry(7, 5, Bytes::from_static(b"after")))
        .unwrap();
    j.checkpoint_blocking(&at(&j, 0)).unwrap();
    let third = recorded(&fs, &dirs[0]);
    assert!(third.mark > first.mark);
    assert_eq!(third.storage_epoch, 5);
    j.shutdown();
}
