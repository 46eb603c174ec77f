//! Property tests of the sans-I/O group-commit state machine (`GroupCommit`):
//! acks in append order, never an `Ok` before the datasync of the record's group
//! completed, never an `Ok` after a failure, caps respected, greedy, one group in
//! flight, groups sector-aligned inside their segment and decodable with a chain of
//! `prev_seq`.

use bk_disk::SECTOR;
use bk_journal::commit::{
    CommitError, GroupCommit, GroupCommitConfig, GroupWrite, LogPosition, Start,
};
use bk_journal::format::{decode_group_records, GroupHeader};
use bk_journal::{Record, RecordKind, Seq};
use bytes::Bytes;
use proptest::prelude::*;
use std::collections::HashMap;
use std::time::{Duration, Instant};

#[derive(Clone, Debug)]
enum Step {
    Append(usize),
    Barrier,
    Poll(u64),
    CompleteOk,
    CompleteErr,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => (0usize..3000).prop_map(Step::Append),
        1 => (10_000usize..40_000).prop_map(Step::Append),
        2 => Just(Step::Barrier),
        4 => (0u64..3).prop_map(Step::Poll),
        4 => Just(Step::CompleteOk),
        1 => Just(Step::CompleteErr),
    ]
}

fn config() -> impl Strategy<Value = GroupCommitConfig> {
    (
        prop_oneof![Just(16 * 1024u64), Just(64 * 1024u64)],
        1usize..20_000,
        0usize..6,
        prop_oneof![
            Just(None),
            (1u64..3).prop_map(|ms| Some(Duration::from_millis(ms)))
        ],
    )
        .prop_map(|(seg, bytes_max, recs_max, wait)| GroupCommitConfig {
            journal_id: 0xabcdef,
            segment_bytes: seg,
            group_bytes_max: bytes_max,
            group_records_max: recs_max,
            group_wait_max: wait,
        })
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Record(Seq),
    Barrier,
    Rejected,
}

struct Harness {
    gc: GroupCommit<u64>,
    cfg: GroupCommitConfig,
    now: Instant,
    next_token: u64,
    kinds: HashMap<u64, Kind>,
    acked: Vec<u64>,
    in_flight: Option<(u64, LogPosition, usize, Seq)>,
    last_group_end: Option<LogPosition>,
    chain_last: Seq,
    durable: Seq,
    failed: bool,
    /// seq -> (payload byte, payload length) of every accepted record, to check that
    /// each group carries exactly the appended bytes (staged or encoded at the cut).
    payloads: HashMap<u64, (u8, usize)>,
}

impl Harness {
    fn new(cfg: GroupCommitConfig) -> Harness {
        let start = Start {
            position: LogPosition {
                segment: 1,
                offset: 0,
            },
            prev_seq: Seq(5),
            next_seq: Seq(9),
        };
        Harness {
            gc: GroupCommit::new(cfg.clone(), start),
            cfg,
            now: Instant::now(),
            next_token: 0,
            kinds: HashMap::new(),
            acked: Vec::new(),
            in_flight: None,
            last_group_end: None,
            chain_last: Seq(5),
            durable: Seq(5),
            failed: false,
            payloads: HashMap::new(),
        }
    }

    fn check_acks(&mut self, at_completion: bool) {
        let acks: Vec<_> = self.gc.drain_acks().collect();
        for a in acks {
            // In append order, each token once.
            if let Some(last) = self.acked.last() {
                assert!(a.token > *last, "ack {} after {}", a.token, last);
            }
            assert_eq!(a.token, self.acked.len() as u64, "acks skip a token");
            self.acked.push(a.token);
            let kind = self.kinds[&a.token];
            match (&a.result, kind) {
                (Ok(s), Kind::Record(seq)) => {
                    assert!(!self.failed, "Ok ack after a failure");
                    assert!(at_completion, "record acked outside a completion");
                    assert_eq!(*s, seq);
                    assert!(
                        seq <= self.durable,
                        "ack of {seq:?} before durable {:?}",
                        self.durable
                    );
                }
                (Ok(s), Kind::Barrier) => {
                    assert!(!self.failed, "Ok barrier after a failure");
                    assert!(
                        *s <= self.durable || *s <= Seq(8),
                        "barrier {s:?} ahead of durable"
                    );
                }
                (Ok(_), Kind::Rejected) => panic!("a rejected append acked Ok"),
                (Err(CommitError::TooLarge { .. }), Kind::Rejected) => {}
                (Err(CommitError::Fatal(_)), _) => {
                    assert!(self.failed, "fatal ack without failure")
                }
                (Err(e), k) => panic!("unexpected error {e:?} for {k:?}"),
            }
        }
    }

