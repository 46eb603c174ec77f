//! One test per rule `Checked` asserts: each misuse must panic with its message,
//! and correct use must not.

mod common;

use bk_disk::{AlignedBuf, Checked, Completion, Disk, FileId, Op, SimDisk, SimFs, SECTOR};
use common::{filled, rw};
use std::io;
use std::path::{Path, PathBuf};

fn disk() -> (Checked<SimDisk>, FileId) {
    let fs = SimFs::new(1);
    let mut d = Checked::new(fs.disk());
    let f = d.open(Path::new("/f"), rw()).unwrap();
    (d, f)
}

fn drain(d: &mut dyn Disk) {
    while d.in_flight() > 0 {
        d.reap(1);
    }
}

#[test]
fn correct_use_does_not_panic() {
    let (mut d, f) = disk();
    d.submit(
        1,
        Op::Write {
            file: f,
            offset: 0,
            buf: filled(2, 1),
        },
    )
    .unwrap();
    d.submit(
        2,
        Op::Write {
            file: f,
            offset: 2 * SECTOR as u64,
            buf: filled(1, 1),
        },
    )
    .unwrap();
    d.submit(
        3,
        Op::Read {
            file: f,
            offset: 3 * SECTOR as u64,
            len: SECTOR,
            buf: AlignedBuf::with_capacity(SECTOR),
        },
    )
    .unwrap();
    d.submit(4, Op::Fdatasync { file: f }).unwrap();
    drain(&mut d);
    d.submit(
        1,
        Op::Read {
            file: f,
            offset: 0,
            len: SECTOR,
            buf: AlignedBuf::with_capacity(SECTOR),
        },
    )
    .unwrap();
    drain(&mut d);
    d.close(f).unwrap();
}

#[test]
#[should_panic(expected = "write offset 512")]
fn unaligned_write_offset() {
    let (mut d, f) = disk();
    let _ = d.submit(
        1,
        Op::Write {
            file: f,
            offset: 512,
            buf: filled(1, 0),
        },
    );
}

#[test]
#[should_panic(expected = "write length 100")]
fn unaligned_write_length() {
    let (mut d, f) = disk();
    let mut b = AlignedBuf::with_capacity(SECTOR);
    b.set_len(100);
    let _ = d.submit(
        1,
        Op::WriteDatasync {
            file: f,
            offset: 0,
            buf: b,
        },
    );
}

#[test]
#[should_panic(expected = "read offset 1")]
fn unaligned_read_offset() {
    let (mut d, f) = disk();
    let _ = d.submit(
        1,
        Op::Read {
            file: f,
            offset: 1,
            len: SECTOR,
            buf: AlignedBuf::with_capacity(SECTOR),
        },
    );
}

#[test]
#[should_panic(expected = "read length 10 of")]
fn unaligned_read_length() {
    let (mut d, f) = disk();
    let _ = d.submit(
        1,
        Op::Read {
            file: f,
            offset: 0,
            len: 10,
            buf: AlignedBuf::with_capacity(SECTOR),
        },
    );
}

#[test]
#[should_panic(expected = "exceeds the buffer capacity")]
fn read_longer_than_buffer() {
    let (mut d, f) = disk();
    let _ = d.submit(
        1,
        Op::Read {
            file: f,
            offset: 0,
            len: 2 * SECTOR,
            buf: AlignedBuf::with_capacity(SECTOR),
        },
    );
}

#[test]
#[should_panic(expected = "overlaps in-flight write")]
fn overlapping_in_flight_writes() {
    let (mut d, f) = disk();
    d.submit(
        1,
        Op::Write {
            file: f,
            offset: 0,
            buf: filled(4, 0),
        },
    )
    .unwrap();
    let _ = d.submit(
        2,
        Op::Write {
            file: f,
            offset: 3 * SECTOR as u64,
            buf: filled(2, 0),
        },
    );
}

#[test]
#[should_panic(expected = "read of FileId(0) bytes 0..4096 overlaps in-flight write")]
fn read_overlapping_in_flight_write() {
    let (mut d, f) = disk();
    d.submit(
        1,
        Op::Write {
            file: f,
            offset: 0,
            buf: filled(1, 0),
        },
    )
    .unwrap();
    let _ = d.submit(
        2,
        Op::Read {
            file: f,
            offset: 0,
            len: SECTOR,
            buf: AlignedBuf::with_capacity(SECTOR),
        },
    );
}

