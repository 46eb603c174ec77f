//! Tests of the chaos layer over the syscall backend on a temp dir (wrapped in `Checked`,
//! which asserts the layer keeps the `Disk` contract: buffers handed back, read counts set,
//! one completion per operation).

use super::*;
use crate::{
    is_no_space, run_one, AlignedBuf, Checked, Disk, Op, OpenOptions, SyscallDisk, SECTOR,
};
use std::path::{Path, PathBuf};
use std::sync::Arc;

struct Fixture {
    _tmp: tempfile::TempDir,
    journal: PathBuf,
    ledgers: PathBuf,
    chaos: Arc<Chaos>,
    disk: Checked<ChaosDisk>,
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let journal = tmp.path().join("journal/current");
    let ledgers = tmp.path().join("ledgers/current");
    std::fs::create_dir_all(&journal).unwrap();
    std::fs::create_dir_all(&ledgers).unwrap();
    let chaos = Arc::new(Chaos::new(vec![
        (DirKind::Journal, journal.clone()),
        (DirKind::Ledgers, ledgers.clone()),
    ]));
    let disk = Checked::new(ChaosDisk::new(Box::new(SyscallDisk::new()), chaos.clone()));
    Fixture {
        _tmp: tmp,
        journal,
        ledgers,
        chaos,
        disk,
    }
}

fn spec(json: &str) -> FaultSpec {
    FaultSpec::from_json(json.as_bytes()).unwrap()
}

fn rw() -> OpenOptions {
    OpenOptions {
        create: true,
        write: true,
        ..Default::default()
    }
}

fn filled(len: usize, byte: u8) -> AlignedBuf {
    let mut b = AlignedBuf::with_capacity(len);
    b.extend_from_slice(&vec![byte; len]);
    b
}

fn write(
    disk: &mut dyn Disk,
    file: crate::FileId,
    offset: u64,
    buf: AlignedBuf,
) -> std::io::Result<usize> {
    run_one(disk, Op::Write { file, offset, buf }).result
}

fn read(disk: &mut dyn Disk, file: crate::FileId, len: usize) -> (std::io::Result<usize>, Vec<u8>) {
    let c = run_one(
        disk,
        Op::Read {
            file,
            offset: 0,
            len,
            buf: AlignedBuf::with_capacity(len),
        },
    );
    (c.result, c.buf.unwrap().as_slice().to_vec())
}

fn new_file(f: &mut Fixture, dir: &Path, name: &str, byte: u8) -> crate::FileId {
    let id = f.disk.open(&dir.join(name), rw()).unwrap();
    write(&mut f.disk, id, 0, filled(2 * SECTOR, byte)).unwrap();
    id
}

