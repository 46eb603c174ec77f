//! End-to-end: bkbench's job runner and binary against an in-process fake bookie (v2 and v3),
//! checking what was written (entry format, LAC, cumulative length, digest), what was read,
//! and that a bookie that vanishes or stalls ends the job with errors counted, not a hang.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use bk_proto::{DigestManager, DigestType};
use bkbench::job::{Job, LedgerIdAlloc};
use bkbench::options::{JobSpec, Origin, RawOption};
use bkbench::report::JobResult;
use common::FakeBookie;

fn spec(addr: &str, opts: &[(&str, &str)]) -> JobSpec {
    let mut raw = vec![RawOption {
        key: "bookie".into(),
        value: Some(addr.into()),
        origin: Origin::CommandLine,
    }];
    for (k, v) in opts {
        raw.push(RawOption {
            key: (*k).into(),
            value: Some((*v).into()),
            origin: Origin::CommandLine,
        });
    }
    JobSpec::build("t", &raw).expect("valid job")
}

async fn run(spec: JobSpec) -> JobResult {
    let job = Job::connect(spec, 0, Arc::new(LedgerIdAlloc::starting_at(1000)))
        .await
        .expect("connect");
    job.run().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v2_writes_are_valid_entries_with_lac_and_length() {
    let fake = FakeBookie::start().await;
    let r = run(spec(
        &fake.addr,
        &[
            ("rw", "write"),
            ("iodepth", "16"),
            ("ledgers", "3"),
            ("number_ios", "900"),
            ("bssplit", "100/50:3000/50"),
            ("runtime", "30s"),
        ],
    ))
    .await;
    let w = r.write.as_ref().expect("write stats");
    assert_eq!(w.total_ios, 900, "{r:?}");
    assert_eq!(w.total_errors, 0);
    assert_eq!(r.stopped_by, "number_ios");
    assert!(w.iops > 0.0 && w.lat_ns.n == 900);
    let store = fake.store.lock().expect("store");
    assert!(store.adds >= 900);
    let dm = DigestManager::new(DigestType::Crc32c, b"");
    let ledgers: Vec<i64> = r.ledger_ids.iter().map(|&x| x as i64).collect();
    assert_eq!(ledgers, vec![1000, 1001, 1002]);
    for l in ledgers {
        let mut length = 0i64;
        let mut prev_lac = -1i64;
        let mut e = 0i64;
        while let Some(entry) = store.entries.get(&(l, e)) {
            let (h, payload) = dm
                .verify_entry_for(entry, l, e)
                .expect("valid CRC32C entry");
            length += payload.len() as i64;
            assert_eq!(h.length, length, "cumulative length, ledger {l} entry {e}");
            assert!(h.last_add_confirmed < e, "LAC below the entry itself");
            assert!(h.last_add_confirmed >= prev_lac, "LAC never goes back");
            assert!(payload.len() == 100 || payload.len() == 3000);
            prev_lac = h.last_add_confirmed;
            e += 1;
        }
        assert!(e >= 250, "ledger {l} got {e} entries");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v3_mixed_tailing_reads_what_was_just_written() {
    let fake = FakeBookie::start().await;
    let r = run(spec(
        &fake.addr,
        &[
            ("protocol", "v3"),
            ("rw", "mixed"),
            ("rwmixread", "50"),
            ("read_pattern", "tailing"),
            ("connections", "2"),
            ("ledgers", "4"),
            ("iodepth", "8"),
            ("number_ios", "2000"),
        ],
    ))
    .await;
    let w = r.write.as_ref().expect("write");
    let rd = r.read.as_ref().expect("read");
    assert_eq!(w.total_errors + rd.total_errors, 0, "{r:?}");
    assert!(
        w.total_ios > 500 && rd.total_ios > 500,
        "{} {}",
        w.total_ios,
        rd.total_ios
    );
    assert!(rd.io_bytes > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v2_catchup_batch_reads_read_the_prefill_once() {
    let fake = FakeBookie::start().await;
    let r = run(spec(
        &fake.addr,
        &[
            ("rw", "read"),
            ("read_pattern", "catchup"),
            ("prefill", "400k"),
            ("bs", "1k"),
            ("batch_read", "8"),
            ("iodepth", "4"),
            ("ledgers", "2"),
        ],
    ))
    .await;
    let p = r.prefill.as_ref().expect("prefill");
    assert_eq!(p.entries, 400, "{p:?}");
    let rd = r.read.as_ref().expect("read");
    assert_eq!(rd.total_errors, 0, "{r:?}");
    assert_eq!(rd.entries, 400, "every prefilled entry read once");
    assert!(
        rd.total_ios <= 400 / 8 + 2,
        "batched: {} requests",
        rd.total_ios
    );
    assert_eq!(rd.io_bytes, 400 * 1024);
    assert_eq!(r.stopped_by, "all written entries read");
    assert!(fake.store.lock().expect("store").batch_reads > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_reads_v3() {
    let fake = FakeBookie::start().await;
    let r = run(spec(
        &fake.addr,
        &[
            ("protocol", "v3"),
            ("rw", "read"),
            ("read_pattern", "random"),
            ("prefill", "64k"),
            ("bs", "512"),
            ("iodepth", "4"),
            ("number_ios", "300"),
        ],
    ))
    .await;
    let rd = r.read.as_ref().expect("read");
    assert_eq!(rd.total_ios, 300, "{r:?}");
    assert_eq!(rd.total_errors, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vanishing_bookie_ends_the_job_with_errors_counted() {
    let fake = FakeBookie::start().await;
    let s = spec(
        &fake.addr,
        &[
            ("rw", "write"),
            ("iodepth", "32"),
            ("runtime", "60s"),
            ("timeout", "20s"),
        ],
    );
    let t0 = Instant::now();
    let handle = tokio::spawn(run(s));
    tokio::time::sleep(Duration::from_millis(500)).await;
    fake.vanish();
    let r = tokio::time::timeout(Duration::from_secs(10), handle)
        .await
        .expect("job ended well before its runtime")
        .expect("task");
    assert!(t0.elapsed() < Duration::from_secs(10));
    let w = r.write.as_ref().expect("write");
    assert!(w.total_ios > 0, "some adds before the bookie vanished");
    assert!(
        w.errors.get("ECONNLOST").copied().unwrap_or(0) > 0,
        "{:?}",
        w.errors
    );
    assert!(r.stopped_by.contains("connection lost"), "{}", r.stopped_by);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_bookie_times_requests_out() {
    let fake = FakeBookie::start().await;
    let s = spec(
        &fake.addr,
        &[
            ("rw", "write"),
            ("iodepth", "4"),
            ("runtime", "1500ms"),
            ("timeout", "300ms"),
        ],
    );
    let handle = tokio::spawn(run(s));
    tokio::time::sleep(Duration::from_millis(300)).await;
    fake.stall();
    let r = tokio::time::timeout(Duration::from_secs(10), handle)
        .await
        .expect("job ended")
        .expect("task");
    let w = r.write.as_ref().expect("write");
    assert!(
        w.errors.get("ETIMEOUT").copied().unwrap_or(0) >= 4,
        "{:?}",
        w.errors
    );
    assert!(
        r.notes.iter().any(|n| n.contains("retired")),
        "{:?}",
        r.notes
    );
}

#[tokio::test]
async fn an_unreachable_bookie_is_a_clear_error() {
    // Bind then drop, so the port is (almost certainly) closed.
    let addr = {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        l.local_addr().expect("addr").to_string()
    };
    let e = Job::connect(spec(&addr, &[]), 0, Arc::new(LedgerIdAlloc::starting_at(1)))
        .await
        .err()
        .expect("connect fails");
    assert!(e.contains(&addr) && e.contains("cannot connect"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ledgers_spread_over_several_bookies() {
    let a = FakeBookie::start().await;
    let b = FakeBookie::start().await;
    let both = format!("{},{}", a.addr, b.addr);
    let r = run(spec(
        &both,
        &[
            ("ledgers", "4"),
            ("iodepth", "8"),
            ("number_ios", "400"),
            ("connections", "2"),
        ],
    ))
    .await;
    let w = r.write.as_ref().expect("write");
    assert_eq!((w.total_ios, w.total_errors), (400, 0), "{r:?}");
    let (na, nb) = (
        a.store.lock().expect("a").entries.len(),
        b.store.lock().expect("b").entries.len(),
    );
    assert_eq!(na + nb, 400);
    assert!(
        na >= 100 && nb >= 100,
        "both bookies hold ledgers: {na} / {nb}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bookie_refusing_every_add_ends_the_job() {
    let fake = FakeBookie::start().await;
    fake.set_readonly();
    let t0 = Instant::now();
    let r = run(spec(&fake.addr, &[("iodepth", "8"), ("runtime", "60s")])).await;
    assert!(
        t0.elapsed() < Duration::from_secs(20),
        "ended by the roll-over cap, not runtime"
    );
    let w = r.write.as_ref().expect("write");
    assert!(
        w.errors.get("EREADONLY").copied().unwrap_or(0) > 256,
        "{:?}",
        w.errors
    );
    assert!(r.stopped_by.contains("EREADONLY"), "{}", r.stopped_by);
    assert!(
        r.ledger_ids.len() < 300,
        "bounded ledger table: {}",
        r.ledger_ids.len()
    );
}
