//! `memory`: the bookie's memory bound, as a formula of its configured sizes
//! (docs/memory.md §1), and what each part of it holds now.
//!
//! The bound is the sum of the parts below; each is a configured size, or derived from
//! configured sizes, and every allocation that grows with load is held inside one of them
//! (docs/memory.md §2 lists them, and what each is inside):
//!
//! | part | size |
//! |---|---|
//! | `write_cache` | `dbStorage_writeCacheMaxSizeMb` + one frame (an entry over half the cache) |
//! | `read_cache` | `dbStorage_readAheadCacheMaxSizeMb` + the readers' batches in flight |
//! | `in_flight` | the request byte budget (receive buffers and requests being served) |
//! | `send` | the send budget (responses queued, not yet written) |
//! | `journal` | per journal directory: `journalMaxMemorySizeMb` + its pooled group buffers |
//! | `compaction` | the live entries of one compaction group, read whole before rewriting |
//! | `fixed` | [`FIXED_OVERHEAD_BYTES`]: code, threads' stacks, io_uring rings, metrics |
//!
//! Beside them the in-memory index holds 24-40 bytes per stored entry (ARCHITECTURE.md,
//! entry log "Known limit"): it grows with the data held, not with load, and is stated as
//! a term of its own (docs/memory.md §1), not in the metric.
//!
//! The bound is what the process's resident set (VmHWM) is held to; the memory
//! benchmarks (benches/memory/) measure it against this formula.

use crate::config::mapping::{entry_log_config, journal_config};
use crate::config::BookieConfig;
use crate::server::ServerConfig;

/// The fixed overhead: what an idle bookie holds beside the parts (its code and
/// libraries, the stacks and io_uring rings of its threads, the metrics' windows, the
/// entry-log flusher's write buffers), plus allocator slack under load. Measured in
/// docs/memory.md §3.
pub const FIXED_OVERHEAD_BYTES: u64 = 128 << 20;

/// Group buffers a journal directory keeps for reuse beside the records it has admitted:
/// the large-record pool (4, bk-journal's `LARGE_BUFS_MAX`) and the committer's spare
/// group buffer. Each is at most twice the largest record (a kept buffer is reused for a
/// record of half its size or more).
pub const JOURNAL_POOLED_BUFFERS: u64 = 5;

/// One part of the bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    WriteCache,
    ReadCache,
    InFlight,
    Send,
    Journal,
    Compaction,
    Fixed,
}

impl Part {
    pub const ALL: [Part; 7] = [
        Part::WriteCache,
        Part::ReadCache,
        Part::InFlight,
        Part::Send,
        Part::Journal,
        Part::Compaction,
        Part::Fixed,
    ];

    /// The `part` label of the `bookie_rs_memory_*` series.
    pub fn label(self) -> &'static str {
        match self {
            Part::WriteCache => "write_cache",
            Part::ReadCache => "read_cache",
            Part::InFlight => "in_flight",
            Part::Send => "send",
            Part::Journal => "journal",
            Part::Compaction => "compaction",
            Part::Fixed => "fixed",
        }
    }
}

/// The configured size of every part, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryBound {
    pub write_cache: u64,
    pub read_cache: u64,
    pub in_flight: u64,
    pub send: u64,
    pub journal: u64,
    pub compaction: u64,
    pub fixed: u64,
}

