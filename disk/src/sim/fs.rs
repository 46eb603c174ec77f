//! [`SimFs`], the shared simulated file system: cheap to clone (an `Arc<Mutex<..>>`
//! inside), it hands out [`SimDisk`] handles and lets a test set faults, crash the
//! machine, corrupt a stored file and inspect durable and volatile contents.

use super::disk::SimDisk;
use super::faults::{FaultEvent, Faults};
use super::image::Dir;
use super::state::{Counts, State};
use crate::fsutil::errno;
use parking_lot::Mutex;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeMap, HashMap};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The shared simulated file system. Clones share the same state.
#[derive(Clone)]
pub struct SimFs {
    pub(super) state: Arc<Mutex<State>>,
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
