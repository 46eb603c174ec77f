//! Harnesses shared by the fuzz targets (`fuzz/fuzz_targets/journal_record.rs`: records,
//! group headers, the checkpoint and newest-segment files;
//! `journal_replay.rs`) and by the stable-toolchain property test that runs them on
//! random inputs in CI (journal/tests/fuzz_harness.rs).
//!
//! Invariants checked: no decoder panics on any input; whatever decodes re-encodes
//! to the same bytes; replay over arbitrary segment contents either opens (handing
//! out records above the mark in strictly increasing seq order) or fails with a
//! typed error, and never panics.

use crate::config::JournalConfig;
use crate::format::{
    decode_group_records, decode_record, encode_record, CheckpointRecord, GroupHeader,
    NewestRecord, RecordHeader, GROUP_HEADER_LEN,
};
use crate::journal::Journal;
use crate::record::{Record, RecordKind, TypedRecord};
use crate::replay::ReplayedRecord;
use bk_disk::{round_up, AlignedBuf, Disk, OpenOptions, SimFs, SECTOR};
use bytes::Bytes;
use std::path::PathBuf;
use std::sync::Arc;

/// Decodes `data` as every journal structure; panics only on a violated invariant.
pub fn record_target(data: &[u8]) {
    if let Ok((h, payload, used)) = decode_record(data) {
        assert!(used <= data.len());
        assert_eq!(h.encode()[..], data[..20]);
        assert_eq!(payload.len(), h.payload_len as usize);
        let _ = TypedRecord::decode(h.kind, Bytes::copy_from_slice(payload));
    }
    if let Ok(h) = RecordHeader::decode(data) {
        assert_eq!(RecordHeader::decode(&h.encode()).ok(), Some(h));
    }
    if let Ok(h) = GroupHeader::decode(data) {
        assert_eq!(h.encode()[..], data[..GROUP_HEADER_LEN]);
        if let Ok(recs) = decode_group_records(&h, data) {
            assert_eq!(recs.len(), h.record_count as usize);
        }
    }
    if let Ok(c) = CheckpointRecord::decode(data) {
        assert_eq!(CheckpointRecord::decode(&c.encode()).ok(), Some(c));
    }
    if let Ok(n) = NewestRecord::decode(data) {
        assert_eq!(NewestRecord::decode(&n.encode()).ok(), Some(n));
    }
    if let Some((&k, rest)) = data.split_first() {
        if let Ok(t) = TypedRecord::decode(RecordKind(k), Bytes::copy_from_slice(rest)) {
            if let Some(r) = t.to_record() {
                assert_eq!(TypedRecord::decode(r.kind(), r.payload()).ok(), Some(t));
            }
        }
    }
}

const JOURNAL_ID: u64 = 0x6a6f_7572_6e61_6c21;
const SEGMENT_BYTES: usize = 32 * 1024;

struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn byte(&mut self) -> Option<u8> {
        let (&b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(b)
    }
    fn take(&mut self, n: usize) -> &[u8] {
        let n = n.min(self.0.len());
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        a
    }
}

