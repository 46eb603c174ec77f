//! The simulated disk: a seeded, deterministic, in-memory file system with real crash
//! semantics and injectable faults, for tests of everything above `bk-disk`.
//!
//! [`SimFs`] is the shared file system (cheap to clone, `Arc<Mutex<..>>` inside);
//! [`SimFs::disk`] hands out [`SimDisk`] handles, each one "ring" implementing
//! [`Disk`]. Several threads may each own a handle on the same `SimFs`.
//!
//! # Model
//!
//! - **Images.** Every file (inode) has a *volatile* image (what reads see: the page
//!   cache) and a *durable* image (what survives a crash), both sparse by sector, plus
//!   the ordered list of mutations (writes, size changes) made since its last
//!   successful sync. A successful `Fdatasync` (or the sync half of `WriteDatasync`)
//!   applies those mutations to the durable image. Syncing is per file, whichever
//!   handle made the writes, and covers only writes already *executed* (see below).
//! - **Directories.** Every directory has volatile and durable entry maps (name ->
//!   inode). `open(create)`, `remove` and `rename` change only the volatile map;
//!   `sync_dir(dir)` copies the volatile map of `dir` to its durable map. A rename
//!   across directories needs a `sync_dir` of both (syncing only the target leaves
//!   the file under both names after a crash, like a hard link). Directories
//!   themselves are durable as soon as `create_dir_all` returns (it syncs parents),
//!   and are never removed. The roots `/` and `` (relative paths) always exist.
//!   An unlinked file stays readable through handles that have it open.
//! - **Execution and ordering.** `submit` only queues. `reap` picks queued operations
//!   of this handle in a seeded random order and executes each against the file
//!   system at that moment: that is when a write reaches the volatile image. So two
//!   operations in flight together may take effect in either order; in particular an
//!   `Fdatasync` submitted while a `Write` of the same file is still in flight may
//!   run before it and not cover it (as with io_uring without IO_LINK). `reap(min)`
//!   executes at least `min` operations and each further one with probability 1/2.
//!   A `WriteDatasync` executes its write and then, only if it fully succeeded, its
//!   sync, atomically with respect to other operations.
//! - **Alignment.** Data operations must use sector-aligned offsets and lengths
//!   (like O_DIRECT); otherwise the completion is EINVAL. `set_len` may be unaligned.
//! - **Crash** ([`SimFs::crash`]): in-flight (unexecuted) operations are lost. Each
//!   file restarts from its durable image, then each unsynced mutation, in order, is
//!   replayed or not (seeded): a write is wholly lost, wholly kept, or torn, where a
//!   torn write keeps a seeded subset of its sectors (SECTOR granularity: some sectors
//!   new, some old, never a partial sector); a size change is kept or lost. Each
//!   directory forgets its unsynced entries (volatile := durable); files no durable
//!   entry names are deleted. The handles from before the crash become invalid: every
//!   call on them fails with ESTALE, and their in-flight operations complete with
//!   ESTALE. A new handle from [`SimFs::disk`] sees the post-crash state.
//!   [`SimFs::crash`] only simulates power loss: it is always "clean" with respect to
//!   synced data, which always survives.
//!
//! # Faults ([`Faults`], set with [`SimFs::set_faults`])
//!
//! Probabilities are per executed operation; one-shot triggers fire on the Nth
//! operation of their class (1-based, counted from the last `set_faults`; the write
//! class includes the write half of `WriteDatasync`, the sync class its sync half).
//! Every injected fault is appended to the fault log ([`SimFs::fault_log`]).
//!
//! - `read_eio`, `fail_read_nth`: the read fails with EIO; nothing is returned.
//! - `write_eio`, `fail_write_nth`: the write fails with EIO; nothing is written.
//! - `sync_eio`, `fail_sync_nth`: the sync fails with EIO. Linux semantics (the
//!   "fsyncgate" behaviour of ext4/xfs): the dirty pages are marked clean and dropped
//!   from the writeback list, so the file's unsynced mutations are discarded from the
//!   sync list without reaching the durable image. Reads keep seeing the new data
//!   (clean page cache) until a crash, and a *later successful sync does not make
//!   them durable*: they are lost at the next crash. A caller must treat a failed
//!   sync as fatal for that data. A failed `WriteDatasync` sync completes with EIO.
//! - `enospc`, `enospc_write_nth`, `capacity_bytes`: the write (or fallocate, or
//!   extending `set_len`) fails with ENOSPC and changes nothing. With
//!   `capacity_bytes`, an operation that would make the sum of all files' sizes
//!   (rounded up to sectors, holes counted) exceed it fails with ENOSPC; `space()`
//!   reports it as the total. Capacity failures are not logged (they are not
//!   injected corruption, just a full disk).
//! - `sync_dir_eio`, `fail_sync_dir_nth`: `sync_dir` fails with EIO and the
//!   directory's durable entries stay as they were (its creates, removes and renames
//!   are forgotten by a crash unless a later `sync_dir` succeeds). The one-shot
//!   counter counts `sync_dir` calls.
//! - `delay`: each reap, an operation is held back with this probability unless it
//!   is needed to reach `min`: simulated latency, visible only as ordering.
//! - `read_bit_flip`: a successful read returns its data with one bit flipped; the
//!   stored data is unchanged (a transient bus/DRAM error).
//! - `torn_write`: the write stores a seeded strict subset of its sectors and then
//!   fails with EIO (power-cut-like tear observed at run time).
//! - `misdirected_write`: the write reports success but its data lands 1..=8 sectors
//!   away from the asked offset (never below 0); the intended range keeps its old
//!   data and the wrong range is overwritten. This *does* change the stored image
//!   (it becomes durable with the next sync like any write).
//!
//! True data versus injected faults: tests compare what the system under test
//! returns against what it was told to store, and consult the fault log to know
//! which deviations were injected (a read bit flip or misdirected write) and which
//! would be real data loss. [`SimFs::flip_bit`] corrupts a stored file on purpose
//! (logged as [`FaultEvent::ManualBitFlip`]).
//!
//! # Determinism
//!
//! All choices come from one ChaCha8 generator seeded by the `u64` given to
//! [`SimFs::new`]. The same seed and the same sequence of calls give the same
//! outcome, bit for bit. With several threads using handles concurrently, the
//! interleaving of their calls is up to the OS scheduler, so only single-threaded
//! use (or a deterministic scheduler above) is reproducible.

