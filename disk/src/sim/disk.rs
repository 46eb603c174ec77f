//! [`SimDisk`], one handle ("ring") on a [`SimFs`], implementing [`Disk`]: namespace
//! calls (open, close, remove, rename, directory sync, ...) act on the shared state at
//! once; `submit` only queues, and `reap` executes queued operations in a seeded order
//! (the ordering rules of the [`sim`](super) module docs).
//!
//! Invariants: at most `queue_depth` operations are unreaped; a file with operations
//! in flight cannot be closed; every call on a handle from before a crash fails with
//! ESTALE and its in-flight operations complete with ESTALE.

use super::image::{Dir, Inode, Mutation};
use super::state::{check_range, lock_gen, split};
use super::{FaultEvent, SimFs, DEFAULT_SIM_TOTAL_BYTES};
use crate::fsutil::errno;
use crate::{Completion, Disk, FileId, Op, OpenOptions, SpaceInfo};
use rand::Rng;
use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub(super) struct SimFile {
    pub(super) inode: u64,
    pub(super) writable: bool,
    /// The path it was opened by (for the fault log).
    pub(super) path: PathBuf,
}

/// One handle ("ring") on a [`SimFs`]; implements [`Disk`]. See the [`sim`](super) module docs.
pub struct SimDisk {
    pub(super) fs: SimFs,
    pub(super) generation: u64,
    pub(super) files: HashMap<FileId, SimFile>,
    pub(super) next_id: u32,
    pub(super) pending: Vec<(u64, Op)>,
    pub(super) queue_depth: usize,
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
        st.counts.removes += 1;
        let nth = st.faults.fail_remove_nth == Some(st.counts.removes);
        let p = st.faults.remove_eio;
        if nth || st.chance(p) {
            st.log.push(FaultEvent::RemoveEio {
                path: path.to_path_buf(),
            });
            return Err(errno(libc::EIO));
        }
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
