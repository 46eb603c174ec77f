//! Runs one job: connects, optionally prefills, then keeps `iodepth` requests in flight
//! (optionally paced by `rate_iops`) until `runtime` or `number_ios`, recording every
//! completion.
//!
//! Ledgers are written the way BenchBookie writes them (no ZooKeeper): each entry is the
//! docs/protocol.md §5 format (ledgerId, entryId, LAC, cumulative length, CRC32C digest, payload) with
//! the master key SHA-1("ledger" + password), so a stock client given the ledger's metadata
//! could read them. The LAC in each entry is the highest entry id such that it and every
//! entry below it were acknowledged when the entry was built, as the stock client computes it.
//!
//! Invariants:
//! - Only requests *issued* during the measured phase are recorded (ramp-time and prefill
//!   requests are not), so in-flight ramp requests cannot leak into the results.
//! - A failed add retires its ledger (its LAC can never pass the hole) and a fresh ledger takes
//!   its place, as a Pulsar broker rolls over to a new ledger; reads never target an entry
//!   above a ledger's LAC.
//! - A lost connection stops the job: requests outstanding on it are counted as ECONNLOST,
//!   the others drain (each bounded by `timeout`), and the job reports what happened.
//! - Reads are verified (digest, ledger id, entry id); a bad entry counts as error EDIGEST.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bk_proto::{DigestManager, DigestType, EntryHeader, MasterKey};
use bytes::Bytes;
use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tokio::sync::Notify;

use crate::client::{Connection, RequestError};
use crate::options::{JobSpec, ReadPattern, Workload};
use crate::ratelimit::RateLimiter;
use crate::report::{JobResult, PrefillSummary};
use crate::stats::{IntervalRow, JobStats, OpKind};

/// Entry bytes in front of the payload: 32 metadata + 4 CRC32C.
const ENTRY_OVERHEAD: usize = 36;

/// Hands out ledger ids; shared by all jobs of a run unless a job sets `ledger_id`.
pub struct LedgerIdAlloc {
    next: AtomicI64,
}

impl LedgerIdAlloc {
    pub fn starting_at(first: i64) -> LedgerIdAlloc {
        LedgerIdAlloc {
            next: AtomicI64::new(first),
        }
    }

    /// A start derived from the clock (µs since the epoch × 1024), so reruns against the same
    /// bookie never write into ledgers an earlier run wrote.
    pub fn from_clock() -> LedgerIdAlloc {
        let micros = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_micros() as i64)
            .unwrap_or(1);
        LedgerIdAlloc::starting_at(micros.saturating_mul(1024).max(1))
    }

    pub fn take(&self) -> i64 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }
}

struct LedgerState {
    id: i64,
    conn: usize,
    next_entry: i64,
    /// Cumulative payload bytes of entries built so far.
    length: i64,
    /// Highest entry id with every entry up to it acknowledged (-1: none).
    lac: i64,
    acked_above_lac: BTreeSet<i64>,
    /// Next entry a sequential (tailing/catch-up) reader takes.
    read_next: i64,
    retired: bool,
}

struct Ledgers {
    all: Vec<LedgerState>,
    /// Indexes into `all` of the ledgers writers append to.
    writable: Vec<usize>,
    rr_write: usize,
    rr_read: usize,
    /// Ledgers retired after a failed add.
    retired: usize,
}

/// Which phase a worker runs in.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    Prefill,
    Main,
}

#[derive(Default)]
struct PrefillCounters {
    entries: u64,
    bytes: u64,
    errors: std::collections::BTreeMap<String, u64>,
}

/// Live state of a running job, shared by its workers, its ticker and the progress line.
pub struct Job {
    pub spec: JobSpec,
    pub groupid: usize,
    conns: Vec<Arc<Connection>>,
    master_key: MasterKey,
    digest: DigestManager,
    ids: Arc<LedgerIdAlloc>,
    ledgers: Mutex<Ledgers>,
    stats: Mutex<JobStats>,
    prefill: Mutex<PrefillCounters>,
    prefill_budget: AtomicI64,
    measuring: AtomicBool,
    stop: AtomicBool,
    stop_reason: Mutex<Option<String>>,
    issued: AtomicU64,
    adds_in_flight: AtomicU64,
    acked: Notify,
    rate: Option<RateLimiter>,
    payload_pool: Bytes,
    /// The last closed second, for the progress line.
    pub last_rows: Mutex<Vec<IntervalRow>>,
    pub started: Mutex<Option<Instant>>,
}