use crate::fsutil::errno;
use crate::{round_up, AlignedBuf, Completion, Disk, FileId, Op, OpenOptions, SpaceInfo, SECTOR};
use parking_lot::Mutex;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

const S: u64 = SECTOR as u64;

/// Reported total size of a simulated file system without `capacity_bytes`.
pub const DEFAULT_SIM_TOTAL_BYTES: u64 = 1 << 40;

/// Fault probabilities (0.0..=1.0, per executed operation) and one-shot triggers.
/// `Faults::default()` injects nothing. See the module docs for each fault's effect.
#[derive(Clone, Debug, Default)]
pub struct Faults {
    pub read_eio: f64,
    pub write_eio: f64,
    pub sync_eio: f64,
    pub enospc: f64,
    pub delay: f64,
    pub read_bit_flip: f64,
    pub torn_write: f64,
    pub misdirected_write: f64,
    /// Fail the Nth read (1-based, counted from `set_faults`) with EIO.
    pub fail_read_nth: Option<u64>,
    /// Fail the Nth write with EIO.
    pub fail_write_nth: Option<u64>,
    /// Fail the Nth sync with EIO (with the Linux dirty-page-drop semantics).
    pub fail_sync_nth: Option<u64>,
    /// Fail the Nth write with ENOSPC.
    pub enospc_write_nth: Option<u64>,
    /// Probability that `sync_dir` fails with EIO (its entries stay not durable).
    pub sync_dir_eio: f64,
    /// Fail the Nth `sync_dir` with EIO.
    pub fail_sync_dir_nth: Option<u64>,
    /// Capacity of the file system in bytes (sum of file sizes rounded to sectors).
    pub capacity_bytes: Option<u64>,
}

/// One injected fault or simulated event, in the order they happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FaultEvent {
    ReadEio {
        path: PathBuf,
        offset: u64,
    },
    WriteEio {
        path: PathBuf,
        offset: u64,
        len: u64,
    },
    /// A sync failed; `dropped_mutations` unsynced mutations will never be durable.
    SyncEio {
        path: PathBuf,
        dropped_mutations: usize,
    },
    Enospc {
        path: PathBuf,
        offset: u64,
    },
    /// A `sync_dir` failed; the directory's durable entries did not change.
    SyncDirEio {
        dir: PathBuf,
    },
    /// A read returned the bit `bit` of file byte `offset` flipped (storage intact).
    ReadBitFlip {
        path: PathBuf,
        offset: u64,
        bit: u8,
    },
    /// A write stored only the sectors at `written` (file offsets), then failed.
    TornWrite {
        path: PathBuf,
        offset: u64,
        len: u64,
        written: Vec<u64>,
    },
    /// A write meant for `intended` was stored at `actual`.
    MisdirectedWrite {
        path: PathBuf,
        intended: u64,
        actual: u64,
        len: u64,
    },
    /// [`SimFs::flip_bit`] corrupted the stored file.
    ManualBitFlip {
        path: PathBuf,
        offset: u64,
        bit: u8,
    },
    /// [`SimFs::crash`] happened: how the unsynced writes fared.
    Crash {
        writes_lost: usize,
        writes_kept: usize,
        writes_torn: usize,
        entries_forgotten: usize,
    },
}

/// A sparse image: sector index -> sector bytes; absent sectors read as zeros.
#[derive(Clone, Default)]
struct Image {
    len: u64,
    sectors: BTreeMap<u64, Box<[u8]>>,
}

