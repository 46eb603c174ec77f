//! `Checked<D>`: a [`Disk`] wrapper that asserts the caller uses the disk correctly,
//! for tests. Wrap any backend (`Checked::new(sim.disk())`) and run the code under
//! test against it: a misuse panics at once with a message naming the rule, rather
//! than showing up later as corrupt data on one backend only.
//!
//! Rules asserted (each violation is a programming bug, hence a panic):
//! - data operations use sector-aligned offsets, and writes sector-aligned buffer
//!   lengths; a `Read`'s `len` is sector-aligned and fits the buffer's capacity;
//! - no two in-flight operations on the same file overlap where one is a write
//!   (write/write or read/write): their order is undefined on io_uring;
//! - no operation or call names a `FileId` that is closed or was never opened here;
//! - `close` is not called while operations on that file are in flight;
//! - `user_data` is unique among in-flight operations (so completions can be told
//!   apart), and every completion's `user_data` was submitted and not yet reaped;
//! - the backend hands back the buffer of every data operation, a successful write
//!   reports its full length, a read sets `buf.len()` to its count, and `reap(min)`
//!   returns at least `min` (clamped) completions.
//!
//! Errors the backend returns are passed through unchanged; only their accounting
//! is checked.

use crate::{Completion, Disk, FileId, Op, OpenOptions, SpaceInfo, SECTOR};
use std::collections::{HashMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};

struct InFlight {
    file: FileId,
    /// Byte range and whether it is written (false: read).
    range: Option<(u64, u64, bool)>,
    /// Bytes a write asked for (to check the completion's count).
    write_len: Option<usize>,
    has_buf: bool,
}

/// The checking wrapper. See the module docs for the rules.
pub struct Checked<D: Disk> {
    inner: D,
    open: HashSet<FileId>,
    closed: HashSet<FileId>,
    in_flight: HashMap<u64, InFlight>,
}

impl<D: Disk> Checked<D> {
    pub fn new(inner: D) -> Self {
        Checked {
            inner,
            open: HashSet::new(),
            closed: HashSet::new(),
            in_flight: HashMap::new(),
        }
    }

    pub fn inner(&self) -> &D {
        &self.inner
    }

    pub fn inner_mut(&mut self) -> &mut D {
        &mut self.inner
    }

    pub fn into_inner(self) -> D {
        self.inner
    }

    fn check_file(&self, file: FileId, what: &str) {
        if self.open.contains(&file) {
            return;
        }
        if self.closed.contains(&file) {
            panic!("Checked disk: {what} on closed {file:?}");
        }
        panic!("Checked disk: {what} on unknown {file:?} (never opened on this disk)");
    }
}

fn overlaps(a: (u64, u64), b: (u64, u64)) -> bool {
    a.0 < b.1 && b.0 < a.1
}

impl<D: Disk> Disk for Checked<D> {
    fn open(&mut self, path: &Path, opts: OpenOptions) -> io::Result<FileId> {
        let id = self.inner.open(path, opts)?;
        assert!(
            self.open.insert(id),
            "Checked disk: backend returned {id:?} for {path:?}, which is already open"
        );
        self.closed.remove(&id);
        Ok(id)
    }

    fn close(&mut self, file: FileId) -> io::Result<()> {
        self.check_file(file, "close");
        let n = self.in_flight.values().filter(|o| o.file == file).count();
        assert!(
            n == 0,
            "Checked disk: close of {file:?} with {n} operation(s) in flight"
        );
        let r = self.inner.close(file);
        if r.is_ok() {
            self.open.remove(&file);
            self.closed.insert(file);
        }
        r
    }

    fn file_len(&mut self, file: FileId) -> io::Result<u64> {
        self.check_file(file, "file_len");
        self.inner.file_len(file)
    }

    fn set_len(&mut self, file: FileId, len: u64) -> io::Result<()> {
        self.check_file(file, "set_len");
        self.inner.set_len(file, len)
    }

    fn remove(&mut self, path: &Path) -> io::Result<()> {
        self.inner.remove(path)
    }

    fn rename(&mut self, from: &Path, to: &Path) -> io::Result<()> {
        self.inner.rename(from, to)
    }

