//! Tests of the simulated disk's crash model, determinism and every fault kind
//! (the model is documented at the top of src/sim/mod.rs).

mod common;

use bk_disk::{run_one, AlignedBuf, Disk, FaultEvent, Faults, FileId, Op, SimDisk, SimFs, SECTOR};
use common::{filled, read, rw, sync, write, write_sync};
use std::io;
use std::path::Path;

fn seeds(default: u64) -> u64 {
    std::env::var("BK_SIM_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// A file `/d/f` whose directory entry is durable.
fn setup(seed: u64) -> (SimFs, SimDisk, FileId) {
    let fs = SimFs::new(seed);
    let mut d = fs.disk();
    d.create_dir_all(Path::new("/d")).unwrap();
    let f = d.open(Path::new("/d/f"), rw()).unwrap();
    d.sync_dir(Path::new("/d")).unwrap();
    (fs, d, f)
}

fn reopen(fs: &SimFs, path: &str) -> (SimDisk, io::Result<FileId>) {
    let mut d = fs.disk();
    let f = d.open(Path::new(path), rw().with_create(false));
    (d, f)
}

trait NoCreate {
    fn with_create(self, create: bool) -> Self;
}
impl NoCreate for bk_disk::OpenOptions {
    fn with_create(mut self, create: bool) -> Self {
        self.create = create;
        self
    }
}

#[test]
fn unsynced_write_is_lost_kept_or_torn_at_sector_granularity() {
    let (mut lost, mut kept, mut torn) = (0, 0, 0);
    for seed in 0..seeds(200) {
        let (fs, mut d, f) = setup(seed);
        write_sync(&mut d, f, 0, filled(8, 0xAA)).unwrap();
        write(&mut d, f, 0, filled(8, 0xBB)).unwrap();
        fs.crash();
        let (mut d, f) = reopen(&fs, "/d/f");
        let f = f.unwrap();
        let got = read(&mut d, f, 0, 8 * SECTOR).unwrap();
        assert_eq!(got.len(), 8 * SECTOR, "seed {seed}");
        let mut new = 0;
        for s in got.chunks(SECTOR) {
            assert!(
                s.iter().all(|&x| x == 0xAA) || s.iter().all(|&x| x == 0xBB),
                "seed {seed}: a sector is never partially written"
            );
            new += usize::from(s[0] == 0xBB);
        }
        match new {
            0 => lost += 1,
            8 => kept += 1,
            _ => torn += 1,
        }
    }
    assert!(
        lost > 0 && kept > 0 && torn > 0,
        "lost {lost} kept {kept} torn {torn}"
    );
}

#[test]
fn synced_data_survives_crash() {
    for seed in 0..seeds(50) {
        let (fs, mut d, f) = setup(seed);
        write_sync(&mut d, f, 0, filled(2, 1)).unwrap();
        write(&mut d, f, 2 * SECTOR as u64, filled(2, 2)).unwrap();
        sync(&mut d, f).unwrap();
        write(&mut d, f, 4 * SECTOR as u64, filled(2, 3)).unwrap(); // unsynced, may go
        fs.crash();
        let (mut d, f) = reopen(&fs, "/d/f");
        let got = read(&mut d, f.unwrap(), 0, 4 * SECTOR).unwrap();
        assert!(got[..2 * SECTOR].iter().all(|&x| x == 1), "seed {seed}");
        assert!(got[2 * SECTOR..].iter().all(|&x| x == 2), "seed {seed}");
    }
}

#[test]
fn unsynced_create_is_forgotten_synced_create_survives() {
    for seed in 0..seeds(20) {
        let fs = SimFs::new(seed);
        let mut d = fs.disk();
        d.create_dir_all(Path::new("/d")).unwrap();
        let f = d.open(Path::new("/d/unsynced"), rw()).unwrap();
        write_sync(&mut d, f, 0, filled(1, 9)).unwrap();
        let g = d.open(Path::new("/d/synced"), rw()).unwrap();
        write_sync(&mut d, g, 0, filled(1, 8)).unwrap();
        d.sync_dir(Path::new("/d")).unwrap();
        let h = d.open(Path::new("/d/late"), rw()).unwrap(); // after the dir sync
        write_sync(&mut d, h, 0, filled(1, 7)).unwrap();
        fs.crash();
        let mut d = fs.disk();
        let names = d.list_dir(Path::new("/d")).unwrap();
        assert_eq!(
            names,
            vec![std::path::PathBuf::from("synced"), "unsynced".into()]
        );
        let e = d
            .open(Path::new("/d/late"), Default::default())
            .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        let g = d.open(Path::new("/d/synced"), Default::default()).unwrap();
        assert_eq!(read(&mut d, g, 0, SECTOR).unwrap(), vec![8u8; SECTOR]);
    }
}

#[test]
fn rename_and_remove_are_durable_only_after_sync_dir() {
    for seed in 0..seeds(20) {
        let (fs, mut d, f) = setup(seed);
        write_sync(&mut d, f, 0, filled(1, 5)).unwrap();
        d.close(f).unwrap();
        let other = d.open(Path::new("/d/other"), rw()).unwrap();
        d.close(other).unwrap();
        d.sync_dir(Path::new("/d")).unwrap();
        // Synced rename: durable.
        d.rename(Path::new("/d/f"), Path::new("/d/g")).unwrap();
        d.sync_dir(Path::new("/d")).unwrap();
        // Unsynced rename and remove: forgotten.
        d.rename(Path::new("/d/g"), Path::new("/d/h")).unwrap();
        d.remove(Path::new("/d/other")).unwrap();
        assert_eq!(
            fs.durable_list_dir(Path::new("/d")).unwrap(),
            vec![std::path::PathBuf::from("g"), "other".into()]
        );
        fs.crash();
        let mut d = fs.disk();
        assert_eq!(
            d.list_dir(Path::new("/d")).unwrap(),
            vec![std::path::PathBuf::from("g"), "other".into()]
        );
        let g = d.open(Path::new("/d/g"), Default::default()).unwrap();
        assert_eq!(
            read(&mut d, g, 0, SECTOR).unwrap(),
            vec![5u8; SECTOR],
            "seed {seed}"
        );
    }
}

#[test]
fn handles_are_stale_after_crash() {
    let (fs, mut d, f) = setup(3);
    d.submit(
        7,
        Op::Write {
            file: f,
            offset: 0,
            buf: filled(1, 1),
        },
    )
    .unwrap();
    fs.crash();
    let c = d.reap(1);
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].user_data, 7);
    assert_eq!(
        c[0].result.as_ref().unwrap_err().raw_os_error(),
        Some(libc::ESTALE)
    );
    assert!(c[0].buf.is_some());
    assert_eq!(
        d.submit(8, Op::Fdatasync { file: f })
            .unwrap_err()
            .raw_os_error(),
        Some(libc::ESTALE)
    );
    assert_eq!(
        d.file_len(f).unwrap_err().raw_os_error(),
        Some(libc::ESTALE)
    );
    // The lost write never happened.
    let (mut d2, f2) = reopen(&fs, "/d/f");
    assert_eq!(d2.file_len(f2.unwrap()).unwrap(), 0);
    drop(d); // dropping a stale handle must not disturb the new state
    assert!(d2.list_dir(Path::new("/d")).is_ok());
}

