//! The conformance suite every `Disk` backend must pass, shared by the test files.
//! Each check states the contract of `bk_disk::Disk` it exercises.

#![allow(dead_code)]

use bk_disk::{run_one, AlignedBuf, Disk, FileId, Op, OpenOptions, SECTOR};
use std::collections::HashSet;
use std::io;
use std::path::Path;

/// A buffer of `sectors` sectors filled with `byte`.
pub fn filled(sectors: usize, byte: u8) -> AlignedBuf {
    let mut b = AlignedBuf::with_capacity(sectors * SECTOR);
    b.set_len(sectors * SECTOR);
    b.as_mut_slice().fill(byte);
    b
}

/// A buffer of `sectors` sectors with a position-dependent pattern seeded by `seed`.
pub fn pattern(sectors: usize, seed: u8) -> AlignedBuf {
    let mut b = AlignedBuf::with_capacity(sectors * SECTOR);
    b.set_len(sectors * SECTOR);
    for (i, x) in b.as_mut_slice().iter_mut().enumerate() {
        *x = (i as u8).wrapping_mul(31).wrapping_add(seed);
    }
    b
}

pub fn rw() -> OpenOptions {
    OpenOptions {
        create: true,
        write: true,
        direct: true,
        ..Default::default()
    }
}

pub fn write(d: &mut dyn Disk, file: FileId, offset: u64, buf: AlignedBuf) -> io::Result<usize> {
    run_one(d, Op::Write { file, offset, buf }).result
}

pub fn write_sync(
    d: &mut dyn Disk,
    file: FileId,
    offset: u64,
    buf: AlignedBuf,
) -> io::Result<usize> {
    run_one(d, Op::WriteDatasync { file, offset, buf }).result
}

pub fn sync(d: &mut dyn Disk, file: FileId) -> io::Result<usize> {
    run_one(d, Op::Fdatasync { file }).result
}

/// Reads `len` bytes at `offset`; returns the bytes actually read.
pub fn read(d: &mut dyn Disk, file: FileId, offset: u64, len: usize) -> io::Result<Vec<u8>> {
    let c = run_one(
        d,
        Op::Read {
            file,
            offset,
            len,
            buf: AlignedBuf::with_capacity(len),
        },
    );
    let n = c.result?;
    let buf = c.buf.expect("a read hands its buffer back");
    assert_eq!(buf.len(), n, "buf.len() is set to the count read");
    Ok(buf.as_slice().to_vec())
}