fn guard<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

impl Job {
    /// Connects to every bookie of the job (`connections` each).
    pub async fn connect(
        spec: JobSpec,
        groupid: usize,
        shared_ids: Arc<LedgerIdAlloc>,
    ) -> Result<Arc<Job>, String> {
        let tls = match &spec.tls_ca {
            None => None,
            Some(ca) => {
                let identity = spec.tls_cert.as_deref().zip(spec.tls_key.as_deref());
                Some(
                    crate::tls::client_config(ca, identity)
                        .map_err(|e| format!("job '{}': {e}", spec.name))?,
                )
            }
        };
        let mut conns = Vec::new();
        for c in 0..spec.connections {
            for b in &spec.bookies {
                let conn = Connection::connect(b, spec.protocol, tls.as_ref())
                    .await
                    .map_err(|e| format!("job '{}': {e} (connection {})", spec.name, c + 1))?;
                if let (0, Some(session)) = (c, conn.tls_session()) {
                    eprintln!("bkbench: job '{}': TLS to {b}: {session}", spec.name);
                }
                conns.push(Arc::new(conn));
            }
        }
        let ids = match spec.ledger_id {
            Some(first) => Arc::new(LedgerIdAlloc::starting_at(first as i64)),
            None => shared_ids,
        };
        let mut rng = ChaCha8Rng::seed_from_u64(spec.seed);
        let mut pool = vec![0u8; spec.bs.max() as usize + 4096];
        rng.fill_bytes(&mut pool);
        let mut ledgers = Ledgers {
            all: Vec::new(),
            writable: Vec::new(),
            rr_write: 0,
            rr_read: 0,
            retired: 0,
        };
        for _ in 0..spec.ledgers {
            let id = ids.take();
            ledgers.writable.push(ledgers.all.len());
            ledgers.all.push(new_ledger(id, conns.len()));
        }
        let rate = (spec.rate_iops > 0).then(|| RateLimiter::new(spec.rate_iops));
        Ok(Arc::new(Job {
            master_key: MasterKey::from_password(spec.password.as_bytes()),
            digest: DigestManager::new(DigestType::Crc32c, spec.password.as_bytes()),
            prefill_budget: AtomicI64::new(spec.prefill.min(i64::MAX as u64) as i64),
            spec,
            groupid,
            conns,
            ids,
            ledgers: Mutex::new(ledgers),
            stats: Mutex::new(JobStats::new()),
            prefill: Mutex::new(PrefillCounters::default()),
            measuring: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            stop_reason: Mutex::new(None),
            issued: AtomicU64::new(0),
            adds_in_flight: AtomicU64::new(0),
            acked: Notify::new(),
            rate,
            payload_pool: Bytes::from(pool),
            last_rows: Mutex::new(Vec::new()),
            started: Mutex::new(None),
        }))
    }

