//! The acknowledgement hand-over (`JournalConfig::ack_delivery`, the crate's `ack` module):
//! each group's acknowledgements reach the hook as one batch in append order, no append
//! resolves before its batch is delivered, and a batch dropped undelivered fails its
//! appends with `ShutDown`.

mod common;

use bk_disk::SimFs;
use bk_journal::bytes::Bytes;
use bk_journal::{AckBatch, AckDelivery, JournalConfig, JournalError};
use common::{dirs, open_collect, sim_factory, small_config};
use std::sync::{mpsc, Mutex};
use std::time::Duration;

fn handed_over() -> (JournalConfig, mpsc::Receiver<AckBatch>) {
    let (tx, rx) = mpsc::channel::<AckBatch>();
    let tx = Mutex::new(tx);
    let cfg = JournalConfig {
        ack_delivery: Some(AckDelivery::new(move |batch| {
            let _ = tx.lock().unwrap().send(batch);
        })),
        ..small_config()
    };
    (cfg, rx)
}

#[test]
fn each_group_is_handed_over_once_and_resolves_only_when_delivered() {
    let fs = SimFs::new(7);
    let (cfg, batches) = handed_over();
    let (journal, _, _) = open_collect(&dirs(1), &cfg, sim_factory(&fs)).unwrap();
    let mut appends: Vec<_> = (0..200u64)
        .map(|e| journal.append_entry(1, e, Bytes::from(vec![e as u8; 300])))
        .collect();
    let mut got = Vec::new();
    let mut acks = 0;
    while acks < appends.len() {
        let batch = batches
            .recv_timeout(Duration::from_secs(10))
            .expect("a group's batch within 10 s");
        assert!(!batch.is_empty());
        acks += batch.len();
        got.push(batch);
    }
    assert_eq!(
        acks,
        appends.len(),
        "every append acknowledged exactly once"
    );
    // 200 appends of ~300 bytes in groups of at most 16 KiB: several groups.
    assert!(got.len() > 1, "{} batch(es)", got.len());
    // Handed over, not delivered: nothing has resolved yet.
    assert!(appends.iter_mut().all(|a| a.try_result().is_none()));
    for batch in got {
        batch.deliver();
    }
    let seqs: Vec<u64> = appends
        .iter_mut()
        .map(|a| a.try_result().expect("delivered").expect("durable").0)
        .collect();
    assert!(
        seqs.windows(2).all(|w| w[0] < w[1]),
        "acknowledged in append order"
    );
    // A batch nobody delivers: its append fails, it does not hang.
    let last = journal.append_entry(1, 200, Bytes::from_static(b"x"));
    drop(batches.recv_timeout(Duration::from_secs(10)).unwrap());
    assert!(matches!(last.wait(), Err(JournalError::ShutDown)));
}