/// A workload with reordering, faults and a crash; returns everything observable.
/// Completions seen (user_data, result or errno), the durable file, the fault log.
type Outcome = (Vec<(u64, Result<usize, i32>)>, Vec<u8>, Vec<FaultEvent>);

fn scripted(seed: u64) -> Outcome {
    let fs = SimFs::with_faults(
        seed,
        Faults {
            write_eio: 0.1,
            read_bit_flip: 0.1,
            delay: 0.3,
            torn_write: 0.05,
            ..Default::default()
        },
    );
    let mut d = fs.disk();
    d.create_dir_all(Path::new("/j")).unwrap();
    let f = d.open(Path::new("/j/log"), rw()).unwrap();
    d.sync_dir(Path::new("/j")).unwrap();
    let mut seen = Vec::new();
    for round in 0..10u64 {
        for i in 0..6u64 {
            let off = (round * 6 + i) * SECTOR as u64;
            let op = if i == 5 {
                Op::WriteDatasync {
                    file: f,
                    offset: off,
                    buf: filled(1, (round * 6 + i) as u8),
                }
            } else {
                Op::Write {
                    file: f,
                    offset: off,
                    buf: filled(1, (round * 6 + i) as u8),
                }
            };
            d.submit(round * 100 + i, op).unwrap();
        }
        while d.in_flight() > 0 {
            for c in d.reap(1) {
                seen.push((
                    c.user_data,
                    c.result.map_err(|e| e.raw_os_error().unwrap_or(-1)),
                ));
            }
        }
        if round == 4 {
            let r = read(&mut d, f, 0, 8 * SECTOR)
                .map(|v| v.len())
                .map_err(|e| e.raw_os_error().unwrap_or(-1));
            seen.push((u64::MAX, r));
        }
    }
    fs.crash();
    (
        seen,
        fs.durable_contents(Path::new("/j/log")).unwrap(),
        fs.fault_log(),
    )
}