    fn check_group(&mut self, gw: &GroupWrite) {
        assert!(self.in_flight.is_none(), "two groups in flight");
        let len = gw.buf.len();
        assert_eq!(len % SECTOR, 0);
        assert_eq!(gw.position.offset as usize % SECTOR, 0);
        assert!(gw.position.offset + len as u64 <= self.cfg.segment_bytes);
        if let Some(end) = self.last_group_end {
            let same = gw.position.segment == end.segment && gw.position.offset == end.offset;
            let next = gw.position.segment == end.segment + 1 && gw.position.offset == 0;
            assert!(same || next, "group at {:?} after end {end:?}", gw.position);
        }
        assert!(gw.records >= 1);
        if self.cfg.group_records_max > 0 {
            assert!(gw.records <= self.cfg.group_records_max.max(1));
        }
        if gw.records > 1 {
            assert!(gw.record_bytes <= self.cfg.group_bytes_max);
        }
        let h = GroupHeader::decode(gw.buf.as_slice()).expect("group header decodes");
        h.check_place(self.cfg.journal_id, gw.position.segment)
            .expect("placed");
        assert_eq!(h.prev_seq, self.chain_last.0, "prev_seq chain");
        assert_eq!(h.first_seq, gw.first_seq.0);
        assert_eq!(h.last_seq(), gw.last_seq.0);
        let recs = decode_group_records(&h, gw.buf.as_slice()).expect("records decode");
        assert_eq!(recs.len(), gw.records);
        for r in &recs {
            let (byte, len) = self.payloads[&r.seq];
            let p = &gw.buf.as_slice()[r.payload.clone()];
            assert_eq!(p.len(), len, "payload length of seq {}", r.seq);
            assert!(
                p.iter().all(|b| *b == byte),
                "payload bytes of seq {}",
                r.seq
            );
        }
        assert!(gw.buf.as_slice()[56 + h.records_len as usize..]
            .iter()
            .all(|b| *b == 0));
        self.chain_last = gw.last_seq;
        self.last_group_end = Some(LogPosition {
            segment: gw.position.segment,
            offset: gw.position.offset + len as u64,
        });
    }

