//! `UringDisk`: the [`Disk`] backend on io_uring (crate `io-uring` 0.7), one ring per
//! instance, owned by one thread.
//!
//! Data operations become SQEs: `Write`, `Read`, `Fdatasync` (Fsync with
//! `IORING_FSYNC_DATASYNC`), `Fallocate`, and `WriteDatasync` as a Write flagged
//! `IOSQE_IO_LINK` followed by a datasync Fsync, reported to the caller as ONE
//! completion. Namespace operations (open, rename, sync_dir, ...) are plain
//! synchronous system calls (shared with the syscall backend).
//!
//! Invariants:
//! - every operation's buffer lives in a slab slot from submit until all of its
//!   CQEs have arrived; the kernel only ever sees pointers to slot-owned buffers, and
//!   `Drop` waits for every CQE before freeing them (if the ring itself fails, the
//!   buffers are leaked rather than freed under the kernel);
//! - a CQE's `user_data` is `slot << 1 | part` (part 1 = the linked fsync), never the
//!   caller's value, which stays in the slot;
//! - `submit` pushes the SQEs and enters the kernel at once (no waiting), so an
//!   operation starts when it is submitted, not when it is reaped;
//! - **queue depth**: at most `queue_depth` operations are submitted and not yet
//!   reaped; `submit` beyond that fails with EAGAIN (`ErrorKind::WouldBlock`) without
//!   queueing, and the caller reaps first. The SQ has room for 2 SQEs per operation
//!   (a chunked write: see below) and the CQ for 4x that, so neither can overflow;
//! - a write (plain or linked) that transfers fewer bytes than asked is an error for
//!   the caller (EIO), never a short success. In a `WriteDatasync` whose write fails
//!   or is short, the kernel cancels the linked fsync (-ECANCELED); the caller sees the
//!   write's error (or EIO for a short write), and nothing was synced. If the write
//!   succeeded and the fsync failed, the caller sees the fsync's error;
//! - a read sets `buf.len()` to the count, short only at end of file;
//! - if `io_uring_enter` fails for good (not EINTR/EAGAIN/EBUSY), every operation in
//!   the kernel is completed with that error, its buffer leaked (never freed under
//!   the kernel), and the instance refuses further submits with EIO;
//! - a `WriteDatasync` larger than [`WRITE_CHUNK`] is not linked: its write is split
//!   into at most [`MAX_CHUNKS`] sector-aligned chunks (multiples of `WRITE_CHUNK`)
//!   submitted together, and the datasync Fsync is submitted only once every chunk
//!   has completed in full; if any chunk fails or is short, no sync is issued and the
//!   caller sees the first chunk error (or EIO). It is still ONE completion, with the
//!   whole write's byte count. (Measured: one 5 MiB O_DIRECT write + linked fsync ran
//!   at ~0.75 GB/s where 5 x 1 MiB concurrent writes + fsync ran at ~1.7 GB/s.)
//!   A chunked operation pushes at most min(`MAX_CHUNKS`, SQ size) SQEs; the CQ is
//!   4x the SQ (>= 8 CQEs per operation), so it cannot overflow either;
//! - `close` fails with EBUSY while operations of that file are not reaped;
//! - with **inline syncs** ([`UringDisk::set_inline_sync`]) no Fsync SQE is ever
//!   pushed: an `Fdatasync` runs fdatasync(2) on the calling thread at submit, and a
//!   `WriteDatasync` submits its write alone (chunked or not) and, once the write has
//!   completed in full, runs fdatasync(2) on the thread that reaps it; the results are
//!   reported exactly as for the linked form (a failed or short write: no sync, the
//!   write's error or EIO; a failed sync: the sync's error). Why: the kernel runs every
//!   io_uring fsync on an io-wq worker thread, so each one costs two thread hand-offs
//!   (wake the worker, wake the waiter); a thread that waits for the sync anyway, like
//!   the journal's committer, saves both by making the call itself (ARCHITECTURE.md,
//!   Journal; measured in docs/benchmarks.md "CPU per add").

use crate::fsutil::errno;
use crate::open_files::{real_namespace_ops, OpenFiles};
use crate::{AlignedBuf, Completion, Disk, FileId, Op};
use io_uring::{opcode, squeue, types, IoUring};
use std::collections::VecDeque;
use std::io;
use std::os::fd::AsRawFd;

