//! Model-based test: seeded random sequences of adds, reads (by id, last, batch),
//! fences, master keys, explicit LACs, flushes, deletions, GC scans, compactions and
//! restarts on the simulated disk; every answer must equal what a plain in-memory
//! model says. Two kinds of restart: flush then power loss, and power loss at any
//! moment followed by the bookie's journal replay (every add, fence, key and explicit
//! LAC since the last successful `flush()`, i.e. the last checkpoint).
//!
//! Seeds: `BK_SIM_SEEDS` (default 6) seeds of `BK_SIM_OPS` (default 300) operations.
//! A failing seed is printed; add it to `regression_seeds` below.

mod common;

use bk_disk::SimFs;
use bk_entrylog::{Bytes, EntryLog, EntrySelector, Error};
use common::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeMap, BTreeSet};

#[derive(Default, Clone)]
struct ModelLedger {
    entries: BTreeMap<u64, Bytes>,
    fenced: bool,
    key: Option<Vec<u8>>,
    elac: Option<Bytes>,
    lac: Option<u64>,
}

/// A journal record the bookie would replay after a crash.
enum JournalOp {
    Add(u64, u64, Bytes),
    Fence(u64),
    Key(u64, Vec<u8>),
    ExplicitLac(u64, Bytes),
}

fn replay(log: &EntryLog, journal: &[JournalOp]) {
    for op in journal {
        let r = match op {
            JournalOp::Add(l, e, d) => log.add_entry(*l, *e, d.clone()),
            JournalOp::Fence(l) => log.set_fenced(*l).map(|_| ()),
            JournalOp::Key(l, k) => log.set_master_key(*l, k),
            JournalOp::ExplicitLac(l, b) => log.set_explicit_lac(*l, b.clone()),
        };
        match r {
            Ok(()) | Err(Error::LedgerDeleted(_)) => {}
            Err(e) => panic!("replay failed: {e}"),
        }
    }
}

#[derive(Default)]
struct Model {
    ledgers: BTreeMap<u64, ModelLedger>,
    deleted: BTreeSet<u64>,
}

fn lac_body(ledger: u64, lac: u64) -> Bytes {
    let mut v = Vec::new();
    v.extend_from_slice(&(ledger as i64).to_be_bytes());
    v.extend_from_slice(&(lac as i64).to_be_bytes());
    v.extend_from_slice(&[7u8; 8]);
    Bytes::from(v)
}

fn check_read(log: &EntryLog, m: &Model, l: u64, which: EntrySelector, ctx: &str) {
    let got = log.get_entry(l, which);
    let Some(ml) = m.ledgers.get(&l) else {
        assert!(
            matches!(got, Err(Error::NoLedger(_))),
            "{ctx}: ledger {l} {which:?}: {got:?}"
        );
        return;
    };
    let want = match which {
        EntrySelector::Id(e) => ml.entries.get(&e).cloned(),
        EntrySelector::Last => ml.entries.last_key_value().map(|(_, b)| b.clone()),
    };
    match want {
        Some(w) => match got {
            Ok(b) if b == w => {}
            Ok(b) => panic!(
                "{ctx}: ledger {l} {which:?}: got {} bytes (entry field {:?}), want {} bytes; runs {:?}",
                b.len(),
                b.get(8..16),
                w.len(),
                log.debug_runs(l)
            ),
            Err(e) => panic!("{ctx}: ledger {l} {which:?}: {e}"),
        },
        None => assert!(matches!(got, Err(Error::NoEntry { .. })), "{ctx}: {l} {which:?}: {got:?}"),
    }
}

fn full_check(log: &EntryLog, m: &Model, ctx: &str) {
    let mut ids: Vec<u64> = m.ledgers.keys().copied().collect();
    ids.sort_unstable();
    assert_eq!(log.ledgers(), ids, "{ctx}: ledger set");
    for (l, ml) in &m.ledgers {
        assert_eq!(log.is_fenced(*l).unwrap(), ml.fenced, "{ctx}: fenced {l}");
        assert_eq!(log.master_key(*l).unwrap(), ml.key, "{ctx}: key {l}");
        assert_eq!(log.explicit_lac(*l).unwrap(), ml.elac, "{ctx}: elac {l}");
        assert_eq!(log.lac(*l).unwrap(), ml.lac, "{ctx}: lac {l}");
        assert_eq!(
            log.entries_of_ledger(*l).unwrap(),
            ml.entries.keys().copied().collect::<Vec<_>>(),
            "{ctx}: entries of {l}"
        );
        for e in ml.entries.keys() {
            check_read(log, m, *l, EntrySelector::Id(*e), ctx);
        }
        check_read(log, m, *l, EntrySelector::Last, ctx);
    }
    for l in &m.deleted {
        check_read(log, m, *l, EntrySelector::Id(0), ctx);
    }
}

