//! [`ChaosDisk`]: a [`Disk`] that wraps a real backend and applies the faults its
//! [`Chaos`] control decides, one operation at a time.
//!
//! Semantics of each effect (what the caller sees, what the file holds):
//! - **latency**: the operation waits in `submit` (or in `open`/`rename`), then runs;
//! - **EIO / ENOSPC** on a data operation: the operation is not passed on, nothing changes,
//!   and its completion (buffer handed back) carries the error; on `open`/`rename` the call
//!   fails and nothing changes. A failed sync reports ENOSPC as an error naming the
//!   fdatasync that is not "no space" (the crate invariant, [`crate::is_no_space`]);
//! - a `WriteDatasync` is offered as a `write` and then as an `fdatasync`: a failed write
//!   half changes nothing; a failed sync half lets the write reach the file (page cache)
//!   without syncing it, and the completion carries the sync's error;
//! - **bit flip**: the read runs; one bit of the bytes it returned (chosen by the fault's
//!   seed) is flipped in the buffer; the stored file is intact;
//! - **torn write**: only the first `keep_bytes` (rounded down to a sector; at most the
//!   write's length less one sector, default half) are written, then the completion reports
//!   EIO; a torn `WriteDatasync` is not synced;
//! - **misdirected write**: the write (and the sync of a `WriteDatasync`) runs at another
//!   offset of the same file (`MisdirectedWrite::landing`) and its completion reports
//!   success: the asked range keeps its old bytes, the landing range is overwritten (and
//!   may grow the file); what a power cut must undo is captured at the landing range;
//! - **power cut**: the matched operation does not run; the layer undoes every write
//!   made since each file's last successful sync and the process aborts (`power`
//!   module: what is kept, how it is undone, the limits).
//!
//! While a power cut is possible (`Power::armed`), every write (and a shrinking
//! `set_len`) first reads the synced sectors it will overwrite, through the wrapped
//! backend, and every submitted operation is tracked until its completion is seen, so
//! whichever backend is wrapped (io_uring, syscalls, the simulated disk) each write and
//! sync is seen here; otherwise none of that runs. (Test only: with
//! `Chaos::set_test_only_ack_before_fdatasync`, a journal segment's `WriteDatasync` runs
//! as a plain `Write`.)
//!
//! Every other call passes straight to the wrapped backend. Completions of operations that
//! were refused (or reaped from the backend while the layer waited for its own read) are
//! handed out by the next `reap` before the backend's, and count in [`Disk::in_flight`];
//! `close` refuses (EBUSY) while one of them is unreaped, as every backend does.

use super::control::Chaos;
use super::power::{RestorePlan, SyncMark};
use super::spec::{Effect, OpKind};
use crate::{run_one, AlignedBuf, Completion, Disk, FileId, Op, OpenOptions, SpaceInfo, SECTOR};
use std::collections::{HashMap, VecDeque};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Wraps `inner` in the chaos layer driven by `chaos`.
pub fn wrap(inner: Box<dyn Disk>, chaos: &Arc<Chaos>) -> Box<dyn Disk> {
    Box::new(ChaosDisk::new(inner, chaos.clone()))
}

/// What to do when the backend's completion of an operation comes back.
enum Pending {
    /// Flip one bit of what the read returned (the draw picks it).
    BitFlip(u64),
    /// A torn write: report EIO and hand back the caller's buffer.
    Torn(AlignedBuf),
    /// The write half of a `WriteDatasync` ran alone; report the sync's failure.
    SyncFailed(Effect),
}

/// An operation submitted while a power cut is possible, until its completion is seen.
struct Tracked {
    file: FileId,
    path: PathBuf,
    /// A write (write, write+fdatasync, fallocate): counted in flight.
    write: bool,
    /// A sync that makes the file's pre-images useless when it succeeds.
    sync: Option<SyncMark>,
}

