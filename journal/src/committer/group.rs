//! Group writes of the committer: submitting the [`GroupWrite`] the state machine cut
//! (opening the next segment first when the group starts one) as one linked
//! write+fdatasync, handling its completion, and delivering acknowledgements.
//!
//! Invariants: the first group of a segment is submitted only after the
//! newest-segment record names that segment durably (`crate::newest`); at most one
//! group write is in flight; a failed, short or unsubmittable
//! group write is fatal, except "no space" where nothing was made durable: a segment
//! that could not be prepared, or a write+fdatasync that failed with ENOSPC/EDQUOT
//! (its write half: `bk_disk::is_no_space`, no sync was issued). Then the group's
//! appends are answered `NoSpace` and the committer waits for space (`space`);
//! acknowledgements go out in append order, and admission budget is returned only
//! after they were sent.

use super::{Committer, GROUP_USER_DATA, SPARE_USER_DATA};
use crate::ack::AckBatch;
use crate::commit::{CommitError, GroupWrite};
use crate::error::JournalError;
use crate::metrics::JournalMetrics;
use crate::Seq;
use bk_disk::{Completion, Op};
use std::sync::atomic::Ordering;
use std::time::Instant;

pub(super) struct InFlightGroup {
    id: u64,
    segment: u64,
    last_seq: Seq,
    records: usize,
    record_bytes: usize,
    padded: usize,
    started: Instant,
}

impl Committer {
    pub(super) fn submit_group(&mut self, gw: GroupWrite) {
        let seg = gw.position.segment;
        if self.current.map(|c| c.0) != Some(seg) {
            if let Some((old, f)) = self.current.take() {
                if let Err(e) = self.disk.close(f) {
                    let reason = format!("closing journal segment {old}: {e}");
                    self.gc.complete(gw.id, Err(reason.clone()), Some(gw.buf));
                    self.fatal(reason);
                    return;
                }
            }
            let creation = Instant::now();
            self.quiesce_spare();
            if self.files.free.is_empty() {
                self.finish_spare_now();
            }
            let need = gw.position.offset + gw.buf.len() as u64;
            match self.files.take_for(self.disk.as_mut(), seg, need) {
                Ok((f, len)) => {
                    self.live.insert(seg, (Seq(0), len));
                    // The segment must be known to exist before a group in it is
                    // acknowledged: one write+fdatasync per switch (crate::newest).
                    match self.newest.record(self.disk.as_mut(), seg, len) {
                        Ok(()) => {}
                        Err(e) => {
                            let _ = self.disk.close(f);
                            let reason =
                                format!("recording journal segment {seg} as the newest: {e}");
                            if e.is_no_space() {
                                // Nothing changed: the old record holds. The new file
                                // stays empty (recycled by a later checkpoint) and
                                // writing resumes in the segment after it.
                                self.enter_no_space(gw.id, reason, seg + 1, Some(gw.buf));
                            } else {
                                self.gc.complete(gw.id, Err(reason.clone()), Some(gw.buf));
                                self.fatal(reason);
                            }
                            return;
                        }
                    }
                    // The creation includes the newest-segment record: the segment is
                    // usable only once it is recorded.
                    JournalMetrics::record_us(
                        &self.metrics.segment_creation_latency_us,
                        creation.elapsed(),
                    );
                    self.current = Some((seg, f));
                    self.gc.set_segment_len(len);
                    self.metrics
                        .segments_created
                        .store(self.files.created, Ordering::Relaxed);
                }
                Err(JournalError::NoSpace(reason)) => {
                    // Nothing was written: the group's appends are answered NoSpace and
                    // writing resumes at offset 0 of this (still absent) segment.
                    let reason = format!("preparing journal segment {seg}: {reason}");
                    self.enter_no_space(gw.id, reason, seg, Some(gw.buf));
                    return;
                }
                Err(e) => {
                    let reason = format!("preparing journal segment {seg}: {e}");
                    self.gc.complete(gw.id, Err(reason.clone()), Some(gw.buf));
                    self.fatal(reason);
                    return;
                }
            }
        }
        let Some((_, file)) = self.current else {
            return;
        };
        let padded = gw.buf.len();
        self.metrics.force_write_queue.store(1, Ordering::Relaxed);
        self.in_flight = Some(InFlightGroup {
            id: gw.id,
            segment: seg,
            last_seq: gw.last_seq,
            records: gw.records,
            record_bytes: gw.record_bytes,
            padded,
            started: Instant::now(),
        });
        let op = Op::WriteDatasync {
            file,
            offset: gw.position.offset,
            buf: gw.buf,
        };
        if let Err(e) = self.disk.submit(GROUP_USER_DATA, op) {
            self.in_flight = None;
            self.metrics.force_write_queue.store(0, Ordering::Relaxed);
            let reason = format!(
                "submitting write+fdatasync of journal segment {seg} at {}: {e}",
                gw.position.offset
            );
            self.gc.complete(gw.id, Err(reason.clone()), None);
            self.fatal(reason);
        }
    }