impl Image {
    fn read(&self, offset: u64, out: &mut [u8]) -> usize {
        if offset >= self.len {
            return 0;
        }
        let n = (out.len() as u64).min(self.len - offset) as usize;
        let mut done = 0usize;
        while done < n {
            let pos = offset + done as u64;
            let idx = pos / S;
            let within = (pos % S) as usize;
            let take = (SECTOR - within).min(n - done);
            match self.sectors.get(&idx) {
                Some(sec) => out[done..done + take].copy_from_slice(&sec[within..within + take]),
                None => out[done..done + take].fill(0),
            }
            done += take;
        }
        n
    }

    fn write(&mut self, offset: u64, data: &[u8]) {
        let mut done = 0usize;
        while done < data.len() {
            let pos = offset + done as u64;
            let idx = pos / S;
            let within = (pos % S) as usize;
            let take = (SECTOR - within).min(data.len() - done);
            let sec = self
                .sectors
                .entry(idx)
                .or_insert_with(|| vec![0u8; SECTOR].into_boxed_slice());
            sec[within..within + take].copy_from_slice(&data[done..done + take]);
            done += take;
        }
        self.len = self.len.max(offset + data.len() as u64);
    }

    fn set_len(&mut self, len: u64) {
        if len < self.len {
            let first_gone = len.div_ceil(S);
            let _ = self.sectors.split_off(&first_gone);
            if !len.is_multiple_of(S) {
                if let Some(sec) = self.sectors.get_mut(&(len / S)) {
                    sec[(len % S) as usize..].fill(0);
                }
            }
        }
        self.len = len;
    }

    fn flip_bit(&mut self, offset: u64, bit: u8) {
        let idx = offset / S;
        let sec = self
            .sectors
            .entry(idx)
            .or_insert_with(|| vec![0u8; SECTOR].into_boxed_slice());
        sec[(offset % S) as usize] ^= 1 << (bit & 7);
    }

    fn bytes(&self) -> Vec<u8> {
        let mut v = vec![0u8; self.len as usize];
        self.read(0, &mut v);
        v
    }
}

#[derive(Clone)]
enum Mutation {
    Write { offset: u64, data: Vec<u8> },
    SetLen(u64),
}

impl Mutation {
    fn apply(&self, img: &mut Image) {
        match self {
            Mutation::Write { offset, data } => img.write(*offset, data),
            Mutation::SetLen(n) => img.set_len(*n),
        }
    }
}

#[derive(Default)]
struct Inode {
    volatile: Image,
    durable: Image,
    unsynced: Vec<Mutation>,
    open_count: usize,
}

impl Inode {
    fn mutate(&mut self, m: Mutation) {
        m.apply(&mut self.volatile);
        self.unsynced.push(m);
    }
}

#[derive(Default)]
struct Dir {
    volatile: BTreeMap<OsString, u64>,
    durable: BTreeMap<OsString, u64>,
}

#[derive(Default)]
struct Counts {
    reads: u64,
    writes: u64,
    syncs: u64,
    dir_syncs: u64,
}

struct State {
    rng: ChaCha8Rng,
    faults: Faults,
    counts: Counts,
    dirs: BTreeMap<PathBuf, Dir>,
    inodes: HashMap<u64, Inode>,
    next_inode: u64,
    generation: u64,
    log: Vec<FaultEvent>,
}

/// Largest file offset Linux accepts (`loff_t` is signed).
const MAX_FILE_BYTES: u64 = i64::MAX as u64;

/// EINVAL if `offset..offset + len` does not fit in a file (as the kernel does for
/// pread/pwrite/ftruncate; fallocate would say EFBIG), instead of overflowing.
fn check_range(offset: u64, len: u64) -> io::Result<()> {
    match offset.checked_add(len) {
        Some(end) if end <= MAX_FILE_BYTES => Ok(()),
        _ => Err(errno(libc::EINVAL)),
    }
}

fn split(path: &Path) -> io::Result<(PathBuf, OsString)> {
    let name = path.file_name().ok_or_else(|| errno(libc::EINVAL))?;
    let parent = path.parent().map(Path::to_path_buf).unwrap_or_default();
    Ok((parent, name.to_os_string()))
}

