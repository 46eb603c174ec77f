//! A short write must be an error for the caller, never a short success. Forced with
//! RLIMIT_FSIZE (the kernel then writes only up to the limit); that limit is
//! process-wide, so this is its own test binary with a single test.

mod common;

use bk_disk::{run_one, Disk, Op, SyscallDisk, UringDisk, SECTOR};
use common::{filled, rw};

/// Lifts RLIMIT_FSIZE again when dropped (rlim_max stayed infinite, so this is allowed).
struct RestoreFsizeLimit;

impl Drop for RestoreFsizeLimit {
    fn drop(&mut self) {
        let rl = libc::rlimit {
            rlim_cur: libc::RLIM_INFINITY,
            rlim_max: libc::RLIM_INFINITY,
        };
        // SAFETY: plain libc call with a valid argument.
        unsafe {
            libc::setrlimit(libc::RLIMIT_FSIZE, &rl);
        }
    }
}

#[test]
fn short_write_is_an_error_on_every_real_backend() {
    let base = std::env::var_os("BK_DISK_TEST_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let t = tempfile::tempdir_in(base).unwrap();
    let limit = 2 * SECTOR as u64;
    // Restored on every exit path: the limit also applies to the test harness's own
    // stdout, which CI redirects into a file far larger than two sectors.
    let _restore = RestoreFsizeLimit;
    // SAFETY: plain libc calls with valid arguments; SIGXFSZ is ignored so the write
    // returns short / EFBIG instead of killing the process.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
        let rl = libc::rlimit {
            rlim_cur: limit,
            rlim_max: libc::RLIM_INFINITY,
        };
        assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &rl), 0);
    }
    let mut s = SyscallDisk::new();
    let f = s.open(&t.path().join("s"), rw()).unwrap();
    let r = run_one(
        &mut s,
        Op::WriteDatasync {
            file: f,
            offset: 0,
            buf: filled(4, 1),
        },
    )
    .result;
    assert!(r.is_err(), "syscall: {r:?}");

    match UringDisk::new(8) {
        Ok(mut u) => {
            let f = u.open(&t.path().join("u"), rw()).unwrap();
            for op in [
                Op::WriteDatasync {
                    file: f,
                    offset: 0,
                    buf: filled(4, 1),
                },
                Op::Write {
                    file: f,
                    offset: 0,
                    buf: filled(4, 1),
                },
                // Chunked (above WRITE_CHUNK): the first chunk is short, the others
                // fail with EFBIG; one completion, EIO or that errno, no sync.
                Op::WriteDatasync {
                    file: f,
                    offset: 0,
                    buf: filled(3 * bk_disk::uring::WRITE_CHUNK / SECTOR, 1),
                },
            ] {
                u.submit(1, op).unwrap();
                let mut got = Vec::new();
                while u.in_flight() > 0 {
                    got.extend(u.reap(1));
                }
                assert_eq!(got.len(), 1);
                let e = got[0].result.as_ref().unwrap_err();
                assert!(
                    matches!(e.raw_os_error(), Some(libc::EIO) | Some(libc::EFBIG)),
                    "uring short write: {e}"
                );
            }
            assert_eq!(
                u.file_len(f).unwrap(),
                limit,
                "the kernel wrote up to the limit"
            );
        }
        Err(e) if std::env::var_os("BK_REQUIRE_URING").is_some() => {
            panic!("io_uring unavailable: {e}")
        }
        Err(e) => eprintln!("SKIPPED: io_uring unavailable ({e}); uring half not run"),
    }
}
