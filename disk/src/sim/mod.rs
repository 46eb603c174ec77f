//! The simulated disk: a seeded, deterministic, in-memory file system with real crash
//! semantics and injectable faults, for tests of everything above `bk-disk`.
//!
//! [`SimFs`] is the shared file system (cheap to clone, `Arc<Mutex<..>>` inside);
//! [`SimFs::disk`] hands out [`SimDisk`] handles, each one "ring" implementing
//! [`Disk`](crate::Disk). Several threads may each own a handle on the same `SimFs`.
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
//! - `remove_eio`, `fail_remove_nth`: `remove` fails with EIO and the name stays in
//!   the directory (volatile and durable alike): nothing changed. The one-shot counter
//!   counts `remove` calls, those of missing files included.
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
//! - `crash_after_calls`: power loss in the middle of whatever the system is doing:
//!   the Nth disk call (any call of any handle, counted from `set_faults`) runs
//!   [`SimFs::crash`] and fails with ESTALE, as does every later call on the old
//!   handles. With one thread making the calls, which call that is follows from the
//!   seed (the whole-bookie simulation crashes mid-flush, mid-compaction, mid-GC).
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
//!
//! # Where the code lives
//!
//! - `faults`: [`Faults`] and [`FaultEvent`], the fault configuration and the fault log;
//! - `image`: a file's sparse volatile and durable images, its unsynced mutations, and a
//!   directory's volatile and durable entry maps;
//! - `state`: the state behind the mutex (namespace, inodes, generator, counters) and its
//!   lookups, garbage collection and capacity check;
//! - `exec`: executing one queued operation (read, write, sync, fallocate) with its faults;
//! - `crash`: the power-loss model of [`SimFs::crash`];
//! - `fs`: [`SimFs`], the shared handle (setup, fault configuration, crash, inspection);
//! - `disk`: [`SimDisk`], one ring implementing [`Disk`](crate::Disk).

mod crash;
mod disk;
mod exec;
mod faults;
mod fs;
mod image;
mod state;

pub use disk::SimDisk;
pub use faults::{FaultEvent, Faults};
pub use fs::SimFs;

use crate::SECTOR;

const S: u64 = SECTOR as u64;

/// Reported total size of a simulated file system without `capacity_bytes`.
pub const DEFAULT_SIM_TOTAL_BYTES: u64 = 1 << 40;
