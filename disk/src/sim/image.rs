//! What one file and one directory hold: a file's *volatile* image (what reads see) and
//! *durable* image (what survives a crash), both sparse by sector, with the ordered
//! mutations made since its last successful sync; a directory's volatile and durable
//! entry maps.
//!
//! Invariant: replaying `unsynced` in order onto `durable` gives `volatile`, except
//! after a failed sync, which drops the mutations without making them durable (see
//! the fault model in the [`sim`](super) module docs).

use super::S;
use crate::SECTOR;
use std::collections::BTreeMap;
use std::ffi::OsString;

/// A sparse image: sector index -> sector bytes; absent sectors read as zeros.
#[derive(Clone, Default)]
pub(super) struct Image {
    pub(super) len: u64,
    pub(super) sectors: BTreeMap<u64, Box<[u8]>>,
}

impl Image {
    pub(super) fn read(&self, offset: u64, out: &mut [u8]) -> usize {
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

    pub(super) fn write(&mut self, offset: u64, data: &[u8]) {
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

    pub(super) fn set_len(&mut self, len: u64) {
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

    pub(super) fn flip_bit(&mut self, offset: u64, bit: u8) {
        let idx = offset / S;
        let sec = self
            .sectors
            .entry(idx)
            .or_insert_with(|| vec![0u8; SECTOR].into_boxed_slice());
        sec[(offset % S) as usize] ^= 1 << (bit & 7);
    }

    pub(super) fn bytes(&self) -> Vec<u8> {
        let mut v = vec![0u8; self.len as usize];
        self.read(0, &mut v);
        v
    }
}

#[derive(Clone)]
pub(super) enum Mutation {
    Write { offset: u64, data: Vec<u8> },
    SetLen(u64),
}

impl Mutation {
    pub(super) fn apply(&self, img: &mut Image) {
        match self {
            Mutation::Write { offset, data } => img.write(*offset, data),
            Mutation::SetLen(n) => img.set_len(*n),
        }
    }
}

#[derive(Default)]
pub(super) struct Inode {
    pub(super) volatile: Image,
    pub(super) durable: Image,
    pub(super) unsynced: Vec<Mutation>,
    pub(super) open_count: usize,
}

impl Inode {
    pub(super) fn mutate(&mut self, m: Mutation) {
        m.apply(&mut self.volatile);
        self.unsynced.push(m);
    }
}

#[derive(Default)]
pub(super) struct Dir {
    pub(super) volatile: BTreeMap<OsString, u64>,
    pub(super) durable: BTreeMap<OsString, u64>,
}
