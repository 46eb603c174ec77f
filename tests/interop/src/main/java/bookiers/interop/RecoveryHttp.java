/*
 * Scenario 15, s15_recovery_http: bookie-rs's `PUT /api/v1/autorecovery/bookie` (its own
 * re-replication, docs/operations.md §2) recovers a stopped bookie of the cluster, and the stock
 * Java client reads the recovered ledger back. A bookie-rs bookie with the HTTP admin API joins
 * the cluster (of Java or of rust bookies: the recovery then reads from and writes to that
 * implementation); a Java client writes a closed ledger E = W = 3, Qa = 2; a bookie in every
 * ensemble is stopped; the recovery is asked of the HTTP bookie. Afterwards no ensemble lists the
 * stopped bookie, every entry answers a direct read on every member of the new ensemble, and
 * the stock client (its digest check included) reads every entry back with the bytes written.
 * The cookie is kept (`delete_cookie: false`) so the suite can restart the bookie afterwards.
 */
package bookiers.interop;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.bookkeeper.client.BKException;
import org.apache.bookkeeper.client.BookKeeper;
import org.apache.bookkeeper.client.BookKeeper.DigestType;
import org.apache.bookkeeper.client.InteropAccess;
import org.apache.bookkeeper.client.LedgerHandle;
import org.apache.bookkeeper.net.BookieId;
import org.apache.bookkeeper.proto.BookieClient;

/** Scenario 15. */
final class RecoveryHttp {
    private RecoveryHttp() {
    }

    static final int ENTRIES = 50;
    static final int SIZE = 16 * Payloads.KIB;

    static void run(Ctx ctx) throws Exception {
        Cluster cluster = ctx.cluster;
        String pass = cluster.impl().name + "-" + ctx.mode;
        BookieProcess coordinator =
                AdminPort.bookie(cluster, Impl.RUST, 95, cluster.runDir.resolve("recovery-http-" + pass), false);
        try {
            coordinator.start();
            String base = AdminPort.base(coordinator);
            AdminPort.waitReady(coordinator);

            BookKeeper bk = ctx.newClient();
            BookieClient raw = InteropAccess.bookieClient(bk);
            LedgerHandle lh = bk.createLedger(3, 3, 2, DigestType.CRC32C, Ctx.PASSWORD);
            long id = lh.getId();
            Ctx.writeAll(lh, ENTRIES, e -> Payloads.bytes(id, e, SIZE), 20, 8L * Payloads.MIB);
            lh.close();

            // The victim: a cluster bookie in every ensemble (so it holds every entry), not the
            // coordinator.
            Map<Long, ? extends List<BookieId>> ensembles = lh.getLedgerMetadata().getAllEnsembles();
            List<BookieId> inEvery = new ArrayList<>(ensembles.get(0L));
            for (List<BookieId> ensemble : ensembles.values()) {
                inEvery.retainAll(ensemble);
            }
            inEvery.removeIf(b -> b.toString().equals(coordinator.bookieId()));
            Check.isTrue("a cluster bookie in every ensemble of ledger " + id, !inEvery.isEmpty(),
                    "none in all of " + ensembles);
            BookieId victimId = inEvery.get(0);
            cluster.byId(victimId.toString()).kill();

            HttpResponse<String> r = HttpClient.newHttpClient().send(
                    HttpRequest.newBuilder(URI.create(base + "/api/v1/autorecovery/bookie"))
                            .timeout(Duration.ofSeconds(30))
                            .PUT(HttpRequest.BodyPublishers.ofString(
                                    "{\"bookie_src\":[\"" + victimId + "\"],\"delete_cookie\":false}"))
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
            Check.eq("PUT /api/v1/autorecovery/bookie status", 200, r.statusCode());
            Check.eq("PUT /api/v1/autorecovery/bookie body", "Success send recovery request command.", r.body());

            // The metadata moves off the victim (the recovery runs in the background).
            long asked = System.nanoTime();
            long deadline = asked + TimeUnit.SECONDS.toNanos(90);
            LedgerHandle after = null;
            boolean moved = false;
            while (System.nanoTime() < deadline && !moved) {
                after = ctx.newClient().openLedgerNoRecovery(id, DigestType.CRC32C, Ctx.PASSWORD);
                moved = after.getLedgerMetadata().getAllEnsembles().values().stream()
                        .noneMatch(e -> e.contains(victimId));
                if (!moved) {
                    Thread.sleep(200);
                }
            }
            Check.isTrue("ensembles of ledger " + id + " without " + victimId + " within 90 s", moved,
                    (after == null ? "-" : after.getLedgerMetadata().getAllEnsembles().toString()) + "\n"
                            + coordinator.logTail(40));
            System.out.println("interop: s15 " + cluster.impl().name + " " + ctx.mode + ": ledger " + id
                    + " recovered off " + victimId + " in "
                    + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - asked) + " ms: "
                    + after.getLedgerMetadata().getAllEnsembles());
            Check.eq("state of ledger " + id + " after recovery", true, after.getLedgerMetadata().isClosed());
            Check.eq("last entry of ledger " + id + " after recovery", (long) ENTRIES - 1,
                    after.getLedgerMetadata().getLastEntryId());

            // Every member of the new ensemble holds every entry; the stock client reads it all back.
            for (List<BookieId> ensemble : after.getLedgerMetadata().getAllEnsembles().values()) {
                for (BookieId b : ensemble) {
                    for (long e = 0; e < ENTRIES; e++) {
                        Check.eq("direct read of entry " + e + " of ledger " + id + " from " + b,
                                BKException.Code.OK, Scenarios.readRc(raw, b, id, e));
                    }
                }
            }
            LedgerHandle rh = ctx.newClient().openLedger(id, DigestType.CRC32C, Ctx.PASSWORD);
            Ctx.verifyAll(rh, 0, ENTRIES - 1, e -> Payloads.bytes(id, e, SIZE), 4L * Payloads.MIB);
        } finally {
            coordinator.kill();
            // The next pass's clients and recoveries must not pick a bookie that is gone: wait
            // for its registration to expire (zkTimeout 4 s).
            String node = Cluster.LEDGERS_ROOT + "/available/" + coordinator.bookieId();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (cluster.zk().exists(node, false) != null && System.nanoTime() < deadline) {
                Thread.sleep(100);
            }
        }
    }
}