    fn run(&mut self, s: &Step) {
        match s {
            Step::Append(n) => {
                let t = self.next_token;
                self.next_token += 1;
                let rec = Record::new(RecordKind(9), Bytes::from(vec![t as u8; *n])).unwrap();
                // Odd sizes come pre-encoded as a group of their own (as the journal
                // does for records above group_bytes_max): used when the record does
                // form a group alone, ignored otherwise.
                let r = if n % 2 == 1 {
                    let enc = bk_journal::format::pre_encode_alone(&rec, None);
                    self.gc.append_encoded(rec, enc, t, self.now)
                } else {
                    self.gc.append(rec, t, self.now)
                };
                let kind = match r {
                    Ok(seq) => {
                        self.payloads.insert(seq.0, (t as u8, *n));
                        Kind::Record(seq)
                    }
                    Err(CommitError::TooLarge { .. }) => Kind::Rejected,
                    Err(CommitError::Fatal(_)) => {
                        assert!(self.failed);
                        Kind::Rejected
                    }
                    Err(CommitError::NoSpace(_)) => panic!("no space reported without a driver"),
                };
                self.kinds.insert(t, kind);
                self.check_acks(false);
            }
            Step::Barrier => {
                let t = self.next_token;
                self.next_token += 1;
                self.kinds.insert(t, Kind::Barrier);
                self.gc.barrier(t, self.now);
                self.check_acks(false);
            }
            Step::Poll(ms) => {
                self.now += Duration::from_millis(*ms);
                let idle_before = self.in_flight.is_none();
                let gw = self.gc.poll(self.now);
                self.check_acks(false);
                match gw {
                    Some(gw) => {
                        assert!(idle_before, "poll cut a group while one is in flight");
                        assert!(!self.failed);
                        self.check_group(&gw);
                        self.in_flight = Some((gw.id, gw.position, gw.buf.len(), gw.last_seq));
                    }
                    None => {
                        // Greedy: nothing in flight and a pending record => a group.
                        if idle_before && !self.failed && self.cfg.group_wait_max.is_none() {
                            assert_eq!(
                                self.gc.pending_len(),
                                0,
                                "greedy poll left records pending"
                            );
                        }
                    }
                }
            }
            Step::CompleteOk => {
                if let Some((id, _, _, last)) = self.in_flight.take() {
                    self.durable = last;
                    self.gc.complete(id, Ok(()), None);
                    self.check_acks(true);
                    assert_eq!(self.gc.durable_seq(), last);
                }
            }
            Step::CompleteErr => {
                if let Some((id, _, _, _)) = self.in_flight.take() {
                    self.failed = true;
                    self.gc.complete(id, Err("injected".into()), None);
                    self.check_acks(false);
                    // Everything appended so far is answered now.
                    assert_eq!(self.acked.len() as u64, self.next_token);
                }
            }
        }
    }

    /// Drives to quiescence: every append gets its ack.
    fn finish(&mut self) {
        self.gc.set_flush_now(true);
        for _ in 0..100_000 {
            if let Some((id, _, _, last)) = self.in_flight.take() {
                self.durable = last;
                self.gc.complete(id, Ok(()), None);
                self.check_acks(true);
            }
            if let Some(gw) = self.gc.poll(self.now) {
                self.check_group(&gw);
                self.in_flight = Some((gw.id, gw.position, gw.buf.len(), gw.last_seq));
            }
            self.check_acks(false);
            if self.in_flight.is_none() && self.gc.is_idle() {
                break;
            }
        }
        assert_eq!(
            self.acked.len() as u64,
            self.next_token,
            "appends never acked"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn group_commit_invariants(cfg in config(), steps in proptest::collection::vec(step(), 1..200)) {
        let mut h = Harness::new(cfg);
        for s in &steps {
            h.run(s);
        }
        h.finish();
    }
}

#[test]
fn wait_max_holds_a_group_until_deadline_or_cap() {
    let cfg = GroupCommitConfig {
        journal_id: 1,
        segment_bytes: 64 * 1024,
        group_bytes_max: 1000,
        group_records_max: 3,
        group_wait_max: Some(Duration::from_millis(2)),
    };
    let start = Start {
        position: LogPosition {
            segment: 1,
            offset: 0,
        },
        prev_seq: Seq(0),
        next_seq: Seq(1),
    };
    let mut gc: GroupCommit<u32> = GroupCommit::new(cfg, start);
    let t0 = Instant::now();
    gc.append(Record::fence(1), 0, t0).unwrap();
    assert!(gc.poll(t0).is_none(), "held below caps");
    assert_eq!(gc.next_deadline(), Some(t0 + Duration::from_millis(2)));
    assert!(
        gc.poll(t0 + Duration::from_millis(2)).is_some(),
        "cut at deadline"
    );
    gc.complete(1, Ok(()), None);
    for i in 0..3 {
        gc.append(Record::fence(1), i, t0).unwrap();
    }
    let g = gc.poll(t0).expect("cut at the records cap");
    assert_eq!(g.records, 3);
}
