//! The drill's load: adds written to W bookies and counted acknowledged at A, optional reads
//! of acknowledged entries, and the record of which bookie acknowledged which entry (what
//! verify.rs checks afterwards). Measured per phase (the spans between schedule steps) and per
//! second.
//!
//! Invariants:
//! - An entry's record holds the bookies that answered OK for it, and only those; an entry is
//!   *acknowledged* once A of its W bookies did (later OKs are recorded too: each is a
//!   bookie's promise that the entry is durable, so each is verified).
//! - A bookie that is down costs no waiting beyond the add timeout: connections are made
//!   again lazily (at most every 200 ms per bookie), and an add to a bookie without a
//!   connection fails at once.
//! - Adds in flight are bounded by `iodepth`, reads by the same bound.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bk_proto::{DigestManager, DigestType, EntryHeader, MasterKey};
use bytes::Bytes;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tokio::sync::{mpsc, Semaphore};

use super::drill::Drill;
use crate::client::{Connection, RequestError};
use crate::job::LedgerIdAlloc;
use crate::stats::Latency;

/// How long one add or read may take.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// Least time between two connection attempts to one bookie.
const RECONNECT_EVERY: Duration = Duration::from_millis(200);
/// The password of every drill ledger.
pub const PASSWORD: &[u8] = b"bkchaos";

/// One entry written, and who acknowledged it.
pub struct Record {
    pub ledger: i64,
    pub entry: i64,
    /// Length and 64-bit fingerprint of the complete entry sent (metadata, digest, payload).
    pub len: usize,
    pub fingerprint: u64,
    /// Bit b: bookie b answered OK.
    pub acked_by: AtomicU64,
    /// A of W answered OK.
    pub acknowledged: AtomicBool,
}

/// The fingerprint verify.rs compares entries by.
pub fn fingerprint(entry: &[u8]) -> u64 {
    use std::hash::Hasher;
    let mut h = std::collections::hash_map::DefaultHasher::new();
    h.write(entry);
    h.finish()
}

/// What one phase (or one second) saw.
#[derive(Clone)]
pub struct Counts {
    pub adds: u64,
    pub acknowledged: u64,
    pub failed: u64,
    /// Latency of acknowledged adds (until the A-th OK).
    pub latency: Latency,
    pub errors: BTreeMap<String, u64>,
    pub reads: u64,
    pub reads_ok: u64,
    /// Reads answered EIO (corruption or an injected read fault, detected).
    pub reads_eio: u64,
    /// Reads that failed otherwise (bookie down, timeout, another status).
    pub reads_failed: u64,
    /// Reads answered OK with other bytes than were acknowledged: silent corruption.
    pub reads_wrong: u64,
    /// Per bookie: latency of its OK answers to adds (a slow bookie shows here even when
    /// the others keep acknowledging at A), and its refusals by status.
    pub bookie_latency: BTreeMap<usize, Latency>,
    pub bookie_errors: BTreeMap<usize, BTreeMap<String, u64>>,
}

impl Counts {
    fn new() -> Counts {
        Counts {
            adds: 0,
            acknowledged: 0,
            failed: 0,
            latency: Latency::new(3),
            errors: BTreeMap::new(),
            reads: 0,
            reads_ok: 0,
            reads_eio: 0,
            reads_failed: 0,
            reads_wrong: 0,
            bookie_latency: BTreeMap::new(),
            bookie_errors: BTreeMap::new(),
        }
    }
}

/// Per phase and per second.
pub struct Measured {
    pub phases: Vec<Counts>,
    pub seconds: Vec<Counts>,
}

struct LedgerState {
    id: i64,
    ensemble: Vec<usize>,
    next_entry: i64,
    lac: i64,
    length: i64,
}

#[derive(Default)]
struct Slot {
    conn: Option<Arc<Connection>>,
    last_try: Option<Instant>,
}

/// When a restarted bookie acknowledged again.
#[derive(Default, Clone, Copy)]
pub struct Comeback {
    pub restarted_at: Option<Instant>,
    pub back_after: Option<Duration>,
}