/// Runs the whole suite in the (existing, empty) directory `root`.
pub fn conformance(d: &mut dyn Disk, root: &Path) {
    let dir = root.join("a/b");
    d.create_dir_all(&dir).unwrap();
    d.create_dir_all(&dir).unwrap(); // idempotent
    assert!(d.list_dir(&dir).unwrap().is_empty());
    assert_eq!(
        d.list_dir(&root.join("a")).unwrap(),
        Vec::<std::path::PathBuf>::new(),
        "directories are not listed"
    );

    // Open errors.
    let f_path = dir.join("f");
    let e = d.open(&f_path, OpenOptions::default()).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::NotFound);
    let f = d.open(&f_path, rw()).unwrap();
    let e = d
        .open(
            &f_path,
            OpenOptions {
                create_new: true,
                write: true,
                ..Default::default()
            },
        )
        .unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
    assert_eq!(d.file_len(f).unwrap(), 0);

    // Write / WriteDatasync / read back.
    let a = pattern(2, 1);
    let a_bytes = a.as_slice().to_vec();
    assert_eq!(write(d, f, 0, a).unwrap(), 2 * SECTOR);
    let b = pattern(1, 7);
    let b_bytes = b.as_slice().to_vec();
    assert_eq!(write_sync(d, f, 2 * SECTOR as u64, b).unwrap(), SECTOR);
    assert_eq!(d.file_len(f).unwrap(), 3 * SECTOR as u64);
    let got = read(d, f, 0, 3 * SECTOR).unwrap();
    assert_eq!(&got[..2 * SECTOR], &a_bytes[..]);
    assert_eq!(&got[2 * SECTOR..], &b_bytes[..]);
    assert_eq!(sync(d, f).unwrap(), 0);

    // Short read at end of file, empty read past it.
    let got = read(d, f, SECTOR as u64, 4 * SECTOR).unwrap();
    assert_eq!(got.len(), 2 * SECTOR, "short read at EOF");
    assert!(read(d, f, 3 * SECTOR as u64, SECTOR).unwrap().is_empty());
    assert!(read(d, f, 100 * SECTOR as u64, SECTOR).unwrap().is_empty());

    // Offsets beyond any file size are errors, not panics or wrap-arounds.
    let huge = !(SECTOR as u64 - 1); // the last sector-aligned u64
    assert!(write(d, f, huge, filled(1, 1)).is_err());
    assert!(read(d, f, huge, SECTOR).map_or(true, |v| v.is_empty()));
    let c = run_one(
        d,
        Op::Fallocate {
            file: f,
            offset: huge,
            len: SECTOR as u64,
        },
    );
    assert!(c.result.is_err());
    assert_eq!(d.file_len(f).unwrap(), 3 * SECTOR as u64);

    // Fallocate extends the size; the new range reads as zeros.
    let c = run_one(
        d,
        Op::Fallocate {
            file: f,
            offset: 0,
            len: 16 * SECTOR as u64,
        },
    );
    assert_eq!(c.result.unwrap(), 0);
    assert!(c.buf.is_none());
    assert_eq!(d.file_len(f).unwrap(), 16 * SECTOR as u64);
    assert!(read(d, f, 8 * SECTOR as u64, 8 * SECTOR)
        .unwrap()
        .iter()
        .all(|&x| x == 0));
    assert_eq!(
        &read(d, f, 0, SECTOR).unwrap()[..],
        &a_bytes[..SECTOR],
        "fallocate keeps data"
    );

    // set_len truncates and extends with zeros.
    d.set_len(f, SECTOR as u64).unwrap();
    assert_eq!(d.file_len(f).unwrap(), SECTOR as u64);
    d.set_len(f, 4 * SECTOR as u64).unwrap();
    let got = read(d, f, 0, 4 * SECTOR).unwrap();
    assert_eq!(&got[..SECTOR], &a_bytes[..SECTOR]);
    assert!(
        got[SECTOR..].iter().all(|&x| x == 0),
        "extension reads as zeros"
    );

    // A size that is not sector-aligned: the read is short, to the byte, at EOF.
    d.set_len(f, SECTOR as u64 + 100).unwrap();
    let got = read(d, f, 0, 2 * SECTOR).unwrap();
    assert_eq!(
        got.len(),
        SECTOR + 100,
        "short read stops at the unaligned EOF"
    );
    assert_eq!(&got[..SECTOR], &a_bytes[..SECTOR]);
    d.set_len(f, 4 * SECTOR as u64).unwrap();
    assert!(
        read(d, f, SECTOR as u64, SECTOR)
            .unwrap()
            .iter()
            .all(|&x| x == 0),
        "the cut tail reads as zeros"
    );

    // Several operations in flight; every completion is reaped once with its user_data.
    let mut want = HashSet::new();
    for i in 0..8u64 {
        d.submit(
            100 + i,
            Op::Write {
                file: f,
                offset: i * SECTOR as u64,
                buf: filled(1, i as u8),
            },
        )
        .unwrap();
        want.insert(100 + i);
    }
    assert_eq!(d.in_flight(), 8);
    let mut got_ids = HashSet::new();
    while d.in_flight() > 0 {
        for c in d.reap(1) {
            assert_eq!(c.result.as_ref().unwrap(), &SECTOR);
            assert!(c.buf.is_some());
            assert!(got_ids.insert(c.user_data), "completion reaped twice");
        }
    }
    assert_eq!(got_ids, want);
    assert!(d.reap(5).is_empty(), "min is clamped to in_flight");
    let got = read(d, f, 0, 8 * SECTOR).unwrap();
    for i in 0..8 {
        assert!(got[i * SECTOR..(i + 1) * SECTOR]
            .iter()
            .all(|&x| x == i as u8));
    }
    assert_eq!(sync(d, f).unwrap(), 0);

    // Rename + sync_dir, list_dir, remove.
    let g_path = dir.join("g");
    d.close(f).unwrap();
    d.rename(&f_path, &g_path).unwrap();
    d.sync_dir(&dir).unwrap();
    assert_eq!(
        d.list_dir(&dir).unwrap(),
        vec![std::path::PathBuf::from("g")]
    );
    let g = d.open(&g_path, OpenOptions::default()).unwrap();
    assert_eq!(d.file_len(g).unwrap(), 8 * SECTOR as u64);
    assert!(read(d, g, 0, SECTOR).unwrap().iter().all(|&x| x == 0));
    d.close(g).unwrap();
    let h_path = dir.join("h");
    let h = d.open(&h_path, rw()).unwrap();
    d.close(h).unwrap();
    assert_eq!(d.list_dir(&dir).unwrap().len(), 2);
    // Rename onto an existing name replaces it.
    d.rename(&h_path, &g_path).unwrap();
    let g = d.open(&g_path, OpenOptions::default()).unwrap();
    assert_eq!(d.file_len(g).unwrap(), 0);
    d.close(g).unwrap();
    d.remove(&g_path).unwrap();
    d.sync_dir(&dir).unwrap();
    assert!(d.list_dir(&dir).unwrap().is_empty());
    assert_eq!(
        d.remove(&g_path).unwrap_err().kind(),
        io::ErrorKind::NotFound
    );
    assert!(d.list_dir(&root.join("nope")).is_err());

    // Space.
    let s = d.space(root).unwrap();
    assert!(s.total_bytes > 0 && s.free_bytes <= s.total_bytes, "{s:?}");
}