fn run_seed(seed: u64, ops: usize) {
    let fs = SimFs::new(seed);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let open = |fs: &SimFs| EntryLog::open(dirs(), small_config(), sim_factory(fs)).expect("open");
    let mut log = open(&fs);
    let mut m = Model::default();
    let mut next_ledger = 1u64;
    let mut pool: Vec<u64> = Vec::new();
    let mut journal: Vec<JournalOp> = Vec::new();
    let trace = std::env::var("BK_SIM_TRACE").is_ok();
    for step in 0..ops {
        let ctx = format!("seed {seed} step {step}");
        if trace {
            eprintln!("{ctx}: pool {pool:?}");
        }
        if pool.len() < 3 || rng.random_ratio(1, 30) {
            pool.push(next_ledger);
            next_ledger += 1;
        }
        let l = pool[rng.random_range(0..pool.len())];
        match rng.random_range(0..100) {
            0..=39 => {
                let e = rng.random_range(0..30u64);
                let len = if rng.random_ratio(1, 40) {
                    rng.random_range(100_000..300_000)
                } else {
                    rng.random_range(0..3000)
                };
                let lac = e as i64 - rng.random_range(1..3);
                let data = entry(l, e, lac, len, rng.random());
                if trace {
                    eprintln!("{ctx}: add {l}/{e} len {}", data.len());
                }
                log.add_entry(l, e, data.clone())
                    .unwrap_or_else(|err| panic!("{ctx}: add {err}"));
                journal.push(JournalOp::Add(l, e, data.clone()));
                let ml = m.ledgers.entry(l).or_default();
                ml.entries.insert(e, data);
                if lac >= 0 {
                    ml.lac = Some(ml.lac.map_or(lac as u64, |x| x.max(lac as u64)));
                }
            }
            40..=59 => {
                let which = if rng.random_ratio(1, 4) {
                    EntrySelector::Last
                } else {
                    EntrySelector::Id(rng.random_range(0..32))
                };
                let l = if rng.random_ratio(1, 10) && !m.deleted.is_empty() {
                    *m.deleted.iter().next().unwrap_or(&l)
                } else {
                    l
                };
                check_read(&log, &m, l, which, &ctx);
            }
            60..=63 => {
                let changed = log.set_fenced(l).unwrap();
                journal.push(JournalOp::Fence(l));
                let ml = m.ledgers.entry(l).or_default();
                assert_eq!(changed, !ml.fenced, "{ctx}: fence changed");
                ml.fenced = true;
            }
            64..=67 => {
                let key = if rng.random_ratio(1, 4) {
                    vec![0u8; 20]
                } else {
                    vec![rng.random_range(1..4u8); 20]
                };
                let r = log.set_master_key(l, &key);
                if r.is_ok() {
                    journal.push(JournalOp::Key(l, key.clone()));
                }
                let ml = m.ledgers.entry(l).or_default();
                let zero = |k: &[u8]| k.iter().all(|b| *b == 0);
                match &ml.key {
                    Some(k) if *k == key => assert!(r.is_ok(), "{ctx}"),
                    Some(k) if !zero(k) && !zero(&key) => {
                        assert!(
                            matches!(r, Err(Error::MasterKeyConflict(_))),
                            "{ctx}: {r:?}"
                        )
                    }
                    Some(k) if !zero(k) => assert!(r.is_ok(), "{ctx}"),
                    _ => {
                        assert!(r.is_ok(), "{ctx}");
                        ml.key = Some(key);
                    }
                }
            }
            68..=70 => {
                let v = rng.random_range(0..40u64);
                let body = lac_body(l, v);
                log.set_explicit_lac(l, body.clone()).unwrap();
                journal.push(JournalOp::ExplicitLac(l, body.clone()));
                let ml = m.ledgers.entry(l).or_default();
                ml.elac = Some(body);
                ml.lac = Some(ml.lac.map_or(v, |x| x.max(v)));
            }
            71..=78 => {
                if trace {
                    eprintln!("{ctx}: flush");
                }
                log.flush().unwrap_or_else(|e| panic!("{ctx}: flush {e}"));
                journal.clear();
            }
            79..=81 => {
                // Deleting is only allowed for ledgers the model knows.
                if m.ledgers.remove(&l).is_some() {
                    assert!(log.delete_ledger(l).unwrap(), "{ctx}");
                    m.deleted.insert(l);
                    pool.retain(|x| *x != l);
                    assert!(matches!(
                        log.add_entry(l, 0, entry(l, 0, -1, 1, 1)),
                        Err(Error::LedgerDeleted(_))
                    ));
                }
            }
            82..=84 => {
                let token = log.begin_gc_scan();
                // A ledger created during the scan and absent from metadata survives.
                let fresh = next_ledger;
                next_ledger += 1;
                pool.push(fresh);
                log.set_master_key(fresh, &[9u8; 20]).unwrap();
                journal.push(JournalOp::Key(fresh, vec![9u8; 20]));
                m.ledgers.insert(
                    fresh,
                    ModelLedger {
                        key: Some(vec![9u8; 20]),
                        ..Default::default()
                    },
                );
                let live: BTreeSet<u64> = m
                    .ledgers
                    .keys()
                    .copied()
                    .filter(|x| *x != fresh && rng.random_ratio(4, 5))
                    .collect();
                let rep = log.gc(token, &|x| live.contains(&x)).unwrap();
                let victims: Vec<u64> = m
                    .ledgers
                    .keys()
                    .copied()
                    .filter(|x| *x != fresh && !live.contains(x))
                    .collect();
                assert_eq!(rep.deleted_ledgers.len(), victims.len(), "{ctx}: gc count");
                let mut sorted = victims.clone();
                sorted.sort_unstable();
                assert_eq!(rep.deleted_ledgers, sorted, "{ctx}: gc ids");
                for v in victims {
                    m.ledgers.remove(&v);
                    m.deleted.insert(v);
                    pool.retain(|x| *x != v);
                }
            }
            85..=88 => {
                let r = log
                    .compact(Some(0.9))
                    .unwrap_or_else(|e| panic!("{ctx}: compact {e}"));
                if trace {
                    eprintln!("{ctx}: compact {r:?}");
                }
            }
            89..=91 => {
                let start = rng.random_range(0..30u64);
                let max = rng.random_range(0..6usize);
                let got = log.get_entries(l, start, max, 20_000);
                match m.ledgers.get(&l).and_then(|ml| ml.entries.get(&start)) {
                    None => assert!(got.is_err(), "{ctx}: batch from missing"),
                    Some(first) => {
                        let got = got.unwrap();
                        assert_eq!(&got[0], first, "{ctx}");
                        let ml = &m.ledgers[&l];
                        let mut total = 0;
                        for (i, b) in got.iter().enumerate() {
                            assert_eq!(
                                Some(b),
                                ml.entries.get(&(start + i as u64)),
                                "{ctx}: batch {i}"
                            );
                            total += 4 + b.len();
                        }
                        assert!(i64::try_from(got.len()).is_ok());
                        assert!(got.len() == 1 || total <= 20_000, "{ctx}");
                        assert!(max == 0 || got.len() <= max, "{ctx}");
                    }
                }
            }
            92..=93 => {
                // Power loss without a flush; the bookie replays its journal.
                if trace {
                    eprintln!("{ctx}: crash and replay {} records", journal.len());
                }
                drop(log);
                fs.crash();
                log = open(&fs);
                replay(&log, &journal);
                full_check(&log, &m, &ctx);
            }
            94..=95 => {
                log.flush().unwrap();
                journal.clear();
                if trace {
                    eprintln!("{ctx}: restart after flush");
                }
                drop(log);
                fs.crash();
                log = open(&fs);
                full_check(&log, &m, &ctx);
            }
            _ => full_check(&log, &m, &ctx),
        }
    }
    log.flush().unwrap();
    drop(log);
    fs.crash();
    let log = open(&fs);
    full_check(&log, &m, &format!("seed {seed} final"));
}

fn env_usize(key: &str, default: usize) -> usize {
    std::env::var(key)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[test]
fn model_random_seeds() {
    let seeds = env_usize("BK_SIM_SEEDS", 6) as u64;
    let ops = env_usize("BK_SIM_OPS", 300);
    let base = env_usize("BK_SIM_SEED_BASE", 1000) as u64;
    for seed in base..base + seeds {
        let r = std::panic::catch_unwind(|| run_seed(seed, ops));
        if let Err(e) = r {
            eprintln!(
                "model test failed with seed {seed} (BK_SIM_SEED_BASE={seed} BK_SIM_SEEDS=1)"
            );
            std::panic::resume_unwind(e);
        }
    }
}