/// The running load; shared by the add and read tasks, the schedule and verification.
pub struct Load {
    pub drill: Drill,
    addrs: Vec<String>,
    slots: Vec<tokio::sync::Mutex<Slot>>,
    ledgers: Mutex<Vec<LedgerState>>,
    rr: AtomicU64,
    pub records: Mutex<Vec<Arc<Record>>>,
    measured: Mutex<Measured>,
    /// Phase boundaries: when each step of the schedule started (`Duration::MAX` until it
    /// has), not its planned time: a step that waits (a restart until the bookie is
    /// registered again) delays the ones after it.
    bounds: Mutex<Vec<Duration>>,
    pub comebacks: Mutex<Vec<Comeback>>,
    digest: DigestManager,
    master_key: MasterKey,
    payload_pool: Bytes,
    pub t0: Instant,
}

fn guard<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Load {
    pub fn new(drill: Drill, addrs: Vec<String>) -> Arc<Load> {
        let n = addrs.len();
        let ids = LedgerIdAlloc::from_clock();
        let ledgers = (0..drill.ledgers)
            .map(|i| LedgerState {
                id: ids.take(),
                ensemble: (0..drill.ensemble).map(|k| (i + k) % n).collect(),
                next_entry: 0,
                lac: -1,
                length: 0,
            })
            .collect();
        let mut rng = ChaCha8Rng::seed_from_u64(0x6b63_6861_6f73);
        let pool: Vec<u8> = (0..drill.size as usize + 4096)
            .map(|_| rng.random())
            .collect();
        let phases = drill.schedule.len() + 1;
        let bounds = Mutex::new(vec![Duration::MAX; drill.schedule.len()]);
        Arc::new(Load {
            addrs,
            slots: (0..n)
                .map(|_| tokio::sync::Mutex::new(Slot::default()))
                .collect(),
            ledgers: Mutex::new(ledgers),
            rr: AtomicU64::new(0),
            records: Mutex::new(Vec::new()),
            measured: Mutex::new(Measured {
                phases: (0..phases).map(|_| Counts::new()).collect(),
                seconds: Vec::new(),
            }),
            bounds,
            comebacks: Mutex::new(vec![Comeback::default(); n]),
            digest: DigestManager::new(DigestType::Crc32c, PASSWORD),
            master_key: MasterKey::from_password(PASSWORD),
            payload_pool: Bytes::from(pool),
            drill,
            t0: Instant::now(),
        })
    }

    /// The phase a moment falls in: 0 before the first step, i after step i-1.
    fn phase_of(&self, at: Instant) -> usize {
        let t = at.saturating_duration_since(self.t0);
        guard(&self.bounds).iter().filter(|b| **b <= t).count()
    }

    /// Notes that step `i` of the schedule starts now (its phase begins).
    pub fn step_started(&self, i: usize) {
        if let Some(b) = guard(&self.bounds).get_mut(i) {
            *b = self.t0.elapsed();
        }
    }

    fn count(&self, at: Instant, f: impl Fn(&mut Counts)) {
        let phase = self.phase_of(at);
        let second = at.saturating_duration_since(self.t0).as_secs() as usize;
        let mut m = guard(&self.measured);
        f(&mut m.phases[phase]);
        while m.seconds.len() <= second {
            m.seconds.push(Counts::new());
        }
        f(&mut m.seconds[second]);
    }

    /// The measurements so far (cloned).
    pub fn measured(&self) -> (Vec<Counts>, Vec<Counts>) {
        let m = guard(&self.measured);
        (m.phases.clone(), m.seconds.clone())
    }

    /// A connection to bookie `b`, made again if the last one died; None when it cannot be
    /// had now.
    pub async fn conn(&self, b: usize) -> Option<Arc<Connection>> {
        let mut slot = self.slots[b].lock().await;
        if let Some(c) = &slot.conn {
            if c.dead_reason().is_none() {
                return Some(c.clone());
            }
            slot.conn = None;
        }
        if slot.last_try.is_some_and(|t| t.elapsed() < RECONNECT_EVERY) {
            return None;
        }
        slot.last_try = Some(Instant::now());
        let connect = Connection::connect(&self.addrs[b], self.drill.protocol, None);
        match tokio::time::timeout(Duration::from_secs(1), connect).await {
            Ok(Ok(c)) => {
                let c = Arc::new(c);
                slot.conn = Some(c.clone());
                Some(c)
            }
            _ => None,
        }
    }

    /// Drops every connection (verification starts from fresh ones).
    pub async fn disconnect_all(&self) {
        for s in &self.slots {
            let mut slot = s.lock().await;
            slot.conn = None;
            slot.last_try = None;
        }
    }

    /// Notes that bookie `b` was (re)started now.
    pub fn restarted(&self, b: usize) {
        guard(&self.comebacks)[b] = Comeback {
            restarted_at: Some(Instant::now()),
            back_after: None,
        };
    }

    fn answered_ok(&self, b: usize, at: Instant) {
        let mut c = guard(&self.comebacks);
        if let (Some(r), None) = (c[b].restarted_at, c[b].back_after) {
            c[b].back_after = Some(at.saturating_duration_since(r));
        }
    }

    fn next_entry(&self) -> (i64, i64, Vec<usize>, Bytes) {
        let slot = self.rr.fetch_add(1, Ordering::Relaxed) as usize;
        let mut ls = guard(&self.ledgers);
        let n = ls.len();
        let st = &mut ls[slot % n];
        let entry_id = st.next_entry;
        st.next_entry += 1;
        st.length += self.drill.size as i64;
        let header = EntryHeader {
            ledger_id: st.id,
            entry_id,
            last_add_confirmed: st.lac,
            length: st.length,
        };
        let (id, ensemble) = (st.id, st.ensemble.clone());
        drop(ls);
        let off = (entry_id as u64 ^ id as u64).wrapping_mul(2_654_435_761) % 4096;
        let payload = self
            .payload_pool
            .slice(off as usize..off as usize + self.drill.size as usize);
        (
            id,
            entry_id,
            ensemble,
            self.digest.build_entry(&header, &payload),
        )
    }

    /// One add: to every bookie of its ledger's ensemble, acknowledged at A.
    async fn add(self: &Arc<Load>) {
        let started = Instant::now();
        let (ledger, entry, ensemble, bytes) = self.next_entry();
        let record = Arc::new(Record {
            ledger,
            entry,
            len: bytes.len(),
            fingerprint: fingerprint(&bytes),
            acked_by: AtomicU64::new(0),
            acknowledged: AtomicBool::new(false),
        });
        guard(&self.records).push(record.clone());
        let (tx, mut rx) = mpsc::unbounded_channel();
        for &b in &ensemble {
            let (load, tx, bytes) = (self.clone(), tx.clone(), bytes.clone());
            tokio::spawn(async move {
                let result = match load.conn(b).await {
                    Some(c) => {
                        c.add(ledger, entry, bytes, &load.master_key, REQUEST_TIMEOUT)
                            .await
                    }
                    None => Err(RequestError::ConnectionLost(Arc::from("no connection"))),
                };
                let at = Instant::now();
                let ns = at.saturating_duration_since(started).as_nanos() as u64;
                load.count(started, |c| match &result {
                    Ok(()) => c
                        .bookie_latency
                        .entry(b)
                        .or_insert_with(|| Latency::new(2))
                        .record(ns),
                    Err(e) => {
                        *c.bookie_errors
                            .entry(b)
                            .or_default()
                            .entry(e.code().to_string())
                            .or_default() += 1
                    }
                });
                let _ = tx.send((b, result, at));
            });
        }
        drop(tx);
        let mut oks = 0;
        let mut first_error = None;
        let mut answered_at = None;
        while let Some((b, result, at)) = rx.recv().await {
            match result {
                Ok(()) => {
                    record.acked_by.fetch_or(1 << b, Ordering::SeqCst);
                    self.answered_ok(b, at);
                    oks += 1;
                    if oks == self.drill.ack_quorum {
                        answered_at = Some(at);
                        break;
                    }
                }
                Err(e) => {
                    first_error.get_or_insert(e.code());
                }
            }
        }
        if let Some(at) = answered_at {
            record.acknowledged.store(true, Ordering::SeqCst);
            self.advance_lac(ledger, entry);
            let ns = at.saturating_duration_since(started).as_nanos() as u64;
            self.count(started, |c| {
                c.adds += 1;
                c.acknowledged += 1;
                c.latency.record(ns);
            });
            // The rest of the ensemble: their OKs are promises too.
            let load = self.clone();
            tokio::spawn(async move {
                while let Some((b, result, at)) = rx.recv().await {
                    if result.is_ok() {
                        record.acked_by.fetch_or(1 << b, Ordering::SeqCst);
                        load.answered_ok(b, at);
                    }
                }
            });
        } else {
            let code = first_error.unwrap_or("ENOTACKED").to_string();
            self.count(started, |c| {
                c.adds += 1;
                c.failed += 1;
                *c.errors.entry(code.clone()).or_default() += 1;
            });
        }
    }

    fn advance_lac(&self, ledger: i64, entry: i64) {
        let mut ls = guard(&self.ledgers);
        if let Some(st) = ls.iter_mut().find(|l| l.id == ledger) {
            st.lac = st.lac.max(entry);
        }
    }

    /// One read of a random acknowledged entry from a bookie that acknowledged it.
    async fn read(self: &Arc<Load>, rng: &mut ChaCha8Rng) {
        let pick = {
            let recs = guard(&self.records);
            if recs.is_empty() {
                None
            } else {
                // Recent entries live in the write cache; a uniform pick reaches flushed ones.
                let r = recs[rng.random_range(0..recs.len())].clone();
                let mask = r.acked_by.load(Ordering::SeqCst);
                let holders: Vec<usize> = (0..64).filter(|b| mask & (1 << b) != 0).collect();
                (r.acknowledged.load(Ordering::SeqCst) && !holders.is_empty())
                    .then(|| (r.clone(), holders[rng.random_range(0..holders.len())]))
            }
        };
        let Some((record, b)) = pick else {
            return;
        };
        let started = Instant::now();
        let result = match self.conn(b).await {
            Some(c) => c.read(record.ledger, record.entry, REQUEST_TIMEOUT).await,
            None => Err(RequestError::ConnectionLost(Arc::from("no connection"))),
        };
        self.count(started, |c| {
            c.reads += 1;
            match &result {
                Ok(bytes)
                    if bytes.len() == record.len && fingerprint(bytes) == record.fingerprint =>
                {
                    c.reads_ok += 1
                }
                Ok(_) => c.reads_wrong += 1,
                Err(RequestError::Bookie("EIO")) => c.reads_eio += 1,
                Err(_) => c.reads_failed += 1,
            }
        });
    }

    /// Runs adds (and reads) for the drill's duration; returns when every add has ended.
    pub async fn run(self: &Arc<Load>) {
        let end = self.t0 + self.drill.duration;
        let adds = {
            let load = self.clone();
            tokio::spawn(async move { load.dispatch(end, false).await })
        };
        let reads = (self.drill.read_rate > 0).then(|| {
            let load = self.clone();
            tokio::spawn(async move { load.dispatch(end, true).await })
        });
        let _ = adds.await;
        if let Some(r) = reads {
            let _ = r.await;
        }
    }

    async fn dispatch(self: Arc<Load>, end: Instant, reads: bool) {
        let depth = self.drill.iodepth;
        let sem = Arc::new(Semaphore::new(depth));
        let rate = if reads {
            self.drill.read_rate
        } else {
            self.drill.rate
        };
        let mut ticker = (rate > 0).then(|| {
            let mut t = tokio::time::interval(Duration::from_secs_f64(1.0 / rate as f64));
            t.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            t
        });
        let mut seed = 7u64;
        while Instant::now() < end {
            if let Some(t) = ticker.as_mut() {
                t.tick().await;
            }
            let Ok(permit) = sem.clone().acquire_owned().await else {
                break;
            };
            let load = self.clone();
            seed += 1;
            tokio::spawn(async move {
                if reads {
                    let mut rng = ChaCha8Rng::seed_from_u64(seed);
                    load.read(&mut rng).await;
                } else {
                    load.add().await;
                }
                drop(permit);
            });
        }
        // Every task holds a permit until it ends.
        let _ = sem.acquire_many(depth as u32).await;
    }
}
