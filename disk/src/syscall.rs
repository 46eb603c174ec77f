//! `SyscallDisk`: the [`Disk`] backend made of plain blocking system calls
//! (pread, pwrite, fdatasync, fallocate), used where io_uring is unavailable or not
//! wanted, and as the reference the other backends are compared with.
//!
//! Every operation runs to the end inside [`Disk::submit`]; its completion is queued
//! and handed out by the next [`Disk::reap`]. So completions come back in submission
//! order, and an `Fdatasync` covers every write submitted before it.
//!
//! Invariants:
//! - files asked for with `direct` use O_DIRECT; if the file system refuses O_DIRECT
//!   (EINVAL) the file is opened buffered and the refusal is counted
//!   ([`SyscallDisk::direct_refusals`]); durability does not depend on O_DIRECT since
//!   fdatasync is always explicit;
//! - a write is retried until all bytes are written; a write that makes no progress
//!   is reported as EIO, never as a short success;
//! - a read stops at end of file (the count may be short), never fails because of it;
//! - at most `queue_depth` operations are submitted and not reaped; beyond that
//!   `submit` fails with EAGAIN (the same bound as the other backends);
//! - `close` fails with EBUSY while completions of that file are not reaped.

use crate::fsutil::{self, errno};
use crate::open_files::{real_namespace_ops, OpenFiles};
use crate::{AlignedBuf, Completion, Disk, FileId, Op};
use std::collections::VecDeque;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

/// The plain-syscall backend. See the module docs.
pub struct SyscallDisk {
    files: OpenFiles,
    done: VecDeque<(FileId, Completion)>,
    queue_depth: usize,
}

impl Default for SyscallDisk {
    fn default() -> Self {
        Self::new()
    }
}

impl SyscallDisk {
    /// A disk with the default queue depth ([`crate::DEFAULT_QUEUE_DEPTH`]).
    pub fn new() -> Self {
        Self::with_queue_depth(crate::DEFAULT_QUEUE_DEPTH)
    }

    /// A disk allowing at most `queue_depth` (at least 1) unreaped operations.
    pub fn with_queue_depth(queue_depth: usize) -> Self {
        SyscallDisk {
            files: OpenFiles::default(),
            done: VecDeque::new(),
            queue_depth: queue_depth.max(1),
        }
    }

    /// How many opens asked for O_DIRECT and got a buffered file because the file
    /// system refused O_DIRECT.
    pub fn direct_refusals(&self) -> u64 {
        self.files.direct_refusals()
    }

    /// Whether an open file really uses O_DIRECT.
    pub fn is_direct(&self, file: FileId) -> Option<bool> {
        self.files.is_direct(file)
    }
}

/// pwrite until every byte of `data` is written at `offset`.
pub(crate) fn write_all_at(file: &File, mut data: &[u8], mut offset: u64) -> io::Result<usize> {
    let total = data.len();
    while !data.is_empty() {
        match file.write_at(data, offset) {
            Ok(0) => return Err(errno(libc::EIO)),
            Ok(n) => {
                data = &data[n..];
                offset += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(total)
}

/// pread up to `buf.len()` bytes at `offset`; short only at end of file.
pub(crate) fn read_at_most(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], offset + done as u64) {
            Ok(0) => break,
            Ok(n) => {
                done += n;
                // A short read of a regular file means end of file; continuing at an
                // unaligned offset would fail under O_DIRECT.
                if done % crate::SECTOR != 0 {
                    break;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

fn run_op(file: &File, op: Op) -> Completion {
    let (result, buf): (io::Result<usize>, Option<AlignedBuf>) = match op {
        Op::Write { offset, buf, .. } => (write_all_at(file, buf.as_slice(), offset), Some(buf)),
        Op::WriteDatasync { offset, buf, .. } => {
            let r = write_all_at(file, buf.as_slice(), offset)
                .and_then(|n| file.sync_data().map(|()| n).map_err(crate::sync_half_error));
            (r, Some(buf))
        }
        Op::Read {
            offset,
            len,
            mut buf,
            ..
        } => {
            let r = read_at_most(file, &mut buf.full_mut()[..len], offset);
            buf.set_len(*r.as_ref().unwrap_or(&0));
            (r, Some(buf))
        }
        Op::Fdatasync { .. } => (file.sync_data().map(|()| 0), None),
        Op::Fallocate { offset, len, .. } => {
            (fsutil::fallocate(file, offset, len).map(|()| 0), None)
        }
    };
    Completion {
        user_data: 0,
        result,
        buf,
    }
}

impl Disk for SyscallDisk {
    real_namespace_ops!(files);

    fn submit(&mut self, user_data: u64, op: Op) -> io::Result<()> {
        if self.done.len() >= self.queue_depth {
            return Err(errno(libc::EAGAIN));
        }
        let id = op.file();
        if let Op::Read { len, buf, .. } = &op {
            if *len > buf.capacity() {
                return Err(errno(libc::EINVAL));
            }
        }
        let f = self.files.get_mut(id)?;
        let mut c = run_op(&f.file, op);
        c.user_data = user_data;
        f.unreaped += 1;
        self.done.push_back((id, c));
        Ok(())
    }

    fn reap(&mut self, _min: usize) -> Vec<Completion> {
        // Every submitted operation has already completed, so `min` is always met.
        let mut out = Vec::with_capacity(self.done.len());
        while let Some((id, c)) = self.done.pop_front() {
            self.files.reaped(id);
            out.push(c);
        }
        out
    }

    fn in_flight(&self) -> usize {
        self.done.len()
    }
}
