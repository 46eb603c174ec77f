//! Helpers shared by the journal's integration tests: a simulated-disk factory and
//! a replay collector.
#![allow(dead_code)]

use bk_disk::{Disk, SimFs};
use bk_journal::{DiskFactory, Journal, JournalConfig, JournalError, Replay, ReplayedRecord};
use std::path::PathBuf;
use std::sync::Arc;

pub fn sim_factory(fs: &SimFs) -> DiskFactory {
    let fs = fs.clone();
    Arc::new(move |_i| Ok(Box::new(fs.disk()) as Box<dyn Disk>))
}

/// Small segments so tests rotate and recycle often.
pub fn small_config() -> JournalConfig {
    JournalConfig {
        segment_bytes: 64 * 1024,
        group_bytes_max: 16 * 1024,
        in_flight_bytes_max: 256 * 1024,
        queue_records_max: 1000,
        free_segments_max: 2,
        direct_io: false,
        no_space_retry: std::time::Duration::from_millis(5),
        ..JournalConfig::default()
    }
}

pub fn dirs(n: usize) -> Vec<PathBuf> {
    (0..n).map(|i| PathBuf::from(format!("/j{i}"))).collect()
}

/// Opens and collects every replayed record.
pub fn open_collect(
    dirs: &[PathBuf],
    cfg: &JournalConfig,
    factory: DiskFactory,
) -> Result<(Journal, Replay, Vec<ReplayedRecord>), JournalError> {
    let mut recs = Vec::new();
    let (j, r) = Journal::open(dirs, cfg.clone(), factory, &mut |r: &ReplayedRecord| {
        recs.push(r.clone());
        Ok(())
    })?;
    Ok((j, r, recs))
}
