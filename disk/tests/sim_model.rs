//! Randomized model check of the simulated disk's crash guarantees, with write, sync
//! and torn-write faults on: after every crash, each sector holds a value the model
//! allows (its durable value or one written since), and a sector whose last
//! successful write was followed by a successful sync holds exactly that write.
//! `BK_SIM_SEEDS` sets the number of seeds (default 30).

mod common;

use bk_disk::{AlignedBuf, Disk, Faults, FileId, Op, SimDisk, SimFs, SECTOR};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeSet;
use std::path::Path;

const SECTORS: usize = 32;

/// Per sector: possible durable values (0 = never written), writes since, and
/// whether a sync failed since the last write (its data may then never be durable).
#[derive(Clone, Default)]
struct Sector {
    durable: BTreeSet<u64>,
    pending: Vec<u64>,
    last_ok: bool,
    tainted: bool,
}

fn stamped(sectors: usize, ids: &[u64]) -> AlignedBuf {
    let mut b = AlignedBuf::with_capacity(sectors * SECTOR);
    b.set_len(sectors * SECTOR);
    for (i, id) in ids.iter().enumerate() {
        let s = &mut b.as_mut_slice()[i * SECTOR..(i + 1) * SECTOR];
        for chunk in s.chunks_mut(8) {
            chunk.copy_from_slice(&id.to_le_bytes());
        }
    }
    b
}

fn sector_id(bytes: &[u8]) -> Option<u64> {
    let id = u64::from_le_bytes(bytes[..8].try_into().ok()?);
    bytes.chunks(8).all(|c| c == &bytes[..8]).then_some(id)
}

fn open(fs: &SimFs) -> (SimDisk, FileId) {
    let mut d = fs.disk();
    let f = d.open(Path::new("/f"), common::rw()).unwrap();
    (d, f)
}

fn check_after_crash(seed: u64, model: &mut [Sector], d: &mut SimDisk, f: FileId) {
    let len = d.file_len(f).unwrap() as usize;
    let bytes = common::read(d, f, 0, SECTORS * SECTOR).unwrap();
    assert_eq!(bytes.len(), len.min(SECTORS * SECTOR));
    for (i, s) in model.iter_mut().enumerate() {
        let got = if (i + 1) * SECTOR <= bytes.len() {
            sector_id(&bytes[i * SECTOR..(i + 1) * SECTOR])
                .unwrap_or_else(|| panic!("seed {seed}: sector {i} is not one write's data"))
        } else {
            0
        };
        let allowed = s.durable.contains(&got) || s.pending.contains(&got);
        assert!(
            allowed,
            "seed {seed}: sector {i} holds {got}, allowed {:?} or {:?}",
            s.durable, s.pending
        );
        *s = Sector {
            durable: [got].into(),
            ..Default::default()
        };
    }
}

fn run(seed: u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let fs = SimFs::with_faults(
        seed,
        Faults {
            write_eio: 0.05,
            sync_eio: 0.05,
            torn_write: 0.05,
            delay: 0.2,
            ..Default::default()
        },
    );
    let mut d = fs.disk();
    let f = d.open(Path::new("/f"), common::rw()).unwrap();
    d.sync_dir(Path::new("/")).unwrap();
    let mut model = vec![
        Sector {
            durable: [0].into(),
            ..Default::default()
        };
        SECTORS
    ];
    let (mut d, mut f) = (d, f);
    let mut next_id = 1u64;
    for _ in 0..150 {
        match rng.random_range(0..10) {
            0 => {
                fs.crash();
                (d, f) = open(&fs);
                check_after_crash(seed, &mut model, &mut d, f);
            }
            1 | 2 => {
                let ok = common::sync(&mut d, f).is_ok();
                for s in model.iter_mut().filter(|s| !s.pending.is_empty()) {
                    apply_sync(s, ok);
                }
            }
            _ => {
                // A batch of non-overlapping writes, or one WriteDatasync alone.
                let linked = rng.random_bool(0.2);
                let mut free: Vec<usize> = (0..SECTORS / 4).collect();
                let n = if linked { 1 } else { rng.random_range(1..4) };
                let mut batch = Vec::new();
                for ud in 0..n {
                    let slot = free.swap_remove(rng.random_range(0..free.len()));
                    let start = slot * 4;
                    let len = rng.random_range(1..=4);
                    let ids: Vec<u64> = (0..len).map(|k| next_id + k as u64).collect();
                    next_id += len as u64;
                    let buf = stamped(len, &ids);
                    let offset = (start * SECTOR) as u64;
                    let op = if linked {
                        Op::WriteDatasync {
                            file: f,
                            offset,
                            buf,
                        }
                    } else {
                        Op::Write {
                            file: f,
                            offset,
                            buf,
                        }
                    };
                    d.submit(ud as u64, op).unwrap();
                    batch.push((start, ids));
                }
                while d.in_flight() > 0 {
                    for c in d.reap(1) {
                        let (start, ids) = &batch[c.user_data as usize];
                        let ok = c.result.is_ok();
                        for (k, id) in ids.iter().enumerate() {
                            let s = &mut model[start + k];
                            s.pending.push(*id);
                            s.last_ok = ok;
                            s.tainted = false;
                        }
                        if linked {
                            // Ok: write and sync both succeeded. Err: the write failed
                            // (no sync ran) or the sync failed; either way not synced,
                            // and a failed sync taints what was pending.
                            for s in model.iter_mut().filter(|s| !s.pending.is_empty()) {
                                if ok {
                                    apply_sync(s, true);
                                } else if s.last_ok {
                                    s.tainted = true;
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    fs.crash();
    let (mut d, f) = open(&fs);
    check_after_crash(seed, &mut model, &mut d, f);
}

fn apply_sync(s: &mut Sector, ok: bool) {
    if !ok {
        s.tainted = true;
    } else if !s.tainted {
        if s.last_ok {
            s.durable = [*s.pending.last().unwrap_or(&0)].into();
        } else {
            // The last write failed (maybe torn): any value since may be durable.
            s.durable.extend(s.pending.iter().copied());
        }
        s.pending.clear();
    }
}

#[test]
fn crash_outcomes_stay_within_the_model() {
    let seeds: u64 = std::env::var("BK_SIM_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(30);
    for seed in 0..seeds {
        run(seed);
    }
}