#[test]
fn same_seed_same_outcome() {
    for seed in 0..seeds(10) {
        assert_eq!(scripted(seed), scripted(seed), "seed {seed}");
    }
    let differ = (0..10)
        .filter(|&s| scripted(s) != scripted(s + 1000))
        .count();
    assert!(differ > 0, "different seeds should give different runs");
}

#[test]
fn completions_are_reordered() {
    let mut reordered = false;
    for seed in 0..20 {
        let (_fs, mut d, f) = setup(seed);
        for i in 0..8u64 {
            d.submit(
                i,
                Op::Write {
                    file: f,
                    offset: i * SECTOR as u64,
                    buf: filled(1, 1),
                },
            )
            .unwrap();
        }
        let mut order = Vec::new();
        while d.in_flight() > 0 {
            order.extend(d.reap(1).into_iter().map(|c| c.user_data));
        }
        reordered |= order.windows(2).any(|w| w[0] > w[1]);
    }
    assert!(reordered);
}

#[test]
fn fault_read_eio_nth_and_probability() {
    let (fs, mut d, f) = setup(1);
    write_sync(&mut d, f, 0, filled(1, 1)).unwrap();
    fs.set_faults(Faults {
        fail_read_nth: Some(2),
        ..Default::default()
    });
    assert!(read(&mut d, f, 0, SECTOR).is_ok());
    assert_eq!(
        read(&mut d, f, 0, SECTOR).unwrap_err().raw_os_error(),
        Some(libc::EIO)
    );
    assert!(read(&mut d, f, 0, SECTOR).is_ok(), "one-shot");
    fs.set_faults(Faults {
        read_eio: 1.0,
        ..Default::default()
    });
    assert_eq!(
        read(&mut d, f, 0, SECTOR).unwrap_err().raw_os_error(),
        Some(libc::EIO)
    );
    let reads = fs
        .fault_log()
        .iter()
        .filter(|e| matches!(e, FaultEvent::ReadEio { .. }))
        .count();
    assert_eq!(reads, 2);
    fs.set_faults(Faults::default());
    assert_eq!(
        read(&mut d, f, 0, SECTOR).unwrap(),
        vec![1u8; SECTOR],
        "stored data intact"
    );
}

