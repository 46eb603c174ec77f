/*
 * The conformance scenarios. Each is a named static method run once per (implementation, wire
 * mode) against a running cluster of 4 bookies; it creates its own clients through Ctx and must
 * leave the cluster with every bookie running (or the suite restarts the missing ones).
 *
 * Every check compares against values the scenario computed itself (deterministic payloads,
 * acknowledged entry ids, error codes the stock Java bookie gives as documented in
 * docs/semantics.md), never against a hard-coded answer of the bookie.
 */
package bookiers.interop;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.util.ReferenceCounted;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumSet;
import java.util.Enumeration;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.LongFunction;
import org.apache.bookkeeper.client.BKException;
import org.apache.bookkeeper.client.BookKeeper;
import org.apache.bookkeeper.client.BookKeeper.DigestType;
import org.apache.bookkeeper.client.InteropAccess;
import org.apache.bookkeeper.client.LedgerEntry;
import org.apache.bookkeeper.client.LedgerHandle;
import org.apache.bookkeeper.client.api.LastConfirmedAndEntry;
import org.apache.bookkeeper.client.api.LedgerEntries;
import org.apache.bookkeeper.client.api.WriteFlag;
import org.apache.bookkeeper.net.BookieId;
import org.apache.bookkeeper.proto.BookieClient;
import org.apache.bookkeeper.proto.BookieProtocol;
import org.apache.bookkeeper.proto.checksum.DigestManager;
import org.apache.bookkeeper.proto.DataFormats.LedgerMetadataFormat;

/** Scenario bodies. */
final class Scenarios {
    private Scenarios() {
    }

    /** A scenario body. */
    interface Body {
        void run(Ctx ctx) throws Exception;
    }

    /** A registered scenario. */
    record Def(int number, String name, String summary, Body body, int timeoutSeconds) {
    }

    static List<Def> all() {
        return List.of(
                new Def(1, "s01_readback", "E3W3A2 + E3W2A2, CRC32C/CRC32/MAC, 1 B..64 KiB + 5 MiB entries read back",
                        Scenarios::s01Readback, 300),
                new Def(2, "s02_pipelined", "1,000 outstanding async adds; every callback OK and in order",
                        Scenarios::s02Pipelined, 90),
                new Def(3, "s03_recovery_fence", "open with recovery fences the live writer; LAC = last ack",
                        Scenarios::s03RecoveryFence, 90),
                new Def(4, "s04_tailing", "readLastAddConfirmed, readUnconfirmed, long-poll tailing reader",
                        Scenarios::s04Tailing, 120),
                new Def(5, "s05_explicit_lac", "explicit LAC written by the writer is read by a reader",
                        Scenarios::s05ExplicitLac, 60),
                new Def(6, "s06_batch_read", "batchRead on an E==W ledger (v2 BATCH_READ_ENTRY)",
                        Scenarios::s06BatchRead, 90),
                new Def(7, "s07_bookie_failure", "SIGKILL an ensemble bookie mid-write; ensemble change; all acks read",
                        Scenarios::s07BookieFailure, 150),
                new Def(8, "s08_crash_durability", "SIGKILL all bookies (quiet ledger + adds in flight), restart, every ack reads back",
                        Scenarios::s08CrashDurability, 150),
                new Def(9, "s09_delete_gc", "deleted ledgers vanish from bookies and their space is reclaimed",
                        Scenarios::s09DeleteGc, 200),
                new Def(10, "s10_errors", "wrong key -> unauthorized, missing ledger/entry errors, others served",
                        Scenarios::s10Errors, 120),
                new Def(11, "s11_shell", "bookie shell bookiesanity, simpletest, listbookies, readledger",
                        Scenarios::s11Shell, 180),
                new Def(12, "s12_registration", "ZK registration node, BookieServiceInfo bytes and cookies as Java",
                        Scenarios::s12Registration, 60),
                new Def(13, "s13_overreplicated_gc", "a ledger moved off a bookie by recover is deleted there; space back",
                        OverReplicatedGc::run, 180),
                new Def(14, "s14_admin_http", "admin HTTP API: every endpoint and method, status + JSON keys vs Java",
                        AdminHttp::run, 240),
                new Def(15, "s15_recovery_http", "autorecovery/bookie on bookie-rs recovers a stopped bookie; Java reads back",
                        RecoveryHttp::run, 180),
                new Def(16, "s16_tls", "own TLS cluster (PEM keys, JKS and PKCS12 stores, mTLS): adds/reads 1 B..1 MiB, \"tls\" in service info, plaintext still served",
                        Tls::s16, 180),
                new Def(17, "s17_tls_authz", "own TLS cluster with BookieAuthZFactory: authorized role served; 6 refused cases get Java's codes",
                        Tls::s17, 240),
                new Def(18, "s18_tls_rotation", "own TLS cluster, certificate files refreshed every 2 s: key, cert and trust store rotated to another CA in place; new clients of the new CA served, of the old refused",
                        TlsRotation::s18, 240));
    }

    // ---------------------------------------------------------------- s01

    static void s01Readback(Ctx ctx) throws Exception {
        BookKeeper writer = ctx.newClient();
        BookKeeper reader = ctx.newClient();
        int[][] quorums = {{3, 3, 2}, {3, 2, 2}};
        // Every digest gets the full load: 10,000 entries of 1 B..64 KiB plus 20 entries of 5 MiB
        // (measured: ~7 s per ledger against 4 Java bookies here).
        Object[][] digests = {{DigestType.CRC32C, 10_000, 20}, {DigestType.CRC32, 10_000, 20},
            {DigestType.MAC, 10_000, 20}};
        for (Object[] d : digests) {
            DigestType digest = (DigestType) d[0];
            int small = (Integer) d[1];
            int large = (Integer) d[2];
            for (int[] q : quorums) {
                String label = digest + " E" + q[0] + "W" + q[1] + "A" + q[2];
                LedgerHandle lh = writer.createLedger(q[0], q[1], q[2], digest, Ctx.PASSWORD);
                long seed = lh.getId() * 1000003L + q[1];
                long total = small + large;
                long every = large == 0 ? Long.MAX_VALUE : total / large;
                LongFunction<byte[]> payload = e -> Payloads.bytes(seed, e,
                        (large > 0 && e % every == every - 1) ? 5 * Payloads.MIB : Payloads.smallSize(seed, e));
                long expectedLength = 0;
                for (long e = 0; e < total; e++) {
                    expectedLength += payload.apply(e).length;
                }
                Ctx.writeAll(lh, total, payload, 500, 24L * Payloads.MIB);
                lh.close();
                Check.eq(label + ": writer's LAC after close", total - 1, lh.getLastAddConfirmed());
                LedgerHandle rh = reader.openLedger(lh.getId(), digest, Ctx.PASSWORD);
                Check.eq(label + ": LAC seen by a new reader of the closed ledger", total - 1,
                        rh.getLastAddConfirmed());
                Check.eq(label + ": ledger length", expectedLength, rh.getLength());
                try {
                    Ctx.verifyAll(rh, 0, total - 1, payload, 8L * Payloads.MIB);
                } catch (Check.Failure f) {
                    throw new Check.Failure(label + ": " + f.getMessage(), f);
                }
                rh.close();
                writer.deleteLedger(lh.getId());
            }
        }
    }