impl State {
    fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.rng.random_bool(p.min(1.0))
    }

    fn lookup(&self, path: &Path) -> io::Result<u64> {
        let (parent, name) = split(path)?;
        let dir = self.dirs.get(&parent).ok_or_else(|| errno(libc::ENOENT))?;
        dir.volatile
            .get(&name)
            .copied()
            .ok_or_else(|| errno(libc::ENOENT))
    }

    fn lookup_durable(&self, path: &Path) -> io::Result<u64> {
        let (parent, name) = split(path)?;
        let dir = self.dirs.get(&parent).ok_or_else(|| errno(libc::ENOENT))?;
        dir.durable
            .get(&name)
            .copied()
            .ok_or_else(|| errno(libc::ENOENT))
    }

    /// Deletes `ino` if no entry (volatile or durable) names it and nothing has it open.
    fn gc(&mut self, ino: u64) {
        let open = self.inodes.get(&ino).is_some_and(|i| i.open_count > 0);
        if open {
            return;
        }
        let named = self.dirs.values().any(|d| {
            d.volatile.values().any(|&i| i == ino) || d.durable.values().any(|&i| i == ino)
        });
        if !named {
            self.inodes.remove(&ino);
        }
    }

    fn used_bytes(&self) -> u64 {
        self.inodes
            .values()
            .map(|i| round_up(i.volatile.len as usize, SECTOR) as u64)
            .sum()
    }

    /// ENOSPC if growing a file from `old_len` to `new_len` exceeds the capacity.
    fn check_capacity(&self, old_len: u64, new_len: u64) -> io::Result<()> {
        if let Some(cap) = self.faults.capacity_bytes {
            let old = old_len.div_ceil(S) * S;
            let new = new_len.div_ceil(S) * S;
            if new > old && self.used_bytes() + (new - old) > cap {
                return Err(errno(libc::ENOSPC));
            }
        }
        Ok(())
    }

    fn inode(&mut self, ino: u64) -> io::Result<&mut Inode> {
        // An open file's inode always exists (open_count keeps it); ESTALE otherwise.
        self.inodes.get_mut(&ino).ok_or_else(|| errno(libc::ESTALE))
    }

    fn do_read(
        &mut self,
        f: &SimFile,
        offset: u64,
        len: usize,
        buf: &mut AlignedBuf,
    ) -> io::Result<usize> {
        if !offset.is_multiple_of(S) || !len.is_multiple_of(SECTOR) || len > buf.capacity() {
            return Err(errno(libc::EINVAL));
        }
        check_range(offset, len as u64)?;
        self.counts.reads += 1;
        let nth = self.faults.fail_read_nth == Some(self.counts.reads);
        let p = self.faults.read_eio;
        if nth || self.chance(p) {
            self.log.push(FaultEvent::ReadEio {
                path: f.path.clone(),
                offset,
            });
            return Err(errno(libc::EIO));
        }
        let n = self
            .inode(f.inode)?
            .volatile
            .read(offset, &mut buf.full_mut()[..len]);
        buf.set_len(n);
        let p = self.faults.read_bit_flip;
        if n > 0 && self.chance(p) {
            let at = self.rng.random_range(0..n);
            let bit = self.rng.random_range(0..8u8);
            buf.as_mut_slice()[at] ^= 1 << bit;
            self.log.push(FaultEvent::ReadBitFlip {
                path: f.path.clone(),
                offset: offset + at as u64,
                bit,
            });
        }
        Ok(n)
    }

    fn do_write(&mut self, f: &SimFile, offset: u64, data: &[u8]) -> io::Result<usize> {
        if !f.writable {
            return Err(errno(libc::EBADF));
        }
        if !offset.is_multiple_of(S) || !data.len().is_multiple_of(SECTOR) {
            return Err(errno(libc::EINVAL));
        }
        check_range(offset, data.len() as u64)?;
        self.counts.writes += 1;
        let len = data.len() as u64;
        let nth = self.faults.fail_write_nth == Some(self.counts.writes);
        let p = self.faults.write_eio;
        if nth || self.chance(p) {
            self.log.push(FaultEvent::WriteEio {
                path: f.path.clone(),
                offset,
                len,
            });
            return Err(errno(libc::EIO));
        }
        let nth = self.faults.enospc_write_nth == Some(self.counts.writes);
        let p = self.faults.enospc;
        if nth || self.chance(p) {
            self.log.push(FaultEvent::Enospc {
                path: f.path.clone(),
                offset,
            });
            return Err(errno(libc::ENOSPC));
        }
        let old_len = self.inode(f.inode)?.volatile.len;
        self.check_capacity(old_len, old_len.max(offset + len))?;
        let sectors = data.len() / SECTOR;
        let p = self.faults.torn_write;
        if sectors > 0 && self.chance(p) {
            // A strict subset of the sectors reaches the file, then EIO.
            let mut keep: Vec<bool> = (0..sectors).map(|_| self.rng.random_bool(0.5)).collect();
            if keep.iter().all(|&k| k) {
                let i = self.rng.random_range(0..sectors);
                keep[i] = false;
            }
            let mut written = Vec::new();
            let ino = self.inode(f.inode)?;
            for (i, k) in keep.iter().enumerate() {
                if *k {
                    let at = offset + (i * SECTOR) as u64;
                    ino.mutate(Mutation::Write {
                        offset: at,
                        data: data[i * SECTOR..(i + 1) * SECTOR].to_vec(),
                    });
                    written.push(at);
                }
            }
            self.log.push(FaultEvent::TornWrite {
                path: f.path.clone(),
                offset,
                len,
                written,
            });
            return Err(errno(libc::EIO));
        }
        let p = self.faults.misdirected_write;
        let mut actual = offset;
        if self.chance(p) {
            let delta = self.rng.random_range(1..=8u64) * S;
            actual = if self.rng.random_bool(0.5) && offset >= delta {
                offset - delta
            } else {
                offset + delta
            };
            if check_range(actual, len).is_err() {
                actual = offset.saturating_sub(delta);
            }
            self.check_capacity(old_len, old_len.max(actual + len))?;
            self.log.push(FaultEvent::MisdirectedWrite {
                path: f.path.clone(),
                intended: offset,
                actual,
                len,
            });
        }
        self.inode(f.inode)?.mutate(Mutation::Write {
            offset: actual,
            data: data.to_vec(),
        });
        Ok(data.len())
    }

    fn do_sync(&mut self, f: &SimFile) -> io::Result<usize> {
        self.counts.syncs += 1;
        let nth = self.faults.fail_sync_nth == Some(self.counts.syncs);
        let p = self.faults.sync_eio;
        let fail = nth || self.chance(p);
        let ino = self.inode(f.inode)?;
        let pending = std::mem::take(&mut ino.unsynced);
        if fail {
            // Linux: the dirty pages are dropped from writeback (marked clean); the
            // mutations never reach the durable image, even after a later sync.
            self.log.push(FaultEvent::SyncEio {
                path: f.path.clone(),
                dropped_mutations: pending.len(),
            });
            return Err(errno(libc::EIO));
        }
        for m in &pending {
            m.apply(&mut ino.durable);
        }
        Ok(0)
    }

    fn do_fallocate(&mut self, f: &SimFile, offset: u64, len: u64) -> io::Result<usize> {
        if !f.writable {
            return Err(errno(libc::EBADF));
        }
        if len == 0 {
            return Err(errno(libc::EINVAL));
        }
        check_range(offset, len)?;
        let end = offset + len;
        let old_len = self.inode(f.inode)?.volatile.len;
        if end > old_len {
            let p = self.faults.enospc;
            if self.chance(p) {
                self.log.push(FaultEvent::Enospc {
                    path: f.path.clone(),
                    offset,
                });
                return Err(errno(libc::ENOSPC));
            }
            self.check_capacity(old_len, end)?;
            self.inode(f.inode)?.mutate(Mutation::SetLen(end));
        }
        Ok(0)
    }

    fn execute(&mut self, f: Option<&SimFile>, op: Op, user_data: u64) -> Completion {
        let Some(f) = f else {
            // The file was closed with this operation in flight (a caller bug that
            // `close` refuses), or the handle is stale.
            let buf = match op {
                Op::Write { buf, .. } | Op::WriteDatasync { buf, .. } | Op::Read { buf, .. } => {
                    Some(buf)
                }
                _ => None,
            };
            return Completion {
                user_data,
                result: Err(errno(libc::EBADF)),
                buf,
            };
        };
        let (result, buf) = match op {
            Op::Write { offset, buf, .. } => (self.do_write(f, offset, buf.as_slice()), Some(buf)),
            Op::WriteDatasync { offset, buf, .. } => {
                let r = self
                    .do_write(f, offset, buf.as_slice())
                    .and_then(|n| self.do_sync(f).map(|_| n));
                (r, Some(buf))
            }
            Op::Read {
                offset,
                len,
                mut buf,
                ..
            } => {
                let r = self.do_read(f, offset, len, &mut buf);
                if r.is_err() {
                    buf.set_len(0);
                }
                (r, Some(buf))
            }
            Op::Fdatasync { .. } => (self.do_sync(f), None),
            Op::Fallocate { offset, len, .. } => (self.do_fallocate(f, offset, len), None),
        };
        Completion {
            user_data,
            result,
            buf,
        }
    }

    fn crash(&mut self) {
        let mut lost = 0;
        let mut kept = 0;
        let mut torn = 0;
        let mut forgotten = 0;
        let mut inos: Vec<u64> = self.inodes.keys().copied().collect();
        inos.sort_unstable(); // HashMap order is not deterministic
        for ino in inos {
            let Some(mut inode) = self.inodes.remove(&ino) else {
                continue;
            };
            let mut img = std::mem::take(&mut inode.durable);
            for m in std::mem::take(&mut inode.unsynced) {
                match m {
                    Mutation::Write { offset, data } => match self.rng.random_range(0..3u8) {
                        0 => lost += 1,
                        1 => {
                            kept += 1;
                            img.write(offset, &data);
                        }
                        _ => {
                            torn += 1;
                            for (i, chunk) in data.chunks(SECTOR).enumerate() {
                                if self.rng.random_bool(0.5) {
                                    img.write(offset + (i * SECTOR) as u64, chunk);
                                }
                            }
                        }
                    },
                    Mutation::SetLen(n) => {
                        if self.rng.random_bool(0.5) {
                            img.set_len(n);
                        }
                    }
                }
            }
            inode.volatile = img.clone();
            inode.durable = img;
            inode.open_count = 0;
            self.inodes.insert(ino, inode);
        }
        for dir in self.dirs.values_mut() {
            for (name, ino) in &dir.volatile {
                if dir.durable.get(name) != Some(ino) {
                    forgotten += 1;
                }
            }
            dir.volatile = dir.durable.clone();
        }
        let mut inos: Vec<u64> = self.inodes.keys().copied().collect();
        inos.sort_unstable();
        for ino in inos {
            self.gc(ino);
        }
        self.generation += 1;
        self.log.push(FaultEvent::Crash {
            writes_lost: lost,
            writes_kept: kept,
            writes_torn: torn,
            entries_forgotten: forgotten,
        });
    }
}