    pub(super) fn on_completion(&mut self, c: Completion) {
        if c.user_data == SPARE_USER_DATA {
            self.on_spare_completion(c);
            return;
        }
        if c.user_data != GROUP_USER_DATA {
            tracing::warn!(
                user_data = c.user_data,
                "unexpected journal disk completion"
            );
            return;
        }
        let Some(g) = self.in_flight.take() else {
            return;
        };
        self.metrics.force_write_queue.store(0, Ordering::Relaxed);
        if let Err(e) = &c.result {
            if bk_disk::is_no_space(e) {
                // The write half failed, so no sync was issued: none of this group is
                // durable or acknowledged, and every earlier group was synced before
                // it was written. The segment is not written again (its tail holds
                // the failed bytes, as after a crash): writing resumes at offset 0 of
                // the next segment, chained to the last durable group.
                let reason = format!(
                    "write of journal segment {} ({} bytes, up to seq {}): {e}",
                    g.segment, g.padded, g.last_seq
                );
                if let Some((_, f)) = self.current.take() {
                    if let Err(e) = self.disk.close(f) {
                        let reason = format!("closing journal segment {}: {e}", g.segment);
                        self.gc.complete(g.id, Err(reason.clone()), c.buf);
                        self.fatal(reason);
                        return;
                    }
                }
                self.enter_no_space(g.id, reason, g.segment + 1, c.buf);
                return;
            }
        }
        let result = match c.result {
            Ok(n) if n == g.padded => Ok(()),
            Ok(n) => Err(format!(
                "short write+fdatasync of journal segment {}: {n} of {} bytes",
                g.segment, g.padded
            )),
            Err(e) => Err(format!(
                "write+fdatasync of journal segment {} ({} bytes, up to seq {}) failed: {e}",
                g.segment, g.padded, g.last_seq
            )),
        };
        match result {
            Ok(()) => {
                JournalMetrics::record_us(&self.metrics.sync_latency_us, g.started.elapsed());
                JournalMetrics::record_value(&self.metrics.group_records, g.records as u64);
                JournalMetrics::record_value(&self.metrics.group_bytes, g.record_bytes as u64);
                self.metrics
                    .bytes_written
                    .fetch_add(g.padded as u64, Ordering::Relaxed);
                self.metrics.groups.fetch_add(1, Ordering::Relaxed);
                self.group_bytes_avg = 0.75 * self.group_bytes_avg + 0.25 * g.padded as f64;
                if let Some(e) = self.live.get_mut(&g.segment) {
                    e.0 = g.last_seq;
                }
                self.durable = self.durable.max(g.last_seq);
                // A large record's buffer goes back to the appenders' pool; the
                // state machine keeps ordinary group buffers itself.
                let mut buf = c.buf;
                if buf
                    .as_ref()
                    .is_some_and(|b| b.capacity() > self.gc.config().group_bytes_max * 2)
                {
                    if let Some(b) = buf.take() {
                        self.admission.return_large_buf(b);
                    }
                }
                self.gc.complete(g.id, Ok(()), buf);
            }
            Err(reason) => {
                self.gc.complete(g.id, Err(reason.clone()), c.buf);
                self.fatal(reason);
            }
        }
    }

    pub(super) fn deliver_acks(&mut self) {
        if !self.gc.has_acks() {
            return;
        }
        let now = Instant::now();
        let mut bytes = 0usize;
        let mut records = 0usize;
        let mut ok_records = 0u64;
        let mut barriers = 0u64;
        let acks: Vec<_> = self.gc.drain_acks().collect();
        {
            let mut lat = self.metrics.append_latency_us.lock();
            // Locked only for a group that acknowledges a barrier (rare).
            let mut barrier_lat = None;
            for ack in &acks {
                if ack.result.is_ok() {
                    let us =
                        (now.saturating_duration_since(ack.enqueued).as_micros() as u64).max(1);
                    if ack.token.barrier {
                        barriers += 1;
                        let h = barrier_lat
                            .get_or_insert_with(|| self.metrics.force_ledger_latency_us.lock());
                        let _ = h.record(us.min(3_600_000_000));
                    } else {
                        ok_records += 1;
                        let _ = lat.record(us.min(3_600_000_000));
                    }
                }
            }
        }
        let mut batch = Vec::with_capacity(acks.len());
        for ack in acks {
            bytes += ack.token.charge;
            records += 1;
            let r = ack.result.map_err(|e| match e {
                CommitError::Fatal(r) => JournalError::Fatal(r),
                CommitError::NoSpace(r) => JournalError::NoSpace(r),
                CommitError::TooLarge { payload_len, max } => JournalError::InvalidInput(format!(
                    "record payload of {payload_len} bytes exceeds the maximum {max}"
                )),
            });
            batch.push((ack.token.reply, r));
        }
        let batch = AckBatch(batch);
        match &self.ack_delivery {
            Some(d) => d.hand_over(batch),
            None => batch.deliver(),
        }
        self.metrics
            .records_acked
            .fetch_add(ok_records, Ordering::Relaxed);
        self.metrics.barriers.fetch_add(barriers, Ordering::Relaxed);
        if let (Some(reason), false) = (self.gc.failed(), self.closed_admission) {
            self.closed_admission = true;
            self.admission.close(JournalError::Fatal(reason.clone()));
        }
        self.admission.release(bytes, records);
    }
}
