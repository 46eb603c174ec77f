//! The background scrubber (Java's `ScrubberService`, stock `localScrubInterval` /
//! `localScrubRateLimit`, and ours `localScrubRateLimitBytes`): a loop that runs a scrub
//! pass over the entry log (bk_entrylog `EntryLog::scrub`: every segment's trailer, footer
//! and every entry's CRC32C) every (0.5..1.5) × the interval, as Java draws its delays,
//! and whenever the operator asks (admin `PUT|POST /api/v1/bookie/scrub`).
//!
//! Guarantees:
//! - one pass at a time: an ask while one runs is refused ([`Ask::AlreadyRunning`]) and
//!   is not queued; an ask before the loop serves (storage not open) is refused
//!   ([`Ask::NotServed`]);
//! - the pass runs on the blocking pool and reads through its own disk handle, paced,
//!   never holding an entry-log lock across I/O (entrylog/src/scrub_pass.rs);
//! - shutdown cancels it (the `maintenance` token, node.rs): it stops at its next read;
//! - unlike Java, a segment that cannot be read does not stop the bookie: it is logged,
//!   counted (`scrubber_detectedFatalScrubErrors`) and the pass goes on;
//! - [`Scrubber::status`] shows the running pass's progress and the last pass's result.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bk_entrylog::{Cancel, Corruption, ScrubProgress, ScrubRate, ScrubReport};
use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::config::BookieConfig;
use crate::storage::real::RealStorage;

/// The scrubber's schedule and rate, from the configuration.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScrubSchedule {
    /// `localScrubInterval`; `None`: only passes the operator asks for.
    pub interval: Option<Duration>,
    pub rate: ScrubRate,
}

impl ScrubSchedule {
    pub fn from_config(cfg: &BookieConfig) -> ScrubSchedule {
        ScrubSchedule {
            interval: cfg.local_scrub_interval,
            rate: ScrubRate {
                bytes_per_sec: cfg.local_scrub_rate_limit_bytes,
                entries_per_sec: cfg.local_scrub_rate_limit,
            },
        }
    }

    /// The delay before the next pass: (0.5..1.5) × the interval.
    fn next_delay(&self) -> Option<Duration> {
        // A fresh std RandomState is randomly keyed: enough for spreading passes (no
        // rand crate in the bookie's dependencies).
        use std::hash::BuildHasher;
        let r = std::collections::hash_map::RandomState::new().hash_one(now_ms());
        let unit = (r >> 11) as f64 / (1u64 << 53) as f64; // [0, 1)
        self.interval.map(|i| i.mul_f64(0.5 + unit))
    }
}

/// The answer to an operator's ask for a pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ask {
    Started,
    AlreadyRunning,
    /// No scrub loop yet (storage still opening) or any more (shutting down).
    NotServed,
}

/// A pass that ended.
#[derive(Clone, Debug)]
pub struct LastPass {
    pub started_ms: u64,
    pub ended_ms: u64,
    /// `Ok` with what it did, or why it could not run.
    pub result: Result<ScrubReport, String>,
}

/// What the admin API shows.
#[derive(Clone, Debug)]
pub struct ScrubStatus {
    pub running: bool,
    pub started_ms: Option<u64>,
    pub segments_done: u64,
    pub segments_total: u64,
    pub bytes_done: u64,
    pub bytes_total: u64,
    pub entries_done: u64,
    pub findings: u64,
    pub schedule: Option<ScrubSchedule>,
    pub last: Option<LastPass>,
}

/// Shared between the admin API (asks, status, the corruption list) and the loop.
#[derive(Default)]
pub struct Scrubber {
    wake: Notify,
    running: AtomicBool,
    progress: ScrubProgress,
    started_ms: Mutex<Option<u64>>,
    last: Mutex<Option<LastPass>>,
    /// Set when the loop starts serving.
    served: OnceLock<(Arc<RealStorage>, ScrubSchedule)>,
    stopped: AtomicBool,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl Scrubber {
    /// Asks for a pass now.
    pub fn ask(&self) -> Ask {
        if self.served.get().is_none() || self.stopped.load(Ordering::Acquire) {
            return Ask::NotServed;
        }
        if self
            .running
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return Ask::AlreadyRunning;
        }
        self.wake.notify_one();
        Ask::Started
    }

