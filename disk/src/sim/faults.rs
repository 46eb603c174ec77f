//! The fault model's types: [`Faults`] (what to inject, set with
//! [`SimFs::set_faults`](super::SimFs::set_faults)) and [`FaultEvent`] (what was
//! injected, in order, read with [`SimFs::fault_log`](super::SimFs::fault_log)).
//! Each fault's effect is documented once, in the [`sim`](super) module docs.

use std::path::PathBuf;

/// Fault probabilities (0.0..=1.0, per executed operation) and one-shot triggers.
/// `Faults::default()` injects nothing. See the [`sim`](super) module docs for each
/// fault's effect.
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
    /// Probability that `remove` fails with EIO (the name stays, nothing changes).
    pub remove_eio: f64,
    /// Fail the Nth `remove` with EIO.
    pub fail_remove_nth: Option<u64>,
    /// Capacity of the file system in bytes (sum of file sizes rounded to sectors).
    pub capacity_bytes: Option<u64>,
    /// Power loss at the Nth disk call (1-based, counted from `set_faults`; every call of
    /// every handle: open, submit, reap, rename, sync_dir, ...): that call fails with
    /// ESTALE after a [`SimFs::crash`](super::SimFs::crash), as do all later calls on
    /// the handles from before it. Fires once, then resets to `None`.
    pub crash_after_calls: Option<u64>,
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
    /// A `remove` failed; the file is still there under its name.
    RemoveEio {
        path: PathBuf,
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
    /// [`SimFs::flip_bit`](super::SimFs::flip_bit) corrupted the stored file.
    ManualBitFlip {
        path: PathBuf,
        offset: u64,
        bit: u8,
    },
    /// [`SimFs::crash`](super::SimFs::crash) happened: how the unsynced writes fared.
    Crash {
        writes_lost: usize,
        writes_kept: usize,
        writes_torn: usize,
        entries_forgotten: usize,
    },
}
