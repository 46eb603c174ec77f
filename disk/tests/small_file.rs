//! Tests of `small_file` (the durable replace and the bounded whole-file read) on the
//! simulated disk: a crash before, between or after any step of `replace_file` leaves
//! the old or the new content under the name, never a mix; a failed fdatasync or
//! directory sync is an error; a leftover temp file is replaced; the file's length is
//! exact. And the read's errors: missing, too large, short.

use bk_disk::{
    read_small_file, read_small_text, replace_file, Completion, Disk, Faults, FileId, Op,
    OpenOptions, ReplaceStep, SimDisk, SimFs, SpaceInfo, TooLarge,
};
use std::io;
use std::path::{Path, PathBuf};

fn seeds(default: u64) -> u64 {
    std::env::var("BK_SIM_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

const DIR: &str = "/d";
const FILE: &str = "/d/state";

/// A `Disk` over a `SimDisk` that crashes the simulated file system just before its
/// `crash_at`-th call (0-based; every method but `in_flight` counts), so the call and
/// every later one fail (ESTALE). With `short_reads`, read completions lose their
/// last byte.
struct Crashing {
    inner: SimDisk,
    fs: SimFs,
    calls: usize,
    crash_at: usize,
    short_reads: bool,
}

impl Crashing {
    fn new(fs: &SimFs, crash_at: usize) -> Self {
        Crashing {
            inner: fs.disk(),
            fs: fs.clone(),
            calls: 0,
            crash_at,
            short_reads: false,
        }
    }

    fn step(&mut self) {
        if self.calls == self.crash_at {
            self.fs.crash();
        }
        self.calls += 1;
    }
}

impl Disk for Crashing {
    fn open(&mut self, path: &Path, opts: OpenOptions) -> io::Result<FileId> {
        self.step();
        self.inner.open(path, opts)
    }
    fn close(&mut self, file: FileId) -> io::Result<()> {
        self.step();
        self.inner.close(file)
    }
    fn file_len(&mut self, file: FileId) -> io::Result<u64> {
        self.step();
        self.inner.file_len(file)
    }
    fn set_len(&mut self, file: FileId, len: u64) -> io::Result<()> {
        self.step();
        self.inner.set_len(file, len)
    }
    fn remove(&mut self, path: &Path) -> io::Result<()> {
        self.step();
        self.inner.remove(path)
    }
    fn rename(&mut self, from: &Path, to: &Path) -> io::Result<()> {
        self.step();
        self.inner.rename(from, to)
    }
    fn sync_dir(&mut self, dir: &Path) -> io::Result<()> {
        self.step();
        self.inner.sync_dir(dir)
    }
    fn create_dir_all(&mut self, dir: &Path) -> io::Result<()> {
        self.step();
        self.inner.create_dir_all(dir)
    }
    fn list_dir(&mut self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        self.step();
        self.inner.list_dir(dir)
    }
    fn space(&mut self, dir: &Path) -> io::Result<SpaceInfo> {
        self.step();
        self.inner.space(dir)
    }
    fn submit(&mut self, user_data: u64, op: Op) -> io::Result<()> {
        self.step();
        self.inner.submit(user_data, op)
    }
    fn reap(&mut self, min: usize) -> Vec<Completion> {
        self.step();
        let mut out = self.inner.reap(min);
        if self.short_reads {
            for c in &mut out {
                if let (Ok(n), Some(b)) = (&mut c.result, &mut c.buf) {
                    if *n > 0 {
                        *n -= 1;
                        b.set_len(*n);
                    }
                }
            }
        }
        out
    }
    fn in_flight(&self) -> usize {
        self.inner.in_flight()
    }
}

/// A file system with `/d` and, if given, `/d/state` durably holding `old`.
fn setup(seed: u64, old: Option<&[u8]>) -> SimFs {
    let fs = SimFs::new(seed);
    let mut d = fs.disk();
    d.create_dir_all(Path::new(DIR)).unwrap();
    if let Some(old) = old {
        replace_file(&mut d, Path::new(FILE), old, false).unwrap();
    }
    fs
}

fn pattern(len: usize, salt: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(salt))
        .collect()
}

/// What a reader sees under the name after a crash (None: no file).
fn after_crash(fs: &SimFs) -> Option<Vec<u8>> {
    fs.crash();
    let mut d = fs.disk();
    match read_small_file(&mut d, Path::new(FILE), false, 1 << 20) {
        Ok(b) => Some(b),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => panic!("reading after crash: {e}"),
    }
}

/// Crashes at every call of `replace_file`, for several seeds (each seed decides
/// which unsynced mutations survive), and checks old-or-new; then that the next
/// replace after the crash works and is durable.
fn crash_at_every_step(old: Option<&[u8]>, new: &[u8], direct: bool) {
    let mut steps_seen = 0;
    for seed in 0..seeds(16) {
        let mut k = 0;
        loop {
            let fs = setup(seed, old);
            let mut d = Crashing::new(&fs, k);
            let r = replace_file(&mut d, Path::new(FILE), new, direct);
            let completed = d.calls <= k;
            if completed {
                r.unwrap_or_else(|e| panic!("seed {seed}: no crash, yet {e}"));
            } else {
                assert!(
                    r.is_err(),
                    "seed {seed}, crash at call {k}: Ok after a crash"
                );
            }
            let seen = after_crash(&fs);
            if completed {
                assert_eq!(
                    seen.as_deref(),
                    Some(new),
                    "seed {seed}: Ok but not durable"
                );
            } else {
                assert!(
                    seen.as_deref() == old || seen.as_deref() == Some(new),
                    "seed {seed}, crash at call {k}: a mix ({:?} bytes)",
                    seen.map(|s| s.len())
                );
            }
            // Whatever the crash left (a temp file included), the next replace works.
            let mut d = fs.disk();
            let again = pattern(new.len() + 7, 99);
            replace_file(&mut d, Path::new(FILE), &again, direct)
                .unwrap_or_else(|e| panic!("seed {seed}, crash at call {k}: retry {e}"));
            assert_eq!(after_crash(&fs).as_deref(), Some(&again[..]));
            if completed {
                steps_seen = steps_seen.max(k);
                break;
            }
            k += 1;
        }
    }
    // remove, open, submit+reap (write), [set_len, submit+reap (sync)], close,
    // rename, sync_dir: the loop really went through every step.
    assert!(steps_seen >= 7, "only {steps_seen} calls");
}

#[test]
fn crash_at_any_step_leaves_old_or_new_unaligned() {
    crash_at_every_step(Some(&pattern(5000, 1)), &pattern(100, 2), false);
}

#[test]
fn crash_at_any_step_leaves_old_or_new_aligned() {
    crash_at_every_step(Some(&pattern(4096, 1)), &pattern(8192, 2), true);
}

#[test]
fn crash_at_any_step_of_a_first_write_leaves_nothing_or_new() {
    crash_at_every_step(None, &pattern(300, 3), false);
}

#[test]
fn crash_at_any_step_of_an_empty_replacement() {
    crash_at_every_step(Some(&pattern(10, 1)), &[], false);
}

#[test]
fn length_is_exact_and_temp_file_is_gone() {
    let fs = setup(1, None);
    let mut d = fs.disk();
    let data = pattern(4097, 5);
    replace_file(&mut d, Path::new(FILE), &data, true).unwrap();
    assert_eq!(fs.durable_contents(Path::new(FILE)).unwrap(), data);
    assert_eq!(
        fs.durable_list_dir(Path::new(DIR)).unwrap(),
        vec![PathBuf::from("state")]
    );
}

#[test]
fn a_leftover_temp_file_is_replaced() {
    let fs = setup(2, Some(b"old"));
    let mut d = fs.disk();
    // A bigger temp file, as an interrupted earlier attempt leaves it.
    replace_file(&mut d, Path::new("/d/state.tmp"), &pattern(9000, 7), false).unwrap();
    replace_file(&mut d, Path::new(FILE), b"new", false).unwrap();
    assert_eq!(after_crash(&fs).as_deref(), Some(&b"new"[..]));
    let mut d = fs.disk();
    assert_eq!(
        d.list_dir(Path::new(DIR)).unwrap(),
        vec![PathBuf::from("state")]
    );
}

/// A failed fdatasync is an error, nothing is renamed, the temp file is removed, and
/// the old content stays (before and after a crash).
fn failed_sync(len: usize, want_step: ReplaceStep) {
    let fs = setup(3, Some(b"old content"));
    fs.set_faults(Faults {
        fail_sync_nth: Some(1),
        ..Faults::default()
    });
    let mut d = fs.disk();
    let e = replace_file(&mut d, Path::new(FILE), &pattern(len, 4), false).unwrap_err();
    assert_eq!(e.step, want_step, "{e}");
    assert_eq!(e.source.raw_os_error(), Some(libc::EIO), "{e}");
    assert_eq!(
        d.list_dir(Path::new(DIR)).unwrap(),
        vec![PathBuf::from("state")]
    );
    assert_eq!(
        read_small_file(&mut d, Path::new(FILE), false, 1 << 20).unwrap(),
        b"old content"
    );
    assert_eq!(after_crash(&fs).as_deref(), Some(&b"old content"[..]));
}

#[test]
fn a_failed_fdatasync_is_an_error_unaligned() {
    failed_sync(100, ReplaceStep::Datasync);
}

#[test]
fn a_failed_fdatasync_is_an_error_aligned() {
    // Sector-aligned data is written and synced by one linked WriteDatasync.
    failed_sync(4096, ReplaceStep::Write);
}

#[test]
fn a_failed_directory_sync_is_an_error() {
    let fs = setup(4, Some(b"old"));
    fs.set_faults(Faults {
        fail_sync_dir_nth: Some(1),
        ..Faults::default()
    });
    let mut d = fs.disk();
    let e = replace_file(&mut d, Path::new(FILE), b"new", false).unwrap_err();
    assert_eq!(e.step, ReplaceStep::SyncDir, "{e}");
    assert_eq!(e.path, PathBuf::from(DIR));
    // The rename was not made durable: a crash brings the old content back.
    assert_eq!(after_crash(&fs).as_deref(), Some(&b"old"[..]));
}

#[test]
fn a_failed_write_is_an_error_and_leaves_the_old_content() {
    let fs = setup(5, Some(b"old"));
    fs.set_faults(Faults {
        enospc_write_nth: Some(1),
        ..Faults::default()
    });
    let mut d = fs.disk();
    let e = replace_file(&mut d, Path::new(FILE), b"new", false).unwrap_err();
    assert_eq!(e.step, ReplaceStep::Write, "{e}");
    assert_eq!(
        e.source.raw_os_error(),
        Some(libc::ENOSPC),
        "ENOSPC kept: {e}"
    );
    assert_eq!(
        d.list_dir(Path::new(DIR)).unwrap(),
        vec![PathBuf::from("state")]
    );
    assert_eq!(after_crash(&fs).as_deref(), Some(&b"old"[..]));
}

#[test]
fn read_reports_missing_too_large_and_short() {
    let fs = setup(6, Some(&pattern(5000, 8)));
    let mut d = fs.disk();
    let e = read_small_file(&mut d, Path::new("/d/none"), false, 100).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::NotFound);
    let e = read_small_file(&mut d, Path::new(FILE), false, 4999).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::FileTooLarge);
    assert_eq!(
        TooLarge::of(&e),
        Some(TooLarge {
            len: 5000,
            max: 4999
        })
    );
    assert_eq!(
        read_small_file(&mut d, Path::new(FILE), true, 5000).unwrap(),
        pattern(5000, 8)
    );
    let mut short = Crashing::new(&fs, usize::MAX);
    short.short_reads = true;
    let e = read_small_file(&mut short, Path::new(FILE), false, 1 << 20).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof, "{e}");
    // Every path closes the file: the handle has nothing open or in flight.
    assert_eq!(short.in_flight(), 0);
    replace_file(&mut d, Path::new(FILE), &[], false).unwrap();
    assert_eq!(
        read_small_file(&mut d, Path::new(FILE), false, 0).unwrap(),
        Vec::<u8>::new()
    );
}

#[test]
fn read_small_text_reads_the_real_file_system() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bk.conf");
    let mut disk = bk_disk::SyscallDisk::new();
    replace_file(&mut disk, &path, "bookiePort=3181\n".as_bytes(), false).unwrap();
    assert_eq!(
        read_small_text(&path, 1 << 20).unwrap(),
        "bookiePort=3181\n"
    );
    let e = read_small_text(&path, 4).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::FileTooLarge);
    replace_file(&mut disk, &path, &[0xff, 0xfe], false).unwrap();
    let e = read_small_text(&path, 1 << 20).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::InvalidData);
    assert_eq!(
        disk.list_dir(dir.path()).unwrap(),
        vec![PathBuf::from("bk.conf")],
        "no temp file left"
    );
}