/// The shared simulated file system. Clones share the same state.
#[derive(Clone)]
pub struct SimFs {
    state: Arc<Mutex<State>>,
}

impl SimFs {
    /// An empty file system (only the roots `/` and `` exist), no faults.
    pub fn new(seed: u64) -> SimFs {
        Self::with_faults(seed, Faults::default())
    }

    /// An empty file system with faults set from the start.
    pub fn with_faults(seed: u64, faults: Faults) -> SimFs {
        let mut dirs = BTreeMap::new();
        dirs.insert(PathBuf::from("/"), Dir::default());
        dirs.insert(PathBuf::new(), Dir::default());
        SimFs {
            state: Arc::new(Mutex::new(State {
                rng: ChaCha8Rng::seed_from_u64(seed),
                faults,
                counts: Counts::default(),
                dirs,
                inodes: HashMap::new(),
                next_inode: 1,
                generation: 0,
                log: Vec::new(),
            })),
        }
    }

    /// A new handle ("ring") on this file system, seeing its current state.
    pub fn disk(&self) -> SimDisk {
        let generation = self.state.lock().generation;
        SimDisk {
            fs: self.clone(),
            generation,
            files: HashMap::new(),
            next_id: 0,
            pending: Vec::new(),
            queue_depth: crate::DEFAULT_QUEUE_DEPTH,
        }
    }