/// A `WriteDatasync` above this size is split into concurrent chunks of a multiple
/// of it (see the module docs).
pub const WRITE_CHUNK: usize = 1 << 20;
/// At most this many chunks per `WriteDatasync` (fewer where the SQ is smaller).
pub const MAX_CHUNKS: usize = 8;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Write,
    WriteDatasync,
    Read,
    Fsync,
    Fallocate,
}

struct Slot {
    user_data: u64,
    file: FileId,
    kind: Kind,
    buf: Option<AlignedBuf>,
    /// Bytes a write asked for.
    want: usize,
    cqes_left: u32,
    first: i32,
    second: i32,
    /// Writes: bytes transferred by all chunks, and the first chunk error (0: none).
    written: usize,
    write_err: i32,
    /// Chunked `WriteDatasync`: the fsync is submitted after the chunks (on `fd`).
    deferred_sync: bool,
    sync_issued: bool,
    fd: i32,
}

/// The io_uring backend. See the module docs.
pub struct UringDisk {
    ring: IoUring,
    files: OpenFiles,
    slots: Vec<Option<Slot>>,
    free: Vec<usize>,
    ready: VecDeque<(FileId, Completion)>,
    queue_depth: usize,
    /// Operations submitted and not yet reaped (in the kernel or in `ready`).
    unreaped: usize,
    /// Operations whose CQEs have not all arrived.
    in_kernel: usize,
    /// Set when io_uring_enter failed for good: every later submit fails with EIO and
    /// late CQEs are ignored (their slots were already reported failed).
    broken: bool,
    /// Syncs run as fdatasync(2) on this instance's thread (module docs).
    inline_sync: bool,
}

fn transient(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EINTR) | Some(libc::EAGAIN) | Some(libc::EBUSY)
    )
}

impl UringDisk {
    /// A ring allowing `queue_depth` (at least 1) unreaped operations. Fails where
    /// io_uring cannot be set up (ENOSYS, EPERM under `io_uring_disabled` or seccomp)
    /// or lacks one of the opcodes used (EOPNOTSUPP).
    pub fn new(queue_depth: usize) -> io::Result<UringDisk> {
        let queue_depth = queue_depth.clamp(1, 1 << 12);
        let entries = u32::try_from((2 * queue_depth).next_power_of_two())
            .map_err(|_| errno(libc::EINVAL))?;
        let ring = IoUring::builder()
            .setup_cqsize(entries * 4)
            .build(entries)?;
        let mut probe = io_uring::Probe::new();
        ring.submitter().register_probe(&mut probe)?;
        for code in [
            opcode::Write::CODE,
            opcode::Read::CODE,
            opcode::Fsync::CODE,
            opcode::Fallocate::CODE,
        ] {
            if !probe.is_supported(code) {
                return Err(errno(libc::EOPNOTSUPP));
            }
        }
        Ok(UringDisk {
            ring,
            files: OpenFiles::default(),
            slots: (0..queue_depth).map(|_| None).collect(),
            free: (0..queue_depth).rev().collect(),
            ready: VecDeque::new(),
            queue_depth,
            unreaped: 0,
            in_kernel: 0,
            broken: false,
            inline_sync: false,
        })
    }

    /// Runs syncs as fdatasync(2) on the thread that submits (`Fdatasync`) or reaps
    /// (`WriteDatasync`) them instead of as io_uring Fsync operations (module docs).
    pub fn set_inline_sync(&mut self, on: bool) {
        self.inline_sync = on;
    }

    /// How many opens asked for O_DIRECT and were refused it by the file system.
    pub fn direct_refusals(&self) -> u64 {
        self.files.direct_refusals()
    }

    /// Whether an open file really uses O_DIRECT.
    pub fn is_direct(&self, file: FileId) -> Option<bool> {
        self.files.is_direct(file)
    }

    /// The bound on unreaped operations.
    pub fn queue_depth(&self) -> usize {
        self.queue_depth
    }