    /// The corruption list (`None` before storage opened or after it closed).
    pub fn corruptions(&self) -> Option<(Vec<Corruption>, u64)> {
        self.served.get().and_then(|(s, _)| s.corruptions())
    }

    pub fn status(&self) -> ScrubStatus {
        let p = &self.progress;
        let g = |c: &std::sync::atomic::AtomicU64| c.load(Ordering::Relaxed);
        ScrubStatus {
            running: self.running.load(Ordering::Acquire),
            started_ms: *self.started_ms.lock(),
            segments_done: g(&p.segments_done),
            segments_total: g(&p.segments_total),
            bytes_done: g(&p.bytes_done),
            bytes_total: g(&p.bytes_total),
            entries_done: g(&p.entries_done),
            findings: g(&p.findings),
            schedule: self.served.get().map(|(_, s)| *s),
            last: self.last.lock().clone(),
        }
    }
}

/// Runs passes on `schedule` and when asked, until `cancel` (shutdown) or storage closes.
pub async fn scrub_loop(
    storage: Arc<RealStorage>,
    scrubber: Arc<Scrubber>,
    schedule: ScrubSchedule,
    cancel: Cancel,
) {
    if scrubber.served.set((storage.clone(), schedule)).is_err() {
        return; // one loop per scrubber
    }
    loop {
        let delay = schedule.next_delay();
        tokio::select! {
            _ = async {
                match delay {
                    Some(d) => tokio::time::sleep(d).await,
                    None => std::future::pending().await,
                }
            } => {
                // Scheduled: unless the operator's pass runs right now.
                if scrubber
                    .running
                    .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
                    .is_err()
                {
                    continue;
                }
            }
            _ = scrubber.wake.notified() => {}
        }
        if cancel.is_cancelled() {
            break;
        }
        let started_ms = now_ms();
        *scrubber.started_ms.lock() = Some(started_ms);
        let (st, sc, c) = (storage.clone(), scrubber.clone(), cancel.clone());
        let result =
            tokio::task::spawn_blocking(move || st.scrub(schedule.rate, &c, &sc.progress)).await;
        let result = match result {
            Ok(Ok(report)) => Ok(report),
            Ok(Err(e)) => Err(e.to_string()),
            Err(e) => Err(format!("scrub task failed: {e}")),
        };
        match &result {
            Ok(r) if r.findings() > 0 || !r.read_errors.is_empty() => tracing::error!(
                segments = r.segments,
                bytes = r.bytes,
                entries = r.entries,
                corrupt_entries = r.corrupt_entries,
                corrupt_indexes = r.corrupt_indexes,
                unreadable_segments = r.read_errors.len(),
                "scrub pass found problems (GET /api/v1/bookie/corruptions lists them)"
            ),
            Ok(r) => tracing::info!(
                segments = r.segments,
                bytes = r.bytes,
                entries = r.entries,
                skipped = r.skipped,
                cancelled = r.cancelled,
                "scrub pass done: nothing corrupt"
            ),
            Err(e) => tracing::warn!(error = %e, "scrub pass could not run"),
        }
        *scrubber.last.lock() = Some(LastPass {
            started_ms,
            ended_ms: now_ms(),
            result,
        });
        *scrubber.started_ms.lock() = None;
        scrubber.running.store(false, Ordering::Release);
        if cancel.is_cancelled() {
            break;
        }
    }
    scrubber.stopped.store(true, Ordering::Release);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ask_before_the_loop_serves_is_refused_and_delays_are_drawn_around_the_interval() {
        let s = Scrubber::default();
        assert_eq!(s.ask(), Ask::NotServed);
        assert!(!s.status().running);
        let sched = ScrubSchedule {
            interval: Some(Duration::from_secs(100)),
            rate: ScrubRate::default(),
        };
        for _ in 0..100 {
            let d = sched.next_delay().unwrap();
            assert!(
                d >= Duration::from_secs(50) && d < Duration::from_secs(150),
                "{d:?}"
            );
        }
        let off = ScrubSchedule {
            interval: None,
            ..sched
        };
        assert_eq!(off.next_delay(), None);
    }
}