    fn sync_dir(&mut self, dir: &Path) -> io::Result<()> {
        self.inner.sync_dir(dir)
    }

    fn create_dir_all(&mut self, dir: &Path) -> io::Result<()> {
        self.inner.create_dir_all(dir)
    }

    fn list_dir(&mut self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        self.inner.list_dir(dir)
    }

    fn space(&mut self, dir: &Path) -> io::Result<SpaceInfo> {
        self.inner.space(dir)
    }

    fn submit(&mut self, user_data: u64, op: Op) -> io::Result<()> {
        let file = op.file();
        self.check_file(file, "submit");
        assert!(
            !self.in_flight.contains_key(&user_data),
            "Checked disk: user_data {user_data} is already in flight"
        );
        let sector = SECTOR as u64;
        let (range, write_len, has_buf) = match &op {
            Op::Write { offset, buf, .. } | Op::WriteDatasync { offset, buf, .. } => {
                assert!(
                    offset % sector == 0,
                    "Checked disk: write offset {offset} of {file:?} is not sector-aligned"
                );
                assert!(
                    buf.len() % SECTOR == 0,
                    "Checked disk: write length {} to {file:?} is not sector-aligned",
                    buf.len()
                );
                (
                    Some((*offset, offset.saturating_add(buf.len() as u64), true)),
                    Some(buf.len()),
                    true,
                )
            }
            Op::Read {
                offset, len, buf, ..
            } => {
                assert!(
                    offset % sector == 0,
                    "Checked disk: read offset {offset} of {file:?} is not sector-aligned"
                );
                assert!(
                    len % SECTOR == 0,
                    "Checked disk: read length {len} of {file:?} is not sector-aligned"
                );
                assert!(
                    *len <= buf.capacity(),
                    "Checked disk: read length {len} exceeds the buffer capacity {}",
                    buf.capacity()
                );
                (
                    Some((*offset, offset.saturating_add(*len as u64), false)),
                    None,
                    true,
                )
            }
            Op::Fdatasync { .. } | Op::Fallocate { .. } => (None, None, false),
        };
        if let Some((start, end, is_write)) = range {
            for (ud, o) in &self.in_flight {
                if o.file != file {
                    continue;
                }
                if let Some((s2, e2, w2)) = o.range {
                    if (is_write || w2) && overlaps((start, end), (s2, e2)) {
                        panic!(
                            "Checked disk: {} of {file:?} bytes {start}..{end} overlaps in-flight {} \
                             (user_data {ud}) bytes {s2}..{e2}",
                            if is_write { "write" } else { "read" },
                            if w2 { "write" } else { "read" },
                        );
                    }
                }
            }
        }
        self.inner.submit(user_data, op)?;
        self.in_flight.insert(
            user_data,
            InFlight {
                file,
                range,
                write_len,
                has_buf,
            },
        );
        Ok(())
    }

    fn reap(&mut self, min: usize) -> Vec<Completion> {
        let want = min.min(self.in_flight.len());
        let out = self.inner.reap(min);
        assert!(
            out.len() >= want,
            "Checked disk: reap({min}) returned {} completions with {} in flight",
            out.len(),
            self.in_flight.len()
        );
        for c in &out {
            let Some(o) = self.in_flight.remove(&c.user_data) else {
                panic!(
                    "Checked disk: completion with user_data {} that was never submitted \
                     (or was already reaped)",
                    c.user_data
                );
            };
            assert_eq!(
                o.has_buf,
                c.buf.is_some(),
                "Checked disk: completion {} buffer hand-back mismatch",
                c.user_data
            );
            if let (Ok(n), Some(want)) = (&c.result, o.write_len) {
                assert_eq!(
                    *n, want,
                    "Checked disk: write {} reported a short success",
                    c.user_data
                );
            }
            if let (Ok(n), Some(buf), None) = (&c.result, &c.buf, o.write_len) {
                assert_eq!(
                    buf.len(),
                    *n,
                    "Checked disk: read {} did not set buf.len() to its count",
                    c.user_data
                );
            }
        }
        out
    }

    fn in_flight(&self) -> usize {
        let n = self.inner.in_flight();
        debug_assert_eq!(
            n,
            self.in_flight.len(),
            "Checked disk: backend in_flight disagrees"
        );
        n
    }
}