#[test]
fn eio_on_ledger_reads_is_scoped_to_ledger_files_and_cleared() {
    let mut f = fixture();
    let (jdir, ldir) = (f.journal.clone(), f.ledgers.clone());
    let ledger = new_file(&mut f, &ldir, "0.log", 7);
    let journal = new_file(&mut f, &jdir, "1.jseg", 8);
    f.chaos
        .add(spec(r#"{"dir": "ledgers", "op": "read", "fault": "eio"}"#))
        .unwrap();

    let (r, _) = read(&mut f.disk, ledger, 2 * SECTOR);
    assert_eq!(r.unwrap_err().raw_os_error(), Some(libc::EIO));
    let (r, bytes) = read(&mut f.disk, journal, 2 * SECTOR);
    assert_eq!((r.unwrap(), bytes[0]), (2 * SECTOR, 8));
    // Writes to the ledger file are not in scope.
    write(&mut f.disk, ledger, 0, filled(SECTOR, 9)).unwrap();
    assert_eq!(f.chaos.injected(FaultKind::Eio), 1);
    assert_eq!(f.chaos.list()[0].hits, 1);

    assert_eq!(f.chaos.clear(), 1);
    let (r, bytes) = read(&mut f.disk, ledger, 2 * SECTOR);
    assert_eq!((r.unwrap(), bytes[0], bytes[SECTOR]), (2 * SECTOR, 9, 7));
    assert_eq!(f.chaos.injected(FaultKind::Eio), 1);
}

#[test]
fn every_nth_read_fails_and_file_glob_selects() {
    let mut f = fixture();
    let ldir = f.ledgers.clone();
    let a = new_file(&mut f, &ldir, "0.log", 1);
    let b = new_file(&mut f, &ldir, "ledgers.state", 2);
    f.chaos
        .add(spec(
            r#"{"file": "*.log", "op": "read", "fault": "eio", "trigger": {"every": 2}}"#,
        ))
        .unwrap();
    let results: Vec<bool> = (0..4)
        .map(|_| read(&mut f.disk, a, SECTOR).0.is_ok())
        .collect();
    assert_eq!(results, [true, false, true, false]);
    assert!(read(&mut f.disk, b, SECTOR).0.is_ok());
    assert_eq!(f.chaos.list()[0].matched, 4);
}

#[test]
fn a_bit_flip_changes_one_bit_of_the_read_and_not_the_file() {
    let mut f = fixture();
    let ldir = f.ledgers.clone();
    let file = new_file(&mut f, &ldir, "0.log", 0x5a);
    f.chaos
        .add(spec(
            r#"{"fault": "bit_flip", "trigger": "once", "seed": 3}"#,
        ))
        .unwrap();
    let (r, flipped) = read(&mut f.disk, file, 2 * SECTOR);
    assert_eq!(r.unwrap(), 2 * SECTOR);
    let differing: u32 = flipped.iter().map(|b| (b ^ 0x5a).count_ones()).sum();
    assert_eq!(differing, 1);
    let (_, clean) = read(&mut f.disk, file, 2 * SECTOR);
    assert!(
        clean.iter().all(|b| *b == 0x5a),
        "the stored bytes are intact"
    );
    assert_eq!(f.chaos.injected(FaultKind::BitFlip), 1);
}

#[test]
fn a_torn_write_stores_only_its_prefix_and_reports_eio() {
    let mut f = fixture();
    let ldir = f.ledgers.clone();
    let file = new_file(&mut f, &ldir, "0.log", 1);
    f.chaos
        .add(spec(
            r#"{"fault": {"torn_write": {"keep_bytes": 5000}}, "trigger": "once"}"#,
        ))
        .unwrap();
    let c = run_one(
        &mut f.disk,
        Op::WriteDatasync {
            file,
            offset: 0,
            buf: filled(3 * SECTOR, 2),
        },
    );
    assert_eq!(c.result.unwrap_err().raw_os_error(), Some(libc::EIO));
    assert_eq!(
        c.buf.unwrap().len(),
        3 * SECTOR,
        "the caller's buffer comes back"
    );
    let (_, bytes) = read(&mut f.disk, file, 3 * SECTOR);
    // 5000 rounds down to one sector: the first sector is new, the second old, no third.
    assert_eq!(bytes.len(), 2 * SECTOR);
    assert!(bytes[..SECTOR].iter().all(|b| *b == 2));
    assert!(bytes[SECTOR..].iter().all(|b| *b == 1));
    assert_eq!(f.chaos.injected(FaultKind::TornWrite), 1);
}

#[test]
fn a_misdirected_write_reports_success_and_lands_elsewhere_in_the_file() {
    let mut f = fixture();
    let ldir = f.ledgers.clone();
    let file = new_file(&mut f, &ldir, "0.log", 1);
    write(&mut f.disk, file, 2 * SECTOR as u64, filled(2 * SECTOR, 1)).unwrap();
    f.chaos
        .add(spec(
            r#"{"dir": "ledgers", "fault": {"misdirected_write": {"sectors": 2}}, "trigger": "once"}"#,
        ))
        .unwrap();
    // Asked at sector 1, lands at sector 3; the sync half of the linked write still runs.
    let c = run_one(
        &mut f.disk,
        Op::WriteDatasync {
            file,
            offset: SECTOR as u64,
            buf: filled(SECTOR, 2),
        },
    );
    assert_eq!(c.result.unwrap(), SECTOR);
    let (_, bytes) = read(&mut f.disk, file, 4 * SECTOR);
    let sector = |i: usize| bytes[i * SECTOR];
    assert_eq!([sector(0), sector(1), sector(2), sector(3)], [1, 1, 1, 2]);
    assert_eq!(f.chaos.injected(FaultKind::MisdirectedWrite), 1);
    // Once: the next write lands where it is asked.
    write(&mut f.disk, file, SECTOR as u64, filled(SECTOR, 3)).unwrap();
    let (_, bytes) = read(&mut f.disk, file, 2 * SECTOR);
    assert!(bytes[SECTOR..].iter().all(|b| *b == 3));
    // A plain write past the end grows the file where it lands.
    f.chaos
        .add(spec(
            r#"{"fault": {"misdirected_write": {"sectors": 4}}, "trigger": "once"}"#,
        ))
        .unwrap();
    write(&mut f.disk, file, 3 * SECTOR as u64, filled(SECTOR, 4)).unwrap();
    assert_eq!(f.disk.file_len(file).unwrap(), 8 * SECTOR as u64);
    let (_, bytes) = read(&mut f.disk, file, 8 * SECTOR);
    assert_eq!((bytes[3 * SECTOR], bytes[7 * SECTOR]), (2, 4));
}

#[test]
fn a_journal_full_above_n_bytes_refuses_writes_with_enospc() {
    let mut f = fixture();
    let (jdir, ldir) = (f.journal.clone(), f.ledgers.clone());
    let file = f.disk.open(&jdir.join("1.jseg"), rw()).unwrap();
    let other = new_file(&mut f, &ldir, "0.log", 1);
    f.chaos
        .add(spec(&format!(
            r#"{{"dir": "journal", "op": "write", "fault": "enospc", "trigger": {{"after_bytes": {}}}}}"#,
            2 * SECTOR
        )))
        .unwrap();
    let outcomes: Vec<_> = (0..3)
        .map(|i| write(&mut f.disk, file, (i * SECTOR) as u64, filled(SECTOR, 3)))
        .collect();
    assert!(outcomes[0].is_ok() && outcomes[1].is_ok());
    let e = outcomes[2].as_ref().unwrap_err();
    assert!(is_no_space(e), "{e}");
    assert_eq!(
        f.disk.file_len(file).unwrap(),
        2 * SECTOR as u64,
        "nothing of it landed"
    );
    write(&mut f.disk, other, 0, filled(SECTOR, 1)).unwrap();
}

#[test]
fn a_failed_sync_is_never_no_space_and_leaves_the_write_unsynced() {
    let mut f = fixture();
    let jdir = f.journal.clone();
    let file = f.disk.open(&jdir.join("1.jseg"), rw()).unwrap();
    f.chaos
        .add(spec(r#"{"op": "fdatasync", "fault": "enospc"}"#))
        .unwrap();
    let c = run_one(
        &mut f.disk,
        Op::WriteDatasync {
            file,
            offset: 0,
            buf: filled(SECTOR, 4),
        },
    );
    let e = c.result.unwrap_err();
    assert!(!is_no_space(&e), "{e}");
    let e = run_one(&mut f.disk, Op::Fdatasync { file })
        .result
        .unwrap_err();
    assert!(!is_no_space(&e), "{e}");
    assert_eq!(f.chaos.injected(FaultKind::Enospc), 2);
}

#[test]
fn open_and_rename_faults_change_nothing() {
    let mut f = fixture();
    let ldir = f.ledgers.clone();
    let _ = new_file(&mut f, &ldir, "a.tmp", 1);
    f.chaos
        .add(spec(r#"{"op": "rename", "fault": "eio"}"#))
        .unwrap();
    f.chaos
        .add(spec(r#"{"op": "open", "file": "new*", "fault": "enospc"}"#))
        .unwrap();
    let e = f
        .disk
        .rename(&ldir.join("a.tmp"), &ldir.join("a"))
        .unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EIO));
    assert!(ldir.join("a.tmp").exists() && !ldir.join("a").exists());
    let e = f.disk.open(&ldir.join("new.log"), rw()).unwrap_err();
    assert!(is_no_space(&e));
    assert!(!ldir.join("new.log").exists());
}

#[test]
fn latency_adds_up_and_a_failure_still_applies() {
    let mut f = fixture();
    let ldir = f.ledgers.clone();
    let file = new_file(&mut f, &ldir, "0.log", 1);
    f.chaos
        .add(spec(
            r#"{"op": "read", "fault": {"latency": {"ms": 1, "jitter_ms": 1}}}"#,
        ))
        .unwrap();
    f.chaos
        .add(spec(r#"{"op": "read", "fault": "eio", "trigger": "once"}"#))
        .unwrap();
    f.chaos
        .add(spec(
            r#"{"op": "read", "fault": "enospc", "trigger": "once"}"#,
        ))
        .unwrap();
    assert_eq!(
        read(&mut f.disk, file, SECTOR)
            .0
            .unwrap_err()
            .raw_os_error(),
        Some(libc::EIO)
    );
    // The ENOSPC fault was not offered the first read: at most one failure per operation.
    assert!(is_no_space(&read(&mut f.disk, file, SECTOR).0.unwrap_err()));
    assert!(read(&mut f.disk, file, SECTOR).0.is_ok());
    let hits: Vec<u64> = f.chaos.list().iter().map(|a| a.hits).collect();
    assert_eq!(hits, [3, 1, 1]);
    assert_eq!(f.chaos.injected(FaultKind::Latency), 3);
}

#[test]
fn a_refused_operation_keeps_close_busy_until_reaped() {
    let mut f = fixture();
    let ldir = f.ledgers.clone();
    let file = new_file(&mut f, &ldir, "0.log", 1);
    f.chaos.add(spec(r#"{"fault": "eio"}"#)).unwrap();
    f.disk.submit(5, Op::Fdatasync { file }).unwrap();
    assert_eq!(f.disk.in_flight(), 1);
    let done = f.disk.reap(1);
    assert_eq!((done.len(), done[0].user_data), (1, 5));
    f.disk.close(file).unwrap();
}

#[test]
fn the_probability_trigger_replays_with_its_seed() {
    let outcomes = |seed: u64| {
        let mut f = fixture();
        let ldir = f.ledgers.clone();
        let file = new_file(&mut f, &ldir, "0.log", 1);
        f.chaos
            .add(spec(&format!(
                r#"{{"op": "read", "fault": "eio", "trigger": {{"probability": 0.5}}, "seed": {seed}}}"#
            )))
            .unwrap();
        (0..64)
            .map(|_| read(&mut f.disk, file, SECTOR).0.is_ok())
            .collect::<Vec<_>>()
    };
    assert_eq!(outcomes(11), outcomes(11));
    assert_ne!(outcomes(11), outcomes(12));
}