/// Builds up to three segment files from `data` (a script of: valid group, raw
/// bytes, bit flip, skip), a checkpoint file, and replays them on a simulated disk.
pub fn replay_target(data: &[u8]) {
    let mut inp = Input(data);
    let mark = u64::from(inp.byte().unwrap_or(0) % 8);
    // The checkpoint's `durable` from the input too, so replay's refusal of a log ending
    // below it is reached (0..=7 above the mark, 0: nothing known beyond it).
    let durable = mark + u64::from(inp.byte().unwrap_or(0) % 8);
    let nseg = 1 + (inp.byte().unwrap_or(0) % 3) as u64;
    let fs = SimFs::new(1);
    let dir = PathBuf::from("/fz");
    let mut disk = fs.disk();
    if disk.create_dir_all(&dir).is_err() {
        return;
    }
    let mut seq = 0u64;
    for seg in 1..=nseg {
        let mut image = vec![0u8; SEGMENT_BYTES];
        let mut pos = 0usize;
        while pos < SEGMENT_BYTES {
            let Some(op) = inp.byte() else { break };
            match op % 5 {
                0 | 1 => {
                    // A valid group chained on `seq` (op 1: with a seq gap).
                    if op % 5 == 1 {
                        seq += u64::from(inp.byte().unwrap_or(1) % 4);
                    }
                    let n = 1 + (inp.byte().unwrap_or(0) % 4) as usize;
                    let mut buf = AlignedBuf::with_capacity(SEGMENT_BYTES);
                    let _ = buf.extend_from_slice(&[0u8; GROUP_HEADER_LEN]);
                    let prev = seq;
                    let mut bytes = 0usize;
                    for _ in 0..n {
                        let len = inp.byte().unwrap_or(0) as usize * 8;
                        let payload = Bytes::copy_from_slice(inp.take(len));
                        let kind = RecordKind(1 + inp.byte().unwrap_or(0) % 5);
                        let Some(rec) = Record::new(kind, payload) else {
                            continue;
                        };
                        let before = buf.len();
                        if !encode_record(&mut buf, seq + 1, &rec) {
                            break;
                        }
                        seq += 1;
                        bytes += buf.len() - before;
                    }
                    if seq == prev {
                        continue;
                    }
                    let h = GroupHeader {
                        journal_id: JOURNAL_ID,
                        segment_id: seg,
                        prev_seq: prev,
                        first_seq: prev + 1,
                        record_count: (seq - prev) as u32,
                        records_len: bytes as u32,
                    };
                    buf.as_mut_slice()[..GROUP_HEADER_LEN].copy_from_slice(&h.encode());
                    let end = (pos + buf.len()).min(SEGMENT_BYTES);
                    image[pos..end].copy_from_slice(&buf.as_slice()[..end - pos]);
                    pos = round_up(end, SECTOR);
                }
                2 => {
                    let len = inp.byte().unwrap_or(0) as usize * 16;
                    let raw = inp.take(len);
                    let end = (pos + raw.len()).min(SEGMENT_BYTES);
                    image[pos..end].copy_from_slice(&raw[..end - pos]);
                    pos = round_up(end.max(pos + 1), SECTOR);
                }
                3 => {
                    let hi = inp.byte().unwrap_or(0) as usize;
                    let lo = inp.byte().unwrap_or(0) as usize;
                    let at = (hi << 8 | lo) % SEGMENT_BYTES;
                    image[at] ^= 1 << (lo % 8);
                }
                _ => pos += SECTOR,
            }
        }
        let path = dir.join(crate::format::segment_file_name(seg));
        if write_file(&mut disk, &path, &image).is_err() {
            return;
        }
    }
    let ck = CheckpointRecord {
        journal_id: JOURNAL_ID,
        mark,
        durable,
        storage_epoch: 0,
    };
    let mut sector = vec![0u8; SECTOR];
    sector[..ck.encode().len()].copy_from_slice(&ck.encode());
    if write_file(
        &mut disk,
        &dir.join(crate::format::CHECKPOINT_FILE),
        &sector,
    )
    .is_err()
    {
        return;
    }
    if disk.sync_dir(&dir).is_err() {
        return;
    }
    drop(disk);
    let cfg = JournalConfig {
        segment_bytes: SEGMENT_BYTES as u64,
        direct_io: false,
        ..JournalConfig::default()
    };
    let f = fs.clone();
    let factory: crate::DiskFactory = Arc::new(move |_| Ok(Box::new(f.disk()) as Box<dyn Disk>));
    let mut last = mark;
    let mut visit = |r: &ReplayedRecord| {
        assert!(r.seq.0 > last, "replay out of order or at/below the mark");
        last = r.seq.0;
        let _ = r.typed();
        Ok(())
    };
    if let Ok((j, replay, mut drivers)) =
        Journal::open_manual(std::slice::from_ref(&dir), cfg, factory, &mut visit)
    {
        assert!(replay.dirs[0].next_seq.0 > replay.dirs[0].last_seq.0);
        // The reopened journal accepts and acknowledges a new record.
        let mut fut = j.append_to(0, Record::fence(1));
        for d in drivers.iter_mut() {
            d.run_until_quiet(10_000);
        }
        let r = fut.try_result();
        assert!(
            matches!(r, Some(Ok(s)) if s > replay.dirs[0].last_seq),
            "{r:?}"
        );
    }
}

fn write_file(disk: &mut dyn Disk, path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    let f = disk.open(
        path,
        OpenOptions {
            create: true,
            create_new: false,
            write: true,
            direct: false,
        },
    )?;
    let mut buf = AlignedBuf::with_capacity(bytes.len());
    let _ = buf.extend_from_slice(bytes);
    buf.pad_to_sector();
    let c = bk_disk::run_one(
        disk,
        bk_disk::Op::WriteDatasync {
            file: f,
            offset: 0,
            buf,
        },
    );
    disk.close(f)?;
    c.result.map(|_| ())
}