/// The wrapping disk (module docs).
pub struct ChaosDisk {
    inner: Box<dyn Disk>,
    chaos: Arc<Chaos>,
    paths: HashMap<FileId, PathBuf>,
    /// Completions to hand out before the backend's: refused operations, and those
    /// reaped while the layer waited for a pre-image read.
    refused: VecDeque<(Option<FileId>, Completion)>,
    pending: HashMap<u64, Pending>,
    tracked: HashMap<u64, Tracked>,
}

/// What the layer has been cut off by.
const POWER_CUT: &str = "chaos: power cut (the process is stopping)";

/// user_data of the layer's own pre-image reads (found by their buffer, not this).
const CAPTURE_USER_DATA: u64 = 0xC4A0_5C47_0000_0001;

fn eio() -> io::Error {
    io::Error::from_raw_os_error(libc::EIO)
}

fn power_off() -> io::Error {
    io::Error::other(POWER_CUT)
}

/// What one restore did, for the log.
#[derive(Default, Debug)]
struct Restored {
    files: usize,
    sectors: usize,
    /// Bytes cut off past the synced lengths.
    truncated: u64,
    removed: usize,
    errors: usize,
}

/// The error a failing effect makes of an operation of kind `op`.
fn error_of(effect: &Effect, op: OpKind) -> io::Error {
    let e = match effect {
        Effect::Enospc => io::Error::from_raw_os_error(libc::ENOSPC),
        _ => eio(),
    };
    if op == OpKind::Fdatasync {
        crate::sync_half_error(e)
    } else {
        e
    }
}

impl ChaosDisk {
    pub fn new(inner: Box<dyn Disk>, chaos: Arc<Chaos>) -> ChaosDisk {
        ChaosDisk {
            inner,
            chaos,
            paths: HashMap::new(),
            refused: VecDeque::new(),
            pending: HashMap::new(),
            tracked: HashMap::new(),
        }
    }

    fn refuse(&mut self, file: FileId, user_data: u64, e: io::Error, buf: Option<AlignedBuf>) {
        self.refused.push_back((
            Some(file),
            Completion {
                user_data,
                result: Err(e),
                buf,
            },
        ));
    }

    fn finish(&mut self, mut c: Completion) -> Completion {
        match self.pending.remove(&c.user_data) {
            None => {}
            Some(Pending::BitFlip(draw)) => {
                if let (Ok(n), Some(buf)) = (&c.result, c.buf.as_mut()) {
                    let n = (*n).min(buf.len());
                    if n > 0 {
                        let bit = draw % (n as u64 * 8);
                        buf.as_mut_slice()[(bit / 8) as usize] ^= 1 << (bit % 8);
                    }
                }
            }
            Some(Pending::Torn(orig)) => {
                if c.result.is_ok() {
                    c.result = Err(eio());
                }
                c.buf = Some(orig);
            }
            Some(Pending::SyncFailed(effect)) if c.result.is_ok() => {
                c.result = Err(error_of(&effect, OpKind::Fdatasync));
            }
            Some(Pending::SyncFailed(_)) => {}
        }
        c
    }

    /// Submits a torn write of `buf`: its prefix, as a plain write.
    fn submit_torn(
        &mut self,
        user_data: u64,
        path: &Path,
        file: FileId,
        offset: u64,
        buf: AlignedBuf,
        keep: Option<u64>,
    ) -> io::Result<()> {
        let len = buf.len();
        let most = len.saturating_sub(SECTOR);
        let keep = (keep.unwrap_or(len as u64 / 2) as usize).min(most);
        let keep = keep - keep % SECTOR;
        if keep == 0 {
            self.refuse(file, user_data, eio(), Some(buf));
            return Ok(());
        }
        let mut prefix = AlignedBuf::with_capacity(keep);
        prefix.extend_from_slice(&buf.as_slice()[..keep]);
        let armed = self.armed();
        if armed {
            self.enter_write(path)?;
            if let Err(e) = self.capture(file, path, offset, offset + keep as u64) {
                self.chaos.power().leave_write(path);
                if e.kind() == io::ErrorKind::WouldBlock {
                    return Err(e);
                }
                self.refuse(file, user_data, e, Some(buf));
                return Ok(());
            }
        }
        let prefix = Op::Write {
            file,
            offset,
            buf: prefix,
        };
        if let Err(e) = self.inner.submit(user_data, prefix) {
            if armed {
                self.chaos.power().leave_write(path);
            }
            return Err(e);
        }
        self.pending.insert(user_data, Pending::Torn(buf));
        if armed {
            self.track(user_data, file, path, true, None);
        }
        Ok(())
    }