    /// Replaces the fault configuration and restarts the one-shot counters.
    pub fn set_faults(&self, faults: Faults) {
        let mut st = self.state.lock();
        st.faults = faults;
        st.counts = Counts::default();
    }

    /// The current fault configuration.
    pub fn faults(&self) -> Faults {
        self.state.lock().faults.clone()
    }

    /// Simulates power loss; see the module docs. Existing handles become invalid.
    pub fn crash(&self) {
        self.state.lock().crash();
    }

    /// Every injected fault and crash so far, in order.
    pub fn fault_log(&self) -> Vec<FaultEvent> {
        self.state.lock().log.clone()
    }

    /// Flips bit `bit` (0..8) of byte `offset` of the file at `path`, in both its
    /// durable and volatile images (media corruption). EINVAL if `offset` is beyond
    /// the durable size. Logged as [`FaultEvent::ManualBitFlip`].
    pub fn flip_bit(&self, path: &Path, offset: u64, bit: u8) -> io::Result<()> {
        let mut st = self.state.lock();
        let ino = st.lookup_durable(path)?;
        let inode = st.inode(ino)?;
        if offset >= inode.durable.len {
            return Err(errno(libc::EINVAL));
        }
        inode.durable.flip_bit(offset, bit);
        if offset < inode.volatile.len {
            inode.volatile.flip_bit(offset, bit);
        }
        st.log.push(FaultEvent::ManualBitFlip {
            path: path.to_path_buf(),
            offset,
            bit: bit & 7,
        });
        Ok(())
    }

    /// The durable contents of the file a durable directory entry names (what a crash
    /// now would keep, before the crash's choices about unsynced writes).
    pub fn durable_contents(&self, path: &Path) -> io::Result<Vec<u8>> {
        let mut st = self.state.lock();
        let ino = st.lookup_durable(path)?;
        Ok(st.inode(ino)?.durable.bytes())
    }

    /// The volatile contents (what reads see now) of the file at `path`.
    pub fn volatile_contents(&self, path: &Path) -> io::Result<Vec<u8>> {
        let mut st = self.state.lock();
        let ino = st.lookup(path)?;
        Ok(st.inode(ino)?.volatile.bytes())
    }

    /// Names of the files `dir` durably holds, sorted.
    pub fn durable_list_dir(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        let st = self.state.lock();
        let d = st.dirs.get(dir).ok_or_else(|| errno(libc::ENOENT))?;
        Ok(d.durable.keys().map(PathBuf::from).collect())
    }
}

/// Locks the state, failing with ESTALE if a crash happened after `generation`.
fn lock_gen(
    state: &Mutex<State>,
    generation: u64,
) -> io::Result<parking_lot::MutexGuard<'_, State>> {
    let st = state.lock();
    if st.generation != generation {
        return Err(errno(libc::ESTALE));
    }
    Ok(st)
}

struct SimFile {
    inode: u64,
    writable: bool,
    /// The path it was opened by (for the fault log).
    path: PathBuf,
}

/// One handle ("ring") on a [`SimFs`]; implements [`Disk`]. See the module docs.
pub struct SimDisk {
    fs: SimFs,
    generation: u64,
    files: HashMap<FileId, SimFile>,
    next_id: u32,
    pending: Vec<(u64, Op)>,
    queue_depth: usize,
}

impl SimDisk {
    /// Sets the bound on unreaped operations (default [`crate::DEFAULT_QUEUE_DEPTH`]).
    pub fn set_queue_depth(&mut self, depth: usize) {
        self.queue_depth = depth.max(1);
    }

    /// The file system this handle belongs to.
    pub fn fs(&self) -> &SimFs {
        &self.fs
    }

    fn file(&self, file: FileId) -> io::Result<&SimFile> {
        self.files.get(&file).ok_or_else(|| errno(libc::EBADF))
    }
}

