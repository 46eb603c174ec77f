//! `send_budget`: the bytes of responses, from a read's reply being produced until the
//! response has been written to the socket (docs/memory.md §2, part `send`).
//!
//! Every queued response holds permits of its connection's share
//! (`ServerConfig::response_queue_bytes`) and of the bookie-wide send budget
//! (`ServerConfig::send_bytes_total`) until the writer has written it. The connection's
//! reader reads its socket again only while both have room ([`ResponseBudget::room`]), so
//! a client that never reads its responses holds at most its share and is not read either.
//!
//! A read's reply exists in memory (read from disk, encoded) before it is queued, so a read
//! is admitted only with a *reservation* of its estimated reply size taken from both
//! ([`ResponseBudget::reply_slot`]): replies being produced are inside the send budget too.
//! The estimate is per connection: it starts at the frame limit (the largest entry), rises
//! to any larger reply at once and falls by 1/8 towards smaller ones. When a reply turns out
//! larger than its reservation the difference is taken if free and otherwise not waited for
//! (the reply exists already; waiting could deadlock readers that all hold reservations), so
//! a connection whose entries jump from many small to many large can overshoot its share
//! once, by the ratio of the sizes, before its estimate has risen.
//!
//! No deadlock: permits are taken share first, then send budget; a holder of a reservation
//! never waits for more; a holder of a queued response waits only for its peer to read.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};

use super::limits::acquire_permits;

/// Permits of a budget of `bytes` (a semaphore's permits, 1..=u32::MAX).
pub(super) fn send_permits(bytes: usize) -> usize {
    bytes.clamp(1, u32::MAX as usize)
}

/// An encoded response waiting in a connection's queue, holding its bytes in the
/// connection's share and in the send budget until it has been written.
pub(super) struct Queued {
    pub(super) bytes: Bytes,
    _share: Option<OwnedSemaphorePermit>,
    _send: Option<OwnedSemaphorePermit>,
    /// Last: wakes the reader after the permits above are given back.
    _written: Written,
}

/// A connection's response budget: its own share, and the bookie-wide send budget.
#[derive(Clone)]
pub(super) struct ResponseBudget {
    share: Arc<Semaphore>,
    share_capacity: u32,
    send: Arc<Semaphore>,
    send_capacity: u32,
    estimate: Arc<Estimate>,
}

/// The estimated size of this connection's next read reply, and the signal the reader
/// waits on.
struct Estimate {
    bytes: AtomicUsize,
    /// Signalled when a queued response has been written.
    changed: Notify,
}

/// An admitted read: its estimated reply reserved in both budgets.
pub(super) struct ReplySlot {
    share: Option<OwnedSemaphorePermit>,
    send: Option<OwnedSemaphorePermit>,
}

/// Wakes a connection's reader when a queued response has been written.
struct Written(Arc<Estimate>);

impl Drop for Written {
    fn drop(&mut self) {
        self.0.changed.notify_waiters();
    }
}

impl ResponseBudget {
    /// A connection's budget: a share of `share_bytes` of the bookie-wide `send`
    /// (`send_total` bytes); `max_reply` is the first estimate of a read reply.
    pub(super) fn new(
        share_bytes: usize,
        send: Arc<Semaphore>,
        send_total: usize,
        max_reply: usize,
    ) -> Self {
        let share_capacity = send_permits(share_bytes) as u32;
        ResponseBudget {
            share: Arc::new(Semaphore::new(share_capacity as usize)),
            share_capacity,
            send,
            send_capacity: send_permits(send_total) as u32,
            estimate: Arc::new(Estimate {
                bytes: AtomicUsize::new(max_reply.max(64)),
                changed: Notify::new(),
            }),
        }
    }

    /// Takes `n` permits of both budgets (each capped at its capacity), share first.
    async fn take(&self, n: usize) -> (Option<OwnedSemaphorePermit>, Option<OwnedSemaphorePermit>) {
        let n = n.min(u32::MAX as usize) as u32;
        // The semaphores are never closed; if they were, going on without a permit is
        // still bounded by the queue length.
        let share = match n.min(self.share_capacity) {
            0 => None,
            want => acquire_permits(&self.share, want).await.ok(),
        };
        let send = match n.min(self.send_capacity) {
            0 => None,
            want => acquire_permits(&self.send, want).await.ok(),
        };
        (share, send)
    }

    /// Waits for room for `bytes`, then queues them (a response larger than a budget
    /// takes all of it).
    pub(super) async fn queue(&self, bytes: Bytes) -> Queued {
        let (share, send) = self.take(bytes.len()).await;
        Queued {
            bytes,
            _share: share,
            _send: send,
            _written: Written(self.estimate.clone()),
        }
    }

    /// Waits until a read's estimated reply is reserved in both budgets.
    pub(super) async fn reply_slot(&self) -> ReplySlot {
        let (share, send) = self.take(self.estimate.bytes.load(Ordering::Relaxed)).await;
        ReplySlot { share, send }
    }