    fn armed(&self) -> bool {
        self.chaos.power().armed()
    }

    /// Every call checks this first: after a cut has begun, this disk's operations in
    /// flight are drained (their completions fail), the call waits for the restore to end
    /// (in production the abort ends the process first) and fails.
    fn gate(&mut self) -> io::Result<()> {
        if !self.chaos.power().off() {
            return Ok(());
        }
        self.drain_off();
        self.chaos.power().wait_done();
        Err(power_off())
    }

    /// After a cut has begun: reaps everything this disk has in flight; the completions
    /// fail (none is handed out as a success, so no late sync is acknowledged).
    fn drain_off(&mut self) {
        while self.inner.in_flight() > 0 {
            let n = self.inner.in_flight();
            for c in self.inner.reap(n) {
                let file = self.tracked.get(&c.user_data).map(|t| t.file);
                let c = self.complete(c);
                self.refused.push_back((file, c));
            }
        }
    }

    /// Finishes a completion from the backend: the fault's effect, then the power-cut
    /// bookkeeping (a completion seen after the cut began fails).
    fn complete(&mut self, c: Completion) -> Completion {
        let mut c = self.finish(c);
        let power = self.chaos.power();
        let on = match self.tracked.remove(&c.user_data) {
            Some(t) => power.completed(&t.path, t.write, t.sync, c.result.is_ok()),
            None => !power.off(),
        };
        if !on {
            c.result = Err(power_off());
        }
        c
    }

    /// Counts a write of `path` in flight before it is prepared; once the cut has begun,
    /// waits for the restore like every call and fails.
    fn enter_write(&mut self, path: &Path) -> io::Result<()> {
        if self.chaos.power().enter_write(path) {
            return Ok(());
        }
        self.gate()?;
        Err(power_off())
    }

    /// Tracks an operation just submitted while armed (a write was counted in flight
    /// when it was entered).
    fn track(
        &mut self,
        user_data: u64,
        file: FileId,
        path: &Path,
        write: bool,
        sync: Option<SyncMark>,
    ) {
        self.tracked.insert(
            user_data,
            Tracked {
                file,
                path: path.to_path_buf(),
                write,
                sync,
            },
        );
    }

    /// Makes sure the file has a record (its current length taken as synced), for a
    /// write entered with [`ChaosDisk::enter_write`].
    fn ensure_record(&mut self, file: FileId, path: &Path) -> io::Result<()> {
        if !self.chaos.power().has_record(path) {
            let len = self.inner.file_len(file)?;
            self.chaos.power().ensure_record(path, len, true);
        }
        Ok(())
    }

    /// Before bytes `first..end` of `file` change: keeps the pre-image of the synced
    /// sectors among them not yet kept in this sync epoch, read through the backend.
    /// Completions of other operations reaped meanwhile are handed out later.
    fn capture(&mut self, file: FileId, path: &Path, first: u64, end: u64) -> io::Result<()> {
        self.ensure_record(file, path)?;
        let power = self.chaos.clone();
        let Some((lo, hi)) = power.power().needed(path, first, end) else {
            return Ok(());
        };
        let len = ((hi - lo) as usize) * SECTOR;
        let mut buf = AlignedBuf::with_capacity(len);
        let mine = buf.as_mut_ptr();
        self.inner.submit(
            CAPTURE_USER_DATA,
            Op::Read {
                file,
                offset: lo * SECTOR as u64,
                len,
                buf,
            },
        )?;
        let mut got = None;
        while got.is_none() {
            for mut c in self.inner.reap(1) {
                let is_mine = c.user_data == CAPTURE_USER_DATA
                    && c.buf.as_mut().is_some_and(|b| b.as_mut_ptr() == mine);
                if is_mine {
                    got = Some(c);
                    continue;
                }
                let file = self.tracked.get(&c.user_data).map(|t| t.file);
                let c = self.complete(c);
                self.refused.push_back((file, c));
            }
        }
        let c = got.expect("the loop ends with the read");
        let n = c.result?;
        let data = c.buf.as_ref().map(|b| &b.as_slice()[..n.min(b.len())]);
        power.power().keep(path, lo, hi, data.unwrap_or(&[]));
        Ok(())
    }