    // ---------------------------------------------------------------- s02

    /**
     * The ensemble bookies are paused (SIGSTOP) while the first 1,000 adds are submitted, so all
     * 1,000 are outstanding at once whatever the relative speed of client and bookie (a free-running
     * client measured peaks of 130-1,000 depending on load); then they resume (SIGCONT, < 1 s of
     * pause, well inside the 4 s ZooKeeper session) and the writer keeps a 1,000-deep window for
     * 5,000 adds. The client's netty write buffer is raised so the paused sockets do not make it
     * fail adds fast.
     */
    static void s02Pipelined(Ctx ctx) throws Exception {
        BookKeeper bk = ctx.newClient(c -> c.setClientWriteBufferLowWaterMark(8 * Payloads.MIB)
                .setClientWriteBufferHighWaterMark(16 * Payloads.MIB));
        LedgerHandle lh = bk.createLedger(3, 3, 2, DigestType.CRC32C, Ctx.PASSWORD);
        long seed = lh.getId();
        int n = 5_000;
        int window = 1_000;
        byte[][] data = new byte[n][];
        for (int e = 0; e < n; e++) {
            data[e] = Payloads.bytes(seed, e, 512 + e % 1024);
        }
        LongFunction<byte[]> payload = e -> data[(int) e];
        List<BookieProcess> ensemble = new ArrayList<>();
        for (BookieId b : lh.getLedgerMetadata().getAllEnsembles().get(0L)) {
            ensemble.add(ctx.cluster.byId(b.toString()));
        }
        AtomicLong pausedAt = new AtomicLong();
        AtomicLong outstandingAtResume = new AtomicLong(-1);
        AtomicLong pauseMs = new AtomicLong();
        java.util.concurrent.ScheduledExecutorService watchdog =
                java.util.concurrent.Executors.newSingleThreadScheduledExecutor();
        AtomicBoolean resumed = new AtomicBoolean();
        Runnable resume = () -> {
            if (resumed.compareAndSet(false, true)) {
                pauseMs.set(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - pausedAt.get()));
                for (BookieProcess b : ensemble) {
                    try {
                        b.signal("CONT");
                    } catch (Exception ex) {
                        throw new IllegalStateException(ex);
                    }
                }
            }
        };
        Ctx.WriteResult r;
        try {
            r = Ctx.writeAll(lh, n, payload, window, Long.MAX_VALUE, (e, outstanding) -> {
                if (e == 0) {
                    for (BookieProcess b : ensemble) {
                        b.signal("STOP");
                    }
                    pausedAt.set(System.nanoTime());
                    watchdog.schedule(resume, 2_500, TimeUnit.MILLISECONDS); // never outlive the ZK session
                } else if (e == window) {
                    outstandingAtResume.set(outstanding);
                    resume.run();
                }
            });
        } finally {
            resume.run();
            watchdog.shutdownNow();
        }
        Check.eq("acknowledged adds", (long) n, r.acked);
        Check.eq("adds outstanding when the paused bookies resumed (after " + pauseMs.get() + " ms)",
                (long) window, outstandingAtResume.get());
        Check.eq("peak adds in flight", window, r.peakOutstanding);
        lh.close();
        LedgerHandle rh = ctx.newClient().openLedger(lh.getId(), DigestType.CRC32C, Ctx.PASSWORD);
        Check.eq("LAC after close", (long) n - 1, rh.getLastAddConfirmed());
        Ctx.verifyAll(rh, 0, n - 1, payload, 4L * Payloads.MIB);
    }

    // ---------------------------------------------------------------- s03

    static void s03RecoveryFence(Ctx ctx) throws Exception {
        BookKeeper wbk = ctx.newClient();
        BookKeeper rbk = ctx.newClient();
        for (int[] q : new int[][] {{3, 3, 2}, {3, 2, 2}}) {
            String label = "E" + q[0] + "W" + q[1] + "A" + q[2];
            LedgerHandle w = wbk.createLedger(q[0], q[1], q[2], DigestType.CRC32C, Ctx.PASSWORD);
            long seed = w.getId();
            int n = 200;
            LongFunction<byte[]> payload = e -> Payloads.bytes(seed, e, 100 + (int) (e * 37 % 4000));
            long lastAcked = -1;
            for (long e = 0; e < n; e++) {
                lastAcked = w.addEntry(payload.apply(e));
            }
            Check.eq(label + ": last acknowledged entry id", (long) n - 1, lastAcked);
            LedgerHandle r = rbk.openLedger(w.getId(), DigestType.CRC32C, Ctx.PASSWORD);
            Check.eq(label + ": recovered LAC (= last acknowledged add)", lastAcked, r.getLastAddConfirmed());
            Check.isTrue(label + ": ledger state after recovery", r.isClosed(), "expected closed, was open");
            Enumeration<LedgerEntry> last = r.readEntries(lastAcked, lastAcked);
            Check.bytes(label + ": recovered last entry", payload.apply(lastAcked), last.nextElement().getEntry());
            Check.throwsType(label + ": old writer's next add after fencing",
                    BKException.BKLedgerFencedException.class, () -> w.addEntry(payload.apply(n)));
            Ctx.verifyAll(r, 0, lastAcked, payload, 4L * Payloads.MIB);
        }
    }

    // ---------------------------------------------------------------- s04

    static void s04Tailing(Ctx ctx) throws Exception {
        BookKeeper wbk = ctx.newClient();
        BookKeeper rbk = ctx.newClient();
        LedgerHandle w = wbk.createLedger(3, 3, 2, DigestType.CRC32C, Ctx.PASSWORD);
        long seed = w.getId();
        LongFunction<byte[]> payload = e -> Payloads.bytes(seed, e, 64 + (int) (e * 131 % 8000));

        // Part 1: readLastAddConfirmed and readUnconfirmed against a ledger with k synced adds.
        int k = 20;
        for (long e = 0; e < k; e++) {
            w.addEntry(payload.apply(e));
        }
        LedgerHandle r = rbk.openLedgerNoRecovery(w.getId(), DigestType.CRC32C, Ctx.PASSWORD);
        // Entry k-1 carries LAC k-2 (piggybacked); nothing has told the bookies about k-1 yet.
        Check.eq("readLastAddConfirmed after " + k + " synced adds", (long) k - 2, r.readLastConfirmed());
        Enumeration<LedgerEntry> unconf = r.readUnconfirmedEntries(0, k - 1);
        long id = 0;
        while (unconf.hasMoreElements()) {
            LedgerEntry le = unconf.nextElement();
            Check.eq("readUnconfirmed entry id", id, le.getEntryId());
            Check.bytes("readUnconfirmed entry " + id, payload.apply(id), le.getEntry());
            id++;
        }
        Check.eq("entries from readUnconfirmed(0, " + (k - 1) + ") (includes one past the LAC)", (long) k, id);

        // Part 2 (v3 only): a long poll on an idle ledger waits, then returns the next entry as
        // soon as it becomes confirmed. v2 has no long poll (the client degrades to a plain read).
        long next = k - 1;
        if (!ctx.v2) {
            CompletableFuture<LastConfirmedAndEntry> poll = r.readLastAddConfirmedAndEntryAsync(next, 10_000, false);
            Thread.sleep(700);
            Check.isTrue("long poll on an idle ledger (previousLAC " + (next - 1) + ", timeout 10 s)", !poll.isDone(),
                    "expected it to wait, it returned within 700 ms: " + describe(poll));
            long t0 = System.nanoTime();
            w.addEntry(payload.apply(k)); // makes entry k-1 confirmed (piggybacked LAC k-1)
            LastConfirmedAndEntry lce = poll.get(9, TimeUnit.SECONDS);
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            Check.isTrue("long poll answer time after the LAC moved", ms < 5_000, "took " + ms + " ms");
            Check.eq("LAC returned by the long poll", next, lce.getLastAddConfirmed());
            Check.isTrue("long poll piggybacked entry", lce.hasEntry(), "expected entry " + next + ", got none");
            Check.eq("piggybacked entry id", next, lce.getEntry().getEntryId());
            Check.bytes("piggybacked entry " + next, payload.apply(next), lce.getEntry().getEntryBytes());
            lce.close();
            next++;
        } else {
            w.addEntry(payload.apply(k));
        }

        // Part 3: a tailing reader follows a writer that keeps writing.
        int total = 400;
        AtomicReference<Exception> writerError = new AtomicReference<>();
        Thread writerThread = new Thread(() -> {
            try {
                for (long e = k + 1; e <= total; e++) { // entry `total` is the sentinel confirming total-1
                    w.addEntry(payload.apply(e));
                    if (e % 20 == 0) {
                        Thread.sleep(15);
                    }
                }
            } catch (Exception e) {
                writerError.set(e);
            }
        }, "s04-writer");
        writerThread.start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        int polls = 0;
        if (ctx.v2) {
            // The v2 wire has no long poll: the stock client sends a plain READENTRY of entry -1 and,
            // finding no maxLAC in the v2 answer, reports only the LAC it already knew. The call
            // must still be answered; tailing on v2 then polls readLastAddConfirmed (as Pulsar's
            // v2 readers do).
            long known = r.getLastAddConfirmed();
            try (LastConfirmedAndEntry lce = r.readLastAddConfirmedAndEntryAsync(next, 1_000, false)
                    .get(10, TimeUnit.SECONDS)) {
                Check.isTrue("v2 degraded long poll LAC", lce.getLastAddConfirmed() >= known,
                        "expected >= " + known + ", got " + lce.getLastAddConfirmed());
            }
        }
        while (next < total && System.nanoTime() < deadline) {
            polls++;
            if (ctx.v2) {
                long lac = r.readLastConfirmed();
                if (lac >= next) {
                    Ctx.verifyAll(r, next, lac, payload, 4L * Payloads.MIB);
                    next = lac + 1;
                } else {
                    Thread.sleep(5);
                }
                continue;
            }
            try (LastConfirmedAndEntry lce = r.readLastAddConfirmedAndEntry(next, 1_000, false)) {
                if (lce.hasEntry() && lce.getEntry().getEntryId() == next) {
                    Check.bytes("tailing: entry " + next, payload.apply(next), lce.getEntry().getEntryBytes());
                    next++;
                } else if (lce.getLastAddConfirmed() >= next) {
                    long upTo = lce.getLastAddConfirmed();
                    Ctx.verifyAll(r, next, upTo, payload, 4L * Payloads.MIB);
                    next = upTo + 1;
                }
            }
        }
        writerThread.join(30_000);
        if (writerError.get() != null) {
            throw new Check.Failure("tailing: writer failed: " + writerError.get(), writerError.get());
        }
        Check.eq("tailing reader: next entry to read after following the writer (" + polls + " polls)",
                (long) total, next);
    }

    private static String describe(CompletableFuture<LastConfirmedAndEntry> f) {
        try {
            LastConfirmedAndEntry l = f.getNow(null);
            return l == null ? "null" : "LAC " + l.getLastAddConfirmed() + ", entry " + (l.hasEntry()
                    ? l.getEntry().getEntryId() : "none");
        } catch (Exception e) {
            return "exception " + Check.unwrap(e);
        }
    }

    // ---------------------------------------------------------------- s05

    static void s05ExplicitLac(Ctx ctx) throws Exception {
        BookKeeper wbk = ctx.newClient(c -> c.setExplictLacInterval(100));
        BookKeeper rbk = ctx.newClient();
        LedgerHandle w = wbk.createLedger(3, 3, 2, DigestType.CRC32C, Ctx.PASSWORD);
        long seed = w.getId();
        int n = 50;
        for (long e = 0; e < n; e++) {
            w.addEntry(Payloads.bytes(seed, e, 300));
        }
        LedgerHandle r = rbk.openLedgerNoRecovery(w.getId(), DigestType.CRC32C, Ctx.PASSWORD);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        long explicit = Long.MIN_VALUE;
        while (System.nanoTime() < deadline) {
            explicit = r.readExplicitLastConfirmed();
            if (explicit == n - 1) {
                break;
            }
            Thread.sleep(100);
        }
        Check.eq("readExplicitLastConfirmed after " + n + " adds and an explicit LAC interval of 100 ms",
                (long) n - 1, explicit);
        long lac = r.readLastConfirmed();
        Check.isTrue("readLastAddConfirmed with explicit LAC on", lac == n - 1 || lac == n - 2,
                "expected " + (n - 1) + " (explicit) or " + (n - 2) + " (piggybacked), got " + lac);
        Enumeration<LedgerEntry> en = r.readEntries(n - 1, n - 1);
        Check.bytes("entry at the explicit LAC", Payloads.bytes(seed, n - 1, 300), en.nextElement().getEntry());
    }

    // ---------------------------------------------------------------- s06

    static void s06BatchRead(Ctx ctx) throws Exception {
        // The 4.17 client sends BATCH_READ_ENTRY only on v2 connections; on v3 its
        // PerChannelBookieClient throws UnsupportedOperationException inside the ordered executor
        // and the batchRead future never completes (measured: the scenario hung). So on v3 the
        // client is configured like any v3 user must be (batchReadEnabled=false) and the
        // scenario checks the API's fallback to plain READ_ENTRY of [start, start+maxCount-1].
        boolean wireBatch = ctx.v2;
        BookKeeper wbk = ctx.newClient();
        BookKeeper rbk = ctx.newClient(c -> c.setBatchReadEnabled(wireBatch));
        LedgerHandle w = wbk.createLedger(3, 3, 2, DigestType.CRC32C, Ctx.PASSWORD);
        long seed = w.getId();
        int n = 300;
        LongFunction<byte[]> payload = e -> Payloads.bytes(seed, e,
                e == 150 ? 200 * Payloads.KIB : 1 + (int) (e * 977 % 6000));
        Ctx.writeAll(w, n, payload, 100, 16L * Payloads.MIB);
        w.close();
        LedgerHandle r = rbk.openLedger(w.getId(), DigestType.CRC32C, Ctx.PASSWORD);
        // Whole ledger in batches of at most 64 entries / 64 KiB.
        long next = 0;
        int batches = 0;
        while (next < n) {
            try (LedgerEntries es = r.batchRead(next, 64, 64 * Payloads.KIB)) {
                long first = next;
                int count = 0;
                long bytes = 0;
                for (org.apache.bookkeeper.client.api.LedgerEntry le : es) {
                    Check.eq("batch from " + first + ": entry id", next, le.getEntryId());
                    Check.bytes("batch from " + first + ": entry " + next, payload.apply(next), le.getEntryBytes());
                    bytes += le.getEntryBytes().length;
                    next++;
                    count++;
                }
                if (wireBatch) {
                    Check.isTrue("batch from " + first, count >= 1 && count <= 64,
                            "expected 1..64 entries, got " + count);
                    // The bookie counts 4 bytes per entry plus 36 of framing against maxSize.
                    Check.isTrue("batch from " + first + " size", count == 1 || bytes <= 64 * Payloads.KIB,
                            "expected at most 64 KiB after the first entry, got " + bytes + " bytes in " + count);
                } else {
                    Check.eq("fallback batch from " + first + ": entries", (int) Math.min(64, n - first), count);
                }
                batches++;
            }
        }
        Check.isTrue("number of batches", batches < n, "batching never returned more than one entry");
        // v2: the first entry is returned even when it alone exceeds maxSize, and nothing after it.
        try (LedgerEntries es = r.batchRead(150, 10, 1024)) {
            List<Long> ids = new ArrayList<>();
            for (org.apache.bookkeeper.client.api.LedgerEntry le : es) {
                ids.add(le.getEntryId());
                Check.bytes("oversized first entry of a batch", payload.apply(le.getEntryId()), le.getEntryBytes());
            }
            List<Long> want = wireBatch ? List.of(150L)
                    : List.of(150L, 151L, 152L, 153L, 154L, 155L, 156L, 157L, 158L, 159L);
            Check.eq("entries of batchRead(150, 10, maxSize 1 KiB) where entry 150 is 200 KiB", want, ids);
        }
    }

    // ---------------------------------------------------------------- s07

    /**
     * The stock 4.17 client can stop completing adds after an ensemble change: when two
     * changes replace the same failed bookie, the second finds no difference between the old
     * and the new ensemble and resends nothing, and every pending add waits forever without
     * timing out (apache/bookkeeper#4459; LedgerHandle#ensembleChangeLoop in 4.17.3 still
     * computes `replaced` that way). It depends on when the killed bookie's failures reach the
     * client, so it hit s07 once in many runs (CI, 2026-12-03, rust v2: "New Ensemble" logged
     * twice with the same ensemble, then no callback for 150 s and no add timeout). A stall
     * (no callback for 2 x addEntryTimeout) therefore retries the scenario once, with the
     * victim restarted and a new client and ledger; a second stall fails.
     */
    static void s07BookieFailure(Ctx ctx) throws Exception {
        try {
            s07Once(ctx);
        } catch (Ctx.Stalled e) {
            System.out.println("interop: s07 " + ctx.cluster.impl().name + " " + ctx.mode
                    + ": the stock client stalled after the ensemble change (" + e.getMessage()
                    + "): apache/bookkeeper#4459; retrying once on a new ledger and client");
            for (BookieProcess b : ctx.cluster.bookies()) {
                if (!b.isAlive()) {
                    b.start();
                }
            }
            s07Once(ctx);
        }
    }

    private static void s07Once(Ctx ctx) throws Exception {
        BookKeeper bk = ctx.newClient();
        LedgerHandle lh = bk.createLedger(3, 2, 2, DigestType.CRC32C, Ctx.PASSWORD);
        long seed = lh.getId();
        int n = 3_000;
        LongFunction<byte[]> payload = e -> Payloads.bytes(seed, e, 1 + (int) (e * 613 % 2048));
        List<BookieId> first = lh.getLedgerMetadata().getAllEnsembles().get(0L);
        BookieProcess victim = ctx.cluster.byId(first.get(1).toString());
        Ctx.WriteResult res = Ctx.writeAll(lh, n, payload, 100, 8L * Payloads.MIB, (e, out) -> {
            if (e == 1_000) {
                victim.kill();
            }
        });
        Check.eq("acknowledged adds with one bookie SIGKILLed at entry 1000", (long) n, res.acked);
        lh.close();
        NavigableMap<Long, ? extends List<BookieId>> ensembles = lh.getLedgerMetadata().getAllEnsembles();
        Check.isTrue("ensemble change", ensembles.size() >= 2,
                "expected >= 2 ensembles after killing " + victim.bookieId() + ", metadata has " + ensembles);
        Check.isTrue("last ensemble", !ensembles.lastEntry().getValue().contains(first.get(1)),
                "killed bookie " + victim.bookieId() + " is still in the last ensemble " + ensembles);
        LedgerHandle rh = ctx.newClient().openLedger(lh.getId(), DigestType.CRC32C, Ctx.PASSWORD);
        Ctx.verifyAll(rh, 0, n - 1, payload, 4L * Payloads.MIB);
        victim.start();
        LedgerHandle rh2 = ctx.newClient().openLedger(lh.getId(), DigestType.CRC32C, Ctx.PASSWORD);
        Ctx.verifyAll(rh2, 0, n - 1, payload, 4L * Payloads.MIB);
    }

    // ---------------------------------------------------------------- s08

    /**
     * Two ledgers share one crash of every bookie:
     * <ul>
     * <li>quiet: 500 adds, all acknowledged, writer left open, no add in flight at the crash. After
     * the restart, open with recovery must give LAC = 499 exactly and every entry back.</li>
     * <li>busy: adds pipelined (200 in flight) until >= 1,000 are acknowledged, then the crash with
     * adds in flight. After the restart every acknowledged entry must read back (readUnconfirmed,
     * each entry from any replica whose copy verifies).</li>
     * </ul>
     * Why the busy ledger is not opened with recovery: the stock Java bookie replays a journal
     * record torn by the SIGKILL (Journal#scanJournal reads `len` bytes of the zero-preallocated
     * file, there is no record checksum), so an unacknowledged entry can come back as garbage on a
     * replica, and the client's recovery then failed with BKLedgerRecoveryException (digest
     * mismatch on the last entry; seen once in ~6 Java runs). Acknowledged entries are whole on
     * >= ackQuorum replicas, so reading them is deterministic on both implementations.
     */
    static void s08CrashDurability(Ctx ctx) throws Exception {
        BookKeeper wbk = ctx.newClient();
        LedgerHandle quiet = wbk.createLedger(3, 3, 2, DigestType.CRC32C, Ctx.PASSWORD);
        long qseed = quiet.getId();
        LongFunction<byte[]> qpayload = e -> Payloads.bytes(qseed, e, 1 + (int) (e * 7919 % 16384));
        int quietN = 500;
        Ctx.writeAll(quiet, quietN, qpayload, 200, 8L * Payloads.MIB);

        LedgerHandle lh = wbk.createLedger(3, 3, 2, DigestType.CRC32C, Ctx.PASSWORD);
        long seed = lh.getId();
        LongFunction<byte[]> payload = e -> Payloads.bytes(seed, e, 1 + (int) (e * 7919 % 16384));
        int killAfter = 1_000;
        AtomicLong acked = new AtomicLong(-1); // highest entry id acknowledged (callbacks are in order)
        AtomicReference<String> orderError = new AtomicReference<>();
        AtomicBoolean stop = new AtomicBoolean();
        java.util.concurrent.Semaphore slots = new java.util.concurrent.Semaphore(200);
        AtomicLong submitted = new AtomicLong();
        Thread submitter = new Thread(() -> {
            try {
                for (long e = 0; !stop.get() && e < 100_000; e++) {
                    if (!slots.tryAcquire(5, TimeUnit.SECONDS)) {
                        return;
                    }
                    submitted.set(e + 1);
                    lh.asyncAddEntry(payload.apply(e), (rc, l, entryId, c) -> {
                        if (rc == BKException.Code.OK) {
                            long prev = acked.getAndSet(entryId);
                            if (prev != entryId - 1) {
                                orderError.compareAndSet(null, "ack of " + entryId + " after ack of " + prev);
                            }
                        }
                        slots.release();
                    }, null);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "s08-writer");
        submitter.start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (acked.get() < killAfter - 1 && System.nanoTime() < deadline) {
            Thread.sleep(2);
        }
        Check.isTrue("writes before the crash", acked.get() >= killAfter - 1,
                "only " + (acked.get() + 1) + " adds acknowledged in 60 s");
        List<Thread> killers = new ArrayList<>();
        for (BookieProcess b : ctx.cluster.bookies()) {
            Thread t = new Thread(() -> {
                try {
                    b.kill();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            t.start();
            killers.add(t);
        }
        for (Thread t : killers) {
            t.join();
        }
        stop.set(true);
        submitter.join(10_000);
        // Responses already read from the sockets may still complete after the kill; close()
        // fails whatever is pending, after which the acknowledged set is final.
        wbk.close();
        long lastAcked = acked.get();
        if (orderError.get() != null) {
            throw new Check.Failure(orderError.get());
        }
        ctx.cluster.healBookies();

        BookKeeper rbk = ctx.newClient();
        LedgerHandle rq = openWithRecoveryAfterRestart(rbk, quiet.getId());
        Check.eq("recovered LAC of the quiet ledger (all " + quietN + " adds acknowledged before the crash)",
                (long) quietN - 1, rq.getLastAddConfirmed());
        Ctx.verifyAll(rq, 0, quietN - 1, qpayload, 4L * Payloads.MIB);

        LedgerHandle rh = rbk.openLedgerNoRecovery(lh.getId(), DigestType.CRC32C, Ctx.PASSWORD);
        long e = 0;
        while (e <= lastAcked) {
            long end = Math.min(lastAcked, e + 99);
            Enumeration<LedgerEntry> en = rh.readUnconfirmedEntries(e, end);
            long id = e;
            while (en.hasMoreElements()) {
                LedgerEntry le = en.nextElement();
                Check.eq("acknowledged entry id after the crash", id, le.getEntryId());
                Check.bytes("acknowledged entry " + id + " (of " + (lastAcked + 1) + ") after the crash",
                        payload.apply(id), le.getEntry());
                id++;
            }
            Check.eq("acknowledged entries returned for [" + e + "," + end + "] after the crash", end + 1, id);
            e = end + 1;
        }
    }

    /**
     * Opens a ledger with recovery right after every bookie restarted, retrying a
     * BKReadException up to 3 times, 1 s apart, as an application does (Pulsar's managed
     * ledger retries a failed open). Why: CI saw this open fail once against the stock Java
     * bookie in v2 ("Error while reading ledger": the fencing reads of the last entry got
     * EIO, or an entry failing its digest, from 2 of the 3 restarted bookies); the run dir
     * with the bookie logs stayed on the CI machine, and 12 reruns here passed, so the cause
     * is not known. A transient answer right after a restart is retried; a lasting one
     * (data really gone or damaged) fails all four attempts and the scenario, and any other
     * failure fails it at once. What is checked after the open is unchanged.
     */
    static LedgerHandle openWithRecoveryAfterRestart(BookKeeper bk, long ledgerId) throws Exception {
        for (int attempt = 1;; attempt++) {
            try {
                return bk.openLedger(ledgerId, DigestType.CRC32C, Ctx.PASSWORD);
            } catch (BKException.BKReadException e) {
                if (attempt == 4) {
                    throw e;
                }
                System.out.println("interop: s08: open with recovery of ledger " + ledgerId + " failed ("
                        + e.getMessage() + "), attempt " + attempt + " of 4; retrying in 1 s");
                Thread.sleep(1000);
            }
        }
    }

    // ---------------------------------------------------------------- s09

    static void s09DeleteGc(Ctx ctx) throws Exception {
        BookKeeper bk = ctx.newClient();
        BookieClient raw = InteropAccess.bookieClient(bk);
        int ledgers = 4;
        int entries = 40;
        int size = 256 * Payloads.KIB;
        LedgerHandle keep = bk.createLedger(3, 3, 2, DigestType.CRC32C, Ctx.PASSWORD);
        for (long e = 0; e < 10; e++) {
            keep.addEntry(Payloads.bytes(keep.getId(), e, 1000));
        }
        keep.close();
        BookieProcess.Usage before = ctx.cluster.totalLedgerDirUsage();
        List<LedgerHandle> doomed = new ArrayList<>();
        long replicated = 0;
        for (int i = 0; i < ledgers; i++) {
            LedgerHandle lh = bk.createLedger(3, 3, 2, DigestType.CRC32C, Ctx.PASSWORD);
            long seed = lh.getId();
            Ctx.writeAll(lh, entries, e -> Payloads.bytes(seed, e, size), 20, 8L * Payloads.MIB);
            lh.close();
            doomed.add(lh);
            replicated += 3L * entries * size;
        }
        // Wait until the data is in the ledger dirs (write caches flushed), so the drop is
        // measurable. Both allocated blocks and apparent size are tracked: preallocation (RocksDB
        // WALs, segment files) moves the first, hole punching only the second would miss.
        // Growing by 80% is not enough on its own: on a loaded CI machine the Java bookie's
        // allocated blocks had grown by 98% (RocksDB preallocation) while its apparent size had
        // grown by 35% (most entries still in the write cache). The baseline taken then made the
        // later drop look small, because the cache flushed the deleted ledgers' entries after it.
        // So the baseline is taken once usage has grown enough and then stopped changing for
        // three polls in a row (1.5 s: longer than both bookies' 1 s flush interval).
        BookieProcess.Usage written = before;
        BookieProcess.Usage previous = null;
        int unchanged = 0;
        long flushDeadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (System.nanoTime() < flushDeadline) {
            written = ctx.cluster.totalLedgerDirUsage();
            unchanged = written.equals(previous) ? unchanged + 1 : 0;
            previous = written;
            if (grew(before, written) >= replicated * 8 / 10 && unchanged >= 3) {
                break;
            }
            Thread.sleep(500);
        }
        Check.isTrue("ledger dir usage after writing " + replicated + " replicated bytes",
                grew(before, written) >= replicated * 8 / 10,
                "grew only from " + before + " to " + written + " in 30 s");
        for (LedgerHandle lh : doomed) {
            int rc = readRc(raw, lh.getLedgerMetadata().getAllEnsembles().get(0L).get(0), lh.getId(), 0);
            Check.eq("direct read of entry 0 of ledger " + lh.getId() + " before delete", BKException.Code.OK, rc);
            bk.deleteLedger(lh.getId());
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        String pending = "";
        BookieProcess.Usage now = written;
        while (System.nanoTime() < deadline) {
            pending = "";
            for (LedgerHandle lh : doomed) {
                for (BookieId b : lh.getLedgerMetadata().getAllEnsembles().get(0L)) {
                    int rc = readRc(raw, b, lh.getId(), 0);
                    if (rc != BKException.Code.NoSuchLedgerExistsException) {
                        pending += " ledger " + lh.getId() + "@" + b + " rc=" + rc + " (" + BKException.getMessage(rc)
                                + ")";
                    }
                }
            }
            now = ctx.cluster.totalLedgerDirUsage();
            if (pending.isEmpty() && grew(now, written) >= replicated / 2) {
                break;
            }
            Thread.sleep(500);
        }
        Check.isTrue("direct reads of deleted ledgers after GC", pending.isEmpty(),
                "expected NoSuchLedgerExistsException (ENOLEDGER) from every bookie within 120 s, still:" + pending);
        Check.isTrue("ledger dir usage after delete + GC", grew(now, written) >= replicated / 2,
                "expected it to drop by >= " + replicated / 2 + " bytes (allocated or apparent) from " + written
                        + " within 120 s, it is " + now + " (before the scenario: " + before + "; usage "
                        + (unchanged >= 3 ? "had settled" : "had not settled in 30 s") + " when the baseline was taken; "
                        + "per bookie: " + ctx.cluster.ledgerDirUsageByBookie() + ")");
        LedgerHandle rk = bk.openLedger(keep.getId(), DigestType.CRC32C, Ctx.PASSWORD);
        Ctx.verifyAll(rk, 0, 9, e -> Payloads.bytes(keep.getId(), e, 1000), Payloads.MIB);
    }

    /** How much usage grew from a to b: the larger of the allocated and apparent growth. */
    private static long grew(BookieProcess.Usage a, BookieProcess.Usage b) {
        return Math.max(b.allocated() - a.allocated(), b.apparent() - a.apparent());
    }

    /** One READ_ENTRY straight to one bookie; returns the client rc. */
    static int readRc(BookieClient raw, BookieId bookie, long ledgerId, long entryId) throws Exception {
        CompletableFuture<Integer> f = new CompletableFuture<>();
        raw.readEntry(bookie, ledgerId, entryId, (rc, l, e, buf, c) -> f.complete(rc), null,
                BookieProtocol.FLAG_NONE);
        return f.get(30, TimeUnit.SECONDS);
    }

    // ---------------------------------------------------------------- s10

    static void s10Errors(Ctx ctx) throws Exception {
        // A bystander client keeps writing and reading its own ledger the whole time.
        BookKeeper other = ctx.newClient();
        LedgerHandle ol = other.createLedger(3, 3, 2, DigestType.CRC32C, Ctx.PASSWORD);
        AtomicBoolean stop = new AtomicBoolean();
        AtomicReference<Throwable> otherError = new AtomicReference<>();
        AtomicLong otherAdds = new AtomicLong();
        Thread bystander = new Thread(() -> {
            try {
                for (long e = 0; !stop.get(); e++) {
                    ol.addEntry(Payloads.bytes(ol.getId(), e, 700));
                    otherAdds.incrementAndGet();
                    Thread.sleep(5);
                }
            } catch (Throwable t) {
                otherError.set(t);
            }
        }, "s10-bystander");
        bystander.start();
        long addsBefore;
        long addsAfter;
        try {
            // Let the bystander get going, then run the error checks while it keeps writing.
            long warm = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (otherAdds.get() < 5 && otherError.get() == null && System.nanoTime() < warm) {
                Thread.sleep(10);
            }
            addsBefore = otherAdds.get();
            s10Checks(ctx);
            long more = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (otherAdds.get() < addsBefore + 5 && otherError.get() == null && System.nanoTime() < more) {
                Thread.sleep(10);
            }
            addsAfter = otherAdds.get();
        } finally {
            stop.set(true);
            bystander.join(30_000);
        }
        if (otherError.get() != null) {
            throw new Check.Failure("bystander client failed while errors were served: " + otherError.get(),
                    otherError.get());
        }
        Check.isTrue("bystander adds while and after errors were served", addsBefore >= 5 && addsAfter >= addsBefore + 5,
                "expected >= 5 before and >= 5 more after the error checks, got " + addsBefore + " then " + addsAfter);
        long last = otherAdds.get() - 1;
        ol.close();
        LedgerHandle rl = ctx.newClient().openLedger(ol.getId(), DigestType.CRC32C, Ctx.PASSWORD);
        Check.eq("bystander ledger LAC", last, rl.getLastAddConfirmed());
        Ctx.verifyAll(rl, 0, last, e -> Payloads.bytes(ol.getId(), e, 700), 4L * Payloads.MIB);
    }

    private static void s10Checks(Ctx ctx) throws Exception {
        BookKeeper bk = ctx.newClient();
        BookieClient raw = InteropAccess.bookieClient(bk);
        LedgerHandle w = bk.createLedger(3, 3, 2, DigestType.CRC32C, Ctx.PASSWORD);
        long lid = w.getId();
        for (long e = 0; e < 5; e++) {
            w.addEntry(Payloads.bytes(lid, e, 500));
        }
        BookieId b0 = w.getLedgerMetadata().getAllEnsembles().get(0L).get(0);
        byte[] wrongKey = DigestManager.generateMasterKey("wrong-password".getBytes(StandardCharsets.UTF_8));

        // 1. Client open with the wrong password: the stock client refuses from the metadata.
        BookKeeper bk2 = ctx.newClient();
        Check.throwsType("openLedger with a wrong password", BKException.BKUnauthorizedAccessException.class,
                () -> bk2.openLedgerNoRecovery(lid, DigestType.CRC32C, "wrong".getBytes(StandardCharsets.UTF_8)));

        // 2. The bookie itself: an add with a wrong master key to a ledger it holds -> EUA.
        DigestManager dm = DigestManager.instantiate(lid, "wrong".getBytes(StandardCharsets.UTF_8),
                LedgerMetadataFormat.DigestType.CRC32C,
                io.netty.buffer.PooledByteBufAllocator.DEFAULT, ctx.v2);
        byte[] forged = "forged entry with a wrong master key".getBytes(StandardCharsets.UTF_8);
        ReferenceCounted toSend = dm.computeDigestAndPackageForSending(2, 1, 10_000, Unpooled.wrappedBuffer(forged),
                wrongKey, BookieProtocol.FLAG_NONE);
        CompletableFuture<Integer> addRc = new CompletableFuture<>();
        raw.addEntry(b0, lid, wrongKey, 2, toSend, (rc, l, e, addr, c) -> addRc.complete(rc), null,
                BookieProtocol.FLAG_NONE, false, EnumSet.noneOf(WriteFlag.class));
        Check.eq("add of entry 2 with a wrong master key, sent to " + b0 + " (client rc; -102 = EUA)",
                BKException.Code.UnauthorizedAccessException, addRc.get(30, TimeUnit.SECONDS));
        DigestManager good = DigestManager.instantiate(lid, Ctx.PASSWORD, LedgerMetadataFormat.DigestType.CRC32C,
                io.netty.buffer.UnpooledByteBufAllocator.DEFAULT, ctx.v2);
        CompletableFuture<byte[]> direct = new CompletableFuture<>();
        raw.readEntry(b0, lid, 2, (rc, l, e, buf, c) -> {
            if (rc != BKException.Code.OK) {
                direct.completeExceptionally(new IllegalStateException("direct read rc " + rc));
                return;
            }
            try {
                direct.complete(toArray(good.verifyDigestAndReturnData(2, buf)));
            } catch (Exception ex) {
                direct.completeExceptionally(ex);
            }
        }, null, BookieProtocol.FLAG_NONE);
        Check.bytes("entry 2 read back from " + b0 + " after the rejected add", Payloads.bytes(lid, 2, 500),
                direct.get(30, TimeUnit.SECONDS));

        // 3. A fence read with a wrong master key -> EUA, and the ledger stays unfenced.
        CompletableFuture<Integer> fenceRc = new CompletableFuture<>();
        raw.readEntry(b0, lid, BookieProtocol.LAST_ADD_CONFIRMED, (rc, l, e, buf, c) -> fenceRc.complete(rc), null,
                BookieProtocol.FLAG_DO_FENCING, wrongKey);
        Check.eq("fencing read with a wrong master key, sent to " + b0 + " (client rc; -102 = EUA)",
                BKException.Code.UnauthorizedAccessException, fenceRc.get(30, TimeUnit.SECONDS));
        w.addEntry(Payloads.bytes(lid, 5, 500));

        // 4. Missing ledger / entry.
        long missingLedger = lid + 1_000_000;
        Check.throwsType("openLedger of a ledger with no metadata",
                BKException.BKNoSuchLedgerExistsOnMetadataServerException.class,
                () -> bk2.openLedgerNoRecovery(missingLedger, DigestType.CRC32C, Ctx.PASSWORD));
        Check.eq("direct read of a ledger unknown to bookie " + b0 + " (-7 = ENOLEDGER)",
                BKException.Code.NoSuchLedgerExistsException, readRc(raw, b0, missingLedger, 0));
        Check.eq("direct read of entry 100 of ledger " + lid + " on " + b0 + " (-13 = ENOENTRY)",
                BKException.Code.NoSuchEntryException, readRc(raw, b0, lid, 100));
        LedgerHandle r = bk2.openLedgerNoRecovery(lid, DigestType.CRC32C, Ctx.PASSWORD);
        Check.throwsType("readUnconfirmed of an entry no bookie has", BKException.BKNoSuchEntryException.class,
                () -> r.readUnconfirmedEntries(100, 100));

        // 5. The ledger still works for its writer, and every entry reads back intact.
        w.close();
        LedgerHandle rr = ctx.newClient().openLedger(lid, DigestType.CRC32C, Ctx.PASSWORD);
        Check.eq("LAC after the error checks", 5L, rr.getLastAddConfirmed());
        Ctx.verifyAll(rr, 0, 5, e -> Payloads.bytes(lid, e, 500), Payloads.MIB);
    }

    private static byte[] toArray(ByteBuf b) {
        byte[] out = new byte[b.readableBytes()];
        b.getBytes(b.readerIndex(), out);
        return out;
    }

    // ---------------------------------------------------------------- s11

    static void s11Shell(Ctx ctx) throws Exception {
        BookieProcess b0 = ctx.cluster.bookies().get(0);
        Path conf = ctx.cluster.runDir.resolve("shell-" + ctx.cluster.impl().name + "-" + ctx.mode + ".conf");
        Files.writeString(conf, b0.confText() + "useV2WireProtocol=" + ctx.v2 + "\n", StandardCharsets.UTF_8);

        String out = shell(ctx, conf, "bookiesanity");
        Check.isTrue("bookiesanity output", out.contains("Bookie sanity test succeeded"),
                "expected 'Bookie sanity test succeeded'; output tail:\n" + tail(out));
        out = shell(ctx, conf, "simpletest", "-e", "3", "-w", "3", "-a", "2", "-n", "200");
        Check.isTrue("simpletest output", out.contains("200 entries written to ledger"),
                "expected '200 entries written to ledger'; output tail:\n" + tail(out));
        out = shell(ctx, conf, "listbookies", "-rw");
        for (BookieProcess b : ctx.cluster.bookies()) {
            Check.isTrue("listbookies -rw output", out.contains(b.bookieId()),
                    "expected bookie " + b.bookieId() + " listed; output tail:\n" + tail(out));
        }

        BookKeeper bk = ctx.newClient();
        LedgerHandle lh = bk.createLedger(3, 3, 2, DigestType.CRC32C, Ctx.PASSWORD);
        int n = 10;
        for (int e = 0; e < n; e++) {
            lh.addEntry(("interop-readledger-entry-" + e).getBytes(StandardCharsets.UTF_8));
        }
        lh.close();
        out = shell(ctx, conf, "readledger", "-l", String.valueOf(lh.getId()), "-m");
        for (int e = 0; e < n; e++) {
            // EntrySize is the ledger length up to and including the entry (LedgerEntry#getLength).
            String want = "Lid=" + lh.getId() + ", Eid=" + e + ", EntrySize=" + 26 * (e + 1);
            Check.isTrue("readledger output", out.contains(want) && out.contains("interop-readledger-entry-" + e),
                    "expected '" + want + "' and the entry text; output tail:\n" + tail(out));
        }
        BookieId target = lh.getLedgerMetadata().getAllEnsembles().get(0L).get(0);
        out = shell(ctx, conf, "readledger", "-l", String.valueOf(lh.getId()), "-b", target.toString(),
                "-fe", "0", "-le", String.valueOf(n));
        Check.isTrue("readledger -b " + target + " output", !out.contains("Failed to read entry"),
                "a direct read failed; output tail:\n" + tail(out));
        for (int e = 0; e < n; e++) {
            String want = "Lid=" + lh.getId() + ", Eid=" + e + " ---";
            Check.isTrue("readledger -b output", out.contains(want),
                    "expected '" + want + "'; output tail:\n" + tail(out));
        }
    }

    // ---------------------------------------------------------------- s12

    /**
     * What a bookie leaves in ZooKeeper and its directories (docs/registration.md §4 and §5):
     * an ephemeral /ledgers/available/<id> whose data is exactly the BookieServiceInfoFormat the
     * Java bookie writes (one "bookie-rpc" endpoint), the ZK cookie and a current/VERSION cookie in
     * the journal and ledger dir, equal to the cookie the stock code builds for this config, and
     * the stock client resolving the id to the right address. Wire mode does not matter here; it
     * runs in both for a uniform table.
     */
    static void s12Registration(Ctx ctx) throws Exception {
        org.apache.zookeeper.ZooKeeper zk = ctx.cluster.zk();
        String instanceId = new String(zk.getData(Cluster.LEDGERS_ROOT + "/INSTANCEID", false, null),
                StandardCharsets.UTF_8);
        BookKeeper bk = ctx.newClient();
        for (BookieProcess b : ctx.cluster.bookies()) {
            String id = b.bookieId();
            org.apache.zookeeper.data.Stat st = new org.apache.zookeeper.data.Stat();
            byte[] data = zk.getData(Cluster.LEDGERS_ROOT + "/available/" + id, false, st);
            Check.isTrue("registration node of " + id, st.getEphemeralOwner() != 0, "expected EPHEMERAL, is persistent");
            byte[] want = org.apache.bookkeeper.proto.DataFormats.BookieServiceInfoFormat.newBuilder()
                    .addEndpoints(org.apache.bookkeeper.proto.DataFormats.BookieServiceInfoFormat.Endpoint.newBuilder()
                            .setId("bookie").setPort(b.port).setHost("127.0.0.1").setProtocol("bookie-rpc"))
                    .build().toByteArray();
            Check.eq("data of /ledgers/available/" + id + " (hex BookieServiceInfoFormat)", hex(want), hex(data));
            org.apache.bookkeeper.discover.BookieServiceInfo info = bk.getMetadataClientDriver().getRegistrationClient()
                    .getBookieServiceInfo(BookieId.parse(id)).get(10, TimeUnit.SECONDS).getValue();
            org.apache.bookkeeper.discover.BookieServiceInfo.Endpoint ep = info.getEndpoints().stream()
                    .filter(e -> e.getProtocol().equals("bookie-rpc")).findFirst().orElse(null);
            Check.isTrue("bookie-rpc endpoint of " + id + " as the stock client reads it", ep != null
                    && ep.getHost().equals("127.0.0.1") && ep.getPort() == b.port, "got " + info);

            org.apache.bookkeeper.bookie.Cookie expected = org.apache.bookkeeper.bookie.Cookie.newBuilder()
                    .setBookieId(id).setJournalDirs(b.journalDir.toString())
                    .setLedgerDirs(org.apache.bookkeeper.bookie.Cookie.encodeDirPaths(
                            new String[] {b.ledgerDir.toString()}))
                    .setInstanceId(instanceId).build();
            org.apache.bookkeeper.bookie.Cookie zkCookie = org.apache.bookkeeper.bookie.Cookie.parseFromBytes(
                    zk.getData(Cluster.LEDGERS_ROOT + "/cookies/" + id, false, null));
            Check.eq("cookie /ledgers/cookies/" + id, expected.toString(), zkCookie.toString());
            Check.isTrue("cookie /ledgers/cookies/" + id, expected.equals(zkCookie), "layout version differs: "
                    + zkCookie);
            for (Path dir : new Path[] {b.journalDir, b.ledgerDir}) {
                org.apache.bookkeeper.bookie.Cookie dirCookie = org.apache.bookkeeper.bookie.Cookie.readFromDirectory(
                        dir.resolve("current").toFile());
                Check.eq("cookie " + dir + "/current/VERSION", expected.toString(), dirCookie.toString());
            }
        }
    }

    static String hex(byte[] b) {
        StringBuilder sb = new StringBuilder();
        for (byte x : b) {
            sb.append(String.format("%02x", x));
        }
        return sb.toString();
    }

    /** Runs one BookieShell command in a child JVM; fails unless it exits 0 within 120 s. */
    private static String shell(Ctx ctx, Path conf, String... args) throws Exception {
        List<String> a = new ArrayList<>(List.of("-conf", conf.toString()));
        a.addAll(List.of(args));
        File log = ctx.cluster.runDir.resolve("shell-" + args[0] + "-" + ctx.cluster.impl().name + "-" + ctx.mode
                + ".log").toFile();
        Process p = ctx.cluster.startJavaChild("org.apache.bookkeeper.bookie.BookieShell", a, log);
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new Check.Failure("shell " + String.join(" ", args) + " did not finish in 120 s; output tail:\n"
                    + tail(Files.readString(log.toPath())));
        }
        String out = Files.readString(log.toPath(), StandardCharsets.UTF_8);
        Check.eq("exit code of `bookkeeper shell " + String.join(" ", args) + "` (output tail:\n" + tail(out) + ")",
                0, p.exitValue());
        return out;
    }

    private static String tail(String s) {
        String[] lines = s.split("\n");
        return "    | " + String.join("\n    | ",
                java.util.Arrays.copyOfRange(lines, Math.max(0, lines.length - 15), lines.length));
    }
}
