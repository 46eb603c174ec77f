//! Tests of the power cut (`power`) on a real file system (syscalls, io_uring where it can
//! be set up) with hand-written sequences, across threads and at run time; and the helpers
//! shared with `power_sim_tests`, the seeded property test on the simulated disk.

use super::*;
use crate::{run_one, AlignedBuf, Checked, Disk, Op, OpenOptions, SimFs, SECTOR};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

pub(super) const S: u64 = SECTOR as u64;

pub(super) fn rw() -> OpenOptions {
    OpenOptions {
        create: true,
        write: true,
        ..Default::default()
    }
}

pub(super) fn data(len: usize, rng: &mut ChaCha8Rng) -> AlignedBuf {
    let mut b = AlignedBuf::with_capacity(len);
    let v: Vec<u8> = (0..len).map(|_| rng.random()).collect();
    b.extend_from_slice(&v);
    b
}

/// A control over `root` whose power cut records that it ran instead of aborting.
pub(super) fn control(root: &Path) -> (Arc<Chaos>, Arc<AtomicBool>) {
    let chaos = Arc::new(Chaos::new(vec![(DirKind::Journal, root.to_path_buf())]));
    let cut = Arc::new(AtomicBool::new(false));
    let flag = cut.clone();
    chaos.set_power_cut_hook(Arc::new(move || flag.store(true, Ordering::SeqCst)));
    (chaos, cut)
}

pub(super) fn spec(json: &str) -> FaultSpec {
    FaultSpec::from_json(json.as_bytes()).unwrap()
}

/// The cut is checked: without the undo (a layer that forgot to capture), the images
/// would differ. A file overwritten after its sync must come back to the synced bytes.
#[test]
fn an_overwrite_after_a_sync_is_undone_and_an_append_truncated() {
    let fs = SimFs::new(1);
    let root = PathBuf::from("/j");
    let (chaos, cut) = control(&root);
    chaos
        .add(spec(
            r#"{"op": "rename", "fault": "power_cut", "trigger": "once"}"#,
        ))
        .unwrap();
    let mut disk = ChaosDisk::new(Box::new(fs.disk()), chaos.clone());
    disk.create_dir_all(&root).unwrap();
    let p = root.join("a");
    let f = disk.open(&p, rw()).unwrap();
    disk.sync_dir(&root).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    let synced = data(2 * SECTOR, &mut rng);
    let synced_bytes = synced.as_slice().to_vec();
    run_one(
        &mut disk,
        Op::WriteDatasync {
            file: f,
            offset: 0,
            buf: synced,
        },
    )
    .result
    .unwrap();
    assert_eq!(
        chaos.power().held_bytes(),
        0,
        "a synced file needs no pre-image"
    );
    run_one(
        &mut disk,
        Op::Write {
            file: f,
            offset: S,
            buf: data(3 * SECTOR, &mut rng),
        },
    )
    .result
    .unwrap();
    assert_eq!(
        chaos.power().held_bytes(),
        SECTOR,
        "one synced sector overwritten"
    );
    let q = root.join("unsynced-new");
    let g = disk.open(&q, rw()).unwrap();
    run_one(
        &mut disk,
        Op::WriteDatasync {
            file: g,
            offset: 0,
            buf: data(SECTOR, &mut rng),
        },
    )
    .result
    .unwrap();
    assert!(disk.rename(&p, &root.join("b")).is_err());
    assert!(cut.load(Ordering::SeqCst));
    assert!(
        fs.volatile_contents(&p).unwrap() == synced_bytes,
        "the synced bytes are back"
    );
    assert!(fs.durable_contents(&p).unwrap() == synced_bytes, "durably");
    assert!(
        fs.volatile_contents(&q).is_err(),
        "a new file in an unsynced directory is gone"
    );
    assert_eq!(chaos.injected(FaultKind::PowerCut), 1);
}