#[test]
fn fault_write_eio_writes_nothing() {
    let (fs, mut d, f) = setup(2);
    fs.set_faults(Faults {
        fail_write_nth: Some(1),
        ..Default::default()
    });
    assert_eq!(
        write_sync(&mut d, f, 0, filled(1, 1))
            .unwrap_err()
            .raw_os_error(),
        Some(libc::EIO)
    );
    assert_eq!(d.file_len(f).unwrap(), 0);
    fs.set_faults(Faults {
        write_eio: 1.0,
        ..Default::default()
    });
    assert_eq!(
        write(&mut d, f, 0, filled(1, 1))
            .unwrap_err()
            .raw_os_error(),
        Some(libc::EIO)
    );
    assert_eq!(d.file_len(f).unwrap(), 0);
    assert!(matches!(
        fs.fault_log()[0],
        FaultEvent::WriteEio {
            offset: 0,
            len: 4096,
            ..
        }
    ));
}

#[test]
fn fault_sync_eio_drops_unsynced_data_linux_semantics() {
    for seed in 0..seeds(20) {
        let (fs, mut d, f) = setup(seed);
        write_sync(&mut d, f, 0, filled(1, 1)).unwrap();
        write(&mut d, f, 0, filled(1, 2)).unwrap();
        fs.set_faults(Faults {
            fail_sync_nth: Some(1),
            ..Default::default()
        });
        assert_eq!(sync(&mut d, f).unwrap_err().raw_os_error(), Some(libc::EIO));
        // Reads still see the new data (clean page cache) ...
        assert_eq!(read(&mut d, f, 0, SECTOR).unwrap(), vec![2u8; SECTOR]);
        // ... a later sync succeeds but does not make it durable ...
        sync(&mut d, f).unwrap();
        assert_eq!(
            fs.durable_contents(Path::new("/d/f")).unwrap(),
            vec![1u8; SECTOR]
        );
        // ... and a crash loses it.
        fs.crash();
        let (mut d, f) = reopen(&fs, "/d/f");
        assert_eq!(
            read(&mut d, f.unwrap(), 0, SECTOR).unwrap(),
            vec![1u8; SECTOR],
            "seed {seed}"
        );
        assert!(fs.fault_log().iter().any(|e| matches!(
            e,
            FaultEvent::SyncEio {
                dropped_mutations: 1,
                ..
            }
        )));
    }
    // WriteDatasync whose sync fails reports EIO.
    let (fs, mut d, f) = setup(0);
    fs.set_faults(Faults {
        sync_eio: 1.0,
        ..Default::default()
    });
    assert_eq!(
        write_sync(&mut d, f, 0, filled(1, 1))
            .unwrap_err()
            .raw_os_error(),
        Some(libc::EIO)
    );
}

#[test]
fn fault_enospc_and_capacity() {
    let (fs, mut d, f) = setup(4);
    fs.set_faults(Faults {
        enospc_write_nth: Some(2),
        ..Default::default()
    });
    write(&mut d, f, 0, filled(1, 1)).unwrap();
    assert_eq!(
        write(&mut d, f, 0, filled(1, 1))
            .unwrap_err()
            .raw_os_error(),
        Some(libc::ENOSPC)
    );
    fs.set_faults(Faults {
        enospc: 1.0,
        ..Default::default()
    });
    assert_eq!(
        write(&mut d, f, 0, filled(1, 1))
            .unwrap_err()
            .raw_os_error(),
        Some(libc::ENOSPC)
    );
    let e = run_one(
        &mut d,
        Op::Fallocate {
            file: f,
            offset: 0,
            len: 1 << 20,
        },
    )
    .result
    .unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::ENOSPC));

    fs.set_faults(Faults {
        capacity_bytes: Some(8 * SECTOR as u64),
        ..Default::default()
    });
    let s = d.space(Path::new("/d")).unwrap();
    assert_eq!(
        (s.total_bytes, s.free_bytes),
        (8 * SECTOR as u64, 7 * SECTOR as u64)
    );
    write(&mut d, f, SECTOR as u64, filled(7, 1)).unwrap(); // fills it exactly
    assert_eq!(d.space(Path::new("/")).unwrap().free_bytes, 0);
    assert_eq!(
        write(&mut d, f, 8 * SECTOR as u64, filled(1, 1))
            .unwrap_err()
            .raw_os_error(),
        Some(libc::ENOSPC)
    );
    write(&mut d, f, 0, filled(1, 3)).unwrap(); // overwrite needs no space
    assert_eq!(
        d.set_len(f, 9 * SECTOR as u64).unwrap_err().raw_os_error(),
        Some(libc::ENOSPC)
    );
    let e = run_one(
        &mut d,
        Op::Fallocate {
            file: f,
            offset: 0,
            len: 9 * SECTOR as u64,
        },
    )
    .result
    .unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::ENOSPC));
    d.set_len(f, 4 * SECTOR as u64).unwrap(); // shrinking frees space
    write(&mut d, f, 4 * SECTOR as u64, filled(4, 1)).unwrap();
}

