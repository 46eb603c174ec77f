//! `open_disk(Auto)` must fall back to the syscall backend when io_uring cannot be
//! set up. Forced here by exhausting file descriptors (RLIMIT_NOFILE), which makes
//! io_uring_setup fail (EMFILE) the way ENOSYS/EPERM would elsewhere. The limit is
//! process-wide, so this is its own test binary with a single test.

use bk_disk::{open_disk, DiskConfig, DiskKind};

#[test]
fn auto_falls_back_to_syscall_when_uring_setup_fails() {
    let mut old = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain libc calls with valid pointers. A soft limit of 0 makes every new
    // descriptor fail with EMFILE until it is restored below.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut old), 0);
        let low = libc::rlimit {
            rlim_cur: 0,
            rlim_max: old.rlim_max,
        };
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &low), 0);
    }
    let auto = open_disk(&DiskConfig::default());
    let forced = open_disk(&DiskConfig {
        kind: DiskKind::Uring,
        ..Default::default()
    });
    // SAFETY: as above; restores the original limit.
    unsafe {
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &old), 0);
    }
    let auto = auto.unwrap();
    assert_eq!(auto.kind, DiskKind::Syscall);
    let why = auto
        .uring_error
        .expect("the reason for the fallback is kept");
    assert_eq!(why.raw_os_error(), Some(libc::EMFILE), "{why}");
    assert!(
        forced.is_err(),
        "an explicit Uring request does not fall back"
    );
}
