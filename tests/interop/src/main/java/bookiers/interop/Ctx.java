/*
 * What one scenario run gets: the cluster, the wire mode, and factories for stock BookKeeper
 * clients configured like a Pulsar broker's (frame size 5253120, digest autodetection) in the
 * requested wire mode. Also the write/read helpers shared by scenarios.
 *
 * Invariants: every client made through newClient() is closed by closeAll() (called after the
 * scenario, also on timeout); writeAll() never has more than maxOutstanding adds (and a bounded
 * number of bytes) in flight, and fails with the first add error it sees, naming the entry.
 */
package bookiers.interop;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import java.util.function.LongFunction;
import org.apache.bookkeeper.client.BKException;
import org.apache.bookkeeper.client.BookKeeper;
import org.apache.bookkeeper.client.LedgerEntry;
import org.apache.bookkeeper.client.LedgerHandle;
import org.apache.bookkeeper.conf.ClientConfiguration;

/** Scenario context. */
final class Ctx {
    static final byte[] PASSWORD = "interop-password".getBytes(java.nio.charset.StandardCharsets.UTF_8);

    final Cluster cluster;
    final boolean v2;
    final String mode;
    private final List<BookKeeper> clients = new ArrayList<>();

    Ctx(Cluster cluster, boolean v2) {
        this.cluster = cluster;
        this.v2 = v2;
        this.mode = v2 ? "v2" : "v3";
    }

    ClientConfiguration clientConf() {
        ClientConfiguration c = new ClientConfiguration();
        c.setMetadataServiceUri(cluster.metadataServiceUri());
        c.setUseV2WireProtocol(v2);
        c.setNettyMaxFrameSizeBytes(Cluster.PULSAR_FRAME_SIZE);
        c.setAddEntryTimeout(30);
        c.setReadEntryTimeout(30);
        c.setZkTimeout(10_000);
        c.setEnableDigestTypeAutodetection(true);
        return c;
    }

    BookKeeper newClient() throws Exception {
        return newClient(c -> { });
    }

    BookKeeper newClient(Consumer<ClientConfiguration> tweak) throws Exception {
        ClientConfiguration c = clientConf();
        tweak.accept(c);
        BookKeeper bk = new BookKeeper(c);
        synchronized (clients) {
            clients.add(bk);
        }
        return bk;
    }

    void closeAll() {
        List<BookKeeper> copy;
        synchronized (clients) {
            copy = new ArrayList<>(clients);
            clients.clear();
        }
        for (BookKeeper bk : copy) {
            try {
                bk.close();
            } catch (Exception e) {
                // closing after a failure; nothing more to report
            }
        }
    }

    /** Result of writeAll. */
    static final class WriteResult {
        long acked;
        int peakOutstanding;
    }

    /**
     * Adds entries [0, n) asynchronously with at most maxOutstanding adds and maxBytes bytes in
     * flight; checks every callback succeeds and callbacks arrive in entry order.
     */
    static WriteResult writeAll(LedgerHandle lh, long n, LongFunction<byte[]> payload, int maxOutstanding,
            long maxBytes) throws Exception {
        return writeAll(lh, n, payload, maxOutstanding, maxBytes, (e, out) -> { });
    }

    /**
     * How long the submitting thread waits for a free slot before it reports a stall: twice the
     * client's addEntryTimeout, so a bookie that never answers has been timed out (and replaced)
     * by the client long before.
     */
    static final int STALL_SECONDS = 60;

    /** The client stopped completing adds although none timed out (see s07). */
    static final class Stalled extends Check.Failure {
        Stalled(String msg) {
            super(msg);
        }
    }

    /**
     * Hook run in the submitting thread before entry e is submitted (e.g. to kill a bookie);
     * outstanding = adds submitted whose callback has not run yet.
     */
    interface BeforeAdd {
        void before(long entryId, int outstanding) throws Exception;
    }

    /** As {@link #writeAll(LedgerHandle, long, LongFunction, int, long)}, calling hook before each add. */
    static WriteResult writeAll(LedgerHandle lh, long n, LongFunction<byte[]> payload, int maxOutstanding,
            long maxBytes, BeforeAdd hook) throws Exception {
        Semaphore slots = new Semaphore(maxOutstanding);
        Semaphore bytes = new Semaphore((int) Math.min(Integer.MAX_VALUE, maxBytes));
        AtomicReference<String> error = new AtomicReference<>();
        AtomicLong nextExpected = new AtomicLong(0);
        AtomicInteger outstanding = new AtomicInteger();
        AtomicInteger peak = new AtomicInteger();
        CountDownLatch done = new CountDownLatch(1);
        AtomicLong completed = new AtomicLong();
        for (long e = 0; e < n && error.get() == null; e++) {
            hook.before(e, outstanding.get());
            byte[] data = payload.apply(e);
            int cost = Math.max(1, Math.min(data.length, (int) Math.min(Integer.MAX_VALUE, maxBytes)));
            if (!slots.tryAcquire(STALL_SECONDS, TimeUnit.SECONDS)) {
                throw new Stalled("no add callback for " + STALL_SECONDS + " s with " + outstanding.get()
                        + " adds outstanding (" + completed.get() + " of " + n + " completed; the client's"
                        + " addEntryTimeout is 30 s)");
            }
            bytes.acquire(cost);
            peak.accumulateAndGet(outstanding.incrementAndGet(), Math::max);
            final long want = e;
            lh.asyncAddEntry(data, (rc, l, entryId, ctx) -> {
                outstanding.decrementAndGet();
                if (rc != BKException.Code.OK) {
                    error.compareAndSet(null, "add of entry " + want + " failed: " + BKException.getMessage(rc)
                            + " (rc " + rc + ")");
                } else {
                    long exp = nextExpected.getAndIncrement();
                    if (entryId != exp || entryId != want) {
                        error.compareAndSet(null, "add callback out of order: expected entry " + exp
                                + " (submitted as " + want + "), got entry " + entryId);
                    }
                }
                bytes.release(cost);
                slots.release();
                if (completed.incrementAndGet() == n) {
                    done.countDown();
                }
            }, null);
        }
        if (error.get() == null && !done.await(120, TimeUnit.SECONDS)) {
            error.compareAndSet(null, "only " + completed.get() + " of " + n + " add callbacks arrived in 120 s");
        }
        if (error.get() != null) {
            throw new Check.Failure(error.get());
        }
        WriteResult r = new WriteResult();
        r.acked = nextExpected.get();
        r.peakOutstanding = peak.get();
        return r;
    }

    /**
     * Reads [first, last] in chunks of at most chunkBytes (by expected size) and compares every
     * entry with expected(entryId).
     */
    static void verifyAll(LedgerHandle lh, long first, long last, LongFunction<byte[]> expected, long chunkBytes)
            throws Exception {
        long e = first;
        while (e <= last) {
            long end = e;
            long sum = expected.apply(e).length;
            while (end + 1 <= last && sum + expected.apply(end + 1).length <= chunkBytes && end - e < 1000) {
                end++;
                sum += expected.apply(end).length;
            }
            java.util.Enumeration<LedgerEntry> en = lh.readEntries(e, end);
            long id = e;
            while (en.hasMoreElements()) {
                LedgerEntry le = en.nextElement();
                Check.eq("entry id in read of [" + e + "," + end + "] of ledger " + lh.getId(), id, le.getEntryId());
                Check.bytes("content of entry " + id + " of ledger " + lh.getId(), expected.apply(id), le.getEntry());
                id++;
            }
            Check.eq("entries returned by read of [" + e + "," + end + "] of ledger " + lh.getId(), end + 1, id);
            e = end + 1;
        }
    }
}