impl MemoryBound {
    /// The bound of a bookie run with `cfg` and its request path's `server` settings.
    pub fn of(cfg: &BookieConfig, server: &ServerConfig) -> MemoryBound {
        let journal = journal_config(cfg);
        let log = entry_log_config(cfg);
        let dirs = cfg.journal_dirs.len().max(1) as u64;
        let largest_record = cfg.netty_max_frame_size_bytes as u64;
        let write_cache = log.write_cache_bytes as u64;
        // A flush writes one half of the write cache as one segment; compaction reads a
        // segment's live entries (below the threshold) or a merge group's whole.
        let largest_segment = write_cache / 2 + largest_record;
        let threshold = cfg.major_compaction_threshold.clamp(0.0, 1.0);
        let compaction = ((largest_segment as f64 * threshold) as u64)
            .max(log.compaction_target_segment_bytes + log.compaction_merge_below_bytes);
        MemoryBound {
            write_cache: write_cache + largest_record,
            read_cache: log.read_cache_bytes as u64
                + (log.readers * log.readahead_bytes.max(largest_record as usize)) as u64,
            in_flight: server.limits.max_bytes_in_progress as u64,
            send: server.send_bytes_total as u64,
            journal: dirs
                * (journal.in_flight_bytes_max as u64
                    + JOURNAL_POOLED_BUFFERS * 2 * largest_record),
            compaction,
            fixed: FIXED_OVERHEAD_BYTES,
        }
    }

    /// The configured size of `part`.
    pub fn part(&self, part: Part) -> u64 {
        match part {
            Part::WriteCache => self.write_cache,
            Part::ReadCache => self.read_cache,
            Part::InFlight => self.in_flight,
            Part::Send => self.send,
            Part::Journal => self.journal,
            Part::Compaction => self.compaction,
            Part::Fixed => self.fixed,
        }
    }

    /// The bound: the sum of the parts.
    pub fn total(&self) -> u64 {
        Part::ALL.iter().map(|p| self.part(*p)).sum()
    }
}

/// What the parts hold now (the fixed overhead has no gauge of its own).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemoryUse {
    pub write_cache: u64,
    pub read_cache: u64,
    pub in_flight: u64,
    /// Of `in_flight`: receive buffers (partial frames), not yet requests.
    pub receive_buffers: u64,
    pub send: u64,
    /// Records the journals admitted and have not acknowledged yet.
    pub journal: u64,
}

impl MemoryUse {
    /// The bytes `part` holds now, if it has a gauge.
    pub fn part(&self, part: Part) -> Option<u64> {
        match part {
            Part::WriteCache => Some(self.write_cache),
            Part::ReadCache => Some(self.read_cache),
            Part::InFlight => Some(self.in_flight),
            Part::Send => Some(self.send),
            Part::Journal => Some(self.journal),
            Part::Compaction | Part::Fixed => None,
        }
    }
}

/// The process's peak resident set (VmHWM), from `getrusage`.
pub fn peak_rss_bytes() -> u64 {
    // SAFETY: getrusage writes into the struct we pass; RUSAGE_SELF is always valid.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    if rc == 0 {
        (usage.ru_maxrss.max(0) as u64) * 1024
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::mapping::server_config;
    use crate::config::BookieArgs;

    #[test]
    fn bound_is_the_sum_of_the_configured_parts() {
        let args = BookieArgs {
            standalone: true,
            ..Default::default()
        };
        let text = "dbStorage_writeCacheMaxSizeMb=64\ndbStorage_readAheadCacheMaxSizeMb=16\n\
                    journalMaxMemorySizeMb=32\n";
        let cfg = BookieConfig::from_text_and_args(Some(text), None, &args)
            .unwrap()
            .0;
        let server = server_config(&cfg);
        let b = MemoryBound::of(&cfg, &server);
        let frame = cfg.netty_max_frame_size_bytes as u64;
        assert_eq!(b.write_cache, (64 << 20) + frame);
        let readers = entry_log_config(&cfg).readers as u64;
        assert_eq!(b.read_cache, (16 << 20) + readers * frame);
        assert_eq!(b.in_flight, server.limits.max_bytes_in_progress as u64);
        assert_eq!(b.send, server.send_bytes_total as u64);
        assert_eq!(b.journal, (32 << 20) + JOURNAL_POOLED_BUFFERS * 2 * frame);
        assert_eq!(
            b.total(),
            b.write_cache
                + b.read_cache
                + b.in_flight
                + b.send
                + b.journal
                + b.compaction
                + b.fixed
        );
        assert!(b.compaction >= 68 << 20);
    }

    #[test]
    fn peak_rss_is_reported() {
        assert!(peak_rss_bytes() > 1 << 20);
    }
}