impl Drop for SimDisk {
    fn drop(&mut self) {
        let state = Arc::clone(&self.fs.state);
        if let Ok(mut st) = lock_gen(&state, self.generation) {
            for f in self.files.values() {
                if let Some(i) = st.inodes.get_mut(&f.inode) {
                    i.open_count = i.open_count.saturating_sub(1);
                }
                st.gc(f.inode);
            }
        };
    }
}

impl Disk for SimDisk {
    fn open(&mut self, path: &Path, opts: OpenOptions) -> io::Result<FileId> {
        let state = Arc::clone(&self.fs.state);
        let mut st = lock_gen(&state, self.generation)?;
        if st.dirs.contains_key(path) {
            return Err(errno(libc::EISDIR));
        }
        let (parent, name) = split(path)?;
        let dir = st
            .dirs
            .get_mut(&parent)
            .ok_or_else(|| errno(libc::ENOENT))?;
        let ino = match dir.volatile.get(&name) {
            Some(&ino) if !opts.create_new => ino,
            Some(_) => return Err(errno(libc::EEXIST)),
            None if opts.create || opts.create_new => {
                let ino = st.next_inode;
                st.next_inode += 1;
                st.inodes.insert(ino, Inode::default());
                if let Some(dir) = st.dirs.get_mut(&parent) {
                    dir.volatile.insert(name, ino);
                }
                ino
            }
            None => return Err(errno(libc::ENOENT)),
        };
        st.inode(ino)?.open_count += 1;
        drop(st);
        let id = loop {
            let id = FileId(self.next_id);
            self.next_id = self.next_id.wrapping_add(1);
            if !self.files.contains_key(&id) {
                break id;
            }
        };
        self.files.insert(
            id,
            SimFile {
                inode: ino,
                writable: opts.write || opts.create || opts.create_new,
                path: path.to_path_buf(),
            },
        );
        Ok(id)
    }

    fn close(&mut self, file: FileId) -> io::Result<()> {
        let state = Arc::clone(&self.fs.state);
        let mut st = lock_gen(&state, self.generation)?;
        let f = self.files.get(&file).ok_or_else(|| errno(libc::EBADF))?;
        if self.pending.iter().any(|(_, op)| op.file() == file) {
            return Err(errno(libc::EBUSY));
        }
        let ino = f.inode;
        if let Some(i) = st.inodes.get_mut(&ino) {
            i.open_count = i.open_count.saturating_sub(1);
        }
        st.gc(ino);
        drop(st);
        self.files.remove(&file);
        Ok(())
    }

    fn file_len(&mut self, file: FileId) -> io::Result<u64> {
        let state = Arc::clone(&self.fs.state);
        let mut st = lock_gen(&state, self.generation)?;
        let ino = self.file(file)?.inode;
        Ok(st.inode(ino)?.volatile.len)
    }

    fn set_len(&mut self, file: FileId, len: u64) -> io::Result<()> {
        let state = Arc::clone(&self.fs.state);
        let mut st = lock_gen(&state, self.generation)?;
        let f = self.file(file)?;
        if !f.writable {
            return Err(errno(libc::EINVAL));
        }
        check_range(len, 0)?;
        let old = st.inode(f.inode)?.volatile.len;
        st.check_capacity(old, len)?;
        st.inode(f.inode)?.mutate(Mutation::SetLen(len));
        Ok(())
    }

    fn remove(&mut self, path: &Path) -> io::Result<()> {
        let state = Arc::clone(&self.fs.state);
        let mut st = lock_gen(&state, self.generation)?;
        if st.dirs.contains_key(path) {
            return Err(errno(libc::EISDIR));
        }
        let (parent, name) = split(path)?;
        let dir = st
            .dirs
            .get_mut(&parent)
            .ok_or_else(|| errno(libc::ENOENT))?;
        let ino = dir
            .volatile
            .remove(&name)
            .ok_or_else(|| errno(libc::ENOENT))?;
        st.gc(ino);
        Ok(())
    }

    fn rename(&mut self, from: &Path, to: &Path) -> io::Result<()> {
        let state = Arc::clone(&self.fs.state);
        let mut st = lock_gen(&state, self.generation)?;
        let ino = st.lookup(from)?;
        let (to_parent, to_name) = split(to)?;
        if st.dirs.contains_key(to) {
            return Err(errno(libc::EISDIR));
        }
        if !st.dirs.contains_key(&to_parent) {
            return Err(errno(libc::ENOENT));
        }
        let (from_parent, from_name) = split(from)?;
        if let Some(d) = st.dirs.get_mut(&from_parent) {
            d.volatile.remove(&from_name);
        }
        let replaced = st
            .dirs
            .get_mut(&to_parent)
            .and_then(|d| d.volatile.insert(to_name, ino));
        if let Some(old) = replaced {
            if old != ino {
                st.gc(old);
            }
        }
        Ok(())
    }

