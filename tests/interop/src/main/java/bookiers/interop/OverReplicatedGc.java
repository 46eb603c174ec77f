/*
 * Scenario 13, s13_overreplicated_gc: a ledger moved off a bookie by the stock recover flow
 * (BookKeeperAdmin.recoverBookieData, what `bookkeeper shell recover` runs) is deleted from that
 * bookie by its garbage collector's over-replication check (gcOverreplicatedLedgerWaitTime=5000,
 * gcWaitTime=1000 in every bookie's conf), and its space comes back; the ledger still reads back
 * whole from its new ensemble. The move runs under the ledger's under-replication lock (as the
 * stock ReplicationWorker's does), so the new replica's own check must leave the ledger alone
 * while it is being copied.
 *
 * Measured and printed (one `interop: s13 ...` line per run): the time from the end of the move
 * (recoverBookieData returned, metadata updated) to the first direct read that answers
 * NoSuchLedgerExistsException on the old bookie, and to the old bookie's ledger dir giving back
 * half of its copy's bytes.
 *
 * Space is measured file by file, not as the directory's total: the bookies keep collecting the
 * garbage earlier scenarios left (the 10 MiB write rolls an 8 MiB entry log, whose deleted
 * ledgers are then compacted away), and in the total that reclamation cancelled out most of the
 * copy being written (CI: a Java bookie grew by 3.4 of 10.5 MB in 30 s). What is counted as the
 * copy is what files grew by during the write. What is counted as reclaimed is what those same
 * files gave back of that growth after the move (a deleted file gives back all of it), less
 * whatever any file grew by since: compaction moving the copy to a new file is not reclaiming it.
 */
package bookiers.interop;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.bookkeeper.client.BKException;
import org.apache.bookkeeper.client.BookKeeper;
import org.apache.bookkeeper.client.BookKeeper.DigestType;
import org.apache.bookkeeper.client.BookKeeperAdmin;
import org.apache.bookkeeper.client.InteropAccess;
import org.apache.bookkeeper.client.LedgerHandle;
import org.apache.bookkeeper.meta.ZkLedgerUnderreplicationManager;
import org.apache.bookkeeper.net.BookieId;
import org.apache.bookkeeper.proto.BookieClient;
import org.apache.zookeeper.ZooDefs;

/** Scenario 13. */
final class OverReplicatedGc {
    private OverReplicatedGc() {
    }

    static final int ENTRIES = 40;
    static final int SIZE = 256 * Payloads.KIB;

    /**
     * Closes the admin client. The stock 4.17.3 client can throw from close itself: a CI run
     * (2026-12-03, java v3) got a NullPointerException in CompletionValue.errorOutAndRunCallback
     * ("this.perChannelBookieClient" is null) while BookKeeper.close() errored out an add still
     * pending on a channel. recoverBookieData had returned by then, and what the scenario checks
     * (the ensemble rewritten, the old bookie's GC) is read afresh below, so a failing close is
     * printed, not a failure of the scenario.
     */
    private static void closeAdmin(Ctx ctx, BookKeeperAdmin admin) throws Exception {
        try {
            admin.close();
        } catch (RuntimeException e) {
            System.out.println("interop: s13 " + ctx.cluster.impl().name + " " + ctx.mode
                    + ": the stock BookKeeperAdmin threw from close (" + e + "); the scenario goes on");
        }
    }