    /// Queues a read's reply in the reservation of its slot: the reservation is cut to
    /// the reply, or topped up if the budgets have the difference free now (never
    /// waited for; module docs). The estimate follows the reply.
    pub(super) fn queue_reserved(&self, slot: ReplySlot, bytes: Bytes) -> Queued {
        let len = bytes.len();
        let old = self.estimate.bytes.load(Ordering::Relaxed);
        let new = if len >= old {
            len
        } else {
            (old * 7 + len.max(64)) / 8
        };
        self.estimate.bytes.store(new, Ordering::Relaxed);
        let fit = |permit: Option<OwnedSemaphorePermit>, sem: &Arc<Semaphore>, cap: u32| {
            let want = len.min(cap as usize);
            let mut permit = permit;
            let held = permit.as_ref().map_or(0, |p| p.num_permits());
            if held > want {
                if let Some(p) = permit.as_mut() {
                    drop(p.split(held - want));
                }
            } else if held < want {
                if let Ok(more) = sem.clone().try_acquire_many_owned((want - held) as u32) {
                    match permit.as_mut() {
                        Some(p) => p.merge(more),
                        None => permit = Some(more),
                    }
                }
            }
            permit.filter(|p| p.num_permits() > 0)
        };
        Queued {
            _share: fit(slot.share, &self.share, self.share_capacity),
            _send: fit(slot.send, &self.send, self.send_capacity),
            _written: Written(self.estimate.clone()),
            bytes,
        }
    }

    /// Waits until both the connection's share and the send budget have room.
    ///
    /// The share is freed only by this connection's writes (signalled on `changed`), but
    /// the send budget is freed by *any* connection's: waiting for it on `changed` would
    /// leave a connection with nothing queued asleep for good while others hold the
    /// budget, so it waits on the budget itself (one permit, given back at once).
    pub(super) async fn room(&self) {
        loop {
            let changed = self.estimate.changed.notified();
            if self.share.available_permits() == 0 {
                changed.await;
                continue;
            }
            if self.send.available_permits() > 0 {
                return;
            }
            // The semaphore is never closed; an error would only mean no budget to wait for.
            drop(self.send.acquire().await);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn budget(share: usize, send: &Arc<Semaphore>, total: usize) -> ResponseBudget {
        ResponseBudget::new(share, send.clone(), total, 1000)
    }

    #[tokio::test]
    async fn a_connection_holds_at_most_its_share() {
        let send = Arc::new(Semaphore::new(10_000));
        let a = budget(3000, &send, 10_000);
        let _q1 = a.queue(Bytes::from(vec![0; 2000])).await;
        let _q2 = a.queue(Bytes::from(vec![0; 1000])).await;
        let third =
            tokio::time::timeout(Duration::from_millis(50), a.queue(Bytes::from(vec![0; 1])));
        assert!(third.await.is_err(), "over its share, a connection waits");
        assert_eq!(send.available_permits(), 7000);
        // Another connection still finds the send budget.
        let b = budget(3000, &send, 10_000);
        let _q = tokio::time::timeout(Duration::from_secs(1), b.queue(Bytes::from(vec![0; 2000])))
            .await
            .expect("another connection is not held up");
    }

    #[tokio::test]
    async fn read_replies_are_reserved_before_they_exist() {
        let send = Arc::new(Semaphore::new(10_000));
        let a = budget(3000, &send, 10_000);
        // The first estimate is the largest reply (1000): three reads fit the share.
        let s1 = a.reply_slot().await;
        let _s2 = a.reply_slot().await;
        let _s3 = a.reply_slot().await;
        let fourth = tokio::time::timeout(Duration::from_millis(50), a.reply_slot());
        assert!(
            fourth.await.is_err(),
            "a fourth read waits for room in the share"
        );
        assert_eq!(send.available_permits(), 7000);
        // A small reply gives back what it does not need.
        let q = a.queue_reserved(s1, Bytes::from(vec![0; 100]));
        assert_eq!(send.available_permits(), 7900);
        drop(q);
        assert_eq!(send.available_permits(), 8000);
    }

    #[tokio::test]
    async fn room_wakes_when_another_connection_frees_the_send_budget() {
        // b has nothing queued; a holds the whole send budget. b's reader must wake
        // when a's response is written, not only on a write of its own (which never
        // comes: b reads nothing while it waits).
        let send = Arc::new(Semaphore::new(2000));
        let a = budget(2000, &send, 2000);
        let b = budget(2000, &send, 2000);
        let q = a.queue(Bytes::from(vec![0; 2000])).await;
        let waiting = tokio::spawn({
            let b = b.clone();
            async move { b.room().await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(
            !waiting.is_finished(),
            "no room while the send budget is held"
        );
        drop(q);
        tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("b wakes when a's response is written")
            .unwrap();
    }

    #[tokio::test]
    async fn room_waits_for_a_write() {
        let send = Arc::new(Semaphore::new(10_000));
        let a = budget(1000, &send, 10_000);
        let q = a.queue(Bytes::from(vec![0; 1000])).await;
        let waiting = tokio::spawn({
            let a = a.clone();
            async move { a.room().await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiting.is_finished(), "no room while the share is queued");
        drop(q);
        tokio::time::timeout(Duration::from_secs(1), waiting)
            .await
            .expect("room once the response is written")
            .unwrap();
    }
}
