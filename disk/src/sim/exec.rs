//! Executing one queued operation against the state, at the moment `reap` picks it:
//! alignment and range checks, then the data-path faults of the fault model (EIO,
//! ENOSPC, capacity, torn and misdirected writes, read bit flips, the Linux semantics
//! of a failed sync), then the effect on the volatile image and the sync list.
//!
//! Invariant: an operation that fails changes nothing, except a torn write (a strict
//! subset of its sectors lands) and a failed sync (its mutations are dropped).

use super::disk::SimFile;
use super::faults::FaultEvent;
use super::image::Mutation;
use super::state::{check_range, State};
use super::S;
use crate::fsutil::errno;
use crate::{AlignedBuf, Completion, Op, SECTOR};
use rand::Rng;
use std::io;

impl State {
    pub(super) fn do_read(
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

    pub(super) fn do_write(&mut self, f: &SimFile, offset: u64, data: &[u8]) -> io::Result<usize> {
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

    pub(super) fn do_sync(&mut self, f: &SimFile) -> io::Result<usize> {
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

    pub(super) fn do_fallocate(&mut self, f: &SimFile, offset: u64, len: u64) -> io::Result<usize> {
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

    pub(super) fn execute(&mut self, f: Option<&SimFile>, op: Op, user_data: u64) -> Completion {
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
                    .and_then(|n| self.do_sync(f).map(|_| n).map_err(crate::sync_half_error));
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
}