    fn stop_with(&self, reason: String) {
        let mut r = guard(&self.stop_reason);
        if r.is_none() {
            *r = Some(reason);
        }
        self.stop.store(true, Ordering::SeqCst);
        self.acked.notify_waiters();
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// Runs the job to completion and returns its result.
    pub async fn run(self: Arc<Job>) -> JobResult {
        let spec = &self.spec;
        let mut notes = Vec::new();
        *guard(&self.started) = Some(Instant::now());

        // Prefill: writes only, not measured.
        let mut prefill_summary = None;
        if spec.prefill > 0 {
            let t0 = Instant::now();
            self.run_workers(Phase::Prefill).await;
            prefill_summary = Some({
                let p = guard(&self.prefill);
                PrefillSummary {
                    entries: p.entries,
                    bytes: p.bytes,
                    secs: t0.elapsed().as_secs_f64(),
                    errors: p.errors.clone(),
                }
            });
            if spec.drop_caches {
                match drop_page_cache().await {
                    Ok(()) => notes.push("page cache dropped after the prefill".into()),
                    Err(e) => notes.push(format!(
                        "drop_caches failed ({e}): reads may hit the page cache"
                    )),
                }
            }
            // Sequential readers start where the pattern says.
            let mut l = guard(&self.ledgers);
            for st in &mut l.all {
                st.read_next = match spec.read_pattern {
                    ReadPattern::Tailing => st.lac + 1,
                    ReadPattern::Catchup | ReadPattern::Random => 0,
                };
            }
        }
        if spec.read_pattern == ReadPattern::Tailing {
            let mut l = guard(&self.ledgers);
            for st in &mut l.all {
                st.read_next = st.lac + 1;
            }
        }

        // Main phase: the ticker flips `measuring` after ramp_time, closes one-second
        // intervals, and stops the job at the end of runtime.
        let mut measure_start = None;
        if !self.stopped() {
            // Without a ramp, measuring starts before the first request is issued (not when
            // the ticker task first runs), so no early request goes unrecorded.
            if self.spec.ramp_time != effective_ramp(&self.spec) {
                notes.push(
                    "ramp_time ignored: a catch-up read job reads each entry once, a ramp would consume the backlog"
                        .into(),
                );
            }
            let started = effective_ramp(&self.spec).is_zero().then(|| {
                self.measuring.store(true, Ordering::SeqCst);
                Instant::now()
            });
            let ticker = tokio::spawn(ticker(self.clone(), started));
            self.run_workers(Phase::Main).await;
            self.stop.store(true, Ordering::SeqCst);
            measure_start = ticker.await.ok().flatten();
        }
        let measure_end = Instant::now();
        let runtime_s = measure_start.map_or(0.0, |s| (measure_end - s).as_secs_f64());
        let stopped_by = guard(&self.stop_reason)
            .clone()
            .unwrap_or_else(|| "runtime".into());

        let (write, read, timeline) = {
            let mut st = guard(&self.stats);
            // The last partial second, if long enough to mean something.
            if let Some(s) = measure_start {
                let elapsed = (measure_end - s).as_secs_f64();
                let full = st.timeline.iter().map(|r| r.t_s).max().unwrap_or(0) as f64;
                let tail = elapsed - full;
                if tail >= 0.2 {
                    st.close_interval(full as u64 + 1, tail, spec.reads(), spec.writes());
                }
            }
            (
                spec.writes().then(|| st.write.summary(runtime_s)),
                spec.reads().then(|| st.read.summary(runtime_s)),
                st.timeline.clone(),
            )
        };
        if measure_start.is_none() {
            notes.push("the measured phase never started (stopped during prefill or ramp)".into());
        }
        let ledger_ids: Vec<u64> = guard(&self.ledgers)
            .all
            .iter()
            .map(|l| l.id as u64)
            .collect();
        let retired = guard(&self.ledgers)
            .all
            .iter()
            .filter(|l| l.retired)
            .count();
        if retired > 0 {
            notes.push(format!(
                "{retired} ledger(s) retired after a failed add; fresh ledgers replaced them"
            ));
        }
        if spec.rate_iops > 0 {
            if let Some(w) = write.as_ref().or(read.as_ref()) {
                let total =
                    write.as_ref().map_or(0.0, |w| w.iops) + read.as_ref().map_or(0.0, |r| r.iops);
                if total < spec.rate_iops as f64 * 0.95 && w.total_ios > 0 {
                    notes.push(format!(
                        "achieved {total:.0} requests/s, below rate_iops={}: iodepth={} requests in flight could not keep up",
                        spec.rate_iops, spec.iodepth
                    ));
                }
            }
        }
        JobResult {
            jobname: spec.name.clone(),
            groupid: self.groupid,
            options: spec.clone(),
            runtime: (runtime_s * 1000.0).round() as u64,
            write,
            read,
            prefill: prefill_summary,
            stopped_by,
            ledger_ids,
            notes,
            timeline,
        }
    }

    async fn run_workers(self: &Arc<Job>, phase: Phase) {
        let mut set = tokio::task::JoinSet::new();
        for w in 0..self.spec.iodepth {
            set.spawn(worker(self.clone(), w, phase));
        }
        while set.join_next().await.is_some() {}
    }

    fn payload(&self, size: u64, salt: u64) -> Bytes {
        let off = (salt.wrapping_mul(2_654_435_761) % 4096) as usize;
        self.payload_pool.slice(off..off + size as usize)
    }

    /// Picks a ledger and entry id for an add; returns (ledger index, ledger id, entry id,
    /// connection, entry).
    fn next_add(&self, size: u64) -> (usize, i64, i64, usize, Bytes) {
        let mut l = guard(&self.ledgers);
        let slot = l.rr_write % l.writable.len().max(1);
        l.rr_write = l.rr_write.wrapping_add(1);
        let idx = l.writable[slot];
        let st = &mut l.all[idx];
        let entry_id = st.next_entry;
        st.next_entry += 1;
        st.length += size as i64;
        let header = EntryHeader {
            ledger_id: st.id,
            entry_id,
            last_add_confirmed: st.lac,
            length: st.length,
        };
        let (id, conn) = (st.id, st.conn);
        drop(l);
        let entry = self
            .digest
            .build_entry(&header, &self.payload(size, entry_id as u64 ^ id as u64));
        (idx, id, entry_id, conn, entry)
    }

    fn add_done(&self, idx: usize, entry_id: i64, result: &Result<(), RequestError>) {
        let mut l = guard(&self.ledgers);
        let mut give_up = None;
        if result.is_ok() {
            let st = &mut l.all[idx];
            if entry_id == st.lac + 1 {
                st.lac = entry_id;
                while st.acked_above_lac.remove(&(st.lac + 1)) {
                    st.lac += 1;
                }
            } else if entry_id > st.lac {
                st.acked_above_lac.insert(entry_id);
            }
        } else if !l.all[idx].retired {
            // Roll over: the hole at `entry_id` pins this ledger's LAC forever.
            l.all[idx].retired = true;
            l.retired += 1;
            if l.retired > max_retired_ledgers(self.spec.ledgers) {
                // A bookie that refuses every add (read-only, full, fenced) would otherwise
                // make us open ledgers forever; end the job and say why.
                give_up = Some(format!(
                    "{} ledgers retired after failed adds (last: {}): the bookie keeps refusing adds",
                    l.retired,
                    result.as_ref().err().map_or("?", |e| e.code())
                ));
            }
            let fresh = new_ledger(self.ids.take(), self.conns.len());
            let fresh_idx = l.all.len();
            l.all.push(fresh);
            if let Some(pos) = l.writable.iter().position(|&i| i == idx) {
                l.writable[pos] = fresh_idx;
            }
        }
        drop(l);
        if let Some(why) = give_up {
            self.stop_with(why);
        }
        self.acked.notify_waiters();
    }

    /// Picks what to read: (ledger id, connection, first entry, count). `None` = nothing
    /// readable now.
    fn next_read(&self, rng: &mut ChaCha8Rng) -> Option<(i64, usize, i64, u32)> {
        let want = self.spec.batch_read.max(1) as i64;
        let mut l = guard(&self.ledgers);
        let n = l.all.len();
        match self.spec.read_pattern {
            ReadPattern::Random => {
                let readable: Vec<usize> = (0..n).filter(|&i| l.all[i].lac >= 0).collect();
                if readable.is_empty() {
                    return None;
                }
                let st = &l.all[readable[rng.random_range(0..readable.len())]];
                let entry = rng.random_range(0..=st.lac);
                let count = want.min(st.lac - entry + 1);
                Some((st.id, st.conn, entry, count as u32))
            }
            ReadPattern::Tailing | ReadPattern::Catchup => {
                for k in 0..n {
                    let i = (l.rr_read + k) % n;
                    let st = &mut l.all[i];
                    if st.read_next <= st.lac {
                        let start = st.read_next;
                        let count = want.min(st.lac - start + 1);
                        st.read_next += count;
                        let out = (st.id, st.conn, start, count as u32);
                        l.rr_read = (i + 1) % n;
                        return Some(out);
                    }
                }
                None
            }
        }
    }

    fn record(
        &self,
        phase: Phase,
        measured: bool,
        op: OpKind,
        start: Instant,
        result: Result<(u64, u64), RequestError>,
    ) {
        match phase {
            Phase::Prefill => {
                let mut p = guard(&self.prefill);
                match result {
                    Ok((bytes, entries)) => {
                        p.entries += entries;
                        p.bytes += bytes;
                    }
                    Err(e) => *p.errors.entry(e.code().to_string()).or_insert(0) += 1,
                }
            }
            Phase::Main if measured => {
                let lat = start.elapsed().as_nanos().min(u64::MAX as u128) as u64;
                let mut st = guard(&self.stats);
                match result {
                    Ok((bytes, entries)) => st.success(op, lat, bytes, entries),
                    Err(e) => st.error(op, e.code()),
                }
            }
            Phase::Main => {}
        }
    }

    /// Latest per-second rows (for the progress line).
    pub fn progress_rows(&self) -> Vec<IntervalRow> {
        guard(&self.last_rows).clone()
    }

    pub fn is_measuring(&self) -> bool {
        self.measuring.load(Ordering::Relaxed)
    }

    pub fn is_stopped(&self) -> bool {
        self.stopped()
    }
}

/// How many ledgers may be retired after failed adds before the job gives up (bounds the
/// ledger table when a bookie refuses everything).
fn max_retired_ledgers(ledgers: u32) -> usize {
    (ledgers as usize).saturating_mul(16).max(256)
}

/// The ramp a job really gets: none for read-once catch-up jobs.
fn effective_ramp(spec: &JobSpec) -> Duration {
    if spec.rw == Workload::Read && spec.read_pattern == ReadPattern::Catchup {
        Duration::ZERO
    } else {
        spec.ramp_time
    }
}

/// `sync`, then `echo 3 > /proc/sys/vm/drop_caches` (needs root).
async fn drop_page_cache() -> Result<(), String> {
    let status = tokio::process::Command::new("sync")
        .status()
        .await
        .map_err(|e| format!("sync: {e}"))?;
    if !status.success() {
        return Err(format!("sync exited with {status}"));
    }
    tokio::fs::write("/proc/sys/vm/drop_caches", b"3\n")
        .await
        .map_err(|e| format!("/proc/sys/vm/drop_caches: {e}"))
}

fn new_ledger(id: i64, conns: usize) -> LedgerState {
    LedgerState {
        id,
        // As the stock client: all requests of a ledger on connection signSafeMod(id, n).
        conn: (id.rem_euclid(conns.max(1) as i64)) as usize,
        next_entry: 0,
        length: 0,
        lac: -1,
        acked_above_lac: BTreeSet::new(),
        read_next: 0,
        retired: false,
    }
}

/// Flips `measuring` after the ramp, closes one-second intervals, and ends the measured phase
/// after `runtime`. Returns when the measured phase started (None if the job stopped first).
async fn ticker(job: Arc<Job>, started: Option<Instant>) -> Option<Instant> {
    let spec = &job.spec;
    let start = match started {
        Some(s) => s,
        None => {
            let ramp_end = tokio::time::Instant::now() + effective_ramp(spec);
            while tokio::time::Instant::now() < ramp_end {
                if job.stopped() {
                    return None;
                }
                tokio::time::sleep_until(
                    ramp_end.min(tokio::time::Instant::now() + Duration::from_millis(50)),
                )
                .await;
            }
            if job.stopped() {
                return None;
            }
            job.measuring.store(true, Ordering::SeqCst);
            Instant::now()
        }
    };
    let end = spec.runtime.map(|r| start + r);
    let mut second = 1u64;
    loop {
        let next_tick = start + Duration::from_secs(second);
        let wake = match end {
            Some(e) => next_tick.min(e),
            None => next_tick,
        };
        // Sleep in short steps so a stopped job is noticed quickly.
        while Instant::now() < wake && !job.stopped() {
            let step = (wake - Instant::now()).min(Duration::from_millis(50));
            tokio::time::sleep(step).await;
        }
        if job.stopped() {
            return Some(start);
        }
        if Instant::now() >= next_tick {
            let mut st = guard(&job.stats);
            st.close_interval(second, 1.0, spec.reads(), spec.writes());
            let rows: Vec<IntervalRow> = st
                .timeline
                .iter()
                .filter(|r| r.t_s == second)
                .cloned()
                .collect();
            drop(st);
            *guard(&job.last_rows) = rows;
            second += 1;
        }
        if end.is_some_and(|e| Instant::now() >= e) {
            job.stop_with("runtime".into());
            return Some(start);
        }
    }
}

async fn worker(job: Arc<Job>, w: u32, phase: Phase) {
    let spec = &job.spec;
    let mut rng = ChaCha8Rng::seed_from_u64(
        spec.seed
            ^ (u64::from(w) + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)
            ^ if phase == Phase::Prefill { 0x5EED } else { 0 },
    );
    loop {
        if job.stopped() {
            return;
        }
        let measured = phase == Phase::Main && job.measuring.load(Ordering::SeqCst);
        if phase == Phase::Main {
            if let Some(rate) = &job.rate {
                rate.wait().await;
                if job.stopped() {
                    return;
                }
            }
        }
        let read = match phase {
            Phase::Prefill => false,
            Phase::Main => {
                spec.reads() && (!spec.writes() || rng.random_range(0..100u32) < spec.rwmixread)
            }
        };
        if phase == Phase::Main && measured {
            if let Some(limit) = spec.number_ios {
                let n = job.issued.fetch_add(1, Ordering::SeqCst);
                if n >= limit {
                    job.stop_with("number_ios".into());
                    return;
                }
            }
        }
        // A tailing reader that caught up waits for the next ack, but only while adds are in
        // flight; otherwise it would wait forever (every worker reading), so it adds instead.
        if read && do_read(&job, phase, measured, &mut rng).await {
            continue;
        }
        if job.stopped() {
            return;
        }
        let size = spec.bs.pick(rng.next_u64());
        if phase == Phase::Prefill
            && job.prefill_budget.fetch_sub(size as i64, Ordering::SeqCst) <= 0
        {
            return;
        }
        do_add(&job, phase, measured, size).await;
    }
}

async fn do_add(job: &Arc<Job>, phase: Phase, measured: bool, size: u64) {
    let (idx, ledger_id, entry_id, conn, entry) = job.next_add(size);
    let start = Instant::now();
    job.adds_in_flight.fetch_add(1, Ordering::SeqCst);
    let r = job.conns[conn]
        .add(
            ledger_id,
            entry_id,
            entry,
            &job.master_key,
            job.spec.timeout,
        )
        .await;
    job.adds_in_flight.fetch_sub(1, Ordering::SeqCst);
    job.add_done(idx, entry_id, &r);
    if let Err(RequestError::ConnectionLost(why)) = &r {
        job.stop_with(format!("connection lost: {why}"));
    }
    job.record(phase, measured, OpKind::Write, start, r.map(|()| (size, 1)));
}

/// Issues one read; returns false (having issued nothing) when there is nothing to read and
/// no add in flight that could make something readable.
async fn do_read(job: &Arc<Job>, phase: Phase, measured: bool, rng: &mut ChaCha8Rng) -> bool {
    let spec = &job.spec;
    let target = loop {
        if let Some(t) = job.next_read(rng) {
            break t;
        }
        if !spec.writes() {
            job.stop_with("all written entries read".into());
            return true;
        }
        if job.adds_in_flight.load(Ordering::SeqCst) == 0 {
            return false;
        }
        // Caught up with the writer: wait for the next acknowledgement.
        let notified = job.acked.notified();
        if job.stopped() {
            return true;
        }
        let _ = tokio::time::timeout(Duration::from_millis(50), notified).await;
        if job.stopped() {
            return true;
        }
    };
    let (ledger_id, conn, first, count) = target;
    let start = Instant::now();
    let c = &job.conns[conn];
    let result = if spec.batch_read > 0 {
        c.batch_read(ledger_id, first, count as i32, spec.timeout)
            .await
    } else {
        c.read(ledger_id, first, spec.timeout)
            .await
            .map(|e| vec![e])
    };
    let outcome = result.and_then(|entries| {
        let mut bytes = 0u64;
        for (i, e) in entries.iter().enumerate() {
            job.digest
                .verify_entry_for(e, ledger_id, first + i as i64)
                .map_err(|err| RequestError::BadResponse(format!("EDIGEST: {err}")))?;
            bytes += e.len().saturating_sub(ENTRY_OVERHEAD) as u64;
        }
        Ok((bytes, entries.len() as u64))
    });
    let outcome = outcome.map_err(|e| match e {
        RequestError::BadResponse(m) if m.starts_with("EDIGEST") => RequestError::Bookie("EDIGEST"),
        other => other,
    });
    if let Err(RequestError::ConnectionLost(why)) = &outcome {
        job.stop_with(format!("connection lost: {why}"));
    }
    job.record(phase, measured, OpKind::Read, start, outcome);
    true
}
