//! Power loss ([`SimFs::crash`](super::SimFs::crash)): each file restarts from its
//! durable image with each unsynced mutation replayed, lost or torn (seeded), each
//! directory forgets its unsynced entries, and the generation advances so that every
//! handle from before the crash fails with ESTALE.
//!
//! Guarantee: synced data always survives; the choices are deterministic for a seed
//! (inodes are visited in sorted order, never in `HashMap` order).

use super::faults::FaultEvent;
use super::image::Mutation;
use super::state::State;
use crate::SECTOR;
use rand::Rng;

impl State {
    pub(super) fn crash(&mut self) {
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