#[test]
fn adjacent_writes_and_other_files_do_not_overlap() {
    let (mut d, f) = disk();
    let g = d.open(Path::new("/g"), rw()).unwrap();
    d.submit(
        1,
        Op::Write {
            file: f,
            offset: 0,
            buf: filled(1, 0),
        },
    )
    .unwrap();
    d.submit(
        2,
        Op::Write {
            file: f,
            offset: SECTOR as u64,
            buf: filled(1, 0),
        },
    )
    .unwrap();
    d.submit(
        3,
        Op::Write {
            file: g,
            offset: 0,
            buf: filled(1, 0),
        },
    )
    .unwrap();
    drain(&mut d);
}

#[test]
#[should_panic(expected = "submit on closed FileId(0)")]
fn op_on_closed_file() {
    let (mut d, f) = disk();
    d.close(f).unwrap();
    let _ = d.submit(1, Op::Fdatasync { file: f });
}

#[test]
#[should_panic(expected = "file_len on unknown FileId(77)")]
fn call_on_unknown_file() {
    let (mut d, _f) = disk();
    let _ = d.file_len(FileId(77));
}

#[test]
#[should_panic(expected = "submit on unknown FileId(77)")]
fn op_on_unknown_file() {
    let (mut d, _f) = disk();
    let _ = d.submit(1, Op::Fdatasync { file: FileId(77) });
}

#[test]
#[should_panic(expected = "close of FileId(0) with 1 operation(s) in flight")]
fn close_with_ops_in_flight() {
    let (mut d, f) = disk();
    d.submit(1, Op::Fdatasync { file: f }).unwrap();
    let _ = d.close(f);
}

#[test]
#[should_panic(expected = "user_data 5 is already in flight")]
fn duplicate_user_data_in_flight() {
    let (mut d, f) = disk();
    d.submit(5, Op::Fdatasync { file: f }).unwrap();
    let _ = d.submit(5, Op::Fdatasync { file: f });
}

/// A broken backend that invents completions, to check the completion accounting.
struct Liar(SimDisk);

impl Disk for Liar {
    fn open(&mut self, p: &Path, o: bk_disk::OpenOptions) -> io::Result<FileId> {
        self.0.open(p, o)
    }
    fn close(&mut self, f: FileId) -> io::Result<()> {
        self.0.close(f)
    }
    fn file_len(&mut self, f: FileId) -> io::Result<u64> {
        self.0.file_len(f)
    }
    fn set_len(&mut self, f: FileId, l: u64) -> io::Result<()> {
        self.0.set_len(f, l)
    }
    fn remove(&mut self, p: &Path) -> io::Result<()> {
        self.0.remove(p)
    }
    fn rename(&mut self, a: &Path, b: &Path) -> io::Result<()> {
        self.0.rename(a, b)
    }
    fn sync_dir(&mut self, p: &Path) -> io::Result<()> {
        self.0.sync_dir(p)
    }
    fn create_dir_all(&mut self, p: &Path) -> io::Result<()> {
        self.0.create_dir_all(p)
    }
    fn list_dir(&mut self, p: &Path) -> io::Result<Vec<PathBuf>> {
        self.0.list_dir(p)
    }
    fn space(&mut self, p: &Path) -> io::Result<bk_disk::SpaceInfo> {
        self.0.space(p)
    }
    fn submit(&mut self, u: u64, op: Op) -> io::Result<()> {
        self.0.submit(u, op)
    }
    fn reap(&mut self, min: usize) -> Vec<Completion> {
        let mut v = self.0.reap(min);
        v.push(Completion {
            user_data: 4242,
            result: Ok(0),
            buf: None,
        });
        v
    }
    fn in_flight(&self) -> usize {
        self.0.in_flight()
    }
}

#[test]
#[should_panic(expected = "user_data 4242 that was never submitted")]
fn completion_never_submitted() {
    let fs = SimFs::new(1);
    let mut d = Checked::new(Liar(fs.disk()));
    let f = d.open(Path::new("/f"), rw()).unwrap();
    d.submit(1, Op::Fdatasync { file: f }).unwrap();
    let _ = d.reap(1);
}