    /// Submits a write that will change `offset..offset + len` of `file`, capturing the
    /// pre-image first when armed. A failed capture fails the write (EAGAIN: not queued).
    fn write_through(
        &mut self,
        user_data: u64,
        path: &Path,
        op: Op,
        sync_effect: Option<Effect>,
    ) -> io::Result<()> {
        let (file, offset, len, linked) = match &op {
            Op::Write { file, offset, buf } => (*file, *offset, buf.len() as u64, false),
            Op::WriteDatasync { file, offset, buf } => (*file, *offset, buf.len() as u64, true),
            _ => unreachable!("write_through takes writes"),
        };
        if !self.armed() {
            self.inner.submit(user_data, op)?;
            if let Some(effect) = sync_effect {
                self.pending.insert(user_data, Pending::SyncFailed(effect));
            }
            return Ok(());
        }
        self.enter_write(path)?;
        if let Err(e) = self.capture(file, path, offset, offset + len) {
            self.chaos.power().leave_write(path);
            if e.kind() == io::ErrorKind::WouldBlock {
                return Err(e);
            }
            let buf = match op {
                Op::Write { buf, .. } | Op::WriteDatasync { buf, .. } => Some(buf),
                _ => None,
            };
            self.refuse(file, user_data, e, buf);
            return Ok(());
        }
        let mark = if linked {
            let len_now = self.inner.file_len(file).unwrap_or(0).max(offset + len);
            self.chaos.power().sync_started(path, len_now, 1)
        } else {
            None
        };
        if let Err(e) = self.inner.submit(user_data, op) {
            self.chaos.power().leave_write(path);
            return Err(e);
        }
        if let Some(effect) = sync_effect {
            self.pending.insert(user_data, Pending::SyncFailed(effect));
        }
        self.track(user_data, file, path, true, mark);
        Ok(())
    }

    /// The power cut (module docs of `power`): the first caller runs it and gets the
    /// error once the abort hook returns (tests); a later one waits like every call.
    fn cut(&mut self) -> io::Error {
        let chaos = self.chaos.clone();
        let power = chaos.power();
        if !power.begin() {
            let _ = self.gate();
            return power_off();
        }
        tracing::error!("chaos: POWER CUT: undoing every write not synced, then aborting");
        self.drain_off();
        let left = power.wait_landed();
        if left > 0 {
            tracing::error!(
                writes = left,
                "chaos: power cut: writes still in flight on other threads after the wait; they may land after the restore"
            );
        }
        let plan = power.plan();
        let r = self.restore(&plan);
        tracing::error!(
            files = r.files,
            sectors_restored = r.sectors,
            bytes_truncated = r.truncated,
            new_files_removed = r.removed,
            errors = r.errors,
            "chaos: POWER CUT done: every file is as a power loss would leave it; aborting"
        );
        power.finish();
        power_off()
    }