    static void run(Ctx ctx) throws Exception {
        BookKeeper bk = ctx.newClient();
        BookieClient raw = InteropAccess.bookieClient(bk);
        LedgerHandle lh = bk.createLedger(3, 3, 2, DigestType.CRC32C, Ctx.PASSWORD);
        long id = lh.getId();
        Map<String, Map<String, BookieProcess.Usage>> before = new HashMap<>();
        for (BookieProcess b : ctx.cluster.bookies()) {
            before.put(b.bookieId(), b.ledgerDirFiles());
        }
        Ctx.writeAll(lh, ENTRIES, e -> Payloads.bytes(id, e, SIZE), 20, 8L * Payloads.MIB);
        lh.close();

        // The victim: a bookie of every ensemble of the closed ledger, so that it acknowledged
        // every entry (a failed write to a bookie replaces it in the ensemble). Under load the
        // client can change the ensemble mid-write (an add timing out on a slow bookie); a
        // bookie replaced at entry k holds only the entries before k, and expecting a whole copy
        // of it fails the scenario for a reason that is not the garbage collector's.
        Map<Long, ? extends List<BookieId>> ensembles = lh.getLedgerMetadata().getAllEnsembles();
        List<BookieId> inEvery = new ArrayList<>(ensembles.get(0L));
        for (List<BookieId> ensemble : ensembles.values()) {
            inEvery.retainAll(ensemble);
        }
        if (ensembles.size() > 1) {
            System.out.println("interop: s13 " + ctx.cluster.impl().name + " " + ctx.mode + ": ledger " + id
                    + " changed ensembles while written: " + ensembles);
        }
        Check.isTrue("a bookie in every ensemble of ledger " + id, !inEvery.isEmpty(),
                "no bookie is in all of " + ensembles);
        BookieId victimId = inEvery.get(0);
        BookieProcess victim = ctx.cluster.byId(victimId.toString());
        Map<String, BookieProcess.Usage> beforeVictim = before.get(victimId.toString());
        // What it holds, asked entry by entry: every entry, or the scenario's premise is wrong.
        for (long e = 0; e < ENTRIES; e++) {
            Check.eq("direct read of entry " + e + " of ledger " + id + " from " + victimId + " before the move",
                    BKException.Code.OK, Scenarios.readRc(raw, victimId, id, e));
        }
        long copy = (long) ENTRIES * SIZE;

        // The baseline: the old bookie's copy is on disk (write cache flushed) and usage has
        // settled (three polls, 1.5 s: longer than both bookies' 1 s flush interval), as in s09.
        // "Settled" is the victim's files having grown by the copy and the growth not changing
        // for three polls.
        Map<String, BookieProcess.Usage> written = beforeVictim;
        BookieProcess.Usage growth = grownBy(beforeVictim, written);
        BookieProcess.Usage previous = null;
        int unchanged = 0;
        long flushDeadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (System.nanoTime() < flushDeadline) {
            written = victim.ledgerDirFiles();
            growth = grownBy(beforeVictim, written);
            unchanged = growth.equals(previous) ? unchanged + 1 : 0;
            previous = growth;
            if (larger(growth) >= copy * 8 / 10 && unchanged >= 3) {
                break;
            }
            Thread.sleep(500);
        }
        Check.isTrue("ledger dir files of " + victimId + " after writing its " + copy + " B copy",
                larger(growth) >= copy * 8 / 10,
                "they grew by only " + growth + " in 30 s (" + beforeVictim.size() + " files before, "
                        + written.size() + " after)");

        // The move: the stock recover flow re-replicates the ledger's fragments on the victim to
        // the fourth bookie and rewrites the ensemble; the victim stays up. Under the ledger's
        // under-replication lock, as the stock ReplicationWorker holds it while it replicates:
        // without it the target's own over-replication check can see the half-copied ledger
        // (closed, target not yet in the ensemble) and delete it under the replicator (seen on
        // the Java bookie: "Write attempt on fenced/deleted ledger", recoverBookieData failed).
        String lock = ZkLedgerUnderreplicationManager.acquireUnderreplicatedLedgerLock(ctx.cluster.zk(),
                Cluster.LEDGERS_ROOT, id, ZooDefs.Ids.OPEN_ACL_UNSAFE);
        BookKeeperAdmin admin = new BookKeeperAdmin(ctx.clientConf());
        try {
            admin.recoverBookieData(id, Set.of(victimId), false, false);
        } finally {
            closeAdmin(ctx, admin);
            ctx.cluster.zk().delete(lock, -1);
        }
        long moved = System.nanoTime();
        LedgerHandle after = ctx.newClient().openLedgerNoRecovery(id, DigestType.CRC32C, Ctx.PASSWORD);
        for (Map.Entry<Long, ? extends List<BookieId>> seg : after.getLedgerMetadata().getAllEnsembles().entrySet()) {
            Check.isTrue("ensemble at entry " + seg.getKey() + " after recoverBookieData",
                    !seg.getValue().contains(victimId), victimId + " is still in " + seg.getValue());
        }

        // The old bookie deletes the ledger and reclaims the space.
        long deadline = moved + TimeUnit.SECONDS.toNanos(120);
        long goneAt = -1;
        long reclaimedAt = -1;
        int rc = BKException.Code.OK;
        BookieProcess.Usage reclaimed = new BookieProcess.Usage(0, 0);
        while (System.nanoTime() < deadline && (goneAt < 0 || reclaimedAt < 0)) {
            if (goneAt < 0) {
                rc = Scenarios.readRc(raw, victimId, id, 0);
                if (rc == BKException.Code.NoSuchLedgerExistsException) {
                    goneAt = System.nanoTime();
                }
            }
            if (reclaimedAt < 0) {
                reclaimed = givenBack(beforeVictim, written, victim.ledgerDirFiles());
                if (larger(reclaimed) >= copy / 2) {
                    reclaimedAt = System.nanoTime();
                }
            }
            Thread.sleep(200);
        }
        System.out.println("interop: s13 " + ctx.cluster.impl().name + " " + ctx.mode + ": ledger " + id
                + " moved off " + victimId + "; ENOLEDGER there after " + ms(moved, goneAt)
                + ", half its copy reclaimed after " + ms(moved, reclaimedAt)
                + " (gcOverreplicatedLedgerWaitTime=5000, gcWaitTime=1000)");
        Check.isTrue("direct read of the moved ledger from " + victimId, goneAt >= 0,
                "expected NoSuchLedgerExistsException (ENOLEDGER) within 120 s of the move, still rc=" + rc
                        + " (" + BKException.getMessage(rc) + ")");
        Check.isTrue("ledger dir usage of " + victimId + " after the move", reclaimedAt >= 0,
                "expected the files that grew by the copy (" + growth + ") to give back >= " + copy / 2
                        + " B (allocated or apparent) within 120 s of the move; they gave back " + reclaimed);

        LedgerHandle rh = ctx.newClient().openLedger(id, DigestType.CRC32C, Ctx.PASSWORD);
        Ctx.verifyAll(rh, 0, ENTRIES - 1, e -> Payloads.bytes(id, e, SIZE), 4L * Payloads.MIB);
    }

