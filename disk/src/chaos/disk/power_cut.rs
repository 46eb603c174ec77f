//! The power-cut bookkeeping of [`ChaosDisk`] (module docs of `chaos::disk`, and
//! `chaos::power` for what is kept and its limits): while a cut is possible, every write
//! and sync is tracked until its completion is seen and the synced sectors a write will
//! overwrite are read first (their pre-images); once a cut begins, every call is gated,
//! what is in flight is drained as failed, and [`ChaosDisk::cut`] puts every file back as
//! its last successful sync left it before the process aborts.

use super::{ChaosDisk, Pending};
use crate::chaos::power::{RestorePlan, SyncMark};
use crate::chaos::spec::Effect;
use crate::{run_one, AlignedBuf, Completion, FileId, Op, OpenOptions, SECTOR};
use std::io;
use std::path::{Path, PathBuf};

/// An operation submitted while a power cut is possible, until its completion is seen.
pub(super) struct Tracked {
    file: FileId,
    path: PathBuf,
    /// A write (write, write+fdatasync, fallocate): counted in flight.
    write: bool,
    /// A sync that makes the file's pre-images useless when it succeeds.
    sync: Option<SyncMark>,
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

/// What the layer has been cut off by.
const POWER_CUT: &str = "chaos: power cut (the process is stopping)";

/// user_data of the layer's own pre-image reads (found by their buffer, not this).
const CAPTURE_USER_DATA: u64 = 0xC4A0_5C47_0000_0001;

fn power_off() -> io::Error {
    io::Error::other(POWER_CUT)
}

impl ChaosDisk {
    pub(super) fn armed(&self) -> bool {
        self.chaos.power().armed()
    }

    /// Every call checks this first: after a cut has begun, this disk's operations in
    /// flight are drained (their completions fail), the call waits for the restore to end
    /// (in production the abort ends the process first) and fails.
    pub(super) fn gate(&mut self) -> io::Result<()> {
        if !self.chaos.power().off() {
            return Ok(());
        }
        self.drain_off();
        self.chaos.power().wait_done();
        Err(power_off())
    }

    /// After a cut has begun: reaps everything this disk has in flight; the completions
    /// fail (none is handed out as a success, so no late sync is acknowledged).
    pub(super) fn drain_off(&mut self) {
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
    pub(super) fn complete(&mut self, c: Completion) -> Completion {
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
    pub(super) fn enter_write(&mut self, path: &Path) -> io::Result<()> {
        if self.chaos.power().enter_write(path) {
            return Ok(());
        }
        self.gate()?;
        Err(power_off())
    }

    /// Tracks an operation just submitted while armed (a write was counted in flight
    /// when it was entered).
    pub(super) fn track(
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
    pub(super) fn ensure_record(&mut self, file: FileId, path: &Path) -> io::Result<()> {
        if !self.chaos.power().has_record(path) {
            let len = self.inner.file_len(file)?;
            self.chaos.power().ensure_record(path, len, true);
        }
        Ok(())
    }

    /// Before bytes `first..end` of `file` change: keeps the pre-image of the synced
    /// sectors among them not yet kept in this sync epoch, read through the backend.
    /// Completions of other operations reaped meanwhile are handed out later.
    pub(super) fn capture(
        &mut self,
        file: FileId,
        path: &Path,
        first: u64,
        end: u64,
    ) -> io::Result<()> {
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
    pub(super) fn write_through(
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
    pub(super) fn cut(&mut self) -> io::Error {
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