#[test]
fn fault_delay_holds_operations_back() {
    let (fs, mut d, f) = setup(5);
    fs.set_faults(Faults {
        delay: 1.0,
        ..Default::default()
    });
    for i in 0..8u64 {
        d.submit(
            i,
            Op::Write {
                file: f,
                offset: i * SECTOR as u64,
                buf: filled(1, 1),
            },
        )
        .unwrap();
    }
    assert!(d.reap(0).is_empty(), "everything is delayed");
    assert_eq!(d.reap(3).len(), 3, "only what min demands");
    assert_eq!(d.in_flight(), 5);
    assert_eq!(d.reap(10).len(), 5);
}

#[test]
fn fault_read_bit_flip_leaves_storage_intact() {
    let (fs, mut d, f) = setup(6);
    write_sync(&mut d, f, 0, filled(2, 0x55)).unwrap();
    fs.set_faults(Faults {
        read_bit_flip: 1.0,
        ..Default::default()
    });
    let got = read(&mut d, f, 0, 2 * SECTOR).unwrap();
    let diffs: Vec<usize> = (0..got.len()).filter(|&i| got[i] != 0x55).collect();
    assert_eq!(diffs.len(), 1);
    assert_eq!((got[diffs[0]] ^ 0x55).count_ones(), 1);
    match &fs.fault_log()[..] {
        [FaultEvent::ReadBitFlip { offset, bit, .. }] => {
            assert_eq!(*offset as usize, diffs[0]);
            assert_eq!(got[diffs[0]] ^ 0x55, 1 << bit);
        }
        other => panic!("unexpected log {other:?}"),
    }
    assert_eq!(
        fs.volatile_contents(Path::new("/d/f")).unwrap(),
        vec![0x55; 2 * SECTOR]
    );
    assert_eq!(
        fs.durable_contents(Path::new("/d/f")).unwrap(),
        vec![0x55; 2 * SECTOR]
    );
}

#[test]
fn fault_torn_write_stores_some_sectors_then_fails() {
    for seed in 0..seeds(10) {
        let (fs, mut d, f) = setup(seed);
        write_sync(&mut d, f, 0, filled(8, 0xAA)).unwrap();
        fs.set_faults(Faults {
            torn_write: 1.0,
            ..Default::default()
        });
        assert_eq!(
            write(&mut d, f, 0, filled(8, 0xBB))
                .unwrap_err()
                .raw_os_error(),
            Some(libc::EIO)
        );
        let FaultEvent::TornWrite { written, .. } = &fs.fault_log()[0] else {
            panic!("no TornWrite logged")
        };
        assert!(written.len() < 8);
        let now = fs.volatile_contents(Path::new("/d/f")).unwrap();
        for (i, s) in now.chunks(SECTOR).enumerate() {
            let expect = if written.contains(&((i * SECTOR) as u64)) {
                0xBB
            } else {
                0xAA
            };
            assert!(s.iter().all(|&x| x == expect), "seed {seed} sector {i}");
        }
    }
}