/// Misuse that bare backends must report as errors (under `Checked` it panics).
/// Runs in the existing directory `root`.
pub fn misuse(d: &mut dyn Disk, root: &Path) {
    let dir = root;
    let f = d.open(&dir.join("m"), rw()).unwrap();
    d.close(f).unwrap();
    // Bad FileId: submit fails with EBADF and nothing is queued; namespace calls fail.
    let bad = FileId(987_654);
    let e = d.submit(1, Op::Fdatasync { file: bad }).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EBADF));
    let e = d
        .submit(
            1,
            Op::Write {
                file: bad,
                offset: 0,
                buf: filled(1, 0),
            },
        )
        .unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EBADF));
    assert_eq!(d.in_flight(), 0);
    assert!(d.file_len(bad).is_err());
    assert!(d.set_len(bad, 0).is_err());
    assert!(d.close(bad).is_err());
    assert!(d.close(f).is_err(), "closing twice fails");
    let e = d.submit(1, Op::Fdatasync { file: f }).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EBADF), "op on a closed file");

    // A read longer than the buffer is refused at submit.
    let k = d.open(&dir.join("k"), rw()).unwrap();
    let e = d
        .submit(
            2,
            Op::Read {
                file: k,
                offset: 0,
                len: 2 * SECTOR,
                buf: AlignedBuf::with_capacity(SECTOR),
            },
        )
        .unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EINVAL));
    // Close with a completion not yet reaped is refused.
    d.submit(3, Op::Fdatasync { file: k }).unwrap();
    // (The uring backend may still have it in the kernel; either way close must fail.)
    assert_eq!(d.close(k).unwrap_err().raw_os_error(), Some(libc::EBUSY));
    while d.in_flight() > 0 {
        for c in d.reap(1) {
            assert_eq!(c.user_data, 3);
            c.result.unwrap();
        }
    }
    d.close(k).unwrap();
}

/// Submitting more than `depth` operations without reaping fails with EAGAIN.
pub fn queue_bound(d: &mut dyn Disk, root: &Path, depth: usize) {
    let f = d.open(&root.join("q"), rw()).unwrap();
    for i in 0..depth {
        d.submit(
            i as u64,
            Op::Write {
                file: f,
                offset: (i * SECTOR) as u64,
                buf: filled(1, 1),
            },
        )
        .unwrap();
    }
    let e = d.submit(99, Op::Fdatasync { file: f }).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
    let mut n = 0;
    while d.in_flight() > 0 {
        n += d.reap(1).len();
    }
    assert_eq!(n, depth);
    d.submit(99, Op::Fdatasync { file: f }).unwrap();
    assert_eq!(d.reap(1).len(), 1);
    d.close(f).unwrap();
}
