//! Tests of the power cut (`power`): on the simulated disk, seeded random writes, syncs,
//! truncations, preallocations and new files through the chaos layer, cut by a
//! `power_cut` fault, must leave every file exactly as the simulated disk's durable image
//! (what `sim` says a crash keeps of them) had it at the cut; on a real file system
//! (syscalls, io_uring where it can be set up) the same for a hand-written sequence.

use super::*;
use crate::{run_one, AlignedBuf, Checked, Disk, FileId, Op, OpenOptions, SimFs, SECTOR};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

const S: u64 = SECTOR as u64;

fn rw() -> OpenOptions {
    OpenOptions {
        create: true,
        write: true,
        ..Default::default()
    }
}

fn data(len: usize, rng: &mut ChaCha8Rng) -> AlignedBuf {
    let mut b = AlignedBuf::with_capacity(len);
    let v: Vec<u8> = (0..len).map(|_| rng.random()).collect();
    b.extend_from_slice(&v);
    b
}

/// A control over `root` whose power cut records that it ran instead of aborting.
fn control(root: &Path) -> (Arc<Chaos>, Arc<AtomicBool>) {
    let chaos = Arc::new(Chaos::new(vec![(DirKind::Journal, root.to_path_buf())]));
    let cut = Arc::new(AtomicBool::new(false));
    let flag = cut.clone();
    chaos.set_power_cut_hook(Arc::new(move || flag.store(true, Ordering::SeqCst)));
    (chaos, cut)
}

fn spec(json: &str) -> FaultSpec {
    FaultSpec::from_json(json.as_bytes()).unwrap()
}

/// Every durable name in `dir` with its durable contents: what a crash now keeps.
fn durable_image(fs: &SimFs, dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fs.durable_list_dir(dir)
        .unwrap()
        .into_iter()
        .map(|name| {
            let p = dir.join(name);
            let c = fs.durable_contents(&p).unwrap();
            (p, c)
        })
        .collect()
}

/// What the files hold now (after the cut: what a restart sees).
fn visible_image(fs: &SimFs, dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut d = fs.disk();
    d.list_dir(dir)
        .unwrap()
        .into_iter()
        .map(|name| {
            let p = dir.join(name);
            let c = fs.volatile_contents(&p).unwrap();
            (p, c)
        })
        .collect()
}