    /// Puts back every file as its last successful sync left it, durably.
    fn restore(&mut self, plan: &RestorePlan) -> Restored {
        let mut r = Restored::default();
        let opts = OpenOptions {
            write: true,
            ..Default::default()
        };
        let disk = self.inner.as_mut();
        for (path, pre, synced_len) in &plan.files {
            let f = match disk.open(path, opts) {
                Ok(f) => f,
                Err(e) => {
                    tracing::error!(path = %path.display(), error = %e, "chaos: power cut: cannot open to restore");
                    r.errors += 1;
                    continue;
                }
            };
            let mut ok = true;
            for (s, sector) in pre {
                let offset = s * SECTOR as u64;
                if offset >= *synced_len {
                    continue;
                }
                let mut buf = AlignedBuf::with_capacity(SECTOR);
                buf.extend_from_slice(sector);
                let c = run_one(
                    disk,
                    Op::Write {
                        file: f,
                        offset,
                        buf,
                    },
                );
                ok &= c.result.is_ok();
                r.sectors += 1;
            }
            if let Ok(len) = disk.file_len(f) {
                r.truncated += len.saturating_sub(*synced_len);
            }
            ok &= disk.set_len(f, *synced_len).is_ok();
            ok &= run_one(disk, Op::Fdatasync { file: f }).result.is_ok();
            ok &= disk.close(f).is_ok();
            if !ok {
                tracing::error!(path = %path.display(), "chaos: power cut: restore failed");
                r.errors += 1;
            }
            r.files += 1;
        }
        let mut dirs = std::collections::BTreeSet::new();
        for path in &plan.created {
            match disk.remove(path) {
                Ok(()) => r.removed += 1,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(_) => r.errors += 1,
            }
            if let Some(d) = path.parent() {
                dirs.insert(d.to_path_buf());
            }
        }
        for d in dirs {
            if disk.sync_dir(&d).is_err() {
                r.errors += 1;
            }
        }
        r
    }
}

impl Disk for ChaosDisk {
    fn open(&mut self, path: &Path, opts: OpenOptions) -> io::Result<FileId> {
        self.gate()?;
        let d = self.chaos.decide(path, OpKind::Open, 0);
        if !d.delay.is_zero() {
            std::thread::sleep(d.delay);
        }
        match d.failure {
            Some((Effect::PowerCut, _)) => return Err(self.cut()),
            Some((effect, _)) => return Err(error_of(&effect, OpKind::Open)),
            None => {}
        }
        let id = if self.armed() && (opts.create || opts.create_new) {
            // Whether the open creates the file: a new one is forgotten by a cut unless
            // its directory is synced first.
            let new = OpenOptions {
                create_new: true,
                ..opts
            };
            match self.inner.open(path, new) {
                Ok(id) => {
                    self.chaos.power().created(path);
                    id
                }
                Err(e) if e.raw_os_error() == Some(libc::EEXIST) && !opts.create_new => {
                    self.inner.open(path, opts)?
                }
                Err(e) => return Err(e),
            }
        } else {
            self.inner.open(path, opts)?
        };
        self.paths.insert(id, path.to_path_buf());
        Ok(id)
    }

    fn close(&mut self, file: FileId) -> io::Result<()> {
        self.gate()?;
        if self.refused.iter().any(|(f, _)| *f == Some(file)) {
            return Err(io::Error::from_raw_os_error(libc::EBUSY));
        }
        self.inner.close(file)?;
        self.paths.remove(&file);
        Ok(())
    }

    fn file_len(&mut self, file: FileId) -> io::Result<u64> {
        self.gate()?;
        self.inner.file_len(file)
    }

    fn set_len(&mut self, file: FileId, len: u64) -> io::Result<()> {
        self.gate()?;
        if self.armed() {
            if let Some(path) = self.paths.get(&file).cloned() {
                // A shrink loses synced bytes a cut must put back.
                self.enter_write(&path)?;
                let done = self
                    .capture(file, &path, len, u64::MAX)
                    .and_then(|()| self.inner.set_len(file, len));
                self.chaos.power().leave_write(&path);
                return done;
            }
        }
        self.inner.set_len(file, len)
    }

    fn remove(&mut self, path: &Path) -> io::Result<()> {
        self.gate()?;
        self.inner.remove(path)?;
        if self.armed() {
            self.chaos.power().removed(path);
        }
        Ok(())
    }