    /// Moves every available CQE into its slot; finished slots become completions.
    fn drain_cq(&mut self) {
        let cqes: Vec<(u64, i32)> = self
            .ring
            .completion()
            .map(|c| (c.user_data(), c.result()))
            .collect();
        if self.broken {
            return;
        }
        let mut pushed_sync = false;
        for (ud, res) in cqes {
            let idx = (ud >> 1) as usize;
            let part = ud & 1;
            let Some(Some(slot)) = self.slots.get_mut(idx) else {
                // Only our own encoded values are ever submitted.
                debug_assert!(false, "CQE for an unknown slot {idx}");
                continue;
            };
            if part == 0 {
                slot.first = res;
                if res < 0 {
                    if slot.write_err == 0 {
                        slot.write_err = res;
                    }
                } else {
                    slot.written += res as usize;
                }
            } else {
                slot.second = res;
            }
            slot.cqes_left -= 1;
            if slot.cqes_left == 0
                && slot.deferred_sync
                && !slot.sync_issued
                && slot.write_err == 0
                && slot.written == slot.want
                && self.inline_sync
            {
                // The write completed in full: the datasync, here and now.
                slot.sync_issued = true;
                slot.second = fdatasync_now(slot.fd);
            } else if slot.cqes_left == 0
                && slot.deferred_sync
                && !slot.sync_issued
                && slot.write_err == 0
                && slot.written == slot.want
            {
                // Every chunk completed in full: now the datasync.
                slot.sync_issued = true;
                slot.cqes_left = 1;
                let e = opcode::Fsync::new(types::Fd(slot.fd))
                    .flags(types::FsyncFlags::DATASYNC)
                    .build()
                    .user_data(ud | 1);
                // SAFETY: no buffer; the fd stays open while the operation is unreaped.
                if unsafe { self.ring.submission().push(&e) }.is_err() {
                    // The SQ is flushed to the kernel on every submit, so this only
                    // happens if it was not; flush and retry once.
                    let _ = self.ring.submit();
                    if unsafe { self.ring.submission().push(&e) }.is_err() {
                        slot.second = -libc::EAGAIN;
                        slot.cqes_left = 0;
                    }
                }
                pushed_sync = true;
            }
            if slot.cqes_left == 0 {
                if let Some(slot) = self.slots[idx].take() {
                    self.free.push(idx);
                    self.in_kernel -= 1;
                    let file = slot.file;
                    self.ready.push_back((file, finish(slot)));
                }
            }
        }
        if pushed_sync {
            if let Err(e) = self.ring.submit() {
                if !transient(&e) {
                    self.fail_all(&e);
                }
            }
        }
    }

    /// The ring failed for good: report every in-kernel operation as failed. Their
    /// buffers are leaked, not freed, since the kernel may still write into them.
    fn fail_all(&mut self, e: &io::Error) {
        self.broken = true;
        for idx in 0..self.slots.len() {
            if let Some(mut slot) = self.slots[idx].take() {
                if let Some(buf) = slot.buf.take() {
                    std::mem::forget(buf);
                }
                self.free.push(idx);
                self.in_kernel -= 1;
                let c = Completion {
                    user_data: slot.user_data,
                    result: Err(io::Error::new(e.kind(), format!("io_uring failed: {e}"))),
                    buf: None,
                };
                self.ready.push_back((slot.file, c));
            }
        }
    }

    /// Waits for at least one CQE (or for a transient condition to pass).
    fn wait_one(&mut self) {
        match self.ring.submit_and_wait(1) {
            Ok(_) => {}
            Err(e) if transient(&e) => {}
            Err(e) => self.fail_all(&e),
        }
    }
}

/// fdatasync(2) on `fd`, retried on EINTR: 0, or the negated errno (as a CQE reports it).
fn fdatasync_now(fd: i32) -> i32 {
    loop {
        // SAFETY: a plain system call on a descriptor this instance keeps open while the
        // operation is unreaped.
        if unsafe { libc::fdatasync(fd) } == 0 {
            return 0;
        }
        let e = io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO);
        if e != libc::EINTR {
            return -e;
        }
    }
}