    fn sync_dir(&mut self, dir: &Path) -> io::Result<()> {
        let state = Arc::clone(&self.fs.state);
        let mut st = lock_gen(&state, self.generation)?;
        if !st.dirs.contains_key(dir) {
            return Err(errno(libc::ENOENT));
        }
        st.counts.dir_syncs += 1;
        let nth = st.faults.fail_sync_dir_nth == Some(st.counts.dir_syncs);
        let p = st.faults.sync_dir_eio;
        if nth || st.chance(p) {
            st.log.push(FaultEvent::SyncDirEio {
                dir: dir.to_path_buf(),
            });
            return Err(errno(libc::EIO));
        }
        let d = st.dirs.get_mut(dir).ok_or_else(|| errno(libc::ENOENT))?;
        let dropped: Vec<u64> = d
            .durable
            .values()
            .copied()
            .filter(|i| !d.volatile.values().any(|v| v == i))
            .collect();
        d.durable = d.volatile.clone();
        for ino in dropped {
            st.gc(ino);
        }
        Ok(())
    }

    fn create_dir_all(&mut self, dir: &Path) -> io::Result<()> {
        let state = Arc::clone(&self.fs.state);
        let mut st = lock_gen(&state, self.generation)?;
        let mut missing = Vec::new();
        let mut cur = dir;
        while !st.dirs.contains_key(cur) {
            missing.push(cur.to_path_buf());
            cur = cur.parent().unwrap_or(Path::new(""));
        }
        for d in missing.into_iter().rev() {
            let (parent, name) = split(&d)?;
            if st
                .dirs
                .get(&parent)
                .is_some_and(|p| p.volatile.contains_key(&name))
            {
                return Err(errno(libc::EEXIST)); // a file has that name
            }
            st.dirs.insert(d, Dir::default());
        }
        Ok(())
    }

    fn list_dir(&mut self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        let state = Arc::clone(&self.fs.state);
        let st = lock_gen(&state, self.generation)?;
        let d = st.dirs.get(dir).ok_or_else(|| errno(libc::ENOENT))?;
        Ok(d.volatile.keys().map(PathBuf::from).collect())
    }

    fn space(&mut self, dir: &Path) -> io::Result<SpaceInfo> {
        let state = Arc::clone(&self.fs.state);
        let st = lock_gen(&state, self.generation)?;
        if !st.dirs.contains_key(dir) {
            return Err(errno(libc::ENOENT));
        }
        let total = st.faults.capacity_bytes.unwrap_or(DEFAULT_SIM_TOTAL_BYTES);
        Ok(SpaceInfo {
            total_bytes: total,
            free_bytes: total.saturating_sub(st.used_bytes()),
        })
    }

    fn submit(&mut self, user_data: u64, op: Op) -> io::Result<()> {
        drop(lock_gen(&self.fs.state, self.generation)?);
        if self.pending.len() >= self.queue_depth {
            return Err(errno(libc::EAGAIN));
        }
        self.file(op.file())?;
        if let Op::Read { len, buf, .. } = &op {
            if *len > buf.capacity() {
                return Err(errno(libc::EINVAL));
            }
        }
        self.pending.push((user_data, op));
        Ok(())
    }

    fn reap(&mut self, min: usize) -> Vec<Completion> {
        let min = min.min(self.pending.len());
        let state = Arc::clone(&self.fs.state);
        let mut st = match lock_gen(&state, self.generation) {
            Ok(st) => st,
            Err(_) => {
                // Stale handle: everything in flight was lost in the crash.
                return self
                    .pending
                    .drain(..)
                    .map(|(user_data, op)| {
                        let buf = match op {
                            Op::Write { buf, .. }
                            | Op::WriteDatasync { buf, .. }
                            | Op::Read { buf, .. } => Some(buf),
                            _ => None,
                        };
                        Completion {
                            user_data,
                            result: Err(errno(libc::ESTALE)),
                            buf,
                        }
                    })
                    .collect();
            }
        };
        // Seeded order; delayed operations go last and complete only if needed.
        let n = self.pending.len();
        let mut order: Vec<(bool, usize)> = Vec::with_capacity(n);
        let delay = st.faults.delay;
        for i in 0..n {
            let delayed = st.chance(delay);
            order.push((delayed, i));
        }
        for i in (1..n).rev() {
            let j = st.rng.random_range(0..=i);
            order.swap(i, j);
        }
        order.sort_by_key(|&(delayed, _)| delayed); // stable: keeps the shuffle
        let mut chosen: Vec<usize> = Vec::new();
        for (delayed, i) in order {
            if chosen.len() < min || (!delayed && st.rng.random_bool(0.5)) {
                chosen.push(i);
            }
        }
        // Take the chosen ops out (in chosen order), keep the rest in submit order.
        let mut slots: Vec<Option<(u64, Op)>> = self.pending.drain(..).map(Some).collect();
        let mut out = Vec::with_capacity(chosen.len());
        for i in chosen {
            if let Some((user_data, op)) = slots[i].take() {
                let f = self.files.get(&op.file());
                out.push(st.execute(f, op, user_data));
            }
        }
        self.pending = slots.into_iter().flatten().collect();
        out
    }

    fn in_flight(&self) -> usize {
        self.pending.len()
    }
}
