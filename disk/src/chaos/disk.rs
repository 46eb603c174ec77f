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
//!
//! This file holds the effects; the power-cut bookkeeping (tracking, pre-image capture,
//! the gate, the cut and the restore) is the child module `power_cut`.

use super::control::Chaos;
use super::spec::{Effect, OpKind};
use crate::{AlignedBuf, Completion, Disk, FileId, Op, OpenOptions, SpaceInfo, SECTOR};
use std::collections::{HashMap, VecDeque};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

mod power_cut;

use power_cut::Tracked;

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

fn eio() -> io::Error {
    io::Error::from_raw_os_error(libc::EIO)
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