/// The JSON form: `"power_cut"` on any operation, with the usual triggers, counted as
/// its own kind.
#[test]
fn power_cut_parses_with_any_op_and_trigger() {
    let s = spec(
        r#"{"dir": "journal", "op": "fdatasync", "fault": "power_cut", "trigger": {"every": 500}}"#,
    );
    assert_eq!(s.fault, Effect::PowerCut);
    assert_eq!(s.kind().name(), "power_cut");
    assert_eq!(s.trigger, Trigger::Every(500));
    let back = FaultSpec::from_json(&serde_json::to_vec(&s).unwrap()).unwrap();
    assert_eq!(back, s);
    for op in ["read", "write", "open", "rename", "fallocate", "any"] {
        spec(&format!(
            r#"{{"op": "{op}", "fault": "power_cut", "trigger": "once"}}"#
        ));
    }
    assert!(FaultSpec::from_json(br#"{"fault": {"power_cut": {}}}"#).is_err());
}

/// Off until a `power_cut` fault is added: other faults keep no pre-image.
#[test]
fn nothing_is_kept_until_a_power_cut_is_added() {
    let fs = SimFs::new(3);
    let root = PathBuf::from("/j");
    let (chaos, _) = control(&root);
    chaos
        .add(spec(r#"{"op": "read", "fault": "eio"}"#))
        .unwrap();
    let mut disk = ChaosDisk::new(Box::new(fs.disk()), chaos.clone());
    disk.create_dir_all(&root).unwrap();
    let f = disk.open(&root.join("a"), rw()).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    run_one(
        &mut disk,
        Op::WriteDatasync {
            file: f,
            offset: 0,
            buf: data(SECTOR, &mut rng),
        },
    )
    .result
    .unwrap();
    run_one(
        &mut disk,
        Op::Write {
            file: f,
            offset: 0,
            buf: data(SECTOR, &mut rng),
        },
    )
    .result
    .unwrap();
    assert!(!chaos.power().armed());
    assert_eq!(chaos.power().held_bytes(), 0);
}

/// The same on a real file system, for each backend that can be set up here.
#[test]
fn a_power_cut_on_a_real_file_system_keeps_only_synced_data() {
    type Make = Box<dyn Fn() -> Box<dyn Disk>>;
    let mut backends: Vec<(&str, Make)> =
        vec![("syscall", Box::new(|| Box::new(crate::SyscallDisk::new())))];
    if crate::UringDisk::new(8).is_ok() {
        backends.push((
            "uring",
            Box::new(|| Box::new(crate::UringDisk::new(32).unwrap())),
        ));
    }
    for (name, make) in backends {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("journal/current");
        std::fs::create_dir_all(&root).unwrap();
        let (chaos, cut) = control(&root);
        chaos
            .add(spec(r#"{"dir": "journal", "file": "x", "op": "write", "fault": "power_cut", "trigger": "once"}"#))
            .unwrap();
        let mut disk = ChaosDisk::new(make(), chaos.clone());
        let opts = OpenOptions {
            direct: true,
            ..rw()
        };
        let p = root.join("seg");
        let f = disk.open(&p, opts).unwrap();
        disk.sync_dir(&root).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let first = data(3 * SECTOR, &mut rng);
        let mut want = first.as_slice().to_vec();
        run_one(
            &mut disk,
            Op::WriteDatasync {
                file: f,
                offset: 0,
                buf: first,
            },
        )
        .result
        .unwrap();
        // Overwrite the middle and append, unsynced; then shrink below the synced end.
        let over = data(4 * SECTOR, &mut rng);
        want[SECTOR..SECTOR + 100].copy_from_slice(&over.as_slice()[..100]);
        run_one(
            &mut disk,
            Op::Write {
                file: f,
                offset: S,
                buf: over,
            },
        )
        .result
        .unwrap();
        disk.set_len(f, S + 100).unwrap();
        // A synced second write, then more unsynced bytes after it.
        let second = data(SECTOR, &mut rng);
        want[..SECTOR].copy_from_slice(second.as_slice());
        run_one(
            &mut disk,
            Op::Write {
                file: f,
                offset: 0,
                buf: second,
            },
        )
        .result
        .unwrap();
        run_one(&mut disk, Op::Fdatasync { file: f })
            .result
            .unwrap();
        want.truncate(S as usize + 100);
        run_one(
            &mut disk,
            Op::Write {
                file: f,
                offset: 0,
                buf: data(2 * SECTOR, &mut rng),
            },
        )
        .result
        .unwrap();
        let new = root.join("new");
        let g = disk.open(&new, opts).unwrap();
        run_one(
            &mut disk,
            Op::WriteDatasync {
                file: g,
                offset: 0,
                buf: data(SECTOR, &mut rng),
            },
        )
        .result
        .unwrap();
        let x = disk.open(&root.join("x"), opts).unwrap();
        let c = run_one(
            &mut disk,
            Op::Write {
                file: x,
                offset: 0,
                buf: data(SECTOR, &mut rng),
            },
        );
        assert!(c.result.is_err(), "{name}: the cut write fails");
        assert!(cut.load(Ordering::SeqCst), "{name}");
        assert!(
            std::fs::read(&p).unwrap() == want,
            "{name}: the file holds what was synced"
        );
        assert!(!new.exists(), "{name}: an unsynced new file is gone");
        assert!(
            disk.list_dir(&root).is_err(),
            "{name}: every call fails after the cut"
        );
        eprintln!("power cut checked over the {name} backend");
    }
}

/// The test-only switch: a journal segment's write+fdatasync runs as a plain write, so a
/// power cut loses it; other files (a checkpoint) keep their sync.
#[test]
fn the_test_only_ack_before_fdatasync_switch_leaves_journal_writes_unsynced() {
    let fs = SimFs::new(5);
    let root = PathBuf::from("/j");
    let (chaos, cut) = control(&root);
    chaos
        .add(spec(
            r#"{"op": "rename", "fault": "power_cut", "trigger": "once"}"#,
        ))
        .unwrap();
    chaos.set_test_only_ack_before_fdatasync(true);
    let mut disk = ChaosDisk::new(Box::new(fs.disk()), chaos.clone());
    disk.create_dir_all(&root).unwrap();
    let seg = root.join("0000000000000001.jseg");
    let other = root.join("checkpoint");
    let mut rng = ChaCha8Rng::seed_from_u64(6);
    for p in [&seg, &other] {
        let f = disk.open(p, rw()).unwrap();
        disk.sync_dir(&root).unwrap();
        let c = run_one(
            &mut disk,
            Op::WriteDatasync {
                file: f,
                offset: 0,
                buf: data(SECTOR, &mut rng),
            },
        );
        assert_eq!(
            c.result.unwrap(),
            SECTOR,
            "acknowledged as written and synced"
        );
    }
    assert_eq!(
        fs.durable_contents(&seg).unwrap().len(),
        0,
        "the segment was not synced"
    );
    assert_eq!(fs.durable_contents(&other).unwrap().len(), SECTOR);
    assert!(disk.rename(&other, &root.join("x")).is_err());
    assert!(cut.load(Ordering::SeqCst));
    assert!(
        fs.volatile_contents(&seg).unwrap().is_empty(),
        "the cut lost the acknowledged write"
    );
}

/// Two threads, each with its own disk on the same file system, write and sync their own
/// file while the cut fires on one of them: the other is drained and stopped, and each
/// file holds exactly what its last acknowledged sync covered (a sync that completed
/// after the cut began is never acknowledged, and is undone).
#[test]
fn a_cut_on_one_thread_stops_the_other_and_keeps_each_files_last_acknowledged_sync() {
    for seed in 0..12u64 {
        let fs = SimFs::new(seed);
        let root = PathBuf::from("/j");
        let paths: Vec<PathBuf> = (0..2).map(|i| root.join(format!("t{i}"))).collect();
        {
            let mut d = fs.disk();
            d.create_dir_all(&root).unwrap();
            for p in &paths {
                let f = d.open(p, rw()).unwrap();
                d.close(f).unwrap();
            }
            d.sync_dir(&root).unwrap();
        }
        let (chaos, cut) = control(&root);
        let every = 60 + seed * 17;
        chaos
            .add(spec(&format!(
                r#"{{"fault": "power_cut", "trigger": {{"every": {every}}}}}"#
            )))
            .unwrap();
        let threads: Vec<_> = paths
            .iter()
            .enumerate()
            .map(|(t, p)| {
                let (fs, chaos, p) = (fs.clone(), chaos.clone(), p.clone());
                std::thread::spawn(move || {
                    let mut rng = ChaCha8Rng::seed_from_u64(seed * 2 + t as u64);
                    let mut disk = Checked::new(ChaosDisk::new(Box::new(fs.disk()), chaos));
                    let Ok(f) = disk.open(&p, rw()) else {
                        return Vec::new();
                    };
                    let (mut model, mut acked) = (Vec::<u8>::new(), Vec::<u8>::new());
                    for i in 0..100_000u64 {
                        let op = if i % 3 == 2 {
                            Op::Fdatasync { file: f }
                        } else {
                            let offset = rng.random_range(0..8u64) * S;
                            Op::Write {
                                file: f,
                                offset,
                                buf: data(SECTOR, &mut rng),
                            }
                        };
                        let written = match &op {
                            Op::Write { offset, buf, .. } => {
                                Some((*offset, buf.as_slice().to_vec()))
                            }
                            _ => None,
                        };
                        if disk.submit(i, op).is_err() {
                            break;
                        }
                        let c = disk.reap(1).pop().expect("one completion");
                        if c.result.is_err() {
                            break;
                        }
                        match written {
                            Some((offset, bytes)) => {
                                let end = offset as usize + bytes.len();
                                if model.len() < end {
                                    model.resize(end, 0);
                                }
                                model[offset as usize..end].copy_from_slice(&bytes);
                            }
                            None => acked = model.clone(),
                        }
                    }
                    acked
                })
            })
            .collect();
        let acked: Vec<Vec<u8>> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        assert!(cut.load(Ordering::SeqCst), "seed {seed}: no cut");
        for (p, want) in paths.iter().zip(&acked) {
            let got = fs.volatile_contents(p).unwrap();
            assert!(
                &got == want,
                "seed {seed}: {} holds {} bytes, its last acknowledged sync {}",
                p.display(),
                got.len(),
                want.len()
            );
        }
    }
}

/// Armed at run time: what was written before the `power_cut` fault was added counts as
/// synced (docs/chaos.md §2a); what is written after and not synced is lost.
#[test]
fn a_cut_added_at_run_time_loses_only_what_was_written_after_it() {
    let fs = SimFs::new(8);
    let root = PathBuf::from("/j");
    let (chaos, cut) = control(&root);
    let mut disk = ChaosDisk::new(Box::new(fs.disk()), chaos.clone());
    disk.create_dir_all(&root).unwrap();
    let p = root.join("a");
    let f = disk.open(&p, rw()).unwrap();
    disk.sync_dir(&root).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    let before = data(2 * SECTOR, &mut rng);
    let want = before.as_slice().to_vec();
    run_one(
        &mut disk,
        Op::Write {
            file: f,
            offset: 0,
            buf: before,
        },
    )
    .result
    .unwrap();
    chaos
        .add(spec(
            r#"{"op": "fdatasync", "fault": "power_cut", "trigger": "once"}"#,
        ))
        .unwrap();
    run_one(
        &mut disk,
        Op::Write {
            file: f,
            offset: S,
            buf: data(2 * SECTOR, &mut rng),
        },
    )
    .result
    .unwrap();
    assert!(run_one(&mut disk, Op::Fdatasync { file: f })
        .result
        .is_err());
    assert!(cut.load(Ordering::SeqCst));
    assert!(
        fs.volatile_contents(&p).unwrap() == want,
        "back to the file as it was when armed"
    );
}

/// The documented limits (docs/chaos.md §2a): a rename and a remove are taken as durable
/// at once, even when their directory was not synced (the simulated disk's crash would
/// forget them); a renamed new file is kept under its new name.
#[test]
fn renames_and_removes_are_taken_as_durable_at_once() {
    let fs = SimFs::new(10);
    let root = PathBuf::from("/j");
    let (chaos, cut) = control(&root);
    chaos
        .add(spec(
            r#"{"op": "open", "file": "cut", "fault": "power_cut", "trigger": "once"}"#,
        ))
        .unwrap();
    let mut disk = ChaosDisk::new(Box::new(fs.disk()), chaos.clone());
    disk.create_dir_all(&root).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let (target, gone, tmp) = (root.join("state"), root.join("old"), root.join("state.tmp"));
    for p in [&target, &gone] {
        let f = disk.open(p, rw()).unwrap();
        run_one(
            &mut disk,
            Op::WriteDatasync {
                file: f,
                offset: 0,
                buf: data(SECTOR, &mut rng),
            },
        )
        .result
        .unwrap();
        disk.close(f).unwrap();
    }
    disk.sync_dir(&root).unwrap();
    let f = disk.open(&tmp, rw()).unwrap();
    let new = data(SECTOR, &mut rng);
    let new_bytes = new.as_slice().to_vec();
    run_one(
        &mut disk,
        Op::WriteDatasync {
            file: f,
            offset: 0,
            buf: new,
        },
    )
    .result
    .unwrap();
    disk.close(f).unwrap();
    disk.rename(&tmp, &target).unwrap();
    disk.remove(&gone).unwrap();
    assert!(disk.open(&root.join("cut"), rw()).is_err());
    assert!(cut.load(Ordering::SeqCst));
    assert!(
        fs.volatile_contents(&target).unwrap() == new_bytes,
        "the rename is kept"
    );
    assert!(fs.volatile_contents(&tmp).is_err());
    assert!(fs.volatile_contents(&gone).is_err(), "the remove is kept");
}