fn finish(mut slot: Slot) -> Completion {
    let err = |res: i32| errno(-res);
    let result: io::Result<usize> = match slot.kind {
        Kind::Write => {
            if slot.write_err < 0 {
                Err(err(slot.write_err))
            } else if slot.written < slot.want {
                Err(errno(libc::EIO)) // short write
            } else {
                Ok(slot.written)
            }
        }
        Kind::WriteDatasync => {
            if slot.write_err < 0 {
                // The linked fsync was cancelled, or the deferred one never issued.
                Err(err(slot.write_err))
            } else if slot.written < slot.want
                || slot.second == -libc::ECANCELED
                || (slot.deferred_sync && !slot.sync_issued)
            {
                // A short write (the kernel then cancels the linked fsync, or the
                // deferred one is not issued): EIO.
                Err(errno(libc::EIO))
            } else if slot.second < 0 {
                Err(crate::sync_half_error(err(slot.second)))
            } else {
                Ok(slot.written)
            }
        }
        Kind::Read => {
            if slot.first < 0 {
                if let Some(b) = slot.buf.as_mut() {
                    b.set_len(0);
                }
                Err(err(slot.first))
            } else {
                let n = slot.first as usize;
                if let Some(b) = slot.buf.as_mut() {
                    b.set_len(n);
                }
                Ok(n)
            }
        }
        Kind::Fsync | Kind::Fallocate => {
            if slot.first < 0 {
                Err(err(slot.first))
            } else {
                Ok(0)
            }
        }
    };
    Completion {
        user_data: slot.user_data,
        result,
        buf: slot.buf,
    }
}

impl Disk for UringDisk {
    real_namespace_ops!(files);

