//! Differential test: the same seeded random sequence of operations runs on the
//! simulated disk (no faults), the syscall backend and the io_uring backend, each
//! wrapped in `Checked`; every completion's result and every read's bytes must agree.
//! Batches put several non-overlapping writes in flight at once, so the sim's
//! reordering and the ring's concurrency are exercised. `BK_SIM_SEEDS` sets the
//! number of sequences (default 4).

mod common;

use bk_disk::{Checked, Disk, FileId, Op, OpenOptions, SimFs, SyscallDisk, UringDisk, SECTOR};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;
use std::path::Path;

#[derive(Debug, PartialEq)]
enum Seen {
    Done(u64, Result<usize, i32>),
    /// user_data, length and FNV-1a hash of the bytes read.
    Read(u64, usize, u64),
    Len(u64),
}

fn fnv(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf29ce484222325u64, |h, &x| {
        (h ^ x as u64).wrapping_mul(0x100000001b3)
    })
}

/// Asserts equality, reporting the first difference (the logs are long).
fn same(a: &[Seen], b: &[Seen], what: &str) {
    if let Some(i) = (0..a.len().min(b.len())).find(|&i| a[i] != b[i]) {
        panic!(
            "{what}: first difference at step {i}: {:?} vs {:?} (previous: {:?})",
            a[i],
            b[i],
            i.checked_sub(1).map(|j| &a[j])
        );
    }
    assert_eq!(a.len(), b.len(), "{what}: lengths differ");
}

fn run(d: &mut dyn Disk, root: &Path, seed: u64) -> Vec<Seen> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut seen = Vec::new();
    let opts = OpenOptions {
        create: true,
        write: true,
        direct: true,
        ..Default::default()
    };
    let files: Vec<FileId> = (0..3)
        .map(|i| d.open(&root.join(format!("f{i}")), opts).unwrap())
        .collect();
    let mut ud = 0u64;
    for _ in 0..60 {
        let f = files[rng.random_range(0..files.len())];
        match rng.random_range(0..10) {
            0 => {
                let len = rng.random_range(0..64u64) * SECTOR as u64;
                d.set_len(f, len).unwrap();
            }
            1 => {
                ud += 1;
                let (offset, len) = (
                    rng.random_range(0..32u64) * SECTOR as u64,
                    rng.random_range(1..32u64) * SECTOR as u64,
                );
                d.submit(
                    ud,
                    Op::Fallocate {
                        file: f,
                        offset,
                        len,
                    },
                )
                .unwrap();
            }
            2 => {
                ud += 1;
                d.submit(ud, Op::Fdatasync { file: f }).unwrap();
            }
            _ => {
                // A batch of non-overlapping writes and reads on distinct sector ranges.
                // Reads stay below the size at batch start: beyond it, whether a read
                // sees a concurrent extending write is legitimately undefined.
                let full_sectors = d.file_len(f).unwrap() / SECTOR as u64;
                let mut slots: Vec<u64> = (0..64).collect();
                for _ in 0..rng.random_range(1..6) {
                    let i = rng.random_range(0..slots.len());
                    let at = slots.swap_remove(i) * SECTOR as u64;
                    ud += 1;
                    let op = match rng.random_range(0..3) {
                        0 if at / (SECTOR as u64) < full_sectors => Op::Read {
                            file: f,
                            offset: at,
                            len: SECTOR,
                            buf: bk_disk::AlignedBuf::with_capacity(SECTOR),
                        },
                        1 => Op::WriteDatasync {
                            file: f,
                            offset: at,
                            buf: common::pattern(1, rng.random()),
                        },
                        _ => Op::Write {
                            file: f,
                            offset: at,
                            buf: common::pattern(1, rng.random()),
                        },
                    };
                    d.submit(ud, op).unwrap();
                }
            }
        }
        let mut batch = BTreeMap::new();
        while d.in_flight() > 0 {
            for c in d.reap(1) {
                let r = c.result.map_err(|e| e.raw_os_error().unwrap_or(-1));
                let bytes = c.buf.filter(|_| r.is_ok()).map(|b| b.as_slice().to_vec());
                batch.insert(c.user_data, (r, bytes));
            }
        }
        for (u, (r, bytes)) in batch {
            seen.push(Seen::Done(u, r));
            if let Some(b) = bytes {
                seen.push(Seen::Read(u, b.len(), fnv(&b)));
            }
        }
        seen.push(Seen::Len(d.file_len(f).unwrap()));
    }
    for f in files {
        let len = d.file_len(f).unwrap() as usize;
        let got = common::read(d, f, 0, len.div_ceil(SECTOR) * SECTOR).unwrap();
        seen.push(Seen::Read(u64::MAX, got.len(), fnv(&got)));
        d.close(f).unwrap();
    }
    seen
}

#[test]
fn sim_syscall_and_uring_agree() {
    let seeds: u64 = std::env::var("BK_SIM_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(4);
    let base = std::env::var_os("BK_DISK_TEST_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    for seed in 0..seeds {
        let fs = SimFs::new(seed ^ 0xabc);
        let sim = run(&mut Checked::new(fs.disk()), Path::new("/"), seed);
        let t = tempfile::tempdir_in(&base).unwrap();
        let sys = run(&mut Checked::new(SyscallDisk::new()), t.path(), seed);
        same(&sim, &sys, &format!("seed {seed}: sim vs syscall"));
        match UringDisk::new(16) {
            Ok(u) => {
                let t = tempfile::tempdir_in(&base).unwrap();
                let ur = run(&mut Checked::new(u), t.path(), seed);
                same(&sys, &ur, &format!("seed {seed}: syscall vs uring"));
                let mut inline = UringDisk::new(16).unwrap();
                inline.set_inline_sync(true);
                let t = tempfile::tempdir_in(&base).unwrap();
                let ui = run(&mut Checked::new(inline), t.path(), seed);
                same(
                    &ur,
                    &ui,
                    &format!("seed {seed}: uring vs uring with inline syncs"),
                );
            }
            Err(e) if std::env::var_os("BK_REQUIRE_URING").is_some() => {
                panic!("io_uring unavailable: {e}")
            }
            Err(e) => eprintln!("SKIPPED: io_uring unavailable ({e}); uring leg not run"),
        }
    }
}