/// One random run on the simulated disk; returns the number of operations before the cut.
/// With `misdirect`, a fifth of the writes (seeded) also land 1 to 8 sectors away from
/// where they were asked: the cut must undo them where they landed.
fn sim_run(seed: u64, misdirect: bool) -> usize {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let fs = SimFs::new(seed);
    let root = PathBuf::from("/j");
    let mut names: Vec<PathBuf> = (0..3).map(|i| root.join(format!("f{i}"))).collect();
    {
        // Before chaos: files with synced contents, their names durable.
        let mut d = fs.disk();
        d.create_dir_all(&root).unwrap();
        for p in &names {
            let f = d.open(p, rw()).unwrap();
            let n = rng.random_range(0..6usize) * SECTOR;
            if n > 0 {
                let c = run_one(
                    &mut d,
                    Op::Write {
                        file: f,
                        offset: 0,
                        buf: data(n, &mut rng),
                    },
                );
                c.result.unwrap();
            }
            run_one(&mut d, Op::Fdatasync { file: f }).result.unwrap();
            d.close(f).unwrap();
        }
        d.sync_dir(&root).unwrap();
    }
    let (chaos, cut) = control(&root);
    if misdirect {
        chaos
            .add(spec(&format!(
                r#"{{"op": "write", "fault": {{"misdirected_write": {{}}}}, "trigger": {{"probability": 0.2}}, "seed": {seed}}}"#
            )))
            .unwrap();
    }
    // Writes in flight whose ranges, widened by how far a write may be sent, overlap are
    // reaped first: the order of overlapping writes in flight is the disk's to choose.
    let reach = if misdirect { 8 } else { 0 };
    let every = rng.random_range(3..120u64);
    chaos
        .add(spec(&format!(
            r#"{{"fault": "power_cut", "trigger": {{"every": {every}}}}}"#
        )))
        .unwrap();
    let mut disk = Checked::new(ChaosDisk::new(Box::new(fs.disk()), chaos.clone()));
    let mut files: Vec<FileId> = Vec::new();
    let mut before = durable_image(&fs, &root);
    for p in names.clone() {
        match disk.open(&p, rw()) {
            Ok(f) => files.push(f),
            Err(_) => {
                assert!(cut.load(Ordering::SeqCst));
                break;
            }
        }
    }
    // (file index, first sector, end sector) of the writes in flight.
    let mut in_flight: Vec<(usize, u64, u64)> = Vec::new();
    let mut ud = 0u64;
    let mut ops = 0;
    let reap_all = |disk: &mut Checked<ChaosDisk>, in_flight: &mut Vec<(usize, u64, u64)>| {
        while disk.in_flight() > 0 {
            let n = disk.in_flight();
            let _ = disk.reap(n);
        }
        in_flight.clear();
    };
    while !cut.load(Ordering::SeqCst) {
        ops += 1;
        assert!(ops < 10_000, "seed {seed}: the power cut never fired");
        before = durable_image(&fs, &root);
        ud += 1;
        let fi = rng.random_range(0..files.len());
        let file = files[fi];
        let failed = match rng.random_range(0..100u32) {
            0..=39 => {
                let lo = rng.random_range(0..12u64);
                let hi = lo + rng.random_range(1..4u64);
                if in_flight
                    .iter()
                    .any(|&(f, a, b)| f == fi && a < hi + 2 * reach && lo < b + 2 * reach)
                {
                    reap_all(&mut disk, &mut in_flight);
                }
                let buf = data(((hi - lo) * S) as usize, &mut rng);
                let r = disk.submit(
                    ud,
                    Op::Write {
                        file,
                        offset: lo * S,
                        buf,
                    },
                );
                if r.is_ok() {
                    in_flight.push((fi, lo, hi));
                }
                r.is_err()
            }
            40..=49 => {
                reap_all(&mut disk, &mut in_flight);
                let lo = rng.random_range(0..12u64);
                let buf = data(SECTOR * rng.random_range(1..3usize), &mut rng);
                disk.submit(
                    ud,
                    Op::WriteDatasync {
                        file,
                        offset: lo * S,
                        buf,
                    },
                )
                .is_err()
                    || {
                        reap_all(&mut disk, &mut in_flight);
                        false
                    }
            }
            50..=64 => {
                reap_all(&mut disk, &mut in_flight);
                disk.submit(ud, Op::Fdatasync { file }).is_err() || {
                    reap_all(&mut disk, &mut in_flight);
                    false
                }
            }
            65..=71 => {
                reap_all(&mut disk, &mut in_flight);
                let len = rng.random_range(0..14 * S);
                disk.set_len(file, len).is_err()
            }
            72..=75 => {
                reap_all(&mut disk, &mut in_flight);
                let offset = rng.random_range(0..12u64) * S;
                let len = rng.random_range(1..4u64) * S;
                disk.submit(ud, Op::Fallocate { file, offset, len })
                    .is_err()
                    || {
                        reap_all(&mut disk, &mut in_flight);
                        false
                    }
            }
            76..=79 => {
                reap_all(&mut disk, &mut in_flight);
                let mut buf = AlignedBuf::with_capacity(4 * SECTOR);
                buf.set_len(0);
                disk.submit(
                    ud,
                    Op::Read {
                        file,
                        offset: 0,
                        len: 4 * SECTOR,
                        buf,
                    },
                )
                .is_err()
                    || {
                        reap_all(&mut disk, &mut in_flight);
                        false
                    }
            }
            80..=85 => {
                let p = root.join(format!("n{}", names.len()));
                match disk.open(&p, rw()) {
                    Ok(f) => {
                        names.push(p);
                        files.push(f);
                        false
                    }
                    Err(_) => true,
                }
            }
            86..=89 => disk.sync_dir(&root).is_err(),
            _ => {
                let _ = disk.reap(rng.random_range(0..2));
                false
            }
        };
        if failed {
            assert!(
                cut.load(Ordering::SeqCst),
                "seed {seed}: an op failed without a cut"
            );
        }
    }
    // Every call fails after the cut (in production the process is gone).
    assert!(disk.sync_dir(&root).is_err());
    assert_eq!(chaos.injected(FaultKind::PowerCut), 1);
    let after = visible_image(&fs, &root);
    assert_eq!(
        after.keys().collect::<Vec<_>>(),
        before.keys().collect::<Vec<_>>(),
        "seed {seed}: names after the cut"
    );
    for (p, want) in &before {
        let got = &after[p];
        assert!(
            got == want,
            "seed {seed}: {} holds {} bytes, the durable image {} (first difference at {:?})",
            p.display(),
            got.len(),
            want.len(),
            got.iter().zip(want).position(|(a, b)| a != b)
        );
        // The restore is durable itself: a crash now changes nothing.
        assert!(
            &fs.durable_contents(p).unwrap() == want,
            "seed {seed}: restore not synced"
        );
    }
    ops
}

#[test]
fn a_power_cut_leaves_what_the_simulated_disk_says_a_crash_keeps() {
    let mut total = 0;
    for seed in 0..300 {
        total += sim_run(seed, false);
    }
    assert!(total > 3000, "{total} operations in all");
}

#[test]
fn a_power_cut_after_misdirected_writes_undoes_them_where_they_landed() {
    let mut total = 0;
    for seed in 0..200 {
        total += sim_run(seed, true);
    }
    assert!(total > 2000, "{total} operations in all");
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