#[test]
fn fault_misdirected_write_corrupts_another_place() {
    let (fs, mut d, f) = setup(7);
    write_sync(&mut d, f, 0, filled(32, 0xAA)).unwrap();
    fs.set_faults(Faults {
        misdirected_write: 1.0,
        ..Default::default()
    });
    let off = 16 * SECTOR as u64;
    assert_eq!(
        write_sync(&mut d, f, off, filled(1, 0xBB)).unwrap(),
        SECTOR,
        "reports success"
    );
    let FaultEvent::MisdirectedWrite {
        intended,
        actual,
        len,
        ..
    } = fs.fault_log()[0].clone()
    else {
        panic!("no MisdirectedWrite logged")
    };
    assert_eq!((intended, len), (off, SECTOR as u64));
    assert_ne!(actual, intended);
    assert_eq!(actual % SECTOR as u64, 0);
    let durable = fs.durable_contents(Path::new("/d/f")).unwrap();
    let at = |o: u64| &durable[o as usize..o as usize + SECTOR];
    assert!(
        at(intended).iter().all(|&x| x == 0xAA),
        "intended range keeps old data"
    );
    assert!(
        at(actual).iter().all(|&x| x == 0xBB),
        "wrong range overwritten"
    );
}

#[test]
fn flip_bit_helper_corrupts_durable_file() {
    let (fs, mut d, f) = setup(8);
    write_sync(&mut d, f, 0, filled(1, 0)).unwrap();
    fs.flip_bit(Path::new("/d/f"), 100, 3).unwrap();
    assert_eq!(fs.durable_contents(Path::new("/d/f")).unwrap()[100], 8);
    assert_eq!(read(&mut d, f, 0, SECTOR).unwrap()[100], 8);
    assert!(
        fs.flip_bit(Path::new("/d/f"), SECTOR as u64, 0).is_err(),
        "beyond the file"
    );
    assert!(fs.flip_bit(Path::new("/d/none"), 0, 0).is_err());
    assert_eq!(
        fs.fault_log(),
        vec![FaultEvent::ManualBitFlip {
            path: "/d/f".into(),
            offset: 100,
            bit: 3
        }]
    );
    fs.crash();
    assert_eq!(fs.durable_contents(Path::new("/d/f")).unwrap()[100], 8);
}

#[test]
fn unaligned_data_ops_fail_einval() {
    let (_fs, mut d, f) = setup(9);
    let mut b = AlignedBuf::with_capacity(SECTOR);
    b.set_len(100);
    assert_eq!(
        write(&mut d, f, 0, b).unwrap_err().raw_os_error(),
        Some(libc::EINVAL)
    );
    assert_eq!(
        write(&mut d, f, 512, filled(1, 0))
            .unwrap_err()
            .raw_os_error(),
        Some(libc::EINVAL)
    );
    assert_eq!(
        read(&mut d, f, 0, 100).unwrap_err().raw_os_error(),
        Some(libc::EINVAL)
    );
}

#[test]
fn two_handles_share_one_file_system() {
    let (fs, mut d, f) = setup(10);
    write_sync(&mut d, f, 0, filled(1, 4)).unwrap();
    let fs2 = fs.clone();
    let t = std::thread::spawn(move || {
        let mut d2 = fs2.disk();
        let g = d2.open(Path::new("/d/f"), Default::default()).unwrap();
        read(&mut d2, g, 0, SECTOR).unwrap()
    });
    assert_eq!(t.join().unwrap(), vec![4u8; SECTOR]);
    // An unlinked file stays readable through an open handle.
    d.remove(Path::new("/d/f")).unwrap();
    assert_eq!(read(&mut d, f, 0, SECTOR).unwrap(), vec![4u8; SECTOR]);
}