    fn rename(&mut self, from: &Path, to: &Path) -> io::Result<()> {
        self.gate()?;
        let d = self.chaos.decide(from, OpKind::Rename, 0);
        if !d.delay.is_zero() {
            std::thread::sleep(d.delay);
        }
        match d.failure {
            Some((Effect::PowerCut, _)) => return Err(self.cut()),
            Some((effect, _)) => return Err(error_of(&effect, OpKind::Rename)),
            None => {}
        }
        self.inner.rename(from, to)?;
        if self.armed() {
            self.chaos.power().renamed(from, to);
            for p in self.paths.values_mut() {
                if p == from {
                    *p = to.to_path_buf();
                }
            }
        }
        Ok(())
    }

    fn sync_dir(&mut self, dir: &Path) -> io::Result<()> {
        self.gate()?;
        self.inner.sync_dir(dir)?;
        if self.armed() {
            self.chaos.power().dir_synced(dir);
        }
        Ok(())
    }

    fn create_dir_all(&mut self, dir: &Path) -> io::Result<()> {
        self.gate()?;
        self.inner.create_dir_all(dir)
    }

    fn list_dir(&mut self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        self.gate()?;
        self.inner.list_dir(dir)
    }

    fn space(&mut self, dir: &Path) -> io::Result<SpaceInfo> {
        self.gate()?;
        self.inner.space(dir)
    }