    private static String ms(long from, long at) {
        return at < 0 ? "(not within 120 s)" : TimeUnit.NANOSECONDS.toMillis(at - from) + " ms";
    }

    /** The larger of a usage's two measures. */
    private static long larger(BookieProcess.Usage u) {
        return Math.max(u.allocated(), u.apparent());
    }

    /** What each file grew by from a to b (a new file: all of it), summed; shrinking counts 0. */
    private static BookieProcess.Usage grownBy(Map<String, BookieProcess.Usage> a, Map<String, BookieProcess.Usage> b) {
        long allocated = 0;
        long apparent = 0;
        for (Map.Entry<String, BookieProcess.Usage> f : b.entrySet()) {
            BookieProcess.Usage was = a.getOrDefault(f.getKey(), new BookieProcess.Usage(0, 0));
            allocated += Math.max(0, f.getValue().allocated() - was.allocated());
            apparent += Math.max(0, f.getValue().apparent() - was.apparent());
        }
        return new BookieProcess.Usage(allocated, apparent);
    }

    /**
     * What the files that grew from before to written gave back of that growth by now, net: per
     * file, the smaller of its growth and its shrinking since written (a deleted file shrank by all
     * of its size), summed, less what every file grew by from written to now (bytes moved by
     * compaction into a new file). Space reclaimed from other files does not count.
     */
    private static BookieProcess.Usage givenBack(Map<String, BookieProcess.Usage> before,
            Map<String, BookieProcess.Usage> written, Map<String, BookieProcess.Usage> now) {
        BookieProcess.Usage zero = new BookieProcess.Usage(0, 0);
        long allocated = 0;
        long apparent = 0;
        for (Map.Entry<String, BookieProcess.Usage> f : written.entrySet()) {
            BookieProcess.Usage was = before.getOrDefault(f.getKey(), zero);
            BookieProcess.Usage is = now.getOrDefault(f.getKey(), zero);
            BookieProcess.Usage w = f.getValue();
            allocated += Math.min(Math.max(0, w.allocated() - was.allocated()), Math.max(0, w.allocated() - is.allocated()));
            apparent += Math.min(Math.max(0, w.apparent() - was.apparent()), Math.max(0, w.apparent() - is.apparent()));
        }
        BookieProcess.Usage since = grownBy(written, now);
        return new BookieProcess.Usage(allocated - since.allocated(), apparent - since.apparent());
    }
}
