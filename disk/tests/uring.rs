//! io_uring-specific behaviour: the linked WriteDatasync's error handling (also with syncs
//! run inline), O_DIRECT, dropping a ring with operations in flight, and backend selection. Tests print
//! SKIPPED and return where io_uring is unavailable (unless BK_REQUIRE_URING is set).

mod common;

use bk_disk::{open_disk, run_one, Disk, DiskConfig, DiskKind, Op, OpenOptions, UringDisk, SECTOR};
use common::{filled, read, rw};

fn uring() -> Option<UringDisk> {
    match UringDisk::new(16) {
        Ok(d) => Some(d),
        Err(e) if std::env::var_os("BK_REQUIRE_URING").is_some() => {
            panic!("io_uring unavailable ({e}) but BK_REQUIRE_URING is set")
        }
        Err(e) => {
            eprintln!("SKIPPED: io_uring unavailable here ({e}); uring test not run");
            None
        }
    }
}

fn scratch() -> tempfile::TempDir {
    let base = std::env::var_os("BK_DISK_TEST_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    tempfile::tempdir_in(base).unwrap()
}

/// A ring with syncs run inline (`UringDisk::set_inline_sync`) or as io_uring Fsyncs.
fn uring_syncs(inline: bool) -> Option<UringDisk> {
    let mut d = uring()?;
    d.set_inline_sync(inline);
    Some(d)
}

#[test]
fn failed_linked_write_cancels_sync_and_completes_once() {
    failed_write_datasync_completes_once(false);
    failed_write_datasync_completes_once(true);
}

fn failed_write_datasync_completes_once(inline: bool) {
    let Some(mut d) = uring_syncs(inline) else {
        return;
    };
    let t = scratch();
    let p = t.path().join("ro");
    let f = d.open(&p, rw()).unwrap();
    d.close(f).unwrap();
    // Read-only: the write fails with EBADF, the linked fsync gets -ECANCELED.
    let ro = d
        .open(
            &p,
            OpenOptions {
                direct: true,
                ..Default::default()
            },
        )
        .unwrap();
    d.submit(
        11,
        Op::WriteDatasync {
            file: ro,
            offset: 0,
            buf: filled(1, 1),
        },
    )
    .unwrap();
    let mut got = Vec::new();
    while d.in_flight() > 0 {
        got.extend(d.reap(1));
    }
    assert_eq!(got.len(), 1, "one completion for the linked pair");
    assert_eq!(got[0].user_data, 11);
    assert_eq!(
        got[0].result.as_ref().unwrap_err().raw_os_error(),
        Some(libc::EBADF)
    );
    assert!(got[0].buf.is_some());
    // The ring is still usable and nothing is left over.
    assert!(d.reap(0).is_empty());
    assert_eq!(
        run_one(&mut d, Op::Fdatasync { file: ro }).result.unwrap(),
        0
    );
}

#[test]
fn files_use_o_direct_on_this_file_system() {
    let Some(mut d) = uring() else { return };
    let t = scratch();
    let f = d.open(&t.path().join("x"), rw()).unwrap();
    if d.direct_refusals() > 0 {
        eprintln!(
            "note: {} refuses O_DIRECT; buffered fallback in use",
            t.path().display()
        );
        assert_eq!(d.is_direct(f), Some(false));
    } else {
        assert_eq!(d.is_direct(f), Some(true));
    }
    // O_DIRECT I/O misaligned even for 512-byte devices is refused by the kernel,
    // and the error comes back in the completion.
    if d.is_direct(f) == Some(true) {
        let r = run_one(
            &mut d,
            Op::Write {
                file: f,
                offset: 1,
                buf: filled(1, 0),
            },
        )
        .result;
        assert_eq!(r.unwrap_err().raw_os_error(), Some(libc::EINVAL));
    }
}

#[test]
fn many_in_flight_then_drop_without_reaping() {
    let Some(mut d) = uring() else { return };
    let t = scratch();
    let f = d.open(&t.path().join("m"), rw()).unwrap();
    run_one(
        &mut d,
        Op::Fallocate {
            file: f,
            offset: 0,
            len: 1 << 20,
        },
    )
    .result
    .unwrap();
    for i in 0..15u64 {
        d.submit(
            i,
            Op::Write {
                file: f,
                offset: i * 16 * SECTOR as u64,
                buf: filled(16, i as u8),
            },
        )
        .unwrap();
    }
    d.submit(
        99,
        Op::WriteDatasync {
            file: f,
            offset: 15 * 16 * SECTOR as u64,
            buf: filled(16, 15),
        },
    )
    .unwrap();
    assert_eq!(d.in_flight(), 16);
    assert!(
        d.submit(100, Op::Fdatasync { file: f }).is_err(),
        "queue depth 16 reached"
    );
    drop(d); // must wait for the kernel before freeing the buffers
    let mut s = bk_disk::SyscallDisk::new();
    let g = s.open(&t.path().join("m"), Default::default()).unwrap();
    let got = read(&mut s, g, 0, 1 << 20).unwrap();
    for i in 0..16 {
        let chunk = &got[i * 16 * SECTOR..(i + 1) * 16 * SECTOR];
        assert!(chunk.iter().all(|&x| x == i as u8), "chunk {i}");
    }
}

#[test]
fn open_disk_selects_backends() {
    let cfg = DiskConfig {
        kind: DiskKind::Syscall,
        ..Default::default()
    };
    let o = open_disk(&cfg).unwrap();
    assert_eq!(o.kind, DiskKind::Syscall);
    assert!(o.uring_error.is_none());

    let o = open_disk(&DiskConfig::default()).unwrap();
    match uring() {
        Some(_) => {
            assert_eq!(o.kind, DiskKind::Uring);
            assert!(o.uring_error.is_none());
            let o = open_disk(&DiskConfig {
                kind: DiskKind::Uring,
                queue_depth: 8,
                inline_sync: true,
            })
            .unwrap();
            assert_eq!(o.kind, DiskKind::Uring);
        }
        None => {
            assert_eq!(o.kind, DiskKind::Syscall, "Auto falls back");
            assert!(o.uring_error.is_some());
            assert!(open_disk(&DiskConfig {
                kind: DiskKind::Uring,
                queue_depth: 8,
                inline_sync: false,
            })
            .is_err());
        }
    }
    assert_eq!("io_uring".parse::<DiskKind>().unwrap(), DiskKind::Uring);
    assert_eq!("SYSCALL".parse::<DiskKind>().unwrap(), DiskKind::Syscall);
    assert_eq!("auto".parse::<DiskKind>().unwrap(), DiskKind::Auto);
    assert!("mmap".parse::<DiskKind>().is_err());
}

/// A `WriteDatasync` above `WRITE_CHUNK` is written as concurrent chunks with the
/// fsync after them: still one completion with the whole byte count, data in place.
#[test]
fn chunked_write_datasync_completes_once_with_all_bytes() {
    chunked_write_datasync(false);
    chunked_write_datasync(true);
}

fn chunked_write_datasync(inline: bool) {
    use bk_disk::uring::WRITE_CHUNK;
    let Some(mut d) = uring_syncs(inline) else {
        return;
    };
    let t = scratch();
    let f = d.open(&t.path().join("big"), rw()).unwrap();
    // Not a multiple of the chunk: the last chunk is shorter.
    let sectors = (5 * WRITE_CHUNK) / SECTOR + 3;
    let buf = common::pattern(sectors, 7);
    let want = buf.as_slice().to_vec();
    d.submit(
        21,
        Op::WriteDatasync {
            file: f,
            offset: SECTOR as u64,
            buf,
        },
    )
    .unwrap();
    let mut got = Vec::new();
    while d.in_flight() > 0 {
        got.extend(d.reap(1));
    }
    assert_eq!(got.len(), 1, "one completion for all chunks and the sync");
    assert_eq!(got[0].user_data, 21);
    assert_eq!(*got[0].result.as_ref().unwrap(), sectors * SECTOR);
    assert!(got[0].buf.is_some());
    assert_eq!(
        read(&mut d, f, SECTOR as u64, sectors * SECTOR).unwrap(),
        want
    );
    assert!(d.reap(0).is_empty());
}

/// A chunked `WriteDatasync` whose chunks fail completes once with their error
/// (no sync is issued), and the ring stays usable.
#[test]
fn failed_chunked_write_completes_once_with_the_error() {
    failed_chunked_write(false);
    failed_chunked_write(true);
}

fn failed_chunked_write(inline: bool) {
    use bk_disk::uring::WRITE_CHUNK;
    let Some(mut d) = uring_syncs(inline) else {
        return;
    };
    let t = scratch();
    let p = t.path().join("ro");
    let f = d.open(&p, rw()).unwrap();
    d.close(f).unwrap();
    let ro = d
        .open(
            &p,
            OpenOptions {
                direct: true,
                ..Default::default()
            },
        )
        .unwrap();
    let sectors = 3 * WRITE_CHUNK / SECTOR;
    d.submit(
        12,
        Op::WriteDatasync {
            file: ro,
            offset: 0,
            buf: filled(sectors, 1),
        },
    )
    .unwrap();
    let mut got = Vec::new();
    while d.in_flight() > 0 {
        got.extend(d.reap(1));
    }
    assert_eq!(got.len(), 1, "one completion for the chunked write");
    assert_eq!(got[0].user_data, 12);
    assert_eq!(
        got[0].result.as_ref().unwrap_err().raw_os_error(),
        Some(libc::EBADF)
    );
    assert!(got[0].buf.is_some());
    assert!(d.reap(0).is_empty());
    run_one(&mut d, Op::Fdatasync { file: ro }).result.unwrap();
}