    fn submit(&mut self, user_data: u64, op: Op) -> io::Result<()> {
        self.gate()?;
        let Some(path) = self.paths.get(&op.file()).cloned() else {
            // Not opened through this layer: the backend refuses it (EBADF).
            return self.inner.submit(user_data, op);
        };
        match op {
            Op::Read {
                file,
                offset,
                len,
                buf,
            } => {
                let d = self.chaos.decide(&path, OpKind::Read, 0);
                if !d.delay.is_zero() {
                    std::thread::sleep(d.delay);
                }
                let read = Op::Read {
                    file,
                    offset,
                    len,
                    buf,
                };
                match d.failure {
                    Some((Effect::PowerCut, _)) => Err(self.cut()),
                    Some((Effect::BitFlip, draw)) => {
                        self.inner.submit(user_data, read)?;
                        self.pending.insert(user_data, Pending::BitFlip(draw));
                        if self.armed() {
                            self.track(user_data, file, &path, false, None);
                        }
                        Ok(())
                    }
                    Some((effect, _)) => {
                        let Op::Read { mut buf, .. } = read else {
                            unreachable!()
                        };
                        buf.set_len(0);
                        self.refuse(file, user_data, error_of(&effect, OpKind::Read), Some(buf));
                        Ok(())
                    }
                    None => {
                        self.inner.submit(user_data, read)?;
                        if self.armed() {
                            self.track(user_data, file, &path, false, None);
                        }
                        Ok(())
                    }
                }
            }
            Op::Write { file, offset, buf } => {
                let d = self.chaos.decide(&path, OpKind::Write, buf.len() as u64);
                if !d.delay.is_zero() {
                    std::thread::sleep(d.delay);
                }
                match d.failure {
                    Some((Effect::PowerCut, _)) => Err(self.cut()),
                    Some((Effect::TornWrite(t), _)) => {
                        self.submit_torn(user_data, &path, file, offset, buf, t.keep_bytes)
                    }
                    Some((Effect::MisdirectedWrite(m), draw)) => {
                        let offset = m.landing(offset, draw);
                        self.write_through(user_data, &path, Op::Write { file, offset, buf }, None)
                    }
                    Some((effect, _)) => {
                        self.refuse(file, user_data, error_of(&effect, OpKind::Write), Some(buf));
                        Ok(())
                    }
                    None => {
                        self.write_through(user_data, &path, Op::Write { file, offset, buf }, None)
                    }
                }
            }
            Op::WriteDatasync { file, offset, buf } => {
                let mut w = self.chaos.decide(&path, OpKind::Write, buf.len() as u64);
                // A misdirected write half runs (elsewhere) and succeeds: from here on it is a
                // write like any other, and its sync half is offered to the faults as usual.
                let mut offset = offset;
                if let Some((Effect::MisdirectedWrite(m), draw)) = &w.failure {
                    offset = m.landing(offset, *draw);
                    w.failure = None;
                }
                let s = if w.failure.is_none() {
                    self.chaos.decide(&path, OpKind::Fdatasync, 0)
                } else {
                    Default::default()
                };
                let delay = w.delay + s.delay;
                if !delay.is_zero() {
                    std::thread::sleep(delay);
                }
                match (w.failure, s.failure) {
                    (Some((Effect::PowerCut, _)), _) | (None, Some((Effect::PowerCut, _))) => {
                        Err(self.cut())
                    }
                    (Some((Effect::TornWrite(t), _)), _) => {
                        self.submit_torn(user_data, &path, file, offset, buf, t.keep_bytes)
                    }
                    (Some((effect, _)), _) => {
                        self.refuse(file, user_data, error_of(&effect, OpKind::Write), Some(buf));
                        Ok(())
                    }
                    (None, Some((effect, _))) => self.write_through(
                        user_data,
                        &path,
                        Op::Write { file, offset, buf },
                        Some(effect),
                    ),
                    (None, None) if self.chaos.skips_sync_of(&path) => {
                        // Test only (`Chaos::set_test_only_ack_before_fdatasync`).
                        self.write_through(user_data, &path, Op::Write { file, offset, buf }, None)
                    }
                    (None, None) => self.write_through(
                        user_data,
                        &path,
                        Op::WriteDatasync { file, offset, buf },
                        None,
                    ),
                }
            }
            Op::Fdatasync { file } => {
                let d = self.chaos.decide(&path, OpKind::Fdatasync, 0);
                if !d.delay.is_zero() {
                    std::thread::sleep(d.delay);
                }
                match d.failure {
                    Some((Effect::PowerCut, _)) => Err(self.cut()),
                    Some((effect, _)) => {
                        self.refuse(file, user_data, error_of(&effect, OpKind::Fdatasync), None);
                        Ok(())
                    }
                    None if self.armed() => {
                        let mark = if self.chaos.power().has_record(&path) {
                            let len = self.inner.file_len(file)?;
                            self.chaos.power().sync_started(&path, len, 0)
                        } else {
                            None
                        };
                        self.inner.submit(user_data, Op::Fdatasync { file })?;
                        self.track(user_data, file, &path, false, mark);
                        Ok(())
                    }
                    None => self.inner.submit(user_data, Op::Fdatasync { file }),
                }
            }
            Op::Fallocate { file, offset, len } => {
                let d = self.chaos.decide(&path, OpKind::Fallocate, len);
                if !d.delay.is_zero() {
                    std::thread::sleep(d.delay);
                }
                match d.failure {
                    Some((Effect::PowerCut, _)) => Err(self.cut()),
                    Some((effect, _)) => {
                        self.refuse(file, user_data, error_of(&effect, OpKind::Fallocate), None);
                        Ok(())
                    }
                    None if self.armed() => {
                        self.enter_write(&path)?;
                        let submitted = self.ensure_record(file, &path).and_then(|()| {
                            self.inner
                                .submit(user_data, Op::Fallocate { file, offset, len })
                        });
                        if let Err(e) = submitted {
                            self.chaos.power().leave_write(&path);
                            return Err(e);
                        }
                        self.track(user_data, file, &path, true, None);
                        Ok(())
                    }
                    None => self
                        .inner
                        .submit(user_data, Op::Fallocate { file, offset, len }),
                }
            }
        }
    }

    fn reap(&mut self, min: usize) -> Vec<Completion> {
        if self.chaos.power().off() {
            self.drain_off();
            self.chaos.power().wait_done();
            return self.refused.drain(..).map(|(_, c)| c).collect();
        }
        let mut out: Vec<Completion> = self.refused.drain(..).map(|(_, c)| c).collect();
        let want = min.saturating_sub(out.len());
        let from_inner = self.inner.reap(want);
        for c in from_inner {
            let c = self.complete(c);
            out.push(c);
        }
        out
    }

    fn in_flight(&self) -> usize {
        self.inner.in_flight() + self.refused.len()
    }
}