    fn submit(&mut self, user_data: u64, op: Op) -> io::Result<()> {
        if self.broken {
            return Err(errno(libc::EIO));
        }
        if self.unreaped >= self.queue_depth {
            return Err(errno(libc::EAGAIN));
        }
        let file = op.file();
        let fd = types::Fd(self.files.get(file)?.file.as_raw_fd());
        let io_len = |n: usize| u32::try_from(n).map_err(|_| errno(libc::EINVAL));
        let (kind, mut buf, want, io_bytes, offset, falloc_len) = match op {
            Op::Write { offset, buf, .. } => {
                let n = buf.len();
                (Kind::Write, Some(buf), n, io_len(n)?, offset, 0)
            }
            Op::WriteDatasync { offset, buf, .. } => {
                let n = buf.len();
                (Kind::WriteDatasync, Some(buf), n, io_len(n)?, offset, 0)
            }
            Op::Read {
                offset, len, buf, ..
            } => {
                if len > buf.capacity() {
                    return Err(errno(libc::EINVAL));
                }
                (Kind::Read, Some(buf), 0, io_len(len)?, offset, 0)
            }
            Op::Fdatasync { .. } => (Kind::Fsync, None, 0, 0, 0, 0),
            Op::Fallocate { offset, len, .. } => (Kind::Fallocate, None, 0, 0, offset, len),
        };
        if kind == Kind::Fsync && self.inline_sync {
            // No SQE: the sync runs now, and its completion is ready at once.
            let res = fdatasync_now(fd.0);
            let result = if res < 0 { Err(errno(-res)) } else { Ok(0) };
            self.unreaped += 1;
            if let Ok(f) = self.files.get_mut(file) {
                f.unreaped += 1;
            }
            self.ready.push_back((
                file,
                Completion {
                    user_data,
                    result,
                    buf: None,
                },
            ));
            return Ok(());
        }
        let Some(idx) = self.free.pop() else {
            // unreaped < queue_depth guarantees a free slot.
            return Err(errno(libc::EAGAIN));
        };
        let ud = (idx as u64) << 1;
        let ptr = buf
            .as_mut()
            .map_or(std::ptr::null_mut(), |b| b.as_mut_ptr());
        let mut sqes: Vec<squeue::Entry> = Vec::with_capacity(2);
        let sq_capacity = self.ring.submission().capacity();
        let mut deferred_sync = false;
        match kind {
            Kind::Write => {
                sqes.push(
                    opcode::Write::new(fd, ptr, io_bytes)
                        .offset(offset)
                        .build()
                        .user_data(ud),
                );
            }
            Kind::WriteDatasync if want > WRITE_CHUNK && sq_capacity >= 2 => {
                // Concurrent chunks, the fsync after all of them (see module docs).
                let max_chunks = MAX_CHUNKS.min(sq_capacity);
                let chunk = want.div_ceil(max_chunks).div_ceil(WRITE_CHUNK) * WRITE_CHUNK;
                let mut at = 0usize;
                while at < want {
                    let n = chunk.min(want - at);
                    sqes.push(
                        // `at < want <= buf.len()`: the pointer stays inside the buffer;
                        // `n <= want`, which fits in u32 (checked as `io_bytes`).
                        opcode::Write::new(fd, ptr.wrapping_add(at), n as u32)
                            .offset(offset + at as u64)
                            .build()
                            .user_data(ud),
                    );
                    at += n;
                }
                deferred_sync = true;
            }
            Kind::WriteDatasync if self.inline_sync => {
                // The write alone; its sync runs when it is reaped (module docs).
                sqes.push(
                    opcode::Write::new(fd, ptr, io_bytes)
                        .offset(offset)
                        .build()
                        .user_data(ud),
                );
                deferred_sync = true;
            }
            Kind::WriteDatasync => {
                sqes.push(
                    opcode::Write::new(fd, ptr, io_bytes)
                        .offset(offset)
                        .build()
                        .flags(squeue::Flags::IO_LINK)
                        .user_data(ud),
                );
                sqes.push(
                    opcode::Fsync::new(fd)
                        .flags(types::FsyncFlags::DATASYNC)
                        .build()
                        .user_data(ud | 1),
                );
            }
            Kind::Read => {
                sqes.push(
                    opcode::Read::new(fd, ptr, io_bytes)
                        .offset(offset)
                        .build()
                        .user_data(ud),
                );
            }
            Kind::Fsync => {
                sqes.push(
                    opcode::Fsync::new(fd)
                        .flags(types::FsyncFlags::DATASYNC)
                        .build()
                        .user_data(ud),
                );
            }
            Kind::Fallocate => {
                sqes.push(
                    opcode::Fallocate::new(fd, falloc_len)
                        .offset(offset)
                        .mode(0)
                        .build()
                        .user_data(ud),
                );
            }
        }
        let n_sqes = sqes.len();
        // Room for both SQEs of a linked pair (always true by sizing; be defensive).
        let room = {
            let sq = self.ring.submission();
            sq.capacity() - sq.len()
        };
        if room < n_sqes {
            if let Err(e) = self.ring.submit() {
                if !transient(&e) {
                    self.free.push(idx);
                    return Err(e);
                }
            }
            let sq = self.ring.submission();
            if sq.capacity() - sq.len() < n_sqes {
                drop(sq);
                self.free.push(idx);
                return Err(errno(libc::EAGAIN));
            }
        }
        self.slots[idx] = Some(Slot {
            user_data,
            file,
            kind,
            buf,
            want,
            cqes_left: n_sqes as u32,
            first: 0,
            second: 0,
            written: 0,
            write_err: 0,
            deferred_sync,
            sync_issued: false,
            fd: fd.0,
        });
        {
            let mut sq = self.ring.submission();
            for e in sqes {
                // SAFETY: the buffer the SQE points to is owned by slot `idx`, which is
                // only emptied after the last CQE of this operation arrives (or leaked
                // by `fail_all`); the fd stays open because `close` refuses while the
                // operation is unreaped. Room was checked above.
                if unsafe { sq.push(&e) }.is_err() {
                    debug_assert!(false, "SQ full after the room check");
                }
            }
        }
        self.unreaped += 1;
        self.in_kernel += 1;
        if let Ok(f) = self.files.get_mut(file) {
            f.unreaped += 1;
        }
        // Start the I/O now; a transient failure leaves the SQEs for the next enter.
        if let Err(e) = self.ring.submit() {
            if !transient(&e) {
                self.fail_all(&e);
            }
        }
        Ok(())
    }

    fn reap(&mut self, min: usize) -> Vec<Completion> {
        let min = min.min(self.unreaped);
        if !self.ring.submission().is_empty() {
            if let Err(e) = self.ring.submit() {
                if !transient(&e) {
                    self.fail_all(&e);
                }
            }
        }
        self.drain_cq();
        while self.ready.len() < min {
            self.wait_one();
            self.drain_cq();
        }
        let mut out = Vec::with_capacity(self.ready.len());
        while let Some((file, c)) = self.ready.pop_front() {
            self.files.reaped(file);
            self.unreaped -= 1;
            out.push(c);
        }
        out
    }

    fn in_flight(&self) -> usize {
        self.unreaped
    }
}

impl Drop for UringDisk {
    fn drop(&mut self) {
        // The kernel may still write into slot buffers: wait for every CQE first.
        while self.in_kernel > 0 && !self.broken {
            self.wait_one();
            self.drain_cq();
        }
    }
}
