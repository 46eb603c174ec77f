//! The state of one simulated file system, behind the [`SimFs`](super::SimFs) mutex:
//! the directory tree, the inodes, the seeded generator, the fault configuration and
//! its one-shot counters, the crash generation and the fault log. This file holds the
//! namespace helpers (path lookup, garbage collection of unnamed closed inodes, the
//! capacity check) and [`lock_gen`], which makes stale handles fail with ESTALE.
//!
//! Invariants: an inode is kept while a volatile or durable entry names it or a handle
//! has it open; `generation` counts crashes, and a handle made in an older generation
//! gets ESTALE.

use super::faults::{FaultEvent, Faults};
use super::image::{Dir, Inode};
use super::S;
use crate::fsutil::errno;
use crate::{round_up, SECTOR};
use parking_lot::Mutex;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};

#[derive(Default)]
pub(super) struct Counts {
    pub(super) reads: u64,
    pub(super) writes: u64,
    pub(super) syncs: u64,
    pub(super) dir_syncs: u64,
    pub(super) removes: u64,
    /// Disk calls, for `Faults::crash_after_calls`.
    pub(super) calls: u64,
}

pub(super) struct State {
    pub(super) rng: ChaCha8Rng,
    pub(super) faults: Faults,
    pub(super) counts: Counts,
    pub(super) dirs: BTreeMap<PathBuf, Dir>,
    pub(super) inodes: HashMap<u64, Inode>,
    pub(super) next_inode: u64,
    pub(super) generation: u64,
    pub(super) log: Vec<FaultEvent>,
}

/// Largest file offset Linux accepts (`loff_t` is signed).
const MAX_FILE_BYTES: u64 = i64::MAX as u64;

/// EINVAL if `offset..offset + len` does not fit in a file (as the kernel does for
/// pread/pwrite/ftruncate; fallocate would say EFBIG), instead of overflowing.
pub(super) fn check_range(offset: u64, len: u64) -> io::Result<()> {
    match offset.checked_add(len) {
        Some(end) if end <= MAX_FILE_BYTES => Ok(()),
        _ => Err(errno(libc::EINVAL)),
    }
}

pub(super) fn split(path: &Path) -> io::Result<(PathBuf, OsString)> {
    let name = path.file_name().ok_or_else(|| errno(libc::EINVAL))?;
    let parent = path.parent().map(Path::to_path_buf).unwrap_or_default();
    Ok((parent, name.to_os_string()))
}

impl State {
    pub(super) fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.rng.random_bool(p.min(1.0))
    }

    pub(super) fn lookup(&self, path: &Path) -> io::Result<u64> {
        let (parent, name) = split(path)?;
        let dir = self.dirs.get(&parent).ok_or_else(|| errno(libc::ENOENT))?;
        dir.volatile
            .get(&name)
            .copied()
            .ok_or_else(|| errno(libc::ENOENT))
    }

    pub(super) fn lookup_durable(&self, path: &Path) -> io::Result<u64> {
        let (parent, name) = split(path)?;
        let dir = self.dirs.get(&parent).ok_or_else(|| errno(libc::ENOENT))?;
        dir.durable
            .get(&name)
            .copied()
            .ok_or_else(|| errno(libc::ENOENT))
    }

    /// Deletes `ino` if no entry (volatile or durable) names it and nothing has it open.
    pub(super) fn gc(&mut self, ino: u64) {
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

    pub(super) fn used_bytes(&self) -> u64 {
        self.inodes
            .values()
            .map(|i| round_up(i.volatile.len as usize, SECTOR) as u64)
            .sum()
    }

    /// ENOSPC if growing a file from `old_len` to `new_len` exceeds the capacity.
    pub(super) fn check_capacity(&self, old_len: u64, new_len: u64) -> io::Result<()> {
        if let Some(cap) = self.faults.capacity_bytes {
            let old = old_len.div_ceil(S) * S;
            let new = new_len.div_ceil(S) * S;
            if new > old && self.used_bytes() + (new - old) > cap {
                return Err(errno(libc::ENOSPC));
            }
        }
        Ok(())
    }

    pub(super) fn inode(&mut self, ino: u64) -> io::Result<&mut Inode> {
        // An open file's inode always exists (open_count keeps it); ESTALE otherwise.
        self.inodes.get_mut(&ino).ok_or_else(|| errno(libc::ESTALE))
    }
}

/// Locks the state, failing with ESTALE if a crash happened after `generation`.
pub(super) fn lock_gen(
    state: &Mutex<State>,
    generation: u64,
) -> io::Result<parking_lot::MutexGuard<'_, State>> {
    let mut st = state.lock();
    if st.generation != generation {
        return Err(errno(libc::ESTALE));
    }
    if let Some(n) = st.faults.crash_after_calls {
        st.counts.calls += 1;
        if st.counts.calls >= n {
            st.faults.crash_after_calls = None;
            st.crash();
            return Err(errno(libc::ESTALE));
        }
    }
    Ok(st)
}