#[test]
fn fault_remove_eio_leaves_the_file_named() {
    let fs = SimFs::new(12);
    let mut d = fs.disk();
    d.create_dir_all(Path::new("/d")).unwrap();
    for name in ["/d/a", "/d/b"] {
        let f = d.open(Path::new(name), rw()).unwrap();
        write_sync(&mut d, f, 0, filled(1, 1)).unwrap();
        d.close(f).unwrap();
    }
    d.sync_dir(Path::new("/d")).unwrap();
    fs.set_faults(Faults {
        fail_remove_nth: Some(2),
        ..Default::default()
    });
    d.remove(Path::new("/d/a")).unwrap();
    assert_eq!(
        d.remove(Path::new("/d/b")).unwrap_err().raw_os_error(),
        Some(libc::EIO)
    );
    assert_eq!(
        fs.fault_log(),
        vec![FaultEvent::RemoveEio {
            path: "/d/b".into()
        }]
    );
    // Still there, readable, and removable once the fault has passed.
    let f = d.open(Path::new("/d/b"), Default::default()).unwrap();
    assert_eq!(read(&mut d, f, 0, SECTOR).unwrap(), vec![1u8; SECTOR]);
    d.close(f).unwrap();
    d.remove(Path::new("/d/b")).unwrap();
    fs.set_faults(Faults {
        remove_eio: 1.0,
        ..Default::default()
    });
    let f = d.open(Path::new("/d/c"), rw()).unwrap();
    d.close(f).unwrap();
    assert!(d.remove(Path::new("/d/c")).is_err());
    assert_eq!(d.list_dir(Path::new("/d")).unwrap().len(), 1);
}

#[test]
fn fault_sync_dir_eio_keeps_entries_not_durable() {
    let fs = SimFs::new(11);
    let mut d = fs.disk();
    d.create_dir_all(Path::new("/d")).unwrap();
    let f = d.open(Path::new("/d/f"), rw()).unwrap();
    write_sync(&mut d, f, 0, filled(1, 1)).unwrap();
    fs.set_faults(Faults {
        fail_sync_dir_nth: Some(1),
        ..Default::default()
    });
    assert_eq!(
        d.sync_dir(Path::new("/d")).unwrap_err().raw_os_error(),
        Some(libc::EIO)
    );
    assert!(fs.durable_list_dir(Path::new("/d")).unwrap().is_empty());
    assert_eq!(
        fs.fault_log(),
        vec![FaultEvent::SyncDirEio { dir: "/d".into() }]
    );
    fs.set_faults(Faults {
        sync_dir_eio: 1.0,
        ..Default::default()
    });
    assert!(d.sync_dir(Path::new("/d")).is_err());
    fs.crash();
    assert!(
        fs.disk().list_dir(Path::new("/d")).unwrap().is_empty(),
        "the create was forgotten"
    );
}

#[test]
fn crash_after_calls_cuts_the_power_at_that_call() {
    let (fs, mut d, f) = setup(5);
    write_sync(&mut d, f, 0, filled(1, 1)).unwrap();
    fs.set_faults(Faults {
        crash_after_calls: Some(3),
        ..Faults::default()
    });
    // Calls 1 and 2 (submit, reap of an unsynced write) run; call 3 (the sync's submit)
    // is the one the power cut hits.
    write(&mut d, f, 0, filled(1, 2)).unwrap();
    let e = d.submit(9, Op::Fdatasync { file: f }).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::ESTALE));
    assert!(fs.faults().crash_after_calls.is_none(), "fires once");
    assert!(
        fs.fault_log()
            .iter()
            .any(|e| matches!(e, FaultEvent::Crash { .. })),
        "{:?}",
        fs.fault_log()
    );
    assert_eq!(
        d.file_len(f).unwrap_err().raw_os_error(),
        Some(libc::ESTALE)
    );
    // After the cut: the synced sector, or the unsynced write if the crash kept it.
    let (mut d, f) = reopen(&fs, "/d/f");
    let got = read(&mut d, f.unwrap(), 0, SECTOR).unwrap();
    assert!(got.iter().all(|&x| x == 1) || got.iter().all(|&x| x == 2));
}
