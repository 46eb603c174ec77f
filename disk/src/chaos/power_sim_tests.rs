//! The seeded property test of the power cut (`power`) on the simulated disk: random
//! writes, syncs, truncations, preallocations and new files through the chaos layer, cut
//! by a `power_cut` fault, must leave every file exactly as the simulated disk's durable
//! image (what `sim` says a crash keeps of them) had it at the cut; also with a fifth of
//! the writes misdirected. The shared helpers are in `power_tests`.

use super::power_tests::{control, data, rw, spec, S};
use super::*;
use crate::{run_one, AlignedBuf, Checked, Disk, FileId, Op, SimFs, SECTOR};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

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
